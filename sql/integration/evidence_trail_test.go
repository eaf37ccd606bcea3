package sqlintegration

import (
	"fmt"
	"net/url"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// Evidence an auditor accepts without trusting the DBA (issue 39), the
// database's part: one test per hole, each failing on bundle version 25.

// loginName is the role name a login URL connects as.
func loginName(t *testing.T, loginURL string) string {
	t.Helper()
	u, err := url.Parse(loginURL)
	require.NoError(t, err)
	return u.User.Username()
}

// lastEvidence is the newest evidence record: kind, queue, changed_by_role,
// reason, ticket and approver.
func (f *fixture) lastEvidence(t *testing.T) (kind string, queue, by, reason, ticket, approver *string) {
	t.Helper()
	require.NoError(t, f.admin.QueryRow(f.ctx, `SELECT evidence_kind, queue_name, changed_by_role, change_reason,
			change_ticket, change_approver
		FROM durable_jobs.control_evidence_record ORDER BY evidence_record_id DESC LIMIT 1`).
		Scan(&kind, &queue, &by, &reason, &ticket, &approver))
	return kind, queue, by, reason, ticket, approver
}

// Item 2: a superuser's UPDATE of the retention policy or of the change
// control left no evidence, and the functions' last record still named the
// last operator. Now every change of either table is recorded, whatever the
// path, with the login that made it; a change made with the evidence
// trigger disabled is what control_evidence_mismatches shows.
func TestControlTablesRecordEveryChangeWhateverThePath(t *testing.T) {
	t.Parallel()
	f := setup(t)
	var admin string
	require.NoError(t, f.admin.QueryRow(f.ctx, "SELECT session_user").Scan(&admin))
	mismatches := func() []string {
		t.Helper()
		rows, err := f.admin.Query(f.ctx, `SELECT control_table || ' ' || COALESCE(queue_name, '-') || ': ' || mismatch
			FROM durable_jobs.control_evidence_mismatches()`)
		require.NoError(t, err)
		out, err := pgx.CollectRows(rows, pgx.RowTo[string])
		require.NoError(t, err)
		return out
	}
	require.Empty(t, mismatches(), "a fresh install's controls agree with the baseline of migration 026")

	operator := f.connect(t, f.db.LoginURL(t, "durable_job_operator"))
	_, err := operator.Exec(f.ctx, `SELECT durable_jobs.set_queue_retention_policy($1, '2 hours', '3 hours', 'OPS-39: retention')`, f.queue)
	require.NoError(t, err)
	require.Empty(t, mismatches(), "a change through the function agrees with its record")

	_, err = f.admin.Exec(f.ctx, `UPDATE durable_jobs.queue_retention_policy SET record_retention = '3000 days',
		changed_by_role = 'someone_else' WHERE queue_name = $1`, f.queue)
	require.NoError(t, err)
	kind, queue, by, reason, _, _ := f.lastEvidence(t)
	require.Equal(t, "retention_policy_changed", kind)
	require.Equal(t, f.queue, *queue)
	require.Equal(t, admin, *by, "the record names the login that changed the table")
	require.Equal(t, "direct table change without a reason", *reason)
	var rowBy string
	require.NoError(t, f.admin.QueryRow(f.ctx, `SELECT changed_by_role FROM durable_jobs.queue_retention_policy WHERE queue_name = $1`,
		f.queue).Scan(&rowBy))
	require.Equal(t, admin, rowBy, "the row cannot name someone else")

	_, err = f.admin.Exec(f.ctx, `UPDATE durable_jobs.change_control_setting SET require_approver = true`)
	require.NoError(t, err)
	kind, _, by, reason, _, _ = f.lastEvidence(t)
	require.Equal(t, "change_control_changed", kind)
	require.Equal(t, admin, *by)
	require.Equal(t, "direct table change without a reason", *reason)
	require.Empty(t, mismatches(), "every direct change was recorded")
	_, err = f.admin.Exec(f.ctx, `UPDATE durable_jobs.change_control_setting SET require_approver = false`)
	requireSQLState(t, err, "LF002", "a direct change is checked against the change control before it: an approver is required now")

	for _, stmt := range []string{
		"TRUNCATE durable_jobs.queue_retention_policy",
		"TRUNCATE durable_jobs.change_control_setting",
		"DELETE FROM durable_jobs.change_control_setting",
	} {
		_, err := f.admin.Exec(f.ctx, stmt)
		requireSQLState(t, err, "LF002", "a control is never removed without evidence: "+stmt)
	}

	// What only a superuser can do: change a control with its trigger off.
	tx, err := f.admin.Begin(f.ctx)
	require.NoError(t, err)
	_, err = tx.Exec(f.ctx, `ALTER TABLE durable_jobs.queue_retention_policy DISABLE TRIGGER queue_retention_policy_evidence`)
	require.NoError(t, err)
	_, err = tx.Exec(f.ctx, `UPDATE durable_jobs.queue_retention_policy SET payload_retention = '1 hour' WHERE queue_name = $1`, f.queue)
	require.NoError(t, err)
	_, err = tx.Exec(f.ctx, `ALTER TABLE durable_jobs.queue_retention_policy ENABLE TRIGGER queue_retention_policy_evidence`)
	require.NoError(t, err)
	require.NoError(t, tx.Commit(f.ctx))
	require.Equal(t, []string{"queue_retention_policy " + f.queue + ": retention differs from what its last evidence record says"},
		mismatches(), "a change that left no evidence is a finding")
}

// Item 2, job statuses: five FAILED jobs set to SUCCEEDED by a superuser
// passed the audit. job_status_mismatches counts them (no job ids); a job
// failed by the claim once its attempts were used up is not counted.
func TestStatusesSetByHandAreCounted(t *testing.T) {
	t.Parallel()
	f := setup(t)
	worker := f.worker(t)
	var ids []int64
	for i := 0; i < 5; i++ {
		id := f.enqueue(t, `{}`)
		ids = append(ids, id)
		var token string
		require.NoError(t, worker.QueryRow(f.ctx, `SELECT lease_claim_token::text FROM durable_jobs.claim_next_job($1, 'w1')`, f.queue).Scan(&token))
		_, err := worker.Exec(f.ctx, `SELECT durable_jobs.fail_job($1, $2, 'w1', 'broken')`, id, token)
		require.NoError(t, err)
	}
	counts := func() map[string]int64 {
		t.Helper()
		rows, err := f.admin.Query(f.ctx, `SELECT job_status, job_count FROM durable_jobs.job_status_mismatches() WHERE queue_name = $1`, f.queue)
		require.NoError(t, err)
		defer rows.Close()
		out := map[string]int64{}
		for rows.Next() {
			var status string
			var n int64
			require.NoError(t, rows.Scan(&status, &n))
			out[status] = n
		}
		require.NoError(t, rows.Err())
		return out
	}
	require.Empty(t, counts(), "jobs failed by the worker are explained by their outcomes")
	_, err := f.admin.Exec(f.ctx, `UPDATE durable_jobs.job_record SET job_status = 'SUCCEEDED' WHERE job_record_id = ANY ($1)`, ids)
	require.NoError(t, err)
	require.Equal(t, map[string]int64{"SUCCEEDED": 5}, counts(), "statuses set by hand are counted")
	_, err = f.admin.Exec(f.ctx, `UPDATE durable_jobs.job_record SET job_status = 'FAILED', attempt_number = max_attempts WHERE job_record_id = ANY ($1)`, ids)
	require.NoError(t, err)
	require.Empty(t, counts(), "a job whose attempts are used up may be FAILED without an outcome")
}

// Item 3: with require_approver on, a worker login was accepted as the
// approver of a policy change. An approver must now hold the operator role.
func TestAnApproverMustHoldTheOperatorRole(t *testing.T) {
	t.Parallel()
	f := setup(t)
	operator := f.connect(t, f.db.LoginURL(t, "durable_job_operator"))
	worker := loginName(t, f.workerURL(t))
	approver := loginName(t, f.db.LoginURL(t, "durable_job_operator"))
	change := fmt.Sprintf(`SELECT durable_jobs.update_queue_lease_policy('%s', '20 seconds', NULL, NULL, NULL, 'CHG-1236: approvals', 'CHG-1236', $1)`, f.queue)
	_, err := operator.Exec(f.ctx, change, worker)
	requireSQLState(t, err, "LF002", "a worker login is no approver")
	_, err = operator.Exec(f.ctx, change, approver)
	require.NoError(t, err, "another operator login is")
	_, _, _, _, ticket, by := f.lastEvidence(t)
	require.Equal(t, "CHG-1236", *ticket)
	require.Equal(t, approver, *by)
}

// Item 4: two cancels and two replays added no evidence and took no reason.
// Now an operator's cancel and replay take a reason, ticket and approver,
// are kept in the job's action trail and recorded as chained evidence that
// names the queue and never the job; a producer's own cancel is in the
// trail only.
func TestOperatorActionsOnJobsAreOnRecord(t *testing.T) {
	t.Parallel()
	f := setup(t)
	operatorURL := f.db.LoginURL(t, "durable_job_operator")
	operator := f.connect(t, operatorURL)
	producer := f.producer(t)
	first, second := f.enqueue(t, `{}`), f.enqueue(t, `{}`)
	before := f.maxEvidenceID(t)

	var ok bool
	require.NoError(t, producer.QueryRow(f.ctx, `SELECT durable_jobs.cancel_job($1)`, first).Scan(&ok))
	require.True(t, ok)
	require.Equal(t, before, f.maxEvidenceID(t), "a producer's own cancel is no operator action: no evidence")

	_, err := operator.Exec(f.ctx, `SELECT durable_jobs.cancel_job($1, 'call 010-1234-5678')`, second)
	requireSQLState(t, err, "LF002", "a reason is checked like every change record's")
	require.Equal(t, "QUEUED", f.state(t, second).Status, "and a refused cancel changes nothing")
	require.NoError(t, operator.QueryRow(f.ctx, `SELECT durable_jobs.cancel_job($1, 'OPS-40: duplicate order', 'OPS-40')`, second).Scan(&ok))
	require.True(t, ok)
	require.NoError(t, operator.QueryRow(f.ctx, `SELECT durable_jobs.replay_job($1, 'OPS-41: customer asked again')`, second).Scan(&ok))
	require.True(t, ok)
	require.NoError(t, operator.QueryRow(f.ctx, `SELECT durable_jobs.replay_job($1)`, first).Scan(&ok))
	require.True(t, ok)

	operatorName := loginName(t, operatorURL)
	rows, err := operator.Query(f.ctx, `SELECT action_kind, acted_by_role, COALESCE(change_reason, '-'), COALESCE(change_ticket, '-')
		FROM durable_jobs.operator_job_actions($1)`, second)
	require.NoError(t, err)
	trail, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (string, error) {
		var kind, by, reason, ticket string
		err := r.Scan(&kind, &by, &reason, &ticket)
		return kind + "|" + by + "|" + reason + "|" + ticket, err
	})
	require.NoError(t, err)
	require.Equal(t, []string{
		"cancelled|" + operatorName + "|OPS-40: duplicate order|OPS-40",
		"replayed|" + operatorName + "|OPS-41: customer asked again|-",
	}, trail, "the job's trail says who, why and under which ticket")

	rows, err = f.admin.Query(f.ctx, `SELECT evidence_kind || '|' || queue_name || '|' || changed_by_role || '|' || change_reason || '|' || new_values::text
		FROM durable_jobs.control_evidence_record WHERE evidence_record_id > $1 ORDER BY evidence_record_id`, before)
	require.NoError(t, err)
	records, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	require.Equal(t, []string{
		"job_cancelled|" + f.queue + "|" + operatorName + `|OPS-40: duplicate order|{"job_status": "CANCELLED"}`,
		"job_replayed|" + f.queue + "|" + operatorName + `|OPS-41: customer asked again|{"job_status": "QUEUED"}`,
		"job_replayed|" + f.queue + "|" + operatorName + `|replayed without a reason|{"job_status": "QUEUED"}`,
	}, records, "each operator action is chained evidence naming the queue, never the job")

	_, err = f.admin.Exec(f.ctx, `UPDATE durable_jobs.change_control_setting SET require_approver = true`)
	require.NoError(t, err)
	require.NoError(t, producer.QueryRow(f.ctx, `SELECT durable_jobs.cancel_job($1)`, first).Scan(&ok))
	_, err = operator.Exec(f.ctx, `SELECT durable_jobs.replay_job($1)`, first)
	requireSQLState(t, err, "LF002", "a replay without an approver is refused where change control requires one")
}

