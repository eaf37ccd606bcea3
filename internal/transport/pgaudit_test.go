package transport

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/mightyetl/leasefence/internal/testdb"
)

// pgauditSettings is the pgaudit configuration the runbook prescribes:
// session audit of DDL, role changes, function calls and writes (writes
// outside the bundle's definer functions), catalog noise off, the relation named on each
// line, and bind parameters never logged. log_line_prefix names the login
// and database on each line, so an audit line says who.
var pgauditSettings = map[string]string{
	"pgaudit.log":           "ddl, role, function, write",
	"pgaudit.log_catalog":   "off",
	"pgaudit.log_relation":  "on",
	"pgaudit.log_parameter": "off",
	"log_line_prefix":       "%m [%p] %u@%d ",
}

// With pgaudit loaded and the runbook's configuration (pgauditSettings),
// an operator's lease-policy change through leasectl is audited as the call
// of update_queue_lease_policy on a line naming the operator's login, without
// its parameters; the writes the definer function makes are not audited
// (pgaudit skips a definer's own accesses), while a superuser's direct
// write to the policy table is. The worker's and
// producer's calls (enqueue, claim, renew, complete and two failing calls)
// are audited as function calls too, but no claim token, payload or
// idempotency key reaches the server log, even with pgaudit.log_parameter
// = on. pgaudit.log_parameter = on together with the read class is what
// leaks them (the runbook forbids it).
func TestPgauditAuditsPolicyChangesButNeverTokensOrPayloads(t *testing.T) {
	t.Parallel()
	cluster, db := testdb.OwnClusterWith(t, testdb.ClusterExtras{
		PreloadLibraries: []string{"pgaudit"},
		Settings:         pgauditSettings,
	})
	exec(t, db, `CREATE EXTENSION pgaudit`)
	leasectl := buildLeasectl(t)

	// An operator's policy change, as leasectl makes it.
	operatorURL := db.LoginURL(t, "durable_job_operator")
	operator := loginOf(t, operatorURL)
	code, out := runLeasectl(t, leasectl, "policy", "set", "--queue", "logs", "--lease-duration", "30s",
		"--renewal-interval", "10s", "--max-claim-lifetime", "1h", "--renewal-enabled=true",
		"--reason", "CHG-4711 audit test", "--database-url", operatorURL)
	require.Equal(t, 0, code, out)
	producerURL, workerURL := db.LoginURL(t, "durable_job_producer"), db.LoginURL(t, "durable_job_worker")
	run := runGoclient(t, cluster, db, producerURL, workerURL, "SSN-555-AUDIT-PGAUDIT")

	all := readLog(t, cluster.LogPath())
	policyLines := auditLines(all, operator)
	require.Contains(t, policyLines, "FUNCTION,EXECUTE,FUNCTION,durable_jobs.update_queue_lease_policy,", policyLines)
	// pgaudit leaves out what a SECURITY DEFINER function reads and writes
	// as its owner (on purpose: pgaudit/pgaudit#157), so the policy row and
	// the control evidence written by update_queue_lease_policy have no WRITE
	// line; the function call is the audit record, the control evidence the
	// content.
	require.NotContains(t, policyLines, "WRITE,", policyLines)
	require.NotContains(t, policyLines, "CHG-4711", "a bind parameter (the change reason) in the audit log")
	// A write that goes around the functions (a superuser's UPDATE of the
	// policy table) is audited as a WRITE of that table.
	superuser := cluster.Superuser()
	exec(t, db, `UPDATE durable_jobs.queue_lease_policy SET renewal_enabled = renewal_enabled WHERE queue_name = 'logs'`)
	require.Contains(t, auditLines(readLog(t, cluster.LogPath()), superuser), "WRITE,UPDATE,TABLE,durable_jobs.queue_lease_policy,")
	require.NotContains(t, policyLines, "CHG-4711", "a bind parameter (the change reason) in the audit log")
	workerLines := auditLines(run.logText, loginOf(t, workerURL))
	require.Contains(t, workerLines, "FUNCTION,EXECUTE,FUNCTION,durable_jobs.claim_next_job,", workerLines)
	require.Contains(t, workerLines, "FUNCTION,EXECUTE,FUNCTION,durable_jobs.renew_job_lease,", workerLines)
	require.Contains(t, auditLines(run.logText, loginOf(t, producerURL)), "FUNCTION,EXECUTE,FUNCTION,durable_jobs.enqueue_job,")
	require.False(t, run.payloadLeaked, "payload in the server log under the prescribed pgaudit settings:\n%s", tailLines(run.logText, 30))
	require.False(t, run.tokenLeaked, "claim token in the server log under the prescribed pgaudit settings:\n%s", tailLines(run.logText, 30))
	t.Logf("prescribed: %d audit lines for the operator, %d for the worker; payload leaked %v, token leaked %v",
		strings.Count(policyLines, "\n"), strings.Count(workerLines, "\n"), run.payloadLeaked, run.tokenLeaked)

	// pgaudit.log_parameter = on with the prescribed classes still logs no
	// value: a function-call line has no parameters to show ("<none>").
	// With the read class as well, each call's top-level SELECT is logged
	// with its bind parameters: that is the combination the runbook
	// forbids. Both are set for the two logins only.
	for _, step := range []struct {
		settings []string
		leaks    bool
	}{
		{[]string{"pgaudit.log_parameter = on"}, false},
		{[]string{"pgaudit.log_parameter = on", "pgaudit.log = 'read, write, function'"}, true},
	} {
		producerURL, workerURL = db.LoginURL(t, "durable_job_producer"), db.LoginURL(t, "durable_job_worker")
		for _, u := range []string{producerURL, workerURL} {
			for _, setting := range step.settings {
				exec(t, db, `ALTER ROLE `+loginOf(t, u)+` SET `+setting)
			}
		}
		run = runGoclient(t, cluster, db, producerURL, workerURL, "SSN-555-AUDIT-"+strings.Repeat("P", len(step.settings)))
		require.Equal(t, step.leaks, run.payloadLeaked, "%v: payload in the server log:\n%s", step.settings, tailLines(run.logText, 30))
		require.Equal(t, step.leaks, run.tokenLeaked, "%v: claim token in the server log:\n%s", step.settings, tailLines(run.logText, 30))
		t.Logf("%v: payload leaked %v, token leaked %v", step.settings, run.payloadLeaked, run.tokenLeaked)
	}
}

// readLog returns the server log's text.
func readLog(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(b)
}

// auditLines returns the pgaudit lines of log written by sessions of login,
// one per line.
func auditLines(log, login string) string {
	var b strings.Builder
	re := regexp.MustCompile(`\] ` + regexp.QuoteMeta(login) + `@\S+ LOG:  AUDIT: (.*)`)
	for _, m := range re.FindAllStringSubmatch(log, -1) {
		b.WriteString(m[1])
		b.WriteByte('\n')
	}
	return b.String()
}
