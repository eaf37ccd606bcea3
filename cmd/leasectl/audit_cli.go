package main

import (
	"errors"
	"flag"
	"fmt"

	"github.com/mightyetl/leasefence/audit"
)

// auditAction is "leasectl audit". Its help lists the checks from
// audit.Checks (package controls), the one place they are named.
var auditAction = &action{name: "audit", usage: help("audit"), output: true, flags: func(fs *flag.FlagSet) runFunc {
	anchorPath := fs.String("evidence-anchor", "", "compare the evidence chain with this earlier export (`file`)")
	requirePgaudit := fs.Bool("require-pgaudit", false, "report a server whose pgaudit does not log role changes as a finding, not a warning")
	return func(c *call) error {
		var opts []audit.Option
		if *requirePgaudit {
			opts = append(opts, audit.RequireRoleChangeLogging())
		}
		if *anchorPath != "" {
			anchor, err := readAnchor(*anchorPath)
			if err != nil {
				return err
			}
			opts = append(opts, audit.WithEvidenceAnchor(anchor))
		}
		pool, err := c.openPool()
		if err != nil {
			return err
		}
		// Every host of a multi-host --database-url, for AUDIT-SECOND-PRIMARY
		// (it skips the one the pool reached).
		opts = append(opts, audit.WithHosts(audit.HostConfigs(pool.Config().ConnConfig)...))
		stamped, err := audit.RunStamped(c.ctx, pool, opts...)
		if err != nil {
			return auditFailed(err)
		}
		_ = c.print(stamped, func() { printAuditText(c, stamped.Report) })
		if !stamped.Report.Passed {
			return errFindings
		}
		return nil
	}
}}

// printAuditText prints one line per finding, one line per warning
// ("warning: " and the check's identifier), then a summary line.
func printAuditText(c *call, report audit.Report) {
	failed := 0
	for _, check := range report.Checks {
		for _, f := range check.Findings {
			c.printf("%s: %s\n", check.ID, f)
		}
		for _, w := range check.Warnings {
			c.printf("warning: %s: %s\n", check.ID, w)
		}
		if !check.Passed {
			failed++
		}
	}
	warnings := ""
	if report.Warnings > 0 {
		warnings = fmt.Sprintf(", %d warning(s)", report.Warnings)
	}
	if report.Passed {
		c.printf("audit passed: %d checks, no findings%s\n", len(report.Checks), warnings)
		return
	}
	c.printf("audit failed: %d finding(s) in %d of %d checks%s\n", report.Findings, failed, len(report.Checks), warnings)
}

// auditFailed is an audit that could not run as a failure that names the
// check.
func auditFailed(err error) error {
	var checkErr *audit.CheckError
	if errors.As(err, &checkErr) {
		return failed("audit database: "+checkErr.Check, checkErr.Err)
	}
	return failed("audit database", err)
}
