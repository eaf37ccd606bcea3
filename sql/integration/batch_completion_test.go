package sqlintegration

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/stretchr/testify/require"
)

// batchKind is what a claim of the differential test is made to be.
type batchKind int

const (
	batchFenced     batchKind = iota // a live claim of the caller's owner id and login
	batchWrongToken                  // the right job, a token never issued
	batchOtherOwner                  // claimed by the same login under another owner id
	batchOtherLogin                  // claimed under the same owner id by another login
	batchExpired                     // its 1 s lease ran out by database time
	batchCancelled                   // cancelled by an operator
	batchCompleted                   // already completed
	batchKinds
)

// batchTwin is one claim made twice, the same way: one for complete_jobs,
// one for complete_job.
type batchTwin struct {
	kind          batchKind
	batch, single claim
	result        *string
}

// kindClaims makes claims of every batchKind for the batch-equals-single
// differential tests: one worker login claims as owner (another owner id,
// or another login, where the kind says so), in a queue of one-hour leases,
// or in the fixture's queue of 1 s leases for batchExpired.
type kindClaims struct {
	f                  *fixture
	long, owner        string
	worker, otherLogin *pgx.Conn
	rng                *rand.Rand
}

// newKindClaims gives f a queue of one-hour leases and two worker logins.
func newKindClaims(t *testing.T, f *fixture, owner string) *kindClaims {
	t.Helper()
	long := f.queue + "_long"
	f.setPolicy(t, long, time.Hour, 10*time.Minute, 2*time.Hour, true)
	return &kindClaims{f: f, long: long, owner: owner, worker: f.worker(t), otherLogin: f.worker(t),
		rng: rand.New(rand.NewPCG(2026, 12))}
}

// make enqueues a job and claims it, then makes the claim what kind says.
func (k *kindClaims) make(t *testing.T, kind batchKind) claim {
	t.Helper()
	f := k.f
	queue := k.long
	if kind == batchExpired {
		queue = f.queue
	}
	f2 := *f
	f2.queue = queue
	f2.enqueue(t, `{"n": 1}`)
	conn, claimOwner := k.worker, k.owner
	switch kind {
	case batchOtherOwner:
		claimOwner = "w-other"
	case batchOtherLogin:
		conn = k.otherLogin
	}
	c := mustClaim(t, f.ctx, conn, queue, claimOwner)
	switch kind {
	case batchWrongToken:
		c.Token = pgtype.UUID{Bytes: [16]byte{byte(k.rng.Uint32()), 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, byte(k.rng.Uint32())}, Valid: true}
	case batchCancelled:
		_, err := f.admin.Exec(f.ctx, `SELECT durable_jobs.cancel_job($1)`, c.JobID)
		require.NoError(t, err)
	case batchCompleted:
		require.NoError(t, complete(f.ctx, k.worker, c, k.owner))
	}
	return c
}

