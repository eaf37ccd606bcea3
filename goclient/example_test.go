package goclient_test

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/mightyetl/leasefence/goclient"
	"github.com/mightyetl/leasefence/internal/testdb"
)

// must stops an example on an error; real code handles the error.
func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// exampleSetup makes a throwaway database with the bundle, a 3 s / 1 s lease
// policy for etl.orders, and pools for a producer and a worker login.
func exampleSetup(ctx context.Context) (db *testdb.DB, producerPool, workerPool *pgxpool.Pool, cleanup func()) {
	db = must(testdb.Open(ctx))
	admin := must(pgx.Connect(ctx, db.URL))
	must(admin.Exec(ctx, `SELECT durable_jobs.set_queue_lease_policy('etl.orders', '3 s', '1 s', '1 h', true, 'example')`))
	producerPool = must(goclient.NewPool(ctx, must(db.CreateLogin(ctx, "durable_job_producer")), 0))
	workerPool = must(goclient.NewPool(ctx, must(db.CreateLogin(ctx, "durable_job_worker")), 0))
	return db, producerPool, workerPool, func() {
		producerPool.Close()
		workerPool.Close()
		_ = admin.Close(ctx)
		_ = db.Drop(ctx)
	}
}

// leaseOptions match the etl.orders policy of exampleSetup.
var leaseOptions = []goclient.Option{goclient.WithLease(3*time.Second, time.Second), goclient.WithSafetyMargin(time.Second)}

// A worker claims jobs, runs the handler under a lease the heartbeat keeps
// alive, and completes the job when the handler returns nil.
func Example_worker() {
	ctx := context.Background()
	_, producerPool, workerPool, cleanup := exampleSetup(ctx)
	defer cleanup()

	producer := must(goclient.New(producerPool, leaseOptions...))
	defer producer.Close()
	id := must(producer.Enqueue(ctx, goclient.EnqueueParams{Queue: "etl.orders", Payload: []byte(`{"order": 1}`)}))

	client := must(goclient.New(workerPool, leaseOptions...))
	defer client.Close()
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
	for must(producer.State(ctx, id)).Status != goclient.StatusSucceeded {
		time.Sleep(10 * time.Millisecond)
	}
	stop() // graceful shutdown
	fmt.Println("run:", <-done)
	fmt.Println("job:", must(producer.State(ctx, id)).Status)
	// Output:
	// loading {"order": 1} (attempt 1)
	// run: <nil>
	// job: SUCCEEDED
}

// A TxHandler writes its target rows in the same transaction as
// complete_job: both commit, or (for a stale claim) neither does.
func Example_completeInTransaction() {
	ctx := context.Background()
	db, producerPool, workerPool, cleanup := exampleSetup(ctx)
	defer cleanup()
	admin := must(pgx.Connect(ctx, db.URL))
	defer admin.Close(ctx)
	must(admin.Exec(ctx, `CREATE TABLE public.order_totals (job_record_id bigint PRIMARY KEY, fencing_generation bigint, total numeric)`))
	must(admin.Exec(ctx, `GRANT INSERT ON public.order_totals TO durable_job_worker`))

	producer := must(goclient.New(producerPool, leaseOptions...))
	defer producer.Close()
	id := must(producer.Enqueue(ctx, goclient.EnqueueParams{Queue: "etl.orders", Payload: []byte(`{"total": 42.5}`)}))

	client := must(goclient.New(workerPool, leaseOptions...))
	defer client.Close()
	worker := must(client.NewWorker(goclient.WorkerConfig{
		Queue: "etl.orders",
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
	for must(producer.State(ctx, id)).Status != goclient.StatusSucceeded {
		time.Sleep(10 * time.Millisecond)
	}
	stop()
	<-done

	var total string
	var generation int64
	must(0, admin.QueryRow(ctx, `SELECT total::text, fencing_generation FROM public.order_totals`).Scan(&total, &generation))
	fmt.Println("total:", total, "generation:", generation)
	fmt.Println("job:", must(producer.State(ctx, id)).Status)
	// Output:
	// total: 42.5 generation: 1
	// job: SUCCEEDED
}

// Without a Worker: claim, keep the claim alive while working under the
// lease's context, write the outcome, stop the heartbeat.
func ExampleClient_Keep() {
	ctx := context.Background()
	_, producerPool, workerPool, cleanup := exampleSetup(ctx)
	defer cleanup()
	producer := must(goclient.New(producerPool, leaseOptions...))
	defer producer.Close()
	must(producer.Enqueue(ctx, goclient.EnqueueParams{Queue: "etl.orders", Payload: []byte(`{}`)}))

	client := must(goclient.New(workerPool, leaseOptions...))
	defer client.Close()
	job := must(client.Claim(ctx, "etl.orders"))
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
	fmt.Println(job.Claim())
	// Output:
	// still trusted: true
	// complete: <nil>
	// leasefence.Claim{job_record_id: 1, queue: "etl.orders", lease_fencing_generation: 1, attempt_number: 1, lease_claim_token: [REDACTED]}
}
