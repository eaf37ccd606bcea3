package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strconv"
	"time"

	sqlbundle "github.com/mightyetl/leasefence/sql"
)

var migrateUsage = help("migrate")

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
