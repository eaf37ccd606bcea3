package main

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/mightyetl/leasefence/internal/testdb"
)

// jobsFixture enqueues five jobs as the superuser: two in t.a (the older
// one failed with bad_payload), three in t.b (the newest claimed and
// renewed once), each with a payload and idempotency key that must never be
// printed. It returns the ids oldest first.
func jobsFixture(t *testing.T, admin *pgxpool.Pool) []int64 {
	t.Helper()
	ctx := context.Background()
	var ids []int64
	for i, queue := range []string{"t.a", "t.a", "t.b", "t.b", "t.b"} {
		var id int64
		require.NoError(t, admin.QueryRow(ctx, `SELECT durable_jobs.enqueue_job($1, $2, $3)`, queue,
			fmt.Sprintf(`{"customer_email": "pat.jobs%d@example.com"}`, i), fmt.Sprintf("idem-jobs-secret-%d", i)).Scan(&id))
		ids = append(ids, id)
	}
	_, err := admin.Exec(ctx, `SELECT durable_jobs.fail_job(c.job_record_id, c.lease_claim_token, 'owner-jobs-secret', 'bad_payload')
		FROM durable_jobs.claim_next_job('t.a', 'owner-jobs-secret') c`)
	require.NoError(t, err)
	_, err = admin.Exec(ctx, `UPDATE durable_jobs.job_record SET run_after = clock_timestamp() + interval '1 hour'
		WHERE job_record_id = ANY ($1)`, ids[2:4])
	require.NoError(t, err)
	_, err = admin.Exec(ctx, `SELECT durable_jobs.renew_job_lease(c.job_record_id, c.lease_claim_token, 'owner-jobs-secret')
		FROM durable_jobs.claim_next_job('t.b', 'owner-jobs-secret') c`)
	require.NoError(t, err)
	return ids
}

// requireNoSecrets checks that r printed no payload, key or owner id.
func requireNoSecrets(t *testing.T, r result) {
	t.Helper()
	for _, secret := range []string{"@example.com", "idem-jobs-secret", "owner-jobs-secret", "customer_email"} {
		require.NotContains(t, r.output(), secret)
	}
}

func TestJobsListIsNewestFirstFilteredAndPaginated(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	ids := jobsFixture(t, db.Pool(t))
	operator := db.LoginURL(t, "durable_job_operator")

	r := leasectl(t, "jobs", "list", "--database-url", operator)
	requireCode(t, exitOK, r)
	requireNoSecrets(t, r)
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	require.Len(t, lines, 6, r.stdout)
	require.Regexp(t, `^ID\s+QUEUE\s+STATUS\s+ATTEMPT\s+GENERATION\s+LEASE EXPIRES\s+RENEWALS\s+REASON\s+CHANGED AT$`, lines[0])
	require.Regexp(t, fmt.Sprintf(`^%d\s+t\.b\s+RUNNING\s+1/5\s+1\s+\d{4}-\d\d-\d\dT\S+Z\s+1\s+-\s+\d{4}-`, ids[4]), lines[1])
	require.Regexp(t, fmt.Sprintf(`^%d\s+t\.a\s+QUEUED\s+0/5\s+0\s+-\s+0\s+-\s`, ids[1]), lines[4])
	require.Regexp(t, fmt.Sprintf(`^%d\s+t\.a\s+FAILED\s+1/5\s+1\s+-\s+0\s+bad_payload\s`, ids[0]), lines[5])

	r = leasectl(t, "jobs", "list", "--queue", "t.a", "--status", "failed", "--database-url", operator)
	requireCode(t, exitOK, r)
	lines = strings.Split(strings.TrimSpace(r.stdout), "\n")
	require.Len(t, lines, 2, r.stdout)
	require.True(t, strings.HasPrefix(lines[1], fmt.Sprint(ids[0])), "status is matched case-insensitively")

	// Pages of two, by --after, in JSON.
	var seen []int64
	after := []string{}
	for page := 0; ; page++ {
		args := append([]string{"jobs", "list", "--limit", "2", "--output", "json", "--database-url", operator}, after...)
		r = leasectl(t, args...)
		requireCode(t, exitOK, r)
		requireNoSecrets(t, r)
		var out struct {
			Jobs []map[string]any `json:"jobs"`
			Next *int64           `json:"next_after"`
		}
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &out), r.stdout)
		for _, j := range out.Jobs {
			seen = append(seen, int64(j["job_record_id"].(float64)))
			for _, key := range []string{"queue_name", "job_status", "attempt_number", "max_attempts", "lease_fencing_generation",
				"lease_expires_at", "lease_renewal_count", "failure_reason_code", "run_after", "created_at", "status_changed_at"} {
				require.Contains(t, j, key)
			}
			require.Len(t, j, 12, "no other field than the lifecycle columns")
		}
		if out.Next == nil {
			require.Less(t, len(out.Jobs), 2)
			break
		}
		require.Equal(t, seen[len(seen)-1], *out.Next)
		after = []string{"--after", fmt.Sprint(*out.Next)}
		require.Less(t, page, 4)
	}
	require.Equal(t, []int64{ids[4], ids[3], ids[2], ids[1], ids[0]}, seen, "every job once, newest first")

	r = leasectl(t, "jobs", "list", "--limit", "2", "--database-url", operator)
	requireCode(t, exitOK, r)
	require.Contains(t, r.stdout, fmt.Sprintf("next page: --after %d\n", ids[3]))
}

