package main

import (
	"context"
	"strings"

	"github.com/mightyetl/leasefence/audit"
)

var accessUsage = help("access")

func init() {
	commands["access"] = command{"review which logins hold which leasefence roles", runAccess}
}

// runAccess is "leasectl access".
func runAccess(ctx context.Context, env *cliEnv, args []string) int {
	fs := newFlagSet("access")
	common := addCommonFlags(fs, true)
	if done, code := parseFlags(env, fs, accessUsage, args); done {
		return code
	}
	if err := common.checkOutput(); err != nil {
		return env.usageError("access: %s", err)
	}
	pool, err := connectPool(ctx, common.databaseURL)
	if err != nil {
		return env.fail("connect to database", err)
	}
	defer pool.Close()
	report, err := audit.ReviewAccess(ctx, pool)
	if err != nil {
		return env.fail("read roles", err)
	}
	if common.json() {
		_ = writeJSON(env.stdout, report)
		return exitOK
	}
	printf(env.stdout, "access review as of %s (database time), body digest %s\n", report.AsOf, report.BodyDigest)
	tw := newTable(env.stdout)
	printf(tw, "LOGIN\tATTRIBUTES\tLEASEFENCE ROLE\tGRANTED TO\tGRANTOR\n")
	for _, l := range report.Logins {
		attributes := strings.Join(l.Attributes(), ",")
		if attributes == "" {
			attributes = "-"
		}
		if len(l.Roles) == 0 {
			printf(tw, "%s\t%s\t-\t-\t-\n", l.Login, attributes)
		}
		for _, r := range l.Roles {
			printf(tw, "%s\t%s\t%s\t%s\t%s\n", l.Login, attributes, r.Role, r.GrantedTo, r.Grantor)
		}
	}
	_ = tw.Flush()
	printf(env.stdout, "\nprivileges in schema durable_jobs granted outside the bundle's roles:\n")
	tw = newTable(env.stdout)
	printf(tw, "LOGIN\tPRIVILEGE\tON\tGRANTED TO\n")
	rows := 0
	for _, l := range append([]audit.AccessLogin{{Login: "PUBLIC", Privileges: report.Public}}, report.Logins...) {
		for _, p := range l.Privileges {
			printf(tw, "%s\t%s\t%s\t%s\n", l.Login, p.Privilege, p.On, p.GrantedTo)
			rows++
		}
	}
	if rows == 0 {
		printf(tw, "-\t-\t-\t-\n")
	}
	_ = tw.Flush()
	return exitOK
}
