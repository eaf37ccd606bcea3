package goclient_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/mightyetl/leasefence/goclient"
)

func TestClaimRenewCompleteThroughTheClient(t *testing.T) {
	t.Parallel()
	e := setup(t, shortPolicy)
	ctx := context.Background()
	ids := e.enqueue(1)
	w := e.worker()

	job := claim(t, w)
	require.Equal(t, ids[0], job.ID())
	require.Equal(t, testQueue, job.Queue())
	require.Equal(t, 1, job.Attempt())
	require.Equal(t, int64(1), job.FencingGeneration())
	require.JSONEq(t, `{"order": 0, "customer_email": "kim@example.com"}`, string(job.Payload()))
	require.Equal(t, shortPolicy.lease, job.LeaseExpiresAt().Sub(job.DatabaseTime()))
	require.Equal(t, job.ID(), job.Claim().JobID())

	r, err := w.Renew(ctx, job.Claim())
	require.NoError(t, err)
	require.Equal(t, goclient.RenewalRenewed, r.Outcome)
	require.True(t, r.LeaseExpiresAt.After(job.LeaseExpiresAt()), "a renewal moves the expiry forward")
	require.InDelta(t, shortPolicy.lease.Seconds(), r.Granted().Seconds(), 0.01)
	require.Equal(t, int64(1), e.state(job.ID()).RenewalCount)

	require.NoError(t, w.Complete(ctx, job.Claim(), []byte(`{"rows": 3}`)))
	s := e.state(job.ID())
	require.Equal(t, goclient.StatusSucceeded, s.Status)

	r, err = w.Renew(ctx, job.Claim())
	require.NoError(t, err)
	require.Equal(t, goclient.RenewalStale, r.Outcome, "a finished job's claim is stale")
	require.True(t, r.LeaseExpiresAt.IsZero())

	err = w.Complete(ctx, job.Claim(), nil)
	require.ErrorIs(t, err, goclient.ErrStaleClaim)
	var pgErr *pgconn.PgError
	require.True(t, errors.As(err, &pgErr), "the PostgreSQL error stays reachable")
	require.Equal(t, goclient.SQLStateStaleClaim, pgErr.Code)
	require.Contains(t, err.Error(), "SQLSTATE LF001")

	_, err = w.Claim(ctx, testQueue)
	require.ErrorIs(t, err, goclient.ErrNoJob)
}

