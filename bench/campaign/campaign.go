package campaign

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/mightyetl/leasefence/internal/faultproxy"
	"github.com/mightyetl/leasefence/internal/pglocal"
	sqlbundle "github.com/mightyetl/leasefence/sql"
)

// Fault kinds the campaign injects.
const (
	FaultProxyCut        = "proxy_cut"
	FaultProxyBlackhole  = "proxy_blackhole"
	FaultProxyDelay      = "proxy_delay"
	FaultProxyDropReply  = "proxy_drop_replies"
	FaultSIGSTOP         = "sigstop_past_lease"
	FaultSIGKILL         = "sigkill"
	FaultTerminate       = "pg_terminate_backend"
	FaultRestartImmed    = "pg_stop_immediate_restart"
	FaultClockSkew       = "app_clock_skew"
	FaultRowLock         = "row_lock_held"
	FaultCancelInTx      = "cancel_in_open_tx"
	FaultZombie          = "zombie_stale_replay"
	FaultForged          = "forged_token"
	FaultEarlyReclaim    = "early_reclaim_attempt"
	FaultDBClockJump     = "db_clock_jump"
	FaultFailover        = "standby_promoted"
	FaultFailoverAsync   = "async_standby_promoted_after_stream_cut"
	standbyName          = "campaign_standby"
	asyncStandbyName     = "campaign_async"
	mainQueue            = "campaign.main"
	defaultLease         = 2 * time.Second
	defaultInterval      = 500 * time.Millisecond
	workerLogin          = "campaign_worker"
	producerLogin        = "campaign_producer"
	maxPhases            = 10_000
	stopTimeout          = 5 * time.Second
	enqueueBatch         = 40
	lowWater             = 15
	phaseSettle          = 700 * time.Millisecond
	workerMaxRuntimeSlop = 2 * time.Minute
)

// AllFaults lists every fault kind Run can inject (clock skew is applied
// at worker start and is not scheduled).
var AllFaults = []string{
	FaultProxyCut, FaultProxyBlackhole, FaultProxyDelay, FaultProxyDropReply,
	FaultSIGSTOP, FaultSIGKILL, FaultTerminate, FaultRestartImmed,
	FaultRowLock, FaultCancelInTx, FaultZombie, FaultForged, FaultEarlyReclaim, FaultDBClockJump,
	FaultFailover, FaultFailoverAsync,
}

// Config says how to run one campaign.
type Config struct {
	// Seed drives the fault schedule, the workers' work durations and
	// outcomes, and their clock skews. The same seed replays the same
	// schedule (the interleaving still depends on timing).
	Seed uint64
	// Ops is how many checked operations to reach before stopping.
	Ops int
	// MaxDuration bounds the run whatever Ops says.
	MaxDuration time.Duration
	// Workers is the number of worker processes (default 4).
	Workers int
	// Faults are the fault kinds to schedule (default AllFaults). Each is
	// injected at least once, in a seeded order, then at random.
	Faults []string
	// WorkerBinary is the built ./worker program (BuildWorker).
	WorkerBinary string
	// Mutate, when set, runs as superuser on the campaign database after
	// the bundle is applied (the broken-bundle tests replace a function).
	Mutate func(ctx context.Context, conn *pgx.Conn) error
	// Logf receives progress lines (no SQL, tokens or payloads).
	Logf func(format string, args ...any)
	// Dir is where histories are kept (default: a new temporary folder,
	// removed unless KeepDir).
	Dir string
	// KeepDir keeps the temporary history folder after the run.
	KeepDir bool
}

// Result is what a campaign did and found.
type Result struct {
	Seed       uint64         // the seed of the run
	Ops        int            // operations checked
	Faults     map[string]int // fault kind -> times it ran
	Violations []Violation    // what the checker found
	LostClaims map[string]int // acknowledged claims a promotion lost, accepted by the checker, by PromotionSync/PromotionAsync
	History    []Event        // the merged history that was checked
	Duration   time.Duration  // from the workers' start to the end of the check
}

// FaultKinds returns how many distinct fault kinds actually ran.
func (r Result) FaultKinds() int {
	n := 0
	for _, c := range r.Faults {
		if c > 0 {
			n++
		}
	}
	return n
}

// ViolationKinds returns the distinct violation kinds, sorted.
func (r Result) ViolationKinds() []string {
	seen := map[string]bool{}
	var out []string
	for _, v := range r.Violations {
		if !seen[v.Kind] {
			seen[v.Kind] = true
			out = append(out, v.Kind)
		}
	}
	sort.Strings(out)
	return out
}

