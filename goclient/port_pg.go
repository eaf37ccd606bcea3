package goclient

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
)

// This file and port_admin.go are the only places SQL text appears in
// goclient. Each statement is a constant written once, directly above the
// helper that runs it, and calls one function of docs/sql-api.md
// (TestSQLOnlyInPortStatements checks this).

// querier is what both *pgxpool.Pool and pgx.Tx offer.
type querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// call is one call of a function of the SQL API: its statement, its
// arguments and, when its one row is read, where the row goes.
type call struct {
	sql  string
	args []any
	into []any // nil: the answer is not read
}

// run makes the call on q.
func (c call) run(ctx context.Context, q querier) error {
	var err error
	if c.into == nil {
		_, err = q.Exec(ctx, c.sql, c.args...)
	} else {
		err = q.QueryRow(ctx, c.sql, c.args...).Scan(c.into...)
	}
	return translateError(err)
}

// queue queues the call in b (the first statements of a transaction,
// inTx): its error comes back from the batch, its row is read into into
// when the batch is closed.
func (c call) queue(b *pgx.Batch) {
	q := b.Queue(c.sql, c.args...)
	if c.into != nil {
		q.QueryRow(func(row pgx.Row) error { return row.Scan(c.into...) })
	}
}

// pgRenewalPort is the production renewalPort: one short transaction per
// attempt, its statement_timeout set below the renewal interval.
type pgRenewalPort struct {
	pool           *pgxpool.Pool
	attemptTimeout time.Duration
}

// attemptTimeoutKey is the context key under which the heartbeat passes an
// attempt's timeout (the shortest of its claims') to the port.
type attemptTimeoutKey struct{}

// withAttemptTimeout returns ctx carrying the attempt timeout d.
func withAttemptTimeout(ctx context.Context, d time.Duration) context.Context {
	return context.WithValue(ctx, attemptTimeoutKey{}, d)
}

// defaultAttemptTimeout bounds a renewal transaction of a port made with a
// zero attempt timeout and called outside the heartbeat.
const defaultAttemptTimeout = 5 * time.Second

// timeout is the attempt timeout of one call: the port's own when it has
// one, else the one the heartbeat passed in ctx, else defaultAttemptTimeout.
func (p *pgRenewalPort) timeout(ctx context.Context) time.Duration {
	if p.attemptTimeout > 0 {
		return p.attemptTimeout
	}
	if d, ok := ctx.Value(attemptTimeoutKey{}).(time.Duration); ok {
		return d
	}
	return defaultAttemptTimeout
}

// newPgRenewalPort returns the PostgreSQL renewalPort over pool. Every call
// takes a connection from pool within the caller's context, then makes one
// READ COMMITTED transaction within attemptTimeout: SET LOCAL
// statement_timeout to attemptTimeout, one statement, COMMIT, in two round
// trips (the BEGIN, the SET LOCAL and the statement in one batch). A zero
// attemptTimeout means each attempt's own: the client's heartbeat derives
// it from the claims' renewal intervals (Config.AttemptTimeout); called
// outside a heartbeat, 5 s. The statement
// is renew_job_leases for two or more claims, which never waits on a row
// lock and answers RenewalLocked for a claim whose row another transaction
// holds locked, and renew_job_lease for a single claim, which waits for the
// lock (within the attempt timeout) and so never answers RenewalLocked.
// Give it a pool of its own, never one that handlers use, so a busy handler
// cannot hold the connection a renewal needs.
func newPgRenewalPort(pool *pgxpool.Pool, attemptTimeout time.Duration) renewalPort {
	return &pgRenewalPort{pool: pool, attemptTimeout: attemptTimeout}
}

// sqlSetStatementTimeout bounds each statement of a renewal transaction.
func sqlSetStatementTimeout(d time.Duration) string {
	return `SET LOCAL statement_timeout = '` + millis(d) + `'`
}

// sqlRenewJobLeases renews two or more claims of one owner; RenewClaims
// runs it.
const sqlRenewJobLeases = `SELECT renewal_outcome, lease_expires_at, database_time FROM durable_jobs.renew_job_leases($1, $2, $3)`

