package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/mightyetl/leasefence/internal/textfmt"
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
	if err := refuseStandby(ctx, conn); err != nil {
		return env.fail("migrate "+action, err)
	}
	// The migrator takes the lock again (a session may hold an advisory
	// lock more than once) and so never waits; closing the connection
	// releases whatever is left.
	if err := lockMigrations(ctx, conn, lockTimeout); err != nil {
		return env.fail("migrate "+action, err)
	}
	// Every lock a migration then waits for is bounded the same way: a
	// table behind an idle transaction, or the evidence-order key that the
	// migrations before 024 take as an advisory lock, which any login can
	// hold (issue 34). A wait that runs out fails the migration (55P03),
	// which rolls back and leaves the version where it was.
	if _, err := conn.Exec(ctx, fmt.Sprintf("SET lock_timeout = %d", lockTimeout.Milliseconds())); err != nil {
		return env.fail("migrate "+action, err)
	}
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
	// A downgrade runs the down parts of the migrations above target; those
	// that erase evidence are read from their SQL (migrate_rule.go).
	erasing := evidenceErasingMigrations(m.Migrations, current, int32(target))
	if evidenceExport != "" && len(erasing) == 0 && target != 0 {
		return env.usageError("migrate down: --discard-evidence and --evidence-export are for a downgrade that erases control "+
			"evidence; from version %d to %d none does", current, target)
	}
	if len(erasing) > 0 {
		count, err := evidenceCount(ctx, conn)
		if err != nil {
			return env.fail("count control evidence", err)
		}
		if count > 0 && !discardEvidence {
			return env.fail(fmt.Sprintf("migrate down to version %d", target), fmt.Errorf(
				"refused: it would erase control evidence of %d records (reverting %s drops records or their fields); "+
					"export them first with --discard-evidence --evidence-export PATH", count, strings.Join(erasing, ", ")))
		}
		if count > 0 {
			if err := exportEvidence(ctx, conn, evidenceExport, current); err != nil {
				return env.fail("export control evidence", err)
			}
			printf(env.stdout, "exported %d control evidence records to %s\n", count, evidenceExport)
		}
	}
	// The reason, ticket and approver each migration records, set in its
	// own transaction: tern runs RESET ALL after every migration, so a
	// session setting would reach the first migration of a run only (every
	// later one recorded the fixed text and no ticket before).
	m.OnStart = func(sequence int32, name, direction, _ string) {
		printf(env.stdout, "%s %s (%d)\n", direction, name, sequence)
		// An error here aborts the migration's transaction, and tern reports it.
		_, _ = conn.Exec(ctx, `SELECT pg_catalog.set_config('leasefence.migration_reason', $1, true),
			pg_catalog.set_config('leasefence.migration_ticket', $2, true),
			pg_catalog.set_config('leasefence.migration_approver', $3, true)`, reason, *record.ticket, *record.approver)
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
	if err := refuseStandby(ctx, conn); err != nil {
		return env.fail("migrate status", err)
	}
	current, err := readStatusVersion(ctx, conn)
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
	drift := []string{}
	if current > 0 && current <= newest {
		live, err := sqlbundle.FunctionDigests(ctx, conn)
		if err != nil {
			return env.fail("read the functions", err)
		}
		drift = append(drift, sqlbundle.BundleManifest().Drift(current, live)...)
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

// errStandby is what migrate says on a standby, where nothing can be
// migrated and the version it shows is only as far as it has replayed.
var errStandby = errors.New("the server is a standby (pg_is_in_recovery() is true): migrations run on the primary; " +
	"connect to it, for example with every host of the cluster in the URL and target_session_attrs=read-write")

// refuseStandby returns errStandby when conn's server is in recovery.
func refuseStandby(ctx context.Context, conn *pgx.Conn) error {
	var standby bool
	if err := conn.QueryRow(ctx, `SELECT pg_catalog.pg_is_in_recovery()`).Scan(&standby); err != nil || !standby {
		return err
	}
	return errStandby
}

// bundleRoleNames are the cluster-wide roles the bundle creates (see
// sql/roles/bundle_roles.sql and the migrations that add owners): the only roles --drop-roles drops.
var bundleRoleNames = append(append([]string{}, sqlbundle.RuntimeRoles...), sqlbundle.DefinerOwnerRoles...)

// dropBundleRoles drops those of the bundle's roles that exist, by exact
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

// migrationLockKey is the advisory lock key tern's migrator takes
// (lockNum in github.com/jackc/tern/v2/migrate) while it migrates.
const migrationLockKey int64 = 9628173550095224

// sqlStateLockNotAvailable is the SQLSTATE of a lock wait that ran past
// lock_timeout.
const sqlStateLockNotAvailable = "55P03"

// defaultLockTimeout is how long migrate up and down wait for the migration
// lock unless --lock-timeout says otherwise.
const defaultLockTimeout = 60 * time.Second

// lockMigrations takes the migration lock for the session of conn, waiting
// at most timeout: pg_advisory_lock honours lock_timeout, which is set for
// this one transaction only (a session-level advisory lock outlives the
// transaction that took it). When the wait times out, the error names the
// process id and role of the session that holds the lock, never its query.
func lockMigrations(ctx context.Context, conn *pgx.Conn, timeout time.Duration) error {
	// Without arguments pgx sends this as one simple query; both numbers
	// are leasectl's own.
	err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, fmt.Sprintf("SET LOCAL lock_timeout = %d; SELECT pg_catalog.pg_advisory_lock(%d)",
			timeout.Milliseconds(), migrationLockKey))
		return err
	})
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != sqlStateLockNotAvailable {
		return err
	}
	// A bigint advisory key is shown in pg_locks as classid (its high 32
	// bits), objid (its low 32 bits) and objsubid 1, in the database where
	// it was taken. Should this read fail, the message says only that
	// another session holds the lock.
	rows, _ := conn.Query(ctx, `SELECT l.pid, COALESCE(a.usename::pg_catalog.text, '')
		FROM pg_catalog.pg_locks l LEFT JOIN pg_catalog.pg_stat_activity a ON a.pid OPERATOR(pg_catalog.=) l.pid
		WHERE l.locktype OPERATOR(pg_catalog.=) 'advisory' AND l.granted
		  AND l.classid::pg_catalog.int8 OPERATOR(pg_catalog.=) $1 AND l.objid::pg_catalog.int8 OPERATOR(pg_catalog.=) $2
		  AND l.objsubid OPERATOR(pg_catalog.=) 1
		  AND l.database OPERATOR(pg_catalog.=) (SELECT oid FROM pg_catalog.pg_database
		                                         WHERE datname OPERATOR(pg_catalog.=) pg_catalog.current_database())
		ORDER BY l.pid`, migrationLockKey>>32, migrationLockKey&0xffffffff)
	type holder struct {
		PID  int32
		Role string
	}
	holders, _ := pgx.CollectRows(rows, pgx.RowToStructByPos[holder])
	var who []string
	for _, h := range holders {
		who = append(who, fmt.Sprintf("pid %d (role %s)", h.PID, strconv.Quote(h.Role)))
	}
	return fmt.Errorf("the migration lock (advisory lock %d) was not free within %s: held by %s; "+
		"wait for that session, or end it with pg_terminate_backend(pid), and try again", migrationLockKey,
		textfmt.Duration(timeout), cmp.Or(strings.Join(who, ", "), "another session"))
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

