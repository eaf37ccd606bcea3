package sqlintegration

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/stretchr/testify/require"

	sqlbundle "github.com/mightyetl/leasefence/sql"
)

// Migration 004 (assigned number 005): counting, time and policy. Each race here
// runs in two real sessions: one holds a transaction open, the other acts,
// and what the second saw is checked.

// sessionInSameShard opens sessions on url until one's backend pid has the
// same residue modulo 16 as other's: the row a version-2 tally shared.
func (f *fixture) sessionInSameShard(t *testing.T, url string, other *pgx.Conn) *pgx.Conn {
	t.Helper()
	for i := 0; i < 400; i++ {
		conn := f.connect(t, url)
		if pid(conn)%16 == pid(other)%16 {
			return conn
		}
		require.NoError(t, conn.Close(f.ctx))
	}
	t.Fatalf("no session with backend pid %% 16 = %d in 400 tries", pid(other)%16)
	return nil
}

// randomToken is a claim token nobody was given.
func randomToken(t *testing.T) pgtype.UUID {
	t.Helper()
	var u pgtype.UUID
	require.NoError(t, u.Scan("7b0c2f61-5a8e-4f3e-9d55-3b1f9a0c6e21"))
	return u
}

// Item 1 (renewals): an attacker's stale renewal held in an open transaction
// made another worker's renew_job_leases of a live and a cancelled claim wait
// on the shared tally row until its live lease ran out. Now the worker's
// renewal and its stale tally complete at once.
func TestStaleRenewalNeverWaitsOnAnotherSessionsOpenTally(t *testing.T) {
	t.Parallel()
	f := setup(t)
	queue := f.queue + "_long"
	f.setPolicy(t, queue, 30*time.Second, 10*time.Second, time.Hour, true)
	live := enqueueOn(t, f.ctx, f.admin, queue, `{"part": "live"}`)
	cancelled := enqueueOn(t, f.ctx, f.admin, queue, `{"part": "cancelled"}`)
	worker := f.worker(t)
	c1 := mustClaim(t, f.ctx, worker, queue, "worker-b")
	c2 := mustClaim(t, f.ctx, worker, queue, "worker-b")
	require.ElementsMatch(t, []int64{live, cancelled}, []int64{c1.JobID, c2.JobID})
	var ok bool
	require.NoError(t, f.admin.QueryRow(f.ctx, "SELECT durable_jobs.cancel_job($1)", c2.JobID).Scan(&ok))
	require.True(t, ok)
	starBefore := f.outcomeTotal(t, "*", "stale_renewal")

	attacker := f.sessionInSameShard(t, f.workerURL(t), worker)
	tx, err := attacker.Begin(f.ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(context.Background()) }()
	mustRenew(t, f.ctx, tx, c2.JobID, randomToken(t), "worker-h", "stale", "the attacker's guess is stale")

	_, err = worker.Exec(f.ctx, "SET lock_timeout = '2s'")
	require.NoError(t, err)
	started := time.Now()
	rows, err := worker.Query(f.ctx, "SELECT job_record_id, renewal_outcome FROM durable_jobs.renew_job_leases($1, $2, $3)",
		"worker-b", []int64{c1.JobID, c2.JobID}, []pgtype.UUID{c1.Token, c2.Token})
	require.NoError(t, err)
	outcomes := map[int64]string{}
	for rows.Next() {
		var id int64
		var outcome string
		require.NoError(t, rows.Scan(&id, &outcome))
		outcomes[id] = outcome
	}
	require.NoError(t, rows.Err(), "the worker's renewal must not wait on the attacker's open tally (lock_timeout 2 s)")
	require.Less(t, time.Since(started), time.Second, "the renewal completed at once")
	require.Equal(t, map[int64]string{c1.JobID: "renewed", c2.JobID: "stale"}, outcomes)

	require.NoError(t, tx.Commit(f.ctx))
	require.Equal(t, int64(1), f.outcomeTotal(t, queue, "stale_renewal"),
		"the worker's own stale renewal counts under its queue, where it is a job's last claimer")
	require.Equal(t, starBefore+1, f.outcomeTotal(t, "*", "stale_renewal"),
		"the attacker's guess counts under '*', not under the victim's queue")
}

