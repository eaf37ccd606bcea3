package audit

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/mightyetl/leasefence/controls"
	"github.com/mightyetl/leasefence/internal/testdb"
)

// Each install check broken once, in a database of its own: exit 2 and a
// finding that names the objects.
func TestAuditInstallChecksFindEachBreak(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		setup func(t *testing.T) []string
		want  []string
		lines []string
	}{
		{"constraint and default bound to objects in public", func(*testing.T) []string {
			return []string{
				`CREATE FUNCTION public.lf_stray_div(interval, integer) RETURNS interval LANGUAGE sql RETURN $1 / $2::float8`,
				`CREATE OPERATOR public./ (LEFTARG = interval, RIGHTARG = integer, FUNCTION = public.lf_stray_div)`,
				`ALTER TABLE durable_jobs.queue_lease_policy ADD CONSTRAINT stray_bound
					CHECK (renewal_interval <= lease_duration OPERATOR(public./) 3)`,
				`CREATE FUNCTION public.lf_stray_default() RETURNS text LANGUAGE sql RETURN 'x'`,
				`ALTER TABLE durable_jobs.job_record ALTER COLUMN lease_owner_id SET DEFAULT public.lf_stray_default()`,
			}
		}, []string{controls.CheckObjectDependencies},
			[]string{"AUDIT-OBJECT-DEPENDENCIES: constraint stray_bound on table durable_jobs.queue_lease_policy depends on operator /(interval,integer) in schema public",
				"AUDIT-OBJECT-DEPENDENCIES: default value for column lease_owner_id of table durable_jobs.job_record depends on function lf_stray_default() in schema public"}},
		{"guard function owned by another role", func(t *testing.T) []string {
			return []string{`ALTER FUNCTION durable_jobs.refuse_evidence_change() OWNER TO ` + elevatedRole(t, "")}
		}, []string{controls.CheckEvidenceTrigger, controls.CheckFunctionDrift},
			[]string{"AUDIT-EVIDENCE-TRIGGER: function durable_jobs.refuse_evidence_change() of trigger control_evidence_record_append_only is owned by lf_elevated_"}},
		{"evidence table and guard given back to the installer, as before migration 014", func(*testing.T) []string {
			return []string{`ALTER TABLE durable_jobs.control_evidence_record OWNER TO CURRENT_USER`,
				`ALTER FUNCTION durable_jobs.refuse_evidence_change() OWNER TO CURRENT_USER`}
		}, []string{controls.CheckEvidenceTrigger, controls.CheckFunctionDrift},
			[]string{"AUDIT-EVIDENCE-TRIGGER: table durable_jobs.control_evidence_record is owned by postgres, not by durable_job_evidence_owner, the role that owns nothing else\n"}},
		{"evidence table owned by another role", func(t *testing.T) []string {
			return []string{`ALTER TABLE durable_jobs.control_evidence_record OWNER TO ` + elevatedRole(t, "")}
		}, []string{controls.CheckEvidenceTrigger},
			[]string{"AUDIT-EVIDENCE-TRIGGER: table durable_jobs.control_evidence_record is owned by lf_elevated_",
				"AUDIT-EVIDENCE-TRIGGER: function durable_jobs.refuse_evidence_change() of trigger control_evidence_record_append_only is owned by durable_job_evidence_owner, not by lf_elevated_"}},
		{"guard trigger replaced and one dropped", func(*testing.T) []string {
			return []string{
				`CREATE FUNCTION durable_jobs.stray_refuse() RETURNS trigger LANGUAGE plpgsql
					SET search_path = pg_catalog, pg_temp AS $$BEGIN RAISE EXCEPTION 'no'; END$$`,
				`REVOKE ALL ON FUNCTION durable_jobs.stray_refuse() FROM PUBLIC`,
				`DROP TRIGGER control_evidence_record_append_only ON durable_jobs.control_evidence_record`,
				`CREATE TRIGGER control_evidence_record_append_only BEFORE UPDATE OR DELETE ON durable_jobs.control_evidence_record
					FOR EACH ROW EXECUTE FUNCTION durable_jobs.stray_refuse()`,
				`DROP TRIGGER control_evidence_record_no_truncate ON durable_jobs.control_evidence_record`,
			}
		}, []string{controls.CheckEvidenceAppendOnly, controls.CheckEvidenceTrigger, controls.CheckFunctionDrift},
			[]string{"AUDIT-EVIDENCE-TRIGGER: trigger control_evidence_record_append_only on durable_jobs.control_evidence_record executes durable_jobs.stray_refuse(), not durable_jobs.refuse_evidence_change()",
				"AUDIT-EVIDENCE-TRIGGER: trigger control_evidence_record_no_truncate on durable_jobs.control_evidence_record does not exist"}},
		{"guard trigger fires only in replica sessions", func(*testing.T) []string {
			return []string{`ALTER TABLE durable_jobs.control_evidence_record ENABLE REPLICA TRIGGER control_evidence_record_no_truncate`}
		}, []string{controls.CheckEvidenceAppendOnly, controls.CheckEvidenceTrigger},
			[]string{"AUDIT-EVIDENCE-TRIGGER: trigger control_evidence_record_no_truncate on durable_jobs.control_evidence_record is not enabled for every session (tgenabled R)"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			statements := tc.setup(t)
			db := testdb.New(t)
			pool := db.Pool(t)
			for _, sql := range statements {
				execSQL(t, pool, sql)
			}
			text, report := runAudit(t, db.URL)
			require.False(t, text.passed, text.stdout)
			require.False(t, report.Passed)
			require.Equal(t, tc.want, text.ids, text.stdout)
			for _, line := range tc.lines {
				require.Contains(t, text.stdout, line)
			}
		})
	}
}

