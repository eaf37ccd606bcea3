package audit

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/mightyetl/leasefence/controls"
	"github.com/mightyetl/leasefence/internal/testdb"
)

// Attack: a role that can write queue_lease_policy changed it directly,
// forging changed_by_role, and no evidence was written while the audit
// passed. Now the change itself writes the evidence, with session_user,
// and a change made around the triggers is an audit finding.
func TestDirectPolicyChangeIsRecordedAndAChangeAroundTheTriggersIsAFinding(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	pool := db.Pool(t)
	execSQL(t, pool, `SELECT durable_jobs.set_queue_lease_policy('direct_q', interval '30 seconds', interval '10 seconds', interval '1 hour', true, 'OPS-1: baseline')`)
	execSQL(t, pool, `UPDATE durable_jobs.queue_lease_policy SET lease_duration = interval '60 seconds', renewal_enabled = false,
		changed_by_role = 'ops_alice' WHERE queue_name = 'direct_q'`)
	var changedBy, reason, newLease string
	require.NoError(t, pool.QueryRow(context.Background(), `
		SELECT changed_by_role, change_reason, new_values ->> 'lease_duration' FROM durable_jobs.control_evidence_record
		WHERE queue_name = 'direct_q' AND evidence_kind = 'lease_policy_changed' ORDER BY evidence_record_id DESC LIMIT 1`).
		Scan(&changedBy, &reason, &newLease))
	require.NotEqual(t, "ops_alice", changedBy, "the changer is session_user, never the row's column")
	require.Equal(t, "direct table change without a reason", reason)
	require.Equal(t, "00:01:00", newLease)
	text, _ := runAudit(t, db.URL)
	require.True(t, text.passed, "a recorded direct change agrees with its evidence")

	// A superuser can still switch the triggers off for its session: the audit finds the difference.
	execSQL(t, pool, `BEGIN; SET LOCAL session_replication_role = replica;
		UPDATE durable_jobs.queue_lease_policy SET renewal_enabled = true WHERE queue_name = 'direct_q'; COMMIT`)
	text, _ = runAudit(t, db.URL)
	require.False(t, text.passed, text.stdout)
	require.Equal(t, []string{controls.CheckPolicyEvidence}, text.ids, text.stdout)
	require.Contains(t, text.stdout, "AUDIT-POLICY-MATCHES-EVIDENCE: queue 'direct_q': policy differs from what its last evidence record says\n")
}

// tamper runs statements with the append-only trigger off, as a superuser
// can, and turns it on again.
func tamper(t *testing.T, db *testdb.DB, statements ...string) {
	t.Helper()
	pool := db.Pool(t)
	execSQL(t, pool, `ALTER TABLE durable_jobs.control_evidence_record DISABLE TRIGGER control_evidence_record_append_only`)
	for _, s := range statements {
		execSQL(t, pool, s)
	}
	execSQL(t, pool, `ALTER TABLE durable_jobs.control_evidence_record ENABLE TRIGGER control_evidence_record_append_only`)
}

