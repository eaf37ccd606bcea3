package cli

import (
	"errors"
	"flag"
	"fmt"
	"strconv"
	"time"

	sqlbundle "github.com/mightyetl/leasefence/sql"
)

// migrateMove is "leasectl migrate up" or "migrate down".
func migrateMove(direction sqlbundle.Direction) *action {
	return &action{name: "migrate " + string(direction), flags: func(fs *flag.FlagSet) runFunc {
		var to *int // nil: not given
		fs.Func("to", "target `version` (up: default the newest; down: default one step back)", func(s string) error {
			v, err := strconv.Atoi(s)
			if err != nil {
				return errors.New("want a whole number")
			}
			to = &v
			return nil
		})
		change := addChangeFlags(fs, "why, e.g. the change ticket; recorded in each migration's evidence")
		lockTimeout := fs.Duration("lock-timeout", defaultLockTimeout, "longest wait for the migration lock (at least 1ms)")
		var dropRoles, discardEvidence bool
		var evidenceExport string
		if direction == sqlbundle.Down {
			fs.BoolVar(&dropRoles, "drop-roles", false, "with --to 0: also drop the bundle's own cluster-wide roles, by exact name")
			fs.BoolVar(&discardEvidence, "discard-evidence", false, "with --evidence-export: allow a downgrade that erases control evidence")
			fs.StringVar(&evidenceExport, "evidence-export", "", "with --discard-evidence: write every evidence record to this new `file` (JSON) first")
		}
		return func(c *call) error {
			var version *int32 // nil: the default of the direction
			if to != nil {
				if *to < 0 || *to > int(sqlbundle.NewestVersion()) {
					return usagef("--to must be between 0 and %d", sqlbundle.NewestVersion())
				}
				version = new(int32(*to))
			}
			if dropRoles && (to == nil || *to != 0) {
				return usagef("--drop-roles needs --to 0")
			}
			if change.reason != "" {
				if err := sqlbundle.CheckChangeReason(change.reason); err != nil {
					return usagef("--reason %s", err)
				}
			}
			if discardEvidence != (evidenceExport != "") {
				return usagef("--discard-evidence and --evidence-export PATH go together")
			}
			if *lockTimeout < time.Millisecond {
				return usagef("--lock-timeout must be at least 1ms, not %s", *lockTimeout)
			}
			conn, err := c.openConn()
			if err != nil {
				return err
			}
			// The migration lock, the lock timeout of every migration, the
			// change record and the evidence guard are the migrator's rules.
			m, err := sqlbundle.NewMigrator(c.ctx, conn, sqlbundle.WithLockTimeout(*lockTimeout),
				sqlbundle.WithChangeRecord(change.reason, change.ticket, change.approver), sqlbundle.WithEvidenceGuard())
			var lockErr *sqlbundle.LockBusyError
			switch {
			case errors.Is(err, sqlbundle.ErrStandby) || errors.As(err, &lockErr):
				return failed(c.name, err)
			case err != nil:
				return failed("prepare migrator", err)
			}
			// Which version, and whether the run erases evidence, is the
			// migrator's plan.
			plan, err := m.Plan(c.ctx, direction, version)
			current, target := plan.Current, plan.Target
			var wrongWay *sqlbundle.DirectionError
			switch {
			case errors.As(err, &wrongWay) && direction == sqlbundle.Up:
				return usagef("--to %d is below the current version %d; use migrate down", wrongWay.Target, wrongWay.Current)
			case errors.As(err, &wrongWay):
				return usagef("--to %d is above the current version %d; use migrate up", wrongWay.Target, wrongWay.Current)
			case err != nil:
				return failed("read current version", err)
			case evidenceExport != "" && !plan.TakesExport():
				return usagef("--discard-evidence and --evidence-export are for a downgrade that erases control "+
					"evidence; from version %d to %d none does", current, target)
			}
			if discardEvidence && len(plan.Erasing) > 0 {
				count, err := m.ExportEvidence(c.ctx, evidenceExport)
				if err != nil {
					return failed("export control evidence", err)
				}
				if count > 0 {
					c.printf("exported %d control evidence records to %s\n", count, evidenceExport)
				}
			}
			m.OnStart = func(sequence int32, name, direction, _ string) {
				c.printf("%s %s (%d)\n", direction, name, sequence)
			}
			if target == current {
				c.printf("already at version %d; nothing to do\n", current)
			} else {
				var erasure *sqlbundle.EvidenceErasureError
				err := m.MigrateTo(c.ctx, target)
				if errors.As(err, &erasure) {
					err = fmt.Errorf("%w; export them first with --discard-evidence --evidence-export PATH", err)
				}
				if err != nil {
					return failed(fmt.Sprintf("%s to version %d", c.name, target), err)
				}
				c.printf("migrated from version %d to version %d\n", current, target)
			}
			if dropRoles {
				dropped, err := m.DropRoles(c.ctx)
				if err != nil {
					return failed("drop roles", err)
				}
				c.printf("dropped %d roles: %v\n", len(dropped), dropped)
			}
			return nil
		}
	}}
}

// migrateStatus is "leasectl migrate status": the current and newest
// version, without changing anything.
var migrateStatus = &action{name: "migrate status", output: true, run: func(c *call) error {
	conn, err := c.openConn()
	if err != nil {
		return err
	}
	status, err := sqlbundle.ReadStatus(c.ctx, conn)
	var readErr *sqlbundle.StatusReadError
	switch {
	case errors.Is(err, sqlbundle.ErrStandby):
		return failed("migrate status", err)
	case errors.As(err, &readErr):
		return failed("read the functions", readErr.Err)
	case err != nil:
		return failed("read current version", err)
	}
	current, newest, drift := status.Current, status.Newest, status.Drift
	state := "up to date"
	switch {
	case current < newest:
		state = fmt.Sprintf("%d migration(s) to apply: run leasectl migrate up", newest-current)
	case current > newest:
		state = "the database is newer than this leasectl: upgrade leasectl"
	}
	_ = c.print(map[string]any{"current_version": current, "newest_version": newest, "up_to_date": current == newest,
		"function_drift": drift}, func() {
		c.printf("current version: %d\nnewest version:  %d\nstate:           %s\n", current, newest, state)
		switch {
		case current == 0 || current > newest:
		case len(drift) == 0:
			c.printf("functions:       as version %d installs them\n", current)
		default:
			c.printf("functions:       %d differ from what version %d installs (see leasectl audit, AUDIT-FUNCTION-DRIFT):\n", len(drift), current)
			for _, line := range drift {
				c.printf("  - %s\n", line)
			}
		}
	})
	if len(drift) > 0 {
		return errFindings
	}
	return nil
}}

// defaultLockTimeout is how long migrate up and down wait for the migration
// lock unless --lock-timeout says otherwise.
const defaultLockTimeout = 60 * time.Second
