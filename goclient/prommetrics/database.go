package prommetrics

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mightyetl/leasefence/goclient"
)

// ErrInvalidDatabaseCollector is returned by NewDatabaseCollector when its
// reader is nil (a nil interface, or a nil *goclient.Admin or
// *goclient.Client in one) or its timeout is not positive.
var ErrInvalidDatabaseCollector = errors.New("prommetrics: invalid database collector configuration")

// DatabaseCollector is a prometheus.Collector that asks the database for its
// own lease health at every scrape (LeaseHealthReader.LeaseHealth, for
// example goclient.Admin's, which needs a login granted durable_job_auditor) and exports one gauge per queue for
// each of: reclaims, stale renewals and stale releases in the last hour
// (queue "*" holds the stale calls not charged to a queue), expired leases
// awaiting reclaim, running jobs and the oldest running claim's age. These
// are the database's counts, so they cover every worker, including ones
// that crashed before they could report anything, and they are the only
// source of reclaims: a client cannot tell a reclaim from a first claim.
//
// A read that fails or takes longer than the timeout adds one to
// leasefence_database_scrape_failures_total, and that scrape exports no
// database gauge at all (never the previous values, never the error text).
// The only label is "queue". Queue names are chosen by producers (any
// producer login may enqueue into a new queue name), so the number of
// series is bounded: at most MaxDatabaseQueueSeries queues get series of
// their own, the busiest first (running jobs, expired leases, reclaims,
// stale renewals and stale releases), and the rest are summed into one series labelled
// OtherQueuesLabel (the oldest lease age is their greatest).
type DatabaseCollector struct {
	reader   LeaseHealthReader
	timeout  time.Duration
	failures prometheus.Counter
	gauges   []databaseGauge
}

// MaxDatabaseQueueSeries is how many queues at most the DatabaseCollector
// exports under their own name; it exports one more series,
// OtherQueuesLabel, for the rest.
const MaxDatabaseQueueSeries = 100

// OtherQueuesLabel is the queue label of the series in which the
// DatabaseCollector sums the queues beyond MaxDatabaseQueueSeries. It
// cannot be a queue name: queue names start with a letter.
const OtherQueuesLabel = "_other"

// LeaseHealthReader reads the lease health of every queue: all a
// DatabaseCollector needs. *goclient.Admin (no heartbeat, no pool of its
// own: the one to use) and *goclient.Client implement it.
type LeaseHealthReader interface {
	// LeaseHealth returns the lease health of every queue that has a
	// policy or a job, within ctx.
	LeaseHealth(ctx context.Context) ([]goclient.QueueLeaseHealth, error)
}

// databaseGauge is one per-queue gauge and how to read it from a row.
type databaseGauge struct {
	desc  *prometheus.Desc
	value func(goclient.QueueLeaseHealth) float64
}

var _ prometheus.Collector = (*DatabaseCollector)(nil)

// NewDatabaseCollector returns a collector that reads the lease health
// through reader, giving each read at most timeout (keep it below your
// Prometheus scrape_timeout). Register it on a registry:
//
//	auditor, err := goclient.NewAdmin(auditorPool) // a login granted durable_job_auditor
//	collector, err := prommetrics.NewDatabaseCollector(auditor, 5*time.Second)
//	reg.MustRegister(collector)
//
// It returns an error matching ErrInvalidDatabaseCollector when reader is
// nil, including a nil pointer or func in a non-nil interface (a nil
// *goclient.Admin would otherwise panic at the first scrape), or timeout is
// not positive. It opens no connection itself.
func NewDatabaseCollector(reader LeaseHealthReader, timeout time.Duration) (*DatabaseCollector, error) {
	if isNil(reader) {
		return nil, fmt.Errorf("%w: the lease health reader is nil", ErrInvalidDatabaseCollector)
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
		reader:  reader,
		timeout: timeout,
		failures: prometheus.NewCounter(prometheus.CounterOpts{Name: DatabaseScrapeFailuresTotal,
			Help: help[DatabaseScrapeFailuresTotal].Help}),
		gauges: []databaseGauge{
			{desc(DatabaseReclaimsLastHour), func(h goclient.QueueLeaseHealth) float64 { return float64(h.ReclaimsLastHour) }},
			{desc(DatabaseStaleRenewalsLastHour), func(h goclient.QueueLeaseHealth) float64 { return float64(h.StaleRenewalsLastHour) }},
			{desc(DatabaseStaleReleasesLastHour), func(h goclient.QueueLeaseHealth) float64 { return float64(h.StaleReleasesLastHour) }},
			{desc(DatabaseExpiredAwaitingReclaim), func(h goclient.QueueLeaseHealth) float64 { return float64(h.ExpiredAwaitingReclaim) }},
			{desc(DatabaseRunningJobs), func(h goclient.QueueLeaseHealth) float64 { return float64(h.RunningJobs) }},
			{desc(DatabaseOldestLeaseAgeSeconds), oldestLeaseAgeSeconds},
		},
	}, nil
}

