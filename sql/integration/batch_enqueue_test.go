package sqlintegration

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"
)

// enqueueElement is one job of a batch: nil fields are SQL NULL.
type enqueueElement struct {
	payload     *string
	key         *string
	runAfter    *time.Time
	maxAttempts *int32
}

// enqueuedJob is what an enqueue leaves of a job, without its id and queue.
type enqueuedJob struct {
	Status      string
	Attempt     int32
	MaxAttempts int32
	RunAfter    time.Time
	KeyDigest   []byte
	Payload     string
}

// TestBatchEnqueueEqualsSingleEnqueues is the batch-equals-single
// differential test of enqueue_jobs: random batches (keyless elements, keys
// repeated within the batch, keys already on the queue, explicit run-afters
// and attempts, and in some rounds one or two bad elements, the last one at
// the end) go to one queue in one enqueue_jobs call and to a twin queue as
// enqueue_job calls in input order in one transaction. The batch succeeds
// exactly when every single call does; a refused batch is LF003 naming the
// first bad element's position and enqueue_job's message for it, and writes
// nothing; a batch that succeeds returns ids with the same pattern (equal
// ids, ids of the jobs already on the queue, and the same id differences, so
// one id is drawn per element as enqueue_job draws one per call) and leaves
// every job and payload as its twin's single call left them.
func TestBatchEnqueueEqualsSingleEnqueues(t *testing.T) {
	t.Parallel()
	f := setup(t)
	producer := f.producer(t)
	batchQueue, singleQueue := f.queue+"_batch", f.queue+"_single"
	rng := rand.New(rand.NewPCG(2026, 16))
	str := func(s string) *string { return &s }

	// Keys already on both queues, each from its own enqueue_job.
	existing := map[string][2]int64{}
	for i := 0; i < 4; i++ {
		key := fmt.Sprintf("idem-existing-secret-%d", i)
		var b, s int64
		require.NoError(t, producer.QueryRow(f.ctx, `SELECT durable_jobs.enqueue_job($1, '{"existing": true}', $2)`,
			batchQueue, key).Scan(&b))
		require.NoError(t, producer.QueryRow(f.ctx, `SELECT durable_jobs.enqueue_job($1, '{"existing": true}', $2)`,
			singleQueue, key).Scan(&s))
		existing[key] = [2]int64{b, s}
	}
	bad := []func(e *enqueueElement){
		func(e *enqueueElement) { e.payload = nil },
		func(e *enqueueElement) { e.key = str("") },
		func(e *enqueueElement) { e.key = str(strings.Repeat("k", 201)) },
		func(e *enqueueElement) { v := int32(0); e.maxAttempts = &v },
		func(e *enqueueElement) { v := int32(1001); e.maxAttempts = &v },
		func(e *enqueueElement) { v := time.Date(1999, 12, 31, 23, 59, 59, 0, time.UTC); e.runAfter = &v },
		func(e *enqueueElement) { v := time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC); e.runAfter = &v },
	}

	var whole, refused, repeatsWithin, repeatsExisting int
	for r := 0; r < 40; r++ {
		n := 1 + rng.IntN(12)
		withAttempts := rng.IntN(2) == 0
		elements := make([]enqueueElement, n)
		for i := range elements {
			e := &elements[i]
			e.payload = str(fmt.Sprintf(`{"round": %d, "element": %d}`, r, i))
			switch k := rng.IntN(10); {
			case k < 4: // no key
			case k < 8: // a key of this round, often repeated within it
				e.key = str(fmt.Sprintf("idem-round-secret-%d-%d", r, rng.IntN(3)))
			default:
				e.key = str(fmt.Sprintf("idem-existing-secret-%d", rng.IntN(4)))
			}
			if rng.IntN(3) == 0 {
				v := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(rng.IntN(1e6)) * time.Microsecond)
				e.runAfter = &v
			}
			if withAttempts {
				v := int32(1 + rng.IntN(1000))
				e.maxAttempts = &v
			}
		}
		wantRefused := r%4 == 3
		if wantRefused {
			// A bad element at the end, and in some rounds an earlier one too.
			bad[rng.IntN(len(bad))](&elements[n-1])
			if n > 2 && rng.IntN(2) == 0 {
				bad[rng.IntN(len(bad))](&elements[rng.IntN(n-1)])
			}
			if !withAttempts {
				// A bad attempts element needs the attempts array.
				for i := range elements {
					if elements[i].maxAttempts == nil {
						v := int32(5)
						elements[i].maxAttempts = &v
					}
				}
				withAttempts = true
			}
		}

		before := [2]int{f.queueJobs(t, batchQueue), f.queueJobs(t, singleQueue)}
		singleIDs, singleErr := enqueueOneByOne(t, f, producer, singleQueue, elements, withAttempts)
		batchIDs, batchErr := enqueueBatch(t, f, producer, batchQueue, elements, withAttempts)
		if singleErr != nil {
			refused++
			require.True(t, wantRefused, "round %d: only a round with a bad element is refused: %v", r, singleErr)
			requireSQLState(t, batchErr, "LF003", fmt.Sprintf("round %d: the batch with a bad element", r))
			var pgErr *pgconn.PgError
			require.True(t, errors.As(batchErr, &pgErr))
			require.Equal(t, singleErr.Error(), pgErr.Message,
				"round %d: the batch names the first bad element and enqueue_job's message for it", r)
			require.Equal(t, before, [2]int{f.queueJobs(t, batchQueue), f.queueJobs(t, singleQueue)},
				"round %d: a refused batch writes no job, not even its good elements", r)
			for _, e := range elements {
				if e.key != nil && *e.key != "" {
					require.NotContains(t, pgErr.Message, *e.key, "round %d: the message never holds a key", r)
				}
			}
			continue
		}
		whole++
		require.False(t, wantRefused, "round %d", r)
		require.NoError(t, batchErr, "round %d: every element is good, so the batch is accepted", r)
		require.Len(t, batchIDs, n, "round %d: one id per element", r)
		for i := range elements {
			for j := range elements {
				require.Equal(t, singleIDs[i] == singleIDs[j], batchIDs[i] == batchIDs[j],
					"round %d: elements %d and %d share a job in the batch exactly when they do one by one", r, i, j)
				if !elements[i].existingKey(existing) && !elements[j].existingKey(existing) {
					require.Equal(t, singleIDs[i]-singleIDs[j], batchIDs[i]-batchIDs[j],
						"round %d: the batch draws its ids as the single calls do, one per element in input order", r)
				}
				if i < j && singleIDs[i] == singleIDs[j] {
					repeatsWithin++
				}
			}
			if e := elements[i]; e.key != nil {
				if ids, ok := existing[*e.key]; ok {
					repeatsExisting++
					require.Equal(t, ids[0], batchIDs[i], "round %d: a key already on the queue gives its job's id", r)
					require.Equal(t, ids[1], singleIDs[i])
				}
			}
			require.Equal(t, f.enqueuedJob(t, singleIDs[i]), f.enqueuedJob(t, batchIDs[i]),
				"round %d: element %d's job and payload are as its twin's", r, i)
		}
	}
	require.Positive(t, whole, "the seed gives accepted batches")
	require.Positive(t, refused, "the seed gives refused batches")
	require.Positive(t, repeatsWithin, "the seed repeats keys within batches")
	require.Positive(t, repeatsExisting, "the seed repeats keys already on the queue")
}

