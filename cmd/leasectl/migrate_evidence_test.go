package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/mightyetl/leasefence/internal/testdb"
	sqlbundle "github.com/mightyetl/leasefence/sql"
)

// Attack: "migrate down --to 0" erased every evidence record without a
// trace. Now it is refused while evidence exists, unless the evidence is
// first exported by leasectl itself to a new file.
func TestMigrateDownToZeroKeepsEvidenceUnlessExportedFirst(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	pool := db.Pool(t)
	newest := sqlbundle.NewestVersion()
	var records int
	require.NoError(t, pool.QueryRow(context.Background(), `SELECT count(*) FROM durable_jobs.control_evidence_record`).Scan(&records))
	require.Positive(t, records)

	r := leasectl(t, "migrate", "down", "--to", "0", "--database-url", db.URL)
	requireCode(t, exitError, r)
	require.Equal(t, 1, strings.Count(r.stderr, "\n"), r.stderr)
	require.Contains(t, r.stderr, "refused: it would erase")
	require.Equal(t, newest, versionOf(t, pool), "nothing migrated")

	for _, args := range [][]string{
		{"--discard-evidence"},
		{"--evidence-export", filepath.Join(t.TempDir(), "x.json")},
	} {
		r = leasectl(t, append(append([]string{"migrate", "down", "--to", "0"}, args...), "--database-url", db.URL)...)
		requireCode(t, exitUsage, r)
		require.Contains(t, r.stderr, "go together")
	}
	// One step down from the newest version erases no evidence: the flags are refused.
	r = leasectl(t, "migrate", "down", "--discard-evidence", "--evidence-export", "x.json", "--database-url", db.URL)
	requireCode(t, exitUsage, r)
	require.Contains(t, r.stderr, "for a downgrade that erases control evidence")
	require.Equal(t, newest, versionOf(t, pool))

	// An export path that exists already is not overwritten, and nothing is migrated.
	existing := filepath.Join(t.TempDir(), "existing.json")
	require.NoError(t, os.WriteFile(existing, []byte("keep"), 0o600))
	r = leasectl(t, "migrate", "down", "--to", "0", "--discard-evidence", "--evidence-export", existing, "--database-url", db.URL)
	requireCode(t, exitError, r)
	require.Contains(t, r.stderr, "error: export control evidence: ")
	kept, err := os.ReadFile(existing)
	require.NoError(t, err)
	require.Equal(t, "keep", string(kept))
	require.Equal(t, newest, versionOf(t, pool))

	var head string
	require.NoError(t, pool.QueryRow(context.Background(),
		`SELECT '\x' || encode(record_hash, 'hex') FROM durable_jobs.control_evidence_record ORDER BY evidence_record_id DESC LIMIT 1`).Scan(&head))
	export := filepath.Join(t.TempDir(), "evidence.json")
	r = leasectl(t, "migrate", "down", "--to", "0", "--discard-evidence", "--evidence-export", export,
		"--reason", "REL-8: decommission test database", "--database-url", db.URL)
	requireCode(t, exitOK, r)
	require.Contains(t, r.stdout, "exported ")
	require.Equal(t, int32(0), versionOf(t, pool))
	raw, err := os.ReadFile(export)
	require.NoError(t, err)
	var doc sqlbundle.EvidenceExport
	require.NoError(t, json.Unmarshal(raw, &doc))
	require.Equal(t, 1, doc.SchemaVersion)
	require.Equal(t, newest, doc.MigrationVersion)
	require.Equal(t, records, doc.RecordCount)
	require.Len(t, doc.Records, records)
	require.NotNil(t, doc.ChainHead)
	require.Equal(t, head, *doc.ChainHead, "the export carries the chain head")
	info, err := os.Stat(export)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), info.Mode().Perm())
}

