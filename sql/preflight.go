package sqlbundle

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/tern/v2/migrate"
)

// RuntimeRoles are the bundle's four NOLOGIN groups that application login
// roles are granted (sql/roles/bundle_roles.sql).
var RuntimeRoles = []string{
	"durable_job_producer", "durable_job_worker", "durable_job_operator", "durable_job_auditor",
}

// DefinerOwnerRoles are the bundle's NOLOGIN roles that own one
// function family each, and durable_job_evidence_owner, which owns the
// evidence table and its guard. Nothing but the bundle may act as one of
// them: they have no login and no members.
var DefinerOwnerRoles = []string{
	"durable_job_producer_owner", "durable_job_claim_owner", "durable_job_renewal_owner",
	"durable_job_terminal_owner", "durable_job_policy_owner", "durable_job_audit_owner",
	"durable_job_retention_owner", // created by the retention migration
	EvidenceOwnerRole,             // created by migration 014
}

// EvidenceOwnerRole owns durable_jobs.control_evidence_record, its identity
// sequence and its append-only guard (migration 014): NOLOGIN, without
// members, owning nothing else, so that no login acts as the evidence
// table's owner, who could disable its triggers.
const EvidenceOwnerRole = "durable_job_evidence_owner"

// migrationPrefix is run at the start of every migration, inside its
// transaction, before the migration's own SQL. It pins search_path, so
// that nothing a migration creates binds an operator, function or type
// from a schema other roles can write (the installer's "$user", public),
// and it locks the version table and checks it again, so that it cannot
// be swapped or given a trigger between the preflight and tern's UPDATE of
// it at the end of the migration. Migrations must be applied by a
// superuser. The released digests are of the migrations without it.
var migrationPrefix = `SET LOCAL search_path = pg_catalog, pg_temp;
DO $leasefence_preflight$
DECLARE
    v_problem text;
BEGIN
    IF NOT (SELECT r.rolsuper FROM pg_catalog.pg_roles r WHERE r.rolname = CURRENT_USER) THEN
        RAISE EXCEPTION USING ERRCODE = '42501', MESSAGE = ` + quoteLiteral(notSuperuserMessage) + `;
    END IF;
    LOCK TABLE ` + VersionTable + ` IN EXCLUSIVE MODE;
    v_problem := (` + versionTableProblemSQL + `);
    IF v_problem IS NOT NULL THEN
        RAISE EXCEPTION USING ERRCODE = '42P17', MESSAGE = v_problem;
    END IF;
END
$leasefence_preflight$;
`

const notSuperuserMessage = "the leasefence bundle must be applied by a superuser: it creates cluster-wide roles " +
	"and the functions they own; connect as a superuser (for example postgres) to run migrate"

// versionTableProblemSQL returns NULL when the version table is missing or
// is exactly the table tern creates (a plain table with the one column
// version int4 NOT NULL, without triggers, rules, row security, checks,
// indexes, inheritance or defaults, owned by the current role or a
// superuser), and otherwise a sentence that says what is wrong. Every name
// is qualified: it runs under any search_path.
const versionTableProblemSQL = `WITH t AS (
    SELECT c.oid, c.relkind, c.relrowsecurity, c.relforcerowsecurity, c.relowner
    FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
    WHERE n.nspname = 'public' AND c.relname = 'leasefence_schema_version')
SELECT 'refusing to migrate: ` + VersionTable + ` is not the table leasefence creates: ' ||
       pg_catalog.string_agg(p.problem, '; ' ORDER BY p.problem) ||
       '; drop it or fix it as a superuser after checking who made it'
FROM (
    SELECT 'it is not a plain table' AS problem FROM t WHERE t.relkind <> 'r'
    UNION ALL SELECT 'it has triggers' FROM t WHERE EXISTS (SELECT 1 FROM pg_catalog.pg_trigger g WHERE g.tgrelid = t.oid)
    UNION ALL SELECT 'it has rules' FROM t WHERE EXISTS (SELECT 1 FROM pg_catalog.pg_rewrite w WHERE w.ev_class = t.oid)
    UNION ALL SELECT 'it has row-level security' FROM t WHERE t.relrowsecurity OR t.relforcerowsecurity
        OR EXISTS (SELECT 1 FROM pg_catalog.pg_policy p WHERE p.polrelid = t.oid)
    UNION ALL SELECT 'it has constraints' FROM t WHERE EXISTS (SELECT 1 FROM pg_catalog.pg_constraint k WHERE k.conrelid = t.oid)
    UNION ALL SELECT 'it has indexes' FROM t WHERE EXISTS (SELECT 1 FROM pg_catalog.pg_index i WHERE i.indrelid = t.oid)
    UNION ALL SELECT 'it takes part in inheritance' FROM t WHERE EXISTS (
        SELECT 1 FROM pg_catalog.pg_inherits h WHERE h.inhrelid = t.oid OR h.inhparent = t.oid)
    UNION ALL SELECT 'its columns are not exactly version int4 NOT NULL' FROM t WHERE (
        SELECT pg_catalog.count(*) FILTER (WHERE NOT a.attisdropped) <> 1
            OR pg_catalog.bool_or(NOT a.attisdropped AND (a.attname <> 'version' OR a.atttypid <> 'pg_catalog.int4'::pg_catalog.regtype
                OR NOT a.attnotnull OR a.atthasdef OR a.attgenerated <> '' OR a.attidentity <> ''))
        FROM pg_catalog.pg_attribute a WHERE a.attrelid = t.oid AND a.attnum > 0)
    UNION ALL SELECT 'it is owned by ' || pg_catalog.quote_ident(o.rolname) || ', not the installing role or a superuser'
        FROM t JOIN pg_catalog.pg_roles o ON o.oid = t.relowner
        WHERE NOT o.rolsuper AND o.rolname <> CURRENT_USER
) p
HAVING pg_catalog.count(*) > 0`

