package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/mightyetl/leasefence/internal/testdb"
)

// policySnapshot is the policy table and the evidence count, as the
// superuser sees them.
func policySnapshot(t *testing.T, pool *pgxpool.Pool) (policies string, evidence int) {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, pool.QueryRow(ctx, `SELECT COALESCE(string_agg(format('%s|%s|%s|%s|%s|%s|%s', queue_name,
		lease_duration, renewal_interval, max_claim_lifetime, renewal_enabled, changed_at, changed_by_role), E'\n'
		ORDER BY queue_name), '') FROM durable_jobs.queue_lease_policy`).Scan(&policies))
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM durable_jobs.control_evidence_record`).Scan(&evidence))
	return policies, evidence
}

func TestPolicyShowListsTheDefault(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	auditor := db.LoginURL(t, "durable_job_auditor")
	r := leasectl(t, "policy", "show", "--database-url", auditor)
	requireCode(t, exitOK, r)
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	require.Len(t, lines, 2, r.stdout)
	require.Regexp(t, `^QUEUE\s+LEASE\s+RENEWAL INTERVAL\s+MAX CLAIM LIFETIME\s+RENEWAL ENABLED\s+CHANGED AT\s+CHANGED BY$`, lines[0])
	require.Regexp(t, `^\*\s+30s\s+10s\s+24h\s+yes\s+\d{4}-\d\d-\d\dT`, lines[1])

	r = leasectl(t, "policy", "show", "--output", "json", "--database-url", auditor)
	requireCode(t, exitOK, r)
	var policies []map[string]any
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &policies))
	require.Len(t, policies, 1)
	require.Equal(t, "*", policies[0]["queue"])
	require.Equal(t, 30.0, policies[0]["lease_duration_seconds"])
	require.Equal(t, 10.0, policies[0]["renewal_interval_seconds"])
	require.Equal(t, 86400.0, policies[0]["max_claim_lifetime_seconds"])
	require.Equal(t, true, policies[0]["renewal_enabled"])

	// A worker may not read policies: the database refuses and leasectl says so.
	r = leasectl(t, "policy", "show", "--database-url", db.LoginURL(t, "durable_job_worker"))
	requireCode(t, exitError, r)
	require.Contains(t, r.stderr, "error: read lease policies: permission denied for function queue_lease_policies (SQLSTATE 42501)")
}

func TestPolicySetChangesOneQueueAndRecordsEvidence(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	admin := db.Pool(t)
	operator := db.LoginURL(t, "durable_job_operator")

	r := leasectl(t, "policy", "set", "--queue", "billing", "--lease-duration", "3s", "--renewal-interval", "1s",
		"--max-claim-lifetime", "1h", "--renewal-enabled=true", "--reason", "CHG-1042 shorter leases for billing",
		"--database-url", operator)
	requireCode(t, exitOK, r)
	require.Equal(t, "lease policy of queue billing set: lease 3s, renewal interval 1s, max claim lifetime 1h, renewal enabled yes\n", r.stdout)

	// Only --renewal-enabled given: every other value stays the queue's own.
	r = leasectl(t, "policy", "set", "--queue", "billing", "--renewal-enabled=false", "--reason", "INC-77 stop renewals",
		"--output", "json", "--database-url", operator)
	requireCode(t, exitOK, r)
	var set []map[string]any
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &set))
	require.Len(t, set, 1)
	require.Equal(t, "billing", set[0]["queue"])
	require.Equal(t, 3.0, set[0]["lease_duration_seconds"])
	require.Equal(t, 1.0, set[0]["renewal_interval_seconds"])
	require.Equal(t, 3600.0, set[0]["max_claim_lifetime_seconds"])
	require.Equal(t, false, set[0]["renewal_enabled"])
	require.True(t, strings.HasPrefix(set[0]["changed_by_role"].(string), "lf_"), set[0]["changed_by_role"])

	// A queue without its own policy starts from the default's values.
	r = leasectl(t, "policy", "set", "--queue", "ingest", "--lease-duration", "90s", "--reason", "CHG-1043",
		"--database-url", operator)
	requireCode(t, exitOK, r)
	require.Contains(t, r.stdout, "lease 1m30s, renewal interval 10s, max claim lifetime 24h, renewal enabled yes")

	var kinds []string
	rows, err := admin.Query(ctx, `SELECT evidence_kind || ':' || queue_name || ':' || change_reason
		FROM durable_jobs.control_evidence_record WHERE queue_name IN ('billing', 'ingest') ORDER BY evidence_record_id`)
	require.NoError(t, err)
	for rows.Next() {
		var k string
		require.NoError(t, rows.Scan(&k))
		kinds = append(kinds, k)
	}
	require.NoError(t, rows.Err())
	require.Equal(t, []string{
		"lease_policy_changed:billing:CHG-1042 shorter leases for billing",
		"lease_policy_changed:billing:INC-77 stop renewals",
		"renewal_enablement_changed:billing:INC-77 stop renewals",
		"lease_policy_changed:ingest:CHG-1043",
	}, kinds)

	r = leasectl(t, "policy", "show", "--database-url", operator)
	requireCode(t, exitOK, r)
	require.Regexp(t, `(?m)^billing\s+3s\s+1s\s+1h\s+no\s`, r.stdout)
	require.Regexp(t, `(?m)^ingest\s+1m30s\s+10s\s+24h\s+yes\s`, r.stdout)
}

func TestPolicySetWithInvalidValuesChangesNothing(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	admin := db.Pool(t)
	operator := db.LoginURL(t, "durable_job_operator")
	before, evidenceBefore := policySnapshot(t, admin)
	full := func(queue, lease, interval, lifetime, reason string) []string {
		return []string{"policy", "set", "--queue", queue, "--lease-duration", lease, "--renewal-interval", interval,
			"--max-claim-lifetime", lifetime, "--reason", reason, "--database-url", operator}
	}
	for _, args := range [][]string{
		full("billing", "0s", "100ms", "1h", "zero lease"),
		full("billing", "-30s", "1s", "1h", "negative lease"),
		full("billing", "30s", "30s", "1h", "interval equal to lease"),
		full("billing", "30s", "11s", "1h", "interval above a third of the lease"),
		full("billing", "30s", "50ms", "1h", "interval below 100ms"),
		full("billing", "30s", "10s", "10s", "lifetime below lease"),
		full("billing", "30s", "10s", "200h", "lifetime above 7 days"),
		full("billing", "25h", "1h", "100h", "lease above 24h"),
		full("billing", "30s", "10s", "1h", "   "),
		full("Billing Queue", "30s", "10s", "1h", "bad queue name"),
		full("billing", "30s", "10s", "1h", strings.Repeat("r", 501)),
	} {
		r := leasectl(t, args...)
		requireCode(t, exitError, r, args)
		require.Contains(t, r.stderr, "error: set lease policy of queue ", args)
		require.Contains(t, r.stderr, "(SQLSTATE LF002)", args)
		require.True(t, strings.Contains(r.stderr, "\nDETAIL: ") || strings.Contains(r.stderr, "\nHINT: "), r.stderr)
		require.Empty(t, r.stdout)
		after, evidenceAfter := policySnapshot(t, admin)
		require.Equal(t, before, after, args)
		require.Equal(t, evidenceBefore, evidenceAfter, args)
	}
	r := leasectl(t, full("billing", "0s", "100ms", "1h", "zero lease")...)
	require.Equal(t, "error: set lease policy of queue \"billing\": invalid lease policy (SQLSTATE LF002)\n"+
		"DETAIL: Need 1 second <= lease_duration <= 24 hours, 100 milliseconds <= renewal_interval <= lease_duration / 3, "+
		"lease_duration <= max_claim_lifetime <= 7 days, renewal_enabled set, and a change reason of 1 to 500 characters.\n",
		r.stderr)

	// An auditor may read but not set.
	auditor := db.LoginURL(t, "durable_job_auditor")
	r = leasectl(t, "policy", "set", "--queue", "billing", "--lease-duration", "30s", "--renewal-interval", "10s",
		"--max-claim-lifetime", "1h", "--renewal-enabled=true", "--reason", "not mine", "--database-url", auditor)
	requireCode(t, exitError, r)
	require.Contains(t, r.stderr, "permission denied for function update_queue_lease_policy (SQLSTATE 42501)")
	after, evidenceAfter := policySnapshot(t, admin)
	require.Equal(t, before, after)
	require.Equal(t, evidenceBefore, evidenceAfter)
}

func TestPolicySetWithoutACurrentPolicyNeedsEverySetting(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	admin := db.Pool(t)
	operator := db.LoginURL(t, "durable_job_operator")

	// Without a default policy a partial change has nothing to keep: the
	// database refuses it and nothing changes.
	execSQL(t, admin, `DELETE FROM durable_jobs.queue_lease_policy WHERE queue_name = '*'`)
	before, evidenceBefore := policySnapshot(t, admin)
	r := leasectl(t, "policy", "set", "--queue", "billing", "--renewal-enabled=false", "--reason", "r",
		"--database-url", operator)
	requireCode(t, exitError, r)
	require.Equal(t, "error: set lease policy of queue \"billing\": invalid lease policy (SQLSTATE LF002)\n"+
		"DETAIL: The queue has no policy of its own and there is no default '*' to keep settings from; give every setting.\n", r.stderr)
	after, evidenceAfter := policySnapshot(t, admin)
	require.Equal(t, before, after)
	require.Equal(t, evidenceBefore, evidenceAfter)

	// Every setting given, it needs no policy to start from, and no right
	// to read the policies: the change returns what it wrote.
	execSQL(t, admin, `REVOKE EXECUTE ON FUNCTION durable_jobs.queue_lease_policies() FROM durable_job_auditor`)
	r = leasectl(t, "policy", "set", "--queue", "billing", "--lease-duration", "30s", "--renewal-interval", "10s",
		"--max-claim-lifetime", "1h", "--renewal-enabled=true", "--reason", "full change", "--database-url", operator)
	requireCode(t, exitOK, r)
	require.Equal(t, "lease policy of queue billing set: lease 30s, renewal interval 10s, max claim lifetime 1h, renewal enabled yes\n", r.stdout)
	policies, _ := policySnapshot(t, admin)
	require.Contains(t, policies, "billing|00:00:30|00:00:10|01:00:00|t|")
}

// Two real sessions: A changes billing's lease duration and holds its
// transaction open (and with it the evidence-order lock) while B runs
// "policy set --renewal-enabled=false" only. B must keep A's lease once A
// commits. Before update_queue_lease_policy, leasectl read the policy
// before A committed and wrote the old lease back with B's switch.
func TestPolicySetKeepsAChangeCommittedMeanwhile(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	admin := db.Pool(t)
	operator := db.LoginURL(t, "durable_job_operator")
	r := leasectl(t, "policy", "set", "--queue", "billing", "--lease-duration", "30s", "--renewal-interval", "10s",
		"--max-claim-lifetime", "1h", "--renewal-enabled=true", "--reason", "CHG-1 start", "--database-url", operator)
	requireCode(t, exitOK, r)

	a, err := admin.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = a.Rollback(ctx) }()
	_, err = a.Exec(ctx, `SELECT durable_jobs.set_queue_lease_policy('billing', '90 seconds', '10 seconds', '1 hour', true, 'CHG-2 longer lease')`)
	require.NoError(t, err)

	done := make(chan result, 1)
	go func() {
		done <- leasectl(t, "policy", "set", "--queue", "billing",
			"--renewal-enabled=false", "--reason", "INC-3 stop renewals", "--output", "json", "--database-url", operator)
	}()
	// B is inside its change, waiting for A's lock, before A commits.
	require.Eventually(t, func() bool {
		var waiting bool
		err := admin.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_stat_activity
			WHERE datname = current_database() AND application_name = $1
			AND wait_event_type = 'Lock' AND wait_event = 'transactionid')`, "leasectl").Scan(&waiting)
		return err == nil && waiting
	}, time.Minute, 20*time.Millisecond, "leasectl never waited for the open change")
	require.NoError(t, a.Commit(ctx))

	r = <-done
	requireCode(t, exitOK, r)
	var set []map[string]any
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &set))
	require.Len(t, set, 1)
	require.Equal(t, 90.0, set[0]["lease_duration_seconds"], "B kept A's lease duration")
	require.Equal(t, false, set[0]["renewal_enabled"])
	policies, _ := policySnapshot(t, admin)
	require.Contains(t, policies, "billing|00:01:30|00:00:10|01:00:00|f|", "A's lease and B's switch are both in the table")
}
