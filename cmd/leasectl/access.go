package main

import (
	"context"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mightyetl/leasefence/audit"
	"github.com/mightyetl/leasefence/internal/textfmt"
	sqlbundle "github.com/mightyetl/leasefence/sql"
)

const accessUsage = `Usage:
  leasectl access [--output text|json] [--database-url URL]

Prints an access review of the cluster as of the database time it shows:
every login role, whether it is SUPERUSER, BYPASSRLS or CREATEROLE, and
each leasefence role (durable_job_*) it holds, directly or through another
role, with the role it was granted to and the grantor of that grant. A
superuser bypasses every privilege check and is listed whatever it holds.
Then every table, view, sequence or column privilege in schema durable_jobs
that a login holds by a grant outside the bundle's roles (to the login, to
a role it holds, or to PUBLIC), with the role the grant names.

"leasectl audit" (AUDIT-ACCESS-REVIEW) reports what this review should not
show: a login or PUBLIC holding a table, column or sequence privilege in
schema durable_jobs, a login holding a definer owner role, and a login
holding both durable_job_worker and durable_job_operator (separation of
duties) unless its role comment says
'leasefence: separation of duties accepted: <TICKET-1>'.

Needs only a login: it reads pg_roles, pg_auth_members, pg_class and
pg_attribute.
`

func init() {
	commands["access"] = command{"review which logins hold which leasefence roles", runAccess}
}

// accessRoleJSON is one leasefence role a login holds.
type accessRoleJSON struct {
	Role string `json:"role"`
	// GrantedTo is the role the grant names: the login itself when direct.
	GrantedTo string `json:"granted_to"`
	Direct    bool   `json:"direct"`
	Grantor   string `json:"grantor"`
}

// accessPrivilegeJSON is one privilege on a table, view, sequence or
// column of schema durable_jobs granted outside the bundle's roles.
type accessPrivilegeJSON struct {
	Privilege string `json:"privilege"`
	On        string `json:"on"`
	// GrantedTo is the role the grant names: the login itself when direct,
	// or PUBLIC.
	GrantedTo string `json:"granted_to"`
}

// accessLoginJSON is one login and what it holds.
type accessLoginJSON struct {
	Login      string                `json:"login"`
	Superuser  bool                  `json:"superuser"`
	BypassRLS  bool                  `json:"bypassrls"`
	CreateRole bool                  `json:"createrole"`
	Roles      []accessRoleJSON      `json:"leasefence_roles"`
	Privileges []accessPrivilegeJSON `json:"table_privileges"`
}

