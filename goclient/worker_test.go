package goclient_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/mightyetl/leasefence/goclient"
	sqlbundle "github.com/mightyetl/leasefence/sql"
)

// The handler's result decides the terminal transition: nil completes, Retry
// retries with its delay and reason, Fail fails, a plain error or a panic
// retries with the worker's delay and a reason code of its own.
func TestWorkerMapsHandlerResultsToTerminalTransitions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := setup(t, shortPolicy)
	kinds := []string{"ok", "retry", "fail", "error", "panic"}
	ids := map[string]int64{}
	for _, k := range kinds {
		id, err := e.producer.Enqueue(ctx, goclient.EnqueueParams{Queue: testQueue, Payload: []byte(`{"kind": "` + k + `"}`)})
		require.NoError(t, err)
		ids[k] = id
	}
	c := e.worker()
	w, err := c.NewWorker(goclient.WorkerConfig{Queue: testQueue, Concurrency: 3,
		RetryDelay: func(attempt int) time.Duration { return time.Duration(attempt) * time.Hour },
		Handler: func(ctx context.Context, job goclient.Job) error {
			var p struct{ Kind string }
			if err := json.Unmarshal(job.Payload(), &p); err != nil {
				return err
			}
			switch p.Kind {
			case "retry":
				return goclient.RetryAfter(time.Hour, "rate_limited", errors.New("429 from the warehouse"))
			case "fail":
				return goclient.FailPermanently("bad_record", errors.New("row 7 is malformed"))
			case "error":
				return errors.New("something broke")
			case "panic":
				panic("handler bug")
			}
			return nil
		}})
	require.NoError(t, err)
	stop := runWorker(t, w)
	waitFor(t, 10*time.Second, "every job to reach its transition", func() bool {
		for _, id := range ids {
			if s := e.state(id).Status; s == goclient.StatusQueued || s == goclient.StatusRunning {
				return false
			}
		}
		return true
	})
	require.NoError(t, stop())
	want := map[string][2]string{
		"ok": {"SUCCEEDED", ""}, "retry": {"RETRY_SCHEDULED", "rate_limited"}, "fail": {"FAILED", "bad_record"},
		"error": {"RETRY_SCHEDULED", goclient.ReasonHandlerError}, "panic": {"RETRY_SCHEDULED", goclient.ReasonHandlerPanic},
	}
	for k, id := range ids {
		s := e.state(id)
		require.Equal(t, want[k][0], string(s.Status), k)
		require.Equal(t, want[k][1], s.FailureReasonCode, k)
	}
	var runAfter time.Time
	require.NoError(t, e.admin.QueryRow(ctx, `SELECT run_after FROM durable_jobs.job_record WHERE job_record_id = $1`,
		ids["error"]).Scan(&runAfter))
	require.Greater(t, time.Until(runAfter), 50*time.Minute, "the worker's RetryDelay(1) = 1 h was used")
}

// loginRole returns the role name of a login URL.
func loginRole(t *testing.T, u string) string {
	t.Helper()
	parsed, err := url.Parse(u)
	require.NoError(t, err)
	return parsed.User.Username()
}

// targetTable creates a target table the worker login may write.
func (e *env) targetTable() {
	e.t.Helper()
	_, err := e.admin.Exec(context.Background(), `CREATE TABLE public.order_target (job_record_id bigint PRIMARY KEY,
		lease_fencing_generation bigint NOT NULL)`)
	require.NoError(e.t, err)
	_, err = e.admin.Exec(context.Background(), `GRANT INSERT, SELECT ON public.order_target TO `+loginRole(e.t, e.workerDB))
	require.NoError(e.t, err)
}

func (e *env) targetRows() int {
	e.t.Helper()
	var n int
	require.NoError(e.t, e.admin.QueryRow(context.Background(), `SELECT count(*) FROM public.order_target`).Scan(&n))
	return n
}

