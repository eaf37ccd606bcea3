package prommetrics_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http/httptest"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"

	"github.com/mightyetl/leasefence/goclient"
	"github.com/mightyetl/leasefence/goclient/prommetrics"
	"github.com/mightyetl/leasefence/internal/testdb"
)

// scrapeText serves one scrape of reg and returns its text.
func scrapeText(t *testing.T, reg *prometheus.Registry) string {
	t.Helper()
	rr := httptest.NewRecorder()
	promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.HTTPErrorOnError}).
		ServeHTTP(rr, httptest.NewRequest("GET", "/metrics", nil))
	require.Equal(t, 200, rr.Code, rr.Body.String())
	return rr.Body.String()
}

// parseScrape parses a scrape's text into its metric families.
func parseScrape(t *testing.T, scrape string) map[string]*dto.MetricFamily {
	t.Helper()
	parser := expfmt.NewTextParser(model.LegacyValidation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(scrape))
	require.NoError(t, err)
	return families
}

// byQueue returns a gauge family's values by queue label, checking that
// queue is each series' one and only label.
func byQueue(t *testing.T, f *dto.MetricFamily) map[string]float64 {
	t.Helper()
	require.NotNil(t, f)
	out := map[string]float64{}
	for _, m := range f.GetMetric() {
		require.Len(t, m.GetLabel(), 1, f.GetName())
		require.Equal(t, prommetrics.LabelQueue, m.GetLabel()[0].GetName(), f.GetName())
		out[m.GetLabel()[0].GetValue()] = m.GetGauge().GetValue()
	}
	return out
}

// failures returns the value of the scrape failure counter, which has no label.
func failures(t *testing.T, families map[string]*dto.MetricFamily) float64 {
	t.Helper()
	f := families[prommetrics.DatabaseScrapeFailuresTotal]
	require.NotNil(t, f, "the failure counter is exported at every scrape")
	require.Len(t, f.GetMetric(), 1)
	require.Empty(t, f.GetMetric()[0].GetLabel())
	return f.GetMetric()[0].GetCounter().GetValue()
}

// databaseMetricNames is every metric name a DatabaseCollector exports.
func databaseMetricNames() []string {
	var names []string
	for _, m := range prommetrics.Metrics {
		if m.FromDatabase {
			names = append(names, m.Name)
		}
	}
	return names
}

// auditorRegistry is a registry holding a DatabaseCollector over an Admin
// of a new auditor login of db, as the runbook sets one up.
func auditorRegistry(t *testing.T, db *testdb.DB) (*prometheus.Registry, *prommetrics.DatabaseCollector) {
	t.Helper()
	auditor, err := goclient.NewAdmin(db.LoginPool(t, "durable_job_auditor"))
	require.NoError(t, err)
	collector, err := prommetrics.NewDatabaseCollector(auditor, 5*time.Second)
	require.NoError(t, err)
	reg := prometheus.NewRegistry()
	require.NoError(t, reg.Register(collector))
	return reg, collector
}

// perQueue is whether a database metric is per queue: all but the
// failure counter and the two server gauges.
func perQueue(name string) bool {
	switch name {
	case prommetrics.DatabaseScrapeFailuresTotal, prommetrics.DatabaseServerTimeline,
		prommetrics.DatabaseServerStartTimestampSeconds:
		return false
	}
	return true
}

// unlabelled is the value of a family's one series, which has no label.
func unlabelled(t *testing.T, f *dto.MetricFamily) float64 {
	t.Helper()
	require.NotNil(t, f)
	require.Len(t, f.GetMetric(), 1, f.GetName())
	require.Empty(t, f.GetMetric()[0].GetLabel(), f.GetName())
	return f.GetMetric()[0].GetGauge().GetValue()
}

// setPolicy sets a queue's lease policy with a superuser call.
func setPolicy(t *testing.T, admin *pgxpool.Pool, queue, lease, interval string) {
	t.Helper()
	_, err := admin.Exec(context.Background(),
		`SELECT durable_jobs.set_queue_lease_policy($1, $2::interval, $3::interval, '1 h', true, 'database collector test')`,
		queue, lease, interval)
	require.NoError(t, err)
}

