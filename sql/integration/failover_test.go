package sqlintegration

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/mightyetl/leasefence/internal/pglocal"
	"github.com/mightyetl/leasefence/internal/testdb"
)

// The failover tests of issue 20 (migration 011): a real primary and a
// real streaming standby made with pg_basebackup -R, promoted with pg_ctl
// promote after the primary was stopped with -m immediate.

// failoverTimeout bounds each failover test: two small clusters, a base
// backup and a promotion take a few seconds.
const failoverTimeout = 2 * time.Minute

// failoverPair is a primary with one database cloned from the migrated
// template and a streaming standby of it named "s1".
type failoverPair struct {
	*fixture
	primary, standby *pglocal.Cluster
}

// newFailoverPair starts a cluster of the test's own and a standby of it,
// with the test's queue (1 s lease). The cluster commits with
// synchronous_commit on (the test clusters run with off, which would let
// an immediate stop lose acknowledged commits, as no production primary
// does).
func newFailoverPair(t *testing.T) *failoverPair {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), failoverTimeout)
	t.Cleanup(cancel)
	primary, db := testdb.OwnClusterWith(t, testdb.ClusterExtras{Settings: map[string]string{"synchronous_commit": "on"}})
	f := &fixture{ctx: ctx, db: db, admin: db.Pool(t), queue: fmt.Sprintf("it_failover_%d", queueSequence.Add(1))}
	f.setPolicy(t, f.queue, testLeaseDuration, testRenewalInterval, testMaxClaimLife, true)
	standby, err := primary.StartStandby(ctx, "s1")
	require.NoError(t, err, "start a streaming standby")
	t.Cleanup(func() { _ = standby.Stop() })
	return &failoverPair{fixture: f, primary: primary, standby: standby}
}

// onPort is u (a URL of the test's database) with its port changed to
// that of c, the same login on the same database of another server.
func onPort(t *testing.T, u string, c *pglocal.Cluster) string {
	t.Helper()
	parsed, err := url.Parse(u)
	require.NoError(t, err)
	parsed.Host = net.JoinHostPort(c.Host(), strconv.Itoa(c.Port()))
	return parsed.String()
}

// timeline is the WAL timeline a primary writes on.
func timeline(t *testing.T, ctx context.Context, q querier) int64 {
	t.Helper()
	var tli int64
	require.NoError(t, q.QueryRow(ctx,
		`SELECT ('x' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))::bit(32)::bigint`).Scan(&tli))
	return tli
}

// generationAt is a job's fencing generation on the server q talks to.
func generationAt(t *testing.T, ctx context.Context, q querier, jobID int64) int64 {
	t.Helper()
	var g int64
	require.NoError(t, q.QueryRow(ctx,
		`SELECT lease_fencing_generation FROM durable_jobs.job_record WHERE job_record_id = $1`, jobID).Scan(&g))
	return g
}

// An asynchronous standby stopped receiving WAL; the primary then issued
// generation 1 (a claim) and 2 (a reclaim after expiry) of a job, renewed
// and completed it; the primary dies and the standby, which never saw any
// of it, is promoted. The job is QUEUED there at generation 0, and its next
// claim must get a generation above 2, above every generation the old
// primary issued: an external sink that keeps the highest generation seen
// accepts the new owner and refuses both old ones. Then the crashed old
// primary is started again (not fenced, as on a multi-host URL that still
// lists it): the generations it keeps issuing stay below the new
// primary's. Without migration 011 the new primary issues generation 1 a
// second time.
func TestPromotionAfterLostStreamIssuesHigherGenerations(t *testing.T) {
	p := newFailoverPair(t)
	ctx := p.ctx
	lost := p.enqueue(t, `{"job": "lost on promotion"}`)
	other := p.enqueue(t, `{"job": "claimed on both primaries"}`)
	workerURL := p.workerURL(t)
	require.NoError(t, p.standby.WaitReplayedFrom(p.ctx, p.primary))

	// The standby stops receiving: the primary refuses replication
	// connections from now on and its walsender is ended.
	require.NoError(t, p.primary.CutReplication(p.ctx))

	old := p.connect(t, workerURL)
	first := mustClaim(t, ctx, old, p.queue, "worker-old-1")
	require.Equal(t, lost, first.JobID)
	require.EqualValues(t, 1, first.Generation, "the first claim on timeline 1 is generation 1, as before 011")
	p.waitDatabaseTimePast(t, first.ExpiresAt)
	second := mustClaim(t, ctx, old, p.queue, "worker-old-2")
	require.Equal(t, lost, second.JobID, "the expired claim is reclaimed")
	require.EqualValues(t, 2, second.Generation)
	mustRenew(t, ctx, old, second.JobID, second.Token, "worker-old-2", "renewed", "the reclaim renews")
	require.NoError(t, complete(ctx, old, second, "worker-old-2"), "the reclaim completes on the old primary")
	require.Equal(t, "SUCCEEDED", p.state(t, lost).Status)
	oldMax := second.Generation

	require.NoError(t, p.primary.StopImmediate(), "the primary dies")
	require.NoError(t, p.standby.Promote(ctx), "promote the standby")

	newAdmin := p.connect(t, onPort(t, p.db.URL, p.standby))
	require.EqualValues(t, 2, timeline(t, ctx, newAdmin), "the promoted standby writes on timeline 2")
	require.EqualValues(t, 0, generationAt(t, ctx, newAdmin, lost),
		"the promotion lost the stream: the job is back at generation 0 on the new primary")
	newWorker := p.connect(t, onPort(t, workerURL, p.standby))
	again := mustClaim(t, ctx, newWorker, p.queue, "worker-new")
	require.Equal(t, lost, again.JobID)
	require.Greater(t, again.Generation, oldMax,
		"the first claim after the promotion is above every generation the old primary issued")
	require.EqualValues(t, int64(1)<<40+1, again.Generation, "the claim gets timeline 2's floor, (2-1)<<40 + 1")
	requireAllTerminalWritesStale(t, ctx, newWorker, second, "worker-old-2",
		"the old primary's claim is unknown on the new primary")
	require.NoError(t, complete(ctx, newWorker, again, "worker-new"))
	otherNew := mustClaim(t, ctx, newWorker, p.queue, "worker-new")
	require.Equal(t, other, otherNew.JobID)

	// The crashed primary comes back as a second primary on timeline 1.
	require.NoError(t, p.primary.Restart(ctx), "start the old primary again, unfenced")
	p.admin = p.db.Pool(t) // the old pool's connections died with the server
	oldAgain := p.connect(t, workerURL)
	require.EqualValues(t, 1, timeline(t, ctx, oldAgain), "the old primary still writes on timeline 1")
	otherOld := mustClaim(t, ctx, oldAgain, p.queue, "worker-old-3")
	require.Equal(t, other, otherOld.JobID)
	require.Less(t, otherOld.Generation, otherNew.Generation,
		"a generation the old primary issues after the promotion is below the new primary's")
	p.waitDatabaseTimePast(t, otherOld.ExpiresAt)
	otherOld2 := mustClaim(t, ctx, oldAgain, p.queue, "worker-old-4")
	require.Greater(t, otherOld2.Generation, otherOld.Generation)
	require.Less(t, otherOld2.Generation, otherNew.Generation,
		"every reclaim on the old primary stays below the new primary's floor")
}

