package sqlintegration

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/mightyetl/leasefence/internal/testdb"
	sqlbundle "github.com/mightyetl/leasefence/sql"
)

// attacker is a login without privileges but CREATE on schema public of
// one database: what public is on PostgreSQL 14 and older, or after GRANT
// CREATE ON SCHEMA public TO PUBLIC.
type attacker struct {
	name string
	url  string
}

// newAttacker creates a fresh login that may create objects in public of
// db, dropped (with what it owns there) when t ends.
func newAttacker(t *testing.T, ctx context.Context, db *testdb.DB, admin *pgxpool.Pool) attacker {
	t.Helper()
	var suffix string
	require.NoError(t, admin.QueryRow(ctx, `SELECT pg_catalog.substr(pg_catalog.md5(pg_catalog.random()::text), 1, 10)`).Scan(&suffix))
	a := attacker{name: "lf_mallory_" + suffix}
	_, err := admin.Exec(ctx, fmt.Sprintf(`CREATE ROLE %s LOGIN PASSWORD 'mallory-%s'`, a.name, suffix))
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx := context.Background()
		_, _ = admin.Exec(ctx, "DROP OWNED BY "+a.name+" CASCADE")
		_, _ = admin.Exec(ctx, "DROP ROLE IF EXISTS "+a.name)
	})
	_, err = admin.Exec(ctx, "GRANT CREATE ON SCHEMA public TO "+a.name)
	require.NoError(t, err)
	u, err := url.Parse(db.URL)
	require.NoError(t, err)
	u.User = url.UserPassword(a.name, "mallory-"+suffix)
	a.url = u.String()
	return a
}

// isSuperuser reports whether role name is a superuser now.
func isSuperuser(t *testing.T, ctx context.Context, pool *pgxpool.Pool, name string) bool {
	t.Helper()
	var super bool
	require.NoError(t, pool.QueryRow(ctx, `SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname = $1`, name).Scan(&super))
	return super
}

// escalationOperators are operators, each with the exact argument types of
// an expression the bundle writes unqualified at install time, so that
// they beat pg_catalog's inexact candidates under the installer's search
// path: interval / integer (the CHECK renewal_interval <= lease_duration /
// 3 of queue_lease_policy), numeric / integer and bigint % integer
// (record_lease_outcome's BEGIN ATOMIC body). Each function makes the
// attacker superuser when a superuser calls it, then returns what
// pg_catalog's operator would.
var escalationOperators = []plantedOperator{
	{"/", "interval", "integer", "interval", "$1 / $2::double precision"},
	{"/", "numeric", "integer", "numeric", "$1 / $2::numeric"},
	{"%", "bigint", "integer", "bigint", "$1 % $2::bigint"},
}

// breakingOperators bind by path too, but break the install instead: an
// unknown literal after ->> is first tried as the other side's type, so
// bundle_migration_version's e.new_values ->> 'migration_version' picks
// public.->>(jsonb, jsonb) and 002 fails parsing 'migration_version' as
// jsonb.
var breakingOperators = []plantedOperator{
	{"->>", "jsonb", "jsonb", "text", "$1 ->> ($2 #>> '{}')"},
}

// plantedOperator is an operator the attacker creates in public.
type plantedOperator struct{ op, left, right, result, body string }

// plantOperators creates ops in public as the attacker.
func plantOperators(t *testing.T, ctx context.Context, a attacker, ops []plantedOperator) {
	t.Helper()
	conn, err := pgx.Connect(ctx, a.url)
	require.NoError(t, err)
	defer conn.Close(context.Background())
	for i, o := range ops {
		fn := fmt.Sprintf("public.lf_evil_%d_%d", len(o.op), i)
		_, err := conn.Exec(ctx, fmt.Sprintf(`CREATE FUNCTION %s(%s, %s) RETURNS %s LANGUAGE plpgsql AS $f$
BEGIN
    IF (SELECT r.rolsuper FROM pg_catalog.pg_roles r WHERE r.rolname = CURRENT_USER) THEN
        EXECUTE 'ALTER ROLE %s SUPERUSER';
    END IF;
    RETURN %s;
END $f$`, fn, o.left, o.right, o.result, a.name, o.body))
		require.NoError(t, err)
		_, err = conn.Exec(ctx, fmt.Sprintf(`CREATE OPERATOR public.%s (LEFTARG = %s, RIGHTARG = %s, FUNCTION = %s)`,
			o.op, o.left, o.right, fn))
		require.NoError(t, err)
	}
}