// A definer owner with LOGIN, and one with a member, are findings, and so
// are a member and elevated attributes of the evidence table's owner
// (migration 014). Roles are cluster-wide, so this runs on a cluster of its
// own.
func TestAuditFindsAssumableDefinerOwners(t *testing.T) {
	t.Parallel()
	_, db := testdb.OwnCluster(t)
	pool := db.Pool(t)
	execSQL(t, pool, `ALTER ROLE durable_job_audit_owner LOGIN`)
	execSQL(t, pool, `ALTER ROLE durable_job_evidence_owner CREATEDB BYPASSRLS`)
	execSQL(t, pool, `CREATE ROLE lf_sneaky LOGIN IN ROLE durable_job_renewal_owner, durable_job_claim_owner, durable_job_evidence_owner`)
	text, report := runAudit(t, db.URL)
	require.False(t, text.passed, text.stdout)
	require.False(t, report.Passed)
	require.Equal(t, []string{controls.CheckDefinerOwners, controls.CheckEvidenceTrigger, controls.CheckAccessReview}, text.ids, text.stdout)
	require.Contains(t, text.stdout, "AUDIT-DEFINER-OWNERS: definer owner durable_job_evidence_owner has members: lf_sneaky\n")
	require.Contains(t, text.stdout, "AUDIT-EVIDENCE-TRIGGER: durable_job_evidence_owner, the owner of durable_jobs.control_evidence_record, has CREATEDB, BYPASSRLS\n")
	require.Contains(t, text.stdout, "AUDIT-ACCESS-REVIEW: login lf_sneaky holds definer owner role durable_job_claim_owner")
	require.Contains(t, text.stdout, "AUDIT-DEFINER-OWNERS: definer owner durable_job_audit_owner can log in\n")
	require.Contains(t, text.stdout, "AUDIT-DEFINER-OWNERS: definer owner durable_job_claim_owner has members: lf_sneaky\n")
	require.Contains(t, text.stdout, "AUDIT-DEFINER-OWNERS: definer owner durable_job_renewal_owner has members: lf_sneaky\n")
}
