package goclient_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgtype"
	"github.com/stretchr/testify/require"

	"github.com/mightyetl/leasefence/goclient"
	"github.com/mightyetl/leasefence/internal/testdb"
)

// QueueBacklog (migration 028) reads, per queue, the jobs queued, running,
// retry scheduled and failed in the last hour and the oldest due job's
// age: counts and one duration, the same through an Admin and a Client;
// a worker login may not read it.
func TestQueueBacklogCountsWhatWaitsRunsAndFailed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	producer := db.LoginPool(t, "durable_job_producer")
	worker := db.LoginPool(t, "durable_job_worker")
	auditor := adminClient(t, db.LoginPool(t, "durable_job_auditor"))

	backlog, err := auditor.QueueBacklog(ctx)
	require.NoError(t, err)
	require.Len(t, backlog, 1)
	require.Equal(t, goclient.QueueBacklog{Queue: "*", DatabaseTime: backlog[0].DatabaseTime}, backlog[0])

	for i := 0; i < 4; i++ {
		_, err := producer.Exec(ctx, `SELECT durable_jobs.enqueue_job('etl.backlog', '{"n": 1}'::jsonb)`)
		require.NoError(t, err)
	}
	claim := func() (int64, pgtype.UUID) {
		var id int64
		var token pgtype.UUID
		require.NoError(t, worker.QueryRow(ctx, `SELECT job_record_id, lease_claim_token
			FROM durable_jobs.claim_next_job('etl.backlog', 'backlog-test')`).Scan(&id, &token))
		return id, token
	}
	claim() // stays RUNNING
	id, token := claim()
	_, err = worker.Exec(ctx, `SELECT durable_jobs.fail_job($1, $2, 'backlog-test', 'bad_input')`, id, token)
	require.NoError(t, err)
	id, token = claim()
	_, err = worker.Exec(ctx, `SELECT durable_jobs.retry_job($1, $2, 'backlog-test', interval '1 hour', 'busy')`, id, token)
	require.NoError(t, err)

	backlog, err = auditor.QueueBacklog(ctx)
	require.NoError(t, err)
	require.Len(t, backlog, 2)
	b := backlog[1]
	require.Equal(t, "etl.backlog", b.Queue)
	require.Equal(t, []int64{1, 1, 1, 1}, []int64{b.Queued, b.Running, b.RetryScheduled, b.FailedLastHour})
	require.NotNil(t, b.OldestDueAge, "the queued job is due")
	require.GreaterOrEqual(t, *b.OldestDueAge, time.Duration(0))
	require.Less(t, *b.OldestDueAge, time.Minute)
	require.WithinDuration(t, time.Now(), b.DatabaseTime, time.Minute)

	_, err = adminClient(t, worker).QueueBacklog(ctx)
	require.ErrorIs(t, err, goclient.ErrPermissionDenied)
}
