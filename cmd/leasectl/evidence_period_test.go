package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/mightyetl/leasefence/controls"
	"github.com/mightyetl/leasefence/evidence"
	"github.com/mightyetl/leasefence/internal/testdb"
	"github.com/mightyetl/leasefence/textfmt"
	"github.com/stretchr/testify/require"
)

func TestEvidenceSinceUntilReportsOnlyThePeriodAndPoliciesAsOfItsEnd(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	admin := db.Pool(t)
	operator := db.LoginURL(t, "durable_job_operator")
	auditor := db.LoginURL(t, "durable_job_auditor")
	setPolicy := func(queue, lease, reason string) {
		t.Helper()
		r := leasectl(t, "policy", "set", "--queue", queue, "--lease-duration", lease, "--renewal-interval", "1s",
			"--reason", reason, "--database-url", operator)
		requireCode(t, exitOK, r, queue, reason)
	}
	// now reads the database clock after the last change committed, so
	// every record before it is older and every record after it newer.
	now := func() string { return databaseClock(t, admin) }

	setPolicy("billing", "30s", "CHG-1 before the period")
	setPolicy("ingest", "30s", "CHG-2 before the period")
	a := now()
	setPolicy("billing", "40s", "CHG-3 inside the period")
	execSQL(t, admin, `SELECT pg_catalog.set_config('leasefence.change_reason', 'CHG-4 ingest retired', false)`)
	execSQL(t, admin, `DELETE FROM durable_jobs.queue_lease_policy WHERE queue_name = 'ingest'`)
	b := now()
	setPolicy("billing", "50s", "CHG-5 after the period")
	setPolicy("ingest", "50s", "CHG-6 after the period")

	r := leasectl(t, "evidence", "--format", "json", "--since", a, "--until", b, "--database-url", auditor)
	requireCode(t, exitOK, r)
	var report struct {
		Since    *string `json:"since"`
		Until    *string `json:"until"`
		Sections []struct {
			ID   string          `json:"id"`
			Data json.RawMessage `json:"data"`
		} `json:"sections"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &report))
	require.NotNil(t, report.Until)
	require.NotNil(t, report.Since)
	sections := map[string]json.RawMessage{}
	for _, s := range report.Sections {
		sections[s.ID] = s.Data
	}
	var history []evidence.Record
	require.NoError(t, json.Unmarshal(sections[controls.SectionPolicy], &history))
	reasons := []string{}
	for _, h := range history {
		reasons = append(reasons, h.Reason)
	}
	require.Equal(t, []string{"CHG-3 inside the period", "CHG-4 ingest retired"}, reasons)
	var policies []policyJSON
	require.NoError(t, json.Unmarshal(sections[controls.SectionPolicies], &policies))
	leases := map[string]float64{}
	for _, p := range policies {
		leases[p.Queue] = p.LeaseDurationSeconds
	}
	require.Equal(t, map[string]float64{"*": leases["*"], "billing": 40}, leases,
		"billing as of the period's end, ingest retired inside it")

	// --until alone: everything before the end, nothing after it.
	r = leasectl(t, "evidence", "--until", b, "--database-url", auditor)
	requireCode(t, exitOK, r)
	for _, want := range []string{"CHG-1 before", "CHG-2 before", "CHG-3 inside", "CHG-4 ingest", "lease policies are as of",
		"| billing | 40s |", "Outcome tallies are kept 30 days"} {
		require.Contains(t, r.stdout, want)
	}
	require.NotContains(t, r.stdout, "CHG-5")
	require.NotContains(t, r.stdout, "CHG-6")
	r = leasectl(t, "evidence", "--since", a, "--until", b, "--database-url", auditor)
	requireCode(t, exitOK, r)
	require.Contains(t, r.stdout, "until before "+formatTimeRFC(t, b))
	require.NotContains(t, r.stdout, "CHG-1")

	// Without --until the policies are today's.
	r = leasectl(t, "evidence", "--since", a, "--database-url", auditor)
	requireCode(t, exitOK, r)
	require.Contains(t, r.stdout, "| billing | 50s |")
	require.Contains(t, r.stdout, "CHG-6 after")

	for _, bad := range [][]string{{"--until", "tomorrow"}, {"--until", "-1h"}, {"--since", b, "--until", a},
		{"--since", "1h", "--until", "2h"}} {
		r = leasectl(t, append(append([]string{"evidence"}, bad...), "--database-url", auditor)...)
		requireCode(t, exitUsage, r, bad)
		require.True(t, strings.HasPrefix(r.stderr, "error: usage: evidence: --until "), r.stderr)
	}
}

// formatTimeRFC prints an RFC 3339 time as the report does.
func formatTimeRFC(t *testing.T, value string) string {
	t.Helper()
	at, err := time.Parse(time.RFC3339Nano, value)
	require.NoError(t, err)
	return textfmt.Time(at)
}
