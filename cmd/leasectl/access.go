package main

import (
	"strings"

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
		c.printf("access review as of %s (database time), body digest %s\n", report.AsOf, report.BodyDigest)
		var roles [][]any
		for _, l := range report.Logins {
			attributes := strings.Join(l.Attributes(), ",")
			if attributes == "" {
				attributes = "-"
			}
			if len(l.Roles) == 0 {
				roles = append(roles, []any{l.Login, attributes, "-", "-", "-"})
			}
			for _, r := range l.Roles {
				roles = append(roles, []any{l.Login, attributes, r.Role, r.GrantedTo, r.Grantor})
			}
		}
		table(c.env.stdout, "LOGIN\tATTRIBUTES\tLEASEFENCE ROLE\tGRANTED TO\tGRANTOR", roles, cells)
		c.printf("\nprivileges in schema durable_jobs granted outside the bundle's roles:\n")
		var privileges [][]any
		for _, l := range append([]audit.AccessLogin{{Login: "PUBLIC", Privileges: report.Public}}, report.Logins...) {
			for _, p := range l.Privileges {
				privileges = append(privileges, []any{l.Login, p.Privilege, p.On, p.GrantedTo})
			}
		}
		if len(privileges) == 0 {
			privileges = [][]any{{"-", "-", "-", "-"}}
		}
		table(c.env.stdout, "LOGIN\tPRIVILEGE\tON\tGRANTED TO", privileges, cells)
	})
}}