func TestRetryFailReleaseCancelReplayAndState(t *testing.T) {
	t.Parallel()
	e := setup(t, shortPolicy)
	ctx := context.Background()
	w := e.worker()
	operator := adminClient(t, e.db.LoginPool(t, "durable_job_operator"))

	// Retry: RETRY_SCHEDULED with its reason; FAILED once the attempts are used up.
	id, err := e.producer.Enqueue(ctx, goclient.EnqueueParams{Queue: testQueue, Payload: []byte(`{}`), MaxAttempts: 2})
	require.NoError(t, err)
	job := claim(t, w)
	status, err := w.Retry(ctx, job.Claim(), 0, "upstream_timeout")
	require.NoError(t, err)
	require.Equal(t, goclient.StatusRetryScheduled, status)
	require.Equal(t, "upstream_timeout", e.state(id).FailureReasonCode)
	job = claim(t, w)
	require.Equal(t, 2, job.Attempt())
	status, err = w.Retry(ctx, job.Claim(), 0, "upstream_timeout")
	require.NoError(t, err)
	require.Equal(t, goclient.StatusFailed, status, "the last attempt's retry fails the job")

	// Replay (operator) brings it back with its attempts starting again.
	replayed, err := operator.Replay(ctx, id, goclient.ChangeRecord{})
	require.NoError(t, err)
	require.True(t, replayed)
	s := e.state(id)
	require.Equal(t, goclient.StatusQueued, s.Status)
	require.Equal(t, 0, s.AttemptNumber)
	require.Equal(t, 2, s.MaxAttempts)

	// Fail.
	job = claim(t, w)
	require.NoError(t, w.Fail(ctx, job.Claim(), "bad_input"))
	s = e.state(id)
	require.Equal(t, goclient.StatusFailed, s.Status)
	require.Equal(t, "bad_input", s.FailureReasonCode)
	require.Error(t, w.Fail(ctx, job.Claim(), "bad_input"))
	_, err = w.Retry(ctx, job.Claim(), 0, "x")
	require.ErrorIs(t, err, goclient.ErrStaleClaim)

	// Release gives the attempt back and makes the old claim stale.
	replayed, err = operator.Replay(ctx, id, goclient.ChangeRecord{})
	require.NoError(t, err)
	require.True(t, replayed)
	job = claim(t, w)
	released, err := w.Release(ctx, job.Claim())
	require.NoError(t, err)
	require.True(t, released)
	s = e.state(id)
	require.Equal(t, goclient.StatusQueued, s.Status)
	require.Equal(t, 0, s.AttemptNumber)
	released, err = w.Release(ctx, job.Claim())
	require.NoError(t, err)
	require.False(t, released, "a second release finds the claim stale")

	// Cancel a running job: its claim is stale at once.
	job = claim(t, w)
	cancelled, err := e.producerAdmin.Cancel(ctx, id, goclient.ChangeRecord{})
	require.NoError(t, err)
	require.True(t, cancelled)
	require.ErrorIs(t, w.Complete(ctx, job.Claim(), nil), goclient.ErrStaleClaim)
	require.Equal(t, goclient.StatusCancelled, e.state(id).Status)
	cancelled, err = e.producerAdmin.Cancel(ctx, id, goclient.ChangeRecord{})
	require.NoError(t, err)
	require.False(t, cancelled)
	replayed, err = operator.Replay(ctx, id+1000, goclient.ChangeRecord{})
	require.NoError(t, err)
	require.False(t, replayed)

	_, err = e.producerAdmin.State(ctx, id+1000)
	require.ErrorIs(t, err, goclient.ErrJobNotFound)
}

func TestEnqueueOptionsAndBadInput(t *testing.T) {
	t.Parallel()
	e := setup(t, shortPolicy)
	ctx := context.Background()
	w := e.worker()

	first, err := e.producer.Enqueue(ctx, goclient.EnqueueParams{Queue: testQueue, Payload: []byte(`{"a":1}`), IdempotencyKey: "order-77"})
	require.NoError(t, err)
	again, err := e.producer.Enqueue(ctx, goclient.EnqueueParams{Queue: testQueue, Payload: []byte(`{"a":2}`), IdempotencyKey: "order-77"})
	require.NoError(t, err)
	require.Equal(t, first, again, "the same idempotency key returns the first job")
	require.Equal(t, goclient.DefaultMaxAttempts, e.state(first).MaxAttempts)

	later, err := e.producer.Enqueue(ctx, goclient.EnqueueParams{Queue: testQueue, Payload: []byte(`{}`),
		RunAfter: e.dbNow().Add(time.Hour), MaxAttempts: 3})
	require.NoError(t, err)
	jobs, err := w.ClaimMany(ctx, testQueue, 10)
	require.NoError(t, err)
	require.Len(t, jobs, 1, "the job to run in an hour is not claimable yet")
	require.Equal(t, first, jobs[0].ID())
	require.Equal(t, 3, e.state(later).MaxAttempts)

	_, err = e.producer.Enqueue(ctx, goclient.EnqueueParams{Queue: "Bad Queue", Payload: []byte(`{}`)})
	require.ErrorIs(t, err, goclient.ErrInvalidArgument)
	_, err = e.producer.Enqueue(ctx, goclient.EnqueueParams{Queue: testQueue})
	require.ErrorIs(t, err, goclient.ErrInvalidArgument, "a missing payload is refused")
	_, err = w.ClaimMany(ctx, testQueue, 0)
	require.ErrorIs(t, err, goclient.ErrInvalidArgument)
	_, err = w.Retry(ctx, jobs[0].Claim(), time.Second, "Not A Code")
	require.ErrorIs(t, err, goclient.ErrInvalidArgument)
	_, err = w.Enqueue(ctx, goclient.EnqueueParams{Queue: testQueue, Payload: []byte(`{}`)})
	require.ErrorIs(t, err, goclient.ErrPermissionDenied, "a worker login cannot enqueue")
	var dbErr *goclient.DatabaseError
	require.True(t, errors.As(err, &dbErr))
	require.Equal(t, goclient.SQLStatePermissionDenied, dbErr.PgError.Code)

	r, err := w.Renew(ctx, goclient.Claim{})
	require.ErrorIs(t, err, goclient.ErrInvalidArgument, "a zero Claim is malformed, not stale")
	require.Empty(t, r.Outcome)
}

