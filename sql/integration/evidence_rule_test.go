package sqlintegration

import (
	"context"
	"slices"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/mightyetl/leasefence/internal/testdb"
	sqlbundle "github.com/mightyetl/leasefence/sql"
)

// evidenceColumnsAndIDs is what a downgrade may take from the control evidence:
// the columns of its table (none once the table is gone) and the ids of
// its records.
func evidenceColumnsAndIDs(t *testing.T, pool *pgxpool.Pool) (columns []string, ids []int64) {
	t.Helper()
	ctx := context.Background()
	rows, err := pool.Query(ctx, `SELECT attname::text FROM pg_attribute
		WHERE attrelid = to_regclass('durable_jobs.control_evidence_record') AND attnum > 0 AND NOT attisdropped ORDER BY attnum`)
	require.NoError(t, err)
	columns, err = pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	if len(columns) == 0 {
		return nil, nil
	}
	rows, err = pool.Query(ctx, `SELECT evidence_record_id FROM durable_jobs.control_evidence_record ORDER BY 1`)
	require.NoError(t, err)
	ids, err = pgx.CollectRows(rows, pgx.RowTo[int64])
	require.NoError(t, err)
	return columns, ids
}

// The rule is exact: stepping down through every released migration on a
// real database, a step loses evidence columns or records exactly when the
// rule says its migration erases evidence.
func TestDowngradeEvidenceRuleMatchesWhatEachDownPartDoes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	pool := db.Pool(t)
	conn := db.Conn(t)
	m, err := sqlbundle.NewMigrator(ctx, conn)
	require.NoError(t, err)
	for version := sqlbundle.NewestVersion(); version > 0; version-- {
		columns, ids := evidenceColumnsAndIDs(t, pool)
		require.NotEmpty(t, ids, "version %d", version)
		require.NoError(t, m.MigrateTo(ctx, version-1))
		afterColumns, afterIDs := evidenceColumnsAndIDs(t, pool)
		lost := len(afterColumns) == 0
		for _, c := range columns {
			lost = lost || !slices.Contains(afterColumns, c)
		}
		for _, id := range ids {
			lost = lost || !slices.Contains(afterIDs, id)
		}
		require.Equal(t, lost, len(m.EvidenceErasingMigrations(version, version-1)) > 0,
			"migration %s: its down part lost evidence: %v (columns %v, then %v)", m.Migrations[version-1].Name, lost, columns, afterColumns)
	}
}
