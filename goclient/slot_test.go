package goclient_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/mightyetl/leasefence/goclient"
)

// rowLocker holds row locks on jobs from another session (the admin
// pool), so that their completions wait: complete_job and complete_jobs
// lock the claim's row first.
type rowLocker struct {
	t        *testing.T
	mu       sync.Mutex
	tx       pgx.Tx
	released bool
}

func (e *env) rowLocker() *rowLocker {
	e.t.Helper()
	tx, err := e.admin.Begin(context.Background())
	require.NoError(e.t, err)
	l := &rowLocker{t: e.t, tx: tx}
	e.t.Cleanup(l.release)
	return l
}

// lock locks job id's row until release; after release it does nothing.
func (l *rowLocker) lock(id int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.released {
		return
	}
	_, err := l.tx.Exec(context.Background(), `SELECT 1 FROM durable_jobs.job_record WHERE job_record_id = $1 FOR UPDATE`, id)
	require.NoError(l.t, err)
}

// release ends the locking transaction (rolled back: it wrote nothing).
func (l *rowLocker) release() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.released = true
	_ = l.tx.Rollback(context.Background())
}

// count returns how many of testQueue's jobs are in status.
func (e *env) count(status goclient.JobStatus) int {
	e.t.Helper()
	var n int
	require.NoError(e.t, e.admin.QueryRow(context.Background(), `SELECT count(*) FROM durable_jobs.job_record
		WHERE queue_name = $1 AND job_status = $2`, testQueue, string(status)).Scan(&n))
	return n
}

// requireFirstAttempt requires every job of ids to be at attempt 1.
func (e *env) requireFirstAttempt(ids []int64) {
	e.t.Helper()
	for _, id := range ids {
		require.Equal(e.t, 1, e.state(id).AttemptNumber, "job %d", id)
	}
}

// A Handler's job frees its worker slot when the handler returns, not when
// its completion commits: with Concurrency 1, the first job's completion
// waits on a row lock held by another session, and the next job's handler
// runs meanwhile (before, the slot stayed taken until the completion
// committed, so the second handler waited for the lock: this test failed).
// The first claim stays RUNNING, kept by the heartbeat, until the lock is
// released; then both complete at their first attempt.
func TestFinishedHandlerFreesItsSlotBeforeItsCompletionCommits(t *testing.T) {
	t.Parallel()
	e := setup(t, quietPolicy)
	ids := e.enqueue(2)
	locks := e.rowLocker()
	ran := make(chan int64, 2)
	w, err := e.worker().NewWorker(goclient.WorkerConfig{Queue: testQueue, Concurrency: 1, PollInterval: 20 * time.Millisecond,
		Handler: func(_ context.Context, job goclient.Job) error {
			if job.ID() == ids[0] {
				locks.lock(job.ID())
			}
			ran <- job.ID()
			return nil
		}})
	require.NoError(t, err)
	stop := runWorker(t, w)
	require.Equal(t, ids[0], <-ran)
	select {
	case id := <-ran:
		require.Equal(t, ids[1], id)
	case <-time.After(5 * time.Second):
		t.Fatal("the second handler did not run while the first completion was pending")
	}
	require.Equal(t, goclient.StatusRunning, e.state(ids[0]).Status, "the first completion is still pending")

	locks.release()
	waitFor(t, 10*time.Second, "both jobs to succeed", func() bool { return e.count(goclient.StatusSucceeded) == 2 })
	require.NoError(t, stop())
	e.requireFirstAttempt(ids)
}

// Claims awaiting their completion are bounded by Concurrency: with
// Concurrency 2 and every completion held back by a row lock, two
// completions are pending and the next two handlers, finished, keep their
// slots until one ends. So exactly 4 handlers run, 4 jobs are RUNNING
// (2 x Concurrency claims, never more) and the other 4 stay QUEUED through
// many poll intervals; once the locks go every job succeeds at its first
// attempt. (Before, only 2 handlers ran: the wait for 4 failed.)
func TestClaimsAwaitingCompletionAreBoundedByConcurrency(t *testing.T) {
	t.Parallel()
	e := setup(t, quietPolicy)
	ids := e.enqueue(8)
	locks := e.rowLocker()
	var mu sync.Mutex
	handled := 0
	handlers := func() int {
		mu.Lock()
		defer mu.Unlock()
		return handled
	}
	w, err := e.worker().NewWorker(goclient.WorkerConfig{Queue: testQueue, Concurrency: 2, PollInterval: 20 * time.Millisecond,
		Handler: func(_ context.Context, job goclient.Job) error {
			locks.lock(job.ID())
			mu.Lock()
			handled++
			mu.Unlock()
			return nil
		}})
	require.NoError(t, err)
	stop := runWorker(t, w)
	waitFor(t, 5*time.Second, "four handlers to run", func() bool { return handlers() == 4 })
	for range 10 {
		time.Sleep(3 * 20 * time.Millisecond)
		require.LessOrEqual(t, e.count(goclient.StatusRunning), 4, "never more than 2 x Concurrency claims")
	}
	require.Equal(t, 4, handlers(), "no handler beyond the bound ran")
	require.Equal(t, 4, e.count(goclient.StatusRunning))
	require.Equal(t, 4, e.count(goclient.StatusQueued))

	locks.release()
	waitFor(t, 10*time.Second, "every job to succeed", func() bool { return e.count(goclient.StatusSucceeded) == 8 })
	require.NoError(t, stop())
	require.Equal(t, 8, handlers())
	e.requireFirstAttempt(ids)
}

// A completion that finds its claim stale after the slot was freed is
// counted as before: one OwnershipLost(LossStale), the job stays as the
// producer left it, and the worker goes on with the next job.
func TestStaleClaimFoundByAPendingCompletionIsCounted(t *testing.T) {
	t.Parallel()
	e := setup(t, quietPolicy)
	ids := e.enqueue(2)
	rec := newRecorder()
	w, err := e.worker(goclient.Config{Observer: rec}).NewWorker(goclient.WorkerConfig{Queue: testQueue, Concurrency: 1,
		PollInterval: 20 * time.Millisecond,
		Handler: func(_ context.Context, job goclient.Job) error {
			if job.ID() == ids[0] {
				e.cancelJob(job.ID())
			}
			return nil
		}})
	require.NoError(t, err)
	stop := runWorker(t, w)
	waitFor(t, 10*time.Second, "the second job to succeed", func() bool {
		return e.state(ids[1]).Status == goclient.StatusSucceeded
	})
	require.NoError(t, stop())
	require.Equal(t, 1, rec.lostCount(goclient.LossStale))
	require.Equal(t, goclient.StatusCancelled, e.state(ids[0]).Status)
}
