package audit

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/mightyetl/leasefence/controls"
	"github.com/mightyetl/leasefence/internal/testdb"
	sqlbundle "github.com/mightyetl/leasefence/sql"
)

// These tests break one thing at a time in a database of their own and
// run the audit over it: each broken guard is a finding of the check that
// owns it, and a catalog the audit cannot read stops it with the check's
// name.

// audited is one audit as leasectl audit prints it: the finding lines
// ("ID: finding"), the checks that have findings in check order, and
// whether it passed.
type audited struct {
	stdout string
	ids    []string
	passed bool
}

// runAudit runs the audit as the login of databaseURL.
func runAudit(t *testing.T, databaseURL string) (audited, Report) {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), databaseURL)
	require.NoError(t, err)
	defer pool.Close()
	report, err := Run(context.Background(), pool)
	require.NoError(t, err)
	require.Len(t, report.Checks, len(Checks()))
	var b strings.Builder
	var ids []string
	for _, c := range report.Checks {
		require.Equal(t, len(c.Findings) == 0, c.Passed, c.ID)
		if !c.Passed {
			ids = append(ids, c.ID)
		}
		for _, f := range c.Findings {
			b.WriteString(c.ID + ": " + f + "\n")
		}
	}
	require.Equal(t, strings.Count(b.String(), "\n"), report.Findings)
	require.Equal(t, report.Findings == 0, report.Passed)
	return audited{stdout: b.String(), ids: ids, passed: report.Passed}, report
}

// execSQL runs SQL as the superuser of the test database.
func execSQL(t *testing.T, pool *pgxpool.Pool, sql string, args ...any) {
	t.Helper()
	_, err := pool.Exec(context.Background(), sql, args...)
	require.NoError(t, err, sql)
}

// plainLoginURL makes a login role without any runtime role, dropped after
// the test's databases are.
func plainLoginURL(t *testing.T, db *testdb.DB, name string) string {
	t.Helper()
	admin := db.Pool(t)
	execSQL(t, admin, fmt.Sprintf(`CREATE ROLE %s LOGIN PASSWORD 'plain-login-pw'`, name))
	t.Cleanup(func() {
		p, err := pgxpool.New(context.Background(), testdb.AdminURL(t, "postgres"))
		if err == nil {
			_, _ = p.Exec(context.Background(), "DROP ROLE IF EXISTS "+name)
			p.Close()
		}
	})
	u, err := url.Parse(db.URL)
	require.NoError(t, err)
	u.User = url.UserPassword(name, "plain-login-pw")
	return u.String()
}

// randomSuffix returns a short name suffix unique to this run.
func randomSuffix(t *testing.T) string {
	t.Helper()
	var s string
	require.NoError(t, testdbAdmin(t).QueryRow(context.Background(),
		`SELECT substr(md5(random()::text), 1, 10)`).Scan(&s))
	return s
}

// testdbAdmin is a superuser pool on the shared server's postgres database.
func testdbAdmin(t *testing.T) *pgxpool.Pool {
	t.Helper()
	p, err := pgxpool.New(context.Background(), testdb.AdminURL(t, "postgres"))
	require.NoError(t, err)
	t.Cleanup(p.Close)
	return p
}

// elevatedRole creates a role with the given attributes for one test and
// drops it after the test's databases are gone (so it must be created
// before testdb.New registers its own cleanup).
func elevatedRole(t *testing.T, attributes string) string {
	t.Helper()
	admin := testdbAdmin(t)
	name := "lf_elevated_" + randomSuffix(t)
	execSQL(t, admin, fmt.Sprintf("CREATE ROLE %s NOLOGIN %s", name, attributes))
	t.Cleanup(func() {
		p, err := pgxpool.New(context.Background(), testdb.AdminURL(t, "postgres"))
		if err == nil {
			_, _ = p.Exec(context.Background(), "DROP ROLE IF EXISTS "+name)
			p.Close()
		}
	})
	return name
}

