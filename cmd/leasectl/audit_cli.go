package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/mightyetl/leasefence/audit"
)

// auditUsage is the help of "leasectl audit"; its list of checks is
// written from audit.Checks (package controls), the one place they are
// named.
var auditUsage = help("audit")

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
