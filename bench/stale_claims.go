package bench

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	sqlbundle "github.com/mightyetl/leasefence/sql"
)

// Claims under stale statistics (issue 38): a queue of staleClaimJobs due
// jobs analyzed once, autovacuum off for the job tables, a 1 h lease so
// that every claim stays live; then staleClaimRounds rounds, each side
// for half a case time, claim_next_job against a bare FOR UPDATE SKIP
// LOCKED claim of the same table by the same login, with no ANALYZE
// between them (the statistics still say every job is queued while the
// live leases grow by every claim of both sides, and by staleClaimTopUp
// claims before each round but the first), and one more round after an
// ANALYZE. A round's ratio is claim_next_job's claims a second over the
// bare claim's; the goal is at least 0.5 in every round.

const (
	// staleClaimJobs are the due jobs of the step's queue, analyzed once.
	staleClaimJobs = 200000
	// staleClaimRounds are the rounds with the statistics of the queued
	// jobs; one round after an ANALYZE follows.
	staleClaimRounds = 4
	// staleClaimTopUp are the jobs claimed (by claim_next_jobs, 1,000 a
	// call, not timed) before every round but the first, on top of the
	// rounds' own claims: so the live leases reach tens of thousands by the
	// last round (the table: 19,372, 34,943, 46,918) even where a
	// durable commit is slow and a round claims few.
	staleClaimTopUp = 15000
	// staleClaimQueue is the step's queue, in a database of its own.
	staleClaimQueue = "bench_stale_claims"
	// freshClaimBase is the version the step's claims with fresh
	// statistics are compared against: 23, the version of the last full
	// run before issue 38's migrations (bench/notes.md).
	freshClaimBase = 23
	// freshClaimLive are the live leases of the queue of the second of
	// those comparisons (the first has none).
	freshClaimLive = 10000
	// freshCPURounds and freshCPUClaims shape the comparisons of those
	// claims by the backend's own CPU time: rounds of freshCPUClaims
	// claim_next_job calls in one session, each committed, the sides'
	// order swapped every round.
	freshCPURounds = 12
	freshCPUClaims = 2000
)

// staleBareClaimSQL is the bare claim of job_record: the first due job by
// FOR UPDATE SKIP LOCKED, every column a claim writes (1 h lease, as the
// queue's policy), its payload read. now() is the statement's start, so
// the floor never exceeds the expiry (a CHECK of the table).
const staleBareClaimSQL = `WITH claimed AS (
    UPDATE durable_jobs.job_record j
    SET job_status = 'RUNNING', status_changed_at = now(), attempt_number = j.attempt_number + 1,
        lease_claim_digest = sha256(uuid_send(gen_random_uuid())), lease_owner_id = $2,
        lease_claimed_by_role = session_user, lease_claimed_at = now(),
        lease_expires_at = now() + interval '1 hour', lease_expiry_floor = now() + interval '1 hour',
        lease_claim_deadline = now() + interval '7 days', lease_fencing_generation = j.lease_fencing_generation + 1,
        lease_renewal_count = 0
    WHERE j.job_record_id = (SELECT d.job_record_id FROM durable_jobs.job_record d
                             WHERE d.queue_name = $1 AND d.job_status IN ('QUEUED', 'RETRY_SCHEDULED')
                               AND d.run_after <= clock_timestamp()
                             ORDER BY d.run_after, d.job_record_id LIMIT 1 FOR UPDATE SKIP LOCKED)
    RETURNING j.job_record_id)
SELECT c.job_record_id, p.job_payload FROM claimed c
LEFT JOIN durable_jobs.job_payload_record p ON p.job_record_id = c.job_record_id`

// staleClaimSetup prepares d for the step: autovacuum off for the job
// tables, the bare claim's privileges for the worker login workerRole, the
// queue's 1 h lease, jobs due jobs, and the one ANALYZE.
func staleClaimSetup(ctx context.Context, d *dbPools, workerRole string, jobs int) error {
	login := pgx.Identifier{workerRole}.Sanitize()
	for _, q := range []string{
		`ALTER TABLE durable_jobs.job_record SET (autovacuum_enabled = off)`,
		`ALTER TABLE durable_jobs.job_payload_record SET (autovacuum_enabled = off)`,
		// The bare claim runs as the same login as claim_next_job.
		`GRANT SELECT, UPDATE ON durable_jobs.job_record TO ` + login,
		`GRANT SELECT ON durable_jobs.job_payload_record TO ` + login,
	} {
		if _, err := d.admin.Exec(ctx, q); err != nil {
			return err
		}
	}
	if err := d.setPolicy(ctx, staleClaimQueue, "1 hour", "10 minutes"); err != nil {
		return err
	}
	if err := d.insertDueJobs(ctx, staleClaimQueue, jobs); err != nil {
		return err
	}
	return d.analyze(ctx)
}