// sqlClaim is one claim made with a raw claim_next_job call.
type sqlClaim struct {
	id         int64
	token      string // the claim token, as text
	generation int64
	expiresAt  time.Time
}

// claimSQL claims the next job of queue for owner through claim_next_job.
func claimSQL(t *testing.T, worker *pgxpool.Pool, queue, owner string) sqlClaim {
	t.Helper()
	var c sqlClaim
	require.NoError(t, worker.QueryRow(context.Background(),
		`SELECT job_record_id, lease_claim_token, lease_fencing_generation, lease_expires_at
		 FROM durable_jobs.claim_next_job($1, $2)`, queue, owner).
		Scan(&c.id, &c.token, &c.generation, &c.expiresAt))
	return c
}

// The database collector reads what only the database knows: a reclaim, a
// stale renewal, an expired lease nobody has taken over yet, the oldest
// claim's age. Each value comes out as a gauge labelled by queue alone, no
// token, owner or job id appears, and promtool accepts the scrape.
func TestDatabaseCollectorExportsReclaimsAndStaleRenewalsByQueue(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	admin := db.Pool(t)
	const reclaimed, stuck, idle = "etl.reclaimed", "etl.stuck", "etl.idle"
	setPolicy(t, admin, reclaimed, "1 s", "300 ms")
	setPolicy(t, admin, stuck, "1 s", "300 ms")
	setPolicy(t, admin, idle, "30 s", "10 s")
	producer := db.LoginPool(t, "durable_job_producer")
	for _, q := range []string{reclaimed, stuck} {
		_, err := producer.Exec(ctx, `SELECT durable_jobs.enqueue_job($1, '{"customer_email": "kim@example.com"}'::jsonb)`, q)
		require.NoError(t, err)
	}
	worker := db.LoginPool(t, "durable_job_worker")
	const ownerA, ownerB = "collector-owner-a7f3", "collector-owner-b9e1"
	first := claimSQL(t, worker, reclaimed, ownerA)
	stuckClaim := claimSQL(t, worker, stuck, ownerA)

	// Wait until the database clock has passed both expiries.
	deadline := first.expiresAt
	if stuckClaim.expiresAt.After(deadline) {
		deadline = stuckClaim.expiresAt
	}
	for {
		var passed bool
		require.NoError(t, admin.QueryRow(ctx, `SELECT clock_timestamp() > $1`, deadline).Scan(&passed))
		if passed {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	// The reclaim gets a long lease, so it stays live for the rest of the test.
	setPolicy(t, admin, reclaimed, "30 s", "10 s")
	second := claimSQL(t, worker, reclaimed, ownerB)
	require.Equal(t, first.id, second.id, "the expired job was reclaimed")
	require.Equal(t, int64(2), second.generation)
	var outcome string
	require.NoError(t, worker.QueryRow(ctx, `SELECT renewal_outcome FROM durable_jobs.renew_job_lease($1, $2, $3)`,
		first.id, first.token, ownerA).Scan(&outcome))
	require.Equal(t, "stale", outcome, "the superseded claim cannot renew")
	var released bool
	require.NoError(t, worker.QueryRow(ctx, `SELECT durable_jobs.release_job_claim($1, $2, $3)`,
		first.id, first.token, ownerA).Scan(&released))
	require.False(t, released, "the superseded claim cannot be released")

	// One job waits on the idle queue: the backlog gauges show it.
	_, err := producer.Exec(ctx, `SELECT durable_jobs.enqueue_job($1, '{"customer_email": "kim@example.com"}'::jsonb)`, idle)
	require.NoError(t, err)

	reg, collector := auditorRegistry(t, db)
	require.Error(t, reg.Register(collector), "a second registration of the same metrics is refused")

	scrape := scrapeText(t, reg)
	families := parseScrape(t, scrape)
	names := []string{}
	for name := range families {
		names = append(names, name)
	}
	require.ElementsMatch(t, databaseMetricNames(), names, "the collector exports its documented metrics, and nothing else")
	for _, m := range prommetrics.Metrics {
		if m.FromDatabase {
			require.Equal(t, m.Type, strings.ToLower(families[m.Name].GetType().String()), m.Name)
			require.Equal(t, m.Help, families[m.Name].GetHelp(), m.Name)
		}
	}
	require.Zero(t, failures(t, families))

	zero := map[string]float64{"*": 0, idle: 0}
	with := func(values map[string]float64) map[string]float64 {
		out := map[string]float64{}
		for q, v := range zero {
			out[q] = v
		}
		for q, v := range values {
			out[q] = v
		}
		return out
	}
	require.Equal(t, with(map[string]float64{reclaimed: 1, stuck: 0}),
		byQueue(t, families[prommetrics.DatabaseReclaimsLastHour]))
	require.Equal(t, with(map[string]float64{reclaimed: 1, stuck: 0}),
		byQueue(t, families[prommetrics.DatabaseStaleRenewalsLastHour]))
	require.Equal(t, with(map[string]float64{reclaimed: 1, stuck: 0}),
		byQueue(t, families[prommetrics.DatabaseStaleReleasesLastHour]))
	require.Equal(t, with(map[string]float64{reclaimed: 0, stuck: 1}),
		byQueue(t, families[prommetrics.DatabaseExpiredAwaitingReclaim]))
	require.Equal(t, with(map[string]float64{reclaimed: 1, stuck: 1}),
		byQueue(t, families[prommetrics.DatabaseRunningJobs]))
	ages := byQueue(t, families[prommetrics.DatabaseOldestLeaseAgeSeconds])
	require.Len(t, ages, 4)
	require.Zero(t, ages["*"], "no running job: age 0")
	require.Zero(t, ages[idle])
	require.Greater(t, ages[reclaimed], 0.0)
	require.Less(t, ages[reclaimed], ages[stuck], "the reclaim is a newer claim than the stuck one")
	require.GreaterOrEqual(t, ages[stuck], 1.0, "the stuck claim is older than its 1 s lease")
	require.Less(t, ages[stuck], 60.0)

	require.Equal(t, with(map[string]float64{reclaimed: 0, stuck: 0, idle: 1}),
		byQueue(t, families[prommetrics.DatabaseQueuedJobs]))
	require.Equal(t, with(map[string]float64{reclaimed: 0, stuck: 0}),
		byQueue(t, families[prommetrics.DatabaseRetryScheduledJobs]))
	require.Equal(t, with(map[string]float64{reclaimed: 0, stuck: 0}),
		byQueue(t, families[prommetrics.DatabaseFailedJobsLastHour]))
	due := byQueue(t, families[prommetrics.DatabaseOldestDueJobAgeSeconds])
	require.Len(t, due, 4)
	require.Zero(t, due[reclaimed], "nothing waits: age 0")
	require.GreaterOrEqual(t, due[idle], 0.0)
	require.Less(t, due[idle], 60.0, "the waiting job has been due since it was enqueued")

	for _, forbidden := range []string{ownerA, ownerB, first.token, second.token, "kim@example.com",
		"SELECT", "durable_jobs", "SQLSTATE", "leasefence: "} {
		require.NotContains(t, scrape, forbidden)
	}

	promtool, err := exec.LookPath("promtool")
	require.NoError(t, err, "promtool is missing: run make deps (it installs the prometheus package that provides promtool)")
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = bytes.NewBufferString(scrape)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "promtool check metrics: %s", out)
}

// A read that cannot finish in time (a superuser holds an ACCESS EXCLUSIVE
// lock on the job table in another session) counts one failure and exports
// no database gauge, not the values of the scrape before; once the lock is
// released the next scrape reads fresh values again. No error text appears.
func TestDatabaseCollectorTimeoutCountsAFailureAndExportsNothingStale(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	admin := db.Pool(t)
	const queue = "etl.locked"
	setPolicy(t, admin, queue, "30 s", "10 s")
	producer := db.LoginPool(t, "durable_job_producer")
	_, err := producer.Exec(ctx, `SELECT durable_jobs.enqueue_job($1, '{"n": 1}'::jsonb)`, queue)
	require.NoError(t, err)
	claimSQL(t, db.LoginPool(t, "durable_job_worker"), queue, "collector-owner-c4d2")

	auditor, err := goclient.NewAdmin(db.LoginPool(t, "durable_job_auditor"))
	require.NoError(t, err)
	const timeout = 500 * time.Millisecond
	collector, err := prommetrics.NewDatabaseCollector(auditor, timeout)
	require.NoError(t, err)
	reg := prometheus.NewRegistry()
	require.NoError(t, reg.Register(collector))

	before := parseScrape(t, scrapeText(t, reg))
	require.Zero(t, failures(t, before))
	require.Equal(t, 1.0, byQueue(t, before[prommetrics.DatabaseRunningJobs])[queue])

	// Session one locks the job table; session two (the collector) reads.
	locker, err := admin.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = locker.Rollback(ctx) }()
	_, err = locker.Exec(ctx, `LOCK TABLE durable_jobs.job_record IN ACCESS EXCLUSIVE MODE`)
	require.NoError(t, err)
	start := time.Now()
	scrape := scrapeText(t, reg)
	elapsed := time.Since(start)
	require.GreaterOrEqual(t, elapsed, timeout, "the read waited on the lock until its timeout")
	require.Less(t, elapsed, timeout+5*time.Second, "the scrape did not wait past its timeout for long")
	during := parseScrape(t, scrape)
	require.Equal(t, 1.0, failures(t, during))
	require.Len(t, during, 1, "only the failure counter: no gauge from the scrape before")
	for _, forbidden := range []string{"cancel", "timeout", "deadline", "lock", "57014", "SQLSTATE", "leasefence: ", "error"} {
		require.NotContains(t, strings.ToLower(scrape), strings.ToLower(forbidden))
	}
	require.NoError(t, locker.Rollback(ctx))

	after := parseScrape(t, scrapeText(t, reg))
	require.Equal(t, 1.0, failures(t, after), "the count stays; nothing new failed")
	require.Equal(t, 1.0, byQueue(t, after[prommetrics.DatabaseRunningJobs])[queue])
	require.Len(t, after, len(databaseMetricNames()))
}

