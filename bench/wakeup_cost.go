package bench

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	sqlbundle "github.com/mightyetl/leasefence/sql"
)

// wakeupCost answers "the wake-up triggers of migration 027 must not slow
// renewals nor enqueue noticeably": the same renewals, claims and enqueues
// against two databases of this cluster made alike at the newest version,
// one as installed (the triggers) and one whose two wake-up triggers were
// dropped, interleaved in this run. The first has a session LISTENing on the
// queue's wake-up channel the whole time, as a worker would, so every
// notifying COMMIT signals a listener. Ratios are the throughput with the
// triggers over the throughput without.
func (r *runner) wakeupCost(ctx context.Context) error {
	newest := sqlbundle.NewestVersion()
	setup := time.Now()
	with, err := r.e.bundleDB(ctx, "lf_wakeup_on", newest)
	if err != nil {
		return err
	}
	without, err := r.e.bundleDB(ctx, "lf_wakeup_off", newest)
	if err != nil {
		return err
	}
	if _, err := without.admin.Exec(ctx, `DROP TRIGGER job_record_wake_workers ON durable_jobs.job_record;
		DROP TRIGGER job_record_wake_workers_after_insert ON durable_jobs.job_record`); err != nil {
		return err
	}
	const on, off = 1, 0
	dbs := map[int32]*dbPools{on: with, off: without}
	const queue = "bench_wakeup"
	claims := map[int32]claimSet{}
	for _, v := range []int32{off, on} {
		d := dbs[v]
		if err := d.setPolicy(ctx, queue, "1 hour", "10 minutes"); err != nil {
			return fmt.Errorf("database %d: %w", v, err)
		}
		set, err := d.claimJobs(ctx, queue, renewClaims)
		if err != nil {
			return fmt.Errorf("database %d: %w", v, err)
		}
		claims[v] = set
		if err := d.insertDueJobs(ctx, queue, r.dueJobsPerSide(1)); err != nil {
			return fmt.Errorf("database %d: %w", v, err)
		}
		if err := d.analyze(ctx); err != nil {
			return err
		}
	}
	held, err := with.worker.Acquire(ctx)
	if err != nil {
		return err
	}
	defer held.Release()
	listener := held.Conn()
	sum := md5.Sum([]byte(queue))
	if _, err := listener.Exec(ctx, "LISTEN "+pgx.Identifier{"leasefence_wake_" + hex.EncodeToString(sum[:])[:16]}.Sanitize()); err != nil {
		return err
	}
	lctx, stopListening := context.WithCancel(ctx)
	defer stopListening()
	listened := make(chan int, 1)
	go func() {
		n := 0
		for {
			if _, err := listener.WaitForNotification(lctx); err != nil {
				listened <- n
				return
			}
			n++
		}
	}()
	r.setupDone("version database, claims, due jobs and a listener", setup)
	renewBatch := func(d *dbPools, set claimSet) load {
		return load{pool: d.worker, clients: 1, op: func(ctx context.Context, c *pgx.Conn, _, iter int) (int, error) {
			lo := (iter % (renewClaims / batchSize)) * batchSize
			return renewSlice(ctx, c, set, lo)
		}}
	}
	enqueueOne := func(d *dbPools, clients int) load {
		return load{pool: d.admin, clients: clients, op: func(ctx context.Context, c *pgx.Conn, _, _ int) (int, error) {
			_, err := c.Exec(ctx, sqlEnqueueOne, queue)
			return 1, err
		}}
	}
	enqueueBatch := func(d *dbPools) load {
		return load{pool: d.admin, clients: 1, op: func(ctx context.Context, c *pgx.Conn, _, _ int) (int, error) {
			_, err := c.Exec(ctx, sqlEnqueueBatch, queue, batchSize)
			return batchSize, err
		}}
	}
	label := "with the wake-up triggers (and a listener) against without"
	for _, c := range []struct {
		fn, unit   string
		ours, base load
	}{
		{"renew_job_lease", "renewal", renewOne(dbs[on], claims[on]), renewOne(dbs[off], claims[off])},
		{"renew_job_leases (batch of 100)", "claim", renewBatch(dbs[on], claims[on]), renewBatch(dbs[off], claims[off])},
		{"claim_next_job", "claim", claimOne(dbs[on], queue), claimOne(dbs[off], queue)},
		{"enqueue_job, 1 client", "job", enqueueOne(dbs[on], 1), enqueueOne(dbs[off], 1)},
		{"enqueue_job, 4 clients", "job", enqueueOne(dbs[on], 4), enqueueOne(dbs[off], 4)},
		{"enqueue_jobs (batch of 100)", "job", enqueueBatch(dbs[on]), enqueueBatch(dbs[off])},
	} {
		if err := r.compare(ctx, Comparison{Group: "wakeup", Name: c.fn + ", " + label,
			Ours: c.fn + " with the wake-up triggers", Baseline: c.fn + " without them",
			Unit: c.unit}, c.ours, c.base); err != nil {
			return err
		}
	}
	stopListening()
	r.cfg.Logf("bench: the listener heard %d notifications", <-listened)
	return nil
}

// sqlEnqueueOne enqueues one job of a queue, each call its own transaction.
const sqlEnqueueOne = `SELECT durable_jobs.enqueue_job($1, '{}')`

// sqlEnqueueBatch enqueues $2 jobs of a queue in one enqueue_jobs call.
const sqlEnqueueBatch = `SELECT durable_jobs.enqueue_jobs($1, array_fill('{}'::jsonb, ARRAY[$2::integer]))`
