package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/mightyetl/leasefence/goclient"
)

// PickupResult is the pickup comparison (issue 37): sparse jobs, each
// enqueued alone about pickupGap after the last, on an idle worker of each
// side at its defaults; the time from the enqueue's commit to the
// handler's first line, and the transactions an idle worker costs.
type PickupResult struct {
	// Jobs is the number of jobs of each side.
	Jobs int `json:"jobs"`
	// Gap is the pause between two enqueues.
	Gap string `json:"gap"`
	// Workers is both sides' concurrency.
	Workers int `json:"workers"`
	// Ours is our side's figures.
	Ours PickupSide `json:"ours"`
	// River is River's figures.
	River PickupSide `json:"river"`
}

// PickupSide is one side's pickup figures.
type PickupSide struct {
	// P50MS is the pickup latency's median in milliseconds: from just
	// after the enqueue's commit returned to the first line of the job's
	// handler, by the Go monotonic clock of one process.
	P50MS float64 `json:"p50_ms"`
	// P99MS is the pickup latency's 99th percentile in milliseconds.
	P99MS float64 `json:"p99_ms"`
	// IdleTxPerSec is the transactions a second (pg_stat_database,
	// xact_commit + xact_rollback of the side's database) while the
	// started worker had nothing to do, over IdleWindow.
	IdleTxPerSec float64 `json:"idle_tx_per_sec"`
	// IdleWindow is how long the idle cost was counted.
	IdleWindow string `json:"idle_window"`
}

// Pickup settings: the 200 jobs about 50 ms apart, 10 workers,
// each side counted idle for pickupIdle first (pg_stat_database takes up
// to a second to see a backend's transactions: the window is long enough
// for that to stay small).
const (
	pickupJobs    = 200
	pickupGap     = 50 * time.Millisecond
	pickupWorkers = 10
	pickupIdle    = 10 * time.Second
)

// pickup runs the pickup comparison: ours (goclient.Worker at its defaults,
// Concurrency 10: a 1 s poll, the wake-up listener of migration 027) and
// River (the peer, -mode pickup, MaxWorkers 10, its defaults) in the same
// run, one after the other.
func (r *runner) pickup(ctx context.Context) error {
	bin, err := r.riverPeer(ctx)
	if err != nil {
		return err
	}
	if _, err := r.e.admin.Exec(ctx, `CREATE DATABASE river_pickup`); err != nil {
		return err
	}
	res := PickupResult{Jobs: pickupJobs, Gap: pickupGap.String(), Workers: pickupWorkers}
	t0 := time.Now()
	if res.Ours, err = r.oursPickup(ctx); err != nil {
		return err
	}
	t1 := time.Now()
	if res.River, err = runRiverPickup(ctx, bin, withPoolSize(r.e.cluster.URL("river_pickup"))); err != nil {
		return err
	}
	r.measured += time.Since(t0)
	r.cfg.Logf("bench: pickup ours %s, River %s", t1.Sub(t0).Round(100*time.Millisecond), time.Since(t1).Round(100*time.Millisecond))
	r.cfg.Logf("bench: pickup of %d jobs %s apart: ours p50 %.1f ms p99 %.1f ms, idle %.2f tx/s; River p50 %.1f ms p99 %.1f ms, idle %.2f tx/s",
		pickupJobs, pickupGap, res.Ours.P50MS, res.Ours.P99MS, res.Ours.IdleTxPerSec, res.River.P50MS, res.River.P99MS, res.River.IdleTxPerSec)
	r.rep.Pickup = append(r.rep.Pickup, res)
	return nil
}

