package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/mightyetl/leasefence/audit"
	"github.com/mightyetl/leasefence/controls"
	"github.com/mightyetl/leasefence/internal/testdb"
	sqlbundle "github.com/mightyetl/leasefence/sql"
	"github.com/mightyetl/leasefence/textfmt"
)

// findingIDs returns the check identifiers that start the finding lines of
// a text audit, in order, without repeats.
func findingIDs(stdout string) []string {
	var ids []string
	seen := map[string]bool{}
	for _, line := range strings.Split(stdout, "\n") {
		id, _, ok := strings.Cut(line, ": ")
		if ok && strings.HasPrefix(id, "AUDIT-") && !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	return ids
}

// runAuditBoth runs the audit in text and JSON and checks they agree: the
// text has a line for each JSON finding, shown through textfmt.Visible.
func runAuditBoth(t *testing.T, databaseURL string) (text result, report audit.Report) {
	t.Helper()
	text = leasectl(t, "audit", "--database-url", databaseURL)
	js := leasectl(t, "audit", "--output", "json", "--database-url", databaseURL)
	require.Equal(t, text.code, js.code, "text: %s\njson: %s\n%s", text.output(), js.stdout, js.stderr)
	require.NotEqual(t, exitError, js.code, js.stderr)
	require.NoError(t, json.Unmarshal([]byte(js.stdout), &report), js.stdout)
	require.Len(t, report.Checks, len(controls.AuditChecks()))
	var lines []string
	for _, c := range report.Checks {
		for _, f := range c.Findings {
			lines = append(lines, c.ID+": "+f)
		}
	}
	for _, line := range lines {
		require.Contains(t, text.stdout, textfmt.Visible(line)+"\n")
	}
	require.Equal(t, len(lines), report.Findings)
	return text, report
}

// exec runs SQL as the superuser of the test database.
func execSQL(t *testing.T, pool *pgxpool.Pool, sql string, args ...any) {
	t.Helper()
	_, err := pool.Exec(context.Background(), sql, args...)
	require.NoError(t, err, sql)
}

func TestAuditPassesOnAFreshBundle(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	admin := db.Pool(t)
	for i, login := range []string{db.URL, db.LoginURL(t, "durable_job_auditor"), db.LoginURL(t, "durable_job_operator")} {
		// A previous run's session ends in the server a moment after its
		// client has gone; AUDIT-UNENCRYPTED-SESSIONS rightly counts it
		// while it is there. Start each run when the database shows no
		// session of a login but the test's own superuser pool.
		waitForNoLoginSessions(t, admin)
		text, report := runAuditBoth(t, login)
		requireCode(t, exitOK, text)
		require.True(t, report.Passed)
		// A login that is no superuser cannot read pg_hba_file_rules: a
		// warning that they were not checked.
		// The test clusters load no pgaudit: a warning (a superuser sees it
		// is not loaded; another login cannot read shared_preload_libraries).
		hba, pgaudit, warnings := "", "warning: AUDIT-ROLE-CHANGE-LOGGING: pgaudit is not loaded (shared_preload_libraries): "+
			"a GRANT, REVOKE or DROP ROLE of a bundle role leaves no trace (load it and set pgaudit.log to include role, see the runbook)\n", 2
		if i > 0 {
			hba, warnings = "warning: AUDIT-TLS-CONFIGURATION: this login cannot read pg_hba_file_rules, so the pg_hba rules were not checked: "+
				"run the audit as a superuser, or GRANT SELECT ON pg_catalog.pg_hba_file_rules and EXECUTE ON FUNCTION "+
				"pg_catalog.pg_hba_file_rules() to the auditing login\n", 3
			pgaudit = "warning: AUDIT-ROLE-CHANGE-LOGGING: cannot tell whether pgaudit logs role changes: this login cannot read " +
				"shared_preload_libraries (grant it pg_read_all_settings)\n"
		}
		// The test clusters have no synchronous standby: a warning, and a pass.
		require.Equal(t, hba+pgaudit+"warning: AUDIT-SYNCHRONOUS-REPLICATION: synchronous_standby_names is empty: commits do not wait "+
			"for a standby, so a failover can lose acknowledged completions (the job runs again) and the runbook requires "+
			"synchronous replication\n"+
			fmt.Sprintf("audit passed: %d checks, no findings, %d warning(s)\n", len(controls.AuditChecks()), warnings), text.stdout)
		require.Equal(t, warnings, report.Warnings)
		for i, c := range report.Checks {
			require.Equal(t, controls.AuditChecks()[i].ID, c.ID)
			require.True(t, c.Passed, c.ID)
			require.NotEmpty(t, c.Controls)
		}
	}
}

// waitForNoLoginSessions waits, reading pg_stat_activity through the
// superuser pool admin, until the pool's database has no session of a role
// that is not a superuser (a fresh bundle's audit must then pass).
func waitForNoLoginSessions(t *testing.T, admin *pgxpool.Pool) {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var n int
		require.NoError(t, admin.QueryRow(ctx, `SELECT pg_catalog.count(*)::int FROM pg_catalog.pg_stat_activity a
			JOIN pg_catalog.pg_roles r ON r.oid = a.usesysid
			WHERE a.datname = pg_catalog.current_database() AND NOT r.rolsuper`).Scan(&n))
		if n == 0 {
			return
		}
		require.False(t, time.Now().After(deadline), "%d login session(s) still open on the test database", n)
		time.Sleep(20 * time.Millisecond)
	}
}

// The findings of every check are tested in audit; here, one broken guard
// gives exit 2 with its finding in text and JSON, and the evidence is intact.
func TestAuditFindsABrokenGuardWithExit2(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	pool := db.Pool(t)
	execSQL(t, pool, `UPDATE `+sqlbundle.VersionTable+` SET version = 1`)
	text, report := runAuditBoth(t, db.URL)
	requireCode(t, exitFindings, text)
	require.False(t, report.Passed)
	require.Equal(t, []string{controls.CheckMigrationVersion, controls.CheckFunctionDrift}, findingIDs(text.stdout), text.stdout)
	require.Contains(t, text.stdout, fmt.Sprintf("AUDIT-MIGRATION-VERSION: database is at migration version 1, this leasectl carries %d: run leasectl migrate up", sqlbundle.NewestVersion()))
	// The test clusters have no synchronous standby: its warning is counted too.
	require.Contains(t, text.stdout, fmt.Sprintf("audit failed: %d finding(s) in 2 of %d checks, 2 warning(s)\n", report.Findings, len(controls.AuditChecks())))
}

func TestAuditThatCannotReadACatalogFailsWithExit1(t *testing.T) {
	t.Parallel()
	// A catalog taken away in this database only (superusers bypass this,
	// so an auditor login runs the audit): the audit, and the evidence
	// report that runs it, must stop with exit 1 and name the check, not
	// report a pass. Which catalog each check needs is tested in audit.
	db := testdb.New(t)
	execSQL(t, db.Pool(t), `REVOKE SELECT ON pg_catalog.pg_trigger FROM PUBLIC`)
	auditor := db.LoginURL(t, "durable_job_auditor")
	r := leasectl(t, "audit", "--database-url", auditor)
	requireCode(t, exitError, r)
	require.True(t, strings.HasPrefix(r.stderr, "error: audit database: "+controls.CheckEvidenceAppendOnly+": permission denied"), r.stderr)
	require.Empty(t, r.stdout)
	r = leasectl(t, "evidence", "--database-url", auditor)
	requireCode(t, exitError, r)
	require.True(t, strings.HasPrefix(r.stderr, "error: audit database: "+controls.CheckEvidenceAppendOnly+": "), r.stderr)
}