// An unprivileged login that can create in public plants operators that
// match the bundle's unqualified install-time expressions exactly. The
// bundle's migrator pins search_path for each migration, so migrate up as
// superuser binds pg_catalog's operators: the login stays unprivileged and
// no bundle object depends on anything outside pg_catalog and durable_jobs.
// (On 1cc8d2a the CHECK of queue_lease_policy called public./ while 001
// inserted the default policy, and the login became superuser.)
func TestInstallIgnoresOperatorsPlantedInPublic(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	db := testdb.NewEmpty(t)
	admin := db.Pool(t)
	a := newAttacker(t, ctx, db, admin)
	plantOperators(t, ctx, a, escalationOperators)

	require.NoError(t, sqlbundle.Apply(ctx, db.URL), "migrate up as superuser")
	require.False(t, isSuperuser(t, ctx, admin, a.name), "the planted operator ran as the installer")

	rows, _ := admin.Query(ctx, sqlbundle.ForeignDependenciesSQL)
	foreign, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	require.Empty(t, foreign, "bundle objects bound to objects outside pg_catalog and durable_jobs")

	// The bundle's own use of the expressions still works, as pg_catalog's.
	_, err = admin.Exec(ctx, `INSERT INTO durable_jobs.queue_lease_policy
		(queue_name, lease_duration, renewal_interval, max_claim_lifetime, renewal_enabled)
		VALUES ('attack.q', interval '9 seconds', interval '3 seconds', interval '1 hour', true)`)
	require.NoError(t, err)
	_, err = admin.Exec(ctx, `SELECT durable_jobs.record_lease_outcome('attack.q', 'reclaim', 1)`)
	require.NoError(t, err)
	var version int32
	require.NoError(t, admin.QueryRow(ctx, `SELECT migration_version FROM durable_jobs.bundle_migration_version()`).Scan(&version))
	require.Equal(t, sqlbundle.NewestVersion(), version)
	require.False(t, isSuperuser(t, ctx, admin, a.name))
}

// A planted jsonb ->> jsonb made 002 fail on 1cc8d2a (the bundle could not
// be installed); with search_path pinned it is ignored.
func TestInstallIgnoresOperatorPlantedToBreakIt(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	db := testdb.NewEmpty(t)
	admin := db.Pool(t)
	a := newAttacker(t, ctx, db, admin)
	plantOperators(t, ctx, a, breakingOperators)
	require.NoError(t, sqlbundle.Apply(ctx, db.URL), "migrate up as superuser")
	rows, _ := admin.Query(ctx, sqlbundle.ForeignDependenciesSQL)
	foreign, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	require.Empty(t, foreign)
}

// requireRefused asserts err is the preflight's refusal and mentions want.
func requireRefused(t *testing.T, err error, want string) {
	t.Helper()
	var pre *sqlbundle.PreflightError
	require.Error(t, err)
	require.True(t, errors.As(err, &pre), "want a *PreflightError, got %v", err)
	require.Contains(t, err.Error(), want)
	require.Contains(t, err.Error(), "nothing was changed")
}

// requireUntouched asserts that the database has no bundle schema and a
// version table, if any, at version 0.
func requireUntouched(t *testing.T, ctx context.Context, pool *pgxpool.Pool) {
	t.Helper()
	var schema bool
	require.NoError(t, pool.QueryRow(ctx, `SELECT pg_catalog.to_regnamespace('durable_jobs') IS NOT NULL`).Scan(&schema))
	require.False(t, schema, "the refused install created the schema")
}