// Attack: every migration recorded the same fixed reason, so an auditor
// could not tell why a migration ran. The operator's --reason is now in
// the migration's evidence; a reason that looks like personal data is
// refused before anything runs.
func TestMigrateRecordsTheOperatorsReason(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	pool := db.Pool(t)
	newest := sqlbundle.NewestVersion()
	r := leasectl(t, "migrate", "down", "--reason", "REL-9: roll back for a test", "--database-url", db.URL)
	requireCode(t, exitOK, r)
	r = leasectl(t, "migrate", "up", "--reason", "REL-10: forward again", "--database-url", db.URL)
	requireCode(t, exitOK, r)
	rows, err := pool.Query(context.Background(), `
		SELECT evidence_kind || ': ' || change_reason FROM durable_jobs.control_evidence_record
		WHERE evidence_kind IN ('migration_applied', 'migration_reverted') AND (new_values ->> 'migration_version')::int = $1
		ORDER BY evidence_record_id`, newest)
	require.NoError(t, err)
	var got []string
	for rows.Next() {
		var s string
		require.NoError(t, rows.Scan(&s))
		got = append(got, s)
	}
	require.NoError(t, rows.Err())
	require.Equal(t, []string{"migration_applied: leasefence bundle migration", "migration_reverted: REL-9: roll back for a test",
		"migration_applied: REL-10: forward again"}, got)

	for _, reason := range []string{"INC-77 customer 900101-1234567", "pw=hunter2", "  ", "a\u202eb"} {
		r = leasectl(t, "migrate", "down", "--reason", reason, "--database-url", db.URL)
		requireCode(t, exitUsage, r)
		require.Equal(t, 1, strings.Count(r.stderr, "\n"), r.stderr)
		require.NotContains(t, r.stderr, "hunter2")
		require.NotContains(t, r.stderr, "1234567")
		require.Equal(t, newest, versionOf(t, pool))
	}
}

