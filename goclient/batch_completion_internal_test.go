package goclient

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/mightyetl/leasefence/internal/testdb"
)

// The completer completes handlers that finish together in one
// complete_jobs transaction, and each caller gets what a completion of its
// own would have answered: nil, ErrStaleClaim (the batch then falls back to
// one complete_job per claim), errAbandoned for a lease that ended first,
// and the batch's error for any other failure.
func TestCompleterCompletesTogetherAndAnswersEachAsAlone(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	admin := db.Pool(t)
	c, err := NewClient(db.LoginPool(t, "durable_job_worker"), Config{OwnerID: "batch-completer"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	reqs := completions(t, admin, c, "batch.completer", 13)
	comp := newCompleter(c)
	answers := func(rs ...*completion) []error {
		out := make([]error, len(rs))
		for i, r := range rs {
			out[i] = <-r.signal
		}
		return out
	}
	// transactions is the number of distinct transactions that last wrote
	// the rows of rs (xmin).
	transactions := func(rs ...*completion) int {
		ids := make([]int64, len(rs))
		for i, r := range rs {
			ids[i] = r.claim.jobID
		}
		var n int
		require.NoError(t, admin.QueryRow(ctx, `SELECT count(DISTINCT xmin::text) FROM durable_jobs.job_record
			WHERE job_record_id = ANY($1)`, ids).Scan(&n))
		return n
	}
	status := func(r *completion) string {
		var s string
		require.NoError(t, admin.QueryRow(ctx, `SELECT job_status::text FROM durable_jobs.job_record WHERE job_record_id = $1`,
			r.claim.jobID).Scan(&s))
		return s
	}

	// Three fenced claims: one complete_jobs transaction, every heartbeat stopped.
	comp.run(ctx, reqs[0:3])
	require.Equal(t, []error{nil, nil, nil}, answers(reqs[0:3]...))
	require.Equal(t, 1, transactions(reqs[0:3]...), "the three were completed in one transaction")
	for _, r := range reqs[0:3] {
		require.Equal(t, "SUCCEEDED", status(r))
		require.ErrorIs(t, r.lease.Err(), ErrLeaseStopped)
	}

	// One stale claim (cancelled) among three: each completed alone.
	_, err = admin.Exec(ctx, `SELECT durable_jobs.cancel_job($1)`, reqs[3].claim.jobID)
	require.NoError(t, err)
	comp.run(ctx, reqs[3:6])
	got := answers(reqs[3:6]...)
	require.ErrorIs(t, got[0], ErrStaleClaim)
	require.Equal(t, []error{nil, nil}, got[1:])
	require.Equal(t, 2, transactions(reqs[4:6]...), "after the stale batch each claim was completed alone")
	require.Equal(t, "CANCELLED", status(reqs[3]))

	// A lease that ended first is not written; the one left is completed alone.
	reqs[6].lease.Stop()
	comp.run(ctx, reqs[6:8])
	require.Equal(t, []error{errAbandoned, nil}, answers(reqs[6:8]...))
	require.Equal(t, "RUNNING", status(reqs[6]))
	require.Equal(t, "SUCCEEDED", status(reqs[7]))

	// Any other failure of the batch (here the same claim twice, LF003) is every caller's answer.
	twin := &completion{lease: reqs[8].lease, claim: reqs[8].claim, signal: make(chan error, 1)}
	comp.run(ctx, []*completion{reqs[8], twin})
	for _, err := range answers(reqs[8], twin) {
		require.ErrorIs(t, err, ErrInvalidArgument)
	}
	require.Equal(t, "RUNNING", status(reqs[8]))

	// Through complete, as the worker calls it: a request alone.
	require.NoError(t, comp.complete(ctx, reqs[9].lease, reqs[9].claim))
	require.Equal(t, "SUCCEEDED", status(reqs[9]))
	require.False(t, comp.running, "the run ended")
	require.Empty(t, comp.pending)
	require.False(t, errors.Is(reqs[8].lease.Err(), ErrLeaseStopped), "a failed batch stops no heartbeat itself")

	// Three handlers finish while a transaction runs (running, as when one
	// is in flight), two claims per transaction: the first of them completes
	// itself and the second together, then hands the third its own batch.
	comp.batchLimit = 2
	comp.mu.Lock()
	comp.running = true
	comp.mu.Unlock()
	results := make(chan error, 3)
	for _, r := range reqs[10:13] {
		go func() { results <- comp.complete(ctx, r.lease, r.claim) }()
		require.Eventually(t, func() bool {
			comp.mu.Lock()
			defer comp.mu.Unlock()
			return len(comp.pending) > 0 && comp.pending[len(comp.pending)-1].claim.jobID == r.claim.jobID
		}, 10*time.Second, time.Millisecond, "the handler's request is pending")
	}
	comp.mu.Lock()
	comp.pending[0].signal <- errLead // the transaction in flight ends
	comp.mu.Unlock()
	for range 3 {
		require.NoError(t, <-results)
	}
	require.Equal(t, 1, transactions(reqs[10:12]...), "the first two were completed together")
	require.Equal(t, "SUCCEEDED", status(reqs[12]))
	require.False(t, comp.running)
}

// A worker's completer admits at most limit completions at once; the ones
// beyond wait in order and are admitted together when a transaction ends,
// as many as it freed, so they make the next batch at once: with limit 2,
// the first completion held by a row lock and a second pending, the third
// and fourth wait; when the lock goes, the first commits alone, the second
// and third are completed together in one transaction, then the fourth.
// The worker hears of every admission and end in that order (moved): the
// first two admitted as they arrive, then each transaction's finished
// requests with the number it admitted.
func TestCompleterAdmitsWaitingCompletionsTogether(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	admin := db.Pool(t)
	c, err := NewClient(db.LoginPool(t, "durable_job_worker"), Config{OwnerID: "batch-admission"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	const queue = "batch.admission"
	reqs := completions(t, admin, c, queue, 4)
	index := map[*Lease]int{}
	for i, r := range reqs {
		index[r.lease] = i
	}
	type move struct {
		finished []int
		admitted int
	}
	var moves []move // appended under the completer's lock
	comp := newCompleter(c)
	comp.limit = 2
	comp.moved = func(finished []*completion, admitted int) {
		m := move{admitted: admitted}
		for _, r := range finished {
			m.finished = append(m.finished, index[r.lease])
		}
		moves = append(moves, m)
	}
	state := func() (admitted, pending, waiting int, ms []move) {
		comp.mu.Lock()
		defer comp.mu.Unlock()
		return comp.admitted, len(comp.pending), len(comp.waiting), append([]move(nil), moves...)
	}

	lock, err := admin.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = lock.Rollback(ctx) }()
	_, err = lock.Exec(ctx, `SELECT 1 FROM durable_jobs.job_record WHERE job_record_id = $1 FOR UPDATE`, reqs[0].claim.jobID)
	require.NoError(t, err)

	results := make(chan error, 4)
	for i, r := range reqs {
		go func() { results <- comp.complete(ctx, r.lease, r.claim) }()
		want := min(i+1, 2)
		// The first has taken its batch (pending empty: it is held by the
		// row lock) before the second comes; a second that came while the
		// first still yielded would rightly join its batch.
		wantPending := min(i, 1)
		require.Eventually(t, func() bool {
			a, p, w, _ := state()
			return a == want && p == wantPending && w == i+1-want
		}, 10*time.Second, time.Millisecond, "completion %d admitted or waiting", i)
	}
	_, _, _, ms := state()
	require.Equal(t, []move{{nil, 1}, {nil, 1}}, ms, "the first two admitted as they came, the others wait")

	require.NoError(t, lock.Rollback(ctx))
	for range reqs {
		require.NoError(t, <-results)
	}
	_, _, _, ms = state()
	require.Equal(t, []move{{nil, 1}, {nil, 1}, {[]int{0}, 1}, {[]int{1, 2}, 1}, {[]int{3}, 0}}, ms)
	var together int
	require.NoError(t, admin.QueryRow(ctx, `SELECT count(DISTINCT xmin::text) FROM durable_jobs.job_record
		WHERE job_record_id = ANY($1)`, []int64{reqs[1].claim.jobID, reqs[2].claim.jobID}).Scan(&together))
	require.Equal(t, 1, together, "the second and the third were completed in one transaction")
	var succeeded int
	require.NoError(t, admin.QueryRow(ctx, `SELECT count(*) FROM durable_jobs.job_record
		WHERE queue_name = $1 AND job_status = 'SUCCEEDED'`, queue).Scan(&succeeded))
	require.Equal(t, 4, succeeded)
	admitted, pending, waiting, _ := state()
	require.Zero(t, admitted)
	require.Zero(t, pending)
	require.Zero(t, waiting)
	require.False(t, comp.running)
}

// completions enqueues n jobs of queue, claims them all with c and keeps
// each: a completion request a job, not yet made.
func completions(t *testing.T, admin *pgxpool.Pool, c *Client, queue string, n int) []*completion {
	t.Helper()
	ctx := context.Background()
	_, err := admin.Exec(ctx, `SELECT durable_jobs.enqueue_job($1, '{}') FROM generate_series(1, $2::int)`, queue, n)
	require.NoError(t, err)
	jobs, err := c.ClaimMany(ctx, queue, n)
	require.NoError(t, err)
	require.Len(t, jobs, n)
	reqs := make([]*completion, n)
	for i, j := range jobs {
		reqs[i] = &completion{lease: c.Keep(ctx, j), claim: j.claim, signal: make(chan error, 1)}
	}
	return reqs
}

// A completion transaction takes two round trips on the wire: its BEGIN
// goes out in one batch with complete_job (or complete_jobs, retry_job,
// fail_job), and the COMMIT is sent alone, after the call's answer, so
// that the commit deadline bounds it alone. A renewal attempt too: BEGIN,
// SET LOCAL and renew_job_leases in one batch, then the COMMIT. Counted on
// the protocol messages of the client's only connection, one ReadyForQuery
// a round trip: the first leaves the connection in the transaction, the
// second (the COMMIT's) out of it. A stale claim's batch is rolled back:
// the ROLLBACK instead of the COMMIT (and, as after any failed statement,
// pgx prepares the failed batch's statements again at the connection's
// next use: two round trips more, as before this change).
func TestCompletionTransactionTakesTwoRoundTrips(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	pool, wire := tracedPool(t, db.LoginURL(t, "durable_job_worker"))
	c, err := NewClient(pool, Config{OwnerID: "round-trips"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	admin, ctx := db.Pool(t), context.Background()
	reqs := completions(t, admin, c, "round.trips", 14)
	comp := newCompleter(c)

	// roundTrips runs tx(0) then tx(1) (each statement is prepared on the
	// connection at its first use, a round trip of its own) and returns the
	// ReadyForQuery answers of the second run, in order: each a round trip
	// ended, with the connection's transaction status it leaves.
	roundTrips := func(tx func(i int)) []string {
		t.Helper()
		tx(0)
		mark := len(wire.String())
		tx(1)
		var ready []string
		for _, line := range strings.Split(wire.String()[mark:], "\n") {
			// B, ReadyForQuery, its length, its status.
			if f := strings.Split(line, "\t"); len(f) == 4 && f[1] == "ReadyForQuery" {
				ready = append(ready, strings.TrimSpace(f[3]))
			}
		}
		return ready
	}
	answered := func(want error, rs ...*completion) {
		t.Helper()
		for _, r := range rs {
			select {
			case err := <-r.signal:
				require.ErrorIs(t, err, want)
			case <-time.After(10 * time.Second):
				t.Fatal("no answer")
			}
		}
	}
	// T: in a transaction; I: idle, outside one.
	twoRoundTrips := []string{"T", "I"}

	require.Equal(t, twoRoundTrips, roundTrips(func(i int) {
		require.NoError(t, c.Complete(ctx, reqs[i].claim, []byte(`{"rows": 1}`)))
	}), "Complete: complete_job with the BEGIN, then the COMMIT")

	require.Equal(t, twoRoundTrips, roundTrips(func(i int) {
		comp.run(ctx, reqs[2+i:3+i])
		answered(nil, reqs[2+i])
	}), "a worker's completion alone")

	require.Equal(t, twoRoundTrips, roundTrips(func(i int) {
		batch := reqs[4+3*i : 7+3*i]
		comp.run(ctx, batch)
		answered(nil, batch...)
	}), "a worker's completions together: complete_jobs with the BEGIN, then the COMMIT")

	require.Equal(t, twoRoundTrips, roundTrips(func(i int) {
		status, err := c.Retry(ctx, reqs[10+i].claim, time.Minute, "round_trip")
		require.NoError(t, err)
		require.Equal(t, StatusRetryScheduled, status, "the status retry_job answered in the batch")
	}), "Retry")

	// A renewal attempt: SET LOCAL and renew_job_leases with the BEGIN.
	port := newPgRenewalPort(pool, time.Second)
	require.Equal(t, twoRoundTrips, roundTrips(func(int) {
		results, err := port.RenewClaims(ctx, []Claim{reqs[12].claim, reqs[13].claim})
		require.NoError(t, err)
		require.Equal(t, RenewalRenewed, results[1].Outcome)
	}), "a renewal attempt")

	// A stale claim: the batch's LF001 comes back as ErrStaleClaim, the
	// transaction (aborted: E) is rolled back, no COMMIT is sent.
	for _, r := range reqs[12:14] {
		_, err = admin.Exec(ctx, `SELECT durable_jobs.cancel_job($1)`, r.claim.jobID)
		require.NoError(t, err)
	}
	mark := len(wire.String())
	stale := roundTrips(func(i int) {
		require.ErrorIs(t, c.Fail(ctx, reqs[12+i].claim, "round_trip"), ErrStaleClaim)
	})
	require.Equal(t, []string{"I", "I", "E", "I"}, stale,
		"Fail of a stale claim: the failed batch's statements dropped and prepared again (I, I), fail_job with the BEGIN, then the ROLLBACK")
	require.NotContains(t, wire.String()[mark:], `"commit"`)
	require.NotContains(t, wire.String(), "NoticeResponse", "no BEGIN inside a transaction, no COMMIT outside one")
}

// tracedPool is a pool of one connection on u, with ParsePoolConfig's
// settings, whose protocol messages are written to the buffer returned.
func tracedPool(t *testing.T, u string) (*pgxpool.Pool, *logBuffer) {
	t.Helper()
	cfg, err := ParsePoolConfig(u, 0)
	require.NoError(t, err)
	cfg.MaxConns = 1
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	wire := &logBuffer{}
	conn, err := pool.Acquire(context.Background())
	require.NoError(t, err)
	conn.Conn().PgConn().Frontend().Trace(wire, pgproto3.TracerOptions{SuppressTimestamps: true})
	conn.Release()
	return pool, wire
}
