// Command etlworker is a leasefence worker to copy into your own module: it
// claims the jobs of one queue and loads each job's order into a target
// table in the same transaction that completes the job, so the rows and
// the job's SUCCEEDED commit together, or (when the claim went stale)
// neither does.
//
// It uses only the exported API of github.com/mightyetl/leasefence/goclient
// and reads its settings from the environment:
//
//	LEASEFENCE_DATABASE_URL      a login granted durable_job_worker, with INSERT on
//	                             public.etl_order_totals (required)
//	LEASEFENCE_QUEUE             the queue to work (default etl.orders)
//	LEASEFENCE_SAFETY_MARGIN     trusted lease time kept in reserve (default 5s)
//	LEASEFENCE_CONCURRENCY       jobs run at once (default 4)
//
// The lease duration and renewal interval are not among them: they are the
// queue's lease policy in the database (leasectl policy set), which every
// claim returns and the worker follows.
//
// The target table, made once by the database owner:
//
//	CREATE TABLE public.etl_order_totals (
//	    order_id bigint PRIMARY KEY, customer_id bigint NOT NULL, total_cents bigint NOT NULL,
//	    job_record_id bigint NOT NULL UNIQUE, lease_fencing_generation bigint NOT NULL);
//	GRANT INSERT ON public.etl_order_totals TO durable_job_worker;
//
// A job's payload is an order: {"order_id": 7, "customer_id": 3, "lines":
// [{"sku": "A-1", "quantity": 2, "unit_price_cents": 450}]}. A payload that
// is not such an order fails the job with reason payload_decode_failed;
// an order without lines fails with reason order_without_lines.
//
// Run it with
//
//	LEASEFENCE_DATABASE_URL=postgres://etl_worker@db/app go run ./examples/etlworker
//
// and stop it with Ctrl-C (SIGINT) or SIGTERM: it stops claiming, lets the
// running jobs finish (up to 10 s), releases the rest and exits.
package main