// A login without durable_job_auditor cannot read the lease health: every
// scrape counts a failure, exports no gauge and shows no error text.
func TestDatabaseCollectorWithoutTheAuditorRoleCountsFailures(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	client, err := goclient.NewAdmin(db.LoginPool(t, "durable_job_worker"))
	require.NoError(t, err)
	_, err = client.LeaseHealth(context.Background())
	require.ErrorIs(t, err, goclient.ErrPermissionDenied, "the worker role really is refused")
	collector, err := prommetrics.NewDatabaseCollector(client, 5*time.Second)
	require.NoError(t, err)
	reg := prometheus.NewRegistry()
	require.NoError(t, reg.Register(collector))
	for want := 1.0; want <= 2; want++ {
		scrape := scrapeText(t, reg)
		families := parseScrape(t, scrape)
		require.Len(t, families, 1)
		require.Equal(t, want, failures(t, families))
		for _, forbidden := range []string{"permission", "denied", "42501", "durable_jobs", "leasefence: "} {
			require.NotContains(t, scrape, forbidden)
		}
	}
}

// A nil reader is refused when the collector is made, not at the first
// scrape: a nil interface, and a nil *goclient.Admin in a non-nil one, which
// a plain reader == nil check lets through to panic at the scrape.
func TestNewDatabaseCollectorRefusesANilReaderOrTimeout(t *testing.T) {
	t.Parallel()
	pool, err := pgxpool.New(context.Background(), "postgres://nobody@127.0.0.1:1/none")
	require.NoError(t, err, "a pool opens no connection until used")
	t.Cleanup(pool.Close)
	admin, err := goclient.NewAdmin(pool)
	require.NoError(t, err)

	var nilAdmin *goclient.Admin
	for name, reader := range map[string]prommetrics.LeaseHealthReader{
		"nil interface": nil, "nil *Admin": nilAdmin,
	} {
		collector, err := prommetrics.NewDatabaseCollector(reader, time.Second)
		require.ErrorIs(t, err, prommetrics.ErrInvalidDatabaseCollector, name)
		require.EqualError(t, err, "prommetrics: invalid database collector configuration: the lease health reader is nil", name)
		require.Nil(t, collector, name)
	}
	for _, timeout := range []time.Duration{0, -time.Second} {
		_, err = prommetrics.NewDatabaseCollector(admin, timeout)
		require.ErrorIs(t, err, prommetrics.ErrInvalidDatabaseCollector, timeout.String())
		require.ErrorContains(t, err, "the timeout must be positive")
	}
}

