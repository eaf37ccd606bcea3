package sqlintegration

import (
	"context"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/mightyetl/leasefence/internal/testdb"
	sqlbundle "github.com/mightyetl/leasefence/sql"
)

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
		columns, ids := testdb.EvidenceState(t, pool)
		require.NotEmpty(t, ids, "version %d", version)
		require.NoError(t, m.MigrateTo(ctx, version-1))
		afterColumns, afterIDs := testdb.EvidenceState(t, pool)
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
