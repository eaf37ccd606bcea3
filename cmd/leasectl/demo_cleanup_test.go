package main

import (
	"bufio"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/mightyetl/leasefence/internal/testdb"
)

// These tests attack the demo where it meets a shared database: objects
// another login planted for it, and what it leaves behind when it ends, is
// interrupted or is never allowed to clean up.

// plainLogin returns a URL to db as a new login role that holds no
// leasefence role (dropped with db, after the objects it made).
func plainLogin(t *testing.T, db *testdb.DB, admin *pgxpool.Pool) string {
	t.Helper()
	loginURL, name := demoAdmin(t, db, admin, "NOCREATEROLE")
	_, err := admin.Exec(context.Background(), "REVOKE durable_job_auditor FROM "+name)
	require.NoError(t, err)
	return loginURL
}

// demoEvidenceCount returns the number of control-evidence records of the
// queues of demo run.
func demoEvidenceCount(t *testing.T, admin *pgxpool.Pool, run string) int {
	t.Helper()
	var n int
	require.NoError(t, admin.QueryRow(context.Background(), `SELECT count(*) FROM durable_jobs.control_evidence_record
		WHERE queue_name LIKE $1`, "demo."+run+".%").Scan(&n))
	return n
}

// requireNoDemoData fails unless the jobs, payloads, outcomes, policies and
// tallies of demo run's queues are gone.
func requireNoDemoData(t *testing.T, admin *pgxpool.Pool, run string) {
	t.Helper()
	var jobs, payloads, outcomes, policies, tallies int
	require.NoError(t, admin.QueryRow(context.Background(), `SELECT
		(SELECT count(*) FROM durable_jobs.job_record WHERE queue_name LIKE $1),
		(SELECT count(*) FROM durable_jobs.job_payload_record p
			WHERE NOT EXISTS (SELECT 1 FROM durable_jobs.job_record j WHERE j.job_record_id = p.job_record_id)),
		(SELECT count(*) FROM durable_jobs.job_outcome_ledger o
			WHERE NOT EXISTS (SELECT 1 FROM durable_jobs.job_record j WHERE j.job_record_id = o.job_record_id)),
		(SELECT count(*) FROM durable_jobs.queue_lease_policy WHERE queue_name LIKE $1),
		(SELECT count(*) FROM durable_jobs.lease_outcome_tally WHERE queue_name LIKE $1)`, "demo."+run+".%").
		Scan(&jobs, &payloads, &outcomes, &policies, &tallies))
	require.Equal(t, []int{0, 0, 0, 0, 0}, []int{jobs, payloads, outcomes, policies, tallies},
		"jobs, orphan payloads, orphan outcomes, policies and tallies of the run")
}

func TestDemoWritesOnlyToItsOwnSchemaWherePublicIsWritable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	admin := db.Pool(t)

	// Where public is writable by every login (as before PostgreSQL 15, or
	// granted so), a login with no leasefence role plants the table the
	// demo used to write to, with a trigger that copies every row, and the
	// role of whoever inserts it, to a table of its own.
	_, err := admin.Exec(ctx, "GRANT CREATE ON SCHEMA public TO PUBLIC")
	require.NoError(t, err)
	thiefPool, err := pgxpool.New(ctx, plainLogin(t, db, admin))
	require.NoError(t, err)
	defer thiefPool.Close()
	_, err = thiefPool.Exec(ctx, `
		CREATE TABLE public.stolen (written_by text, job_record_id bigint, inserted_by name);
		GRANT INSERT ON public.stolen TO PUBLIC;
		CREATE TABLE public.leasefence_demo_target (job_record_id bigint NOT NULL, lease_fencing_generation bigint NOT NULL,
			queue_name text NOT NULL, written_by text NOT NULL, written_at timestamptz NOT NULL DEFAULT clock_timestamp(),
			PRIMARY KEY (job_record_id, lease_fencing_generation));
		GRANT SELECT, INSERT ON public.leasefence_demo_target TO PUBLIC;
		CREATE FUNCTION public.steal() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			INSERT INTO public.stolen VALUES (NEW.written_by, NEW.job_record_id, current_user);
			RETURN NEW;
		END $$;
		CREATE TRIGGER steal BEFORE INSERT ON public.leasefence_demo_target FOR EACH ROW EXECUTE FUNCTION public.steal();`)
	require.NoError(t, err)

	r := leasectl(t, "demo", "--database-url", db.URL, "--html", filepath.Join(t.TempDir(), "t.html"))
	requireCode(t, exitOK, r, "leasectl demo")
	run := demoRunID(t, r.stdout)

	var stolen, planted int
	require.NoError(t, admin.QueryRow(ctx, `SELECT (SELECT count(*) FROM public.stolen),
		(SELECT count(*) FROM public.leasefence_demo_target)`).Scan(&stolen, &planted))
	require.Zero(t, stolen, "the planted trigger never ran: the demo wrote nothing to public")
	require.Zero(t, planted)
	require.Contains(t, r.stdout, "shows 1 target row(s) for job", "story 2 read its own target table")

	// Nothing of the run is left but the evidence of its policy changes.
	requireNoDemoRoles(t, admin, run)
	requireNoDemoSchema(t, admin)
	requireNoDemoData(t, admin, run)
	require.Equal(t, 6, demoEvidenceCount(t, admin, run),
		"the evidence of its three policy changes stays, and of the three policies' removal (the policy table's trigger records every change)")
	require.Contains(t, r.stdout, "Dropped the demo's login roles and its schema leasefence_demo_"+run+".\n")
	require.Contains(t, r.stdout, "Deleted the jobs, lease policies and outcome tallies of queues demo."+run+".*")
}

