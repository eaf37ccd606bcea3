package sqlintegration

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/stretchr/testify/require"
)

// The owner of the renewal functions holds no privilege
// of any kind on the payload table or its columns, so the renewal path
// cannot read a payload whatever its SQL does.
func TestRenewalOwnerHasNoPrivilegeOnPayloads(t *testing.T) {
	t.Parallel()
	f := setup(t)

	for _, fn := range []string{
		"durable_jobs.renew_job_lease(bigint, uuid, text)",
		"durable_jobs.renew_job_leases(text, bigint[], uuid[])",
	} {
		var owner string
		var definer bool
		require.NoError(t, f.admin.QueryRow(f.ctx,
			"SELECT proowner::regrole::text, prosecdef FROM pg_proc WHERE oid = $1::regprocedure", fn).Scan(&owner, &definer))
		require.Equal(t, "durable_job_renewal_owner", owner, "%s runs as the renewal owner", fn)
		require.True(t, definer, "%s is SECURITY DEFINER, so its owner's privileges are the ones that count", fn)
	}

	const role, table = "durable_job_renewal_owner", "durable_jobs.job_payload_record"
	for _, privilege := range []string{"SELECT", "INSERT", "UPDATE", "DELETE", "TRUNCATE", "REFERENCES", "TRIGGER"} {
		var has bool
		require.NoError(t, f.admin.QueryRow(f.ctx, "SELECT has_table_privilege($1, $2, $3)", role, table, privilege).Scan(&has))
		require.False(t, has, "the renewal owner has no %s on the payload table", privilege)
	}
	for _, privilege := range []string{"SELECT", "INSERT", "UPDATE", "REFERENCES"} {
		var any bool
		require.NoError(t, f.admin.QueryRow(f.ctx, "SELECT has_any_column_privilege($1, $2, $3)", role, table, privilege).Scan(&any))
		require.False(t, any, "the renewal owner has no %s on any payload column", privilege)
		for _, column := range []string{"job_record_id", "job_payload"} {
			var has bool
			require.NoError(t, f.admin.QueryRow(f.ctx, "SELECT has_column_privilege($1, $2, $3, $4)",
				role, table, column, privilege).Scan(&has))
			require.False(t, has, "the renewal owner has no %s on payload column %s", privilege, column)
		}
	}
	// A sanity check that the question can be answered true: the claim
	// owner reads payloads.
	var claimReads bool
	require.NoError(t, f.admin.QueryRow(f.ctx, "SELECT has_column_privilege('durable_job_claim_owner', $1, 'job_payload', 'SELECT')", table).Scan(&claimReads))
	require.True(t, claimReads, "the claim owner reads payloads, so the checks above can fail")
}

// regulatedValues are realistic regulated personal data in a job payload:
// a resident registration number-like value, a name, a phone number, an
// e-mail address and a card-like number.
var regulatedValues = []string{
	"900101-1234567",
	"홍길동",
	"Hong Gildong",
	"010-1234-5678",
	"gildong.hong@example.kr",
	"4111-1111-1111-1111",
}

