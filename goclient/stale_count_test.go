package goclient_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/mightyetl/leasefence/goclient"
)

// quietPolicy renews every 10 s, so within a test of a second or two no
// renewal notices a claim going stale: only the call under test can.
var quietPolicy = policy{lease: 30 * time.Second, interval: 10 * time.Second, maxLifetime: time.Hour, renewalEnabled: true}

// cancelJob makes a running job's claim stale at once (producer cancel).
func (e *env) cancelJob(id int64) {
	e.t.Helper()
	cancelled, err := e.producerAdmin.Cancel(context.Background(), id, goclient.ChangeRecord{})
	require.NoError(e.t, err)
	require.True(e.t, cancelled)
}

// A terminal write refused as stale aborts its transaction, so the database
// cannot count it: the client does, one OwnershipLost(queue, LossStale) per
// stale Complete, Retry or Fail (and their Tx forms) and per release that
// answers false. Before, only a Worker's own terminal writes were counted.
func TestDirectStaleTerminalWritesAndReleasesAreCounted(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := setup(t, quietPolicy)
	ids := e.enqueue(1)
	rec := newRecorder()
	c := e.worker(goclient.Config{Observer: rec})
	job := claim(t, c)
	e.cancelJob(ids[0])

	require.ErrorIs(t, c.Complete(ctx, job.Claim(), nil), goclient.ErrStaleClaim)
	_, err := c.Retry(ctx, job.Claim(), time.Second, "upstream_timeout")
	require.ErrorIs(t, err, goclient.ErrStaleClaim)
	require.ErrorIs(t, c.Fail(ctx, job.Claim(), "schema_mismatch"), goclient.ErrStaleClaim)
	require.Equal(t, 3, rec.lostCount(goclient.LossStale))

	pool := e.pool(e.workerDB)
	inTx := func(write func(pgx.Tx) error) error {
		tx, err := pool.Begin(ctx)
		require.NoError(t, err)
		defer func() { _ = tx.Rollback(ctx) }()
		return write(tx)
	}
	require.ErrorIs(t, inTx(func(tx pgx.Tx) error { return c.CompleteTx(ctx, tx, job.Claim(), nil) }), goclient.ErrStaleClaim)
	require.ErrorIs(t, inTx(func(tx pgx.Tx) error {
		_, err := c.RetryTx(ctx, tx, job.Claim(), time.Second, "upstream_timeout")
		return err
	}), goclient.ErrStaleClaim)
	require.ErrorIs(t, inTx(func(tx pgx.Tx) error { return c.FailTx(ctx, tx, job.Claim(), "schema_mismatch") }),
		goclient.ErrStaleClaim)
	require.Equal(t, 6, rec.lostCount(goclient.LossStale))

	released, err := c.Release(ctx, job.Claim())
	require.NoError(t, err)
	require.False(t, released)
	require.Equal(t, 7, rec.lostCount(goclient.LossStale), "a release answered false is counted as stale")

	require.ErrorIs(t, c.Fail(ctx, job.Claim(), "Not A Code"), goclient.ErrInvalidArgument)
	require.Equal(t, 7, rec.lostCount(goclient.LossStale), "a refused argument is not a stale write")
	require.Zero(t, rec.lostCount(goclient.LossReleased))
	require.Equal(t, map[string]bool{testQueue: true}, rec.queues, "every count is labelled with the claim's queue")
}

// Lease.Release of a claim that went stale unnoticed counts the loss as
// stale, not as released; a second Release of the ended lease counts
// nothing more. Before, it counted released whatever the database answered.
func TestReleaseOfALeaseLostUnnoticedCountsStale(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := setup(t, quietPolicy)
	ids := e.enqueue(2)
	rec := newRecorder()
	c := e.worker(goclient.Config{Observer: rec})
	jobs, err := c.ClaimMany(ctx, testQueue, 2)
	require.NoError(t, err)
	lost, kept := c.Keep(ctx, jobs[0]), c.Keep(ctx, jobs[1])
	e.cancelJob(jobs[0].ID())

	released, err := lost.Release(ctx)
	require.NoError(t, err)
	require.False(t, released)
	require.ErrorIs(t, lost.Err(), goclient.ErrLeaseReleased)
	require.Equal(t, 1, rec.lostCount(goclient.LossStale))
	require.Zero(t, rec.lostCount(goclient.LossReleased))
	released, err = lost.Release(ctx)
	require.NoError(t, err)
	require.False(t, released)
	require.Equal(t, 1, rec.lostCount(goclient.LossStale), "an ended lease counts no second loss")

	released, err = kept.Release(ctx)
	require.NoError(t, err)
	require.True(t, released)
	require.Equal(t, 1, rec.lostCount(goclient.LossReleased))
	require.Equal(t, goclient.StatusQueued, e.state(ids[1]).Status)
}

// Close releases every kept claim in one batch and counts each from the
// database's answer: the claim that went stale unnoticed as stale, the
// other as released.
func TestCloseCountsAKeptClaimThatWentStaleAsStale(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := setup(t, quietPolicy)
	e.enqueue(2)
	rec := newRecorder()
	c := e.worker(goclient.Config{Observer: rec})
	jobs, err := c.ClaimMany(ctx, testQueue, 2)
	require.NoError(t, err)
	c.Keep(ctx, jobs[0])
	c.Keep(ctx, jobs[1])
	e.cancelJob(jobs[0].ID())
	require.NoError(t, c.Close())
	require.Equal(t, 1, rec.lostCount(goclient.LossStale))
	require.Equal(t, 1, rec.lostCount(goclient.LossReleased))
}

// A stopping worker's batch release counts each abandoned claim from the
// database's answer, so a claim lost unnoticed shows as stale.
func TestShutdownCountsAnAbandonedClaimThatWentStaleAsStale(t *testing.T) {
	t.Parallel()
	e := setup(t, quietPolicy)
	ids := e.enqueue(2)
	rec := newRecorder()
	c := e.worker(goclient.Config{Observer: rec})
	w, err := c.NewWorker(goclient.WorkerConfig{Queue: testQueue, Concurrency: 2, ShutdownTimeout: 200 * time.Millisecond,
		PollInterval: 50 * time.Millisecond,
		Handler: func(ctx context.Context, job goclient.Job) error {
			<-ctx.Done()
			return ctx.Err()
		}})
	require.NoError(t, err)
	stop := runWorker(t, w)
	waitFor(t, 5*time.Second, "both jobs running", func() bool {
		return e.state(ids[0]).Status == goclient.StatusRunning && e.state(ids[1]).Status == goclient.StatusRunning
	})
	e.cancelJob(ids[0])
	require.NoError(t, stop())
	require.Equal(t, 1, rec.lostCount(goclient.LossStale))
	require.Equal(t, 1, rec.lostCount(goclient.LossReleased))
	require.Equal(t, goclient.StatusQueued, e.state(ids[1]).Status)
}