// roleProblemsSQL returns one sentence per pre-existing bundle role that the
// bundle would otherwise reuse as found although it is not what the bundle
// creates: a role with LOGIN or with SUPERUSER, CREATEROLE, CREATEDB,
// BYPASSRLS or REPLICATION; a definer owner with members; a bundle role that
// is a member of any role but the two the bundle grants
// (durable_job_operator in durable_job_producer and durable_job_auditor).
const roleProblemsSQL = `WITH b AS (
    SELECT r.oid, r.rolname, r.rolname LIKE '%\_owner' AS is_owner, r.rolcanlogin, r.rolsuper, r.rolcreaterole,
           r.rolcreatedb, r.rolbypassrls, r.rolreplication
    FROM pg_catalog.pg_roles r WHERE r.rolname = ANY ($1::text[]))
SELECT pg_catalog.quote_ident(b.rolname) || ' can log in' FROM b WHERE b.rolcanlogin
UNION ALL
SELECT pg_catalog.quote_ident(b.rolname) || ' has ' || pg_catalog.concat_ws(', ',
        CASE WHEN b.rolsuper THEN 'SUPERUSER' END, CASE WHEN b.rolcreaterole THEN 'CREATEROLE' END,
        CASE WHEN b.rolcreatedb THEN 'CREATEDB' END, CASE WHEN b.rolbypassrls THEN 'BYPASSRLS' END,
        CASE WHEN b.rolreplication THEN 'REPLICATION' END)
    FROM b WHERE b.rolsuper OR b.rolcreaterole OR b.rolcreatedb OR b.rolbypassrls OR b.rolreplication
UNION ALL
SELECT pg_catalog.quote_ident(b.rolname) || ' has members (' ||
        pg_catalog.string_agg(pg_catalog.quote_ident(m.rolname), ', ' ORDER BY m.rolname) || ')'
    FROM b JOIN pg_catalog.pg_auth_members am ON am.roleid = b.oid
    JOIN pg_catalog.pg_roles m ON m.oid = am.member
    WHERE b.is_owner GROUP BY b.rolname
UNION ALL
SELECT pg_catalog.quote_ident(b.rolname) || ' is a member of ' ||
        pg_catalog.string_agg(pg_catalog.quote_ident(g.rolname), ', ' ORDER BY g.rolname)
    FROM b JOIN pg_catalog.pg_auth_members am ON am.member = b.oid
    JOIN pg_catalog.pg_roles g ON g.oid = am.roleid
    WHERE NOT (b.rolname = 'durable_job_operator' AND g.rolname IN ('durable_job_producer', 'durable_job_auditor'))
    GROUP BY b.rolname
ORDER BY 1`

