package sqlintegration

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// queue_backlog (migration 028) on a big table: 20,000 jobs, analyzed while
// all of them were queued, of which 19,940 then finished two days ago, 10
// failed just now and 50 still wait. The statistics say every row is
// waiting, so without its enable_seqscan = off the planner reads the whole
// table; with it, one call reads only the index entries of what it counts
// (the waiting jobs and the jobs finished in the last hour), with fresh
// statistics and with stale ones alike, and never scans the table.
func TestQueueBacklogReadsOnlyWhatItCountsOnABigTable(t *testing.T) {
	t.Parallel()
	f := setup(t)
	const jobs, waiting, failedNow = 20000, 50, 10
	for left := jobs; left > 0; left -= 10000 {
		_, err := f.admin.Exec(f.ctx, `SELECT durable_jobs.enqueue_jobs($1, pg_catalog.array_fill('{}'::jsonb, ARRAY[$2::int]))`,
			f.queue, min(left, 10000))
		require.NoError(t, err)
	}
	_, err := f.admin.Exec(f.ctx, `ANALYZE durable_jobs.job_record`)
	require.NoError(t, err)
	// The fixture moves rows as a superuser: the lifecycle functions would
	// take 20,000 claims to get there.
	_, err = f.admin.Exec(f.ctx, `UPDATE durable_jobs.job_record
		SET job_status = CASE WHEN job_record_id % 500 = 0 THEN 'FAILED' ELSE 'SUCCEEDED' END::durable_jobs.job_status_kind,
		    status_changed_at = pg_catalog.clock_timestamp() - interval '2 days'
		WHERE queue_name = $1 AND job_record_id NOT IN (
			SELECT job_record_id FROM durable_jobs.job_record WHERE queue_name = $1 ORDER BY job_record_id DESC LIMIT $2)`,
		f.queue, waiting+failedNow)
	require.NoError(t, err)
	_, err = f.admin.Exec(f.ctx, `UPDATE durable_jobs.job_record SET job_status = 'FAILED', status_changed_at = pg_catalog.clock_timestamp()
		WHERE job_record_id IN (SELECT job_record_id FROM durable_jobs.job_record WHERE queue_name = $1 AND job_status = 'QUEUED'
		                        ORDER BY job_record_id LIMIT $2)`, f.queue, failedNow)
	require.NoError(t, err)
	// VACUUM removes the dead row versions (and their index entries) but,
	// unlike ANALYZE, leaves the column statistics as they were.
	_, err = f.admin.Exec(f.ctx, `VACUUM durable_jobs.job_record`)
	require.NoError(t, err)

	auditor := f.connect(t, f.db.LoginURL(t, "durable_job_auditor"))
	read := func(why string) (seqScans, indexEntries int64) {
		t.Helper()
		tx, err := auditor.Begin(f.ctx)
		require.NoError(t, err)
		defer func() { _ = tx.Rollback(f.ctx) }()
		// Counts as a difference inside one transaction (nothing is
		// reported during it): sequential scans of job_record, and index
		// entries read from every index of it.
		const statsSQL = `SELECT pg_catalog.pg_stat_get_xact_numscans('durable_jobs.job_record'::regclass),
			(SELECT COALESCE(pg_catalog.sum(pg_catalog.pg_stat_get_xact_tuples_returned(i.indexrelid)), 0)::bigint
			 FROM pg_catalog.pg_index i WHERE i.indrelid = 'durable_jobs.job_record'::regclass)`
		var seq0, idx0, seq1, idx1, queued, failed int64
		require.NoError(t, tx.QueryRow(f.ctx, statsSQL).Scan(&seq0, &idx0), why)
		require.NoError(t, tx.QueryRow(f.ctx, `SELECT queued, failed_last_hour FROM durable_jobs.queue_backlog() WHERE queue_name = $1`,
			f.queue).Scan(&queued, &failed), why)
		require.NoError(t, tx.QueryRow(f.ctx, statsSQL).Scan(&seq1, &idx1), why)
		require.Equal(t, []int64{waiting, failedNow}, []int64{queued, failed}, why)
		return seq1 - seq0, idx1 - idx0
	}
	seqScans, entries := read("stale statistics")
	require.Zero(t, seqScans, "stale statistics: no sequential scan of job_record")
	require.LessOrEqual(t, entries, int64(2*(waiting+failedNow)), "stale statistics: index entries read for %d counted jobs", waiting+failedNow)

	_, err = f.admin.Exec(f.ctx, `ANALYZE durable_jobs.job_record`)
	require.NoError(t, err)
	seqScans, entries = read("fresh statistics")
	require.Zero(t, seqScans, "fresh statistics: no sequential scan of job_record")
	require.LessOrEqual(t, entries, int64(2*(waiting+failedNow)), "fresh statistics: index entries read for %d counted jobs", waiting+failedNow)
}
