package docscheck

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// runbookURLPrefix is where every alert's runbook_url points.
const runbookURLPrefix = "https://github.com/mightyetl/leasefence/blob/main/docs/operations/runbook.md#"

var (
	// alertStart starts one rule of deploy/prometheus/leasefence-alerts.yml.
	alertStart = regexp.MustCompile(`(?m)^\s*-\s*alert:\s*["']?([A-Za-z0-9_]+)["']?\s*$`)
	// runbookURL is a rule's runbook_url annotation.
	runbookURL = regexp.MustCompile(`(?m)^\s*runbook_url:\s*["']?([^"'\s]+)["']?\s*$`)
	// markdownHeading is a heading line of a Markdown file.
	markdownHeading = regexp.MustCompile(`(?m)^#{1,6}\s+(.+?)\s*$`)
	// notInAnchor is what GitHub drops from a heading to make its anchor.
	notInAnchor = regexp.MustCompile(`[^\p{L}\p{N}\- _]`)
)

// githubAnchor is the anchor GitHub gives a heading: lower case, punctuation
// dropped, spaces as hyphens.
func githubAnchor(heading string) string {
	return strings.ReplaceAll(notInAnchor.ReplaceAllString(strings.ToLower(heading), ""), " ", "-")
}

// Issue 19: no alert carried a runbook_url. Every rule must now carry one
// that points at its own entry in docs/operations/runbook.md, so a new rule
// without it, or a runbook heading renamed under it, fails here.
func TestEveryAlertRuleHasARunbookURLToItsOwnRunbookEntry(t *testing.T) {
	t.Parallel()
	k := repoKnown(t)
	rules, err := os.ReadFile(filepath.Join(k.Root, "deploy", "prometheus", "leasefence-alerts.yml"))
	require.NoError(t, err)
	runbook, err := os.ReadFile(filepath.Join(k.Root, "docs", "operations", "runbook.md"))
	require.NoError(t, err)
	anchors := map[string]string{}
	for _, m := range markdownHeading.FindAllStringSubmatch(string(runbook), -1) {
		anchors[githubAnchor(m[1])] = m[1]
	}
	starts := alertStart.FindAllStringSubmatchIndex(string(rules), -1)
	require.Len(t, starts, len(k.Names[KindAlert]), "every alert rule is read")
	for i, start := range starts {
		name := string(rules[start[2]:start[3]])
		end := len(rules)
		if i+1 < len(starts) {
			end = starts[i+1][0]
		}
		urls := runbookURL.FindAllStringSubmatch(string(rules[start[0]:end]), -1)
		require.Len(t, urls, 1, "alert %s has no runbook_url annotation", name)
		anchor, ok := strings.CutPrefix(urls[0][1], runbookURLPrefix)
		require.True(t, ok, "alert %s: runbook_url %s is not in the runbook", name, urls[0][1])
		heading, ok := anchors[anchor]
		require.True(t, ok, "alert %s: runbook_url anchor #%s names no heading of the runbook", name, anchor)
		require.True(t, strings.HasPrefix(heading, name+" "), "alert %s: runbook_url points at %q", name, heading)
	}
}

func TestGithubAnchorDropsPunctuationAndJoinsWordsWithHyphens(t *testing.T) {
	t.Parallel()
	require.Equal(t, "leasefencestaleclaimrate-warning", githubAnchor("LeasefenceStaleClaimRate (warning)"))
	require.Equal(t, "step-1-switch-renewal-off-per-queue", githubAnchor("Step 1: switch renewal off per queue"))
}
