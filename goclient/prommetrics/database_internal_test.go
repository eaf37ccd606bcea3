package prommetrics

import (
	"testing"
	"time"

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
	health := []goclient.QueueLeaseHealth{
		{Queue: "a", RunningJobs: 1, OldestLeaseAge: age(time.Second)},
		{Queue: "b", RunningJobs: 5, ExpiredAwaitingReclaim: 1, OldestLeaseAge: age(time.Minute)},
		{Queue: "c", ReclaimsLastHour: 2, StaleRenewalsLastHour: 1, ExpiringWithinInterval: 3},
		{Queue: "d", RunningJobs: 2, ExpiringWithinInterval: 1, OldestLeaseAge: age(time.Hour)},
		{Queue: "e", StaleReleasesLastHour: 1},
	}
	require.Equal(t, health, boundQueues(health, 5), "within the bound nothing changes")
	got := boundQueues(health, 2)
	require.Equal(t, []goclient.QueueLeaseHealth{
		health[1], health[2],
		{Queue: OtherQueuesLabel, RunningJobs: 3, ExpiringWithinInterval: 1, StaleReleasesLastHour: 1,
			OldestLeaseAge: age(time.Hour)},
	}, got)
	require.Equal(t, "a", health[0].Queue, "the input is left as it was")
}
