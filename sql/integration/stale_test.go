package sqlintegration

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// Once the database's clock passes the expiry, the token
// can neither renew nor retry, fail or complete, even though nobody has
// reclaimed the job yet.
func TestExpiredTokenCannotRenewRetryFailOrComplete(t *testing.T) {
	t.Parallel()
	f := setup(t)
	jobID := f.enqueue(t, `{"extract": "payments"}`)
	w := f.worker(t)
	c := mustClaim(t, f.ctx, w, f.queue, "worker-a")
	mustRenew(t, f.ctx, w, jobID, c.Token, "worker-a", "renewed", "the claim renews while it is live")
	expiry := f.state(t, jobID).ExpiresAt
	require.NotNil(t, expiry)

	f.waitDatabaseTimePast(t, *expiry)

	mustRenew(t, f.ctx, w, jobID, c.Token, "worker-a", "stale", "an expired claim cannot renew")
	requireAllTerminalWritesStale(t, f.ctx, w, c, "worker-a", "an expired claim cannot write a terminal state")
	released, err := release(f.ctx, w, c, "worker-a")
	require.NoError(t, err)
	require.False(t, released, "an expired claim cannot be released")
	mustRenew(t, f.ctx, w, jobID, c.Token, "worker-a", "stale", "a second renewal of the expired claim is stale too")

	s := f.state(t, jobID)
	require.Equal(t, "RUNNING", s.Status, "an expired claim nobody reclaimed still shows RUNNING")
	require.NotNil(t, s.ExpiresAt)
	require.True(t, expiry.Equal(*s.ExpiresAt), "no stale call moved the expiry")
	require.Equal(t, int64(1), s.RenewalCount, "only the live renewal was counted")
	require.Equal(t, int32(1), s.Attempt)
	require.GreaterOrEqual(t, f.outcomeTotal(t, f.queue, "stale_renewal"), int64(2), "stale renewals are tallied")
}

// transition is a write that ends a running claim: a producer's cancel or
// one of the worker's fenced terminal writes.
type transition struct {
	name string
	// status is what the job must keep afterwards.
	status string
	// byProducer runs act from a producer session; otherwise from a second
	// session of the claiming worker's login role.
	byProducer bool
	// act runs inside session A's open transaction.
	act func(ctx context.Context, tx pgx.Tx, c claim) error
	// maxAttempts of the job (retry with attempts used up ends in FAILED).
	maxAttempts int
}

var (
	cancelTransition = transition{name: "cancel", status: "CANCELLED", byProducer: true,
		act: func(ctx context.Context, tx pgx.Tx, c claim) error {
			var cancelled bool
			if err := tx.QueryRow(ctx, "SELECT durable_jobs.cancel_job($1)", c.JobID).Scan(&cancelled); err != nil {
				return err
			}
			if !cancelled {
				return errNotCancelled
			}
			return nil
		}}
	completeTransition = transition{name: "complete", status: "SUCCEEDED",
		act: func(ctx context.Context, tx pgx.Tx, c claim) error {
			if err := writeTarget(ctx, tx, c.JobID, "row loaded by the claimant"); err != nil {
				return err
			}
			return complete(ctx, tx, c, "worker-a")
		}}
	retryTransition = transition{name: "retry", status: "RETRY_SCHEDULED",
		act: func(ctx context.Context, tx pgx.Tx, c claim) error {
			return expectStatus(retry(ctx, tx, c, "worker-a", time.Hour))("RETRY_SCHEDULED")
		}}
	retryExhaustedTransition = transition{name: "retry with attempts used up", status: "FAILED", maxAttempts: 1,
		act: func(ctx context.Context, tx pgx.Tx, c claim) error {
			return expectStatus(retry(ctx, tx, c, "worker-a", time.Hour))("FAILED")
		}}
	failTransition = transition{name: "fail", status: "FAILED",
		act: func(ctx context.Context, tx pgx.Tx, c claim) error { return fail(ctx, tx, c, "worker-a") }}
)

type sentinel string

func (s sentinel) Error() string { return string(s) }

const errNotCancelled = sentinel("cancel_job returned false for a running job")