// isNil reports whether r is nil or holds a nil pointer, map, slice,
// channel or function: a reader whose LeaseHealth cannot be called.
func isNil(r LeaseHealthReader) bool {
	if r == nil {
		return true
	}
	switch v := reflect.ValueOf(r); v.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Chan, reflect.Func:
		return v.IsNil()
	}
	return false
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
	health, err := c.reader.LeaseHealth(ctx)
	if err != nil {
		c.failures.Inc()
		health = nil
	}
	for _, h := range boundQueues(health, MaxDatabaseQueueSeries) {
		for _, g := range c.gauges {
			// Queue names match ^[a-z][a-z0-9_.:-]{0,62}$ (or are "*" or
			// OtherQueuesLabel), so the one label value is always valid.
			ch <- prometheus.MustNewConstMetric(g.desc, prometheus.GaugeValue, g.value(h), h.Queue)
		}
	}
	c.failures.Collect(ch)
}

// activity is how much a queue's health says is going on: what an operator
// watches the database gauges for.
func activity(h goclient.QueueLeaseHealth) int64 {
	return h.RunningJobs + h.ExpiredAwaitingReclaim + h.ReclaimsLastHour + h.StaleRenewalsLastHour + h.StaleReleasesLastHour
}

// boundQueues returns health unchanged when it has at most limit queues;
// otherwise the limit busiest queues (by activity, then by name), in name
// order, and one more entry, OtherQueuesLabel, holding the sums of the
// rest (and the greatest of their oldest lease ages).
func boundQueues(health []goclient.QueueLeaseHealth, limit int) []goclient.QueueLeaseHealth {
	if len(health) <= limit {
		return health
	}
	ranked := slices.Clone(health)
	slices.SortStableFunc(ranked, func(a, b goclient.QueueLeaseHealth) int {
		return cmp.Or(cmp.Compare(activity(b), activity(a)), cmp.Compare(a.Queue, b.Queue))
	})
	kept := ranked[:limit:limit]
	slices.SortFunc(kept, func(a, b goclient.QueueLeaseHealth) int { return cmp.Compare(a.Queue, b.Queue) })
	other := goclient.QueueLeaseHealth{Queue: OtherQueuesLabel}
	for _, h := range ranked[limit:] {
		other.RunningJobs += h.RunningJobs
		other.ExpiringWithinInterval += h.ExpiringWithinInterval
		other.ExpiredAwaitingReclaim += h.ExpiredAwaitingReclaim
		other.ReclaimsLastHour += h.ReclaimsLastHour
		other.StaleRenewalsLastHour += h.StaleRenewalsLastHour
		other.StaleReleasesLastHour += h.StaleReleasesLastHour
		if h.OldestLeaseAge != nil && (other.OldestLeaseAge == nil || *h.OldestLeaseAge > *other.OldestLeaseAge) {
			other.OldestLeaseAge = h.OldestLeaseAge
		}
	}
	return append(kept, other)
}
