package evidence

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/mightyetl/leasefence/audit"
	"github.com/mightyetl/leasefence/controls"
	"github.com/mightyetl/leasefence/goclient"
	"github.com/mightyetl/leasefence/internal/testdb"
)

func TestParseEndReadsATimeOrADurationBack(t *testing.T) {
	t.Parallel()
	at, back, ok := ParseEnd("")
	require.True(t, ok, "an open end")
	require.True(t, at.IsZero())
	require.Zero(t, back)
	at, back, ok = ParseEnd("2026-05-01T03:04:05Z")
	require.True(t, ok)
	require.Equal(t, time.Date(2026, 5, 1, 3, 4, 5, 0, time.UTC), at)
	require.Zero(t, back)
	at, back, ok = ParseEnd("720h")
	require.True(t, ok)
	require.True(t, at.IsZero())
	require.Equal(t, 720*time.Hour, back)
	for _, bad := range []string{"-1h", "0s", "yesterday", "2026-05-01"} {
		_, _, ok := ParseEnd(bad)
		require.False(t, ok, bad)
	}
}

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
	require.Equal(t, SchemaVersion, report.SchemaVersion)
	var name, system, head string
	var last int64
	var count int
	require.NoError(t, admin.QueryRow(ctx, `SELECT current_database(), (SELECT system_identifier::text FROM pg_control_system()),
		(SELECT count(*) FROM durable_jobs.control_evidence_record WHERE recorded_at < $1),
		(SELECT max(evidence_record_id) FROM durable_jobs.control_evidence_record WHERE recorded_at < $1)`, end).
		Scan(&name, &system, &count, &last))
	require.NoError(t, admin.QueryRow(ctx, `SELECT encode(record_hash, 'hex') FROM durable_jobs.control_evidence_record
		WHERE evidence_record_id = $1`, last).Scan(&head))
	require.Equal(t, Database{SystemIdentifier: system, Name: name}, report.Database)
	require.Equal(t, count, report.Chain.RecordCount)
	require.Equal(t, int64(1), *report.Chain.FirstID)
	require.Equal(t, last, *report.Chain.LastID)
	require.Equal(t, head, *report.Chain.Head)
	require.Len(t, report.Chain.Links, count, "every record of the period is a link")
	require.Equal(t, ChainLink{ID: last, Hash: head}, report.Chain.Links[count-1])
	encoded, err := json.Marshal(report)
	require.NoError(t, err)
	digest, err := BodyDigest(encoded)
	require.NoError(t, err)
	require.Equal(t, report.BodyDigest, digest)
	require.True(t, sections[controls.SectionAudit].(audit.Report).Passed)
	access := sections[controls.SectionAccess].(audit.AccessReview)
	require.Empty(t, access.AsOf, "the report's generated_at is the review's time")
	require.NotEmpty(t, access.Logins)
	// Its digest is of its own content (the shared cluster's logins
	// change under other tests, so no second read is compared here; the
	// CLI's test compares with leasectl access on a cluster of its own).
	section, err := json.Marshal(access)
	require.NoError(t, err)
	own, err := audit.BodyDigest(section)
	require.NoError(t, err)
	require.Equal(t, own, access.BodyDigest)
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

func TestReportBodyDigestIgnoresGenerationTimeAndCatchesAnyOtherChange(t *testing.T) {
	t.Parallel()
	report := `{"schema_version": 2, "generated_at": "2026-12-04T10:00:00.000Z", "body_digest": "sha256:x",
		"since": null, "sections": [{"id": "EVIDENCE-X", "data": {"reason": "<b> & \u00e9", "count": 40, "ratio": 0.25}}]}`
	want, err := BodyDigest([]byte(report))
	require.NoError(t, err)
	// What jq -S -c 'del(.generated_at, .body_digest)' prints, without its newline.
	canonical := `{"schema_version":2,"sections":[{"data":{"count":40,"ratio":0.25,"reason":"<b> & é"},"id":"EVIDENCE-X"}],"since":null}`
	sum := sha256.Sum256([]byte(canonical))
	require.Equal(t, "sha256:"+hex.EncodeToString(sum[:]), want)

	later := strings.Replace(report, "10:00:00.000Z", "11:00:00.000Z", 1)
	got, err := BodyDigest([]byte(later))
	require.NoError(t, err)
	require.Equal(t, want, got, "the generation time is not part of the body")
	changed := strings.Replace(report, `"count": 40`, `"count": 41`, 1)
	got, err = BodyDigest([]byte(changed))
	require.NoError(t, err)
	require.NotEqual(t, want, got)
	_, err = BodyDigest([]byte(`[1, 2]`))
	require.Error(t, err)
}