// PreflightError is a refusal of the preflight: the database is not one the
// bundle can be applied to safely. Nothing has been changed.
type PreflightError struct {
	// Problems are the reasons, one sentence each.
	Problems []string
}

// Error joins the problems.
func (e *PreflightError) Error() string {
	return "refusing to migrate, nothing was changed: " + strings.Join(e.Problems, "; ")
}

// Preflight checks, reading the catalogs only, that the bundle can be
// applied over conn without handing the installer's privileges to anybody:
// the connecting role is a superuser (unless the version table already
// exists, when each migration checks that itself, see migrationPrefix), the
// version table is missing or is exactly the table tern creates, and the
// bundle roles that exist already are as the bundle creates them. It
// returns a *PreflightError listing every problem, or nil. NewMigrator calls
// it before tern touches the database.
func Preflight(ctx context.Context, conn *pgx.Conn) error {
	var problems []string
	var superuser, versionTableExists bool
	err := conn.QueryRow(ctx, `SELECT r.rolsuper, pg_catalog.to_regclass($1) IS NOT NULL
		FROM pg_catalog.pg_roles r WHERE r.rolname = CURRENT_USER`, VersionTable).Scan(&superuser, &versionTableExists)
	if err != nil {
		return fmt.Errorf("preflight: read the connecting role: %w", err)
	}
	if !superuser && !versionTableExists {
		problems = append(problems, notSuperuserMessage)
	}
	var tableProblem *string
	if err := conn.QueryRow(ctx, versionTableProblemSQL).Scan(&tableProblem); err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("preflight: read the version table: %w", err)
	}
	if tableProblem != nil {
		problems = append(problems, strings.TrimPrefix(*tableProblem, "refusing to migrate: "))
	}
	rows, _ := conn.Query(ctx, roleProblemsSQL, append(append([]string{}, RuntimeRoles...), DefinerOwnerRoles...))
	roleProblems, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return fmt.Errorf("preflight: read the bundle roles: %w", err)
	}
	for _, p := range roleProblems {
		problems = append(problems, "bundle role "+p+" (the bundle's roles are NOLOGIN, without SUPERUSER, "+
			"CREATEROLE, CREATEDB, BYPASSRLS or REPLICATION, and its definer owners have no members; "+
			"fix or drop the role as a superuser after checking who made it)")
	}
	if len(problems) > 0 {
		return &PreflightError{Problems: problems}
	}
	return nil
}

// pinMigrations puts migrationPrefix in front of the up and down SQL of
// every migration m has loaded.
func pinMigrations(m *migrate.Migrator) {
	for _, mig := range m.Migrations {
		mig.UpSQL = migrationPrefix + mig.UpSQL
		if mig.DownSQL != "" {
			mig.DownSQL = migrationPrefix + mig.DownSQL
		}
	}
}

// quoteLiteral quotes s as an SQL string literal.
func quoteLiteral(s string) string {
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}

// ErrForeignVersionTable is the error ReadVersion wraps when VersionTable
// is not the plain table tern creates.
var ErrForeignVersionTable = errors.New("refusing to read the version")

// RowQuerier is what ReadVersion reads through: a *pgx.Conn, a
// *pgxpool.Pool or a pgx.Tx.
type RowQuerier interface {
	// QueryRow runs a query that returns one row, as pgx's QueryRow does.
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// ReadVersion returns the version recorded in VersionTable, and false when
// the table does not exist (version 0). It refuses to read a table that is
// not exactly the one tern creates: a view, a rule or a row-level policy
// there could run another role's code as the reader, who may be a
// superuser.
func ReadVersion(ctx context.Context, q RowQuerier) (version int32, exists bool, err error) {
	if err := q.QueryRow(ctx, `SELECT pg_catalog.to_regclass($1) IS NOT NULL`, VersionTable).Scan(&exists); err != nil {
		return 0, false, err
	}
	if !exists {
		return 0, false, nil
	}
	var problem *string
	if err := q.QueryRow(ctx, versionTableProblemSQL).Scan(&problem); err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return 0, true, err
	}
	if problem != nil {
		return 0, true, fmt.Errorf("%w: %s", ErrForeignVersionTable, strings.TrimPrefix(*problem, "refusing to migrate: "))
	}
	err = q.QueryRow(ctx, `SELECT version FROM `+VersionTable).Scan(&version)
	return version, true, err
}
