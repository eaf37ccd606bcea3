package bench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"path/filepath"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/mightyetl/leasefence/internal/pglocal"
	sqlbundle "github.com/mightyetl/leasefence/sql"
)

// DurableSettings are the server settings of the benchmark cluster: every
// commit reaches the disk as in production (fsync, synchronous_commit and
// full_page_writes on), and pg_stat_statements counts top-level statements
// (the profile phase turns nested tracking on for itself only).
var DurableSettings = map[string]string{
	"fsync":                        "on",
	"synchronous_commit":           "on",
	"full_page_writes":             "on",
	"shared_buffers":               "256MB",
	"max_connections":              "100",
	"pg_stat_statements.track":     "top",
	"pg_stat_statements.max":       "1000",
	"track_io_timing":              "off",
	"log_min_messages":             "warning",
	"log_min_error_statement":      "panic", // the log never gets statement text
	"max_wal_size":                 "2GB",
	"checkpoint_completion_target": "0.9",
}

// dbPools are the two pools of one benchmark database: its superuser and
// the worker login.
type dbPools struct {
	admin  *pgxpool.Pool
	worker *pgxpool.Pool
}

func (d *dbPools) close() {
	if d.worker != nil {
		d.worker.Close()
	}
	if d.admin != nil {
		d.admin.Close()
	}
}

// env is the benchmark cluster: the database postgres with the newest
// bundle (its pools embedded), one worker login, and the databases at
// older bundle versions made for the hardening comparison.
type env struct {
	dbPools
	cluster    *pglocal.Cluster
	adminURL   string
	workerURL  string
	workerRole string
	password   string
	versions   []*dbPools
	// templateVersion is the bundle version of database templateDB, which
	// bundleDB migrates up as far as asked and copies, once templateMade.
	templateVersion int32
	templateMade    bool
}

// templateDB is the database bundleDB copies: each version asked for is
// migrated once, in it, and not again in every database made at it.
const templateDB = "lf_template"

// startEnv starts a durable throwaway cluster, applies the bundle and
// makes one login role in durable_job_worker.
func startEnv(ctx context.Context, logf func(string, ...any)) (*env, error) {
	cache := ""
	if dir, err := os.UserCacheDir(); err == nil {
		cache = filepath.Join(dir, "leasefence", "pglocal-initdb")
	}
	cluster, err := pglocal.Start(ctx, pglocal.Options{
		Settings:               DurableSettings,
		SharedPreloadLibraries: []string{"pg_stat_statements"},
		InitdbCache:            cache,
		Logf:                   logf,
	})
	if err != nil {
		return nil, fmt.Errorf("start the benchmark cluster: %w", err)
	}
	e := &env{cluster: cluster, adminURL: cluster.URL("postgres")}
	if err := e.setUp(ctx); err != nil {
		e.close()
		return nil, err
	}
	return e, nil
}

func (e *env) setUp(ctx context.Context) error {
	if err := sqlbundle.Apply(ctx, e.adminURL); err != nil {
		return fmt.Errorf("apply the bundle: %w", err)
	}
	var err error
	if e.admin, err = pgxpool.New(ctx, e.adminURL); err != nil {
		return err
	}
	if _, err := e.admin.Exec(ctx, `CREATE EXTENSION IF NOT EXISTS pg_stat_statements`); err != nil {
		return fmt.Errorf("pg_stat_statements: %w", err)
	}
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	e.workerRole = "bench_worker_" + hex.EncodeToString(b)
	e.password = hex.EncodeToString(b) + "pw"
	// Both names are generated here from [a-z0-9_] only.
	if _, err := e.admin.Exec(ctx, fmt.Sprintf(`CREATE ROLE %s LOGIN PASSWORD '%s' IN ROLE durable_job_worker`,
		e.workerRole, e.password)); err != nil {
		return err
	}
	if e.workerURL, err = e.loginURL("postgres"); err != nil {
		return err
	}
	e.worker, err = newPool(ctx, e.workerURL, 40)
	return err
}

// loginURL is the worker login's URL of database dbname.
func (e *env) loginURL(dbname string) (string, error) {
	u, err := url.Parse(e.cluster.URL(dbname))
	if err != nil {
		return "", err
	}
	u.User = url.UserPassword(e.workerRole, e.password)
	return u.String(), nil
}

// versionDB makes database lf_v<version> on the cluster with the bundle
// migrated up to version (2 is the first release), and pools on it.
func (e *env) versionDB(ctx context.Context, version int32) (*dbPools, error) {
	return e.bundleDB(ctx, fmt.Sprintf("lf_v%d", version), version)
}

// bundleDB makes database name on the cluster with the bundle migrated up
// to version, and pools on it (closed with the cluster): a copy (CREATE
// DATABASE ... TEMPLATE) of templateDB migrated up to version, the same
// catalog as a database migrated on its own (no migration depends on the
// database's name or writes a per-database setting), each version's
// migrations run once in a run instead of once a database (the hardening
// step's two databases took 0.66 s instead of 1.48 s at 11:53 UTC, load
// 2.7). A version below the template's is migrated in a database of its
// own.
func (e *env) bundleDB(ctx context.Context, name string, version int32) (*dbPools, error) {
	create := `CREATE DATABASE ` + pgx.Identifier{name}.Sanitize()
	if version >= e.templateVersion {
		if !e.templateMade {
			if _, err := e.admin.Exec(ctx, `CREATE DATABASE `+templateDB); err != nil {
				return nil, err
			}
			e.templateMade = true
		}
		if version > e.templateVersion {
			if err := migrateDB(ctx, e.cluster.URL(templateDB), version); err != nil {
				return nil, fmt.Errorf("%s: %w", templateDB, err)
			}
			e.templateVersion = version
		}
		if _, err := e.admin.Exec(ctx, create+` TEMPLATE `+templateDB); err != nil {
			return nil, err
		}
	} else {
		if _, err := e.admin.Exec(ctx, create); err != nil {
			return nil, err
		}
		if err := migrateDB(ctx, e.cluster.URL(name), version); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
	}
	var err error
	d := &dbPools{}
	e.versions = append(e.versions, d)
	if d.admin, err = pgxpool.New(ctx, e.cluster.URL(name)); err != nil {
		return nil, err
	}
	u, err := e.loginURL(name)
	if err != nil {
		return nil, err
	}
	d.worker, err = newPool(ctx, u, 4)
	return d, err
}

// migrateDB migrates the database behind url up to version, on a
// connection closed before it returns.
func migrateDB(ctx context.Context, url string, version int32) error {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	m, err := sqlbundle.NewMigrator(ctx, conn)
	if err != nil {
		return err
	}
	if err := m.MigrateTo(ctx, version); err != nil {
		return fmt.Errorf("migrate to version %d: %w", version, err)
	}
	return nil
}

func newPool(ctx context.Context, u string, maxConns int32) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(u)
	if err != nil {
		return nil, err
	}
	cfg.MaxConns = maxConns
	return pgxpool.NewWithConfig(ctx, cfg)
}

func (e *env) close() {
	for _, d := range e.versions {
		d.close()
	}
	e.dbPools.close()
	if e.cluster != nil {
		_ = e.cluster.Stop()
	}
}

// grantRaw lets the worker login read and update a baseline table.
func (e *env) grantRaw(ctx context.Context, table string) error {
	_, err := e.admin.Exec(ctx, `GRANT SELECT, UPDATE ON `+pgx.Identifier{table}.Sanitize()+` TO `+
		pgx.Identifier{e.workerRole}.Sanitize())
	return err
}
