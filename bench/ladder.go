package bench

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// A ladder goes from a bare statement up to a function of the contract,
// one change a rung, so that where the function's time goes is measured
// rather than guessed: every rung runs in the same interleaved rounds
// (interleaveAll, rungs in ladder order, the order reversed every other
// round), and the report gives each rung against the bare statement and
// against the rung below it, both ratios from the same rounds.

// ladderRung describes one rung: the function it calls (its name is the
// comparisons' Ours), what it adds to the rung below and whether the
// contract requires that.
type ladderRung struct {
	ours, adds, required string
}

// ladderInfo describes a ladder: its comparisons' groups (against the bare
// statement; against the rung below), the bare statement (rung 0) and the
// rungs above it, bottom to top.
type ladderInfo struct {
	group, stepGroup, title, unit, bare string
	rungs                               []ladderRung
}

// Rung names: the functions the ladder step creates in schema public of
// its throwaway cluster, and the real functions at the top.
const (
	rungPlain         = "bench_ladder_plain"
	rungDefiner       = "bench_ladder_definer"
	rungPinned        = "bench_ladder_pinned"
	rungTable         = "bench_ladder_table"
	rungJobRecord     = "bench_ladder_job_record"
	rungAsWritten     = "bench_ladder_as_written"
	rungFloor         = "bench_ladder_floor"
	rungPolicy        = "bench_ladder_policy"
	rungCopy          = "bench_ladder_copy"
	rungBatchTable    = "bench_ladder_batch_table"
	rungBatchJob      = "bench_ladder_batch_job_record"
	rungBatchAnswer   = "bench_ladder_batch_answer"
	rungBatchWritten  = "bench_ladder_batch_as_written"
	rungBatchFloor    = "bench_ladder_batch_floor"
	rungBatchPolicy   = "bench_ladder_batch_policy"
	rungBatchCopy     = "bench_ladder_batch_copy"
	realRenewLease    = "durable_jobs.renew_job_lease"
	realRenewLeases   = "durable_jobs.renew_job_leases"
	requiredSignature = "yes: the contract's signature (docs/sql-api.md: renew_job_lease RETURNS TABLE (renewal_outcome, " +
		"lease_expires_at, database_time)), sent as goclient sends it"
	requiredFloor = "yes: the reclaim probe's bound (migration 008): a claim reads expired leases in floor order " +
		"and stays flat in live leases; here the floor never moves (lease 1 hour, moved only within a sixth of it), " +
		"so this is the CASE alone, no index write (see the HOT share)"
	requiredPolicy = "yes: a policy change (renewal switched off, a shorter lease) affects the next renewal " +
		"(docs/sql-api.md, set_queue_lease_policy), so each renewal reads its queue's policy"
	requiredChecks = "yes: input is checked before anything else, LF003 on bad input (docs/sql-api.md, SQLSTATEs), and " +
		"outside READ COMMITTED, whose snapshot could predate a policy change"
	requiredNothing = "nothing new: the same statement and result"
)

