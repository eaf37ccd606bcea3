package evidence

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/mightyetl/leasefence/audit"
	"github.com/mightyetl/leasefence/controls"
	"github.com/mightyetl/leasefence/goclient"
	"github.com/mightyetl/leasefence/internal/testdb"
)

// Each read of the report, taken away from the auditor in a database of
// its own, stops Build with a *ReadError that names that read (or, for the
// audit, the *audit.CheckError of the check that could not run): no report
// is built from what could be read.
func TestBuildNamesEachReadItCouldNotDo(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		sql  string
		opts Options
		read string // "" for the audit's *audit.CheckError
	}{
		{"control evidence", `REVOKE EXECUTE ON FUNCTION durable_jobs.control_evidence_records FROM durable_job_auditor`,
			Options{}, "read control evidence"},
		{"current lease policies", `REVOKE EXECUTE ON FUNCTION durable_jobs.queue_lease_policies FROM durable_job_auditor`,
			Options{}, "read lease policies"},
		{"lease outcome totals", `REVOKE EXECUTE ON FUNCTION durable_jobs.lease_outcome_totals FROM durable_job_auditor`,
			Options{}, "read lease outcome totals"},
		{"job status totals", `REVOKE EXECUTE ON FUNCTION durable_jobs.job_status_totals FROM durable_job_auditor`,
			Options{}, "read job status totals"},
		{"access review", `REVOKE SELECT ON pg_catalog.pg_auth_members FROM PUBLIC`, Options{}, "read the access review"},
		{"audit", `REVOKE SELECT ON pg_catalog.pg_proc FROM PUBLIC`, Options{}, ""},
	}
	// The access review's snapshot cannot even begin.
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := readAccess(canceled, testdb.New(t).Pool(t))
	require.ErrorIs(t, err, context.Canceled)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			db := testdb.New(t)
			_, err := db.Pool(t).Exec(context.Background(), tc.sql)
			require.NoError(t, err)
			report, err := Build(context.Background(), db.LoginPool(t, "durable_job_auditor"), tc.opts)
			require.Error(t, err)
			require.Empty(t, report.Sections, "no partial report")
			if tc.read == "" {
				var checkErr *audit.CheckError
				require.ErrorAs(t, err, &checkErr, err.Error())
				_, known := controls.AuditCheckByID(checkErr.Check)
				require.True(t, known, checkErr.Check)
				return
			}
			var readErr *ReadError
			require.ErrorAs(t, err, &readErr, err.Error())
			require.Equal(t, tc.read, readErr.Read)
			// Reads through goclient come back as its sentinel, the report's
			// own queries as the server's SQLSTATE.
			var pgErr *pgconn.PgError
			if !errors.Is(err, goclient.ErrPermissionDenied) {
				require.ErrorAs(t, err, &pgErr, err.Error())
				require.Equal(t, "42501", pgErr.Code)
			}
		})
	}
}
