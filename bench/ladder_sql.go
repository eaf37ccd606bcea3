package bench

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// The ladders' functions. The lower rungs are written here around the
// bare statements (rawRenewSQL, rawBatchSQL); the upper ones are made from
// pg_get_functiondef of the installed renew_job_lease and renew_job_leases
// with only their name changed and, below the copy, one part at a time
// taken out, so they can never drift from the real functions: a part that
// is no longer where this file expects it stops the run.

// singleArgs and batchArgs are the real functions' argument types, which
// every rung of the same ladder takes too.
const (
	singleArgs = "(bigint, uuid, text)"
	batchArgs  = "(text, bigint[], uuid[])"
)

// bareSingle is rawRenewSQL as a function body's statement on table.
func bareSingle(table string) string {
	return strings.NewReplacer("bench_raw_renew", table, "$1", "p_job_record_id", "$2::uuid", "p_lease_claim_token",
		"$3", "p_worker_owner_id", "clock_timestamp()", "pg_catalog.clock_timestamp()").Replace(rawRenewSQL)
}

// bareBatch is rawBatchSQL as a function body's statement on table.
func bareBatch(table string) string {
	return strings.NewReplacer("bench_raw_renew", table, "$1::bigint[]", "p_job_record_ids",
		"$2::uuid[]", "p_lease_claim_tokens", "$3", "p_worker_owner_id",
		"clock_timestamp()", "pg_catalog.clock_timestamp()").Replace(rawBatchSQL)
}

// pinned are the attributes of the contract's function shape.
const pinned = "SECURITY DEFINER SET search_path = pg_catalog, pg_temp"

// scalarRung is a rung returning the new expiry: the bare UPDATE in a
// function with attributes.
func scalarRung(name, attributes string) string {
	return fmt.Sprintf(`CREATE FUNCTION public.%s(p_job_record_id bigint, p_lease_claim_token uuid, p_worker_owner_id text)
RETURNS timestamptz LANGUAGE plpgsql %s AS $body$
DECLARE v_expiry timestamptz;
BEGIN
    %s INTO v_expiry;
    RETURN v_expiry;
END $body$`, name, attributes, bareSingle("public.bench_raw_renew"))
}

// tableRung is a rung returning renew_job_lease's table: the bare UPDATE
// of table in the contract's shape.
func tableRung(name, table string) string {
	return fmt.Sprintf(`CREATE FUNCTION public.%s(p_job_record_id bigint, p_lease_claim_token uuid, p_worker_owner_id text)
RETURNS TABLE (renewal_outcome text, lease_expires_at timestamptz, database_time timestamptz)
LANGUAGE plpgsql %s AS $body$
#variable_conflict use_column
BEGIN
    database_time := pg_catalog.clock_timestamp();
    %s INTO lease_expires_at;
    IF lease_expires_at IS NULL THEN
        renewal_outcome := 'stale';
    ELSE
        renewal_outcome := 'renewed';
    END IF;
    RETURN NEXT;
END $body$`, name, pinned, bareSingle(table))
}

// batchTableRung is a rung returning renew_job_leases' table: the bare
// batched UPDATE of table in the contract's shape, a row out per row
// renewed.
func batchTableRung(name, table string) string {
	return batchRung(name, bareBatch(table), "'renewed'")
}

// batchAnswerRung is the bare batched UPDATE of job_record answering as
// renew_job_leases does: one row per claim in, in input order, joined as
// renew_job_leases joins them since migration 020 (a FULL JOIN, which is
// never a nested loop; a LEFT JOIN was, in the generic plan, reading every
// renewed row once per claim).
func batchAnswerRung(name string) (string, error) {
	const from = "FROM unnest(p_job_record_ids, p_lease_claim_tokens) AS u(id, token)"
	update := bareBatch("durable_jobs.job_record")
	if strings.Count(update, from) != 1 {
		return "", fmt.Errorf("%s: rawBatchSQL no longer reads its claims %s", name, from)
	}
	update = strings.Replace(update, from, "FROM claim_input AS u(id, token, input_position)", 1)
	return batchRung(name, `
        WITH claim_input AS (
            SELECT i.input_job_id, i.input_token, i.input_position
            FROM ROWS FROM (pg_catalog.unnest(p_job_record_ids), pg_catalog.unnest(p_lease_claim_tokens)) WITH ORDINALITY
                 AS i(input_job_id, input_token, input_position)
        ), renewed AS (
            `+update+`
        )
        SELECT u.id AS job_record_id, r.lease_expires_at,
               CASE WHEN r.job_record_id IS NULL THEN 'stale' ELSE 'renewed' END AS outcome
        FROM claim_input AS u(id, token, input_position)
        FULL JOIN renewed r ON r.job_record_id = u.id
        ORDER BY u.input_position`, "v_result.outcome"), nil
}

