package testdb

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/mightyetl/leasefence/internal/pglocal"
	sqlbundle "github.com/mightyetl/leasefence/sql"
)

// EnvDatabaseURL names the environment variable that points the tests at an
// existing PostgreSQL server instead of a throwaway one. Its value is a
// superuser URL (postgres://user:password@host:port/dbname); the tests
// create and drop their own databases and login roles on that server, and
// the bundle's cluster-wide roles once.
const EnvDatabaseURL = "LEASEFENCE_TEST_DATABASE_URL"

// EnvVerbose names the environment variable that, set to any value, makes
// testdb print its progress (cluster start, template ready) to stderr.
const EnvVerbose = "LEASEFENCE_TESTDB_VERBOSE"

// TemplateName is the template database that holds the applied bundle on a
// throwaway cluster. (On a server from EnvDatabaseURL the name gets a random
// suffix so that test binaries running at once do not collide.)
const TemplateName = "leasefence_template"

// InstallHint is the advice given when a PostgreSQL tool the tests need is
// missing.
const InstallHint = "run make deps (apt-get install postgresql-15 postgresql-15-pgtap " +
	"libtap-parser-sourcehandler-pgtap-perl postgresql-15-plpgsql-check postgresql-15-pgaudit postgresql-15-cron)"

// RuntimeRoles are the bundle's four runtime groups that LoginURL and
// LoginPool accept.
var RuntimeRoles = []string{
	"durable_job_producer", "durable_job_worker", "durable_job_operator", "durable_job_auditor",
}

// ServerSettings are the settings of the throwaway clusters: durability
// off for speed (a test cluster is thrown away), the plpgsql_check
// profiler on for the SQL coverage gate, and room for many parallel
// connections.
var ServerSettings = map[string]string{
	"fsync":                   "off",
	"synchronous_commit":      "off",
	"full_page_writes":        "off",
	"plpgsql_check.profiler":  "on",
	"max_connections":         "300",
	"log_min_messages":        "warning",
	"log_min_error_statement": "panic", // the log never gets statement text
}

// setupTimeout bounds the preparation of a server and its template.
const setupTimeout = 3 * time.Minute

// DB is one test database, cloned from the template (New) or empty
// (NewEmpty).
type DB struct {
	// Name is the database's name.
	Name string
	// URL is a superuser connection URL to this database.
	URL string

	srv    *server
	mu     sync.Mutex
	logins []string // login roles made for this database, dropped with it
	drop   sync.Once
}

// server is one PostgreSQL server the tests use: the shared one of the
// binary or one from OwnCluster.
type server struct {
	cluster *pglocal.Cluster // nil for a server from EnvDatabaseURL or EnvDocker
	// stopContainer removes the Docker container of an EnvDocker server.
	stopContainer func() error
	base          url.URL // superuser URL; its path is replaced per database
	template      string
	prefix        string // database-name prefix, unique per server user
	admin         *pgxpool.Pool
	createMu      sync.Mutex // CREATE DATABASE calls take turns (one template)
	seq           atomic.Int64
}

var (
	shared struct {
		once sync.Once
		srv  *server
		err  error
	}
	runCalled atomic.Bool
)

// Run runs the tests of m and then stops the binary's server. Use it as
//
//	func TestMain(m *testing.M) { os.Exit(testdb.Run(m)) }
//
// It returns m.Run's exit code, or 1 when the tests passed but the cleanup
// failed.
func Run(m *testing.M) int {
	runCalled.Store(true)
	code := m.Run()
	if shared.srv != nil {
		if err := shared.srv.close(); err != nil {
			fmt.Fprintf(os.Stderr, "testdb: cleanup: %v\n", err)
			if code == 0 {
				code = 1
			}
		}
	}
	return code
}

// New returns a fresh database cloned from the template (the bundle
// applied, pgtap and plpgsql_check installed), dropped when t ends. It
// fails t when the server cannot be prepared, saying how to fix it.
func New(t testing.TB) *DB {
	t.Helper()
	srv := sharedServer(t)
	return newTestDB(t, srv, srv.template)
}

