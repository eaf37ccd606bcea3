package docscheck

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// seedRequirements is how many test requirements the seed request lists.
const seedRequirements = 20

// matrixFile is the compliance matrix that must list every seed requirement.
const matrixFile = "docs/compliance/control-matrix.md"

func repoKnown(t *testing.T) Known {
	t.Helper()
	root, err := FindRoot(".")
	require.NoError(t, err)
	k, err := LoadKnown(root, exportedMetricNames())
	require.NoError(t, err)
	return k
}

func TestEveryDocsReferenceResolves(t *testing.T) {
	t.Parallel()
	k := repoKnown(t)
	files, err := MarkdownFiles(k.Root)
	require.NoError(t, err)
	require.NotEmpty(t, files, "docs/ holds no Markdown file")
	var broken []string
	cited := 0
	for _, f := range files {
		text, err := os.ReadFile(filepath.Join(k.Root, filepath.FromSlash(f)))
		require.NoError(t, err)
		refs := Extract(f, string(text))
		cited += len(refs)
		for _, r := range k.Unresolved(refs) {
			broken = append(broken, r.String())
		}
	}
	require.Empty(t, broken, "these citations in docs/ name nothing in the repository:\n%s", strings.Join(broken, "\n"))
	require.Greater(t, cited, 100, "docs/ cite suspiciously little; is the extractor broken?")
}

func TestEverySeedRequirementIsInTheMatrix(t *testing.T) {
	t.Parallel()
	k := repoKnown(t)
	text, err := os.ReadFile(filepath.Join(k.Root, filepath.FromSlash(matrixFile)))
	require.NoError(t, err, "the compliance matrix must exist at %s", matrixFile)
	problems := SeedMatrixProblems(matrixFile, string(text), seedRequirements)
	require.Empty(t, problems, strings.Join(problems, "\n"))
}

func TestEveryControlAndAuditCheckIsDocumented(t *testing.T) {
	t.Parallel()
	k := repoKnown(t)
	text, err := os.ReadFile(filepath.Join(k.Root, filepath.FromSlash(matrixFile)))
	require.NoError(t, err)
	cited := map[Kind]map[string]bool{}
	for _, r := range Extract(matrixFile, string(text)) {
		if cited[r.Kind] == nil {
			cited[r.Kind] = map[string]bool{}
		}
		cited[r.Kind][r.Name] = true
	}
	for _, kind := range []Kind{KindControl, KindAuditCheck, KindEvidenceSection} {
		for name := range k.Names[kind] {
			require.True(t, cited[kind][name], "%s %s is in package controls but not in %s", kind, name, matrixFile)
		}
	}
	runbook, err := os.ReadFile(filepath.Join(k.Root, "docs", "operations", "runbook.md"))
	require.NoError(t, err)
	for name := range k.Names[KindAlert] {
		require.Contains(t, string(runbook), name, "alert %s has no entry in docs/operations/runbook.md", name)
	}
	require.NotEmpty(t, k.Names[KindAlert], "no alert rule was read from deploy/prometheus/leasefence-alerts.yml")
}

func TestRunbookCoversEveryRequiredTopic(t *testing.T) {
	t.Parallel()
	k := repoKnown(t)
	runbook, err := os.ReadFile(filepath.Join(k.Root, "docs", "operations", "runbook.md"))
	require.NoError(t, err)
	text := strings.ToLower(string(runbook))
	for _, heading := range []string{"## rollout", "## alerts", "## incident handling", "## rollback", "## clock-skew evidence"} {
		require.True(t, strings.Contains(text, heading), "docs/operations/runbook.md lacks the section %q", heading)
	}
	for _, needle := range []string{"leasefence_database_clock_offset_seconds", "database_time", "migrate down", "renewal_enabled",
		"stuck job", "claim lifetime cap", "stale-claim spike", "renewal database failures", "failover"} {
		require.True(t, strings.Contains(text, needle), "docs/operations/runbook.md never mentions %q", needle)
	}
	matrix, err := os.ReadFile(filepath.Join(k.Root, filepath.FromSlash(matrixFile)))
	require.NoError(t, err)
	require.Contains(t, string(matrix), "CSAP")
	require.Contains(t, string(matrix), "SOC 2")
	require.Contains(t, strings.ToLower(string(matrix)), "certifies nothing")
}

