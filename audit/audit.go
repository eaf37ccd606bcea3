package audit

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/mightyetl/leasefence/controls"
	sqlbundle "github.com/mightyetl/leasefence/sql"
	"github.com/mightyetl/leasefence/textfmt"
)

// runtimeRoles are the contract's runtime roles.
var runtimeRoles = []string{"durable_job_producer", "durable_job_worker", "durable_job_operator", "durable_job_auditor"}

// requiredSearchPath is the only search_path a definer function may have.
var requiredSearchPath = []string{"pg_catalog", "pg_temp"}

// DB is what the audit needs of a database connection: *pgxpool.Pool and
// *pgx.Conn both have it. The audit reads the system catalogs and calls
// auditor functions; its only writes are the trial UPDATE and DELETE of
// AUDIT-EVIDENCE-APPEND-ONLY, each inside a transaction that is always
// rolled back.
type DB interface {
	// Query runs a query that returns rows, as pgx's Query does.
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	// QueryRow runs a query that returns one row, as pgx's QueryRow does.
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	// Begin starts a transaction, as pgx's Begin does.
	Begin(ctx context.Context) (pgx.Tx, error)
}

// Check describes one audit check: its stable identifier (AUDIT-...), its
// title, what a passing database shows and the controls it tests. The
// table lives in package controls, the one place identifiers are defined.
type Check = controls.AuditCheck

// Checks lists every check Run runs, in the order it runs them.
func Checks() []Check { return controls.AuditChecks() }

// checkFunc runs one check and returns its findings.
type checkFunc func(ctx context.Context, pool DB, o *options) ([]string, error)

// plain makes a check that needs no Option a checkFunc.
func plain(check func(ctx context.Context, pool DB) ([]string, error)) checkFunc {
	return func(ctx context.Context, pool DB, _ *options) ([]string, error) { return check(ctx, pool) }
}

// warningChecks are the checks whose findings are warnings: reported in
// CheckResult.Warnings, never failing the check or the audit.
var warningChecks = map[string]bool{controls.CheckSynchronousReplication: true}

// checkFuncs maps each check identifier of package controls to its code.
var checkFuncs = map[string]checkFunc{
	controls.CheckSearchPath:             plain(checkSearchPath),
	controls.CheckPublicExecute:          plain(checkPublicExecute),
	controls.CheckRuntimePrivileges:      plain(checkRuntimePrivileges),
	controls.CheckDefinerAttributes:      plain(checkDefinerAttributes),
	controls.CheckRenewalPayload:         plain(checkRenewalPayload),
	controls.CheckSchemaCreate:           plain(checkSchemaCreate),
	controls.CheckEvidenceAppendOnly:     plain(checkEvidenceAppendOnly),
	controls.CheckMigrationVersion:       plain(checkMigrationVersion),
	controls.CheckObjectDependencies:     plain(checkObjectDependencies),
	controls.CheckDefinerOwners:          plain(checkDefinerOwners),
	controls.CheckEvidenceTrigger:        plain(checkEvidenceTrigger),
	controls.CheckFunctionDrift:          plain(checkFunctionDrift),
	controls.CheckServerLogSecrets:       plain(checkServerLogSecrets),
	controls.CheckUnencryptedSessions:    plain(checkUnencryptedSessions),
	controls.CheckLoginTimeouts:          plain(checkRuntimeLoginTimeouts),
	controls.CheckPolicyEvidence:         plain(checkPolicyEvidence),
	controls.CheckControlEvidence:        plain(checkControlEvidence),
	controls.CheckJobStatuses:            plain(checkJobStatuses),
	controls.CheckEvidenceChain:          plain(checkEvidenceChain),
	controls.CheckAccessReview:           plain(checkAccessReview),
	controls.CheckGenerationFloor:        checkGenerationFloor,
	controls.CheckSecondPrimary:          checkSecondPrimary,
	controls.CheckSynchronousReplication: checkSynchronousReplication,
	controls.CheckTLSConfiguration:       checkTLSConfiguration,
	controls.CheckEvidenceAnchor:         checkEvidenceAnchor,
	controls.CheckServerIsPrimary:        checkServerIsPrimary,
	controls.CheckRoleChangeLogging:      checkRoleChangeLogging,
}

