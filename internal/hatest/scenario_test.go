package hatest

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/mightyetl/leasefence/goclient"
	sqlbundle "github.com/mightyetl/leasefence/sql"
)

// event is one fault a scenario plays while a batch of jobs runs.
type event string

const (
	// switchover is a planned switchover through Patroni's REST API.
	switchover event = "switchover"
	// crash is kill -9 of the leader's postmaster (primary_start_timeout
	// 0: Patroni fails over).
	crash event = "crash failover"
)

// figures is what one scenario measured.
type figures struct {
	synchronous bool
	events      []event
	// timelines[0] is the first leader's; timelines[i] the one event i
	// promoted.
	timelines []int
	// promotion[i-1] is how long event i took until the new leader ran;
	// unprotected[i-1] how long the new leader then had no synchronous
	// standby (synchronous mode) or no replica (asynchronous), and
	// unprotectedJobs[i-1] how many jobs completed meanwhile.
	promotion, unprotected []time.Duration
	unprotectedJobs        []int
	jobs, runs, reruns     int
	// charged[i] is the attempts charged while event i was under way (0:
	// before any); attemptsOver1 the attempts above 1 the database holds.
	charged       []int
	attemptsOver1 int64
	// staleWrites is how often an older generation tried to write the
	// fenced target; otherOutcomes the ledger's non-success outcomes.
	staleWrites, otherOutcomes int64
	// failoverReclaims and reclaims are lease health's counts of the
	// queue at the end: claims lost with the database, and the others.
	failoverReclaims, reclaims int64
	// workerPassword is the worker login's, for the caller's own checks.
	workerPassword string
	took           time.Duration
}

// summary is the scenario's figures in one line.
func (f figures) summary() string {
	mode := map[bool]string{true: "synchronous", false: "asynchronous"}[f.synchronous]
	charged := 0
	for _, n := range f.charged {
		charged += n
	}
	return fmt.Sprintf("%s, %d events (%s): timelines %v; jobs %d, handler runs %d (re-runs %d); attempts charged %d "+
		"(by phase %v), attempts over 1 %d; stale target writes %d; non-success outcomes %d; lease health: "+
		"failover reclaims %d, reclaims %d; promotions %v; unprotected %v with %v jobs completed; took %s",
		mode, len(f.events), eventCounts(f.events), f.timelines, f.jobs, f.runs, f.reruns, charged, f.charged,
		f.attemptsOver1, f.staleWrites, f.otherOutcomes, f.failoverReclaims, f.reclaims, f.promotion, f.unprotected,
		f.unprotectedJobs, f.took.Round(100*time.Millisecond))
}

// eventCounts says how many of each event a list holds.
func eventCounts(events []event) string {
	n := map[event]int{}
	for _, e := range events {
		n[e]++
	}
	return fmt.Sprintf("%d switchovers, %d crash failovers", n[switchover], n[crash])
}

