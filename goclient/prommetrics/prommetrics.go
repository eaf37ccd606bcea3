package prommetrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mightyetl/leasefence/goclient"
)

// The metric names.
const (
	// RenewalsTotal counts renewal attempts per claim by queue and outcome.
	RenewalsTotal = "leasefence_renewals_total"
	// ConfigurationRejectionsTotal counts claims refused because the queue's
	// database policy is one the client cannot keep safe.
	ConfigurationRejectionsTotal = "leasefence_configuration_rejections_total"
	// SchedulerLagSeconds is a histogram of how late renewal ticks ran.
	SchedulerLagSeconds = "leasefence_scheduler_lag_seconds"
	// SafetyMarginRemainingSeconds is a histogram of the trust deadline
	// minus now at each confirmed renewal.
	SafetyMarginRemainingSeconds = "leasefence_safety_margin_remaining_seconds"
	// ClaimsTotal counts claims by queue: first claims and reclaims alike,
	// because the client cannot tell them apart (DatabaseReclaimsLastHour
	// counts the reclaims).
	ClaimsTotal = "leasefence_claims_total"
	// OwnershipLostTotal counts claims the client stopped trusting, by queue
	// and cause. cause="stale" also counts every terminal write made through
	// goclient that the database refused as stale (its transaction aborts,
	// so the database cannot count it) and every release answered false.
	OwnershipLostTotal = "leasefence_ownership_lost_total"
	// DatabaseClockOffsetSeconds is the database time minus the application
	// wall clock, measured at the last answered renewal.
	DatabaseClockOffsetSeconds = "leasefence_database_clock_offset_seconds"
	// RenewalsInFlight is the number of renewal calls open now.
	RenewalsInFlight = "leasefence_renewals_in_flight"
	// DatabaseUnavailable is 1 for the reason a worker stopped claiming
	// because its commits do not come back, 0 for every other reason; all
	// 0 while the workers claim (goclient.AvailabilityObserver).
	DatabaseUnavailable = "leasefence_database_unavailable"

	// DatabaseReclaimsLastHour is how many expired leases the database saw
	// reclaimed in the last hour, per queue (DatabaseCollector).
	DatabaseReclaimsLastHour = "leasefence_database_reclaims_last_hour"
	// DatabaseFailoverReclaimsLastHour is how many claims lost with the
	// database (the server restarted or was promoted since the claim) the
	// database saw reclaimed in the last hour without costing their job an
	// attempt, per queue (DatabaseCollector; apart from
	// DatabaseReclaimsLastHour).
	DatabaseFailoverReclaimsLastHour = "leasefence_database_failover_reclaims_last_hour"
	// DatabaseServerTimeline is the WAL timeline the server writes on, 0 on
	// a standby; it rises with every promotion (DatabaseCollector, from an
	// AvailabilityReader).
	DatabaseServerTimeline = "leasefence_database_server_timeline"
	// DatabaseServerStartTimestampSeconds is when the server last started,
	// as Unix seconds (DatabaseCollector, from an AvailabilityReader).
	DatabaseServerStartTimestampSeconds = "leasefence_database_server_start_timestamp_seconds"
	// DatabaseStaleRenewalsLastHour is how many renewals the database
	// answered "stale" in the last hour, per queue (DatabaseCollector).
	// Queue "*" holds those not charged to a queue: renewals of unknown jobs
	// and of jobs the renewing login did not claim last.
	DatabaseStaleRenewalsLastHour = "leasefence_database_stale_renewals_last_hour"
	// DatabaseStaleReleasesLastHour is how many releases the database
	// answered false (already stale) in the last hour, per queue, charged
	// as stale renewals are (DatabaseCollector).
	DatabaseStaleReleasesLastHour = "leasefence_database_stale_releases_last_hour"
	// DatabaseExpiredAwaitingReclaim is how many RUNNING jobs have a lease
	// that expired by database time and wait to be reclaimed (DatabaseCollector).
	DatabaseExpiredAwaitingReclaim = "leasefence_database_expired_awaiting_reclaim"
	// DatabaseRunningJobs is how many jobs are RUNNING, expired leases
	// included (DatabaseCollector).
	DatabaseRunningJobs = "leasefence_database_running_jobs"
	// DatabaseOldestLeaseAgeSeconds is the age of the oldest running claim
	// of a queue, 0 when none runs (DatabaseCollector).
	DatabaseOldestLeaseAgeSeconds = "leasefence_database_oldest_lease_age_seconds"
	// DatabaseQueuedJobs is how many jobs are QUEUED, due or scheduled
	// later, per queue (DatabaseCollector, from a BacklogReader).
	DatabaseQueuedJobs = "leasefence_database_queued_jobs"
	// DatabaseRetryScheduledJobs is how many jobs are RETRY_SCHEDULED, due
	// or not, per queue (DatabaseCollector, from a BacklogReader).
	DatabaseRetryScheduledJobs = "leasefence_database_retry_scheduled_jobs"
	// DatabaseFailedJobsLastHour is how many jobs became FAILED in the last
	// hour, per queue (DatabaseCollector, from a BacklogReader).
	DatabaseFailedJobsLastHour = "leasefence_database_failed_jobs_last_hour"
	// DatabaseOldestDueJobAgeSeconds is how long the oldest due QUEUED or
	// RETRY_SCHEDULED job of a queue has waited, 0 when none is due
	// (DatabaseCollector, from a BacklogReader).
	DatabaseOldestDueJobAgeSeconds = "leasefence_database_oldest_due_job_age_seconds"
	// DatabaseScrapeFailuresTotal counts the scrapes whose lease health read
	// failed or timed out (DatabaseCollector).
	DatabaseScrapeFailuresTotal = "leasefence_database_scrape_failures_total"
)