// RenewClaims implements renewalPort.
func (p *pgRenewalPort) RenewClaims(ctx context.Context, claims []Claim) ([]RenewalResult, error) {
	var owner string
	ids := make([]int64, len(claims))
	tokens := make([]pgtype.UUID, len(claims))
	for i, c := range claims {
		if i == 0 {
			owner = c.ownerValue()
		}
		ids[i], tokens[i] = c.jobID, c.tokenValue()
	}
	// A connection first, within ctx; then the short transaction, within
	// the attempt timeout.
	conn, err := p.pool.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Release()
	timeout := p.timeout(ctx)
	tctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var results []RenewalResult
	// One claim alone (a claim whose row was locked in a batch, or the only
	// one due) waits for its row; a batch never does.
	sql, args := sqlRenewJobLeases, []any{owner, ids, tokens}
	if len(claims) == 1 {
		sql, args = sqlRenewJobLease, []any{ids[0], tokens[0], owner}
	}
	// The COMMIT is bounded too: a renewal whose COMMIT waits for a
	// stalled synchronous standby is a failed attempt, and the server is
	// asked to stop waiting (commit), so it does not keep the job's row
	// locked.
	// The statements go out with the BEGIN, in one round trip (inConnTx).
	err = inConnTx(tctx, conn, pgx.TxOptions{IsoLevel: pgx.ReadCommitted}, timeout, func(b *pgx.Batch) {
		b.Queue(sqlSetStatementTimeout(timeout))
		b.Queue(sql, args...).Query(func(rows pgx.Rows) error {
			var err error
			results, err = pgx.CollectRows(rows, scanRenewal)
			return err
		})
	}, nil)
	return results, translateError(err)
}

// scanRenewal reads one row of renew_job_lease(s).
func scanRenewal(row pgx.CollectableRow) (RenewalResult, error) {
	var r RenewalResult
	var expires pgtype.Timestamptz
	err := row.Scan(&r.Outcome, &expires, &r.DatabaseTime)
	r.LeaseExpiresAt = expires.Time
	return r, err
}

// sqlRenewJobLease renews one claim; renewOne runs it, and RenewClaims for
// a single claim.
const sqlRenewJobLease = `SELECT renewal_outcome, lease_expires_at, database_time FROM durable_jobs.renew_job_lease($1, $2, $3)`

// renewOne calls renew_job_lease for one claim.
func renewOne(ctx context.Context, q querier, c Claim) (RenewalResult, error) {
	rows, _ := q.Query(ctx, sqlRenewJobLease, c.jobID, c.tokenValue(), c.ownerValue())
	r, err := pgx.CollectExactlyOneRow(rows, scanRenewal)
	return r, translateError(err)
}

const sqlEnqueueJob = `SELECT durable_jobs.enqueue_job($1, $2, $3, $4, $5)`

// enqueueJob calls enqueue_job.
func enqueueJob(ctx context.Context, q querier, p EnqueueParams) (int64, error) {
	key, runAfter, maxAttempts := p.sqlValues()
	var id int64
	err := q.QueryRow(ctx, sqlEnqueueJob, p.Queue, p.Payload, key, runAfter, maxAttempts).Scan(&id)
	return id, translateError(err)
}

const sqlEnqueueJobs = `SELECT durable_jobs.enqueue_jobs($1, $2, $3, $4, $5)`

// enqueueJobs calls enqueue_jobs for jobs of one queue: element i of each
// array is job i, and so is id i of the result.
func enqueueJobs(ctx context.Context, q querier, queue string, jobs []EnqueueParams) ([]int64, error) {
	payloads := make([][]byte, len(jobs))
	keys := make([]*string, len(jobs))
	runAfters := make([]*time.Time, len(jobs))
	maxAttempts := make([]int, len(jobs))
	for i, p := range jobs {
		payloads[i] = p.Payload
		keys[i], runAfters[i], maxAttempts[i] = p.sqlValues()
	}
	var ids []int64
	err := q.QueryRow(ctx, sqlEnqueueJobs, queue, payloads, keys, runAfters, maxAttempts).Scan(&ids)
	return ids, translateError(err)
}

// sqlValues returns p's optional settings as enqueue_job takes them: no key
// and no run-after as NULL, a zero MaxAttempts as DefaultMaxAttempts.
func (p EnqueueParams) sqlValues() (key *string, runAfter *time.Time, maxAttempts int) {
	if p.IdempotencyKey != "" {
		key = &p.IdempotencyKey
	}
	if !p.RunAfter.IsZero() {
		runAfter = &p.RunAfter
	}
	maxAttempts = p.MaxAttempts
	if maxAttempts == 0 {
		maxAttempts = DefaultMaxAttempts
	}
	return key, runAfter, maxAttempts
}

