package bench

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// The claim ladder: from the bare SKIP LOCKED claim of the claim
// comparisons (rawClaimSQL on bench_raw_claim, a job table with only what
// that claim needs) up to claim_next_job, one change a rung, measured as
// the renewal ladders are (climb). Every rung claims one due job a call,
// each from a queue of its own, so that the dead index entries the claims
// leave at the head of a queue (until VACUUM) weigh on each rung as its
// own claims made them, not on the others.

// Claim rung names: the functions the claim ladder step creates in schema
// public, and the real function at the top.
const (
	rungClaimTable     = "bench_ladder_claim_table"
	rungClaimJobRecord = "bench_ladder_claim_job_record"
	rungClaimWritten   = "bench_ladder_claim_as_written"
	rungClaimPolicy    = "bench_ladder_claim_policy"
	rungClaimCopy      = "bench_ladder_claim_copy"
	realClaimNextJobs  = "durable_jobs.claim_next_jobs"
	realClaimNextJob   = "durable_jobs.claim_next_job"
	claimArgs          = "(text, text, integer)"
	// claimLadderLease, claimLadderRenewal and claimLadderLifetime are the
	// ladder queues' policy, which the rungs below the policy read write in.
	claimLadderLease    = "1 hour"
	claimLadderRenewal  = "10 minutes"
	claimLadderLifetime = "7 days"
)

// claimTableColumns is claim_next_job's result, which every rung but the
// bare claim returns.
const claimTableColumns = `job_record_id bigint, lease_claim_token uuid, lease_fencing_generation bigint,
    lease_expires_at timestamptz, lease_renewal_interval interval, attempt_number integer,
    job_payload jsonb, database_time timestamptz`

// claimLadder goes from rawClaimSQL to claim_next_job.
var claimLadder = ladderInfo{
	group: "claim_ladder", stepGroup: "claim_ladder_step", title: "claim_next_job, one client, no live lease", unit: "claim",
	bare: "the bare FOR UPDATE SKIP LOCKED claim (rawClaimSQL) of bench_raw_claim, a job table with only what that claim needs",
	rungs: []ladderRung{
		{rungClaimTable, "the same claim as the only statement of a function of the contract's shape (SECURITY DEFINER, " +
			"pinned search_path, claim_next_jobs' owner) returning claim_next_job's table (RETURN QUERY), token and " +
			"decision time in variables", "yes: the contract is functions of that shape, and claim_next_job's signature"},
		{rungClaimJobRecord, "the same one-statement claim of durable_jobs.job_record, writing what claim_next_jobs " +
			"writes (status, attempt, every lease column, generation, renewal count), the payload read from " +
			"job_payload_record: the real table's six CHECK constraints, its indexes (a claim adds entries to the " +
			"primary key's and job_record_reclaim_order; job_record_running_by_queue too before migration 025) and the separate payload table",
			"yes: the real table; its CHECKs hold the lease invariants reclaim relies on, its indexes keep claims and " +
				"reclaims flat in live leases"},
		{rungClaimWritten, "claim_next_jobs as installed, the policy's values written in and without its input checks: " +
			"expired claims probed before due jobs in the same statement, candidates as arrays, each claimed with a " +
			"token of its own in one UPDATE, exhausted jobs to FAILED, reclaims tallied, generic plans, the generation " +
			"raised to the WAL timeline's floor and the claim's commit made local (migration 011's rules, in the " +
			"function since 017)",
			"yes: reclaim (a RUNNING job whose lease expired by database time is claimable, expired claims first), " +
				"claiming up to n jobs a call (docs/sql-api.md, claim_next_job and claim_next_jobs), generations that " +
				"increase across promotions"},
		{rungClaimPolicy, "+ the policy read: the queue's own policy, else '*'",
			"yes: a policy change affects the next claim (docs/sql-api.md, set_queue_lease_policy)"},
		{rungClaimCopy, "+ the input checks (queue name and owner id patterns and collation, 1 to 1,000 jobs, " +
			"READ COMMITTED): claim_next_jobs' installed definition, renamed only, called for one job",
			"yes: LF003 on bad input (docs/sql-api.md, SQLSTATEs)"},
		{realClaimNextJob, "claim_next_job itself: a function of the contract's shape whose body returns " +
			"claim_next_jobs(…, 1)", "yes: the contract's single-claim function"},
	},
}

// claimRung is a function of the contract's shape returning
// claim_next_job's table, whose body is the one statement query (RETURN
// QUERY), with the variables v_token (the claim's token) and v_now (the
// decision time).
func claimRung(name, query string) string {
	return fmt.Sprintf(`CREATE FUNCTION public.%s(p_queue_name text, p_worker_owner_id text, p_max_jobs integer)
RETURNS TABLE (%s)
LANGUAGE plpgsql %s AS $body$
#variable_conflict use_column
DECLARE
    v_token uuid := pg_catalog.gen_random_uuid();
    v_now timestamptz := pg_catalog.clock_timestamp();
BEGIN
    RETURN QUERY
    %s;
END $body$`, name, claimTableColumns, pinned, query)
}

