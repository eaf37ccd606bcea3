package sqlintegration

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
)

// availability is one server_availability() row.
type availability struct {
	Timeline, Previous *int64
	SeenAt, StartedAt  time.Time
	InRecovery         bool
}

// readAvailability calls server_availability() on q.
func readAvailability(t *testing.T, ctx context.Context, q querier) availability {
	t.Helper()
	var a availability
	var at time.Time
	require.NoError(t, q.QueryRow(ctx, `SELECT server_timeline, timeline_seen_at, previous_timeline, server_started_at,
		in_recovery, database_time FROM durable_jobs.server_availability()`).
		Scan(&a.Timeline, &a.SeenAt, &a.Previous, &a.StartedAt, &a.InRecovery, &at))
	return a
}

// availabilityRecords is the availability evidence on q: kind, previous
// and new values, oldest first.
func availabilityRecords(t *testing.T, ctx context.Context, q querier) []evidenceRow {
	t.Helper()
	rows, err := q.Query(ctx, `SELECT evidence_record_id, evidence_kind, queue_name, previous_values, new_values, recorded_at
		FROM durable_jobs.control_evidence_history(NULL)
		WHERE evidence_kind IN ('server_timeline_changed', 'server_restarted') ORDER BY evidence_record_id`)
	require.NoError(t, err)
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (evidenceRow, error) {
		var r evidenceRow
		err := row.Scan(&r.ID, &r.Kind, &r.Queue, &r.Previous, &r.New, &r.At)
		return r, err
	})
	require.NoError(t, err)
	return out
}

// Issue 36, item 2, on a real promotion. A job is claimed on the primary
// and replayed to the standby; the primary dies and the standby is
// promoted. The standby, before it is promoted, reads as one (no timeline,
// nothing recorded, no error). On the new primary two auditor sessions
// race to see the promotion: the first records it (timeline 1 -> 2) and
// holds the state row; the second waits, then sees the recorded state and
// records nothing. The job's lost claim, reclaimed there without costing
// an attempt, is a failover reclaim in lease health, not a reclaim. A
// restart in place is then recorded as server_restarted. The records hold
// timelines and times only. Fails on 030, which has neither the function
// nor the column.
func TestServerAvailabilityRecordsAPromotionOnce(t *testing.T) {
	p := newFailoverPair(t)
	ctx := p.ctx
	auditorURL := p.db.LoginURL(t, "durable_job_auditor")
	workerURL := p.workerURL(t)
	job := p.enqueue(t, `{"job": "claimed before the promotion"}`)
	lost := mustClaim(t, ctx, p.connect(t, workerURL), p.queue, "worker-before")
	require.Equal(t, job, lost.JobID)

	before := readAvailability(t, ctx, p.connect(t, auditorURL))
	require.False(t, before.InRecovery)
	require.NotNil(t, before.Timeline)
	require.EqualValues(t, 1, *before.Timeline, "a fresh cluster writes on timeline 1")
	require.Nil(t, before.Previous, "no timeline seen before the first")
	require.Empty(t, availabilityRecords(t, ctx, p.admin), "nothing changed since the migration")

	require.NoError(t, p.standby.WaitReplayedFrom(ctx, p.primary))
	standby := readAvailability(t, ctx, p.connect(t, onPort(t, auditorURL, p.standby)))
	require.True(t, standby.InRecovery, "the standby says it is one")
	require.Nil(t, standby.Timeline, "recovery hides the standby's timeline")

	require.NoError(t, p.primary.StopImmediate(), "the primary dies")
	// Started again at the end, so that the test's database can be dropped.
	t.Cleanup(func() { _ = p.primary.Restart(context.Background()) })
	require.NoError(t, p.standby.Promote(ctx), "promote the standby")
	promoted, err := pgxpool.New(ctx, onPort(t, p.db.URL, p.standby))
	require.NoError(t, err)
	t.Cleanup(promoted.Close)
	p.admin = promoted

	first := p.connect(t, onPort(t, auditorURL, p.standby))
	second := p.connect(t, onPort(t, auditorURL, p.standby))
	tx, err := first.Begin(ctx)
	require.NoError(t, err)
	seen := readAvailability(t, ctx, tx)
	require.EqualValues(t, 2, *seen.Timeline, "the promoted standby writes on timeline 2")
	require.EqualValues(t, 1, *seen.Previous)
	waited := make(chan availability, 1)
	go func() {
		var a availability
		var at time.Time
		err := second.QueryRow(ctx, `SELECT server_timeline, timeline_seen_at, previous_timeline, server_started_at,
			in_recovery, database_time FROM durable_jobs.server_availability()`).
			Scan(&a.Timeline, &a.SeenAt, &a.Previous, &a.StartedAt, &a.InRecovery, &at)
		if err != nil {
			close(waited)
			return
		}
		waited <- a
	}()
	p.waitBlockedBy(t, pid(second), pid(first))
	require.NoError(t, tx.Commit(ctx))
	other, ok := <-waited
	require.True(t, ok, "the second session's read succeeds")
	require.EqualValues(t, 2, *other.Timeline)
	require.EqualValues(t, 1, *other.Previous)
	require.True(t, other.SeenAt.Equal(seen.SeenAt), "the second session reads the state the first recorded")
	records := availabilityRecords(t, ctx, p.admin)
	require.Len(t, records, 1, "the promotion is recorded once")
	require.Equal(t, "server_timeline_changed", records[0].Kind)
	require.Nil(t, records[0].Queue)
	require.EqualValues(t, 1, records[0].Previous["server_timeline"])
	require.EqualValues(t, 2, records[0].New["server_timeline"])
	require.ElementsMatch(t, []string{"server_timeline", "server_started_at", "seen_at"}, keys(records[0].New),
		"timelines and times only: no job id")

	p.waitDatabaseTimePast(t, lost.ExpiresAt)
	again := mustClaim(t, ctx, p.connect(t, onPort(t, workerURL, p.standby)), p.queue, "worker-after")
	require.Equal(t, job, again.JobID)
	require.EqualValues(t, 1, again.Attempt, "the claim lost with the primary costs no attempt")
	var reclaims, failovers int64
	require.NoError(t, p.connect(t, onPort(t, auditorURL, p.standby)).QueryRow(ctx,
		`SELECT reclaims_last_hour, failover_reclaims_last_hour FROM durable_jobs.lease_health_by_queue()
		 WHERE queue_name = $1`, p.queue).Scan(&reclaims, &failovers))
	require.EqualValues(t, 1, failovers, "lease health counts the failover reclaim")
	require.Zero(t, reclaims, "and not as an ordinary reclaim")

	require.NoError(t, p.standby.Restart(ctx), "restart the new primary in place")
	restarted := readAvailability(t, ctx, p.connect(t, onPort(t, auditorURL, p.standby)))
	require.EqualValues(t, 2, *restarted.Timeline)
	require.True(t, restarted.StartedAt.After(seen.StartedAt), "a new start time")
	require.True(t, restarted.SeenAt.Equal(seen.SeenAt), "the timeline was seen when it began, not at the restart")
	after := availabilityRecords(t, ctx, p.connect(t, onPort(t, p.db.URL, p.standby)))
	require.Len(t, after, 2)
	require.Equal(t, "server_restarted", after[1].Kind, "a restart on the same timeline is recorded as one")
	require.EqualValues(t, 2, after[1].Previous["server_timeline"])
	require.EqualValues(t, 2, after[1].New["server_timeline"])
}

// keys is the keys of a JSON object.
func keys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
