package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/mightyetl/leasefence/internal/demo/demotest"
	"github.com/mightyetl/leasefence/internal/testdb"
)

// These tests run "leasectl demo" as a process: its flags, its exit codes
// and one-line errors, its signals (Ctrl-C, SIGHUP), the connection of its
// logins, and one whole run as a user sees it. What the demo does in the
// database is tested in internal/demo.

// demoLoginLifetime is how long the demo's login passwords stay valid
// (internal/demo).
const demoLoginLifetime = 5 * time.Minute

// requireDemoError requires exit 1 and a first stderr line starting
// "error: demo: <prefix>", and nothing on stderr that names a password or URL.
func requireDemoError(t *testing.T, r result, prefix string) {
	t.Helper()
	requireCode(t, exitError, r)
	require.True(t, strings.HasPrefix(r.stderr, "error: demo: "+prefix), "stderr:\n%s", r.stderr)
	require.NotContains(t, strings.ToLower(r.output()), "postgres://")
	require.NotContains(t, strings.ToLower(r.output()), "password")
}

func TestDemoPlaysTheStoriesAndPrintsHealthEvidenceAndTheTimelinePath(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	admin := db.Pool(t)
	// No --html: the timeline goes to the OS temp folder.
	tmp := t.TempDir()
	r := leasectlEnv(t, []string{"TMPDIR=" + tmp}, "demo", "--database-url", db.URL)
	requireCode(t, exitOK, r, "leasectl demo")
	require.Empty(t, r.stderr)
	run := demotest.RunID(t, r.stdout)

	// The health table of leasectl health, as the demo's operator login,
	// the evidence summary, the timeline's path and the time it took.
	htmlPath := filepath.Join(tmp, "leasefence-demo-"+run+".html")
	for _, want := range []string{"Story 1:", "Story 2:", "Story 3:",
		"Lease health (leasectl health, as the demo's operator login):\nQUEUE  ", "AWAITING RECLAIM", "demo." + run + ".frozen-worker",
		"Evidence of this run", "leasectl audit: passed",
		"Lease timeline (self-contained HTML, open it in a browser): " + htmlPath, "\ndemo finished in "} {
		require.Contains(t, r.stdout, want)
	}
	html, err := os.ReadFile(htmlPath)
	require.NoError(t, err)
	demotest.SelfContainedHTML(t, string(html))

	// Without --keep nothing of the run is left but its evidence; and
	// nothing printed names a password or a URL.
	demotest.NoRoles(t, admin, run)
	demotest.NoSchema(t, admin)
	demotest.NoData(t, admin, run)
	for _, s := range []string{"postgres://", "password", "@example.invalid"} {
		require.NotContains(t, strings.ToLower(r.output()), s)
	}
}

func TestDemoInterruptedStopsAndRemovesItsCluster(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, leasectlBin, "demo", "--html", filepath.Join(t.TempDir(), "timeline.html"))
	cmd.Env = cleanEnv()
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	var stderr demotest.LockedBuffer // read below while the process may still write to it
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())

	lines := bufio.NewScanner(stdout)
	port, folder, seen := demotest.UntilFirstClaim(t, lines)

	require.NoError(t, cmd.Process.Signal(os.Interrupt))
	// Read the rest before Wait, which closes the pipe.
	for lines.Scan() {
		seen.WriteString(lines.Text() + "\n")
	}
	waitErr := cmd.Wait()
	var exitErr *exec.ExitError
	require.True(t, errors.As(waitErr, &exitErr), "the interrupted demo exits non-zero: %v", waitErr)
	require.Equal(t, exitError, exitErr.ExitCode(), seen.String())
	require.Equal(t, "error: demo: interrupted; everything it started was stopped and removed\n", stderr.String())

	demotest.ClusterGone(t, port, folder)
}