// CheckResult is the outcome of one check.
type CheckResult struct {
	// ID is the check's stable identifier, such as "AUDIT-SEARCH-PATH".
	ID string `json:"id"`
	// Title is the check's short name.
	Title string `json:"title"`
	// Controls lists the IDs of the controls the check tests.
	Controls []string `json:"controls"`
	// Passed is true when the check has no finding.
	Passed bool `json:"passed"`
	// Findings says, one sentence each, what the check found wrong; it is
	// empty (not nil) when the check passed. A finding names roles and
	// objects as the database holds them, control characters included.
	Findings []string `json:"findings"`
	// Warnings says, one sentence each, what a warning-only check (such as
	// AUDIT-SYNCHRONOUS-REPLICATION) found; they never fail the check. It
	// is empty (not nil) when there is none.
	Warnings []string `json:"warnings"`
}

// Report is the outcome of every check. Its JSON form is what
// `leasectl audit --output json` prints.
type Report struct {
	// Passed is true when no check has a finding.
	Passed bool `json:"passed"`
	// Findings counts the findings of every check.
	Findings int `json:"finding_count"`
	// Warnings counts the warnings of every check; they do not fail the
	// audit.
	Warnings int `json:"warning_count"`
	// Checks holds one result per check, in the order of Checks.
	Checks []CheckResult `json:"checks"`
}

// Text is the report as leasectl audit prints it: a line for each finding
// and each warning ("warning: "), each after its check's identifier, then
// a summary line. Every finding and warning is shown through
// textfmt.Visible, so that it can neither start a line of its own nor move
// the cursor.
func (r Report) Text() string {
	var b strings.Builder
	failed := 0
	for _, check := range r.Checks {
		for _, f := range check.Findings {
			_, _ = textfmt.Fprintf(&b, "%s: %s\n", check.ID, f)
		}
		for _, w := range check.Warnings {
			_, _ = textfmt.Fprintf(&b, "warning: %s: %s\n", check.ID, w)
		}
		if !check.Passed {
			failed++
		}
	}
	warnings := ""
	if r.Warnings > 0 {
		warnings = fmt.Sprintf(", %d warning(s)", r.Warnings)
	}
	if r.Passed {
		fmt.Fprintf(&b, "audit passed: %d checks, no findings%s\n", len(r.Checks), warnings)
	} else {
		fmt.Fprintf(&b, "audit failed: %d finding(s) in %d of %d checks%s\n", r.Findings, failed, len(r.Checks), warnings)
	}
	return b.String()
}

// Run runs every check against db, in the order of Checks, and returns
// their outcome. Findings are not errors: a database with findings gives a
// Report whose Passed is false and a nil error. The error is a *CheckError
// when a check could not run at all (a catalog it cannot read, a dropped
// connection); Run then stops and returns no report. Options add what the
// database alone cannot show (WithHosts).
func Run(ctx context.Context, db DB, opts ...Option) (Report, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	report := Report{Passed: true}
	for _, check := range Checks() {
		o.warnings = nil
		findings, err := checkFuncs[check.ID](ctx, db, &o)
		if err != nil {
			return Report{}, &CheckError{Check: check.ID, Err: err}
		}
		warnings := append([]string{}, o.warnings...)
		if warningChecks[check.ID] && findings != nil {
			findings, warnings = nil, append(findings, warnings...)
		}
		if findings == nil {
			findings = []string{}
		}
		report.Checks = append(report.Checks, CheckResult{
			ID: check.ID, Title: check.Title, Controls: check.Controls, Passed: len(findings) == 0,
			Findings: findings, Warnings: warnings,
		})
		report.Findings += len(findings)
		report.Warnings += len(warnings)
		if len(findings) > 0 {
			report.Passed = false
		}
	}
	return report, nil
}

