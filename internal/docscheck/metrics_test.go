package docscheck

// exportedMetricNames returns the metric names the Prometheus adapter
// exports. TEMPORARY: goclient/prommetrics does not exist yet; this list is
// the agreed one from the design brief and is replaced by the adapter's own
// table as soon as the package lands.
func exportedMetricNames() []string {
	return []string{
		"leasefence_renewals_total",
		"leasefence_configuration_rejections_total",
		"leasefence_scheduler_lag_seconds",
		"leasefence_safety_margin_remaining_seconds",
		"leasefence_claims_total",
		"leasefence_ownership_lost_total",
		"leasefence_database_clock_offset_seconds",
		"leasefence_renewals_in_flight",
	}
}
