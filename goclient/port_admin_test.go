package goclient_test

import (
	"context"
	"encoding/json"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"net/url"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/mightyetl/leasefence/goclient"
	"github.com/mightyetl/leasefence/internal/testdb"
	sqlbundle "github.com/mightyetl/leasefence/sql"
)

// adminClient returns an Admin over pool: the operator and auditor calls
// need no Client (admin_test.go checks that a Client answers the same).
func adminClient(t *testing.T, pool *pgxpool.Pool) *goclient.Admin {
	t.Helper()
	a, err := goclient.NewAdmin(pool)
	require.NoError(t, err)
	return a
}

// wholePolicy is the LeasePolicyUpdate that writes every setting of
// queue's policy.
func wholePolicy(queue string, lease, interval, lifetime time.Duration, enabled bool, reason string) goclient.LeasePolicyUpdate {
	return goclient.LeasePolicyUpdate{Queue: queue, LeaseDuration: &lease, RenewalInterval: &interval,
		MaxClaimLifetime: &lifetime, RenewalEnabled: &enabled, Reason: reason}
}

func TestWholeLeasePolicyUpdateIsReadBackAndInvalidOnesChangeNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	operator := adminClient(t, db.LoginPool(t, "durable_job_operator"))

	change := wholePolicy("etl.admin", 3*time.Second, time.Second, 2*time.Hour, false, "CHG-9 admin test")
	_, err := operator.UpdateQueueLeasePolicy(ctx, change)
	require.NoError(t, err)
	policies, err := operator.QueueLeasePolicies(ctx)
	require.NoError(t, err)
	require.Len(t, policies, 2)
	require.Equal(t, "*", policies[0].Queue)
	require.Equal(t, 30*time.Second, policies[0].LeaseDuration)
	require.Equal(t, 24*time.Hour, policies[0].MaxClaimLifetime)
	got := policies[1]
	require.Equal(t, "etl.admin", got.Queue)
	require.Equal(t, 3*time.Second, got.LeaseDuration)
	require.Equal(t, time.Second, got.RenewalInterval)
	require.Equal(t, 2*time.Hour, got.MaxClaimLifetime)
	require.False(t, got.RenewalEnabled)
	require.NotEmpty(t, got.ChangedByRole)
	require.WithinDuration(t, time.Now(), got.ChangedAt, time.Minute)

	for _, bad := range []goclient.LeasePolicyUpdate{
		wholePolicy("etl.admin", 0, time.Second, time.Hour, true, "zero"),
		wholePolicy("etl.admin", 3*time.Second, 3*time.Second, time.Hour, true, "equal"),
		wholePolicy("etl.admin", 3*time.Second, time.Second, time.Hour, true, " "),
		wholePolicy("Not A Queue", 3*time.Second, time.Second, time.Hour, true, "name"),
	} {
		_, err := operator.UpdateQueueLeasePolicy(ctx, bad)
		require.ErrorIs(t, err, goclient.ErrInvalidPolicy, bad.Reason)
		var pgErr *pgconn.PgError
		require.ErrorAs(t, err, &pgErr)
		require.Equal(t, goclient.SQLStateInvalidPolicy, pgErr.Code)
	}
	after, err := operator.QueueLeasePolicies(ctx)
	require.NoError(t, err)
	require.Equal(t, policies, after)

	auditor := adminClient(t, db.LoginPool(t, "durable_job_auditor"))
	_, err = auditor.UpdateQueueLeasePolicy(ctx, change)
	require.ErrorIs(t, err, goclient.ErrPermissionDenied)
	worker := adminClient(t, db.LoginPool(t, "durable_job_worker"))
	_, err = worker.QueueLeasePolicies(ctx)
	require.ErrorIs(t, err, goclient.ErrPermissionDenied)
}