// A TxHandler's target rows and the SUCCEEDED transition commit together.
func TestTxHandlerCommitsTargetRowsWithTheTerminalTransition(t *testing.T) {
	t.Parallel()
	e := setup(t, shortPolicy)
	e.targetTable()
	ids := e.enqueue(2)
	c := e.worker()
	w, err := c.NewWorker(goclient.WorkerConfig{Queue: testQueue, Concurrency: 2,
		TxHandler: func(ctx context.Context, tx pgx.Tx, job goclient.Job) error {
			_, err := tx.Exec(ctx, `INSERT INTO public.order_target VALUES ($1, $2)`, job.ID(), job.FencingGeneration())
			return err
		}})
	require.NoError(t, err)
	stop := runWorker(t, w)
	waitFor(t, 5*time.Second, "both jobs to succeed", func() bool {
		return e.state(ids[0]).Status == goclient.StatusSucceeded && e.state(ids[1]).Status == goclient.StatusSucceeded
	})
	require.NoError(t, stop())
	require.Equal(t, 2, e.targetRows())
}

// When the claim goes stale before the terminal write, the target rows
// written in the TxHandler's transaction roll back: complete_job raises
// LF001 when the handler returns at once; when it returns (nil) only after
// the heartbeat found the claim stale and ended its lease, no complete_job
// is sent at all. Either way the loss is counted once.
func TestStaleTxHandlerRollsBackItsTargetRows(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		wait   bool // the handler returns once its lease has ended
		logged string
	}{
		{"returns at once", false, "leasefence: terminal write refused: stale claim"},
		{"returns after its lease ended", true, "leasefence: lease ended before the terminal write"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := setup(t, shortPolicy)
			e.targetTable()
			ids := e.enqueue(1)
			rec := newRecorder()
			var logs goclient.LogBuffer
			c := e.worker(goclient.Config{Observer: rec, Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
			w, err := c.NewWorker(goclient.WorkerConfig{Queue: testQueue,
				TxHandler: func(ctx context.Context, tx pgx.Tx, job goclient.Job) error {
					if _, err := tx.Exec(ctx, `INSERT INTO public.order_target VALUES ($1, $2)`, job.ID(), job.FencingGeneration()); err != nil {
						return err
					}
					// An operator cancels the job while it runs (another session).
					if _, err := e.producerAdmin.Cancel(context.Background(), job.ID(), goclient.ChangeRecord{}); err != nil || !tc.wait {
						return err
					}
					<-ctx.Done() // the next renewal comes back stale
					return nil
				}})
			require.NoError(t, err)
			stop := runWorker(t, w)
			waitFor(t, 5*time.Second, "the stale claim to be noticed", func() bool {
				return rec.lostCount(goclient.LossStale) == 1 && strings.Contains(logs.String(), `"msg":"`+tc.logged+`"`)
			})
			require.NoError(t, stop())
			require.Equal(t, goclient.StatusCancelled, e.state(ids[0]).Status)
			require.Zero(t, e.targetRows(), "the target write rolled back")
			require.Equal(t, 1, rec.lostCount(goclient.LossStale))
		})
	}
}

// A terminal write that fails for another reason than a stale claim stops
// the heartbeat: the claim lapses at its expiry and is reclaimed with a new
// attempt, so a job whose completion keeps failing cannot loop forever.
func TestFailedTerminalWriteStopsTheHeartbeat(t *testing.T) {
	t.Parallel()
	e := setup(t, shortPolicy)
	ids := e.enqueue(1)
	rec := newRecorder()
	c := e.worker(goclient.Config{Observer: rec})
	finished := make(chan struct{}, 1)
	w, err := c.NewWorker(goclient.WorkerConfig{Queue: testQueue,
		TxHandler: func(ctx context.Context, tx pgx.Tx, job goclient.Job) error {
			defer func() { finished <- struct{}{} }()
			_, _ = tx.Exec(ctx, `SELECT 1/0`) // the handler swallows an error that aborted tx
			return nil
		}})
	require.NoError(t, err)
	stop := runWorker(t, w)
	<-finished
	require.NoError(t, stop())
	s := e.state(ids[0])
	require.Equal(t, goclient.StatusRunning, s.Status, "nothing was written")
	renewals := rec.renewalCount(goclient.RenewalRenewed)
	time.Sleep(2 * shortPolicy.interval)
	require.Equal(t, renewals, rec.renewalCount(goclient.RenewalRenewed), "the heartbeat stopped")
	waitFor(t, 2*shortPolicy.lease, "the lapsed claim to be reclaimable", func() bool {
		j, err := e.worker().Claim(context.Background(), testQueue)
		return err == nil && j.Attempt() == 2
	})
}

