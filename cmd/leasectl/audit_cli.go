package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/mightyetl/leasefence/audit"
)

// auditUsage is the help of "leasectl audit"; its list of checks is
// written from audit.Checks (package controls), the one place they are
// named.
var auditUsage = `Usage:
  leasectl audit [--output text|json] [--evidence-anchor FILE] [--require-pgaudit] [--database-url URL]

Checks the live database against leasefence's contract and prints one line
per finding, each starting with the check's stable identifier:

` + auditCheckList() + `
The audit reads the system catalogs and needs no privilege beyond a login,
except that AUDIT-MIGRATION-VERSION and AUDIT-FUNCTION-DRIFT read the version
from the version table or, failing that, from bundle_migration_version(), and
AUDIT-POLICY-MATCHES-EVIDENCE and AUDIT-EVIDENCE-CHAIN call auditor functions:
grant the login durable_job_auditor, or they report that they cannot tell. The trial UPDATE and
DELETE run only when the login could otherwise change the evidence (for
example the table owner); they are always rolled back.

AUDIT-SECOND-PRIMARY connects to every host of a multi-host --database-url
and reports another primary of the same cluster. AUDIT-SYNCHRONOUS-REPLICATION
reports warnings ("warning: ..." lines): they never fail the audit, and
neither does AUDIT-TLS-CONFIGURATION's warning that a login which cannot read
pg_hba_file_rules (only superusers can, unless granted) did not check them.
Against a standby, AUDIT-SERVER-IS-PRIMARY is a finding: audit the primary
(add target_session_attrs=read-write to a multi-host URL).

AUDIT-ROLE-CHANGE-LOGGING warns when pgaudit is not loaded or its
pgaudit.log lacks the role class (so a GRANT, REVOKE or DROP ROLE of a bundle
role leaves no trace); --require-pgaudit makes that a finding, for
deployments under audit. A plain local install still audits clean.

--evidence-anchor FILE compares the live evidence chain with an earlier
export (AUDIT-EVIDENCE-ANCHOR), as "leasectl evidence verify --anchor FILE"
does; without it that check has nothing to compare and passes.

--output json prints the result with schema_version, generated_at (database
time before the checks ran), database (name and system identifier),
migration_version (the database's), bundle_version (this leasectl's) and
body_digest: the SHA-256 of the JSON without generated_at and body_digest,
keys sorted, computed as for "leasectl evidence" (two audits of the same state
have the same digest).

Exit code: 0 when every check passes (warnings or not), 2 when there is any
finding, 1 when the audit itself could not run.
`

// auditCheckList lists every audit check with what a passing database
// shows, wrapped to the width of the other help texts.
func auditCheckList() string {
	var b strings.Builder
	for _, c := range audit.Checks() {
		b.WriteString(wrapWords(fmt.Sprintf("  %-31s", c.ID), 33, strings.Fields(c.Passes)))
	}
	return b.String()
}

// wrapWords writes words after first, each word after a space, each line up
// to 79 characters; the lines after the first start with indent spaces. It
// ends with a newline.
func wrapWords(first string, indent int, words []string) string {
	var b strings.Builder
	line := first
	for i, word := range words {
		if i > 0 && len(line)+1+len(word) > 79 {
			b.WriteString(line + "\n")
			line = strings.Repeat(" ", indent)
		}
		line += " " + word
	}
	b.WriteString(line + "\n")
	return b.String()
}

// runAudit is "leasectl audit".
func runAudit(ctx context.Context, env *cliEnv, args []string) int {
	fs := newFlagSet("audit")
	common := addCommonFlags(fs, true)
	anchorPath := fs.String("evidence-anchor", "", "compare the evidence chain with this earlier export (`file`)")
	requirePgaudit := fs.Bool("require-pgaudit", false, "report a server whose pgaudit does not log role changes as a finding, not a warning")
	if done, code := parseFlags(env, fs, auditUsage, args); done {
		return code
	}
	if err := common.checkOutput(); err != nil {
		return env.usageError("audit: %s", err)
	}
	var opts []audit.Option
	if *requirePgaudit {
		opts = append(opts, audit.RequireRoleChangeLogging())
	}
	if *anchorPath != "" {
		anchor, done, code := readAnchor(env, "audit", *anchorPath)
		if done {
			return code
		}
		opts = append(opts, audit.WithEvidenceAnchor(anchor))
	}
	pool, err := connectPool(ctx, common.databaseURL)
	if err != nil {
		return env.fail("connect to database", err)
	}
	defer pool.Close()
	// Every host of a multi-host --database-url, for AUDIT-SECOND-PRIMARY
	// (it skips the one the pool reached).
	opts = append(opts, audit.WithHosts(audit.HostConfigs(pool.Config().ConnConfig)...))
	stamped, err := audit.RunStamped(ctx, pool, opts...)
	if err != nil {
		return env.failAudit(err)
	}
	report := stamped.Report
	if common.json() {
		_ = writeJSON(env.stdout, stamped)
	} else {
		printAuditText(env, report)
	}
	if !report.Passed {
		return exitFindings
	}
	return exitOK
}

// printAuditText prints one line per finding, one line per warning
// ("warning: " and the check's identifier), then a summary line.
func printAuditText(env *cliEnv, report audit.Report) {
	failed := 0
	for _, c := range report.Checks {
		for _, f := range c.Findings {
			printf(env.stdout, "%s: %s\n", c.ID, f)
		}
		for _, w := range c.Warnings {
			printf(env.stdout, "warning: %s: %s\n", c.ID, w)
		}
		if !c.Passed {
			failed++
		}
	}
	warnings := ""
	if report.Warnings > 0 {
		warnings = fmt.Sprintf(", %d warning(s)", report.Warnings)
	}
	if report.Passed {
		printf(env.stdout, "audit passed: %d checks, no findings%s\n", len(report.Checks), warnings)
		return
	}
	printf(env.stdout, "audit failed: %d finding(s) in %d of %d checks%s\n", report.Findings, failed, len(report.Checks), warnings)
}

// failAudit prints an audit that could not run, naming the check, and
// returns exitError.
func (e *cliEnv) failAudit(err error) int {
	var checkErr *audit.CheckError
	if errors.As(err, &checkErr) {
		return e.fail("audit database: "+checkErr.Check, checkErr.Err)
	}
	return e.fail("audit database", err)
}