// A version table planted in public with a trigger would run the
// attacker's trigger function as the installer when tern records the
// version; the preflight refuses it before tern touches it, and changes
// nothing. (On 1cc8d2a the login became superuser.) Rules, row security,
// a view, extra columns and a foreign owner are refused too.
func TestInstallRefusesPlantedVersionTable(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, plant, want string
	}{
		{"trigger", `CREATE TABLE public.leasefence_schema_version (version int4 NOT NULL);
			INSERT INTO public.leasefence_schema_version VALUES (0);
			CREATE FUNCTION public.lf_evil_trigger() RETURNS trigger LANGUAGE plpgsql AS $f$
			BEGIN
			    IF (SELECT r.rolsuper FROM pg_catalog.pg_roles r WHERE r.rolname = CURRENT_USER) THEN
			        EXECUTE 'ALTER ROLE ' || pg_catalog.quote_ident(SESSION_USER) || ' SUPERUSER';
			    END IF;
			    RETURN NEW;
			END $f$;
			CREATE TRIGGER lf_evil BEFORE UPDATE ON public.leasefence_schema_version
			    FOR EACH ROW EXECUTE FUNCTION public.lf_evil_trigger();`, "it has triggers"},
		{"rule", `CREATE TABLE public.leasefence_schema_version (version int4 NOT NULL);
			INSERT INTO public.leasefence_schema_version VALUES (0);
			CREATE RULE lf_evil AS ON UPDATE TO public.leasefence_schema_version DO ALSO NOTIFY lf_evil;`, "it has rules"},
		{"row security", `CREATE TABLE public.leasefence_schema_version (version int4 NOT NULL);
			INSERT INTO public.leasefence_schema_version VALUES (0);
			ALTER TABLE public.leasefence_schema_version ENABLE ROW LEVEL SECURITY;`, "row-level security"},
		{"view", `CREATE VIEW public.leasefence_schema_version AS SELECT 0::int4 AS version;`, "not a plain table"},
		{"columns", `CREATE TABLE public.leasefence_schema_version (version int4 NOT NULL, note text DEFAULT 'x');
			INSERT INTO public.leasefence_schema_version VALUES (0);`, "its columns are not exactly version int4 NOT NULL"},
		{"check", `CREATE TABLE public.leasefence_schema_version (version int4 NOT NULL CHECK (version >= 0));
			INSERT INTO public.leasefence_schema_version VALUES (0);`, "it has constraints"},
		{"owner", `CREATE TABLE public.leasefence_schema_version (version int4 NOT NULL);
			INSERT INTO public.leasefence_schema_version VALUES (0);`, "it is owned by lf_mallory_"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
			defer cancel()
			db := testdb.NewEmpty(t)
			admin := db.Pool(t)
			a := newAttacker(t, ctx, db, admin)
			conn, err := pgx.Connect(ctx, a.url)
			require.NoError(t, err)
			_, err = conn.Exec(ctx, c.plant)
			conn.Close(context.Background())
			require.NoError(t, err)

			err = sqlbundle.Apply(ctx, db.URL)
			requireRefused(t, err, c.want)
			require.Contains(t, err.Error(), "it is owned by "+a.name, "a table the attacker owns is refused for that too")
			require.False(t, isSuperuser(t, ctx, admin, a.name))
			requireUntouched(t, ctx, admin)
		})
	}
}

// A table tern made, owned by the installer, passes the preflight; and a
// version table changed after the preflight, between two migrations, is
// refused by the next migration's own check inside its transaction.
func TestVersionTableIsCheckedInsideEachMigration(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	db := testdb.NewEmpty(t)
	admin := db.Pool(t)
	conn := db.Conn(t)
	m, err := sqlbundle.NewMigrator(ctx, conn)
	require.NoError(t, err)
	require.NoError(t, m.MigrateTo(ctx, 1))
	_, err = admin.Exec(ctx, `CREATE RULE lf_late AS ON UPDATE TO public.leasefence_schema_version DO ALSO NOTIFY lf_late`)
	require.NoError(t, err)
	err = m.MigrateTo(ctx, 2)
	require.ErrorContains(t, err, "is not the table leasefence creates: it has rules")
	v, err := m.GetCurrentVersion(ctx)
	require.NoError(t, err)
	require.Equal(t, int32(1), v)
	var functions int
	require.NoError(t, admin.QueryRow(ctx, `SELECT pg_catalog.count(*) FROM pg_catalog.pg_proc p
		JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = 'durable_jobs'`).Scan(&functions))
	require.Equal(t, 1, functions, "002 was rolled back: only 001's trigger function is there")
}

// countBundleRoles counts the roles named durable_job_*.
func countBundleRoles(t *testing.T, ctx context.Context, pool *pgxpool.Pool) int {
	t.Helper()
	var n int
	require.NoError(t, pool.QueryRow(ctx, `SELECT pg_catalog.count(*) FROM pg_catalog.pg_roles
		WHERE rolname LIKE 'durable\_job\_%'`).Scan(&n))
	return n
}

// dbURL is u with its user and database replaced.
func dbURL(t *testing.T, base, user, password, dbname string) string {
	t.Helper()
	u, err := url.Parse(base)
	require.NoError(t, err)
	if user != "" {
		u.User = url.UserPassword(user, password)
	}
	u.Path = "/" + dbname
	return u.String()
}