// Claim errors that retrying cannot fix stop the worker; a lost connection
// does not.
func TestWorkerStopsOnlyOnClaimErrorsRetryingCannotFix(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := setup(t, shortPolicy)
	c := e.worker()
	nop := func(context.Context, goclient.Job) error { return nil }

	w, err := c.NewWorker(goclient.WorkerConfig{Queue: "Not A Queue", Handler: nop})
	require.NoError(t, err)
	require.ErrorIs(t, w.Run(ctx), goclient.ErrInvalidArgument)

	// A policy the client cannot keep safe (a 2 s lease, a client that
	// accepts no lease under 3 s): the worker stops with the typed error,
	// the claim is released at once (not left to expire) and no handler runs.
	ids := e.enqueue(1)
	mismatched := e.worker(goclient.Config{LeaseDuration: 3 * time.Second, RenewalInterval: time.Second})
	var ran atomic.Int64
	w, err = mismatched.NewWorker(goclient.WorkerConfig{Queue: testQueue,
		Handler: func(context.Context, goclient.Job) error { ran.Add(1); return nil }})
	require.NoError(t, err)
	err = w.Run(ctx)
	require.ErrorIs(t, err, goclient.ErrConfigurationRejected)
	var rej *goclient.ConfigurationRejectedError
	require.ErrorAs(t, err, &rej)
	require.Equal(t, "lease duration must not be shorter than the client's LeaseDuration", rej.Message)
	require.Zero(t, ran.Load(), "the handler never ran")
	s := e.state(ids[0])
	require.Equal(t, goclient.StatusQueued, s.Status, "released, not left RUNNING until its expiry")
	require.True(t, s.LeaseExpiresAt.IsZero())

	proxy, proxied := newProxy(t, e.workerDB)
	proxy.set("cut")
	cut := e.client(e.pool(proxied))
	w, err = cut.NewWorker(goclient.WorkerConfig{Queue: testQueue, Handler: nop, PollInterval: 50 * time.Millisecond})
	require.NoError(t, err)
	stop := runWorker(t, w)
	time.Sleep(300 * time.Millisecond) // a few failed claims
	proxy.set("open")
	waitFor(t, 5*time.Second, "the job to be done once the connection is back", func() bool {
		total := 0
		rows, err := e.admin.Query(ctx, `SELECT count(*) FROM durable_jobs.job_record WHERE job_status = 'SUCCEEDED'`)
		require.NoError(t, err)
		for rows.Next() {
			require.NoError(t, rows.Scan(&total))
		}
		return total == 1
	})
	require.NoError(t, stop())
}

func TestNewWorkerRejectsBadSettings(t *testing.T) {
	t.Parallel()
	e := setup(t, shortPolicy)
	c := e.worker()
	nop := func(context.Context, goclient.Job) error { return nil }
	txNop := func(context.Context, pgx.Tx, goclient.Job) error { return nil }
	for _, tc := range []struct {
		cfg   goclient.WorkerConfig
		field string
		want  string
	}{
		{goclient.WorkerConfig{Queue: testQueue}, "Handler", "exactly one of Handler and TxHandler must be set"},
		{goclient.WorkerConfig{Queue: testQueue, Handler: nop, TxHandler: txNop}, "Handler", "exactly one of Handler and TxHandler must be set"},
		{goclient.WorkerConfig{Queue: testQueue, Handler: nop, Concurrency: -1}, "Concurrency", "concurrency must not be negative"},
		// A zero PollInterval is the default, so the refusal is of a
		// negative one and says so.
		{goclient.WorkerConfig{Queue: testQueue, Handler: nop, PollInterval: -time.Second}, "PollInterval", "poll interval must not be negative"},
		{goclient.WorkerConfig{Queue: testQueue, Handler: nop, ShutdownTimeout: -time.Second}, "ShutdownTimeout", "shutdown timeout must not be negative"},
	} {
		_, err := c.NewWorker(tc.cfg)
		require.ErrorIs(t, err, goclient.ErrInvalidConfig)
		var ce *goclient.ConfigError
		require.True(t, errors.As(err, &ce))
		require.Equal(t, tc.field, ce.Field)
		require.Equal(t, tc.want, ce.Message)
		require.Equal(t, "leasefence: invalid client configuration: "+tc.want, err.Error())
	}
	// Zero is the default (one job at a time), so the refusal says
	// "negative", which is what it refuses.
	_, err := c.NewWorker(goclient.WorkerConfig{Queue: testQueue, Handler: nop, Concurrency: 0})
	require.NoError(t, err, "a zero Concurrency is the default, not refused")
}