func TestDemoUsageErrorsAndHelp(t *testing.T) {
	t.Parallel()
	r := leasectl(t, "demo", "--help")
	requireCode(t, exitOK, r)
	for _, want := range []string{"leasectl demo [--html PATH] [--database-url URL [--keep]]", "LF001", "Ctrl-C",
		"SIGHUP", "demo.<random>", "-html", "-database-url", "-keep", "SCRAM-SHA-256", "VALID UNTIL", "SIGKILL",
		"leasefence_demo_<random>", "What stays in the database: the\ncontrol-evidence records"} {
		require.Contains(t, r.stdout, want)
	}
	for _, args := range [][]string{{"demo", "now"}, {"demo", "--bogus"}, {"demo", "--html"}, {"demo", "--keep"}} {
		r := leasectl(t, args...)
		requireCode(t, exitUsage, r, args)
		require.Empty(t, r.stdout)
		require.Equal(t, 1, strings.Count(r.stderr, "\n"), r.stderr)
		require.True(t, strings.HasPrefix(r.stderr, "error: usage: demo: "), r.stderr)
	}
	for _, databaseURL := range []string{closedPortURL(t), "postgres://%zz"} {
		r = leasectl(t, "demo", "--database-url", databaseURL)
		requireCode(t, exitError, r)
		require.True(t, strings.HasPrefix(r.stderr, "error: demo: connect to database: "), r.stderr)
		require.Equal(t, 1, strings.Count(r.stderr, "\n"), r.stderr)
		// As every command: the login and the database are not named.
		require.NotContains(t, r.stderr, "nobody")
		require.NotContains(t, r.stderr, "nothing")
	}
}

func TestDemoRefusesARoleThatMayNotCreateRoles(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	admin := db.Pool(t)
	r := leasectl(t, "demo", "--database-url", db.LoginURL(t, "durable_job_operator"))
	requireDemoError(t, r, "check privileges: the --database-url role may not create roles")
	require.Equal(t, 1, strings.Count(r.stderr, "\n"), r.stderr)
	require.Contains(t, r.stdout, "Connected to an existing database")
	require.Zero(t, demotest.JobCount(t, admin))
}

func TestDemoStopsWhenItsLoginsMayNotConnect(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	admin := db.Pool(t)
	adminURL, name := demotest.Admin(t, db, admin, "SUPERUSER")
	_, err := admin.Exec(ctx, "REVOKE CONNECT ON DATABASE "+db.Name+" FROM PUBLIC")
	require.NoError(t, err)

	// The keyword/value form of the URL: the demo's logins replace its user
	// and password.
	u, err := url.Parse(adminURL)
	require.NoError(t, err)
	password, _ := u.User.Password()
	conn := fmt.Sprintf("host=%s port=%s dbname=%s user=%s password=%s", u.Hostname(), u.Port(),
		strings.TrimPrefix(u.Path, "/"), u.User.Username(), password)
	for key, values := range u.Query() {
		conn += " " + key + "=" + values[0]
	}
	r := leasectl(t, "demo", "--database-url", conn)
	requireDemoError(t, r, "create the demo's login roles and target table: the server refused the connection "+
		"(SQLSTATE 42501: the login may not connect to the database)")
	require.NotContains(t, r.output(), db.Name)
	require.NotContains(t, r.output(), password)

	// It made its schema, target table and login roles, then dropped
	// them all.
	require.Contains(t, r.stdout, "Creating login roles for a worker, a producer and an operator")
	demotest.NoSchema(t, admin)
	demotest.NoLoginsGrantedBy(t, admin, name)
}

// demoLogin is one login role of a demo run as the catalog has it.
type demoLogin struct {
	Name       string
	Password   string
	ValidUntil *time.Time
}