// claimTableRung is the bare claim in the contract's shape, on bench_raw_claim.
func claimTableRung(name string) string {
	return claimRung(name, `UPDATE public.bench_raw_claim c SET status = 'RUNNING',
        digest = pg_catalog.sha256(pg_catalog.uuid_send(v_token)),
        owner = p_worker_owner_id, expires_at = v_now + interval '30 seconds'
    WHERE c.id = (SELECT d.id FROM public.bench_raw_claim d
                  WHERE d.queue_name = p_queue_name AND d.status = 'QUEUED' AND d.run_after <= v_now
                  ORDER BY d.run_after, d.id LIMIT 1 FOR UPDATE SKIP LOCKED)
    RETURNING c.id, v_token, 1::bigint, c.expires_at, interval '10 seconds', 1, c.payload, v_now`)
}

// claimJobRecordRung is the one-statement claim of job_record in the
// contract's shape, writing what claim_next_jobs writes.
func claimJobRecordRung(name string) string {
	return claimRung(name, fmt.Sprintf(`WITH claimed AS (
        UPDATE durable_jobs.job_record j
        SET job_status = 'RUNNING', status_changed_at = v_now, attempt_number = j.attempt_number + 1,
            lease_claim_digest = pg_catalog.sha256(pg_catalog.uuid_send(v_token)),
            lease_owner_id = p_worker_owner_id, lease_claimed_by_role = SESSION_USER, lease_claimed_at = v_now,
            lease_expires_at = v_now + interval '%[1]s', lease_expiry_floor = v_now + interval '%[1]s',
            lease_claim_deadline = v_now + interval '%[2]s',
            lease_fencing_generation = j.lease_fencing_generation + 1, lease_renewal_count = 0,
            failure_reason_code = NULL
        WHERE j.job_record_id = (SELECT d.job_record_id FROM durable_jobs.job_record d
                                 WHERE d.queue_name = p_queue_name AND d.job_status IN ('QUEUED', 'RETRY_SCHEDULED')
                                   AND d.run_after <= v_now
                                 ORDER BY d.run_after, d.job_record_id LIMIT 1 FOR UPDATE SKIP LOCKED)
        RETURNING j.job_record_id AS claimed_id, j.lease_fencing_generation AS claimed_generation,
                  j.lease_expires_at AS claimed_expiry, j.attempt_number AS claimed_attempt
    )
    SELECT k.claimed_id, v_token, k.claimed_generation, k.claimed_expiry, interval '%[3]s', k.claimed_attempt,
           pr.job_payload, v_now
    FROM claimed k LEFT JOIN durable_jobs.job_payload_record pr ON pr.job_record_id = k.claimed_id`,
		claimLadderLease, claimLadderLifetime, claimLadderRenewal))
}

// claimRungs makes the claim ladder's functions in schema public, owned by
// claim_next_jobs' owner (given on bench_raw_claim what it needs) and
// executable by durable_job_worker only. The upper rungs are made from
// claim_next_jobs' installed definition (see deriveRungs).
func (r *runner) claimRungs(ctx context.Context) error {
	admin := r.e.admin
	var owner, def string
	if err := admin.QueryRow(ctx, `SELECT p.proowner::regrole::text, pg_catalog.pg_get_functiondef(p.oid)
		FROM pg_catalog.pg_proc p WHERE p.oid = ($1 || $2)::regprocedure`, realClaimNextJobs, claimArgs).
		Scan(&owner, &def); err != nil {
		return err
	}
	policy, err := applyEdits(def, []edit{{"the policy read",
		`(?s)\n[ \t]*SELECT pg_catalog\.make_interval\(secs => pg_catalog\.date_part\('epoch', p\.lease_duration\)\),` +
			`.*?JOIN durable_jobs\.queue_lease_policy p ON p\.queue_name = e\.policy_queue_name;`,
		fmt.Sprintf("\n    v_lease_duration := '%s'; v_renewal_interval := '%s'; v_max_claim_lifetime := '%s';",
			claimLadderLease, claimLadderRenewal, claimLadderLifetime), 1}})
	if err != nil {
		return err
	}
	if err := requireNoPolicyRead(policy, realClaimNextJobs); err != nil {
		return err
	}
	const checksStart, checksEnd = "    IF p_queue_name IS NULL", "    -- Durations as absolute seconds"
	noChecks, err := cutChecks(def, checksStart, checksEnd)
	if err != nil {
		return err
	}
	written, err := cutChecks(policy, checksStart, checksEnd)
	if err != nil {
		return err
	}
	rungs := []rungDef{{rungClaimTable, claimArgs, claimTableRung(rungClaimTable)},
		{rungClaimJobRecord, claimArgs, claimJobRecordRung(rungClaimJobRecord)}}
	for _, d := range []struct{ name, text string }{
		{rungClaimWritten, written}, {rungClaimPolicy, noChecks}, {rungClaimCopy, def},
	} {
		create, err := renameFunction(d.text, realClaimNextJobs, d.name)
		if err != nil {
			return err
		}
		rungs = append(rungs, rungDef{d.name, claimArgs, create})
	}
	// The owner's name comes from the catalog; the table is this package's.
	if _, err := admin.Exec(ctx, `GRANT SELECT, UPDATE ON public.bench_raw_claim TO `+pgx.Identifier{owner}.Sanitize()); err != nil {
		return err
	}
	return createRungs(ctx, admin, owner, rungs)
}

