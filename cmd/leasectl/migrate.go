package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5"

	sqlbundle "github.com/mightyetl/leasefence/sql"
)

const migrateUsage = `Usage:
  leasectl migrate up     [--to N] [--database-url URL]
  leasectl migrate down   [--to N] [--drop-roles] [--database-url URL]
  leasectl migrate status [--output text|json] [--database-url URL]

Applies leasefence's migration bundle with tern's migrator. The version is
kept in ` + sqlbundle.VersionTable + `.

  up      migrate to the newest version this leasectl carries (or to --to N).
          On an up-to-date database it changes nothing.
  down    step back one migration, or to --to N. "down --to 0" removes every
          object of the bundle except the cluster-wide roles and the version
          table; add --drop-roles to also drop the bundle's ten roles, by
          exact name: durable_job_producer, durable_job_worker,
          durable_job_operator, durable_job_auditor, durable_job_producer_owner,
          durable_job_claim_owner, durable_job_renewal_owner,
          durable_job_terminal_owner, durable_job_policy_owner and
          durable_job_audit_owner. Other roles (durable_job_worker_eu, say)
          are left alone. Only possible once no database in the cluster
          still uses them.
  status  print the current and the newest version.

The connecting role must be able to create roles and own the bundle's
objects the first time (a superuser, or the database owner with CREATEROLE).
`