// renewalLadder goes from rawRenewSQL to renew_job_lease.
var renewalLadder = ladderInfo{
	group: "ladder", stepGroup: "ladder_step", title: "renew_job_lease, one client", unit: "renewal",
	bare: "the bare conditional UPDATE (rawRenewSQL) of bench_raw_renew, a copy of job_record",
	rungs: []ladderRung{
		{rungPlain, "the same UPDATE as the only statement of a plain PL/pgSQL function returning the new expiry (a scalar)",
			"yes: the contract is functions; runtime roles hold no privilege on any table (docs/sql-api.md, Roles)"},
		{rungDefiner, "SECURITY DEFINER: the UPDATE runs as renew_job_lease's owner, with its column privileges " +
			"(copied onto the copy table)", "yes: every function is SECURITY DEFINER; tables are private (docs/sql-api.md)"},
		{rungPinned, "SET search_path = pg_catalog, pg_temp: a setting saved, set and restored on every call",
			"yes: security, a definer function never runs an object planted in its caller's search path; " +
				"docs/sql-api.md and pgTAP 01 (sql/tests/01_schema.sql) require it of every function"},
		{rungTable, "the contract's result: RETURNS TABLE (renewal_outcome, lease_expires_at, database_time) by " +
			"RETURN NEXT, called as SELECT those three columns FROM the function", requiredSignature},
		{rungJobRecord, "the same function on durable_jobs.job_record and its real claims instead of the copy: its " +
			"constraints (since migration 019 no table references it with a foreign key; since migration 017 it " +
			"has no BEFORE UPDATE row trigger, whose mere presence made PostgreSQL lock each row before updating it)",
			"yes: the real table"},
		{rungAsWritten, "the UPDATE as renew_job_lease writes it (its installed text: job_status compared as " +
			"text, the decision time taken once, the outcome from RETURNING), with the policy's values as constants, " +
			"without the floor and the input checks", requiredNothing},
		{rungFloor, "+ the lease_expiry_floor assignment (a CASE per renewal)", requiredFloor},
		{rungPolicy, "+ the policy read: a join to queue_lease_policy on effective_lease_policy_queue (the " +
			"queue's own policy, else '*') and the CASEs on its values", requiredPolicy},
		{rungCopy, "+ the input checks (owner id pattern and collation, NULLs, READ COMMITTED): renew_job_lease's " +
			"installed definition, renamed only, in schema public", requiredChecks},
		{realRenewLease, "renew_job_lease itself", "the top: should match the copy (the noise floor)"},
	},
}

// batchLadder goes from rawBatchSQL to renew_job_leases.
var batchLadder = ladderInfo{
	group: "batch_ladder", stepGroup: "batch_ladder_step", title: "renew_job_leases, batch of 100, one client",
	unit: "claim", bare: "the bare batched UPDATE ... FROM unnest (rawBatchSQL) of bench_raw_renew",
	rungs: []ladderRung{
		{rungBatchTable, "the same UPDATE in a function of the contract's shape (SECURITY DEFINER, pinned search_path, " +
			"the owner's privileges) returning the contract's table row by row (RETURN NEXT), called as goclient does",
			"yes: the function shape and the contract's signature of renew_job_leases"},
		{rungBatchJob, "the same function on durable_jobs.job_record and its real claims", "yes: the real table"},
		{rungBatchAnswer, "one row out per claim in, in input order: the claims a WITH ORDINALITY input, the UPDATE " +
			"in a CTE joined back to them by a FULL JOIN, as the function since migration 020 (stale where not renewed)",
			"yes: one row out per claim in, in input order (docs/sql-api.md, renew_job_leases)"},
		{rungBatchWritten, "the fenced rows locked first (FOR NO KEY UPDATE SKIP LOCKED, in id order), then updated " +
			"by tuple id: renew_job_leases' installed text, the policy's values as constants, without the floor and " +
			"the input checks",
			"yes: it never waits on a row lock, and answers locked instead (docs/sql-api.md, renew_job_leases)"},
		{rungBatchFloor, "+ the lease_expiry_floor assignment", requiredFloor},
		{rungBatchPolicy, "+ the policy read", requiredPolicy},
		{rungBatchCopy, "+ the input checks (owner id, flat equal-length arrays without NULLs or repeated ids, at most " +
			"1,000, READ COMMITTED): renew_job_leases' installed definition, renamed only", requiredChecks},
		{realRenewLeases, "renew_job_leases itself", "the top: should match the copy (the noise floor)"},
	},
}

// ladders are the ladders of the function wrapper step (the renewal's two)
// and of the claim ladder step, in report order.
var ladders = []ladderInfo{renewalLadder, batchLadder, claimLadder}

// rungCall is the statement a client sends to a rung that returns the
// contract's table: goclient's (goclient/port_pg.go) with the function's
// name.
func rungCall(fn string) string {
	return `SELECT renewal_outcome, lease_expires_at, database_time FROM ` + rungFunction(fn) + `($1, $2, $3)`
}

