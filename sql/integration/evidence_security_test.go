package sqlintegration

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/mightyetl/leasefence/internal/testdb"
)

// The third security review (issue 34), one test per hole. Each failed on
// bundle version 23.

// session opens one connection to url with a statement timeout of its own
// (longer than the 10 s evidence-lock bound, so a test can see that bound
// end a wait), closed when the test ends.
func session(t *testing.T, ctx context.Context, url string, settings map[string]string) *pgx.Conn {
	t.Helper()
	cfg, err := pgx.ParseConfig(url)
	require.NoError(t, err)
	cfg.RuntimeParams["statement_timeout"] = "20s"
	cfg.RuntimeParams["application_name"] = "leasefence_sqlintegration"
	for k, v := range settings {
		cfg.RuntimeParams[k] = v
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	return conn
}

// Item 1: the evidence-order lock was the advisory key (1279655936, 1),
// which any login could take with pg_advisory_lock and keep while idle, so
// every evidence writer waited (lease policy changes 10 s then 55P03; the
// retention functions for ever). Now a worker login holding that key stops
// no writer, and cannot lock the row that is the lock now.
func TestNoLoginCanStallEvidenceWriters(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := f.ctx
	attacker := session(t, ctx, f.workerURL(t), nil)
	_, err := attacker.Exec(ctx, "SELECT pg_advisory_lock(1279655936, 1)")
	require.NoError(t, err, "any login may take an advisory lock")

	operator := session(t, ctx, f.db.LoginURL(t, "durable_job_operator"), map[string]string{"statement_timeout": "5s"})
	writers := []string{
		fmt.Sprintf("SELECT durable_jobs.set_queue_lease_policy('%s', '5 seconds', '1 second', '1 minute', true, 'OPS-1: stall test')", f.queue),
		fmt.Sprintf("SELECT durable_jobs.set_queue_retention_policy('%s', '2 hours', '3 hours', 'OPS-1: stall test')", f.queue),
		"SELECT durable_jobs.set_change_control('^[A-Z][A-Z0-9]+-[0-9]+$', false, true, 'OPS-1: stall test', 'OPS-1')",
		"SELECT durable_jobs.purge_expired_job_data(100)",
	}
	for _, w := range writers {
		start := time.Now()
		_, err := operator.Exec(ctx, w)
		require.NoError(t, err, "an evidence writer is not held up by a login's advisory lock: %s", w)
		require.Less(t, time.Since(start), 3*time.Second, "and does not wait for it: %s", w)
	}

	// The lock itself is out of every runtime login's reach.
	for _, role := range []string{"durable_job_worker", "durable_job_producer", "durable_job_operator", "durable_job_auditor"} {
		login := session(t, ctx, f.db.LoginURL(t, role), nil)
		for _, stmt := range []string{
			"SELECT 1 FROM durable_jobs.evidence_order_lock FOR UPDATE",
			"LOCK TABLE durable_jobs.evidence_order_lock IN ACCESS EXCLUSIVE MODE",
			"SELECT durable_jobs.lock_evidence_order()",
		} {
			tx, err := login.Begin(ctx)
			require.NoError(t, err)
			_, err = tx.Exec(ctx, stmt)
			requireSQLState(t, err, "42501", role+" cannot take the evidence-order lock: "+stmt)
			require.NoError(t, tx.Rollback(ctx))
		}
	}
}

// Item 1, second form: a writer left open in its transaction held the lock
// for as long as it stayed idle (only lease-policy changes set an idle
// bound), and the retention writers waited for it without a bound. Now
// every writer, retention included, sets the 60 s idle bound when it takes
// the lock, and a second writer waits at most 10 s (then 55P03, nothing
// changed): two real sessions, lock in one, act in the other.
func TestEvidenceOrderLockIsHeldToCommitAndBoundsTheWait(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := f.ctx
	first := session(t, ctx, f.db.LoginURL(t, "durable_job_operator"), nil)
	second := session(t, ctx, f.db.LoginURL(t, "durable_job_operator"), nil)

	tx, err := first.Begin(ctx)
	require.NoError(t, err)
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // the test ends it
	_, err = tx.Exec(ctx, "SELECT durable_jobs.set_queue_retention_policy($1, '2 hours', '3 hours', 'OPS-2: first writer')", f.queue)
	require.NoError(t, err)
	var idle string
	require.NoError(t, tx.QueryRow(ctx, "SHOW idle_in_transaction_session_timeout").Scan(&idle))
	require.Equal(t, "1min", idle, "a retention change bounds how long its transaction may sit idle holding the lock")

	start := time.Now()
	_, err = second.Exec(ctx, "SELECT durable_jobs.set_queue_retention_policy($1, '4 hours', '5 hours', 'OPS-2: second writer')", f.queue)
	requireSQLState(t, err, "55P03", "a second evidence writer gives up after its bounded wait")
	require.GreaterOrEqual(t, time.Since(start), 9*time.Second, "the bound is lock_timeout, 10 s")
	require.NoError(t, tx.Commit(ctx))

	var payload string
	require.NoError(t, f.admin.QueryRow(ctx,
		"SELECT payload_retention::text FROM durable_jobs.queue_retention_policy WHERE queue_name = $1", f.queue).Scan(&payload))
	require.Equal(t, "02:00:00", payload, "the refused writer changed nothing")
}

// Item 2: a retention interval whose parts cancel out passed the bounds
// (months counted as 30 days) and made the purge's cutoff lie in the
// future, so a job finished a moment ago lost its row and its idempotency
// key. Now such an interval is refused, and a row that holds one (written
// before) never lets the purge remove a job younger than the 1-hour minimum.
func TestRetentionThatCancelsOutIsRefusedAndNeverPurgesYoungJobs(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := f.ctx
	for _, tc := range []struct{ payload, record string }{
		{"-1 year 361 days", "-1 year 361 days"}, // 5 days as months count, -4 days as a clock counts
		{"2 hours", "121 months"},                // under 3,650 days as months count, over as days do
		{"1 day -23 hours -30 minutes", "2 days"},
		{"1 month", "2 months"},
	} {
		_, err := f.admin.Exec(ctx, "SELECT durable_jobs.set_queue_retention_policy($1, $2::interval, $3::interval, 'OPS-3: cancel out')",
			f.queue, tc.payload, tc.record)
		requireSQLState(t, err, "LF002", fmt.Sprintf("retention %q / %q is not a plain duration within the bounds", tc.payload, tc.record))
	}
	_, err := f.admin.Exec(ctx, "SELECT durable_jobs.set_queue_retention_policy($1, '30 days', '2 days 12 hours', 'OPS-3: plain')", f.queue)
	requireSQLState(t, err, "LF002", "record retention shorter than payload retention")
	_, err = f.admin.Exec(ctx, "SELECT durable_jobs.set_queue_retention_policy($1, '1 day', '30 days', 'OPS-3: plain')", f.queue)
	require.NoError(t, err)
	var payload, record string
	require.NoError(t, f.admin.QueryRow(ctx, `SELECT payload_retention::text, record_retention::text
		FROM durable_jobs.queue_retention_policies() WHERE queue_name = $1`, f.queue).Scan(&payload, &record))
	require.Equal(t, []string{"24:00:00", "720:00:00"}, []string{payload, record}, "durations are stored as plain durations")

	// A row written before the rule (as version 23 accepted it).
	_, err = f.admin.Exec(ctx, `UPDATE durable_jobs.queue_retention_policy
		SET payload_retention = '-1 year 361 days', record_retention = '-1 year 361 days' WHERE queue_name = $1`, f.queue)
	require.NoError(t, err)
	worker := f.worker(t)
	f.enqueue(t, `{"subject":"just finished"}`)
	c := mustClaim(t, ctx, worker, f.queue, "w-retention")
	require.NoError(t, complete(ctx, worker, c, "w-retention"))
	_, err = f.admin.Exec(ctx, "SELECT * FROM durable_jobs.purge_expired_job_data(100)")
	require.NoError(t, err)
	var rows, payloads int
	require.NoError(t, f.admin.QueryRow(ctx, `SELECT (SELECT count(*) FROM durable_jobs.job_record WHERE job_record_id = $1),
		(SELECT count(*) FROM durable_jobs.job_payload_record WHERE job_record_id = $1)`, c.JobID).Scan(&rows, &payloads))
	require.Equal(t, []int{1, 1}, []int{rows, payloads}, "a job finished a moment ago keeps its row and payload")

	// Aged past the minimum, the same row purges as its bound says.
	_, err = f.admin.Exec(ctx, `UPDATE durable_jobs.job_record SET status_changed_at = clock_timestamp() - interval '61 minutes'
		WHERE job_record_id = $1`, c.JobID)
	require.NoError(t, err)
	_, err = f.admin.Exec(ctx, "SELECT * FROM durable_jobs.purge_expired_job_data(100)")
	require.NoError(t, err)
	require.NoError(t, f.admin.QueryRow(ctx, "SELECT count(*) FROM durable_jobs.job_record WHERE job_record_id = $1", c.JobID).Scan(&rows))
	require.Zero(t, rows, "past the 1-hour minimum the job is purged")
}

// personalForms are the forms of personal data and secrets the review got
// into append-only evidence on version 23.
var personalForms = []string{
	"customer ９００１０１-１２３４５６７ asked",                  // full-width resident registration number
	"customer 900101 1234567 asked",                  // a space inside it
	"customer 900101–1234567 asked",                  // an en dash
	"customer ٩٠٠١٠١-١٢٣٤٥٦٧ asked",                  // Arabic-Indic digits
	"call (010)1234-5678 first",                      // parentheses
	"call 010 - 1234 - 5678 first",                   // spaced separators
	"call ０１０-１２３４-５６７８ first",                       // full-width
	"refund card 4111.1111.1111.1111",                // dots
	"refund card 4111_1111_1111_1111",                // underscores
	"refund card ４１１１ １１１１ １１１１ １１１１",                // full-width
	"mail kim＠example.com",                           // full-width at sign
	"mail kim@example。com",                           // ideographic full stop
	"mail kim@example．com",                           // full-width full stop
	"the password is hunter2",                        // credential in words
	"login with pass=hunter2",                        // short key
	"set ｐａｓｓｗｏｒｄ＝hunter2",                           // full-width credential
	"customer 900101-1234567 asked",                  // the ASCII forms still
	"call 010-1234-5678 first",                       // ...
	"mail kim@example.com",                           // ...
	"customer 900101\u200b-1234567 asked",            // an invisible character inside
	"refund card 4111\u00ad1111\u00ad1111\u00ad1111", // soft hyphens
}

// invisibleCharacters are accepted in reasons on version 23.
var invisibleCharacters = []string{"\u200b", "\ufeff", "\u00ad", "\u2060", "\u3164", "\U000e0041", "\U000e007f", "\u180e", "\ufe0f"}

// harmlessReasons must still pass.
var harmlessReasons = []string{
	"INC-2024-0412: raise the lease to 30s while the warehouse is slow",
	"CHG-1236 approved by the change board on 2026-12-06",
	"rollback to 1.8.0 after the 10:00-11:00 KST window",
	"queue etl.load_v2 gets a 5 minute lease (ticket OPS-77)",
	"lease 00:05:00, renewal every 00:01:00, max 2 days",
	"pass the renewal interval down to 100 ms for the test",
	"bypass: none; the token bucket stays at 500 rps",
	"retention 30 days for audit, 365 days for records",
	"version 2026.12.06 build 4411 deployed to 3 regions",
	"retry 5 times, then fail (SEC-12, DB-7)",
	"고객 요청으로 보존 기간을 30일로 변경",
	"顧客の依頼で保存期間を30日に変更",
	"réduire la durée du bail à 30 secondes",
}

// Items 3 and 4: personal data in other forms, and invisible characters,
// reached append-only evidence through the reason filter. Each form is now
// refused with LF002 (nothing written), and ordinary reasons, including
// 500 generated ones, still pass.
func TestReasonFilterCatchesOtherFormsAndInvisibleCharacters(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := f.ctx
	const change = "SELECT durable_jobs.set_queue_lease_policy($1, '5 seconds', '1 second', '1 minute', true, $2)"
	var before int
	require.NoError(t, f.admin.QueryRow(ctx, "SELECT count(*) FROM durable_jobs.control_evidence_record").Scan(&before))
	for _, reason := range personalForms {
		_, err := f.admin.Exec(ctx, change, f.queue, reason)
		requireSQLState(t, err, "LF002", fmt.Sprintf("a reason holding personal data in another form is refused: %q", reason))
	}
	for _, c := range invisibleCharacters {
		reason := "raise the lease" + c + " for the slow warehouse"
		_, err := f.admin.Exec(ctx, change, f.queue, reason)
		requireSQLState(t, err, "LF002", fmt.Sprintf("a reason with the invisible character %U is refused", []rune(c)[0]))
	}
	var after int
	require.NoError(t, f.admin.QueryRow(ctx, "SELECT count(*) FROM durable_jobs.control_evidence_record").Scan(&after))
	require.Equal(t, before, after, "no refused reason was written")

	reasons := append([]string{}, harmlessReasons...)
	words := []string{"raise", "lower", "lease", "renewal", "queue", "retention", "for", "the", "slow", "warehouse",
		"after", "incident", "window", "deploy", "rollback", "batch", "nightly", "load", "export", "report"}
	rng := rand.New(rand.NewPCG(34, 2026))
	for i := 0; i < 500; i++ {
		var b strings.Builder
		fmt.Fprintf(&b, "%s-%d:", []string{"INC", "CHG", "OPS", "SEC"}[rng.IntN(4)], rng.IntN(100000))
		for w := 0; w < 3+rng.IntN(8); w++ {
			b.WriteString(" " + words[rng.IntN(len(words))])
			if rng.IntN(4) == 0 {
				fmt.Fprintf(&b, " %d%s", rng.IntN(10000), []string{"s", "m", "h", " days", "%", " ms"}[rng.IntN(6)])
			}
		}
		reasons = append(reasons, b.String())
	}
	for _, reason := range reasons {
		_, err := f.admin.Exec(ctx, change, f.queue, reason)
		require.NoError(t, err, "an ordinary reason is accepted: %q", reason)
	}
}

// Item 5: set_change_control checked the change record against the rules
// in force before it took the evidence-order lock, so a loosening without
// an approver that waited for an uncommitted tightening (approvals
// required) committed against the old rules. Two real sessions: the
// tightening holds the lock, the loosening waits, the tightening commits,
// and the loosening is refused against the rules it now meets; the same
// for a lease-policy change.
func TestChangeControlIsCheckedUnderTheLock(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := f.ctx
	tightener := session(t, ctx, f.db.LoginURL(t, "durable_job_operator"), nil)
	loosener := session(t, ctx, f.db.LoginURL(t, "durable_job_operator"), nil)
	policyChanger := session(t, ctx, f.db.LoginURL(t, "durable_job_operator"), nil)

	tx, err := tightener.Begin(ctx)
	require.NoError(t, err)
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // committed below
	_, err = tx.Exec(ctx, "SELECT durable_jobs.set_change_control('^[A-Z][A-Z0-9]+-[0-9]+$', true, true, 'approvals required', 'SEC-1')")
	require.NoError(t, err)

	loosened := make(chan error, 1)
	go func() {
		_, err := loosener.Exec(ctx, "SELECT durable_jobs.set_change_control('^[A-Z][A-Z0-9]+-[0-9]+$', false, true, 'no approvals', 'SEC-2')")
		loosened <- err
	}()
	f.waitBlockedBy(t, pid(loosener), pid(tightener))
	changed := make(chan error, 1)
	go func() {
		_, err := policyChanger.Exec(ctx, "SELECT durable_jobs.set_queue_lease_policy($1, '6 seconds', '1 second', '1 minute', true, 'SEC-3: no approver')", f.queue)
		changed <- err
	}()
	// It queues behind the loosener, which waits for the tightener.
	f.waitBlockedBy(t, pid(policyChanger), pid(loosener))
	require.NoError(t, tx.Commit(ctx))

	requireSQLState(t, <-loosened, "LF002", "the loosening is checked against the tightening it waited for: an approver is required")
	requireSQLState(t, <-changed, "LF002", "so is a lease-policy change that waited")
	var requireApprover bool
	require.NoError(t, f.admin.QueryRow(ctx, "SELECT require_approver FROM durable_jobs.change_control()").Scan(&requireApprover))
	require.True(t, requireApprover, "approvals stay required")
}

// Item 8: evidence depended on the writer's session settings: a policy
// change recorded under IntervalStyle postgres_verbose stored "@ 10 secs"
// where the default stores "00:00:10". The same changes of every evidence
// kind, made in two databases, one under the defaults and one under other
// IntervalStyle, DateStyle, TimeZone and extra_float_digits, record the
// same values byte for byte.
func TestEvidenceIsTheSameWhateverTheSessionSettings(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	record := func(settings map[string]string) []string {
		db := testdb.New(t)
		conn := session(t, ctx, db.URL, settings)
		for _, stmt := range []string{
			"SELECT durable_jobs.set_queue_lease_policy('t34.settings', '10 seconds', '2 seconds', '1 day', true, 'OPS-8: settings')",
			"SELECT durable_jobs.set_queue_lease_policy('t34.settings', '90 seconds', '1.5 seconds', '2 days', false, 'OPS-8: settings')",
			"UPDATE durable_jobs.queue_lease_policy SET lease_duration = '00:00:20' WHERE queue_name = 't34.settings'",
			"DELETE FROM durable_jobs.queue_lease_policy WHERE queue_name = 't34.settings'",
			"SELECT durable_jobs.set_queue_retention_policy('t34.settings', '1 day 2 hours', '30 days', 'OPS-8: settings')",
			"SELECT durable_jobs.set_change_control('^[A-Z]+-[0-9]+$', false, true, 'OPS-8: settings', 'OPS-8')",
			"SELECT durable_jobs.record_deployment('v1.2.3', 'sha256:" + strings.Repeat("ab", 32) + "', 'kim', 'OPS-8', 'OPS-8: settings')",
			"SELECT durable_jobs.enqueue_job('t34.settings', '{}')",
			"UPDATE durable_jobs.job_record SET job_status = 'CANCELLED', status_changed_at = clock_timestamp() - interval '400 days' WHERE queue_name = 't34.settings'",
			"SELECT durable_jobs.erase_job_payload((SELECT max(job_record_id) FROM durable_jobs.job_record), 'OPS-8: settings')",
			"SELECT * FROM durable_jobs.purge_expired_job_data(10)",
		} {
			_, err := conn.Exec(ctx, stmt)
			require.NoError(t, err, stmt)
		}
		rows, err := conn.Query(ctx, `SELECT evidence_kind || ' ' || COALESCE(queue_name, '-') || ' ' ||
			COALESCE(previous_values::text, '-') || ' ' || COALESCE(new_values::text, '-')
			FROM durable_jobs.control_evidence_record ORDER BY evidence_record_id`)
		require.NoError(t, err)
		out, err := pgx.CollectRows(rows, pgx.RowTo[string])
		require.NoError(t, err)
		return out
	}
	plain := record(nil)
	other := record(map[string]string{
		"IntervalStyle": "postgres_verbose", "DateStyle": "SQL, DMY", "TimeZone": "Asia/Seoul", "extra_float_digits": "-15",
	})
	kinds := map[string]bool{}
	for _, line := range plain {
		kinds[strings.Fields(line)[0]] = true
	}
	for _, k := range []string{"migration_applied", "lease_policy_changed", "renewal_enablement_changed", "retention_policy_changed",
		"change_control_changed", "deployment_recorded", "job_payload_erased", "job_data_purged"} {
		require.True(t, kinds[k], "the changes record a %s evidence record", k)
	}
	require.Equal(t, plain, other, "every evidence record holds the same values whatever the writer's session settings")
	require.Contains(t, strings.Join(plain, "\n"), `"lease_duration": "00:00:10"`, "durations are written as IntervalStyle postgres writes them")
}
