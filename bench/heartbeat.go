package bench

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mightyetl/leasefence/goclient"
	"github.com/mightyetl/leasefence/internal/leaseport"
)

// HeartbeatResult is one client process holding many live leases under
// the bundle's default policy (30 s lease, renewed every 10 s).
type HeartbeatResult struct {
	// Database is how the database was made to answer: "as it is", or
	// slowed by a fixed delay added to every renewal call.
	Database string `json:"database"`
	// Leases is the number of live leases the client keeps.
	Leases int `json:"leases"`
	// MaxInFlight is the client's MaxInFlightRenewals.
	MaxInFlight int `json:"max_in_flight_renewals"`
	// PoolSize is the client's RenewalPoolSize.
	PoolSize int `json:"renewal_pool_size"`
	// PeakInFlight is the most renewal calls open at once over the hold.
	PeakInFlight int `json:"peak_calls_in_flight"`
	// MeanInFlight is the time-weighted mean of renewal calls open.
	MeanInFlight float64 `json:"mean_calls_in_flight"`
	// Held is how long they were held after the last was claimed.
	Held string `json:"held"`
	// Renewals is the number of renewals confirmed over Held.
	Renewals int64 `json:"renewals"`
	// RenewalsPerSec is Renewals over Held.
	RenewalsPerSec float64 `json:"renewals_per_second"`
	// Calls is the number of renew_job_leases calls.
	Calls int `json:"renewal_calls"`
	// P50MS is the median renewal call latency in milliseconds (a claim's
	// renewal latency is its call's).
	P50MS float64 `json:"p50_ms"`
	// P99MS is the 99th percentile renewal call latency in milliseconds.
	P99MS float64 `json:"p99_ms"`
	// SmallestMarginMS is the smallest trust left when a renewal was
	// confirmed, in milliseconds.
	SmallestMarginMS float64 `json:"smallest_margin_ms"`
	// FalseExpiries is the number of leases the client lost while every
	// job was still running (all of them would be false).
	FalseExpiries int64 `json:"false_expiries"`
	// DatabaseCPU is the CPU time of the server's processes over Held
	// divided by Held (1.0 is one core busy).
	DatabaseCPU float64 `json:"database_cpu_cores"`
}

// heartbeatLeases is the size of the heartbeat phase, heartbeatHold its
// length unless Config.HeartbeatHold says otherwise (the short form).
const (
	heartbeatLeases = 100000
	heartbeatHold   = time.Minute
)

// hbObserver counts confirmed renewals and losses and keeps the smallest
// margin.
type hbObserver struct {
	goclient.NopObserver
	mu        sync.Mutex
	renewed   int64
	lost      int64
	minMargin time.Duration
}

// Renewal counts confirmed renewals.
func (o *hbObserver) Renewal(_ string, outcome goclient.RenewalOutcome) {
	if outcome == goclient.RenewalRenewed {
		o.mu.Lock()
		o.renewed++
		o.mu.Unlock()
	}
}

// SafetyMarginRemaining keeps the smallest margin.
func (o *hbObserver) SafetyMarginRemaining(_ string, d time.Duration) {
	o.mu.Lock()
	if o.minMargin == 0 || d < o.minMargin {
		o.minMargin = d
	}
	o.mu.Unlock()
}

// OwnershipLost counts losses.
func (o *hbObserver) OwnershipLost(string, goclient.LossCause) {
	o.mu.Lock()
	o.lost++
	o.mu.Unlock()
}

// timedPort times every renewal call of the production port, after an
// optional fixed delay (a slow database), and keeps how many are open.
type timedPort struct {
	leaseport.Port
	delay time.Duration
	mu    sync.Mutex
	calls []time.Duration
	// open, peak: calls open now and at most since the last reset;
	// openTime: the integral of open over time since since.
	open, peak int
	openTime   time.Duration
	last       time.Time
	since      time.Time
}

// RenewClaims implements leaseport.Port.
func (p *timedPort) RenewClaims(ctx context.Context, claims []goclient.Claim) ([]goclient.RenewalResult, error) {
	start := time.Now()
	p.count(start, 1)
	if p.delay > 0 {
		t := time.NewTimer(p.delay)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
		}
	}
	res, err := p.Port.RenewClaims(ctx, claims)
	end := time.Now()
	p.count(end, -1)
	p.mu.Lock()
	p.calls = append(p.calls, end.Sub(start))
	p.mu.Unlock()
	return res, err
}