// BuildWorker builds the worker program into dir and returns its path.
func BuildWorker(ctx context.Context, dir string) (string, error) {
	out := filepath.Join(dir, "campaign-worker")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, "github.com/mightyetl/leasefence/bench/campaign/worker")
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build of the campaign worker: %v\n%s", err, b)
	}
	return out, nil
}

// env is one running campaign.
type env struct {
	cfg       Config
	rng       *mrand.Rand
	cluster   *pglocal.Cluster   // the current primary
	standby   *pglocal.Cluster   // its synchronous standby, until the failover
	retired   []*pglocal.Cluster // the old primaries after the failovers
	extra     []*pglocal.Cluster // the asynchronous standby until its promotion
	relay     *relay             // the URLs' third host: the asynchronous standby
	asyncDone bool               // the asynchronous failover ran
	dbURL     string             // superuser, direct
	admin     *pgxpool.Pool
	producer  *pgxpool.Pool
	workerURL string              // direct
	proxyURL  string              // worker login through the proxy
	proxies   []*faultproxy.Proxy // one in front of each host of the URLs
	dir       string
	epoch     time.Time
	driver    *Recorder
	zombie    *Recorder
	faults    map[string]int
	faultsMu  sync.Mutex
	clock     *dbClock // the server's libfaketime offset
	jumped    bool     // the database clock was moved

	mu      sync.Mutex
	workers []*workerProc
	nextW   int
}

type workerProc struct {
	name string
	cmd  *exec.Cmd
	done chan struct{}
}

