package sqlintegration

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// After a reclaim, the superseded token cannot extend
// the replacement claimant's lease or write a terminal state; only the new
// token renews.
func TestSupersededTokenCannotExtendReplacementLease(t *testing.T) {
	t.Parallel()
	f := setup(t)
	jobID := f.enqueue(t, `{"extract": "shipments"}`)
	oldWorker := f.worker(t)
	newWorker := f.worker(t)

	old := mustClaim(t, f.ctx, oldWorker, f.queue, "worker-old")
	f.waitDatabaseTimePast(t, old.ExpiresAt)
	replacement := mustClaim(t, f.ctx, newWorker, f.queue, "worker-new")
	require.Equal(t, int64(2), replacement.Generation)

	mustRenew(t, f.ctx, oldWorker, jobID, old.Token, "worker-old", "stale", "the superseded token cannot renew")
	requireAllTerminalWritesStale(t, f.ctx, oldWorker, old, "worker-old", "the superseded token cannot end the replacement's claim")
	released, err := release(f.ctx, oldWorker, old, "worker-old")
	require.NoError(t, err)
	require.False(t, released, "the superseded token cannot release the replacement's claim")
	// The old token with the new owner's id, from the old worker's session
	// or the new worker's, is stale too.
	mustRenew(t, f.ctx, oldWorker, jobID, old.Token, "worker-new", "stale", "the old token with the new owner id is stale")
	mustRenew(t, f.ctx, newWorker, jobID, old.Token, "worker-new", "stale", "the old token from the new worker's own session is stale")

	s := f.state(t, jobID)
	require.Equal(t, "RUNNING", s.Status)
	require.True(t, replacement.ExpiresAt.Equal(*s.ExpiresAt), "no call with the old token moved the replacement's expiry")
	require.Equal(t, int64(0), s.RenewalCount, "no renewal of the replacement was counted")

	r := mustRenew(t, f.ctx, newWorker, jobID, replacement.Token, "worker-new", "renewed", "the replacement's own token renews")
	require.True(t, r.ExpiresAt.After(replacement.ExpiresAt))
	require.NoError(t, complete(f.ctx, newWorker, replacement, "worker-new"), "the replacement completes")
	require.Equal(t, "SUCCEEDED", f.state(t, jobID).Status)
}