// existingKey tells whether e's key is one of the keys already on the queues.
func (e enqueueElement) existingKey(existing map[string][2]int64) bool {
	if e.key == nil {
		return false
	}
	_, ok := existing[*e.key]
	return ok
}

// enqueueArrays gives enqueue_jobs's arrays for elements.
func enqueueArrays(elements []enqueueElement, withAttempts bool) (payloads, keys []*string, runAfters []*time.Time, attempts []*int32) {
	for _, e := range elements {
		payloads = append(payloads, e.payload)
		keys = append(keys, e.key)
		runAfters = append(runAfters, e.runAfter)
		attempts = append(attempts, e.maxAttempts)
	}
	if !withAttempts {
		attempts = nil
	}
	return payloads, keys, runAfters, attempts
}

// enqueueBatch calls enqueue_jobs once in its own transaction.
func enqueueBatch(t *testing.T, f *fixture, conn *pgx.Conn, queue string, elements []enqueueElement,
	withAttempts bool) ([]int64, error) {
	t.Helper()
	payloads, keys, runAfters, attempts := enqueueArrays(elements, withAttempts)
	var attemptsArg any = attempts
	if attempts == nil {
		attemptsArg = nil
	}
	var ids []int64
	err := conn.QueryRow(f.ctx, `SELECT durable_jobs.enqueue_jobs($1, $2::text[]::jsonb[], $3, $4, $5)`,
		queue, payloads, keys, runAfters, attemptsArg).Scan(&ids)
	return ids, err
}

