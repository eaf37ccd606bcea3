package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/mightyetl/leasefence/internal/testdb"
)

// leasectl health only reads, so it starts no heartbeat and opens no pool
// beside its own: caught while its read waits on a lock, the process's
// goroutine dump (SIGQUIT) shows one goroutine created by
// pgxpool.NewWithConfig and none by goclient's newHeartbeat. (With a whole
// Client, as before the Admin, it showed two and one.)
func TestHealthStartsNoHeartbeatAndNoSecondPool(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	admin := db.Pool(t)
	locker, err := admin.Begin(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { _ = locker.Rollback(ctx) })
	_, err = locker.Exec(ctx, `LOCK TABLE durable_jobs.job_record IN ACCESS EXCLUSIVE MODE`)
	require.NoError(t, err)

	cmd := exec.Command(leasectlBin, "health", "--database-url", db.LoginURL(t, "durable_job_auditor"))
	cmd.Env = cleanEnv("GOTRACEBACK=all")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	deadline := time.Now().Add(time.Minute)
	for {
		var waiting bool
		require.NoError(t, admin.QueryRow(ctx, `SELECT EXISTS (SELECT FROM pg_catalog.pg_stat_activity
			WHERE datname = pg_catalog.current_database() AND application_name = 'leasectl' AND wait_event_type = 'Lock')`).
			Scan(&waiting))
		if waiting {
			break
		}
		require.True(t, time.Now().Before(deadline), "leasectl health never waited on the lock")
		time.Sleep(20 * time.Millisecond)
	}
	require.NoError(t, cmd.Process.Signal(syscall.SIGQUIT))
	require.Error(t, cmd.Wait(), "SIGQUIT ends the process with its goroutine dump")
	dump := stderr.String()
	require.Contains(t, dump, "goroutine ", "a goroutine dump")
	require.Contains(t, dump, "(*Pool).backgroundHealthCheck", "the dump shows pool goroutines")
	require.Equal(t, 1, strings.Count(dump, "created by github.com/jackc/pgx/v5/pgxpool.NewWithConfig in goroutine"),
		"one pool: leasectl's own")
	require.NotContains(t, dump, "goclient.newHeartbeat", "no heartbeat")
	require.Empty(t, stdout.String())
}

// Issue 37, item 4: leasectl health shows, per queue, the jobs queued,
// running, retry scheduled and failed in the last hour and how long the
// oldest due job has waited, in text and in JSON.
func TestHealthShowsTheBacklogPerQueue(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	admin := db.Pool(t)
	producer := db.LoginPool(t, "durable_job_producer")
	worker := db.LoginPool(t, "durable_job_worker")
	for i := 0; i < 4; i++ {
		_, err := producer.Exec(ctx, `SELECT durable_jobs.enqueue_job('billing', '{"k": "v"}'::jsonb)`)
		require.NoError(t, err)
	}
	claim(t, worker, "billing", "w1") // stays RUNNING
	id, token := claim(t, worker, "billing", "w1")
	_, err := worker.Exec(ctx, `SELECT durable_jobs.fail_job($1, $2::uuid, 'w1', 'bad_input')`, id, token)
	require.NoError(t, err)
	id, token = claim(t, worker, "billing", "w1")
	_, err = worker.Exec(ctx, `SELECT durable_jobs.retry_job($1, $2::uuid, 'w1', interval '1 hour', 'busy')`, id, token)
	require.NoError(t, err)
	// The one QUEUED job has been due for five minutes.
	_, err = admin.Exec(ctx, `UPDATE durable_jobs.job_record SET run_after = clock_timestamp() - interval '5 minutes'
		WHERE queue_name = 'billing' AND job_status = 'QUEUED'`)
	require.NoError(t, err)

	auditor := db.LoginURL(t, "durable_job_auditor")
	r := leasectl(t, "health", "--database-url", auditor)
	requireCode(t, exitOK, r)
	require.Regexp(t, `(?m)^QUEUE\s+QUEUED\s+RUNNING\s+RETRY SCHEDULED\s+FAILED 1H\s+OLDEST DUE$`, r.stdout)
	require.Regexp(t, `(?m)^billing\s+1\s+1\s+1\s+1\s+5m\d+(\.\d+)?s$`, r.stdout)
	require.Regexp(t, `(?m)^\*\s+0\s+0\s+0\s+0\s+-$`, r.stdout)
	require.Regexp(t, `(?m)^backlog read at \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z \(database time\)$`, r.stdout)

	r = leasectl(t, "health", "--output", "json", "--database-url", auditor)
	requireCode(t, exitOK, r)
	var health []healthJSON
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &health), r.stdout)
	require.Len(t, health, 2)
	star, billing := health[0], health[1]
	require.Equal(t, "billing", billing.Queue)
	require.Equal(t, []int64{1, 1, 1, 1}, []int64{billing.QueuedJobs, billing.RunningJobs, billing.RetryScheduledJobs, billing.FailedLastHour})
	require.NotNil(t, billing.OldestDueAgeSeconds)
	require.InDelta(t, 300, *billing.OldestDueAgeSeconds, 60)
	require.Nil(t, star.OldestDueAgeSeconds)
	require.Zero(t, star.QueuedJobs)
	requireNoSecrets(t, r)

	// A login that may read lease health but not the backlog is told which
	// read failed.
	_, err = admin.Exec(ctx, `REVOKE EXECUTE ON FUNCTION durable_jobs.queue_backlog() FROM durable_job_auditor`)
	require.NoError(t, err)
	r = leasectl(t, "health", "--database-url", auditor)
	requireCode(t, exitError, r)
	require.Equal(t, "error: read the backlog: permission denied for function queue_backlog (SQLSTATE 42501)\n", r.stderr)
}