// With synchronous_standby_names naming a standby that is not there, every
// commit that waits for it hangs. A claim's commit must not wait (its
// generation and token fence a claim lost in a failover out); a
// completion's commit still waits. The completion is cancelled with
// pg_cancel_backend, as a client deadline would, and is then committed
// locally. Without migration 011 the claim hangs too.
func TestClaimCommitDoesNotWaitForSynchronousStandby(t *testing.T) {
	p := newFailoverPair(t)
	ctx := p.ctx
	jobID := p.enqueue(t, `{"job": "sync"}`)
	worker := p.worker(t)
	require.NoError(t, p.standby.Stop(), "the synchronous standby goes away")
	_, err := p.admin.Exec(ctx, `ALTER SYSTEM SET synchronous_standby_names = 'absent_standby'`)
	require.NoError(t, err)
	_, err = p.admin.Exec(ctx, `SELECT pg_reload_conf()`)
	require.NoError(t, err)
	t.Cleanup(func() {
		_, _ = p.admin.Exec(context.Background(), `ALTER SYSTEM RESET synchronous_standby_names`)
		_, _ = p.admin.Exec(context.Background(), `SELECT pg_reload_conf()`)
	})
	// The setting has reached the worker's session once a plain write of
	// it waits: a sanity check that the wait is real.
	require.Eventually(t, func() bool {
		var names string
		return worker.QueryRow(ctx, `SHOW synchronous_standby_names`).Scan(&names) == nil && names == "absent_standby"
	}, 10*time.Second, 20*time.Millisecond)

	claimCtx, cancelClaim := context.WithTimeout(ctx, 5*time.Second)
	defer cancelClaim()
	start := time.Now()
	c, ok, err := claimNext(claimCtx, worker, p.queue, "worker-sync")
	elapsed := time.Since(start)
	require.NoError(t, err, "the claim returns without waiting for the absent standby")
	require.True(t, ok)
	require.Less(t, elapsed, 2*time.Second, "the claim's commit did not wait for the synchronous standby")
	require.Equal(t, jobID, c.JobID)
	st := p.state(t, jobID)
	require.Equal(t, "RUNNING", st.Status, "the claim is committed: another session sees it")
	require.Equal(t, c.Generation, st.Generation)
	var sync string
	require.NoError(t, worker.QueryRow(ctx, `SHOW synchronous_commit`).Scan(&sync))
	require.Equal(t, "on", sync, "the claim changed synchronous_commit for its own transaction only")

	var pid uint32
	require.NoError(t, worker.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid))
	done := make(chan error, 1)
	go func() { done <- complete(ctx, worker, c, "worker-sync") }()
	// The completion waits for the standby (wait event SyncRep) and has not
	// returned.
	require.Eventually(t, func() bool {
		var waiting bool
		_ = p.admin.QueryRow(ctx, `SELECT coalesce(wait_event = 'SyncRep', false) FROM pg_stat_activity WHERE pid = $1`,
			int32(pid)).Scan(&waiting)
		return waiting
	}, 10*time.Second, 20*time.Millisecond, "the completion's commit waits for the synchronous standby")
	select {
	case err := <-done:
		t.Fatalf("the completion returned while its commit should wait for the standby: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	_, err = p.admin.Exec(ctx, `SELECT pg_cancel_backend($1)`, int32(pid))
	require.NoError(t, err)
	select {
	case err := <-done:
		require.NoError(t, err, "a cancelled wait for the standby returns the commit, with a warning")
	case <-time.After(10 * time.Second):
		t.Fatal("the completion did not return after its wait was cancelled")
	}
	require.Equal(t, "SUCCEEDED", p.state(t, jobID).Status, "the completion committed locally")
}