// CheckError is a check that could not run (not a finding).
type CheckError struct {
	// Check is the identifier of the check that could not run.
	Check string
	// Err is why.
	Err error
}

// Error names the check and the cause.
func (e *CheckError) Error() string { return e.Check + ": " + e.Err.Error() }

// Unwrap returns the cause, so that errors.As finds a *pgconn.PgError.
func (e *CheckError) Unwrap() error { return e.Err }

// collectStrings runs a query whose rows are one text column each.
func collectStrings(ctx context.Context, pool DB, sql string, args ...any) ([]string, error) {
	rows, _ := pool.Query(ctx, sql, args...)
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// definerFunctionsSQL lists every SECURITY DEFINER function of the schema
// with its search_path setting (” when it has none).
const definerFunctionsSQL = `
SELECT p.oid::pg_catalog.regprocedure::text,
       COALESCE((SELECT pg_catalog.substr(c, 13) FROM pg_catalog.unnest(p.proconfig) AS c
                 WHERE c LIKE 'search\_path=%' LIMIT 1), '')
FROM pg_catalog.pg_proc p
JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace
WHERE n.nspname = 'durable_jobs' AND p.prosecdef
ORDER BY 1`

// definerSearchPaths returns each definer function and its search_path.
func definerSearchPaths(ctx context.Context, pool DB) ([][2]string, error) {
	rows, _ := pool.Query(ctx, definerFunctionsSQL)
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) ([2]string, error) {
		var f [2]string
		err := row.Scan(&f[0], &f[1])
		return f, err
	})
}

// splitSearchPath splits a stored search_path setting into schema names.
func splitSearchPath(setting string) []string {
	var out []string
	for _, part := range strings.Split(setting, ",") {
		part = strings.TrimSpace(part)
		if len(part) >= 2 && part[0] == '"' && part[len(part)-1] == '"' {
			part = strings.ReplaceAll(part[1:len(part)-1], `""`, `"`)
		}
		if part != "" {
			out = append(out, part)
		}
	}
	return out
}

// checkSearchPath: every SECURITY DEFINER function pins search_path to
// exactly pg_catalog, pg_temp. Without the pin, a caller could put a schema
// of its own first on the path and have the definer run the caller's
// operators or functions with the definer's privileges.
func checkSearchPath(ctx context.Context, pool DB) ([]string, error) {
	functions, err := definerSearchPaths(ctx, pool)
	if err != nil {
		return nil, err
	}
	var findings []string
	for _, f := range functions {
		got := splitSearchPath(f[1])
		switch {
		case f[1] == "":
			findings = append(findings, fmt.Sprintf("function %s does not set search_path (want pg_catalog, pg_temp)", f[0]))
		case strings.Join(got, ",") != strings.Join(requiredSearchPath, ","):
			findings = append(findings, fmt.Sprintf("function %s has search_path %q (want pg_catalog, pg_temp)", f[0], f[1]))
		}
	}
	return findings, nil
}

// checkPublicExecute: PUBLIC holds EXECUTE on no function of the schema.
// has_function_privilege with 'public' honours the default ACL, which
// grants EXECUTE to PUBLIC unless it was revoked.
func checkPublicExecute(ctx context.Context, pool DB) ([]string, error) {
	names, err := collectStrings(ctx, pool, `
		SELECT p.oid::pg_catalog.regprocedure::text
		FROM pg_catalog.pg_proc p
		JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace
		WHERE n.nspname = 'durable_jobs' AND pg_catalog.has_function_privilege('public', p.oid, 'EXECUTE')
		ORDER BY 1`)
	if err != nil {
		return nil, err
	}
	findings := make([]string, 0, len(names))
	for _, name := range names {
		findings = append(findings, fmt.Sprintf("PUBLIC can execute function %s", name))
	}
	return findings, nil
}