// NewEmpty returns a fresh empty database (a copy of template0, without the
// bundle) on the shared server, dropped when t ends; for tests that apply
// or remove the bundle themselves. The bundle's roles are cluster-wide and
// already exist on this server: a test that drops them must use
// OwnCluster.
func NewEmpty(t testing.TB) *DB {
	t.Helper()
	return newTestDB(t, sharedServer(t), "template0")
}

// Open is New for code that has no testing.TB, such as a runnable Example:
// it returns a fresh database cloned from the template. The caller must
// call Drop.
func Open(ctx context.Context) (*DB, error) {
	srv, err := sharedServerErr(ctx)
	if err != nil {
		return nil, err
	}
	return srv.newDatabase(ctx, srv.template)
}

// AdminURL returns a superuser URL to database dbname on the shared test
// server (the database need not exist yet: use it to create extra
// databases and connect to them).
func AdminURL(t testing.TB, dbname string) string {
	t.Helper()
	return sharedServer(t).url(dbname)
}

// OwnCluster starts a throwaway cluster for t alone, with the same settings
// and template as the shared one, and returns it with one database cloned
// from its template. Use it for tests that restart the server or change
// cluster-wide state (roles); it costs a few seconds. Everything is
// stopped and removed when t ends. It needs local PostgreSQL binaries even
// when EnvDatabaseURL is set.
func OwnCluster(t testing.TB) (*pglocal.Cluster, *DB) {
	t.Helper()
	return OwnClusterWith(t, ClusterExtras{})
}

// ClusterExtras are what OwnClusterWith adds to the settings of the
// throwaway clusters.
type ClusterExtras struct {
	// Settings are set on top of ServerSettings (a name in both takes this
	// value).
	Settings map[string]string
	// PreloadLibraries are loaded at start after plpgsql_check, for
	// example "pgaudit" or "pg_cron".
	PreloadLibraries []string
	// TLS turns ssl on with this certificate (pglocal.Options.TLS).
	TLS *pglocal.TLS
	// ListenAddresses is the server's listen_addresses
	// (pglocal.Options.ListenAddresses; 127.0.0.1 when empty).
	ListenAddresses string
}

// OwnClusterWith is OwnCluster for a cluster started with extras: more
// settings, preloaded libraries or TLS, which need a server start.
func OwnClusterWith(t testing.TB, extras ClusterExtras) (*pglocal.Cluster, *DB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
	defer cancel()
	srv, err := startLocal(ctx, extras)
	if err != nil {
		t.Fatalf("testdb: start a cluster of this test's own: %v", err)
	}
	t.Cleanup(func() {
		if err := srv.close(); err != nil {
			t.Errorf("testdb: stop this test's own cluster: %v", err)
		}
	})
	return srv.cluster, newTestDB(t, srv, srv.template)
}

// Pool returns a superuser connection pool to the database, closed when t
// ends.
func (d *DB) Pool(t testing.TB) *pgxpool.Pool {
	t.Helper()
	return openPool(t, d.URL)
}

// Conn returns one superuser connection to the database, closed when t
// ends. Two of them make the two sessions of a race test.
func (d *DB) Conn(t testing.TB) *pgx.Conn {
	t.Helper()
	return openConn(t, d.URL)
}

// LoginURL creates a new login role that is a member of runtimeRole (one of
// RuntimeRoles) and returns a URL that connects as it to this database.
// Every call makes a different role; the roles are dropped together with
// the database.
func (d *DB) LoginURL(t testing.TB, runtimeRole string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	u, err := d.CreateLogin(ctx, runtimeRole)
	if err != nil {
		t.Fatalf("testdb: %v", err)
	}
	return u
}

// LoginPool is LoginURL followed by a connection pool on that URL, closed
// when t ends.
func (d *DB) LoginPool(t testing.TB, runtimeRole string) *pgxpool.Pool {
	t.Helper()
	return openPool(t, d.LoginURL(t, runtimeRole))
}

// LoginConn is LoginURL followed by one connection on that URL, closed when
// t ends.
func (d *DB) LoginConn(t testing.TB, runtimeRole string) *pgx.Conn {
	t.Helper()
	return openConn(t, d.LoginURL(t, runtimeRole))
}

