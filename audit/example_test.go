package audit_test

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/mightyetl/leasefence/audit"
	"github.com/mightyetl/leasefence/internal/testdb"
)

// must stops an example on an error; real code handles the error.
func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// Run audits a database from Go code, for example in a deployment
// pipeline: a fresh bundle passes, and a privilege granted by hand is a
// finding of a named check.
func ExampleRun() {
	ctx := context.Background()
	db := must(testdb.Open(ctx)) // a throwaway database with the bundle
	defer func() { _ = db.Drop(ctx) }()
	pool := must(pgxpool.New(ctx, must(db.CreateLogin(ctx, "durable_job_auditor"))))
	defer pool.Close()

	report := must(audit.Run(ctx, pool))
	fmt.Println("passed:", report.Passed)

	admin := must(pgxpool.New(ctx, db.URL))
	defer admin.Close()
	must(admin.Exec(ctx, `GRANT EXECUTE ON FUNCTION durable_jobs.bundle_migration_version() TO PUBLIC`))

	report = must(audit.Run(ctx, pool))
	fmt.Println("passed:", report.Passed)
	for _, c := range report.Checks {
		if !c.Passed {
			fmt.Printf("%s: %d finding(s)\n", c.ID, len(c.Findings))
		}
	}
	fmt.Println(report.Checks[1].Findings[0])
	// Output:
	// passed: true
	// passed: false
	// AUDIT-PUBLIC-EXECUTE: 1 finding(s)
	// AUDIT-FUNCTION-DRIFT: 1 finding(s)
	// PUBLIC can execute function durable_jobs.bundle_migration_version()
}
