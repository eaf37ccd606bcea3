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
)

// HeartbeatResult is one client process holding many live leases under
// the bundle's default policy (30 s lease, renewed every 10 s).
type HeartbeatResult struct {
	// Leases is the number of live leases the client keeps.
	Leases int `json:"leases"`
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

// heartbeatLeases and heartbeatHold are the size and length of the
// heartbeat phase.
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

// timedPort times every renewal call of the production port.
type timedPort struct {
	goclient.RenewalPort
	mu    sync.Mutex
	calls []time.Duration
}

// RenewClaims implements goclient.RenewalPort.
func (p *timedPort) RenewClaims(ctx context.Context, claims []goclient.Claim) ([]goclient.RenewalResult, error) {
	start := time.Now()
	res, err := p.RenewalPort.RenewClaims(ctx, claims)
	p.mu.Lock()
	p.calls = append(p.calls, time.Since(start))
	p.mu.Unlock()
	return res, err
}

// heartbeatAtScale claims heartbeatLeases jobs into one client, keeps them
// all on its heartbeat for heartbeatHold and records what the issue asks.
func (r *runner) heartbeatAtScale(ctx context.Context) error {
	const queue = "bench_heartbeat"
	if err := r.e.insertDueJobs(ctx, queue, heartbeatLeases); err != nil {
		return err
	}
	if err := r.e.analyze(ctx); err != nil {
		return err
	}
	pool, err := goclient.NewPool(ctx, withPoolSize(r.e.workerURL), 30*time.Second)
	if err != nil {
		return err
	}
	defer pool.Close()
	// The bundle's default policy: 30 s lease, 10 s interval, so each
	// attempt's timeout is half of 10 s, as the client derives it.
	const attemptTimeout = 5 * time.Second
	renewPool, err := goclient.NewPool(ctx, strings.Replace(withPoolSize(r.e.workerURL),
		fmt.Sprintf("pool_max_conns=%d", e2ePoolSize), "pool_max_conns=4", 1), attemptTimeout)
	if err != nil {
		return err
	}
	defer renewPool.Close()
	port := &timedPort{RenewalPort: goclient.NewPgRenewalPort(renewPool, attemptTimeout)}
	obs := &hbObserver{}
	client, err := goclient.NewClient(pool, goclient.Config{OwnerID: "bench-heartbeat", Observer: obs, RenewalPort: port})
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
	obs.mu.Lock()
	obs.renewed, obs.minMargin = 0, 0
	obs.mu.Unlock()
	port.mu.Lock()
	port.calls = nil
	port.mu.Unlock()
	cpuBefore, err := r.e.serverCPU(ctx)
	if err != nil {
		return err
	}
	start := time.Now()
	select {
	case <-time.After(heartbeatHold):
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
	res := HeartbeatResult{Leases: heartbeatLeases, Held: held.Round(time.Second).String(), Renewals: obs.renewed,
		RenewalsPerSec: float64(obs.renewed) / held.Seconds(), SmallestMarginMS: ms(obs.minMargin),
		FalseExpiries: obs.lost, DatabaseCPU: cpu.Seconds() / held.Seconds()}
	obs.mu.Unlock()
	port.mu.Lock()
	calls := slices.Clone(port.calls)
	port.mu.Unlock()
	slices.Sort(calls)
	res.Calls = len(calls)
	if len(calls) > 0 {
		res.P50MS, res.P99MS = ms(calls[len(calls)/2]), ms(calls[len(calls)*99/100])
	}
	for _, l := range leases {
		l.Stop()
	}
	r.cfg.Logf("bench: heartbeat, %d leases for %s: %.0f renewals/s, p50 %.1f ms, p99 %.1f ms, margin %.0f ms, %d lost, db CPU %.2f",
		res.Leases, res.Held, res.RenewalsPerSec, res.P50MS, res.P99MS, res.SmallestMarginMS, res.FalseExpiries, res.DatabaseCPU)
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
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue // ended meanwhile
		}
		// Fields after the command name (which may hold spaces): state is
		// field 3, utime 14 and stime 15, in clock ticks (100 a second).
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
		utime, _ := strconv.ParseInt(f[11], 10, 64)
		stime, _ := strconv.ParseInt(f[12], 10, 64)
		out[pid] = time.Duration(utime+stime) * 10 * time.Millisecond
	}
	return out, nil
}