// checkRuntimePrivileges: the runtime roles hold no privilege on any
// relation of the schema, directly, through a role they are members of, or
// through PUBLIC; and they cannot create objects in the schema.
func checkRuntimePrivileges(ctx context.Context, pool DB) ([]string, error) {
	missing, err := collectStrings(ctx, pool, `
		SELECT r FROM pg_catalog.unnest($1::text[]) AS r
		WHERE NOT EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = r) ORDER BY 1`, runtimeRoles)
	if err != nil {
		return nil, err
	}
	var findings []string
	for _, role := range missing {
		findings = append(findings, fmt.Sprintf("runtime role %s does not exist", role))
	}
	rows, _ := pool.Query(ctx, `
		WITH runtime AS (
			SELECT oid, rolname FROM pg_catalog.pg_roles WHERE rolname = ANY($1::text[])
		), rels AS (
			SELECT c.oid, c.relkind, pg_catalog.format('%I.%I', n.nspname, c.relname) AS relname
			FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
			WHERE n.nspname = 'durable_jobs' AND c.relkind IN ('r', 'p', 'v', 'm', 'f', 'S')
		)
		SELECT r.rolname,
		       CASE rel.relkind WHEN 'S' THEN 'sequence' WHEN 'v' THEN 'view' WHEN 'm' THEN 'materialized view'
		                        WHEN 'f' THEN 'foreign table' ELSE 'table' END,
		       rel.relname,
		       ARRAY(SELECT priv FROM pg_catalog.unnest(CASE WHEN rel.relkind = 'S'
		                 THEN ARRAY['USAGE', 'SELECT', 'UPDATE']
		                 ELSE ARRAY['SELECT', 'INSERT', 'UPDATE', 'DELETE', 'TRUNCATE', 'REFERENCES', 'TRIGGER'] END) AS priv
		             WHERE CASE WHEN rel.relkind = 'S' THEN pg_catalog.has_sequence_privilege(r.oid, rel.oid, priv)
		                        ELSE pg_catalog.has_table_privilege(r.oid, rel.oid, priv) END),
		       ARRAY(SELECT pg_catalog.format('%s (%I)', priv, a.attname)
		             FROM pg_catalog.pg_attribute a
		             CROSS JOIN pg_catalog.unnest(ARRAY['SELECT', 'INSERT', 'UPDATE', 'REFERENCES']) AS priv
		             WHERE rel.relkind <> 'S' AND a.attrelid = rel.oid AND a.attnum > 0 AND NOT a.attisdropped
		               AND pg_catalog.has_column_privilege(r.oid, rel.oid, a.attnum, priv)
		               AND NOT pg_catalog.has_table_privilege(r.oid, rel.oid, priv)
		             ORDER BY a.attnum, priv)
		FROM runtime r CROSS JOIN rels rel
		ORDER BY r.rolname, rel.relname`, runtimeRoles)
	type grant struct {
		role, kind, relation string
		table, columns       []string
	}
	grants, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (grant, error) {
		var g grant
		err := row.Scan(&g.role, &g.kind, &g.relation, &g.table, &g.columns)
		return g, err
	})
	if err != nil {
		return nil, err
	}
	for _, g := range grants {
		if len(g.table) > 0 {
			findings = append(findings, fmt.Sprintf("runtime role %s holds %s on %s %s",
				g.role, strings.Join(g.table, ", "), g.kind, g.relation))
		}
		if len(g.columns) > 0 {
			findings = append(findings, fmt.Sprintf("runtime role %s holds column privileges %s on %s %s",
				g.role, strings.Join(g.columns, ", "), g.kind, g.relation))
		}
	}
	creators, err := collectStrings(ctx, pool, `
		SELECT r.rolname FROM pg_catalog.pg_roles r
		WHERE r.rolname = ANY($1::text[])
		  AND pg_catalog.has_schema_privilege(r.oid, pg_catalog.to_regnamespace('durable_jobs'), 'CREATE')
		ORDER BY 1`, runtimeRoles)
	if err != nil {
		return nil, err
	}
	for _, role := range creators {
		findings = append(findings, fmt.Sprintf("runtime role %s holds CREATE on schema durable_jobs", role))
	}
	return findings, nil
}