// enqueueOneByOne calls enqueue_job per element in input order in one
// transaction, committed only when every call succeeds; the error of the
// first refused element reads as enqueue_jobs's message would.
func enqueueOneByOne(t *testing.T, f *fixture, conn *pgx.Conn, queue string, elements []enqueueElement,
	withAttempts bool) ([]int64, error) {
	t.Helper()
	tx, err := conn.Begin(f.ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(f.ctx) }()
	ids := make([]int64, len(elements))
	for i, e := range elements {
		attempts := any(int32(5))
		if withAttempts {
			attempts = e.maxAttempts
		}
		err := tx.QueryRow(f.ctx, `SELECT durable_jobs.enqueue_job($1, $2::jsonb, $3, $4, $5)`,
			queue, e.payload, e.key, e.runAfter, attempts).Scan(&ids[i])
		if err != nil {
			var pgErr *pgconn.PgError
			require.True(t, errors.As(err, &pgErr), "enqueue_job: %v", err)
			require.Equal(t, "LF003", pgErr.Code, "enqueue_job refuses a bad element with LF003")
			return nil, fmt.Errorf("job %d of the batch: %s", i+1, pgErr.Message)
		}
	}
	require.NoError(t, tx.Commit(f.ctx))
	return ids, nil
}

// queueJobs counts the jobs and payloads of queue.
func (f *fixture) queueJobs(t *testing.T, queue string) int {
	t.Helper()
	var n int
	require.NoError(t, f.admin.QueryRow(f.ctx, `SELECT count(*) + (SELECT count(*) FROM durable_jobs.job_payload_record p
		JOIN durable_jobs.job_record j USING (job_record_id) WHERE j.queue_name = $1)
		FROM durable_jobs.job_record WHERE queue_name = $1`, queue).Scan(&n))
	return n
}

// enqueuedJob reads a job's row and payload; a run-after that the enqueue
// took from the clock reads as the zero time, having been checked to lie
// between the job's creation and now.
func (f *fixture) enqueuedJob(t *testing.T, jobID int64) enqueuedJob {
	t.Helper()
	var j enqueuedJob
	var fromClock bool
	require.NoError(t, f.admin.QueryRow(f.ctx, `SELECT j.job_status::text, j.attempt_number, j.max_attempts, j.run_after,
			j.idempotency_key_digest, p.job_payload::text,
			j.run_after < timestamptz '2030-01-01 00:00:00+00'
				AND j.run_after BETWEEN j.created_at - interval '1 second' AND clock_timestamp()
		FROM durable_jobs.job_record j JOIN durable_jobs.job_payload_record p USING (job_record_id)
		WHERE j.job_record_id = $1`, jobID).Scan(
		&j.Status, &j.Attempt, &j.MaxAttempts, &j.RunAfter, &j.KeyDigest, &j.Payload, &fromClock))
	if fromClock {
		j.RunAfter = time.Time{}
	}
	return j
}
