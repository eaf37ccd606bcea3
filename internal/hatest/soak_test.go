//go:build hasoak

package hatest

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestHASoak is make ha-soak (build tag hasoak, so make test never runs
// it): for each mode of HA_SOAK_MODES (synchronous, asynchronous; both by
// default), a fresh two-member Patroni cluster through HA_SOAK_EVENTS
// events (20 by default), switchovers and crash failovers alternating,
// with every check runScenario makes (every job once, no stale write,
// generations increasing, no attempt charged, no ordinary reclaim, each
// promotion recorded once); then one line of figures per mode.
func TestHASoak(t *testing.T) {
	events, err := strconv.Atoi(envOr("HA_SOAK_EVENTS", "20"))
	if err != nil || events < 1 {
		t.Fatalf("HA_SOAK_EVENTS must be a positive number of events, got %q", os.Getenv("HA_SOAK_EVENTS"))
	}
	var lines []string
	for _, mode := range strings.Split(envOr("HA_SOAK_MODES", "synchronous,asynchronous"), ",") {
		if mode != "synchronous" && mode != "asynchronous" {
			t.Fatalf("HA_SOAK_MODES lists synchronous and asynchronous only, got %q", mode)
		}
		t.Run(mode, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute+time.Duration(events)*90*time.Second)
			defer cancel()
			c := startCluster(t, mode == "synchronous")
			plan := make([]event, events)
			for i := range plan {
				plan[i] = []event{switchover, crash}[i%2]
			}
			f := runScenario(t, ctx, c, mode == "synchronous", plan)
			lines = append(lines, "soak: "+f.summary())
		})
	}
	for _, l := range lines {
		t.Log(l)
	}
}

// envOr is the environment variable name, or fallback when it is unset
// or empty.
func envOr(name, fallback string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return fallback
}