func TestDemoLoginsExpireTheirPasswordsAreNeverSentAndSIGHUPCleansUp(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// A cluster of the test's own, whose server log records every DDL
	// statement of the database as it was sent (log_statement = ddl).
	cluster, db := testdb.OwnCluster(t)
	admin := db.Pool(t)
	_, err := admin.Exec(ctx, "ALTER DATABASE "+db.Name+" SET log_statement = 'ddl'")
	require.NoError(t, err)
	logStart := fileSize(t, cluster.LogPath())

	cmd := exec.CommandContext(ctx, leasectlBin, "demo", "--database-url", db.URL, "--html", filepath.Join(t.TempDir(), "t.html"))
	cmd.Env = cleanEnv()
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	var stderr demotest.LockedBuffer
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())

	// While worker-a holds the first story's job, the logins exist.
	var seen strings.Builder
	var run string
	lines := bufio.NewScanner(stdout)
	for lines.Scan() {
		line := lines.Text()
		seen.WriteString(line + "\n")
		if m := regexp.MustCompile(`^Queues demo\.([0-9a-f]+)\.long-job, `).FindStringSubmatch(line); m != nil {
			run = m[1]
		}
		if run != "" && strings.Contains(line, "] worker-a claimed job") {
			break
		}
	}
	require.NotEmpty(t, run, "no queue line in:\n%s\nstderr:\n%s", seen.String(), stderr.String())
	var dbNow time.Time
	require.NoError(t, admin.QueryRow(ctx, `SELECT clock_timestamp()`).Scan(&dbNow))
	rows, err := admin.Query(ctx, `SELECT rolname::text, COALESCE(rolpassword, ''), rolvaliduntil FROM pg_authid
		WHERE rolname LIKE $1 ORDER BY rolname`, "leasefence_demo_"+run+"_%")
	require.NoError(t, err)
	logins, err := pgx.CollectRows(rows, pgx.RowToStructByPos[demoLogin])
	require.NoError(t, err)
	require.Len(t, logins, 3)
	verifier := regexp.MustCompile(`^SCRAM-SHA-256\$4096:[A-Za-z0-9+/]{22}==\$[A-Za-z0-9+/]{43}=:[A-Za-z0-9+/]{43}=$`)
	for _, l := range logins {
		require.Regexp(t, verifier, l.Password, l.Name)
		require.NotNil(t, l.ValidUntil, "%s has no VALID UNTIL", l.Name)
		require.True(t, l.ValidUntil.After(dbNow) && l.ValidUntil.Before(dbNow.Add(demoLoginLifetime)),
			"%s is valid until %s, want within %s of %s", l.Name, l.ValidUntil, demoLoginLifetime, dbNow)
	}

	// The terminal goes away: SIGHUP cleans up as Ctrl-C does.
	require.NoError(t, cmd.Process.Signal(syscall.SIGHUP))
	for lines.Scan() {
		seen.WriteString(lines.Text() + "\n")
	}
	waitErr := cmd.Wait()
	var exitErr *exec.ExitError
	require.True(t, errors.As(waitErr, &exitErr), "the demo exits non-zero: %v\n%s", waitErr, seen.String())
	require.Equal(t, exitError, exitErr.ExitCode(), seen.String())
	require.Equal(t, "error: demo: interrupted; everything it started was stopped and removed\n", stderr.String())
	demotest.NoRoles(t, admin, run)
	demotest.NoSchema(t, admin)
	demotest.NoData(t, admin, run)

	// The server log shows each CREATE ROLE as sent: with a verifier and
	// VALID UNTIL, and no password of any other form anywhere.
	log := readFrom(t, cluster.LogPath(), logStart)
	for _, l := range logins {
		require.Contains(t, log, fmt.Sprintf("CREATE ROLE %s LOGIN PASSWORD '%s' VALID UNTIL '", l.Name, l.Password))
	}
	passwords := regexp.MustCompile(`(?i)PASSWORD\s+'([^']*)'`).FindAllStringSubmatch(log, -1)
	require.Len(t, passwords, 3, "the log has the three CREATE ROLE statements:\n%s", log)
	for _, m := range passwords {
		require.Regexp(t, verifier, m[1])
	}
	require.Contains(t, log, "DROP ROLE IF EXISTS leasefence_demo_"+run+"_worker")
}

// fileSize returns the size of the file at path.
func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	info, err := os.Stat(path)
	require.NoError(t, err)
	return info.Size()
}

// readFrom returns the file at path from byte offset on.
func readFrom(t *testing.T, path string, offset int64) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(b[offset:])
}
