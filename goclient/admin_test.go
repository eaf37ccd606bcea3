package goclient_test

import (
	"bytes"
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/mightyetl/leasefence/goclient"
	"github.com/mightyetl/leasefence/internal/testdb"
)

// Lines of a goroutine's stack that mark what a Client starts and an Admin
// must not: the heartbeat's scheduling goroutine, and the goroutine every
// pgxpool.Pool starts when it is made (it fills the pool, then checks its
// health until Close); the heartbeat's own pool has one. The "created by"
// line is there from the moment the goroutine exists, before it runs.
const (
	heartbeatFrame = "created by github.com/mightyetl/leasefence/goclient.newHeartbeat in goroutine"
	poolFrame      = "created by github.com/jackc/pgx/v5/pgxpool.NewWithConfig in goroutine"
)

// goroutinesIn counts the goroutines whose stack holds frame.
func goroutinesIn(frame string) int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	count := 0
	for g := range bytes.SplitSeq(buf, []byte("\n\n")) {
		if bytes.Contains(g, []byte(frame)) {
			count++
		}
	}
	return count
}

// An Admin starts no heartbeat and opens no pool of its own: every call it
// makes acquires a connection of the pool it was given, once, and the
// process has no more heartbeat or pool goroutines than before. A Client
// over the same pool, the control, starts one of each, and Close ends
// them. Not parallel: other tests' clients would move the counts.
func TestAdminHasNoHeartbeatAndNoPoolOfItsOwn(t *testing.T) {
	ctx := context.Background()
	db := testdb.New(t)
	pool := db.LoginPool(t, "durable_job_auditor")
	heartbeats, pools := goroutinesIn(heartbeatFrame), goroutinesIn(poolFrame)

	admin, err := goclient.NewAdmin(pool)
	require.NoError(t, err)
	acquired := pool.Stat().AcquireCount()
	calls := []func() error{
		func() error { _, err := admin.LeaseHealth(ctx); return err },
		func() error { _, err := admin.QueueBacklog(ctx); return err },
		func() error { _, err := admin.JobStatusTotals(ctx); return err },
		func() error { _, err := admin.LeaseOutcomeTotals(ctx, time.Time{}); return err },
		func() error { _, err := admin.ControlEvidence(ctx, time.Time{}); return err },
		func() error { _, err := admin.QueueLeasePolicies(ctx); return err },
		func() error { _, err := admin.BundleMigrationVersion(ctx); return err },
	}
	for _, call := range calls {
		require.NoError(t, call())
	}
	require.Equal(t, acquired+int64(len(calls)), pool.Stat().AcquireCount(),
		"each call took one connection of the given pool")
	require.Equal(t, heartbeats, goroutinesIn(heartbeatFrame), "no heartbeat goroutine")
	require.Equal(t, pools, goroutinesIn(poolFrame), "no pool of its own")

	client, err := goclient.NewClient(pool, goclient.Config{})
	require.NoError(t, err)
	require.Equal(t, heartbeats+1, goroutinesIn(heartbeatFrame), "the control: a Client starts its heartbeat")
	require.Equal(t, pools+1, goroutinesIn(poolFrame), "the control: and the heartbeat's pool")
	require.NoError(t, client.Close())
	waitFor(t, 5*time.Second, "the client's goroutines end", func() bool {
		return goroutinesIn(heartbeatFrame) == heartbeats && goroutinesIn(poolFrame) == pools
	})
}

func TestNewAdminRefusesANilPool(t *testing.T) {
	t.Parallel()
	admin, err := goclient.NewAdmin(nil)
	require.Nil(t, admin)
	require.ErrorIs(t, err, goclient.ErrInvalidConfig)
	var cfgErr *goclient.ConfigError
	require.ErrorAs(t, err, &cfgErr)
	require.Equal(t, "pool", cfgErr.Field)
	require.Equal(t, "pool must not be nil", cfgErr.Message)
}
