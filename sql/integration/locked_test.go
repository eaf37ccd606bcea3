package sqlintegration

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/stretchr/testify/require"
)

// Races of renew_job_leases with a row another session holds locked, with
// the worker's own completions, and of claims and renewals with a policy
// change seen through an old snapshot. Each is two real sessions: lock (or
// take a snapshot) in one, act in the other, then check what the second saw.

// batchRow is one row of renew_job_leases.
type batchRow struct {
	JobID     int64
	Outcome   string
	ExpiresAt *time.Time
}

// renewBatch calls renew_job_leases for claims, in the order given.
func renewBatch(ctx context.Context, q querier, owner string, claims ...claim) ([]batchRow, error) {
	ids := make([]int64, len(claims))
	tokens := make([]pgtype.UUID, len(claims))
	for i, c := range claims {
		ids[i], tokens[i] = c.JobID, c.Token
	}
	rows, err := q.Query(ctx, "SELECT job_record_id, renewal_outcome, lease_expires_at FROM durable_jobs.renew_job_leases($1, $2, $3)",
		owner, ids, tokens)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (batchRow, error) {
		var r batchRow
		err := row.Scan(&r.JobID, &r.Outcome, &r.ExpiresAt)
		return r, err
	})
}

// claimThree claims three jobs of the test queue for owner on q.
func (f *fixture) claimThree(t *testing.T, q querier, owner string) (claim, claim, claim) {
	t.Helper()
	for range 3 {
		f.enqueue(t, `{"step": "load"}`)
	}
	return mustClaim(t, f.ctx, q, f.queue, owner), mustClaim(t, f.ctx, q, f.queue, owner), mustClaim(t, f.ctx, q, f.queue, owner)
}

// A producer's open cancel_job holds job 10's row; the worker's batch of
// {10, 11, 12} answers at once: 10 locked (nothing changed), 11 and 12
// renewed. Renewed alone afterwards, 10 waits for the lock and is then
// decided on what the producer committed. On 1cc8d2a the batch waited on
// row 10 until its statement timeout and renewed nothing.
func TestBatchRenewalSkipsARowACancelHoldsAndRenewsTheRest(t *testing.T) {
	t.Parallel()
	f := setup(t)
	worker := f.worker(t)
	producer := f.producer(t)
	_, err := worker.Exec(f.ctx, "SET statement_timeout = '3s'")
	require.NoError(t, err)
	j10, j11, j12 := f.claimThree(t, worker, "w1-owner")

	tx, err := producer.Begin(f.ctx)
	require.NoError(t, err)
	var cancelled bool
	require.NoError(t, tx.QueryRow(f.ctx, "SELECT durable_jobs.cancel_job($1)", j10.JobID).Scan(&cancelled))
	require.True(t, cancelled)
	before10 := f.state(t, j10.JobID)

	started := time.Now()
	got, err := renewBatch(f.ctx, worker, "w1-owner", j10, j11, j12)
	took := time.Since(started)
	require.NoError(t, err, "the batch must not wait on the cancelled row until its statement timeout")
	require.Less(t, took, time.Second, "the batch answers promptly, without waiting on the locked row")
	require.Len(t, got, 3)
	require.Equal(t, batchRow{JobID: j10.JobID, Outcome: "locked"}, got[0], "the locked row's claim is locked, no expiry")
	for i, c := range []claim{j11, j12} {
		require.Equal(t, c.JobID, got[i+1].JobID, "input order")
		require.Equal(t, "renewed", got[i+1].Outcome, "a healthy claim in the same batch is renewed")
		require.NotNil(t, got[i+1].ExpiresAt)
		require.Equal(t, int64(1), f.state(t, c.JobID).RenewalCount)
	}
	after10 := f.state(t, j10.JobID)
	require.Equal(t, before10, after10, "locked changes nothing on the locked job")
	require.Zero(t, f.outcomeTotal(t, f.queue, "stale_renewal"), "locked is not a stale renewal")

	// Alone, renew_job_lease waits for the cancel; once it commits, stale.
	done := make(chan error, 1)
	var alone renewal
	go func() {
		var err error
		alone, err = renew(f.ctx, worker, j10.JobID, j10.Token, "w1-owner")
		done <- err
	}()
	f.waitBlockedBy(t, pid(worker), pid(producer))
	require.NoError(t, tx.Commit(f.ctx))
	require.NoError(t, <-done)
	require.Equal(t, "stale", alone.Outcome, "after the cancel commits, the claim renewed alone is stale")
	require.Equal(t, "CANCELLED", f.state(t, j10.JobID).Status)
}

