package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/mightyetl/leasefence/audit"
	"github.com/mightyetl/leasefence/goclient"
	"github.com/mightyetl/leasefence/internal/controls"
	sqlbundle "github.com/mightyetl/leasefence/sql"
)

const evidenceUsage = `Usage:
  leasectl evidence [--format markdown|json] [--since TIME] [--until TIME] [--database-url URL]

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
clock (720h). Default: everything the database keeps. --until (same forms)
ends the period before that time: the histories hold only the records inside
[since, until), the outcome totals count whole minutes in it, and the lease
policies are each queue's policy as of until, reconstructed from the
evidence. Jobs by status and the audit result are always as of report time.
Outcome tallies are kept 30 days; the report says so when the period starts
earlier.

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
	Until       *string               `json:"until"`
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
	until       time.Time
	migration   goclient.MigrationVersion
	records     []goclient.EvidenceRecord
	policies    []goclient.LeasePolicy
	outcomes    []goclient.LeaseOutcomeTotal
	statuses    []goclient.JobStatusTotal
	audit       audit.Report
}

// runEvidence is "leasectl evidence".
func runEvidence(ctx context.Context, env *cliEnv, args []string) int {
	fs := newFlagSet("evidence")
	common := addCommonFlags(fs, true)
	common.output = ""
	format := fs.String("format", "markdown", "report format: markdown or json")
	since := fs.String("since", "", "only records from this time on: RFC 3339 time or a duration back (720h)")
	until := fs.String("until", "", "only records before this time: RFC 3339 time or a duration back (24h)")
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
	sinceTime, sinceBack, ok := parseEvidenceTime(*since)
	if !ok {
		return env.usageError("evidence: --since must be an RFC 3339 time or a positive duration, not %q", *since)
	}
	untilTime, untilBack, ok := parseEvidenceTime(*until)
	if !ok {
		return env.usageError("evidence: --until must be an RFC 3339 time or a positive duration, not %q", *until)
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
	data.until = untilTime
	if untilBack > 0 {
		data.until = data.generatedAt.Add(-untilBack)
	}
	if !data.until.IsZero() && !data.since.IsZero() && !data.until.After(data.since) {
		return env.usageError("evidence: --until (%s) must be later than --since (%s)", formatTime(data.until), formatTime(data.since))
	}
	if data.migration, err = s.client.BundleMigrationVersion(ctx); err != nil {
		return env.fail("read migration version", err)
	}
	if data.records, err = s.client.ControlEvidence(ctx, data.since); err != nil {
		return env.fail("read control evidence", err)
	}
	if data.until.IsZero() {
		data.policies, err = s.client.QueueLeasePolicies(ctx)
	} else {
		data.records = recordsBefore(data.records, data.until)
		data.policies, err = policiesAsOf(ctx, s.pool, data.until)
	}
	if err != nil {
		return env.fail("read lease policies", err)
	}
	if data.outcomes, err = s.client.LeaseOutcomeTotals(ctx, data.since); err != nil {
		return env.fail("read lease outcome totals", err)
	}
	if !data.until.IsZero() {
		later, err := s.client.LeaseOutcomeTotals(ctx, data.until)
		if err != nil {
			return env.fail("read lease outcome totals", err)
		}
		data.outcomes = subtractOutcomes(data.outcomes, later)
	}
	if data.statuses, err = s.client.JobStatusTotals(ctx); err != nil {
		return env.fail("read job status totals", err)
	}
	if data.audit, err = audit.Run(ctx, s.pool); err != nil {
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

// parseEvidenceTime reads a --since or --until value: an RFC 3339 time or a
// positive duration back from the database's clock. An empty value is
// neither; ok is false for anything else.
func parseEvidenceTime(value string) (at time.Time, back time.Duration, ok bool) {
	if value == "" {
		return time.Time{}, 0, true
	}
	if t, err := time.Parse(time.RFC3339, value); err == nil {
		return t, 0, true
	}
	if d, err := time.ParseDuration(value); err == nil && d > 0 {
		return time.Time{}, d, true
	}
	return time.Time{}, 0, false
}

// recordsBefore keeps the records written before until.
func recordsBefore(records []goclient.EvidenceRecord, until time.Time) []goclient.EvidenceRecord {
	out := []goclient.EvidenceRecord{}
	for _, r := range records {
		if r.RecordedAt.Before(until) {
			out = append(out, r)
		}
	}
	return out
}

// subtractOutcomes returns the totals from since minus those from until:
// what was counted in [since, until), by whole minutes. Pairs left at zero
// are dropped.
func subtractOutcomes(fromSince, fromUntil []goclient.LeaseOutcomeTotal) []goclient.LeaseOutcomeTotal {
	later := map[[2]string]int64{}
	for _, o := range fromUntil {
		later[[2]string{o.Queue, o.Outcome}] = o.Count
	}
	out := []goclient.LeaseOutcomeTotal{}
	for _, o := range fromSince {
		o.Count -= later[[2]string{o.Queue, o.Outcome}]
		if o.Count > 0 {
			out = append(out, o)
		}
	}
	return out
}

// policiesAsOfSQL reconstructs each queue's lease policy as of $1 from the
// last lease_policy_changed record before it. That record's new values name
// the row they came from (policy_queue_name; migration 001's record of '*'
// predates the key): after a queue's row was deleted they are the default's
// or null, and the queue, which had no policy of its own then, is left out.
const policiesAsOfSQL = `SELECT queue_name, lease_duration, renewal_interval, max_claim_lifetime, renewal_enabled,
	recorded_at, changed_by_role
