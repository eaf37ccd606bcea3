package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/mightyetl/leasefence/audit"
	"github.com/mightyetl/leasefence/controls"
	"github.com/mightyetl/leasefence/internal/testdb"
	sqlbundle "github.com/mightyetl/leasefence/sql"
)

// Issue 36, item 3: against a streaming standby, migrate up printed
// "already at version N; nothing to do" and exited 0, and the audit passed
// with a false synchronous_standby_names warning. Now migrate up, down and
// status say the server is a standby and exit 1, suggesting
// target_session_attrs=read-write, and the audit exits 2 with
// AUDIT-SERVER-IS-PRIMARY; a multi-host URL with target_session_attrs=
// read-write reaches the primary.
func TestMigrateAndAuditAgainstAStandbySayItIsOne(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	primary, db := testdb.OwnCluster(t)
	standby, err := primary.StartStandby(ctx, "s1")
	require.NoError(t, err)
	t.Cleanup(func() { _ = standby.Stop() })
	require.NoError(t, standby.WaitReplayedFrom(ctx, primary))
	onStandby := standby.URL(db.Name)

	for _, args := range [][]string{{"up"}, {"down"}, {"status"}, {"status", "--output", "json"}} {
		r := leasectl(t, append(append([]string{"migrate"}, args...), "--database-url", onStandby)...)
		requireCode(t, exitError, r, args)
		require.Empty(t, r.stdout, args)
		require.Equal(t, fmt.Sprintf("error: migrate %s: %s\n", args[0], sqlbundle.ErrStandby), r.stderr, args)
		require.Contains(t, r.stderr, "target_session_attrs=read-write")
	}

	text, report := runAuditBoth(t, onStandby)
	requireCode(t, exitFindings, text)
	require.Equal(t, []string{controls.CheckServerIsPrimary}, findingIDs(text.stdout), text.stdout)
	require.Contains(t, text.stdout, "AUDIT-SERVER-IS-PRIMARY: "+audit.StandbyFinding+"\n")
	require.NotContains(t, text.stdout, "synchronous_standby_names is empty")
	require.Equal(t, 1, report.Warnings, "only AUDIT-ROLE-CHANGE-LOGGING's (no pgaudit)")

	// Both hosts with target_session_attrs=read-write: the primary.
	first := "127.0.0.1:" + itoa(int64(primary.Port()))
	both := strings.Replace(db.URL, first, fmt.Sprintf("127.0.0.1:%d,%s", standby.Port(), first), 1) + "&target_session_attrs=read-write"
	r := leasectl(t, "migrate", "status", "--database-url", both)
	requireCode(t, exitOK, r)
	require.Contains(t, r.stdout, fmt.Sprintf("current version: %d\n", sqlbundle.NewestVersion()))
	r = leasectl(t, "migrate", "up", "--database-url", both)
	requireCode(t, exitOK, r)
	require.Contains(t, r.stdout, "nothing to do")
}

// Issue 39, item 5: without pgaudit logging role changes the audit warns;
// --require-pgaudit makes it a finding (exit 2).
func TestAuditRequirePgauditTurnsTheWarningIntoAFinding(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	r := leasectl(t, "audit", "--database-url", db.URL)
	requireCode(t, exitOK, r)
	require.Contains(t, r.stdout, "warning: AUDIT-ROLE-CHANGE-LOGGING: pgaudit is not loaded")
	r = leasectl(t, "audit", "--require-pgaudit", "--database-url", db.URL)
	requireCode(t, exitFindings, r)
	require.Equal(t, []string{controls.CheckRoleChangeLogging}, findingIDs(r.stdout), r.stdout)
}