// The worker's own transaction has complete_job of job 10 open while its
// heartbeat (another session of the same login role) renews the batch: 10
// is locked and the rest renewed; when the completion rolls back, 10
// renewed alone is renewed.
func TestBatchRenewalSkipsTheWorkersOwnOpenCompletion(t *testing.T) {
	t.Parallel()
	f := setup(t)
	url := f.workerURL(t)
	handler := f.connect(t, url)
	heartbeat := f.connect(t, url)
	_, err := heartbeat.Exec(f.ctx, "SET statement_timeout = '3s'")
	require.NoError(t, err)
	j10, j11, j12 := f.claimThree(t, handler, "w1-owner")

	tx, err := handler.Begin(f.ctx)
	require.NoError(t, err)
	require.NoError(t, complete(f.ctx, tx, j10, "w1-owner"))

	started := time.Now()
	got, err := renewBatch(f.ctx, heartbeat, "w1-owner", j12, j10, j11)
	require.NoError(t, err)
	require.Less(t, time.Since(started), time.Second, "the batch answers promptly")
	require.Equal(t, []string{"renewed", "locked", "renewed"}, []string{got[0].Outcome, got[1].Outcome, got[2].Outcome})
	require.Nil(t, got[1].ExpiresAt)

	require.NoError(t, tx.Rollback(f.ctx))
	mustRenew(t, f.ctx, heartbeat, j10.JobID, j10.Token, "w1-owner", "renewed",
		"the completion rolled back: the claim renewed alone is still the worker's")
}

// A stale batch, a foreign owner's or with a guessed token, takes no lock
// on the rows it names and answers stale, locked row or not: its open
// transaction holds back nobody's completion, and locked says nothing a
// wrong token could learn from.
func TestStaleBatchTakesNoLockAndIsStaleEvenOnALockedRow(t *testing.T) {
	t.Parallel()
	f := setup(t)
	url := f.workerURL(t)
	owner := f.connect(t, url)
	intruder := f.connect(t, url) // the same login role: only the owner id or the token is wrong
	j10, j11, _ := f.claimThree(t, owner, "w1-owner")
	guessed := claim{JobID: j10.JobID, Token: pgtype.UUID{Bytes: [16]byte{0x42, 15: 0x42}, Valid: true}}

	// The intruder's open transaction renews the owner's claims with its own
	// owner id, and with the right owner id and a guessed token.
	itx, err := intruder.Begin(f.ctx)
	require.NoError(t, err)
	got, err := renewBatch(f.ctx, itx, "intruder", j10, j11)
	require.NoError(t, err)
	require.Equal(t, "stale", got[0].Outcome)
	require.Equal(t, "stale", got[1].Outcome)
	got, err = renewBatch(f.ctx, itx, "w1-owner", guessed)
	require.NoError(t, err)
	require.Equal(t, "stale", got[0].Outcome)
	// ... so the owner completes both at once, its statement_timeout of 10 s
	// never reached.
	otx, err := owner.Begin(f.ctx)
	require.NoError(t, err)
	_, err = otx.Exec(f.ctx, "SET LOCAL lock_timeout = '500ms'")
	require.NoError(t, err)
	require.NoError(t, complete(f.ctx, otx, j10, "w1-owner"), "a stale batch held no lock on job 10")
	// With job 10's row now locked by the owner, a guessed token is still
	// stale, not locked.
	got, err = renewBatch(f.ctx, itx, "w1-owner", guessed)
	require.NoError(t, err)
	require.Equal(t, "stale", got[0].Outcome, "a wrong token on a locked row is stale, not locked")
	require.NoError(t, complete(f.ctx, otx, j11, "w1-owner"), "a stale batch held no lock on job 11")
	require.NoError(t, otx.Commit(f.ctx))
	require.NoError(t, itx.Rollback(f.ctx))
}

// The worker's transaction completes job 12, then job 11, while its
// heartbeat renews {11, 12}. On 1cc8d2a the batch locked 11 and waited on
// 12 while the completion waited on 11: deadlock, 40P01 in one of them.
// Now the batch never waits, so neither side sees 40P01.
func TestCompletionsInAnyOrderNeverDeadlockWithBatchRenewal(t *testing.T) {
	t.Parallel()
	f := setup(t)
	url := f.workerURL(t)
	handler := f.connect(t, url)
	heartbeat := f.connect(t, url)
	f.setPolicy(t, f.queue, 30*time.Second, time.Second, time.Minute, true) // outlives the wait below
	for range 2 {
		f.enqueue(t, `{"step": "load"}`)
	}
	j11 := mustClaim(t, f.ctx, handler, f.queue, "w1-owner")
	j12 := mustClaim(t, f.ctx, handler, f.queue, "w1-owner")
	require.Less(t, j11.JobID, j12.JobID)

	tx, err := handler.Begin(f.ctx)
	require.NoError(t, err)
	require.NoError(t, complete(f.ctx, tx, j12, "w1-owner"), "complete 12 first")

	// The heartbeat's own short transaction, as goclient makes it.
	type answer struct {
		rows []batchRow
		err  error
	}
	hb := make(chan answer, 1)
	go func() {
		var a answer
		a.err = pgx.BeginFunc(f.ctx, heartbeat, func(htx pgx.Tx) error {
			var err error
			a.rows, err = renewBatch(f.ctx, htx, "w1-owner", j11, j12)
			return err
		})
		hb <- a
	}()
	// Give the heartbeat time to lock 11 and, on the old code, wait on 12.
	var a answer
	select {
	case a = <-hb:
	case <-time.After(2 * time.Second):
	}
	completeErr := complete(f.ctx, tx, j11, "w1-owner")
	commitErr := tx.Commit(f.ctx)
	if a.rows == nil && a.err == nil {
		a = <-hb
	}
	for _, err := range []error{a.err, completeErr, commitErr} {
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) {
			require.NotEqual(t, "40P01", pgErr.Code, "deadlock between the completions and the batch renewal")
		}
	}
	require.NoError(t, a.err)
	require.NoError(t, completeErr)
	require.NoError(t, commitErr)
	require.Equal(t, "renewed", a.rows[0].Outcome, "11 was free when the batch ran")
	require.Equal(t, "locked", a.rows[1].Outcome, "12 was held by the open completion")
	require.Equal(t, "SUCCEEDED", f.state(t, j11.JobID).Status)
	require.Equal(t, "SUCCEEDED", f.state(t, j12.JobID).Status)
}

