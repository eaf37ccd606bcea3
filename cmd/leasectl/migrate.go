package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strconv"
	"strings"
	"time"

	sqlbundle "github.com/mightyetl/leasefence/sql"
)

var migrateUsage = `Usage:
  leasectl migrate up     [--to N] [--reason TEXT] [--ticket T] [--approver LOGIN]
                          [--lock-timeout DURATION] [--database-url URL]
  leasectl migrate down   [--to N] [--reason TEXT] [--ticket T] [--approver LOGIN] [--drop-roles]
                          [--discard-evidence --evidence-export PATH] [--lock-timeout DURATION] [--database-url URL]
  leasectl migrate status [--output text|json] [--database-url URL]

Applies leasefence's migration bundle with tern's migrator. The version is
kept in ` + sqlbundle.VersionTable + `.

  up      migrate to the newest version this leasectl carries (or to --to N).
          On an up-to-date database it changes nothing.
  down    step back one migration, or to --to N. "down --to 0" removes every
          object of the bundle except the cluster-wide roles and the version
` + wrapWords("         ", 9, append(strings.Fields("table; add --drop-roles to also drop the bundle's own roles, by exact name:"),
	strings.Split(strings.Join(append(append([]string{}, sqlbundle.RuntimeRoles...), sqlbundle.DefinerOwnerRoles...), ", ")+".", " ")...)) +
	`          Other roles (durable_job_worker_eu, say) are left alone. Only
          possible once no database in the cluster still uses them.
          A downgrade whose migrations erase control evidence (to 0 erases
          every record; below the evidence-chain migration, every record's
          ticket, approver and chain hashes) is refused while any record
          exists, unless --discard-evidence is given together with
          --evidence-export PATH. leasectl then first writes every record
          (with its chain hashes) and the chain head as JSON to PATH, which
          must not exist yet, and only then migrates down. Which migrations
          erase evidence is read from their down SQL.
  status  print the current and the newest version, and whether every
          function is what the current version installs (a body replaced by
          hand or a skipped migration is listed, and the exit code is 2).
          It also runs as a login granted durable_job_auditor or
          durable_job_operator (the version then comes from the newest
          migration record of the control evidence).

--reason is the operator's reason, recorded in the control evidence of each
migration it runs (the evidence-chain migration and later ones read it; older ones record
their fixed text). It must be plain text that does not look like personal
data or a secret, like every change reason; default "leasefence bundle
migration" (up) and "leasefence bundle migration rolled back" (down).
--ticket and --approver are recorded with the reason in the evidence of
every migration from version 26 on, and checked against the change control
in force: where it requires an approver (another login holding
durable_job_operator), a migration without one is refused and nothing
changes.

up and down first take the migration lock, the advisory lock tern's migrator
holds while it migrates (so two migrations never run at once). Anyone who can
log in can take it, so leasectl waits for it at most --lock-timeout (default
60s) and then fails, naming the process id and role of the session that holds
it (see pg_locks and pg_stat_activity, or pg_terminate_backend). Every lock a
migration waits for after that is bounded by --lock-timeout too; a wait that
runs out fails that migration, which changes nothing.

Against a standby (a server in recovery) up, down and status say so and exit
1: connect to the primary, for example with target_session_attrs=read-write
in a multi-host URL.

For up and down the connecting role must be a superuser (for example
postgres). migrate refuses any other role, a ` + sqlbundle.VersionTable + ` that is not the plain
table it creates, and pre-existing durable_job_* roles that can log in, are
elevated or (the *_owner roles) have members, before changing anything.
`