// The label names.
const (
	// LabelQueue is the queue name.
	LabelQueue = "queue"
	// LabelOutcome is a goclient.RenewalOutcome.
	LabelOutcome = "outcome"
	// LabelCause is a goclient.LossCause.
	LabelCause = "cause"
	// LabelReason is a goclient.UnavailableReason.
	LabelReason = "reason"
)

// Metric describes one metric this package exports, from the Observer or
// from the DatabaseCollector.
type Metric struct {
	// Name is the metric name.
	Name string
	// Type is "counter", "gauge" or "histogram".
	Type string
	// Help is the metric's help text.
	Help string
	// Labels are the metric's label names, in order.
	Labels []string
	// Values lists, for each enumerated label, every value it can take.
	// The queue label is bounded by the policy table and is not listed.
	Values map[string][]string
	// FromDatabase is true for the metrics a DatabaseCollector reads from
	// the database at each scrape, false for the ones the Observer counts
	// in the client.
	FromDatabase bool
}

// Metrics is the table of every metric this package exports: the
// Observer's first, then the DatabaseCollector's (FromDatabase).
var Metrics = []Metric{
	{Name: RenewalsTotal, Type: "counter", Help: "Renewal attempts per claim, by queue and outcome.",
		Labels: []string{LabelQueue, LabelOutcome},
		Values: map[string][]string{LabelOutcome: {string(goclient.RenewalRenewed), string(goclient.RenewalStale),
			string(goclient.RenewalDisabled), string(goclient.RenewalDatabaseFailure)}}},
	{Name: ConfigurationRejectionsTotal, Type: "counter",
		Help:   "Claims refused because the queue's database lease policy is one the client cannot keep safe.",
		Labels: []string{LabelQueue}},
	{Name: SchedulerLagSeconds, Type: "histogram", Help: "How late a renewal tick ran against the claim's schedule, in seconds.",
		Labels: []string{LabelQueue}},
	{Name: SafetyMarginRemainingSeconds, Type: "histogram",
		Help:   "Trust deadline minus now at each confirmed renewal, in seconds.",
		Labels: []string{LabelQueue}},
	{Name: ClaimsTotal, Type: "counter",
		Help:   "Claims made, by queue: first claims and reclaims alike (the database counts reclaims).",
		Labels: []string{LabelQueue}},
	{Name: OwnershipLostTotal, Type: "counter", Help: "Claims the client stopped trusting, by queue and cause.",
		Labels: []string{LabelQueue, LabelCause},
		Values: map[string][]string{LabelCause: {string(goclient.LossStale), string(goclient.LossTrustDeadlinePassed),
			string(goclient.LossReleased)}}},
	{Name: DatabaseClockOffsetSeconds, Type: "gauge",
		Help: "Database time minus the application wall clock at the last answered renewal, in seconds."},
	{Name: RenewalsInFlight, Type: "gauge", Help: "Renewal calls open now."},
	{Name: DatabaseUnavailable, Type: "gauge",
		Help:   "1 for the reason a worker stopped claiming because its commits do not come back (failover, stalled synchronous standby), else 0.",
		Labels: []string{LabelReason}, Values: map[string][]string{LabelReason: unavailableReasons()}},

	{Name: DatabaseReclaimsLastHour, Type: "gauge", FromDatabase: true,
		Help:   "Expired leases reclaimed in the last hour, as the database counts them, by queue.",
		Labels: []string{LabelQueue}},
	{Name: DatabaseFailoverReclaimsLastHour, Type: "gauge", FromDatabase: true,
		Help:   "Claims lost with the database (server restarted or promoted since the claim) reclaimed in the last hour without costing an attempt, by queue.",
		Labels: []string{LabelQueue}},
	{Name: DatabaseStaleRenewalsLastHour, Type: "gauge", FromDatabase: true,
		Help:   "Renewals the database answered stale in the last hour, by queue (queue * holds those of unknown jobs and of jobs the renewing login did not claim last).",
		Labels: []string{LabelQueue}},
	{Name: DatabaseStaleReleasesLastHour, Type: "gauge", FromDatabase: true,
		Help:   "Releases the database answered stale (false) in the last hour, by queue (queue * holds those of unknown jobs and of jobs the releasing login did not claim last).",
		Labels: []string{LabelQueue}},
	{Name: DatabaseExpiredAwaitingReclaim, Type: "gauge", FromDatabase: true,
		Help:   "RUNNING jobs whose lease expired by database time and that no worker has reclaimed yet, by queue.",
		Labels: []string{LabelQueue}},
	{Name: DatabaseRunningJobs, Type: "gauge", FromDatabase: true,
		Help:   "RUNNING jobs, expired leases included, by queue.",
		Labels: []string{LabelQueue}},
	{Name: DatabaseOldestLeaseAgeSeconds, Type: "gauge", FromDatabase: true,
		Help:   "Age of the oldest running claim by database time, in seconds, by queue; 0 when none runs.",
		Labels: []string{LabelQueue}},
	{Name: DatabaseQueuedJobs, Type: "gauge", FromDatabase: true,
		Help:   "QUEUED jobs, due or scheduled later, by queue.",
		Labels: []string{LabelQueue}},
	{Name: DatabaseRetryScheduledJobs, Type: "gauge", FromDatabase: true,
		Help:   "RETRY_SCHEDULED jobs, due or not, by queue.",
		Labels: []string{LabelQueue}},
	{Name: DatabaseFailedJobsLastHour, Type: "gauge", FromDatabase: true,
		Help:   "Jobs that became FAILED in the last hour and still are, by queue.",
		Labels: []string{LabelQueue}},
	{Name: DatabaseOldestDueJobAgeSeconds, Type: "gauge", FromDatabase: true,
		Help:   "How long the oldest due QUEUED or RETRY_SCHEDULED job has waited by database time, in seconds, by queue; 0 when none is due.",
		Labels: []string{LabelQueue}},
	{Name: DatabaseServerTimeline, Type: "gauge", FromDatabase: true,
		Help: "WAL timeline the database server writes on (a promotion raises it); 0 on a standby."},
	{Name: DatabaseServerStartTimestampSeconds, Type: "gauge", FromDatabase: true,
		Help: "When the database server last started, as Unix seconds."},
	{Name: DatabaseScrapeFailuresTotal, Type: "counter", FromDatabase: true,
		Help: "Scrapes whose database lease health, backlog or availability read failed or timed out; such a scrape exports no database gauge."},
}