FROM (SELECT DISTINCT ON (e.queue_name) e.queue_name,
	(NOT e.new_values ? 'policy_queue_name' OR e.new_values ->> 'policy_queue_name' = e.queue_name) AS own_row,
	(e.new_values ->> 'lease_duration')::interval AS lease_duration,
	(e.new_values ->> 'renewal_interval')::interval AS renewal_interval,
	(e.new_values ->> 'max_claim_lifetime')::interval AS max_claim_lifetime,
	(e.new_values ->> 'renewal_enabled')::boolean AS renewal_enabled, e.recorded_at, e.changed_by_role
	FROM durable_jobs.control_evidence_history(NULL) e
	WHERE e.evidence_kind = 'lease_policy_changed' AND e.recorded_at < $1
	ORDER BY e.queue_name, e.evidence_record_id DESC) last
WHERE own_row
ORDER BY queue_name`

// policiesAsOf returns each queue's lease policy as of until, from the
// evidence (auditor role).
func policiesAsOf(ctx context.Context, db *pgxpool.Pool, until time.Time) ([]goclient.LeasePolicy, error) {
	rows, _ := db.Query(ctx, policiesAsOfSQL, until)
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (goclient.LeasePolicy, error) {
		var p goclient.LeasePolicy
		err := row.Scan(&p.Queue, &p.LeaseDuration, &p.RenewalInterval, &p.MaxClaimLifetime, &p.RenewalEnabled,
			&p.ChangedAt, &p.ChangedByRole)
		return p, err
	})
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
	if !d.until.IsZero() {
		until := formatTime(d.until)
		report.Until = &until
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

// outcomeRetention is how long the database keeps lease outcome tallies.
const outcomeRetention = 30 * 24 * time.Hour

// renderEvidenceMarkdown writes the report as Markdown.
func renderEvidenceMarkdown(report evidenceReportJSON, d evidenceData) string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	w("# leasefence control evidence\n\n")
	w("Generated at %s (database time) by leasectl, which carries bundle version %d.\n", report.GeneratedAt, sqlbundle.NewestVersion())
	switch {
	case report.Since != nil && report.Until != nil:
		w("Histories and outcome totals cover records from %s until before %s; lease policies are as of %s.\n",
			*report.Since, *report.Until, *report.Until)
	case report.Since != nil:
		w("Histories and outcome totals cover records from %s on.\n", *report.Since)
	case report.Until != nil:
		w("Histories and outcome totals cover everything the database keeps from before %s; lease policies are as of %s.\n",
			*report.Until, *report.Until)
	default:
		w("Histories and outcome totals cover everything the database keeps.\n")
	}
	if d.since.IsZero() || d.since.Before(d.generatedAt.Add(-outcomeRetention)) {
		w("Outcome tallies are kept 30 days: the outcome totals cover %s on only.\n",
			formatTime(d.generatedAt.Add(-outcomeRetention)))
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
		case audit.Report:
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
