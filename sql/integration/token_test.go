package sqlintegration

import (
	"crypto/rand"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgtype"
	"github.com/stretchr/testify/require"
)

// A stolen, foreign, guessed or replayed claim value
// cannot extend another owner's claim, another job's claim or a successor
// claim, from any session or login role. Every such renewal is stale, every
// such terminal write is LF001, and the victim's lease does not move.
func TestStolenForeignOrReplayedTokenCannotExtendAnotherClaim(t *testing.T) {
	t.Parallel()
	f := setup(t)
	// A 3 s lease: the many attempts below all run inside B's first lease.
	f.setPolicy(t, f.queue, 3*time.Second, time.Second, testMaxClaimLife, true)
	jobA := f.enqueue(t, `{"extract": "a"}`)
	jobB := f.enqueue(t, `{"extract": "b"}`)
	urlA, urlB := f.workerURL(t), f.workerURL(t)
	sessionA, sessionB := f.connect(t, urlA), f.connect(t, urlB)
	thief := f.worker(t) // a third, compromised worker login role

	claimA := mustClaim(t, f.ctx, sessionA, f.queue, "worker-a")
	claimB := mustClaim(t, f.ctx, sessionB, f.queue, "worker-b")
	require.Equal(t, []int64{jobA, jobB}, []int64{claimA.JobID, claimB.JobID})
	victim := f.state(t, jobB)

	forged := func(jobID int64, token pgtype.UUID) claim { return claim{JobID: jobID, Token: token} }
	var guessed pgtype.UUID
	_, err := rand.Read(guessed.Bytes[:])
	require.NoError(t, err)
	guessed.Valid = true

	attempts := []struct {
		why   string
		on    string // which session presents it
		claim claim
		owner string
	}{
		{"job A's token presented for job B by A", "a", forged(jobB, claimA.Token), "worker-a"},
		{"job A's token presented for job B with B's owner id", "a", forged(jobB, claimA.Token), "worker-b"},
		{"job A's token presented for job B from B's own session", "b", forged(jobB, claimA.Token), "worker-b"},
		{"B's token with another owner id", "b", claimB, "worker-a"},
		{"B's token and owner id from A's login role", "a", claimB, "worker-b"},
		{"B's token and owner id stolen by a third login role", "thief", claimB, "worker-b"},
		{"a guessed token for job B", "thief", forged(jobB, guessed), "worker-b"},
		{"B's token for a job that does not exist", "b", forged(jobB+1000, claimB.Token), "worker-b"},
		{"B's token for job id 0", "b", forged(0, claimB.Token), "worker-b"},
		{"B's token for a negative job id", "b", forged(-1, claimB.Token), "worker-b"},
	}
	sessions := map[string]querier{"a": sessionA, "b": sessionB, "thief": thief}
	for _, a := range attempts {
		q := sessions[a.on]
		mustRenew(t, f.ctx, q, a.claim.JobID, a.claim.Token, a.owner, "stale", a.why+": renewal is stale")
		if a.claim.JobID == jobB {
			requireAllTerminalWritesStale(t, f.ctx, q, a.claim, a.owner, a.why)
			released, err := release(f.ctx, q, a.claim, a.owner)
			require.NoError(t, err)
			require.False(t, released, a.why+": release is refused")
		}
	}
	// The batch form decides each claim by the same predicate.
	rows, err := sessionA.Query(f.ctx,
		"SELECT job_record_id, renewal_outcome FROM durable_jobs.renew_job_leases($1, $2, $3)",
		"worker-a", []int64{jobA, jobB}, []pgtype.UUID{claimA.Token, claimB.Token})
	require.NoError(t, err)
	outcomes := map[int64]string{}
	for rows.Next() {
		var id int64
		var outcome string
		require.NoError(t, rows.Scan(&id, &outcome))
		outcomes[id] = outcome
	}
	require.NoError(t, rows.Err())
	require.Equal(t, map[int64]string{jobA: "renewed", jobB: "stale"}, outcomes,
		"a batch renews A's own claim and refuses B's token smuggled in beside it")

	after := f.state(t, jobB)
	require.Equal(t, "RUNNING", after.Status, "B's job is still running")
	require.True(t, victim.ExpiresAt.Equal(*after.ExpiresAt), "no foreign value moved B's expiry")
	require.Equal(t, int64(0), after.RenewalCount, "no foreign value renewed B's claim")
	mustRenew(t, f.ctx, sessionB, jobB, claimB.Token, "worker-b", "renewed", "B's own claim still renews from B's login role")

	// Replay after reclaim: A's exact renewal call, repeated after A's lease
	// expired and another worker reclaimed the job, is stale and does not
	// extend the successor.
	requireAllTerminalWritesStale(t, f.ctx, thief, claimA, "worker-a", "A's claim replayed from another login role")
	a := f.state(t, jobA)
	f.waitDatabaseTimePast(t, *a.ExpiresAt)
	successor := mustClaim(t, f.ctx, thief, f.queue, "worker-c")
	require.Equal(t, jobA, successor.JobID, "the expired job A is reclaimed")
	require.Equal(t, int64(2), successor.Generation)
	for _, q := range []querier{sessionA, thief} {
		mustRenew(t, f.ctx, q, jobA, claimA.Token, "worker-a", "stale", "A's renewal replayed after the reclaim is stale")
		mustRenew(t, f.ctx, q, jobA, claimA.Token, "worker-c", "stale", "A's token with the successor's owner id is stale")
	}
	requireAllTerminalWritesStale(t, f.ctx, sessionA, claimA, "worker-a", "A's replayed claim after the reclaim")
	s := f.state(t, jobA)
	require.True(t, successor.ExpiresAt.Equal(*s.ExpiresAt), "the replays did not move the successor's expiry")
	require.Equal(t, int64(0), s.RenewalCount)
	mustRenew(t, f.ctx, thief, jobA, successor.Token, "worker-c", "renewed", "only the successor's token renews")
}