// On a cluster without the bundle's roles: the documented non-superuser
// install (the database owner with CREATEROLE) is refused before anything
// changes: no roles, no schema, no version table (on 1cc8d2a it failed in
// 002 and left version 1 with tables owned by that role). A superuser then
// installs; pre-existing bundle roles with LOGIN, attributes, or members of
// a definer owner are refused, again changing nothing, and reused once
// they are as the bundle makes them.
func TestInstallPreflightRefusesNonSuperuserAndTamperedRoles(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*testTimeout)
	defer cancel()
	_, db := testdb.OwnCluster(t)
	admin := db.Pool(t)
	exec := func(sql string) {
		t.Helper()
		_, err := admin.Exec(ctx, sql)
		require.NoError(t, err, sql)
	}
	// Remove the bundle from both databases of this cluster, then its roles.
	exec(`ALTER DATABASE ` + testdb.TemplateName + ` WITH ALLOW_CONNECTIONS true`)
	for _, name := range []string{testdb.TemplateName, db.Name} {
		conn, err := pgx.Connect(ctx, dbURL(t, db.URL, "", "", name))
		require.NoError(t, err)
		m, err := sqlbundle.NewMigrator(ctx, conn)
		require.NoError(t, err)
		require.NoError(t, m.MigrateTo(ctx, 0))
		conn.Close(context.Background())
	}
	for _, r := range bundleRoles {
		exec("DROP ROLE " + r)
	}

	exec(`CREATE ROLE lf_db_owner LOGIN CREATEROLE PASSWORD 'owner-pw'`)
	exec(`CREATE DATABASE lf_owned OWNER lf_db_owner`)
	ownerURL := dbURL(t, db.URL, "lf_db_owner", "owner-pw", "lf_owned")
	err := sqlbundle.Apply(ctx, ownerURL)
	requireRefused(t, err, "must be applied by a superuser")
	require.Zero(t, countBundleRoles(t, ctx, admin), "the refused install created roles")
	owned, err := pgxpool.New(ctx, dbURL(t, db.URL, "", "", "lf_owned"))
	require.NoError(t, err)
	defer owned.Close()
	requireUntouched(t, ctx, owned)
	var versionTable bool
	require.NoError(t, owned.QueryRow(ctx, `SELECT pg_catalog.to_regclass('public.leasefence_schema_version') IS NOT NULL`).Scan(&versionTable))
	require.False(t, versionTable, "the refused install created the version table")

	// Roles made by somebody else before the first install.
	exec(`CREATE ROLE durable_job_worker LOGIN`)
	exec(`CREATE ROLE durable_job_auditor NOLOGIN CREATEDB BYPASSRLS`)
	exec(`CREATE ROLE durable_job_renewal_owner NOLOGIN`)
	exec(`CREATE ROLE durable_job_evidence_owner NOLOGIN`)
	exec(`CREATE ROLE lf_sneaky LOGIN IN ROLE durable_job_renewal_owner, durable_job_evidence_owner`)
	exec(`CREATE ROLE durable_job_claim_owner NOLOGIN IN ROLE pg_write_all_data`)
	err = sqlbundle.Apply(ctx, dbURL(t, db.URL, "", "", "lf_owned"))
	requireRefused(t, err, "bundle role durable_job_worker can log in")
	require.ErrorContains(t, err, "bundle role durable_job_auditor has CREATEDB, BYPASSRLS")
	require.ErrorContains(t, err, "bundle role durable_job_renewal_owner has members (lf_sneaky)")
	require.ErrorContains(t, err, "bundle role durable_job_evidence_owner has members (lf_sneaky)")
	require.ErrorContains(t, err, "bundle role durable_job_claim_owner is a member of pg_write_all_data")
	requireUntouched(t, ctx, owned)
	require.Equal(t, 5, countBundleRoles(t, ctx, admin))

	// Once they are plain NOLOGIN roles, the bundle reuses them.
	exec(`ALTER ROLE durable_job_worker NOLOGIN`)
	exec(`ALTER ROLE durable_job_auditor NOCREATEDB NOBYPASSRLS`)
	exec(`DROP ROLE lf_sneaky`)
	exec(`REVOKE pg_write_all_data FROM durable_job_claim_owner`)
	require.NoError(t, sqlbundle.Apply(ctx, dbURL(t, db.URL, "", "", "lf_owned")))
	require.Equal(t, len(bundleRoles), countBundleRoles(t, ctx, admin))

	// A non-superuser on an installed database is refused by each
	// migration's own check: down changes nothing.
	_, err = owned.Exec(ctx, `GRANT SELECT ON public.leasefence_schema_version TO lf_db_owner`)
	require.NoError(t, err)
	conn, err := pgx.Connect(ctx, ownerURL)
	require.NoError(t, err)
	defer conn.Close(context.Background())
	m, err := sqlbundle.NewMigrator(ctx, conn)
	require.NoError(t, err)
	require.ErrorContains(t, m.MigrateTo(ctx, 1), "must be applied by a superuser")
	v, err := m.GetCurrentVersion(ctx)
	require.NoError(t, err)
	require.Equal(t, sqlbundle.NewestVersion(), v)
}
