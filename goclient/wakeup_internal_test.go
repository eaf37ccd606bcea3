package goclient

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// When the listener's connection is cut and cannot be opened again (here
// every later connect fails), the worker keeps claiming by polling: a job
// enqueued after the cut starts at the next poll. The loss is logged once,
// however many connects fail after it.
func TestWakeupListenerDownWorkerPolls(t *testing.T) {
	t.Parallel()
	const queue = "etl.listener_down"
	producer, workerPool := logSetup(t, queue, 2*time.Second, 500*time.Millisecond)
	logs := &logBuffer{}
	c, err := NewClient(workerPool, Config{SafetyMargin: 500 * time.Millisecond, AttemptTimeout: 400 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	started := make(chan int64, 4)
	w, err := c.NewWorker(WorkerConfig{Queue: queue, PollInterval: 300 * time.Millisecond,
		Handler: func(ctx context.Context, job Job) error {
			started <- job.ID()
			return nil
		}})
	require.NoError(t, err)
	var connects atomic.Int32
	var listener atomic.Pointer[pgx.Conn]
	w.connectListener = func(ctx context.Context, cfg *pgx.ConnConfig) (*pgx.Conn, error) {
		if connects.Add(1) > 1 {
			return nil, errors.New("connect refused (test)")
		}
		conn, err := pgx.ConnectConfig(ctx, cfg)
		listener.Store(conn)
		return conn, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	defer func() {
		cancel()
		require.NoError(t, <-done)
	}()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(logs.String(), "leasefence: listening for new jobs") {
		require.True(t, time.Now().Before(deadline), "the worker listens")
		time.Sleep(10 * time.Millisecond)
	}
	// The worker's login may end its own sessions.
	_, err = workerPool.Exec(context.Background(), `SELECT pg_terminate_backend($1)`, listener.Load().PgConn().PID())
	require.NoError(t, err, "cut the listener's connection")
	for connects.Load() < 3 {
		require.True(t, time.Now().Before(deadline), "the listener tries again, and again")
		time.Sleep(10 * time.Millisecond)
	}
	id, err := producer.Enqueue(context.Background(), EnqueueParams{Queue: queue, Payload: []byte(`{}`)})
	require.NoError(t, err)
	select {
	case got := <-started:
		require.Equal(t, id, got)
	case <-time.After(10 * time.Second):
		t.Fatal("the job did not start: the worker stopped polling without its listener")
	}
	require.Equal(t, 1, strings.Count(logs.String(), "wake-up listener lost"), logs.String())
	require.NotContains(t, logs.String(), "wake-up listener back")
}
