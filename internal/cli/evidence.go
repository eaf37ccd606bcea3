package cli

import (
	"bytes"
	"context"
	"errors"
	"flag"

	"golang.org/x/crypto/ssh"

	"github.com/mightyetl/leasefence/evidence"
	"github.com/mightyetl/leasefence/internal/sshsig"
	"github.com/mightyetl/leasefence/textfmt"
)

// runEvidence is "leasectl evidence": the report, or its action verify
// or continue.
func runEvidence(ctx context.Context, env *cliEnv, args []string) int {
	if len(args) > 0 && args[0] == "verify" {
		return evidenceVerify.do(ctx, env, args[1:])
	}
	if len(args) > 0 && args[0] == "continue" {
		return evidenceContinue.do(ctx, env, args[1:])
	}
	return evidenceReport.do(ctx, env, args)
}

// evidenceReport is "leasectl evidence" without an action: the report.
// Its --output, when given, says the --format.
var evidenceReport = &action{name: "evidence", usage: help("evidence"), flags: func(fs *flag.FlagSet) runFunc {
	output := fs.String("output", "text", "output format: text or json")
	*output = "" // not given: --format says

	format := fs.String("format", "markdown", "report format: markdown or json")
	since := fs.String("since", "", "only records from this time on: RFC 3339 time or a duration back (720h)")
	until := fs.String("until", "", "only records before this time: RFC 3339 time or a duration back (24h)")
	out := fs.String("out", "", "write the report to this new `file` instead of stdout")
	signKey := fs.String("sign-key", "", "with --out: sign the report with this SSH private `key`, into FILE.sig")
	return func(c *call) error {
		if *signKey != "" && *out == "" {
			return usagef("--sign-key needs --out FILE: the signature is written next to the export, to FILE.sig")
		}
		switch *output {
		case "":
		case "json":
			*format = "json"
		case "text":
			*format = "markdown"
		default:
			return usagef("--output must be text or json, not %q", *output)
		}
		if *format != "markdown" && *format != "json" {
			return usagef("--format must be markdown or json, not %q", *format)
		}
		var opts evidence.Options
		var ok bool
		if opts.Since, opts.SinceBack, ok = evidence.ParseEnd(*since); !ok {
			return usagef("--since must be an RFC 3339 time or a positive duration, not %q", *since)
		}
		if opts.Until, opts.UntilBack, ok = evidence.ParseEnd(*until); !ok {
			return usagef("--until must be an RFC 3339 time or a positive duration, not %q", *until)
		}
		var signer ssh.Signer
		if *signKey != "" {
			var err error
			if signer, err = sshsig.LoadSigner(*signKey); err != nil {
				return failed("read --sign-key", err)
			}
		}
		pool, err := c.openPool()
		if err != nil {
			return err
		}
		report, err := evidence.Build(c.ctx, pool, opts)
		var readErr *evidence.ReadError
		var periodErr *evidence.PeriodError
		switch {
		case errors.As(err, &periodErr):
			return usagef("--until (%s) must be later than --since (%s)", textfmt.Time(periodErr.Until),
				textfmt.Time(periodErr.Since))
		case errors.As(err, &readErr):
			return failed(readErr.Read, readErr.Err)
		case err != nil:
			return auditFailed(err)
		}
		var body bytes.Buffer
		if *format == "json" {
			_ = writeJSON(&body, report)
		} else {
			// Written as it is: every value in it went through printf.
			body.WriteString(report.Markdown())
		}
		if *out == "" {
			_, _ = c.env.stdout.Write(body.Bytes())
			return nil
		}
		return writeExport(c, *out, body.Bytes(), signer)
	}
}}

// writeExport writes an export to path (evidence.WriteExport) and, with a
// signer, its detached SSH signature to path.sig (mode 644: a signature
// is public).
func writeExport(c *call, path string, body []byte, signer ssh.Signer) error {
	if err := evidence.WriteExport(path, body); err != nil {
		return failed("write --out", err)
	}
	c.printf("wrote %s\n", path)
	if signer == nil {
		return nil
	}
	if err := sshsig.WriteSignature(path+".sig", signer, evidence.SignatureNamespace, body); err != nil {
		return failed("sign --out", err)
	}
	c.printf("wrote %s.sig (%s signature, namespace %s, key %s)\n", path, signer.PublicKey().Type(),
		evidence.SignatureNamespace, ssh.FingerprintSHA256(signer.PublicKey()))
	return nil
}
