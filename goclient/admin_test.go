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

// A Client's operator and auditor calls are its Admin's: over the same
// database, each gives what the Admin gives.
func TestClientAdminCallsAnswerAsAdmin(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	owner := db.Pool(t) // the role that applied the bundle: it may record deployments
	client, err := goclient.NewClient(owner, goclient.Config{})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, client.Close()) })
	admin := adminClient(t, owner)

	require.NoError(t, client.SetQueueLeasePolicy(ctx, goclient.LeasePolicyChange{Queue: "etl.same",
		LeaseDuration: 30 * time.Second, RenewalInterval: 10 * time.Second, MaxClaimLifetime: time.Hour,
		RenewalEnabled: true, Reason: "CHG-1 same answers"}))
	longer := 60 * time.Second
	updated, err := client.UpdateQueueLeasePolicy(ctx, goclient.LeasePolicyUpdate{Queue: "etl.same",
		LeaseDuration: &longer, Reason: "CHG-1 same answers, longer"})
	require.NoError(t, err)
	require.Equal(t, longer, updated.LeaseDuration)
	require.NoError(t, client.RecordDeploymentVersion(ctx, "1.0.0", "REL-1 same answers"))
	require.NoError(t, client.RecordDeployment(ctx, goclient.Deployment{Version: "1.0.1",
		Source: "0123456789abcdef0123456789abcdef01234567", DeployedBy: "ops.bob", Ticket: "REL-2", Reason: "same answers"}))
	producer, err := goclient.NewClient(db.LoginPool(t, "durable_job_producer"), goclient.Config{})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, producer.Close()) })
	id, err := producer.Enqueue(ctx, goclient.EnqueueParams{Queue: "etl.same", Payload: []byte(`{}`)})
	require.NoError(t, err)

	same := func(viaClient, viaAdmin func() (any, error)) {
		t.Helper()
		want, err := viaAdmin()
		require.NoError(t, err)
		got, err := viaClient()
		require.NoError(t, err)
		require.Equal(t, want, got)
	}
	same(func() (any, error) { return client.QueueLeasePolicies(ctx) }, func() (any, error) { return admin.QueueLeasePolicies(ctx) })
	same(func() (any, error) { return client.ControlEvidence(ctx, time.Time{}) }, func() (any, error) { return admin.ControlEvidence(ctx, time.Time{}) })
	same(func() (any, error) { return client.LeaseOutcomeTotals(ctx, time.Time{}) }, func() (any, error) { return admin.LeaseOutcomeTotals(ctx, time.Time{}) })
	same(func() (any, error) { return client.JobStatusTotals(ctx) }, func() (any, error) { return admin.JobStatusTotals(ctx) })
	same(func() (any, error) { return client.BundleMigrationVersion(ctx) }, func() (any, error) { return admin.BundleMigrationVersion(ctx) })
	same(func() (any, error) { return client.State(ctx, id) }, func() (any, error) { return admin.State(ctx, id) })
	viaClient, err := client.LeaseHealth(ctx)
	require.NoError(t, err)
	viaAdmin, err := admin.LeaseHealth(ctx)
	require.NoError(t, err)
	require.Len(t, viaClient, len(viaAdmin))
	for i := range viaAdmin { // read at two database times
		viaAdmin[i].DatabaseTime = viaClient[i].DatabaseTime
	}
	require.Equal(t, viaAdmin, viaClient)

	// Each change made through one is seen through the other.
	for _, step := range []struct {
		call func(context.Context, int64) (bool, error)
		want bool
		why  string
	}{
		{client.Cancel, true, "cancelled through the Client"},
		{admin.Cancel, false, "already cancelled, through the Client"},
		{admin.Replay, true, "replayed through the Admin"},
		{client.Replay, false, "already queued again, through the Admin"},
	} {
		changed, err := step.call(ctx, id)
		require.NoError(t, err, step.why)
		require.Equal(t, step.want, changed, step.why)
	}
}
