package audit

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	sqlbundle "github.com/mightyetl/leasefence/sql"
)

// checkObjectDependencies: every function, constraint, default, index,
// trigger and rule of schema durable_jobs depends, through pg_depend, only
// on objects of pg_catalog and durable_jobs. A dependency on an operator,
// function or type of another schema means it bound by somebody's
// search_path at install time; the finding names both objects, no values.
func checkObjectDependencies(ctx context.Context, pool DB) ([]string, error) {
	return collectStrings(ctx, pool, sqlbundle.ForeignDependenciesSQL)
}

// checkDefinerOwners: the definer owner roles cannot log in and have
// no members, so nobody can SET ROLE to one and write its tables directly.
func checkDefinerOwners(ctx context.Context, pool DB) ([]string, error) {
	return collectStrings(ctx, pool, `
		SELECT 'definer owner ' || pg_catalog.quote_ident(r.rolname) || ' can log in'
		FROM pg_catalog.pg_roles r WHERE r.rolname = ANY ($1::text[]) AND r.rolcanlogin
		UNION ALL
		SELECT 'definer owner ' || pg_catalog.quote_ident(r.rolname) || ' has members: ' ||
		       pg_catalog.string_agg(pg_catalog.quote_ident(m.rolname), ', ' ORDER BY m.rolname)
		FROM pg_catalog.pg_roles r
		JOIN pg_catalog.pg_auth_members am ON am.roleid = r.oid
		JOIN pg_catalog.pg_roles m ON m.oid = am.member
		WHERE r.rolname = ANY ($1::text[])
		GROUP BY r.rolname
		ORDER BY 1`, sqlbundle.DefinerOwnerRoles)
}

// evidenceTriggers are the append-only triggers migration 001 creates on
// durable_jobs.control_evidence_record.
var evidenceTriggers = []string{"control_evidence_record_append_only", "control_evidence_record_no_truncate"}

// checkEvidenceTrigger: the evidence table is owned by
// sqlbundle.EvidenceOwnerRole (migration 014), a role nothing else uses,
// which has no elevated attribute (its login and members are
// AUDIT-DEFINER-OWNERS'); both append-only triggers of the table exist, are
// enabled (tgenabled O or A: they fire in every session), and execute
// durable_jobs.refuse_evidence_change(), owned by the table's owner. The
// function body is compared by AUDIT-FUNCTION-DRIFT. It reports nothing
// when the table is missing (AUDIT-EVIDENCE-APPEND-ONLY says so).
func checkEvidenceTrigger(ctx context.Context, pool DB) ([]string, error) {
	tableOID, err := relationOID(ctx, pool, "durable_jobs", "control_evidence_record")
	if err != nil || tableOID == 0 {
		return nil, err
	}
	findings, err := collectStrings(ctx, pool, `
		SELECT CASE WHEN r.rolname::text <> $2::text
		            THEN 'table durable_jobs.control_evidence_record is owned by ' || pg_catalog.quote_ident(r.rolname) ||
		                 ', not by ' || $2::text || ', the role that owns nothing else'
		            ELSE pg_catalog.quote_ident(r.rolname) || ', the owner of durable_jobs.control_evidence_record, has ' ||
		                 pg_catalog.concat_ws(', ', CASE WHEN r.rolsuper THEN 'SUPERUSER' END,
		                     CASE WHEN r.rolcreaterole THEN 'CREATEROLE' END, CASE WHEN r.rolcreatedb THEN 'CREATEDB' END,
		                     CASE WHEN r.rolbypassrls THEN 'BYPASSRLS' END, CASE WHEN r.rolreplication THEN 'REPLICATION' END) END
		FROM pg_catalog.pg_class c JOIN pg_catalog.pg_roles r ON r.oid = c.relowner
		WHERE c.oid = $1::oid
		  AND (r.rolname::text <> $2::text OR r.rolsuper OR r.rolcreaterole OR r.rolcreatedb OR r.rolbypassrls OR r.rolreplication)`,
		tableOID, sqlbundle.EvidenceOwnerRole)
	if err != nil {
		return nil, err
	}
	type trigger struct {
		Name, Enabled, Function, FunctionOwner, TableOwner string
	}
	rows, _ := pool.Query(ctx, `
		SELECT g.tgname::text, g.tgenabled::text, g.tgfoid::pg_catalog.regprocedure::text,
		       pg_catalog.pg_get_userbyid(p.proowner)::text, pg_catalog.pg_get_userbyid(c.relowner)::text
		FROM pg_catalog.pg_trigger g
		JOIN pg_catalog.pg_class c ON c.oid = g.tgrelid
		JOIN pg_catalog.pg_proc p ON p.oid = g.tgfoid
		WHERE g.tgrelid = $1::oid AND g.tgname = ANY ($2::text[])`, tableOID, evidenceTriggers)
	found, err := pgx.CollectRows(rows, pgx.RowToStructByPos[trigger])
	if err != nil {
		return nil, err
	}
	byName := map[string]trigger{}
	for _, t := range found {
		byName[t.Name] = t
	}
	const table = "durable_jobs.control_evidence_record"
	for _, name := range evidenceTriggers {
		t, ok := byName[name]
		if !ok {
			findings = append(findings, fmt.Sprintf("trigger %s on %s does not exist", name, table))
			continue
		}
		if t.Enabled != "O" && t.Enabled != "A" {
			findings = append(findings, fmt.Sprintf("trigger %s on %s is not enabled for every session (tgenabled %s)", name, table, t.Enabled))
		}
		if t.Function != "durable_jobs.refuse_evidence_change()" {
			findings = append(findings, fmt.Sprintf("trigger %s on %s executes %s, not durable_jobs.refuse_evidence_change()", name, table, t.Function))
		}
		if t.FunctionOwner != t.TableOwner {
			findings = append(findings, fmt.Sprintf("function %s of trigger %s is owned by %s, not by %s, the owner of %s",
				t.Function, name, t.FunctionOwner, t.TableOwner, table))
		}
	}
	return findings, nil
}
