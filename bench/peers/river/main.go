package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
)

// noopArgs are the arguments of the benchmark's job: none.
type noopArgs struct{}

// Kind is River's name for the job kind.
func (noopArgs) Kind() string { return "leasefence_bench_noop" }

// noopWorker does nothing and succeeds.
type noopWorker struct {
	river.WorkerDefaults[noopArgs]
}

// Work succeeds at once.
func (noopWorker) Work(context.Context, *river.Job[noopArgs]) error { return nil }

// result is the line the peer prints.
type result struct {
	Jobs          int     `json:"jobs"`
	Seconds       float64 `json:"seconds"`
	JobsPerSecond float64 `json:"jobs_per_second"`
}

func main() {
	url := flag.String("url", "", "database URL (River's schema is installed there)")
	jobs := flag.Int("jobs", 3000, "number of no-op jobs")
	workers := flag.Int("workers", 100, "MaxWorkers of the default queue")
	config := flag.String("config", "defaults", "defaults or matched")
	mode := flag.String("mode", "work", "work (insert, then time working the jobs), enqueue (time InsertManyFast of the jobs) "+
		"or pickup (a started client at its defaults: its idle transactions, then jobs inserted one by one -gap apart, "+
		"each timed from its insert's return to its Work's first line)")
	timeout := flag.Duration("timeout", 2*time.Minute, "give up after this long")
	gap := flag.Duration("gap", 50*time.Millisecond, "pickup mode: the pause between two inserts")
	idle := flag.Duration("idle", 10*time.Second, "pickup mode: how long the idle client's transactions are counted")
	flag.Parse()
	if *mode == "pickup" {
		res, err := pickup(*url, *jobs, *workers, *gap, *idle, *timeout)
		if err != nil {
			fmt.Fprintln(os.Stderr, "river peer:", err)
			os.Exit(1)
		}
		if err := json.NewEncoder(os.Stdout).Encode(res); err != nil {
			os.Exit(1)
		}
		return
	}
	run := run
	if *mode == "enqueue" {
		run = enqueue
	}
	res, err := run(*url, *jobs, *workers, *config, *timeout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "river peer:", err)
		os.Exit(1)
	}
	if err := json.NewEncoder(os.Stdout).Encode(res); err != nil {
		os.Exit(1)
	}
}

func run(url string, jobs, workers int, config string, timeout time.Duration) (result, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		return result{}, err
	}
	defer pool.Close()
	driver := riverpgxv5.New(pool)
	migrator, err := rivermigrate.New(driver, nil)
	if err != nil {
		return result{}, err
	}
	if _, err := migrator.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return result{}, fmt.Errorf("migrate: %w", err)
	}
	ws := river.NewWorkers()
	river.AddWorker(ws, &noopWorker{})
	cfg := &river.Config{
		Queues:  map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: workers}},
		Workers: ws,
	}
	switch config {
	case "defaults":
	case "matched":
		cfg.FetchCooldown = river.FetchCooldownMin
		cfg.FetchPollInterval = river.FetchPollIntervalMin
	default:
		return result{}, fmt.Errorf("unknown -config %q", config)
	}
	client, err := river.NewClient(driver, cfg)
	if err != nil {
		return result{}, err
	}
	params := make([]river.InsertManyParams, 0, 1000)
	for left := jobs; left > 0; left -= len(params) {
		params = params[:0]
		for i := 0; i < min(left, 1000); i++ {
			params = append(params, river.InsertManyParams{Args: noopArgs{}})
		}
		if _, err := client.InsertMany(ctx, params); err != nil {
			return result{}, fmt.Errorf("insert: %w", err)
		}
	}
	// One buffered event per job: River drops events a full channel
	// cannot take, and a dropped completion would hang the count.
	events, stop := client.SubscribeConfig(&river.SubscribeConfig{ChanSize: jobs,
		Kinds: []river.EventKind{river.EventKindJobCompleted, river.EventKindJobFailed}})
	defer stop()
	start := time.Now()
	if err := client.Start(ctx); err != nil {
		return result{}, err
	}
	done := 0
	for done < jobs {
		select {
		case ev := <-events:
			if ev.Kind != river.EventKindJobCompleted {
				return result{}, errors.New("a no-op job failed")
			}
			done++
		case <-ctx.Done():
			return result{}, fmt.Errorf("%d of %d jobs completed: %w", done, jobs, ctx.Err())
		}
	}
	elapsed := time.Since(start)
	if err := client.Stop(ctx); err != nil {
		return result{}, err
	}
	return result{Jobs: jobs, Seconds: elapsed.Seconds(), JobsPerSecond: float64(jobs) / elapsed.Seconds()}, nil
}

