package sqlbundle

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/tern/v2/migrate"
)

// Migrator is tern's migrator over the bundle (its Migrations, OnStart and
// GetCurrentVersion are tern's) with leasefence's migration rules: those
// its options ask for, Plan for the run to a version, and DropRoles,
// ExportEvidence and EvidenceErasingMigrations for a downgrade. Make one
// with NewMigrator.
type Migrator struct {
	*migrate.Migrator
	conn *pgx.Conn
	opts migratorOptions
	// exported is how many evidence records ExportEvidence wrote.
	exported int64
}

// MigratorOption is a migration rule NewMigrator applies.
type MigratorOption func(*migratorOptions)

// migratorOptions are the rules a Migrator applies.
type migratorOptions struct {
	lockTimeout              time.Duration
	record                   bool
	reason, ticket, approver string
	guard                    bool
}

// WithLockTimeout makes NewMigrator take the migration lock (the advisory
// lock tern's migrator holds while it migrates, MigrationLockKey) for the
// session of conn, waiting at most timeout, and bounds every lock a
// migration then waits for by timeout too (lock_timeout): a wait that runs
// out fails that migration (SQLSTATE 55P03), which changes nothing. A lock
// that is not free in time is a *LockBusyError naming the sessions that
// hold it. The lock is held until conn closes.
func WithLockTimeout(timeout time.Duration) MigratorOption {
	return func(o *migratorOptions) { o.lockTimeout = timeout }
}

// WithChangeRecord sets the reason, ticket and approver each migration
// records in the control evidence (the evidence-chain migration and later
// ones read the reason, version 26 and later the ticket and approver; an
// empty value is the migration's default). NewMigrator refuses a reason
// that CheckChangeReason refuses.
func WithChangeRecord(reason, ticket, approver string) MigratorOption {
	return func(o *migratorOptions) {
		o.record, o.reason, o.ticket, o.approver = true, reason, ticket, approver
	}
}

// WithEvidenceGuard makes MigrateTo refuse, with an *EvidenceErasureError
// and having changed nothing, a downgrade whose migrations erase control
// evidence (EvidenceErasingMigrations) while the database holds more
// evidence records than ExportEvidence wrote first.
func WithEvidenceGuard() MigratorOption {
	return func(o *migratorOptions) { o.guard = true }
}

// apply takes the migration lock and checks the reason, as the options ask.
func (o migratorOptions) apply(ctx context.Context, conn *pgx.Conn) error {
	if o.record && o.reason != "" {
		if err := CheckChangeReason(o.reason); err != nil {
			return err
		}
	}
	if o.lockTimeout <= 0 {
		return nil
	}
	if err := lockMigrations(ctx, conn, o.lockTimeout); err != nil {
		return err
	}
	_, err := conn.Exec(ctx, fmt.Sprintf("SET lock_timeout = %d", o.lockTimeout.Milliseconds()))
	return err
}

// ErrStandby is what NewMigrator and ReadStatus return on a standby (a
// server in recovery), where nothing can be migrated and the version it
// shows is only as far as it has replayed.
var ErrStandby = errors.New("the server is a standby (pg_is_in_recovery() is true): migrations run on the primary; " +
	"connect to it, for example with every host of the cluster in the URL and target_session_attrs=read-write")

// refuseStandby returns ErrStandby when conn's server is in recovery.
func refuseStandby(ctx context.Context, conn *pgx.Conn) error {
	var standby bool
	if err := conn.QueryRow(ctx, `SELECT pg_catalog.pg_is_in_recovery()`).Scan(&standby); err != nil || !standby {
		return err
	}
	return ErrStandby
}

// MigrateTo migrates to version target, recording the change of
// WithChangeRecord in each migration's own transaction (tern runs RESET
// ALL after every migration, so a session setting would reach the first
// migration of a run only). OnStart, when set, is called as tern calls it.
// With WithEvidenceGuard it first refuses a downgrade that would erase
// control evidence not exported (*EvidenceErasureError).
func (m *Migrator) MigrateTo(ctx context.Context, target int32) error {
	if m.opts.guard {
		current, err := m.GetCurrentVersion(ctx)
		if err != nil {
			return err
		}
		if erasing := m.EvidenceErasingMigrations(current, target); len(erasing) > 0 {
			count, err := m.EvidenceCount(ctx)
			if err != nil {
				return err
			}
			if count > m.exported {
				return &EvidenceErasureError{Records: count, Migrations: erasing}
			}
		}
	}
	onStart := m.OnStart
	defer func() { m.OnStart = onStart }()
	m.OnStart = func(sequence int32, name, direction, sql string) {
		if m.opts.record {
			// An error here aborts the migration's transaction, and tern reports it.
			_, _ = m.conn.Exec(ctx, `SELECT pg_catalog.set_config('leasefence.migration_reason', $1, true),
			pg_catalog.set_config('leasefence.migration_ticket', $2, true),
			pg_catalog.set_config('leasefence.migration_approver', $3, true)`, m.opts.reason, m.opts.ticket, m.opts.approver)
		}
		if onStart != nil {
			onStart(sequence, name, direction, sql)
		}
	}
	return m.Migrator.MigrateTo(ctx, target)
}

