package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/mightyetl/leasefence/internal/testdb"
)

// retentionSnapshot is the retention table and the evidence count, as the
// superuser sees them.
func retentionSnapshot(t *testing.T, pool *pgxpool.Pool) (policies string, evidence int) {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, pool.QueryRow(ctx, `SELECT COALESCE(string_agg(format('%s|%s|%s|%s', queue_name,
		payload_retention, record_retention, changed_at), E'\n' ORDER BY queue_name), '')
		FROM durable_jobs.queue_retention_policy`).Scan(&policies))
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM durable_jobs.control_evidence_record`).Scan(&evidence))
	return policies, evidence
}

// finishedJob enqueues a job on queue, claims and completes it with a
// result, ages it by age (an interval) and returns its id.
func finishedJob(t *testing.T, pool *pgxpool.Pool, queue, age string) int64 {
	t.Helper()
	ctx := context.Background()
	var id int64
	require.NoError(t, pool.QueryRow(ctx, `SELECT durable_jobs.enqueue_job($1, '{"subject": "carol"}')`, queue).Scan(&id))
	_, err := pool.Exec(ctx, `SELECT durable_jobs.complete_job(c.job_record_id, c.lease_claim_token, 'w-cli', '{"r": "carol"}')
		FROM durable_jobs.claim_next_job($1, 'w-cli') c`, queue)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `UPDATE durable_jobs.job_record SET status_changed_at = clock_timestamp() - $2::interval
		WHERE job_record_id = $1`, id, age)
	require.NoError(t, err)
	return id
}

func TestRetentionShowSetAndEvidence(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	admin := db.Pool(t)
	operator := db.LoginURL(t, "durable_job_operator")

	r := leasectl(t, "retention", "show", "--database-url", operator)
	requireCode(t, exitOK, r)
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	require.Len(t, lines, 2, r.stdout)
	require.Regexp(t, `^QUEUE\s+PAYLOAD RETENTION\s+RECORD RETENTION\s+CHANGED AT\s+CHANGED BY$`, lines[0])
	require.Regexp(t, `^\*\s+30d\s+365d\s+\d{4}-`, lines[1])

	r = leasectl(t, "retention", "set", "--queue", "billing", "--payload-retention", "7d", "--record-retention", "90d",
		"--reason", "CHG-7 billing keeps less", "--database-url", operator)
	requireCode(t, exitOK, r)
	require.Equal(t, "retention policy of queue billing set: payload 7d, record 90d\n", r.stdout)

	r = leasectl(t, "retention", "set", "--queue", "billing", "--payload-retention", "90m", "--record-retention", "36h",
		"--reason", "CHG-8", "--output", "json", "--database-url", operator)
	requireCode(t, exitOK, r)
	var set []map[string]any
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &set), r.stdout)
	require.Len(t, set, 1)
	require.Equal(t, "billing", set[0]["queue"])
	require.Equal(t, "1h30m", set[0]["payload_retention"])
	require.Equal(t, 5400.0, set[0]["payload_retention_seconds"])
	require.Equal(t, 129600.0, set[0]["record_retention_seconds"])

	r = leasectl(t, "retention", "show", "--output", "json", "--database-url", operator)
	requireCode(t, exitOK, r)
	var all []map[string]any
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &all))
	require.Len(t, all, 2)

	var reasons []string
	rows, err := admin.Query(ctx, `SELECT change_reason FROM durable_jobs.control_evidence_record
		WHERE evidence_kind = 'retention_policy_changed' AND queue_name = 'billing' ORDER BY evidence_record_id`)
	require.NoError(t, err)
	for rows.Next() {
		var s string
		require.NoError(t, rows.Scan(&s))
		reasons = append(reasons, s)
	}
	require.NoError(t, rows.Err())
	require.Equal(t, []string{"CHG-7 billing keeps less", "CHG-8"}, reasons)

	// An auditor may not read or change retention.
	auditor := db.LoginURL(t, "durable_job_auditor")
	r = leasectl(t, "retention", "show", "--database-url", auditor)
	requireCode(t, exitError, r)
	require.Contains(t, r.stderr, "error: read retention policies: permission denied for function queue_retention_policies (SQLSTATE 42501)")
}

func TestRetentionSetWithInvalidValuesChangesNothing(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	admin := db.Pool(t)
	operator := db.LoginURL(t, "durable_job_operator")
	before, evidenceBefore := retentionSnapshot(t, admin)
	for _, c := range [][4]string{
		{"billing", "30m", "1d", "payload under an hour"},
		{"billing", "2d", "1d", "record shorter than payload"},
		{"billing", "1d", "3651d", "record over 3650 days"},
		{"billing", "1d", "2d", "   "},
		{"billing", "1d", "2d", "line\nbreak"},
		{"billing", "1d", "2d", strings.Repeat("r", 501)},
		{"Billing Queue", "1d", "2d", "bad queue"},
	} {
		r := leasectl(t, "retention", "set", "--queue", c[0], "--payload-retention", c[1], "--record-retention", c[2],
			"--reason", c[3], "--database-url", operator)
		requireCode(t, exitError, r, c)
		require.Contains(t, r.stderr, "error: set retention policy of queue ", c)
		require.Contains(t, r.stderr, "(SQLSTATE LF002)", c)
		require.NotContains(t, r.stderr, "line\nbreak")
		require.Empty(t, r.stdout)
		after, evidenceAfter := retentionSnapshot(t, admin)
		require.Equal(t, before, after, c)
		require.Equal(t, evidenceBefore, evidenceAfter, c)
	}
	r := leasectl(t, "retention", "set", "--queue", "billing", "--payload-retention", "30m", "--record-retention", "1d",
		"--reason", "r", "--database-url", operator)
	require.Equal(t, "error: set retention policy of queue \"billing\": invalid retention policy (SQLSTATE LF002)\n"+
		"DETAIL: Need plain durations (no month or year part, day and time parts of one sign) with 1 hour <= payload_retention <= record_retention <= 3650 days.\n", r.stderr)

	// The JSON answer of an accepted change needs the read function too.
	execSQL(t, admin, `REVOKE EXECUTE ON FUNCTION durable_jobs.queue_retention_policies() FROM durable_job_operator`)
	r = leasectl(t, "retention", "set", "--queue", "billing", "--payload-retention", "1d", "--record-retention", "2d",
		"--reason", "r", "--output", "json", "--database-url", operator)
	requireCode(t, exitError, r)
	require.Contains(t, r.stderr, "error: read retention policies: permission denied")
}

func TestRetentionApplyPurgesInBatchesUntilDone(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	admin := db.Pool(t)
	operator := db.LoginURL(t, "durable_job_operator")

	r := leasectl(t, "retention", "apply", "--database-url", operator)
	requireCode(t, exitOK, r)
	require.Equal(t, "nothing to purge (1 batch)\n", r.stdout)

	for i := 0; i < 5; i++ {
		finishedJob(t, admin, "billing", "400 days")
	}
	for i := 0; i < 3; i++ {
		finishedJob(t, admin, "ingest", "40 days")
	}
	kept := finishedJob(t, admin, "ingest", "1 day")
	var live int64
	require.NoError(t, admin.QueryRow(ctx, `SELECT durable_jobs.enqueue_job('ingest', '{"subject": "dave"}')`).Scan(&live))
	execSQL(t, admin, `UPDATE durable_jobs.job_record SET status_changed_at = clock_timestamp() - interval '900 days'
		WHERE job_status = 'QUEUED'`)

	r = leasectl(t, "retention", "apply", "--batch-size", "2", "--database-url", operator)
	requireCode(t, exitOK, r)
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	require.Len(t, lines, 4, r.stdout)
	require.Regexp(t, `^QUEUE\s+KIND\s+PURGED$`, lines[0])
	require.Regexp(t, `^billing\s+job_record\s+5$`, lines[1])
	require.Regexp(t, `^ingest\s+payload\s+3$`, lines[2])
	require.Equal(t, "purged in 5 batches", lines[3])
	require.NotContains(t, r.stdout, "carol")

	var payloads int
	require.NoError(t, admin.QueryRow(ctx, `SELECT count(*) FROM durable_jobs.job_payload_record
		WHERE job_record_id IN ($1, $2)`, kept, live).Scan(&payloads))
	require.Equal(t, 2, payloads, "a job inside its retention and a queued job keep their payloads")

	r = leasectl(t, "retention", "apply", "--output", "json", "--database-url", operator)
	requireCode(t, exitOK, r)
	require.JSONEq(t, `{"batches": 1, "purged": []}`, r.stdout)

	finishedJob(t, admin, "billing", "400 days")
	r = leasectl(t, "retention", "apply", "--output", "json", "--database-url", operator)
	requireCode(t, exitOK, r)
	require.JSONEq(t, `{"batches": 2, "purged": [{"queue": "billing", "purge_kind": "job_record", "purged_count": 1}]}`, r.stdout)

	// A worker may not purge: the first batch fails and leasectl says so.
	r = leasectl(t, "retention", "apply", "--database-url", db.LoginURL(t, "durable_job_worker"))
	requireCode(t, exitError, r)
	require.Contains(t, r.stderr, "error: purge batch 1: permission denied for function purge_expired_job_data (SQLSTATE 42501)")
}

func TestRetentionAndEraseUsageAndConnectionErrors(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"retention"},
		{"retention", "drop"},
		{"retention", "show", "--output", "yaml"},
		{"retention", "show", "extra"},
		{"retention", "set", "--payload-retention", "1d", "--record-retention", "2d", "--reason", "r"},
		{"retention", "set", "--queue", "q", "--record-retention", "2d", "--reason", "r"},
		{"retention", "set", "--queue", "q", "--payload-retention", "1d", "--reason", "r"},
		{"retention", "set", "--queue", "q", "--payload-retention", "1d", "--record-retention", "2d"},
		{"retention", "set", "--queue", "q", "--payload-retention", "a week", "--record-retention", "2d", "--reason", "r"},
		{"retention", "set", "--queue", "q", "--payload-retention", "xd", "--record-retention", "2d", "--reason", "r"},
		{"retention", "set", "--queue", "q", "--payload-retention", "1d", "--record-retention", "2d", "--reason", "r", "--output", "xml"},
		{"retention", "apply", "--batch-size", "0"},
		{"retention", "apply", "--batch-size", "10001"},
		{"retention", "apply", "--output", "csv"},
		{"erase"},
		{"erase", "--job", "1"},
		{"erase", "--reason", "DSR-1"},
		{"erase", "--job", "one", "--reason", "DSR-1"},
	} {
		requireUsageError(t, args)
	}
	for _, args := range [][]string{{"retention", "--help"}, {"help", "retention"}, {"retention", "set", "--help"},
		{"erase", "--help"}, {"help", "erase"}} {
		r := leasectl(t, args...)
		requireCode(t, exitOK, r, args)
		require.Contains(t, r.stdout, "Usage:", args)
	}
	r := leasectl(t, "--help")
	require.Contains(t, r.stdout, "retention")
	require.Contains(t, r.stdout, "erase")

	url := closedPortURL(t)
	for _, args := range [][]string{
		{"retention", "show"}, {"retention", "apply"},
		{"retention", "set", "--queue", "q", "--payload-retention", "1d", "--record-retention", "2d", "--reason", "r"},
		{"erase", "--job", "1", "--reason", "DSR-1"},
	} {
		r := leasectl(t, append(args, "--database-url", url)...)
		requireCode(t, exitError, r, args)
		require.True(t, strings.HasPrefix(r.stderr, "error: connect to database: "), "%v: %s", args, r.stderr)
		require.Equal(t, 1, strings.Count(r.stderr, "\n"), r.stderr)
	}
}

// A retention row holding an interval whose parts cancel out (as version 23
// accepted '-1 year 361 days', migration 024 refuses it) printed as 1d,
// months counted as 30 days: retention show prints such a value as the
// database holds it, and a plain one as a duration.
func TestRetentionShowPrintsWhatTheDatabaseStores(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	admin := db.Pool(t)
	_, err := admin.Exec(ctx, `INSERT INTO durable_jobs.queue_retention_policy
		(queue_name, payload_retention, record_retention, changed_at, changed_by_role)
		VALUES ('cancelled.out', '1 day -1 hour', '-1 year 361 days', clock_timestamp(), 'someone')`)
	require.NoError(t, err)
	r := leasectl(t, "retention", "show", "--database-url", db.LoginURL(t, "durable_job_operator"))
	requireCode(t, exitOK, r)
	require.Regexp(t, `(?m)^cancelled\.out\s+1 day -01:00:00\s+-1 years \+361 days\s+`, r.stdout)
	require.Regexp(t, `(?m)^\*\s+30d\s+365d\s+`, r.stdout, "plain durations still print as durations")
}