// CreateLogin is LoginURL for code without a testing.TB.
func (d *DB) CreateLogin(ctx context.Context, runtimeRole string) (string, error) {
	if !isRuntimeRole(runtimeRole) {
		return "", fmt.Errorf("login role requested in %q, which is not one of the runtime roles %v", runtimeRole, RuntimeRoles)
	}
	name := "lf_" + randomHex(8)
	password := randomHex(16)
	// Names and password are generated here from [a-z0-9_] only.
	// Like the runbook's logins, each has its statements and its idle time
	// in a transaction bounded (generously: tests hold transactions open on
	// purpose), so leasectl audit finds nothing unbounded. Roles are
	// cluster-wide: the role and its settings commit together, so another
	// test's audit never sees the login without its bounds.
	sql := fmt.Sprintf("CREATE ROLE %s LOGIN PASSWORD '%s' IN ROLE %s", name, password, runtimeRole)
	settings := fmt.Sprintf("ALTER ROLE %s SET statement_timeout = '5min'", name)
	idle := fmt.Sprintf("ALTER ROLE %s SET idle_in_transaction_session_timeout = '5min'", name)
	err := pgx.BeginFunc(ctx, d.srv.admin, func(tx pgx.Tx) error {
		for _, stmt := range []string{sql, settings, idle} {
			if _, err := tx.Exec(ctx, stmt); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("create a login role in %s: %w", runtimeRole, err)
	}
	d.mu.Lock()
	d.logins = append(d.logins, name)
	d.mu.Unlock()
	u := d.srv.base
	u.User = url.UserPassword(name, password)
	u.Path = "/" + d.Name
	return u.String(), nil
}

// Drop removes the database (ending every session still connected to it)
// and the login roles made for it. New and NewEmpty call it when the test
// ends; Open's caller calls it. A second call does nothing.
func (d *DB) Drop(ctx context.Context) error {
	var err error
	d.drop.Do(func() {
		if _, e := d.srv.admin.Exec(ctx, "DROP DATABASE IF EXISTS "+d.Name+" WITH (FORCE)"); e != nil {
			err = fmt.Errorf("drop database %s: %w", d.Name, e)
			return
		}
		d.mu.Lock()
		logins := d.logins
		d.mu.Unlock()
		for _, name := range logins {
			if _, e := d.srv.admin.Exec(ctx, "DROP ROLE IF EXISTS "+name); e != nil {
				err = errors.Join(err, fmt.Errorf("drop login role: %w", e))
			}
		}
	})
	return err
}

// newTestDB creates a database from template on srv and drops it when t
// ends.
func newTestDB(t testing.TB, srv *server, template string) *DB {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	db, err := srv.newDatabase(ctx, template)
	if err != nil {
		t.Fatalf("testdb: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := db.Drop(ctx); err != nil {
			t.Errorf("testdb: %v", err)
		}
	})
	return db
}

// sharedServer returns the binary's server, preparing it on first use, and
// fails t if that is impossible.
func sharedServer(t testing.TB) *server {
	t.Helper()
	if !runCalled.Load() {
		t.Fatalf("testdb: this test binary has no TestMain calling testdb.Run; add\n" +
			"\tfunc TestMain(m *testing.M) { os.Exit(testdb.Run(m)) }")
	}
	ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
	defer cancel()
	srv, err := sharedServerErr(ctx)
	if err != nil {
		t.Fatalf("testdb: %v", err)
	}
	return srv
}

// sharedServerErr prepares the shared server once.
func sharedServerErr(ctx context.Context) (*server, error) {
	shared.once.Do(func() {
		began := time.Now()
		if raw := os.Getenv(EnvDatabaseURL); raw != "" {
			shared.srv, shared.err = connectExternal(ctx, raw)
		} else if dockerSelected() {
			shared.srv, shared.err = startDocker(ctx)
		} else {
			shared.srv, shared.err = startLocal(ctx, ClusterExtras{})
		}
		if shared.err == nil {
			logf("testdb: server and template ready in %s", time.Since(began).Round(time.Millisecond))
		}
	})
	return shared.srv, shared.err
}

// startLocal starts a throwaway cluster and builds its template.
func startLocal(ctx context.Context, extras ClusterExtras) (*server, error) {
	binDir, err := pglocal.FindBinDir()
	if err != nil {
		return nil, fmt.Errorf("%v\n%s", err, InstallHint)
	}
	if err := checkExtensionFiles(binDir, extras.PreloadLibraries); err != nil {
		return nil, err
	}
	settings := make(map[string]string, len(ServerSettings)+len(extras.Settings))
	maps.Copy(settings, ServerSettings)
	maps.Copy(settings, extras.Settings)
	cluster, err := pglocal.Start(ctx, pglocal.Options{
		BinDir:                 binDir,
		Settings:               settings,
		SharedPreloadLibraries: append([]string{"plpgsql_check"}, extras.PreloadLibraries...),
		TLS:                    extras.TLS,
		ListenAddresses:        extras.ListenAddresses,
		InitdbCache:            initdbCacheDir(),
		Logf:                   logf,
	})
	if err != nil {
		return nil, err
	}
	base, err := url.Parse(cluster.URL("postgres"))
	if err != nil {
		_ = cluster.Stop()
		return nil, err
	}
	srv := &server{cluster: cluster, base: *base, template: TemplateName, prefix: "lftest"}
	if err := srv.open(ctx); err != nil {
		_ = srv.close()
		return nil, err
	}
	return srv, nil
}

// initdbCacheDir is where the throwaway clusters keep initdb's output
// between test binaries: the user's cache folder, or none when there is no
// such folder.
func initdbCacheDir() string {
	dir, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "leasefence", "pglocal-initdb")
}

