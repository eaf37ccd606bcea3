package sqlintegration

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/mightyetl/leasefence/internal/testdb"
)

func TestMain(m *testing.M) { os.Exit(testdb.Run(m)) }

// Lease policy of every test queue: a 1 s lease renewed every 300 ms, well
// inside the contract's bound of lease / 3.
const (
	testLeaseDuration   = time.Second
	testRenewalInterval = 300 * time.Millisecond
	testMaxClaimLife    = time.Minute
)

// testTimeout bounds every test's database work, so a lock that is never
// released fails the test instead of hanging the package.
const testTimeout = 30 * time.Second

var queueSequence atomic.Int64

// querier is what *pgx.Conn and pgx.Tx have in common.
type querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// fixture is what a test needs: its own database, a superuser pool on it
// for setup and inspection, and a queue of its own with a 1 s lease.
type fixture struct {
	ctx   context.Context
	db    *testdb.DB
	admin *pgxpool.Pool
	queue string
}

// setup gives the test its own database and queue. The caller runs
// t.Parallel first.
func setup(t *testing.T) *fixture {
	t.Helper()
	return setupOn(t, testdb.New(t))
}

// setupOwnCluster is setup on a cluster of the test's own, for a test that
// counts what its calls read: on the shared cluster another test's open
// snapshot can keep dead index entries from being marked dead, and a scan
// then walks them again.
func setupOwnCluster(t *testing.T) *fixture {
	t.Helper()
	_, db := testdb.OwnCluster(t)
	return setupOn(t, db)
}

// setupOn gives the test a queue of its own on db.
func setupOn(t *testing.T, db *testdb.DB) *fixture {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(cancel)
	f := &fixture{
		ctx:   ctx,
		db:    db,
		admin: db.Pool(t),
		queue: fmt.Sprintf("it_lease_%d", queueSequence.Add(1)),
	}
	f.setPolicy(t, f.queue, testLeaseDuration, testRenewalInterval, testMaxClaimLife, true)
	return f
}

func (f *fixture) setPolicy(t *testing.T, queue string, lease, renewal, maxLife time.Duration, enabled bool) {
	t.Helper()
	_, err := f.admin.Exec(f.ctx,
		"SELECT durable_jobs.set_queue_lease_policy($1, $2, $3, $4, $5, $6)",
		queue, lease, renewal, maxLife, enabled, "integration test policy")
	require.NoError(t, err, "set the test queue's lease policy")
}

// connect opens one session (its own connection) on url, closed when the
// test ends. A statement that waits longer than 10 s fails.
func (f *fixture) connect(t *testing.T, url string) *pgx.Conn {
	t.Helper()
	cfg, err := pgx.ParseConfig(url)
	require.NoError(t, err)
	cfg.RuntimeParams["statement_timeout"] = "10s"
	cfg.RuntimeParams["application_name"] = "leasefence_sqlintegration"
	conn, err := pgx.ConnectConfig(f.ctx, cfg)
	require.NoError(t, err, "connect a test session")
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	return conn
}

// workerURL makes a new login role in durable_job_worker.
func (f *fixture) workerURL(t *testing.T) string {
	t.Helper()
	return f.db.LoginURL(t, "durable_job_worker")
}

// worker opens one session as a new worker login role.
func (f *fixture) worker(t *testing.T) *pgx.Conn {
	t.Helper()
	return f.connect(t, f.workerURL(t))
}

// producer opens one session as a new producer login role.
func (f *fixture) producer(t *testing.T) *pgx.Conn {
	t.Helper()
	return f.connect(t, f.db.LoginURL(t, "durable_job_producer"))
}

// enqueue adds one job to the test queue as superuser.
func (f *fixture) enqueue(t *testing.T, payload string) int64 {
	t.Helper()
	return enqueueOn(t, f.ctx, f.admin, f.queue, payload)
}

func enqueueOn(t *testing.T, ctx context.Context, q querier, queue, payload string) int64 {
	t.Helper()
	var id int64
	require.NoError(t, q.QueryRow(ctx, "SELECT durable_jobs.enqueue_job($1, $2::jsonb)", queue, payload).Scan(&id),
		"enqueue a job")
	return id
}

// claim is one row of claim_next_job.
type claim struct {
	JobID           int64
	Token           pgtype.UUID
	Generation      int64
	ExpiresAt       time.Time
	RenewalInterval time.Duration
	Attempt         int32
	Payload         []byte
	DatabaseTime    time.Time
}

