package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/mightyetl/leasefence/goclient"
	"github.com/mightyetl/leasefence/internal/controls"
	sqlbundle "github.com/mightyetl/leasefence/sql"
)

const evidenceUsage = `Usage:
  leasectl evidence [--format markdown|json] [--since TIME] [--database-url URL]

Writes a control-evidence report for auditors to stdout. Every section names
the leasefence control identifiers (LF-...) it supports, the same ones
docs/compliance/ uses; the report ends with the control index and the SOC 2
Trust Services Criteria and CSAP areas each control is relevant to.

Sections: migration version and when it was applied; migration history;
deployment versions (see "leasectl deployment record"); current lease
policies; lease policy history with reasons and roles; renewal enablement
changes; aggregate lease outcomes (stale renewals, reclaims); jobs by status;
and the result of every "leasectl audit" check.

--since limits the histories and outcome totals to records from that time on:
an RFC 3339 time (2026-05-01T00:00:00Z) or a duration back from the database's
clock (720h). Default: everything the database keeps.

The report holds no payload, claim token, owner id, idempotency key or job id.
Change reasons are shown as the operators wrote them, except that in Markdown
their markup and HTML are escaped (a link or an image stays text) and control
and bidirectional characters (ESC, newlines, U+202E, ...) are shown as escapes
like \u202e; role and queue names and audit findings likewise. JSON output
holds the values as they are, as JSON strings. --output json is the
same as --format json. Needs a login granted durable_job_auditor.
`

// evidenceControlJSON is a control named by a section.
type evidenceControlJSON struct {
	ID    string `json:"id"`
	Title string `json:"title"`
}

// evidenceSectionJSON is one section of the report.
type evidenceSectionJSON struct {
	ID       string                `json:"id"`
	Title    string                `json:"title"`
	Shows    string                `json:"shows"`
	Controls []evidenceControlJSON `json:"controls"`
	Data     any                   `json:"data"`
}

// evidenceReportJSON is the whole report.
type evidenceReportJSON struct {
	GeneratedAt string                `json:"generated_at"`
	Since       *string               `json:"since"`
	Sections    []evidenceSectionJSON `json:"sections"`
	Controls    []controls.Control    `json:"control_index"`
}

// evidenceRecordJSON is one control-evidence record.
type evidenceRecordJSON struct {
	ID             int64           `json:"id"`
	Kind           string          `json:"kind"`
	Queue          *string         `json:"queue"`
	PreviousValues json.RawMessage `json:"previous_values"`
	NewValues      json.RawMessage `json:"new_values"`
	Reason         string          `json:"reason"`
	ChangedByRole  string          `json:"changed_by_role"`
	RecordedAt     string          `json:"recorded_at"`
}

// migrationJSON is the migration version section's data.
type migrationJSON struct {
	MigrationVersion int32   `json:"migration_version"`
	AppliedAt        *string `json:"applied_at"`
	NewestVersion    int32   `json:"newest_version"`
	UpToDate         bool    `json:"up_to_date"`
}

// outcomeJSON is one aggregate lease outcome.
type outcomeJSON struct {
	Queue   string `json:"queue"`
	Outcome string `json:"outcome"`
	Count   int64  `json:"count"`
}

// statusJSON is one job status total.
type statusJSON struct {
	Queue  string `json:"queue"`
	Status string `json:"status"`
	Count  int64  `json:"count"`
}

// evidenceData is everything the report is made of.
type evidenceData struct {
	generatedAt time.Time
	since       time.Time
	migration   goclient.MigrationVersion
	records     []goclient.EvidenceRecord
	policies    []goclient.LeasePolicy
	outcomes    []goclient.LeaseOutcomeTotal
	statuses    []goclient.JobStatusTotal
	audit       auditReport
}