// connectExternal uses the server behind a superuser URL.
func connectExternal(ctx context.Context, raw string) (*server, error) {
	base, err := url.Parse(raw)
	if err != nil || (base.Scheme != "postgres" && base.Scheme != "postgresql") {
		return nil, fmt.Errorf("%s must be a postgres:// URL", EnvDatabaseURL)
	}
	if strings.Trim(base.Path, "/") == "" {
		base.Path = "/postgres"
	}
	suffix := randomHex(4)
	srv := &server{base: *base, template: TemplateName + "_" + suffix, prefix: "lftest_" + suffix}
	if err := srv.open(ctx); err != nil {
		_ = srv.close()
		return nil, fmt.Errorf("server from %s: %w", EnvDatabaseURL, err)
	}
	return srv, nil
}

// checkExtensionFiles makes sure the extensions the template needs are
// installed next to the server binaries, so a missing one is reported as
// such and not as a server that will not start.
func checkExtensionFiles(binDir string, preload []string) error {
	out, err := exec.Command(filepath.Join(binDir, "pg_config"), "--pkglibdir", "--sharedir").Output()
	if err != nil {
		return nil // no pg_config: let CREATE EXTENSION report what is missing
	}
	dirs := strings.Fields(string(out))
	if len(dirs) != 2 {
		return nil
	}
	files := []string{
		filepath.Join(dirs[0], "plpgsql_check.so"),
		filepath.Join(dirs[1], "extension", "plpgsql_check.control"),
		filepath.Join(dirs[1], "extension", "pgtap.control"),
	}
	for _, lib := range preload {
		files = append(files, filepath.Join(dirs[0], lib+".so"))
	}
	for _, f := range files {
		if _, err := os.Stat(f); err != nil {
			return fmt.Errorf("%s is missing; %s", f, InstallHint)
		}
	}
	return nil
}

// open connects the admin pool and builds the template.
func (s *server) open(ctx context.Context) error {
	cfg, err := pgxpool.ParseConfig(s.url(strings.Trim(s.base.Path, "/")))
	if err != nil {
		return err
	}
	cfg.MaxConns = 4
	// Check each connection before use: a test may restart its own
	// cluster (OwnCluster), which cuts the pool's idle connections.
	cfg.ShouldPing = func(context.Context, pgxpool.ShouldPingParams) bool { return true }
	cfg.ConnConfig.RuntimeParams["application_name"] = "leasefence-testdb"
	s.admin, err = pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	return s.buildTemplate(ctx)
}

