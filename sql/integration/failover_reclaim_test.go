package sqlintegration

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/mightyetl/leasefence/internal/testdb"
)

// Issue 36, item 1: every claim in flight when the database went away was
// reclaimed at the next attempt, so a job caught in five failovers failed
// for good. A claim lost with the database (the server started after it,
// or a promotion since) is now reclaimed without costing an attempt, at
// most three times a job, and counted as a failover_reclaim. The restart
// is played by moving the claim's time before the server's start; a real
// promotion is internal/hatest's.
func TestAClaimLostWithTheDatabaseCostsNoAttempt(t *testing.T) {
	t.Parallel()
	f := setup(t)
	worker := f.worker(t)
	var job int64
	require.NoError(t, f.admin.QueryRow(f.ctx, `SELECT durable_jobs.enqueue_job($1, '{}', NULL, NULL, 1)`, f.queue).Scan(&job))
	claim := func() (attempt int32) {
		t.Helper()
		require.NoError(t, worker.QueryRow(f.ctx, `SELECT attempt_number FROM durable_jobs.claim_next_job($1, 'w1')`, f.queue).Scan(&attempt))
		return attempt
	}
	loseWithTheDatabase := func() { testdb.LoseClaimWithTheDatabase(t, f.admin, job) }
	require.Equal(t, int32(1), claim(), "the first claim is attempt 1 of 1")
	for i := 1; i <= 3; i++ {
		loseWithTheDatabase()
		require.Equal(t, int32(1), claim(), "reclaim %d of a claim lost with the database costs no attempt (and the job, at 1 of 1, is not failed)", i)
	}
	require.Equal(t, int64(3), f.outcomeTotal(t, f.queue, "failover_reclaim"))
	require.Zero(t, f.outcomeTotal(t, f.queue, "reclaim"), "they are not ordinary reclaims")

	// The fourth costs an attempt, as any reclaim: the job's attempts are used up.
	loseWithTheDatabase()
	rows, err := worker.Query(f.ctx, `SELECT 1 FROM durable_jobs.claim_next_job($1, 'w1')`, f.queue)
	require.NoError(t, err)
	rows.Close()
	require.Equal(t, "FAILED", f.state(t, job).Status, "a job that keeps losing its claim with the database still runs out")

	// An expired claim the server outlived is an ordinary reclaim.
	var other int64
	require.NoError(t, f.admin.QueryRow(f.ctx, `SELECT durable_jobs.enqueue_job($1, '{}')`, f.queue).Scan(&other))
	require.Equal(t, int32(1), claim())
	_, err = f.admin.Exec(f.ctx, `UPDATE durable_jobs.job_record SET lease_expires_at = statement_timestamp() - interval '1 second',
		lease_expiry_floor = statement_timestamp() - interval '1 second' WHERE job_record_id = $1`, other)
	require.NoError(t, err)
	require.Equal(t, int32(2), claim(), "a lease that simply ran out costs an attempt")
	require.Equal(t, int64(1), f.outcomeTotal(t, f.queue, "reclaim"))
}
