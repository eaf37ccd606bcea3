package evidence

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/mightyetl/leasefence/audit"
	"github.com/mightyetl/leasefence/controls"
)

// markdownReport is a report with every kind of section, empty when empty
// is true, and the period from since and until.
func markdownReport(empty bool, since, until *string) Report {
	text := func(s string) *string { return &s }
	id := int64(7)
	r := Report{SchemaVersion: SchemaVersion, GeneratedAt: "2026-05-01T00:00:00.000Z", Since: since, Until: until,
		Database:   Database{Name: "db_1", SystemIdentifier: "42"},
		BodyDigest: "sha256:00", Controls: []controls.Control{{ID: "LF-1", Title: "One", TrustServicesCriteria: []string{"CC6.1"}}},
		Period: Period{GeneratedAt: time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)}}
	section := func(data any) Section {
		return Section{ID: "EVIDENCE-X", Title: "X", Shows: "what it shows", Controls: []Control{{ID: "LF-1", Title: "One"}}, Data: data}
	}
	if empty {
		r.Period.Since = r.Period.GeneratedAt.Add(-time.Hour)
		r.Sections = []Section{section(Migration{MigrationVersion: 0, NewestVersion: 29}), section([]Record{}),
			section(Disposal{}), section([]Outcome{}), section([]Status{}), section([]Processing{}), section([]OperatorAction{}),
			section(audit.AccessReview{BodyDigest: "sha256:11"}), section(audit.Report{Passed: true, Checks: []audit.CheckResult{
				{ID: "AUDIT-A", Passed: true}}})}
		return r
	}
	r.Chain = Chain{RecordCount: 1, FirstID: &id, LastID: &id, Head: text("abc")}
	r.OutcomesWindow = OutcomesWindow{From: text("2026-04-01T00:00:00.000Z"), Until: text("2026-05-01T00:00:00.000Z")}
	records := []Record{{ID: 1, Kind: "lease_policy_changed", Queue: text("q|1"), PreviousValues: json.RawMessage(`{"a": "x` + "`" + `y|z"}`),
		NewValues: json.RawMessage(`not json`), Reason: "see [link](http://x) \u202e", Ticket: text("OPS-1"), Approver: text("ops_bob"),
		ChangedByRole: "ops_alice", RecordedAt: "2026-04-30T00:00:00.000Z"}, {ID: 2, Kind: "k", Reason: "r", ChangedByRole: "a"}}
	r.Sections = []Section{
		section(Migration{MigrationVersion: 29, AppliedAt: text("2026-04-01T00:00:00.000Z"), NewestVersion: 29, UpToDate: true}),
		section(records),
		section(Disposal{PurgeRuns: 2, Purged: []PurgedCount{{Queue: "q", Kind: "payload", Count: 3}},
			Erasures: []ErasureCount{{Queue: "q", JobStatus: "succeeded", Count: 1}}, RetentionPolicyChanges: records[:1]}),
		section([]Policy{{Queue: "q", RenewalEnabled: true, ChangedAt: "t", ChangedByRole: "r",
			Durations: PolicyDurations{Lease: time.Minute, RenewalInterval: 20 * time.Second, MaxClaimLifetime: time.Hour}}}),
		section([]Outcome{{Queue: "q", Outcome: "reclaimed", Count: 4}}),
		section([]Status{{Queue: "q", Status: "running", Count: 5}}),
		section([]Processing{{Queue: "q", Enqueued: 6, Succeeded: 5, Retried: 1}}),
		section([]OperatorAction{{Queue: "q", Action: "cancel", Login: "ops_alice", Count: 1}}),
		section(audit.AccessReview{BodyDigest: "sha256:22", Logins: []audit.AccessLogin{
			{Login: "postgres", Superuser: true, BypassRLS: true},
			{Login: "ops", Roles: []audit.AccessRole{{Role: "durable_job_operator", GrantedTo: "ops", Grantor: "postgres"}},
				Privileges: []audit.AccessPrivilege{{Privilege: "SELECT", On: "durable_jobs.job_record", GrantedTo: "ops"}}}}}),
		section(audit.Report{Findings: 1, Checks: []audit.CheckResult{
			{ID: "AUDIT-A", Passed: false, Controls: []string{"LF-1"}, Findings: []string{"bad *thing*"}, Warnings: []string{"hm"}}}}),
	}
	return r
}