// unavailableReasons is every goclient.UnavailableReason as a label value.
func unavailableReasons() []string {
	values := make([]string, len(goclient.UnavailableReasons))
	for i, r := range goclient.UnavailableReasons {
		values[i] = string(r)
	}
	return values
}

// Buckets of the two histograms, in seconds.
var (
	// SchedulerLagBuckets spans 1 ms to 10 s.
	SchedulerLagBuckets = []float64{0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}
	// SafetyMarginBuckets spans 100 ms to 10 min.
	SafetyMarginBuckets = []float64{0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120, 300, 600}
)

// Observer is a goclient.Observer that updates Prometheus metrics.
type Observer struct {
	renewals      *prometheus.CounterVec
	rejections    *prometheus.CounterVec
	schedulerLag  *prometheus.HistogramVec
	safetyMargin  *prometheus.HistogramVec
	claims        *prometheus.CounterVec
	ownershipLost *prometheus.CounterVec
	clockOffset   prometheus.Gauge
	inFlight      prometheus.Gauge
	unavailable   *prometheus.GaugeVec
}

var _ goclient.AvailabilityObserver = (*Observer)(nil)

// New creates the Observer's metrics of Metrics (those not FromDatabase)
// and registers them on reg. It fails when reg already holds a metric of
// the same name.
func New(reg prometheus.Registerer) (*Observer, error) {
	help := make(map[string]Metric, len(Metrics))
	for _, m := range Metrics {
		help[m.Name] = m
	}
	counter := func(name string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help[name].Help}, help[name].Labels)
	}
	histogram := func(name string, buckets []float64) *prometheus.HistogramVec {
		return prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help[name].Help, Buckets: buckets},
			help[name].Labels)
	}
	gauge := func(name string) prometheus.Gauge {
		return prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: help[name].Help})
	}
	o := &Observer{
		renewals:      counter(RenewalsTotal),
		rejections:    counter(ConfigurationRejectionsTotal),
		schedulerLag:  histogram(SchedulerLagSeconds, SchedulerLagBuckets),
		safetyMargin:  histogram(SafetyMarginRemainingSeconds, SafetyMarginBuckets),
		claims:        counter(ClaimsTotal),
		ownershipLost: counter(OwnershipLostTotal),
		clockOffset:   gauge(DatabaseClockOffsetSeconds),
		inFlight:      gauge(RenewalsInFlight),
		unavailable: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: DatabaseUnavailable,
			Help: help[DatabaseUnavailable].Help}, help[DatabaseUnavailable].Labels),
	}
	o.DatabaseAvailable() // every reason at 0 from the start
	for _, c := range []prometheus.Collector{o.renewals, o.rejections, o.schedulerLag, o.safetyMargin,
		o.claims, o.ownershipLost, o.clockOffset, o.inFlight, o.unavailable} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return o, nil
}