// A TxHandler error rolls its target rows back, then the error's terminal
// transition is written in a transaction of its own.
func TestTxHandlerErrorRollsBackAndFails(t *testing.T) {
	t.Parallel()
	e := setup(t, shortPolicy)
	e.targetTable()
	ids := e.enqueue(1)
	c := e.worker()
	w, err := c.NewWorker(goclient.WorkerConfig{Queue: testQueue,
		TxHandler: func(ctx context.Context, tx pgx.Tx, job goclient.Job) error {
			if _, err := tx.Exec(ctx, `INSERT INTO public.order_target VALUES ($1, $2)`, job.ID(), job.FencingGeneration()); err != nil {
				return err
			}
			return goclient.FailPermanently("schema_mismatch", nil)
		}})
	require.NoError(t, err)
	stop := runWorker(t, w)
	waitFor(t, 5*time.Second, "the job to fail", func() bool { return e.state(ids[0]).Status == goclient.StatusFailed })
	require.NoError(t, stop())
	require.Equal(t, "schema_mismatch", e.state(ids[0]).FailureReasonCode)
	require.Zero(t, e.targetRows())
}

// A worker started against a database whose bundle is older than the
// client's (version 26, before queue_next_due_in of migration 027) stops
// with ErrBundleMismatch at its first claim: the claim it sent with that
// call is rolled back, the job stays queued and no handler runs. Before,
// it logged "claim failed, retrying" every poll for as long as it ran.
func TestWorkerStopsOnADatabaseOlderThanItsBundle(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := setup(t, shortPolicy)
	conn := e.db.Conn(t)
	m, err := sqlbundle.NewMigrator(ctx, conn)
	require.NoError(t, err)
	require.NoError(t, m.MigrateTo(ctx, 26))
	ids := e.enqueue(1)
	var ran atomic.Int64
	w, err := e.worker().NewWorker(goclient.WorkerConfig{Queue: testQueue, PollInterval: 50 * time.Millisecond,
		Handler: func(context.Context, goclient.Job) error { ran.Add(1); return nil }})
	require.NoError(t, err)
	runCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	err = w.Run(runCtx)
	require.ErrorIs(t, err, goclient.ErrBundleMismatch)
	require.NoError(t, runCtx.Err(), "the worker stopped by itself, not at the test's deadline")
	var dbErr *goclient.DatabaseError
	require.ErrorAs(t, err, &dbErr)
	require.Equal(t, "42883", dbErr.PgError.Code)
	require.Zero(t, ran.Load(), "no handler ran")
	require.Equal(t, goclient.StatusQueued, e.state(ids[0]).Status, "the claim sent with the failed call was rolled back")

	// Without the schema at all (never migrated): the same error, from any call.
	_, err = e.admin.Exec(ctx, `DROP SCHEMA durable_jobs CASCADE`)
	require.NoError(t, err)
	_, err = e.worker().Claim(ctx, testQueue)
	require.ErrorIs(t, err, goclient.ErrBundleMismatch)
	require.ErrorContains(t, err, "SQLSTATE 3F000")
}
