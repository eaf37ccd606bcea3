package sqlintegration

import (
	"context"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/tern/v2/migrate"
	"github.com/stretchr/testify/require"

	"github.com/mightyetl/leasefence/internal/testdb"
	sqlbundle "github.com/mightyetl/leasefence/sql"
)

// installWithoutPin migrates the database behind url to version to with
// tern alone, as the first release's migrator and the plain tern command
// line do: every migration runs under the installer's search_path
// ("$user", public) and nothing is checked first.
func installWithoutPin(t *testing.T, ctx context.Context, url string, to int32) {
	t.Helper()
	conn, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer conn.Close(context.Background())
	m, err := migrate.NewMigrator(ctx, conn, sqlbundle.VersionTable)
	require.NoError(t, err)
	require.NoError(t, m.LoadMigrations(sqlbundle.Migrations()))
	if to < 0 {
		require.NoError(t, m.Migrate(ctx), "plain tern up")
		return
	}
	require.NoError(t, m.MigrateTo(ctx, to), "plain tern up --to %d", to)
}

// shadowOperators are harmless look-alikes of pg_catalog's arithmetic and
// comparisons for argument pairs that have no exact match there (numeric
// with integer, interval with integer, ...). Each returns a constant or
// its left argument: where a bundle object binds one, pg_depend says so.
func shadowOperators() []plantedOperator {
	pairs := [][2]string{
		{"numeric", "integer"}, {"numeric", "bigint"}, {"double precision", "integer"},
		{"double precision", "bigint"}, {"interval", "integer"}, {"interval", "bigint"},
		{"numeric", "double precision"}, {"bigint", "numeric"}, {"integer", "numeric"},
		{"integer", "double precision"}, {"text", "character varying"},
		{"timestamp with time zone", "timestamp without time zone"},
	}
	var ops []plantedOperator
	for _, p := range pairs {
		for _, op := range []string{"=", "<>", "<", "<=", ">", ">="} {
			ops = append(ops, plantedOperator{op, p[0], p[1], "boolean", "true"})
		}
		if p[0] == "text" || p[0] == "timestamp with time zone" {
			continue
		}
		for _, op := range []string{"/", "*", "+", "-"} {
			ops = append(ops, plantedOperator{op, p[0], p[1], p[0], "$1"})
		}
	}
	return ops
}

// plantShadows creates ops in public as the attacker, as SQL functions
// that change nothing.
func plantShadows(t *testing.T, ctx context.Context, a attacker, ops []plantedOperator) {
	t.Helper()
	conn, err := pgx.Connect(ctx, a.url)
	require.NoError(t, err)
	defer conn.Close(context.Background())
	for i, o := range ops {
		fn := fmt.Sprintf("public.lf_shadow_%d", i)
		_, err := conn.Exec(ctx, fmt.Sprintf(`CREATE FUNCTION %s(%s, %s) RETURNS %s LANGUAGE sql AS $f$ SELECT %s $f$`,
			fn, o.left, o.right, o.result, o.body))
		require.NoError(t, err)
		_, err = conn.Exec(ctx, fmt.Sprintf(`CREATE OPERATOR public.%s (LEFTARG = %s, RIGHTARG = %s, FUNCTION = %s)`,
			o.op, o.left, o.right, fn))
		require.NoError(t, err)
	}
}

// boundsDivisionSchema reads, from the stored expression of the CHECK
// queue_lease_policy_bounds (pg_constraint.conbin), the schema of the
// division operator it calls, and whether that operator is pg_catalog's
// interval / double precision. (pg_depend records no dependency on a
// pinned pg_catalog operator, so the expression itself is read.)
func boundsDivisionSchema(t *testing.T, ctx context.Context, admin *pgxpool.Pool) (schema string, isCatalogs bool) {
	t.Helper()
	require.NoError(t, admin.QueryRow(ctx, `
		SELECT n.nspname::text,
		       o.oid = 'pg_catalog./(interval, double precision)'::pg_catalog.regoperator
		FROM pg_catalog.pg_constraint k
		CROSS JOIN LATERAL pg_catalog.regexp_matches(k.conbin::text, ':opno ([0-9]+)', 'g') m
		JOIN pg_catalog.pg_operator o ON o.oid = m[1]::oid AND o.oprname = '/'
		JOIN pg_catalog.pg_namespace n ON n.oid = o.oprnamespace
		WHERE k.conname = 'queue_lease_policy_bounds'`).Scan(&schema, &isCatalogs))
	return schema, isCatalogs
}

