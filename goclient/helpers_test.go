package goclient_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/mightyetl/leasefence/goclient"
	"github.com/mightyetl/leasefence/internal/leaseport"
	"github.com/mightyetl/leasefence/internal/testdb"
)

// testQueue is the queue every test uses in its own database.
const testQueue = "etl.orders"

// policy is a queue lease policy for a test.
type policy struct {
	lease, interval, maxLifetime time.Duration
	renewalEnabled               bool
}

// shortPolicy is the default test policy: 2 s leases renewed every 500 ms.
var shortPolicy = policy{lease: 2 * time.Second, interval: 500 * time.Millisecond, maxLifetime: time.Hour, renewalEnabled: true}

// slowPolicy is for tests that need more room: 3 s leases renewed every second.
var slowPolicy = policy{lease: 3 * time.Second, interval: time.Second, maxLifetime: time.Hour, renewalEnabled: true}

// clientConfig returns cfg with the settings that keep p safe where cfg
// leaves them zero: a margin of one interval and attempts of four fifths of
// one. The lease and interval come from the policy, as in production.
func (p policy) clientConfig(cfg goclient.Config) goclient.Config {
	if cfg.SafetyMargin == 0 {
		cfg.SafetyMargin = p.interval
	}
	if cfg.AttemptTimeout == 0 {
		cfg.AttemptTimeout = p.interval * 4 / 5
	}
	return cfg
}

// env is one test's database with its pools.
type env struct {
	t        *testing.T
	db       *testdb.DB
	admin    *pgxpool.Pool
	producer *goclient.Client
	// producerAdmin is an Admin of the producer login: State and Cancel.
	producerAdmin *goclient.Admin
	workerDB      string // a worker login URL
	policy        policy
}

// setup gives the test its own database with p as testQueue's policy, a
// producer client and a worker login.
func setup(t *testing.T, p policy) *env {
	t.Helper()
	return setupDB(t, testdb.New(t), p)
}

// setupDB is setup on a database the test already has.
func setupDB(t *testing.T, db *testdb.DB, p policy) *env {
	t.Helper()
	e := &env{t: t, db: db, admin: db.Pool(t), workerDB: db.LoginURL(t, "durable_job_worker"), policy: p}
	e.setPolicy(p)
	producerPool := db.LoginPool(t, "durable_job_producer")
	e.producer = e.client(producerPool)
	e.producerAdmin = adminClient(t, producerPool)
	return e
}

// setPolicy sets testQueue's policy with a superuser call.
func (e *env) setPolicy(p policy) {
	e.t.Helper()
	_, err := e.admin.Exec(context.Background(),
		`SELECT durable_jobs.set_queue_lease_policy($1, $2, $3, $4, $5, 'test policy')`,
		testQueue, p.lease, p.interval, p.maxLifetime, p.renewalEnabled)
	require.NoError(e.t, err)
}

// pool opens a pool on u with ParsePoolConfig's settings, closed at cleanup.
func (e *env) pool(u string) *pgxpool.Pool {
	e.t.Helper()
	p, err := goclient.NewPool(context.Background(), u, 0)
	require.NoError(e.t, err)
	e.t.Cleanup(p.Close)
	return p
}

// client builds a client over pool with cfg (at most one; none is
// Config{}) completed by the env policy's clientConfig, closed at cleanup.
func (e *env) client(pool *pgxpool.Pool, cfg ...goclient.Config) *goclient.Client {
	e.t.Helper()
	c, err := goclient.NewClient(pool, e.policy.clientConfig(append(cfg, goclient.Config{})[0]))
	require.NoError(e.t, err)
	e.t.Cleanup(func() { _ = c.Close() })
	return c
}

// worker builds a client over a new pool on the worker login.
func (e *env) worker(cfg ...goclient.Config) *goclient.Client {
	e.t.Helper()
	return e.client(e.pool(e.workerDB), cfg...)
}

// enqueue enqueues n jobs and returns their ids.
func (e *env) enqueue(n int) []int64 {
	e.t.Helper()
	ids := make([]int64, n)
	for i := range ids {
		id, err := e.producer.Enqueue(context.Background(), goclient.EnqueueParams{
			Queue: testQueue, Payload: []byte(fmt.Sprintf(`{"order": %d, "customer_email": "kim@example.com"}`, i)),
		})
		require.NoError(e.t, err)
		ids[i] = id
	}
	return ids
}

// state returns a job's lifecycle state.
func (e *env) state(id int64) goclient.JobState {
	e.t.Helper()
	s, err := e.producerAdmin.State(context.Background(), id)
	require.NoError(e.t, err)
	return s
}

// dbNow returns the database's clock_timestamp().
func (e *env) dbNow() time.Time {
	e.t.Helper()
	var now time.Time
	require.NoError(e.t, e.admin.QueryRow(context.Background(), `SELECT clock_timestamp()`).Scan(&now))
	return now
}

// claim claims one job with c, failing the test when there is none.
func claim(t *testing.T, c *goclient.Client) goclient.Job {
	t.Helper()
	job, err := c.Claim(context.Background(), testQueue)
	require.NoError(t, err)
	return job
}

// recorder is an Observer that keeps every signal for assertions.
type recorder struct {
	mu       sync.Mutex
	renewals map[goclient.RenewalOutcome]int
	rejected int
	lags     []time.Duration
	margins  []time.Duration
	claims   int
	lost     map[goclient.LossCause]int
	offsets  []time.Duration
	inFlight []int
	queues   map[string]bool
	events   []goclient.RenewalOutcome // renewal outcomes in the order they came
}

func newRecorder() *recorder {
	return &recorder{renewals: map[goclient.RenewalOutcome]int{},
		lost: map[goclient.LossCause]int{}, queues: map[string]bool{}}
}