// Run runs one campaign: a fresh cluster, the bundle from the checkout,
// worker processes, faults until cfg.Ops operations or cfg.MaxDuration,
// then the check.
func Run(ctx context.Context, cfg Config) (Result, error) {
	if cfg.Workers == 0 {
		cfg.Workers = 4
	}
	if len(cfg.Faults) == 0 {
		cfg.Faults = AllFaults
	}
	if cfg.MaxDuration == 0 {
		cfg.MaxDuration = 2 * time.Minute
	}
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	if cfg.WorkerBinary == "" {
		return Result{}, errors.New("campaign: Config.WorkerBinary is required (BuildWorker)")
	}
	e := &env{cfg: cfg, rng: mrand.New(mrand.NewPCG(cfg.Seed, 0x1ea5e)), epoch: time.Now(), faults: map[string]int{}}
	e.dir = cfg.Dir
	if e.dir == "" {
		d, err := os.MkdirTemp("", "campaign-")
		if err != nil {
			return Result{}, err
		}
		e.dir = d
		if !cfg.KeepDir {
			defer os.RemoveAll(d)
		}
	}
	defer e.close()
	if err := e.setup(ctx); err != nil {
		return Result{}, err
	}
	start := time.Now()
	if err := e.drive(ctx); err != nil {
		return Result{}, err
	}
	res, err := e.check(ctx)
	res.Duration = time.Since(start)
	return res, err
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// setup starts the cluster, applies the bundle and makes the logins, the
// target table, the policy, the proxy and the recorders.
func (e *env) setup(ctx context.Context) error {
	clock, binDir, err := newDBClock()
	if err != nil {
		return err
	}
	e.clock = clock
	c, err := pglocal.Start(ctx, pglocal.Options{
		BinDir: binDir,
		Settings: map[string]string{
			"fsync": "off", "full_page_writes": "off", "max_connections": "200",
			// synchronous_commit stays on: an acknowledged commit must
			// survive the immediate stop (only the processes die, so the
			// kernel keeps what was written even without fsync).
			"log_min_messages": "fatal", "log_min_error_statement": "panic",
		},
		NoSignalHandler: false,
	})
	if err != nil {
		return fmt.Errorf("campaign: start PostgreSQL: %w (run make deps for postgresql-15)", err)
	}
	e.cluster = c
	boot, err := pgx.Connect(ctx, c.URL("postgres"))
	if err != nil {
		return err
	}
	_, err = boot.Exec(ctx, `CREATE DATABASE campaign`)
	_ = boot.Close(ctx)
	if err != nil {
		return err
	}
	e.dbURL = c.URL("campaign")
	if err := sqlbundle.Apply(ctx, e.dbURL); err != nil {
		return fmt.Errorf("campaign: apply the bundle: %w", err)
	}
	conn, err := pgx.Connect(ctx, e.dbURL)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	wpass, ppass := randomHex(12), randomHex(12)
	for _, stmt := range []string{
		fmt.Sprintf(`CREATE ROLE %s LOGIN PASSWORD '%s' IN ROLE durable_job_worker`, workerLogin, wpass),
		fmt.Sprintf(`CREATE ROLE %s LOGIN PASSWORD '%s' IN ROLE durable_job_producer`, producerLogin, ppass),
		`CREATE SCHEMA campaign`,
		`CREATE TABLE campaign.target_effect (job_id bigint NOT NULL, generation bigint NOT NULL,
		     written_at timestamptz NOT NULL DEFAULT clock_timestamp())`,
		`GRANT USAGE ON SCHEMA campaign TO ` + workerLogin,
		`GRANT INSERT ON campaign.target_effect TO ` + workerLogin,
		`SELECT durable_jobs.set_queue_lease_policy('*', interval '2 s', interval '500 ms', interval '1 h', true, 'reliability campaign')`,
	} {
		if _, err := conn.Exec(ctx, stmt); err != nil {
			return fmt.Errorf("campaign: setup: %w", err)
		}
	}
	if e.cfg.Mutate != nil {
		if err := e.cfg.Mutate(ctx, conn); err != nil {
			return fmt.Errorf("campaign: mutate: %w", err)
		}
	}
	// A synchronous streaming standby: every commit acknowledged from here
	// on is on both servers.
	// (Only when the failover is scheduled: a standby costs a few seconds.)
	ports := []int{c.Port()}
	if slices.Contains(e.cfg.Faults, FaultFailover) {
		if e.standby, err = c.StartStandby(ctx, standbyName); err != nil {
			return fmt.Errorf("campaign: start the standby: %w", err)
		}
		if err := waitSync(ctx, conn); err != nil {
			return err
		}
		ports = append(ports, e.standby.Port())
		// The asynchronous failover's standby is made later; every URL
		// names it already, through the relay.
		if slices.Contains(e.cfg.Faults, FaultFailoverAsync) {
			if e.relay, err = startRelay(); err != nil {
				return err
			}
			ports = append(ports, e.relay.port())
		}
	}
	// Every URL names both servers; target_session_attrs=read-write picks
	// whichever is the primary, before and after the failover.
	login := func(user, pass string, ports ...int) string {
		hosts := make([]string, len(ports))
		for i, p := range ports {
			hosts[i] = "127.0.0.1:" + strconv.Itoa(p)
		}
		return "postgres://" + url.UserPassword(user, pass).String() + "@" + strings.Join(hosts, ",") +
			"/campaign?sslmode=disable&target_session_attrs=read-write&connect_timeout=2"
	}
	e.workerURL = login(workerLogin, wpass, ports...)
	if e.admin, err = pgxpool.New(ctx, login(c.Superuser(), "", ports...)); err != nil {
		return err
	}
	if e.producer, err = pgxpool.New(ctx, login(producerLogin, ppass, ports...)); err != nil {
		return err
	}
	var proxyPorts []int
	for _, target := range ports {
		p, err := faultproxy.Start(fmt.Sprintf("127.0.0.1:%d", target))
		if err != nil {
			return err
		}
		e.proxies = append(e.proxies, p)
		proxyPorts = append(proxyPorts, p.Port())
	}
	e.proxyURL = login(workerLogin, wpass, proxyPorts...)
	e.epoch = time.Now() // the histories' time zero
	if e.driver, err = NewRecorder(filepath.Join(e.dir, "driver.jsonl"), "driver", e.epoch); err != nil {
		return err
	}
	if e.zombie, err = NewRecorder(filepath.Join(e.dir, "zombie.jsonl"), "zombie", e.epoch); err != nil {
		return err
	}
	e.cfg.Logf("campaign: PostgreSQL on ports %v (primary first), proxies on %v, seed %d", ports, proxyPorts, e.cfg.Seed)
	return nil
}

func (e *env) close() {
	e.mu.Lock()
	ws := append([]*workerProc(nil), e.workers...)
	e.mu.Unlock()
	for _, w := range ws {
		_ = w.cmd.Process.Signal(syscall.SIGCONT)
		_ = w.cmd.Process.Kill()
		<-w.done
	}
	for _, p := range e.proxies {
		_ = p.Close()
	}
	if e.producer != nil {
		e.producer.Close()
	}
	if e.admin != nil {
		e.admin.Close()
	}
	if e.relay != nil {
		e.relay.close()
	}
	for _, c := range append(append([]*pglocal.Cluster{e.cluster, e.standby}, e.retired...), e.extra...) {
		if c != nil {
			_ = c.Stop()
		}
	}
	if e.clock != nil {
		e.clock.remove()
	}
	if e.driver != nil {
		_ = e.driver.Close()
	}
	if e.zombie != nil {
		_ = e.zombie.Close()
	}
}

// count records that fault kind ran once.
func (e *env) count(kind string) {
	e.faultsMu.Lock()
	e.faults[kind]++
	e.faultsMu.Unlock()
	e.driver.Note(Event{Kind: KindFault, Detail: kind})
}

// startWorker starts one worker process.
func (e *env) startWorker() error {
	e.mu.Lock()
	e.nextW++
	name := fmt.Sprintf("w%d", e.nextW)
	e.mu.Unlock()
	// Every worker but the first runs with a skewed application clock,
	// up to two hours either way.
	var skew time.Duration
	if e.nextW > 1 {
		skew = time.Duration(e.rng.Int64N(int64(4*time.Hour))) - 2*time.Hour
	}
	cmd := exec.Command(e.cfg.WorkerBinary,
		"-url", e.proxyURL, "-queue", mainQueue, "-proc", name,
		"-history", filepath.Join(e.dir, name+".jsonl"),
		"-epoch", strconv.FormatInt(e.epoch.UnixNano(), 10),
		"-lease", defaultLease.String(), "-interval", defaultInterval.String(),
		"-skew", skew.String(), "-seed", strconv.FormatUint(e.cfg.Seed*1000+uint64(e.nextW), 10),
		"-max-runtime", (e.cfg.MaxDuration + workerMaxRuntimeSlop).String())
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("campaign: start worker: %w", err)
	}
	w := &workerProc{name: name, cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(w.done) }()
	e.mu.Lock()
	e.workers = append(e.workers, w)
	e.mu.Unlock()
	if skew != 0 {
		e.count(FaultClockSkew)
	}
	return nil
}