func TestJobsShowCancelAndReplayOneJob(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	ids := jobsFixture(t, db.Pool(t))
	operator := db.LoginURL(t, "durable_job_operator")

	r := leasectl(t, "jobs", "show", fmt.Sprint(ids[4]), "--database-url", operator)
	requireCode(t, exitOK, r)
	requireNoSecrets(t, r)
	for _, want := range []string{
		fmt.Sprintf(`(?m)^job:\s+%d$`, ids[4]), `(?m)^queue:\s+t\.b$`, `(?m)^status:\s+RUNNING$`, `(?m)^attempt:\s+1 of 5$`,
		`(?m)^fencing generation:\s+1$`, `(?m)^lease expires:\s+\d{4}-\d\d-\d\dT`, `(?m)^renewals:\s+1$`,
		`(?m)^failure reason:\s+-$`, `(?m)^run after:\s+\d{4}`, `(?m)^created:\s+\d{4}`, `(?m)^status changed:\s+\d{4}`,
	} {
		require.Regexp(t, regexp.MustCompile(want), r.stdout)
	}
	r = leasectl(t, "jobs", "show", fmt.Sprint(ids[0]), "--output", "json", "--database-url", operator)
	requireCode(t, exitOK, r)
	var shown map[string]any
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &shown))
	require.Equal(t, "FAILED", shown["job_status"])
	require.Equal(t, "bad_payload", shown["failure_reason_code"])
	require.Nil(t, shown["lease_expires_at"])

	// Cancel the running job, then replay it.
	r = leasectl(t, "jobs", "cancel", fmt.Sprint(ids[4]), "--database-url", operator)
	requireCode(t, exitUsage, r)
	require.Equal(t, "error: usage: jobs cancel: --reason is required (run \"leasectl --help\")\n", r.stderr, "an operator action says why")
	r = leasectl(t, "jobs", "cancel", fmt.Sprint(ids[4]), "--reason", "call 010-1234-5678", "--database-url", operator)
	requireCode(t, exitUsage, r)
	require.Contains(t, r.stderr, "--reason looks like", "a reason that looks like personal data is refused here")
	r = leasectl(t, "jobs", "cancel", fmt.Sprint(ids[4]), "--reason", "OPS-7: duplicate", "--ticket", "OPS-7", "--database-url", operator)
	requireCode(t, exitOK, r)
	require.Equal(t, fmt.Sprintf("job %d is CANCELLED\n", ids[4]), r.stdout)
	r = leasectl(t, "jobs", "cancel", fmt.Sprint(ids[4]), "--reason", "OPS-7: again", "--database-url", operator)
	requireCode(t, exitError, r)
	require.Equal(t, fmt.Sprintf("error: cancel job %d: the job is CANCELLED; only QUEUED, RETRY_SCHEDULED or RUNNING jobs can be cancelled, so nothing changed\n", ids[4]), r.stderr)
	r = leasectl(t, "jobs", "replay", fmt.Sprint(ids[4]), "--reason", "OPS-8: run it again", "--output", "json", "--database-url", operator)
	requireCode(t, exitOK, r)
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &shown))
	require.Equal(t, "QUEUED", shown["job_status"])
	require.Equal(t, 0.0, shown["attempt_number"])
	r = leasectl(t, "jobs", "replay", fmt.Sprint(ids[4]), "--reason", "OPS-8: again", "--database-url", operator)
	requireCode(t, exitError, r)
	require.Contains(t, r.stderr, "the job is QUEUED; only FAILED or CANCELLED jobs can be replayed, so nothing changed")

	// show prints the job's action trail: who, when, why, ticket.
	r = leasectl(t, "jobs", "show", fmt.Sprint(ids[4]), "--database-url", operator)
	requireCode(t, exitOK, r)
	require.Regexp(t, `(?m)^cancelled: +\S+ by \S+: OPS-7: duplicate \(ticket OPS-7, approver -\)$`, r.stdout)
	require.Regexp(t, `(?m)^replayed: +\S+ by \S+: OPS-8: run it again \(ticket -, approver -\)$`, r.stdout)
	r = leasectl(t, "jobs", "show", fmt.Sprint(ids[4]), "--output", "json", "--database-url", operator)
	requireCode(t, exitOK, r)
	var withTrail struct {
		Actions []struct {
			Kind   string  `json:"action_kind"`
			Reason string  `json:"change_reason"`
			Ticket *string `json:"change_ticket"`
		} `json:"actions"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &withTrail))
	require.Len(t, withTrail.Actions, 2)
	require.Equal(t, "cancelled", withTrail.Actions[0].Kind)
	require.Equal(t, "OPS-8: run it again", withTrail.Actions[1].Reason)
	require.Nil(t, withTrail.Actions[1].Ticket)

	// Issue 37, item 6: the text says the replayed job is due at once and
	// shows its new run-after, the database time of the replay.
	var before time.Time
	require.NoError(t, db.Pool(t).QueryRow(context.Background(), "SELECT clock_timestamp()").Scan(&before))
	r = leasectl(t, "jobs", "replay", fmt.Sprint(ids[0]), "--reason", "OPS-10: again", "--database-url", operator)
	requireCode(t, exitOK, r)
	m := regexp.MustCompile(fmt.Sprintf(`^job %d is QUEUED and due at once: run after (\S+), attempt 1 of 5 next\n$`, ids[0])).
		FindStringSubmatch(r.stdout)
	require.NotNil(t, m, r.stdout)
	runAfter, err := time.Parse(time.RFC3339Nano, m[1])
	require.NoError(t, err, m[1])
	require.False(t, runAfter.Before(before.Truncate(time.Millisecond)), "run after %s is the replay's time (after %s)", runAfter, before)

	for _, action := range []string{"show", "cancel", "replay"} {
		r = leasectl(t, "jobs", action, "0", "--reason", "OPS-9: check", "--database-url", operator)
		if action == "show" {
			r = leasectl(t, "jobs", action, "0", "--database-url", operator)
		}
		requireCode(t, exitError, r, action)
		require.Equal(t, fmt.Sprintf("error: %s job 0: no such job\n", action), r.stderr)
	}
}

func TestJobsRefuseBadInputAndOtherRoles(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	ids := jobsFixture(t, db.Pool(t))
	operator := db.LoginURL(t, "durable_job_operator")

	// The database refuses malformed input (LF003): one error line, exit 1, nothing changed.
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--status", "sleeping"}, "error: list jobs: unknown job status (SQLSTATE LF003)"},
		{[]string{"--queue", "Bad Queue"}, "error: list jobs: malformed queue_name (SQLSTATE LF003)"},
		{[]string{"--limit", "0"}, "error: list jobs: max jobs must be 1 to 1000 (SQLSTATE LF003)"},
		{[]string{"--limit", "1001"}, "error: list jobs: max jobs must be 1 to 1000 (SQLSTATE LF003)"},
	} {
		r := leasectl(t, append([]string{"jobs", "list", "--database-url", operator}, tc.args...)...)
		requireCode(t, exitError, r, tc.args)
		require.True(t, strings.HasPrefix(r.stderr, tc.want+"\n"), r.stderr)
		require.Empty(t, r.stdout)
	}

	// Usage errors: exit 64, one line.
	for _, args := range [][]string{
		{"jobs"}, {"jobs", "purge"}, {"jobs", "show"}, {"jobs", "show", "--output", "json"}, {"jobs", "cancel", "forty-two"},
		{"jobs", "show", "1", "2"}, {"jobs", "list", "--after", "x"}, {"jobs", "list", "--output", "yaml"},
		{"jobs", "replay", "1", "--output", "yaml"},
	} {
		r := leasectl(t, args...)
		requireCode(t, exitUsage, r, args)
		require.Equal(t, 1, strings.Count(r.stderr, "\n"), r.stderr)
		require.True(t, strings.HasPrefix(r.stderr, "error: usage: "), r.stderr)
	}

	// Help.
	for _, args := range [][]string{{"jobs", "--help"}, {"help", "jobs"}, {"jobs", "list", "--help"}, {"jobs", "show", "--help"}, {"jobs", "cancel", "1", "-h"}} {
		r := leasectl(t, args...)
		requireCode(t, exitOK, r, args)
		require.Contains(t, r.stdout, "leasectl jobs list [--queue NAME]", args)
	}

	// Workers, producers and auditors may not use the operator views.
	for _, role := range []string{"durable_job_worker", "durable_job_producer", "durable_job_auditor"} {
		login := db.LoginURL(t, role)
		r := leasectl(t, "jobs", "list", "--database-url", login)
		requireCode(t, exitError, r, role)
		require.Contains(t, r.stderr, "error: list jobs: permission denied for function operator_list_jobs (SQLSTATE 42501)", role)
	}
	r := leasectl(t, "jobs", "show", fmt.Sprint(ids[0]), "--database-url", db.LoginURL(t, "durable_job_producer"))
	requireCode(t, exitError, r)
	require.Contains(t, r.stderr, "permission denied for function operator_job_detail (SQLSTATE 42501)")
	r = leasectl(t, "jobs", "replay", fmt.Sprint(ids[0]), "--reason", "OPS-9: check", "--database-url", db.LoginURL(t, "durable_job_producer"))
	requireCode(t, exitError, r)
	require.Contains(t, r.stderr, "permission denied for function replay_job (SQLSTATE 42501)")

	// No database: one line, exit 1.
	closed := closedPortURL(t)
	for _, args := range [][]string{{"jobs", "list"}, {"jobs", "show", "1"}} {
		r := leasectl(t, append(args, "--database-url", closed)...)
		requireCode(t, exitError, r, args)
		require.True(t, strings.HasPrefix(r.stderr, "error: connect to database: "), r.stderr)
	}
}
