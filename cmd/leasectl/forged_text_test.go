package main

import (
	"net/url"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/mightyetl/leasefence/internal/testdb"
)

// forgedLine is what a hostile role name tries to print as a line of its
// own: a Markdown table row of a check and a finding that say all is well.
const forgedLine = "| AUDIT-FORGED | pass |"

// forgedRole is a login name (under PostgreSQL's 63 bytes) that, printed
// as it is, starts lines of its own (a newline and a carriage return) and
// clears the terminal (ESC [2J).
const forgedRole = "lf\n" + forgedLine + "\rAUDIT-FORGED: ok\x1b[2J"

// requireNoForgedLine fails unless out shows forgedRole only as escapes:
// no line starts with the forged text and no carriage return or ESC is
// printed at all.
func requireNoForgedLine(t *testing.T, out string, args ...any) {
	t.Helper()
	require.NotContains(t, out, "\r", args...)
	require.NotContains(t, out, "\x1b", args...)
	for line := range strings.SplitSeq(out, "\n") {
		require.False(t, strings.HasPrefix(line, forgedLine) || strings.HasPrefix(line, "AUDIT-FORGED"),
			"%v: a forged line: %q\n%s", args, line, out)
	}
}

// Attack: a login named with a newline and "| AUDIT-... |" printed as lines
// of its own in leasectl audit's findings, and its name as "changed by"
// did so in retention show (leasectl access already escaped it). Every
// text output now shows database values through one escaper, so the name
// reads as one escaped value wherever it is printed. Logins are
// cluster-wide and this one is meant to be found, so it runs on a cluster of
// its own.
func TestARoleNameCannotForgeLinesInAnyTextOutput(t *testing.T) {
	t.Parallel()
	_, db := testdb.OwnCluster(t)
	pool := db.Pool(t)
	password := strings.ReplaceAll(uuid.NewString(), "-", "")
	quoted := pgx.Identifier{forgedRole}.Sanitize()
	// Worker and operator at once, without timeouts, and a table grant:
	// AUDIT-ACCESS-REVIEW and AUDIT-RUNTIME-LOGIN-TIMEOUTS name it, once
	// quoted by the database and once as it is.
	execSQL(t, pool, "CREATE ROLE "+quoted+" LOGIN PASSWORD '"+password+"' IN ROLE durable_job_worker, durable_job_operator")
	execSQL(t, pool, "GRANT SELECT ON durable_jobs.job_record TO "+quoted)
	u, err := url.Parse(db.URL)
	require.NoError(t, err)
	u.User = url.UserPassword(forgedRole, password)
	login := u.String()

	// As that login, change what records the changing role.
	for _, args := range [][]string{
		{"policy", "set", "--queue", "billing", "--renewal-enabled=true", "--reason", "OPS-1: forged name test"},
		{"retention", "set", "--queue", "billing", "--payload-retention", "7d", "--record-retention", "90d", "--reason", "OPS-2: forged name test"},
		{"change-control", "set", "--reason", "OPS-3: forged name test", "--ticket", "OPS-3"},
	} {
		r := leasectl(t, append(args, "--database-url", login)...)
		requireCode(t, exitOK, r, args)
		requireNoForgedLine(t, r.output(), args)
	}

	// The audit names it in its findings: escaped in text, as it is in JSON.
	text, report := runAuditBoth(t, db.URL)
	requireCode(t, exitFindings, text)
	requireNoForgedLine(t, text.output(), "audit")
	escaped := `lf\u000a| AUDIT-FORGED | pass |\u000dAUDIT-FORGED: ok\u001b[2J`
	lines := "\n" + text.stdout
	require.Contains(t, lines, "\nAUDIT-ACCESS-REVIEW: login "+escaped+" holds both durable_job_worker and durable_job_operator")
	require.Contains(t, lines, "\nAUDIT-RUNTIME-LOGIN-TIMEOUTS: login "+escaped+": statement_timeout is 0")
	require.Contains(t, lines, "\nAUDIT-ACCESS-REVIEW: login \""+escaped+"\" holds SELECT on durable_jobs.job_record\n")
	var named int
	for _, c := range report.Checks {
		for _, f := range c.Findings {
			if strings.Contains(f, forgedRole) {
				named++
			}
		}
	}
	require.Equal(t, 4, named, "JSON holds the name as it is, in each finding that names it")

	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"access"}, exitOK, escaped},
		{[]string{"policy", "show"}, exitOK, escaped},
		{[]string{"retention", "show"}, exitOK, escaped},
		{[]string{"change-control", "show"}, exitOK, "changed by:           " + escaped + "\n"},
		{[]string{"evidence"}, exitOK, `lf\\u000a\| AUDIT-FORGED \| pass \|\\u000dAUDIT-FORGED: ok\\u001b\[2J`},
	} {
		r := leasectl(t, append(c.args, "--database-url", db.URL)...)
		requireCode(t, c.code, r, c.args)
		requireNoForgedLine(t, r.output(), c.args)
		require.Contains(t, r.stdout, c.want, c.args)
	}
}
