package transport

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/mightyetl/leasefence/internal/testdb"
)

// cronSettings load pg_cron's scheduler in the postgres database (its
// default) and run jobs in background workers, so the scheduler needs no
// password or pg_hba entry to reach the application database.
var cronSettings = map[string]string{
	"cron.database_name":          "postgres",
	"cron.use_background_workers": "on",
	"max_worker_processes":        "32",
}

// The retention purge scheduled in pg_cron, as the runbook shows: the
// superuser schedules it with cron.schedule_in_database into the
// application database to run as an operator login (not a superuser), the
// scheduler runs it at the next minute as that login, and the finished jobs past
// their retention are gone, with the purge's control evidence naming the
// operator login. The same job scheduled to run as a worker login fails with
// permission denied and purges nothing: the purge stays operator-only
// when cron runs it. (pg_cron 1.4 schedules by the minute, so this test
// waits up to a minute.)
func TestRetentionPurgeRunsFromPgCronAsTheOperatorLogin(t *testing.T) {
	t.Parallel()
	cluster, db := testdb.OwnClusterWith(t, testdb.ClusterExtras{
		PreloadLibraries: []string{"pg_cron"},
		Settings:         cronSettings,
	})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	admin := db.Pool(t)
	producer := db.LoginPool(t, "durable_job_producer")
	worker := db.LoginPool(t, "durable_job_worker")

	// Old finished jobs, past the default record retention (365 days).
	var old []int64
	for range 5 {
		var id int64
		require.NoError(t, producer.QueryRow(ctx, `SELECT durable_jobs.enqueue_job('cron', '{"subject": "dora"}')`).Scan(&id))
		_, err := worker.Exec(ctx, `SELECT durable_jobs.complete_job(c.job_record_id, c.lease_claim_token, 'w-cron', '{"r": 1}')
			FROM durable_jobs.claim_next_job('cron', 'w-cron') c`)
		require.NoError(t, err)
		old = append(old, id)
	}
	_, err := admin.Exec(ctx, `UPDATE durable_jobs.job_record SET status_changed_at = clock_timestamp() - interval '900 days'
		WHERE job_record_id = ANY($1)`, old)
	require.NoError(t, err)

	// pg_cron lives in the postgres database. Its schedule_in_database is
	// for superusers only (pg_cron 1.4); the superuser names the login
	// the job runs as.
	postgresAdmin, err := pgx.Connect(ctx, cluster.URL("postgres"))
	require.NoError(t, err)
	defer postgresAdmin.Close(context.Background())
	_, err = postgresAdmin.Exec(ctx, `CREATE EXTENSION pg_cron`)
	require.NoError(t, err)
	operator := loginOf(t, db.LoginURL(t, "durable_job_operator"))
	workerLogin := loginOf(t, db.LoginURL(t, "durable_job_worker"))
	schedule := func(name, login string) int64 {
		var jobID int64
		require.NoError(t, postgresAdmin.QueryRow(ctx, `SELECT cron.schedule_in_database($1, '* * * * *',
			$$SELECT count(*) FROM durable_jobs.purge_expired_job_data(1000)$$, $2, $3)`, name, db.Name, login).Scan(&jobID))
		return jobID
	}
	operatorJob := schedule("leasefence-retention", operator)
	workerJob := schedule("leasefence-retention-by-a-worker", workerLogin)

	var username string
	var super bool
	require.NoError(t, postgresAdmin.QueryRow(ctx, `SELECT j.username, r.rolsuper FROM cron.job j JOIN pg_roles r ON r.rolname = j.username
		WHERE j.jobid = $1`, operatorJob).Scan(&username, &super))
	require.Equal(t, operator, username)
	require.False(t, super)

	// Wait for the first run of both jobs (the next minute boundary).
	type result struct{ status, message string }
	lastRun := func(job int64) (result, bool) {
		var r result
		err := postgresAdmin.QueryRow(ctx, `SELECT status, coalesce(return_message, '') FROM cron.job_run_details
			WHERE jobid = $1 AND status IN ('succeeded', 'failed') ORDER BY runid DESC LIMIT 1`, job).Scan(&r.status, &r.message)
		return r, err == nil
	}
	var opRun, workerRun result
	require.Eventually(t, func() bool {
		var ok1, ok2 bool
		opRun, ok1 = lastRun(operatorJob)
		workerRun, ok2 = lastRun(workerJob)
		return ok1 && ok2
	}, 150*time.Second, 250*time.Millisecond, "pg_cron ran neither job within 150 s")
	t.Logf("operator's job: %+v; worker's job: %+v", opRun, workerRun)
	require.Equal(t, "succeeded", opRun.status, opRun.message)
	require.Equal(t, "failed", workerRun.status)
	require.Contains(t, workerRun.message, "permission denied for function purge_expired_job_data")

	var left int
	require.NoError(t, admin.QueryRow(ctx, `SELECT count(*) FROM durable_jobs.job_record WHERE job_record_id = ANY($1)`, old).Scan(&left))
	require.Zero(t, left, "the old finished jobs are still there")
	var purgedBy []string
	rows, err := admin.Query(ctx, `SELECT DISTINCT changed_by_role FROM durable_jobs.control_evidence_record
		WHERE evidence_kind = 'job_data_purged'`)
	require.NoError(t, err)
	purgedBy, err = pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	require.Equal(t, []string{operator}, purgedBy)
}