// With regulated personal data in the payload, renewal
// works, and no column any renewal returns (single, batch, stale, disabled)
// nor any payload-blind read carries one of the values.
func TestRenewalWithRegulatedPayloadNeverReturnsIt(t *testing.T) {
	t.Parallel()
	f := setup(t)
	payload, err := json.Marshal(map[string]any{
		"customer": map[string]string{
			"resident_registration_number": regulatedValues[0],
			"name_korean":                  regulatedValues[1],
			"name_latin":                   regulatedValues[2],
			"phone":                        regulatedValues[3],
			"email":                        regulatedValues[4],
			"card_number":                  regulatedValues[5],
		},
		"operation": "load_customer",
	})
	require.NoError(t, err)
	producer := f.producer(t)
	jobID := enqueueOn(t, f.ctx, producer, f.queue, string(payload))
	otherID := enqueueOn(t, f.ctx, producer, f.queue, string(payload))
	w := f.worker(t)

	c := mustClaim(t, f.ctx, w, f.queue, "worker-a")
	require.Equal(t, jobID, c.JobID)
	require.JSONEq(t, string(payload), string(c.Payload), "the claim, which needs it, hands out the payload intact")
	other := mustClaim(t, f.ctx, w, f.queue, "worker-a")
	require.Equal(t, otherID, other.JobID)

	var outputs []string
	collect := func(what string, rows pgx.Rows, err error) int {
		t.Helper()
		require.NoError(t, err, what)
		defer rows.Close()
		n := 0
		for rows.Next() {
			values, err := rows.Values()
			require.NoError(t, err)
			for i, v := range values {
				outputs = append(outputs, fmt.Sprintf("%s column %s: %v", what, rows.FieldDescriptions()[i].Name, v))
			}
			n++
		}
		require.NoError(t, rows.Err(), what)
		return n
	}
	renewOnce := func(token pgtype.UUID) string {
		t.Helper()
		rows, err := w.Query(f.ctx, "SELECT * FROM durable_jobs.renew_job_lease($1, $2, $3)", jobID, token, "worker-a")
		before := len(outputs)
		require.Equal(t, 1, collect("renew_job_lease", rows, err))
		return outputs[before]
	}

	for range 3 {
		require.Contains(t, renewOnce(c.Token), "renewed", "renewal works with a regulated payload")
	}
	rows, err := w.Query(f.ctx, "SELECT * FROM durable_jobs.renew_job_leases($1, $2, $3)",
		"worker-a", []int64{jobID, otherID}, []pgtype.UUID{c.Token, other.Token})
	require.Equal(t, 2, collect("renew_job_leases", rows, err))
	var wrong pgtype.UUID
	wrong.Valid = true
	require.Contains(t, renewOnce(wrong), "stale", "a stale renewal of the job returns no payload either")

	f.setPolicy(t, f.queue, testLeaseDuration, testRenewalInterval, testMaxClaimLife, false)
	require.Contains(t, renewOnce(c.Token), "renewal_disabled", "a disabled renewal returns no payload either")

	rows, err = producer.Query(f.ctx, "SELECT * FROM durable_jobs.job_lifecycle_state($1)", jobID)
	require.Equal(t, 1, collect("job_lifecycle_state", rows, err))
	auditor := f.connect(t, f.db.LoginURL(t, "durable_job_auditor"))
	for _, read := range []string{
		"SELECT * FROM durable_jobs.lease_health_by_queue()",
		"SELECT * FROM durable_jobs.lease_outcome_totals(clock_timestamp() - interval '1 hour')",
		"SELECT * FROM durable_jobs.job_status_totals()",
		"SELECT * FROM durable_jobs.control_evidence_history(NULL)",
	} {
		rows, err := auditor.Query(f.ctx, read)
		collect(read, rows, err)
	}

	require.Greater(t, len(outputs), 20, "the checks below looked at real output")
	for _, out := range outputs {
		for _, value := range regulatedValues {
			require.NotContains(t, out, value, "no renewal or payload-blind output carries a regulated value")
		}
		require.NotContains(t, strings.ToLower(out), "resident_registration", "no output carries payload field names")
	}
	require.Equal(t, int64(4), f.state(t, jobID).RenewalCount, "three single renewals and one batch renewal were counted")
}

// Payload separation on the terminal path: when a worker's terminal
// write is refused (LF001), its own target write in the same transaction
// is rolled back with it, so a stale worker leaves no database-owned effect.
func TestStaleTerminalWriteRollsBackTheWorkersTargetWrite(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ownerURL := f.workerURL(t)
	f.createTargetTable(t, loginRole(t, ownerURL))
	w := f.connect(t, ownerURL)
	producer := f.producer(t)
	jobID := f.enqueue(t, `{"extract": "contracts"}`)
	c := mustClaim(t, f.ctx, w, f.queue, "worker-a")

	var cancelled bool
	require.NoError(t, producer.QueryRow(f.ctx, "SELECT durable_jobs.cancel_job($1)", jobID).Scan(&cancelled))
	require.True(t, cancelled)

	terminal := map[string]func(q querier) error{
		"complete_job": func(q querier) error { return complete(f.ctx, q, c, "worker-a") },
		"retry_job":    func(q querier) error { _, err := retry(f.ctx, q, c, "worker-a", 0); return err },
		"fail_job":     func(q querier) error { return fail(f.ctx, q, c, "worker-a") },
	}
	for name, write := range terminal {
		tx, err := w.Begin(f.ctx)
		require.NoError(t, err)
		require.NoError(t, writeTarget(f.ctx, tx, jobID, "row from a stale worker"), "the target write itself is allowed")
		requireSQLState(t, write(tx), "LF001", name+" refuses the cancelled claim")
		err = tx.Commit(f.ctx)
		require.ErrorIs(t, err, pgx.ErrTxCommitRollback, "%s: the transaction cannot commit after LF001", name)
		require.Equal(t, 0, f.targetRows(t, jobID), "%s: the stale worker's target write was rolled back", name)
	}
	require.Equal(t, "CANCELLED", f.state(t, jobID).Status)

	// The same transaction with a live claim commits both, so the refusal
	// above is the fence, not the table.
	f.enqueue(t, `{"extract": "contracts-2"}`)
	live := mustClaim(t, f.ctx, w, f.queue, "worker-a")
	tx, err := w.Begin(f.ctx)
	require.NoError(t, err)
	require.NoError(t, writeTarget(f.ctx, tx, live.JobID, "row from the live claimant"))
	require.NoError(t, complete(f.ctx, tx, live, "worker-a"))
	require.NoError(t, tx.Commit(f.ctx))
	require.Equal(t, 1, f.targetRows(t, live.JobID))
	require.Equal(t, "SUCCEEDED", f.state(t, live.JobID).Status)
}
