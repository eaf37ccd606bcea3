package main

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/mightyetl/leasefence/internal/testdb"
	sqlbundle "github.com/mightyetl/leasefence/sql"
)

// Issue 37, item 6: migrate status as an operator or an auditor login
// failed with "permission denied for table leasefence_schema_version". It
// now reads the version those logins may read (bundle_migration_version,
// from the control evidence), and a login that may read neither is told
// which logins can run it.
func TestMigrateStatusWorksForOperatorAndAuditorLogins(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	newest := sqlbundle.NewestVersion()
	for _, role := range []string{"durable_job_operator", "durable_job_auditor"} {
		r := leasectl(t, "migrate", "status", "--database-url", db.LoginURL(t, role))
		requireCode(t, exitOK, r, role)
		require.Contains(t, r.stdout, fmt.Sprintf("current version: %d\n", newest), role)
		require.Contains(t, r.stdout, "state:           up to date", role)
		require.Contains(t, r.stdout, fmt.Sprintf("functions:       as version %d installs them", newest), role)
	}
	for _, role := range []string{"durable_job_worker", "durable_job_producer"} {
		r := leasectl(t, "migrate", "status", "--database-url", db.LoginURL(t, role))
		requireCode(t, exitError, r, role)
		require.Equal(t, "error: read current version: this login may read neither "+sqlbundle.VersionTable+
			" nor durable_jobs.bundle_migration_version(): run migrate status as the login that migrates"+
			" or one granted durable_job_auditor or durable_job_operator\n", r.stderr, role)
	}
}