// batchRung is a function of the contract's shape returning
// renew_job_leases' table: a row out per row of query (its columns
// job_record_id and lease_expires_at), the outcome the PL/pgSQL expression
// outcome.
func batchRung(name, query, outcome string) string {
	return fmt.Sprintf(`CREATE FUNCTION public.%s(p_worker_owner_id text, p_job_record_ids bigint[], p_lease_claim_tokens uuid[])
RETURNS TABLE (job_record_id bigint, renewal_outcome text, lease_expires_at timestamptz, database_time timestamptz)
LANGUAGE plpgsql %s AS $body$
#variable_conflict use_column
DECLARE
    v_result record;
    v_now timestamptz;
BEGIN
    v_now := pg_catalog.clock_timestamp();
    FOR v_result IN %s LOOP
        job_record_id := v_result.job_record_id;
        renewal_outcome := %s;
        lease_expires_at := v_result.lease_expires_at;
        database_time := v_now;
        RETURN NEXT;
    END LOOP;
END $body$`, name, pinned, query, outcome)
}

// derived are the upper rungs made from one installed function's
// definition: the copy, without its checks, without its policy read,
// without its floor assignment.
type derived struct{ copy, noChecks, noPolicy, noFloor string }

// edit is one change to a function definition: pattern must match
// exactly count times (every time when count is 0, at least once).
type edit struct {
	what, pattern, with string
	count               int
}

func applyEdits(def string, edits []edit) (string, error) {
	for _, e := range edits {
		re := regexp.MustCompile(e.pattern)
		n := len(re.FindAllStringIndex(def, -1))
		if n == 0 || (e.count > 0 && n != e.count) {
			return "", fmt.Errorf("%s: %d matches of %q in the installed definition; bench/ladder_sql.go "+
				"must follow the function's change", e.what, n, e.pattern)
		}
		def = re.ReplaceAllLiteralString(def, e.with)
	}
	return def, nil
}

// cutChecks is def without its input checks: from the first line of
// checksStart to the text checksEnd (kept), each there exactly once.
func cutChecks(def, checksStart, checksEnd string) (string, error) {
	i, j := strings.Index(def, checksStart), strings.Index(def, checksEnd)
	if strings.Count(def, checksStart) != 1 || strings.Count(def, checksEnd) != 1 || j < i {
		return "", fmt.Errorf("the input checks are no longer between %q and %q once each in the installed "+
			"definition; bench/ladder_sql.go must follow the function's change", checksStart, checksEnd)
	}
	return def[:i] + def[j:], nil
}