// claimNext calls claim_next_job; ok is false for zero rows.
func claimNext(ctx context.Context, q querier, queue, owner string) (c claim, ok bool, err error) {
	rows, err := q.Query(ctx, "SELECT * FROM durable_jobs.claim_next_job($1, $2)", queue, owner)
	if err != nil {
		return claim{}, false, err
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		n++
		if err := rows.Scan(&c.JobID, &c.Token, &c.Generation, &c.ExpiresAt, &c.RenewalInterval,
			&c.Attempt, &c.Payload, &c.DatabaseTime); err != nil {
			return claim{}, false, err
		}
	}
	if err := rows.Err(); err != nil {
		return claim{}, false, err
	}
	if n > 1 {
		return claim{}, false, fmt.Errorf("claim_next_job returned %d rows, want at most one", n)
	}
	return c, n == 1, nil
}

// mustClaim claims and requires a job.
func mustClaim(t *testing.T, ctx context.Context, q querier, queue, owner string) claim {
	t.Helper()
	c, ok, err := claimNext(ctx, q, queue, owner)
	require.NoError(t, err, "claim_next_job")
	require.True(t, ok, "claim_next_job returned a job")
	return c
}

// requireNothingClaimable claims and requires zero rows.
func requireNothingClaimable(t *testing.T, ctx context.Context, q querier, queue, owner, why string) {
	t.Helper()
	c, ok, err := claimNext(ctx, q, queue, owner)
	require.NoError(t, err, "claim_next_job")
	require.False(t, ok, "%s (claimed job %d, attempt %d)", why, c.JobID, c.Attempt)
}

// renewal is one row of renew_job_lease.
type renewal struct {
	Outcome      string
	ExpiresAt    *time.Time
	DatabaseTime time.Time
}

func renew(ctx context.Context, q querier, jobID int64, token pgtype.UUID, owner string) (renewal, error) {
	rows, err := q.Query(ctx, "SELECT * FROM durable_jobs.renew_job_lease($1, $2, $3)", jobID, token, owner)
	if err != nil {
		return renewal{}, err
	}
	got, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (renewal, error) {
		var r renewal
		err := row.Scan(&r.Outcome, &r.ExpiresAt, &r.DatabaseTime)
		return r, err
	})
	if err != nil {
		return renewal{}, err
	}
	if len(got) != 1 {
		return renewal{}, fmt.Errorf("renew_job_lease returned %d rows, want exactly one", len(got))
	}
	return got[0], nil
}

// mustRenew renews and requires the given outcome.
func mustRenew(t *testing.T, ctx context.Context, q querier, jobID int64, token pgtype.UUID, owner, want, why string) renewal {
	t.Helper()
	r, err := renew(ctx, q, jobID, token, owner)
	require.NoError(t, err, "renew_job_lease")
	require.Equal(t, want, r.Outcome, why)
	if want == "stale" {
		require.Nil(t, r.ExpiresAt, "a stale renewal reports no expiry")
	} else {
		require.NotNil(t, r.ExpiresAt, "a %s renewal reports the expiry", want)
	}
	return r
}

// The terminal statements are written once, each above its helper;
// FuzzWorkerFunctions runs them too, with its own arguments.

const sqlCompleteJob = "SELECT durable_jobs.complete_job($1, $2, $3, $4::jsonb)"

func complete(ctx context.Context, q querier, c claim, owner string) error {
	_, err := q.Exec(ctx, sqlCompleteJob, c.JobID, c.Token, owner, `{"rows_loaded": 3}`)
	return err
}

const sqlRetryJob = "SELECT durable_jobs.retry_job($1, $2, $3, $4, $5)"

func retry(ctx context.Context, q querier, c claim, owner string, delay time.Duration) (string, error) {
	var status string
	err := q.QueryRow(ctx, sqlRetryJob, c.JobID, c.Token, owner, delay, "target_unavailable").Scan(&status)
	return status, err
}

const sqlFailJob = "SELECT durable_jobs.fail_job($1, $2, $3, $4)"

func fail(ctx context.Context, q querier, c claim, owner string) error {
	_, err := q.Exec(ctx, sqlFailJob, c.JobID, c.Token, owner, "schema_mismatch")
	return err
}

const sqlReleaseJobClaim = "SELECT durable_jobs.release_job_claim($1, $2, $3)"

func release(ctx context.Context, q querier, c claim, owner string) (bool, error) {
	var released bool
	err := q.QueryRow(ctx, sqlReleaseJobClaim, c.JobID, c.Token, owner).Scan(&released)
	return released, err
}

// requireSQLState requires err to be a PostgreSQL error with code.
func requireSQLState(t *testing.T, err error, code, why string) {
	t.Helper()
	require.Error(t, err, why)
	var pgErr *pgconn.PgError
	require.True(t, errors.As(err, &pgErr), "%s: want SQLSTATE %s, got a non-PostgreSQL error %v", why, code, err)
	require.Equal(t, code, pgErr.Code, why)
}

