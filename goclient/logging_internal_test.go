package goclient

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/mightyetl/leasefence/internal/testdb"
)

// LogBuffer is logBuffer for the external tests (package goclient_test).
type LogBuffer = logBuffer

// logBuffer is a bytes.Buffer that the logger may write to from many
// goroutines.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// logJob is the payload of the logging tests' jobs.
type logJob struct {
	Kind   string `json:"kind"`
	Secret string `json:"secret"`
}

// tokenForms are the ways a claim token could be written into a log: its
// hex, dashed and upper-case forms and the hex of its stored digest.
func tokenForms(token pgtype.UUID) []string {
	raw := token.Bytes
	digest := sha256.Sum256(raw[:])
	hexToken := hex.EncodeToString(raw[:])
	return []string{hexToken, strings.ToUpper(hexToken), hex.EncodeToString(digest[:]),
		fmt.Sprintf("%x-%x-%x-%x-%x", raw[0:4], raw[4:6], raw[6:8], raw[8:10], raw[10:16])}
}

// logSetup returns a test database with queue's policy set, a producer
// client and a worker pool.
func logSetup(t *testing.T, queue string, lease, interval time.Duration) (producer *Client, workerPool *pgxpool.Pool) {
	t.Helper()
	db := testdb.New(t)
	_, err := db.Pool(t).Exec(context.Background(),
		`SELECT durable_jobs.set_queue_lease_policy($1, $2, $3, '1 h', true, 'logging test')`, queue, lease, interval)
	require.NoError(t, err)
	producer, err = NewClient(db.LoginPool(t, "durable_job_producer"), Config{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = producer.Close() })
	return producer, db.LoginPool(t, "durable_job_worker")
}

// TestWorkerLogSaysWhatHappensButNeverATokenPayloadOrKey runs a worker over
// jobs that succeed, return a plain error, ask for a retry, fail, panic and
// carry a payload that does not decode, with a JSON logger, and reads the
// whole log: each outcome is there with its reason code and error text,
// and no claim token (in any form, nor its digest), payload value or
// idempotency key is.
func TestWorkerLogSaysWhatHappensButNeverATokenPayloadOrKey(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const queue = "etl.logs"
	producer, workerPool := logSetup(t, queue, 2*time.Second, 500*time.Millisecond)

	kinds := []string{"ok", "error", "retry", "fail", "panic", "undecodable"}
	ids := map[int64]string{}
	var secrets []string
	for _, kind := range kinds {
		secret, key := "pii-"+kind+"-kim@example.com", "idem-key-"+kind+"-7f3a"
		payload := fmt.Sprintf(`{"kind": %q, "secret": %q}`, kind, secret)
		if kind == "undecodable" {
			payload = fmt.Sprintf(`{"kind": {"nested": "pii-nested-value"}, "secret": %q}`, secret)
		}
		id, err := producer.Enqueue(ctx, EnqueueParams{Queue: queue, Payload: []byte(payload), IdempotencyKey: key, MaxAttempts: 1})
		require.NoError(t, err)
		ids[id] = kind
		secrets = append(secrets, secret, key)
	}

	var logs logBuffer
	client, err := NewClient(workerPool, Config{LeaseDuration: 2 * time.Second, RenewalInterval: 500 * time.Millisecond,
		SafetyMargin: 500 * time.Millisecond, AttemptTimeout: 400 * time.Millisecond, Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
	require.NoError(t, err)
	defer client.Close()
	var mu sync.Mutex
	var tokens []pgtype.UUID
	worker, err := client.NewWorker(WorkerConfig{Queue: queue, Concurrency: 3,
		Handler: JSONHandler(func(ctx context.Context, job Job, p logJob) error {
			mu.Lock()
			tokens = append(tokens, job.claim.tokenValue())
			mu.Unlock()
			switch p.Kind {
			case "error":
				return errors.New("plain failure text")
			case "retry":
				return RetryAfter(time.Hour, "upstream_busy", errors.New("upstream said busy"))
			case "fail":
				return FailPermanently("bad_input", errors.New("input rejected"))
			case "panic":
				panic("handler exploded")
			}
			return nil
		})})
	require.NoError(t, err)
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- worker.Run(runCtx) }()
	require.Eventually(t, func() bool {
		for id := range ids {
			if s, err := adminOf(producer).State(ctx, id); err != nil || (s.Status != StatusSucceeded && s.Status != StatusFailed) {
				return false
			}
		}
		return true
	}, 30*time.Second, 20*time.Millisecond)
	stop()
	require.NoError(t, <-done)

	log := logs.String()
	for _, want := range []string{
		`"msg":"leasefence: job claimed"`, `"msg":"leasefence: job completed"`,
		`"msg":"leasefence: handler returned an error"`, `"error":"plain failure text"`,
		`"error":"upstream said busy"`, `"error":"input rejected"`,
		`"msg":"leasefence: handler panicked"`, `"panic":"handler exploded"`,
		`"msg":"leasefence: job retry scheduled"`, `"reason_code":"handler_error"`, `"reason_code":"upstream_busy"`,
		`"reason_code":"handler_panic"`, `"job_status":"FAILED"`,
		`"msg":"leasefence: job failed"`, `"reason_code":"bad_input"`, `"reason_code":"payload_decode_failed"`,
		`"error":"leasefence: payload does not decode into goclient.logJob: field kind: found a JSON object (at byte 10)"`,
		`"lease_claim_token":"[REDACTED]"`,
		`"msg":"leasefence: worker stopping"`, `"msg":"leasefence: worker stopped"`,
	} {
		require.Contains(t, log, want)
	}
	require.Len(t, tokens, len(kinds)-1, "every decodable job reached its handler")
	for _, token := range tokens {
		secrets = append(secrets, tokenForms(token)...)
	}
	for _, secret := range append(secrets, "pii-nested-value", client.Config().OwnerID) {
		require.NotContains(t, log, secret, "the log never carries a token, digest, payload value, idempotency key or owner id")
	}
}

// TestRefusedCompletionIsLoggedAsStale: a job cancelled while its
// TxHandler runs is refused at complete_job (LF001); the worker logs the
// refusal through the client's logger.
func TestRefusedCompletionIsLoggedAsStale(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const queue = "etl.refused"
	producer, workerPool := logSetup(t, queue, 30*time.Second, 10*time.Second)
	id, err := producer.Enqueue(ctx, EnqueueParams{Queue: queue, Payload: []byte(`{"secret": "pii-refused"}`)})
	require.NoError(t, err)

	var workerLogs logBuffer
	client, err := NewClient(workerPool, Config{Logger: slog.New(slog.NewTextHandler(&workerLogs, nil))})
	require.NoError(t, err)
	defer client.Close()
	handled := make(chan struct{})
	worker, err := client.NewWorker(WorkerConfig{Queue: queue,
		TxHandler: func(ctx context.Context, tx pgx.Tx, job Job) error {
			defer close(handled)
			_, err := adminOf(producer).Cancel(ctx, job.ID(), ChangeRecord{})
			return err
		}})
	require.NoError(t, err)
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- worker.Run(runCtx) }()
	<-handled
	require.Eventually(t, func() bool {
		return strings.Contains(workerLogs.String(), "leasefence: terminal write refused: stale claim")
	}, 10*time.Second, 10*time.Millisecond)
	stop()
	require.NoError(t, <-done)
	s, err := adminOf(producer).State(ctx, id)
	require.NoError(t, err)
	require.Equal(t, StatusCancelled, s.Status)
	require.Contains(t, workerLogs.String(), "SQLSTATE LF001")
	require.NotContains(t, workerLogs.String(), "pii-refused")
}