// A REPEATABLE READ transaction whose snapshot predates an operator's
// switching renewal off: on 1cc8d2a renew_job_lease answered renewed from
// the old policy. Now it is refused with LF003 and changes nothing; in READ
// COMMITTED the same renewal sees the new policy.
func TestOldSnapshotCannotRenewPastAPolicyChange(t *testing.T) {
	t.Parallel()
	f := setup(t)
	worker := f.worker(t)
	f.enqueue(t, `{"step": "load"}`)
	c := mustClaim(t, f.ctx, worker, f.queue, "w1-owner")

	for _, level := range []pgx.TxIsoLevel{pgx.RepeatableRead, pgx.Serializable} {
		f.setPolicy(t, f.queue, testLeaseDuration, testRenewalInterval, testMaxClaimLife, true)
		tx, err := worker.BeginTx(f.ctx, pgx.TxOptions{IsoLevel: level})
		require.NoError(t, err)
		var one int
		require.NoError(t, tx.QueryRow(f.ctx, "SELECT 1").Scan(&one), "take the snapshot")
		f.setPolicy(t, f.queue, testLeaseDuration, testRenewalInterval, testMaxClaimLife, false)
		before := f.state(t, c.JobID)
		_, err = renew(f.ctx, tx, c.JobID, c.Token, "w1-owner")
		requireSQLState(t, err, "LF003", string(level)+": a renewal through an old snapshot is refused")
		require.NoError(t, tx.Rollback(f.ctx))
		tx, err = worker.BeginTx(f.ctx, pgx.TxOptions{IsoLevel: level})
		require.NoError(t, err)
		_, err = renewBatch(f.ctx, tx, "w1-owner", c)
		requireSQLState(t, err, "LF003", string(level)+": a batch renewal through an old snapshot is refused")
		require.NoError(t, tx.Rollback(f.ctx))
		require.Equal(t, before, f.state(t, c.JobID), "the refusal changed nothing")
	}
	mustRenew(t, f.ctx, worker, c.JobID, c.Token, "w1-owner", "renewal_disabled",
		"in READ COMMITTED the renewal sees the policy as it is now")
}

// A claim in a REPEATABLE READ transaction whose snapshot predates a
// tightening of the policy to a 5 s lease and 10 s lifetime: on 1cc8d2a it
// got the old 1 hour lease and 7 day deadline. Now LF003, nothing claimed;
// in READ COMMITTED the claim gets the new 5 s lease.
func TestOldSnapshotCannotClaimPastAPolicyChange(t *testing.T) {
	t.Parallel()
	f := setup(t)
	worker := f.worker(t)
	f.setPolicy(t, f.queue, time.Hour, time.Minute, 7*24*time.Hour, true)
	id := f.enqueue(t, `{"step": "load"}`)

	for _, level := range []pgx.TxIsoLevel{pgx.RepeatableRead, pgx.Serializable} {
		tx, err := worker.BeginTx(f.ctx, pgx.TxOptions{IsoLevel: level})
		require.NoError(t, err)
		var one int
		require.NoError(t, tx.QueryRow(f.ctx, "SELECT 1").Scan(&one), "take the snapshot")
		f.setPolicy(t, f.queue, 5*time.Second, time.Second, 10*time.Second, true)
		_, _, err = claimNext(f.ctx, tx, f.queue, "w1-owner")
		requireSQLState(t, err, "LF003", string(level)+": a claim through an old snapshot is refused")
		require.NoError(t, tx.Rollback(f.ctx))
		require.Equal(t, "QUEUED", f.state(t, id).Status, "nothing was claimed")
		f.setPolicy(t, f.queue, time.Hour, time.Minute, 7*24*time.Hour, true)
	}
	f.setPolicy(t, f.queue, 5*time.Second, time.Second, 10*time.Second, true)
	c := mustClaim(t, f.ctx, worker, f.queue, "w1-owner")
	require.Equal(t, 5*time.Second, c.ExpiresAt.Sub(c.DatabaseTime), "READ COMMITTED claims with the policy in force")
	var lifetime time.Duration
	require.NoError(t, f.admin.QueryRow(f.ctx,
		"SELECT lease_claim_deadline - lease_claimed_at FROM durable_jobs.job_record WHERE job_record_id = $1", id).Scan(&lifetime))
	require.Equal(t, 10*time.Second, lifetime)
}