// oursPickup starts a goclient worker at its defaults on an empty queue,
// counts its idle transactions, then enqueues pickupJobs jobs one by one
// (as the superuser, each its own transaction) pickupGap apart and times
// each from its enqueue's return to its handler's first line.
func (r *runner) oursPickup(ctx context.Context) (PickupSide, error) {
	const queue = "bench_pickup"
	pool, err := goclient.NewPool(ctx, withPoolSize(r.e.workerURL), 10*time.Second)
	if err != nil {
		return PickupSide{}, err
	}
	defer pool.Close()
	client, err := goclient.NewClient(pool, goclient.Config{OwnerID: "bench-pickup"})
	if err != nil {
		return PickupSide{}, err
	}
	defer client.Close()
	var mu sync.Mutex
	started := map[int64]time.Time{}
	all := make(chan struct{})
	w, err := client.NewWorker(goclient.WorkerConfig{Queue: queue, Concurrency: pickupWorkers,
		Handler: func(_ context.Context, job goclient.Job) error {
			at := time.Now()
			mu.Lock()
			defer mu.Unlock()
			started[job.ID()] = at
			if len(started) == pickupJobs {
				close(all)
			}
			return nil
		}})
	if err != nil {
		return PickupSide{}, err
	}
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	done := make(chan error, 1)
	go func() { done <- w.Run(wctx) }()
	var side PickupSide
	if side.IdleTxPerSec, err = idleTxPerSec(ctx, r.e.admin); err != nil {
		return side, err
	}
	side.IdleWindow = pickupIdle.String()
	enqueued := make(map[int64]time.Time, pickupJobs)
	for range pickupJobs {
		var id int64
		if err := r.e.admin.QueryRow(ctx, `SELECT durable_jobs.enqueue_job($1, '{}')`, queue).Scan(&id); err != nil {
			return side, err
		}
		enqueued[id] = time.Now()
		time.Sleep(pickupGap)
	}
	select {
	case <-all:
	case err := <-done:
		return side, fmt.Errorf("the worker stopped before every job started: %v", err)
	case <-time.After(time.Minute):
		return side, fmt.Errorf("not every job started within a minute")
	}
	stop()
	if err := <-done; err != nil {
		return side, err
	}
	var ms []float64
	for id, at := range enqueued {
		ms = append(ms, float64(started[id].Sub(at).Microseconds())/1000)
	}
	side.P50MS, side.P99MS = quantile(ms, 0.5), quantile(ms, 0.99)
	return side, nil
}

// idleTxPerSec waits a second for the worker to settle, then counts the
// transactions of pool's database over pickupIdle (its own two reads less).
func idleTxPerSec(ctx context.Context, pool *pgxpool.Pool) (float64, error) {
	time.Sleep(time.Second)
	count := func() (int64, error) {
		var n int64
		err := pool.QueryRow(ctx, `SELECT xact_commit + xact_rollback FROM pg_stat_database
			WHERE datname = current_database()`).Scan(&n)
		return n, err
	}
	before, err := count()
	if err != nil {
		return 0, err
	}
	start := time.Now()
	time.Sleep(pickupIdle)
	after, err := count()
	if err != nil {
		return 0, err
	}
	return float64(after-before-1) / time.Since(start).Seconds(), nil
}

// runRiverPickup runs the River peer in pickup mode and returns its figures.
func runRiverPickup(ctx context.Context, bin, url string) (PickupSide, error) {
	cmd := exec.CommandContext(ctx, bin, "-url", url, "-jobs", fmt.Sprint(pickupJobs), "-workers", fmt.Sprint(pickupWorkers),
		"-config", "defaults", "-mode", "pickup", "-gap", pickupGap.String(), "-idle", pickupIdle.String())
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return PickupSide{}, fmt.Errorf("the River peer: %w", err)
	}
	var res struct {
		LatenciesMS  []float64 `json:"latencies_ms"`
		IdleTxPerSec float64   `json:"idle_tx_per_sec"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		return PickupSide{}, fmt.Errorf("the River peer's output: %w", err)
	}
	return PickupSide{P50MS: quantile(res.LatenciesMS, 0.5), P99MS: quantile(res.LatenciesMS, 0.99),
		IdleTxPerSec: res.IdleTxPerSec, IdleWindow: pickupIdle.String()}, nil
}
