// Package prommetrics exposes a goclient.Observer as Prometheus metrics on
// github.com/prometheus/client_golang.
//
// # Overview
//
// Create the observer on a registry and hand it to the client:
//
//	reg := prometheus.NewRegistry()
//	obs, err := prommetrics.New(reg)
//	if err != nil { ... }
//	client, err := goclient.New(pool, goclient.WithObserver(obs), ...)
//	http.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
//
// # Metrics
//
// Metrics lists every metric with its type, help text and labels, and the
// constants below name them; documentation and alert rules use these names.
// The only labels are "queue" (bounded by the queues that have a lease
// policy or jobs) and one enumerated label per metric ("outcome", "kind" or
// "cause") whose values are the goclient constants listed in Metrics. No
// metric ever carries a job id, claim token, owner id, principal, payload,
// SQL or error text.
package prommetrics