func TestRunWithoutTheAuditorRoleCannotReadTheVersion(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	text, report := runAudit(t, plainLoginURL(t, db, "lf_plain_"+randomSuffix(t)))
	require.Equal(t, []string{controls.CheckMigrationVersion, controls.CheckFunctionDrift, controls.CheckPolicyEvidence,
		controls.CheckControlEvidence, controls.CheckJobStatuses, controls.CheckEvidenceChain}, text.ids)
	require.Contains(t, text.stdout, "AUDIT-CONTROLS-MATCH-EVIDENCE: cannot tell: this login cannot execute durable_jobs.control_evidence_mismatches(); grant it durable_job_auditor")
	require.Contains(t, text.stdout, "AUDIT-JOB-STATUSES-EXPLAINED: cannot tell: this login cannot execute durable_jobs.job_status_mismatches(); grant it durable_job_auditor")
	require.Contains(t, text.stdout, "AUDIT-POLICY-MATCHES-EVIDENCE: cannot tell: this login cannot execute durable_jobs.policy_evidence_mismatches(); grant it durable_job_auditor")
	require.Contains(t, text.stdout, "AUDIT-EVIDENCE-CHAIN: cannot tell: this login cannot execute durable_jobs.control_evidence_chain(); grant it durable_job_auditor")
	require.Contains(t, text.stdout, "AUDIT-MIGRATION-VERSION: this login can read neither")
	require.Contains(t, text.stdout, "AUDIT-FUNCTION-DRIFT: this login can read neither")
	require.Contains(t, text.stdout, "grant it durable_job_auditor")
	require.Equal(t, 6, report.Findings)
}

