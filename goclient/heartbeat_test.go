package goclient_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/mightyetl/leasefence/goclient"
	"github.com/mightyetl/leasefence/internal/leaseport"
)

// runWorker runs w until the returned stop is called; stop returns Run's error.
func runWorker(t *testing.T, w *goclient.Worker) (stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	var once sync.Once
	var err error
	stop = func() error {
		once.Do(func() {
			cancel()
			err = <-done
		})
		return err
	}
	t.Cleanup(func() { _ = stop() })
	return stop
}

// A job that runs three times its original lease
// stays singly owned while its renewals succeed; a second replica polling
// the queue the whole time never gets it.
func TestJobRunningThreeLeasesStaysSinglyOwned(t *testing.T) {
	t.Parallel()
	e := setup(t, shortPolicy)
	ids := e.enqueue(1)
	rec := newRecorder()
	a := e.worker(goclient.Config{Observer: rec, OwnerID: "replica-a"})
	b := e.client(e.db.LoginPool(t, "durable_job_worker"), goclient.Config{OwnerID: "replica-b"})

	runFor := 3 * shortPolicy.lease
	var handlerErr error
	var ran time.Duration
	started, finished := make(chan struct{}), make(chan struct{})
	w, err := a.NewWorker(goclient.WorkerConfig{Queue: testQueue, PollInterval: 50 * time.Millisecond,
		Handler: func(ctx context.Context, job goclient.Job) error {
			defer close(finished)
			close(started)
			start := time.Now()
			select {
			case <-ctx.Done():
				handlerErr = context.Cause(ctx)
			case <-time.After(runFor):
			}
			ran = time.Since(start)
			return handlerErr
		}})
	require.NoError(t, err)
	stop := runWorker(t, w)

	// The second replica polls for the whole run.
	<-started
	polls := 0
	for {
		select {
		case <-finished:
		default:
			_, err := b.Claim(context.Background(), testQueue)
			require.ErrorIs(t, err, goclient.ErrNoJob, "a second replica must never claim a job whose renewals succeed")
			polls++
			time.Sleep(100 * time.Millisecond)
			continue
		}
		break
	}
	waitFor(t, 5*time.Second, "the job to finish", func() bool { return e.state(ids[0]).Status == goclient.StatusSucceeded })
	require.NoError(t, stop())

	require.NoError(t, handlerErr, "the handler's context stayed alive")
	require.GreaterOrEqual(t, ran, runFor)
	require.Greater(t, polls, 20)
	s := e.state(ids[0])
	require.Equal(t, 1, s.AttemptNumber, "one claim, no reclaim")
	require.Equal(t, int64(1), s.FencingGeneration)
	require.GreaterOrEqual(t, s.RenewalCount, int64(runFor/shortPolicy.interval)-2)
	// Every renewal the client counted is one the database committed; the
	// database may hold one more: the attempt in flight when the lease was
	// stopped for the completion commits, and its answer is ignored.
	counted := rec.renewalCount(goclient.RenewalRenewed)
	require.LessOrEqual(t, counted, int(s.RenewalCount), "the client counted a renewal the database did not commit")
	require.LessOrEqual(t, int(s.RenewalCount), counted+1, "more than the one in-flight renewal went uncounted")
	var outcomes int
	require.NoError(t, e.admin.QueryRow(context.Background(),
		`SELECT count(*) FROM durable_jobs.job_outcome_ledger WHERE job_record_id = $1`, ids[0]).Scan(&outcomes))
	require.Equal(t, 1, outcomes)
	require.Empty(t, rec.lost)
}