// Item 3, maker-checker: with require_second_operator on, no change takes
// effect in the session that asks for it; one operator login proposes it
// and another approves it in its own session before it expires, both on
// record with their times. The proposer cannot approve, an expired or
// decided proposal cannot be approved, a forged setting does not pass for
// an approval, and switching maker-checker off needs an approval too.
func TestMakerCheckerNeedsASecondOperatorInItsOwnSession(t *testing.T) {
	t.Parallel()
	f := setup(t)
	makerURL, checkerURL := f.db.LoginURL(t, "durable_job_operator"), f.db.LoginURL(t, "durable_job_operator")
	maker, checker := f.connect(t, makerURL), f.connect(t, checkerURL)
	makerName, checkerName := loginName(t, makerURL), loginName(t, checkerURL)
	require.NotEqual(t, makerName, checkerName)

	_, err := maker.Exec(f.ctx, `SELECT durable_jobs.set_maker_checker(true, '1 hour', 'OPS-50: four eyes', 'OPS-50')`)
	require.NoError(t, err)
	_, err = maker.Exec(f.ctx, `SELECT durable_jobs.update_queue_lease_policy($1, '20 seconds', NULL, NULL, NULL, 'OPS-51: longer', 'OPS-51', $2)`,
		f.queue, checkerName)
	requireSQLState(t, err, "LF002", "a change made in one session, even naming an approver, is refused")

	var id int64
	require.NoError(t, maker.QueryRow(f.ctx, `SELECT durable_jobs.propose_change('lease_policy', $1, '{"lease_duration": "20 seconds"}',
		'OPS-51: longer', 'OPS-51')`, f.queue).Scan(&id))
	_, err = maker.Exec(f.ctx, `SELECT durable_jobs.approve_change($1)`, id)
	requireSQLState(t, err, "LF002", "the proposer cannot approve its own proposal")
	_, err = f.worker(t).Exec(f.ctx, `SELECT durable_jobs.approve_change($1)`, id)
	requireSQLState(t, err, "42501", "a worker cannot approve")

	// A forged setting in the checker's session is no approval.
	tx, err := checker.Begin(f.ctx)
	require.NoError(t, err)
	_, err = tx.Exec(f.ctx, fmt.Sprintf(`SET LOCAL leasefence.change_proposal = '%d'`, id))
	require.NoError(t, err)
	_, err = tx.Exec(f.ctx, `SELECT durable_jobs.update_queue_lease_policy($1, '30 seconds', NULL, NULL, NULL, 'OPS-51: longer', 'OPS-51', $2)`,
		f.queue, checkerName)
	requireSQLState(t, err, "LF002", "a forged proposal setting does not pass for an approval")
	require.NoError(t, tx.Rollback(f.ctx))

	before := f.maxEvidenceID(t)
	_, err = checker.Exec(f.ctx, `SELECT durable_jobs.approve_change($1)`, id)
	require.NoError(t, err)
	var lease string
	require.NoError(t, f.admin.QueryRow(f.ctx, `SELECT lease_duration::text FROM durable_jobs.queue_lease_policies() WHERE queue_name = $1`,
		f.queue).Scan(&lease))
	require.Equal(t, "00:00:20", lease, "the approved change took effect")
	rows, err := f.admin.Query(f.ctx, `SELECT evidence_kind || '|' || changed_by_role || '|' || COALESCE(change_approver, '-')
		|| '|' || COALESCE(new_values ->> 'proposed_by', '-')
		FROM durable_jobs.control_evidence_record WHERE evidence_record_id > $1 ORDER BY evidence_record_id`, before)
	require.NoError(t, err)
	records, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	require.Equal(t, []string{
		"change_approved|" + checkerName + "|" + checkerName + "|" + makerName,
		"lease_policy_changed|" + checkerName + "|" + checkerName + "|-",
	}, records, "the approval names the proposer, the change its approver")
	_, err = checker.Exec(f.ctx, `SELECT durable_jobs.approve_change($1)`, id)
	requireSQLState(t, err, "LF002", "a decided proposal is not approved twice")

	// An expired proposal is not approved; a rejection needs a reason.
	require.NoError(t, maker.QueryRow(f.ctx, `SELECT durable_jobs.propose_change('retention_policy', $1,
		'{"payload_retention": "2 hours", "record_retention": "3 hours"}', 'OPS-52: shorter')`, f.queue).Scan(&id))
	_, err = f.admin.Exec(f.ctx, `UPDATE durable_jobs.pending_change SET expires_at = now() - interval '1 second' WHERE change_id = $1`, id)
	require.NoError(t, err)
	_, err = checker.Exec(f.ctx, `SELECT durable_jobs.approve_change($1)`, id)
	requireSQLState(t, err, "LF002", "an expired proposal")
	var state string
	require.NoError(t, checker.QueryRow(f.ctx, `SELECT change_state FROM durable_jobs.pending_changes() WHERE change_id = $1`, id).Scan(&state))
	require.Equal(t, "expired", state)
	_, err = maker.Exec(f.ctx, `SELECT durable_jobs.reject_change($1, 'OPS-52: withdrawn')`, id)
	require.NoError(t, err, "a proposer may withdraw its proposal")

	// Switching maker-checker off is a change like any other.
	_, err = maker.Exec(f.ctx, `SELECT durable_jobs.set_maker_checker(false, '1 hour', 'OPS-53: back to one', 'OPS-53')`)
	requireSQLState(t, err, "LF002", "maker-checker is not switched off by one login")
	require.NoError(t, maker.QueryRow(f.ctx, `SELECT durable_jobs.propose_change('change_control', NULL,
		'{"ticket_pattern": "^[A-Z][A-Z0-9]+-[0-9]+$", "require_approver": false, "approver_must_differ": true,
		  "reason_pattern": null, "require_second_operator": false, "proposal_lifetime": "1 hour"}', 'OPS-53: back to one', 'OPS-53')`).Scan(&id))
	_, err = checker.Exec(f.ctx, `SELECT durable_jobs.approve_change($1)`, id)
	require.NoError(t, err)
	var second bool
	require.NoError(t, f.admin.QueryRow(f.ctx, `SELECT require_second_operator FROM durable_jobs.change_control()`).Scan(&second))
	require.False(t, second)
	_, err = maker.Exec(f.ctx, `SELECT durable_jobs.set_queue_lease_policy($1, '10 seconds', '1 second', '1 minute', true, 'OPS-54: alone again')`, f.queue)
	require.NoError(t, err, "one login changes policies alone again")
}

