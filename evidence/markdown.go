package evidence

import (
	"fmt"
	"strings"

	"github.com/mightyetl/leasefence/audit"
	sqlbundle "github.com/mightyetl/leasefence/sql"
	"github.com/mightyetl/leasefence/textfmt"
)

// Markdown renders the report as Markdown for auditors, as "leasectl
// evidence" prints it (the header names leasectl and the bundle version
// this module carries). Every value from the database or an operator is
// written through textfmt.Fprintf; in a table cell its markup and HTML are
// escaped (a link or an image stays text) and its control and
// bidirectional characters are shown as escapes, so no value can start a
// line, a column or markup of its own.
func (report Report) Markdown() string {
	var b strings.Builder
	w := func(format string, args ...any) { _, _ = textfmt.Fprintf(&b, format, args...) }
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
	w("Lease outcome figures count whole minutes inside the period: from %s until %s.\n",
		orDash(report.OutcomesWindow.From), orDash(report.OutcomesWindow.Until))
	if from, short := report.Period.OutcomesCoverFrom(); short {
		w("Outcome tallies are kept 30 days: the outcome totals cover %s on only.\n", textfmt.Time(from))
	}
	w("Database %s (system identifier %s).\n", markdownCell(report.Database.Name), report.Database.SystemIdentifier)
	if c := report.Chain; c.RecordCount > 0 {
		w("Evidence chain: the period holds %d evidence records, ids %d to %d; chain head (record_hash of record %d) `%s`.\n",
			c.RecordCount, *c.FirstID, *c.LastID, *c.LastID, *c.Head)
	} else {
		w("Evidence chain: the period holds no evidence records.\n")
	}
	w("JSON schema version %d, body digest %s.\n", report.SchemaVersion, report.BodyDigest)
	w("The report holds no payload, claim token, owner id, idempotency key or job id.\n")
	for _, section := range report.Sections {
		w("\n## %s (%s)\n\n%s\n\n", section.Title, section.ID, section.Shows)
		ids := make([]string, 0, len(section.Controls))
		for _, c := range section.Controls {
			ids = append(ids, fmt.Sprintf("%s %s", c.ID, c.Title))
		}
		w("Controls: %s.\n\n", strings.Join(ids, "; "))
		switch data := section.Data.(type) {
		case Migration:
			applied := "-"
			if data.AppliedAt != nil {
				applied = *data.AppliedAt
			}
			w("| migration version | applied at | newest known to leasectl | up to date |\n|---|---|---|---|\n")
			w("| %d | %s | %d | %s |\n", data.MigrationVersion, applied, data.NewestVersion, yesNo(data.UpToDate))
		case []Record:
			if len(data) == 0 {
				w("No records.\n")
				continue
			}
			writeRecords(&b, data)
		case Disposal:
			w("Purge calls that removed something: %d.\n\n", data.PurgeRuns)
			if len(data.Purged) > 0 {
				w("| queue | purged | jobs |\n|---|---|---|\n")
				for _, p := range data.Purged {
					w("| %s | %s | %d |\n", markdownCell(p.Queue), markdownCell(p.Kind), p.Count)
				}
				w("\n")
			}
			if len(data.Erasures) == 0 {
				w("No payload erasures.\n\n")
			} else {
				w("| queue | erased in status | jobs |\n|---|---|---|\n")
				for _, e := range data.Erasures {
					w("| %s | %s | %d |\n", markdownCell(e.Queue), markdownCell(e.JobStatus), e.Count)
				}
				w("\n")
			}
			w("Retention policy changes:\n\n")
			if len(data.RetentionPolicyChanges) == 0 {
				w("No records.\n")
				continue
			}
			writeRecords(&b, data.RetentionPolicyChanges)
		case []Policy:
			w("| queue | lease | renewal interval | max claim lifetime | renewal enabled | changed at | changed by |\n|---|---|---|---|---|---|---|\n")
			for _, p := range data {
				w("| %s | %s | %s | %s | %s | %s | %s |\n", markdownCell(p.Queue), textfmt.Duration(p.Durations.Lease),
					textfmt.Duration(p.Durations.RenewalInterval), textfmt.Duration(p.Durations.MaxClaimLifetime),
					yesNo(p.RenewalEnabled), p.ChangedAt, markdownCell(p.ChangedByRole))
			}
		case []Outcome:
			if len(data) == 0 {
				w("No stale renewals or reclaims.\n")
				continue
			}
			w("| queue | outcome | count |\n|---|---|---|\n")
			for _, o := range data {
				w("| %s | %s | %d |\n", markdownCell(o.Queue), o.Outcome, o.Count)
			}
		case []Status:
			if len(data) == 0 {
				w("No jobs.\n")
				continue
			}
			w("| queue | status | jobs |\n|---|---|---|\n")
			for _, s := range data {
				w("| %s | %s | %d |\n", markdownCell(s.Queue), s.Status, s.Count)
			}
		case []Processing:
			if len(data) == 0 {
				w("Nothing processed.\n")
				continue
			}
			w("| queue | enqueued | succeeded | retried | failed | cancelled | replayed |\n|---|---|---|---|---|---|---|\n")
			for _, p := range data {
				w("| %s | %d | %d | %d | %d | %d | %d |\n", markdownCell(p.Queue), p.Enqueued, p.Succeeded, p.Retried,
					p.Failed, p.Cancelled, p.Replayed)
			}
		case []OperatorAction:
			if len(data) == 0 {
				w("No operator actions on jobs.\n")
				continue
			}
			w("| queue | action | login | jobs |\n|---|---|---|---|\n")
			for _, a := range data {
				w("| %s | %s | %s | %d |\n", markdownCell(a.Queue), a.Action, markdownCell(a.Login), a.Count)
			}
		case audit.AccessReview:
			writeAccessReview(&b, data)
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
				notes := append([]string(nil), c.Findings...)
				for _, warning := range c.Warnings {
					notes = append(notes, "warning: "+warning)
				}
				if len(notes) > 0 {
					findings = markdownCell(strings.Join(notes, "; "))
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

// writeAccessReview writes the access review as Markdown tables: each
// login with its attributes and leasefence roles, then the privileges
// granted outside the bundle's roles.
func writeAccessReview(b *strings.Builder, review audit.AccessReview) {
	_, _ = textfmt.Fprintf(b, "As of the report's generation time; body digest %s (as `leasectl access --output json` gives for the same access).\n\n", review.BodyDigest)
	b.WriteString("| login | attributes | leasefence role | granted to | grantor |\n|---|---|---|---|---|\n")
	for _, l := range review.Logins {
		attributes := markdownCell(strings.Join(l.Attributes(), ", "))
		if len(l.Roles) == 0 {
			_, _ = textfmt.Fprintf(b, "| %s | %s | - | - | - |\n", markdownCell(l.Login), attributes)
		}
		for _, r := range l.Roles {
			_, _ = textfmt.Fprintf(b, "| %s | %s | %s | %s | %s |\n", markdownCell(l.Login), attributes, markdownCell(r.Role),
				markdownCell(r.GrantedTo), markdownCell(r.Grantor))
		}
	}
	b.WriteString("\nPrivileges in schema durable_jobs granted outside the bundle's roles:\n\n")
	rows := 0
	for _, l := range append([]audit.AccessLogin{{Login: "PUBLIC", Privileges: review.Public}}, review.Logins...) {
		for _, p := range l.Privileges {
			if rows == 0 {
				b.WriteString("| login | privilege | on | granted to |\n|---|---|---|---|\n")
			}
			_, _ = textfmt.Fprintf(b, "| %s | %s | %s | %s |\n", markdownCell(l.Login), markdownCell(p.Privilege), markdownCell(p.On), markdownCell(p.GrantedTo))
			rows++
		}
	}
	if rows == 0 {
		b.WriteString("None.\n")
	}
}

// writeRecords writes evidence records as a Markdown table; ticket and
// approver are "-" when none was given.
func writeRecords(b *strings.Builder, records []Record) {
	b.WriteString("| # | recorded at | kind | queue | previous values | new values | reason | ticket | approver | role |\n" +
		"|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range records {
		_, _ = textfmt.Fprintf(b, "| %d | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", r.ID, r.RecordedAt, r.Kind, cellOrDash(r.Queue),
			markdownCode(textfmt.CompactJSON(r.PreviousValues)), markdownCode(textfmt.CompactJSON(r.NewValues)),
			markdownCell(r.Reason), cellOrDash(r.Ticket), cellOrDash(r.Approver), markdownCell(r.ChangedByRole))
	}
}

// orDash is *s, or "-" when s is nil.
func orDash(s *string) string {
	if s == nil {
		return "-"
	}
	return *s
}

// cellOrDash is markdownCell(*s), or "-" when s is nil.
func cellOrDash(s *string) string {
	if s == nil {
		return "-"
	}
	return markdownCell(*s)
}

// yesNo prints "yes" or "no".
func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// markdownEscaper backslash-escapes the ASCII punctuation that Markdown
// (CommonMark and GitHub's tables, strikethrough and autolinks) reads as
// markup, and writes HTML's special characters as entities, so that no
// operator text becomes a link, an image, emphasis, a table column or HTML.
var markdownEscaper = strings.NewReplacer(
	"\\", "\\\\", "`", "\\`", "*", "\\*", "_", "\\_", "[", "\\[", "]", "\\]", "(", "\\(", ")", "\\)",
	"!", "\\!", "|", "\\|", "~", "\\~", "#", "\\#", "{", "\\{", "}", "\\}",
	"<", "&lt;", ">", "&gt;", "&", "&amp;", "\"", "&quot;", "'", "&#39;",
)

// markdownCell makes operator text safe inside a Markdown table cell: its
// control and bidirectional characters become visible escapes, its markup
// and HTML are escaped, and runs of spaces become one.
func markdownCell(s string) string {
	s = markdownEscaper.Replace(textfmt.Visible(s))
	s = strings.Join(strings.Fields(s), " ")
	if s == "" {
		return "-"
	}
	return s
}

// markdownCode puts JSON text in a Markdown code span inside a table cell:
// nothing in it is read as markup or HTML. Its control and bidirectional
// characters become visible escapes, its pipes are escaped for the table,
// and the span's fence is a run of backticks the text does not hold. (JSON
// text neither starts nor ends with a backtick, so the fence needs no
// padding.)
func markdownCode(s string) string {
	s = strings.ReplaceAll(strings.Join(strings.Fields(textfmt.Visible(s)), " "), "|", "\\|")
	fence := "`"
	for strings.Contains(s, fence) {
		fence += "`"
	}
	return fence + s + fence
}
