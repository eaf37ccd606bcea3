package main

import (
	"encoding/json"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/mightyetl/leasefence/internal/testdb"
)

// Maker-checker from the command line (issue 39, item 3): with
// --require-second-operator on, a change is proposed with --propose by one
// operator login and takes effect only when another approves it with
// changes approve; the proposer cannot approve, a rejection takes a reason,
// and switching maker-checker off is itself a proposal.
func TestMakerCheckerFromTheCommandLine(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	maker, checker := db.LoginURL(t, "durable_job_operator"), db.LoginURL(t, "durable_job_operator")
	auditor := db.LoginURL(t, "durable_job_auditor")
	proposalID := func(out string) string {
		t.Helper()
		m := regexp.MustCompile(`^proposal (\d+) recorded`).FindStringSubmatch(out)
		require.NotNil(t, m, out)
		return m[1]
	}

	r := leasectl(t, "change-control", "set", "--require-second-operator=true", "--proposal-lifetime", "2h",
		"--reason", "OPS-60: four eyes", "--database-url", maker)
	requireCode(t, exitOK, r)
	r = leasectl(t, "change-control", "show", "--database-url", auditor)
	requireCode(t, exitOK, r)
	require.Regexp(t, `(?m)^maker-checker:\s+yes \(proposals expire after 2h\)$`, r.stdout)

	policy := []string{"policy", "set", "--queue", "billing", "--lease-duration", "20s", "--renewal-interval", "5s",
		"--max-claim-lifetime", "1h", "--renewal-enabled=true", "--reason", "OPS-61: longer"}
	r = leasectl(t, append(policy, "--database-url", maker)...)
	requireCode(t, exitError, r)
	require.Contains(t, r.stderr, "invalid change record (SQLSTATE LF002)", "no change takes effect in one session")
	r = leasectl(t, append(policy, "--propose", "--database-url", maker)...)
	requireCode(t, exitOK, r)
	id := proposalID(r.stdout)

	r = leasectl(t, "changes", "list", "--output", "json", "--database-url", auditor)
	requireCode(t, exitOK, r)
	var listed struct {
		Proposals []struct {
			ID         int64          `json:"change_id"`
			Kind       string         `json:"change_kind"`
			State      string         `json:"change_state"`
			ProposedBy string         `json:"proposed_by_role"`
			Values     map[string]any `json:"proposed_values"`
		} `json:"proposals"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &listed))
	require.Len(t, listed.Proposals, 1)
	require.Equal(t, "lease_policy", listed.Proposals[0].Kind)
	require.Equal(t, "pending", listed.Proposals[0].State)
	require.Equal(t, loginOf(t, maker), listed.Proposals[0].ProposedBy)
	require.Equal(t, "20000000 microseconds", listed.Proposals[0].Values["lease_duration"])

	r = leasectl(t, "changes", "approve", id, "--database-url", maker)
	requireCode(t, exitError, r)
	require.Contains(t, r.stderr, "SQLSTATE LF002", "the proposer cannot approve")
	r = leasectl(t, "changes", "approve", id, "--database-url", checker)
	requireCode(t, exitOK, r)
	require.Equal(t, "proposal "+id+" approved: the change took effect\n", r.stdout)
	r = leasectl(t, "policy", "show", "--database-url", auditor)
	requireCode(t, exitOK, r)
	require.Regexp(t, `(?m)^billing\s+20s\s`, r.stdout)

	r = leasectl(t, "retention", "set", "--queue", "billing", "--payload-retention", "2d", "--record-retention", "30d",
		"--reason", "OPS-62: shorter", "--propose", "--database-url", maker)
	requireCode(t, exitOK, r)
	id = proposalID(r.stdout)
	r = leasectl(t, "changes", "reject", id, "--database-url", checker)
	requireCode(t, exitUsage, r)
	r = leasectl(t, "changes", "reject", id, "--reason", "OPS-62: not now", "--database-url", checker)
	requireCode(t, exitOK, r)
	r = leasectl(t, "changes", "list", "--all", "--database-url", auditor)
	requireCode(t, exitOK, r)
	require.Regexp(t, `(?m)^`+id+`\s+retention_policy\s+billing\s+rejected\s`, r.stdout)

	r = leasectl(t, "change-control", "set", "--require-second-operator=false", "--reason", "OPS-63: one again", "--propose",
		"--database-url", maker)
	requireCode(t, exitOK, r)
	id = proposalID(r.stdout)
	r = leasectl(t, "changes", "approve", id, "--database-url", checker)
	requireCode(t, exitOK, r)
	r = leasectl(t, "change-control", "show", "--output", "json", "--database-url", auditor)
	requireCode(t, exitOK, r)
	require.Contains(t, r.stdout, `"require_second_operator": false`)

	for _, args := range [][]string{{"changes"}, {"changes", "bogus"}, {"changes", "approve"}, {"changes", "approve", "x"},
		{"changes", "list", "--output", "yaml"}, {"changes", "approve", "1", "--output", "yaml"}} {
		r := leasectl(t, args...)
		requireCode(t, exitUsage, r, args)
	}
	for _, args := range [][]string{{"changes", "--help"}, {"changes", "list", "--help"}, {"changes", "approve", "-h"}} {
		r := leasectl(t, args...)
		requireCode(t, exitOK, r, args)
		require.True(t, strings.Contains(r.stdout, "leasectl changes approve ID"), args)
	}
	r = leasectl(t, "changes", "approve", "999999", "--database-url", checker)
	requireCode(t, exitError, r)
	require.Contains(t, r.stderr, "no such proposal (SQLSTATE LF003)")
}

// loginOf is the role name a login URL connects as.
func loginOf(t *testing.T, loginURL string) string {
	t.Helper()
	u, err := url.Parse(loginURL)
	require.NoError(t, err)
	return u.User.Username()
}