// A handler that hogs its goroutine (a CPU loop that never
// yields or looks at its context) and one that holds the client pool's only
// connection in a long statement cannot delay the heartbeat, which has its
// own goroutines, timers and connections.
func TestHandlerHoggingGoroutineStillRenews(t *testing.T) {
	t.Parallel()
	e := setup(t, shortPolicy)
	ids := e.enqueue(2)
	rec := newRecorder()
	cfg, err := goclient.ParsePoolConfig(e.workerDB, 0)
	require.NoError(t, err)
	cfg.MaxConns = 1
	mainPool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	require.NoError(t, err)
	t.Cleanup(mainPool.Close)
	c := e.client(mainPool, goclient.Config{Observer: rec})
	hog := 3 * shortPolicy.lease
	w, err := c.NewWorker(goclient.WorkerConfig{Queue: testQueue, Concurrency: 2,
		Handler: func(ctx context.Context, job goclient.Job) error {
			if job.ID() == ids[0] {
				spins := 0
				for start := time.Now(); time.Since(start) < hog; {
					spins++
				}
				return nil
			}
			_, err := mainPool.Exec(context.Background(), `SELECT pg_sleep($1)`, hog.Seconds())
			return err
		}})
	require.NoError(t, err)
	stop := runWorker(t, w)
	waitFor(t, hog+5*time.Second, "both jobs to finish", func() bool {
		return e.state(ids[0]).Status == goclient.StatusSucceeded && e.state(ids[1]).Status == goclient.StatusSucceeded
	})
	require.NoError(t, stop())
	for _, id := range ids {
		s := e.state(id)
		require.Equal(t, 1, s.AttemptNumber, "never reclaimed")
		require.GreaterOrEqual(t, s.RenewalCount, int64(hog/shortPolicy.interval)-2, "renewed on schedule throughout")
	}
	require.Empty(t, rec.lost)
	rec.mu.Lock()
	defer rec.mu.Unlock()
	require.NotEmpty(t, rec.lags)
	// A heartbeat the hog held up would run its ticks a hog's length (three
	// leases) late. The scheduler of a loaded machine delays a tick now and
	// then by a few milliseconds past half an interval (252 ms against 250
	// once, at load 12); no tick may be a whole interval late, and nine in
	// ten are within half of one.
	late := 0
	for _, lag := range rec.lags {
		require.Less(t, lag, shortPolicy.interval, "a renewal tick ran a whole interval late")
		if lag >= shortPolicy.interval/2 {
			late++
		}
	}
	require.LessOrEqual(t, late*10, len(rec.lags), "more than one tick in ten ran half an interval late: %v", rec.lags)
}

// An application wall clock off by hours changes nothing:
// the trust deadline comes from the database's lease_expires_at -
// database_time on the monotonic clock, and the skew only shows in the clock
// offset signal.
func TestSkewedApplicationClockChangesNothing(t *testing.T) {
	t.Parallel()
	for _, skew := range []time.Duration{3 * time.Hour, -3 * time.Hour} {
		t.Run(skew.String(), func(t *testing.T) {
			t.Parallel()
			e := setup(t, shortPolicy)
			ids := e.enqueue(1)
			rec := newRecorder()
			c := e.worker(leaseport.WithClock(goclient.Config{Observer: rec}, skewedClock{skew}))
			job := claim(t, c)
			lease := c.Keep(context.Background(), job)
			trusted := lease.TrustedFor()
			require.InDelta(t, (shortPolicy.lease - shortPolicy.interval).Seconds(), trusted.Seconds(), 0.25,
				"the first trust window is the granted lease minus the margin, whatever the wall clock says")

			time.Sleep(2 * shortPolicy.lease)
			require.NoError(t, lease.Err(), "the claim is still trusted two leases later")
			require.InDelta(t, (shortPolicy.lease - shortPolicy.interval).Seconds(), lease.TrustedFor().Seconds(),
				shortPolicy.interval.Seconds()+0.25)
			require.NoError(t, c.Complete(context.Background(), job.Claim(), nil))
			lease.Stop()
			require.ErrorIs(t, lease.Err(), goclient.ErrLeaseStopped)
			require.Equal(t, goclient.StatusSucceeded, e.state(ids[0]).Status)
			require.GreaterOrEqual(t, rec.renewalCount(goclient.RenewalRenewed), 5)
			rec.mu.Lock()
			defer rec.mu.Unlock()
			require.NotEmpty(t, rec.offsets)
			for _, off := range rec.offsets {
				require.InDelta(t, (-skew).Seconds(), off.Seconds(), 1, "database time minus the skewed application clock")
			}
		})
	}
}

