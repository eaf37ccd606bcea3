package evidence

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/mightyetl/leasefence/audit"
	"github.com/mightyetl/leasefence/goclient"
	"github.com/mightyetl/leasefence/internal/controls"
	"github.com/mightyetl/leasefence/internal/testdb"
)

func TestSubtractOutcomesKeepsWhatWasCountedInsideThePeriod(t *testing.T) {
	t.Parallel()
	fromSince := []goclient.LeaseOutcomeTotal{{Queue: "billing", Outcome: "reclaim", Count: 5},
		{Queue: "billing", Outcome: "stale_renewal", Count: 2}, {Queue: "ingest", Outcome: "reclaim", Count: 1}}
	fromUntil := []goclient.LeaseOutcomeTotal{{Queue: "billing", Outcome: "reclaim", Count: 3},
		{Queue: "billing", Outcome: "stale_renewal", Count: 2}}
	require.Equal(t, []goclient.LeaseOutcomeTotal{{Queue: "billing", Outcome: "reclaim", Count: 2},
		{Queue: "ingest", Outcome: "reclaim", Count: 1}}, subtractOutcomes(fromSince, fromUntil))
}

func TestBuildReportsPoliciesAsOfUntilAndOnlyRecordsBeforeIt(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	admin := db.Pool(t)
	auditor := db.LoginPool(t, "durable_job_auditor")
	set := func(lease, reason string) {
		t.Helper()
		_, err := admin.Exec(ctx, `SELECT durable_jobs.set_queue_lease_policy('billing', $1::interval, '1 second',
			'1 hour', true, $2)`, lease, reason)
		require.NoError(t, err)
	}
	clock := func() time.Time {
		t.Helper()
		var at time.Time
		require.NoError(t, admin.QueryRow(ctx, `SELECT pg_catalog.clock_timestamp()`).Scan(&at))
		return at
	}
	set("40 seconds", "CHG-1 before the end")
	end := clock()
	set("50 seconds", "CHG-2 after the end")

	report, err := Build(ctx, auditor, Options{Until: end})
	require.NoError(t, err)
	require.Nil(t, report.Since)
	require.Equal(t, formatTime(end), *report.Until)
	require.Equal(t, end, report.Period.Until)
	sections := map[string]any{}
	for _, s := range report.Sections {
		sections[s.ID] = s.Data
		require.NotEmpty(t, s.Controls, s.ID)
	}
	policies := sections[controls.SectionPolicies].([]Policy)
	require.Len(t, policies, 2)
	require.Equal(t, "billing", policies[1].Queue)
	require.Equal(t, 40.0, policies[1].LeaseDurationSeconds)
	require.Equal(t, 40*time.Second, policies[1].Durations.Lease)
	history := sections[controls.SectionPolicy].([]Record)
	require.Equal(t, "CHG-1 before the end", history[len(history)-1].Reason)
	require.True(t, sections[controls.SectionAudit].(audit.Report).Passed)
	from, short := report.Period.OutcomesCoverFrom()
	require.True(t, short, "an open start is longer than the tallies are kept")
	require.Equal(t, report.Period.GeneratedAt.Add(-OutcomeRetention), from)

	report, err = Build(ctx, auditor, Options{SinceBack: time.Hour})
	require.NoError(t, err)
	require.Nil(t, report.Until)
	require.Equal(t, report.Period.GeneratedAt.Add(-time.Hour), report.Period.Since)
	_, short = report.Period.OutcomesCoverFrom()
	require.False(t, short)
	for _, s := range report.Sections {
		if s.ID == controls.SectionPolicies {
			require.Equal(t, 50.0, s.Data.([]Policy)[1].LeaseDurationSeconds, "without Until, today's policy")
		}
	}
}

func TestBuildRefusesAnEmptyPeriodAndNamesTheReadThatFailed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	auditor := db.LoginPool(t, "durable_job_auditor")

	_, err := Build(ctx, auditor, Options{SinceBack: time.Hour, UntilBack: 2 * time.Hour})
	require.ErrorIs(t, err, ErrEmptyPeriod)
	var periodErr *PeriodError
	require.ErrorAs(t, err, &periodErr)
	require.True(t, periodErr.Until.Before(periodErr.Since))
	require.Contains(t, err.Error(), "the period's end is not after its start (")

	worker := db.LoginPool(t, "durable_job_worker")
	_, err = Build(ctx, worker, Options{})
	var readErr *ReadError
	require.ErrorAs(t, err, &readErr)
	require.Equal(t, "read migration version", readErr.Read)
	require.ErrorIs(t, err, goclient.ErrPermissionDenied)
	require.True(t, errors.Is(err, readErr.Err))
	require.Contains(t, err.Error(), "read migration version: ")
}