// sqlClaimColumns are the columns of a claim, in the order claimJobs scans
// them.
const sqlClaimColumns = `job_record_id, lease_claim_token, lease_fencing_generation, lease_expires_at, lease_renewal_interval, attempt_number, job_payload, database_time`

const sqlClaimNextJob = `SELECT ` + sqlClaimColumns + ` FROM durable_jobs.claim_next_job($1, $2)`

// claimNextJob calls claim_next_job: at most one job of queue for owner.
func claimNextJob(ctx context.Context, q querier, queue, owner string) ([]Job, error) {
	return claimJobs(ctx, q, queue, owner, sqlClaimNextJob, queue, owner)
}

const sqlClaimNextJobs = `SELECT ` + sqlClaimColumns + ` FROM durable_jobs.claim_next_jobs($1, $2, $3)`

// claimNextJobs calls claim_next_jobs: up to n jobs of queue for owner.
func claimNextJobs(ctx context.Context, q querier, queue, owner string, n int) ([]Job, error) {
	return claimJobs(ctx, q, queue, owner, sqlClaimNextJobs, queue, owner, n)
}

const sqlQueueNextDueIn = `SELECT durable_jobs.queue_next_due_in($1)`

// claimNextJobsAndDue is the worker's claim: claim_next_jobs for up to n
// jobs of queue, then queue_next_due_in (migration 027), both sent at once
// and run in one implicit transaction (one round trip, one commit). due is
// how long until the next job of queue falls due after the claim, and
// known false when the queue holds none. An error of either statement
// rolls both back and returns no job.
func claimNextJobsAndDue(ctx context.Context, conn *pgxpool.Conn, queue, owner string, n int) (jobs []Job, due time.Duration, known bool, err error) {
	b := &pgx.Batch{}
	b.Queue(sqlClaimNextJobs, queue, owner, n)
	b.Queue(sqlQueueNextDueIn, queue)
	sentAt := time.Now()
	br := conn.SendBatch(ctx, b)
	rows, _ := br.Query()
	jobs, err = collectClaims(rows, queue, owner, sentAt)
	var wait pgtype.Interval
	if err == nil {
		err = br.QueryRow().Scan(&wait)
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, 0, false, translateError(err)
	}
	return jobs, time.Duration(wait.Microseconds) * time.Microsecond, wait.Valid, nil
}

// claimJobs runs a claim statement (claimNextJob's or claimNextJobs') and
// builds the claims. Each job's sentAt is taken just before the call is sent.
func claimJobs(ctx context.Context, q querier, queue, owner, sql string, args ...any) ([]Job, error) {
	sentAt := time.Now()
	rows, _ := q.Query(ctx, sql, args...)
	jobs, err := collectClaims(rows, queue, owner, sentAt)
	return jobs, translateError(err)
}

// collectClaims reads the rows of a claim statement sent at sentAt into
// jobs.
func collectClaims(rows pgx.Rows, queue, owner string, sentAt time.Time) ([]Job, error) {
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (Job, error) {
		j := Job{claim: Claim{queue: queue}, sentAt: sentAt}
		secret := claimToken{owner: owner}
		var payload []byte
		err := row.Scan(&j.claim.jobID, &secret.uuid, &j.claim.generation, &j.leaseExpiresAt,
			&j.renewalInterval, &j.claim.attempt, &payload, &j.databaseTime)
		j.claim.token = sealToken(secret)
		j.payload = func() []byte { return payload }
		return j, err
	})
}

const sqlCompleteJob = `SELECT durable_jobs.complete_job($1, $2, $3, $4)`

// completeJobCall is the complete_job call for c with an optional JSON
// result document.
func completeJobCall(c Claim, result []byte) call {
	var doc any
	if result != nil {
		doc = result
	}
	return call{sql: sqlCompleteJob, args: []any{c.jobID, c.tokenValue(), c.ownerValue(), doc}}
}

// completeJob calls complete_job inside q.
func completeJob(ctx context.Context, q querier, c Claim, result []byte) error {
	return completeJobCall(c, result).run(ctx, q)
}

const sqlCompleteJobs = `SELECT job_record_id FROM durable_jobs.complete_jobs($1, $2, $3)`

