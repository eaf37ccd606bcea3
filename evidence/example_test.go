package evidence_test

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/mightyetl/leasefence/evidence"
	"github.com/mightyetl/leasefence/internal/testdb"
)

// must stops an example on an error; real code handles the error.
func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// Build makes the control-evidence report of a database from Go code, for
// example for an audit period's archive: every section names the controls
// it supports, and its Data is a typed value.
func ExampleBuild() {
	ctx := context.Background()
	db := must(testdb.Open(ctx)) // a throwaway database with the bundle
	defer func() { _ = db.Drop(ctx) }()
	pool := must(pgxpool.New(ctx, must(db.CreateLogin(ctx, "durable_job_auditor"))))
	defer pool.Close()

	report := must(evidence.Build(ctx, pool, evidence.Options{}))
	for _, s := range report.Sections {
		fmt.Println(s.ID, s.Controls[0].ID)
	}
	migration := report.Sections[0].Data.(evidence.Migration)
	fmt.Println("up to date:", migration.UpToDate)
	for _, p := range report.Sections[3].Data.([]evidence.Policy) {
		fmt.Println("policy", p.Queue, p.LeaseDurationSeconds, "s")
	}
	// Output:
	// EVIDENCE-MIGRATION-VERSION LF-CHG-01
	// EVIDENCE-MIGRATION-HISTORY LF-CHG-01
	// EVIDENCE-DEPLOYMENTS LF-CHG-04
	// EVIDENCE-CURRENT-POLICIES LF-CHG-02
	// EVIDENCE-POLICY-HISTORY LF-CHG-02
	// EVIDENCE-APPROVALS LF-CHG-05
	// EVIDENCE-OPERATOR-ACTIONS LF-CHG-06
	// EVIDENCE-ENABLEMENT-HISTORY LF-CHG-03
	// EVIDENCE-DISPOSAL LF-PRV-03
	// EVIDENCE-LEASE-OUTCOMES LF-INT-02
	// EVIDENCE-PROCESSING LF-INT-02
	// EVIDENCE-AVAILABILITY LF-AVL-03
	// EVIDENCE-JOB-STATUS LF-AVL-01
	// EVIDENCE-AUDIT-RESULT LF-AUD-02
	// EVIDENCE-ACCESS-REVIEW LF-ACC-04
	// up to date: true
	// policy * 30 s
}
