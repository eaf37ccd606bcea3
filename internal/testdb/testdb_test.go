package testdb

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/mightyetl/leasefence/internal/pglocal"
	sqlbundle "github.com/mightyetl/leasefence/sql"
)

func TestMain(m *testing.M) { os.Exit(Run(m)) }

func TestNewDatabaseHasBundleAndTestExtensions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := New(t)
	require.True(t, strings.HasPrefix(db.Name, "lftest"), "database name %q", db.Name)
	conn := db.Conn(t)

	var version int32
	require.NoError(t, conn.QueryRow(ctx, "SELECT version FROM "+sqlbundle.VersionTable).Scan(&version))
	require.Equal(t, sqlbundle.NewestVersion(), version, "the template is migrated to the newest version")

	var extensions []string
	require.NoError(t, conn.QueryRow(ctx, `SELECT array_agg(e.extname || '@' || n.nspname ORDER BY e.extname)
		FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace
		WHERE e.extname IN ('pgtap', 'plpgsql_check')`).Scan(&extensions))
	require.Equal(t, []string{"pgtap@public", "plpgsql_check@public"}, extensions)

	var functions int
	require.NoError(t, conn.QueryRow(ctx, `SELECT count(*) FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
		WHERE n.nspname = 'durable_jobs'`).Scan(&functions))
	require.Positive(t, functions, "the bundle's functions are in schema durable_jobs")
}

func TestServerRunsWithTestSettings(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	conn := New(t).Conn(t)
	for name, want := range map[string]string{
		"fsync":                    "off",
		"synchronous_commit":       "off",
		"full_page_writes":         "off",
		"plpgsql_check.profiler":   "on",
		"max_connections":          "300",
		"shared_preload_libraries": "plpgsql_check",
	} {
		var got string
		require.NoError(t, conn.QueryRow(ctx, "SELECT current_setting($1)", name).Scan(&got))
		require.Equal(t, want, got, "setting %s", name)
	}
	var isTemplate, allowConn bool
	require.NoError(t, conn.QueryRow(ctx, "SELECT datistemplate, datallowconn FROM pg_database WHERE datname = $1",
		shared.srv.template).Scan(&isTemplate, &allowConn))
	require.True(t, isTemplate, "the template is marked as one")
	require.False(t, allowConn, "nobody can connect to the template and block a clone")
}

func TestDatabasesAreIsolatedFromEachOther(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	first, second := New(t), New(t)
	require.NotEqual(t, first.Name, second.Name)
	_, err := first.Conn(t).Exec(ctx, "CREATE TABLE only_in_first (only_value int)")
	require.NoError(t, err)
	var found bool
	require.NoError(t, second.Conn(t).QueryRow(ctx, "SELECT to_regclass('public.only_in_first') IS NOT NULL").Scan(&found))
	require.False(t, found, "a table made in one test database is not in another")
}

func TestLoginRolesBelongToTheirRuntimeRoleOnly(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := New(t)
	worker := db.LoginConn(t, "durable_job_worker")
	var user string
	var isWorker, isProducer, isSuper bool
	require.NoError(t, worker.QueryRow(ctx, `SELECT session_user, pg_has_role('durable_job_worker', 'USAGE'),
		pg_has_role('durable_job_producer', 'USAGE'), (SELECT rolsuper FROM pg_roles WHERE rolname = session_user)`).
		Scan(&user, &isWorker, &isProducer, &isSuper))
	require.True(t, strings.HasPrefix(user, "lf_"), "login role %q", user)
	require.True(t, isWorker)
	require.False(t, isProducer)
	require.False(t, isSuper)

	var other string
	require.NoError(t, db.LoginConn(t, "durable_job_worker").QueryRow(ctx, "SELECT session_user").Scan(&other))
	require.NotEqual(t, user, other, "every call makes its own role")

	_, err := db.CreateLogin(ctx, "postgres")
	require.ErrorContains(t, err, "not one of the runtime roles")
}

func TestDropRemovesDatabaseAndItsLoginRoles(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, err := Open(ctx)
	require.NoError(t, err)
	loginURL, err := db.CreateLogin(ctx, "durable_job_auditor")
	require.NoError(t, err)
	login, err := pgx.Connect(ctx, loginURL)
	require.NoError(t, err)
	defer login.Close(ctx)
	var role string
	require.NoError(t, login.QueryRow(ctx, "SELECT session_user").Scan(&role))

	require.NoError(t, db.Drop(ctx), "drop works with a session still connected")
	require.NoError(t, db.Drop(ctx), "a second drop does nothing")

	admin := openConn(t, AdminURL(t, "postgres"))
	var databases, roles int
	require.NoError(t, admin.QueryRow(ctx, "SELECT count(*) FROM pg_database WHERE datname = $1", db.Name).Scan(&databases))
	require.NoError(t, admin.QueryRow(ctx, "SELECT count(*) FROM pg_roles WHERE rolname = $1", role).Scan(&roles))
	require.Zero(t, databases)
	require.Zero(t, roles)
	_, err = login.Exec(ctx, "SELECT 1")
	require.Error(t, err, "the dropped database's sessions were ended")
}

func TestNewEmptyHasNoBundle(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var schema *string
	require.NoError(t, NewEmpty(t).Conn(t).QueryRow(ctx, "SELECT to_regnamespace('durable_jobs')::text").Scan(&schema))
	require.Nil(t, schema)
}

func TestAdminURLReachesNewDatabases(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	admin := openConn(t, AdminURL(t, "postgres"))
	_, err := admin.Exec(ctx, "CREATE DATABASE lfextra_admin_url")
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = admin.Exec(context.Background(), "DROP DATABASE lfextra_admin_url WITH (FORCE)") })
	var name string
	require.NoError(t, openConn(t, AdminURL(t, "lfextra_admin_url")).QueryRow(ctx, "SELECT current_database()").Scan(&name))
	require.Equal(t, "lfextra_admin_url", name)
}