// claimLadderQueue is rung i's queue (0 is the bare claim's).
func claimLadderQueue(i int) string { return fmt.Sprintf("bench_claim_ladder_%d", i) }

// claimLoad is one client claiming one due job a call from queue with sql
// (arguments queue, owner), which must return a job.
func claimLoad(e *env, queue, sql string) load {
	return load{pool: e.worker, clients: 1, op: func(ctx context.Context, c *pgx.Conn, _, _ int) (int, error) {
		var id int64
		var payload []byte
		if err := c.QueryRow(ctx, sql, queue, benchOwner).Scan(&id, &payload); err != nil {
			if errors.Is(err, pgx.ErrNoRows) {
				return 0, fmt.Errorf("%s found no due job in %s: raise Config.ClaimRate", sql, queue)
			}
			return 0, err
		}
		return 1, nil
	}}
}

// claimLadderStep measures the claim ladder (step "claim ladder"): each
// rung's queue gets due jobs for its case time, its warm-up and the WAL
// passes, the rungs' functions are made, and the rungs run in one
// interleaved run.
func (r *runner) claimLadderStep(ctx context.Context) error {
	if err := r.e.createRawClaimTable(ctx); err != nil {
		return err
	}
	// Due jobs for a rung's rounds and its warm-up at half Config.ClaimRate
	// (a single claim a call is far slower than the most a client can
	// make), and for the three WAL passes: enough, without filling
	// job_record with rows the later steps would then work around.
	rungTime := r.cfg.CaseTime * time.Duration(r.cfg.LadderRounds) / ladderSlices
	due := int((rungTime.Seconds()+r.cfg.LadderWarmup.Seconds())*float64(r.cfg.ClaimRate)/2) + 3*r.cfg.WALPassUnits + 1000
	loads := []load{claimLoad(r.e, claimLadderQueue(0), rawClaimSQL)}
	for k, g := range claimLadder.rungs {
		queue := claimLadderQueue(k + 1)
		sql := `SELECT job_record_id, job_payload FROM ` + rungFunction(g.ours) + `($1, $2, 1)`
		if g.ours == realClaimNextJob {
			sql = `SELECT job_record_id, job_payload FROM ` + realClaimNextJob + `($1, $2)`
		}
		loads = append(loads, claimLoad(r.e, queue, sql))
	}
	setup := time.Now()
	for i := range loads {
		queue := claimLadderQueue(i)
		if err := r.e.setPolicy(ctx, queue, claimLadderLease, claimLadderRenewal); err != nil {
			return err
		}
	}
	// The bare claim and the first rung claim from bench_raw_claim, the
	// others from job_record: each table filled by one session, queue
	// after queue, the two at once.
	if err := parallel(func() error {
		for i := range 2 {
			if err := r.e.insertRawDueJobs(ctx, claimLadderQueue(i), due); err != nil {
				return err
			}
		}
		return nil
	}, func() error {
		for i := 2; i < len(loads); i++ {
			if err := r.e.insertDueJobs(ctx, claimLadderQueue(i), due); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		return err
	}
	if err := r.e.analyzeAll(ctx); err != nil {
		return err
	}
	if err := r.claimRungs(ctx); err != nil {
		return err
	}
	r.setupDone("queues and rungs", setup)
	if err := r.climb(ctx, claimLadder, loads); err != nil {
		return err
	}
	// The ladder's queues leave tens of thousands of claimed and due rows
	// and as many dead index entries; the steps after it (the HOT share
	// under a 3 s lease first) start on vacuumed tables, not beside an
	// autovacuum of them.
	setup = time.Now()
	err := r.e.maintain(ctx, "VACUUM ANALYZE ", "durable_jobs.job_record", "durable_jobs.job_payload_record", "bench_raw_claim")
	r.setupDone("VACUUM ANALYZE", setup)
	return err
}
