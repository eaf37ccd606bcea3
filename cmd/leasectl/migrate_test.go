package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/mightyetl/leasefence/internal/testdb"
	sqlbundle "github.com/mightyetl/leasefence/sql"
)

// schemaExists reports whether schema durable_jobs exists in the database.
func schemaExists(t *testing.T, pool *pgxpool.Pool) bool {
	t.Helper()
	var exists bool
	require.NoError(t, pool.QueryRow(context.Background(),
		`SELECT to_regnamespace('durable_jobs') IS NOT NULL`).Scan(&exists))
	return exists
}

// versionOf reads the bundle version from the version table.
func versionOf(t *testing.T, pool *pgxpool.Pool) int32 {
	t.Helper()
	var v int32
	require.NoError(t, pool.QueryRow(context.Background(), `SELECT version FROM `+sqlbundle.VersionTable).Scan(&v))
	return v
}

// bundleRoles lists the roles whose names start with durable_job_.
func bundleRoles(t *testing.T, pool *pgxpool.Pool) []string {
	t.Helper()
	rows, err := pool.Query(context.Background(),
		`SELECT rolname FROM pg_roles WHERE rolname LIKE 'durable\_job\_%' ORDER BY 1`)
	require.NoError(t, err)
	var names []string
	for rows.Next() {
		var n string
		require.NoError(t, rows.Scan(&n))
		names = append(names, n)
	}
	require.NoError(t, rows.Err())
	return names
}

func TestMigrateUpDownStatusOnAnEmptyDatabase(t *testing.T) {
	t.Parallel()
	db := testdb.NewEmpty(t)
	pool := db.Pool(t)
	newest := sqlbundle.NewestVersion()

	r := leasectl(t, "migrate", "status", "--database-url", db.URL)
	requireCode(t, exitOK, r)
	require.Contains(t, r.stdout, "current version: 0")
	require.Contains(t, r.stdout, fmt.Sprintf("newest version:  %d", newest))
	require.Contains(t, r.stdout, "to apply: run leasectl migrate up")
	var exists bool
	require.NoError(t, pool.QueryRow(context.Background(), `SELECT to_regclass($1) IS NOT NULL`,
		sqlbundle.VersionTable).Scan(&exists))
	require.False(t, exists, "status must not create the version table")

	r = leasectl(t, "migrate", "up", "--database-url", db.URL)
	requireCode(t, exitOK, r)
	require.Contains(t, r.stdout, "up 001_")
	require.Contains(t, r.stdout, fmt.Sprintf("migrated from version 0 to version %d", newest))
	require.True(t, schemaExists(t, pool))
	require.Equal(t, newest, versionOf(t, pool))

	// up on an up-to-date database changes nothing: no migration runs and
	// no evidence is appended.
	var evidenceBefore, evidenceAfter int
	require.NoError(t, pool.QueryRow(context.Background(),
		`SELECT count(*) FROM durable_jobs.control_evidence_record`).Scan(&evidenceBefore))
	r = leasectl(t, "migrate", "up", "--database-url", db.URL)
	requireCode(t, exitOK, r)
	require.Equal(t, fmt.Sprintf("already at version %d; nothing to do\n", newest), r.stdout)
	require.NoError(t, pool.QueryRow(context.Background(),
		`SELECT count(*) FROM durable_jobs.control_evidence_record`).Scan(&evidenceAfter))
	require.Equal(t, evidenceBefore, evidenceAfter)

	r = leasectl(t, "migrate", "status", "--output", "json", "--database-url", db.URL)
	requireCode(t, exitOK, r)
	var status map[string]any
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &status))
	require.Equal(t, map[string]any{"current_version": float64(newest), "newest_version": float64(newest),
		"up_to_date": true, "function_drift": []any{}}, status)
	r = leasectl(t, "migrate", "status", "--database-url", db.URL)
	requireCode(t, exitOK, r)
	require.Contains(t, r.stdout, "state:           up to date")
	require.Contains(t, r.stdout, fmt.Sprintf("functions:       as version %d installs them", newest))

	// A function replaced by hand is drift: listed, and exit code 2.
	_, err := pool.Exec(context.Background(), `CREATE OR REPLACE FUNCTION durable_jobs.job_status_totals()
		RETURNS TABLE (queue_name text, job_status text, job_count bigint)
		LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
		AS $$SELECT 'q'::text, 'QUEUED'::text, 0::bigint$$`)
	require.NoError(t, err)
	r = leasectl(t, "migrate", "status", "--database-url", db.URL)
	requireCode(t, exitFindings, r)
	require.Contains(t, r.stdout, fmt.Sprintf("functions:       1 differ from what version %d installs", newest))
	require.Contains(t, r.stdout, fmt.Sprintf("  - function durable_jobs.job_status_totals() differs from what version %d installs", newest))
	r = leasectl(t, "migrate", "status", "--output", "json", "--database-url", db.URL)
	requireCode(t, exitFindings, r)
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &status))
	require.Len(t, status["function_drift"], 1)
	// The down --to 0 and up below put the function back.

	// down steps back exactly one migration.
	r = leasectl(t, "migrate", "down", "--database-url", db.URL)
	requireCode(t, exitOK, r)
	require.Contains(t, r.stdout, fmt.Sprintf("migrated from version %d to version %d", newest, newest-1))
	require.Equal(t, newest-1, versionOf(t, pool))

	// up --to below the current version is refused; down --to above it too.
	r = leasectl(t, "migrate", "up", "--to", "0", "--database-url", db.URL)
	requireCode(t, exitUsage, r)
	require.Contains(t, r.stderr, "use migrate down")
	r = leasectl(t, "migrate", "down", "--to", fmt.Sprint(newest), "--database-url", db.URL)
	requireCode(t, exitUsage, r)
	require.Contains(t, r.stderr, "use migrate up")

	// down --to 0 removes the schema but keeps the roles and the version table.
	r = leasectl(t, "migrate", "down", "--to", "0", "--discard-evidence", "--evidence-export", filepath.Join(t.TempDir(), "evidence.json"),
		"--database-url", db.URL)
	requireCode(t, exitOK, r)
	require.Contains(t, r.stdout, "down 001_")
	require.False(t, schemaExists(t, pool))
	require.Equal(t, int32(0), versionOf(t, pool))
	require.Contains(t, bundleRoles(t, pool), "durable_job_worker")
	r = leasectl(t, "migrate", "down", "--database-url", db.URL)
	requireCode(t, exitOK, r)
	require.Equal(t, "already at version 0; nothing to do\n", r.stdout)

	// A database ahead of this binary is reported as such.
	_, err = pool.Exec(context.Background(), `UPDATE `+sqlbundle.VersionTable+` SET version = 999`)
	require.NoError(t, err)
	r = leasectl(t, "migrate", "status", "--database-url", db.URL)
	requireCode(t, exitOK, r)
	require.Contains(t, r.stdout, "newer than this leasectl")
	_, err = pool.Exec(context.Background(), `UPDATE `+sqlbundle.VersionTable+` SET version = 0`)
	require.NoError(t, err)

	// up --to 1 then up again reaches the newest version.
	r = leasectl(t, "migrate", "up", "--to", "1", "--database-url", db.URL)
	requireCode(t, exitOK, r)
	require.Equal(t, int32(1), versionOf(t, pool))
	r = leasectl(t, "migrate", "up", "--database-url", db.URL)
	requireCode(t, exitOK, r)
	require.Equal(t, newest, versionOf(t, pool))
}

