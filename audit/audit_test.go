package audit

import (
	"context"
	"errors"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/mightyetl/leasefence/controls"
	"github.com/mightyetl/leasefence/internal/testdb"
)

func TestMain(m *testing.M) { os.Exit(testdb.Run(m)) }

// Every check runs, in the order of Checks, over a pool and over a single
// connection alike, and a fresh bundle passes them all.
func TestRunPassesOnAFreshBundleOverAPoolAndAConn(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	auditor := db.LoginConn(t, "durable_job_auditor")
	requirePasses(t, "auditor connection", auditor)
	// The auditor's session closes first: an open runtime session without
	// TLS is a finding of AUDIT-UNENCRYPTED-SESSIONS for any other session.
	require.NoError(t, auditor.Close(context.Background()))
	requirePasses(t, "pool of the bundle owner", db.Pool(t))
}

// requirePasses runs the audit over conn and requires every check to pass,
// in the order of Checks.
func requirePasses(t *testing.T, name string, conn DB) {
	t.Helper()
	report, err := Run(context.Background(), conn)
	require.NoError(t, err, name)
	require.True(t, report.Passed, "%s: %+v", name, report)
	require.Zero(t, report.Findings, name)
	require.Len(t, report.Checks, len(Checks()), name)
	for i, c := range report.Checks {
		require.Equal(t, Checks()[i].ID, c.ID, name)
		require.True(t, c.Passed, "%s: %s", name, c.ID)
		require.NotNil(t, c.Findings, "%s: %s has findings [] in JSON, not null", name, c.ID)
		require.NotEmpty(t, c.Controls, name)
	}
}

// Every check of package controls has code, and no code is left without a
// check identifier.
// The report's text has a line per finding and warning, shown through
// textfmt.Visible, and a summary that counts the failed checks.
func TestReportTextListsFindingsAndWarningsThenASummary(t *testing.T) {
	t.Parallel()
	report := Report{Passed: false, Findings: 2, Warnings: 1, Checks: []CheckResult{
		{ID: "AUDIT-A", Passed: false, Findings: []string{"role x\nhas it", "another"}, Warnings: []string{"w \x1b[2J"}},
		{ID: "AUDIT-B", Passed: true},
	}}
	require.Equal(t, "AUDIT-A: role x\\u000ahas it\nAUDIT-A: another\nwarning: AUDIT-A: w \\u001b[2J\n"+
		"audit failed: 2 finding(s) in 1 of 2 checks, 1 warning(s)\n", report.Text())
	require.Equal(t, "audit passed: 1 checks, no findings\n", Report{Passed: true, Checks: report.Checks[1:]}.Text())
}

func TestEveryCheckHasCode(t *testing.T) {
	t.Parallel()
	require.Len(t, checkFuncs, len(controls.AuditChecks()))
	for _, c := range Checks() {
		require.Contains(t, checkFuncs, c.ID)
	}
}

// A check that cannot run stops the audit with a *CheckError naming it,
// which unwraps to the cause; no partial report comes back.
func TestRunThatCannotRunNamesTheCheckAndUnwraps(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	report, err := Run(ctx, db.Pool(t))
	require.Empty(t, report.Checks)
	var checkErr *CheckError
	require.ErrorAs(t, err, &checkErr)
	require.Equal(t, Checks()[0].ID, checkErr.Check)
	require.ErrorIs(t, err, context.Canceled)
	require.True(t, errors.Is(checkErr.Unwrap(), context.Canceled))
	require.Contains(t, err.Error(), Checks()[0].ID+": ")
}

func TestSplitSearchPathUnquotesNames(t *testing.T) {
	t.Parallel()
	require.Equal(t, []string{"pg_catalog", "pg_temp"}, splitSearchPath("pg_catalog, pg_temp"))
	require.Equal(t, []string{`My "Schema"`, "pg_temp"}, splitSearchPath(`"My ""Schema""", pg_temp`))
	require.Empty(t, splitSearchPath(""))
}

func TestVerifyChainAcceptsAnEmptyChain(t *testing.T) {
	t.Parallel()
	require.Empty(t, verifyChain(nil))
}