// TestBatchCompletionEqualsSingleCompletions is the batch-equals-single
// differential test of complete_jobs: rounds of claims of every kind
// (fenced, wrong token, another owner id, another login, expired,
// cancelled, completed), each made twice, are completed one by one with
// complete_job and in one call with complete_jobs. The batch succeeds
// exactly when every single completion does, raises LF001 and changes
// nothing otherwise, returns one row per claim in input order with the
// claim's generation, and leaves every job row and ledger row as its twin's
// single completion left it.
func TestBatchCompletionEqualsSingleCompletions(t *testing.T) {
	t.Parallel()
	f := setup(t) // f.queue: 1 s leases, for the expired claims
	const owner = "w-batch"
	claims := newKindClaims(t, f, owner)
	worker, rng, make1 := claims.worker, claims.rng, claims.make

	var rounds [][]*batchTwin
	var lastExpiry time.Time
	for r := 0; r < 14; r++ {
		var round []*batchTwin
		for i, n := 0, 1+rng.IntN(6); i < n; i++ {
			kind := batchFenced
			if rng.IntN(10) < 3 {
				kind = batchKind(1 + rng.IntN(int(batchKinds)-1))
			}
			tw := &batchTwin{kind: kind, batch: make1(t, kind), single: make1(t, kind)}
			if rng.IntN(2) == 0 {
				doc := fmt.Sprintf(`{"round": %d, "claim": %d}`, r, i)
				tw.result = &doc
			}
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

	var wholeBatches, refusedBatches int
	for r, round := range rounds {
		// One by one, each in its own transaction, as a worker would.
		allFenced := true
		var fencedTwins []*batchTwin
		for _, tw := range round {
			tx, err := worker.Begin(f.ctx)
			require.NoError(t, err)
			_, err = tx.Exec(f.ctx, `SELECT durable_jobs.complete_job($1, $2, $3, $4::text::jsonb)`,
				tw.single.JobID, tw.single.Token, owner, tw.result)
			if err != nil {
				requireSQLState(t, err, "LF001", fmt.Sprintf("round %d: complete_job of a %d claim", r, tw.kind))
				require.NoError(t, tx.Rollback(f.ctx))
				allFenced = false
				require.NotEqual(t, batchFenced, tw.kind, "round %d: a fenced claim must complete", r)
				continue
			}
			require.NoError(t, tx.Commit(f.ctx))
			require.Equal(t, batchFenced, tw.kind, "round %d: only a fenced claim completes", r)
			fencedTwins = append(fencedTwins, tw)
		}

		// The same claims in one complete_jobs call.
		before := batchRows(t, f, round)
		rows, err := completeBatch(t, f, worker, owner, round, rng.IntN(2) == 0)
		if allFenced {
			wholeBatches++
			require.NoError(t, err, "round %d: every claim is fenced, so the batch completes", r)
			require.Len(t, rows, len(round))
			for i, tw := range round {
				require.Equal(t, batchOutcome{tw.batch.JobID, "SUCCEEDED", tw.batch.Generation}, rows[i],
					"round %d: one row per claim, in input order, with the claim's generation", r)
			}
		} else {
			refusedBatches++
			requireSQLState(t, err, "LF001", fmt.Sprintf("round %d: a stale claim in the batch", r))
			require.Equal(t, before, batchRows(t, f, round), "round %d: a refused batch changes nothing", r)
			if len(fencedTwins) > 0 {
				_, err := completeBatch(t, f, worker, owner, fencedTwins, false)
				require.NoError(t, err, "round %d: the fenced claims alone complete", r)
			}
		}

		// Every job and its ledger as its twin's single completion left them.
		for _, tw := range round {
			require.Equal(t, jobAndLedger(t, f, tw.single.JobID), jobAndLedger(t, f, tw.batch.JobID),
				"round %d: a %d claim ends the same completed alone or in a batch", r, tw.kind)
		}
	}
	require.Positive(t, wholeBatches, "the seed gives rounds whose every claim is fenced")
	require.Positive(t, refusedBatches, "the seed gives rounds with a stale claim")
}

// batchOutcome is one row of complete_jobs.
type batchOutcome struct {
	JobID      int64
	Status     string
	Generation int64
}

// completeBatch calls complete_jobs for the batch claims of twins in one
// transaction, committed when it succeeds; withNullResults passes a NULL
// result array when no twin has a result.
func completeBatch(t *testing.T, f *fixture, conn *pgx.Conn, owner string, twins []*batchTwin,
	withNullResults bool) ([]batchOutcome, error) {
	t.Helper()
	ids := make([]int64, len(twins))
	tokens := make([]pgtype.UUID, len(twins))
	results := make([]*string, len(twins))
	anyResult := false
	for i, tw := range twins {
		ids[i], tokens[i], results[i] = tw.batch.JobID, tw.batch.Token, tw.result
		anyResult = anyResult || tw.result != nil
	}
	var resultArg any = results
	if !anyResult && withNullResults {
		resultArg = nil
	}
	tx, err := conn.Begin(f.ctx)
	require.NoError(t, err)
	rows, err := tx.Query(f.ctx, `SELECT job_record_id, job_status, lease_fencing_generation
		FROM durable_jobs.complete_jobs($1, $2, $3, $4::text[]::jsonb[])`, owner, ids, tokens, resultArg)
	var out []batchOutcome
	if err == nil {
		out, err = pgx.CollectRows(rows, pgx.RowToStructByPos[batchOutcome])
	}
	if err != nil {
		require.NoError(t, tx.Rollback(f.ctx))
		var pgErr interface{ SQLState() string }
		require.True(t, errors.As(err, &pgErr), "complete_jobs: %v", err)
		return nil, err
	}
	require.NoError(t, tx.Commit(f.ctx))
	return out, nil
}

// jobState is what a completion leaves of a job: its row (lease state) and
// its ledger rows, without the job id.
type jobState struct {
	Status       string
	Attempt      int32
	Generation   int64
	HasExpiry    bool
	RenewalCount int64
	Failure      *string
	Ledger       string
}

func jobAndLedger(t *testing.T, f *fixture, jobID int64) jobState {
	t.Helper()
	var s jobState
	require.NoError(t, f.admin.QueryRow(f.ctx, `SELECT j.job_status::text, j.attempt_number, j.lease_fencing_generation,
			j.lease_expires_at IS NOT NULL, j.lease_renewal_count, j.failure_reason_code,
			COALESCE((SELECT string_agg(l.outcome_status::text || ' ' || l.lease_fencing_generation || ' ' ||
			                            COALESCE(l.result_document::text, 'NULL'), '; ' ORDER BY l.lease_fencing_generation)
			          FROM durable_jobs.job_outcome_ledger l WHERE l.job_record_id = j.job_record_id), '')
		FROM durable_jobs.job_record j WHERE j.job_record_id = $1`, jobID).Scan(
		&s.Status, &s.Attempt, &s.Generation, &s.HasExpiry, &s.RenewalCount, &s.Failure, &s.Ledger))
	return s
}

// batchRows is the state of every batch-side job of twins.
func batchRows(t *testing.T, f *fixture, twins []*batchTwin) []jobState {
	t.Helper()
	out := make([]jobState, len(twins))
	for i, tw := range twins {
		out[i] = jobAndLedger(t, f, tw.batch.JobID)
	}
	return out
}

// A batch completion that waits for a renewal of one of its claims
// completes every claim once the renewal commits. The renewal writes a new
// version of the row, at a new tuple id; complete_jobs' lock pass locks that
// version and returns its tuple id, by which alone (since migration 030)
// its UPDATE finds the row: a stale tuple id would leave the job RUNNING
// and the batch one row short, with no error.
func TestBatchCompletionAfterWaitingForARenewalCompletesEveryClaim(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.setPolicy(t, f.queue, time.Hour, 20*time.Minute, 2*time.Hour, true)
	url := f.workerURL(t)
	renewer, completer := f.connect(t, url), f.connect(t, url)
	const owner = "batch-after-renewal"
	f.enqueue(t, `{}`)
	f.enqueue(t, `{}`)
	first := mustClaim(t, f.ctx, completer, f.queue, owner)
	second := mustClaim(t, f.ctx, completer, f.queue, owner)
	tx, err := renewer.Begin(f.ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(f.ctx) }()
	mustRenew(t, f.ctx, tx, second.JobID, second.Token, owner, "renewed", "the renewal the batch waits for")

	type answer struct {
		statuses map[int64]string
		err      error
	}
	done := make(chan answer, 1)
	go func() {
		rows, err := completer.Query(f.ctx, `SELECT job_record_id, job_status FROM durable_jobs.complete_jobs($1, $2, $3)`,
			owner, []int64{first.JobID, second.JobID}, []pgtype.UUID{first.Token, second.Token})
		if err != nil {
			done <- answer{err: err}
			return
		}
		statuses := map[int64]string{}
		for rows.Next() {
			var id int64
			var status string
			if err := rows.Scan(&id, &status); err != nil {
				rows.Close()
				done <- answer{err: err}
				return
			}
			statuses[id] = status
		}
		done <- answer{statuses, rows.Err()}
	}()
	f.waitBlockedBy(t, pid(completer), pid(renewer))
	require.NoError(t, tx.Commit(f.ctx))
	got := <-done
	require.NoError(t, got.err, "complete_jobs after the renewal committed")
	require.Equal(t, map[int64]string{first.JobID: "SUCCEEDED", second.JobID: "SUCCEEDED"}, got.statuses)
	for _, c := range []claim{first, second} {
		require.Equal(t, "SUCCEEDED", f.state(t, c.JobID).Status, "job %d", c.JobID)
	}
}