// liveWorkers returns the workers that have not exited.
func (e *env) liveWorkers() []*workerProc {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []*workerProc
	for _, w := range e.workers {
		select {
		case <-w.done:
		default:
			out = append(out, w)
		}
	}
	return out
}

// enqueue keeps the main queue's backlog above the low-water mark.
func (e *env) enqueue(ctx context.Context) error {
	var waiting int
	if err := e.admin.QueryRow(ctx, `SELECT count(*) FROM durable_jobs.job_record
	    WHERE queue_name = $1 AND job_status IN ('QUEUED', 'RETRY_SCHEDULED')`, mainQueue).Scan(&waiting); err != nil {
		return err
	}
	if waiting >= lowWater {
		return nil
	}
	for i := 0; i < enqueueBatch; i++ {
		if _, err := e.enqueueOne(ctx, mainQueue); err != nil {
			return err
		}
	}
	return nil
}

// enqueueOne enqueues one job on queue and records it.
func (e *env) enqueueOne(ctx context.Context, queue string) (int64, error) {
	op := e.driver.Invoke(KindEnqueue, 0, 0)
	var id int64
	err := e.producer.QueryRow(ctx, `SELECT durable_jobs.enqueue_job($1, '{"campaign": true}'::jsonb, NULL, NULL, 50)`, queue).Scan(&id)
	if err != nil {
		e.driver.Done(op, Event{Kind: KindEnqueue, Outcome: OutUnknown})
		return 0, fmt.Errorf("campaign: enqueue: %w", err)
	}
	e.driver.Done(op, Event{Kind: KindEnqueue, Job: id, Outcome: OutOK})
	return id, nil
}