func expectStatus(got string, err error) func(want string) error {
	return func(want string) error {
		if err != nil {
			return err
		}
		if got != want {
			return sentinel("retry_job returned " + got + ", want " + want)
		}
		return nil
	}
}

// raceFixture is a claimed job, the heartbeat session of its worker and the
// session that will end the claim.
type raceFixture struct {
	*fixture
	claim     claim
	heartbeat *pgx.Conn
	ender     *pgx.Conn
}

func setupTransition(t *testing.T, tr transition) *raceFixture {
	t.Helper()
	f := setup(t)
	ownerURL := f.workerURL(t)
	f.createTargetTable(t, loginRole(t, ownerURL))
	maxAttempts := tr.maxAttempts
	if maxAttempts == 0 {
		maxAttempts = 5
	}
	var jobID int64
	require.NoError(t, f.admin.QueryRow(f.ctx, "SELECT durable_jobs.enqueue_job($1, $2::jsonb, NULL, NULL, $3)",
		f.queue, `{"extract": "ledger"}`, maxAttempts).Scan(&jobID))
	rf := &raceFixture{fixture: f, heartbeat: f.connect(t, ownerURL)}
	if tr.byProducer {
		rf.ender = f.producer(t)
	} else {
		rf.ender = f.connect(t, ownerURL)
	}
	rf.claim = mustClaim(t, f.ctx, rf.heartbeat, f.queue, "worker-a")
	require.Equal(t, jobID, rf.claim.JobID)
	return rf
}

// requireEndedAndPreserved checks that after the transition nothing the old
// claim does brings the job back to RUNNING or extends it.
func (rf *raceFixture) requireEndedAndPreserved(t *testing.T, tr transition) {
	t.Helper()
	c := rf.claim
	mustRenew(t, rf.ctx, rf.heartbeat, c.JobID, c.Token, "worker-a", "stale", "a renewal after "+tr.name+" stays stale")
	requireAllTerminalWritesStale(t, rf.ctx, rf.heartbeat, c, "worker-a", "no terminal write after "+tr.name)
	released, err := release(rf.ctx, rf.heartbeat, c, "worker-a")
	require.NoError(t, err)
	require.False(t, released, "an ended claim cannot be released back to the queue")
	s := rf.state(t, c.JobID)
	require.Equal(t, tr.status, s.Status, "%s is preserved", tr.status)
	require.True(t, s.ExpiresAt == nil || !s.ExpiresAt.After(c.ExpiresAt), "nothing extended the ended claim's expiry")
	require.Equal(t, int64(0), s.RenewalCount, "no renewal was counted after the claim ended")
	require.Equal(t, int64(1), s.Generation, "nothing created a new claim")
	if tr.name == "complete" {
		require.Equal(t, 1, rf.targetRows(t, c.JobID), "the claimant's target write committed with its success")
	}
	requireNothingClaimable(t, rf.ctx, rf.heartbeat, rf.queue, "worker-a",
		"a job that ended by "+tr.name+" is not claimable (retry waits an hour)")
}

// transitionCommittedFirst: the transition commits, then the heartbeat's
// renewal runs and is stale.
func transitionCommittedFirst(t *testing.T, tr transition) {
	t.Parallel()
	rf := setupTransition(t, tr)
	tx, err := rf.ender.Begin(rf.ctx)
	require.NoError(t, err)
	require.NoError(t, tr.act(rf.ctx, tx, rf.claim), tr.name)
	require.NoError(t, tx.Commit(rf.ctx))

	mustRenew(t, rf.ctx, rf.heartbeat, rf.claim.JobID, rf.claim.Token, "worker-a", "stale",
		"a renewal after a committed "+tr.name+" is stale")
	rf.requireEndedAndPreserved(t, tr)
}

