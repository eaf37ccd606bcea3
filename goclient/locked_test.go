package goclient_test

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/mightyetl/leasefence/goclient"
	"github.com/mightyetl/leasefence/internal/leaseport"
)

// One claimed job's row is held locked by another session (as a cancel or
// a completion in progress would) while the heartbeat renews the batch of
// three: the batch answers at once, the other two stay renewed, the locked
// one is not reported lost but renewed alone, and that renewal goes through
// once the lock goes. On 1cc8d2a the whole batch waited on the locked row
// until the attempt timeout, and all three went unrenewed.
func TestLockedRowIsRenewedAloneAndTheBatchStaysOwned(t *testing.T) {
	t.Parallel()
	// Longer than slowPolicy so that a loaded machine's scheduling delays
	// stay well inside the port's lock wait (4/5 of the interval) and the
	// coalescing window (a tenth of it); nothing below waits on a sleep
	// to be sure of an order.
	lockPolicy := policy{lease: 9 * time.Second, interval: 3 * time.Second, maxLifetime: time.Hour, renewalEnabled: true}
	e := setup(t, lockPolicy)
	e.enqueue(3)
	rec := newRecorder()
	port := e.heartbeatPort()
	c := e.worker(leaseport.With(goclient.Config{Observer: rec}, port))
	jobs, err := c.ClaimMany(context.Background(), testQueue, 3)
	require.NoError(t, err)
	require.Len(t, jobs, 3)
	locked := jobs[1].ID()

	ctx := context.Background()
	tx, err := e.admin.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	_, err = tx.Exec(ctx, "SELECT 1 FROM durable_jobs.job_record WHERE job_record_id = $1 FOR UPDATE", locked)
	require.NoError(t, err)
	var holder int32
	require.NoError(t, tx.QueryRow(ctx, "SELECT pg_catalog.pg_backend_pid()").Scan(&holder))

	var leases []*goclient.Lease
	for _, j := range jobs {
		leases = append(leases, c.Keep(ctx, j))
	}
	// The batch of three answers at once (it skips the locked row), and the
	// locked claim goes out alone and waits for the lock: the database shows
	// a session blocked by this transaction.
	waitFor(t, 3*lockPolicy.interval, "the lone renewal waiting for the lock", func() bool {
		var waiting bool
		require.NoError(t, e.admin.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_stat_activity a
			WHERE $1 = ANY (pg_catalog.pg_blocking_pids(a.pid)))`, holder).Scan(&waiting))
		return waiting
	})
	batches, _, _ := port.snapshot()
	require.Len(t, batches[0], 3, "the first call renewed the three together")
	require.Equal(t, []int64{locked}, firstBatchWith(batches[1:], locked), "the locked claim went alone")
	for _, j := range []goclient.Job{jobs[0], jobs[2]} {
		require.GreaterOrEqual(t, e.state(j.ID()).RenewalCount, int64(1), "job %d was renewed while the other row was locked", j.ID())
	}
	require.Equal(t, int64(0), e.state(locked).RenewalCount, "the locked job is not renewed yet")
	for _, l := range leases {
		require.NoError(t, l.Err(), "nothing is lost while one row is locked")
	}
	// Let the lock go while the lone renewal waits for it.
	require.NoError(t, tx.Rollback(ctx))
	waitFor(t, lockPolicy.interval, "the locked claim renewed", func() bool { return e.state(locked).RenewalCount >= 1 })
	renewedAlone := len(batches)

	// Once renewed, the claim is batched with the rest again: at its next
	// renewals, or a few later on a loaded machine (timed out once at three
	// intervals beside another test run; the property is that it comes back).
	waitFor(t, 6*lockPolicy.interval, "a batch of the three again", func() bool {
		batches, _, _ := port.snapshot()
		return slices.ContainsFunc(batches[renewedAlone:], func(b []int64) bool { return len(b) == 3 })
	})
	for _, l := range leases {
		require.NoError(t, l.Err(), "every claim is still owned")
		require.Positive(t, l.TrustedFor())
		l.Stop()
	}
	require.Zero(t, rec.lostCount(goclient.LossStale))
	require.Zero(t, rec.lostCount(goclient.LossTrustDeadlinePassed))
	require.Zero(t, rec.renewalCount(goclient.RenewalLocked), "locked is not an outcome the observer sees")
	require.Zero(t, rec.renewalCount(goclient.RenewalStale))
}

// firstBatchWith is the first of batches that holds job id, or nil.
func firstBatchWith(batches [][]int64, id int64) []int64 {
	for _, b := range batches {
		if slices.Contains(b, id) {
			return b
		}
	}
	return nil
}

// lockedPort answers locked for every claim, even a claim renewed alone (a
// port breaking the promise that one claim alone waits for its lock).
type lockedPort struct{ calls, claims atomic.Int64 }

func (p *lockedPort) RenewClaims(_ context.Context, claims []goclient.Claim) ([]goclient.RenewalResult, error) {
	p.calls.Add(1)
	p.claims.Add(int64(len(claims)))
	out := make([]goclient.RenewalResult, len(claims))
	for i := range out {
		out[i] = goclient.RenewalResult{Outcome: goclient.RenewalLocked, DatabaseTime: time.Now()}
	}
	return out, nil
}

// locked never counts as ownership, either way: a claim that is locked
// even alone is retried with backoff like a failed attempt and is lost
// only when its trust deadline passes, never as stale.
func TestLockedEvenAloneIsRetriedUntilTheTrustDeadline(t *testing.T) {
	t.Parallel()
	e := setup(t, shortPolicy)
	e.enqueue(1)
	rec := newRecorder()
	port := &lockedPort{}
	c := e.worker(leaseport.With(goclient.Config{Observer: rec}, port))
	job := claim(t, c)
	lease := c.Keep(context.Background(), job)
	<-lease.Context().Done()
	require.ErrorIs(t, context.Cause(lease.Context()), goclient.ErrTrustDeadlinePassed)
	require.Equal(t, 1, rec.lostCount(goclient.LossTrustDeadlinePassed))
	require.Zero(t, rec.lostCount(goclient.LossStale))
	n := port.calls.Load()
	require.Equal(t, n, port.claims.Load(), "one claim per call")
	require.GreaterOrEqual(t, n, int64(3), "the first answer, the lone retry at once, then retries with backoff")
	require.Less(t, n, int64(50), "retries back off instead of spinning")
}
