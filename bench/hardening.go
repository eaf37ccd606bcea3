package bench

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	sqlbundle "github.com/mightyetl/leasefence/sql"
)

// firstRelease and hardenedRelease are the bundle versions the hardening
// comparison measures: 2 is the first release (migration 002's
// functions); 6 has the security hardening of migrations 003 and 004 (the
// READ COMMITTED check, per-backend tallies, input checks, absolute
// durations, the collation refusal) and nothing of migration 008.
const (
	firstRelease    = 2
	hardenedRelease = 6
)

// hardening answers "a security fix can cost throughput: say how much":
// the same renewal, batch renewal and claim against databases of the same
// cluster at version 2, version 6 and the newest version, interleaved in
// this run. Ratios are the newer version's throughput over version 2's.
func (r *runner) hardening(ctx context.Context) error {
	newest := sqlbundle.NewestVersion()
	setup := time.Now()
	dbs := map[int32]*dbPools{newest: &r.e.dbPools}
	for _, v := range []int32{firstRelease, hardenedRelease} {
		d, err := r.e.versionDB(ctx, v)
		if err != nil {
			return err
		}
		dbs[v] = d
	}
	r.setupDone("version databases", setup)
	setup = time.Now()
	const queue = "bench_hardening"
	claims := map[int32]claimSet{}
	due := 2 * r.dueJobsPerSide(1) // version 2 is the baseline of two comparisons
	// The three databases are filled at once, each by its own sessions.
	versions := []int32{firstRelease, hardenedRelease, newest}
	sets := make([]claimSet, len(versions))
	fill := make([]func() error, len(versions))
	for i, v := range versions {
		d := dbs[v]
		fill[i] = func() error {
			if err := d.setPolicy(ctx, queue, "1 hour", "10 minutes"); err != nil {
				return fmt.Errorf("version %d: %w", v, err)
			}
			set, err := d.claimJobs(ctx, queue, renewClaims)
			if err != nil {
				return fmt.Errorf("version %d: %w", v, err)
			}
			sets[i] = set
			if err := d.insertDueJobs(ctx, queue, due); err != nil {
				return fmt.Errorf("version %d: %w", v, err)
			}
			return d.analyze(ctx)
		}
	}
	if err := parallel(fill...); err != nil {
		return err
	}
	for i, v := range versions {
		claims[v] = sets[i]
	}
	r.setupDone("claims and due jobs", setup)
	renewBatch := func(d *dbPools, set claimSet) load {
		return load{pool: d.worker, clients: 1, op: func(ctx context.Context, c *pgx.Conn, _, iter int) (int, error) {
			lo := (iter % (renewClaims / batchSize)) * batchSize
			return renewSlice(ctx, c, set, lo)
		}}
	}
	for _, v := range []int32{hardenedRelease, newest} {
		label := fmt.Sprintf("version %d against version %d", v, firstRelease)
		for _, c := range []struct {
			fn, unit   string
			ours, base load
		}{
			{"renew_job_lease", "renewal", renewOne(dbs[v], claims[v]), renewOne(dbs[firstRelease], claims[firstRelease])},
			{"renew_job_leases (batch of 100)", "claim", renewBatch(dbs[v], claims[v]),
				renewBatch(dbs[firstRelease], claims[firstRelease])},
			{"claim_next_job", "claim", claimOne(dbs[v], queue), claimOne(dbs[firstRelease], queue)},
		} {
			if err := r.compare(ctx, Comparison{Group: "hardening", Name: c.fn + ", " + label,
				Ours: fmt.Sprintf("%s of version %d", c.fn, v), Baseline: fmt.Sprintf("%s of version %d", c.fn, firstRelease),
				Unit: c.unit}, c.ours, c.base); err != nil {
				return err
			}
		}
	}
	return nil
}

// renewOne is a renewal load of d: one client renewing the claims of set
// in turn with renew_job_lease, each required renewed.
func renewOne(d *dbPools, set claimSet) load {
	return load{pool: d.worker, clients: 1, op: func(ctx context.Context, c *pgx.Conn, _, iter int) (int, error) {
		return renewClaim(ctx, c, set, iter%len(set.ids))
	}}
}

// sqlRenewOne renews one claim; renewClaim runs it, and so does the
// renew_job_lease phase of profile (hot.go).
const sqlRenewOne = `SELECT renewal_outcome FROM durable_jobs.renew_job_lease($1, $2, $3)`

// renewClaim renews claim i of set with renew_job_lease and requires it
// renewed.
func renewClaim(ctx context.Context, c *pgx.Conn, set claimSet, i int) (int, error) {
	var outcome string
	if err := c.QueryRow(ctx, sqlRenewOne, set.ids[i], set.tokens[i], benchOwner).Scan(&outcome); err != nil {
		return 0, err
	}
	if outcome != "renewed" {
		return 0, fmt.Errorf("renewal of job %d: %s", set.ids[i], outcome)
	}
	return 1, nil
}

// sqlClaimOne claims the next due job of a queue; claimOne runs it, and so
// does the claim_next_job phase of profile (hot.go).
const sqlClaimOne = `SELECT job_record_id FROM durable_jobs.claim_next_job($1, $2)`

// claimOne is a claim load of d: one client claiming the next due job of
// queue with claim_next_job.
func claimOne(d *dbPools, queue string) load {
	return load{pool: d.worker, clients: 1, op: func(ctx context.Context, c *pgx.Conn, _, _ int) (int, error) {
		var id int64
		err := c.QueryRow(ctx, sqlClaimOne, queue, benchOwner).Scan(&id)
		if errors.Is(err, pgx.ErrNoRows) {
			err = fmt.Errorf("claim_next_job found no due job in %s: raise Config.ClaimRate", queue)
		}
		return 1, err
	}}
}

// sqlRenewBatch renews a batch of claims; renewSlice runs it, and so do
// hotShare and the renew_job_leases phase of profile (hot.go).
const sqlRenewBatch = `SELECT renewal_outcome FROM durable_jobs.renew_job_leases($1, $2, $3)`

// renewSlice renews the batch of batchSize claims of set from lo with one
// renew_job_leases call and requires every one renewed.
func renewSlice(ctx context.Context, c *pgx.Conn, set claimSet, lo int) (int, error) {
	rows, err := c.Query(ctx, sqlRenewBatch,
		benchOwner, set.ids[lo:lo+batchSize], set.tokens[lo:lo+batchSize])
	if err != nil {
		return 0, err
	}
	outcomes, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return 0, err
	}
	for _, o := range outcomes {
		if o != "renewed" {
			return 0, fmt.Errorf("batch renewal: %s", o)
		}
	}
	return len(outcomes), nil
}
