package sqlintegration

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	sqlbundle "github.com/mightyetl/leasefence/sql"
)

// staleTallyVersion is the migration that charges a stale call to a queue
// only for the login that made the job's last claim, and counts stale
// releases (012).
const staleTallyVersion = int32(12)

// A worker login that claims one job of another team's queue (any worker
// may) and then guesses the ids of that queue's other jobs raises nothing
// of that queue's: not its stale-renewal tally, not its health row, so it
// cannot trip the queue's stale-claim alert. Until migration 012 the
// auditor functions charged every stale renewal of a login that was the
// last claimer of any job of the queue to the queue.
func TestAClaimerOfAQueueGuessingItsOtherJobsRaisesNothingOfTheQueue(t *testing.T) {
	t.Parallel()
	f := setup(t)
	queue := f.queue + "_team_b"
	f.setPolicy(t, queue, 30*time.Second, 10*time.Second, time.Hour, true)
	enqueueOn(t, f.ctx, f.admin, queue, `{"team": "b", "n": 1}`)
	enqueueOn(t, f.ctx, f.admin, queue, `{"team": "b", "n": 2}`)
	teamB := f.worker(t)
	guesser := f.worker(t)
	mustClaim(t, f.ctx, guesser, queue, "worker-a") // the guesser is now a claimer of team b's queue
	victim := mustClaim(t, f.ctx, teamB, queue, "worker-b")
	starBefore := f.outcomeTotal(t, "*", "stale_renewal")

	for i := 0; i < 10; i++ {
		mustRenew(t, f.ctx, guesser, victim.JobID, randomToken(t), "worker-b", "stale", "a guessed token is stale")
		var outcome string
		require.NoError(t, guesser.QueryRow(f.ctx,
			"SELECT renewal_outcome FROM durable_jobs.renew_job_leases($1, ARRAY[$2::bigint], ARRAY[$3::uuid])",
			"worker-b", victim.JobID, randomToken(t)).Scan(&outcome))
		require.Equal(t, "stale", outcome, "a guessed token in a batch is stale")
	}
	require.Equal(t, int64(0), f.outcomeTotal(t, queue, "stale_renewal"),
		"a login that claimed a job of the queue cannot charge its guesses of the queue's other jobs to the queue")
	require.Equal(t, starBefore+20, f.outcomeTotal(t, "*", "stale_renewal"), "the guesses are counted under '*'")
	var staleLastHour int64
	require.NoError(t, f.admin.QueryRow(f.ctx,
		"SELECT stale_renewals_last_hour FROM durable_jobs.lease_health_by_queue() WHERE queue_name = $1", queue).
		Scan(&staleLastHour))
	require.Equal(t, int64(0), staleLastHour, "the queue's health (and its alert) shows none of the guesses")

	mustRenew(t, f.ctx, teamB, victim.JobID, randomToken(t), "worker-b", "stale", "team b's own wrong token is stale")
	require.Equal(t, int64(1), f.outcomeTotal(t, queue, "stale_renewal"),
		"a stale renewal by the login that made the job's last claim is the queue's trouble")
}

// A stale release_job_claim answers false and commits, so the database
// counts it, as stale_release: under the job's queue for the login that
// made the job's last claim, under '*' for anyone else. Until migration 012
// it was counted nowhere.
func TestAStaleReleaseIsCounted(t *testing.T) {
	t.Parallel()
	f := setup(t)
	enqueueOn(t, f.ctx, f.admin, f.queue, `{"part": "release"}`)
	w := f.worker(t)
	c := mustClaim(t, f.ctx, w, f.queue, "worker-r")
	released, err := release(f.ctx, w, c, "worker-r")
	require.NoError(t, err)
	require.True(t, released, "the live claim is released")
	require.Equal(t, int64(0), f.outcomeTotal(t, f.queue, "stale_release"), "a release that worked counts nothing")

	released, err = release(f.ctx, w, c, "worker-r")
	require.NoError(t, err)
	require.False(t, released, "releasing the same claim again answers false")
	require.Equal(t, int64(1), f.outcomeTotal(t, f.queue, "stale_release"),
		"the stale release is counted under its job's queue")

	other := f.worker(t)
	starBefore := f.outcomeTotal(t, "*", "stale_release")
	released, err = release(f.ctx, other, claim{JobID: c.JobID, Token: randomToken(t)}, "worker-r")
	require.NoError(t, err)
	require.False(t, released)
	require.Equal(t, int64(1), f.outcomeTotal(t, f.queue, "stale_release"), "another login's guessed release is not the queue's")
	require.Equal(t, starBefore+1, f.outcomeTotal(t, "*", "stale_release"), "it is counted under '*'")

	var staleReleases int64
	require.NoError(t, f.admin.QueryRow(f.ctx,
		"SELECT stale_releases_last_hour FROM durable_jobs.lease_health_by_queue() WHERE queue_name = $1", f.queue).
		Scan(&staleReleases))
	require.Equal(t, int64(1), staleReleases, "lease_health_by_queue reports the queue's stale releases")
}

