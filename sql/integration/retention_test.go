package sqlintegration

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// purgeUntilDone calls purge_expired_job_data in batches of batch until a
// batch returns no row, and returns the totals per kind.
func purgeUntilDone(ctx context.Context, q querier, batch int) (map[string]int64, error) {
	totals := map[string]int64{}
	for {
		rows, err := q.Query(ctx, "SELECT purge_kind, purged_count FROM durable_jobs.purge_expired_job_data($1)", batch)
		if err != nil {
			return nil, err
		}
		type row struct {
			Kind  string
			Count int64
		}
		got, err := pgx.CollectRows(rows, pgx.RowToStructByPos[row])
		if err != nil {
			return nil, err
		}
		if len(got) == 0 {
			return totals, nil
		}
		for _, r := range got {
			totals[r.Kind] += r.Count
		}
	}
}

// A purge running next to live claims and renewals (their own sessions)
// changes none of them: the running jobs keep renewing, queued jobs stay
// claimable with their payloads, and only finished jobs past retention lose
// data. Two purgers at once share the work without counting a job twice,
// and a finished row that another session holds locked is skipped, never
// waited on, and purged by a later batch.
func TestPurgeNextToLiveClaimsAndRenewalsChangesNone(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := f.ctx
	_, err := f.admin.Exec(ctx, "SELECT durable_jobs.set_queue_lease_policy($1, '10 seconds', '1 second', '1 minute', true, 'retention race')", f.queue)
	require.NoError(t, err)
	_, err = f.admin.Exec(ctx, "SELECT durable_jobs.set_queue_retention_policy($1, '1 hour', '2 hours', 'retention race')", f.queue)
	require.NoError(t, err)

	worker := f.worker(t)
	// Finished jobs: 30 past the row retention, 30 past the payload
	// retention only. Each is enqueued, claimed and completed, then aged.
	const expiredRows, expiredPayloads = 30, 30
	finished := make([]int64, 0, expiredRows+expiredPayloads)
	for i := 0; i < expiredRows+expiredPayloads; i++ {
		f.enqueue(t, `{"subject":"finished"}`)
		c := mustClaim(t, ctx, worker, f.queue, "w-finish")
		require.NoError(t, complete(ctx, worker, c, "w-finish"))
		finished = append(finished, c.JobID)
	}
	_, err = f.admin.Exec(ctx, `UPDATE durable_jobs.job_record SET status_changed_at = clock_timestamp() - interval '3 hours'
		WHERE job_record_id = ANY($1)`, finished[:expiredRows])
	require.NoError(t, err)
	_, err = f.admin.Exec(ctx, `UPDATE durable_jobs.job_record SET status_changed_at = clock_timestamp() - interval '90 minutes'
		WHERE job_record_id = ANY($1)`, finished[expiredRows:])
	require.NoError(t, err)

	// Live jobs, aged far past both retentions: 3 running (claimed by the
	// worker, renewed below) and 20 queued (claimed while the purge runs).
	var running []claim
	for i := 0; i < 3; i++ {
		f.enqueue(t, `{"subject":"running"}`)
		running = append(running, mustClaim(t, ctx, worker, f.queue, "w-live"))
	}
	var queued []int64
	for i := 0; i < 20; i++ {
		queued = append(queued, f.enqueue(t, `{"subject":"queued"}`))
	}
	_, err = f.admin.Exec(ctx, `UPDATE durable_jobs.job_record SET status_changed_at = clock_timestamp() - interval '30 days'
		WHERE queue_name = $1 AND job_status IN ('RUNNING', 'QUEUED')`, f.queue)
	require.NoError(t, err)

	// A third session holds one expired finished row locked throughout.
	locker := f.connect(t, f.db.URL)
	lockTx, err := locker.Begin(ctx)
	require.NoError(t, err)
	_, err = lockTx.Exec(ctx, "SELECT 1 FROM durable_jobs.job_record WHERE job_record_id = $1 FOR UPDATE", finished[0])
	require.NoError(t, err)

	operatorURL := f.db.LoginURL(t, "durable_job_operator")
	purgers := []*pgx.Conn{f.connect(t, operatorURL), f.connect(t, operatorURL)}
	for _, p := range purgers {
		// A purge that waited on any lock would fail here instead of hanging.
		_, err := p.Exec(ctx, "SET lock_timeout = '2s'")
		require.NoError(t, err)
	}
	claimer := f.worker(t)

	var wg sync.WaitGroup
	totals := make([]map[string]int64, len(purgers))
	errs := make([]error, len(purgers)+2)
	for i, p := range purgers {
		wg.Add(1)
		go func(i int, p *pgx.Conn) {
			defer wg.Done()
			totals[i], errs[i] = purgeUntilDone(ctx, p, 7)
		}(i, p)
	}
	var renewals []string
	wg.Add(2)
	go func() { // the worker keeps renewing its three claims
		defer wg.Done()
		for round := 0; round < 10; round++ {
			for _, c := range running {
				r, err := renew(ctx, worker, c.JobID, c.Token, "w-live")
				if err != nil {
					errs[len(purgers)] = err
					return
				}
				renewals = append(renewals, r.Outcome)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	var claimed []claim
	go func() { // another worker claims the queued jobs meanwhile
		defer wg.Done()
		for {
			c, ok, err := claimNext(ctx, claimer, f.queue, "w-claimer")
			if err != nil {
				errs[len(purgers)+1] = err
				return
			}
			if !ok {
				return
			}
			claimed = append(claimed, c)
		}
	}()
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}

	require.Len(t, renewals, 30)
	for _, o := range renewals {
		require.Equal(t, "renewed", o, "every renewal during the purge renewed")
	}
	require.Len(t, claimed, len(queued), "every queued job was claimed during the purge")
	for _, c := range claimed {
		require.JSONEq(t, `{"subject":"queued"}`, string(c.Payload), "a job claimed during the purge has its payload")
	}
	for _, c := range running {
		r := mustRenew(t, ctx, worker, c.JobID, c.Token, "w-live", "renewed", "a running claim still renews after the purge")
		require.NotNil(t, r.ExpiresAt)
	}
	var livePayloads int
	require.NoError(t, f.admin.QueryRow(ctx, `SELECT count(*) FROM durable_jobs.job_payload_record p
		JOIN durable_jobs.job_record j USING (job_record_id)
		WHERE j.queue_name = $1 AND j.job_status = 'RUNNING'`, f.queue).Scan(&livePayloads))
	require.Equal(t, 3+len(queued), livePayloads, "no live job lost its payload")

	sum := map[string]int64{}
	for _, m := range totals {
		for k, v := range m {
			sum[k] += v
		}
	}
	require.Equal(t, map[string]int64{"job_record": expiredRows - 1, "payload": expiredPayloads}, sum,
		"the two purgers together purged each expired job once, skipping the locked row")

	// The locked row was skipped, not waited on; once released, a later
	// batch purges it.
	require.NoError(t, lockTx.Commit(ctx))
	again, err := purgeUntilDone(ctx, purgers[0], 7)
	require.NoError(t, err)
	require.Equal(t, map[string]int64{"job_record": 1}, again)
	var left int
	require.NoError(t, f.admin.QueryRow(ctx, `SELECT count(*) FROM durable_jobs.job_record WHERE job_record_id = ANY($1)`,
		finished[:expiredRows]).Scan(&left))
	require.Zero(t, left, "every job past its row retention is gone")
}

// An erasure waits for a terminal write in progress on the same job (two
// sessions): it refuses the job while it is RUNNING, and once the worker's
// completion commits it erases the payload and the result just written.
func TestEraseRefusesRunningJobAndErasesAfterCompletion(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := f.ctx
	worker := f.worker(t)
	operator := f.connect(t, f.db.LoginURL(t, "durable_job_operator"))
	f.enqueue(t, `{"subject":"bob"}`)
	c := mustClaim(t, ctx, worker, f.queue, "w-erase")

	_, err := operator.Exec(ctx, "SELECT durable_jobs.erase_job_payload($1, 'DSR-42')", c.JobID)
	requireSQLState(t, err, "LF003", "a running job's payload cannot be erased")

	tx, err := worker.Begin(ctx)
	require.NoError(t, err)
	require.NoError(t, complete(ctx, tx, c, "w-erase"))
	erased := make(chan error, 1)
	var ok bool
	go func() {
		erased <- operator.QueryRow(ctx, "SELECT durable_jobs.erase_job_payload($1, 'DSR-42')", c.JobID).Scan(&ok)
	}()
	select {
	case err := <-erased:
		t.Fatalf("the erasure did not wait for the completion in progress: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	require.NoError(t, tx.Commit(ctx))
	require.NoError(t, <-erased)
	require.True(t, ok, "the erasure erased the completed job's payload")

	var payloads, results int
	var status string
	require.NoError(t, f.admin.QueryRow(ctx, `SELECT
		(SELECT count(*) FROM durable_jobs.job_payload_record WHERE job_record_id = $1),
		(SELECT count(*) FROM durable_jobs.job_outcome_ledger WHERE job_record_id = $1 AND result_document IS NOT NULL),
		(SELECT job_status::text FROM durable_jobs.job_record WHERE job_record_id = $1)`, c.JobID).
		Scan(&payloads, &results, &status))
	require.Equal(t, 0, payloads)
	require.Equal(t, 0, results, "the result the completion wrote is erased too")
	require.Equal(t, "SUCCEEDED", status, "the lifecycle row stays")
}