// Renewal against reclaim in two sessions: whatever the
// order, at most one live claim exists and after a reclaim the old token is
// stale.
func TestRenewalAndReclaimRaceLeavesAtMostOneLiveClaim(t *testing.T) {
	t.Parallel()

	// The old claimant's renewal is open (row locked) when the original
	// expiry passes: the reclaimer skips the locked row and, after the
	// renewal commits, finds the lease extended.
	t.Run("renewal holds the lock past the original expiry", func(t *testing.T) {
		t.Parallel()
		f := setup(t)
		jobID := f.enqueue(t, `{"extract": "refunds"}`)
		oldWorker := f.worker(t)
		reclaimer := f.worker(t)
		old := mustClaim(t, f.ctx, oldWorker, f.queue, "worker-old")

		// Renew half a lease after the claim, so the renewed expiry is half a
		// lease past the original one.
		f.waitDatabaseTimePast(t, old.DatabaseTime.Add(testLeaseDuration/2))
		tx, err := oldWorker.Begin(f.ctx)
		require.NoError(t, err)
		r, err := renew(f.ctx, tx, jobID, old.Token, "worker-old")
		require.NoError(t, err)
		require.Equal(t, "renewed", r.Outcome)
		renewedExpiry := *r.ExpiresAt

		f.waitDatabaseTimePast(t, old.ExpiresAt)
		requireNothingClaimable(t, f.ctx, reclaimer, f.queue, "worker-reclaimer",
			"the reclaimer cannot take a job whose renewal is in flight")
		require.NoError(t, tx.Commit(f.ctx))
		requireNothingClaimable(t, f.ctx, reclaimer, f.queue, "worker-reclaimer",
			"after the renewal commits the lease is live again")
		require.True(t, f.databaseNow(t).Before(renewedExpiry), "the checks above ran inside the renewed lease")

		// The old claimant stops renewing: the job is reclaimed after the
		// renewed expiry, and the old token is stale.
		f.waitDatabaseTimePast(t, renewedExpiry)
		c := mustClaim(t, f.ctx, reclaimer, f.queue, "worker-reclaimer")
		require.Equal(t, int64(2), c.Generation)
		require.False(t, c.DatabaseTime.Before(renewedExpiry), "reclaimed only after the renewed expiry")
		mustRenew(t, f.ctx, oldWorker, jobID, old.Token, "worker-old", "stale", "the old token is stale after the reclaim")
		mustRenew(t, f.ctx, reclaimer, jobID, c.Token, "worker-reclaimer", "renewed", "the reclaimer's claim is the live one")
	})

	// The reclaim is open (row locked, new token not committed) when the old
	// claimant renews: the renewal is stale (the lease it presents had
	// expired), before and after the reclaim commits.
	t.Run("reclaim holds the lock", func(t *testing.T) {
		t.Parallel()
		f := setup(t)
		jobID := f.enqueue(t, `{"extract": "refunds"}`)
		oldWorker := f.worker(t)
		reclaimer := f.worker(t)
		old := mustClaim(t, f.ctx, oldWorker, f.queue, "worker-old")
		f.waitDatabaseTimePast(t, old.ExpiresAt)

		tx, err := reclaimer.Begin(f.ctx)
		require.NoError(t, err)
		c := mustClaim(t, f.ctx, tx, f.queue, "worker-reclaimer")
		require.Equal(t, int64(2), c.Generation)

		done := make(chan renewal, 1)
		errs := make(chan error, 1)
		go func() {
			r, err := renew(f.ctx, oldWorker, jobID, old.Token, "worker-old")
			done <- r
			errs <- err
		}()
		var r renewal
		select {
		case r = <-done: // the expired lease fails the predicate without waiting
		case <-time.After(2 * time.Second):
			// or it waits on the reclaim's lock; the commit below ends the wait
		}
		require.NoError(t, tx.Commit(f.ctx))
		if r.Outcome == "" {
			r = <-done
		}
		require.NoError(t, <-errs)
		require.Equal(t, "stale", r.Outcome, "the old claimant's renewal during the reclaim is stale")
		mustRenew(t, f.ctx, oldWorker, jobID, old.Token, "worker-old", "stale", "the old token stays stale after the reclaim commits")

		s := f.state(t, jobID)
		require.True(t, c.ExpiresAt.Equal(*s.ExpiresAt), "the old token did not touch the new lease")
		mustRenew(t, f.ctx, reclaimer, jobID, c.Token, "worker-reclaimer", "renewed", "only the reclaimer's token renews")
	})

	// Both at once, released from one barrier at the database-observed
	// expiry: either the renewal or the reclaim wins, or neither, never both.
	for _, offset := range []time.Duration{-20 * time.Millisecond, 0, 20 * time.Millisecond} {
		t.Run("renewal and reclaim at the expiry "+offset.String(), func(t *testing.T) {
			t.Parallel()
			f := setup(t)
			jobID := f.enqueue(t, `{"extract": "refunds"}`)
			oldWorker := f.worker(t)
			reclaimer := f.worker(t)
			old := mustClaim(t, f.ctx, oldWorker, f.queue, "worker-old")

			// Sleep on the local monotonic clock until the database's expiry
			// plus offset, measured from the database's own clock.
			f.waitDatabaseTimePast(t, old.ExpiresAt.Add(offset-50*time.Millisecond))
			wait := old.ExpiresAt.Add(offset).Sub(f.databaseNow(t))
			barrier := make(chan struct{})
			var wg sync.WaitGroup
			var (
				r          renewal
				rErr, cErr error
				c          claim
				claimed    bool
			)
			wg.Add(2)
			go func() {
				defer wg.Done()
				<-barrier
				r, rErr = renew(f.ctx, oldWorker, jobID, old.Token, "worker-old")
			}()
			go func() {
				defer wg.Done()
				<-barrier
				c, claimed, cErr = claimNext(f.ctx, reclaimer, f.queue, "worker-reclaimer")
			}()
			time.Sleep(wait)
			close(barrier)
			wg.Wait()
			require.NoError(t, rErr)
			require.NoError(t, cErr)
			require.False(t, r.Outcome == "renewed" && claimed, "the renewal and the reclaim both succeeded")

			if !claimed {
				// Nobody reclaimed: once the lease (renewed or not) runs out,
				// the reclaimer gets the job.
				expiry := old.ExpiresAt
				if r.Outcome == "renewed" {
					expiry = *r.ExpiresAt
				}
				f.waitDatabaseTimePast(t, expiry)
				c = mustClaim(t, f.ctx, reclaimer, f.queue, "worker-reclaimer")
			}
			require.Equal(t, int64(2), c.Generation)
			mustRenew(t, f.ctx, oldWorker, jobID, old.Token, "worker-old", "stale", "the old token is stale after the reclaim")
			mustRenew(t, f.ctx, reclaimer, jobID, c.Token, "worker-reclaimer", "renewed", "the reclaim is the one live claim")
		})
	}
}