// A reader that is no pointer (here a struct value) is called as it is:
// the collector needs nothing but LeaseHealth.
func TestDatabaseCollectorTakesAnyLeaseHealthReader(t *testing.T) {
	t.Parallel()
	age := 90 * time.Second
	reader := fixedReader{rows: []goclient.QueueLeaseHealth{{Queue: "etl.fake", RunningJobs: 2, OldestLeaseAge: &age}}}
	collector, err := prommetrics.NewDatabaseCollector(reader, time.Second)
	require.NoError(t, err)
	reg := prometheus.NewRegistry()
	require.NoError(t, reg.Register(collector))
	families := parseScrape(t, scrapeText(t, reg))
	require.Equal(t, 2.0, byQueue(t, families[prommetrics.DatabaseRunningJobs])["etl.fake"])
	require.Equal(t, 90.0, byQueue(t, families[prommetrics.DatabaseOldestLeaseAgeSeconds])["etl.fake"])
	var nilFunc readerFunc
	_, err = prommetrics.NewDatabaseCollector(nilFunc, time.Second)
	require.ErrorIs(t, err, prommetrics.ErrInvalidDatabaseCollector, "a nil func is nil too")
}

// fixedReader is a LeaseHealthReader that answers with its rows.
type fixedReader struct{ rows []goclient.QueueLeaseHealth }