func TestMigrateReadsPGVariablesWhenNoURLIsGiven(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	u, err := url.Parse(db.URL)
	require.NoError(t, err)
	password, _ := u.User.Password()
	env := []string{"PGHOST=" + u.Hostname(), "PGPORT=" + u.Port(), "PGUSER=" + u.User.Username(),
		"PGPASSWORD=" + password, "PGDATABASE=" + strings.TrimPrefix(u.Path, "/"), "PGSSLMODE=disable"}
	r := leasectlEnv(t, env, "migrate", "status")
	requireCode(t, exitOK, r)
	require.Contains(t, r.stdout, "up to date")
	r = leasectlEnv(t, env, "health")
	requireCode(t, exitOK, r)
	require.Contains(t, r.stdout, "QUEUE")
}

func TestMigrateFailuresSayWhatFailed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	// A login without privileges can read neither the version table nor
	// the auditor's version function: status says which logins can run it
	// (TestMigrateStatusWorksForOperatorAndAuditorLogins).
	db := testdb.New(t)
	worker := db.LoginURL(t, "durable_job_worker")
	r := leasectl(t, "migrate", "status", "--database-url", worker)
	requireCode(t, exitError, r)
	require.Contains(t, r.stderr, "error: read current version: this login may read neither")
	r = leasectl(t, "migrate", "up", "--database-url", worker)
	requireCode(t, exitError, r)
	require.Contains(t, r.stderr, "error: read current version: ")

	// Nor create it in an empty database.
	empty := testdb.NewEmpty(t)
	r = leasectl(t, "migrate", "up", "--database-url", empty.LoginURL(t, "durable_job_worker"))
	requireCode(t, exitError, r)
	require.Contains(t, r.stderr, "error: prepare migrator: ")

	// A migration that fails says which step, with PostgreSQL's SQLSTATE,
	// and leaves the version where it was.
	blocked := testdb.NewEmpty(t)
	pool := blocked.Pool(t)
	_, err := pool.Exec(ctx, `CREATE SCHEMA durable_jobs`)
	require.NoError(t, err)
	r = leasectl(t, "migrate", "up", "--database-url", blocked.URL)
	requireCode(t, exitError, r)
	require.Contains(t, r.stderr, fmt.Sprintf("error: migrate up to version %d: ", sqlbundle.NewestVersion()))
	require.Contains(t, r.stderr, "(SQLSTATE 42P06)")
	require.Equal(t, int32(0), versionOf(t, pool))
}

