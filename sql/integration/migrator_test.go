package sqlintegration

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/mightyetl/leasefence/internal/testdb"
	sqlbundle "github.com/mightyetl/leasefence/sql"
)

// The rules leasectl migrate applies are the migrator's, for any Go
// caller: the evidence guard refuses a downgrade that erases evidence until
// ExportEvidence wrote it, the lock timeout names the session holding the
// migration lock, a reason the database would refuse is refused first, and
// ReadStatus reads the version and the drift.
func TestMigratorOptionsAreLeasectlsMigrationRules(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	conn := db.Conn(t)

	_, err := sqlbundle.NewMigrator(ctx, conn, sqlbundle.WithChangeRecord("mail kim@example.com", "", ""))
	var reasonErr *sqlbundle.ReasonError
	require.ErrorAs(t, err, &reasonErr)
	require.Equal(t, sqlbundle.ReasonLooksPersonal, reasonErr.Problem)

	status, err := sqlbundle.ReadStatus(ctx, conn)
	require.NoError(t, err)
	require.Equal(t, sqlbundle.Status{Current: sqlbundle.NewestVersion(), Newest: sqlbundle.NewestVersion(), Drift: []string{}}, status)

	// Another session holds the migration lock.
	holder, err := db.Pool(t).Acquire(ctx)
	require.NoError(t, err)
	_, err = holder.Exec(ctx, `SELECT pg_advisory_lock($1)`, sqlbundle.MigrationLockKey)
	require.NoError(t, err)
	_, err = sqlbundle.NewMigrator(ctx, conn, sqlbundle.WithLockTimeout(200*time.Millisecond))
	var busy *sqlbundle.LockBusyError
	require.ErrorAs(t, err, &busy)
	require.Len(t, busy.Holders, 1)
	require.Equal(t, holder.Conn().PgConn().PID(), uint32(busy.Holders[0].PID))
	require.Contains(t, err.Error(), "was not free within 200ms: held by pid")
	_, err = holder.Exec(ctx, `SELECT pg_advisory_unlock($1)`, sqlbundle.MigrationLockKey)
	require.NoError(t, err)
	holder.Release()

	m, err := sqlbundle.NewMigrator(ctx, conn, sqlbundle.WithLockTimeout(time.Second), sqlbundle.WithEvidenceGuard(),
		sqlbundle.WithChangeRecord("REL-1: step back", "", ""))
	require.NoError(t, err)
	require.NoError(t, m.MigrateTo(ctx, 7), "nothing erased down to 7")
	count, err := m.EvidenceCount(ctx)
	require.NoError(t, err)
	var erasure *sqlbundle.EvidenceErasureError
	require.ErrorAs(t, m.MigrateTo(ctx, 5), &erasure)
	require.Equal(t, &sqlbundle.EvidenceErasureError{Records: count, Migrations: []string{"006_evidence_chain.sql"}}, erasure)
	version, err := m.GetCurrentVersion(ctx)
	require.NoError(t, err)
	require.Equal(t, int32(7), version, "refused, nothing changed")

	path := filepath.Join(t.TempDir(), "evidence.json")
	require.NoError(t, os.WriteFile(path, nil, 0o600))
	_, err = m.ExportEvidence(ctx, path)
	require.True(t, errors.Is(err, os.ErrExist), "an existing file is never overwritten: %v", err)
	require.NoError(t, os.Remove(path))
	exported, err := m.ExportEvidence(ctx, path)
	require.NoError(t, err)
	require.Equal(t, count, exported)
	info, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), info.Mode().Perm())
	require.NoError(t, m.MigrateTo(ctx, 5), "exported first")
	require.NoError(t, m.Migrate(ctx), "and up again")
}
