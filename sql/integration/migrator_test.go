package sqlintegration

import (
	"context"
	"errors"
	"fmt"
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

// Plan is the run a migration would make, read before anything changes:
// the default target of each direction, a target on the wrong side of the
// current version refused, and the migrations that would erase evidence.
func TestMigratorPlanIsTheRunBeforeItStarts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	conn := testdb.New(t).Conn(t)
	m, err := sqlbundle.NewMigrator(ctx, conn)
	require.NoError(t, err)
	newest := sqlbundle.NewestVersion()

	plan, err := m.Plan(ctx, sqlbundle.Up, nil)
	require.NoError(t, err)
	require.Equal(t, sqlbundle.Plan{Current: newest, Target: newest}, plan, "up: the newest, nothing to do")
	require.False(t, plan.TakesExport())
	plan, err = m.Plan(ctx, sqlbundle.Down, nil)
	require.NoError(t, err)
	require.Equal(t, sqlbundle.Plan{Current: newest, Target: newest - 1}, plan, "down: one step back")
	plan, err = m.Plan(ctx, sqlbundle.Down, new(int32(5)))
	require.NoError(t, err)
	require.Equal(t, sqlbundle.Plan{Current: newest, Target: 5, Erasing: []string{"006_evidence_chain.sql"}}, plan)
	require.True(t, plan.TakesExport())
	plan, err = m.Plan(ctx, sqlbundle.Down, new(int32(0)))
	require.NoError(t, err)
	require.Equal(t, []string{"006_evidence_chain.sql", "001_schema_and_roles.sql"}, plan.Erasing)

	_, err = m.Plan(ctx, sqlbundle.Down, new(newest+1))
	var wrongWay *sqlbundle.DirectionError
	require.ErrorAs(t, err, &wrongWay)
	require.Equal(t, &sqlbundle.DirectionError{Direction: sqlbundle.Down, Target: newest + 1, Current: newest}, wrongWay)
	require.EqualError(t, err, fmt.Sprintf("version %d is above the current version %d: that is an upgrade", newest+1, newest))

	require.NoError(t, m.MigrateTo(ctx, 0))
	plan, err = m.Plan(ctx, sqlbundle.Down, nil)
	require.NoError(t, err)
	require.Equal(t, sqlbundle.Plan{Current: 0, Target: 0}, plan, "down from 0 stays at 0")
	require.True(t, plan.TakesExport(), "removing the bundle may be preceded by an export")
	_, err = m.Plan(ctx, sqlbundle.Up, nil)
	require.NoError(t, err)
	require.NoError(t, m.MigrateTo(ctx, 3))
	_, err = m.Plan(ctx, sqlbundle.Up, new(int32(2)))
	require.EqualError(t, err, "version 2 is below the current version 3: that is a downgrade")

	require.NoError(t, conn.Close(ctx))
	_, err = m.Plan(ctx, sqlbundle.Up, nil)
	require.Error(t, err, "the current version cannot be read")
}