// A retention row removed without evidence before migration 026 is in no
// baseline and nothing can clear it: it is not reported for ever after the
// baseline (only records after the newest baseline are compared).
func TestControlMismatchesStartAtTheNewestBaseline(t *testing.T) {
	t.Parallel()
	f := setup(t)
	operator := f.connect(t, f.db.LoginURL(t, "durable_job_operator"))
	_, err := operator.Exec(f.ctx, `SELECT durable_jobs.set_queue_retention_policy($1, '2 hours', '3 hours', 'OPS-39: retention')`, f.queue)
	require.NoError(t, err)
	tx, err := f.admin.Begin(f.ctx)
	require.NoError(t, err)
	_, err = tx.Exec(f.ctx, `ALTER TABLE durable_jobs.queue_retention_policy DISABLE TRIGGER queue_retention_policy_evidence`)
	require.NoError(t, err)
	_, err = tx.Exec(f.ctx, `DELETE FROM durable_jobs.queue_retention_policy WHERE queue_name = $1`, f.queue)
	require.NoError(t, err)
	_, err = tx.Exec(f.ctx, `ALTER TABLE durable_jobs.queue_retention_policy ENABLE TRIGGER queue_retention_policy_evidence`)
	require.NoError(t, err)
	require.NoError(t, tx.Commit(f.ctx))
	var n int
	require.NoError(t, f.admin.QueryRow(f.ctx, `SELECT count(*) FROM durable_jobs.control_evidence_mismatches() WHERE queue_name = $1`, f.queue).Scan(&n))
	require.Equal(t, 1, n, "a row removed around its evidence is a finding")

	// A later install of 026 (down and up again) takes a new baseline.
	_, err = f.admin.Exec(f.ctx, `SELECT durable_jobs.lock_evidence_order();
		INSERT INTO durable_jobs.control_evidence_record (evidence_kind, new_values, change_reason)
		SELECT 'migration_applied', jsonb_build_object('migration_version', 26, 'retention_baseline',
			(SELECT jsonb_agg(jsonb_build_object('policy_queue_name', p.queue_name, 'payload_retention', p.payload_retention,
			 'record_retention', p.record_retention)) FROM durable_jobs.queue_retention_policy p)), 'a new baseline'`)
	require.NoError(t, err)
	require.NoError(t, f.admin.QueryRow(f.ctx, `SELECT count(*) FROM durable_jobs.control_evidence_mismatches()`).Scan(&n))
	require.Zero(t, n, "records before the newest baseline are not compared")
}