// runEvidence is "leasectl evidence".
func runEvidence(ctx context.Context, env *cliEnv, args []string) int {
	fs := newFlagSet("evidence")
	common := addCommonFlags(fs, true)
	common.output = ""
	format := fs.String("format", "markdown", "report format: markdown or json")
	since := fs.String("since", "", "only records from this time on: RFC 3339 time or a duration back (720h)")
	if done, code := parseFlags(env, fs, evidenceUsage, args); done {
		return code
	}
	switch common.output {
	case "":
	case "json":
		*format = "json"
	case "text":
		*format = "markdown"
	default:
		return env.usageError("evidence: --output must be text or json, not %q", common.output)
	}
	if *format != "markdown" && *format != "json" {
		return env.usageError("evidence: --format must be markdown or json, not %q", *format)
	}
	var sinceTime time.Time
	var sinceBack time.Duration
	if *since != "" {
		if t, err := time.Parse(time.RFC3339, *since); err == nil {
			sinceTime = t
		} else if d, err := time.ParseDuration(*since); err == nil && d > 0 {
			sinceBack = d
		} else {
			return env.usageError("evidence: --since must be an RFC 3339 time or a positive duration, not %q", *since)
		}
	}

	s, err := openSession(ctx, common.databaseURL)
	if err != nil {
		return env.fail("connect to database", err)
	}
	defer s.close()
	data := evidenceData{}
	if err := s.pool.QueryRow(ctx, `SELECT pg_catalog.clock_timestamp()`).Scan(&data.generatedAt); err != nil {
		return env.fail("read database time", err)
	}
	data.since = sinceTime
	if sinceBack > 0 {
		data.since = data.generatedAt.Add(-sinceBack)
	}
	if data.migration, err = s.client.BundleMigrationVersion(ctx); err != nil {
		return env.fail("read migration version", err)
	}
	if data.records, err = s.client.ControlEvidence(ctx, data.since); err != nil {
		return env.fail("read control evidence", err)
	}
	if data.policies, err = s.client.QueueLeasePolicies(ctx); err != nil {
		return env.fail("read lease policies", err)
	}
	if data.outcomes, err = s.client.LeaseOutcomeTotals(ctx, data.since); err != nil {
		return env.fail("read lease outcome totals", err)
	}
	if data.statuses, err = s.client.JobStatusTotals(ctx); err != nil {
		return env.fail("read job status totals", err)
	}
	if data.audit, err = auditDatabase(ctx, s.pool); err != nil {
		return env.failAudit(err)
	}
	report := buildEvidence(data)
	if *format == "json" {
		_ = writeJSON(env.stdout, report)
		return exitOK
	}
	printf(env.stdout, "%s", renderEvidenceMarkdown(report, data))
	return exitOK
}

// recordsOfKind returns the evidence records of the given kinds.
func recordsOfKind(records []goclient.EvidenceRecord, kinds ...string) []evidenceRecordJSON {
	out := []evidenceRecordJSON{}
	for _, r := range records {
		for _, k := range kinds {
			if r.Kind == k {
				out = append(out, toRecordJSON(r))
			}
		}
	}
	return out
}

func toRecordJSON(r goclient.EvidenceRecord) evidenceRecordJSON {
	out := evidenceRecordJSON{ID: r.ID, Kind: r.Kind, PreviousValues: r.PreviousValues, NewValues: r.NewValues,
		Reason: r.Reason, ChangedByRole: r.ChangedByRole, RecordedAt: formatTime(r.RecordedAt)}
	if r.Queue != "" {
		q := r.Queue
		out.Queue = &q
	}
	if out.PreviousValues == nil {
		out.PreviousValues = json.RawMessage("null")
	}
	return out
}

// buildEvidence arranges the data into the sections of internal/controls.
func buildEvidence(d evidenceData) evidenceReportJSON {
	newest := sqlbundle.NewestVersion()
	migration := migrationJSON{MigrationVersion: d.migration.Version, NewestVersion: newest,
		UpToDate: d.migration.Version == newest}
	if d.migration.Version != 0 {
		at := formatTime(d.migration.AppliedAt)
		migration.AppliedAt = &at
	}
	policies := make([]policyJSON, 0, len(d.policies))
	for _, p := range d.policies {
		policies = append(policies, toPolicyJSON(p))
	}
	outcomes := make([]outcomeJSON, 0, len(d.outcomes))
	for _, o := range d.outcomes {
		outcomes = append(outcomes, outcomeJSON(o))
	}
	statuses := make([]statusJSON, 0, len(d.statuses))
	for _, s := range d.statuses {
		statuses = append(statuses, statusJSON(s))
	}
	data := map[string]any{
		controls.SectionMigration:   migration,
		controls.SectionMigrations:  recordsOfKind(d.records, "migration_applied", "migration_reverted"),
		controls.SectionDeployments: recordsOfKind(d.records, "deployment_recorded"),
		controls.SectionPolicies:    policies,
		controls.SectionPolicy:      recordsOfKind(d.records, "lease_policy_changed"),
		controls.SectionEnablement:  recordsOfKind(d.records, "renewal_enablement_changed"),
		controls.SectionOutcomes:    outcomes,
		controls.SectionJobStatus:   statuses,
		controls.SectionAudit:       d.audit,
	}
	report := evidenceReportJSON{GeneratedAt: formatTime(d.generatedAt), Controls: controls.Controls()}
	if !d.since.IsZero() {
		since := formatTime(d.since)
		report.Since = &since
	}
	for _, section := range controls.EvidenceSections() {
		out := evidenceSectionJSON{ID: section.ID, Title: section.Title, Shows: section.Shows, Data: data[section.ID]}
		for _, id := range section.Controls {
			c, _ := controls.ControlByID(id)
			out.Controls = append(out.Controls, evidenceControlJSON{ID: c.ID, Title: c.Title})
		}
		report.Sections = append(report.Sections, out)
	}
	return report
}