// UpdateQueueLeasePolicy changes only the settings given: the others stay
// the queue's own, or the default's for a queue without its own; it returns
// what it wrote; a refused change is ErrInvalidPolicy and changes nothing.
func TestUpdateQueueLeasePolicyKeepsTheSettingsLeftOut(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	operator := adminClient(t, db.LoginPool(t, "durable_job_operator"))
	lease, off := 90*time.Second, false

	got, err := operator.UpdateQueueLeasePolicy(ctx, goclient.LeasePolicyUpdate{Queue: "etl.update",
		LeaseDuration: &lease, Reason: "CHG-7: longer lease"})
	require.NoError(t, err)
	require.Equal(t, "etl.update", got.Queue)
	require.Equal(t, []time.Duration{90 * time.Second, 10 * time.Second, 24 * time.Hour},
		[]time.Duration{got.LeaseDuration, got.RenewalInterval, got.MaxClaimLifetime}, "the rest comes from '*'")
	require.True(t, got.RenewalEnabled)
	require.WithinDuration(t, time.Now(), got.ChangedAt, time.Minute)

	// An approver holds the operator role (migration 026).
	approverURL, err := url.Parse(db.LoginURL(t, "durable_job_operator"))
	require.NoError(t, err)
	approverRole := approverURL.User.Username()
	got, err = operator.UpdateQueueLeasePolicy(ctx, goclient.LeasePolicyUpdate{Queue: "etl.update",
		RenewalEnabled: &off, Reason: "pause renewals", Ticket: "INC-8", Approver: approverRole})
	require.NoError(t, err)
	require.Equal(t, 90*time.Second, got.LeaseDuration, "its own lease is kept")
	require.False(t, got.RenewalEnabled)

	before, err := operator.QueueLeasePolicies(ctx)
	require.NoError(t, err)
	tooShort := 2 * time.Second
	for _, bad := range []goclient.LeasePolicyUpdate{
		{Queue: "etl.update", LeaseDuration: &tooShort, Reason: "CHG-9: lease below three renewal intervals"},
		{Queue: "Not A Queue", LeaseDuration: &lease, Reason: "CHG-9: name"},
		{Queue: "etl.update", LeaseDuration: &lease, Reason: " "},
	} {
		_, err := operator.UpdateQueueLeasePolicy(ctx, bad)
		require.ErrorIs(t, err, goclient.ErrInvalidPolicy, bad.Reason)
	}
	after, err := operator.QueueLeasePolicies(ctx)
	require.NoError(t, err)
	require.Equal(t, before, after)

	auditor := adminClient(t, db.LoginPool(t, "durable_job_auditor"))
	_, err = auditor.UpdateQueueLeasePolicy(ctx, goclient.LeasePolicyUpdate{Queue: "etl.update", LeaseDuration: &lease, Reason: "x"})
	require.ErrorIs(t, err, goclient.ErrPermissionDenied)
}

func TestDeploymentAndPolicyChangesAppearInControlEvidence(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	deployer := adminClient(t, db.Pool(t)) // the role that applied the bundle
	operator := adminClient(t, db.LoginPool(t, "durable_job_operator"))
	auditor := adminClient(t, db.LoginPool(t, "durable_job_auditor"))

	// The period starts on the database's clock after the template's own
	// records (its migrations), not on this process's clock: a template made
	// a moment ago would otherwise fall inside the period.
	var start time.Time
	require.NoError(t, db.Pool(t).QueryRow(ctx, `SELECT clock_timestamp()`).Scan(&start))
	deployment := goclient.Deployment{Version: "3.1.4+rc.1", Source: "0123456789abcdef0123456789abcdef01234567",
		DeployedBy: "ops.alice", Ticket: "REL-31", Reason: "admin test"}
	require.NoError(t, deployer.RecordDeployment(ctx, deployment))
	require.ErrorIs(t, operator.RecordDeployment(ctx, deployment), goclient.ErrPermissionDenied)
	_, err := operator.UpdateQueueLeasePolicy(ctx,
		wholePolicy("etl.admin", 3*time.Second, time.Second, time.Hour, false, "INC-3 pause renewals"))
	require.NoError(t, err)

	all, err := auditor.ControlEvidence(ctx, time.Time{})
	require.NoError(t, err)
	require.Equal(t, "lease_policy_changed", all[0].Kind)
	require.Equal(t, "*", all[0].Queue)
	require.Nil(t, all[0].PreviousValues)
	recent, err := auditor.ControlEvidence(ctx, start)
	require.NoError(t, err)
	require.Less(t, len(recent), len(all))
	kinds := []string{}
	for _, e := range recent {
		kinds = append(kinds, e.Kind)
		require.True(t, json.Valid(e.NewValues))
		require.False(t, e.RecordedAt.Before(start))
	}
	require.Equal(t, []string{"deployment_recorded", "lease_policy_changed", "renewal_enablement_changed"}, kinds)
	require.Empty(t, recent[0].Queue)
	var recorded struct {
		Version string `json:"deployment_version"`
	}
	require.NoError(t, json.Unmarshal(recent[0].NewValues, &recorded))
	require.Equal(t, "3.1.4+rc.1", recorded.Version)
	require.Equal(t, "admin test", recent[0].Reason)
	require.Equal(t, "etl.admin", recent[2].Queue)
	require.JSONEq(t, `{"renewal_enabled": true}`, string(recent[2].PreviousValues))
	require.Equal(t, "INC-3 pause renewals", recent[2].Reason)
	none, err := auditor.ControlEvidence(ctx, time.Now().Add(time.Hour))
	require.NoError(t, err)
	require.Empty(t, none)
}

