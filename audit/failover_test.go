package audit

import (
	"context"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/mightyetl/leasefence/controls"
	"github.com/mightyetl/leasefence/internal/pglocal"
	"github.com/mightyetl/leasefence/internal/testdb"
	sqlbundle "github.com/mightyetl/leasefence/sql"
)

// resultOf returns the result of one check in report.
func resultOf(t *testing.T, report Report, id string) CheckResult {
	t.Helper()
	for _, c := range report.Checks {
		if c.ID == id {
			return c
		}
	}
	t.Fatalf("no result for %s", id)
	return CheckResult{}
}

// migrateTo moves the database behind db to version, as its superuser.
func migrateTo(t *testing.T, db *testdb.DB, version int32) {
	t.Helper()
	ctx := context.Background()
	m, err := sqlbundle.NewMigrator(ctx, db.Conn(t))
	require.NoError(t, err)
	require.NoError(t, m.MigrateTo(ctx, version))
}

// claimReplaced is the statement that replaces claim_next_jobs by its
// installed definition with old (which contains no quote) replaced by new.
func claimReplaced(old, new string) string {
	return `DO $replace$BEGIN EXECUTE replace(pg_get_functiondef('durable_jobs.claim_next_jobs(text,text,integer)'::regprocedure), '` +
		old + `', '` + new + `'); END$replace$`
}

// floorCase is one database state for AUDIT-GENERATION-FLOOR: the
// statements that make it, the check's findings, and whether
// AUDIT-FUNCTION-DRIFT fails too.
type floorCase struct {
	name  string
	sql   []string
	want  []string
	drift bool
}

// runFloorCases runs each case on its own database migrated to version and
// audits it as durable_job_auditor.
func runFloorCases(t *testing.T, version int32, cases []floorCase) {
	ctx := context.Background()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			db := testdb.New(t)
			migrateTo(t, db, version)
			pool := db.Pool(t)
			for _, sql := range tc.sql {
				_, err := pool.Exec(ctx, sql)
				require.NoError(t, err, sql)
			}
			report, err := Run(ctx, db.LoginConn(t, "durable_job_auditor"))
			require.NoError(t, err)
			floor := resultOf(t, report, controls.CheckGenerationFloor)
			require.Equal(t, tc.want, floor.Findings)
			require.Equal(t, len(tc.want) == 0, floor.Passed)
			require.Equal(t, tc.drift, !resultOf(t, report, controls.CheckFunctionDrift).Passed,
				"AUDIT-FUNCTION-DRIFT reports a changed, missing or extra function")
		})
	}
}

// The generation floor at bundle versions 11 to 16 is migration 011's
// trigger, checked exactly: a fresh bundle at 16 passes; disabled, dropped
// or re-created differently, it is a finding; with its function gone as
// well (what an older bundle looks like) it is left to
// AUDIT-FUNCTION-DRIFT.
func TestGenerationFloorCheckFindsADisabledMissingOrChangedTriggerBefore017(t *testing.T) {
	t.Parallel()
	runFloorCases(t, 16, []floorCase{
		{"fresh bundle at 16", nil, []string{}, false},
		{"disabled", []string{`ALTER TABLE durable_jobs.job_record DISABLE TRIGGER job_record_generation_floor`},
			[]string{"trigger job_record_generation_floor on durable_jobs.job_record does not fire in every session (tgenabled D)"}, false},
		{"replica only", []string{`ALTER TABLE durable_jobs.job_record ENABLE REPLICA TRIGGER job_record_generation_floor`},
			[]string{"trigger job_record_generation_floor on durable_jobs.job_record does not fire in every session (tgenabled R)"}, false},
		{"dropped", []string{`DROP TRIGGER job_record_generation_floor ON durable_jobs.job_record`},
			[]string{"trigger job_record_generation_floor on durable_jobs.job_record is missing: claims after a promotion can reissue generations an earlier primary issued"}, false},
		{"re-created without its condition and after the row is written", []string{
			`DROP TRIGGER job_record_generation_floor ON durable_jobs.job_record`,
			`CREATE TRIGGER job_record_generation_floor AFTER UPDATE ON durable_jobs.job_record
			 FOR EACH ROW EXECUTE FUNCTION durable_jobs.raise_generation_to_floor()`},
			[]string{"trigger job_record_generation_floor on durable_jobs.job_record differs from what migration 011 creates (timing, columns, condition or function)"}, false},
		{"function and trigger dropped", []string{`DROP FUNCTION durable_jobs.raise_generation_to_floor() CASCADE`},
			[]string{}, true},
	})
}