// Renewal counts one renewal attempt for one claim.
func (o *Observer) Renewal(queue string, outcome goclient.RenewalOutcome) {
	o.renewals.WithLabelValues(queue, string(outcome)).Inc()
}

// ConfigurationRejected counts one configuration rejection.
func (o *Observer) ConfigurationRejected(queue string) { o.rejections.WithLabelValues(queue).Inc() }

// SchedulerLag records how late a renewal tick ran.
func (o *Observer) SchedulerLag(queue string, lag time.Duration) {
	o.schedulerLag.WithLabelValues(queue).Observe(lag.Seconds())
}

// SafetyMarginRemaining records the trust left at a confirmed renewal.
func (o *Observer) SafetyMarginRemaining(queue string, remaining time.Duration) {
	o.safetyMargin.WithLabelValues(queue).Observe(remaining.Seconds())
}

// Claimed counts one claim.
func (o *Observer) Claimed(queue string) { o.claims.WithLabelValues(queue).Inc() }

// OwnershipLost counts one loss of trust in a claim.
func (o *Observer) OwnershipLost(queue string, cause goclient.LossCause) {
	o.ownershipLost.WithLabelValues(queue, string(cause)).Inc()
}

// DatabaseClockOffset sets the clock offset gauge.
func (o *Observer) DatabaseClockOffset(offset time.Duration) { o.clockOffset.Set(offset.Seconds()) }

// RenewalsInFlight sets the in-flight gauge.
func (o *Observer) RenewalsInFlight(n int) { o.inFlight.Set(float64(n)) }

// DatabaseUnavailable sets the unavailable gauge to 1 for reason and 0 for
// the other reasons.
func (o *Observer) DatabaseUnavailable(reason goclient.UnavailableReason) {
	for _, r := range goclient.UnavailableReasons {
		v := 0.0
		if r == reason {
			v = 1
		}
		o.unavailable.WithLabelValues(string(r)).Set(v)
	}
}

// DatabaseAvailable sets the unavailable gauge to 0 for every reason.
func (o *Observer) DatabaseAvailable() { o.DatabaseUnavailable("") }