// A claim nobody renews is reclaimed only once the
// database says it expired; the old token then cannot renew or finish.
func TestUnrenewedClaimIsReclaimedOnlyAfterDatabaseExpiry(t *testing.T) {
	t.Parallel()
	e := setup(t, shortPolicy)
	ids := e.enqueue(1)
	a := e.worker(goclient.Config{OwnerID: "replica-a"})
	rec := newRecorder()
	b := e.client(e.db.LoginPool(t, "durable_job_worker"), goclient.Config{OwnerID: "replica-b", Observer: rec})
	first := claim(t, a) // no heartbeat: the worker "stops renewing"

	var second goclient.Job
	for {
		j, err := b.Claim(context.Background(), testQueue)
		if errors.Is(err, goclient.ErrNoJob) {
			time.Sleep(25 * time.Millisecond)
			continue
		}
		require.NoError(t, err)
		second = j
		break
	}
	require.Equal(t, ids[0], second.ID())
	require.False(t, second.DatabaseTime().Before(first.LeaseExpiresAt()),
		"reclaimed at database time %s, before the first claim's expiry %s", second.DatabaseTime(), first.LeaseExpiresAt())
	require.Equal(t, 2, second.Attempt())
	require.Equal(t, int64(2), second.FencingGeneration())
	rec.mu.Lock()
	require.Equal(t, 1, rec.claims, "the reclaim is counted once, as a claim like any other (empty polls are not)")
	rec.mu.Unlock()

	r, err := a.Renew(context.Background(), first.Claim())
	require.NoError(t, err)
	require.Equal(t, goclient.RenewalStale, r.Outcome, "the superseded token cannot renew")
	require.ErrorIs(t, a.Complete(context.Background(), first.Claim(), nil), goclient.ErrStaleClaim)
	_, err = a.Retry(context.Background(), first.Claim(), 0, "late")
	require.ErrorIs(t, err, goclient.ErrStaleClaim)
	require.ErrorIs(t, a.Fail(context.Background(), first.Claim(), "late"), goclient.ErrStaleClaim)
	require.NoError(t, b.Complete(context.Background(), second.Claim(), nil))
	require.Equal(t, goclient.StatusSucceeded, e.state(ids[0]).Status)
}

// A stale renewal (the job was cancelled) cancels the handler's context at
// once, with ErrStaleClaim as the cause, and no terminal write follows.
func TestStaleRenewalCancelsTheHandlerAtOnce(t *testing.T) {
	t.Parallel()
	e := setup(t, shortPolicy)
	ids := e.enqueue(1)
	rec := newRecorder()
	c := e.worker(goclient.Config{Observer: rec})
	started := make(chan struct{})
	causes := make(chan error, 1)
	w, err := c.NewWorker(goclient.WorkerConfig{Queue: testQueue, Handler: func(ctx context.Context, job goclient.Job) error {
		close(started)
		<-ctx.Done()
		causes <- context.Cause(ctx)
		return nil // even a "success" after the loss is not written
	}})
	require.NoError(t, err)
	stop := runWorker(t, w)
	<-started
	cancelled, err := e.producerAdmin.Cancel(context.Background(), ids[0], goclient.ChangeRecord{})
	require.NoError(t, err)
	require.True(t, cancelled)
	at := time.Now()
	select {
	case cause := <-causes:
		require.ErrorIs(t, cause, goclient.ErrStaleClaim)
		require.Less(t, time.Since(at), shortPolicy.interval+time.Second, "cancelled by the next renewal")
	case <-time.After(shortPolicy.lease):
		t.Fatal("the handler's context was not cancelled after the claim went stale")
	}
	require.NoError(t, stop())
	require.Equal(t, goclient.StatusCancelled, e.state(ids[0]).Status)
	require.Equal(t, 1, rec.lostCount(goclient.LossStale))
	require.Equal(t, 1, rec.renewalCount(goclient.RenewalStale))
}

