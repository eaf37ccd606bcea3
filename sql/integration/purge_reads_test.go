package sqlintegration

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// Issue 38: the last call of a purge loop, the one that finds fewer due
// rows than its batch, read the entry of every finished row of
// job_record_finished_by_age, twice (the record pass and the payload
// pass), since the retention cutoff was a join filter through the policy
// table and not an index condition: 400,000 entries for 200,000 finished
// rows inside their retention. Since migration 030 each pass is bounded
// by the latest cutoff of any policy, so such a call reads a few entries
// for each row past a cutoff (the due rows, with the deletes' lookups of
// their payloads and outcomes) and none for the rows inside their
// retention.
// Counted under statistics taken before the finished rows arrived and
// after an ANALYZE, each in a new session, eight calls each (past
// PL/pgSQL's five custom plans, to its generic one): the first purges the
// due rows, the others find none.
func TestPurgeLastCallReadsOnlyItsDueRows(t *testing.T) {
	t.Parallel()
	f := staleFixture(t)
	// The queue's own policy is the shortest: its cutoffs bound the scans.
	// '*' (30 days, 365 days) keeps its default.
	_, err := f.admin.Exec(f.ctx, `SELECT durable_jobs.set_queue_retention_policy($1, '2 days', '3 days', 'OPS-38: purge reads test')`,
		f.queue)
	require.NoError(t, err)
	f.enqueueMany(t, 100)
	f.analyze(t)
	// Finished a day ago: inside both retentions (the figure). With
	// 50,000, fresh statistics plan the deletes of a batch of 1,000 as hash
	// joins over sequential scans of the three tables (at 29 as at 30).
	const inside = 200000
	const due = 10 // of each kind, in each phase
	// finished fills the queue with n SUCCEEDED rows, each with a payload and
	// an outcome, that finished age ago (100 ms apart).
	finished := func(n int, age string) {
		t.Helper()
		_, err := f.admin.Exec(f.ctx, `WITH j AS (
				INSERT INTO durable_jobs.job_record (queue_name, job_status, run_after, max_attempts, attempt_number,
				                                     lease_fencing_generation, created_at, status_changed_at)
				SELECT $1, 'SUCCEEDED', now() - interval '5 days', 5, 1, 1, now() - interval '5 days',
				       now() - $3::interval - g * interval '100 milliseconds'
				FROM pg_catalog.generate_series(1, $2) g
				RETURNING job_record_id)
			, p AS (INSERT INTO durable_jobs.job_payload_record (job_record_id, job_payload) SELECT j.job_record_id, '{}' FROM j)
			INSERT INTO durable_jobs.job_outcome_ledger (job_record_id, lease_fencing_generation, outcome_status, result_document)
			SELECT j.job_record_id, 1, 'SUCCEEDED', '{}' FROM j`,
			f.queue, n, age)
		require.NoError(t, err)
	}
	finished(inside, "1 day")
	operator := f.db.LoginURL(t, "durable_job_operator")
	const purge = `SELECT COALESCE(pg_catalog.sum(purged_count), 0)::bigint FROM durable_jobs.purge_expired_job_data(1000)`
	for _, phase := range []string{"stale", "fresh"} {
		finished(due, "4 days")   // past the record retention
		finished(due, "2.5 days") // past the payload retention only
		if phase == "fresh" {
			f.analyze(t)
		}
		conn := f.connect(t, operator)
		var reads []callReads
		for i := range staleCalls {
			want := int64(0)
			if i == 0 {
				want = 2 * due
			}
			reads = append(reads, f.readsOf(t, conn, fmt.Sprintf("purge, %s statistics, call %d", phase, i+1), want, purge))
		}
		t.Logf("%s statistics: index entries read a call %v", phase, entriesOf(reads))
		for i, r := range reads {
			// What rows past a cutoff cost, a few entries each, and nothing
			// for the rows inside their retention: the first call's 2*due
			// purged rows (an entry of job_record_finished_by_age each,
			// then the lookups of the rows, payloads and outcomes it
			// deletes or clears); every call the entries of the rows
			// purged before (they stay until a vacuum) and the rows whose
			// payload is gone and record kept (the payload pass still
			// reads those: they are past its cutoff), and the policy
			// table's key.
			const bound = 8*2*due + 20
			require.LessOrEqual(t, r.entries, int64(bound), "%s statistics, call %d: %d index entries read for %d finished rows inside their retention (%v)",
				phase, i+1, r.entries, inside, r.byIndex)
			require.Zero(t, r.jobSeqScans+r.payloadSeqScans+r.ledgerSeq,
				"%s statistics, call %d: sequential scans of job_record %d, job_payload_record %d, job_outcome_ledger %d",
				phase, i+1, r.jobSeqScans, r.payloadSeqScans, r.ledgerSeq)
		}
	}
}