// Issue 39, item 3: a migration records the ticket and approver change
// control asks for. With require_approver on, a migration without an
// approver is refused and changes nothing; with --ticket and --approver (an
// operator login) it runs and its record names them.
func TestMigrateRecordsTicketAndApproverChangeControlAsksFor(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	pool := db.Pool(t)
	ctx := context.Background()
	operator := db.LoginURL(t, "durable_job_operator")
	approver := loginOf(t, db.LoginURL(t, "durable_job_operator"))
	r := leasectl(t, "change-control", "set", "--require-approver=true", "--reason", "OPS-70: approvals",
		"--approver", approver, "--database-url", operator)
	requireCode(t, exitOK, r)

	r = leasectl(t, "migrate", "down", "--to", "25", "--reason", "REL-11: roll back", "--ticket", "REL-11", "--approver", approver,
		"--database-url", db.URL)
	requireCode(t, exitOK, r)
	// Every migration of a run records the run's reason (tern resets the
	// session after each migration: only the first one did before).
	var reasons int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM durable_jobs.control_evidence_record
		WHERE evidence_kind = 'migration_reverted' AND change_reason = 'REL-11: roll back'`).Scan(&reasons))
	require.Equal(t, int(sqlbundle.NewestVersion())-25, reasons, "one record per migration reverted, each with the reason")
	r = leasectl(t, "migrate", "up", "--reason", "REL-12: forward", "--database-url", db.URL)
	requireCode(t, exitError, r)
	require.Contains(t, r.stderr, "SQLSTATE LF002", "no approver where change control requires one")
	require.Equal(t, int32(25), versionOf(t, pool), "nothing changed")
	r = leasectl(t, "migrate", "up", "--reason", "REL-12: forward", "--ticket", "REL-12", "--approver", approver,
		"--database-url", db.URL)
	requireCode(t, exitOK, r)
	var ticket, named string
	require.NoError(t, pool.QueryRow(ctx, `SELECT change_ticket, change_approver FROM durable_jobs.control_evidence_record
		WHERE evidence_kind = 'migration_applied' ORDER BY evidence_record_id DESC LIMIT 1`).Scan(&ticket, &named))
	require.Equal(t, []string{"REL-12", approver}, []string{ticket, named})
}

// Attack: "migrate down --to 5" and "up" lost the ticket and approver of
// every record (migration 006's down part drops those columns) without a
// trace, and the chain still verified for the untouched records; only
// "--to 0" asked for an export, and a plain "down" at version 1 refused the
// export flags. Now any downgrade whose migrations erase evidence is
// refused unless the same flags are given, and the export is written first.
func TestPartialDowngradeKeepsEvidenceFieldsUnlessExportedFirst(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	pool := db.Pool(t)
	dir := t.TempDir()

	// A downgrade that erases nothing needs no flags.
	r := leasectl(t, "migrate", "down", "--to", "7", "--database-url", db.URL)
	requireCode(t, exitOK, r)
	require.Equal(t, int32(7), versionOf(t, pool))

	// Below version 6 every record's ticket, approver and hashes go: refused.
	columns, ids := testdb.EvidenceState(t, pool)
	require.Contains(t, columns, "change_ticket")
	r = leasectl(t, "migrate", "down", "--to", "5", "--database-url", db.URL)
	requireCode(t, exitError, r)
	require.Equal(t, fmt.Sprintf("error: migrate down to version 5: refused: it would erase control evidence of %d records "+
		"(reverting 006_evidence_chain.sql drops records or their fields); export them first with --discard-evidence "+
		"--evidence-export PATH\n", len(ids)), r.stderr)
	require.Empty(t, r.stdout)
	require.Equal(t, int32(7), versionOf(t, pool))
	afterColumns, afterIDs := testdb.EvidenceState(t, pool)
	require.Equal(t, columns, afterColumns, "nothing changed")
	require.Equal(t, ids, afterIDs)

	// Nor does a downgrade that erases nothing take the flags: refused as
	// usage, nothing changed, no file written.
	r = leasectl(t, "migrate", "down", "--to", "6", "--discard-evidence", "--evidence-export", filepath.Join(dir, "no.json"),
		"--database-url", db.URL)
	requireCode(t, exitUsage, r)
	require.Equal(t, "error: usage: migrate down: --discard-evidence and --evidence-export are for a downgrade that erases "+
		"control evidence; from version 7 to 6 none does (run \"leasectl --help\")\n", r.stderr)
	require.Equal(t, int32(7), versionOf(t, pool))
	require.NoFileExists(t, filepath.Join(dir, "no.json"))

	// With the flags, every record with its ticket, approver and hashes is
	// written first, then the downgrade runs.
	export := filepath.Join(dir, "evidence-v7.json")
	r = leasectl(t, "migrate", "down", "--to", "5", "--discard-evidence", "--evidence-export", export,
		"--reason", "REL-11: back to version 5", "--database-url", db.URL)
	requireCode(t, exitOK, r)
	require.True(t, strings.HasPrefix(r.stdout, fmt.Sprintf("exported %d control evidence records to %s\ndown 007_", len(ids), export)), r.stdout)
	require.Equal(t, int32(5), versionOf(t, pool))
	afterColumns, _ = testdb.EvidenceState(t, pool)
	require.NotContains(t, afterColumns, "change_ticket")
	var doc sqlbundle.EvidenceExport
	raw, err := os.ReadFile(export)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(raw, &doc))
	require.Equal(t, int32(7), doc.MigrationVersion)
	require.Len(t, doc.Records, len(ids))
	var record map[string]any
	require.NoError(t, json.Unmarshal(doc.Records[0], &record))
	for _, field := range []string{"change_ticket", "change_approver", "record_hash", "previous_record_hash"} {
		require.Contains(t, record, field)
	}

	// From 5 to 1 nothing is erased; a plain down at version 1 is a step
	// to 0: refused without the flags, and with them it exports first.
	r = leasectl(t, "migrate", "down", "--to", "1", "--database-url", db.URL)
	requireCode(t, exitOK, r)
	r = leasectl(t, "migrate", "down", "--database-url", db.URL)
	requireCode(t, exitError, r)
	require.Contains(t, r.stderr, "(reverting 001_schema_and_roles.sql drops records or their fields)")
	require.Equal(t, int32(1), versionOf(t, pool))
	final := filepath.Join(dir, "evidence-v1.json")
	r = leasectl(t, "migrate", "down", "--discard-evidence", "--evidence-export", final, "--database-url", db.URL)
	requireCode(t, exitOK, r)
	require.Contains(t, r.stdout, "exported ")
	require.Equal(t, int32(0), versionOf(t, pool))
	require.FileExists(t, final)
}