// rungFunction is the qualified name of a rung's function: the real ones
// are named with their schema, the ladder's own are in public.
func rungFunction(fn string) string {
	if strings.Contains(fn, ".") {
		return fn
	}
	return "public." + fn
}

// wrapper measures both ladders (step "function wrapper"): it makes the
// rungs' functions, then runs each ladder's rungs in one interleaved run.
func (r *runner) wrapper(ctx context.Context) error {
	if err := r.renewFixture(ctx); err != nil {
		return err
	}
	// The upper rungs run on job_record as the lower ones on the copy:
	// with statistics that count its running claims.
	if _, err := r.e.admin.Exec(ctx, `ANALYZE durable_jobs.job_record`); err != nil {
		return err
	}
	owner, err := r.makeRungs(ctx)
	if err != nil {
		return err
	}
	r.cfg.Logf("bench: ladder functions made, owned by %s", owner)
	set := r.renewSet
	single := []load{renewLoad(r.e, set, rawRenewSQL, scanExpiry)}
	for _, fn := range []string{rungPlain, rungDefiner, rungPinned} {
		single = append(single, renewLoad(r.e, set, `SELECT public.`+fn+`($1, $2, $3)`, scanExpiry))
	}
	for _, g := range renewalLadder.rungs[3:] {
		single = append(single, renewLoad(r.e, set, rungCall(g.ours), scanOutcome))
	}
	if err := r.climb(ctx, renewalLadder, single); err != nil {
		return err
	}
	batch := []load{batchLoad(r.e, set, "")}
	for _, g := range batchLadder.rungs {
		batch = append(batch, batchLoad(r.e, set, rungCall(g.ours)))
	}
	return r.climb(ctx, batchLadder, batch)
}

// ladderSlices sets a ladder round's length: a rung runs a case time over
// ladderSlices a round (50 ms at a case time of 3 s), so that a rung and
// the rung below run within moments of each other and a burst of the
// shared machine's load falls on few rounds, which the median leaves out.
// Config.LadderRounds is the number of rounds: ladderSlices in the full
// form (each rung a case time in all), fewer in the short form.
const ladderSlices = 60

// climb runs loads (the bare statement, then one load per rung of l) in
// one interleaved run of Config.LadderRounds rounds, and records each rung
// against the bare statement and against the rung below.
func (r *runner) climb(ctx context.Context, l ladderInfo, loads []load) error {
	if len(loads) != len(l.rungs)+1 {
		return fmt.Errorf("%s: %d loads for %d rungs", l.title, len(loads), len(l.rungs))
	}
	slice := r.cfg.CaseTime / ladderSlices
	defer r.measuring(time.Now())
	m, err := interleaveAll(ctx, loads, r.cfg.LadderRounds, slice, r.cfg.LadderWarmup)
	if err != nil {
		return fmt.Errorf("%s ladder: %w", l.title, err)
	}
	wal := make([]float64, len(loads))
	for i, ld := range loads {
		if wal[i], err = r.walPerUnit(ctx, ld); err != nil {
			return fmt.Errorf("%s ladder, WAL of rung %d: %w", l.title, i, err)
		}
	}
	for k, g := range l.rungs {
		i := k + 1
		r.record(Comparison{Group: l.group, Name: fmt.Sprintf("%s, rung %d against the bare statement", l.title, i),
			Ours: g.ours, Baseline: l.bare, Unit: l.unit, OursWAL: wal[i], BaseWAL: wal[0]}, m.pair(i, 0), 1, 1)
		if k > 0 {
			below := l.rungs[k-1].ours
			r.record(Comparison{Group: l.stepGroup, Name: fmt.Sprintf("%s, rung %d against rung %d", l.title, i, i-1),
				Ours: g.ours, Baseline: below, Unit: l.unit, OursWAL: wal[i], BaseWAL: wal[i-1]}, m.pair(i, i-1), 1, 1)
		}
	}
	return nil
}