func TestAuditFindsEveryBrokenCheck(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		setup func(t *testing.T) (breakSQL []string)
		want  []string // check IDs with findings, in check order
		lines []string // text the findings must contain
	}{
		{"search_path reset", func(*testing.T) []string {
			return []string{`ALTER FUNCTION durable_jobs.renew_job_lease(bigint, uuid, text) RESET search_path`}
		}, []string{controls.CheckSearchPath, controls.CheckFunctionDrift},
			[]string{"AUDIT-SEARCH-PATH: function durable_jobs.renew_job_lease(bigint,uuid,text) does not set search_path"}},
		{"search_path with public first", func(*testing.T) []string {
			return []string{`ALTER FUNCTION durable_jobs.job_status_totals() SET search_path = public, pg_catalog, pg_temp`}
		}, []string{controls.CheckSearchPath, controls.CheckSchemaCreate, controls.CheckFunctionDrift},
			[]string{`AUDIT-SEARCH-PATH: function durable_jobs.job_status_totals() has search_path "public, pg_catalog, pg_temp"`,
				"AUDIT-SEARCH-PATH-CREATE: role pg_database_owner owns schema public"}},
		{"search_path naming a missing schema", func(*testing.T) []string {
			return []string{`ALTER FUNCTION durable_jobs.job_status_totals() SET search_path = pg_catalog, nowhere_schema, pg_temp`}
		}, []string{controls.CheckSearchPath, controls.CheckSchemaCreate, controls.CheckFunctionDrift},
			[]string{"AUDIT-SEARCH-PATH-CREATE: schema nowhere_schema on a definer's search_path does not exist"}},
		{"PUBLIC execute", func(*testing.T) []string {
			return []string{`GRANT EXECUTE ON FUNCTION durable_jobs.job_status_totals() TO PUBLIC`}
		}, []string{controls.CheckPublicExecute, controls.CheckFunctionDrift},
			[]string{"AUDIT-PUBLIC-EXECUTE: PUBLIC can execute function durable_jobs.job_status_totals()"}},
		{"PUBLIC execute by default on a new helper", func(*testing.T) []string {
			return []string{`CREATE FUNCTION durable_jobs.stray_helper() RETURNS int LANGUAGE sql RETURN 1`}
		}, []string{controls.CheckPublicExecute, controls.CheckFunctionDrift},
			[]string{"AUDIT-PUBLIC-EXECUTE: PUBLIC can execute function durable_jobs.stray_helper()"}},
		{"runtime role table privilege", func(*testing.T) []string {
			return []string{`GRANT SELECT, UPDATE ON durable_jobs.job_record TO durable_job_worker`}
		}, []string{controls.CheckRuntimePrivileges},
			[]string{"AUDIT-RUNTIME-TABLE-PRIVILEGES: runtime role durable_job_worker holds SELECT, UPDATE on table durable_jobs.job_record"}},
		{"runtime role column privilege, inherited by the operator", func(*testing.T) []string {
			return []string{`GRANT SELECT (job_payload) ON durable_jobs.job_payload_record TO durable_job_producer`}
		}, []string{controls.CheckRuntimePrivileges},
			[]string{"AUDIT-RUNTIME-TABLE-PRIVILEGES: runtime role durable_job_producer holds column privileges SELECT (job_payload) on table durable_jobs.job_payload_record",
				"AUDIT-RUNTIME-TABLE-PRIVILEGES: runtime role durable_job_operator holds column privileges SELECT (job_payload) on table durable_jobs.job_payload_record"}},
		{"PUBLIC table privilege reaches every runtime role", func(*testing.T) []string {
			return []string{`GRANT SELECT ON durable_jobs.queue_lease_policy TO PUBLIC`}
		}, []string{controls.CheckRuntimePrivileges, controls.CheckAccessReview},
			[]string{"AUDIT-RUNTIME-TABLE-PRIVILEGES: runtime role durable_job_auditor holds SELECT on table durable_jobs.queue_lease_policy",
				"AUDIT-ACCESS-REVIEW: PUBLIC holds SELECT on durable_jobs.queue_lease_policy"}},
		{"runtime role sequence and view privileges", func(*testing.T) []string {
			return []string{`CREATE SEQUENCE durable_jobs.stray_sequence`,
				`GRANT USAGE ON SEQUENCE durable_jobs.stray_sequence TO durable_job_worker`,
				`CREATE VIEW durable_jobs.stray_view AS SELECT 1 AS one`,
				`GRANT SELECT ON durable_jobs.stray_view TO durable_job_auditor`}
		}, []string{controls.CheckRuntimePrivileges},
			[]string{"AUDIT-RUNTIME-TABLE-PRIVILEGES: runtime role durable_job_worker holds USAGE on sequence durable_jobs.stray_sequence",
				"AUDIT-RUNTIME-TABLE-PRIVILEGES: runtime role durable_job_auditor holds SELECT on view durable_jobs.stray_view"}},
		{"runtime role CREATE on the schema", func(*testing.T) []string {
			return []string{`GRANT CREATE ON SCHEMA durable_jobs TO durable_job_auditor`}
		}, []string{controls.CheckRuntimePrivileges},
			[]string{"AUDIT-RUNTIME-TABLE-PRIVILEGES: runtime role durable_job_auditor holds CREATE on schema durable_jobs"}},
		{"definer owned by an elevated role", func(t *testing.T) []string {
			role := elevatedRole(t, "CREATEDB BYPASSRLS CREATEROLE")
			return []string{`ALTER FUNCTION durable_jobs.job_status_totals() OWNER TO ` + role}
		}, []string{controls.CheckDefinerAttributes, controls.CheckFunctionDrift},
			[]string{"(owner of 1 SECURITY DEFINER functions) has BYPASSRLS, CREATEROLE, CREATEDB"}},
		{"definer owned by a superuser", func(t *testing.T) []string {
			return []string{`ALTER FUNCTION durable_jobs.job_status_totals() OWNER TO ` + elevatedRole(t, "SUPERUSER")}
		}, []string{controls.CheckDefinerAttributes, controls.CheckFunctionDrift},
			[]string{"(owner of 1 SECURITY DEFINER functions) has SUPERUSER"}},
		{"renewal owner can read payloads", func(*testing.T) []string {
			return []string{`GRANT SELECT ON durable_jobs.job_payload_record TO durable_job_renewal_owner`}
		}, []string{controls.CheckRenewalPayload},
			[]string{"AUDIT-RENEWAL-PAYLOAD: owner durable_job_renewal_owner of durable_jobs.renew_job_lease(bigint,uuid,text) holds SELECT on durable_jobs.job_payload_record",
				"AUDIT-RENEWAL-PAYLOAD: owner durable_job_renewal_owner of durable_jobs.renew_job_leases(text,bigint[],uuid[]) holds SELECT on durable_jobs.job_payload_record"}},
		{"renewal owned by a role with payload columns", func(*testing.T) []string {
			return []string{`ALTER FUNCTION durable_jobs.renew_job_leases(text, bigint[], uuid[]) OWNER TO durable_job_claim_owner`}
		}, []string{controls.CheckRenewalPayload, controls.CheckFunctionDrift},
			[]string{"AUDIT-RENEWAL-PAYLOAD: owner durable_job_claim_owner of durable_jobs.renew_job_leases(text,bigint[],uuid[]) holds column privileges on durable_jobs.job_payload_record"}},
		{"renewal function missing", func(*testing.T) []string {
			return []string{`DROP FUNCTION durable_jobs.renew_job_leases(text, bigint[], uuid[]) CASCADE`}
		}, []string{controls.CheckRenewalPayload, controls.CheckFunctionDrift},
			[]string{"AUDIT-RENEWAL-PAYLOAD: function durable_jobs.renew_job_leases does not exist"}},
		{"PUBLIC may create in pg_catalog", func(*testing.T) []string {
			return []string{`GRANT CREATE ON SCHEMA pg_catalog TO PUBLIC`}
		}, []string{controls.CheckSchemaCreate},
			[]string{"AUDIT-SEARCH-PATH-CREATE: PUBLIC holds CREATE on schema pg_catalog"}},
		{"a runtime role may create in pg_catalog", func(*testing.T) []string {
			return []string{`GRANT CREATE ON SCHEMA pg_catalog TO durable_job_worker`}
		}, []string{controls.CheckSchemaCreate},
			[]string{"AUDIT-SEARCH-PATH-CREATE: role durable_job_worker holds CREATE on schema pg_catalog"}},
		{"evidence triggers disabled", func(*testing.T) []string {
			return []string{`ALTER TABLE durable_jobs.control_evidence_record DISABLE TRIGGER USER`}
		}, []string{controls.CheckEvidenceAppendOnly, controls.CheckEvidenceTrigger, controls.CheckEvidenceChain},
			[]string{"AUDIT-EVIDENCE-APPEND-ONLY: no enabled BEFORE UPDATE row trigger guards durable_jobs.control_evidence_record",
				"AUDIT-EVIDENCE-CHAIN: trigger control_evidence_record_chain on durable_jobs.control_evidence_record does not fire in every session (tgenabled D)",
				"AUDIT-EVIDENCE-APPEND-ONLY: no enabled BEFORE DELETE row trigger guards durable_jobs.control_evidence_record",
				"AUDIT-EVIDENCE-APPEND-ONLY: no enabled BEFORE TRUNCATE trigger guards durable_jobs.control_evidence_record",
				"AUDIT-EVIDENCE-APPEND-ONLY: a trial UPDATE of durable_jobs.control_evidence_record was accepted for",
				"AUDIT-EVIDENCE-APPEND-ONLY: a trial DELETE of durable_jobs.control_evidence_record was accepted for"}},
		{"evidence guard replaced by one that lets changes through", func(*testing.T) []string {
			return []string{`CREATE OR REPLACE FUNCTION durable_jobs.refuse_evidence_change() RETURNS trigger
				LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$BEGIN IF TG_OP = 'DELETE' THEN RETURN OLD; END IF; RETURN NEW; END$$`}
		}, []string{controls.CheckEvidenceAppendOnly, controls.CheckFunctionDrift},
			[]string{"AUDIT-EVIDENCE-APPEND-ONLY: a trial UPDATE of durable_jobs.control_evidence_record was accepted for",
				"AUDIT-EVIDENCE-APPEND-ONLY: a trial DELETE of durable_jobs.control_evidence_record was accepted for"}},
		{"function body replaced by hand", func(*testing.T) []string {
			return []string{`CREATE OR REPLACE FUNCTION durable_jobs.cancel_job(p_job_record_id bigint) RETURNS boolean
				LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$SELECT false$$`}
		}, []string{controls.CheckFunctionDrift},
			[]string{fmt.Sprintf("AUDIT-FUNCTION-DRIFT: function durable_jobs.cancel_job(bigint) differs from what version %d installs (definition, owner or grants)", sqlbundle.NewestVersion())}},
		{"function added and one dropped by hand", func(*testing.T) []string {
			return []string{`CREATE FUNCTION durable_jobs.extra_helper_function() RETURNS integer LANGUAGE sql SET search_path = pg_catalog, pg_temp AS $$SELECT 1$$`,
				`REVOKE ALL ON FUNCTION durable_jobs.extra_helper_function() FROM PUBLIC`,
				`DROP FUNCTION durable_jobs.job_status_totals()`}
		}, []string{controls.CheckFunctionDrift},
			[]string{fmt.Sprintf("AUDIT-FUNCTION-DRIFT: function durable_jobs.job_status_totals() is missing (version %d installs it)", sqlbundle.NewestVersion()),
				fmt.Sprintf("AUDIT-FUNCTION-DRIFT: function durable_jobs.extra_helper_function() is not installed by version %d", sqlbundle.NewestVersion())}},
		{"version table replaced by a view that runs code as its reader", func(*testing.T) []string {
			return []string{`CREATE TABLE public.audit_reader_seen (who text)`,
				`CREATE FUNCTION public.note_reader() RETURNS integer LANGUAGE sql AS
					$$INSERT INTO public.audit_reader_seen VALUES (current_user) RETURNING 2$$`,
				`DROP TABLE ` + sqlbundle.VersionTable,
				`CREATE VIEW ` + sqlbundle.VersionTable + ` AS SELECT public.note_reader() AS version`}
		}, []string{controls.CheckMigrationVersion, controls.CheckFunctionDrift},
			[]string{"AUDIT-MIGRATION-VERSION: refusing to read the version: " + sqlbundle.VersionTable + " is not the table leasefence creates: it has rules; it is not a plain table",
				"AUDIT-FUNCTION-DRIFT: refusing to read the version: "}},
		{"claim_next_jobs without the generation floor", func(*testing.T) []string {
			return []string{claimReplaced("GREATEST(j.lease_fencing_generation + 1, v_floor)", "j.lease_fencing_generation + 1")}
		}, []string{controls.CheckFunctionDrift, controls.CheckGenerationFloor},
			[]string{"AUDIT-GENERATION-FLOOR: function claim_next_jobs does not raise the fencing generation to the WAL timeline's floor"}},
		{"migration version behind", func(*testing.T) []string {
			return []string{`UPDATE ` + sqlbundle.VersionTable + ` SET version = 1`}
		}, []string{controls.CheckMigrationVersion, controls.CheckFunctionDrift},
			[]string{fmt.Sprintf("AUDIT-MIGRATION-VERSION: database is at migration version 1, this leasectl carries %d: run leasectl migrate up", sqlbundle.NewestVersion())}},
		{"migration version ahead", func(*testing.T) []string {
			return []string{`UPDATE ` + sqlbundle.VersionTable + ` SET version = 99`}
		}, []string{controls.CheckMigrationVersion, controls.CheckFunctionDrift},
			[]string{"AUDIT-MIGRATION-VERSION: database is at migration version 99, newer than",
				"AUDIT-FUNCTION-DRIFT: version 99 is not in this build's manifest"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			statements := tc.setup(t)
			db := testdb.New(t)
			pool := db.Pool(t)
			var evidenceBefore int
			require.NoError(t, pool.QueryRow(context.Background(),
				`SELECT count(*) FROM durable_jobs.control_evidence_record`).Scan(&evidenceBefore))
			for _, sql := range statements {
				execSQL(t, pool, sql)
			}
			text, _ := runAudit(t, db.URL)
			require.False(t, text.passed)
			require.Equal(t, tc.want, text.ids, text.stdout)
			for _, line := range tc.lines {
				require.Contains(t, text.stdout, line)
			}
			var planted bool
			require.NoError(t, pool.QueryRow(context.Background(),
				`SELECT to_regclass('public.audit_reader_seen') IS NOT NULL`).Scan(&planted))
			if planted {
				var readerSeen int
				require.NoError(t, pool.QueryRow(context.Background(),
					`SELECT count(*) FROM public.audit_reader_seen`).Scan(&readerSeen))
				require.Zero(t, readerSeen, "the audit never ran code planted in the version table")
			}
			// The trial changes were rolled back: the evidence is intact.
			var evidenceAfter int
			require.NoError(t, pool.QueryRow(context.Background(),
				`SELECT count(*) FROM durable_jobs.control_evidence_record WHERE change_reason <> 'leasectl audit probe'`).
				Scan(&evidenceAfter))
			require.Equal(t, evidenceBefore, evidenceAfter)
		})
	}
}

