package main

import (
	"context"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/mightyetl/leasefence/internal/testdb"
)

func TestEraseErasesAFinishedJobAndRefusesALiveOne(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	admin := db.Pool(t)
	operator := db.LoginURL(t, "durable_job_operator")

	done := finishedJob(t, admin, "billing", "1 minute")
	var queued int64
	require.NoError(t, admin.QueryRow(ctx, `SELECT durable_jobs.enqueue_job('billing', '{"subject": "erin"}')`).Scan(&queued))

	r := leasectl(t, "erase", "--job", itoa(done), "--reason", "DSR-2026-001", "--database-url", operator)
	requireCode(t, exitOK, r)
	require.Equal(t, "job "+itoa(done)+": payload and result documents erased; lifecycle row kept\n", r.stdout)
	var payloads, results int
	var status string
	require.NoError(t, admin.QueryRow(ctx, `SELECT
		(SELECT count(*) FROM durable_jobs.job_payload_record WHERE job_record_id = $1),
		(SELECT count(*) FROM durable_jobs.job_outcome_ledger WHERE job_record_id = $1 AND result_document IS NOT NULL),
		(SELECT job_status::text FROM durable_jobs.job_record WHERE job_record_id = $1)`, done).Scan(&payloads, &results, &status))
	require.Equal(t, []any{0, 0, "SUCCEEDED"}, []any{payloads, results, status})
	var evidence string
	require.NoError(t, admin.QueryRow(ctx, `SELECT queue_name || '|' || new_values::text || '|' || change_reason
		FROM durable_jobs.control_evidence_record WHERE evidence_kind = 'job_payload_erased'`).Scan(&evidence))
	require.Equal(t, `billing|{"job_status": "SUCCEEDED", "payload_erased": true, "result_documents_cleared": true}|DSR-2026-001`, evidence)

	r = leasectl(t, "erase", "--job", itoa(done), "--reason", "DSR-2026-001", "--database-url", operator)
	requireCode(t, exitOK, r)
	require.Equal(t, "job "+itoa(done)+": nothing to erase (unknown job, or its payload is already erased)\n", r.stdout)

	r = leasectl(t, "erase", "--job", itoa(queued), "--reason", "DSR-2026-002", "--database-url", operator)
	requireCode(t, exitError, r)
	require.Equal(t, "error: erase payload of job "+itoa(queued)+": job is not finished: its payload cannot be erased (SQLSTATE LF003)\n"+
		"DETAIL: The job is QUEUED.\nHINT: Cancel it first (cancel_job), then erase it.\n", r.stderr)
	require.NotContains(t, r.stderr+r.stdout, "erin")
	require.NoError(t, admin.QueryRow(ctx, `SELECT count(*) FROM durable_jobs.job_payload_record WHERE job_record_id = $1`, queued).Scan(&payloads))
	require.Equal(t, 1, payloads, "the refused erasure changed nothing")

	r = leasectl(t, "erase", "--job", itoa(done), "--reason", "two\nlines", "--database-url", operator)
	requireCode(t, exitError, r)
	require.Contains(t, r.stderr, "invalid change reason (SQLSTATE LF003)")
}

// itoa prints a job id.
func itoa(id int64) string { return strconv.FormatInt(id, 10) }

// Issue 19 item 4 for the retention family: a retention change or erasure
// reason with personal data went into the append-only evidence (the
// database checks these reasons for control characters only). leasectl now
// refuses it before anything changes.
func TestRetentionSetAndEraseRefuseAReasonWithPersonalData(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	admin := db.Pool(t)
	operator := db.LoginURL(t, "durable_job_operator")
	done := finishedJob(t, admin, "billing", "1 minute")
	_, before := retentionSnapshot(t, admin)

	for _, reason := range []string{"DSR for 김민수 RRN 900101-1234567", "erase customer kim@example.com", "pw=hunter2"} {
		r := leasectl(t, "retention", "set", "--queue", "billing", "--payload-retention", "7d", "--record-retention", "90d",
			"--reason", reason, "--database-url", operator)
		requireCode(t, exitUsage, r, reason)
		require.Contains(t, r.stderr, "retention set: --reason looks like it holds personal data or a secret")
		r2 := leasectl(t, "erase", "--job", itoa(done), "--reason", reason, "--database-url", operator)
		requireCode(t, exitUsage, r2, reason)
		require.Contains(t, r2.stderr, "erase: --reason looks like it holds personal data or a secret")
		for _, out := range []string{r.output(), r2.output()} {
			require.NotContains(t, out, "900101")
			require.NotContains(t, out, "kim@example.com")
			require.NotContains(t, out, "hunter2")
		}
	}
	_, after := retentionSnapshot(t, admin)
	require.Equal(t, before, after, "nothing was recorded")
	var payloads int
	require.NoError(t, admin.QueryRow(ctx, `SELECT count(*) FROM durable_jobs.job_payload_record WHERE job_record_id = $1`, done).
		Scan(&payloads))
	require.Equal(t, 1, payloads, "nothing was erased")
}
