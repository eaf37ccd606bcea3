package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/mightyetl/leasefence/audit"
	"github.com/mightyetl/leasefence/evidence"
	"github.com/mightyetl/leasefence/internal/sshsig"
	"github.com/mightyetl/leasefence/internal/textfmt"
	sqlbundle "github.com/mightyetl/leasefence/sql"
)

const evidenceUsage = `Usage:
  leasectl evidence [--format markdown|json] [--since TIME] [--until TIME]
                    [--out FILE [--sign-key KEY]] [--database-url URL]
  leasectl evidence verify --anchor FILE [--output text|json] [--database-url URL]
  leasectl evidence continue --anchor FILE --reason TEXT [--ticket T] [--approver A] [--database-url URL]

Writes a control-evidence report for auditors to stdout. Every section names
the leasefence control identifiers (LF-...) it supports, the same ones
docs/compliance/ uses; the report ends with the control index and the SOC 2
Trust Services Criteria and CSAP areas each control is relevant to.

Sections: migration version and when it was applied; migration history;
deployment versions (see "leasectl deployment record"); current lease
policies; lease policy history with reasons, tickets, approvers and roles;
renewal enablement changes; disposal (what the retention purge and erasure
removed, as counts per queue and kind, and retention policy changes);
aggregate lease outcomes (stale renewals, reclaims); jobs by status; the
result of every "leasectl audit" check; and the access review of "leasectl
access" at report time, with its body digest.

The report names the database (name and system identifier) and places the
period's evidence in the hash chain: the record count, the first and last
evidence id and the chain head (the record_hash of the last record, which
covers every record before it). Keep each exported report: running the same
--since and --until later must print the same chain head, or a record up to
that one was altered, removed or inserted, even when every later hash was
recomputed and "leasectl audit" passes. The JSON carries schema_version and
body_digest (SHA-256 of the JSON without generated_at and body_digest, keys
sorted: two reports of the same state and period have the same digest).

--since limits the histories and outcome totals to records from that time on:
an RFC 3339 time (2026-05-01T00:00:00Z) or a duration back from the database's
clock (720h). Default: everything the database keeps. --until (same forms)
ends the period before that time: the histories hold only the records inside
[since, until), the outcome totals count whole minutes in it, and the lease
policies are each queue's policy as of until, reconstructed from the
evidence. Jobs by status, the audit result and the access review are always as
of report time.
Outcome tallies are kept 30 days; the report says so when the period starts
earlier.

The report holds no payload, claim token, owner id, idempotency key or job id.
Change reasons are shown as the operators wrote them, except that in Markdown
their markup and HTML are escaped (a link or an image stays text) and control
and bidirectional characters (ESC, newlines, U+202E, ...) are shown as escapes
like \u202e; role and queue names and audit findings likewise. JSON output
holds the values as they are, as JSON strings. --output json is the
same as --format json. Needs a login granted durable_job_auditor.

The JSON lists every record of the period with its record_hash
(evidence_chain.links): kept outside the database, it is an anchor that
"leasectl evidence verify --anchor FILE" compares the live chain with,
naming the first record that differs or is missing.

--out FILE writes the report to FILE (mode 600), which must not exist yet,
instead of stdout. --sign-key KEY (with --out) also writes FILE.sig, a detached SSH
signature by the private key KEY (OpenSSH, PKCS#1, PKCS#8 or SEC 1; mode 600;
no passphrase) in namespace ` + evidenceSignatureNamespace + `, which an auditor checks
with OpenSSH's own tool and an allowed_signers file holding the public key:

  ssh-keygen -Y verify -f allowed_signers -I IDENTITY -n ` + evidenceSignatureNamespace + ` -s FILE.sig < FILE

"leasectl evidence verify" and "leasectl evidence continue": run them with
--help.
`

// evidenceSignatureNamespace is the SSH signature namespace of signed
// evidence exports: a signature made for another purpose (a git commit, a
// file) does not verify as one.
const evidenceSignatureNamespace = "leasefence-evidence"