// Migrate migrates to the newest version, as MigrateTo does.
func (m *Migrator) Migrate(ctx context.Context) error {
	return m.MigrateTo(ctx, int32(len(m.Migrations)))
}

// EvidenceErasureError is MigrateTo's refusal under WithEvidenceGuard: the
// downgrade would erase control evidence that was not exported first.
type EvidenceErasureError struct {
	// Records is how many evidence records the database holds.
	Records int64
	// Migrations names the migrations whose down part erases evidence.
	Migrations []string
}

// Error says what the downgrade would erase.
func (e *EvidenceErasureError) Error() string {
	return fmt.Sprintf("refused: it would erase control evidence of %d records (reverting %s drops records or their fields)",
		e.Records, strings.Join(e.Migrations, ", "))
}

// EvidenceErasingMigrations names, in the order a downgrade from version
// from to version to reverts them, the migrations whose down part erases
// control evidence (read from their SQL, see erasesEvidence). It is empty
// when to >= from.
func (m *Migrator) EvidenceErasingMigrations(from, to int32) []string {
	return evidenceErasingMigrations(m.Migrations, from, to)
}

// EvidenceCount is how many control evidence records the database holds (0
// when the table does not exist).
func (m *Migrator) EvidenceCount(ctx context.Context) (int64, error) {
	var count int64
	var exists bool
	err := m.conn.QueryRow(ctx, `SELECT pg_catalog.to_regclass('durable_jobs.control_evidence_record') IS NOT NULL`).Scan(&exists)
	if err != nil || !exists {
		return 0, err
	}
	err = m.conn.QueryRow(ctx, `SELECT pg_catalog.count(*) FROM durable_jobs.control_evidence_record`).Scan(&count)
	return count, err
}

// EvidenceExport is what ExportEvidence writes: every control evidence
// record with its chain hashes, oldest first, and the chain head.
type EvidenceExport struct {
	// SchemaVersion is the version of this format, 1.
	SchemaVersion int `json:"schema_version"`
	// ExportedAt is the database time of the export.
	ExportedAt string `json:"exported_at"`
	// Database is the database's name.
	Database string `json:"database"`
	// MigrationVersion is the database's version at the export.
	MigrationVersion int32 `json:"migration_version"`
	// RecordCount is the number of records.
	RecordCount int `json:"record_count"`
	// ChainHead is the record_hash of the last record (null before the
	// evidence-chain migration).
	ChainHead *string `json:"chain_head"`
	// Records are the records as to_jsonb gives them.
	Records []json.RawMessage `json:"records"`
}

// ExportEvidence writes every control evidence record, oldest first, with
// the chain head, as an EvidenceExport in indented JSON to path, which
// must not exist yet (mode 600), syncs it to disk, and returns how many
// records it wrote. When the database holds none it writes no file.
// Under WithEvidenceGuard, MigrateTo then lets a downgrade erase them.
func (m *Migrator) ExportEvidence(ctx context.Context, path string) (int64, error) {
	count, err := m.EvidenceCount(ctx)
	if err != nil || count == 0 {
		return 0, err
	}
	version, err := m.GetCurrentVersion(ctx)
	if err != nil {
		return 0, err
	}
	out := EvidenceExport{SchemaVersion: 1, MigrationVersion: version, Records: []json.RawMessage{}}
	var at time.Time
	if err := m.conn.QueryRow(ctx, `SELECT pg_catalog.clock_timestamp(), pg_catalog.current_database()`).Scan(&at, &out.Database); err != nil {
		return 0, err
	}
	out.ExportedAt = at.UTC().Format("2006-01-02T15:04:05.000Z")
	rows, _ := m.conn.Query(ctx, `SELECT pg_catalog.to_jsonb(e)::text FROM durable_jobs.control_evidence_record e ORDER BY e.evidence_record_id`)
	records, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return 0, err
	}
	for _, r := range records {
		out.Records = append(out.Records, json.RawMessage(r))
	}
	out.RecordCount = len(out.Records)
	var last struct {
		RecordHash *string `json:"record_hash"`
	}
	if err := json.Unmarshal([]byte(records[len(records)-1]), &last); err != nil {
		return 0, err
	}
	out.ChainHead = last.RecordHash
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return 0, err
	}
	enc := json.NewEncoder(f)
	enc.SetIndent("", "  ")
	if err := errors.Join(enc.Encode(out), f.Sync(), f.Close()); err != nil {
		return 0, err
	}
	m.exported = int64(out.RecordCount)
	return m.exported, nil
}