// From bundle version 17 the floor lives in claim_next_jobs: a fresh
// bundle passes (no trigger to look for); a claim_next_jobs that claims
// with the plain generation + 1, or no longer reads the timeline, is a
// finding of this check as well as drift; a dropped claim_next_jobs, or
// the trigger function put back, is drift only.
func TestGenerationFloorCheckFindsAClaimWithoutTheFloorFrom017(t *testing.T) {
	t.Parallel()
	const finding = "function claim_next_jobs does not raise the fencing generation to the WAL timeline's floor: claims after a promotion can reissue generations an earlier primary issued"
	runFloorCases(t, sqlbundle.NewestVersion(), []floorCase{
		{"fresh bundle", nil, []string{}, false},
		{"claim with the plain generation + 1",
			[]string{claimReplaced("GREATEST(j.lease_fencing_generation + 1, v_floor)", "j.lease_fencing_generation + 1")},
			[]string{finding}, true},
		{"floor no longer read from the timeline",
			[]string{claimReplaced("v_floor := COALESCE(v_floor,", "v_floor := COALESCE(v_floor, 1,")},
			[]string{finding}, true},
		{"claim_next_jobs dropped", []string{`DROP FUNCTION durable_jobs.claim_next_jobs(text, text, integer) CASCADE`},
			[]string{}, true},
		{"trigger function put back", []string{
			`CREATE FUNCTION durable_jobs.raise_generation_to_floor() RETURNS trigger LANGUAGE plpgsql
			 SET search_path = pg_catalog, pg_temp AS $$BEGIN RETURN NEW; END$$`,
			`REVOKE ALL ON FUNCTION durable_jobs.raise_generation_to_floor() FROM PUBLIC`},
			[]string{}, true},
	})
}

// Below bundle version 11 there is no floor to check.
func TestGenerationFloorCheckPassesBefore011(t *testing.T) {
	t.Parallel()
	runFloorCases(t, 10, []floorCase{{"fresh bundle at 10", nil, []string{}, false}})
}

// hostConfig is a superuser connection configuration for one cluster.
func hostConfig(t *testing.T, c *pglocal.Cluster) *pgx.ConnConfig {
	t.Helper()
	cfg, err := pgx.ParseConfig(c.URL("postgres"))
	require.NoError(t, err)
	return cfg
}

