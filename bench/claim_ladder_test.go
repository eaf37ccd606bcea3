package bench

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// claimLadderEnv is a test database with the bare-claim table, two due
// jobs in each claim rung's queue (and the bare claim's) and the claim
// ladder's functions, as the claim ladder step makes them, and a
// connection of the worker login.
func claimLadderEnv(t *testing.T) (*runner, *pgx.Conn) {
	t.Helper()
	ctx := context.Background()
	e := testEnv(t)
	if err := e.createRawClaimTable(ctx); err != nil {
		t.Fatal(err)
	}
	for i := 0; i <= len(claimLadder.rungs); i++ {
		q := claimLadderQueue(i)
		if err := e.setPolicy(ctx, q, claimLadderLease, claimLadderRenewal); err != nil {
			t.Fatal(err)
		}
		if err := e.addDueJobs(ctx, []string{q}, 2); err != nil {
			t.Fatal(err)
		}
	}
	r := &runner{e: e}
	if err := r.claimRungs(ctx); err != nil {
		t.Fatal(err)
	}
	return r, workerConn(t, e)
}

// claimRow is what a claim rung returns that the tests look at.
type claimRow struct {
	id      int64
	token   [16]byte
	expires time.Time
	at      time.Time
}

// claimWith claims one job of queue with rung fn as owner.
func claimWith(ctx context.Context, c *pgx.Conn, fn, queue, owner string) (claimRow, error) {
	var row claimRow
	sql := `SELECT job_record_id, lease_claim_token, lease_expires_at, database_time FROM ` + rungFunction(fn) + `($1, $2, 1)`
	if fn == realClaimNextJob {
		sql = `SELECT job_record_id, lease_claim_token, lease_expires_at, database_time FROM ` + fn + `($1, $2)`
	}
	err := c.QueryRow(ctx, sql, queue, owner).Scan(&row.id, &row.token, &row.expires, &row.at)
	return row, err
}

// TestClaimLadderRungsClaim: every load of the claim ladder claims a job,
// and every rung on job_record makes a claim renew_job_lease renews, so
// each writes a claim the contract's functions accept.
func TestClaimLadderRungsClaim(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r, c := claimLadderEnv(t)
	if n, err := claimLoad(r.e, claimLadderQueue(0), rawClaimSQL).op(ctx, c, 0, 0); err != nil || n != 1 {
		t.Fatalf("the bare claim: %d, %v", n, err)
	}
	for k, g := range claimLadder.rungs {
		queue := claimLadderQueue(k + 1)
		row, err := claimWith(ctx, c, g.ours, queue, benchOwner)
		if err != nil {
			t.Fatalf("%s: %v", g.ours, err)
		}
		if k == 0 { // the bare claim's table, not job_record
			continue
		}
		var outcome string
		if err := c.QueryRow(ctx, `SELECT renewal_outcome FROM durable_jobs.renew_job_lease($1, $2, $3)`,
			row.id, row.token, benchOwner).Scan(&outcome); err != nil || outcome != "renewed" {
			t.Fatalf("%s: its claim of job %d renews %q, %v", g.ours, row.id, outcome, err)
		}
	}
}

// TestClaimLadderRungsTakeOutOnePartEach: the rungs made from the
// installed claim_next_jobs differ from the rung above in the one part the
// ladder says: the rung below the policy rung writes the ladder's lease
// whatever the queue's policy, the policy rung the policy's; the copy
// refuses a malformed owner id (LF003) and the rung below does not check
// it.
func TestClaimLadderRungsTakeOutOnePartEach(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r, c := claimLadderEnv(t)
	for _, k := range []int{3, 4} {
		if err := r.e.setPolicy(ctx, claimLadderQueue(k), "2 hours", "10 minutes"); err != nil {
			t.Fatal(err)
		}
	}
	lease := func(fn string, k int) time.Duration {
		row, err := claimWith(ctx, c, fn, claimLadderQueue(k), benchOwner)
		if err != nil {
			t.Fatalf("%s: %v", fn, err)
		}
		return row.expires.Sub(row.at)
	}
	if got := lease(rungClaimWritten, 3); got != time.Hour {
		t.Errorf("the rung below the policy read gave a %v lease, want the ladder's 1h whatever the policy", got)
	}
	if got := lease(rungClaimPolicy, 4); got != 2*time.Hour {
		t.Errorf("the policy rung gave a %v lease, want the queue's policy of 2h", got)
	}
	const bad = "-not an owner id"
	if _, err := claimWith(ctx, c, rungClaimPolicy, claimLadderQueue(4), bad); err != nil {
		t.Errorf("the rung below the copy checked the owner id: %v", err)
	}
	var pgErr *pgconn.PgError
	if _, err := claimWith(ctx, c, rungClaimCopy, claimLadderQueue(5), bad); !errors.As(err, &pgErr) || pgErr.Code != "LF003" {
		t.Errorf("the copy accepted a malformed owner id: %v", err)
	}
}
