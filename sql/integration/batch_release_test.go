package sqlintegration

import (
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/stretchr/testify/require"
)

// releaseRow is one row of release_job_claims.
type releaseRow struct {
	JobID    int64
	Released bool
}

// releaseBatch calls release_job_claims for claims, as owner, in q's
// implicit transaction.
func releaseBatch(t *testing.T, f *fixture, q querier, owner string, claims ...claim) ([]releaseRow, error) {
	t.Helper()
	ids := make([]int64, len(claims))
	tokens := make([]pgtype.UUID, len(claims))
	for i, c := range claims {
		ids[i], tokens[i] = c.JobID, c.Token
	}
	rows, err := q.Query(f.ctx, `SELECT job_record_id, released FROM durable_jobs.release_job_claims($1, $2, $3)`,
		owner, ids, tokens)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowToStructByPos[releaseRow])
}

// staleReleases is every queue's stale_release count (lease_outcome_totals
// of the last hour), '*' included.
func (f *fixture) staleReleases(t *testing.T) map[string]int64 {
	t.Helper()
	rows, err := f.admin.Query(f.ctx, `SELECT queue_name, sum(outcome_count)::bigint
		FROM durable_jobs.lease_outcome_totals(clock_timestamp() - interval '1 hour')
		WHERE outcome_kind = 'stale_release' GROUP BY queue_name`)
	require.NoError(t, err)
	out := map[string]int64{}
	for rows.Next() {
		var q string
		var n int64
		require.NoError(t, rows.Scan(&q, &n))
		out[q] = n
	}
	require.NoError(t, rows.Err())
	return out
}

// countsSince is after minus before, per queue, without the zeros.
func countsSince(before, after map[string]int64) map[string]int64 {
	out := map[string]int64{}
	for q, n := range after {
		if d := n - before[q]; d != 0 {
			out[q] = d
		}
	}
	return out
}

// TestBatchReleaseEqualsSingleReleases is the batch-equals-single
// differential test of release_job_claims: rounds of claims of every kind
// (fenced, wrong token, another owner id, another login, expired,
// cancelled, completed), each made twice, are released one by one with
// release_job_claim and in one call with release_job_claims. Each claim of
// the batch answers what its twin's single release answered, in input
// order; every job row ends as its twin's; and the batch counts the same
// stale releases under the same queues as the singles.
func TestBatchReleaseEqualsSingleReleases(t *testing.T) {
	t.Parallel()
	f := setup(t) // f.queue: 1 s leases, for the expired claims
	const owner = "w-release"
	claims := newKindClaims(t, f, owner)
	worker, rng := claims.worker, claims.rng

	var rounds [][]*batchTwin
	var lastExpiry time.Time
	for r := 0; r < 10; r++ {
		var round []*batchTwin
		for i, n := 0, 1+rng.IntN(6); i < n; i++ {
			kind := batchFenced
			if rng.IntN(10) < 4 {
				kind = batchKind(1 + rng.IntN(int(batchKinds)-1))
			}
			tw := &batchTwin{kind: kind, batch: claims.make(t, kind), single: claims.make(t, kind)}
			if kind == batchExpired {
				lastExpiry = tw.single.ExpiresAt
			}
			round = append(round, tw)
		}
		rounds = append(rounds, round)
	}
	if !lastExpiry.IsZero() {
		f.waitDatabaseTimePast(t, lastExpiry)
	}

	var released, stale int
	for r, round := range rounds {
		// One by one, as a worker releasing a claim at a time.
		before := f.staleReleases(t)
		singles := make([]bool, len(round))
		for i, tw := range round {
			ok, err := release(f.ctx, worker, tw.single, owner)
			require.NoError(t, err, "round %d: release_job_claim", r)
			require.Equal(t, tw.kind == batchFenced, ok, "round %d: only a fenced claim is released", r)
			singles[i] = ok
		}
		singleCounts := countsSince(before, f.staleReleases(t))

		// The same claims in one release_job_claims call.
		before = f.staleReleases(t)
		batch := make([]claim, len(round))
		for i, tw := range round {
			batch[i] = tw.batch
		}
		rows, err := releaseBatch(t, f, worker, owner, batch...)
		require.NoError(t, err, "round %d: release_job_claims", r)
		require.Len(t, rows, len(round), "round %d: one row per claim in", r)
		for i, tw := range round {
			require.Equal(t, releaseRow{tw.batch.JobID, singles[i]}, rows[i],
				"round %d: claim %d (kind %d) answers as its twin released alone, in input order", r, i, tw.kind)
			if singles[i] {
				released++
			} else {
				stale++
			}
		}
		require.Equal(t, singleCounts, countsSince(before, f.staleReleases(t)),
			"round %d: the batch counts the stale releases the singles counted, under the same queues", r)

		for _, tw := range round {
			require.Equal(t, jobAndLedger(t, f, tw.single.JobID), jobAndLedger(t, f, tw.batch.JobID),
				"round %d: a %d claim ends the same released alone or in a batch", r, tw.kind)
		}
	}
	require.Positive(t, released, "the seed gives fenced claims")
	require.Positive(t, stale, "the seed gives stale claims")
}

// A release waits for a row another transaction holds locked and then
// decides on the row as that transaction left it, as release_job_claim
// does; the other claims of the batch are released as usual. Two sessions:
// an operator's cancel_job holds job 1's row; the worker's batch of jobs 1
// and 2 waits on it (pg_blocking_pids); the cancel commits; the batch
// answers job 1 false (cancelled, counted as a stale release) and releases
// job 2.
func TestBatchReleaseWaitsForALockedRowThenDecides(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.setPolicy(t, f.queue, time.Hour, 10*time.Minute, 2*time.Hour, true)
	worker := f.worker(t)
	producer := f.producer(t)
	const owner = "w-release-lock"
	f.enqueue(t, `{"n": 1}`)
	f.enqueue(t, `{"n": 2}`)
	j1 := mustClaim(t, f.ctx, worker, f.queue, owner)
	j2 := mustClaim(t, f.ctx, worker, f.queue, owner)

	tx, err := producer.Begin(f.ctx)
	require.NoError(t, err)
	var cancelled bool
	require.NoError(t, tx.QueryRow(f.ctx, "SELECT durable_jobs.cancel_job($1)", j1.JobID).Scan(&cancelled))
	require.True(t, cancelled)

	type answer struct {
		rows []releaseRow
		err  error
	}
	done := make(chan answer, 1)
	go func() {
		rows, err := releaseBatch(t, f, worker, owner, j1, j2)
		done <- answer{rows, err}
	}()
	f.waitBlockedBy(t, pid(worker), pid(producer))
	require.Equal(t, "RUNNING", f.state(t, j2.JobID).Status, "nothing is released while the batch waits")
	require.NoError(t, tx.Commit(f.ctx))
	got := <-done
	require.NoError(t, got.err)
	require.Equal(t, []releaseRow{{j1.JobID, false}, {j2.JobID, true}}, got.rows,
		"the cancelled claim is stale once the cancel commits; the other is released")
	require.Equal(t, "CANCELLED", f.state(t, j1.JobID).Status)
	require.Equal(t, "QUEUED", f.state(t, j2.JobID).Status)
	require.Equal(t, int64(1), f.outcomeTotal(t, f.queue, "stale_release"), "the stale release is counted under its queue")
	require.Equal(t, j2.JobID, mustClaim(t, f.ctx, worker, f.queue, owner).JobID, "the released job is claimable at once")
}