// drive starts the workers and injects faults until the operation target
// or the time bound is reached.
func (e *env) drive(ctx context.Context) error {
	if err := e.enqueue(ctx); err != nil {
		return err
	}
	for i := 0; i < e.cfg.Workers; i++ {
		if err := e.startWorker(); err != nil {
			return err
		}
	}
	order := append([]string(nil), e.cfg.Faults...)
	e.rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	// The asynchronous failover follows the synchronous one (it needs a
	// primary without a synchronous standby).
	if i, j := slices.Index(order, FaultFailover), slices.Index(order, FaultFailoverAsync); i > j && j >= 0 {
		order[i], order[j] = order[j], order[i]
	}
	deadline := time.Now().Add(e.cfg.MaxDuration)
	for phase := 0; phase < maxPhases && time.Now().Before(deadline) && ctx.Err() == nil; phase++ {
		if err := e.enqueue(ctx); err != nil {
			e.cfg.Logf("campaign: enqueue failed (server restarting?): %v", err)
		}
		kind := order[e.rng.IntN(len(order))]
		if phase < len(order) {
			kind = order[phase]
		}
		if err := e.inject(ctx, kind); err != nil {
			return fmt.Errorf("campaign: fault %s: %w", kind, err)
		}
		sleepCtx(ctx, phaseSettle)
		if phase >= len(order)-1 {
			h, err := LoadHistory(e.dir)
			if err != nil {
				return err
			}
			n := CountOps(h)
			if phase%5 == 0 {
				e.cfg.Logf("campaign: phase %d, %d operations", phase, n)
			}
			if n >= e.cfg.Ops {
				break
			}
		}
	}
	// Stop every worker: SIGTERM (they stop their leases without
	// releasing), SIGKILL after stopTimeout.
	for _, w := range e.liveWorkers() {
		_ = w.cmd.Process.Signal(syscall.SIGCONT)
		_ = w.cmd.Process.Signal(syscall.SIGTERM)
	}
	for _, w := range e.liveWorkers() {
		select {
		case <-w.done:
		case <-time.After(stopTimeout):
			_ = w.cmd.Process.Kill()
			<-w.done
		}
	}
	return nil
}

// check waits for every lease to run out, then reads the database and the
// history and checks them.
func (e *env) check(ctx context.Context) (Result, error) {
	sleepCtx(ctx, defaultLease+200*time.Millisecond)
	var s Snapshot
	s.Lease = defaultLease
	s.ClockJumps = e.jumped
	rows, err := e.admin.Query(ctx, `SELECT job_record_id, queue_name, job_status::text,
	        COALESCE(lease_fencing_generation, 0), lease_expires_at FROM durable_jobs.job_record`)
	if err != nil {
		return Result{}, err
	}
	for rows.Next() {
		var r JobRow
		var exp *time.Time
		if err := rows.Scan(&r.ID, &r.Queue, &r.Status, &r.Generation, &exp); err != nil {
			return Result{}, err
		}
		if exp != nil {
			r.Expires = *exp
		}
		s.Jobs = append(s.Jobs, r)
	}
	if err := rows.Err(); err != nil {
		return Result{}, err
	}
	rows, err = e.admin.Query(ctx, `SELECT job_id, generation FROM campaign.target_effect`)
	if err != nil {
		return Result{}, err
	}
	for rows.Next() {
		var t TargetRow
		if err := rows.Scan(&t.Job, &t.Generation); err != nil {
			return Result{}, err
		}
		s.Targets = append(s.Targets, t)
	}
	if err := rows.Err(); err != nil {
		return Result{}, err
	}
	if err := e.admin.QueryRow(ctx, `SELECT clock_timestamp()`).Scan(&s.Now); err != nil {
		return Result{}, err
	}
	h, err := LoadHistory(e.dir)
	if err != nil {
		return Result{}, err
	}
	e.faultsMu.Lock()
	faults := map[string]int{}
	for k, v := range e.faults {
		faults[k] = v
	}
	e.faultsMu.Unlock()
	vs, lost := check(h, s)
	return Result{Seed: e.cfg.Seed, Ops: CountOps(h), Faults: faults, Violations: vs, LostClaims: lost, History: h}, nil
}

// waitSync makes the standby synchronous and waits until the primary
// reports it so.
func waitSync(ctx context.Context, conn *pgx.Conn) error {
	for _, q := range []string{`ALTER SYSTEM SET synchronous_standby_names = '` + standbyName + `'`, `SELECT pg_reload_conf()`} {
		if _, err := conn.Exec(ctx, q); err != nil {
			return err
		}
	}
	var state string
	for i := 0; i < 200; i++ {
		_ = conn.QueryRow(ctx, `SELECT sync_state FROM pg_stat_replication WHERE application_name = $1`, standbyName).Scan(&state)
		if state == "sync" {
			return nil
		}
		sleepCtx(ctx, 50*time.Millisecond)
	}
	return fmt.Errorf("campaign: the standby never became synchronous (state %q)", state)
}

func sleepCtx(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}