// renewal_disabled stops renewing; the handler keeps running until the
// granted expiry, and the trust deadline then cancels it, before the
// database's expiry.
func TestRenewalDisabledRunsToTheGrantedExpiry(t *testing.T) {
	t.Parallel()
	p := shortPolicy
	p.renewalEnabled = false
	e := setup(t, p)
	ids := e.enqueue(1)
	rec := newRecorder()
	c := e.worker(goclient.Config{Observer: rec})
	job := claim(t, c)
	lease := c.Keep(context.Background(), job)
	waitFor(t, shortPolicy.lease, "the renewal_disabled answer", lease.RenewalDisabled)
	require.NoError(t, lease.Err(), "still trusted: the claim runs out at its expiry")
	<-lease.Context().Done()
	lostAt := e.dbNow()
	require.ErrorIs(t, context.Cause(lease.Context()), goclient.ErrTrustDeadlinePassed)
	require.True(t, lostAt.Before(job.LeaseExpiresAt()), "given up at %s, before the database expiry %s", lostAt, job.LeaseExpiresAt())
	require.Greater(t, lostAt.Sub(job.DatabaseTime()), shortPolicy.lease-shortPolicy.interval-300*time.Millisecond)
	s := e.state(ids[0])
	require.Equal(t, int64(0), s.RenewalCount)
	require.True(t, s.LeaseExpiresAt.Equal(job.LeaseExpiresAt()), "the expiry never moved")
	require.Equal(t, 1, rec.renewalCount(goclient.RenewalDisabled))
	require.Equal(t, 1, rec.lostCount(goclient.LossTrustDeadlinePassed))
	require.Negative(t, lease.TrustedFor())
}

// Renewals that fall due close together go out as one renew_job_leases
// call, and none is sent later than its own schedule.
func TestRenewalsDueTogetherGoOutAsOneCall(t *testing.T) {
	t.Parallel()
	// Renewals every second of a 10 s lease: the test is about which claims
	// go out together, so a renewal held up on a loaded machine must not
	// end a lease (with p's 3 s lease, one renewal call answered
	// a second late found its lease expired, "claim is stale", once in CI).
	p := policy{lease: 10 * time.Second, interval: time.Second, maxLifetime: time.Hour, renewalEnabled: true}
	// The sixth claim must come within the coalescing window (interval/10)
	// of the other five; on a loaded machine a claim can take longer than
	// that, so the setup is tried again (bounded) until it does.
	var (
		port *countingPort
		c    *goclient.Client
		jobs []goclient.Job
		late goclient.Job
	)
	for try := 0; ; try++ {
		e := setup(t, p)
		e.enqueue(6)
		port = e.heartbeatPort()
		c = e.worker(leaseport.With(goclient.Config{}, port))
		var err error
		jobs, err = c.ClaimMany(context.Background(), testQueue, 5)
		require.NoError(t, err)
		require.Len(t, jobs, 5)
		late = claim(t, c)
		if late.DatabaseTime().Sub(jobs[0].DatabaseTime()) < p.interval/20 {
			break
		}
		require.Less(t, try, 5, "the sixth claim never came within %s of the first five", p.interval/20)
	}
	leases := []*goclient.Lease{}
	for _, j := range append(jobs, late) {
		leases = append(leases, c.Keep(context.Background(), j))
	}
	time.Sleep(3*p.interval + p.interval/2)
	for _, l := range leases {
		require.NoError(t, l.Err())
		l.Stop()
	}
	batches, sentAt, _ := port.snapshot()
	require.GreaterOrEqual(t, len(batches), 3)
	for i, b := range batches {
		require.Len(t, b, 6, "call %d renewed %v, not all six claims together", i, b)
		if i > 0 {
			require.LessOrEqual(t, sentAt[i].Sub(sentAt[i-1]), p.interval+p.interval/4,
				"no claim is renewed later than its schedule")
		}
	}
}