// staleClaims is step "claims under stale statistics".
func (r *runner) staleClaims(ctx context.Context) error {
	setup := time.Now()
	d, err := r.e.bundleDB(ctx, "lf_stale_claims", sqlbundle.NewestVersion())
	if err != nil {
		return err
	}
	if err := staleClaimSetup(ctx, d, r.e.workerRole, staleClaimJobs); err != nil {
		return err
	}
	r.setupDone(fmt.Sprintf("%d due jobs and one ANALYZE", staleClaimJobs), setup)
	claim := func(what, sql string) load {
		return load{pool: d.worker, clients: 1, op: func(ctx context.Context, c *pgx.Conn, _, _ int) (int, error) {
			var id int64
			var payload []byte
			if err := c.QueryRow(ctx, sql, staleClaimQueue, benchOwner).Scan(&id, &payload); err != nil {
				return 0, fmt.Errorf("%s: %w", what, err)
			}
			return 1, nil
		}}
	}
	ours := claim("claim_next_job", `SELECT job_record_id, job_payload FROM durable_jobs.claim_next_job($1, $2)`)
	base := claim("the bare claim of job_record", staleBareClaimSQL)
	slice := r.cfg.CaseTime / 2
	for round := 1; round <= staleClaimRounds+1; round++ {
		analyzed := round > staleClaimRounds
		if round > 1 {
			top := time.Now()
			if _, err := d.claimDue(ctx, staleClaimQueue, staleClaimTopUp); err != nil {
				return err
			}
			r.setupDone(fmt.Sprintf("%s more live leases before round %d", thousands(staleClaimTopUp), round), top)
		}
		if analyzed {
			if err := d.analyze(ctx); err != nil {
				return err
			}
		}
		var live int
		if err := d.admin.QueryRow(ctx, `SELECT pg_catalog.count(*) FROM durable_jobs.job_record
			WHERE queue_name = $1 AND job_status = 'RUNNING'`, staleClaimQueue).Scan(&live); err != nil {
			return err
		}
		// The first round warms both sides up; the sides take turns to go
		// first.
		warm := time.Duration(0)
		if round == 1 {
			warm = r.cfg.Warmup
		}
		loads, a, b := []load{ours, base}, 0, 1
		if round%2 == 0 {
			loads, a, b = []load{base, ours}, 1, 0
		}
		start := time.Now()
		m, err := interleaveAll(ctx, loads, 1, slice, warm)
		r.measuring(start)
		if err != nil {
			return fmt.Errorf("round %d: %w", round, err)
		}
		name := fmt.Sprintf("round %d, statistics of the queued jobs, %s live leases at its start", round, thousands(live))
		if analyzed {
			name = fmt.Sprintf("round %d, after one ANALYZE, %s live leases at its start", round, thousands(live))
		}
		r.record(Comparison{Group: "stale_claim", Name: name, Ours: "claim_next_job",
			Baseline: "a bare FOR UPDATE SKIP LOCKED claim of job_record by the same login", Unit: "claim", Goal: 0.5},
			m.pair(a, b), 1, 1)
	}
	return r.freshClaimsAgainstBase(ctx)
}

