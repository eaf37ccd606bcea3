package hatest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/mightyetl/leasefence/goclient"
	sqlbundle "github.com/mightyetl/leasefence/sql"
)

const (
	queue     = "etl.ha"
	batchSize = 150
	// The lease policy of the runs the issue reports: a 5 s lease renewed
	// every second; the client's margin is one interval.
	lease    = 5 * time.Second
	interval = time.Second
)

// floor is the least fencing generation a claim on timeline tl gets
// (migration 011): ((tl - 1) << 40) + 1.
func floor(tl int) int64 { return (int64(tl-1) << 40) + 1 }

// syncBuffer is a bytes.Buffer safe for the worker's goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// run is one handler run as the test saw it.
type run struct {
	job, generation int64
	attempt         int
	phase           int32 // events begun when it ran: 0, 1 switchover, 2 crash
}

type runLog struct {
	mu   sync.Mutex
	runs []run
}

func (l *runLog) add(r run) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.runs = append(l.runs, r)
}

func (l *runLog) all() []run {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]run(nil), l.runs...)
}

// TestWorkerThroughSwitchoverAndCrashFailover runs a TxHandler worker on a
// multi-host URL (target_session_attrs=read-write) against etcd and two
// Patroni members in synchronous mode, through one planned switchover and
// one crash failover (kill -9 of the leader's postmaster), and checks what
// must hold: every job completed exactly once in the database, no stale
// write to the fenced target, generations above every earlier timeline's
// after each promotion, the standby refusing writes. It reports, without
// asserting it yet, how many attempts each event charged (issue 36, item
// 1).
func TestWorkerThroughSwitchoverAndCrashFailover(t *testing.T) {
	began := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	c := startCluster(t, true)
	both := c.members
	rw := url.Values{"target_session_attrs": {"read-write"}, "connect_timeout": {"2"}}

	// The bundle, as leasectl migrate installs it, on the leader.
	admin0, err := pgx.Connect(ctx, c.url(superuser, c.password, "postgres", both, rw))
	require.NoError(t, err)
	_, err = admin0.Exec(ctx, "CREATE DATABASE leasefence")
	require.NoError(t, err)
	require.NoError(t, admin0.Close(ctx))
	require.NoError(t, sqlbundle.Apply(ctx, c.url(superuser, c.password, "leasefence", both, rw)))
	admin, err := pgxpool.New(ctx, c.url(superuser, c.password, "leasefence", both, rw))
	require.NoError(t, err)
	defer admin.Close()
	_, err = admin.Exec(ctx, `SELECT durable_jobs.set_queue_lease_policy($1, $2, $3, interval '1 hour', true, 'ha test')`,
		queue, lease, interval)
	require.NoError(t, err)
	workerPassword, producerPassword := randomHex(t, 16), randomHex(t, 16)
	for _, stmt := range []string{
		`CREATE ROLE ha_worker LOGIN PASSWORD '` + workerPassword + `' IN ROLE durable_job_worker`,
		`CREATE ROLE ha_producer LOGIN PASSWORD '` + producerPassword + `' IN ROLE durable_job_producer`,
		// The fenced target: one row per job, written only by a newer
		// generation than the one it holds.
		`CREATE TABLE public.ha_target (job_record_id bigint PRIMARY KEY, lease_fencing_generation bigint NOT NULL)`,
		`GRANT SELECT, INSERT, UPDATE ON public.ha_target TO ha_worker`,
	} {
		_, err := admin.Exec(ctx, stmt)
		require.NoError(t, err)
	}

	// The worker and the producer on the multi-host URL, as the runbook
	// says: read-write, a connect timeout, a TCP user timeout.
	workerQuery := url.Values{"target_session_attrs": {"read-write"}, "connect_timeout": {"2"},
		"tcp_user_timeout": {"5000"}, "pool_max_conns": {"6"}}
	workerPool, err := goclient.NewPool(ctx, c.url("ha_worker", workerPassword, "leasefence", both, workerQuery), 0)
	require.NoError(t, err)
	defer workerPool.Close()
	// pgx has no tcp_user_timeout of its own: it sends the setting to the
	// server, which bounds its side of each connection with it.
	var userTimeout string
	require.NoError(t, workerPool.QueryRow(ctx, `SHOW tcp_user_timeout`).Scan(&userTimeout))
	require.Equal(t, "5000", userTimeout) // milliseconds
	var logs syncBuffer
	defer func() {
		if t.Failed() {
			t.Logf("worker log:\n%s", logs.String())
		}
	}()
	worker, err := goclient.NewClient(workerPool, goclient.Config{SafetyMargin: interval, AttemptTimeout: interval * 4 / 5,
		Logger: slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))})
	require.NoError(t, err)
	defer worker.Close()
	producerPool, err := goclient.NewPool(ctx, c.url("ha_producer", producerPassword, "leasefence", both, workerQuery), 0)
	require.NoError(t, err)
	defer producerPool.Close()
	producer, err := goclient.NewClient(producerPool, goclient.Config{})
	require.NoError(t, err)
	defer producer.Close()

	var ids []int64
	batchOf := map[int64]int{}
	enqueue := func(batch int) {
		t.Helper()
		params := make([]goclient.EnqueueParams, batchSize)
		for i := range params {
			params[i] = goclient.EnqueueParams{Queue: queue, Payload: []byte(fmt.Sprintf(`{"n": %d}`, i)), MaxAttempts: 100}
		}
		var got []int64
		c.waitFor(30*time.Second, "an enqueue to commit", func() bool {
			got, err = producer.EnqueueMany(ctx, params)
			return err == nil
		})
		for _, id := range got {
			batchOf[id] = batch
		}
		ids = append(ids, got...)
	}
	completed := func() int {
		var n int
		if err := admin.QueryRow(ctx, `SELECT count(*) FROM public.ha_target`).Scan(&n); err != nil {
			return -1
		}
		return n
	}

	var phase atomic.Int32
	var stale atomic.Int64
	var runs runLog
	w, err := worker.NewWorker(goclient.WorkerConfig{Queue: queue, Concurrency: 4, PollInterval: 100 * time.Millisecond,
		TxHandler: func(ctx context.Context, tx pgx.Tx, job goclient.Job) error {
			runs.add(run{job: job.ID(), generation: job.FencingGeneration(), attempt: job.Attempt(), phase: phase.Load()})
			tag, err := tx.Exec(ctx, `INSERT INTO public.ha_target AS t VALUES ($1, $2)
				ON CONFLICT (job_record_id) DO UPDATE SET lease_fencing_generation = EXCLUDED.lease_fencing_generation
				WHERE t.lease_fencing_generation < EXCLUDED.lease_fencing_generation`, job.ID(), job.FencingGeneration())
			if err != nil {
				return err
			}
			if tag.RowsAffected() == 0 {
				stale.Add(1) // an older generation tried to write
			}
			select { // in flight long enough for the events to catch some
			case <-time.After(60 * time.Millisecond):
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}})
	require.NoError(t, err)
	runCtx, stopWorker := context.WithCancel(ctx)
	runErr := make(chan error, 1)
	go func() { runErr <- w.Run(runCtx) }()
	defer stopWorker()

	timelines := []int{c.status(c.members[0]).Timeline}
	require.Equal(t, 1, timelines[0])

	// Batch 0, then a planned switchover while it runs.
	enqueue(0)
	c.waitFor(30*time.Second, "jobs to complete", func() bool { return completed() >= 40 })
	leader, replica := c.leader()
	phase.Store(1)
	switchAt := time.Now()
	c.switchover(leader, replica)
	promoted, atPromotion := time.Now(), completed()
	t.Logf("switchover %s -> %s: new leader running after %s", leader.name, replica.name, promoted.Sub(switchAt).Round(100*time.Millisecond))
	timelines = append(timelines, c.status(replica).Timeline)
	// In synchronous mode only the synchronous standby may be promoted:
	// the crash failover below needs the old leader back in that role.
	c.waitReplica(leader, true)
	t.Logf("switchover: no synchronous standby for %s after the promotion; %d jobs completed meanwhile",
		time.Since(promoted).Round(100*time.Millisecond), completed()-atPromotion)

	// Batch 1, then kill -9 of the new leader's postmaster while it runs.
	enqueue(1)
	before := completed()
	c.waitFor(30*time.Second, "jobs to complete on the new leader", func() bool { return completed() >= before+40 })
	leader, replica = c.leader()
	phase.Store(2)
	killAt := time.Now()
	c.killPostmaster(leader)
	c.waitFor(60*time.Second, replica.name+" to take over", func() bool { return c.role(replica) == "primary" })
	promoted = time.Now()
	t.Logf("crash failover %s -> %s: new leader running after %s", leader.name, replica.name, promoted.Sub(killAt).Round(100*time.Millisecond))
	timelines = append(timelines, c.status(replica).Timeline)

	// Batch 2 on the third timeline while the old leader rejoins, then
	// every job to the end.
	enqueue(2)
	atPromotion = completed()
	c.waitReplica(leader, true)
	t.Logf("crash failover: %s back as the synchronous standby %s after the kill; no synchronous standby for %s "+
		"after the promotion; %d jobs completed meanwhile", leader.name, time.Since(killAt).Round(100*time.Millisecond),
		time.Since(promoted).Round(100*time.Millisecond), completed()-atPromotion)
	c.waitFor(90*time.Second, "every job to complete", func() bool { return completed() == len(ids) })
	stopWorker()
	require.NoError(t, <-runErr, "the worker saw the outages end")
	t.Logf("timelines %v; run took %s", timelines, time.Since(began).Round(100*time.Millisecond))
	require.Less(t, timelines[0], timelines[1])
	require.Less(t, timelines[1], timelines[2])

	// Every job once: SUCCEEDED, one SUCCEEDED outcome in the ledger, the
	// target written by that very claim (no stale write).
	type final struct {
		status           string
		attempt          int
		generation       int64
		successes        int64
		otherOutcomes    int64
		ledgerGeneration int64
		targetGeneration int64
	}
	finals := map[int64]final{}
	rows, err := admin.Query(ctx, `SELECT j.job_record_id, j.job_status::text, j.attempt_number, j.lease_fencing_generation,
			count(*) FILTER (WHERE o.outcome_status = 'SUCCEEDED'),
			count(o.job_record_id) FILTER (WHERE o.outcome_status <> 'SUCCEEDED'),
			coalesce(max(o.lease_fencing_generation) FILTER (WHERE o.outcome_status = 'SUCCEEDED'), 0),
			coalesce(max(t.lease_fencing_generation), 0)
		FROM durable_jobs.job_record j
		LEFT JOIN durable_jobs.job_outcome_ledger o USING (job_record_id)
		LEFT JOIN public.ha_target t USING (job_record_id)
		GROUP BY j.job_record_id`)
	require.NoError(t, err)
	for rows.Next() {
		var id int64
		var f final
		require.NoError(t, rows.Scan(&id, &f.status, &f.attempt, &f.generation, &f.successes, &f.otherOutcomes,
			&f.ledgerGeneration, &f.targetGeneration))
		finals[id] = f
	}
	require.NoError(t, rows.Err())
	require.Len(t, finals, len(ids))
	require.Zero(t, stale.Load(), "no older generation wrote to the target")
	for _, id := range ids {
		f := finals[id]
		require.Equal(t, "SUCCEEDED", f.status, "job %d", id)
		require.EqualValues(t, 1, f.successes, "job %d completed exactly once", id)
		require.Equal(t, f.generation, f.ledgerGeneration, "job %d: the ledger has the final claim's generation", id)
		require.Equal(t, f.generation, f.targetGeneration, "job %d: the target has the final claim's generation", id)
		// A job enqueued after promotion k was only ever claimed on
		// timeline k or later: above every generation of earlier ones.
		require.GreaterOrEqual(t, f.generation, floor(timelines[batchOf[id]]), "job %d of batch %d", id, batchOf[id])
	}

	// Each job's claims, in the order its handler runs saw them: the
	// generation never goes back, and a new claim (a new attempt) always
	// has a higher one; a claim after a promotion is above the promoted
	// timeline's floor.
	seen := map[int64][]run{}
	for _, r := range runs.all() {
		seen[r.job] = append(seen[r.job], r)
	}
	// An attempt above the last one a handler saw was charged during the
	// event under way when the handler first saw it (a claim whose answer
	// was lost never reaches a handler: the next one seen counts it).
	charged := map[int32]int{}
	jobsCharged := map[int32]map[int64]bool{0: {}, 1: {}, 2: {}}
	for id, rs := range seen {
		for i := 1; i < len(rs); i++ {
			prev, cur := rs[i-1], rs[i]
			require.GreaterOrEqual(t, cur.generation, prev.generation, "job %d: generations %v", id, rs)
			if cur.attempt != prev.attempt {
				require.Greater(t, cur.generation, prev.generation, "job %d: a new claim has a higher generation", id)
				require.Greater(t, cur.attempt, prev.attempt, "job %d", id)
			}
		}
		baseline := 1
		for _, r := range rs {
			if r.attempt > baseline {
				charged[r.phase] += r.attempt - baseline
				jobsCharged[r.phase][id] = true
				baseline = r.attempt
			}
		}
	}
	reruns := 0
	for _, rs := range seen {
		reruns += len(rs) - 1
	}
	var otherOutcomes, attemptsOver1 int64
	for _, f := range finals {
		otherOutcomes += f.otherOutcomes
		attemptsOver1 += int64(f.attempt - 1)
	}
	// Issue 36, item 1: today a failover that outlives the lease charges
	// an attempt to every job in flight. The figure is reported, not
	// asserted, until the migration that stops it lands.
	t.Logf("jobs %d; handler runs %d (re-runs %d); attempts charged: before any event %d (jobs %d), switchover %d (jobs %d), "+
		"crash failover %d (jobs %d); attempts over 1 in the database %d; non-success outcomes %d",
		len(ids), len(runs.all()), reruns, charged[0], len(jobsCharged[0]), charged[1], len(jobsCharged[1]),
		charged[2], len(jobsCharged[2]), attemptsOver1, otherOutcomes)
	require.EqualValues(t, attemptsOver1, charged[0]+charged[1]+charged[2], "every charged attempt is attributed")
	require.Zero(t, charged[0], "no attempt is charged while nothing fails")

	// The standby refuses writes: the worker's claim fails there with
	// read_only_sql_transaction.
	_, standby := c.leader()
	conn, err := pgx.Connect(ctx, c.url("ha_worker", workerPassword, "leasefence", []*member{standby}, url.Values{}))
	require.NoError(t, err)
	defer conn.Close(ctx)
	var inRecovery bool
	require.NoError(t, conn.QueryRow(ctx, `SELECT pg_is_in_recovery()`).Scan(&inRecovery))
	require.True(t, inRecovery)
	_, err = conn.Exec(ctx, `SELECT * FROM durable_jobs.claim_next_job($1, 'ha-test')`, queue)
	var pgErr *pgconn.PgError
	require.True(t, errors.As(err, &pgErr), "the standby refused the claim: %v", err)
	require.Equal(t, "25006", pgErr.Code)
	standbyPool, err := goclient.NewPool(ctx, c.url("ha_worker", workerPassword, "leasefence", []*member{standby}, url.Values{}), 0)
	require.NoError(t, err)
	defer standbyPool.Close()
	onStandby, err := goclient.NewClient(standbyPool, goclient.Config{SafetyMargin: interval, AttemptTimeout: interval * 4 / 5})
	require.NoError(t, err)
	defer onStandby.Close()
	_, err = onStandby.Claim(ctx, queue)
	require.Error(t, err, "a client pointed at the standby cannot claim")
}