// accessReportJSON is the whole review.
type accessReportJSON struct {
	AsOf   string            `json:"as_of"`
	Logins []accessLoginJSON `json:"logins"`
	// Public is what PUBLIC, so every login, holds in the schema.
	Public []accessPrivilegeJSON `json:"public_table_privileges"`
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
	tx, err := pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return env.fail("read roles", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	report, err := readAccess(ctx, tx)
	if err != nil {
		return env.fail("read roles", err)
	}
	if common.json() {
		_ = writeJSON(env.stdout, report)
		return exitOK
	}
	printf(env.stdout, "access review as of %s (database time)\n", report.AsOf)
	tw := newTable(env.stdout)
	printf(tw, "LOGIN\tATTRIBUTES\tLEASEFENCE ROLE\tGRANTED TO\tGRANTOR\n")
	for _, l := range report.Logins {
		var attrs []string
		for _, a := range []struct {
			on   bool
			name string
		}{{l.Superuser, "SUPERUSER"}, {l.BypassRLS, "BYPASSRLS"}, {l.CreateRole, "CREATEROLE"}} {
			if a.on {
				attrs = append(attrs, a.name)
			}
		}
		attributes := strings.Join(attrs, ",")
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
	for _, l := range append([]accessLoginJSON{{Login: "PUBLIC", Privileges: report.Public}}, report.Logins...) {
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

// readAccess reads every login and the leasefence roles it holds in one
// snapshot.
func readAccess(ctx context.Context, tx pgx.Tx) (accessReportJSON, error) {
	var asOf time.Time
	if err := tx.QueryRow(ctx, `SELECT pg_catalog.clock_timestamp()`).Scan(&asOf); err != nil {
		return accessReportJSON{}, err
	}
	report := accessReportJSON{AsOf: textfmt.Time(asOf), Logins: []accessLoginJSON{}}
	rows, _ := tx.Query(ctx, `
		SELECT l.rolname::text, l.rolsuper, l.rolbypassrls, l.rolcreaterole
		FROM pg_catalog.pg_roles l WHERE l.rolcanlogin ORDER BY l.rolname`)
	logins, err := pgx.CollectRows(rows, pgx.RowToStructByPos[struct {
		Login                            string
		Superuser, BypassRLS, CreateRole bool
	}])
	if err != nil {
		return accessReportJSON{}, err
	}
	index := map[string]int{}
	for _, l := range logins {
		index[l.Login] = len(report.Logins)
		report.Logins = append(report.Logins, accessLoginJSON{Login: l.Login, Superuser: l.Superuser, BypassRLS: l.BypassRLS,
			CreateRole: l.CreateRole, Roles: []accessRoleJSON{}, Privileges: []accessPrivilegeJSON{}})
	}
	bundleRoles := append(append([]string{}, sqlbundle.RuntimeRoles...), sqlbundle.DefinerOwnerRoles...)
	rows, _ = tx.Query(ctx, audit.RoleClosureSQL+`
		SELECT DISTINCT l.rolname::text, r.rolname::text, v.rolname::text, h.via = h.login,
		       COALESCE(g.rolname::text, '')
		FROM held h
		JOIN pg_catalog.pg_roles l ON l.oid = h.login
		JOIN pg_catalog.pg_roles r ON r.oid = h.roleid
		JOIN pg_catalog.pg_roles v ON v.oid = h.via
		LEFT JOIN pg_catalog.pg_roles g ON g.oid = h.grantor
		WHERE r.rolname = ANY ($1::text[])
		ORDER BY 1, 2, 4 DESC, 3, 5`, bundleRoles)
	type held struct {
		Login string
		accessRoleJSON
	}
	holdings, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (held, error) {
		var h held
		err := row.Scan(&h.Login, &h.Role, &h.GrantedTo, &h.Direct, &h.Grantor)
		return h, err
	})
	if err != nil {
		return accessReportJSON{}, err
	}
	for _, h := range holdings {
		i := index[h.Login]
		report.Logins[i].Roles = append(report.Logins[i].Roles, h.accessRoleJSON)
	}
	// Privileges granted to PUBLIC (login ''), to a login, or to a role a
	// login holds, outside the bundle's own roles.
	rows, _ = tx.Query(ctx, audit.RoleClosureSQL+`, `+audit.SchemaGrantsCTE+`
		SELECT DISTINCT COALESCE(l.rolname::text, ''), g.priv, g.relname, COALESCE(r.rolname::text, 'PUBLIC')
		FROM grants g
		LEFT JOIN pg_catalog.pg_roles r ON r.oid = g.grantee
		LEFT JOIN pg_catalog.pg_roles l ON g.grantee <> 0
		     AND (l.oid = g.grantee OR l.oid IN (SELECT h.login FROM held h WHERE h.roleid = g.grantee))
		WHERE g.grantee <> g.relowner AND (g.grantee = 0 OR r.rolname <> ALL ($1::text[]))
		  AND (g.grantee = 0 OR l.rolcanlogin)
		ORDER BY 1, 3, 2, 4`, bundleRoles)
	type granted struct {
		Login string
		accessPrivilegeJSON
	}
	privileges, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (granted, error) {
		var g granted
		err := row.Scan(&g.Login, &g.Privilege, &g.On, &g.GrantedTo)
		return g, err
	})
	if err != nil {
		return accessReportJSON{}, err
	}
	report.Public = []accessPrivilegeJSON{}
	for _, p := range privileges {
		if p.Login == "" {
			report.Public = append(report.Public, p.accessPrivilegeJSON)
			continue
		}
		i := index[p.Login]
		report.Logins[i].Privileges = append(report.Logins[i].Privileges, p.accessPrivilegeJSON)
	}
	return report, nil
}