// TestHeartbeatLogHooks: the heartbeat's "lease lost" record carries the
// claim's public fields and the bounded cause, never the token or an
// error text; a lease ends with one bounded cause whatever ended it; a
// client without a logger discards them.
func TestHeartbeatLogHooks(t *testing.T) {
	t.Parallel()
	raw := [16]byte{0xca, 0xfe, 0xba, 0xbe, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}
	token := pgtype.UUID{Bytes: raw, Valid: true}
	claim := Claim{jobID: 77, queue: "etl.orders", generation: 3, attempt: 2,
		token: sealToken(claimToken{uuid: token, owner: "worker-hook-owner"})}
	var logs logBuffer
	c := &Client{cfg: Config{Logger: slog.New(slog.NewTextHandler(&logs, nil))}}
	logLeaseLost(c.cfg.Logger, claim, causeStale)
	c.logRenewalAttemptFailed(claim, errors.New("connection reset"), 250*time.Millisecond)
	log := logs.String()
	for _, want := range []string{
		`level=WARN msg="leasefence: lease lost" claim.job_record_id=77`, `cause=stale`,
		`level=WARN msg="leasefence: renewal attempt failed"`, `error="connection reset" retry_in=250ms`,
	} {
		require.Contains(t, log, want)
	}
	for _, secret := range append(tokenForms(token), "worker-hook-owner") {
		require.NotContains(t, log, secret)
	}
	h := &heartbeat{}
	for _, tc := range []struct {
		cause error
		want  string
	}{
		{nil, ""}, {ErrStaleClaim, causeStale}, {ErrTrustDeadlinePassed, causeTrustDeadline},
		{ErrLeaseReleased, causeReleased}, {ErrClosed, causeClosed}, {ErrLeaseStopped, causeStopped},
		{context.Canceled, causeCancelled},
	} {
		require.Equal(t, tc.want, (&Lease{hb: h, cause: tc.cause}).endCause(), "%v", tc.cause)
	}
	require.Equal(t, causeDatabaseUnavailable, (&Lease{hb: h, cause: ErrTrustDeadlinePassed, why: causeDatabaseUnavailable}).endCause())
	quiet := Config{}.withDefaults()
	require.Same(t, discardLogger, quiet.Logger, "the default logger discards")
	require.Equal(t, "boom", panicText(errors.New("boom")))
}