func TestMigrateDownDropRolesDropsOnlyTheBundlesRoles(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, db := testdb.OwnCluster(t)
	pool := db.Pool(t)
	require.Contains(t, bundleRoles(t, pool), "durable_job_renewal_owner")
	require.Contains(t, bundleRoles(t, pool), "durable_job_evidence_owner", "migration 014's owner of the evidence table")
	// Roles of the operators' own that share the prefix: a worker login of
	// one region and a reporting role that owns a table.
	_, err := pool.Exec(ctx, `CREATE ROLE durable_job_worker_eu LOGIN IN ROLE durable_job_worker;
		ALTER ROLE durable_job_worker_eu SET statement_timeout = '5min';
		ALTER ROLE durable_job_worker_eu SET idle_in_transaction_session_timeout = '5min';
		CREATE ROLE durable_job_reporting LOGIN;
		CREATE TABLE public.report (n int); ALTER TABLE public.report OWNER TO durable_job_reporting`)
	require.NoError(t, err)
	operatorRoles := []string{"durable_job_reporting", "durable_job_worker_eu"}

	// The template database of this cluster still uses the roles, so
	// PostgreSQL refuses to drop them: nothing is dropped and DETAIL says why.
	r := leasectl(t, "migrate", "down", "--to", "0", "--drop-roles", "--discard-evidence",
		"--evidence-export", filepath.Join(t.TempDir(), "evidence.json"), "--database-url", db.URL)
	requireCode(t, exitError, r)
	require.Contains(t, r.stderr, "error: drop roles: ")
	require.Contains(t, r.stderr, "DETAIL: ")
	require.False(t, schemaExists(t, pool))
	require.Contains(t, bundleRoles(t, pool), "durable_job_renewal_owner")

	// Once no database uses them, down --to 0 --drop-roles drops the twelve.
	// (This cluster is the test's own, so opening its template is harmless.)
	_, err = pool.Exec(ctx, `ALTER DATABASE `+testdb.TemplateName+` WITH ALLOW_CONNECTIONS true`)
	require.NoError(t, err)
	u, err := url.Parse(db.URL)
	require.NoError(t, err)
	u.Path = "/" + testdb.TemplateName
	r = leasectl(t, "migrate", "down", "--to", "0", "--discard-evidence", "--evidence-export", filepath.Join(t.TempDir(), "template.json"),
		"--database-url", u.String())
	requireCode(t, exitOK, r)
	r = leasectl(t, "migrate", "down", "--to", "0", "--drop-roles", "--database-url", db.URL)
	requireCode(t, exitOK, r)
	require.Contains(t, r.stdout, "already at version 0")
	require.Contains(t, r.stdout, "dropped 12 roles: [durable_job_audit_owner durable_job_auditor durable_job_claim_owner "+
		"durable_job_evidence_owner durable_job_operator durable_job_policy_owner durable_job_producer durable_job_producer_owner "+
		"durable_job_renewal_owner durable_job_retention_owner durable_job_terminal_owner durable_job_worker]\n")
	require.Equal(t, operatorRoles, bundleRoles(t, pool), "the operators' own roles are left alone")
	var owner string
	require.NoError(t, pool.QueryRow(ctx, `SELECT relowner::regrole::text FROM pg_class WHERE oid = 'public.report'::regclass`).Scan(&owner))
	require.Equal(t, "durable_job_reporting", owner)

	// A second run finds none of the twelve and drops nothing.
	r = leasectl(t, "migrate", "down", "--to", "0", "--drop-roles", "--database-url", db.URL)
	requireCode(t, exitOK, r)
	require.Contains(t, r.stdout, "dropped 0 roles: []\n")
	require.Equal(t, operatorRoles, bundleRoles(t, pool))

	// And the bundle installs again from nothing, roles included.
	r = leasectl(t, "migrate", "up", "--database-url", db.URL)
	requireCode(t, exitOK, r)
	require.Contains(t, bundleRoles(t, pool), "durable_job_worker")
	require.True(t, schemaExists(t, pool))
}

