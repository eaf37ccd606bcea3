package goclient

import (
	"container/heap"
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/mightyetl/leasefence/internal/testdb"
)

// TestKeepOfAJobWhoseTrustAlreadyPassed: Keep of a job whose local trust
// deadline has already passed (claimed, then kept too late) ends the lease
// at once with ErrTrustDeadlinePassed. The trust timer then fires at once on
// its own goroutine; it once ran before add had stored the timer, and
// stopping the nil timer crashed the process (seen in the fault campaign).
// Many such leases make the old interleaving all but certain.
func TestKeepOfAJobWhoseTrustAlreadyPassed(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	c, err := NewClient(db.LoginPool(t, "durable_job_worker"), Config{})
	require.NoError(t, err)
	defer c.Close()
	long := time.Now().Add(-time.Hour)
	leases := make([]*Lease, 2000)
	for i := range leases {
		leases[i] = c.Keep(context.Background(), Job{claim: Claim{jobID: int64(i + 1), queue: "etl.late"},
			sentAt: long, leaseExpiresAt: long.Add(time.Second), databaseTime: long})
	}
	for _, l := range leases {
		select {
		case <-l.Context().Done():
		case <-time.After(10 * time.Second):
			t.Fatal("a lease whose trust had passed was still held")
		}
		require.ErrorIs(t, l.Err(), ErrTrustDeadlinePassed)
	}
}

// The number of renewal calls the heartbeat may have open, worked through
// by hand on a queue of due leases (the rule of neededLocked; no call is
// made and no lease ends here). Default terms: 10 s interval, 5 s attempt
// timeout; 4 calls normally, up to 16.
func TestRenewalCallsNeededForTheDueLeases(t *testing.T) {
	t.Parallel()
	now := time.Now()
	terms := leaseTerms{lease: 30 * time.Second, interval: 10 * time.Second, attemptTimeout: 5 * time.Second}
	// queue returns a heartbeat whose queue holds n leases that fell due
	// late ago (trusted until 15 s after that, as after a renewal on
	// time), and n more not due for a second.
	queue := func(n int, late, latency time.Duration) *heartbeat {
		h := &heartbeat{baseInFlight: 4, maxInFlight: 16, latency: latency}
		for i := range 2 * n {
			due := now.Add(-late)
			if i%2 == 1 {
				due = now.Add(time.Second)
			}
			heap.Push(&h.queue, &Lease{terms: terms, nextDue: due, trustedUntil: due.Add(15 * time.Second)})
		}
		return h
	}
	for name, tc := range map[string]struct {
		due           int
		late, latency time.Duration
		want          int
	}{
		// 10 calls' worth due, 5 s to answer them: at 100 ms a call each
		// slot makes 49 in turn, so one slot would do; never below 4.
		"fast database": {10000, 0, 100 * time.Millisecond, 4},
		// At 1 s a call a slot makes 4 in turn: 10 calls need 3, so 4.
		"slow, small backlog": {10000, 0, time.Second, 4},
		// 30 calls at 1 s, 2 s late (3 s left): 2 in turn a slot, 15 slots.
		"slow, large backlog": {30000, 2 * time.Second, time.Second, 15},
		// 3.5 s late: 1.5 s left, no slot makes another call in time.
		"no time left": {1000, 3500 * time.Millisecond, time.Second, 16},
		// Before any call is timed a call is taken to last its whole
		// attempt timeout: 5 s left is one call a slot, less the one open.
		"not timed yet": {1000, 0, 0, 16},
		// Many calls' worth and little time: never more than the pool.
		"more than the pool": {100000, time.Second, time.Second, 16},
	} {
		t.Run(name, func(t *testing.T) {
			h := queue(tc.due, tc.late, tc.latency)
			require.Equal(t, tc.want, h.neededLocked(now))
			n, by := h.queue.backlog(0, now, 0, h.queue[0].trustedUntil)
			require.Equal(t, tc.due, n, "only the due leases are counted")
			require.Equal(t, now.Add(-tc.late).Add(terms.attemptTimeout), by, "answer deadline: due + attempt timeout")
		})
	}
	// A trust deadline before due + attempt timeout (a lease retried after
	// failed attempts) is the answer deadline.
	h := queue(10, 0, time.Second)
	h.queue[0].trustedUntil = now.Add(time.Second)
	_, by := h.queue.backlog(0, now, 0, h.queue[0].trustedUntil)
	require.Equal(t, now.Add(time.Second), by)
	require.Equal(t, 16, h.neededLocked(now))
	// A pool no larger than MaxInFlightRenewals: a fixed bound, whatever is due.
	h = queue(100000, time.Second, time.Second)
	h.maxInFlight = 4
	require.Equal(t, 4, h.neededLocked(now))
}

// The measured call latency: the first call sets it, a longer call
// raises it at once, a shorter one lowers it by a quarter of the gap.
func TestRenewalCallLatencyRisesAtOnceAndFallsGradually(t *testing.T) {
	t.Parallel()
	h := &heartbeat{}
	h.timeLocked(400 * time.Millisecond)
	require.Equal(t, 400*time.Millisecond, h.latency)
	h.timeLocked(2 * time.Second)
	require.Equal(t, 2*time.Second, h.latency)
	h.timeLocked(0)
	require.Equal(t, 1500*time.Millisecond, h.latency)
	h.timeLocked(1100 * time.Millisecond)
	require.Equal(t, 1400*time.Millisecond, h.latency)
}
