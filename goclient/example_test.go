package goclient_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mightyetl/leasefence/goclient"
)

// The examples use only the package's exported API and read the database
// from LEASEFENCE_EXAMPLE_DATABASE_URL, so you can copy them into your own
// module. They expect what the README's "Getting started" sets up: the
// bundle applied (leasectl migrate up), a login role granted
// durable_job_producer and durable_job_worker, 3 s / 1 s lease policies for
// the queues etl.orders, etl.totals, etl.keep and etl.typed, and a table
//
//	CREATE TABLE public.order_totals (job_record_id bigint PRIMARY KEY, fencing_generation bigint, total numeric);
//	GRANT INSERT ON public.order_totals TO durable_job_worker;
//
// In this repository's tests, TestMain (main_test.go) prepares exactly that
// on a throwaway PostgreSQL and sets the variable.

// must stops an example on an error; real code handles the error.
func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// The examples' queues have a short lease policy, set once by an operator,
// the one place lease settings live:
//
//	leasectl policy set --queue etl.orders --lease-duration 3s --renewal-interval 1s --reason "examples"
//
// The client takes the lease and the renewal interval from each claim; it
// only needs a safety margin that fits a 3 s lease (the default, 5 s, suits
// the bundle's default policy of 30 s renewed every 10 s).
var clientConfig = goclient.Config{SafetyMargin: time.Second}

// waitForStatus polls the job's state until it has status (examples only; a
// producer normally does not wait).
func waitForStatus(ctx context.Context, admin *goclient.Admin, id int64, status goclient.JobStatus) {
	for must(admin.State(ctx, id)).Status != status {
		time.Sleep(10 * time.Millisecond)
	}
}

// A worker claims jobs, runs the handler under a lease the heartbeat keeps
// alive, and completes the job when the handler returns nil.
func Example_worker() {
	ctx := context.Background()
	pool := must(goclient.NewPool(ctx, os.Getenv("LEASEFENCE_EXAMPLE_DATABASE_URL"), 0))
	defer pool.Close()
	client := must(goclient.NewClient(pool, clientConfig))
	defer client.Close()
	admin := must(goclient.NewAdmin(pool)) // State is an operator call

	id := must(client.Enqueue(ctx, goclient.EnqueueParams{Queue: "etl.orders", Payload: []byte(`{"order": 1}`)}))

	handled := make(chan struct{})
	worker := must(client.NewWorker(goclient.WorkerConfig{
		Queue:       "etl.orders",
		Concurrency: 4,
		Handler: func(ctx context.Context, job goclient.Job) error {
			fmt.Printf("loading %s (attempt %d)\n", job.Payload(), job.Attempt())
			close(handled)
			return nil
		},
	}))
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error)
	go func() { done <- worker.Run(runCtx) }()

	<-handled
	waitForStatus(ctx, admin, id, goclient.StatusSucceeded)
	stop() // graceful shutdown
	fmt.Println("run:", <-done)
	fmt.Println("job:", must(admin.State(ctx, id)).Status)
	// Output:
	// loading {"order": 1} (attempt 1)
	// run: <nil>
	// job: SUCCEEDED
}

// A TxHandler writes its target rows in the same transaction as
// complete_job: both commit, or (for a stale claim) neither does.
func Example_completeInTransaction() {
	ctx := context.Background()
	pool := must(goclient.NewPool(ctx, os.Getenv("LEASEFENCE_EXAMPLE_DATABASE_URL"), 0))
	defer pool.Close()
	client := must(goclient.NewClient(pool, clientConfig))
	defer client.Close()
	admin := must(goclient.NewAdmin(pool)) // State is an operator call

	id := must(client.Enqueue(ctx, goclient.EnqueueParams{Queue: "etl.totals", Payload: []byte(`{"total": 42.5}`)}))

	worker := must(client.NewWorker(goclient.WorkerConfig{
		Queue: "etl.totals",
		TxHandler: func(ctx context.Context, tx pgx.Tx, job goclient.Job) error {
			_, err := tx.Exec(ctx, `INSERT INTO public.order_totals
				SELECT $1, $2, (doc->>'total')::numeric FROM (SELECT $3::jsonb AS doc) d`,
				job.ID(), job.FencingGeneration(), job.Payload())
			return err // the worker calls complete_job in tx, then commits
		},
	}))
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error)
	go func() { done <- worker.Run(runCtx) }()
	waitForStatus(ctx, admin, id, goclient.StatusSucceeded)
	stop()
	<-done

	fmt.Println("job:", must(admin.State(ctx, id)).Status)
	// Output:
	// job: SUCCEEDED
}

