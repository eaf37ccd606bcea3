package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/mightyetl/leasefence/goclient"
)

// E2EResult is one end-to-end comparison: jobs per second of the goclient
// worker loop and of River on the same cluster, round by round.
type E2EResult struct {
	// Name says what is compared.
	Name string `json:"name"`
	// Jobs is the number of jobs of one round of each side.
	Jobs int `json:"jobs_per_round"`
	// Workers is both sides' worker concurrency.
	Workers int `json:"workers"`
	// OursPerSec are our jobs per second, round by round.
	OursPerSec []float64 `json:"ours_jobs_per_second"`
	// RiverPerSec are River's jobs per second, round by round.
	RiverPerSec []float64 `json:"river_jobs_per_second"`
	// Ratio is the median of the per-round ratios ours / River.
	Ratio float64 `json:"ratio"`
	// Goal is the least Ratio the issue asks for; 0 when there is none.
	Goal float64 `json:"goal,omitempty"`
}

// e2ePoolSize is the connection pool of both sides (pool_max_conns).
const e2ePoolSize = 8

// endToEnd runs no-op jobs through the goclient worker loop (claimed,
// kept by the heartbeat, completed) and through River (the peer module
// under bench/peers/river, at River's defaults and with River's fetch delays
// at their minimum), alternating, and records the jobs per second of each.
func (r *runner) endToEnd(ctx context.Context) error {
	setup := time.Now()
	bin, err := r.riverPeer(ctx)
	if err != nil {
		return err
	}
	if _, err := r.e.admin.Exec(ctx, `CREATE DATABASE river_peer`); err != nil {
		return err
	}
	r.setupDone("River peer built, its database made", setup)
	riverURL := withPoolSize(r.e.cluster.URL("river_peer"))
	n := r.cfg.E2EJobs
	for _, cfg := range []string{"matched", "defaults"} {
		res := E2EResult{Name: "no-op jobs, goclient worker loop against River (" + cfg + ")", Jobs: n,
			Workers: r.cfg.E2EWorkers}
		if cfg == "matched" {
			res.Goal = 1.0
		}
		if err := r.againstRiver(&res, r.cfg.E2ERounds, func() (float64, error) { return r.oursEndToEnd(ctx, n) },
			func() (float64, error) { return runRiverPeer(ctx, bin, riverURL, n, r.cfg.E2EWorkers, cfg, "work") }); err != nil {
			return err
		}
		r.rep.E2E = append(r.rep.E2E, res)
	}
	return nil
}

// againstRiver runs rounds rounds of ours and then River, each
// returning jobs per second, keeps both sides' figures in res, sets its
// ratio (the median of the per-round ratios) and logs the result.
func (r *runner) againstRiver(res *E2EResult, rounds int, ours, river func() (float64, error)) error {
	if rounds < 1 {
		return fmt.Errorf("%s: at least one round", res.Name)
	}
	var ratios []float64
	for round := 0; round < rounds; round++ {
		t0 := time.Now()
		o, err := ours()
		if err != nil {
			return err
		}
		t1 := time.Now()
		rv, err := river()
		if err != nil {
			return err
		}
		r.cfg.Logf("bench:   round %d: ours %s (timed %s), River %s (timed %s)", round, t1.Sub(t0).Round(10*time.Millisecond),
			time.Duration(float64(res.Jobs)/o*float64(time.Second)).Round(10*time.Millisecond), time.Since(t1).Round(10*time.Millisecond),
			time.Duration(float64(res.Jobs)/rv*float64(time.Second)).Round(10*time.Millisecond))
		r.measured += time.Duration(float64(res.Jobs) * (1/o + 1/rv) * float64(time.Second))
		res.OursPerSec = append(res.OursPerSec, o)
		res.RiverPerSec = append(res.RiverPerSec, rv)
		ratios = append(ratios, o/rv)
	}
	res.Ratio = median(ratios)
	r.cfg.Logf("bench: %-45s ours %8.0f jobs/s  River %8.0f jobs/s  ratio %.2f", res.Name, median(res.OursPerSec),
		median(res.RiverPerSec), res.Ratio)
	return nil
}

// riverPeer builds the River peer once per run (Run removes it at the end)
// and returns its binary.
func (r *runner) riverPeer(ctx context.Context) (string, error) {
	if r.riverBin == "" {
		bin, err := buildRiverPeer(ctx, r.cfg.PeersDir)
		if err != nil {
			return "", err
		}
		r.riverBin = bin
	}
	return r.riverBin, nil
}

