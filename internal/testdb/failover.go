package testdb

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
)

// LoseClaimWithTheDatabase plays a crash or restart of the server for one
// claimed job, through a superuser pool: its claim is moved to a second
// before the server started (pg_postmaster_start_time()) and its lease has
// expired, by one database time for both expiry columns. Its next claim is
// then a failover reclaim (migration 029), which costs no attempt.
func LoseClaimWithTheDatabase(t testing.TB, admin *pgxpool.Pool, jobID int64) {
	t.Helper()
	if _, err := admin.Exec(context.Background(), `UPDATE durable_jobs.job_record
		SET lease_claimed_at = pg_postmaster_start_time() - interval '1 second',
		    lease_expires_at = statement_timestamp() - interval '1 second',
		    lease_expiry_floor = statement_timestamp() - interval '1 second'
		WHERE job_record_id = $1`, jobID); err != nil {
		t.Fatalf("testdb: lose the claim of job %d with the database: %v", jobID, err)
	}
}