func TestMarkdownRendersEverySectionAndEscapesOperatorText(t *testing.T) {
	t.Parallel()
	since, until := "2026-04-01T00:00:00.000Z", "2026-05-01T00:00:00.000Z"
	full := markdownReport(false, &since, &until).Markdown()
	for _, want := range []string{
		"Histories and outcome totals cover records from " + since + " until before " + until + "; lease policies are as of " + until + ".\n",
		"Outcome tallies are kept 30 days: the outcome totals cover 2026-04-01T00:00:00.000Z on only.\n",
		"Database db\\_1 (system identifier 42).\n",
		"inside the period: from 2026-04-01T00:00:00.000Z until 2026-05-01T00:00:00.000Z.\n",
		"the period holds 1 evidence records, ids 7 to 7; chain head (record_hash of record 7) `abc`.\n",
		"\n## X (EVIDENCE-X)\n\nwhat it shows\n\nControls: LF-1 One.\n",
		"| 29 | 2026-04-01T00:00:00.000Z | 29 | yes |\n",
		"| 1 | 2026-04-30T00:00:00.000Z | lease_policy_changed | q\\|1 | ``{\"a\":\"x`y\\|z\"}`` | `not json` | " +
			"see \\[link\\]\\(http://x\\) \\\\u202e | OPS-1 | ops\\_bob | ops\\_alice |\n",
		"| 2 |  | k | - | `` | `` | r | - | - | a |\n",
		"Purge calls that removed something: 2.\n\n| queue | purged | jobs |\n|---|---|---|\n| q | payload | 3 |\n",
		"| q | succeeded | 1 |\n", "Retention policy changes:\n\n| # |",
		"| q | 1m | 20s | 1h | yes | t | r |\n", "| q | reclaimed | 4 |\n", "| q | running | 5 |\n",
		"| q | 6 | 5 | 1 | 0 | 0 | 0 |\n", "| q | cancel | ops\\_alice | 1 |\n",
		"body digest sha256:22", "| postgres | SUPERUSER, BYPASSRLS | - | - | - |\n",
		"| ops | - | durable\\_job\\_operator | ops | postgres |\n",
		"| login | privilege | on | granted to |\n|---|---|---|---|\n| ops | SELECT | durable\\_jobs.job\\_record | ops |\n",
		"**Failed**: 1 finding(s).\n", "| AUDIT-A | FAIL | LF-1 | bad \\*thing\\*; warning: hm |\n",
		"| LF-1 | One | CC6.1 |  |\n",
	} {
		require.Contains(t, full, want)
	}
	require.NotContains(t, full, "\u202e")

	empty := markdownReport(true, nil, nil).Markdown()
	for _, want := range []string{
		"Histories and outcome totals cover everything the database keeps.\n",
		"Lease outcome figures count whole minutes inside the period: from - until -.\n",
		"Evidence chain: the period holds no evidence records.\n", "| 0 | - | 29 | no |\n", "No records.\n",
		"Purge calls that removed something: 0.\n\nNo payload erasures.\n\nRetention policy changes:\n\nNo records.\n",
		"No stale renewals or reclaims.\n", "No jobs.\n", "Nothing processed.\n", "No operator actions on jobs.\n",
		"granted outside the bundle's roles:\n\nNone.\n", "**Passed**: every check, no findings.\n", "| AUDIT-A | pass |  | - |\n",
	} {
		require.Contains(t, empty, want)
	}
	require.NotContains(t, empty, "Outcome tallies are kept 30 days")

	onlySince := markdownReport(true, &since, nil).Markdown()
	require.Contains(t, onlySince, "Histories and outcome totals cover records from "+since+" on.\n")
	onlyUntil := markdownReport(true, nil, &until).Markdown()
	require.Contains(t, onlyUntil, "Histories and outcome totals cover everything the database keeps from before "+until+
		"; lease policies are as of "+until+".\n")
	require.True(t, strings.HasPrefix(onlyUntil, "# leasefence control evidence\n\n"))
}
