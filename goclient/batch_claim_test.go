package goclient_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/mightyetl/leasefence/goclient"
)

// A worker with N free slots claims up to N jobs in one claim_next_jobs
// call, and never claims a job beyond its free slots: with 5 slots and 12
// due jobs whose handlers block, exactly 5 jobs are RUNNING, all stamped
// with the one clock_timestamp() of a single claim pass (a claim per job
// would stamp each with its own), and the other 7 stay QUEUED through many
// poll intervals. When one handler returns, the freed slot claims one more;
// at shutdown the five claims still held are released in one round trip.
func TestWorkerClaimsItsFreeSlotsInOneCallAndNeverMore(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := setup(t, slowPolicy)
	e.enqueue(12)
	c := e.worker()
	release := make(chan struct{}, 12)
	w, err := c.NewWorker(goclient.WorkerConfig{Queue: testQueue, Concurrency: 5, PollInterval: 20 * time.Millisecond,
		ShutdownTimeout: 50 * time.Millisecond,
		Handler: func(ctx context.Context, job goclient.Job) error {
			select {
			case <-release:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}})
	require.NoError(t, err)
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.Run(runCtx) }()
	defer cancel()

	// running returns the number of RUNNING jobs and of distinct claim stamps.
	running := func() (jobs, stamps int) {
		require.NoError(t, e.admin.QueryRow(ctx, `SELECT count(*), count(DISTINCT status_changed_at)
			FROM durable_jobs.job_record WHERE queue_name = $1 AND job_status = 'RUNNING'`, testQueue).Scan(&jobs, &stamps))
		return jobs, stamps
	}
	waitFor(t, 3*slowPolicy.lease, "five running jobs", func() bool { n, _ := running(); return n == 5 })
	// Many poll intervals (database time decides nothing here: the worker
	// has no free slot, so no claim may be made however long it waits).
	time.Sleep(10 * 20 * time.Millisecond)
	jobs, stamps := running()
	require.Equal(t, 5, jobs, "no job beyond the free slots is claimed")
	require.Equal(t, 1, stamps, "the five jobs were claimed by one call")
	var queued int
	require.NoError(t, e.admin.QueryRow(ctx, `SELECT count(*) FROM durable_jobs.job_record
		WHERE queue_name = $1 AND job_status = 'QUEUED' AND attempt_number = 0`, testQueue).Scan(&queued))
	require.Equal(t, 7, queued)

	release <- struct{}{}
	waitFor(t, 3*slowPolicy.lease, "one job done and its slot refilled", func() bool {
		var succeeded int
		require.NoError(t, e.admin.QueryRow(ctx, `SELECT count(*) FROM durable_jobs.job_record
			WHERE queue_name = $1 AND job_status = 'SUCCEEDED'`, testQueue).Scan(&succeeded))
		n, _ := running()
		return succeeded == 1 && n == 5
	})
	time.Sleep(10 * 20 * time.Millisecond)
	jobs, stamps = running()
	require.Equal(t, 5, jobs, "the freed slot claimed exactly one job")
	require.Equal(t, 2, stamps, "by one more call")

	// Shutdown: the five handlers ignore the deadline until their contexts
	// are cancelled; their claims are released together and every job not
	// done is claimable again with its attempt given back.
	cancel()
	require.NoError(t, <-done)
	require.NoError(t, e.admin.QueryRow(ctx, `SELECT count(*) FROM durable_jobs.job_record
		WHERE queue_name = $1 AND job_status = 'QUEUED' AND attempt_number = 0`, testQueue).Scan(&queued))
	require.Equal(t, 11, queued, "the five abandoned claims were released")
}