// The heartbeat has at most RenewalPoolSize calls open, however slow the
// database; renewals that fall due while every slot is busy wait and then
// go out together.
func TestRenewalsInFlightAreBounded(t *testing.T) {
	t.Parallel()
	e := setup(t, slowPolicy)
	e.enqueue(3)
	port := e.heartbeatPort()
	port.delay = 400 * time.Millisecond // a slow database: each call takes longer than the claims are apart
	rec := newRecorder()
	c := e.worker(leaseport.With(goclient.Config{MaxInFlightRenewals: 1, RenewalPoolSize: 1, Observer: rec, AttemptTimeout: 800 * time.Millisecond}, port))
	var leases []*goclient.Lease
	for range 3 {
		leases = append(leases, c.Keep(context.Background(), claim(t, c)))
		time.Sleep(150 * time.Millisecond) // beyond the coalescing window
	}
	time.Sleep(3 * slowPolicy.interval)
	for _, l := range leases {
		require.NoError(t, l.Err(), "bounded, yet every claim renewed in time")
		l.Stop()
	}
	batches, _, peak := port.snapshot()
	require.Equal(t, 1, peak, "never more than one renewal call open")
	merged := false
	for _, b := range batches {
		merged = merged || len(b) > 1
	}
	require.True(t, merged, "renewals that waited for the slot went out together: %v", batches)
	rec.mu.Lock()
	defer rec.mu.Unlock()
	for _, n := range rec.inFlight {
		require.LessOrEqual(t, n, 1)
	}
}

// A slow database: every renewal call takes most of its renewal interval,
// and the claims due at once fill four calls of renew_job_leases. One call
// at a time (MaxInFlightRenewals 1, the old fixed bound) would answer the
// later calls after their claims' trust deadlines and lose them; the
// heartbeat opens more calls instead, up to its pool's size, keeps every
// lease, and comes back to one call at a time once the database is fast
// again.
func TestSlowDatabaseRaisesRenewalsInFlight(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// 9 s leases renewed every 3 s; the client's margin is one interval, so
	// a renewal must be answered within 3 s of when it falls due (and a
	// call may take 3 s, its attempt 2.4 s of them).
	p := policy{lease: 9 * time.Second, interval: 3 * time.Second, maxLifetime: time.Hour, renewalEnabled: true}
	e := setup(t, p)
	const batches, batch = 4, 1000 // renew_job_leases takes at most 1,000 claims a call
	params := make([]goclient.EnqueueParams, batches*batch)
	for i := range params {
		params[i] = goclient.EnqueueParams{Queue: testQueue, Payload: []byte(`{}`)}
	}
	_, err := e.producer.EnqueueMany(ctx, params)
	require.NoError(t, err)
	port := e.heartbeatPort()
	// Each call takes at least 1.8 s, which leaves the database 1.2 s. One
	// call at a time answers the fourth batch 3 s + 4 x 1.8 s after the
	// first was claimed, past its trust deadline (6 s after its own
	// claim) unless the claims took more than 4 s; the third unless they
	// took more than 2.4 s.
	port.setDelay(1800 * time.Millisecond)
	rec := newRecorder()
	c := e.worker(leaseport.With(goclient.Config{MaxInFlightRenewals: 1, Observer: rec}, port))
	var leases []*goclient.Lease
	for len(leases) < batches*batch {
		jobs, err := c.ClaimMany(ctx, testQueue, batch)
		require.NoError(t, err)
		require.NotEmpty(t, jobs)
		for _, j := range jobs {
			leases = append(leases, c.Keep(ctx, j))
		}
	}
	time.Sleep(3*p.interval + p.interval/2)
	for _, l := range leases {
		require.NoError(t, l.Err(), "every lease kept on the slow database")
	}
	require.Zero(t, rec.lostCount(goclient.LossTrustDeadlinePassed))
	require.GreaterOrEqual(t, rec.renewalCount(goclient.RenewalRenewed), 2*batches*batch)
	_, _, peak := port.snapshot()
	require.Greater(t, peak, 1, "more than MaxInFlightRenewals calls were open")
	rec.mu.Lock()
	for _, n := range rec.inFlight {
		require.LessOrEqual(t, n, 4, "never more calls than the pool's size (4 x MaxInFlightRenewals)")
	}
	rec.mu.Unlock()

	// The database is fast again: after a few calls the measured latency
	// is down, and one call at a time carries the renewals. How many calls
	// that takes depends on how fast the machine answers 1,000 renewals
	// (on a loaded one a call can still take a second, and two in flight
	// are then right): the test waits, window by window, for one whose
	// calls never overlapped, up to ten.
	port.setDelay(0)
	time.Sleep(2 * p.interval)
	for window := 1; ; window++ {
		port.setDelay(0)
		time.Sleep(p.interval + p.interval/2)
		if _, _, peak = port.snapshot(); peak == 1 {
			break
		}
		require.Less(t, window, 10, "back to MaxInFlightRenewals calls once the database is fast (peak %d)", peak)
	}
	for _, l := range leases {
		require.NoError(t, l.Err())
		l.Stop()
	}
}

