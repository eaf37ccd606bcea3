package goclient

import (
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