// EnqueueMany: one id per job in input order, each job with Enqueue's
// settings and idempotency (against the queue and within the batch), all or
// nothing for a bad element, mixed queues refused before sending, and the
// producer role required.
func TestEnqueueManyOrderIdempotencyAndBadInput(t *testing.T) {
	t.Parallel()
	e := setup(t, shortPolicy)
	ctx := context.Background()

	none, err := e.producer.EnqueueMany(ctx, nil)
	require.NoError(t, err)
	require.Empty(t, none)
	require.NotNil(t, none, "no jobs give an empty slice")

	first, err := e.producer.Enqueue(ctx, goclient.EnqueueParams{Queue: testQueue, Payload: []byte(`{"a":0}`), IdempotencyKey: "order-existing"})
	require.NoError(t, err)
	runAfter := e.dbNow().Add(time.Hour).Truncate(time.Microsecond)
	ids, err := e.producer.EnqueueMany(ctx, []goclient.EnqueueParams{
		{Queue: testQueue, Payload: []byte(`{"a":1}`), IdempotencyKey: "order-1", MaxAttempts: 2},
		{Queue: testQueue, Payload: []byte(`{"a":2}`), RunAfter: runAfter},
		{Queue: testQueue, Payload: []byte(`{"a":3}`), IdempotencyKey: "order-existing"},
		{Queue: testQueue, Payload: []byte(`{"a":4}`), IdempotencyKey: "order-1", MaxAttempts: 9},
		{Queue: testQueue, Payload: []byte(`{"a":5}`)},
	})
	require.NoError(t, err)
	require.Len(t, ids, 5)
	require.Less(t, ids[0], ids[1], "ids follow the input order")
	require.Less(t, ids[1], ids[4])
	require.Equal(t, first, ids[2], "a key already on the queue gives the first job's id")
	require.Equal(t, ids[0], ids[3], "a key repeated within the batch gives its first element's id")
	require.Equal(t, 2, e.state(ids[0]).MaxAttempts)
	require.Equal(t, goclient.DefaultMaxAttempts, e.state(ids[1]).MaxAttempts)
	var storedRunAfter time.Time
	require.NoError(t, e.admin.QueryRow(ctx, `SELECT run_after FROM durable_jobs.job_record WHERE job_record_id = $1`, ids[1]).Scan(&storedRunAfter))
	require.True(t, runAfter.Equal(storedRunAfter), "element 2 keeps its run-after")

	w := e.worker()
	jobs, err := w.ClaimMany(ctx, testQueue, 10)
	require.NoError(t, err)
	got := map[int64]string{}
	for _, j := range jobs {
		got[j.ID()] = string(j.Payload())
	}
	require.Equal(t, map[int64]string{first: `{"a": 0}`, ids[0]: `{"a": 1}`, ids[4]: `{"a": 5}`}, got,
		"each id holds its own payload, a repeat changes none, and the delayed job waits")

	var before int
	require.NoError(t, e.admin.QueryRow(ctx, `SELECT count(*) FROM durable_jobs.job_record`).Scan(&before))
	_, err = e.producer.EnqueueMany(ctx, []goclient.EnqueueParams{
		{Queue: testQueue, Payload: []byte(`{"good": true}`), IdempotencyKey: "order-secret-key-9"},
		{Queue: testQueue, Payload: []byte(`{"good": true}`), MaxAttempts: 1001},
	})
	require.ErrorIs(t, err, goclient.ErrInvalidArgument)
	var dbErr *goclient.DatabaseError
	require.True(t, errors.As(err, &dbErr))
	require.Equal(t, "job 2 of the batch: max attempts must be 1 to 1000", dbErr.PgError.Message)
	require.NotContains(t, err.Error(), "order-secret-key-9")
	_, err = e.producer.EnqueueMany(ctx, []goclient.EnqueueParams{{Queue: testQueue}})
	require.ErrorIs(t, err, goclient.ErrInvalidArgument, "a missing payload is refused")
	_, err = e.producer.EnqueueMany(ctx, make([]goclient.EnqueueParams, goclient.MaxBatchJobs+1))
	require.ErrorIs(t, err, goclient.ErrInvalidArgument, "more than MaxBatchJobs jobs are refused")
	_, err = e.producer.EnqueueMany(ctx, []goclient.EnqueueParams{
		{Queue: testQueue, Payload: []byte(`{}`)}, {Queue: "etl.other", Payload: []byte(`{}`)},
	})
	require.ErrorIs(t, err, goclient.ErrInvalidArgument)
	require.Equal(t, "leasefence: invalid argument: every job of a batch must name the same queue", err.Error())
	var after int
	require.NoError(t, e.admin.QueryRow(ctx, `SELECT count(*) FROM durable_jobs.job_record`).Scan(&after))
	require.Equal(t, before, after, "no refused batch wrote a job")

	_, err = w.EnqueueMany(ctx, []goclient.EnqueueParams{{Queue: testQueue, Payload: []byte(`{}`)}})
	require.ErrorIs(t, err, goclient.ErrPermissionDenied, "a worker login cannot enqueue a batch")
}

