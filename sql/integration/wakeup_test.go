package sqlintegration

import (
	"crypto/md5"
	"encoding/hex"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/stretchr/testify/require"
)

// wakeChannel is the wake-up channel of queue (migration 027): what
// goclient's worker LISTENs on.
func wakeChannel(queue string) string {
	sum := md5.Sum([]byte(queue))
	return "leasefence_wake_" + hex.EncodeToString(sum[:])[:16]
}

// wakeups runs act, then a sentinel NOTIFY in a transaction of its own
// after it, and returns the notifications listener received before the
// sentinel: PostgreSQL delivers notifications in commit order, so these
// are exactly those act's transactions sent.
func (f *fixture) wakeups(t *testing.T, listener *pgx.Conn, act func()) []string {
	t.Helper()
	act()
	_, err := f.admin.Exec(f.ctx, `SELECT pg_notify('sentinel', '')`)
	require.NoError(t, err)
	var got []string
	for {
		n, err := listener.WaitForNotification(f.ctx)
		require.NoError(t, err, "wait for the notifications")
		if n.Channel == "sentinel" {
			return got
		}
		got = append(got, n.Channel+"|"+n.Payload)
	}
}

// Migrations 027 and 032: every write that leaves a job QUEUED or
// RETRY_SCHEDULED (enqueue, single and batched, a retry, a release, single
// and batched, a replay, a job due later) notifies the queue's hashed
// channel once per transaction with an empty payload, delivered at COMMIT;
// a claim, a renewal, a completion, a failure, a cancel and a rolled-back
// enqueue send nothing; another queue's channel
// is another channel. Any login may listen (an auditor here): the channel
// names no queue and the payload says nothing.
func TestWakeupNotifiesTheQueueChannelOncePerTransaction(t *testing.T) {
	t.Parallel()
	f := setup(t)
	other := f.queue + ".other"
	listener := f.connect(t, f.db.LoginURL(t, "durable_job_auditor"))
	for _, ch := range []string{wakeChannel(f.queue), wakeChannel(other), "sentinel"} {
		_, err := listener.Exec(f.ctx, "LISTEN "+pgx.Identifier{ch}.Sanitize())
		require.NoError(t, err)
	}
	require.NotContains(t, wakeChannel(f.queue), f.queue, "the channel does not name the queue")
	ours := []string{wakeChannel(f.queue) + "|"}
	worker := f.worker(t)
	producer := f.producer(t)
	const owner = "w-wake"

	require.Equal(t, ours, f.wakeups(t, listener, func() { enqueueOn(t, f.ctx, producer, f.queue, `{"secret": 1}`) }),
		"an enqueue sends one empty notification on the queue's channel")
	require.Equal(t, ours, f.wakeups(t, listener, func() {
		_, err := producer.Exec(f.ctx, `SELECT durable_jobs.enqueue_jobs($1, ARRAY['{}', '{}', '{}']::jsonb[])`, f.queue)
		require.NoError(t, err)
	}), "a batch enqueue of three jobs sends one notification")
	require.Equal(t, ours, f.wakeups(t, listener, func() {
		require.NoError(t, pgx.BeginFunc(f.ctx, producer, func(tx pgx.Tx) error {
			enqueueOn(t, f.ctx, tx, f.queue, `{}`)
			enqueueOn(t, f.ctx, tx, f.queue, `{}`)
			return nil
		}))
	}), "two enqueues in one transaction send one notification")
	require.Equal(t, []string{wakeChannel(other) + "|"}, f.wakeups(t, listener, func() { enqueueOn(t, f.ctx, producer, other, `{}`) }),
		"another queue's job notifies another channel")
	require.Empty(t, f.wakeups(t, listener, func() {
		tx, err := producer.Begin(f.ctx)
		require.NoError(t, err)
		enqueueOn(t, f.ctx, tx, f.queue, `{}`)
		require.NoError(t, tx.Rollback(f.ctx))
	}), "a rolled-back enqueue notifies nobody")
	require.Equal(t, ours, f.wakeups(t, listener, func() {
		_, err := producer.Exec(f.ctx, `SELECT durable_jobs.enqueue_job($1, '{}', NULL, clock_timestamp() + interval '1 hour')`, f.queue)
		require.NoError(t, err)
	}), "a job due later notifies too: an idle worker then reads when it falls due")

	var c claim
	require.Empty(t, f.wakeups(t, listener, func() { c = mustClaim(t, f.ctx, worker, f.queue, owner) }), "a claim notifies nobody")
	require.Empty(t, f.wakeups(t, listener, func() {
		mustRenew(t, f.ctx, worker, c.JobID, c.Token, owner, "renewed", "renew the claim")
	}), "a renewal notifies nobody")
	require.Empty(t, f.wakeups(t, listener, func() { require.NoError(t, complete(f.ctx, worker, c, owner)) }),
		"a completion notifies nobody")
	c = mustClaim(t, f.ctx, worker, f.queue, owner)
	require.Equal(t, ours, f.wakeups(t, listener, func() {
		_, err := retry(f.ctx, worker, c, owner, time.Minute)
		require.NoError(t, err)
	}), "a retry notifies (the retry falls due later)")
	c = mustClaim(t, f.ctx, worker, f.queue, owner)
	require.Equal(t, ours, f.wakeups(t, listener, func() {
		released, err := release(f.ctx, worker, c, owner)
		require.NoError(t, err)
		require.True(t, released)
	}), "a release notifies")
	c, c2 := mustClaim(t, f.ctx, worker, f.queue, owner), mustClaim(t, f.ctx, worker, f.queue, owner)
	require.Equal(t, ours, f.wakeups(t, listener, func() {
		_, err := worker.Exec(f.ctx, `SELECT durable_jobs.release_job_claims($1, $2, $3)`, owner,
			[]int64{c.JobID, c2.JobID}, []pgtype.UUID{c.Token, c2.Token})
		require.NoError(t, err)
	}), "a batch release of two claims sends one notification")
	c = mustClaim(t, f.ctx, worker, f.queue, owner)
	require.Empty(t, f.wakeups(t, listener, func() {
		_, err := worker.Exec(f.ctx, `SELECT durable_jobs.fail_job($1, $2, $3, 'wake_test')`, c.JobID, c.Token, owner)
		require.NoError(t, err)
	}), "a failure notifies nobody")
	c = mustClaim(t, f.ctx, worker, f.queue, owner)
	require.Empty(t, f.wakeups(t, listener, func() {
		_, err := f.admin.Exec(f.ctx, `SELECT durable_jobs.cancel_job($1)`, c.JobID)
		require.NoError(t, err)
	}), "a cancel notifies nobody")
	require.Equal(t, ours, f.wakeups(t, listener, func() {
		var replayed bool
		require.NoError(t, f.admin.QueryRow(f.ctx, `SELECT durable_jobs.replay_job($1)`, c.JobID).Scan(&replayed))
		require.True(t, replayed)
	}), "a replay notifies")

}

