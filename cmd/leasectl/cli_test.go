package main

import (
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/mightyetl/leasefence/internal/testdb"
)

func TestHelpReadsClearlyAndExitsZero(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"--help"}, {"-h"}, {"help"}} {
		r := leasectl(t, args...)
		requireCode(t, exitOK, r, args)
		for _, want := range []string{"Usage:", "migrate", "policy", "audit", "health", "evidence", "deployment",
			"--database-url", "PGHOST", "--output text|json", "64 usage error"} {
			require.Contains(t, r.stdout, want, args)
		}
		require.Empty(t, r.stderr)
	}
	for cmd, wants := range map[string][]string{
		"migrate":    {"leasectl migrate up", "--drop-roles", "status", "nothing", "--lock-timeout", "durable_job_audit_owner"},
		"policy":     {"policy show", "policy set", "--reason", "100ms <= renewal interval <= lease duration / 3"},
		"audit":      {"AUDIT-SEARCH-PATH", "AUDIT-MIGRATION-VERSION", "pg_catalog, pg_temp", "Exit code"},
		"health":     {"AWAITING RECLAIM", "lease_health_by_queue", "no job id"},
		"evidence":   {"--format markdown|json", "--since", "LF-", "CSAP"},
		"deployment": {"deployment record --version V --source COMMIT|DIGEST --deployed-by HANDLE", "record_deployment", "LF002"},
	} {
		for _, args := range [][]string{{cmd, "--help"}, {"help", cmd}} {
			r := leasectl(t, args...)
			requireCode(t, exitOK, r, args)
			for _, want := range wants {
				require.Contains(t, r.stdout, want, args)
			}
		}
	}
	// Help after an action lists the flags too.
	for _, args := range [][]string{
		{"migrate", "up", "--help"}, {"migrate", "down", "-h"}, {"migrate", "status", "--help"},
		{"policy", "show", "--help"}, {"policy", "set", "--help"}, {"deployment", "record", "--help"},
		{"audit", "--help"}, {"health", "--help"}, {"evidence", "--help"},
	} {
		r := leasectl(t, args...)
		requireCode(t, exitOK, r, args)
		require.Contains(t, r.stdout, "Flags:", args)
		require.Contains(t, r.stdout, "-database-url", args)
	}
}

func TestUsageErrorsExit64WithOneLine(t *testing.T) {
	t.Parallel()
	cases := [][]string{
		{},
		{"frobnicate"},
		{"help", "frobnicate"},
		{"migrate"},
		{"migrate", "sideways"},
		{"migrate", "up", "--to", "x"},
		{"migrate", "up", "--to", "999"},
		{"migrate", "down", "--to", "-1"},
		{"migrate", "down", "--drop-roles"},
		{"migrate", "down", "--to", "1", "--drop-roles"},
		{"migrate", "status", "--output", "yaml"},
		{"migrate", "status", "--to", "1"},
		{"migrate", "up", "extra"},
		{"migrate", "up", "--lock-timeout", "0"},
		{"migrate", "down", "--lock-timeout", "500us"},
		{"migrate", "up", "--lock-timeout", "soon"},
		{"migrate", "status", "--lock-timeout", "1s"},
		{"policy"},
		{"policy", "remove"},
		{"policy", "show", "--output", "yaml"},
		{"policy", "set", "--reason", "r"},
		{"policy", "set", "--queue", "billing"},
		{"policy", "set", "--queue", "billing", "--reason", "r", "--lease-duration", "long"},
		{"policy", "set", "--queue", "billing", "--reason", "r", "--output", "xml"},
		{"audit", "--output", "yaml"},
		{"audit", "--bogus"},
		{"health", "--output", "csv"},
		{"evidence", "--format", "pdf"},
		{"evidence", "--output", "yaml"},
		{"evidence", "--since", "last tuesday"},
		{"evidence", "--since", "-5h"},
		{"deployment"},
		{"deployment", "undo"},
		{"deployment", "record", "--version", "1.0"},
		{"deployment", "record", "--version", "1.0", "--source", "0123456789abcdef0123456789abcdef01234567", "--deployed-by", "ops.alice", "--ticket", "REL-42", "--reason", "r", "--output", "yaml"},
	}
	for _, args := range cases {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			t.Parallel()
			requireUsageError(t, args)
		})
	}
}

// requireUsageError runs leasectl with args and requires exit 64 with one
// "error: usage:" line (the full help for no arguments at all).
func requireUsageError(t *testing.T, args []string) {
	t.Helper()
	{
		r := leasectl(t, args...)
		requireCode(t, exitUsage, r, args)
		if len(args) == 0 {
			require.Contains(t, r.stderr, "Usage:")
			return
		}
		lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
		require.Len(t, lines, 1, "%v: %s", args, r.stderr)
		require.True(t, strings.HasPrefix(lines[0], "error: usage: "), "%v: %s", args, r.stderr)
		require.Empty(t, r.stdout, args)
	}
}

// pgx's connection errors begin "failed to connect to `user=... database=...`",
// and a server's refusal repeats the login: leasectl printed both. Now a
// refusal is its SQLSTATE and a network failure what the dial reported.
func TestConnectionFailureNamesNoLoginOrDatabase(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	u, err := url.Parse(db.URL)
	require.NoError(t, err)
	u.User = url.User("lf_unknown_login_q7")
	closed, err := url.Parse(closedPortURL(t))
	require.NoError(t, err)
	closed.User, closed.Path = url.User("lf_unknown_login_q7"), "/lf_private_db_q7"
	for _, c := range []struct{ url, want string }{
		{u.String(), "the server refused the connection (SQLSTATE 28000: the login is not authorized or does not exist)"},
		{closed.String(), "connect: connection refused"},
	} {
		for _, args := range [][]string{{"health"}, {"migrate", "status"}} {
			r := leasectl(t, append(args, "--database-url", c.url)...)
			requireCode(t, exitError, r, args)
			require.Contains(t, r.stderr, c.want, args)
			for _, name := range []string{"lf_unknown_login_q7", "lf_private_db_q7", db.Name, "user="} {
				require.NotContains(t, r.stderr, name, args)
			}
		}
	}
}

func TestConnectionFailureIsOneErrorLineAndExit1(t *testing.T) {
	t.Parallel()
	url := closedPortURL(t)
	for _, args := range [][]string{
		{"migrate", "up"}, {"migrate", "status"}, {"policy", "show"},
		{"policy", "set", "--queue", "billing", "--reason", "r"}, {"audit"}, {"health"}, {"evidence"},
		{"deployment", "record", "--version", "1.0", "--source", "0123456789abcdef0123456789abcdef01234567", "--deployed-by", "ops.alice", "--ticket", "REL-42", "--reason", "r"},
	} {
		r := leasectl(t, append(args, "--database-url", url)...)
		requireCode(t, exitError, r, args)
		require.True(t, strings.HasPrefix(r.stderr, "error: connect to database: "), "%v: %s", args, r.stderr)
		require.Equal(t, 1, strings.Count(r.stderr, "\n"), r.stderr)
	}
	r := leasectl(t, "health", "--database-url", "postgres://%zz")
	requireCode(t, exitError, r)
	require.True(t, strings.HasPrefix(r.stderr, "error: connect to database: "), r.stderr)
	r = leasectl(t, "migrate", "status", "--database-url", "postgres://%zz")
	requireCode(t, exitError, r)
	require.True(t, strings.HasPrefix(r.stderr, "error: connect to database: "), r.stderr)
}
