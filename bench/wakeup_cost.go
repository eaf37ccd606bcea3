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

// wakeupCost answers "the wake-up trigger of migration 027 must not slow
// renewals nor enqueue noticeably": the same renewals, claims and enqueues
// against a database at the newest version (the trigger) and one at the
// version before (none), interleaved in this run. The newest database has
// a session LISTENing on the queue's wake-up channel the whole time, as a
// worker would, so every enqueue's COMMIT signals a listener. Ratios are
// the newest version's throughput over the version before's.
func (r *runner) wakeupCost(ctx context.Context) error {
	newest := sqlbundle.NewestVersion()
	before := newest - 1
	setup := time.Now()
	old, err := r.e.versionDB(ctx, before)
	if err != nil {
		return err
	}
	dbs := map[int32]*dbPools{newest: &r.e.dbPools, before: old}
	const queue = "bench_wakeup"
	claims := map[int32]claimSet{}
	for _, v := range []int32{before, newest} {
		d := dbs[v]
		if err := d.setPolicy(ctx, queue, "1 hour", "10 minutes"); err != nil {
			return fmt.Errorf("version %d: %w", v, err)
		}
		set, err := d.claimJobs(ctx, queue, renewClaims)
		if err != nil {
			return fmt.Errorf("version %d: %w", v, err)
		}
		claims[v] = set
		if err := d.insertDueJobs(ctx, queue, r.dueJobsPerSide(1)); err != nil {
			return fmt.Errorf("version %d: %w", v, err)
		}
		if err := d.analyze(ctx); err != nil {
			return err
		}
	}
	listener, err := pgx.Connect(ctx, r.e.workerURL)
	if err != nil {
		return err
	}
	defer func() { _ = listener.Close(context.WithoutCancel(ctx)) }()
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
	label := fmt.Sprintf("version %d (wake-up trigger, a listener) against version %d", newest, before)
	for _, c := range []struct {
		fn, unit   string
		ours, base load
	}{
		{"renew_job_lease", "renewal", renewOne(dbs[newest], claims[newest]), renewOne(dbs[before], claims[before])},
		{"renew_job_leases (batch of 100)", "claim", renewBatch(dbs[newest], claims[newest]), renewBatch(dbs[before], claims[before])},
		{"claim_next_job", "claim", claimOne(dbs[newest], queue), claimOne(dbs[before], queue)},
		{"enqueue_job, 1 client", "job", enqueueOne(dbs[newest], 1), enqueueOne(dbs[before], 1)},
		{"enqueue_job, 4 clients", "job", enqueueOne(dbs[newest], 4), enqueueOne(dbs[before], 4)},
		{"enqueue_jobs (batch of 100)", "job", enqueueBatch(dbs[newest]), enqueueBatch(dbs[before])},
	} {
		if err := r.compare(ctx, Comparison{Group: "wakeup", Name: c.fn + ", " + label,
			Ours: fmt.Sprintf("%s of version %d", c.fn, newest), Baseline: fmt.Sprintf("%s of version %d", c.fn, before),
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
