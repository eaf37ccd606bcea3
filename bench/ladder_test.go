package bench

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/mightyetl/leasefence/internal/testdb"
)

func TestMain(m *testing.M) { os.Exit(testdb.Run(m)) }

// ladderEnv is a test database with the renewal claims, their copy and the
// ladder's functions, as the function wrapper step makes them, and a
// connection of the worker login.
func ladderEnv(t *testing.T, claims int) (*runner, claimSet, *pgx.Conn) {
	t.Helper()
	ctx := context.Background()
	e := testEnv(t)
	if err := e.setPolicy(ctx, "bench_renew", renewLease, "10 minutes"); err != nil {
		t.Fatal(err)
	}
	set, err := e.claimJobs(ctx, "bench_renew", claims)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.copyRecords(ctx, "bench_raw_renew", "bench_renew"); err != nil {
		t.Fatal(err)
	}
	r := &runner{e: e, renewSet: set}
	owner, err := r.makeRungs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if owner != "durable_job_renewal_owner" {
		t.Fatalf("the rungs are owned by %s, not by renew_job_lease's owner", owner)
	}
	return r, set, workerConn(t, e)
}

// testEnv is the benchmark environment on a test database (a clone of the
// migrated template): its superuser pool and a pool of a worker login.
func testEnv(t *testing.T) *env {
	t.Helper()
	db := testdb.New(t)
	e := &env{dbPools: dbPools{admin: db.Pool(t), worker: db.LoginPool(t, "durable_job_worker")}}
	if err := e.worker.QueryRow(context.Background(), `SELECT session_user`).Scan(&e.workerRole); err != nil {
		t.Fatal(err)
	}
	return e
}

// workerConn is one connection of e's worker login, released when the test
// ends.
func workerConn(t *testing.T, e *env) *pgx.Conn {
	t.Helper()
	c, err := e.worker.Acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Release)
	return c.Conn()
}

// renewWith renews claim i of set with rung fn of the single ladder and
// returns its outcome (renewed for a scalar rung that renewed).
func renewWith(ctx context.Context, c *pgx.Conn, fn string, set claimSet, i int, owner string) (string, error) {
	switch fn {
	case rungPlain, rungDefiner, rungPinned:
		var expiry *time.Time
		err := c.QueryRow(ctx, `SELECT public.`+fn+`($1, $2, $3)`, set.ids[i], set.tokens[i], owner).Scan(&expiry)
		if err == nil && expiry == nil {
			return "stale", nil
		}
		return "renewed", err
	}
	var outcome string
	var expiry *time.Time
	var at time.Time
	err := c.QueryRow(ctx, rungCall(fn), set.ids[i], set.tokens[i], owner).Scan(&outcome, &expiry, &at)
	return outcome, err
}