func TestReportDisposalSumsPurgesAndErasuresAndRefusesAMalformedPurgeRecord(t *testing.T) {
	t.Parallel()
	q := func(s string) *string { return &s }
	records := []evidenceRow{
		{ID: 7, Kind: "job_data_purged", NewValues: []byte(`{"batch_size": 2, "purged": [
			{"queue_name": "ingest", "purge_kind": "payload", "purged_count": 2}]}`)},
		{ID: 8, Kind: "retention_policy_changed", Queue: q("billing"), NewValues: []byte(`{"payload_retention": "01:00:00"}`),
			Reason: "CHG-8 keep less"},
		{ID: 9, Kind: "job_data_purged", NewValues: []byte(`{"batch_size": 2, "purged": [
			{"queue_name": "billing", "purge_kind": "job_record", "purged_count": 1},
			{"queue_name": "ingest", "purge_kind": "payload", "purged_count": 1}]}`)},
		{ID: 10, Kind: "job_payload_erased", Queue: q("billing"), NewValues: []byte(`{"job_status": "FAILED"}`), Reason: "DSR-1"},
		{ID: 11, Kind: "job_payload_erased", Queue: q("billing"), NewValues: []byte(`{"job_status": "FAILED"}`), Reason: "DSR-2"},
		{ID: 12, Kind: "deployment_recorded", NewValues: []byte(`{}`)},
	}
	d, err := disposalOf(records)
	require.NoError(t, err)
	require.Equal(t, 2, d.PurgeRuns)
	require.Equal(t, []PurgedCount{{"billing", "job_record", 1}, {"ingest", "payload", 3}}, d.Purged)
	require.Equal(t, []ErasureCount{{"billing", "FAILED", 2}}, d.Erasures)
	require.Len(t, d.RetentionPolicyChanges, 1)
	require.Equal(t, "CHG-8 keep less", d.RetentionPolicyChanges[0].Reason)

	for _, bad := range []string{`[]`, `{"purged": [{"queue_name": "ingest", "purge_kind": "payload"}]}`} {
		_, err = disposalOf([]evidenceRow{{ID: 3, Kind: "job_data_purged", NewValues: []byte(bad)}})
		require.ErrorContains(t, err, "record 3", bad)
	}
	_, err = disposalOf([]evidenceRow{{ID: 4, Kind: "job_payload_erased", NewValues: []byte(`"x"`)}})
	require.ErrorContains(t, err, "record 4")

	c := chainOf(records)
	require.Equal(t, 6, c.RecordCount)
	require.Equal(t, int64(7), *c.FirstID)
	require.Equal(t, int64(12), *c.LastID)
	require.Equal(t, Chain{RecordCount: 0, Links: []ChainLink{}}, chainOf(nil))
}

// A period with a job and a stale renewal in it: the outcome and job status
// sections count them, as the period's totals (from Since minus from Until).
func TestBuildCountsTheOutcomesAndJobStatusesOfThePeriod(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	admin := db.Pool(t)
	_, err := admin.Exec(ctx, `SELECT durable_jobs.enqueue_job('ev.counts', '{}'::jsonb, NULL, NULL, 3)`)
	require.NoError(t, err)
	var renewed string
	require.NoError(t, admin.QueryRow(ctx, `SELECT renewal_outcome FROM durable_jobs.renew_job_lease(
		(SELECT max(job_record_id) FROM durable_jobs.job_record), gen_random_uuid(), 'guesser-1')`).Scan(&renewed))
	require.Equal(t, "stale", renewed)

	report, err := Build(ctx, db.LoginPool(t, "durable_job_auditor"),
		Options{SinceBack: time.Hour, Until: time.Now().Add(time.Hour)})
	require.NoError(t, err)
	var outcomes []Outcome
	var statuses []Status
	for _, s := range report.Sections {
		switch s.ID {
		case controls.SectionOutcomes:
			outcomes = s.Data.([]Outcome)
		case controls.SectionJobStatus:
			statuses = s.Data.([]Status)
		}
	}
	require.Contains(t, outcomes, Outcome{Queue: "*", Outcome: "stale_renewal", Count: 1})
	require.Contains(t, statuses, Status{Queue: "ev.counts", Status: "QUEUED", Count: 1})
}