func TestRunOfAnEmptyDatabaseReportsTheMissingBundle(t *testing.T) {
	t.Parallel()
	db := testdb.NewEmpty(t)
	text, _ := runAudit(t, db.URL)
	require.Equal(t, []string{controls.CheckRenewalPayload, controls.CheckEvidenceAppendOnly, controls.CheckMigrationVersion,
		controls.CheckFunctionDrift}, text.ids)
	require.Contains(t, text.stdout, "AUDIT-MIGRATION-VERSION: schema durable_jobs does not exist: the bundle is not applied")
}

func TestRunAsAuditorWithDisabledTriggersSeesTheTriggersButCannotProbe(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	execSQL(t, db.Pool(t), `ALTER TABLE durable_jobs.control_evidence_record DISABLE TRIGGER control_evidence_record_append_only`)
	text, _ := runAudit(t, db.LoginURL(t, "durable_job_auditor"))
	require.Equal(t, []string{controls.CheckEvidenceAppendOnly, controls.CheckEvidenceTrigger}, text.ids)
	require.Contains(t, text.stdout, "no enabled BEFORE UPDATE row trigger")
	require.NotContains(t, text.stdout, "trial")
}

func TestRunThatCannotReadACatalogNamesTheCheck(t *testing.T) {
	t.Parallel()
	// Each case takes away, in this database only, one catalog or privilege
	// function a check needs (superusers bypass this, so an auditor login
	// runs the audit). The audit must then stop with a *CheckError naming the
	// check, not report a pass.
	cases := []struct {
		check string
		sql   []string
	}{
		{controls.CheckSearchPath, []string{`REVOKE SELECT ON pg_catalog.pg_proc FROM PUBLIC`}},
		{controls.CheckPublicExecute, []string{`REVOKE EXECUTE ON FUNCTION pg_catalog.has_function_privilege(name, oid, text) FROM PUBLIC`}},
		{controls.CheckRuntimePrivileges, []string{`REVOKE SELECT ON pg_catalog.pg_roles FROM PUBLIC`}},
		{controls.CheckRuntimePrivileges, []string{`REVOKE EXECUTE ON FUNCTION pg_catalog.has_sequence_privilege(oid, oid, text) FROM PUBLIC`}},
		{controls.CheckRuntimePrivileges, []string{`REVOKE EXECUTE ON FUNCTION pg_catalog.has_schema_privilege(oid, oid, text) FROM PUBLIC`}},
		{controls.CheckDefinerAttributes, []string{`REVOKE SELECT ON pg_catalog.pg_roles FROM PUBLIC`,
			`GRANT SELECT (oid, rolname, rolsuper) ON pg_catalog.pg_roles TO PUBLIC`}},
		{controls.CheckRenewalPayload, []string{`REVOKE EXECUTE ON FUNCTION pg_catalog.has_any_column_privilege(oid, oid, text) FROM PUBLIC`}},
		{controls.CheckSchemaCreate, []string{`REVOKE EXECUTE ON FUNCTION pg_catalog.has_schema_privilege(name, oid, text) FROM PUBLIC`}},
		{controls.CheckEvidenceAppendOnly, []string{`REVOKE SELECT ON pg_catalog.pg_trigger FROM PUBLIC`}},
		{controls.CheckEvidenceAppendOnly, []string{`REVOKE EXECUTE ON FUNCTION pg_catalog.has_table_privilege(oid, text) FROM PUBLIC`}},
		{controls.CheckMigrationVersion, []string{`REVOKE EXECUTE ON FUNCTION pg_catalog.has_schema_privilege(text, text) FROM PUBLIC`}},
		{controls.CheckFunctionDrift, []string{`REVOKE EXECUTE ON FUNCTION pg_catalog.pg_get_functiondef(oid) FROM PUBLIC`}},
		{controls.CheckGenerationFloor, []string{`REVOKE EXECUTE ON FUNCTION pg_catalog.regexp_replace(text, text, text, text) FROM PUBLIC`}},
		{controls.CheckDefinerOwners, []string{`REVOKE SELECT ON pg_catalog.pg_auth_members FROM PUBLIC`}},
		{controls.CheckServerLogSecrets, []string{`REVOKE SELECT ON pg_catalog.pg_db_role_setting FROM PUBLIC`}},
		{controls.CheckUnencryptedSessions, []string{`REVOKE SELECT ON pg_catalog.pg_stat_activity FROM PUBLIC`}},
	}
	for _, tc := range cases {
		t.Run(tc.check, func(t *testing.T) {
			t.Parallel()
			db := testdb.New(t)
			for _, sql := range tc.sql {
				execSQL(t, db.Pool(t), sql)
			}
			report, err := Run(context.Background(), db.LoginPool(t, "durable_job_auditor"))
			var checkErr *CheckError
			require.ErrorAs(t, err, &checkErr, tc.sql)
			require.Equal(t, tc.check, checkErr.Check)
			require.Contains(t, err.Error(), tc.check+": ")
			require.Contains(t, err.Error(), "permission denied")
			require.Empty(t, report.Checks, "no partial report")
		})
	}
}