// requireAllTerminalWritesStale requires complete, retry and fail with c to
// raise LF001, each in its own statement.
func requireAllTerminalWritesStale(t *testing.T, ctx context.Context, q querier, c claim, owner, why string) {
	t.Helper()
	requireSQLState(t, complete(ctx, q, c, owner), "LF001", "complete_job: "+why)
	_, err := retry(ctx, q, c, owner, time.Minute)
	requireSQLState(t, err, "LF001", "retry_job: "+why)
	requireSQLState(t, fail(ctx, q, c, owner), "LF001", "fail_job: "+why)
}

// lifecycle is one row of job_lifecycle_state.
type lifecycle struct {
	Status        string
	Attempt       int32
	MaxAttempts   int32
	Generation    int64
	ExpiresAt     *time.Time
	RenewalCount  int64
	FailureReason *string
}

func (f *fixture) state(t *testing.T, jobID int64) lifecycle {
	t.Helper()
	var s lifecycle
	require.NoError(t, f.admin.QueryRow(f.ctx, "SELECT * FROM durable_jobs.job_lifecycle_state($1)", jobID).Scan(
		&s.Status, &s.Attempt, &s.MaxAttempts, &s.Generation, &s.ExpiresAt, &s.RenewalCount, &s.FailureReason),
		"job_lifecycle_state")
	return s
}

// databaseNow is the database's clock_timestamp().
func (f *fixture) databaseNow(t *testing.T) time.Time {
	t.Helper()
	var now time.Time
	require.NoError(t, f.admin.QueryRow(f.ctx, "SELECT clock_timestamp()").Scan(&now))
	return now
}

// waitDatabaseTimePast sleeps until the database's clock is past instant,
// measured by the database, never by this process's wall clock.
func (f *fixture) waitDatabaseTimePast(t *testing.T, instant time.Time) {
	t.Helper()
	for {
		now := f.databaseNow(t)
		if now.After(instant) {
			return
		}
		select {
		case <-time.After(instant.Sub(now) + 10*time.Millisecond):
		case <-f.ctx.Done():
			t.Fatalf("database time never passed the expiry: %v", f.ctx.Err())
		}
	}
}

// pid is the server process of a session.
func pid(conn *pgx.Conn) uint32 { return conn.PgConn().PID() }

// waitBlockedBy waits until session blocked waits on a lock that session
// blocker holds (pg_blocking_pids), so the race's order is certain.
func (f *fixture) waitBlockedBy(t *testing.T, blocked, blocker uint32) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		var waiting bool
		require.NoError(t, f.admin.QueryRow(f.ctx,
			"SELECT $2::int = ANY (pg_blocking_pids($1::int))", int64(blocked), int64(blocker)).Scan(&waiting))
		if waiting {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("session %d never waited on session %d's lock", blocked, blocker)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// loginRole is the user name in a connection URL.
func loginRole(t *testing.T, url string) string {
	t.Helper()
	cfg, err := pgx.ParseConfig(url)
	require.NoError(t, err)
	return cfg.User
}

// createTargetTable makes the worker's own target table in the test
// database, writable by the given login role only.
func (f *fixture) createTargetTable(t *testing.T, role string) {
	t.Helper()
	_, err := f.admin.Exec(f.ctx, "CREATE TABLE public.loaded_rows (job_record_id bigint NOT NULL, loaded_value text NOT NULL)")
	require.NoError(t, err)
	_, err = f.admin.Exec(f.ctx, "GRANT SELECT, INSERT ON public.loaded_rows TO "+pgx.Identifier{role}.Sanitize())
	require.NoError(t, err)
}

// writeTarget is the worker's target write inside its transaction.
func writeTarget(ctx context.Context, q querier, jobID int64, value string) error {
	_, err := q.Exec(ctx, "INSERT INTO public.loaded_rows (job_record_id, loaded_value) VALUES ($1, $2)", jobID, value)
	return err
}

// targetRows counts the committed target rows of a job.
func (f *fixture) targetRows(t *testing.T, jobID int64) int {
	t.Helper()
	var n int
	require.NoError(t, f.admin.QueryRow(f.ctx, "SELECT count(*) FROM public.loaded_rows WHERE job_record_id = $1", jobID).Scan(&n))
	return n
}

// outcomeTotal is lease_outcome_totals for the test queue and one kind,
// since an hour ago.
func (f *fixture) outcomeTotal(t *testing.T, queue, kind string) int64 {
	t.Helper()
	var n int64
	err := f.admin.QueryRow(f.ctx,
		"SELECT COALESCE(sum(outcome_count), 0)::bigint FROM durable_jobs.lease_outcome_totals(clock_timestamp() - interval '1 hour') "+
			"WHERE queue_name = $1 AND outcome_kind = $2", queue, kind).Scan(&n)
	require.NoError(t, err)
	return n
}
