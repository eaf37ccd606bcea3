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
// reader is nil (a nil interface, or a nil *goclient.Admin in one) or its
// timeout is not positive.
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
// When the reader is a BacklogReader too (goclient.Admin is), each scrape also reads the backlog
// (durable_jobs.queue_backlog, migration 028) and exports, per queue, the
// jobs queued and retry scheduled, the jobs failed in the last hour and the
// age of the oldest due job (0 when none is due): the gauges that show
// workers falling behind, or none running at all.
//
// When the reader is an AvailabilityReader too (goclient.Admin is), each
// scrape also reads the server's availability (server_availability,
// migration 031) and exports the WAL timeline and the server's start time,
// with no label: a promotion raises the one, a restart moves the other
// (the LeasefenceDatabasePromoted and LeasefenceDatabaseRestarted alerts).
// That read is also what records a promotion or restart as control
// evidence.
//
// A read (of any) that fails or takes longer than the timeout adds one to
// leasefence_database_scrape_failures_total, and that scrape exports no
// database gauge at all (never the previous values, never the error text).
// The only label is "queue". Queue names are chosen by producers (any
// producer login may enqueue into a new queue name), so the number of
// series is bounded: at most MaxDatabaseQueueSeries queues get series of
// their own, the busiest first (by the workers' activity: running jobs,
// expired leases, reclaims, stale renewals and stale releases; then by
// backlog: queued, retry scheduled and failed jobs, which any producer
// can create), and the rest are summed into one series labelled
// OtherQueuesLabel (the oldest lease age and oldest due job age are their
// greatest).
type DatabaseCollector struct {
	reader   LeaseHealthReader
	timeout  time.Duration
	failures prometheus.Counter
	gauges   []databaseGauge
	// backlog reads the backlog; nil when the reader is no BacklogReader.
	backlog BacklogReader
	// availability reads the server's availability; nil when the reader
	// is no AvailabilityReader.
	availability AvailabilityReader
	// timeline and started are the two server gauges.
	timeline, started *prometheus.Desc
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
// DatabaseCollector needs. *goclient.Admin implements it (no heartbeat, no
// pool of its own).
type LeaseHealthReader interface {
	// LeaseHealth returns the lease health of every queue that has a
	// policy or a job, within ctx.
	LeaseHealth(ctx context.Context) ([]goclient.QueueLeaseHealth, error)
}

// BacklogReader reads the backlog of every queue. A LeaseHealthReader
// that is a BacklogReader too (*goclient.Admin is) gives the DatabaseCollector the backlog gauges as well.
type BacklogReader interface {
	// QueueBacklog returns the backlog of every queue that has a policy or
	// a job waiting, running or failed in the last hour, within ctx.
	QueueBacklog(ctx context.Context) ([]goclient.QueueBacklog, error)
}

// AvailabilityReader reads the server's availability. A LeaseHealthReader
// that is an AvailabilityReader too (*goclient.Admin is) gives the
// DatabaseCollector the server's timeline and start time.
type AvailabilityReader interface {
	// ServerAvailability returns the server's WAL timeline and start
	// time, within ctx.
	ServerAvailability(ctx context.Context) (goclient.ServerAvailability, error)
}

// queueRow is what one scrape read of one queue: its lease health and,
// from a BacklogReader, its backlog (zero when there is none).
type queueRow struct {
	health  goclient.QueueLeaseHealth
	backlog goclient.QueueBacklog
}

// databaseGauge is one per-queue gauge and how to read it from a row;
// fromBacklog marks the gauges only a BacklogReader gives.
type databaseGauge struct {
	desc        *prometheus.Desc
	value       func(queueRow) float64
	fromBacklog bool
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
	backlog, _ := reader.(BacklogReader)
	availability, _ := reader.(AvailabilityReader)
	return &DatabaseCollector{
		reader:       reader,
		backlog:      backlog,
		availability: availability,
		timeline:     desc(DatabaseServerTimeline),
		started:      desc(DatabaseServerStartTimestampSeconds),
		timeout:      timeout,
		failures: prometheus.NewCounter(prometheus.CounterOpts{Name: DatabaseScrapeFailuresTotal,
			Help: help[DatabaseScrapeFailuresTotal].Help}),
		gauges: []databaseGauge{
			{desc: desc(DatabaseReclaimsLastHour), value: func(r queueRow) float64 { return float64(r.health.ReclaimsLastHour) }},
			{desc: desc(DatabaseFailoverReclaimsLastHour), value: func(r queueRow) float64 { return float64(r.health.FailoverReclaimsLastHour) }},
			{desc: desc(DatabaseStaleRenewalsLastHour), value: func(r queueRow) float64 { return float64(r.health.StaleRenewalsLastHour) }},
			{desc: desc(DatabaseStaleReleasesLastHour), value: func(r queueRow) float64 { return float64(r.health.StaleReleasesLastHour) }},
			{desc: desc(DatabaseExpiredAwaitingReclaim), value: func(r queueRow) float64 { return float64(r.health.ExpiredAwaitingReclaim) }},
			{desc: desc(DatabaseRunningJobs), value: func(r queueRow) float64 { return float64(r.health.RunningJobs) }},
			{desc: desc(DatabaseOldestLeaseAgeSeconds), value: oldestLeaseAgeSeconds},
			{desc: desc(DatabaseQueuedJobs), value: func(r queueRow) float64 { return float64(r.backlog.Queued) }, fromBacklog: true},
			{desc: desc(DatabaseRetryScheduledJobs), value: func(r queueRow) float64 { return float64(r.backlog.RetryScheduled) }, fromBacklog: true},
			{desc: desc(DatabaseFailedJobsLastHour), value: func(r queueRow) float64 { return float64(r.backlog.FailedLastHour) }, fromBacklog: true},
			{desc: desc(DatabaseOldestDueJobAgeSeconds), value: oldestDueJobAgeSeconds, fromBacklog: true},
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
func oldestLeaseAgeSeconds(r queueRow) float64 {
	return seconds(r.health.OldestLeaseAge)
}

// oldestDueJobAgeSeconds is how long the oldest due job has waited, in
// seconds, or 0 when no job of the queue is due.
func oldestDueJobAgeSeconds(r queueRow) float64 {
	return seconds(r.backlog.OldestDueAge)
}

// seconds is d in seconds, 0 for nil.
func seconds(d *time.Duration) float64 {
	if d == nil {
		return 0
	}
	return d.Seconds()
}

// Describe sends the descriptions of every metric the collector exports.
func (c *DatabaseCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, g := range c.gauges {
		if !g.fromBacklog || c.backlog != nil {
			ch <- g.desc
		}
	}
	if c.availability != nil {
		ch <- c.timeline
		ch <- c.started
	}
	c.failures.Describe(ch)
}

// Collect reads the lease health, and the backlog when the reader gives
// it, within the timeout, and sends one gauge per queue and metric, then
// the failure counter. After a failed read it sends the failure counter
// only.
func (c *DatabaseCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	rows, server, err := c.read(ctx)
	if err != nil {
		c.failures.Inc()
		rows, server = nil, nil
	}
	if server != nil {
		ch <- prometheus.MustNewConstMetric(c.timeline, prometheus.GaugeValue, float64(server.Timeline))
		ch <- prometheus.MustNewConstMetric(c.started, prometheus.GaugeValue, float64(server.StartedAt.UnixMilli())/1000)
	}
	for _, r := range boundQueues(rows, MaxDatabaseQueueSeries) {
		for _, g := range c.gauges {
			if g.fromBacklog && c.backlog == nil {
				continue
			}
			// Queue names match ^[a-z][a-z0-9_.:-]{0,62}$ (or are "*" or
			// OtherQueuesLabel), so the one label value is always valid.
			ch <- prometheus.MustNewConstMetric(g.desc, prometheus.GaugeValue, g.value(r), r.health.Queue)
		}
	}
	c.failures.Collect(ch)
}

// read reads the lease health and, from a BacklogReader, the backlog, and
// joins them by queue: every queue either names has one row, in queue
// order; and, from an AvailabilityReader, the server's availability (nil
// without one).
func (c *DatabaseCollector) read(ctx context.Context) ([]queueRow, *goclient.ServerAvailability, error) {
	var server *goclient.ServerAvailability
	if c.availability != nil {
		s, err := c.availability.ServerAvailability(ctx)
		if err != nil {
			return nil, nil, err
		}
		server = &s
	}
	health, err := c.reader.LeaseHealth(ctx)
	if err != nil {
		return nil, nil, err
	}
	var backlog []goclient.QueueBacklog
	if c.backlog != nil {
		if backlog, err = c.backlog.QueueBacklog(ctx); err != nil {
			return nil, nil, err
		}
	}
	byQueue := make(map[string]*queueRow, len(health))
	rows := make([]*queueRow, 0, len(health))
	row := func(queue string) *queueRow {
		r, ok := byQueue[queue]
		if !ok {
			r = &queueRow{health: goclient.QueueLeaseHealth{Queue: queue}}
			byQueue[queue] = r
			rows = append(rows, r)
		}
		return r
	}
	for _, h := range health {
		row(h.Queue).health = h
	}
	for _, b := range backlog {
		row(b.Queue).backlog = b
	}
	out := make([]queueRow, len(rows))
	for i, r := range rows {
		out[i] = *r
	}
	slices.SortFunc(out, func(a, b queueRow) int { return cmp.Compare(a.health.Queue, b.health.Queue) })
	return out, server, nil
}

// activity is how much a queue's health says its workers do: what an
// operator watches the database gauges for. Only worker logins make it.
func activity(r queueRow) int64 {
	h := r.health
	return h.RunningJobs + h.ExpiredAwaitingReclaim + h.ReclaimsLastHour + h.FailoverReclaimsLastHour +
		h.StaleRenewalsLastHour + h.StaleReleasesLastHour
}

// backlogSize is how many jobs of a queue wait or failed lately: ranked
// after activity, since any producer login can make it.
func backlogSize(r queueRow) int64 {
	return r.backlog.Queued + r.backlog.RetryScheduled + r.backlog.FailedLastHour
}

// boundQueues returns rows unchanged when they are at most limit queues;
// otherwise the limit busiest queues (by activity, then backlog, then
// name), in name order, and one more entry, OtherQueuesLabel, holding the
// sums of the rest (and the greatest of their oldest lease ages and oldest
// due job ages).
func boundQueues(rows []queueRow, limit int) []queueRow {
	if len(rows) <= limit {
		return rows
	}
	ranked := slices.Clone(rows)
	slices.SortStableFunc(ranked, func(a, b queueRow) int {
		return cmp.Or(cmp.Compare(activity(b), activity(a)), cmp.Compare(backlogSize(b), backlogSize(a)),
			cmp.Compare(a.health.Queue, b.health.Queue))
	})
	kept := ranked[:limit:limit]
	slices.SortFunc(kept, func(a, b queueRow) int { return cmp.Compare(a.health.Queue, b.health.Queue) })
	other := queueRow{health: goclient.QueueLeaseHealth{Queue: OtherQueuesLabel},
		backlog: goclient.QueueBacklog{Queue: OtherQueuesLabel}}
	for _, r := range ranked[limit:] {
		h, b := r.health, r.backlog
		other.health.RunningJobs += h.RunningJobs
		other.health.ExpiringWithinInterval += h.ExpiringWithinInterval
		other.health.ExpiredAwaitingReclaim += h.ExpiredAwaitingReclaim
		other.health.ReclaimsLastHour += h.ReclaimsLastHour
		other.health.FailoverReclaimsLastHour += h.FailoverReclaimsLastHour
		other.health.StaleRenewalsLastHour += h.StaleRenewalsLastHour
		other.health.StaleReleasesLastHour += h.StaleReleasesLastHour
		other.health.OldestLeaseAge = longest(other.health.OldestLeaseAge, h.OldestLeaseAge)
		other.backlog.Queued += b.Queued
		other.backlog.Running += b.Running
		other.backlog.RetryScheduled += b.RetryScheduled
		other.backlog.FailedLastHour += b.FailedLastHour
		other.backlog.OldestDueAge = longest(other.backlog.OldestDueAge, b.OldestDueAge)
	}
	return append(kept, other)
}

// longest is the longer of two optional durations (nil when both are).
func longest(a, b *time.Duration) *time.Duration {
	if b != nil && (a == nil || *b > *a) {
		return b
	}
	return a
}