// Item 1 (reclaims): a reclaim held open in one session blocked another
// worker's reclaim in the same queue on the shared tally row.
func TestReclaimNeverWaitsOnAnotherSessionsOpenTally(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.enqueue(t, `{"part": 1}`)
	f.enqueue(t, `{"part": 2}`)
	first := f.worker(t)
	a := mustClaim(t, f.ctx, first, f.queue, "worker-a")
	b := mustClaim(t, f.ctx, first, f.queue, "worker-a")
	latest := a.ExpiresAt
	if b.ExpiresAt.After(latest) {
		latest = b.ExpiresAt
	}
	f.waitDatabaseTimePast(t, latest)

	claimer := f.worker(t)
	holder := f.sessionInSameShard(t, f.workerURL(t), claimer)
	tx, err := holder.Begin(f.ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(context.Background()) }()
	held := mustClaim(t, f.ctx, tx, f.queue, "worker-h")
	require.Equal(t, int32(2), held.Attempt, "the holder reclaimed an expired claim")

	_, err = claimer.Exec(f.ctx, "SET lock_timeout = '2s'")
	require.NoError(t, err)
	started := time.Now()
	c, found, err := claimNext(f.ctx, claimer, f.queue, "worker-c")
	require.NoError(t, err, "the reclaim must not wait on the holder's open tally (lock_timeout 2 s)")
	require.True(t, found)
	require.Less(t, time.Since(started), time.Second, "the reclaim completed at once")
	require.Equal(t, int32(2), c.Attempt, "the second worker reclaimed the other expired claim")
	require.NotEqual(t, held.JobID, c.JobID)

	require.NoError(t, tx.Commit(f.ctx))
	require.Equal(t, int64(2), f.outcomeTotal(t, f.queue, "reclaim"), "both reclaims are counted, each in its session's row")
}

// evidenceRow is one control_evidence_history row, the parts tests compare.
type evidenceRow struct {
	ID       int64
	Kind     string
	Queue    *string
	Previous map[string]any
	New      map[string]any
	At       time.Time
}

func (f *fixture) evidenceAfter(t *testing.T, afterID int64, queues ...string) []evidenceRow {
	t.Helper()
	rows, err := f.admin.Query(f.ctx, `SELECT evidence_record_id, evidence_kind, queue_name, previous_values, new_values, recorded_at
		FROM durable_jobs.control_evidence_history(NULL) WHERE evidence_record_id > $1 AND queue_name = ANY ($2)
		ORDER BY evidence_record_id`, afterID, queues)
	require.NoError(t, err)
	defer rows.Close()
	var out []evidenceRow
	for rows.Next() {
		var r evidenceRow
		var prev, next []byte
		require.NoError(t, rows.Scan(&r.ID, &r.Kind, &r.Queue, &prev, &next, &r.At))
		if prev != nil {
			require.NoError(t, json.Unmarshal(prev, &r.Previous))
		}
		require.NoError(t, json.Unmarshal(next, &r.New))
		out = append(out, r)
	}
	require.NoError(t, rows.Err())
	return out
}

func (f *fixture) maxEvidenceID(t *testing.T) int64 {
	t.Helper()
	var id int64
	require.NoError(t, f.admin.QueryRow(f.ctx, "SELECT max(evidence_record_id) FROM durable_jobs.control_evidence_history(NULL)").Scan(&id))
	return id
}