// runMigrate is "leasectl migrate".
func runMigrate(ctx context.Context, env *cliEnv, args []string) int {
	action, rest, done, code := readAction(env, "migrate", migrateUsage, args, "up", "down", "status")
	if done {
		return code
	}
	fs := newFlagSet("migrate " + action)
	common := addCommonFlags(fs, action == "status")
	to := optionalInt{}
	dropRoles := false
	if action != "status" {
		fs.Var(&to, "to", "target `version` (up: default the newest; down: default one step back)")
	}
	if action == "down" {
		fs.BoolVar(&dropRoles, "drop-roles", false, "with --to 0: also drop the bundle's own cluster-wide roles, by exact name")
	}
	reason := ""
	discardEvidence := false
	evidenceExport := ""
	var record changeRecordFlags
	if action != "status" {
		fs.StringVar(&reason, "reason", "", "why, e.g. the change ticket; recorded in each migration's evidence")
		record = addChangeRecordFlags(fs)
	}
	if action == "down" {
		fs.BoolVar(&discardEvidence, "discard-evidence", false, "with --evidence-export: allow a downgrade that erases control evidence")
		fs.StringVar(&evidenceExport, "evidence-export", "", "with --discard-evidence: write every evidence record to this new `file` (JSON) first")
	}
	lockTimeout := defaultLockTimeout
	if action != "status" {
		fs.DurationVar(&lockTimeout, "lock-timeout", defaultLockTimeout, "longest wait for the migration lock (at least 1ms)")
	}
	if done, code := parseFlags(env, fs, migrateUsage, rest); done {
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
	if reason != "" {
		if err := sqlbundle.CheckChangeReason(reason); err != nil {
			return env.usageError("migrate %s: --reason %s", action, err)
		}
	}
	if discardEvidence != (evidenceExport != "") {
		return env.usageError("migrate down: --discard-evidence and --evidence-export PATH go together")
	}
	if lockTimeout < time.Millisecond {
		return env.usageError("migrate %s: --lock-timeout must be at least 1ms, not %s", action, lockTimeout)
	}

	conn, err := connectConn(ctx, common.databaseURL)
	if err != nil {
		return env.fail("connect to database", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	// The migration lock, the lock timeout of every migration, the change
	// record and the evidence guard are the migrator's rules.
	m, err := sqlbundle.NewMigrator(ctx, conn, sqlbundle.WithLockTimeout(lockTimeout),
		sqlbundle.WithChangeRecord(reason, *record.ticket, *record.approver), sqlbundle.WithEvidenceGuard())
	var lockErr *sqlbundle.LockBusyError
	switch {
	case errors.Is(err, sqlbundle.ErrStandby) || errors.As(err, &lockErr):
		return env.fail("migrate "+action, err)
	case err != nil:
		return env.fail("prepare migrator", err)
	}
	current, err := m.GetCurrentVersion(ctx)
	if err != nil {
		return env.fail("read current version", err)
	}
	target := int(sqlbundle.NewestVersion())
	if action == "down" {
		target = max(int(current)-1, 0)
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
	erasing := m.EvidenceErasingMigrations(current, int32(target))
	if evidenceExport != "" && len(erasing) == 0 && target != 0 {
		return env.usageError("migrate down: --discard-evidence and --evidence-export are for a downgrade that erases control "+
			"evidence; from version %d to %d none does", current, target)
	}
	if discardEvidence && len(erasing) > 0 {
		count, err := m.ExportEvidence(ctx, evidenceExport)
		if err != nil {
			return env.fail("export control evidence", err)
		}
		if count > 0 {
			printf(env.stdout, "exported %d control evidence records to %s\n", count, evidenceExport)
		}
	}
	m.OnStart = func(sequence int32, name, direction, _ string) {
		printf(env.stdout, "%s %s (%d)\n", direction, name, sequence)
	}
	if target == int(current) {
		printf(env.stdout, "already at version %d; nothing to do\n", current)
	} else {
		var erasure *sqlbundle.EvidenceErasureError
		err := m.MigrateTo(ctx, int32(target))
		if errors.As(err, &erasure) {
			err = fmt.Errorf("%w; export them first with --discard-evidence --evidence-export PATH", err)
		}
		if err != nil {
			return env.fail(fmt.Sprintf("migrate %s to version %d", action, target), err)
		}
		printf(env.stdout, "migrated from version %d to version %d\n", current, target)
	}
	if dropRoles {
		dropped, err := m.DropRoles(ctx)
		if err != nil {
			return env.fail("drop roles", err)
		}
		printf(env.stdout, "dropped %d roles: %v\n", len(dropped), dropped)
	}
	return exitOK
}

// migrateStatus prints the current and newest version without changing
// anything.
func migrateStatus(ctx context.Context, env *cliEnv, common *commonFlags) int {
	conn, err := connectConn(ctx, common.databaseURL)
	if err != nil {
		return env.fail("connect to database", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	status, err := sqlbundle.ReadStatus(ctx, conn)
	var readErr *sqlbundle.StatusReadError
	switch {
	case errors.Is(err, sqlbundle.ErrStandby):
		return env.fail("migrate status", err)
	case errors.As(err, &readErr):
		return env.fail("read the functions", readErr.Err)
	case err != nil:
		return env.fail("read current version", err)
	}
	current, newest, drift := status.Current, status.Newest, status.Drift
	state := "up to date"
	switch {
	case current < newest:
		state = fmt.Sprintf("%d migration(s) to apply: run leasectl migrate up", newest-current)
	case current > newest:
		state = "the database is newer than this leasectl: upgrade leasectl"
	}
	code := exitOK
	if len(drift) > 0 {
		code = exitFindings
	}
	if common.json() {
		_ = writeJSON(env.stdout, map[string]any{
			"current_version": current, "newest_version": newest, "up_to_date": current == newest,
			"function_drift": drift,
		})
		return code
	}
	printf(env.stdout, "current version: %d\nnewest version:  %d\nstate:           %s\n", current, newest, state)
	switch {
	case current == 0 || current > newest:
	case len(drift) == 0:
		printf(env.stdout, "functions:       as version %d installs them\n", current)
	default:
		printf(env.stdout, "functions:       %d differ from what version %d installs (see leasectl audit, AUDIT-FUNCTION-DRIFT):\n", len(drift), current)
		for _, line := range drift {
			printf(env.stdout, "  - %s\n", line)
		}
	}
	return code
}

// defaultLockTimeout is how long migrate up and down wait for the migration
// lock unless --lock-timeout says otherwise.
const defaultLockTimeout = 60 * time.Second

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