// Attack: a superuser disabled the append-only trigger, deleted, altered or
// reordered evidence and enabled it again; the audit passed. Now each is an
// AUDIT-EVIDENCE-CHAIN finding, also for the auditor login.
func TestAuditFindsDeletedAlteredAndReorderedEvidence(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name       string
		statements func(ids []int64) []string
		want       string
	}{
		{"deleted", func(ids []int64) []string {
			return []string{fmt.Sprintf(`DELETE FROM durable_jobs.control_evidence_record WHERE evidence_record_id = %d`, ids[1])}
		}, "does not link to record"},
		{"first deleted", func(ids []int64) []string {
			return []string{fmt.Sprintf(`DELETE FROM durable_jobs.control_evidence_record WHERE evidence_record_id = %d`, ids[0])}
		}, "is the first but does not chain to the genesis hash"}, // also the '*' policy's only record: AUDIT-POLICY-MATCHES-EVIDENCE
		{"altered", func(ids []int64) []string {
			return []string{fmt.Sprintf(`UPDATE durable_jobs.control_evidence_record SET change_reason = 'nothing happened' WHERE evidence_record_id = %d`, ids[2])}
		}, "the record was altered"},
		{"reordered", func(ids []int64) []string {
			cols := "evidence_kind, queue_name, previous_values, new_values, change_reason, changed_by_role, recorded_at, " +
				"change_ticket, change_approver, previous_record_hash, record_hash"
			return []string{fmt.Sprintf(`UPDATE durable_jobs.control_evidence_record e SET (%s) = (SELECT %s
				FROM durable_jobs.control_evidence_record o WHERE o.evidence_record_id = CASE e.evidence_record_id WHEN %d THEN %d ELSE %d END)
				WHERE e.evidence_record_id IN (%d, %d)`, cols, cols, ids[1], ids[2], ids[1], ids[1], ids[2])}
		}, "does not link to record"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			db := testdb.New(t)
			pool := db.Pool(t)
			execSQL(t, pool, `SELECT durable_jobs.record_deployment_version('9.9.9', 'chain test')`)
			rows, err := pool.Query(context.Background(), `SELECT evidence_record_id FROM durable_jobs.control_evidence_record ORDER BY 1`)
			require.NoError(t, err)
			var ids []int64
			for rows.Next() {
				var id int64
				require.NoError(t, rows.Scan(&id))
				ids = append(ids, id)
			}
			require.NoError(t, rows.Err())
			require.GreaterOrEqual(t, len(ids), 3)
			tamper(t, db, tc.statements(ids)...)
			for _, u := range []string{db.URL, db.LoginURL(t, "durable_job_auditor")} {
				text, _ := runAudit(t, u)
				require.False(t, text.passed, text.stdout)
				want := []string{controls.CheckEvidenceChain}
				if tc.name == "first deleted" {
					want = []string{controls.CheckPolicyEvidence, controls.CheckEvidenceChain}
				}
				require.Equal(t, want, text.ids, text.stdout)
				require.Contains(t, text.stdout, tc.want)
			}
		})
	}
}

// Attack: a payload grant to a monitoring login, a definer owner role held
// by a person and the operator role held by a worker login all passed the
// audit, and monitoring read a payload. Role memberships are cluster-wide,
// so this runs on a cluster of its own.

// A retention policy changed with its evidence trigger off, a trigger left
// disabled and FAILED jobs set to SUCCEEDED by hand are findings (issue 39,
// item 2); each passed the audit on version 25.
func TestControlsChangedAroundTheirEvidenceAndStatusesSetByHandAreFindings(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	admin := db.Pool(t)
	auditor := db.LoginURL(t, "durable_job_auditor")
	text, _ := runAudit(t, auditor)
	require.NotContains(t, text.ids, controls.CheckControlEvidence, "a fresh install's controls match the baseline")
	require.NotContains(t, text.ids, controls.CheckJobStatuses)

	execSQL(t, admin, `ALTER TABLE durable_jobs.queue_retention_policy DISABLE TRIGGER queue_retention_policy_evidence`)
	execSQL(t, admin, `UPDATE durable_jobs.queue_retention_policy SET payload_retention = '2 hours' WHERE queue_name = '*'`)
	execSQL(t, admin, `SELECT durable_jobs.enqueue_job('t39.status', '{}'), durable_jobs.enqueue_job('t39.status', '{}')`)
	execSQL(t, admin, `UPDATE durable_jobs.job_record SET job_status = 'SUCCEEDED' WHERE queue_name = 't39.status'`)
	text, report := runAudit(t, auditor)
	require.Equal(t, []string{controls.CheckControlEvidence, controls.CheckJobStatuses}, text.ids)
	require.Contains(t, text.stdout, "trigger queue_retention_policy_evidence on durable_jobs.queue_retention_policy does not fire in every session (tgenabled D)")
	require.Contains(t, text.stdout, "queue_retention_policy queue '*': retention differs from what its last evidence record says")
	require.Contains(t, text.stdout, "queue 't39.status': 2 SUCCEEDED job(s) whose status no fenced write or recorded action explains")
	require.Equal(t, 3, report.Findings)
}
