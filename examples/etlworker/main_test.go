package main

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/mightyetl/leasefence/goclient"
	"github.com/mightyetl/leasefence/internal/testdb"
)

func TestMain(m *testing.M) { os.Exit(testdb.Run(m)) }

// syncBuffer is a bytes.Buffer safe for the logger's concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestETLWorkerLoadsOrdersInTheCompletingTransaction runs the example as a
// user would (a worker login, the URL in the environment, the bundle's
// default policy) against a throwaway PostgreSQL: three orders end as rows
// of the target table, each with its job's id and fencing generation and
// the job SUCCEEDED; an order without lines and a payload that is not an
// order end FAILED with their reason codes and write no row; a second job
// for an order already loaded fails its plain INSERT on the unique key and
// is retried, leaving the row as it was. Its log names the jobs but never a
// payload value.
func TestETLWorkerLoadsOrdersInTheCompletingTransaction(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	db := testdb.New(t)
	admin := db.Pool(t)
	_, err := admin.Exec(ctx, `CREATE TABLE public.etl_order_totals (
	    order_id bigint PRIMARY KEY, customer_id bigint NOT NULL, total_cents bigint NOT NULL,
	    job_record_id bigint NOT NULL UNIQUE, lease_fencing_generation bigint NOT NULL);
	GRANT INSERT ON public.etl_order_totals TO durable_job_worker`)
	require.NoError(t, err)

	producer, err := goclient.NewClient(db.LoginPool(t, "durable_job_producer"), goclient.Config{})
	require.NoError(t, err)
	defer producer.Close()
	producerAdmin, err := goclient.NewAdmin(db.LoginPool(t, "durable_job_producer")) // State: the producer role
	require.NoError(t, err)
	enqueue := func(payload string) int64 {
		id, err := producer.Enqueue(ctx, goclient.EnqueueParams{Queue: "etl.orders", Payload: []byte(payload)})
		require.NoError(t, err)
		return id
	}
	orders := map[int64]int64{} // job id -> expected total in cents
	orders[enqueue(`{"order_id": 1, "customer_id": 9, "lines": [{"sku": "A-1", "quantity": 2, "unit_price_cents": 450}]}`)] = 900
	orders[enqueue(`{"order_id": 2, "customer_id": 9, "lines": [{"sku": "B-2", "quantity": 1, "unit_price_cents": 1999},
		{"sku": "C-3", "quantity": 3, "unit_price_cents": 1}]}`)] = 2002
	orders[enqueue(`{"order_id": 3, "customer_id": 4, "lines": [{"sku": "A-1", "quantity": 10, "unit_price_cents": 450}]}`)] = 4500
	noLines := enqueue(`{"order_id": 4, "customer_id": 4, "lines": []}`)
	notAnOrder := enqueue(`{"order_id": "secret-customer-note", "lines": "x"}`)

	env := map[string]string{"LEASEFENCE_DATABASE_URL": db.LoginURL(t, "durable_job_worker"), "LEASEFENCE_CONCURRENCY": "2"}
	var logs syncBuffer
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- run(runCtx, func(k string) string { return env[k] }, slog.New(slog.NewTextHandler(&logs, nil)))
	}()

	wantStatus := map[int64]goclient.JobStatus{noLines: goclient.StatusFailed, notAnOrder: goclient.StatusFailed}
	for id := range orders {
		wantStatus[id] = goclient.StatusSucceeded
	}
	require.Eventually(t, func() bool {
		for id, want := range wantStatus {
			state, err := producerAdmin.State(ctx, id)
			if err != nil || state.Status != want {
				return false
			}
		}
		return true
	}, time.Minute, 20*time.Millisecond, "every job reaches its terminal status; the log:\n%s", &logs)
	// Order 1 again: the plain INSERT meets the unique key and the job is
	// retried, where an upsert would have overwritten the row unseen.
	again := enqueue(`{"order_id": 1, "customer_id": 9, "lines": [{"sku": "A-1", "quantity": 5, "unit_price_cents": 450}]}`)
	require.Eventually(t, func() bool {
		state, err := producerAdmin.State(ctx, again)
		return err == nil && state.Status == goclient.StatusRetryScheduled && state.FailureReasonCode == "handler_error"
	}, time.Minute, 20*time.Millisecond, "the second write of order 1 fails; the log:\n%s", &logs)
	stop()
	require.NoError(t, <-done)

	rows, err := admin.Query(ctx, `SELECT job_record_id, total_cents, lease_fencing_generation FROM public.etl_order_totals`)
	require.NoError(t, err)
	got := map[int64]int64{}
	for rows.Next() {
		var id, total, generation int64
		require.NoError(t, rows.Scan(&id, &total, &generation))
		require.Equal(t, int64(1), generation, "each row carries its claim's fencing generation")
		got[id] = total
	}
	require.NoError(t, rows.Err())
	require.Equal(t, orders, got, "exactly the three orders with lines are loaded, with their totals")

	for id, reason := range map[int64]string{noLines: "order_without_lines", notAnOrder: goclient.ReasonPayloadDecodeFailed} {
		state, err := producerAdmin.State(ctx, id)
		require.NoError(t, err)
		require.Equal(t, reason, state.FailureReasonCode)
	}
	log := logs.String()
	for _, want := range []string{"etlworker: working", "leasefence: job claimed", "leasefence: job completed",
		"leasefence: job failed", "reason_code=payload_decode_failed", "reason_code=order_without_lines",
		"leasefence: worker stopped", fmt.Sprintf("job_record_id=%d", notAnOrder)} {
		require.Contains(t, log, want)
	}
	for _, secret := range []string{"secret-customer-note", "A-1", "unit_price_cents"} {
		require.NotContains(t, log, secret, "the log never carries a payload value")
	}
	require.NotContains(t, strings.ToLower(log), "password")
}

// TestETLWorkerRefusesMissingOrBadSettings: without a URL, or with a
// setting that does not parse, run returns a one-line error and opens no
// connection.
func TestETLWorkerRefusesMissingOrBadSettings(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{}, "LEASEFENCE_DATABASE_URL is not set"},
		{map[string]string{"LEASEFENCE_DATABASE_URL": "postgres://x@127.0.0.1:1/db", "LEASEFENCE_SAFETY_MARGIN": "soon"}, "LEASEFENCE_SAFETY_MARGIN"},
		{map[string]string{"LEASEFENCE_DATABASE_URL": "postgres://x@127.0.0.1:1/db", "LEASEFENCE_CONCURRENCY": "many"}, "LEASEFENCE_CONCURRENCY"},
		{map[string]string{"LEASEFENCE_DATABASE_URL": "::not a url::"}, "parse LEASEFENCE_DATABASE_URL"},
		{map[string]string{"LEASEFENCE_DATABASE_URL": "postgres://x@127.0.0.1:1/db", "LEASEFENCE_SAFETY_MARGIN": "-1s"}, "safety margin must be greater than zero"},
		{map[string]string{"LEASEFENCE_DATABASE_URL": "postgres://x@127.0.0.1:1/db", "LEASEFENCE_CONCURRENCY": "-1"}, "LEASEFENCE_CONCURRENCY must be at least 1"},
	} {
		err := run(context.Background(), func(k string) string { return tc.env[k] }, slog.New(slog.DiscardHandler))
		require.ErrorContains(t, err, tc.want)
	}
}