// foreignDependencies is what AUDIT-OBJECT-DEPENDENCIES reports.
func foreignDependencies(t *testing.T, ctx context.Context, admin *pgxpool.Pool) []string {
	t.Helper()
	rows, _ := admin.Query(ctx, sqlbundle.ForeignDependenciesSQL)
	foreign, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	return foreign
}

// A database installed at the first release (versions 1 and 2, whose
// migrator did not pin search_path) where an unprivileged login had
// planted public./(interval, integer) keeps a CHECK of queue_lease_policy
// that calls the planted operator on every policy change; upgrading
// re-creates it (migration 9), and it then calls pg_catalog's
// interval / double precision. (On 8 the upgrade left it bound to public.)
func TestUpgradeRebindsACheckAnOldInstallBoundToAPlantedOperator(t *testing.T) {
	t.Parallel()
	for _, from := range []int32{1, 2} {
		t.Run(fmt.Sprintf("from_%d", from), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
			defer cancel()
			db := testdb.NewEmpty(t)
			admin := db.Pool(t)
			a := newAttacker(t, ctx, db, admin)
			plantShadows(t, ctx, a, []plantedOperator{{"/", "interval", "integer", "interval", "$1"}})
			installWithoutPin(t, ctx, db.URL, from)
			schema, _ := boundsDivisionSchema(t, ctx, admin)
			require.Equal(t, "public", schema, "the old install bound the CHECK to the planted operator")

			require.NoError(t, sqlbundle.Apply(ctx, db.URL), "upgrade with the bundle's migrator")

			schema, isCatalogs := boundsDivisionSchema(t, ctx, admin)
			require.Equal(t, "pg_catalog", schema)
			require.True(t, isCatalogs, "the CHECK calls pg_catalog./(interval, double precision)")
			require.Empty(t, foreignDependencies(t, ctx, admin), "nothing of the bundle depends on public")
			// The CHECK still refuses a renewal interval over a third of the lease.
			_, err := admin.Exec(ctx, `INSERT INTO durable_jobs.queue_lease_policy
				(queue_name, lease_duration, renewal_interval, max_claim_lifetime, renewal_enabled)
				VALUES ('rebind.q', interval '9 seconds', interval '4 seconds', interval '1 hour', true)`)
			require.ErrorContains(t, err, "queue_lease_policy_bounds")
		})
	}
}

// Installed with plain tern under the installer's search_path, with
// look-alike operators planted in public for every argument pair that has
// no exact match in pg_catalog, the newest bundle depends on nothing in
// public: every expression of 001-008 that bound by the path (the two
// CHECKs of queue_lease_policy and absolute_duration's body) is re-created
// qualified by migration 9. (On 8 five dependencies on public remained.)
func TestPlainTernInstallBindsOnlyWhatMigrationNineRebinds(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	db := testdb.NewEmpty(t)
	admin := db.Pool(t)
	a := newAttacker(t, ctx, db, admin)
	plantShadows(t, ctx, a, shadowOperators())
	installWithoutPin(t, ctx, db.URL, 8) // the version before migration 9
	require.NotEmpty(t, foreignDependencies(t, ctx, admin), "before migration 9 some objects bound to public")
	installWithoutPin(t, ctx, db.URL, -1)
	require.Empty(t, foreignDependencies(t, ctx, admin))
	_, isCatalogs := boundsDivisionSchema(t, ctx, admin)
	require.True(t, isCatalogs)
	var d string
	require.NoError(t, admin.QueryRow(ctx, `SELECT durable_jobs.absolute_duration(interval '1 day 2 seconds')::text`).Scan(&d))
	require.Equal(t, "24:00:02", d, "absolute_duration computes with pg_catalog's operators")
}