// Item 3: two operators change a queue that has no policy row yet. The
// second change's evidence must show the first change as its previous
// values, and its renewal off -> on switch must be recorded.
func TestConcurrentPolicyChangesOfANewQueueRecordExactEvidence(t *testing.T) {
	t.Parallel()
	f := setup(t)
	queue := f.queue + "_new"
	op1 := f.connect(t, f.db.LoginURL(t, "durable_job_operator"))
	op2 := f.connect(t, f.db.LoginURL(t, "durable_job_operator"))
	cursor := f.maxEvidenceID(t)

	tx, err := op1.Begin(f.ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(context.Background()) }()
	_, err = tx.Exec(f.ctx, "SELECT durable_jobs.set_queue_lease_policy($1, $2, $3, $4, false, 'first change')",
		queue, 20*time.Second, 5*time.Second, time.Hour)
	require.NoError(t, err)

	done := make(chan error, 1)
	go func() {
		_, err := op2.Exec(f.ctx, "SELECT durable_jobs.set_queue_lease_policy($1, $2, $3, $4, true, 'second change')",
			queue, 40*time.Second, 10*time.Second, 2*time.Hour)
		done <- err
	}()
	f.waitBlockedBy(t, pid(op2), pid(op1))
	require.NoError(t, tx.Commit(f.ctx))
	require.NoError(t, <-done)

	ev := f.evidenceAfter(t, cursor, queue)
	kinds := make([]string, len(ev))
	for i, r := range ev {
		kinds[i] = r.Kind
	}
	require.Equal(t, []string{"lease_policy_changed", "renewal_enablement_changed", "lease_policy_changed", "renewal_enablement_changed"},
		kinds, "each change has its policy record and, since each flips enablement, an enablement record")
	require.Equal(t, "*", ev[0].Previous["policy_queue_name"], "the first change replaced the default")
	require.Equal(t, ev[0].New, ev[2].Previous, "the second change's previous values are exactly the first change's new values")
	require.Equal(t, map[string]any{"renewal_enabled": false}, ev[3].Previous)
	require.Equal(t, map[string]any{"renewal_enabled": true}, ev[3].New)
}