// renderEvidenceMarkdown writes the report as Markdown.
func renderEvidenceMarkdown(report evidenceReportJSON, d evidenceData) string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	w("# leasefence control evidence\n\n")
	w("Generated at %s (database time) by leasectl, which carries bundle version %d.\n", report.GeneratedAt, sqlbundle.NewestVersion())
	if report.Since != nil {
		w("Histories and outcome totals cover records from %s on.\n", *report.Since)
	} else {
		w("Histories and outcome totals cover everything the database keeps.\n")
	}
	w("The report holds no payload, claim token, owner id, idempotency key or job id.\n")
	for _, section := range report.Sections {
		w("\n## %s (%s)\n\n%s\n\n", section.Title, section.ID, section.Shows)
		ids := make([]string, 0, len(section.Controls))
		for _, c := range section.Controls {
			ids = append(ids, fmt.Sprintf("%s %s", c.ID, c.Title))
		}
		w("Controls: %s.\n\n", strings.Join(ids, "; "))
		switch data := section.Data.(type) {
		case migrationJSON:
			applied := "-"
			if data.AppliedAt != nil {
				applied = *data.AppliedAt
			}
			w("| migration version | applied at | newest known to leasectl | up to date |\n|---|---|---|---|\n")
			w("| %d | %s | %d | %s |\n", data.MigrationVersion, applied, data.NewestVersion, formatBool(data.UpToDate))
		case []evidenceRecordJSON:
			if len(data) == 0 {
				w("No records.\n")
				continue
			}
			w("| # | recorded at | kind | queue | previous values | new values | reason | role |\n|---|---|---|---|---|---|---|---|\n")
			for _, r := range data {
				queue := "-"
				if r.Queue != nil {
					queue = *r.Queue
				}
				w("| %d | %s | %s | %s | %s | %s | %s | %s |\n", r.ID, r.RecordedAt, r.Kind, markdownCell(queue),
					markdownCode(compactJSON(r.PreviousValues)), markdownCode(compactJSON(r.NewValues)),
					markdownCell(r.Reason), markdownCell(r.ChangedByRole))
			}
		case []policyJSON:
			w("| queue | lease | renewal interval | max claim lifetime | renewal enabled | changed at | changed by |\n|---|---|---|---|---|---|---|\n")
			for _, p := range d.policies {
				w("| %s | %s | %s | %s | %s | %s | %s |\n", markdownCell(p.Queue), formatDuration(p.LeaseDuration),
					formatDuration(p.RenewalInterval), formatDuration(p.MaxClaimLifetime), formatBool(p.RenewalEnabled),
					formatTime(p.ChangedAt), markdownCell(p.ChangedByRole))
			}
		case []outcomeJSON:
			if len(data) == 0 {
				w("No stale renewals or reclaims.\n")
				continue
			}
			w("| queue | outcome | count |\n|---|---|---|\n")
			for _, o := range data {
				w("| %s | %s | %d |\n", markdownCell(o.Queue), o.Outcome, o.Count)
			}
		case []statusJSON:
			if len(data) == 0 {
				w("No jobs.\n")
				continue
			}
			w("| queue | status | jobs |\n|---|---|---|\n")
			for _, s := range data {
				w("| %s | %s | %d |\n", markdownCell(s.Queue), s.Status, s.Count)
			}
		case auditReport:
			if data.Passed {
				w("**Passed**: every check, no findings.\n\n")
			} else {
				w("**Failed**: %d finding(s).\n\n", data.Findings)
			}
			w("| check | result | controls | findings |\n|---|---|---|---|\n")
			for _, c := range data.Checks {
				result := "pass"
				if !c.Passed {
					result = "FAIL"
				}
				findings := "-"
				if len(c.Findings) > 0 {
					findings = markdownCell(strings.Join(c.Findings, "; "))
				}
				w("| %s | %s | %s | %s |\n", c.ID, result, strings.Join(c.Controls, ", "), findings)
			}
		}
	}
	w("\n## Control index\n\n")
	w("Where each control is relevant in SOC 2 (Trust Services Criteria) and CSAP. Relevance, not a claim of certification.\n\n")
	w("| control | title | SOC 2 TSC | CSAP areas |\n|---|---|---|---|\n")
	for _, c := range report.Controls {
		w("| %s | %s | %s | %s |\n", c.ID, c.Title, strings.Join(c.TrustServicesCriteria, ", "), strings.Join(c.CSAPAreas, ", "))
	}
	return b.String()
}

// compactJSON prints a JSON value on one line.
func compactJSON(raw json.RawMessage) string {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return string(raw)
	}
	out, _ := json.Marshal(v)
	return string(out)
}
