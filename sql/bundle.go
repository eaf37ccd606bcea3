package sqlbundle

import (
	"context"
	"embed"
	"fmt"
	"io/fs"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/tern/v2/migrate"
)

// VersionTable is the table, outside the bundle's schema, in which tern
// records the bundle's migration version. It survives "down" to version 0.
const VersionTable = "public.leasefence_schema_version"

//go:embed migrations
var embedded embed.FS

// Migrations returns the migration folder as tern reads it: the numbered
// migration files at its root and the shared function and role files in
// its subfolders.
func Migrations() fs.FS {
	sub, err := fs.Sub(embedded, "migrations")
	if err != nil {
		panic(err) // the folder is embedded at build time; it cannot be missing
	}
	return sub
}

// NewMigrator returns a tern migrator over conn with the bundle loaded and
// the version table ensured. Call Migrate or MigrateTo on it.
func NewMigrator(ctx context.Context, conn *pgx.Conn) (*migrate.Migrator, error) {
	m, err := migrate.NewMigrator(ctx, conn, VersionTable)
	if err != nil {
		return nil, fmt.Errorf("prepare version table: %w", err)
	}
	if err := m.LoadMigrations(Migrations()); err != nil {
		return nil, fmt.Errorf("load migrations: %w", err)
	}
	return m, nil
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
