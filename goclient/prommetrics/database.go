package prommetrics

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mightyetl/leasefence/goclient"
)

// ErrInvalidDatabaseCollector is returned by NewDatabaseCollector when its
// client is nil or its timeout is not positive.
var ErrInvalidDatabaseCollector = errors.New("prommetrics: invalid database collector configuration")

// DatabaseCollector is a prometheus.Collector that asks the database for its
// own lease health at every scrape (goclient.Client.LeaseHealth, which needs
// a login granted durable_job_auditor) and exports one gauge per queue for
// each of: reclaims and stale renewals in the last hour, expired leases
// awaiting reclaim, running jobs and the oldest running claim's age. These
// are the database's counts, so they cover every worker, including ones
// that crashed before they could report anything, and they are the only
// source of reclaims: a client cannot tell a reclaim from a first claim.
//
// A read that fails or takes longer than the timeout adds one to
// leasefence_database_scrape_failures_total, and that scrape exports no
// database gauge at all (never the previous values, never the error text).
// The only label is "queue".
type DatabaseCollector struct {
	client   *goclient.Client
	timeout  time.Duration
	failures prometheus.Counter
	gauges   []databaseGauge
}

// databaseGauge is one per-queue gauge and how to read it from a row.
type databaseGauge struct {
	desc  *prometheus.Desc
	value func(goclient.QueueLeaseHealth) float64
}

var _ prometheus.Collector = (*DatabaseCollector)(nil)

// NewDatabaseCollector returns a collector that reads the lease health
// through client, giving each read at most timeout (keep it below your
// Prometheus scrape_timeout). Register it on a registry:
//
//	auditor, err := goclient.New(auditorPool) // a login granted durable_job_auditor
//	collector, err := prommetrics.NewDatabaseCollector(auditor, 5*time.Second)
//	reg.MustRegister(collector)
//
// It returns an error matching ErrInvalidDatabaseCollector when client is
// nil or timeout is not positive. It opens no connection itself.
func NewDatabaseCollector(client *goclient.Client, timeout time.Duration) (*DatabaseCollector, error) {
	if client == nil {
		return nil, fmt.Errorf("%w: the client is nil", ErrInvalidDatabaseCollector)
	}
	if timeout <= 0 {
		return nil, fmt.Errorf("%w: the timeout must be positive, got %s", ErrInvalidDatabaseCollector, timeout)
	}
	help := make(map[string]Metric, len(Metrics))
	for _, m := range Metrics {
		help[m.Name] = m
	}
	desc := func(name string) *prometheus.Desc {
		return prometheus.NewDesc(name, help[name].Help, help[name].Labels, nil)
	}
	return &DatabaseCollector{
		client:  client,
		timeout: timeout,
		failures: prometheus.NewCounter(prometheus.CounterOpts{Name: DatabaseScrapeFailuresTotal,
			Help: help[DatabaseScrapeFailuresTotal].Help}),
		gauges: []databaseGauge{
			{desc(DatabaseReclaimsLastHour), func(h goclient.QueueLeaseHealth) float64 { return float64(h.ReclaimsLastHour) }},
			{desc(DatabaseStaleRenewalsLastHour), func(h goclient.QueueLeaseHealth) float64 { return float64(h.StaleRenewalsLastHour) }},
			{desc(DatabaseExpiredAwaitingReclaim), func(h goclient.QueueLeaseHealth) float64 { return float64(h.ExpiredAwaitingReclaim) }},
			{desc(DatabaseRunningJobs), func(h goclient.QueueLeaseHealth) float64 { return float64(h.RunningJobs) }},
			{desc(DatabaseOldestLeaseAgeSeconds), oldestLeaseAgeSeconds},
		},
	}, nil
}

// oldestLeaseAgeSeconds is the oldest running claim's age in seconds, or 0
// when the queue has no running job.
func oldestLeaseAgeSeconds(h goclient.QueueLeaseHealth) float64 {
	if h.OldestLeaseAge == nil {
		return 0
	}
	return h.OldestLeaseAge.Seconds()
}

// Describe sends the descriptions of every metric the collector exports.
func (c *DatabaseCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, g := range c.gauges {
		ch <- g.desc
	}
	c.failures.Describe(ch)
}

// Collect reads the lease health once, within the timeout, and sends one
// gauge per queue and metric, then the failure counter. After a failed read
// it sends the failure counter only.
func (c *DatabaseCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	health, err := c.client.LeaseHealth(ctx)
	if err != nil {
		c.failures.Inc()
		health = nil
	}
	for _, h := range health {
		for _, g := range c.gauges {
			// Queue names match ^[a-z][a-z0-9_.:-]{0,62}$ (or are "*"), so
			// the one label value is always valid.
			ch <- prometheus.MustNewConstMetric(g.desc, prometheus.GaugeValue, g.value(h), h.Queue)
		}
	}
	c.failures.Collect(ch)
}