// checkDefinerAttributes: the owner of every SECURITY DEFINER function in
// the schema (a "definer role") is not a superuser and has no BYPASSRLS,
// CREATEROLE or CREATEDB. A definer function runs with its owner's rights,
// so an elevated owner turns any flaw in it into a cluster-wide one. Owners
// of functions that are not SECURITY DEFINER run nothing on their own
// rights and are not checked.
func checkDefinerAttributes(ctx context.Context, pool DB) ([]string, error) {
	rows, _ := pool.Query(ctx, `
		SELECT r.rolname, pg_catalog.count(*), r.rolsuper, r.rolbypassrls, r.rolcreaterole, r.rolcreatedb
		FROM pg_catalog.pg_proc p
		JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace
		JOIN pg_catalog.pg_roles r ON r.oid = p.proowner
		WHERE n.nspname = 'durable_jobs' AND p.prosecdef
		GROUP BY r.rolname, r.rolsuper, r.rolbypassrls, r.rolcreaterole, r.rolcreatedb
		ORDER BY r.rolname`)
	type owner struct {
		name                          string
		functions                     int64
		super, bypass, createRole, db bool
	}
	owners, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (owner, error) {
		var o owner
		err := row.Scan(&o.name, &o.functions, &o.super, &o.bypass, &o.createRole, &o.db)
		return o, err
	})
	if err != nil {
		return nil, err
	}
	var findings []string
	for _, o := range owners {
		var attrs []string
		for _, a := range []struct {
			on   bool
			name string
		}{{o.super, "SUPERUSER"}, {o.bypass, "BYPASSRLS"}, {o.createRole, "CREATEROLE"}, {o.db, "CREATEDB"}} {
			if a.on {
				attrs = append(attrs, a.name)
			}
		}
		if len(attrs) > 0 {
			findings = append(findings, fmt.Sprintf("definer role %s (owner of %d SECURITY DEFINER functions) has %s",
				o.name, o.functions, strings.Join(attrs, ", ")))
		}
	}
	return findings, nil
}

// checkRenewalPayload: the owners of renew_job_lease and renew_job_leases
// hold no privilege at all on the payload table, so the renewal path can
// neither read nor emit a payload.
func checkRenewalPayload(ctx context.Context, pool DB) ([]string, error) {
	payloadTable, err := relationOID(ctx, pool, "durable_jobs", "job_payload_record")
	if err != nil {
		return nil, err
	}
	if payloadTable == 0 {
		return []string{"table durable_jobs.job_payload_record does not exist"}, nil
	}
	rows, _ := pool.Query(ctx, `
		SELECT f.name, p.oid::pg_catalog.regprocedure::text, r.rolname,
		       ARRAY(SELECT priv FROM pg_catalog.unnest(ARRAY['SELECT', 'INSERT', 'UPDATE', 'DELETE', 'TRUNCATE',
		                 'REFERENCES', 'TRIGGER']) AS priv
		             WHERE pg_catalog.has_table_privilege(r.oid, $1::oid, priv)),
		       pg_catalog.has_any_column_privilege(r.oid, $1::oid, 'SELECT, INSERT, UPDATE, REFERENCES')
		FROM pg_catalog.unnest(ARRAY['renew_job_lease', 'renew_job_leases']) AS f(name)
		LEFT JOIN (pg_catalog.pg_proc p JOIN pg_catalog.pg_namespace n
		           ON n.oid = p.pronamespace AND n.nspname = 'durable_jobs') ON p.proname = f.name
		LEFT JOIN pg_catalog.pg_roles r ON r.oid = p.proowner
		ORDER BY 1, 2`, payloadTable)
	type renewal struct {
		name      string
		signature *string
		owner     *string
		table     []string
		columns   *bool
	}
	functions, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (renewal, error) {
		var f renewal
		err := row.Scan(&f.name, &f.signature, &f.owner, &f.table, &f.columns)
		return f, err
	})
	if err != nil {
		return nil, err
	}
	var findings []string
	for _, f := range functions {
		switch {
		case f.signature == nil:
			findings = append(findings, fmt.Sprintf("function durable_jobs.%s does not exist", f.name))
		case len(f.table) > 0:
			findings = append(findings, fmt.Sprintf("owner %s of %s holds %s on durable_jobs.job_payload_record",
				*f.owner, *f.signature, strings.Join(f.table, ", ")))
		case *f.columns:
			findings = append(findings, fmt.Sprintf("owner %s of %s holds column privileges on durable_jobs.job_payload_record",
				*f.owner, *f.signature))
		}
	}
	return findings, nil
}

