package sqlbundle

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// The rule that decides which downgrades need --discard-evidence reads the
// migrations' down SQL. Over the released migrations it finds exactly the
// two that erase evidence; a new migration whose down part erases some
// must be added here, knowingly.
func TestDowngradeEvidenceRuleFindsTheReleasedMigrationsThatEraseEvidence(t *testing.T) {
	t.Parallel()
	migrations, err := Rendered()
	require.NoError(t, err)
	var found []string
	for _, m := range migrations {
		if erasesEvidence(m.DownSQL) {
			found = append(found, m.Name)
		}
	}
	require.Equal(t, []string{"001_schema_and_roles.sql", "006_evidence_chain.sql"}, found,
		"001 drops the schema with every record; 006 drops every record's ticket, approver and chain hashes")
	require.Equal(t, []string{"006_evidence_chain.sql", "001_schema_and_roles.sql"},
		evidenceErasingMigrations(migrations, NewestVersion(), 0), "in the order the downgrade reverts them")
	require.Equal(t, []string{"006_evidence_chain.sql"}, evidenceErasingMigrations(migrations, 7, 5))
	require.Empty(t, evidenceErasingMigrations(migrations, NewestVersion(), 6))
	require.Empty(t, evidenceErasingMigrations(migrations, 5, 1))
	require.Empty(t, evidenceErasingMigrations(migrations, 3, 3))

	for sql, erases := range map[string]bool{
		`DROP SCHEMA IF EXISTS other, durable_jobs CASCADE;`:                                                                 true,
		`drop table "durable_jobs"."control_evidence_record";`:                                                               true,
		`TRUNCATE TABLE durable_jobs.job_record, durable_jobs.control_evidence_record;`:                                      true,
		`EXECUTE 'DELETE FROM durable_jobs.control_evidence_record WHERE true';`:                                             true,
		`ALTER TABLE durable_jobs.control_evidence_record DROP change_ticket;`:                                               true,
		`ALTER TABLE ONLY durable_jobs.control_evidence_record ADD x int, DROP COLUMN IF EXISTS y;`:                          true,
		`ALTER TABLE durable_jobs.control_evidence_record DROP CONSTRAINT control_evidence_record_kind;`:                     false,
		`ALTER TABLE durable_jobs.control_evidence_record ALTER COLUMN change_ticket DROP NOT NULL, ALTER x DROP DEFAULT;`:   false,
		`CREATE TRIGGER t BEFORE UPDATE OR DELETE OR TRUNCATE ON durable_jobs.control_evidence_record EXECUTE FUNCTION f();`: false,
		`REVOKE DELETE ON durable_jobs.control_evidence_record FROM durable_job_audit_owner;`:                                false,
		`DROP TRIGGER control_evidence_record_chain ON durable_jobs.control_evidence_record;`:                                false,
		`DROP FUNCTION durable_jobs.control_evidence_records(timestamptz, timestamptz);`:                                     false,
		`DROP SCHEMA durable_jobs_archive; DROP TABLE durable_jobs.control_evidence_record_copy;`:                            false,
		`ALTER TABLE durable_jobs.job_record DROP COLUMN lease_owner_id; SELECT 'durable_jobs.control_evidence_record';`:     false,
	} {
		require.Equal(t, erases, erasesEvidence(sql), sql)
	}
}