// CompleteTx, RetryTx and FailTx run in the caller's transaction: they
// commit with the caller's writes, or roll back with them.
func TestTerminalWritesInTheCallersTransaction(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := setup(t, shortPolicy)
	e.targetTable()
	ids := e.enqueue(3)
	w := e.worker()
	pool := e.pool(e.workerDB)
	jobs, err := w.ClaimMany(ctx, testQueue, 3)
	require.NoError(t, err)
	byID := map[int64]goclient.Job{}
	for _, j := range jobs {
		byID[j.ID()] = j
		require.Equal(t, testQueue, j.Claim().Queue())
		require.Equal(t, j.Attempt(), j.Claim().Attempt())
		require.Equal(t, j.FencingGeneration(), j.Claim().FencingGeneration())
	}

	// RetryTx rolled back with the caller's transaction changes nothing.
	tx, err := pool.Begin(ctx)
	require.NoError(t, err)
	status, err := w.RetryTx(ctx, tx, byID[ids[0]].Claim(), time.Minute, "try_later")
	require.NoError(t, err)
	require.Equal(t, goclient.StatusRetryScheduled, status)
	require.NoError(t, tx.Rollback(ctx))
	require.Equal(t, goclient.StatusRunning, e.state(ids[0]).Status)

	// CompleteTx commits with the target row.
	tx, err = pool.Begin(ctx)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, `INSERT INTO public.order_target VALUES ($1, $2)`, ids[0], byID[ids[0]].FencingGeneration())
	require.NoError(t, err)
	require.NoError(t, w.CompleteTx(ctx, tx, byID[ids[0]].Claim(), []byte(`{"rows": 1}`)))
	require.NoError(t, tx.Commit(ctx))
	require.Equal(t, goclient.StatusSucceeded, e.state(ids[0]).Status)
	require.Equal(t, 1, e.targetRows())

	tx, err = pool.Begin(ctx)
	require.NoError(t, err)
	require.NoError(t, w.FailTx(ctx, tx, byID[ids[1]].Claim(), "bad_record"))
	status, err = w.RetryTx(ctx, tx, byID[ids[2]].Claim(), 0, "try_later")
	require.NoError(t, err)
	require.Equal(t, goclient.StatusRetryScheduled, status)
	require.NoError(t, tx.Commit(ctx))
	require.Equal(t, goclient.StatusFailed, e.state(ids[1]).Status)
	require.Equal(t, goclient.StatusRetryScheduled, e.state(ids[2]).Status)
}