// count moves the calls open by d at now.
func (p *timedPort) count(now time.Time, d int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.last.IsZero() {
		p.openTime += time.Duration(p.open) * now.Sub(p.last)
	}
	p.open += d
	p.peak = max(p.peak, p.open)
	p.last = now
}

// reset starts the counts again at now.
func (p *timedPort) reset(now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls, p.peak, p.openTime, p.last, p.since = nil, p.open, 0, now, now
}

// slowCallDelay is what the "heartbeat slow" step adds to every renewal
// call: about what a call of 1,000 claims took on this machine at load 15
// (p50 750 ms, p99 2.1 s), fixed so that the run does not depend on the
// machine's load.
const slowCallDelay = time.Second

// heartbeatAtScale is the heartbeat at scale on the database as it is.
func (r *runner) heartbeatAtScale(ctx context.Context) error {
	return r.heartbeatHold(ctx, "bench_heartbeat", 0)
}

// heartbeatSlow is the heartbeat at scale on a slow database: every
// renewal call takes slowCallDelay longer.
func (r *runner) heartbeatSlow(ctx context.Context) error {
	return r.heartbeatHold(ctx, "bench_heartbeat_slow", slowCallDelay)
}

// heartbeatHold claims heartbeatLeases jobs into one client, keeps them
// all on its heartbeat for Config.HeartbeatHold (heartbeatHold when not
// set), every renewal call delayed by delay, and records what the issue
// asks.
func (r *runner) heartbeatHold(ctx context.Context, queue string, delay time.Duration) error {
	setup := time.Now()
	if err := r.e.insertDueJobs(ctx, queue, heartbeatLeases); err != nil {
		return err
	}
	r.setupDone("due jobs", setup)
	setup = time.Now()
	if err := r.e.analyze(ctx); err != nil {
		return err
	}
	r.setupDone("analyze", setup)
	setup = time.Now()
	pool, err := goclient.NewPool(ctx, withPoolSize(r.e.workerURL), 30*time.Second)
	if err != nil {
		return err
	}
	defer pool.Close()
	// The client's defaults: 4 calls in flight while they keep up, a pool
	// of 16 for when they do not.
	cfg := goclient.Config{OwnerID: "bench-heartbeat", MaxInFlightRenewals: goclient.DefaultMaxInFlightRenewals,
		RenewalPoolSize: 4 * goclient.DefaultMaxInFlightRenewals}
	// The bundle's default policy: 30 s lease, 10 s interval, so each
	// attempt's timeout is half of 10 s, as the client derives it.
	const attemptTimeout = 5 * time.Second
	renewPool, err := goclient.NewPool(ctx, strings.Replace(withPoolSize(r.e.workerURL),
		fmt.Sprintf("pool_max_conns=%d", e2ePoolSize), fmt.Sprintf("pool_max_conns=%d", cfg.RenewalPoolSize), 1), attemptTimeout)
	if err != nil {
		return err
	}
	defer renewPool.Close()
	port := &timedPort{Port: leaseport.NewPg(renewPool, attemptTimeout), delay: delay}
	obs := &hbObserver{}
	cfg.Observer = obs
	client, err := goclient.NewClient(pool, leaseport.With(cfg, port))
	if err != nil {
		return err
	}
	defer client.Close()
	var leases []*goclient.Lease
	for len(leases) < heartbeatLeases {
		jobs, err := client.ClaimMany(ctx, queue, min(1000, heartbeatLeases-len(leases)))
		if err != nil {
			return err
		}
		if len(jobs) == 0 {
			return fmt.Errorf("claimed %d of %d", len(leases), heartbeatLeases)
		}
		for _, j := range jobs {
			leases = append(leases, client.Keep(context.Background(), j))
		}
	}
	r.setupDone("claims", setup)
	// The claims changed every row from QUEUED to RUNNING and the table's
	// statistics, taken above, still say none is running: the hold is
	// renewed on them on purpose, the case a production queue meets after
	// a burst of claims until autovacuum analyzes the table (migration 016
	// keeps the renewal on the primary key there; see bench/notes.md).
	obs.mu.Lock()
	obs.renewed, obs.minMargin = 0, 0
	obs.mu.Unlock()
	port.reset(time.Now())
	cpuBefore, err := r.e.serverCPU(ctx)
	if err != nil {
		return err
	}
	hold := r.cfg.HeartbeatHold
	if hold <= 0 {
		hold = heartbeatHold
	}
	start := time.Now()
	defer r.measuring(start)
	select {
	case <-time.After(hold):
	case <-ctx.Done():
		return ctx.Err()
	}
	held := time.Since(start)
	cpuAfter, err := r.e.serverCPU(ctx)
	if err != nil {
		return err
	}
	var cpu time.Duration
	for pid, t := range cpuAfter {
		cpu += t - cpuBefore[pid]
	}
	obs.mu.Lock()
	database := "as it is"
	if delay > 0 {
		database = "+" + delay.String() + " a call"
	}
	res := HeartbeatResult{Database: database, Leases: heartbeatLeases, MaxInFlight: cfg.MaxInFlightRenewals, PoolSize: cfg.RenewalPoolSize, Held: held.Round(time.Second).String(), Renewals: obs.renewed,
		RenewalsPerSec: float64(obs.renewed) / held.Seconds(), SmallestMarginMS: ms(obs.minMargin),
		FalseExpiries: obs.lost, DatabaseCPU: cpu.Seconds() / held.Seconds()}
	obs.mu.Unlock()
	port.count(time.Now(), 0)
	port.mu.Lock()
	calls := slices.Clone(port.calls)
	res.PeakInFlight = port.peak
	res.MeanInFlight = port.openTime.Seconds() / port.last.Sub(port.since).Seconds()
	port.mu.Unlock()
	slices.Sort(calls)
	res.Calls = len(calls)
	if len(calls) > 0 {
		res.P50MS, res.P99MS = ms(calls[len(calls)/2]), ms(calls[len(calls)*99/100])
	}
	setup = time.Now()
	for _, l := range leases {
		l.Stop()
	}
	r.setupDone("leases stopped", setup)
	r.cfg.Logf("bench: heartbeat (database %s), %d leases for %s: calls in flight peak %d mean %.1f, %.0f renewals/s, p50 %.1f ms, p99 %.1f ms, margin %.0f ms, %d lost, db CPU %.2f",
		res.Database, res.Leases, res.Held, res.PeakInFlight, res.MeanInFlight, res.RenewalsPerSec, res.P50MS, res.P99MS,
		res.SmallestMarginMS, res.FalseExpiries, res.DatabaseCPU)
	r.rep.Heartbeat = append(r.rep.Heartbeat, res)
	return nil
}