// evidenceCount is how many control evidence records the database holds (0
// when the table does not exist).
func evidenceCount(ctx context.Context, conn *pgx.Conn) (int64, error) {
	var count int64
	var exists bool
	if err := conn.QueryRow(ctx, `SELECT pg_catalog.to_regclass('durable_jobs.control_evidence_record') IS NOT NULL`).Scan(&exists); err != nil || !exists {
		return 0, err
	}
	err := conn.QueryRow(ctx, `SELECT pg_catalog.count(*) FROM durable_jobs.control_evidence_record`).Scan(&count)
	return count, err
}

// evidenceExportJSON is what --evidence-export writes.
type evidenceExportJSON struct {
	SchemaVersion    int               `json:"schema_version"`
	ExportedAt       string            `json:"exported_at"`
	Database         string            `json:"database"`
	MigrationVersion int32             `json:"migration_version"`
	RecordCount      int               `json:"record_count"`
	ChainHead        *string           `json:"chain_head"`
	Records          []json.RawMessage `json:"records"`
}

// exportEvidence writes every control evidence record, oldest first, to
// path, which must not exist, and syncs it to disk.
func exportEvidence(ctx context.Context, conn *pgx.Conn, path string, version int32) error {
	out := evidenceExportJSON{SchemaVersion: 1, MigrationVersion: version, Records: []json.RawMessage{}}
	var at time.Time
	if err := conn.QueryRow(ctx, `SELECT pg_catalog.clock_timestamp(), pg_catalog.current_database()`).Scan(&at, &out.Database); err != nil {
		return err
	}
	out.ExportedAt = textfmt.Time(at)
	rows, _ := conn.Query(ctx, `SELECT pg_catalog.to_jsonb(e)::text FROM durable_jobs.control_evidence_record e ORDER BY e.evidence_record_id`)
	records, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return err
	}
	for _, r := range records {
		out.Records = append(out.Records, json.RawMessage(r))
	}
	out.RecordCount = len(out.Records)
	if n := len(records); n > 0 {
		var last struct {
			RecordHash *string `json:"record_hash"`
		}
		if err := json.Unmarshal([]byte(records[n-1]), &last); err != nil {
			return err
		}
		out.ChainHead = last.RecordHash
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if err := writeJSON(f, out); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}