// A primary with a streaming standby: the standby is no second primary.
// The standby promoted while the old primary still runs (a failover whose
// old primary was never fenced) is one, seen from either side, with the
// timelines; a host that does not answer and a primary of another cluster
// are not. HostConfigs splits a multi-host URL into those hosts.
func TestSecondPrimaryCheckFindsAPromotedStandbyBesideItsOldPrimary(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	primary, db := testdb.OwnCluster(t)
	auditorURL := db.LoginURL(t, "durable_job_auditor")
	standby, err := primary.StartStandby(ctx, "s1")
	require.NoError(t, err)
	t.Cleanup(func() { _ = standby.Stop() })
	// Another cluster of its own initdb (the test clusters share one
	// cached initdb, and so one system identifier).
	elsewhere, err := pglocal.Start(ctx, pglocal.Options{Settings: map[string]string{"fsync": "off"}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = elsewhere.Stop() })
	other := hostConfig(t, elsewhere)
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	closedPort := closed.Addr().(*net.TCPAddr).Port
	require.NoError(t, closed.Close())

	multi := "postgres://" + primary.Superuser() + "@127.0.0.1:" + strconv.Itoa(primary.Port()) + ",127.0.0.1:" +
		strconv.Itoa(standby.Port()) + ",127.0.0.1:" + strconv.Itoa(closedPort) + "/postgres?sslmode=disable&target_session_attrs=read-write&connect_timeout=2"
	multiCfg, err := pgx.ParseConfig(multi)
	require.NoError(t, err)
	hosts := HostConfigs(multiCfg)
	require.Len(t, hosts, 3, "one configuration per host of the URL")
	for i, port := range []int{primary.Port(), standby.Port(), closedPort} {
		require.Equal(t, "127.0.0.1", hosts[i].Host)
		require.EqualValues(t, port, hosts[i].Port)
		require.Empty(t, hosts[i].Fallbacks)
		require.Nil(t, hosts[i].ValidateConnect, "a host is reached whether primary or standby")
	}
	hosts = append(hosts, other)

	auditPrimary := func() CheckResult {
		conn, err := pgx.Connect(ctx, auditorURL)
		require.NoError(t, err)
		defer conn.Close(ctx)
		report, err := Run(ctx, conn, WithHosts(hosts...))
		require.NoError(t, err)
		return resultOf(t, report, controls.CheckSecondPrimary)
	}
	before := auditPrimary()
	require.True(t, before.Passed, "a streaming standby, a closed port and another cluster are no second primary: %v", before.Findings)

	require.NoError(t, standby.Promote(ctx), "promote the standby while the old primary runs")
	second := auditPrimary()
	require.False(t, second.Passed)
	require.Len(t, second.Findings, 1)
	require.Regexp(t, `^host 127\.0\.0\.1:`+strconv.Itoa(standby.Port())+` is also a primary \(timeline 2\) of this cluster \(system identifier [0-9]+\), which is a primary on timeline 1: `,
		second.Findings[0])

	// Seen from the promoted standby, the old primary is the second one.
	conn, err := pgx.Connect(ctx, standby.URL("postgres"))
	require.NoError(t, err)
	defer conn.Close(ctx)
	report, err := Run(ctx, conn, WithHosts(hosts...))
	require.NoError(t, err)
	fromNew := resultOf(t, report, controls.CheckSecondPrimary)
	require.Len(t, fromNew.Findings, 1)
	require.Regexp(t, `^host 127\.0\.0\.1:`+strconv.Itoa(primary.Port())+` is also a primary \(timeline 1\) of this cluster .* which is a primary on timeline 2: `,
		fromNew.Findings[0])

	// Without hosts there is nothing to compare.
	report, err = Run(ctx, conn)
	require.NoError(t, err)
	require.True(t, resultOf(t, report, controls.CheckSecondPrimary).Passed)
}

// Without synchronous_standby_names the audit warns and still passes; with
// it set, no warning.
func TestSynchronousReplicationCheckWarnsWithoutFailing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, db := testdb.OwnCluster(t)
	admin := db.Pool(t)
	report, err := Run(ctx, admin)
	require.NoError(t, err)
	require.True(t, report.Passed, "a warning does not fail the audit")
	require.Zero(t, report.Findings)
	require.Equal(t, 2, report.Warnings, "this one and AUDIT-ROLE-CHANGE-LOGGING's (no pgaudit)")
	sync := resultOf(t, report, controls.CheckSynchronousReplication)
	require.True(t, sync.Passed)
	require.Empty(t, sync.Findings)
	require.Equal(t, []string{"synchronous_standby_names is empty: commits do not wait for a standby, so a failover can lose " +
		"acknowledged completions (the job runs again) and the runbook requires synchronous replication"}, sync.Warnings)
	for _, c := range report.Checks {
		require.NotNil(t, c.Warnings, "%s has warnings [] in JSON, not null", c.ID)
	}

	for _, sql := range []string{`ALTER SYSTEM SET synchronous_standby_names = 'FIRST 1 (s1)'`, `SELECT pg_reload_conf()`} {
		_, err := admin.Exec(ctx, sql)
		require.NoError(t, err)
	}
	require.Eventually(t, func() bool {
		report, err = Run(ctx, db.Conn(t))
		return err == nil && report.Warnings == 1 && len(resultOf(t, report, controls.CheckSynchronousReplication).Warnings) == 0
	}, 10*time.Second, 50*time.Millisecond, "the warning goes once a synchronous standby is required")
	require.True(t, report.Passed)
}
