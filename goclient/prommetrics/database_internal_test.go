package prommetrics

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"

	"github.com/mightyetl/leasefence/goclient"
)

// boundQueues keeps the busiest queues under their own name and folds the
// rest into OtherQueuesLabel: counts summed, the oldest lease age the
// greatest of theirs. (The database test covers the scrape; this one the
// folding of running queues, which needs more busy queues than a test
// should make.)
func TestBoundQueuesFoldsTheQuietestIntoOther(t *testing.T) {
	t.Parallel()
	age := func(d time.Duration) *time.Duration { return &d }
	rows := []queueRow{
		{health: goclient.QueueLeaseHealth{Queue: "a", RunningJobs: 1, OldestLeaseAge: age(time.Second)},
			backlog: goclient.QueueBacklog{Queue: "a", Queued: 4, OldestDueAge: age(time.Minute)}},
		{health: goclient.QueueLeaseHealth{Queue: "b", RunningJobs: 5, ExpiredAwaitingReclaim: 1, OldestLeaseAge: age(time.Minute)}},
		{health: goclient.QueueLeaseHealth{Queue: "c", ReclaimsLastHour: 2, StaleRenewalsLastHour: 1, ExpiringWithinInterval: 3}},
		{health: goclient.QueueLeaseHealth{Queue: "d", RunningJobs: 2, ExpiringWithinInterval: 1, OldestLeaseAge: age(time.Hour)},
			backlog: goclient.QueueBacklog{Queue: "d", RetryScheduled: 1, FailedLastHour: 2, Running: 2, OldestDueAge: age(time.Second)}},
		{health: goclient.QueueLeaseHealth{Queue: "e", StaleReleasesLastHour: 1}},
	}
	require.Equal(t, rows, boundQueues(rows, 5), "within the bound nothing changes")
	got := boundQueues(rows, 2)
	require.Equal(t, []queueRow{
		rows[1], rows[2],
		{health: goclient.QueueLeaseHealth{Queue: OtherQueuesLabel, RunningJobs: 3, ExpiringWithinInterval: 1, StaleReleasesLastHour: 1,
			OldestLeaseAge: age(time.Hour)},
			backlog: goclient.QueueBacklog{Queue: OtherQueuesLabel, Queued: 4, RetryScheduled: 1, FailedLastHour: 2, Running: 2,
				OldestDueAge: age(time.Minute)}},
	}, got)
	require.Equal(t, "a", rows[0].health.Queue, "the input is left as it was")

	// The workers' activity ranks first, the backlog (which any producer
	// can make) second, the name last.
	quiet := []queueRow{
		{health: goclient.QueueLeaseHealth{Queue: "x"}},
		{health: goclient.QueueLeaseHealth{Queue: "y"}, backlog: goclient.QueueBacklog{Queue: "y", Queued: 1000}},
		{health: goclient.QueueLeaseHealth{Queue: "z", RunningJobs: 1}},
	}
	got = boundQueues(quiet, 2)
	require.Equal(t, []string{"y", "z", OtherQueuesLabel}, []string{got[0].health.Queue, got[1].health.Queue, got[2].health.Queue})
}

// backlogReader is a LeaseHealthReader and BacklogReader with fixed answers.
type backlogReader struct {
	health     []goclient.QueueLeaseHealth
	backlog    []goclient.QueueBacklog
	backlogErr error
}

// LeaseHealth returns r's health rows.
func (r backlogReader) LeaseHealth(context.Context) ([]goclient.QueueLeaseHealth, error) {
	return r.health, nil
}

// QueueBacklog returns r's backlog rows, or its error.
func (r backlogReader) QueueBacklog(context.Context) ([]goclient.QueueBacklog, error) {
	return r.backlog, r.backlogErr
}

