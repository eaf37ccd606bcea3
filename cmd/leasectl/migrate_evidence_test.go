package main

import (
	"context"
	"encoding/json"
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
	r = leasectl(t, "migrate", "down", "--discard-evidence", "--evidence-export", "x.json", "--database-url", db.URL)
	requireCode(t, exitUsage, r)
	require.Contains(t, r.stderr, "need --to 0")

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
	var doc evidenceExportJSON
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

func TestReasonChecksMatchTheDatabase(t *testing.T) {
	require.True(t, passesLuhn("4111111111111111"))
	require.False(t, passesLuhn("4111111111111112"))
	require.False(t, passesLuhn("123"))
	require.True(t, looksPersonalOrSecret("card 4111 1111 1111 1111"))
	require.True(t, looksPersonalOrSecret("mail kim@example.com"))
	require.True(t, looksPersonalOrSecret("call 010-1234-5678"))
	require.True(t, looksPersonalOrSecret("call +82 10 1234 5678"))
	require.False(t, looksPersonalOrSecret("OPS-1234: raise the lease"))
	require.Equal(t, "", reasonProblem("OPS-1: fine"))
	require.Contains(t, reasonProblem("a\x1bb"), "control")
	require.Contains(t, reasonProblem("a\u2066b"), "control")
	require.Contains(t, reasonProblem("a\u061cb"), "control")
	require.Contains(t, reasonProblem(strings.Repeat("x", 501)), "500")
}