// runEvidence is "leasectl evidence".
func runEvidence(ctx context.Context, env *cliEnv, args []string) int {
	if len(args) > 0 {
		switch args[0] {
		case "verify":
			return runEvidenceVerify(ctx, env, args[1:])
		case "continue":
			return runEvidenceContinue(ctx, env, args[1:])
		}
	}
	fs := newFlagSet("evidence")
	common := addCommonFlags(fs, true)
	common.output = ""
	format := fs.String("format", "markdown", "report format: markdown or json")
	since := fs.String("since", "", "only records from this time on: RFC 3339 time or a duration back (720h)")
	until := fs.String("until", "", "only records before this time: RFC 3339 time or a duration back (24h)")
	out := fs.String("out", "", "write the report to this new `file` instead of stdout")
	signKey := fs.String("sign-key", "", "with --out: sign the report with this SSH private `key`, into FILE.sig")
	if done, code := parseFlags(env, fs, evidenceUsage, args); done {
		return code
	}
	if *signKey != "" && *out == "" {
		return env.usageError("evidence: --sign-key needs --out FILE: the signature is written next to the export, to FILE.sig")
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
	var opts evidence.Options
	var ok bool
	if opts.Since, opts.SinceBack, ok = parseEvidenceTime(*since); !ok {
		return env.usageError("evidence: --since must be an RFC 3339 time or a positive duration, not %q", *since)
	}
	if opts.Until, opts.UntilBack, ok = parseEvidenceTime(*until); !ok {
		return env.usageError("evidence: --until must be an RFC 3339 time or a positive duration, not %q", *until)
	}

	var signer ssh.Signer
	if *signKey != "" {
		var err error
		if signer, err = sshsig.LoadSigner(*signKey); err != nil {
			return env.fail("read --sign-key", err)
		}
	}
	pool, err := connectPool(ctx, common.databaseURL)
	if err != nil {
		return env.fail("connect to database", err)
	}
	defer pool.Close()
	report, err := evidence.Build(ctx, pool, opts)
	var readErr *evidence.ReadError
	var periodErr *evidence.PeriodError
	switch {
	case errors.As(err, &periodErr):
		return env.usageError("evidence: --until (%s) must be later than --since (%s)", textfmt.Time(periodErr.Until),
			textfmt.Time(periodErr.Since))
	case errors.As(err, &readErr):
		return env.fail(readErr.Read, readErr.Err)
	case err != nil:
		return env.failAudit(err)
	}
	var body bytes.Buffer
	if *format == "json" {
		_ = writeJSON(&body, report)
	} else {
		// Written as it is: every value in it went through printf.
		body.WriteString(renderEvidenceMarkdown(report))
	}
	if *out == "" {
		_, _ = env.stdout.Write(body.Bytes())
		return exitOK
	}
	return writeExport(env, *out, body.Bytes(), signer)
}

// writeExport writes an export to path, which must not exist yet (mode
// 600, as migrate down's export: it names logins), and,
// with a signer, its detached SSH signature to path.sig.
func writeExport(env *cliEnv, path string, body []byte, signer ssh.Signer) int {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return env.fail("write --out", err)
	}
	_, err = f.Write(body)
	if err = errors.Join(err, f.Sync(), f.Close()); err != nil {
		return env.fail("write --out", err)
	}
	printf(env.stdout, "wrote %s\n", path)
	if signer == nil {
		return exitOK
	}
	if err := sshsig.WriteSignature(path+".sig", signer, evidenceSignatureNamespace, body); err != nil {
		return env.fail("sign --out", err)
	}
	printf(env.stdout, "wrote %s.sig (%s signature, namespace %s, key %s)\n", path, signer.PublicKey().Type(),
		evidenceSignatureNamespace, ssh.FingerprintSHA256(signer.PublicKey()))
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

// renderEvidenceMarkdown writes the report as Markdown.
func renderEvidenceMarkdown(report evidence.Report) string {
	var b strings.Builder
	w := func(format string, args ...any) { printf(&b, format, args...) }
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
		optionalText(report.OutcomesWindow.From), optionalText(report.OutcomesWindow.Until))
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
		case evidence.Migration:
			applied := "-"
			if data.AppliedAt != nil {
				applied = *data.AppliedAt
			}
			w("| migration version | applied at | newest known to leasectl | up to date |\n|---|---|---|---|\n")
			w("| %d | %s | %d | %s |\n", data.MigrationVersion, applied, data.NewestVersion, formatBool(data.UpToDate))
		case []evidence.Record:
			if len(data) == 0 {
				w("No records.\n")
				continue
			}
			writeRecords(&b, data)
		case evidence.Disposal:
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
		case []evidence.Policy:
			w("| queue | lease | renewal interval | max claim lifetime | renewal enabled | changed at | changed by |\n|---|---|---|---|---|---|---|\n")
			for _, p := range data {
				w("| %s | %s | %s | %s | %s | %s | %s |\n", markdownCell(p.Queue), textfmt.Duration(p.Durations.Lease),
					textfmt.Duration(p.Durations.RenewalInterval), textfmt.Duration(p.Durations.MaxClaimLifetime),
					formatBool(p.RenewalEnabled), p.ChangedAt, markdownCell(p.ChangedByRole))
			}
		case []evidence.Outcome:
			if len(data) == 0 {
				w("No stale renewals or reclaims.\n")
				continue
			}
			w("| queue | outcome | count |\n|---|---|---|\n")
			for _, o := range data {
				w("| %s | %s | %d |\n", markdownCell(o.Queue), o.Outcome, o.Count)
			}
		case []evidence.Status:
			if len(data) == 0 {
				w("No jobs.\n")
				continue
			}
			w("| queue | status | jobs |\n|---|---|---|\n")
			for _, s := range data {
				w("| %s | %s | %d |\n", markdownCell(s.Queue), s.Status, s.Count)
			}
		case []evidence.Processing:
			if len(data) == 0 {
				w("Nothing processed.\n")
				continue
			}
			w("| queue | enqueued | succeeded | retried | failed | cancelled | replayed |\n|---|---|---|---|---|---|---|\n")
			for _, p := range data {
				w("| %s | %d | %d | %d | %d | %d | %d |\n", markdownCell(p.Queue), p.Enqueued, p.Succeeded, p.Retried,
					p.Failed, p.Cancelled, p.Replayed)
			}
		case []evidence.OperatorAction:
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
	printf(b, "As of the report's generation time; body digest %s (as `leasectl access --output json` gives for the same access).\n\n", review.BodyDigest)
	b.WriteString("| login | attributes | leasefence role | granted to | grantor |\n|---|---|---|---|---|\n")
	for _, l := range review.Logins {
		attributes := markdownCell(strings.Join(l.Attributes(), ", "))
		if len(l.Roles) == 0 {
			printf(b, "| %s | %s | - | - | - |\n", markdownCell(l.Login), attributes)
		}
		for _, r := range l.Roles {
			printf(b, "| %s | %s | %s | %s | %s |\n", markdownCell(l.Login), attributes, markdownCell(r.Role),
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
			printf(b, "| %s | %s | %s | %s |\n", markdownCell(l.Login), markdownCell(p.Privilege), markdownCell(p.On), markdownCell(p.GrantedTo))
			rows++
		}
	}
	if rows == 0 {
		b.WriteString("None.\n")
	}
}

// writeRecords writes evidence records as a Markdown table; ticket and
// approver are "-" when none was given.
func writeRecords(b *strings.Builder, records []evidence.Record) {
	orDash := func(s *string) string {
		if s == nil {
			return "-"
		}
		return markdownCell(*s)
	}
	b.WriteString("| # | recorded at | kind | queue | previous values | new values | reason | ticket | approver | role |\n" +
		"|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range records {
		printf(b, "| %d | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", r.ID, r.RecordedAt, r.Kind, orDash(r.Queue),
			markdownCode(textfmt.CompactJSON(r.PreviousValues)), markdownCode(textfmt.CompactJSON(r.NewValues)),
			markdownCell(r.Reason), orDash(r.Ticket), orDash(r.Approver), markdownCell(r.ChangedByRole))
	}
}