// DropRoles drops those of the bundle's cluster-wide roles (RuntimeRoles
// and DefinerOwnerRoles) that exist, by exact name, in one transaction, and
// returns their names. Other roles, named durable_job_something or not,
// are left alone. PostgreSQL refuses (and nothing is dropped) while any
// database in the cluster still has objects or privileges of one of them;
// its DETAIL names those databases. Run it after MigrateTo(ctx, 0).
func (m *Migrator) DropRoles(ctx context.Context) ([]string, error) {
	rows, _ := m.conn.Query(ctx, `SELECT rolname FROM pg_catalog.pg_roles
		WHERE rolname OPERATOR(pg_catalog.=) ANY ($1::pg_catalog.text[]) ORDER BY rolname`,
		append(append([]string{}, RuntimeRoles...), DefinerOwnerRoles...))
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, err
	}
	err = pgx.BeginFunc(ctx, m.conn, func(tx pgx.Tx) error {
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

// MigrationLockKey is the advisory lock key tern's migrator takes
// (lockNum in github.com/jackc/tern/v2/migrate) while it migrates.
const MigrationLockKey int64 = 9628173550095224

// LockHolder is a session that holds the migration lock.
type LockHolder struct {
	// PID is the session's process id.
	PID int32
	// Role is the session's role ("" when it cannot be read).
	Role string
}

// LockBusyError is NewMigrator's failure under WithLockTimeout: the
// migration lock was not free in time.
type LockBusyError struct {
	// Timeout is how long NewMigrator waited.
	Timeout time.Duration
	// Holders are the sessions that held the lock; empty when they could
	// not be read.
	Holders []LockHolder
}

// Error names the process id and role of each session that holds the
// lock, never its query.
func (e *LockBusyError) Error() string {
	var who []string
	for _, h := range e.Holders {
		who = append(who, fmt.Sprintf("pid %d (role %s)", h.PID, strconv.Quote(h.Role)))
	}
	wait := e.Timeout.String()
	if strings.HasSuffix(wait, "m0s") {
		wait = strings.TrimSuffix(wait, "0s")
	}
	if strings.HasSuffix(wait, "h0m") {
		wait = strings.TrimSuffix(wait, "0m")
	}
	return fmt.Sprintf("the migration lock (advisory lock %d) was not free within %s: held by %s; "+
		"wait for that session, or end it with pg_terminate_backend(pid), and try again", MigrationLockKey,
		wait, cmp.Or(strings.Join(who, ", "), "another session"))
}

// lockMigrations takes the migration lock for the session of conn, waiting
// at most timeout: pg_advisory_lock honours lock_timeout, which is set for
// this one transaction only (a session-level advisory lock outlives the
// transaction that took it). The migrator takes the lock again (a session
// may hold an advisory lock more than once) and so never waits; closing
// the connection releases whatever is left.
func lockMigrations(ctx context.Context, conn *pgx.Conn, timeout time.Duration) error {
	// Without arguments pgx sends this as one simple query; both numbers
	// are our own.
	err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, fmt.Sprintf("SET LOCAL lock_timeout = %d; SELECT pg_catalog.pg_advisory_lock(%d)",
			timeout.Milliseconds(), MigrationLockKey))
		return err
	})
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "55P03" {
		return err
	}
	// A bigint advisory key is shown in pg_locks as classid (its high 32
	// bits), objid (its low 32 bits) and objsubid 1, in the database where
	// it was taken. Should this read fail, the error says only that
	// another session holds the lock.
	rows, _ := conn.Query(ctx, `SELECT l.pid, COALESCE(a.usename::pg_catalog.text, '')
		FROM pg_catalog.pg_locks l LEFT JOIN pg_catalog.pg_stat_activity a ON a.pid OPERATOR(pg_catalog.=) l.pid
		WHERE l.locktype OPERATOR(pg_catalog.=) 'advisory' AND l.granted
		  AND l.classid::pg_catalog.int8 OPERATOR(pg_catalog.=) $1 AND l.objid::pg_catalog.int8 OPERATOR(pg_catalog.=) $2
		  AND l.objsubid OPERATOR(pg_catalog.=) 1
		  AND l.database OPERATOR(pg_catalog.=) (SELECT oid FROM pg_catalog.pg_database
		                                         WHERE datname OPERATOR(pg_catalog.=) pg_catalog.current_database())
		ORDER BY l.pid`, MigrationLockKey>>32, MigrationLockKey&0xffffffff)
	holders, _ := pgx.CollectRows(rows, pgx.RowToStructByPos[LockHolder])
	return &LockBusyError{Timeout: timeout, Holders: holders}
}