// deriveRungs makes the upper rungs of real from its installed definition
// def, named as in names; its input checks begin with the line starting
// checksStart and end where checksEnd begins.
func deriveRungs(def, real, checksStart, checksEnd string, names derived) (derived, error) {
	noChecks, err := cutChecks(def, checksStart, checksEnd)
	if err != nil {
		return derived{}, err
	}
	noPolicy, err := applyEdits(noChecks, []edit{
		{"the policy join", `(?m)^[ \t]*FROM durable_jobs\.queue_lease_policy p\n`, "", 1},
		{"the policy's queue", `(?m)^[ \t]*AND p\.queue_name = \(SELECT e\.policy_queue_name FROM ` +
			`durable_jobs\.effective_lease_policy_queue\(j\.queue_name\) e\)\n`, "", 1},
		{"renewal_enabled", `\bp\.renewal_enabled\b`, "true", 0},
		{"lease_duration", `\bp\.lease_duration\b`, "'" + renewLease + "'::interval", 0},
	})
	if err != nil {
		return derived{}, err
	}
	if err := requireNoPolicyRead(noPolicy, real); err != nil {
		return derived{}, err
	}
	noFloor, err := applyEdits(noPolicy, []edit{{"the floor assignment",
		`(?s)\n[ \t]*lease_expiry_floor = CASE.*?ELSE j\.lease_expires_at END,`, "", 1}})
	if err != nil {
		return derived{}, err
	}
	var d derived
	for _, t := range []struct {
		to         *string
		text, name string
	}{
		{&d.copy, def, names.copy}, {&d.noChecks, noChecks, names.noChecks},
		{&d.noPolicy, noPolicy, names.noPolicy}, {&d.noFloor, noFloor, names.noFloor},
	} {
		if *t.to, err = renameFunction(t.text, real, t.name); err != nil {
			return derived{}, err
		}
	}
	return d, nil
}

// makeRungs creates every rung's function in schema public: owned by
// renew_job_lease's owner, executable by durable_job_worker only, as the
// real functions are; the owner gets on bench_raw_renew exactly the
// privileges it holds on job_record. It returns the owner's name.
func (r *runner) makeRungs(ctx context.Context) (string, error) {
	admin := r.e.admin
	var owner string
	if err := admin.QueryRow(ctx, `SELECT p.proowner::regrole::text FROM pg_catalog.pg_proc p
		WHERE p.oid = 'durable_jobs.renew_job_lease(bigint, uuid, text)'::regprocedure`).Scan(&owner); err != nil {
		return "", err
	}
	if err := copyPrivileges(ctx, r.e, owner); err != nil {
		return "", err
	}
	defs := map[string]string{}
	for _, f := range []string{realRenewLease + singleArgs, realRenewLeases + batchArgs} {
		var def string
		if err := admin.QueryRow(ctx, `SELECT pg_catalog.pg_get_functiondef($1::regprocedure)`, f).Scan(&def); err != nil {
			return "", fmt.Errorf("%s: %w", f, err)
		}
		defs[f] = def
	}
	single, err := deriveRungs(defs[realRenewLease+singleArgs], realRenewLease, "    IF p_worker_owner_id IS NULL",
		"    v_now := pg_catalog.clock_timestamp();",
		derived{copy: rungCopy, noChecks: rungPolicy, noPolicy: rungFloor, noFloor: rungAsWritten})
	if err != nil {
		return "", fmt.Errorf("%s: %w", realRenewLease, err)
	}
	batch, err := deriveRungs(defs[realRenewLeases+batchArgs], realRenewLeases, "    IF p_worker_owner_id IS NULL",
		"    -- Lock the fenced rows first",
		derived{copy: rungBatchCopy, noChecks: rungBatchPolicy, noPolicy: rungBatchFloor, noFloor: rungBatchWritten})
	if err != nil {
		return "", fmt.Errorf("%s: %w", realRenewLeases, err)
	}
	answer, err := batchAnswerRung(rungBatchAnswer)
	if err != nil {
		return "", err
	}
	if err := createRungs(ctx, admin, owner, []rungDef{
		{rungPlain, singleArgs, scalarRung(rungPlain, "")},
		{rungDefiner, singleArgs, scalarRung(rungDefiner, "SECURITY DEFINER")},
		{rungPinned, singleArgs, scalarRung(rungPinned, pinned)},
		{rungTable, singleArgs, tableRung(rungTable, "public.bench_raw_renew")},
		{rungJobRecord, singleArgs, tableRung(rungJobRecord, "durable_jobs.job_record")},
		{rungAsWritten, singleArgs, single.noFloor},
		{rungFloor, singleArgs, single.noPolicy},
		{rungPolicy, singleArgs, single.noChecks},
		{rungCopy, singleArgs, single.copy},
		{rungBatchTable, batchArgs, batchTableRung(rungBatchTable, "public.bench_raw_renew")},
		{rungBatchJob, batchArgs, batchTableRung(rungBatchJob, "durable_jobs.job_record")},
		{rungBatchAnswer, batchArgs, answer},
		{rungBatchWritten, batchArgs, batch.noFloor},
		{rungBatchFloor, batchArgs, batch.noPolicy},
		{rungBatchPolicy, batchArgs, batch.noChecks},
		{rungBatchCopy, batchArgs, batch.copy},
	}); err != nil {
		return "", err
	}
	return owner, nil
}

