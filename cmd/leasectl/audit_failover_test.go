package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/mightyetl/leasefence/controls"
	"github.com/mightyetl/leasefence/internal/testdb"
)

// leasectl audit on a multi-host --database-url connects to the URL's
// other hosts: a streaming standby is no finding; once the standby is
// promoted while the old primary still runs, the audit of the old primary
// reports the second primary and exits 2.
func TestAuditFindsASecondPrimaryOnTheURLsOtherHosts(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	primary, db := testdb.OwnCluster(t)
	standby, err := primary.StartStandby(ctx, "s1")
	require.NoError(t, err)
	t.Cleanup(func() { _ = standby.Stop() })
	first := "127.0.0.1:" + strconv.Itoa(primary.Port())
	require.Contains(t, db.URL, first)
	multi := strings.Replace(db.URL, first, first+",127.0.0.1:"+strconv.Itoa(standby.Port()), 1) +
		"&target_session_attrs=read-write"

	text, report := runAuditBoth(t, multi)
	requireCode(t, exitOK, text)
	require.True(t, report.Passed, text.stdout)

	require.NoError(t, standby.Promote(ctx))
	text, report = runAuditBoth(t, multi)
	requireCode(t, exitFindings, text)
	require.Equal(t, []string{controls.CheckSecondPrimary}, findingIDs(text.stdout))
	require.Contains(t, text.stdout, "AUDIT-SECOND-PRIMARY: host 127.0.0.1:"+strconv.Itoa(standby.Port())+
		" is also a primary (timeline 2) of this cluster")
	require.Contains(t, text.stdout, fmt.Sprintf("audit failed: 1 finding(s) in 1 of %d checks, 2 warning(s)\n", len(controls.AuditChecks())))
	require.Equal(t, 1, report.Findings)
	require.Equal(t, 2, report.Warnings, "synchronous replication and role-change logging")
}