// freshClaimsAgainstBase answers the issue's "the claims step's figures with
// fresh statistics are no worse": claim_next_job of the newest version
// against claim_next_job of version freshClaimBase, each in a database of
// its own of this cluster holding the same due jobs, analyzed after they
// and the live leases were made, interleaved as every comparison; once with
// no live lease, once with freshClaimLive. Beside each, the same
// comparison of a second database at freshClaimBase against the first: two
// alike databases, so that row's distance from 1.00 is what the machine's
// noise alone makes of a comparison in this run.
func (r *runner) freshClaimsAgainstBase(ctx context.Context) error {
	newest := sqlbundle.NewestVersion()
	sides := []struct {
		name    string
		version int32
	}{{"lf_fresh_claims_newest", newest}, {"lf_fresh_claims_base", freshClaimBase}, {"lf_fresh_claims_base_again", freshClaimBase}}
	setup := time.Now()
	dbs := make([]*dbPools, len(sides))
	for i, side := range sides {
		d, err := r.e.bundleDB(ctx, side.name, side.version)
		if err != nil {
			return err
		}
		dbs[i] = d
	}
	levels := []int{0, freshClaimLive}
	queue := func(live int) string { return fmt.Sprintf("bench_fresh_claim_%d", live) }
	// The base database serves both comparisons of each kind.
	due := 2*r.dueJobsPerSide(1) + 2*freshCPURounds*freshCPUClaims
	fill := make([]func() error, len(sides))
	for i, d := range dbs {
		fill[i] = func() error {
			for _, live := range levels {
				if err := d.setPolicy(ctx, queue(live), "1 hour", "10 minutes"); err != nil {
					return fmt.Errorf("%s: %w", sides[i].name, err)
				}
				if err := d.insertDueJobs(ctx, queue(live), live); err != nil {
					return fmt.Errorf("%s: %w", sides[i].name, err)
				}
				if _, err := d.claimDue(ctx, queue(live), live); err != nil {
					return fmt.Errorf("%s: %w", sides[i].name, err)
				}
				if err := d.insertDueJobs(ctx, queue(live), due); err != nil {
					return fmt.Errorf("%s: %w", sides[i].name, err)
				}
			}
			return d.analyze(ctx)
		}
	}
	if err := parallel(fill...); err != nil {
		return err
	}
	r.setupDone(fmt.Sprintf("versions %d and %d (twice): live leases, due jobs and one ANALYZE", newest, freshClaimBase), setup)
	for _, live := range levels {
		for _, c := range []struct {
			ours int
			name string
		}{{0, fmt.Sprintf("version %d", newest)}, {2, fmt.Sprintf("version %d again (the noise)", freshClaimBase)}} {
			// The base serves both comparisons: without a VACUUM its claims
			// would walk twice the dead index entries of jobs claimed before.
			if err := vacuumJobs(ctx, dbs[c.ours], dbs[1]); err != nil {
				return err
			}
			if err := r.compare(ctx, Comparison{Group: "fresh_claim",
				Name: fmt.Sprintf("claim_next_job, %s against version %d, %s live leases", c.name, freshClaimBase, thousands(live)),
				Ours: fmt.Sprintf("claim_next_job of %s", c.name), Baseline: fmt.Sprintf("claim_next_job of version %d", freshClaimBase),
				Unit: "claim"}, claimOne(dbs[c.ours], queue(live)), claimOne(dbs[1], queue(live))); err != nil {
				return err
			}
		}
	}
	for _, live := range levels {
		for _, c := range []struct {
			ours int
			name string
		}{{0, fmt.Sprintf("version %d", newest)}, {2, fmt.Sprintf("version %d again (the noise)", freshClaimBase)}} {
			if err := r.compareClaimCPU(ctx, Comparison{Group: "fresh_claim",
				Name: fmt.Sprintf("claim_next_job by CPU time, %s against version %d, %s live leases", c.name, freshClaimBase, thousands(live)),
				Ours: fmt.Sprintf("claim_next_job of %s", c.name), Baseline: fmt.Sprintf("claim_next_job of version %d", freshClaimBase),
				Unit: "claim (backend CPU)"}, dbs[c.ours], dbs[1], queue(live)); err != nil {
				return err
			}
		}
	}
	return nil
}

// compareClaimCPU records c: claim_next_job on queue in ours against base
// by the CPU time the serving backend spent (user and system, from its
// /proc/<pid>/stat), freshCPURounds rounds of freshCPUClaims claims a side,
// each claim its own transaction inside one DO block (no round trip) with
// synchronous_commit off for the session (no WAL flush in the backend: the
// flush is the disk's work, the same for every version). CPU time is what a claim
// costs the server; on a shared machine it varies far less than wall time,
// which waits for every other process. job_record is vacuumed before each
// side of each round. A round's ratio is base's CPU a
// claim over ours', so above 1.00 ours costs less.
func (r *runner) compareClaimCPU(ctx context.Context, c Comparison, ours, base *dbPools, queue string) error {
	var oursCPU, baseCPU float64
	for round := range freshCPURounds {
		sides := []*dbPools{ours, base}
		if round%2 == 1 {
			sides = []*dbPools{base, ours}
		}
		var got [2]float64
		for i, d := range sides {
			if err := vacuumJobs(ctx, d); err != nil {
				return err
			}
			us, err := claimCPU(ctx, d, queue, freshCPUClaims)
			if err != nil {
				return fmt.Errorf("%s: %w", c.Name, err)
			}
			got[i] = us
		}
		if round%2 == 1 {
			got[0], got[1] = got[1], got[0]
		}
		oursCPU, baseCPU = oursCPU+got[0], baseCPU+got[1]
		c.Rounds = append(c.Rounds, got[1]/got[0])
	}
	c.Clients, c.OursN, c.BaseN = 1, freshCPURounds*freshCPUClaims, freshCPURounds*freshCPUClaims
	c.OursUS, c.BaseUS = oursCPU/freshCPURounds, baseCPU/freshCPURounds
	sorted := slices.Clone(c.Rounds)
	slices.Sort(sorted)
	c.Ratio = (sorted[(len(sorted)-1)/2] + sorted[len(sorted)/2]) / 2
	r.cfg.Logf("bench: %-45s ours %8.1f µs/%s  baseline %8.1f µs/%s  ratio %.2f", c.Name, c.OursUS, c.Unit,
		c.BaseUS, c.Unit, c.Ratio)
	r.rep.Comparisons = append(r.rep.Comparisons, c)
	return nil
}