// LeaseHealth returns r's rows.
func (r fixedReader) LeaseHealth(context.Context) ([]goclient.QueueLeaseHealth, error) {
	return r.rows, nil
}

// readerFunc is a LeaseHealthReader made of a function.
type readerFunc func(context.Context) ([]goclient.QueueLeaseHealth, error)

// LeaseHealth calls f.
func (f readerFunc) LeaseHealth(ctx context.Context) ([]goclient.QueueLeaseHealth, error) {
	return f(ctx)
}

// Any producer login may enqueue into a queue name nobody has made a
// policy for, so the collector's series are bounded whatever producers
// do: 105 queue names of idle jobs and one busy queue that sorts last give
// MaxDatabaseQueueSeries queues of their own, the busy one among them, and
// one OtherQueuesLabel series that sums the rest. (On 1cc8d2a every queue
// name a producer used became a series of its own.)
func TestDatabaseCollectorBoundsTheSeriesProducersCanCreate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	producer := db.LoginPool(t, "durable_job_producer")
	for i := range 105 {
		_, err := producer.Exec(ctx, `SELECT durable_jobs.enqueue_job($1, '{}'::jsonb)`, fmt.Sprintf("flood.q%03d", i))
		require.NoError(t, err)
	}
	const busy = "zz.busy"
	_, err := producer.Exec(ctx, `SELECT durable_jobs.enqueue_job($1, '{}'::jsonb)`, busy)
	require.NoError(t, err)
	claimSQL(t, db.LoginPool(t, "durable_job_worker"), busy, "bound-owner")

	reg, _ := auditorRegistry(t, db)
	families := parseScrape(t, scrapeText(t, reg))
	require.Zero(t, failures(t, families))
	for _, name := range databaseMetricNames() {
		if !perQueue(name) {
			continue
		}
		require.Len(t, byQueue(t, families[name]), prommetrics.MaxDatabaseQueueSeries+1, name)
	}
	running := byQueue(t, families[prommetrics.DatabaseRunningJobs])
	require.Equal(t, 1.0, running[busy], "the busy queue keeps its own series")
	require.Contains(t, running, prommetrics.OtherQueuesLabel)
	require.NotContains(t, running, "*", "the default row, with nothing going on, ranks below every queue with a waiting job")
	require.Contains(t, running, "flood.q000")
	require.NotContains(t, running, "flood.q104", "the idle queues last by name are summed")
	ages := byQueue(t, families[prommetrics.DatabaseOldestLeaseAgeSeconds])
	require.Zero(t, ages[prommetrics.OtherQueuesLabel], "no running job among the rest")
	queued := byQueue(t, families[prommetrics.DatabaseQueuedJobs])
	require.Equal(t, 6.0, queued[prommetrics.OtherQueuesLabel], "the waiting jobs of the queues summed into the rest")
	require.Equal(t, 1.0, queued["flood.q000"])
	require.Zero(t, queued[busy], "its one job runs")
}