func TestRecordDeploymentKeepsSourcePersonAndTicketAndRefusesPersonalData(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	deployer := adminClient(t, db.Pool(t)) // the role that applied the bundle
	operator := adminClient(t, db.LoginPool(t, "durable_job_operator"))
	auditor := adminClient(t, db.LoginPool(t, "durable_job_auditor"))
	good := goclient.Deployment{Version: "3.2.0", Source: "0123456789abcdef0123456789abcdef01234567",
		DeployedBy: "ops.alice", Ticket: "REL-32", Reason: "roll out batched completion"}
	before, err := auditor.ControlEvidence(ctx, time.Time{})
	require.NoError(t, err)

	require.NoError(t, deployer.RecordDeployment(ctx, good))
	for name, bad := range map[string]func(d *goclient.Deployment){
		"version":      func(d *goclient.Deployment) { d.Version = "3.2 beta" },
		"source":       func(d *goclient.Deployment) { d.Source = "main" },
		"person":       func(d *goclient.Deployment) { d.DeployedBy = "Alice Kim <alice@example.com>" },
		"ticket":       func(d *goclient.Deployment) { d.Ticket = "see slack" },
		"personal":     func(d *goclient.Deployment) { d.Reason = "customer RRN 900101-1234567" },
		"secret":       func(d *goclient.Deployment) { d.Reason = "pw=hunter2" },
		"empty reason": func(d *goclient.Deployment) { d.Reason = " " },
	} {
		d := good
		bad(&d)
		err := deployer.RecordDeployment(ctx, d)
		require.ErrorIs(t, err, goclient.ErrInvalidPolicy, name)
		require.NotContains(t, err.Error(), "hunter2")
	}
	require.ErrorIs(t, operator.RecordDeployment(ctx, good), goclient.ErrPermissionDenied)

	after, err := auditor.ControlEvidence(ctx, time.Time{})
	require.NoError(t, err)
	require.Len(t, after, len(before)+1, "only the good deployment is recorded")
	last := after[len(after)-1]
	require.Equal(t, "deployment_recorded", last.Kind)
	require.JSONEq(t, `{"deployment_version": "3.2.0", "source_digest": "0123456789abcdef0123456789abcdef01234567",
		"deployed_by": "ops.alice"}`, string(last.NewValues))
	require.Equal(t, "roll out batched completion", last.Reason)
}