// renameFunction is def, the installed definition of the function real,
// renamed to public.name.
func renameFunction(def, real, name string) (string, error) {
	return applyEdits(def, []edit{{"the name", `FUNCTION ` + regexp.QuoteMeta(real) + `\(`,
		"FUNCTION public." + name + "(", 1}})
}

// requireNoPolicyRead fails when def, a rung made from the installed
// function real with its policy read taken out, still reads the policy.
func requireNoPolicyRead(def, real string) error {
	if regexp.MustCompile(`\bp\.|queue_lease_policy`).MatchString(def) {
		return fmt.Errorf("%s reads the policy in a way the bench's ladders do not take out", real)
	}
	return nil
}

// rungDef is one rung's function: its name in schema public, its argument
// types and its CREATE FUNCTION statement.
type rungDef struct{ name, args, create string }

// createRungs creates each rung's function and makes it owned by owner and
// executable by durable_job_worker only, as the real functions are.
func createRungs(ctx context.Context, admin *pgxpool.Pool, owner string, rungs []rungDef) error {
	for _, f := range rungs {
		// Every name here is a constant of this package, the owner a role's
		// name from the catalog.
		fn := "public." + f.name + f.args
		for _, q := range []string{f.create,
			`ALTER FUNCTION ` + fn + ` OWNER TO ` + pgx.Identifier{owner}.Sanitize(),
			`REVOKE ALL ON FUNCTION ` + fn + ` FROM PUBLIC`,
			`GRANT EXECUTE ON FUNCTION ` + fn + ` TO durable_job_worker`,
		} {
			if _, err := admin.Exec(ctx, q); err != nil {
				return fmt.Errorf("%s: %w", f.name, err)
			}
		}
	}
	return nil
}

// copyPrivileges grants owner on bench_raw_renew the table and column
// privileges it holds on durable_jobs.job_record, so a definer rung checks
// the same privileges on the copy as on the real table.
func copyPrivileges(ctx context.Context, e *env, owner string) error {
	rows, err := e.admin.Query(ctx, `SELECT x.privilege_type, NULL::text FROM pg_catalog.pg_class c,
			LATERAL pg_catalog.aclexplode(c.relacl) x
		WHERE c.oid = 'durable_jobs.job_record'::regclass AND x.grantee = $1::regrole
		UNION ALL
		SELECT x.privilege_type, a.attname::text FROM pg_catalog.pg_attribute a, LATERAL pg_catalog.aclexplode(a.attacl) x
		WHERE a.attrelid = 'durable_jobs.job_record'::regclass AND x.grantee = $1::regrole`, owner)
	if err != nil {
		return err
	}
	type grant struct{ privilege, column string }
	grants, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (grant, error) {
		var g grant
		var column *string
		err := row.Scan(&g.privilege, &column)
		if column != nil {
			g.column = " (" + pgx.Identifier{*column}.Sanitize() + ")"
		}
		return g, err
	})
	if err != nil {
		return err
	}
	if len(grants) == 0 {
		return fmt.Errorf("%s holds no privilege on job_record", owner)
	}
	for _, g := range grants {
		switch g.privilege {
		case "SELECT", "INSERT", "UPDATE", "DELETE", "REFERENCES", "TRUNCATE", "TRIGGER":
		default:
			return fmt.Errorf("unexpected privilege %q", g.privilege)
		}
		if _, err := e.admin.Exec(ctx, `GRANT `+g.privilege+g.column+` ON public.bench_raw_renew TO `+
			pgx.Identifier{owner}.Sanitize()); err != nil {
			return err
		}
	}
	return nil
}