// checkSchemaCreate: no role other than the bootstrap superuser (OID 10)
// can create objects in a schema that a definer function's search_path
// names. pg_catalog is always checked: PostgreSQL searches it first even
// when a path leaves it out. pg_temp is skipped: it is each session's own
// temporary schema, which the session can always create in; that is safe
// because it is listed last, and PostgreSQL never looks up functions or
// operators in pg_temp, so a temporary object cannot shadow a catalog one.
// Superusers are skipped as well: they bypass every privilege check, so
// "holding CREATE" means nothing for them; AUDIT-DEFINER-ATTRIBUTES makes
// sure no definer is one. A grant to PUBLIC is reported once.
func checkSchemaCreate(ctx context.Context, pool DB) ([]string, error) {
	functions, err := definerSearchPaths(ctx, pool)
	if err != nil {
		return nil, err
	}
	schemas := []string{"pg_catalog"}
	seen := map[string]bool{"pg_catalog": true, "pg_temp": true, "$user": true}
	for _, f := range functions {
		for _, s := range splitSearchPath(f[1]) {
			if !seen[s] {
				seen[s] = true
				schemas = append(schemas, s)
			}
		}
	}
	findings, err := collectStrings(ctx, pool, `
		WITH path_schemas AS (
			SELECT n.oid, n.nspname, n.nspowner,
			       pg_catalog.has_schema_privilege('public', n.oid, 'CREATE') AS public_create
			FROM pg_catalog.pg_namespace n WHERE n.nspname = ANY($1::text[])
		)
		SELECT pg_catalog.format('PUBLIC holds CREATE on schema %I', s.nspname)
		FROM path_schemas s WHERE s.public_create
		UNION ALL
		SELECT pg_catalog.format('role %I owns schema %I', r.rolname, s.nspname)
		FROM path_schemas s JOIN pg_catalog.pg_roles r ON r.oid = s.nspowner
		WHERE s.nspowner <> 10
		UNION ALL
		SELECT pg_catalog.format('role %I holds CREATE on schema %I', r.rolname, s.nspname)
		FROM path_schemas s CROSS JOIN pg_catalog.pg_roles r
		WHERE NOT s.public_create AND r.oid <> 10 AND r.oid <> s.nspowner AND NOT r.rolsuper
		  AND pg_catalog.has_schema_privilege(r.oid, s.oid, 'CREATE')
		ORDER BY 1`, schemas)
	if err != nil {
		return nil, err
	}
	for _, s := range schemas[1:] {
		var exists bool
		if err := pool.QueryRow(ctx, `SELECT pg_catalog.to_regnamespace($1) IS NOT NULL`, s).Scan(&exists); err != nil {
			return nil, err
		}
		if !exists {
			findings = append(findings, fmt.Sprintf("schema %s on a definer's search_path does not exist (anyone allowed to create it could plant objects there)", s))
		}
	}
	return findings, nil
}

