package docscheck

import "github.com/mightyetl/leasefence/goclient/prommetrics"

// exportedMetricNames returns the metric names the Prometheus adapter
// exports, from its own table, so a renamed metric breaks the docs test.
func exportedMetricNames() []string {
	names := make([]string, 0, len(prommetrics.Metrics))
	for _, m := range prommetrics.Metrics {
		names = append(names, m.Name)
	}
	return names
}