// ms is d in milliseconds.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// serverCPU returns the CPU time (user + system) of every server process
// pg_stat_activity lists, by pid, from /proc (the server runs here).
func (e *env) serverCPU(ctx context.Context) (map[int]time.Duration, error) {
	rows, err := e.admin.Query(ctx, `SELECT pid FROM pg_stat_activity`)
	if err != nil {
		return nil, err
	}
	var pids []int
	for rows.Next() {
		var pid int
		if err := rows.Scan(&pid); err != nil {
			rows.Close()
			return nil, err
		}
		pids = append(pids, pid)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	out := map[int]time.Duration{}
	for _, pid := range pids {
		cpu, err := processCPU(pid)
		if err != nil {
			continue // ended meanwhile
		}
		out[pid] = cpu
	}
	return out, nil
}

// processCPU returns the CPU time (user + system) process pid has used,
// from /proc/<pid>/stat (the server runs on this machine).
func processCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	return procStatCPU(string(b))
}

// procStatCPU returns utime + stime (fields 14 and 15) of a
// /proc/<pid>/stat line, in clock ticks of 1/100 s (USER_HZ). The command
// name (field 2, in parentheses) may hold spaces, so the fields are
// counted after its closing parenthesis.
func procStatCPU(stat string) (time.Duration, error) {
	i := strings.LastIndexByte(stat, ')')
	f := strings.Fields(stat[i+1:])
	// After the name: field 3 (state) is f[0], so field k is f[k-3].
	if i < 0 || len(f) < 13 {
		return 0, fmt.Errorf("unexpected /proc/<pid>/stat: %q", stat)
	}
	utime, err := strconv.ParseInt(f[11], 10, 64)
	if err != nil {
		return 0, err
	}
	stime, err := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * 10 * time.Millisecond, err
}
