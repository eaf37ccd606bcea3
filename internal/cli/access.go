package cli

import (
	"io"

	"github.com/mightyetl/leasefence/audit"
)

// accessAction is "leasectl access".
var accessAction = &action{name: "access", usage: help("access"), output: true, run: func(c *call) error {
	pool, err := c.openPool()
	if err != nil {
		return err
	}
	report, err := audit.ReviewAccess(c.ctx, pool)
	if err != nil {
		return failed("read roles", err)
	}
	return c.print(report, func() {
		// Written as it is: Text shows every name through textfmt.Visible,
		// as printf does.
		_, _ = io.WriteString(c.env.stdout, report.Text())
	})
}}