// schedulerFunc adapts a function to goclient.Scheduler.
type schedulerFunc func(task func()) error

func (f schedulerFunc) Submit(task func()) error { return f(task) }

// An embedding application's own executor runs the renewal attempts; when it
// refuses one, that is a failed attempt, retried inside the trust deadline
// and then failed closed.
func TestCustomSchedulerRunsRenewalsAndItsRefusalFailsClosed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := setup(t, shortPolicy)
	e.enqueue(2)
	var mu sync.Mutex
	accepted, refuse := 0, false
	var wg sync.WaitGroup
	t.Cleanup(wg.Wait)
	sched := schedulerFunc(func(task func()) error {
		mu.Lock()
		defer mu.Unlock()
		if refuse {
			return errors.New("executor saturated")
		}
		accepted++
		wg.Add(1)
		go func() {
			defer wg.Done()
			task()
		}()
		return nil
	})
	rec := newRecorder()
	c := e.worker(goclient.Config{Scheduler: sched, Observer: rec})
	lease := c.Keep(ctx, claim(t, c))
	waitFor(t, 2*shortPolicy.lease, "renewals through the custom executor", func() bool {
		return rec.renewalCount(goclient.RenewalRenewed) >= 2
	})
	mu.Lock()
	require.GreaterOrEqual(t, accepted, 2)
	refuse = true
	mu.Unlock()
	<-lease.Context().Done()
	require.ErrorIs(t, lease.Err(), goclient.ErrTrustDeadlinePassed)
	require.GreaterOrEqual(t, rec.renewalCount(goclient.RenewalDatabaseFailure), 2, "refusals were retried")
}

// A renewal port that answers with fewer results than claims broke its
// promise: the attempt counts as failed, never as renewed.
func TestShortRenewalAnswerIsAFailedAttempt(t *testing.T) {
	t.Parallel()
	e := setup(t, shortPolicy)
	e.enqueue(1)
	port := e.heartbeatPort()
	port.truncate = true
	rec := newRecorder()
	c := e.worker(leaseport.With(goclient.Config{Observer: rec}, port))
	lease := c.Keep(context.Background(), claim(t, c))
	<-lease.Context().Done()
	require.ErrorIs(t, lease.Err(), goclient.ErrTrustDeadlinePassed)
	require.Zero(t, rec.renewalCount(goclient.RenewalRenewed))
	require.GreaterOrEqual(t, rec.renewalCount(goclient.RenewalDatabaseFailure), 1)
}
