package sqlbundle

import (
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"path"
	"testing/fstest"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/tern/v2/migrate"
)

// VersionTable is the table, outside the bundle's schema, in which tern
// records the bundle's migration version. It survives "down" to version 0.
const VersionTable = "public.leasefence_schema_version"

// embedded holds the three folders of the bundle as they are in the
// repository: the numbered migrations (frozen), the current function
// families and the roles.
//
//go:embed migrations/*.sql functions/*.sql roles/*.sql
var embedded embed.FS

// bundle is the folder tern reads: the numbered migrations at its root and
// functions/ and roles/ beside them, the shared templates that a draft
// migration pulls in with {{ template "functions/claim.sql" . }} until it is
// frozen (sql/doc.go).
var bundle = mustBundle()

func mustBundle() fstest.MapFS {
	out := fstest.MapFS{}
	err := fs.WalkDir(embedded, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		body, err := fs.ReadFile(embedded, p)
		if err != nil {
			return err
		}
		name := p
		if path.Dir(p) == "migrations" {
			name = path.Base(p)
		}
		out[name] = &fstest.MapFile{Data: body, Mode: 0o444}
		return nil
	})
	if err != nil {
		panic(err) // the files are embedded at build time; reading them cannot fail
	}
	return out
}

// Migrations returns the bundle as tern reads it: the numbered migration
// files of sql/migrations at its root, and the current definitions of
// sql/functions and sql/roles in its folders functions/ and roles/ (the
// shared templates a draft migration may include).
func Migrations() fs.FS {
	return bundle
}

// NewMigrator returns a Migrator over conn with the bundle loaded and the
// version table ensured. Call Migrate or MigrateTo on it.
//
// It first refuses a standby (ErrStandby), then applies the options (the
// migration lock of WithLockTimeout is taken here), then runs Preflight,
// and returns its *PreflightError, having changed nothing, when the
// database is not safe to migrate. Every migration it runs starts with
// migrationPrefix: search_path pinned to pg_catalog, pg_temp for the
// migration's own transaction, the version table locked and checked again,
// and the connecting role checked to be a superuser.
func NewMigrator(ctx context.Context, conn *pgx.Conn, opts ...MigratorOption) (*Migrator, error) {
	var o migratorOptions
	for _, opt := range opts {
		opt(&o)
	}
	if err := refuseStandby(ctx, conn); err != nil {
		return nil, err
	}
	if err := o.apply(ctx, conn); err != nil {
		return nil, err
	}
	if err := Preflight(ctx, conn); err != nil {
		return nil, err
	}
	m, err := migrate.NewMigrator(ctx, conn, VersionTable)
	if err != nil {
		return nil, fmt.Errorf("prepare version table: %w", err)
	}
	if err := m.LoadMigrations(Migrations()); err != nil {
		return nil, fmt.Errorf("load migrations: %w", err)
	}
	pinMigrations(m)
	return &Migrator{Migrator: m, conn: conn, opts: o}, nil
}

// NewestVersion is the number of migrations in the bundle: the version a
// fully migrated database reports.
func NewestVersion() int32 {
	paths, err := migrate.FindMigrations(Migrations())
	if err != nil {
		panic(err) // the embedded folder is fixed at build time
	}
	return int32(len(paths))
}

// Apply migrates the database behind url to the newest version. It is the
// one call tests, the demo and benchmarks use to install the bundle.
func Apply(ctx context.Context, url string) error {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	m, err := NewMigrator(ctx, conn)
	if err != nil {
		return err
	}
	return m.Migrate(ctx)
}

// Rendered returns every migration of the bundle as tern renders it, the
// shared templates expanded, in order. It needs no database.
func Rendered() ([]*migrate.Migration, error) {
	m, err := migrate.NewMigrator(context.Background(), nil, VersionTable)
	if err != nil {
		return nil, err
	}
	if err := m.LoadMigrations(Migrations()); err != nil {
		return nil, fmt.Errorf("load migrations: %w", err)
	}
	return m.Migrations, nil
}

// RenderedDigest is the sha256, in hex, of one rendered migration: its up
// SQL and its down SQL. A released migration's digest never changes.
func RenderedDigest(m *migrate.Migration) string {
	sum := sha256.Sum256([]byte("-- up\n" + m.UpSQL + "\n-- down\n" + m.DownSQL))
	return hex.EncodeToString(sum[:])
}