// JSONTxHandler decodes the payload into your own type first; a payload
// that does not decode fails the job with reason payload_decode_failed.
func ExampleJSONTxHandler() {
	ctx := context.Background()
	pool := must(goclient.NewPool(ctx, os.Getenv("LEASEFENCE_EXAMPLE_DATABASE_URL"), 0))
	defer pool.Close()
	client := must(goclient.NewClient(pool, clientConfig))
	defer client.Close()
	admin := must(goclient.NewAdmin(pool)) // State is an operator call

	type orderTotal struct {
		Total float64 `json:"total"`
	}
	good := must(client.Enqueue(ctx, goclient.EnqueueParams{Queue: "etl.typed", Payload: []byte(`{"total": 7.25}`)}))
	bad := must(client.Enqueue(ctx, goclient.EnqueueParams{Queue: "etl.typed", Payload: []byte(`{"total": "seven"}`)}))

	worker := must(client.NewWorker(goclient.WorkerConfig{
		Queue: "etl.typed",
		TxHandler: goclient.JSONTxHandler(func(ctx context.Context, tx pgx.Tx, job goclient.Job, o orderTotal) error {
			_, err := tx.Exec(ctx, `INSERT INTO public.order_totals VALUES ($1, $2, $3)`,
				job.ID(), job.FencingGeneration(), o.Total)
			return err
		}),
	}))
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error)
	go func() { done <- worker.Run(runCtx) }()
	waitForStatus(ctx, admin, good, goclient.StatusSucceeded)
	waitForStatus(ctx, admin, bad, goclient.StatusFailed)
	stop()
	<-done

	state := must(admin.State(ctx, bad))
	fmt.Println("good:", must(admin.State(ctx, good)).Status)
	fmt.Println("bad:", state.Status, state.FailureReasonCode)
	// Output:
	// good: SUCCEEDED
	// bad: FAILED payload_decode_failed
}

// Without a Worker: claim, keep the claim alive while working under the
// lease's context, write the outcome, stop the heartbeat.
func ExampleClient_Keep() {
	ctx := context.Background()
	pool := must(goclient.NewPool(ctx, os.Getenv("LEASEFENCE_EXAMPLE_DATABASE_URL"), 0))
	defer pool.Close()
	client := must(goclient.NewClient(pool, clientConfig))
	defer client.Close()
	must(client.Enqueue(ctx, goclient.EnqueueParams{Queue: "etl.keep", Payload: []byte(`{}`)}))

	job := must(client.Claim(ctx, "etl.keep"))
	lease := client.Keep(ctx, job)
	defer lease.Stop()

	select { // work longer than one lease; the heartbeat renews
	case <-lease.Context().Done():
		fmt.Println("lost:", context.Cause(lease.Context()))
		return
	case <-time.After(4 * time.Second):
	}
	fmt.Println("still trusted:", lease.Err() == nil)
	fmt.Println("complete:", client.Complete(ctx, job.Claim(), []byte(`{"rows": 10}`)))
	printed := fmt.Sprint(job.Claim())
	fmt.Println("printed claim hides its token:", strings.Contains(printed, "lease_claim_token: [REDACTED]"))
	// Output:
	// still trusted: true
	// complete: <nil>
	// printed claim hides its token: true
}

// EnqueueTx enqueues in your own transaction: the job commits with your
// rows, or, rolled back, never existed.
func ExampleClient_EnqueueTx() {
	ctx := context.Background()
	pool := must(goclient.NewPool(ctx, os.Getenv("LEASEFENCE_EXAMPLE_DATABASE_URL"), 0))
	defer pool.Close()
	client := must(goclient.NewClient(pool, clientConfig))
	defer client.Close()
	admin := must(goclient.NewAdmin(pool))

	tx := must(pool.Begin(ctx))
	id := must(client.EnqueueTx(ctx, tx, goclient.EnqueueParams{Queue: "etl.tx", Payload: []byte(`{"order": 9}`)}))
	fmt.Println("rolled back:", tx.Rollback(ctx)) // your own writes failed, say
	_, err := admin.State(ctx, id)
	fmt.Println("no job:", errors.Is(err, goclient.ErrJobNotFound))
	// Output:
	// rolled back: <nil>
	// no job: true
}
