package goclient_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/mightyetl/leasefence/goclient"
)

// Shutdown stops claiming, waits for in-flight handlers up
// to its deadline, then cancels them and releases their claims; no lease is
// extended afterwards and no goroutine of the worker or client outlives
// Close.
//
// Not parallel: goleak needs a process in which no other test starts
// goroutines while this one runs.
func TestShutdownReleasesAndStopsHeartbeats(t *testing.T) {
	ctx := context.Background()
	e := setup(t, shortPolicy)
	ids := e.enqueue(3)
	before := goleak.IgnoreCurrent()

	pool := e.pool(e.workerDB)
	rec := newRecorder()
	c, err := goclient.NewClient(pool, shortPolicy.clientConfig(goclient.Config{Observer: rec}))
	require.NoError(t, err)
	causes := make(chan error, 3)
	w, err := c.NewWorker(goclient.WorkerConfig{Queue: testQueue, Concurrency: 2, ShutdownTimeout: 300 * time.Millisecond,
		PollInterval: 50 * time.Millisecond,
		Handler: func(ctx context.Context, job goclient.Job) error {
			<-ctx.Done()
			causes <- context.Cause(ctx)
			return ctx.Err()
		}})
	require.NoError(t, err)
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.Run(runCtx) }()
	waitFor(t, 3*shortPolicy.lease, "two running jobs renewed at least once", func() bool {
		n := 0
		for _, id := range ids {
			if s := e.state(id); s.Status == goclient.StatusRunning && s.RenewalCount > 0 {
				n++
			}
		}
		return n == 2
	})
	cancel()
	stoppedAt := time.Now()
	require.NoError(t, <-done)
	require.Less(t, time.Since(stoppedAt), 300*time.Millisecond+shortPolicy.interval,
		"Run returns soon after its shutdown deadline")
	for range 2 {
		require.ErrorIs(t, <-causes, goclient.ErrLeaseReleased)
	}
	require.Equal(t, 2, rec.lostCount(goclient.LossReleased))

	renewalsAtStop := rec.renewalCount(goclient.RenewalRenewed)
	snapshot := map[int64]goclient.JobState{}
	for _, id := range ids {
		s := e.state(id)
		require.Equal(t, goclient.StatusQueued, s.Status, "every claim was released or never made")
		require.Zero(t, s.AttemptNumber, "a released claim gives its attempt back")
		snapshot[id] = s
	}
	time.Sleep(3 * shortPolicy.interval)
	require.Equal(t, renewalsAtStop, rec.renewalCount(goclient.RenewalRenewed), "no renewal after shutdown")
	for _, id := range ids {
		require.Equal(t, snapshot[id], e.state(id), "nothing touched the job after shutdown")
	}

	require.NoError(t, c.Close())
	require.NoError(t, c.Close(), "Close is idempotent")
	pool.Close()
	goleak.VerifyNone(t, before)
}

// A worker whose handlers finish within the shutdown deadline completes
// them instead of releasing them.
func TestShutdownWaitsForHandlersThatFinishInTime(t *testing.T) {
	t.Parallel()
	e := setup(t, shortPolicy)
	ids := e.enqueue(1)
	c := e.worker()
	started := make(chan struct{})
	w, err := c.NewWorker(goclient.WorkerConfig{Queue: testQueue, ShutdownTimeout: 5 * time.Second,
		Handler: func(ctx context.Context, job goclient.Job) error {
			close(started)
			time.Sleep(shortPolicy.lease) // outlives Run's context, not the shutdown deadline
			return ctx.Err()
		}})
	require.NoError(t, err)
	stop := runWorker(t, w)
	<-started
	require.NoError(t, stop())
	require.Equal(t, goclient.StatusSucceeded, e.state(ids[0]).Status)
}

// Close ends and releases every claim the client still keeps, and a closed
// client makes no new claim or lease.
func TestCloseReleasesKeptClaims(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := setup(t, shortPolicy)
	ids := e.enqueue(3)
	rec := newRecorder()
	c := e.worker(goclient.Config{Observer: rec})
	jobs, err := c.ClaimMany(ctx, testQueue, 2)
	require.NoError(t, err)
	leases := []*goclient.Lease{c.Keep(ctx, jobs[0]), c.Keep(ctx, jobs[1])}
	require.NoError(t, c.Close())
	for _, l := range leases {
		require.ErrorIs(t, context.Cause(l.Context()), goclient.ErrClosed)
	}
	for _, id := range ids {
		require.Equal(t, goclient.StatusQueued, e.state(id).Status)
	}
	require.Equal(t, 2, rec.lostCount(goclient.LossReleased))

	_, err = c.Claim(ctx, testQueue)
	require.ErrorIs(t, err, goclient.ErrClosed)
	late := c.Keep(ctx, jobs[0])
	require.ErrorIs(t, late.Err(), goclient.ErrClosed, "a lease kept after Close has ended already")
	w, err := c.NewWorker(goclient.WorkerConfig{Queue: testQueue, Handler: func(context.Context, goclient.Job) error { return nil }})
	require.NoError(t, err)
	require.ErrorIs(t, w.Run(ctx), goclient.ErrClosed)
}

// A lease ends with its parent context, and Stop and Release end it on
// request; none of them renews afterwards.
func TestLeaseEndsWithItsContextStopAndRelease(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := setup(t, shortPolicy)
	ids := e.enqueue(3)
	rec := newRecorder()
	c := e.worker(goclient.Config{Observer: rec})
	jobs, err := c.ClaimMany(ctx, testQueue, 3)
	require.NoError(t, err)

	parent, cancel := context.WithCancel(ctx)
	byParent := c.Keep(parent, jobs[0])
	stopped := c.Keep(ctx, jobs[1])
	released := c.Keep(ctx, jobs[2])
	cancel()
	waitFor(t, time.Second, "the lease to follow its parent", func() bool { return byParent.Err() != nil })
	require.ErrorIs(t, byParent.Err(), context.Canceled)
	stopped.Stop()
	require.ErrorIs(t, stopped.Err(), goclient.ErrLeaseStopped)
	ok, err := released.Release(ctx)
	require.NoError(t, err)
	require.True(t, ok)
	require.ErrorIs(t, released.Err(), goclient.ErrLeaseReleased)
	require.Equal(t, goclient.StatusQueued, e.state(ids[2]).Status)

	time.Sleep(2 * shortPolicy.interval)
	require.Zero(t, rec.renewalCount(goclient.RenewalRenewed), "no ended lease was renewed")
	require.Zero(t, e.state(ids[0]).RenewalCount)
	require.Equal(t, 1, rec.lostCount(goclient.LossReleased), "only Release counts as a loss")
}