// renewalWaitsOnTransition: session A holds the row lock in its open
// transition; session B's renewal waits for it; A commits; B sees stale.
func renewalWaitsOnTransition(t *testing.T, tr transition) {
	t.Parallel()
	rf := setupTransition(t, tr)
	tx, err := rf.ender.Begin(rf.ctx)
	require.NoError(t, err)
	require.NoError(t, tr.act(rf.ctx, tx, rf.claim), tr.name)

	result := make(chan renewal, 1)
	errs := make(chan error, 1)
	go func() {
		r, err := renew(rf.ctx, rf.heartbeat, rf.claim.JobID, rf.claim.Token, "worker-a")
		result <- r
		errs <- err
	}()
	rf.waitBlockedBy(t, pid(rf.heartbeat), pid(rf.ender))
	require.NoError(t, tx.Commit(rf.ctx), "the "+tr.name+" commits while the renewal waits")
	require.NoError(t, <-errs, "the waiting renewal returns")
	r := <-result
	require.Equal(t, "stale", r.Outcome, "the renewal that waited on a committed "+tr.name+" is stale")
	require.Nil(t, r.ExpiresAt)
	rf.requireEndedAndPreserved(t, tr)
}

// Cancellation before renewal makes the renewal stale
// and keeps CANCELLED, also when the renewal waits on the cancel's lock.
func TestCancelBeforeRenewalMakesRenewalStaleAndKeepsCancelled(t *testing.T) {
	t.Parallel()
	t.Run("cancel committed first", func(t *testing.T) { transitionCommittedFirst(t, cancelTransition) })
	t.Run("renewal waits on the open cancel", func(t *testing.T) { renewalWaitsOnTransition(t, cancelTransition) })
}

// Success before renewal makes the renewal stale and
// keeps SUCCEEDED, also when the renewal waits on the worker's open
// target-plus-success transaction.
func TestSuccessBeforeRenewalMakesRenewalStaleAndKeepsSucceeded(t *testing.T) {
	t.Parallel()
	t.Run("success committed first", func(t *testing.T) { transitionCommittedFirst(t, completeTransition) })
	t.Run("renewal waits on the open success", func(t *testing.T) { renewalWaitsOnTransition(t, completeTransition) })
}

// Success and renewal in the reverse order: the heartbeat's renewal holds the
// row lock; the worker's success waits for it, and succeeds once the renewal
// commits. Neither overwrites the other.
func TestCompleteWaitingOnRenewalSucceedsAfterRenewalCommits(t *testing.T) {
	t.Parallel()
	rf := setupTransition(t, completeTransition)
	c := rf.claim

	renewTx, err := rf.heartbeat.Begin(rf.ctx)
	require.NoError(t, err)
	r, err := renew(rf.ctx, renewTx, c.JobID, c.Token, "worker-a")
	require.NoError(t, err)
	require.Equal(t, "renewed", r.Outcome, "the heartbeat renews the live claim")

	workTx, err := rf.ender.Begin(rf.ctx)
	require.NoError(t, err)
	require.NoError(t, writeTarget(rf.ctx, workTx, c.JobID, "row loaded by the claimant"))
	done := make(chan error, 1)
	go func() { done <- complete(rf.ctx, workTx, c, "worker-a") }()
	rf.waitBlockedBy(t, pid(rf.ender), pid(rf.heartbeat))
	require.NoError(t, renewTx.Commit(rf.ctx), "the renewal commits while the success waits")
	require.NoError(t, <-done, "the success that waited on a renewal of its own claim goes through")
	require.NoError(t, workTx.Commit(rf.ctx))

	s := rf.state(t, c.JobID)
	require.Equal(t, "SUCCEEDED", s.Status)
	require.Equal(t, int64(1), s.RenewalCount, "the renewal is kept on the job row")
	require.Equal(t, 1, rf.targetRows(t, c.JobID), "the target write committed with the success")
	mustRenew(t, rf.ctx, rf.heartbeat, c.JobID, c.Token, "worker-a", "stale", "the next renewal after success is stale")
	require.Equal(t, "SUCCEEDED", rf.state(t, c.JobID).Status, "the stale renewal kept SUCCEEDED")
}

// Retry or failure before renewal cannot be turned back
// into RUNNING, whether it committed before the renewal or the renewal waited
// on it.
func TestRetryOrFailureBeforeRenewalCannotRevertToRunning(t *testing.T) {
	t.Parallel()
	for _, tr := range []transition{retryTransition, retryExhaustedTransition, failTransition} {
		t.Run(tr.name+" committed first", func(t *testing.T) { transitionCommittedFirst(t, tr) })
		t.Run("renewal waits on the open "+tr.name, func(t *testing.T) { renewalWaitsOnTransition(t, tr) })
	}
}