// Migration 012 keeps what the auditor functions showed: a stale renewal
// counted before it, by a login that was not the last claimer of any job
// of its queue, was shown under '*' and is moved there; one by a claimer
// stays under its queue. Down deletes the stale_release counts, which
// version 11 cannot hold, and keeps every other count.
func TestMigrationTwelveKeepsWhatTheReadersShowed(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	_, conn := emptyDatabase(t, ctx)
	m := migrator(t, ctx, conn)
	require.GreaterOrEqual(t, sqlbundle.NewestVersion(), staleTallyVersion)
	require.NoError(t, m.MigrateTo(ctx, staleTallyVersion-1))
	_, err := conn.Exec(ctx, `
		INSERT INTO durable_jobs.job_record (queue_name, job_status, lease_claimed_by_role, max_attempts, run_after)
		VALUES ('mig12_q', 'SUCCEEDED', 'mig12_claimer', 3, clock_timestamp());
		INSERT INTO durable_jobs.lease_outcome_tally (tally_minute, queue_name, outcome_kind, tally_backend_pid, counted_by_role, outcome_count)
		SELECT date_trunc('minute', clock_timestamp(), 'UTC') - interval '5 minutes', q, k, p, r, c
		FROM (VALUES ('mig12_q', 'stale_renewal', 7, 'mig12_claimer', 2::bigint),
		             ('mig12_q', 'stale_renewal', 7, 'mig12_guesser', 3),
		             ('*', 'stale_renewal', 7, 'mig12_guesser', 4),
		             ('mig12_q', 'stale_renewal', 8, '', 5),
		             ('mig12_q', 'reclaim', 7, 'mig12_guesser', 6)) AS v(q, k, p, r, c)`)
	require.NoError(t, err)
	const totals = `SELECT string_agg(format('%s/%s/%s', queue_name, outcome_kind, outcome_count), ' '
		ORDER BY queue_name, outcome_kind) FROM durable_jobs.lease_outcome_totals(NULL)`
	var before string
	require.NoError(t, conn.QueryRow(ctx, totals).Scan(&before))
	require.Equal(t, "*/stale_renewal/7 mig12_q/reclaim/6 mig12_q/stale_renewal/7", before)

	require.NoError(t, m.MigrateTo(ctx, staleTallyVersion))
	var after string
	require.NoError(t, conn.QueryRow(ctx, totals).Scan(&after))
	require.Equal(t, before, after, "the upgrade shows every count where the old readers showed it")
	var starRows string
	require.NoError(t, conn.QueryRow(ctx, `SELECT string_agg(format('%s/%s', queue_name, outcome_count), ' ' ORDER BY queue_name)
		FROM durable_jobs.lease_outcome_tally WHERE counted_by_role = 'mig12_guesser' AND outcome_kind = 'stale_renewal'`).
		Scan(&starRows))
	require.Equal(t, "*/7", starRows, "the guesser's count is moved to '*', summed into its row of the same minute and backend")

	_, err = conn.Exec(ctx, `INSERT INTO durable_jobs.lease_outcome_tally
		(tally_minute, queue_name, outcome_kind, tally_backend_pid, counted_by_role, outcome_count)
		VALUES (date_trunc('minute', clock_timestamp(), 'UTC'), 'mig12_q', 'stale_release', 9, 'mig12_claimer', 1)`)
	require.NoError(t, err)
	require.NoError(t, m.MigrateTo(ctx, staleTallyVersion-1))
	var down string
	require.NoError(t, conn.QueryRow(ctx, totals).Scan(&down))
	require.Equal(t, before, down, "down drops the stale_release count and keeps every other")
}
