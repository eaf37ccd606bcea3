package sqlintegration

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// claim_next_jobs finds its candidates with one statement since migration
// 017: expired claims first, then due jobs, under one LIMIT, the due half
// read (and its rows locked) only for the places the expired half left.
// These races check, with two real sessions, that a claim holding its
// transaction open has locked exactly the rows it returned, so another
// claimer at once gets every other due job and expired claim. Each fails
// on a probe without the outer LIMIT (tried: the open claim then returns,
// and holds, one due job more than it was asked for), and the second
// claimer's answer fails on any probe that locks a row it does not return.

// jobIDs are the job ids of claims, in order.
func jobIDs(claims []claim) []int64 {
	ids := make([]int64, len(claims))
	for i, c := range claims {
		ids[i] = c.JobID
	}
	return ids
}

// claimMany calls claim_next_jobs(queue, owner, n) on q.
func claimMany(t *testing.T, f *fixture, q querier, owner string, n int) []claim {
	t.Helper()
	rows, err := q.Query(f.ctx, "SELECT * FROM durable_jobs.claim_next_jobs($1, $2, $3)", f.queue, owner, n)
	require.NoError(t, err)
	defer rows.Close()
	var out []claim
	for rows.Next() {
		var c claim
		require.NoError(t, rows.Scan(&c.JobID, &c.Token, &c.Generation, &c.ExpiresAt, &c.RenewalInterval,
			&c.Attempt, &c.Payload, &c.DatabaseTime))
		out = append(out, c)
	}
	require.NoError(t, rows.Err())
	return out
}

// expiredClaimAndDueJobs leaves the test queue with one expired claim
// (claimed by worker-old, its lease passed by database time) and then
// `due` due jobs, and returns the expired claim and the due jobs' ids in
// claim order.
func expiredClaimAndDueJobs(t *testing.T, f *fixture, due int) (claim, []int64) {
	t.Helper()
	f.setPolicy(t, f.queue, time.Second, 300*time.Millisecond, testMaxClaimLife, true)
	f.enqueue(t, `{"part": "expired"}`)
	old := mustClaim(t, f.ctx, f.worker(t), f.queue, "worker-old")
	f.waitDatabaseTimePast(t, old.ExpiresAt)
	f.setPolicy(t, f.queue, testLeaseDuration, testRenewalInterval, testMaxClaimLife, true)
	ids := make([]int64, due)
	for i := range ids {
		ids[i] = f.enqueue(t, `{"part": "due"}`)
	}
	return old, ids
}

// openClaim claims n jobs of the test queue as worker-h in a transaction
// of a session of its own, left open (rolled back when the test ends).
func openClaim(t *testing.T, f *fixture, n int) (pgx.Tx, []claim) {
	t.Helper()
	tx, err := f.worker(t).Begin(f.ctx)
	require.NoError(t, err)
	t.Cleanup(func() { _ = tx.Rollback(context.Background()) })
	return tx, claimMany(t, f, tx, "worker-h", n)
}

// One claim, the expired claim first: a claimer whose transaction is still
// open holds only the expired claim's row; a second claimer at once gets
// both due jobs.
func TestAnOpenReclaimLocksNoDueJob(t *testing.T) {
	t.Parallel()
	f := setup(t)
	old, due := expiredClaimAndDueJobs(t, f, 2)

	tx, held := openClaim(t, f, 1)
	require.Equal(t, []int64{old.JobID}, jobIDs(held), "the expired claim is taken before due jobs")
	require.Equal(t, int32(2), held[0].Attempt)

	other := f.worker(t)
	_, err := other.Exec(f.ctx, "SET lock_timeout = '2s'")
	require.NoError(t, err)
	got := claimMany(t, f, other, "worker-o", 2)
	require.Equal(t, due, jobIDs(got), "every due job is free for another claimer while the reclaim is open")

	require.NoError(t, tx.Commit(f.ctx))
	require.Equal(t, int64(1), f.outcomeTotal(t, f.queue, "reclaim"), "the one reclaim is counted")
}

// Two wanted, one expired: the open claim holds the expired claim's row and
// the first due job's, nothing else; the second claimer gets exactly the
// remaining due jobs, in order.
func TestAnOpenClaimOfBothKindsLocksExactlyWhatItReturned(t *testing.T) {
	t.Parallel()
	f := setup(t)
	old, due := expiredClaimAndDueJobs(t, f, 3)

	tx, held := openClaim(t, f, 2)
	require.Equal(t, []int64{old.JobID, due[0]}, jobIDs(held), "expired claim first, then the oldest due job")

	other := f.worker(t)
	got := claimMany(t, f, other, "worker-o", 5)
	require.Equal(t, due[1:], jobIDs(got), "the other claimer gets every due job the open claim did not return")

	require.NoError(t, tx.Commit(f.ctx))
	requireNothingClaimable(t, f.ctx, other, f.queue, "worker-o", "every job is claimed")
}