// buildTemplate creates the template database with the bundle and the test
// extensions.
func (s *server) buildTemplate(ctx context.Context) error {
	conn, err := s.admin.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer conn.Release()
	// Test binaries sharing one server must not apply the bundle's
	// cluster-wide roles at the same moment.
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock(7406157)"); err != nil {
		return fmt.Errorf("take the template lock: %w", err)
	}
	defer conn.Exec(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock(7406157)") //nolint:errcheck

	began := time.Now()
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+s.template+" TEMPLATE template0"); err != nil {
		return fmt.Errorf("create template database: %w", err)
	}
	if err := sqlbundle.Apply(ctx, s.url(s.template)); err != nil {
		return fmt.Errorf("apply the bundle to the template database: %w", err)
	}
	tmpl, err := pgx.Connect(ctx, s.url(s.template))
	if err != nil {
		return fmt.Errorf("connect to the template database: %w", err)
	}
	for _, ext := range []string{"pgtap", "plpgsql_check"} {
		var available bool
		if err := tmpl.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = $1)", ext).Scan(&available); err != nil {
			tmpl.Close(ctx)
			return err
		}
		if !available {
			tmpl.Close(ctx)
			return fmt.Errorf("PostgreSQL extension %s is not installed; %s", ext, InstallHint)
		}
		if _, err := tmpl.Exec(ctx, "CREATE EXTENSION IF NOT EXISTS "+ext+" SCHEMA public"); err != nil {
			tmpl.Close(ctx)
			return fmt.Errorf("create extension %s: %w", ext, err)
		}
	}
	if err := tmpl.Close(ctx); err != nil {
		return err
	}
	if _, err := conn.Exec(ctx, "ALTER DATABASE "+s.template+" WITH IS_TEMPLATE true ALLOW_CONNECTIONS false"); err != nil {
		return fmt.Errorf("mark the template: %w", err)
	}
	logf("testdb: template %s built in %s", s.template, time.Since(began).Round(time.Millisecond))
	return nil
}

// newDatabase creates one database from template.
func (s *server) newDatabase(ctx context.Context, template string) (*DB, error) {
	name := fmt.Sprintf("%s_%d", s.prefix, s.seq.Add(1))
	s.createMu.Lock()
	_, err := s.admin.Exec(ctx, "CREATE DATABASE "+name+" TEMPLATE "+template)
	s.createMu.Unlock()
	if err != nil {
		return nil, fmt.Errorf("create database %s from %s: %w", name, template, err)
	}
	return &DB{Name: name, URL: s.url(name), srv: s}, nil
}

// url returns the superuser URL of database dbname.
func (s *server) url(dbname string) string {
	u := s.base
	u.Path = "/" + dbname
	return u.String()
}

// close removes the template from an external server, closes the admin
// pool and stops a throwaway cluster.
func (s *server) close() error {
	var err error
	if s.admin != nil {
		if s.cluster == nil {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			if _, e := s.admin.Exec(ctx, "ALTER DATABASE "+s.template+" WITH IS_TEMPLATE false"); e == nil {
				if _, e := s.admin.Exec(ctx, "DROP DATABASE IF EXISTS "+s.template+" WITH (FORCE)"); e != nil {
					err = fmt.Errorf("drop template: %w", e)
				}
			}
			cancel()
		}
		s.admin.Close()
	}
	if s.cluster != nil {
		err = errors.Join(err, s.cluster.Stop())
	}
	if s.stopContainer != nil {
		err = errors.Join(err, s.stopContainer())
	}
	return err
}

// openPool opens a pool on u, closed when t ends.
func openPool(t testing.TB, u string) *pgxpool.Pool {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), u)
	if err != nil {
		t.Fatalf("testdb: open pool: %v", err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// openConn opens a connection on u, closed when t ends.
func openConn(t testing.TB, u string) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		t.Fatalf("testdb: connect: %v", err)
	}
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	return conn
}

// isRuntimeRole reports whether name is one of RuntimeRoles.
func isRuntimeRole(name string) bool {
	for _, r := range RuntimeRoles {
		if r == name {
			return true
		}
	}
	return false
}

// randomHex returns 2n random lowercase hex digits.
func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	return hex.EncodeToString(b)
}

// logf prints progress to stderr when EnvVerbose is set.
func logf(format string, args ...any) {
	if os.Getenv(EnvVerbose) != "" {
		fmt.Fprintf(os.Stderr, format+"\n", args...)
	}
}