func TestHealthTotalsAndVersionAreCountsOnly(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	admin := db.Pool(t)
	producer := db.LoginPool(t, "durable_job_producer")
	worker := db.LoginPool(t, "durable_job_worker")
	auditor := adminClient(t, db.LoginPool(t, "durable_job_auditor"))

	version, err := auditor.BundleMigrationVersion(ctx)
	require.NoError(t, err)
	require.Equal(t, sqlbundle.NewestVersion(), version.Version)
	require.False(t, version.AppliedAt.IsZero())

	health, err := auditor.LeaseHealth(ctx)
	require.NoError(t, err)
	require.Len(t, health, 1)
	require.Equal(t, "*", health[0].Queue)
	require.Nil(t, health[0].OldestLeaseAge)

	for i := 0; i < 3; i++ {
		_, err := producer.Exec(ctx, `SELECT durable_jobs.enqueue_job('etl.admin', '{"n": 1}'::jsonb)`)
		require.NoError(t, err)
	}
	var jobID int64
	require.NoError(t, worker.QueryRow(ctx, `SELECT job_record_id FROM durable_jobs.claim_next_job('etl.admin', 'admin-test')`).Scan(&jobID))
	var outcome string
	require.NoError(t, worker.QueryRow(ctx, `SELECT renewal_outcome FROM durable_jobs.renew_job_lease($1, gen_random_uuid(), 'admin-test')`,
		jobID).Scan(&outcome))
	require.Equal(t, "stale", outcome)
	var released bool
	require.NoError(t, worker.QueryRow(ctx, `SELECT durable_jobs.release_job_claim($1, gen_random_uuid(), 'admin-test')`,
		jobID).Scan(&released))
	require.False(t, released, "a release with a wrong token is stale")

	health, err = auditor.LeaseHealth(ctx)
	require.NoError(t, err)
	require.Len(t, health, 2)
	h := health[1]
	require.Equal(t, "etl.admin", h.Queue)
	require.Equal(t, int64(1), h.RunningJobs)
	require.Equal(t, int64(0), h.ExpiredAwaitingReclaim)
	require.Equal(t, int64(1), h.StaleRenewalsLastHour)
	require.Equal(t, int64(1), h.StaleReleasesLastHour)
	require.NotNil(t, h.OldestLeaseAge)
	require.Less(t, *h.OldestLeaseAge, time.Minute)
	require.WithinDuration(t, time.Now(), h.DatabaseTime, time.Minute)

	totals, err := auditor.JobStatusTotals(ctx)
	require.NoError(t, err)
	require.Equal(t, []goclient.JobStatusTotal{{Queue: "etl.admin", Status: "QUEUED", Count: 2},
		{Queue: "etl.admin", Status: "RUNNING", Count: 1}}, totals)
	outcomes, err := auditor.LeaseOutcomeTotals(ctx, time.Time{})
	require.NoError(t, err)
	require.Equal(t, []goclient.LeaseOutcomeTotal{{Queue: "etl.admin", Outcome: "stale_release", Count: 1},
		{Queue: "etl.admin", Outcome: "stale_renewal", Count: 1}}, outcomes)
	later, err := auditor.LeaseOutcomeTotals(ctx, time.Now().Add(time.Hour))
	require.NoError(t, err)
	require.Empty(t, later)

	// Without migration evidence the version is 0, not an error.
	_, err = admin.Exec(ctx, `ALTER TABLE durable_jobs.control_evidence_record DISABLE TRIGGER USER`)
	require.NoError(t, err)
	_, err = admin.Exec(ctx, `DELETE FROM durable_jobs.control_evidence_record WHERE evidence_kind LIKE 'migration%'`)
	require.NoError(t, err)
	version, err = auditor.BundleMigrationVersion(ctx)
	require.NoError(t, err)
	require.Equal(t, goclient.MigrationVersion{}, version)

	// A worker reads none of it.
	workerClient := adminClient(t, worker)
	for _, call := range []func() error{
		func() error { _, err := workerClient.LeaseHealth(ctx); return err },
		func() error { _, err := workerClient.ControlEvidence(ctx, time.Time{}); return err },
		func() error { _, err := workerClient.LeaseOutcomeTotals(ctx, time.Time{}); return err },
		func() error { _, err := workerClient.JobStatusTotals(ctx); return err },
		func() error { _, err := workerClient.BundleMigrationVersion(ctx); return err },
	} {
		err := call()
		require.ErrorIs(t, err, goclient.ErrPermissionDenied)
		require.False(t, errors.Is(err, goclient.ErrInvalidArgument))
	}
}

// sqlText matches a string literal that holds SQL.
var sqlText = regexp.MustCompile(`(?i)\b(SELECT|INSERT\s+INTO|UPDATE\s+\S+\s+SET|DELETE\s+FROM|SET\s+LOCAL)\b|durable_jobs\.`)

// The architecture keeps SQL text in the port files only (port_pg.go,
// port_admin.go and port_operator.go), so a reviewer finds every statement
// the client sends in three places. Comments do not count; string literals do.
func TestSQLTextLivesOnlyInPortFiles(t *testing.T) {
	t.Parallel()
	entries, err := os.ReadDir(".")
	require.NoError(t, err)
	fset := token.NewFileSet()
	withSQL := map[string]bool{}
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, name, nil, 0)
		require.NoError(t, err)
		ast.Inspect(file, func(n ast.Node) bool {
			if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING && sqlText.MatchString(lit.Value) {
				withSQL[name] = true
			}
			return true
		})
	}
	var files []string
	for f := range withSQL {
		files = append(files, f)
	}
	sort.Strings(files)
	require.Equal(t, []string{"port_admin.go", "port_operator.go", "port_pg.go"}, files,
		"SQL text belongs in port_*.go files only (port_pg.go, port_admin.go, port_operator.go)")
}
