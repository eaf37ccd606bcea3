package bench

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	sqlbundle "github.com/mightyetl/leasefence/sql"
)

// finishedRows answers issue 11's "cost as the work grows": renewal, claim
// and completion with Config.FinishedLevels finished (SUCCEEDED) job rows
// in job_record, each against the same operation on a database of the same
// cluster that has none, interleaved in this run. Both databases are at
// the newest version and hold the same live claims and due jobs; only the
// finished rows (in the measured queue, added with one INSERT ... SELECT
// per level, cumulatively) differ. A ratio below 1.00 is what the finished
// rows cost.
func (r *runner) finishedRows(ctx context.Context) error {
	const queue = "bench_finished"
	newest := sqlbundle.NewestVersion()
	var dbs [2]*dbPools // none, grown
	var renewSets [2]claimSet
	setup := time.Now()
	for i, name := range []string{"lf_finished_none", "lf_finished_grown"} {
		d, err := r.e.bundleDB(ctx, name, newest)
		if err != nil {
			return err
		}
		dbs[i] = d
	}
	// Each database is filled by its own sessions, the two at once (here
	// and at each level below), in the same order as one after the other.
	if err := parallel(func() error { return renewFixtureOf(ctx, dbs[0], queue, &renewSets[0]) },
		func() error { return renewFixtureOf(ctx, dbs[1], queue, &renewSets[1]) }); err != nil {
		return err
	}
	r.setupDone("databases and renewal claims", setup)
	// Each comparison runs half a case time, so the step stays short.
	saved := r.cfg.CaseTime
	r.cfg.CaseTime = saved / 2
	defer func() { r.cfg.CaseTime = saved }()
	due := r.dueJobsPerSide(0.5)
	completions := int((saved.Seconds()/4+r.cfg.Warmup.Seconds())*float64(r.cfg.CompleteRate)) + 1000
	finished := 0
	for _, level := range r.cfg.FinishedLevels {
		var completeSets [2]claimSet
		prepare := func(i int) error {
			d := dbs[i]
			if err := d.insertDueJobs(ctx, queue, due+completions); err != nil {
				return err
			}
			var err error
			if completeSets[i], err = d.claimDue(ctx, queue, completions); err != nil {
				return err
			}
			_, err = d.admin.Exec(ctx, `VACUUM ANALYZE durable_jobs.job_record`)
			return err
		}
		setup := time.Now()
		var grown time.Duration
		if err := parallel(func() error { return prepare(0) }, func() error {
			if err := dbs[1].addFinishedJobs(ctx, queue, level-finished); err != nil {
				return err
			}
			grown = time.Since(setup)
			return prepare(1)
		}); err != nil {
			return err
		}
		r.setupDone(fmt.Sprintf("%d finished rows added in %s; with the due jobs, claims and VACUUM ANALYZE of both databases, all",
			level-finished, grown.Round(10*time.Millisecond)), setup)
		finished = level
		for _, c := range []struct {
			fn, unit   string
			ours, base load
		}{
			{"renew_job_lease", "renewal", renewOne(dbs[1], renewSets[1]), renewOne(dbs[0], renewSets[0])},
			{"claim_next_job", "claim", claimOne(dbs[1], queue), claimOne(dbs[0], queue)},
			{"complete_job", "job", completeOne(dbs[1], completeSets[1]), completeOne(dbs[0], completeSets[0])},
		} {
			if err := r.compare(ctx, Comparison{Group: "finished", Name: fmt.Sprintf("%s, %d finished rows", c.fn, level),
				Ours:     fmt.Sprintf("%s with %d finished rows in job_record", c.fn, level),
				Baseline: c.fn + " with none", Unit: c.unit}, c.ours, c.base); err != nil {
				return err
			}
		}
	}
	return nil
}

// renewFixtureOf gives queue of d its own policy (lease 1 hour) and
// renewClaims claims in *set.
func renewFixtureOf(ctx context.Context, d *dbPools, queue string, set *claimSet) error {
	if err := d.setPolicy(ctx, queue, "1 hour", "10 minutes"); err != nil {
		return err
	}
	var err error
	*set, err = d.claimJobs(ctx, queue, renewClaims)
	return err
}

// completeOne is a completion load of d: one client completing the claims
// of set in order with complete_job, one claim per call.
func completeOne(d *dbPools, set claimSet) load {
	return load{pool: d.worker, clients: 1, op: func(ctx context.Context, c *pgx.Conn, _, iter int) (int, error) {
		if iter >= len(set.ids) {
			return 0, errors.New("complete_job ran out of claims: raise Config.CompleteRate")
		}
		_, err := c.Exec(ctx, `SELECT durable_jobs.complete_job($1, $2, $3)`, set.ids[iter], set.tokens[iter], benchOwner)
		return 1, err
	}}
}

// addFinishedJobs adds n SUCCEEDED jobs to queue with one COPY as
// superuser: the job rows a completed claim leaves (lease columns kept,
// no expiry), finished half an hour ago, the claim digest of row g
// sha256(int8send(g)), made when the COPY begins (created_at, which an
// INSERT would take from the clock row by row, is that moment too, so no
// column has a volatile default left and PostgreSQL writes the rows a page
// at a time: 900,000 rows in 4.2 s against 6.6 s with INSERT ... SELECT
// generate_series, the same table and index sizes, 282 MB of WAL against
// 321).
func (e *dbPools) addFinishedJobs(ctx context.Context, queue string, n int) error {
	var now time.Time
	if err := e.admin.QueryRow(ctx, `SELECT now()`).Scan(&now); err != nil {
		return err
	}
	cols := []string{"queue_name", "job_status", "run_after", "max_attempts", "attempt_number", "lease_claim_digest",
		"lease_owner_id", "lease_claimed_by_role", "lease_claimed_at", "lease_claim_deadline", "lease_fencing_generation",
		"status_changed_at", "created_at"}
	hourAgo, deadline, changed := now.Add(-time.Hour), now.Add(24*time.Hour), now.Add(-30*time.Minute)
	g := 0
	var key [8]byte
	rows := pgx.CopyFromFunc(func() ([]any, error) {
		if g == n {
			return nil, nil
		}
		g++
		binary.BigEndian.PutUint64(key[:], uint64(g)) // int8send(g)
		digest := sha256.Sum256(key[:])
		return []any{queue, "SUCCEEDED", hourAgo, int32(5), int32(1), digest[:], "bench-finished-worker",
			"bench_finished_role", hourAgo, deadline, int64(1), changed, now}, nil
	})
	if _, err := e.admin.CopyFrom(ctx, pgx.Identifier{"durable_jobs", "job_record"}, cols, rows); err != nil {
		return fmt.Errorf("finished jobs: %w", err)
	}
	return nil
}