// A change of the change-control setting is part of the policy history:
// it governs what every later policy change must carry.
func TestPolicyHistoryShowsChangeControlChanges(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	_, err := db.Pool(t).Exec(ctx, `SELECT durable_jobs.set_change_control('^OPS-[0-9]+$', false, true,
		'tickets of the ops tracker only', 'CHG-7')`)
	require.NoError(t, err)

	report, err := Build(ctx, db.LoginPool(t, "durable_job_auditor"), Options{})
	require.NoError(t, err)
	var kinds []string
	for _, s := range report.Sections {
		if s.ID == controls.SectionPolicy {
			for _, r := range s.Data.([]Record) {
				kinds = append(kinds, r.Kind)
			}
		}
	}
	require.Contains(t, kinds, "change_control_changed")
}

// Issue 39, items 3 and 4: the report counts each login's operator actions
// on jobs per queue (never a job id or a reason) and lists the
// maker-checker records.
func TestReportCountsOperatorActionsAndListsApprovals(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	admin := db.Pool(t)
	maker, checker := db.LoginPool(t, "durable_job_operator"), db.LoginPool(t, "durable_job_operator")
	var makerName, checkerName string
	require.NoError(t, maker.QueryRow(ctx, "SELECT session_user").Scan(&makerName))
	require.NoError(t, checker.QueryRow(ctx, "SELECT session_user").Scan(&checkerName))
	var first, second int64
	require.NoError(t, admin.QueryRow(ctx, `SELECT durable_jobs.enqueue_job('t39.actions', '{}'), durable_jobs.enqueue_job('t39.actions', '{}')`).
		Scan(&first, &second))
	for _, id := range []int64{first, second} {
		_, err := maker.Exec(ctx, `SELECT durable_jobs.cancel_job($1, 'OPS-1: duplicate order')`, id)
		require.NoError(t, err)
	}
	_, err := checker.Exec(ctx, `SELECT durable_jobs.replay_job($1, 'OPS-2: run it after all')`, first)
	require.NoError(t, err)
	var proposal int64
	require.NoError(t, maker.QueryRow(ctx, `SELECT durable_jobs.propose_change('lease_policy', 't39.actions',
		'{"lease_duration": "40 seconds", "renewal_interval": "10 seconds", "max_claim_lifetime": "1 hour", "renewal_enabled": true}',
		'OPS-3: longer')`).Scan(&proposal))
	_, err = checker.Exec(ctx, `SELECT durable_jobs.approve_change($1)`, proposal)
	require.NoError(t, err)

	report, err := Build(ctx, db.LoginPool(t, "durable_job_auditor"), Options{})
	require.NoError(t, err)
	var actions []OperatorAction
	var processed []Processing
	var approvals []string
	for _, s := range report.Sections {
		switch s.ID {
		case controls.SectionOperatorActions:
			actions = s.Data.([]OperatorAction)
		case controls.SectionProcessing:
			processed = s.Data.([]Processing)
		case controls.SectionApprovals:
			for _, r := range s.Data.([]Record) {
				approvals = append(approvals, r.Kind+" by "+r.ChangedByRole)
			}
		}
	}
	require.Equal(t, []OperatorAction{
		{Queue: "t39.actions", Action: "job_cancelled", Login: makerName, Count: 2},
		{Queue: "t39.actions", Action: "job_replayed", Login: checkerName, Count: 1},
	}, actions)
	require.Equal(t, []string{"change_proposed by " + makerName, "change_approved by " + checkerName}, approvals)
	require.Equal(t, []Processing{{Queue: "t39.actions", Enqueued: 2, Cancelled: 2, Replayed: 1}}, processed,
		"the period's processing, each counted when it happened")
	body, err := json.Marshal(report)
	require.NoError(t, err)
	require.NotContains(t, string(body), fmt.Sprintf(`"job_record_id":%d`, first), "no job ids")
	require.NotContains(t, string(body), "duplicate order\",\"action", "no reasons in the counts")
}