// One notifying transaction per queue at a time (migration 027): while a
// transaction that made a job of the queue claimable is in progress (it
// holds the queue's wake-up key, advisory (1279678293, hashtext(queue))),
// another that enqueues on the queue commits without a notification, so
// the two do not queue up behind PostgreSQL's notification lock; the first
// notifies at its COMMIT. Another queue is not held up. A login that holds
// the key itself (any login may) only stops the queue's notifications,
// until it lets go.
func TestWakeupOneNotifyingTransactionPerQueue(t *testing.T) {
	t.Parallel()
	f := setup(t)
	other := f.queue + ".other"
	listener := f.connect(t, f.db.LoginURL(t, "durable_job_auditor"))
	for _, ch := range []string{wakeChannel(f.queue), wakeChannel(other), "sentinel"} {
		_, err := listener.Exec(f.ctx, "LISTEN "+pgx.Identifier{ch}.Sanitize())
		require.NoError(t, err)
	}
	ours := []string{wakeChannel(f.queue) + "|"}
	first, second := f.producer(t), f.producer(t)

	tx, err := first.Begin(f.ctx)
	require.NoError(t, err)
	defer tx.Rollback(f.ctx) //nolint:errcheck // committed below
	enqueueOn(t, f.ctx, tx, f.queue, `{}`)
	require.Empty(t, f.wakeups(t, listener, func() { enqueueOn(t, f.ctx, second, f.queue, `{}`) }),
		"an enqueue while another transaction that notifies the queue is open commits without a notification")
	require.Equal(t, []string{wakeChannel(other) + "|"}, f.wakeups(t, listener, func() { enqueueOn(t, f.ctx, second, other, `{}`) }),
		"another queue is not held up")
	require.Equal(t, ours, f.wakeups(t, listener, func() { require.NoError(t, tx.Commit(f.ctx)) }),
		"the first transaction notifies at its commit")
	require.Equal(t, ours, f.wakeups(t, listener, func() { enqueueOn(t, f.ctx, second, f.queue, `{}`) }),
		"then enqueues notify again")

	stranger := f.connect(t, f.db.LoginURL(t, "durable_job_auditor"))
	_, err = stranger.Exec(f.ctx, `SELECT pg_advisory_lock(1279678293, hashtext($1))`, f.queue)
	require.NoError(t, err)
	require.Empty(t, f.wakeups(t, listener, func() { enqueueOn(t, f.ctx, second, f.queue, `{}`) }),
		"a login holding the queue's wake-up key stops its notifications (the workers poll)")
	_, err = stranger.Exec(f.ctx, `SELECT pg_advisory_unlock(1279678293, hashtext($1))`, f.queue)
	require.NoError(t, err)
	require.Equal(t, ours, f.wakeups(t, listener, func() { enqueueOn(t, f.ctx, second, f.queue, `{}`) }),
		"and only while it holds it")
}