func (r *recorder) Renewal(q string, o goclient.RenewalOutcome) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.queues[q] = true
	r.renewals[o]++
	r.events = append(r.events, o)
}

func (r *recorder) ConfigurationRejected(q string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.queues[q] = true
	r.rejected++
}

func (r *recorder) SchedulerLag(q string, d time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.queues[q] = true
	r.lags = append(r.lags, d)
}

func (r *recorder) SafetyMarginRemaining(q string, d time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.queues[q] = true
	r.margins = append(r.margins, d)
}

func (r *recorder) Claimed(q string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.queues[q] = true
	r.claims++
}

func (r *recorder) OwnershipLost(q string, c goclient.LossCause) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.queues[q] = true
	r.lost[c]++
}

func (r *recorder) DatabaseClockOffset(d time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.offsets = append(r.offsets, d)
}

func (r *recorder) RenewalsInFlight(n int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.inFlight = append(r.inFlight, n)
}

func (r *recorder) renewalCount(o goclient.RenewalOutcome) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.renewals[o]
}

func (r *recorder) lostCount(c goclient.LossCause) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lost[c]
}

// waitFor polls cond every 20 ms until it holds or d passes.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", d, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// proxy is an in-test TCP proxy between a client and PostgreSQL that the
// test can cut (close every connection and refuse new ones), stall (keep
// connections open but forward nothing) and restore.
type proxy struct {
	ln     net.Listener
	target string

	mu      sync.Mutex
	cond    *sync.Cond
	mode    string // "open", "cut", "stall"
	conns   map[net.Conn]struct{}
	wg      sync.WaitGroup
	closing bool
}

// newProxy starts a proxy to the host of rawURL and returns it with the URL
// rewritten to go through it. It is closed at cleanup.
func newProxy(t *testing.T, rawURL string) (*proxy, string) {
	t.Helper()
	u, err := url.Parse(rawURL)
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &proxy{ln: ln, target: u.Host, mode: "open", conns: map[net.Conn]struct{}{}}
	p.cond = sync.NewCond(&p.mu)
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.close)
	u.Host = ln.Addr().String()
	return p, u.String()
}

func (p *proxy) accept() {
	defer p.wg.Done()
	for {
		down, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if p.mode == "cut" || p.closing {
			p.mu.Unlock()
			_ = down.Close()
			continue
		}
		p.mu.Unlock()
		up, err := net.Dial("tcp", p.target)
		if err != nil {
			_ = down.Close()
			continue
		}
		p.mu.Lock()
		p.conns[down], p.conns[up] = struct{}{}, struct{}{}
		p.mu.Unlock()
		p.wg.Add(2)
		go p.pipe(down, up)
		go p.pipe(up, down)
	}
}

// pipe copies from src to dst, waiting while the proxy is stalled.
func (p *proxy) pipe(src, dst net.Conn) {
	defer p.wg.Done()
	defer func() { _ = src.Close(); _ = dst.Close() }()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		p.mu.Lock()
		for p.mode == "stall" && !p.closing {
			p.cond.Wait()
		}
		p.mu.Unlock()
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// set changes the mode; "cut" also closes every open connection.
func (p *proxy) set(mode string) {
	p.mu.Lock()
	p.mode = mode
	if mode == "cut" {
		for c := range p.conns {
			_ = c.Close()
		}
		p.conns = map[net.Conn]struct{}{}
	}
	p.cond.Broadcast()
	p.mu.Unlock()
}

func (p *proxy) close() {
	p.mu.Lock()
	p.closing = true
	for c := range p.conns {
		_ = c.Close()
	}
	p.cond.Broadcast()
	p.mu.Unlock()
	_ = p.ln.Close()
	p.wg.Wait()
}

// skewedClock is an application wall clock off by a fixed amount.
type skewedClock struct{ skew time.Duration }

func (c skewedClock) Now() time.Time { return time.Now().Round(0).Add(c.skew) }

// countingPort wraps the real renewal port and records every call.
type countingPort struct {
	inner   leaseport.Port
	delay   time.Duration // added before each call (latency, not a fake answer)
	mu      sync.Mutex
	batches [][]int64
	sentAt  []time.Time
	active  int
	peak    int
	// truncate, when set, drops the answer's rows (a port breaking its promise).
	truncate bool
}

func (p *countingPort) RenewClaims(ctx context.Context, claims []goclient.Claim) ([]goclient.RenewalResult, error) {
	ids := make([]int64, len(claims))
	for i, c := range claims {
		ids[i] = c.JobID()
	}
	p.mu.Lock()
	p.batches = append(p.batches, ids)
	p.sentAt = append(p.sentAt, time.Now())
	p.active++
	p.peak = max(p.peak, p.active)
	delay := p.delay
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		p.active--
		p.mu.Unlock()
	}()
	time.Sleep(delay)
	r, err := p.inner.RenewClaims(ctx, claims)
	if p.truncate {
		r = r[:0]
	}
	return r, err
}

// setDelay changes the latency added to each call from now on and resets
// the peak of calls open at once.
func (p *countingPort) setDelay(d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.delay, p.peak = d, p.active
}

func (p *countingPort) snapshot() ([][]int64, []time.Time, int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([][]int64(nil), p.batches...), append([]time.Time(nil), p.sentAt...), p.peak
}

// heartbeatPort returns the production renewal port over a pool of its own
// on the worker login, wrapped in a countingPort.
func (e *env) heartbeatPort() *countingPort {
	e.t.Helper()
	return &countingPort{inner: leaseport.NewPg(e.pool(e.workerDB), e.policy.interval*4/5)}
}

var _ = io.EOF
var _ = errors.New
