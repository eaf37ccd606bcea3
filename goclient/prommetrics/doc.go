// Package prommetrics exposes a goclient.Observer as Prometheus metrics on
// github.com/prometheus/client_golang, and the database's own lease health
// as a prometheus.Collector.
//
// # Overview
//
// Create the observer on a registry and hand it to the client:
//
//	reg := prometheus.NewRegistry()
//	obs, err := prommetrics.New(reg)
//	if err != nil { ... }
//	client, err := goclient.NewClient(pool, goclient.Config{Observer: obs})
//	http.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
//
// The observer counts what one client sees. Some things only the database
// knows: whether a claim reclaimed an expired lease (claim_next_job's answer
// does not say, so leasefence_claims_total has no "kind"), how many leases
// have expired and wait, how old the oldest claim is, how many jobs wait
// and how long the oldest due one has waited. A DatabaseCollector reads
// them at every scrape from lease_health_by_queue and queue_backlog,
// through a LeaseHealthReader (and BacklogReader), with a timeout: a
// goclient.Admin (no heartbeat, no pool of its own) whose login is granted
// durable_job_auditor:
//
//	auditor, err := goclient.NewAdmin(auditorPool)
//	collector, err := prommetrics.NewDatabaseCollector(auditor, 5*time.Second)
//	reg.MustRegister(collector)
//
// Run one collector per database (say, in one process or a small exporter),
// not one per worker: every collector exports the same database-wide counts.
//
// # Metrics
//
// Metrics lists every metric with its type, help text and labels, and the
// constants below name them; documentation and alert rules use these names.
// The only labels are "queue" (bounded by the queues that have a lease
// policy or jobs) and one enumerated label per metric ("outcome", "cause"
// or "reason") whose values are the goclient constants listed in Metrics.
// leasefence_database_unavailable is the workers' "database unavailable"
// signal (goclient.AvailabilityObserver): 1 for the reason the workers of
// the process stopped claiming (commit_timeout, connection_lost, timeout),
// all 0 while they claim; it tells a failover or a stalled synchronous
// standby from lost workers. No
// metric ever carries a job id, claim token, owner id, principal, payload,
// SQL or error text; a failed database read is a count
// (leasefence_database_scrape_failures_total), never a message.
package prommetrics