// walPerUnit is the WAL l writes per unit, in bytes: the median of three
// passes of Config.WALPassUnits units (renewClaims when not set: each
// renewal claim renewed once a pass, as every rung renews them), the
// server's WAL insert position read before and after each. Apart from
// the timed rounds, so reading it costs them nothing; WAL the server
// writes for itself meanwhile (a checkpoint's first page images,
// autovacuum) falls on one pass at most, which the median leaves out.
func (r *runner) walPerUnit(ctx context.Context, l load) (float64, error) {
	c, err := l.pool.Acquire(ctx)
	if err != nil {
		return 0, err
	}
	defer c.Release()
	lsn := func() (float64, error) {
		var at float64
		err := r.e.admin.QueryRow(ctx, `SELECT (pg_catalog.pg_current_wal_insert_lsn() - '0/0')::float8`).Scan(&at)
		return at, err
	}
	passUnits := r.cfg.WALPassUnits
	if passUnits <= 0 {
		passUnits = renewClaims
	}
	var passes []float64
	for iter := 0; len(passes) < 3; {
		start, err := lsn()
		if err != nil {
			return 0, err
		}
		units := 0
		for units < passUnits {
			u, err := l.op(ctx, c.Conn(), 0, iter)
			if err != nil {
				return 0, err
			}
			units += u
			iter++
		}
		end, err := lsn()
		if err != nil {
			return 0, err
		}
		passes = append(passes, (end-start)/float64(units))
	}
	return median(passes), nil
}

// scanExpiry reads a scalar rung's or the bare UPDATE's answer: the new
// expiry, which must be there.
func scanExpiry(row pgx.Row) error {
	var expiry *time.Time
	if err := row.Scan(&expiry); err != nil {
		return err
	}
	if expiry == nil {
		return fmt.Errorf("renewed nothing")
	}
	return nil
}

// scanOutcome reads the contract's row, which must say renewed.
func scanOutcome(row pgx.Row) error {
	var outcome string
	var expiry *time.Time
	var at time.Time
	if err := row.Scan(&outcome, &expiry, &at); err != nil {
		return err
	}
	if outcome != "renewed" {
		return fmt.Errorf("outcome %s", outcome)
	}
	return nil
}

// renewLoad is one client renewing the claims of set in turn with sql
// (arguments job id, token, owner), each answer checked by scan.
func renewLoad(e *env, set claimSet, sql string, scan func(pgx.Row) error) load {
	return load{pool: e.worker, clients: 1, op: func(ctx context.Context, c *pgx.Conn, _, iter int) (int, error) {
		i := iter % renewClaims
		if err := scan(c.QueryRow(ctx, sql, set.ids[i], set.tokens[i], benchOwner)); err != nil {
			return 0, fmt.Errorf("renewal of job %d: %w", set.ids[i], err)
		}
		return 1, nil
	}}
}

// batchLoad is one client renewing the claims of set in batches of
// batchSize with sql (arguments owner, ids, tokens; every row must say
// renewed), or with rawBatchSQL when sql is empty.
func batchLoad(e *env, set claimSet, sql string) load {
	return load{pool: e.worker, clients: 1, op: func(ctx context.Context, c *pgx.Conn, _, iter int) (int, error) {
		lo := (iter % (renewClaims / batchSize)) * batchSize
		ids, tokens := set.ids[lo:lo+batchSize], set.tokens[lo:lo+batchSize]
		n := 0
		var rows pgx.Rows
		var err error
		if sql == "" {
			rows, err = c.Query(ctx, rawBatchSQL, ids, tokens, benchOwner)
		} else {
			rows, err = c.Query(ctx, sql, benchOwner, ids, tokens)
		}
		if err != nil {
			return 0, err
		}
		for rows.Next() {
			if sql != "" {
				if err := scanOutcome(rows); err != nil {
					rows.Close()
					return 0, fmt.Errorf("batch renewal: %w", err)
				}
			}
			n++
		}
		if err := rows.Err(); err != nil || n != batchSize {
			return 0, fmt.Errorf("batch renewal: %d rows of %d, %v", n, batchSize, err)
		}
		return n, nil
	}}
}