// TestCancelledRunningJobIsLoggedAsACancellation (issue 37, item 6): a job
// an operator cancels while its handler runs ends the lease at the next
// renewal (stale), the handler returns its context's error, and the worker
// logs a cancellation with the lease's cause, not "handler returned an
// error ... context canceled".
func TestCancelledRunningJobIsLoggedAsACancellation(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const queue = "etl.cancelled"
	producer, workerPool := logSetup(t, queue, 3*time.Second, time.Second)
	id, err := producer.Enqueue(ctx, EnqueueParams{Queue: queue, Payload: []byte(`{"secret": "pii-cancelled"}`)})
	require.NoError(t, err)

	var logs logBuffer
	client, err := NewClient(workerPool, Config{LeaseDuration: 3 * time.Second, RenewalInterval: time.Second,
		SafetyMargin: 500 * time.Millisecond, AttemptTimeout: 400 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	require.NoError(t, err)
	defer client.Close()
	started := make(chan struct{})
	worker, err := client.NewWorker(WorkerConfig{Queue: queue, Handler: func(ctx context.Context, job Job) error {
		close(started)
		<-ctx.Done()
		return fmt.Errorf("load stopped: %w", ctx.Err())
	}})
	require.NoError(t, err)
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- worker.Run(runCtx) }()
	<-started
	cancelled, err := adminOf(producer).Cancel(ctx, id, ChangeRecord{})
	require.NoError(t, err)
	require.True(t, cancelled)
	require.Eventually(t, func() bool {
		return strings.Contains(logs.String(), "leasefence: handler cancelled: the lease ended")
	}, 10*time.Second, 10*time.Millisecond)
	stop()
	require.NoError(t, <-done)

	log := logs.String()
	require.Contains(t, log, `level=WARN msg="leasefence: handler cancelled: the lease ended" claim.job_record_id=`)
	require.Contains(t, log, `level=WARN msg="leasefence: lease lost" claim.job_record_id=`)
	require.Contains(t, log, `cause=stale`)
	require.NotContains(t, log, "leasefence: lease ended before the terminal write", "one line for the cancellation")
	require.NotContains(t, log, `cause="leasefence:`, "every cause is bounded, none an error text")
	require.NotContains(t, log, "handler returned an error")
	require.NotContains(t, log, "context canceled")
	require.NotContains(t, log, "pii-cancelled")
	s, err := adminOf(producer).State(ctx, id)
	require.NoError(t, err)
	require.Equal(t, StatusCancelled, s.Status)
}

// TestHandlerErrorAfterTheLeaseEndedWritesNothingAndSaysWhy: a handler
// whose job an operator cancelled returns an error of its own (not its
// context's) after the lease ended: the error is logged as the handler's,
// no retry is written, and the worker says why, with a bounded cause.
func TestHandlerErrorAfterTheLeaseEndedWritesNothingAndSaysWhy(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const queue = "etl.cancelled2"
	producer, workerPool := logSetup(t, queue, 3*time.Second, time.Second)
	id, err := producer.Enqueue(ctx, EnqueueParams{Queue: queue, Payload: []byte(`{"secret": "pii-cancelled"}`)})
	require.NoError(t, err)

	var logs logBuffer
	client, err := NewClient(workerPool, Config{LeaseDuration: 3 * time.Second, RenewalInterval: time.Second,
		SafetyMargin: 500 * time.Millisecond, AttemptTimeout: 400 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	require.NoError(t, err)
	defer client.Close()
	started := make(chan struct{})
	worker, err := client.NewWorker(WorkerConfig{Queue: queue, Handler: func(ctx context.Context, job Job) error {
		close(started)
		<-ctx.Done()
		return errors.New("upstream load abandoned")
	}})
	require.NoError(t, err)
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- worker.Run(runCtx) }()
	<-started
	cancelled, err := adminOf(producer).Cancel(ctx, id, ChangeRecord{})
	require.NoError(t, err)
	require.True(t, cancelled)
	require.Eventually(t, func() bool {
		return strings.Contains(logs.String(), "leasefence: lease ended before the terminal write")
	}, 10*time.Second, 10*time.Millisecond)
	stop()
	require.NoError(t, <-done)

	log := logs.String()
	require.Contains(t, log, `msg="leasefence: handler returned an error" claim.job_record_id=`)
	require.Contains(t, log, `msg="leasefence: lease ended before the terminal write" claim.job_record_id=`)
	require.Contains(t, log, `cause=stale`)
	require.NotContains(t, log, "job retry scheduled")
	s, err := adminOf(producer).State(ctx, id)
	require.NoError(t, err)
	require.Equal(t, StatusCancelled, s.Status)
}

// adminOf is the Admin over c's pool: the operator calls tests make as
// c's login.
func adminOf(c *Client) *Admin { return &Admin{pool: c.pool} }