func TestDemoLeavesWhatItMayNotDeleteAndSaysSo(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	admin := db.Pool(t)
	// An admin that may create roles and schemas but owns none of the
	// bundle's tables; the first story stops at once (the producer may not
	// enqueue), after the policies were set.
	adminURL, name := demoAdmin(t, db, admin, "CREATEROLE")
	_, err := admin.Exec(ctx, "GRANT SELECT ON public.leasefence_schema_version TO "+name+"; GRANT CREATE ON DATABASE "+
		db.Name+" TO "+name+"; REVOKE EXECUTE ON FUNCTION durable_jobs.enqueue_job FROM durable_job_producer")
	require.NoError(t, err)
	r := leasectl(t, "demo", "--database-url", adminURL, "--html", filepath.Join(t.TempDir(), "t.html"))
	requireDemoError(t, r, "story 1: ")
	run := demoRunID(t, r.stdout)
	require.Contains(t, r.stdout, "Left the jobs, lease policies and outcome tallies of queues demo."+run+
		".* in the database: the --database-url role may not delete them (permission denied for table job_record).\n")
	var policies int
	require.NoError(t, admin.QueryRow(ctx, `SELECT count(*) FROM durable_jobs.queue_lease_policy WHERE queue_name LIKE $1`,
		"demo."+run+".%").Scan(&policies))
	require.Equal(t, 3, policies, "what it may not delete stays, as it says")
	requireNoDemoRoles(t, admin, run)
	requireNoDemoSchema(t, admin)
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
	var stderr lockedBuffer
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
	requireNoDemoRoles(t, admin, run)
	requireNoDemoSchema(t, admin)
	requireNoDemoData(t, admin, run)

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

func TestDemoSCRAMVerifierIsTheOnePostgreSQLComputes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	admin := db.Pool(t)
	role := "leasectl_test_scram_" + randomName(3)
	t.Cleanup(func() { _, _ = admin.Exec(context.Background(), "DROP ROLE IF EXISTS "+role) })
	password := randomName(16)

	// PostgreSQL's own verifier of the password: same salt and iterations
	// give the same StoredKey and ServerKey.
	conn, err := admin.Acquire(ctx)
	require.NoError(t, err)
	defer conn.Release()
	_, err = conn.Exec(ctx, "SET password_encryption = 'scram-sha-256'")
	require.NoError(t, err)
	_, err = conn.Exec(ctx, "CREATE ROLE "+role+" LOGIN PASSWORD '"+password+"'")
	require.NoError(t, err)
	var theirs string
	require.NoError(t, conn.QueryRow(ctx, `SELECT rolpassword FROM pg_authid WHERE rolname = $1`, role).Scan(&theirs))
	m := regexp.MustCompile(`^SCRAM-SHA-256\$(\d+):([^$]+)\$`).FindStringSubmatch(theirs)
	require.NotNil(t, m, theirs)
	iterations, err := strconv.Atoi(m[1])
	require.NoError(t, err)
	salt, err := base64.StdEncoding.DecodeString(m[2])
	require.NoError(t, err)
	require.Equal(t, theirs, scramVerifier(password, salt, iterations))

	// A verifier of ours is stored as it is, even where the server would
	// hash clear passwords with md5.
	ours := newSCRAMVerifier(password)
	require.NotEqual(t, theirs, ours, "a new salt each time")
	_, err = conn.Exec(ctx, "SET password_encryption = 'md5'")
	require.NoError(t, err)
	_, err = conn.Exec(ctx, "ALTER ROLE "+role+" PASSWORD '"+ours+"'")
	require.NoError(t, err)
	var stored string
	require.NoError(t, conn.QueryRow(ctx, `SELECT rolpassword FROM pg_authid WHERE rolname = $1`, role).Scan(&stored))
	require.Equal(t, ours, stored)
	require.NotContains(t, ours, password)
}