// completeJobsCall is the complete_jobs call (migration 008) for claims,
// which are all of one owner: one transaction's completion of them all, or
// LF001 (ErrStaleClaim) and none when any is stale.
func completeJobsCall(claims []Claim) call {
	ids := make([]int64, len(claims))
	tokens := make([]pgtype.UUID, len(claims))
	for i, c := range claims {
		ids[i], tokens[i] = c.jobID, c.tokenValue()
	}
	return call{sql: sqlCompleteJobs, args: []any{claims[0].ownerValue(), ids, tokens}}
}

const sqlRetryJob = `SELECT durable_jobs.retry_job($1, $2, $3, $4, $5)`

// retryJobCall is the retry_job call; the new status goes to status.
func retryJobCall(c Claim, delay time.Duration, reason string, status *JobStatus) call {
	return call{sql: sqlRetryJob, args: []any{c.jobID, c.tokenValue(), c.ownerValue(), delay, reason}, into: []any{status}}
}

// retryJob calls retry_job inside q and returns the new status.
func retryJob(ctx context.Context, q querier, c Claim, delay time.Duration, reason string) (JobStatus, error) {
	var status JobStatus
	err := retryJobCall(c, delay, reason, &status).run(ctx, q)
	return status, err
}

const sqlFailJob = `SELECT durable_jobs.fail_job($1, $2, $3, $4)`

// failJobCall is the fail_job call.
func failJobCall(c Claim, reason string) call {
	return call{sql: sqlFailJob, args: []any{c.jobID, c.tokenValue(), c.ownerValue(), reason}}
}

// failJob calls fail_job inside q.
func failJob(ctx context.Context, q querier, c Claim, reason string) error {
	return failJobCall(c, reason).run(ctx, q)
}

// sqlReleaseJobClaim gives up one claim; releaseClaim runs it.
const sqlReleaseJobClaim = `SELECT durable_jobs.release_job_claim($1, $2, $3)`

// releaseClaim calls release_job_claim.
func releaseClaim(ctx context.Context, q querier, c Claim) (bool, error) {
	var released bool
	err := q.QueryRow(ctx, sqlReleaseJobClaim, c.jobID, c.tokenValue(), c.ownerValue()).Scan(&released)
	return released, translateError(err)
}

// maxReleaseBatch is release_job_claims' limit of claims per call.
const maxReleaseBatch = 1000

// sqlReleaseJobClaims gives up many claims of one owner (migration 023);
// releaseClaims runs it.
const sqlReleaseJobClaims = `SELECT job_record_id, released FROM durable_jobs.release_job_claims($1, $2, $3)`

// releaseClaims releases claims, which are all of one owner (one Client's),
// with release_job_claims: one call per 1,000 claims (a job id at most once
// a call, as the function requires), all the calls in one pipelined batch
// on one connection, so one round trip and one implicit transaction. Best
// effort: claims whose release fails lapse at their expiry. stale[i] is
// true when the database answered false for claims[i].
func releaseClaims(ctx context.Context, pool *pgxpool.Pool, claims []Claim) (stale []bool) {
	if len(claims) == 0 {
		return nil
	}
	// Each call's claims, as indexes into claims.
	var calls [][]int
	var seen map[int64]bool
	for i, c := range claims {
		if len(calls) == 0 || len(calls[len(calls)-1]) == maxReleaseBatch || seen[c.jobID] {
			calls = append(calls, nil)
			seen = map[int64]bool{}
		}
		calls[len(calls)-1] = append(calls[len(calls)-1], i)
		seen[c.jobID] = true
	}
	b := &pgx.Batch{}
	stale = make([]bool, len(claims))
	for _, call := range calls {
		ids := make([]int64, len(call))
		tokens := make([]pgtype.UUID, len(call))
		for k, i := range call {
			ids[k], tokens[k] = claims[i].jobID, claims[i].tokenValue()
		}
		// A job id names one claim of a call: its answer goes to that claim.
		index := make(map[int64]int, len(call))
		for _, i := range call {
			index[claims[i].jobID] = i
		}
		var id int64
		var released bool
		b.Queue(sqlReleaseJobClaims, claims[0].ownerValue(), ids, tokens).Query(func(rows pgx.Rows) error {
			_, err := pgx.ForEachRow(rows, []any{&id, &released}, func() error {
				if i, ok := index[id]; ok {
					stale[i] = !released
				}
				return nil
			})
			return err
		})
	}
	_ = pool.SendBatch(ctx, b).Close()
	return stale
}