// Real claims print, marshal and log without their token, owner or payload.
func TestRealClaimsNeverShowTheirTokenOwnerOrPayload(t *testing.T) {
	t.Parallel()
	e := setup(t, shortPolicy)
	e.enqueue(1)
	w := e.worker(goclient.Config{OwnerID: "owner-7f3a"})
	job := claim(t, w)
	var logged bytes.Buffer
	slog.New(slog.NewJSONHandler(&logged, nil)).Info("claimed", "job", job, "claim", job.Claim())
	b, err := json.Marshal(job)
	require.NoError(t, err)
	uuid := regexp.MustCompile(`(?i)[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}`)
	for _, out := range []string{fmt.Sprintf("%v %+v %#v %s %x", job, job, job.Claim(), job, job.Claim()),
		string(b), logged.String(), fmt.Sprintf("%+v", struct{ j goclient.Job }{job})} {
		require.False(t, uuid.MatchString(out), "a token-shaped value in %q", out)
		require.NotContains(t, out, "owner-7f3a")
		require.NotContains(t, out, "kim@example.com")
	}
}

// EnqueueTx writes the job in the caller's transaction, with the caller's
// own row: until the transaction commits, another session neither sees nor
// claims the job; committed, the job is claimable; rolled back, neither the
// job nor the row exists. Malformed input is ErrInvalidArgument.
func TestEnqueueTxCommitsAndRollsBackWithTheCallersWrites(t *testing.T) {
	t.Parallel()
	e := setup(t, shortPolicy)
	ctx := context.Background()
	_, err := e.admin.Exec(ctx, `CREATE TABLE public.orders (order_id bigint PRIMARY KEY, job_record_id bigint NOT NULL);
		GRANT INSERT, SELECT ON public.orders TO durable_job_producer`)
	require.NoError(t, err)
	producerPool := e.db.LoginPool(t, "durable_job_producer")
	w := e.worker()
	enqueueWithOrder := func(order int) (pgx.Tx, int64) {
		t.Helper()
		tx, err := producerPool.Begin(ctx)
		require.NoError(t, err)
		id, err := e.producer.EnqueueTx(ctx, tx, goclient.EnqueueParams{Queue: testQueue,
			Payload: fmt.Appendf(nil, `{"order": %d}`, order)})
		require.NoError(t, err)
		_, err = tx.Exec(ctx, `INSERT INTO public.orders VALUES ($1, $2)`, order, id)
		require.NoError(t, err)
		return tx, id
	}

	tx, id := enqueueWithOrder(1)
	_, err = w.Claim(ctx, testQueue)
	require.ErrorIs(t, err, goclient.ErrNoJob, "another session cannot claim a job before its transaction commits")
	_, err = e.producerAdmin.State(ctx, id)
	require.ErrorIs(t, err, goclient.ErrJobNotFound, "nor see it")
	require.NoError(t, tx.Commit(ctx))
	require.Equal(t, id, claim(t, w).ID(), "committed: the job is claimable")

	tx, rolledBack := enqueueWithOrder(2)
	require.NoError(t, tx.Rollback(ctx))
	_, err = e.producerAdmin.State(ctx, rolledBack)
	require.ErrorIs(t, err, goclient.ErrJobNotFound, "rolled back: no job")
	_, err = w.Claim(ctx, testQueue)
	require.ErrorIs(t, err, goclient.ErrNoJob)
	rows, _ := producerPool.Query(ctx, `SELECT order_id FROM public.orders ORDER BY order_id`)
	orders, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	require.NoError(t, err)
	require.Equal(t, []int64{1}, orders, "the caller's row went with its job")

	tx, err = producerPool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	_, err = e.producer.EnqueueTx(ctx, tx, goclient.EnqueueParams{Queue: "Not A Queue", Payload: []byte(`{}`)})
	require.ErrorIs(t, err, goclient.ErrInvalidArgument)
}