// relationOID finds a relation through the catalogs (which every login may
// read) and returns its OID, 0 when it does not exist.
func relationOID(ctx context.Context, pool DB, schema, name string) (uint32, error) {
	var oid uint32
	err := pool.QueryRow(ctx, `
		SELECT c.oid FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = $1 AND c.relname = $2`, schema, name).Scan(&oid)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil
	}
	return oid, err
}

// Trigger type bits of pg_trigger.tgtype (PostgreSQL's trigger.h).
const (
	triggerTypeRow      = 1 << 0
	triggerTypeBefore   = 1 << 1
	triggerTypeDelete   = 1 << 3
	triggerTypeUpdate   = 1 << 4
	triggerTypeTruncate = 1 << 5
)

// checkEvidenceAppendOnly: enabled BEFORE triggers guard the evidence table
// against UPDATE and DELETE (per row) and TRUNCATE (per statement), and,
// when the login itself could change the table, a trial UPDATE and DELETE
// inside a transaction that is always rolled back are refused.
func checkEvidenceAppendOnly(ctx context.Context, pool DB) ([]string, error) {
	const table = "durable_jobs.control_evidence_record"
	tableOID, err := relationOID(ctx, pool, "durable_jobs", "control_evidence_record")
	if err != nil {
		return nil, err
	}
	if tableOID == 0 {
		return []string{"table " + table + " does not exist"}, nil
	}
	rows, _ := pool.Query(ctx, `
		SELECT t.tgtype::integer FROM pg_catalog.pg_trigger t
		WHERE t.tgrelid = $1::oid AND NOT t.tgisinternal AND t.tgenabled IN ('O', 'A')`, tableOID)
	types, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil {
		return nil, err
	}
	guarded := func(event, level int32) bool {
		for _, t := range types {
			if t&triggerTypeBefore != 0 && t&triggerTypeRow == level && t&event != 0 {
				return true
			}
		}
		return false
	}
	var findings []string
	if !guarded(triggerTypeUpdate, triggerTypeRow) {
		findings = append(findings, "no enabled BEFORE UPDATE row trigger guards "+table)
	}
	if !guarded(triggerTypeDelete, triggerTypeRow) {
		findings = append(findings, "no enabled BEFORE DELETE row trigger guards "+table)
	}
	if !guarded(triggerTypeTruncate, 0) {
		findings = append(findings, "no enabled BEFORE TRUNCATE trigger guards "+table)
	}
	probes := []struct{ privilege, sql string }{
		{"UPDATE", `UPDATE durable_jobs.control_evidence_record SET change_reason = 'leasectl audit probe'`},
		{"DELETE", `DELETE FROM durable_jobs.control_evidence_record`},
	}
	for _, probe := range probes {
		var can bool
		if err := pool.QueryRow(ctx, `SELECT pg_catalog.has_table_privilege($1::oid, $2)`, tableOID, probe.privilege).
			Scan(&can); err != nil {
			return nil, err
		}
		if !can {
			continue // the login cannot even try (it may also lack USAGE on the schema);
			// AUDIT-RUNTIME-TABLE-PRIVILEGES covers the runtime roles
		}
		accepted, err := probeRefused(ctx, pool, probe.sql)
		if err != nil {
			return nil, err
		}
		if accepted > 0 {
			findings = append(findings, fmt.Sprintf("a trial %s of %s was accepted for %d row(s) (rolled back)",
				probe.privilege, table, accepted))
		}
	}
	return findings, nil
}

// probeRefused runs sql in a transaction that is always rolled back. It
// returns how many rows the statement changed when the database accepted
// it, and 0 when the database refused it.
func probeRefused(ctx context.Context, pool DB, sql string) (int64, error) {
	tx, err := pool.Begin(ctx)
	if err != nil {
		return 0, err
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if _, err := tx.Exec(ctx, `SET LOCAL lock_timeout = '2s'`); err != nil {
		return 0, err
	}
	tag, err := tx.Exec(ctx, sql)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return 0, nil // refused (the guard raises LF004; a privilege error is a refusal too)
	}
	if err != nil {
		return 0, err
	}
	return tag.RowsAffected(), nil
}