// runScenario installs the bundle on c's leader and runs a TxHandler
// worker and a producer on a multi-host URL through the events, one batch
// of jobs before the first and one after each, then checks what must hold
// whatever the events were:
//   - every job SUCCEEDED exactly once in the database, with one SUCCEEDED
//     outcome at its final claim's generation, the fenced target written
//     by that claim and never by an older generation;
//   - a job enqueued after a promotion got a generation above the
//     promoted timeline's floor, and each job's generations only grew;
//   - no event charged an attempt (migration 029) and lease health
//     counts no ordinary reclaim: every claim lost was lost with the
//     database;
//   - each promotion was seen by an auditor's read of the server's
//     availability (as the Prometheus collector's scrape reads it) and
//     recorded once as server_timeline_changed evidence, from the
//     timeline before to the new one (migration 031).
func runScenario(t *testing.T, ctx context.Context, c *cluster, synchronous bool, events []event) figures {
	t.Helper()
	began := time.Now()
	f := figures{synchronous: synchronous, events: events}
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
	t.Cleanup(admin.Close)
	_, err = admin.Exec(ctx, `SELECT durable_jobs.set_queue_lease_policy($1, $2, $3, interval '1 hour', true, 'ha test')`,
		queue, lease, interval)
	require.NoError(t, err)
	var producerPassword, auditorPassword string
	f.workerPassword, producerPassword, auditorPassword = randomHex(t, 16), randomHex(t, 16), randomHex(t, 16)
	for _, stmt := range []string{
		`CREATE ROLE ha_worker LOGIN PASSWORD '` + f.workerPassword + `' IN ROLE durable_job_worker`,
		`CREATE ROLE ha_producer LOGIN PASSWORD '` + producerPassword + `' IN ROLE durable_job_producer`,
		`CREATE ROLE ha_auditor LOGIN PASSWORD '` + auditorPassword + `' IN ROLE durable_job_auditor`,
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
	workerPool, err := goclient.NewPool(ctx, c.url("ha_worker", f.workerPassword, "leasefence", both, workerQuery), 0)
	require.NoError(t, err)
	t.Cleanup(workerPool.Close)
	// pgx has no tcp_user_timeout of its own: it sends the setting to the
	// server, which bounds its side of each connection with it.
	var userTimeout string
	require.NoError(t, workerPool.QueryRow(ctx, `SHOW tcp_user_timeout`).Scan(&userTimeout))
	require.Equal(t, "5000", userTimeout) // milliseconds
	var logs syncBuffer
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("worker log:\n%s", logs.String())
		}
	})
	worker, err := goclient.NewClient(workerPool, goclient.Config{SafetyMargin: interval, AttemptTimeout: interval * 4 / 5,
		Logger: slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))})
	require.NoError(t, err)
	t.Cleanup(func() { _ = worker.Close() })
	producerPool, err := goclient.NewPool(ctx, c.url("ha_producer", producerPassword, "leasefence", both, workerQuery), 0)
	require.NoError(t, err)
	t.Cleanup(producerPool.Close)
	producer, err := goclient.NewClient(producerPool, goclient.Config{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = producer.Close() })
	// The auditor reads as the Prometheus collector does at each scrape.
	auditorPool, err := goclient.NewPool(ctx, c.url("ha_auditor", auditorPassword, "leasefence", both, rw), 0)
	require.NoError(t, err)
	t.Cleanup(auditorPool.Close)
	auditor, err := goclient.NewAdmin(auditorPool)
	require.NoError(t, err)

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

	f.timelines = []int{c.status(c.members[0]).Timeline}
	require.Equal(t, 1, f.timelines[0])

	// Before each event a batch, enqueued on the timeline of the event
	// before (or the first), and the event while it runs; after the last
	// one more batch on the last timeline.
	for i, ev := range events {
		before := completed()
		enqueue(i)
		c.waitFor(60*time.Second, "jobs to complete", func() bool { return completed() >= before+40 })
		leader, replica := c.leader()
		phase.Store(int32(i + 1))
		at := time.Now()
		switch ev {
		case switchover:
			c.switchover(leader, replica)
		case crash:
			c.killPostmaster(leader)
			c.waitFor(60*time.Second, replica.name+" to take over", func() bool { return c.role(replica) == "primary" })
		}
		promoted := time.Now()
		atPromotion := completed()
		f.promotion = append(f.promotion, promoted.Sub(at).Round(100*time.Millisecond))
		tl := c.status(replica).Timeline
		f.timelines = append(f.timelines, tl)
		t.Logf("%s %d: %s -> %s, timeline %d, new leader running after %s", ev, i+1, leader.name, replica.name, tl,
			promoted.Sub(at).Round(100*time.Millisecond))
		// The scrape after the promotion sees the new timeline, and the one
		// before it as the previous.
		c.waitFor(30*time.Second, "the auditor to read the new timeline", func() bool {
			a, err := auditor.ServerAvailability(ctx)
			return err == nil && a.Timeline == int64(tl) && a.PreviousTimeline == int64(f.timelines[i])
		})
		// In synchronous mode only the synchronous standby may be
		// promoted: the next event needs the old leader back in that role.
		c.waitReplica(leader, synchronous)
		f.unprotected = append(f.unprotected, time.Since(promoted).Round(100*time.Millisecond))
		f.unprotectedJobs = append(f.unprotectedJobs, completed()-atPromotion)
	}
	enqueue(len(events))
	c.waitFor(90*time.Second, "every job to complete", func() bool { return completed() == len(ids) })
	stopWorker()
	require.NoError(t, <-runErr, "the worker saw the outages end")
	for i := 1; i < len(f.timelines); i++ {
		require.Less(t, f.timelines[i-1], f.timelines[i], "timelines %v", f.timelines)
	}

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
		var fin final
		require.NoError(t, rows.Scan(&id, &fin.status, &fin.attempt, &fin.generation, &fin.successes, &fin.otherOutcomes,
			&fin.ledgerGeneration, &fin.targetGeneration))
		finals[id] = fin
	}
	require.NoError(t, rows.Err())
	require.Len(t, finals, len(ids))
	f.staleWrites = stale.Load()
	require.Zero(t, f.staleWrites, "no older generation wrote to the target")
	for _, id := range ids {
		fin := finals[id]
		require.Equal(t, "SUCCEEDED", fin.status, "job %d", id)
		require.EqualValues(t, 1, fin.successes, "job %d completed exactly once", id)
		require.Equal(t, fin.generation, fin.ledgerGeneration, "job %d: the ledger has the final claim's generation", id)
		require.Equal(t, fin.generation, fin.targetGeneration, "job %d: the target has the final claim's generation", id)
		// A job enqueued after promotion k was only ever claimed on
		// timeline k or later: above every generation of earlier ones.
		require.GreaterOrEqual(t, fin.generation, floor(f.timelines[batchOf[id]]), "job %d of batch %d", id, batchOf[id])
	}

	// Each job's claims, in the order its handler runs saw them: the
	// generation never goes back, and a new claim (a new attempt) always
	// has a higher one.
	seen := map[int64][]run{}
	all := runs.all()
	for _, r := range all {
		seen[r.job] = append(seen[r.job], r)
	}
	// An attempt above the last one a handler saw was charged during the
	// event under way when the handler first saw it (a claim whose answer
	// was lost never reaches a handler: the next one seen counts it).
	f.charged = make([]int, len(events)+1)
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
				f.charged[r.phase] += r.attempt - baseline
				baseline = r.attempt
			}
		}
		f.reruns += len(rs) - 1
	}
	f.jobs, f.runs = len(ids), len(all)
	for _, fin := range finals {
		f.otherOutcomes += int64(fin.otherOutcomes)
		f.attemptsOver1 += int64(fin.attempt - 1)
	}
	health, err := auditor.LeaseHealth(ctx)
	require.NoError(t, err)
	for _, h := range health {
		if h.Queue == queue {
			f.failoverReclaims, f.reclaims = h.FailoverReclaimsLastHour, h.ReclaimsLastHour
		}
	}
	f.took = time.Since(began)
	t.Log(f.summary())
	// Issue 36, item 1: a claim lost with the database costs no attempt
	// (migration 029), so no event charges one.
	require.Zero(t, f.attemptsOver1, "no job was charged an attempt: %v", f.charged)
	require.Equal(t, make([]int, len(events)+1), f.charged, "attempts charged by phase")
	require.Zero(t, f.reclaims, "every claim lost was lost with the database: lease health counts failover reclaims only")

	// Issue 36, item 2: each promotion is one chained availability
	// record, from the timeline before to the new one, with no job in it.
	records, err := admin.Query(ctx, `SELECT previous_values, new_values FROM durable_jobs.control_evidence_history(NULL)
		WHERE evidence_kind = 'server_timeline_changed' ORDER BY evidence_record_id`)
	require.NoError(t, err)
	type change struct{ Previous, New map[string]any }
	changes, err := pgx.CollectRows(records, func(row pgx.CollectableRow) (change, error) {
		var previous, next []byte
		var ch change
		if err := row.Scan(&previous, &next); err != nil {
			return ch, err
		}
		if err := json.Unmarshal(previous, &ch.Previous); err != nil {
			return ch, err
		}
		return ch, json.Unmarshal(next, &ch.New)
	})
	require.NoError(t, err)
	require.Len(t, changes, len(events), "one record a promotion")
	for i, ch := range changes {
		require.EqualValues(t, f.timelines[i], ch.Previous["server_timeline"])
		require.EqualValues(t, f.timelines[i+1], ch.New["server_timeline"])
		for k := range ch.New {
			require.False(t, strings.Contains(k, "job"), "no job in an availability record: %v", ch.New)
		}
	}
	return f
}
