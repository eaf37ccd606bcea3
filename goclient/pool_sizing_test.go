package goclient_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/mightyetl/leasefence/goclient"
)

// sizedPool opens a worker pool with maxConns connections, closed at cleanup.
func (e *env) sizedPool(maxConns int32) *pgxpool.Pool {
	e.t.Helper()
	cfg, err := goclient.ParsePoolConfig(e.workerDB, 0)
	require.NoError(e.t, err)
	cfg.MaxConns = maxConns
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	require.NoError(e.t, err)
	e.t.Cleanup(pool.Close)
	return pool
}

// A TxHandler worker needs a connection per running job plus one to claim
// with: NewWorker refuses a smaller pool with a clear message, and takes
// one exactly that size; a Handler worker holds no connection while its
// handler runs and is not refused.
func TestNewWorkerRefusesAPoolTooSmallForItsTxHandlers(t *testing.T) {
	t.Parallel()
	e := setup(t, shortPolicy)
	c := e.client(e.sizedPool(4))
	txNop := func(context.Context, pgx.Tx, goclient.Job) error { return nil }
	_, err := c.NewWorker(goclient.WorkerConfig{Queue: testQueue, Concurrency: 4, TxHandler: txNop})
	var ce *goclient.ConfigError
	require.True(t, errors.As(err, &ce))
	require.Equal(t, "Concurrency", ce.Field)
	require.Equal(t, "leasefence: invalid client configuration: pool MaxConns is 4, and a TxHandler with Concurrency 4 "+
		"needs at least 5 (one connection per running job's transaction and one to claim with): set pool_max_conns=5 "+
		"or more in the connection string (or MaxConns in the pool's config), or lower Concurrency", err.Error(),
		"the error gives the pool's size, the size needed and the fix")

	_, err = c.NewWorker(goclient.WorkerConfig{Queue: testQueue, Concurrency: 3, TxHandler: txNop})
	require.NoError(t, err, "Concurrency 3 fits a pool of 4")
	_, err = c.NewWorker(goclient.WorkerConfig{Queue: testQueue, Concurrency: 4,
		Handler: func(context.Context, goclient.Job) error { return nil }})
	require.NoError(t, err, "a Handler holds no connection while it runs")
}

// The README's worker, as written: NewPool(ctx, url, 0) and a TxHandler
// worker of Concurrency 4 runs on any machine, 2 CPUs included (pgx alone
// sizes a pool max(4, CPUs), one too few): a pool from a connection string
// without pool_max_conns holds at least DefaultPoolMaxConns, and one that
// sets it holds exactly that many.
func TestNewPoolFitsTheREADMEWorkerOnAnyMachine(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := setup(t, shortPolicy)
	pool, err := goclient.NewPool(ctx, e.workerDB, 0)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	require.GreaterOrEqual(t, pool.Config().MaxConns, int32(goclient.DefaultPoolMaxConns))
	c := e.client(pool)
	ids := e.enqueue(4)
	done := make(chan int64, len(ids))
	w, err := c.NewWorker(goclient.WorkerConfig{Queue: testQueue, Concurrency: 4, PollInterval: 50 * time.Millisecond,
		TxHandler: func(ctx context.Context, tx pgx.Tx, job goclient.Job) error {
			done <- job.ID()
			return nil
		}})
	require.NoError(t, err, "the README's worker starts")
	stop := runWorker(t, w)
	for range ids {
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Fatal("the README's worker did not run its jobs")
		}
	}
	require.NoError(t, stop())

	sep := "?"
	if strings.Contains(e.workerDB, "?") {
		sep = "&"
	}
	cfg, err := goclient.ParsePoolConfig(e.workerDB+sep+"pool_max_conns=3", 0)
	require.NoError(t, err)
	require.EqualValues(t, 3, cfg.MaxConns, "pool_max_conns is kept as given")
}

// A TxHandler worker claims no more jobs than its pool has connections
// free: with two of four connections held elsewhere it runs two jobs and
// leaves the third queued although it has a concurrency slot free; once
// the connections come back, it claims and finishes the third.
func TestTxHandlerWorkerClaimsOnlyWhatItsFreeConnectionsCanStart(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := setup(t, shortPolicy)
	ids := e.enqueue(3)
	pool := e.sizedPool(4)
	held := make([]*pgxpool.Conn, 2)
	for i := range held {
		conn, err := pool.Acquire(ctx)
		require.NoError(t, err)
		held[i] = conn
	}
	var releaseOnce sync.Once
	giveBack := func() {
		releaseOnce.Do(func() {
			for _, conn := range held {
				conn.Release()
			}
		})
	}
	t.Cleanup(giveBack) // registered after the pool's Close, so it runs first
	c := e.client(pool)
	release := make(chan struct{})
	var closeOnce sync.Once
	unblock := func() { closeOnce.Do(func() { close(release) }) }
	defer unblock()
	w, err := c.NewWorker(goclient.WorkerConfig{Queue: testQueue, Concurrency: 3, PollInterval: 50 * time.Millisecond,
		TxHandler: func(ctx context.Context, tx pgx.Tx, job goclient.Job) error {
			select {
			case <-release:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}})
	require.NoError(t, err)
	stop := runWorker(t, w)
	defer func() { require.NoError(t, stop()) }()

	counts := func() (running, queued int) {
		for _, id := range ids {
			switch e.state(id).Status {
			case goclient.StatusRunning:
				running++
			case goclient.StatusQueued:
				queued++
			}
		}
		return running, queued
	}
	waitFor(t, 10*time.Second, "two jobs running", func() bool { r, _ := counts(); return r == 2 })
	time.Sleep(300 * time.Millisecond) // six poll intervals with a free slot
	running, queued := counts()
	require.Equal(t, 2, running)
	require.Equal(t, 1, queued, "the third job is not claimed while no connection is free to start it")

	giveBack()
	unblock()
	waitFor(t, 10*time.Second, "every job succeeded", func() bool {
		for _, id := range ids {
			if e.state(id).Status != goclient.StatusSucceeded {
				return false
			}
		}
		return true
	})
}