func TestExtractFindsEveryKindOfCitation(t *testing.T) {
	t.Parallel()
	doc := strings.Join([]string{
		"Proved by `TestRenewAfterCancelIsStale/second_session` and LF-ACC-01.",
		"Audit AUDIT-SEARCH-PATH-CREATE, section EVIDENCE-POLICY-HISTORY.",
		"Watch leasefence_renewals_total and leasefence_scheduler_lag_seconds_bucket.",
		"Alert LeasefenceStaleClaimRate calls durable_jobs.renew_job_lease(...) as durable_job_worker.",
		"Files: `sql/tests/`, `not a path/x`, TestNotInBackticks, public.leasefence_schema_version.",
	}, "\n")
	var got []string
	for _, r := range Extract("x.md", doc) {
		got = append(got, r.String())
	}
	require.Equal(t, []string{
		"x.md:1: test TestRenewAfterCancelIsStale",
		"x.md:1: control LF-ACC-01",
		"x.md:2: audit check AUDIT-SEARCH-PATH-CREATE",
		"x.md:2: evidence section EVIDENCE-POLICY-HISTORY",
		"x.md:3: metric leasefence_renewals_total",
		"x.md:3: metric leasefence_scheduler_lag_seconds_bucket",
		"x.md:4: alert LeasefenceStaleClaimRate",
		"x.md:4: SQL object durable_jobs.renew_job_lease",
		"x.md:4: role durable_job_worker",
		"x.md:5: path sql/tests/",
	}, got)
}

func TestCheckerReportsMadeUpNames(t *testing.T) {
	t.Parallel()
	k := repoKnown(t)
	real := strings.Join([]string{
		"`TestCheckerReportsMadeUpNames` LF-PRV-01 AUDIT-RENEWAL-PAYLOAD EVIDENCE-AUDIT-RESULT",
		"leasefence_renewals_total leasefence_scheduler_lag_seconds_count LeasefenceStaleClaimRate",
		"durable_jobs.renew_job_lease durable_jobs.job_payload_record durable_job_renewal_owner `controls/`",
	}, "\n")
	realRefs := Extract("real.md", real)
	require.Len(t, realRefs, 11)
	require.Empty(t, k.Unresolved(realRefs), "real names must resolve")

	fake := strings.Join([]string{
		"`TestThisTestWasNeverWritten` LF-ACC-99 AUDIT-NOTHING-HERE EVIDENCE-MADE-UP",
		"leasefence_made_up_total LeasefenceMadeUpAlert durable_jobs.renew_everything",
		"durable_job_superuser `sql/tests/99_missing.sql`",
	}, "\n")
	var unresolved []string
	for _, r := range k.Unresolved(Extract("fake.md", fake)) {
		unresolved = append(unresolved, r.String())
	}
	require.Equal(t, []string{
		"fake.md:1: test TestThisTestWasNeverWritten",
		"fake.md:1: control LF-ACC-99",
		"fake.md:1: audit check AUDIT-NOTHING-HERE",
		"fake.md:1: evidence section EVIDENCE-MADE-UP",
		"fake.md:2: metric leasefence_made_up_total",
		"fake.md:2: alert LeasefenceMadeUpAlert",
		"fake.md:2: SQL object durable_jobs.renew_everything",
		"fake.md:3: path sql/tests/99_missing.sql",
		"fake.md:3: role durable_job_superuser",
	}, unresolved)
}

func TestSeedMatrixProblemsReportsMissingDuplicateAndUntestedRows(t *testing.T) {
	t.Parallel()
	table := "# Matrix\n\n## Seed test requirements\n\n| # | requirement | tests |\n| --- | --- | --- |\n" +
		"| 1 | one | `TestA` |\n| 2 | two | none yet |\n| 2 | two again | `TestB` |\n| 4 | four | `TestC` |\n| 9 | nine | `TestD` |\n" +
		"\n## Other section\n\n| 3 | not in the seed section | `TestE` |\n"
	require.Equal(t, []string{
		"m.md:8: seed requirement 2 cites no test",
		"m.md:11: seed requirement 9 does not exist (1 to 4)",
		"m.md: seed requirement 2 has 2 rows, want 1",
		"m.md: seed requirement 3 is missing from the matrix",
	}, SeedMatrixProblems("m.md", table, 4))

	require.Equal(t, []string{`m.md: no "Seed test requirements" section`}, SeedMatrixProblems("m.md", "# nothing\n", 4))

	complete := "## Seed test requirements\n| 1 | a | `TestA` |\n| 2 | b | `TestB`, `TestC` |\n"
	require.Empty(t, SeedMatrixProblems("m.md", complete, 2))
}

func TestFindRootFailsOutsideAModule(t *testing.T) {
	t.Parallel()
	_, err := FindRoot(t.TempDir())
	require.ErrorContains(t, err, "no go.mod")
}