// Issue 39, item 8: a period's lease outcome figures are the whole minutes
// inside it, and the report says so: a period from 03:20:10 to 03:25:40
// counts 03:21:00 to 03:25:00 (the minutes it holds only part of are out,
// at either end); a period on minute boundaries counts exactly itself.
func TestOutcomesWindowIsTheWholeMinutesInsideThePeriod(t *testing.T) {
	at := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339, s)
		require.NoError(t, err)
		return v
	}
	from, until := Period{Since: at("2026-12-06T03:20:10Z"), Until: at("2026-12-06T03:25:40Z")}.outcomesWindow()
	require.Equal(t, at("2026-12-06T03:21:00Z"), from)
	require.Equal(t, at("2026-12-06T03:25:00Z"), until)
	from, until = Period{Since: at("2026-12-06T03:20:00Z"), Until: at("2026-12-06T03:25:00Z")}.outcomesWindow()
	require.Equal(t, at("2026-12-06T03:20:00Z"), from)
	require.Equal(t, at("2026-12-06T03:25:00Z"), until)
	from, until = Period{}.outcomesWindow()
	require.True(t, from.IsZero() && until.IsZero(), "an open period is open at both ends")
}

// Issue 39, item 8: a closed period's processing figures do not change
// when a job changes after the period (job status totals are a snapshot of
// report time, these are not).
func TestClosedPeriodProcessingStaysWhenJobsChangeLater(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	admin := db.Pool(t)
	var job int64
	require.NoError(t, admin.QueryRow(ctx, `SELECT durable_jobs.enqueue_job('t39.closed', '{}')`).Scan(&job))
	var until time.Time
	require.NoError(t, admin.QueryRow(ctx, `SELECT clock_timestamp()`).Scan(&until))
	auditor := db.LoginPool(t, "durable_job_auditor")
	processed := func() []Processing {
		t.Helper()
		report, err := Build(ctx, auditor, Options{Until: until})
		require.NoError(t, err)
		for _, s := range report.Sections {
			if s.ID == controls.SectionProcessing {
				return s.Data.([]Processing)
			}
		}
		t.Fatal("no processing section")
		return nil
	}
	before := processed()
	require.Contains(t, before, Processing{Queue: "t39.closed", Enqueued: 1})
	_, err := db.LoginPool(t, "durable_job_operator").Exec(ctx, `SELECT durable_jobs.cancel_job($1, 'OPS-4: not needed')`, job)
	require.NoError(t, err)
	require.Equal(t, before, processed(), "a cancel after the period leaves its figures as they were")
}

// Issue 36, item 2: building the report first records a promotion no
// reader has seen yet (played by the timeline the bundle saw last), and
// the availability section lists it with its timelines, never a job; a
// login that cannot read the server's availability is told which read
// failed.
func TestReportRecordsAndListsAvailabilityEvents(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	admin := db.Pool(t)
	_, err := admin.Exec(ctx, `UPDATE durable_jobs.server_timeline_state SET server_timeline = 5`)
	require.NoError(t, err)
	auditor := db.LoginPool(t, "durable_job_auditor")

	report, err := Build(ctx, auditor, Options{})
	require.NoError(t, err)
	var events []Record
	for _, s := range report.Sections {
		if s.ID == controls.SectionAvailability {
			events = s.Data.([]Record)
			require.Equal(t, controls.AvailabilityFailover, s.Controls[0].ID)
		}
	}
	require.Len(t, events, 1)
	require.Equal(t, "server_timeline_changed", events[0].Kind)
	require.Empty(t, events[0].Queue)
	var previous map[string]any
	require.NoError(t, json.Unmarshal(events[0].PreviousValues, &previous))
	require.EqualValues(t, 5, previous["server_timeline"])
	var next map[string]any
	require.NoError(t, json.Unmarshal(events[0].NewValues, &next))
	require.EqualValues(t, 1, next["server_timeline"])
	require.ElementsMatch(t, []string{"server_timeline", "server_started_at", "seen_at"}, slices.Collect(maps.Keys(next)))

	again, err := Build(ctx, auditor, Options{})
	require.NoError(t, err)
	require.Equal(t, report.Chain, again.Chain, "a second report records nothing more")

	_, err = admin.Exec(ctx, `REVOKE EXECUTE ON FUNCTION durable_jobs.server_availability() FROM durable_job_auditor`)
	require.NoError(t, err)
	_, err = Build(ctx, auditor, Options{})
	var readErr *ReadError
	require.ErrorAs(t, err, &readErr)
	require.Equal(t, "read the server's availability", readErr.Read)
	require.ErrorIs(t, err, goclient.ErrPermissionDenied)
}