func TestOwnClusterSurvivesRestartAndIsSeparate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cluster, db := OwnCluster(t)
	// sharedServer starts the shared server if no test has yet: read
	// alone, shared.srv is nil when this test runs first.
	require.NotEqual(t, sharedServer(t).base.Host, "127.0.0.1:"+itoa(cluster.Port()), "not the shared server")
	pool := db.Pool(t)
	_, err := pool.Exec(ctx, "DROP ROLE IF EXISTS lfown_cluster_only; CREATE ROLE lfown_cluster_only")
	require.NoError(t, err)
	require.NoError(t, cluster.Restart(ctx))
	var version int32
	require.NoError(t, db.Conn(t).QueryRow(ctx, "SELECT version FROM "+sqlbundle.VersionTable).Scan(&version),
		"a new connection after the restart finds the data")
	require.Equal(t, sqlbundle.NewestVersion(), version)

	var roles int
	require.NoError(t, New(t).Conn(t).QueryRow(ctx, "SELECT count(*) FROM pg_roles WHERE rolname = 'lfown_cluster_only'").Scan(&roles))
	require.Zero(t, roles, "a role made on the test's own cluster is not on the shared one")
}

func itoa(n int) string {
	const digits = "0123456789"
	if n == 0 {
		return "0"
	}
	var b []byte
	for ; n > 0; n /= 10 {
		b = append([]byte{digits[n%10]}, b...)
	}
	return string(b)
}

// TestExistingServerModeSharesOneServerSafely runs two copies of this test
// binary at once against one server given by EnvDatabaseURL, as two
// packages of `go test ./...` would, and checks that both pass and leave
// no database or login role behind.
func TestExistingServerModeSharesOneServerSafely(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cluster, err := pglocal.Start(ctx, pglocal.Options{
		Settings:               map[string]string{"fsync": "off", "plpgsql_check.profiler": "on"},
		SharedPreloadLibraries: []string{"plpgsql_check"},
		InitdbCache:            initdbCacheDir(),
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = cluster.Stop() })

	run := func() *exec.Cmd {
		cmd := exec.Command(os.Args[0], "-test.count=1",
			"-test.run=^(TestNewDatabaseHasBundleAndTestExtensions|TestLoginRolesBelongToTheirRuntimeRoleOnly|TestDropRemovesDatabaseAndItsLoginRoles)$")
		cmd.Env = append(os.Environ(), EnvDatabaseURL+"="+cluster.URL("postgres"))
		return cmd
	}
	first, second := run(), run()
	var firstOut, secondOut strings.Builder
	first.Stdout, first.Stderr = &firstOut, &firstOut
	second.Stdout, second.Stderr = &secondOut, &secondOut
	require.NoError(t, first.Start())
	require.NoError(t, second.Start())
	require.NoError(t, first.Wait(), "first copy:\n%s", firstOut.String())
	require.NoError(t, second.Wait(), "second copy:\n%s", secondOut.String())

	conn, err := pgx.Connect(ctx, cluster.URL("postgres"))
	require.NoError(t, err)
	defer conn.Close(ctx)
	var databases []string
	require.NoError(t, conn.QueryRow(ctx, `SELECT COALESCE(array_agg(datname ORDER BY datname), '{}')
		FROM pg_database WHERE datname LIKE 'lftest%' OR datname LIKE 'leasefence_template%'`).Scan(&databases))
	require.Empty(t, databases, "databases left on the existing server")
	var logins []string
	require.NoError(t, conn.QueryRow(ctx, `SELECT COALESCE(array_agg(rolname ORDER BY rolname), '{}')
		FROM pg_roles WHERE rolname LIKE 'lf\_%'`).Scan(&logins))
	require.Empty(t, logins, "login roles left on the existing server")
	var runtimeRoles int
	require.NoError(t, conn.QueryRow(ctx, "SELECT count(*) FROM pg_roles WHERE rolname = ANY($1)", RuntimeRoles).Scan(&runtimeRoles))
	require.Equal(t, len(RuntimeRoles), runtimeRoles, "the bundle's cluster-wide roles stay")
}

// With LEASEFENCE_TEST_DOCKER=1 and no Docker engine, preparing the server
// fails with a message naming the variable and both alternatives, and
// starts nothing. (DOCKER_HOST points at a socket that cannot exist, so the
// test gives the same answer on a machine that does run Docker.)
func TestDockerSelectedWithoutEngineSaysWhatToDo(t *testing.T) {
	t.Setenv(EnvDocker, "1")
	t.Setenv("DOCKER_HOST", "unix://"+t.TempDir()+"/no-docker.sock")
	require.True(t, dockerSelected())
	srv, err := startDocker(context.Background())
	require.Nil(t, srv)
	require.Error(t, err)
	msg := err.Error()
	for _, want := range []string{
		"LEASEFENCE_TEST_DOCKER=1 asks for PostgreSQL in a Docker container, but no Docker engine answers",
		"unset LEASEFENCE_TEST_DOCKER to use the local PostgreSQL 15 binaries (the default; run make deps",
		"or set LEASEFENCE_TEST_DATABASE_URL to a superuser URL of an existing server",
	} {
		require.Contains(t, msg, want)
	}

	t.Setenv(EnvDocker, "")
	require.False(t, dockerSelected(), "local binaries stay the default")
	t.Setenv(EnvDocker, "yes")
	require.False(t, dockerSelected(), "only 1 selects Docker")
}