// The collector joins health and backlog by queue (a queue only one of
// them names gets zeros for the other) and, when the backlog read fails,
// counts a failure and exports no gauge.
func TestDatabaseCollectorJoinsHealthAndBacklogByQueue(t *testing.T) {
	t.Parallel()
	due := 3 * time.Minute
	reader := backlogReader{
		health:  []goclient.QueueLeaseHealth{{Queue: "b", RunningJobs: 2}, {Queue: "c", ReclaimsLastHour: 1}},
		backlog: []goclient.QueueBacklog{{Queue: "a", Queued: 7, OldestDueAge: &due}, {Queue: "b", Running: 2, RetryScheduled: 1}},
	}
	collector, err := NewDatabaseCollector(reader, time.Second)
	require.NoError(t, err)
	rows, server, err := collector.read(context.Background())
	require.Nil(t, server, "a reader that is no AvailabilityReader gives no server gauges")
	require.NoError(t, err)
	require.Equal(t, []queueRow{
		{health: goclient.QueueLeaseHealth{Queue: "a"}, backlog: reader.backlog[0]},
		{health: reader.health[0], backlog: reader.backlog[1]},
		{health: reader.health[1]},
	}, rows)
	require.Equal(t, 180.0, oldestDueJobAgeSeconds(rows[0]))
	require.Zero(t, oldestDueJobAgeSeconds(rows[1]))

	reader.backlogErr = errors.New("no queue_backlog before migration 028")
	collector, err = NewDatabaseCollector(reader, time.Second)
	require.NoError(t, err)
	ch := make(chan prometheus.Metric, 100)
	collector.Collect(ch)
	close(ch)
	require.Len(t, ch, 1, "only the failure counter")
	var m dto.Metric
	require.NoError(t, (<-ch).Write(&m))
	require.Equal(t, 1.0, m.GetCounter().GetValue())
}

// availabilityReader is a LeaseHealthReader and AvailabilityReader with
// fixed answers.
type availabilityReader struct {
	backlogReader
	server    goclient.ServerAvailability
	serverErr error
}

// ServerAvailability returns r's server, or its error.
func (r availabilityReader) ServerAvailability(context.Context) (goclient.ServerAvailability, error) {
	return r.server, r.serverErr
}

// A reader of the server's availability adds the two server gauges to the
// description and the scrape; when that read fails, the scrape counts a
// failure and exports no gauge at all, per queue or of the server.
func TestDatabaseCollectorReadsTheServerFromAnAvailabilityReader(t *testing.T) {
	t.Parallel()
	reader := availabilityReader{
		backlogReader: backlogReader{health: []goclient.QueueLeaseHealth{{Queue: "a", FailoverReclaimsLastHour: 2}}},
		server:        goclient.ServerAvailability{Timeline: 3, StartedAt: time.Unix(1700000000, 500_000_000)},
	}
	collector, err := NewDatabaseCollector(reader, time.Second)
	require.NoError(t, err)
	descs := make(chan *prometheus.Desc, 100)
	collector.Describe(descs)
	close(descs)
	described := 0
	for d := range descs {
		if d == collector.timeline || d == collector.started {
			described++
		}
	}
	require.Equal(t, 2, described, "both server gauges are described")
	rows, server, err := collector.read(context.Background())
	require.NoError(t, err)
	require.Equal(t, &reader.server, server)
	require.Equal(t, int64(2), rows[0].health.FailoverReclaimsLastHour)
	require.Equal(t, int64(2), activity(rows[0]), "a failover reclaim is activity")
	folded := boundQueues([]queueRow{rows[0], {health: goclient.QueueLeaseHealth{Queue: "b", RunningJobs: 9}}}, 1)
	require.Equal(t, int64(2), folded[1].health.FailoverReclaimsLastHour, "failover reclaims are summed into the rest")

	ch := make(chan prometheus.Metric, 100)
	collector.Collect(ch)
	close(ch)
	values := map[*prometheus.Desc]float64{}
	for m := range ch {
		var out dto.Metric
		require.NoError(t, m.Write(&out))
		values[m.Desc()] = out.GetGauge().GetValue()
	}
	require.Equal(t, 3.0, values[collector.timeline])
	require.Equal(t, 1700000000.5, values[collector.started])

	reader.serverErr = errors.New("no server_availability before migration 031")
	collector, err = NewDatabaseCollector(reader, time.Second)
	require.NoError(t, err)
	ch = make(chan prometheus.Metric, 100)
	collector.Collect(ch)
	close(ch)
	require.Len(t, ch, 1, "only the failure counter")
}