func TestMigrateWaitsForTheMigrationLockAtMostLockTimeout(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	pool := db.Pool(t)

	// Any login may take tern's migration lock and keep it; this one is an
	// auditor, and its query text carries a marker that must not be shown.
	holder := db.LoginConn(t, "durable_job_auditor")
	const marker = "holder-query-text-S3CRET"
	var pid int32
	var role string
	require.NoError(t, holder.QueryRow(ctx, `SELECT pg_backend_pid(), current_user::text
		FROM (SELECT pg_advisory_lock(9628173550095224)) l /* `+marker+` */`).Scan(&pid, &role))

	for _, action := range []string{"up", "down"} {
		began := time.Now()
		r := leasectl(t, "migrate", action, "--lock-timeout", "300ms", "--database-url", db.URL)
		requireCode(t, exitError, r, action)
		require.Less(t, time.Since(began), 20*time.Second, "the wait is bounded")
		require.Equal(t, fmt.Sprintf("error: migrate %s: the migration lock (advisory lock 9628173550095224) was not free "+
			"within 300ms: held by pid %d (role %q); wait for that session, or end it with pg_terminate_backend(pid), "+
			"and try again\n", action, pid, role), r.stderr)
		require.NotContains(t, r.output(), marker)
		require.Empty(t, r.stdout, "nothing was migrated")
	}
	require.Equal(t, sqlbundle.NewestVersion(), versionOf(t, pool))

	// Once the lock is free, migrate runs (and leaves the lock free).
	_, err := holder.Exec(ctx, `SELECT pg_advisory_unlock(9628173550095224)`)
	require.NoError(t, err)
	r := leasectl(t, "migrate", "down", "--lock-timeout", "2s", "--database-url", db.URL)
	requireCode(t, exitOK, r)
	r = leasectl(t, "migrate", "up", "--database-url", db.URL)
	requireCode(t, exitOK, r)
	require.Equal(t, sqlbundle.NewestVersion(), versionOf(t, pool))
	// leasectl has exited, but its backend may still be ending (a session's
	// advisory locks go with it): wait for that, bounded.
	require.Eventually(t, func() bool {
		var held int
		require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'
			AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`).Scan(&held))
		return held == 0
	}, 10*time.Second, 50*time.Millisecond, "no advisory lock is left once leasectl's sessions have ended")

	r = leasectl(t, "migrate", "--help")
	requireCode(t, exitOK, r)
	require.Contains(t, r.stdout, "--lock-timeout (default\n60s)")
}

// The migrations before 024 take the evidence-order key as an advisory
// lock, which any login may hold while idle: leasectl migrate's
// --lock-timeout covered only tern's lock, so an upgrade from 22 waited for
// ever (issue 34, item 1). Every lock a migration waits for is now bounded
// by --lock-timeout: the upgrade fails with 55P03, leaves the version where
// it was, and succeeds once the lock is released.
func TestMigrateBoundsEveryLockWaitOfAMigration(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.NewEmpty(t)
	pool := db.Pool(t)
	r := leasectl(t, "migrate", "up", "--to", "22", "--database-url", db.URL)
	requireCode(t, exitOK, r)

	attacker, err := pgx.Connect(ctx, db.LoginURL(t, "durable_job_worker"))
	require.NoError(t, err)
	defer attacker.Close(ctx)
	_, err = attacker.Exec(ctx, "SELECT pg_advisory_lock(1279655936, 1)")
	require.NoError(t, err)

	start := time.Now()
	r = leasectl(t, "migrate", "up", "--lock-timeout", "2s", "--database-url", db.URL)
	requireCode(t, exitError, r)
	require.Less(t, time.Since(start), 60*time.Second, "the wait is bounded")
	require.Contains(t, r.stderr, fmt.Sprintf("error: migrate up to version %d: ", sqlbundle.NewestVersion()))
	require.Contains(t, r.stderr, "(SQLSTATE 55P03)")
	require.Equal(t, int32(22), versionOf(t, pool), "the failed migration changed nothing")

	_, err = attacker.Exec(ctx, "SELECT pg_advisory_unlock(1279655936, 1)")
	require.NoError(t, err)
	r = leasectl(t, "migrate", "up", "--lock-timeout", "2s", "--database-url", db.URL)
	requireCode(t, exitOK, r)
	require.Equal(t, sqlbundle.NewestVersion(), versionOf(t, pool))
}
