package audit

import (
	"context"
	"net/url"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/mightyetl/leasefence/controls"
	"github.com/mightyetl/leasefence/internal/testdb"
)

// loginName is the role name in a login URL.
func loginName(t *testing.T, raw string) string {
	t.Helper()
	u, err := url.Parse(raw)
	require.NoError(t, err)
	return u.User.Username()
}

func TestAuditServerLogSecretsFindsSettingsThatLogBindParameters(t *testing.T) {
	t.Parallel()
	// A cluster of its own: login and group settings are cluster-wide.
	_, db := testdb.OwnCluster(t)
	admin := db.Pool(t)
	worker := loginName(t, db.LoginURL(t, "durable_job_worker"))
	producer := loginName(t, db.LoginURL(t, "durable_job_producer"))

	// The database's setting reaches every login; a group role's does not.
	execSQL(t, admin, `ALTER DATABASE `+db.Name+` SET log_statement = 'all'`)
	execSQL(t, admin, `ALTER ROLE durable_job_worker SET log_parameter_max_length = 0`)
	execSQL(t, admin, `ALTER ROLE `+producer+` SET log_min_duration_statement = '250ms'`)
	execSQL(t, admin, `ALTER ROLE `+producer+` IN DATABASE `+db.Name+` SET log_parameter_max_length_on_error = 64`)
	text, _ := runAudit(t, db.URL)
	require.False(t, text.passed, text.stdout)
	require.Equal(t, []string{controls.CheckServerLogSecrets}, text.ids)
	for _, want := range []string{
		"AUDIT-SERVER-LOG-SECRETS: login " + worker + ": log_statement = all with log_parameter_max_length = -1 writes its bind parameters (claim tokens, payloads) to the server log",
		"AUDIT-SERVER-LOG-SECRETS: login " + producer + ": log_statement = all with log_parameter_max_length = -1",
		"AUDIT-SERVER-LOG-SECRETS: login " + producer + ": log_min_duration_statement = 250ms with log_parameter_max_length = -1",
		"AUDIT-SERVER-LOG-SECRETS: login " + producer + ": log_parameter_max_length_on_error = 64 writes the bind parameters of its failed statements",
	} {
		require.Contains(t, text.stdout, want)
	}

	// The prescribed per-login settings clear every finding.
	for _, login := range []string{worker, producer} {
		execSQL(t, admin, `ALTER ROLE `+login+` SET log_parameter_max_length = 0`)
		execSQL(t, admin, `ALTER ROLE `+login+` SET log_parameter_max_length_on_error = 0`)
	}
	execSQL(t, admin, `ALTER ROLE `+producer+` IN DATABASE `+db.Name+` RESET log_parameter_max_length_on_error`)
	text, _ = runAudit(t, db.URL)
	require.True(t, text.passed, text.stdout)

	// log_statement = none for the login also works, whatever its length.
	execSQL(t, admin, `ALTER ROLE `+worker+` RESET log_parameter_max_length`)
	execSQL(t, admin, `ALTER ROLE `+worker+` SET log_statement = 'none'`)
	text, _ = runAudit(t, db.URL)
	require.True(t, text.passed, text.stdout)
	require.False(t, strings.Contains(text.stdout, "AUDIT-SERVER-LOG-SECRETS"))
}

func TestAuditUnencryptedSessionsFindsRuntimeTCPSessionsWithoutTLS(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	workerURL := db.LoginURL(t, "durable_job_worker")
	worker := loginName(t, workerURL)
	conn, err := pgx.Connect(context.Background(), workerURL) // sslmode=disable over TCP
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close(context.Background()) })

	// A superuser sees every session.
	text, _ := runAudit(t, db.URL)
	require.False(t, text.passed, text.stdout)
	require.Equal(t, []string{controls.CheckUnencryptedSessions}, text.ids)
	require.Contains(t, text.stdout, "AUDIT-UNENCRYPTED-SESSIONS: login "+worker+" has 1 TCP session(s) without TLS\n")

	// A login without pg_read_all_stats sees only its own sessions.
	auditor := db.LoginURL(t, "durable_job_auditor")
	text, _ = runAudit(t, auditor)
	require.True(t, text.passed, text.stdout)
	execSQL(t, db.Pool(t), `GRANT pg_read_all_stats TO `+loginName(t, auditor))
	text, _ = runAudit(t, auditor)
	require.False(t, text.passed, text.stdout)
	require.Contains(t, text.stdout, "AUDIT-UNENCRYPTED-SESSIONS: login "+worker+" has 1 TCP session(s) without TLS\n")
}

// A worker or producer login without a statement or idle-in-transaction
// limit can hold a job row it locked (a completion or cancel left open) for
// ever, blocking reclaim and cancel: each missing limit is a finding, and
// the runbook's per-login settings (or the database's) clear it. Auditor
// logins lock no job rows and are not asked.
func TestAuditRuntimeLoginTimeoutsFindsUnboundedLogins(t *testing.T) {
	t.Parallel()
	_, db := testdb.OwnCluster(t)
	admin := db.Pool(t)
	worker := loginName(t, db.LoginURL(t, "durable_job_worker"))
	producer := loginName(t, db.LoginURL(t, "durable_job_producer"))
	auditor := loginName(t, db.LoginURL(t, "durable_job_auditor"))
	text, _ := runAudit(t, db.URL)
	require.True(t, text.passed, text.stdout) // testdb's logins carry the limits

	for _, login := range []string{worker, producer, auditor} {
		execSQL(t, admin, `ALTER ROLE `+login+` RESET statement_timeout`)
		execSQL(t, admin, `ALTER ROLE `+login+` RESET idle_in_transaction_session_timeout`)
	}
	text, _ = runAudit(t, db.URL)
	require.False(t, text.passed, text.stdout)
	require.Equal(t, []string{controls.CheckLoginTimeouts}, text.ids)
	for _, login := range []string{worker, producer} {
		for _, name := range []string{"statement_timeout", "idle_in_transaction_session_timeout"} {
			require.Contains(t, text.stdout, "AUDIT-RUNTIME-LOGIN-TIMEOUTS: login "+login+": "+name+" is 0 (no limit)")
		}
	}
	require.NotContains(t, text.stdout, auditor)

	// The database's limits reach every login of it.
	execSQL(t, admin, `ALTER DATABASE `+db.Name+` SET statement_timeout = '2min'`)
	execSQL(t, admin, `ALTER DATABASE `+db.Name+` SET idle_in_transaction_session_timeout = '1min'`)
	text, _ = runAudit(t, db.URL)
	require.True(t, text.passed, text.stdout)
}