// batchWith renews set with rung fn of the batch ladder and returns the
// outcomes in order.
func batchWith(ctx context.Context, c *pgx.Conn, fn string, set claimSet) ([]string, error) {
	rows, err := c.Query(ctx, `SELECT renewal_outcome FROM `+rungFunction(fn)+`($1, $2, $3)`, benchOwner, set.ids, set.tokens)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// TestLadderRungsRenew: every rung of both ladders renews the claims the
// bench renews, as the worker login, answering as its ladder says.
func TestLadderRungsRenew(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, set, c := ladderEnv(t, 3)
	for _, g := range renewalLadder.rungs {
		for i := range set.ids {
			outcome, err := renewWith(ctx, c, g.ours, set, i, benchOwner)
			if err != nil || outcome != "renewed" {
				t.Fatalf("%s, claim %d: %s, %v", g.ours, i, outcome, err)
			}
		}
	}
	for _, g := range batchLadder.rungs {
		outcomes, err := batchWith(ctx, c, g.ours, set)
		if err != nil || len(outcomes) != len(set.ids) {
			t.Fatalf("%s: %v, %v", g.ours, outcomes, err)
		}
		for _, o := range outcomes {
			if o != "renewed" {
				t.Fatalf("%s: %v", g.ours, outcomes)
			}
		}
	}
}

// TestLadderRungsTakeOutOnePartEach: the rungs made from the installed
// functions differ from the rung above in the one part the ladder says:
// below the policy rung no policy is read (renewal switched off does not
// stop them), below the copy no input is checked, and below the floor rung
// the floor is not written.
func TestLadderRungsTakeOutOnePartEach(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r, set, c := ladderEnv(t, 2)

	// The input checks: a malformed owner id is LF003 for the copy and the
	// real function, merely stale below them.
	for fn, want := range map[string]string{rungCopy: "LF003", realRenewLease: "LF003", rungPolicy: "stale"} {
		outcome, err := renewWith(ctx, c, fn, set, 0, "Not A Valid Owner!")
		var pgErr *pgconn.PgError
		switch {
		case want == "LF003" && !(errors.As(err, &pgErr) && pgErr.Code == "LF003"):
			t.Errorf("%s with a malformed owner id: %s, %v; want LF003", fn, outcome, err)
		case want != "LF003" && (err != nil || outcome != want):
			t.Errorf("%s with a malformed owner id: %s, %v; want %s", fn, outcome, err, want)
		}
	}

	// The floor: within a sixth of the lease it moves with the floor rung,
	// not with the rung below.
	floorOf := func(i int) time.Time {
		var floor time.Time
		if err := r.e.admin.QueryRow(ctx, `SELECT lease_expiry_floor FROM durable_jobs.job_record WHERE job_record_id = $1`,
			set.ids[i]).Scan(&floor); err != nil {
			t.Fatal(err)
		}
		return floor
	}
	lowerFloor := func(i int) time.Time {
		if _, err := r.e.admin.Exec(ctx, `UPDATE durable_jobs.job_record SET lease_expiry_floor = now() + interval '1 minute'
			WHERE job_record_id = $1`, set.ids[i]); err != nil {
			t.Fatal(err)
		}
		return floorOf(i)
	}
	for fn, moves := range map[string]bool{rungAsWritten: false, rungFloor: true} {
		before := lowerFloor(1)
		if outcome, err := renewWith(ctx, c, fn, set, 1, benchOwner); err != nil || outcome != "renewed" {
			t.Fatalf("%s: %s, %v", fn, outcome, err)
		}
		if after := floorOf(1); after.After(before) != moves {
			t.Errorf("%s: floor %s before, %s after; moved should be %v", fn, before, after, moves)
		}
	}

	// The policy: with renewal switched off the policy rung and everything
	// above it answer renewal_disabled, the rungs below still renew.
	if _, err := r.e.admin.Exec(ctx, `SELECT durable_jobs.set_queue_lease_policy('bench_renew', $1::interval,
		'10 minutes', '7 days', false, 'ladder test')`, renewLease); err != nil {
		t.Fatal(err)
	}
	for fn, want := range map[string]string{rungFloor: "renewed", rungAsWritten: "renewed", rungPolicy: "renewal_disabled",
		rungCopy: "renewal_disabled", realRenewLease: "renewal_disabled"} {
		if outcome, err := renewWith(ctx, c, fn, set, 0, benchOwner); err != nil || outcome != want {
			t.Errorf("%s with renewal switched off: %s, %v; want %s", fn, outcome, err, want)
		}
	}
	for fn, want := range map[string]string{rungBatchFloor: "renewed", rungBatchWritten: "renewed",
		rungBatchPolicy: "renewal_disabled", rungBatchCopy: "renewal_disabled", realRenewLeases: "renewal_disabled"} {
		outcomes, err := batchWith(ctx, c, fn, set)
		if err != nil || len(outcomes) != len(set.ids) || outcomes[0] != want || outcomes[1] != want {
			t.Errorf("%s with renewal switched off: %v, %v; want %s", fn, outcomes, err, want)
		}
	}
}

// TestQuantile: the median of an even count is the mean of the middle two
// (as before quantile), quartiles interpolate, and no values give 0.
func TestQuantile(t *testing.T) {
	for _, c := range []struct {
		xs   []float64
		q    float64
		want float64
	}{
		{[]float64{4, 1, 3, 2}, 0.5, 2.5},
		{[]float64{5, 1, 3}, 0.5, 3},
		{[]float64{1, 2, 3, 4, 5}, 0.25, 2},
		{[]float64{1, 2}, 0.25, 1.25},
		{[]float64{7}, 0.75, 7},
		{nil, 0.5, 0},
	} {
		if got := quantile(c.xs, c.q); got != c.want {
			t.Errorf("quantile(%v, %v) = %v, want %v", c.xs, c.q, got, c.want)
		}
	}
	if median([]float64{4, 1, 3, 2}) != 2.5 {
		t.Error("median of 1 to 4 is not 2.5")
	}
}

// TestPairSkipsIdleRounds: a comparison of two loads of a multi-load run
// takes their totals and the ratio of only the rounds where both did work.
func TestPairSkipsIdleRounds(t *testing.T) {
	m := multiResult{totals: []sideTotals{{units: 10}, {units: 20}, {units: 30}},
		perSec: [][]float64{{100, 50, 25}, {100, 0, 50}, {90, 30, 0}}}
	p := m.pair(0, 1)
	if p.a.units != 10 || p.b.units != 20 || len(p.roundRatios) != 2 || p.roundRatios[0] != 2 || p.roundRatios[1] != 3 {
		t.Errorf("pair(0, 1) = %+v", p)
	}
	if got := m.pair(2, 0).roundRatios; len(got) != 2 || got[0] != 0.25 || got[1] != 0.5 {
		t.Errorf("pair(2, 0) ratios = %v", got)
	}
}

// TestRenewalOnJobRecordLocksNoRowFirst: WAL per renewal is measured per
// rung, and moving from the copy to job_record adds nothing to it. Until
// migration 017, job_record's BEFORE UPDATE row trigger (the generation
// floor of migration 011), which a renewal never fired, made PostgreSQL
// lock each row before updating it: one more WAL record a renewal, 210
// bytes against the copy's 155 (fails on version 16). Not parallel: WAL is
// the whole server's.
func TestRenewalOnJobRecordLocksNoRowFirst(t *testing.T) {
	ctx := context.Background()
	r, set, _ := ladderEnv(t, renewClaims)
	onCopy, err := r.walPerUnit(ctx, renewLoad(r.e, set, rungCall(rungTable), scanOutcome))
	if err != nil {
		t.Fatal(err)
	}
	onJobRecord, err := r.walPerUnit(ctx, renewLoad(r.e, set, rungCall(rungJobRecord), scanOutcome))
	if err != nil {
		t.Fatal(err)
	}
	if onCopy < 100 || onJobRecord > onCopy+20 {
		t.Errorf("WAL a renewal: %.0f bytes on the copy, %.0f on job_record; want no row lock on top", onCopy,
			onJobRecord)
	}
	t.Logf("WAL a renewal: %.0f bytes on the copy, %.0f on job_record", onCopy, onJobRecord)
}