// Issue 36, item 2: a claim lost with the database (played by moving the
// claim's time before the server's start) is reclaimed without costing an
// attempt, and the collector shows it apart: a failover reclaim, not a
// reclaim. Over an Admin it also exports the server's timeline and start
// time, and its read records a restart (played by moving the start time
// the bundle saw) as control evidence, once.
func TestDatabaseCollectorShowsFailoverReclaimsAndTheServer(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	admin := db.Pool(t)
	const queue = "etl.failover"
	setPolicy(t, admin, queue, "30 s", "10 s")
	_, err := db.LoginPool(t, "durable_job_producer").Exec(ctx, `SELECT durable_jobs.enqueue_job($1, '{}'::jsonb)`, queue)
	require.NoError(t, err)
	worker := db.LoginPool(t, "durable_job_worker")
	lost := claimSQL(t, worker, queue, "failover-owner-a")
	testdb.LoseClaimWithTheDatabase(t, admin, lost.id)
	again := claimSQL(t, worker, queue, "failover-owner-b")
	require.Equal(t, lost.id, again.id)
	_, err = admin.Exec(ctx, `UPDATE durable_jobs.server_timeline_state SET server_started_at = server_started_at - interval '1 hour'`)
	require.NoError(t, err)

	reg, _ := auditorRegistry(t, db)
	families := parseScrape(t, scrapeText(t, reg))
	require.Zero(t, failures(t, families))
	require.Equal(t, map[string]float64{"*": 0, queue: 1}, byQueue(t, families[prommetrics.DatabaseFailoverReclaimsLastHour]))
	require.Equal(t, map[string]float64{"*": 0, queue: 0}, byQueue(t, families[prommetrics.DatabaseReclaimsLastHour]),
		"a failover reclaim is no reclaim")

	var timeline int64
	var started time.Time
	require.NoError(t, admin.QueryRow(ctx, `SELECT ('x' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))::bit(32)::bigint,
		pg_postmaster_start_time()`).Scan(&timeline, &started))
	require.Equal(t, float64(timeline), unlabelled(t, families[prommetrics.DatabaseServerTimeline]))
	require.InDelta(t, float64(started.UnixMilli())/1000, unlabelled(t, families[prommetrics.DatabaseServerStartTimestampSeconds]), 0.001)

	parseScrape(t, scrapeText(t, reg))
	var restarts int64
	require.NoError(t, admin.QueryRow(ctx, `SELECT count(*) FROM durable_jobs.control_evidence_history(NULL)
		WHERE evidence_kind = 'server_restarted'`).Scan(&restarts))
	require.EqualValues(t, 1, restarts, "the scrape recorded the restart, and the next one nothing more")
}