// vacuumJobs vacuums job_record in each of dbs: the claims to come then
// walk no dead index entry of the jobs claimed before them.
func vacuumJobs(ctx context.Context, dbs ...*dbPools) error {
	for _, d := range dbs {
		if err := d.maintain(ctx, "VACUUM ", "durable_jobs.job_record"); err != nil {
			return err
		}
	}
	return nil
}

// claimCPUSQL claims %d jobs of queue %s one by one, each committed.
const claimCPUSQL = `DO $$ BEGIN
    FOR i IN 1..%d LOOP PERFORM durable_jobs.claim_next_job(%s, %s); COMMIT; END LOOP;
END $$`

// claimCPU returns the CPU microseconds d's backend spent a claim over n
// claims of queue, read from the backend's /proc/<pid>/stat (the server
// runs on this machine, as serverCPU also reads it).
func claimCPU(ctx context.Context, d *dbPools, queue string, n int) (float64, error) {
	conn, err := d.worker.Acquire(ctx)
	if err != nil {
		return 0, err
	}
	defer conn.Release()
	var pid int
	if err := conn.QueryRow(ctx, `SELECT pg_catalog.pg_backend_pid()`).Scan(&pid); err != nil {
		return 0, err
	}
	before, err := processCPU(pid)
	if err != nil {
		return 0, err
	}
	sql := fmt.Sprintf(claimCPUSQL, n, quoteLiteral(queue), quoteLiteral(benchOwner))
	if _, err := conn.Exec(ctx, `SET synchronous_commit = off`); err != nil {
		return 0, err
	}
	if _, err := conn.Exec(ctx, sql); err != nil {
		return 0, err
	}
	if _, err := conn.Exec(ctx, `RESET synchronous_commit`); err != nil {
		return 0, err
	}
	after, err := processCPU(pid)
	if err != nil {
		return 0, err
	}
	return float64((after - before).Microseconds()) / float64(n), nil
}

// quoteLiteral quotes s as an SQL string literal.
func quoteLiteral(s string) string {
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}

// staleClaimNote heads the step's table in RESULTS.md.
var staleClaimNote = fmt.Sprintf("goal ≥ 0.5 in every round; a database of its own: %s due jobs of one queue "+
	"analyzed once, autovacuum off for the job tables, a 1 h lease (every claim stays live), then rounds of half a "+
	"case time a side, each but the first after %s more claims (claim_next_jobs, not timed), claim_next_job against a bare FOR UPDATE SKIP LOCKED claim of job_record by the same login "+
	"(the same columns written, the payload read), with no ANALYZE between them, and a last round after one ANALYZE; "+
	"each round is one row, its ratio that round's", thousands(staleClaimJobs), thousands(staleClaimTopUp))

// freshClaimNote heads the table of freshClaimsAgainstBase in RESULTS.md.
var freshClaimNote = fmt.Sprintf("the issue asks the claims with fresh statistics to be no worse than before it; no "+
	"number: two databases of this cluster, one at the newest version and one at version %d, each with the same "+
	"due jobs in a queue with no live lease and in one with %s, analyzed after they were made; a ratio is the "+
	"newest version's claims a second over version %d's, so below 1.00 the newest costs more; each is followed by "+
	"the same comparison of a second database at version %d against the first, whose distance from 1.00 is the "+
	"run's noise; then the same four by the backend's CPU time (µs of user and system time a claim, %d rounds of "+
	"%s claims a side in one session, each committed, job_record vacuumed before each; a ratio is version %d's CPU a "+
	"claim over the other's), which a shared machine disturbs less than wall time",
	freshClaimBase, thousands(freshClaimLive), freshClaimBase, freshClaimBase, freshCPURounds, thousands(freshCPUClaims),
	freshClaimBase)
