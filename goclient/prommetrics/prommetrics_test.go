package prommetrics_test

import (
	"bytes"
	"context"
	"errors"
	"net/http/httptest"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"

	"github.com/mightyetl/leasefence/goclient"
	"github.com/mightyetl/leasefence/goclient/prommetrics"
	"github.com/mightyetl/leasefence/internal/testdb"
)

func TestMain(m *testing.M) { os.Exit(testdb.Run(m)) }

const (
	renewingQueue = "etl.orders"
	disabledQueue = "etl.audit"
)

// refusing is a Scheduler that can be told to refuse renewal attempts.
type refusing struct {
	mu     sync.Mutex
	refuse bool
	wg     sync.WaitGroup
}

func (r *refusing) Submit(task func()) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.refuse {
		return errors.New("executor saturated")
	}
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		task()
	}()
	return nil
}

// After a run with every kind of outcome, a scrape holds
// only the documented metrics, labels and label values, and no job id,
// token, owner id, payload, SQL or error text.
func TestPrometheusScrapeHasOnlyBoundedLabels(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	admin := db.Pool(t)
	for _, q := range []struct {
		name    string
		enabled bool
	}{{renewingQueue, true}, {disabledQueue, false}} {
		_, err := admin.Exec(ctx, `SELECT durable_jobs.set_queue_lease_policy($1, '2 s', '500 ms', '1 h', $2, 'metrics test')`,
			q.name, q.enabled)
		require.NoError(t, err)
	}
	producerPool := db.LoginPool(t, "durable_job_producer")
	base := goclient.Config{LeaseDuration: 2 * time.Second, RenewalInterval: 500 * time.Millisecond, SafetyMargin: 500 * time.Millisecond}
	producer, err := goclient.NewClient(producerPool, base)
	require.NoError(t, err)
	defer producer.Close()
	var ids []int64
	enqueue := func(queue string) int64 {
		id, err := producer.Enqueue(ctx, goclient.EnqueueParams{Queue: queue,
			Payload: []byte(`{"customer_email": "kim@example.com", "iban": "DE89370400440532013000"}`)})
		require.NoError(t, err)
		ids = append(ids, id)
		return id
	}

	reg := prometheus.NewRegistry()
	obs, err := prommetrics.New(reg)
	require.NoError(t, err)
	_, err = prommetrics.New(reg)
	require.Error(t, err, "a second registration of the same metrics is refused")

	workerURL := db.LoginURL(t, "durable_job_worker")
	pool := func() *pgxpool.Pool {
		p, err := goclient.NewPool(ctx, workerURL, 0)
		require.NoError(t, err)
		t.Cleanup(p.Close)
		return p
	}
	sched := &refusing{}
	owner := "metrics-owner-1d9c"
	cfg := base
	cfg.Observer, cfg.OwnerID, cfg.Scheduler = obs, owner, sched
	c, err := goclient.NewClient(pool(), cfg)
	require.NoError(t, err)
	defer sched.wg.Wait()
	defer c.Close()

	// renewed, then released.
	enqueue(renewingQueue)
	job, err := c.Claim(ctx, renewingQueue)
	require.NoError(t, err)
	kept := c.Keep(ctx, job)
	// stale: cancelled while kept.
	staleID := enqueue(renewingQueue)
	job, err = c.Claim(ctx, renewingQueue)
	require.NoError(t, err)
	stale := c.Keep(ctx, job)
	operator, err := goclient.NewAdmin(producerPool) // cancel_job: the producer role
	require.NoError(t, err)
	_, err = operator.Cancel(ctx, staleID, goclient.ChangeRecord{})
	require.NoError(t, err)
	// renewal_disabled, then the trust deadline.
	enqueue(disabledQueue)
	job, err = c.Claim(ctx, disabledQueue)
	require.NoError(t, err)
	disabled := c.Keep(ctx, job)
	<-stale.Context().Done()
	<-disabled.Context().Done()
	ok, err := kept.Release(ctx)
	require.NoError(t, err)
	require.True(t, ok)
	// database_failure, then the trust deadline.
	enqueue(renewingQueue)
	job, err = c.Claim(ctx, renewingQueue)
	require.NoError(t, err)
	sched.mu.Lock()
	sched.refuse = true
	sched.mu.Unlock()
	failing := c.Keep(ctx, job)
	<-failing.Context().Done()
	// a configuration rejection.
	enqueue(renewingQueue)
	mismatched, err := goclient.NewClient(pool(), goclient.Config{LeaseDuration: 3 * time.Second, RenewalInterval: time.Second, SafetyMargin: time.Second, Observer: obs, OwnerID: owner})
	require.NoError(t, err)
	defer mismatched.Close()
	_, err = mismatched.Claim(ctx, renewingQueue)
	require.ErrorIs(t, err, goclient.ErrConfigurationRejected)

	// The database's side, read at the scrape by an auditor login.
	auditor, err := goclient.NewAdmin(db.LoginPool(t, "durable_job_auditor"))
	require.NoError(t, err)
	collector, err := prommetrics.NewDatabaseCollector(auditor, 5*time.Second)
	require.NoError(t, err)
	require.NoError(t, reg.Register(collector))

	// Scrape.
	rr := httptest.NewRecorder()
	promhttp.HandlerFor(reg, promhttp.HandlerOpts{}).ServeHTTP(rr, httptest.NewRequest("GET", "/metrics", nil))
	require.Equal(t, 200, rr.Code)
	scrape := rr.Body.String()

	parser := expfmt.NewTextParser(model.LegacyValidation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(scrape))
	require.NoError(t, err)
	documented := map[string]prommetrics.Metric{}
	for _, m := range prommetrics.Metrics {
		documented[m.Name] = m
	}
	require.Len(t, families, len(prommetrics.Metrics), "every documented metric was produced, and nothing else")
	queues := map[string]bool{renewingQueue: true, disabledQueue: true, "*": true}
	seen := map[string]map[string]bool{}
	for name, f := range families {
		m, ok := documented[name]
		require.True(t, ok, "undocumented metric %s", name)
		require.Equal(t, m.Type, strings.ToLower(f.GetType().String()), name)
		for _, metric := range f.GetMetric() {
			require.Len(t, metric.GetLabel(), len(m.Labels), name)
			for _, l := range metric.GetLabel() {
				require.Contains(t, m.Labels, l.GetName(), name)
				if l.GetName() == prommetrics.LabelQueue {
					require.True(t, queues[l.GetValue()], "queue label value %q", l.GetValue())
					continue
				}
				require.Contains(t, m.Values[l.GetName()], l.GetValue(), "%s{%s}", name, l.GetName())
				if seen[l.GetName()] == nil {
					seen[l.GetName()] = map[string]bool{}
				}
				seen[l.GetName()][l.GetValue()] = true
			}
		}
	}
	require.Len(t, seen[prommetrics.LabelOutcome], 4, "renewed, stale, renewal_disabled and database_failure all showed")
	require.Len(t, seen[prommetrics.LabelCause], 3, "stale, trust_deadline_passed and released all showed")
	claims := map[string]float64{}
	for _, metric := range families[prommetrics.ClaimsTotal].GetMetric() {
		claims[metric.GetLabel()[0].GetValue()] = metric.GetCounter().GetValue()
	}
	require.Equal(t, map[string]float64{renewingQueue: 3, disabledQueue: 1}, claims,
		"every claim is counted by queue alone; the rejected one was given back, not counted")

	for _, forbidden := range []string{owner, "kim@example.com", "DE89370400440532013000", "SELECT", "durable_jobs",
		"SQLSTATE", "leasefence: ", "saturated", "iban"} {
		require.NotContains(t, scrape, forbidden)
	}
	require.False(t, regexp.MustCompile(`(?i)[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`).MatchString(scrape),
		"no token-shaped value")
	values := map[string]bool{}
	for _, f := range families {
		for _, metric := range f.GetMetric() {
			for _, l := range metric.GetLabel() {
				values[l.GetValue()] = true
			}
		}
	}
	for _, id := range ids {
		require.False(t, values[strconv.FormatInt(id, 10)], "job id %d as a label value", id)
	}

	promtool, err := exec.LookPath("promtool")
	require.NoError(t, err, "promtool is missing: run make deps (it installs the prometheus package that provides promtool)")
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = bytes.NewBufferString(scrape)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "promtool check metrics: %s", out)
}
