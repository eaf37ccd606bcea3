package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/mightyetl/leasefence/evidence"
	"github.com/mightyetl/leasefence/internal/sshsig"
	"github.com/mightyetl/leasefence/textfmt"
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
		body.WriteString(report.Markdown())
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