// Issue 36, item 2: leasectl health shows the failover reclaims apart
// (FAILOVER 1H, failover_reclaims_last_hour) and the server's timeline
// line, and its read records a promotion it is the first to see. The
// failover reclaim is played by moving the claim's time before the
// server's start, the promotion by the timeline the bundle saw last.
func TestHealthShowsFailoverReclaimsAndTheServer(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	admin := db.Pool(t)
	_, err := db.LoginPool(t, "durable_job_producer").Exec(ctx, `SELECT durable_jobs.enqueue_job('billing', '{"k": "v"}'::jsonb)`)
	require.NoError(t, err)
	worker := db.LoginPool(t, "durable_job_worker")
	id, _ := claim(t, worker, "billing", "w1")
	testdb.LoseClaimWithTheDatabase(t, admin, id)
	again, _ := claim(t, worker, "billing", "w2")
	require.Equal(t, id, again)

	auditor := db.LoginURL(t, "durable_job_auditor")
	r := leasectl(t, "health", "--database-url", auditor)
	requireCode(t, exitOK, r)
	require.Regexp(t, `(?m)^billing\s+1\s+0\s+0\s+0\s+1\s+0\s+0\s+\S+$`, r.stdout, "one failover reclaim, no reclaim")
	require.Regexp(t, `(?m)^server: timeline 1, seen since \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z, started at \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`, r.stdout)

	r = leasectl(t, "health", "--output", "json", "--database-url", auditor)
	requireCode(t, exitOK, r)
	var health []healthJSON
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &health), r.stdout)
	require.Equal(t, "billing", health[1].Queue)
	require.Equal(t, int64(1), health[1].FailoverReclaims)
	require.Zero(t, health[1].ReclaimsLastHour)
	require.Contains(t, r.stdout, `"failover_reclaims_last_hour": 1`)

	_, err = admin.Exec(ctx, `UPDATE durable_jobs.server_timeline_state SET server_timeline = 7`)
	require.NoError(t, err)
	r = leasectl(t, "health", "--database-url", auditor)
	requireCode(t, exitOK, r)
	require.Regexp(t, `(?m)^server: timeline 1, seen since \S+ \(after timeline 7: a promotion or a recovery\), started at \S+$`, r.stdout)
	var recorded int
	require.NoError(t, admin.QueryRow(ctx, `SELECT count(*) FROM durable_jobs.control_evidence_history(NULL)
		WHERE evidence_kind = 'server_timeline_changed'`).Scan(&recorded))
	require.Equal(t, 1, recorded, "health's read recorded the timeline change")
	requireNoSecrets(t, r)

	// On a standby the line says so: internal/cli's TestServerLineOfAStandby.

	// A login that may read lease health but not the server's availability
	// is told which read failed.
	_, err = admin.Exec(ctx, `REVOKE EXECUTE ON FUNCTION durable_jobs.server_availability() FROM durable_job_auditor`)
	require.NoError(t, err)
	r = leasectl(t, "health", "--database-url", auditor)
	requireCode(t, exitError, r)
	require.Equal(t, "error: read the server's availability: permission denied for function server_availability (SQLSTATE 42501)\n", r.stderr)
}
