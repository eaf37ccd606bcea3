package main

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	sqlbundle "github.com/mightyetl/leasefence/sql"
)

// errStatusLogin is migrate status run by a login that may read neither
// the version table nor the auditor's version function.
var errStatusLogin = errors.New("this login may read neither " + sqlbundle.VersionTable +
	" nor durable_jobs.bundle_migration_version(): run migrate status as the login that migrates" +
	" or one granted durable_job_auditor or durable_job_operator")

// readStatusVersion is the current version for migrate status: the
// version table's, which only the migrating login may read, else, for a
// login the table refuses, the version the newest migration record of the
// control evidence names (durable_jobs.bundle_migration_version, which
// logins granted durable_job_auditor or durable_job_operator may run: the
// logins that look at a database without migrating it).
func readStatusVersion(ctx context.Context, conn *pgx.Conn) (int32, error) {
	version, _, err := sqlbundle.ReadVersion(ctx, conn)
	if !refused(err) {
		return version, err
	}
	err = conn.QueryRow(ctx, `SELECT migration_version FROM durable_jobs.bundle_migration_version()`).Scan(&version)
	if refused(err) {
		return 0, errStatusLogin
	}
	return version, err
}

// refused reports whether err is PostgreSQL's insufficient_privilege.
func refused(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "42501"
}
