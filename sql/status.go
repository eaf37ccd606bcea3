package sqlbundle

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Status is where a database stands against this bundle, as ReadStatus
// reads it.
type Status struct {
	// Current is the database's version.
	Current int32
	// Newest is the bundle's newest version (NewestVersion).
	Newest int32
	// Drift lists every function that differs from what version Current
	// installs (Manifest.Drift); empty at version 0 or above Newest.
	Drift []string
}

// ErrStatusLogin is ReadStatus's error for a login that may read neither
// the version table nor the auditor's version function.
var ErrStatusLogin = errors.New("this login may read neither " + VersionTable +
	" nor durable_jobs.bundle_migration_version(): run migrate status as the login that migrates" +
	" or one granted durable_job_auditor or durable_job_operator")

// ReadStatus reads the database's version and its function drift without
// changing anything. It returns ErrStandby on a standby. The version is
// the version table's, which only the migrating login may read, else, for
// a login the table refuses, the version the newest migration record of
// the control evidence names (durable_jobs.bundle_migration_version, which
// logins granted durable_job_auditor or durable_job_operator may run: the
// logins that look at a database without migrating it); ErrStatusLogin
// when the login may read neither.
func ReadStatus(ctx context.Context, conn *pgx.Conn) (Status, error) {
	status := Status{Newest: NewestVersion(), Drift: []string{}}
	if err := refuseStandby(ctx, conn); err != nil {
		return status, err
	}
	version, _, err := ReadVersion(ctx, conn)
	if refused(err) {
		err = conn.QueryRow(ctx, `SELECT migration_version FROM durable_jobs.bundle_migration_version()`).Scan(&version)
		if refused(err) {
			err = ErrStatusLogin
		}
	}
	if err != nil {
		return status, err
	}
	status.Current = version
	if version > 0 && version <= status.Newest {
		live, err := FunctionDigests(ctx, conn)
		if err != nil {
			return status, &StatusReadError{Err: err}
		}
		status.Drift = append(status.Drift, BundleManifest().Drift(version, live)...)
	}
	return status, nil
}

// StatusReadError is ReadStatus's failure to read the live functions,
// after the version was read.
type StatusReadError struct {
	// Err is the cause.
	Err error
}

// Error is the cause's text.
func (e *StatusReadError) Error() string { return e.Err.Error() }

// Unwrap returns the cause.
func (e *StatusReadError) Unwrap() error { return e.Err }

// refused reports whether err is PostgreSQL's insufficient_privilege.
func refused(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "42501"
}
