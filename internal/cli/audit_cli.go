package cli

import (
	"errors"
	"flag"
	"io"

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
		_ = c.print(stamped, func() {
			// Written as it is: Text shows every finding through
			// textfmt.Visible, as printf does.
			_, _ = io.WriteString(c.env.stdout, stamped.Report.Text())
		})
		if !stamped.Report.Passed {
			return errFindings
		}
		return nil
	}
}}

// auditFailed is an audit that could not run as a failure that names the
// check.
func auditFailed(err error) error {
	var checkErr *audit.CheckError
	if errors.As(err, &checkErr) {
		return failed("audit database: "+checkErr.Check, checkErr.Err)
	}
	return failed("audit database", err)
}
