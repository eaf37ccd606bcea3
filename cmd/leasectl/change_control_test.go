package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/mightyetl/leasefence/internal/testdb"
)

// changeControlSnapshot is the setting and the evidence count, as the
// superuser sees them.
func changeControlSnapshot(t *testing.T, pool *pgxpool.Pool) (setting string, evidence int) {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, pool.QueryRow(ctx, `SELECT row(s.*)::text FROM durable_jobs.change_control_setting s`).Scan(&setting))
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM durable_jobs.control_evidence_record`).Scan(&evidence))
	return setting, evidence
}

func TestChangeControlShowAndSetRecordEvidence(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	admin := db.Pool(t)
	auditor := db.LoginURL(t, "durable_job_auditor")
	operator := db.LoginURL(t, "durable_job_operator")
	// An approver must hold the operator role (migration 026).
	approverLogin := loginOf(t, db.LoginURL(t, "durable_job_operator"))

	r := leasectl(t, "change-control", "show", "--database-url", auditor)
	requireCode(t, exitOK, r)
	require.Regexp(t, `(?m)^ticket pattern:\s+\^\[A-Z\]\[A-Z0-9\]\+-\[0-9\]\+\$$`, r.stdout)
	require.Regexp(t, `(?m)^require approver:\s+no$`, r.stdout)
	require.Regexp(t, `(?m)^approver must differ:\s+yes$`, r.stdout)
	require.Regexp(t, `(?m)^reason pattern:\s+free text$`, r.stdout)

	r = leasectl(t, "change-control", "set", "--require-approver=true", "--ticket-pattern", "^CHG[0-9]{7}$",
		"--reason", "approvals from now on", "--ticket", "SEC-1", "--approver", approverLogin, "--database-url", operator)
	requireCode(t, exitOK, r)
	require.Equal(t, "change control set: ticket pattern ^CHG[0-9]{7}$, require approver yes, approver must differ yes, "+
		"reason pattern free text\n", r.stdout)

	r = leasectl(t, "change-control", "show", "--output", "json", "--database-url", auditor)
	requireCode(t, exitOK, r)
	var got map[string]any
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &got))
	require.Equal(t, "^CHG[0-9]{7}$", got["ticket_pattern"])
	require.Equal(t, true, got["require_approver"])
	require.Equal(t, true, got["approver_must_differ"])
	require.Nil(t, got["reason_pattern"], "reasons are free text")

	var kind, ticket, approver string
	require.NoError(t, admin.QueryRow(ctx, `SELECT evidence_kind, change_ticket, change_approver FROM durable_jobs.control_evidence_record
		ORDER BY evidence_record_id DESC LIMIT 1`).Scan(&kind, &ticket, &approver))
	require.Equal(t, []string{"change_control_changed", "SEC-1", approverLogin}, []string{kind, ticket, approver})

	// The policy command is now held to the new setting: no approver, refused.
	r = leasectl(t, "policy", "set", "--queue", "billing", "--reason", "CHG0000001: longer", "--database-url", operator)
	requireCode(t, exitError, r)
	require.Contains(t, r.stderr, "invalid change record (SQLSTATE LF002)")

	// Every command that records a change takes --ticket and --approver
	// (issue 39), so it works where change control requires an approver.
	for _, args := range [][]string{
		{"policy", "set", "--queue", "billing", "--lease-duration", "40s", "--renewal-interval", "10s",
			"--max-claim-lifetime", "1h", "--renewal-enabled=true", "--reason", "CHG0000001: longer"},
		{"retention", "set", "--queue", "billing", "--payload-retention", "2d", "--record-retention", "30d",
			"--reason", "CHG0000002: shorter"},
	} {
		ticket := strings.SplitN(args[len(args)-1], ":", 2)[0]
		r = leasectl(t, append(args, "--ticket", ticket, "--approver", approverLogin, "--database-url", operator)...)
		requireCode(t, exitOK, r, args)
		require.NoError(t, admin.QueryRow(ctx, `SELECT change_ticket, change_approver FROM durable_jobs.control_evidence_record
			ORDER BY evidence_record_id DESC LIMIT 1`).Scan(&ticket, &approver))
		require.Equal(t, []string{strings.SplitN(args[len(args)-1], ":", 2)[0], approverLogin}, []string{ticket, approver}, args)
	}
	r = leasectl(t, "erase", "--job", "1", "--reason", "CHG0000003: request", "--ticket", "CHG0000003", "--database-url", operator)
	requireCode(t, exitError, r)
	require.Contains(t, r.stderr, "invalid change record (SQLSTATE LF002)", "an erasure without the approver change control asks for is refused")
	r = leasectl(t, "erase", "--job", "1", "--reason", "CHG0000003: request", "--ticket", "CHG0000003", "--approver", approverLogin,
		"--database-url", operator)
	requireCode(t, exitOK, r)
	require.Contains(t, r.stdout, "nothing to erase")
}

// An organization that forbids free text in evidence limits every change
// reason to a pattern (issue 34, item 3): change-control set
// --reason-pattern sets it (alone, or with other settings in one
// transaction), show prints it, and a later change whose reason does not
// match is refused; an empty --reason-pattern makes reasons free text again.
func TestChangeControlReasonPatternForbidsFreeText(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	auditor := db.LoginURL(t, "durable_job_auditor")
	operator := db.LoginURL(t, "durable_job_operator")
	const vocabulary = `^[A-Z]+-[0-9]+: (rollout|rollback|incident)$`

	r := leasectl(t, "change-control", "set", "--reason-pattern", vocabulary, "--reason", "SEC-1: rollout", "--database-url", operator)
	requireCode(t, exitOK, r)
	require.Equal(t, "change control set: ticket pattern ^[A-Z][A-Z0-9]+-[0-9]+$, require approver no, approver must differ yes, "+
		"reason pattern "+vocabulary+"\n", r.stdout)
	r = leasectl(t, "change-control", "show", "--database-url", auditor)
	requireCode(t, exitOK, r)
	require.Contains(t, r.stdout, "reason pattern:       "+vocabulary+"\n")

	r = leasectl(t, "policy", "set", "--queue", "billing", "--lease-duration", "30s", "--renewal-interval", "10s",
		"--max-claim-lifetime", "1h", "--renewal-enabled=true", "--reason", "OPS-2: the customer called", "--database-url", operator)
	requireCode(t, exitError, r)
	require.Contains(t, r.stderr, "invalid change record (SQLSTATE LF002)")
	r = leasectl(t, "policy", "set", "--queue", "billing", "--lease-duration", "30s", "--renewal-interval", "10s",
		"--max-claim-lifetime", "1h", "--renewal-enabled=true", "--reason", "OPS-2: incident", "--database-url", operator)
	requireCode(t, exitOK, r)

	// With another setting, in one transaction; a pattern that is no
	// regular expression is refused and changes nothing.
	r = leasectl(t, "change-control", "set", "--require-approver=false", "--reason-pattern", "(unclosed",
		"--reason", "SEC-3: rollback", "--database-url", operator)
	requireCode(t, exitError, r)
	require.Contains(t, r.stderr, "(SQLSTATE LF003)")
	r = leasectl(t, "change-control", "set", "--approver-must-differ=false", "--reason-pattern", "",
		"--reason", "SEC-4: rollback", "--output", "json", "--database-url", operator)
	requireCode(t, exitOK, r)
	var got map[string]any
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &got))
	require.Nil(t, got["reason_pattern"], "free text again")
	require.Equal(t, false, got["approver_must_differ"])
}

func TestChangeControlSetRefusesBadInputAndChangesNothing(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	admin := db.Pool(t)
	operator := db.LoginURL(t, "durable_job_operator")
	before, evidenceBefore := changeControlSnapshot(t, admin)
	for _, tc := range []struct {
		args  []string
		code  int
		state string
	}{
		{[]string{"--ticket-pattern", "([A-Z", "--reason", "broken"}, exitError, "(SQLSTATE LF003)"},
		{[]string{"--ticket-pattern", strings.Repeat("A", 201), "--reason", "long"}, exitError, "(SQLSTATE LF003)"},
		{[]string{"--ticket-pattern", "^X-[0-9]+$", "--reason", "call 010-1234-5678"}, exitError, "(SQLSTATE LF002)"},
		{[]string{"--require-approver=true", "--reason", "bad ticket", "--ticket", "not a ticket"}, exitError, "(SQLSTATE LF002)"},
		{[]string{"--require-approver=true"}, exitUsage, "--reason is required"},
		{[]string{"--reason", "x", "--output", "yaml"}, exitUsage, "error: usage: change-control set"},
	} {
		args := append([]string{"change-control", "set"}, tc.args...)
		args = append(args, "--database-url", operator)
		r := leasectl(t, args...)
		requireCode(t, tc.code, r, args)
		require.Contains(t, r.stderr, tc.state, args)
		require.Empty(t, r.stdout, args)
		lines := strings.Split(strings.TrimSuffix(r.stderr, "\n"), "\n")
		require.True(t, strings.HasPrefix(lines[0], "error: "), "one-line error: %q", r.stderr)
		for _, l := range lines[1:] {
			require.True(t, strings.HasPrefix(l, "DETAIL: ") || strings.HasPrefix(l, "HINT: "), "one-line error: %q", r.stderr)
		}
		after, evidenceAfter := changeControlSnapshot(t, admin)
		require.Equal(t, before, after, args)
		require.Equal(t, evidenceBefore, evidenceAfter, args)
	}

	// A worker or producer may neither read nor set it; an auditor may not set it.
	for _, role := range []string{"durable_job_worker", "durable_job_producer", "durable_job_auditor"} {
		r := leasectl(t, "change-control", "set", "--reason", "not mine", "--database-url", db.LoginURL(t, role))
		requireCode(t, exitError, r, role)
		require.Contains(t, r.stderr, "(SQLSTATE 42501)", role)
	}
	after, evidenceAfter := changeControlSnapshot(t, admin)
	require.Equal(t, before, after)
	require.Equal(t, evidenceBefore, evidenceAfter)

	for _, args := range [][]string{{"change-control"}, {"change-control", "frob"}} {
		r := leasectl(t, args...)
		requireCode(t, exitUsage, r, args)
	}
	r := leasectl(t, "change-control", "--help")
	requireCode(t, exitOK, r)
	require.Contains(t, r.stdout, "leasectl change-control set --reason TEXT")
	r = leasectl(t, "change-control", "show", "--output", "yaml")
	requireCode(t, exitUsage, r)
}