// Item 4: a policy change held in an open transaction got a lower evidence
// id than a change committed meanwhile, so an export by id that read up to
// the later one skipped the held one forever. Now the second change waits,
// and an exporter that follows ids sees every record.
func TestEvidenceExportByIDNeverMissesAHeldChange(t *testing.T) {
	t.Parallel()
	f := setup(t)
	qa, qb := f.queue+"_a", f.queue+"_b"
	f.setPolicy(t, qa, time.Second, 300*time.Millisecond, time.Minute, true)
	f.setPolicy(t, qb, time.Second, 300*time.Millisecond, time.Minute, true)
	op1 := f.connect(t, f.db.LoginURL(t, "durable_job_operator"))
	op2 := f.connect(t, f.db.LoginURL(t, "durable_job_operator"))
	cursor := f.maxEvidenceID(t)
	exported := map[int64]evidenceRow{}
	export := func() {
		for _, r := range f.evidenceAfter(t, cursor, qa, qb) {
			exported[r.ID] = r
			cursor = r.ID
		}
	}

	tx, err := op1.Begin(f.ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(context.Background()) }()
	_, err = tx.Exec(f.ctx, "SELECT durable_jobs.set_queue_lease_policy($1, $2, $3, $4, true, 'held change')",
		qa, 2*time.Second, 500*time.Millisecond, time.Minute)
	require.NoError(t, err)

	done := make(chan error, 1)
	go func() {
		_, err := op2.Exec(f.ctx, "SELECT durable_jobs.set_queue_lease_policy($1, $2, $3, $4, true, 'quick change')",
			qb, 2*time.Second, 500*time.Millisecond, time.Minute)
		done <- err
	}()
	// Wait until the second change either waits on the first or is done.
	deadline := time.Now().Add(3 * time.Second)
	for {
		var waiting bool
		require.NoError(t, f.admin.QueryRow(f.ctx, "SELECT $2::int = ANY (pg_blocking_pids($1::int))",
			int64(pid(op2)), int64(pid(op1))).Scan(&waiting))
		if waiting || len(done) > 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	export() // while the first change is held
	require.NoError(t, tx.Commit(f.ctx))
	require.NoError(t, <-done)
	export()

	require.Len(t, exported, 2, "an export that follows evidence ids saw both changes, the held one included")
	var prev evidenceRow
	for _, r := range f.evidenceAfter(t, 0, qa, qb) {
		require.False(t, r.At.Before(prev.At), "recorded_at follows id order")
		prev = r
	}
}

// Item 2: with a policy in day units, a worker's exotic POSIX TimeZone
// changed what '1 day' meant for its lease and its retry delay. Durations
// are now stored and added as absolute seconds.
func TestDayUnitsAreExactUnderAnExoticTimeZone(t *testing.T) {
	t.Parallel()
	f := setup(t)
	queue := f.queue + "_days"
	_, err := f.admin.Exec(f.ctx, `SELECT durable_jobs.set_queue_lease_policy($1, interval '1 day', interval '1 hour',
		interval '2 days', true, 'integration test policy in day units')`, queue)
	require.NoError(t, err)
	jobID := enqueueOn(t, f.ctx, f.admin, queue, `{"part": "days"}`)

	// Daylight saving of +1 h starts two hours from now (local standard time
	// is UTC), so a calendar day added in this zone from now lasts 23 h.
	var doy, hour int
	require.NoError(t, f.admin.QueryRow(f.ctx,
		"SELECT extract(doy FROM clock_timestamp() AT TIME ZONE 'UTC')::int - 1, extract(hour FROM clock_timestamp() AT TIME ZONE 'UTC')::int").
		Scan(&doy, &hour))
	start, at := doy, hour+2 // zero-based day of the year and hour of the switch
	if at > 23 {
		start, at = (doy+1)%365, at-24
	}
	zone := fmt.Sprintf("AAA0BBB-1,%d/%d,%d/0", start, at, (start+3)%365)
	w := f.worker(t)
	_, err = w.Exec(f.ctx, "SELECT set_config('TimeZone', $1, false)", zone)
	require.NoError(t, err)
	var shift time.Duration
	require.NoError(t, w.QueryRow(f.ctx,
		"SELECT (clock_timestamp() + interval '1 day') - clock_timestamp()").Scan(&shift))
	require.Less(t, shift, 23*time.Hour, "the zone really makes a calendar day shorter than 24 h (got %v)", shift)

	c := mustClaim(t, f.ctx, w, queue, "worker-tz")
	require.Equal(t, jobID, c.JobID)
	require.Equal(t, 24*time.Hour, c.ExpiresAt.Sub(c.DatabaseTime), "the claim's lease is exactly 24 h")
	r := mustRenew(t, f.ctx, w, c.JobID, c.Token, "worker-tz", "renewed", "the claim renews")
	require.InDelta(t, float64(24*time.Hour), float64(r.ExpiresAt.Sub(r.DatabaseTime)), float64(time.Second),
		"the renewal grants 24 h (from its own clock reading, just before database_time)")

	status, err := w.Exec(f.ctx, `SELECT durable_jobs.retry_job($1, $2, $3, interval '1 day', 'target_unavailable')`,
		c.JobID, c.Token, "worker-tz")
	require.NoError(t, err, status)
	var delay time.Duration
	require.NoError(t, f.admin.QueryRow(f.ctx,
		"SELECT run_after - status_changed_at FROM durable_jobs.job_record WHERE job_record_id = $1", c.JobID).Scan(&delay))
	require.InDelta(t, float64(24*time.Hour), float64(delay), float64(time.Second), "a 1 day retry delay is 24 h")
}

// Item 5: another login's renewal of a job with a guessed token raised the
// victim queue's stale tally. The auditor functions now count it under '*'
// (the guessing login is no job's last claimer in that queue); the claiming
// login's own stale renewal still counts under the queue.
func TestAnotherLoginsGuessIsNotChargedToTheVictimsQueue(t *testing.T) {
	t.Parallel()
	f := setup(t)
	queue := f.queue + "_victim"
	f.setPolicy(t, queue, 30*time.Second, 10*time.Second, time.Hour, true)
	enqueueOn(t, f.ctx, f.admin, queue, `{"team": "victim"}`)
	victim := f.worker(t)
	c := mustClaim(t, f.ctx, victim, queue, "worker-v")
	attacker := f.worker(t)
	starBefore := f.outcomeTotal(t, "*", "stale_renewal")

	for i := 0; i < 5; i++ {
		mustRenew(t, f.ctx, attacker, c.JobID, randomToken(t), "worker-v", "stale", "a guessed token is stale")
	}
	require.Equal(t, int64(0), f.outcomeTotal(t, queue, "stale_renewal"), "the guesses are not charged to the victim's queue")
	require.Equal(t, starBefore+5, f.outcomeTotal(t, "*", "stale_renewal"), "the guesses are counted under '*'")

	mustRenew(t, f.ctx, victim, c.JobID, randomToken(t), "worker-v", "stale", "the victim's own wrong token is stale")
	require.Equal(t, int64(1), f.outcomeTotal(t, queue, "stale_renewal"),
		"a stale renewal by a login that is the last claimer of a job in the queue counts under the queue")
}

// Migration 003 up keeps every tally count and stores policy intervals as
// absolute durations; down puts each tally row back in its version-2 slot
// and shard.
func TestMigrationKeepsTalliesAndNormalisesPolicies(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	_, conn := emptyDatabase(t, ctx)
	m := migrator(t, ctx, conn)
	newest := int32(4) // the counting migration (004), whatever comes after it
	require.GreaterOrEqual(t, sqlbundle.NewestVersion(), newest)
	require.NoError(t, m.MigrateTo(ctx, newest-1))
	_, err := conn.Exec(ctx, `
		INSERT INTO durable_jobs.lease_outcome_tally (tally_slot, tally_minute, queue_name, outcome_kind, tally_shard, outcome_count)
		SELECT (floor(extract(epoch FROM m) / 60)::bigint % 43200)::int, m, q, k, s, c
		FROM (SELECT date_trunc('minute', clock_timestamp(), 'UTC') - interval '5 minutes' AS m) mm,
		     (VALUES ('mig_a', 'stale_renewal', 3::smallint, 4::bigint), ('mig_a', 'stale_renewal', 7, 6),
		             ('mig_a', 'reclaim', 3, 2), ('*', 'stale_renewal', 15, 9)) AS v(q, k, s, c);
		INSERT INTO durable_jobs.queue_lease_policy (queue_name, lease_duration, renewal_interval, max_claim_lifetime, renewal_enabled)
		VALUES ('mig_days', interval '1 day', interval '1 hour', interval '2 days', true)`)
	require.NoError(t, err)
	const v2Rows = `SELECT string_agg(format('%s/%s/%s/%s/%s/%s', tally_slot, tally_minute, queue_name, outcome_kind, tally_shard, outcome_count),
		' ' ORDER BY queue_name, outcome_kind, tally_shard) FROM durable_jobs.lease_outcome_tally`
	var before string
	require.NoError(t, conn.QueryRow(ctx, v2Rows).Scan(&before))

	require.NoError(t, m.MigrateTo(ctx, newest))
	var totals string
	require.NoError(t, conn.QueryRow(ctx, `SELECT string_agg(format('%s/%s/%s', queue_name, outcome_kind, outcome_count), ' '
		ORDER BY queue_name, outcome_kind) FROM durable_jobs.lease_outcome_totals(NULL)`).Scan(&totals))
	require.Equal(t, "*/stale_renewal/9 mig_a/reclaim/2 mig_a/stale_renewal/10", totals, "every count survives the upgrade")
	var lease, renewal, maxLife string
	require.NoError(t, conn.QueryRow(ctx, `SELECT lease_duration::text, renewal_interval::text, max_claim_lifetime::text
		FROM durable_jobs.queue_lease_policy WHERE queue_name = 'mig_days'`).Scan(&lease, &renewal, &maxLife))
	require.Equal(t, []string{"24:00:00", "01:00:00", "48:00:00"}, []string{lease, renewal, maxLife})

	require.NoError(t, m.MigrateTo(ctx, newest-1))
	var after string
	require.NoError(t, conn.QueryRow(ctx, v2Rows).Scan(&after))
	require.Equal(t, before, after, "down puts every tally row back in its slot and shard")
}

// Terminal writes are not refused in REPEATABLE READ: the fence is checked
// with SELECT ... FOR UPDATE on the current row, and a row changed after the
// caller's snapshot raises 40001 instead of being acted on.
func TestTerminalWriteInRepeatableReadNeverActsOnAnOldSnapshot(t *testing.T) {
	t.Parallel()
	f := setup(t)
	queue := f.queue + "_rr"
	f.setPolicy(t, queue, 30*time.Second, 10*time.Second, time.Hour, true)
	enqueueOn(t, f.ctx, f.admin, queue, `{"part": "rr"}`)
	w := f.worker(t)
	c := mustClaim(t, f.ctx, w, queue, "worker-rr")
	tx, err := w.BeginTx(f.ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead})
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(context.Background()) }()
	_, err = tx.Exec(f.ctx, "SELECT 1") // the transaction's snapshot is taken here, the job still running
	require.NoError(t, err)

	var ok bool
	require.NoError(t, f.admin.QueryRow(f.ctx, "SELECT durable_jobs.cancel_job($1)", c.JobID).Scan(&ok))
	require.True(t, ok)
	requireSQLState(t, complete(f.ctx, tx, c, "worker-rr"), "40001",
		"the completion in the old snapshot is refused as a serialization failure")
	require.NoError(t, tx.Rollback(f.ctx))
	require.Equal(t, "CANCELLED", f.state(t, c.JobID).Status)
}