// checkMigrationVersion: the database is at the newest bundle version this
// binary carries.
func checkMigrationVersion(ctx context.Context, pool DB) ([]string, error) {
	newest := sqlbundle.NewestVersion()
	version, finding, err := recordedVersion(ctx, pool)
	if err != nil || finding != "" {
		return optionalFinding(finding), err
	}
	switch {
	case version < newest:
		return []string{fmt.Sprintf("database is at migration version %d, this leasectl carries %d: run leasectl migrate up", version, newest)}, nil
	case version > newest:
		return []string{fmt.Sprintf("database is at migration version %d, newer than the %d this leasectl carries: upgrade leasectl", version, newest)}, nil
	}
	return nil, nil
}

// checkFunctionDrift: every function of the schema is exactly what the
// database's recorded version installs, by the manifest this binary
// carries (a body replaced by hand, a function added or dropped, a
// migration skipped or an owner or grant changed is a finding).
func checkFunctionDrift(ctx context.Context, pool DB) ([]string, error) {
	version, finding, err := recordedVersion(ctx, pool)
	if err != nil || finding != "" {
		return optionalFinding(finding), err
	}
	live, err := sqlbundle.FunctionDigests(ctx, pool)
	if err != nil {
		return nil, err
	}
	return sqlbundle.BundleManifest().Drift(version, live), nil
}

// optionalFinding is finding as a list: empty when it is "".
func optionalFinding(finding string) []string {
	if finding == "" {
		return nil
	}
	return []string{finding}
}

// recordedVersion reads the bundle version the database records: from the
// version table when the login may read it, else from the auditor function
// bundle_migration_version. When it cannot tell (no schema, no access) it
// returns a finding saying why instead.
func recordedVersion(ctx context.Context, pool DB) (version int32, finding string, err error) {
	versionSchema, versionTable, _ := strings.Cut(sqlbundle.VersionTable, ".")
	versionOID, err := relationOID(ctx, pool, versionSchema, versionTable)
	if err != nil {
		return 0, "", err
	}
	// Objects are found through the catalogs by name and checked by OID:
	// a name lookup would need USAGE on the schema, which a plain login
	// lacks, and the OID forms of has_*_privilege accept a missing object.
	var schema, tableReadable, functionCallable bool
	if err := pool.QueryRow(ctx, `
		SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_namespace WHERE nspname = 'durable_jobs'),
		       $1::oid <> 0 AND pg_catalog.has_table_privilege($1::oid, 'SELECT')
		           AND pg_catalog.has_schema_privilege($2::text, 'USAGE'),
		       COALESCE((SELECT pg_catalog.has_function_privilege(p.oid, 'EXECUTE')
		                   AND pg_catalog.has_schema_privilege(n.oid, 'USAGE')
		                 FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace
		                 WHERE n.nspname = 'durable_jobs' AND p.proname = 'bundle_migration_version'
		                   AND p.pronargs = 0), false)`,
		versionOID, versionSchema).Scan(&schema, &tableReadable, &functionCallable); err != nil {
		return 0, "", err
	}
	if !schema {
		return 0, fmt.Sprintf("schema durable_jobs does not exist: the bundle is not applied (newest version %d)", sqlbundle.NewestVersion()), nil
	}
	switch {
	case tableReadable:
		version, _, err = sqlbundle.ReadVersion(ctx, pool)
		if errors.Is(err, sqlbundle.ErrForeignVersionTable) {
			return 0, err.Error(), nil
		}
	case functionCallable:
		err = pool.QueryRow(ctx, `SELECT migration_version FROM durable_jobs.bundle_migration_version()`).Scan(&version)
		if errors.Is(err, pgx.ErrNoRows) {
			err = nil
		}
	default:
		return 0, fmt.Sprintf("this login can read neither %s nor durable_jobs.bundle_migration_version(); grant it durable_job_auditor", sqlbundle.VersionTable), nil
	}
	return version, "", err
}
