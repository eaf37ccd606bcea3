package audit

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/mightyetl/leasefence/controls"
	"github.com/mightyetl/leasefence/internal/testdb"
)

func TestPgauditLogClassesThatLogRoleChanges(t *testing.T) {
	t.Parallel()
	for value, want := range map[string]bool{
		"role": true, "ddl, ROLE, function": true, "all": true, "all, -role": false, "role,-all": false,
		"none": false, "ddl, write": false, "": false, "-role, role": true,
	} {
		require.Equal(t, want, pgauditLogsRoleChanges(value), value)
	}
}

// roleLogging runs the audit with opts and returns AUDIT-ROLE-CHANGE-LOGGING.
func roleLogging(t *testing.T, db DB, opts ...Option) CheckResult {
	t.Helper()
	report, err := Run(context.Background(), db, opts...)
	require.NoError(t, err)
	return resultOf(t, report, controls.CheckRoleChangeLogging)
}

// Issue 39, item 5: a GRANT, REVOKE or DROP ROLE of a bundle role left no
// trace. With pgaudit loaded and its role class on, a GRANT of the
// operator role is in the server log with the login that ran it, and the
// check passes; without pgaudit, or with pgaudit.log lacking the role
// class, it warns, and it is a finding when the audit requires it.
func TestRoleChangeLoggingWithTheRealPgaudit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t.Run("pgaudit with the role class", func(t *testing.T) {
		t.Parallel()
		cluster, db := testdb.OwnClusterWith(t, testdb.ClusterExtras{PreloadLibraries: []string{"pgaudit"},
			Settings: map[string]string{"pgaudit.log": "ddl, role", "log_line_prefix": "%m [%p] %u@%d "}})
		admin := db.Pool(t)
		for _, opts := range [][]Option{nil, {RequireRoleChangeLogging()}} {
			c := roleLogging(t, admin, opts...)
			require.True(t, c.Passed)
			require.Empty(t, c.Warnings)
		}
		execSQL(t, admin, `CREATE ROLE ops_grantee LOGIN`)
		execSQL(t, admin, `GRANT durable_job_operator TO ops_grantee`)
		want := cluster.Superuser() + "@" + db.Name + " LOG:  AUDIT: SESSION,"
		var line string
		require.Eventually(t, func() bool {
			log, err := os.ReadFile(cluster.LogPath())
			require.NoError(t, err)
			for _, l := range strings.Split(string(log), "\n") {
				if strings.Contains(l, want) && strings.Contains(l, ",ROLE,GRANT ROLE,") {
					line = l
					return true
				}
			}
			return false
		}, 10*time.Second, 50*time.Millisecond, "a GRANT of the operator role in the server log")
		require.Contains(t, line, "GRANT durable_job_operator TO ops_grantee")

		// The role class taken away: a warning, or a finding when required.
		execSQL(t, admin, `ALTER DATABASE `+db.Name+` SET pgaudit.log = 'ddl'`)
		conn := db.Conn(t) // a new session, which gets the database's setting
		const lacking = `pgaudit.log is "ddl", without the role class: a GRANT, REVOKE or DROP ROLE of a bundle role leaves no trace (set pgaudit.log to include role, see the runbook)`
		c := roleLogging(t, conn)
		require.True(t, c.Passed)
		require.Equal(t, []string{lacking}, c.Warnings)
		c = roleLogging(t, conn, RequireRoleChangeLogging())
		require.False(t, c.Passed)
		require.Equal(t, []string{lacking}, c.Findings)
	})
	t.Run("without pgaudit", func(t *testing.T) {
		t.Parallel()
		db := testdb.New(t)
		const notLoaded = "pgaudit is not loaded (shared_preload_libraries): a GRANT, REVOKE or DROP ROLE of a bundle role leaves no trace (load it and set pgaudit.log to include role, see the runbook)"
		report, err := Run(ctx, db.Conn(t))
		require.NoError(t, err)
		require.True(t, report.Passed, "a plain local install audits clean")
		require.Equal(t, []string{notLoaded}, resultOf(t, report, controls.CheckRoleChangeLogging).Warnings)
		c := roleLogging(t, db.Conn(t), RequireRoleChangeLogging())
		require.Equal(t, []string{notLoaded}, c.Findings)

		// A login that cannot read shared_preload_libraries cannot tell.
		c = roleLogging(t, db.LoginConn(t, "durable_job_auditor"))
		require.Equal(t, []string{"cannot tell whether pgaudit logs role changes: this login cannot read shared_preload_libraries (grant it pg_read_all_settings)"}, c.Warnings)
	})
}
