package sqlintegration

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/mightyetl/leasefence/internal/pglocal"
	"github.com/mightyetl/leasefence/internal/testdb"
	sqlbundle "github.com/mightyetl/leasefence/sql"
)

// bundleRoles are the cluster-wide roles the bundle creates; "down" keeps them.
var bundleRoles = []string{
	"durable_job_producer", "durable_job_worker", "durable_job_operator", "durable_job_auditor",
	"durable_job_producer_owner", "durable_job_claim_owner", "durable_job_renewal_owner",
	"durable_job_terminal_owner", "durable_job_policy_owner", "durable_job_audit_owner",
	"durable_job_retention_owner", "durable_job_evidence_owner",
}

// pgDump runs the server's own pg_dump on the database behind url and drops
// the \restrict and \unrestrict lines, whose key is random on every run.
func pgDump(t *testing.T, ctx context.Context, url string, args ...string) string {
	t.Helper()
	binDir, err := pglocal.FindBinDir()
	require.NoError(t, err, "find the PostgreSQL binaries for pg_dump (run make deps to install PostgreSQL 15)")
	cmd := exec.CommandContext(ctx, filepath.Join(binDir, "pg_dump"), append(args, "--dbname="+url)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "pg_dump failed: %s", stderr.String())
	var kept []string
	for line := range strings.SplitSeq(string(out), "\n") {
		if strings.HasPrefix(line, `\restrict `) || strings.HasPrefix(line, `\unrestrict `) {
			continue
		}
		kept = append(kept, line)
	}
	dump := strings.Join(kept, "\n")
	require.Contains(t, dump, "PostgreSQL database dump", "pg_dump produced a dump")
	return dump
}

func migrator(t *testing.T, ctx context.Context, conn *pgx.Conn) interface {
	Migrate(context.Context) error
	MigrateTo(context.Context, int32) error
	GetCurrentVersion(context.Context) (int32, error)
} {
	t.Helper()
	m, err := sqlbundle.NewMigrator(ctx, conn)
	require.NoError(t, err)
	return m
}

// "down" to version 0 removes every object of the bundle but the
// cluster-wide roles and tern's version table; "up" again gives exactly the
// schema the first "up" gave.
func TestMigrateDownToZeroThenUpGivesSameSchema(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	db := testdb.NewEmpty(t)
	require.NoError(t, sqlbundle.Apply(ctx, db.URL), "up on an empty database")
	first := pgDump(t, ctx, db.URL, "--schema-only")
	require.Contains(t, first, "CREATE FUNCTION durable_jobs.renew_job_lease(", "the dump holds the bundle")

	conn, err := pgx.Connect(ctx, db.URL)
	require.NoError(t, err)
	defer conn.Close(context.Background())
	m := migrator(t, ctx, conn)
	version, err := m.GetCurrentVersion(ctx)
	require.NoError(t, err)
	require.Equal(t, sqlbundle.NewestVersion(), version)

	require.NoError(t, m.MigrateTo(ctx, 0), "down to version 0")
	version, err = m.GetCurrentVersion(ctx)
	require.NoError(t, err)
	require.Equal(t, int32(0), version, "the version table says 0")

	var schemaLeft bool
	require.NoError(t, conn.QueryRow(ctx, "SELECT to_regnamespace('durable_jobs') IS NOT NULL").Scan(&schemaLeft))
	require.False(t, schemaLeft, "down to 0 removes the durable_jobs schema")
	var roles int
	require.NoError(t, conn.QueryRow(ctx, "SELECT count(*) FROM pg_roles WHERE rolname = ANY($1)", bundleRoles).Scan(&roles))
	require.Equal(t, len(bundleRoles), roles, "down to 0 keeps the cluster-wide roles")
	var versionTable *string
	require.NoError(t, conn.QueryRow(ctx, "SELECT to_regclass($1)::text", sqlbundle.VersionTable).Scan(&versionTable))
	require.NotNil(t, versionTable, "down to 0 keeps tern's version table")
	var relations, functions, types int
	require.NoError(t, conn.QueryRow(ctx, `
		SELECT (SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		         WHERE n.nspname NOT IN ('pg_catalog', 'information_schema', 'pg_toast')),
		       (SELECT count(*) FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
		         WHERE n.nspname NOT IN ('pg_catalog', 'information_schema')),
		       (SELECT count(*) FROM pg_type ty JOIN pg_namespace n ON n.oid = ty.typnamespace
		         WHERE n.nspname NOT IN ('pg_catalog', 'information_schema', 'pg_toast') AND ty.typrelid = 0 AND ty.typelem = 0)`).
		Scan(&relations, &functions, &types))
	require.Equal(t, 1, relations, "only the version table is left")
	require.Equal(t, 0, functions, "no function is left")
	require.Equal(t, 0, types, "no type is left")

	require.NoError(t, m.Migrate(ctx), "up again")
	second := pgDump(t, ctx, db.URL, "--schema-only")
	require.Equal(t, first, second, "down to 0 then up gives the same schema")
}

// "up" on an up-to-date database changes nothing: not the schema, not a row.
func TestMigrateUpTwiceChangesNothing(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	db := testdb.NewEmpty(t)
	require.NoError(t, sqlbundle.Apply(ctx, db.URL), "first up")
	before := pgDump(t, ctx, db.URL) // schema and data
	require.Contains(t, before, "migration_applied", "the dump holds the bundle's evidence rows")

	require.NoError(t, sqlbundle.Apply(ctx, db.URL), "second up")
	after := pgDump(t, ctx, db.URL)
	require.Equal(t, before, after, "a second up changed nothing, schema or data")

	conn, err := pgx.Connect(ctx, db.URL)
	require.NoError(t, err)
	defer conn.Close(context.Background())
	version, err := migrator(t, ctx, conn).GetCurrentVersion(ctx)
	require.NoError(t, err)
	require.Equal(t, sqlbundle.NewestVersion(), version)
}