// enqueue times InsertManyFast of jobs no-op jobs in batches of 10,000 (no
// client is started, so nothing works them).
func enqueue(url string, jobs, _ int, _ string, timeout time.Duration) (result, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		return result{}, err
	}
	defer pool.Close()
	driver := riverpgxv5.New(pool)
	migrator, err := rivermigrate.New(driver, nil)
	if err != nil {
		return result{}, err
	}
	if _, err := migrator.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return result{}, fmt.Errorf("migrate: %w", err)
	}
	ws := river.NewWorkers()
	river.AddWorker(ws, &noopWorker{})
	client, err := river.NewClient(driver, &river.Config{Workers: ws})
	if err != nil {
		return result{}, err
	}
	params := make([]river.InsertManyParams, 0, 10000)
	start := time.Now()
	for left := jobs; left > 0; left -= len(params) {
		params = params[:0]
		for i := 0; i < min(left, 10000); i++ {
			params = append(params, river.InsertManyParams{Args: noopArgs{}})
		}
		if _, err := client.InsertManyFast(ctx, params); err != nil {
			return result{}, fmt.Errorf("insert: %w", err)
		}
	}
	elapsed := time.Since(start)
	return result{Jobs: jobs, Seconds: elapsed.Seconds(), JobsPerSecond: float64(jobs) / elapsed.Seconds()}, nil
}

// pickupResult is the line the peer prints in pickup mode.
type pickupResult struct {
	// LatenciesMS are the jobs' pickup latencies in milliseconds (the
	// bench computes the percentiles, as it does for ours).
	LatenciesMS  []float64 `json:"latencies_ms"`
	IdleTxPerSec float64   `json:"idle_tx_per_sec"`
}

// timedArgs are the arguments of the pickup job: none.
type timedArgs struct{}

// Kind is River's name for the job kind.
func (timedArgs) Kind() string { return "leasefence_bench_pickup" }

// timedWorker notes when each job's Work starts.
type timedWorker struct {
	river.WorkerDefaults[timedArgs]
	mu      sync.Mutex
	started map[int64]time.Time
	all     chan struct{}
	jobs    int
}

// Work notes its start and succeeds.
func (w *timedWorker) Work(_ context.Context, job *river.Job[timedArgs]) error {
	at := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	w.started[job.ID] = at
	if len(w.started) == w.jobs {
		close(w.all)
	}
	return nil
}

// pickup starts a River client at its defaults (MaxWorkers workers),
// counts its database's transactions over idle, then inserts jobs one by
// one (each Insert its own transaction) gap apart and times each from the
// Insert's return to its Work's first line.
func pickup(url string, jobs, workers int, gap, idle, timeout time.Duration) (pickupResult, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		return pickupResult{}, err
	}
	defer pool.Close()
	driver := riverpgxv5.New(pool)
	migrator, err := rivermigrate.New(driver, nil)
	if err != nil {
		return pickupResult{}, err
	}
	if _, err := migrator.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return pickupResult{}, fmt.Errorf("migrate: %w", err)
	}
	w := &timedWorker{started: map[int64]time.Time{}, all: make(chan struct{}), jobs: jobs}
	ws := river.NewWorkers()
	river.AddWorker(ws, w)
	client, err := river.NewClient(driver, &river.Config{
		Queues:  map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: workers}},
		Workers: ws,
	})
	if err != nil {
		return pickupResult{}, err
	}
	if err := client.Start(ctx); err != nil {
		return pickupResult{}, err
	}
	var res pickupResult
	time.Sleep(time.Second)
	count := func() (int64, error) {
		var n int64
		err := pool.QueryRow(ctx, `SELECT xact_commit + xact_rollback FROM pg_stat_database
			WHERE datname = current_database()`).Scan(&n)
		return n, err
	}
	before, err := count()
	if err != nil {
		return res, err
	}
	start := time.Now()
	time.Sleep(idle)
	after, err := count()
	if err != nil {
		return res, err
	}
	res.IdleTxPerSec = float64(after-before-1) / time.Since(start).Seconds()
	inserted := make(map[int64]time.Time, jobs)
	for range jobs {
		r, err := client.Insert(ctx, timedArgs{}, nil)
		if err != nil {
			return res, fmt.Errorf("insert: %w", err)
		}
		inserted[r.Job.ID] = time.Now()
		time.Sleep(gap)
	}
	select {
	case <-w.all:
	case <-ctx.Done():
		return res, ctx.Err()
	}
	if err := client.Stop(ctx); err != nil {
		return res, err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for id, at := range inserted {
		res.LatenciesMS = append(res.LatenciesMS, float64(w.started[id].Sub(at).Microseconds())/1000)
	}
	return res, nil
}