// sqlProbe makes the worker's probe write WAL: a transactional
// logical decoding message (prefix leasefence.probe, empty) gives the
// transaction an xid and a WAL record, so its COMMIT writes a commit
// record and waits for a synchronous standby as a terminal write does.
// (txid_current() alone gives an xid but writes no WAL before the
// commit record, and PostgreSQL then does not wait for the standby.) It
// answers the WAL timeline the server writes on (the first 8 hex digits of
// the WAL file name of the message's position), read as the claims' fencing
// generation floor reads it (claim_next_jobs), in the same round trip.
const sqlProbe = `SELECT ('x' OPERATOR(pg_catalog.||) pg_catalog.substr(pg_catalog.pg_walfile_name(` +
	`pg_catalog.pg_logical_emit_message(true, 'leasefence.probe', '')), 1, 8))::bit(32)::bigint`

// probeCall is the worker's probe statement; the timeline goes into
// timeline when the batch is closed.
func probeCall(timeline *int64) call { return call{sql: sqlProbe, into: []any{timeline}} }

// listenStatement is the LISTEN of the wake-up listener: its probe channel
// and its queue's wake-up channel, in one simple-protocol round trip.
func listenStatement(probe, wake string) string {
	return "LISTEN " + pgx.Identifier{probe}.Sanitize() + "; LISTEN " + pgx.Identifier{wake}.Sanitize()
}

// unlistenAll ends every LISTEN of conn's session, best effort.
func unlistenAll(ctx context.Context, conn *pgx.Conn) {
	_, _ = conn.Exec(ctx, "UNLISTEN *")
}

// sqlNotifyProbe is the notification the wake-up listener sends itself,
// from another session, to learn whether LISTEN works on its connection.
const sqlNotifyProbe = `SELECT pg_notify($1, '')`

// notifyProbe sends the probe notification on channel from q.
func notifyProbe(ctx context.Context, q querier, channel string) error {
	_, err := q.Exec(ctx, sqlNotifyProbe, channel)
	return err
}

const (
	sqlCancelJob         = `SELECT durable_jobs.cancel_job($1)`
	sqlCancelJobRecorded = `SELECT durable_jobs.cancel_job($1, $2, $3, $4)`
)

// cancelJob calls cancel_job, with the change record when it has a reason.
func cancelJob(ctx context.Context, q querier, jobID int64, change ChangeRecord) (bool, error) {
	return jobAction(ctx, q, sqlCancelJob, sqlCancelJobRecorded, jobID, change)
}

const (
	sqlReplayJob         = `SELECT durable_jobs.replay_job($1)`
	sqlReplayJobRecorded = `SELECT durable_jobs.replay_job($1, $2, $3, $4)`
)

// replayJob calls replay_job, with the change record when it has a reason.
func replayJob(ctx context.Context, q querier, jobID int64, change ChangeRecord) (bool, error) {
	return jobAction(ctx, q, sqlReplayJob, sqlReplayJobRecorded, jobID, change)
}

// jobAction runs plain (the job id) or, when change has a reason, recorded
// (the job id and change), and returns the boolean answer.
func jobAction(ctx context.Context, q querier, plain, recorded string, jobID int64, change ChangeRecord) (bool, error) {
	sql, args := plain, []any{jobID}
	if change.Reason != "" {
		sql, args = recorded, []any{jobID, change.Reason, optionalText(change.Ticket), optionalText(change.Approver)}
	}
	var done bool
	err := q.QueryRow(ctx, sql, args...).Scan(&done)
	return done, translateError(err)
}

const sqlJobState = `SELECT job_status, attempt_number, max_attempts, lease_fencing_generation, lease_expires_at, lease_renewal_count, failure_reason_code FROM durable_jobs.job_lifecycle_state($1)`

// jobState calls job_lifecycle_state; ErrJobNotFound for zero rows.
func jobState(ctx context.Context, q querier, jobID int64) (JobState, error) {
	var s JobState
	var expires pgtype.Timestamptz
	var reason pgtype.Text
	err := q.QueryRow(ctx, sqlJobState, jobID).Scan(&s.Status, &s.AttemptNumber, &s.MaxAttempts,
		&s.FencingGeneration, &expires, &s.RenewalCount, &reason)
	s.LeaseExpiresAt, s.FailureReasonCode = expires.Time, reason.String
	if err == pgx.ErrNoRows {
		err = ErrJobNotFound
	}
	return s, translateError(err)
}
