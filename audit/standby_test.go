package audit

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/mightyetl/leasefence/controls"
	"github.com/mightyetl/leasefence/internal/testdb"
	sqlbundle "github.com/mightyetl/leasefence/sql"
)

// Issue 36, item 3: pointed at a streaming standby, the audit passed with
// a false warning that synchronous_standby_names is empty. Now the standby
// is an AUDIT-SERVER-IS-PRIMARY finding and that warning is not given; the
// primary passes.
func TestAuditOfAStandbyIsAFindingWithoutTheSynchronousWarning(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	primary, db := testdb.OwnCluster(t)
	standby, err := primary.StartStandby(ctx, "s1")
	require.NoError(t, err)
	t.Cleanup(func() { _ = standby.Stop() })
	require.NoError(t, standby.WaitReplayedFrom(ctx, primary))

	onPrimary, err := Run(ctx, db.Conn(t))
	require.NoError(t, err)
	require.True(t, onPrimary.Passed, "%+v", onPrimary)
	require.True(t, resultOf(t, onPrimary, controls.CheckServerIsPrimary).Passed)

	conn, err := pgx.Connect(ctx, standby.URL(db.Name))
	require.NoError(t, err)
	defer conn.Close(ctx)
	report, err := Run(ctx, conn)
	require.NoError(t, err)
	require.False(t, report.Passed)
	var failed []string
	for _, c := range report.Checks {
		if !c.Passed {
			failed = append(failed, c.ID)
		}
	}
	require.Equal(t, []string{controls.CheckServerIsPrimary}, failed)
	require.Equal(t, []string{StandbyFinding}, resultOf(t, report, controls.CheckServerIsPrimary).Findings)
	require.Empty(t, resultOf(t, report, controls.CheckSynchronousReplication).Warnings, "no false synchronous_standby_names warning")
	require.Equal(t, 1, report.Warnings, "only AUDIT-ROLE-CHANGE-LOGGING's (no pgaudit)")
}

// Issue 39, item 7: the audit's JSON carries when it was made, of which
// database, the bundle versions and a body digest computed as the
// evidence report's is; two audits of the same state have the same digest.
func TestRunStampedNamesTheDatabaseTimeVersionsAndDigest(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, db := testdb.OwnCluster(t) // cluster-wide roles stay as they are between the two audits
	conn := db.Conn(t)
	var name, system string
	var before time.Time
	require.NoError(t, conn.QueryRow(ctx, `SELECT current_database(), (SELECT system_identifier::text FROM pg_control_system()),
		clock_timestamp()`).Scan(&name, &system, &before))
	first, err := RunStamped(ctx, conn)
	require.NoError(t, err)
	require.Equal(t, ReportSchemaVersion, first.SchemaVersion)
	require.Equal(t, Database{SystemIdentifier: system, Name: name}, first.Database)
	require.Equal(t, sqlbundle.NewestVersion(), first.MigrationVersion)
	require.Equal(t, sqlbundle.NewestVersion(), first.BundleVersion)
	at, err := time.Parse("2006-01-02T15:04:05.000Z", first.GeneratedAt)
	require.NoError(t, err)
	require.False(t, at.Before(before.Truncate(time.Millisecond)))
	require.True(t, first.Passed)

	encoded, err := json.Marshal(first)
	require.NoError(t, err)
	var members map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(encoded, &members))
	for _, m := range []string{"schema_version", "generated_at", "database", "migration_version", "bundle_version", "body_digest",
		"passed", "finding_count", "warning_count", "checks"} {
		require.Contains(t, members, m)
	}
	digest, err := BodyDigest(encoded)
	require.NoError(t, err)
	require.Equal(t, first.BodyDigest, digest)

	second, err := RunStamped(ctx, conn)
	require.NoError(t, err)
	require.NotEqual(t, first.GeneratedAt, second.GeneratedAt)
	require.Equal(t, first.BodyDigest, second.BodyDigest, "the same state, the same digest")

	// A login that cannot read the version table is at version 0 here
	// (AUDIT-MIGRATION-VERSION says why).
	plain, err := pgx.Connect(ctx, plainLoginURL(t, db, "stamp_plain_login"))
	require.NoError(t, err)
	defer plain.Close(ctx)
	stamped, err := RunStamped(ctx, plain)
	require.NoError(t, err)
	require.Zero(t, stamped.MigrationVersion)
	require.False(t, stamped.Passed)

	// What cannot be read stops the run.
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	_, err = RunStamped(canceled, conn)
	require.ErrorContains(t, err, "read the database's identity: ")
	require.True(t, errors.Is(err, context.Canceled))
	_, err = BodyDigest([]byte("{"))
	require.Error(t, err)
}