// oursEndToEnd enqueues n no-op jobs (not timed) and times the goclient
// worker from its start until every job is SUCCEEDED.
//
// The database is not polled while the jobs run: the handlers count
// themselves, and only once all n have returned does the bench ask the
// database, every millisecond, whether any job of the queue is still
// QUEUED, RETRY_SCHEDULED or RUNNING (the partial indexes of those rows,
// nearly empty by then, answer it). The River peer counts its completion
// events in its own process, so it pays nothing for being measured;
// counting SUCCEEDED rows every 5 ms, as this did until 2026-12-04, took
// about 2 ms a count at 20,000 finished rows, up to half a core of the two
// the worker and the server share, in our rounds only.
func (r *runner) oursEndToEnd(ctx context.Context, n int) (float64, error) {
	const queue = "bench_e2e"
	if err := r.e.insertDueJobs(ctx, queue, n); err != nil {
		return 0, err
	}
	succeeded := func() (int, error) {
		var count int
		err := r.e.admin.QueryRow(ctx, `SELECT count(*) FROM durable_jobs.job_record
			WHERE queue_name = $1 AND job_status = 'SUCCEEDED'`, queue).Scan(&count)
		return count, err
	}
	before, err := succeeded()
	if err != nil {
		return 0, err
	}
	pool, err := goclient.NewPool(ctx, withPoolSize(r.e.workerURL), 10*time.Second)
	if err != nil {
		return 0, err
	}
	defer pool.Close()
	// One connection open before the clock starts, as the River peer has:
	// it times from client.Start with the connection its migration and its
	// inserts used still in its pool, while pgxpool opens none until asked,
	// so our rounds alone counted a connection's start (traced at load 3
	// to 5 on 2026-12-05: the first claim went out 20 to 34 ms after the
	// worker started). Each side opens the rest of its connections inside
	// its timed window (ours one more, River three more, counted by
	// pg_stat_database.sessions).
	if err := pool.Ping(ctx); err != nil {
		return 0, err
	}
	// The bundle's default policy ('*'): 30 s lease, 10 s renewal interval.
	client, err := goclient.NewClient(pool, goclient.Config{OwnerID: "bench-e2e"})
	if err != nil {
		return 0, err
	}
	defer client.Close()
	var ran atomic.Int64
	allRan := make(chan struct{})
	w, err := client.NewWorker(goclient.WorkerConfig{Queue: queue, Concurrency: r.cfg.E2EWorkers,
		PollInterval: time.Millisecond, Handler: func(context.Context, goclient.Job) error {
			if ran.Add(1) == int64(n) {
				close(allRan)
			}
			return nil
		}})
	if err != nil {
		return 0, err
	}
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- w.Run(wctx) }()
	select {
	case <-allRan:
	case err := <-done:
		return 0, fmt.Errorf("the worker stopped after %d of %d jobs: %v", ran.Load(), n, err)
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	var elapsed time.Duration
	for {
		var open bool
		// Two probes, each the predicate of a partial index (of RUNNING rows;
		// of QUEUED and RETRY_SCHEDULED rows), so neither reads the table.
		if err := r.e.admin.QueryRow(ctx, `SELECT EXISTS (SELECT FROM durable_jobs.job_record
				WHERE queue_name = $1 AND job_status = 'RUNNING')
			OR EXISTS (SELECT FROM durable_jobs.job_record
				WHERE queue_name = $1 AND job_status IN ('QUEUED', 'RETRY_SCHEDULED'))`, queue).Scan(&open); err != nil {
			return 0, err
		}
		if !open {
			elapsed = time.Since(start)
			break
		}
		select {
		case err := <-done:
			return 0, fmt.Errorf("the worker stopped with jobs of %s still open: %v", queue, err)
		case <-time.After(time.Millisecond):
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
	stop()
	if err := <-done; err != nil {
		return 0, err
	}
	finished, err := succeeded()
	if err != nil {
		return 0, err
	}
	if finished-before != n {
		return 0, fmt.Errorf("%d of %d jobs SUCCEEDED", finished-before, n)
	}
	return float64(n) / elapsed.Seconds(), nil
}

// withPoolSize sets pool_max_conns on a URL.
func withPoolSize(u string) string {
	sep := "?"
	if strings.Contains(u, "?") {
		sep = "&"
	}
	return fmt.Sprintf("%s%spool_max_conns=%d", u, sep, e2ePoolSize)
}

// buildRiverPeer builds the River peer (its own module) into a new
// temporary folder.
func buildRiverPeer(ctx context.Context, peers string) (string, error) {
	dir, err := os.MkdirTemp("", "leasebench-peer-")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "riverpeer")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, ".")
	cmd.Dir = filepath.Join(peers, "river")
	// The peer is not in the repository's go.work (River's dependencies
	// would raise the versions the main module builds with), so it builds
	// by its own go.mod alone.
	cmd.Env = append(os.Environ(), "GOWORK=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		_ = os.RemoveAll(dir)
		return "", fmt.Errorf("build the River peer in %s: %v\n%s", cmd.Dir, err, out)
	}
	return bin, nil
}

// removeDir removes the temporary folder of the River peer binary bin.
func removeDir(bin string) { _ = os.RemoveAll(filepath.Dir(bin)) }

// runRiverPeer runs the River peer once in mode (work or enqueue) and
// returns its jobs per second.
func runRiverPeer(ctx context.Context, bin, url string, jobs, workers int, config, mode string) (float64, error) {
	cmd := exec.CommandContext(ctx, bin, "-url", url, "-jobs", fmt.Sprint(jobs), "-workers", fmt.Sprint(workers),
		"-config", config, "-mode", mode)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return 0, fmt.Errorf("the River peer: %w", err)
	}
	var res struct {
		JobsPerSecond float64 `json:"jobs_per_second"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		return 0, fmt.Errorf("the River peer's output: %w", err)
	}
	return res.JobsPerSecond, nil
}