// runMigrate is "leasectl migrate".
func runMigrate(ctx context.Context, env *cliEnv, args []string) int {
	if len(args) == 0 {
		return env.usageError("migrate: say up, down or status")
	}
	action := args[0]
	if action == "-h" || action == "-help" || action == "--help" {
		fmt.Fprint(env.stdout, migrateUsage)
		return exitOK
	}
	if action != "up" && action != "down" && action != "status" {
		return env.usageError("migrate: unknown action %q (want up, down or status)", action)
	}
	fs := newFlagSet("migrate " + action)
	common := addCommonFlags(fs, action == "status")
	to := optionalInt{}
	dropRoles := false
	if action != "status" {
		fs.Var(&to, "to", "target `version` (up: default the newest; down: default one step back)")
	}
	if action == "down" {
		fs.BoolVar(&dropRoles, "drop-roles", false, "with --to 0: also drop the bundle's ten cluster-wide roles")
	}
	if done, code := parseFlags(env, fs, migrateUsage, args[1:]); done {
		return code
	}
	if err := common.checkOutput(); err != nil {
		return env.usageError("migrate status: %s", err)
	}
	if action == "status" {
		return migrateStatus(ctx, env, common)
	}
	if to.set && (to.value < 0 || to.value > int(sqlbundle.NewestVersion())) {
		return env.usageError("migrate %s: --to must be between 0 and %d", action, sqlbundle.NewestVersion())
	}
	if dropRoles && (!to.set || to.value != 0) {
		return env.usageError("migrate down: --drop-roles needs --to 0")
	}

	conn, err := connectConn(ctx, common.databaseURL)
	if err != nil {
		return env.fail("connect to database", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	m, err := sqlbundle.NewMigrator(ctx, conn)
	if err != nil {
		return env.fail("prepare migrator", err)
	}
	current, err := m.GetCurrentVersion(ctx)
	if err != nil {
		return env.fail("read current version", err)
	}
	target := int(sqlbundle.NewestVersion())
	if action == "down" {
		target = int(current) - 1
		if current == 0 {
			target = 0
		}
	}
	if to.set {
		target = to.value
	}
	if action == "up" && target < int(current) {
		return env.usageError("migrate up: --to %d is below the current version %d; use migrate down", target, current)
	}
	if action == "down" && target > int(current) {
		return env.usageError("migrate down: --to %d is above the current version %d; use migrate up", target, current)
	}
	m.OnStart = func(sequence int32, name, direction, _ string) {
		printf(env.stdout, "%s %s (%d)\n", direction, name, sequence)
	}
	if target == int(current) {
		printf(env.stdout, "already at version %d; nothing to do\n", current)
	} else {
		if err := m.MigrateTo(ctx, int32(target)); err != nil {
			return env.fail(fmt.Sprintf("migrate %s to version %d", action, target), err)
		}
		printf(env.stdout, "migrated from version %d to version %d\n", current, target)
	}
	if dropRoles {
		dropped, err := dropBundleRoles(ctx, conn)
		if err != nil {
			return env.fail("drop roles", err)
		}
		printf(env.stdout, "dropped %d roles: %v\n", len(dropped), dropped)
	}
	return exitOK
}

// migrateStatus prints the current and newest version without changing
// anything: it reads the version table only when it exists.
func migrateStatus(ctx context.Context, env *cliEnv, common *commonFlags) int {
	conn, err := connectConn(ctx, common.databaseURL)
	if err != nil {
		return env.fail("connect to database", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	current, err := readVersionTable(ctx, conn)
	if err != nil {
		return env.fail("read current version", err)
	}
	newest := sqlbundle.NewestVersion()
	state := "up to date"
	switch {
	case current < newest:
		state = fmt.Sprintf("%d migration(s) to apply: run leasectl migrate up", newest-current)
	case current > newest:
		state = "the database is newer than this leasectl: upgrade leasectl"
	}
	if common.json() {
		_ = writeJSON(env.stdout, map[string]any{
			"current_version": current, "newest_version": newest, "up_to_date": current == newest,
		})
		return exitOK
	}
	printf(env.stdout, "current version: %d\nnewest version:  %d\nstate:           %s\n", current, newest, state)
	return exitOK
}

// readVersionTable returns the version recorded in the bundle's version
// table, 0 when the table does not exist.
func readVersionTable(ctx context.Context, conn *pgx.Conn) (int32, error) {
	var exists bool
	if err := conn.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, sqlbundle.VersionTable).Scan(&exists); err != nil {
		return 0, err
	}
	if !exists {
		return 0, nil
	}
	var version int32
	err := conn.QueryRow(ctx, `SELECT version FROM `+sqlbundle.VersionTable).Scan(&version)
	return version, err
}

// bundleRoleNames are the ten cluster-wide roles the bundle creates (see
// sql/migrations/roles/bundle_roles.sql): the only roles --drop-roles drops.
var bundleRoleNames = []string{
	"durable_job_producer", "durable_job_worker", "durable_job_operator", "durable_job_auditor",
	"durable_job_producer_owner", "durable_job_claim_owner", "durable_job_renewal_owner",
	"durable_job_terminal_owner", "durable_job_policy_owner", "durable_job_audit_owner",
}

// dropBundleRoles drops those of the bundle's ten roles that exist, by exact
// name, in one transaction, and returns their names. Other roles, named
// durable_job_something or not, are left alone. PostgreSQL refuses (and
// nothing is dropped) while any database in the cluster still has objects or
// privileges of one of them; its DETAIL names those databases.
func dropBundleRoles(ctx context.Context, conn *pgx.Conn) ([]string, error) {
	rows, _ := conn.Query(ctx, `SELECT rolname FROM pg_catalog.pg_roles
		WHERE rolname OPERATOR(pg_catalog.=) ANY ($1::pg_catalog.text[]) ORDER BY rolname`, bundleRoleNames)
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, err
	}
	err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		for _, name := range names {
			if _, err := tx.Exec(ctx, "DROP ROLE "+pgx.Identifier{name}.Sanitize()); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return names, nil
}

// optionalInt is an integer flag that remembers whether it was given.
type optionalInt struct {
	value int
	set   bool
}

var _ flag.Value = (*optionalInt)(nil)

// String returns the value, or "" when it was not given.
func (o *optionalInt) String() string {
	if !o.set {
		return ""
	}
	return strconv.Itoa(o.value)
}

// Set parses a whole number.
func (o *optionalInt) Set(s string) error {
	v, err := strconv.Atoi(s)
	if err != nil {
		return errors.New("want a whole number")
	}
	o.value, o.set = v, true
	return nil
}
