package testdb

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// EvidenceState is what a downgrade may take from the control evidence of
// the database behind pool: the columns of its table (none once the table
// is gone) and the ids of its records.
func EvidenceState(t testing.TB, pool *pgxpool.Pool) (columns []string, ids []int64) {
	t.Helper()
	ctx := context.Background()
	rows, _ := pool.Query(ctx, `SELECT attname::text FROM pg_attribute
		WHERE attrelid = to_regclass('durable_jobs.control_evidence_record') AND attnum > 0 AND NOT attisdropped ORDER BY attnum`)
	columns, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatalf("read the evidence table's columns: %v", err)
	}
	if len(columns) == 0 {
		return nil, nil
	}
	rows, _ = pool.Query(ctx, `SELECT evidence_record_id FROM durable_jobs.control_evidence_record ORDER BY 1`)
	if ids, err = pgx.CollectRows(rows, pgx.RowTo[int64]); err != nil {
		t.Fatalf("read the evidence record ids: %v", err)
	}
	return columns, ids
}
