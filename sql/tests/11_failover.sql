-- 11_failover: what keeps a claim fenced, and a job fairly counted, across a
-- database failover or restart. First the generation floor of migration 011, in
-- claim_next_jobs since migration 017 (functions/claim.sql; 011's
-- trigger and its function are dropped). A claim's fencing generation is at
-- least the WAL timeline's floor, ((timeline - 1) << 40) + 1, and a call
-- that claims sets synchronous_commit to local for the rest of its
-- transaction unless it is already off or local; a call that claims
-- nothing, a renewal and a completion leave it alone. The throwaway cluster
-- runs on timeline 1 (floor 1); a generation below the floor is made by the
-- superuser with negative values, which no claim can produce. The
-- promoted-timeline case runs against a real standby in
-- sql/integration/failover_test.go. Then the reclaim of a claim lost with
-- the database (migration 029): no attempt charged, at most three times.
-- Last, server_availability (migration 031): the timeline and start time
-- the bundle sees, and each restart or promotion recorded once as evidence.
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
SELECT plan(37);
\ir fixture/fixture.sql

CREATE TEMP TABLE t11a_job (label text PRIMARY KEY, job_record_id bigint) ON COMMIT DROP;
CREATE TEMP TABLE t11a_claim (label text PRIMARY KEY, job_record_id bigint, lease_claim_token uuid,
                             lease_fencing_generation bigint, sync_after text) ON COMMIT DROP;
GRANT ALL ON t11a_job, t11a_claim TO PUBLIC;
CREATE FUNCTION pg_temp.t11a_floor() RETURNS bigint LANGUAGE sql VOLATILE AS $$
    SELECT ((('x' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))::bit(32)::bigint - 1) << 40) + 1;
$$;
-- Claims the job of queue t11a.<label> as durable_job_worker with
-- synchronous_commit set to p_sync first, and records the claim (none when
-- nothing was claimed) with the setting in force right after it.
CREATE FUNCTION pg_temp.t11a_claim_with(p_label text, p_sync text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    PERFORM set_config('synchronous_commit', p_sync, true);
    SET LOCAL ROLE durable_job_worker;
    INSERT INTO t11a_claim SELECT p_label, c.job_record_id, c.lease_claim_token, c.lease_fencing_generation,
                                 current_setting('synchronous_commit')
    FROM durable_jobs.claim_next_job('t11a.' || p_label, 'worker-18') c;
    RESET ROLE;
    RETURN current_setting('synchronous_commit');
END;
$$;

INSERT INTO t11a_job VALUES
    ('plain', durable_jobs.enqueue_job('t11a.plain', '{"n": 1}'::jsonb)),
    ('sync', durable_jobs.enqueue_job('t11a.sync', '{"n": 2}'::jsonb)),
    ('below', durable_jobs.enqueue_job('t11a.below', '{"n": 3}'::jsonb)),
    ('local', durable_jobs.enqueue_job('t11a.local', '{"n": 4}'::jsonb));

-- No BEFORE trigger and no other writer: the floor is claim_next_jobs's
-- alone. (Migration 027's wake-up triggers are AFTER triggers and write
-- nothing.)
SELECT is_empty($$SELECT tgname FROM pg_trigger WHERE tgrelid = 'durable_jobs.job_record'::regclass AND NOT tgisinternal
                  AND (tgtype & 2) <> 0$$,
                'job_record has no BEFORE trigger: a BEFORE ROW UPDATE trigger locks the old row before every UPDATE of job_record, renewals included (migration 017)');
SELECT is_empty($$SELECT p.oid::regprocedure::text FROM pg_proc p
                  WHERE p.pronamespace = 'durable_jobs'::regnamespace
                    AND p.prosrc ~ '(SET|,|NEW\.)\s*lease_fencing_generation\s*:?=[^=]'
                    AND p.oid <> 'durable_jobs.claim_next_jobs(text,text,integer)'::regprocedure$$,
                'no function but claim_next_jobs assigns lease_fencing_generation');
SELECT matches((SELECT prosrc FROM pg_proc WHERE oid = 'durable_jobs.claim_next_jobs(text,text,integer)'::regprocedure),
               'lease_fencing_generation = GREATEST\(j\.lease_fencing_generation \+ 1, v_floor\)',
               'claim_next_jobs raises the generation to at least the floor');
SELECT hasnt_function('durable_jobs', 'raise_generation_to_floor', ARRAY[]::name[],
                      'the trigger function of migration 011 is gone');

-- A claim with synchronous_commit off (the test clusters' setting): the
-- generation is raised from 0 past the floor, the setting stays off.
SELECT is(pg_temp.t11a_claim_with('plain', 'off'), 'off', 'a claim leaves synchronous_commit off when it was off');
SELECT is((SELECT lease_fencing_generation FROM t11a_claim WHERE label = 'plain'), greatest(1, pg_temp.t11a_floor()),
          'a first claim gets generation 1 on timeline 1, the floor on a later timeline');

-- A claim with synchronous_commit on: set to local for the transaction.
SELECT pg_temp.t11a_claim_with('sync', 'on');
SELECT is((SELECT sync_after FROM t11a_claim WHERE label = 'sync'), 'local',
          'a claim sets synchronous_commit to local, so its COMMIT does not wait for a synchronous standby');
SELECT is(current_setting('synchronous_commit'), 'local',
          'the setting outlives claim_next_jobs (its SET clauses restore only search_path and plan_cache_mode) for the rest of the transaction');

-- Already local: stays local.
SELECT is(pg_temp.t11a_claim_with('local', 'local'), 'local', 'a claim leaves synchronous_commit local when it was local');
SELECT isnt((SELECT job_record_id FROM t11a_claim WHERE label = 'local'), NULL, 'and it claimed');

-- A call that claims nothing leaves the setting alone.
SELECT is(pg_temp.t11a_claim_with('empty', 'on'), 'on', 'a claim that claims nothing leaves synchronous_commit on');

-- A renewal and a completion do not change it (nor the generation).
SET LOCAL synchronous_commit = remote_apply;
SET LOCAL ROLE durable_job_worker;
SELECT ok((SELECT durable_jobs.renew_job_lease(c.job_record_id, c.lease_claim_token, 'worker-18') IS NOT NULL
           FROM t11a_claim c WHERE c.label = 'sync'), 'the claim renews');
RESET ROLE;
SELECT is(current_setting('synchronous_commit'), 'remote_apply',
          'a renewal leaves synchronous_commit as it was: renewals still wait for the standby');
SELECT is((SELECT j.lease_fencing_generation FROM durable_jobs.job_record j JOIN t11a_claim c USING (job_record_id)
           WHERE c.label = 'sync'),
          (SELECT lease_fencing_generation FROM t11a_claim WHERE label = 'sync'),
          'a renewal keeps the generation');
SET LOCAL ROLE durable_job_worker;
SELECT durable_jobs.complete_job(c.job_record_id, c.lease_claim_token, 'worker-18') FROM t11a_claim c WHERE c.label = 'sync';
RESET ROLE;
SELECT is(current_setting('synchronous_commit'), 'remote_apply',
          'a completion leaves synchronous_commit as it was: terminal writes still wait for the standby');

-- A generation below the floor (only the superuser can write one): the
-- claim lifts it to the floor, not to generation + 1.
UPDATE durable_jobs.job_record SET lease_fencing_generation = -10
WHERE job_record_id = (SELECT job_record_id FROM t11a_job WHERE label = 'below');
SELECT pg_temp.t11a_claim_with('below', 'off');
SELECT is((SELECT lease_fencing_generation FROM t11a_claim WHERE label = 'below'), pg_temp.t11a_floor(),
          'a claim of a generation below the floor gets the floor');
SELECT is((SELECT lease_fencing_generation FROM durable_jobs.job_record
           WHERE job_record_id = (SELECT job_record_id FROM t11a_job WHERE label = 'below')),
          pg_temp.t11a_floor(), 'and the row holds the floor');

-- ============================================================================
-- Failover reclaims (migration 029): an expired claim lost with the
-- database (the server started after the claim, or its generation is of an
-- earlier WAL timeline) is reclaimed without costing an attempt, at most
-- three times a job, and counted as a failover_reclaim, not a reclaim. The
-- restart is played by moving the claim's time before the server's start;
-- a real promotion is internal/hatest's, the Go side
-- TestAClaimLostWithTheDatabaseCostsNoAttempt.
-- ============================================================================

DO $setup$
BEGIN
    PERFORM durable_jobs.set_queue_lease_policy('t11b.failover', interval '1 hour', interval '10 minutes',
                                                interval '2 hours', true, 'pgTAP 11: failover reclaims');
END
$setup$;
SELECT durable_jobs.enqueue_job('t11b.failover', '{}'::jsonb, NULL, NULL, 1);

CREATE FUNCTION pg_temp.t11b_claim() RETURNS integer LANGUAGE sql AS $$
    SELECT attempt_number FROM durable_jobs.claim_next_job('t11b.failover', 'worker-a');
$$;
CREATE FUNCTION pg_temp.t11b_lose() RETURNS void LANGUAGE sql AS $$
    UPDATE durable_jobs.job_record
    SET lease_claimed_at = pg_catalog.pg_postmaster_start_time() - interval '1 second',
        lease_expires_at = pg_catalog.statement_timestamp() - interval '1 second',
        lease_expiry_floor = pg_catalog.statement_timestamp() - interval '1 second'
    WHERE queue_name = 't11b.failover';
$$;
CREATE FUNCTION pg_temp.t11b_tally(p_kind text) RETURNS bigint LANGUAGE sql AS $$
    SELECT COALESCE(sum(t.outcome_count), 0)::bigint FROM durable_jobs.lease_outcome_tally t
    WHERE t.queue_name = 't11b.failover' AND t.outcome_kind = p_kind;
$$;
GRANT EXECUTE ON FUNCTION pg_temp.t11b_claim() TO durable_job_worker;

SET LOCAL ROLE durable_job_worker;
SELECT is(pg_temp.t11b_claim(), 1, 'the first claim is attempt 1 of 1');
RESET ROLE;
SELECT pg_temp.t11b_lose();
SET LOCAL ROLE durable_job_worker;
SELECT is(pg_temp.t11b_claim(), 1, 'a claim lost with the database is reclaimed at the same attempt, though its attempts are used up');
RESET ROLE;
SELECT is(pg_temp.t11b_tally('failover_reclaim'), 1::bigint, 'counted as a failover_reclaim');
SELECT is(pg_temp.t11b_tally('reclaim'), 0::bigint, 'not as a reclaim');
SELECT is((SELECT failover_reclaims FROM durable_jobs.job_record WHERE queue_name = 't11b.failover'), 1::smallint,
    'the job counts its failover reclaims');
SELECT pg_temp.t11b_lose();
UPDATE durable_jobs.job_record SET failover_reclaims = 3 WHERE queue_name = 't11b.failover';
SET LOCAL ROLE durable_job_worker;
SELECT pg_temp.t11b_claim();
RESET ROLE;
SELECT is((SELECT job_status::text FROM durable_jobs.job_record WHERE queue_name = 't11b.failover'), 'FAILED',
    'after three, a claim lost with the database costs an attempt like any reclaim: the job is failed');

-- ============================================================================
-- Server availability (migration 031): server_availability() returns the
-- server's WAL timeline and start time and records, once, each change of
-- either it sees as chained evidence: server_restarted (same timeline) or
-- server_timeline_changed. A restart and a promotion are played by moving
-- the state the bundle saw last; the real promotion is the Go side's
-- (sql/integration TestServerAvailabilityRecordsAPromotionOnce).
-- ============================================================================

CREATE FUNCTION pg_temp.t11c_records(p_kind text) RETURNS bigint LANGUAGE sql AS $$
    SELECT count(*) FROM durable_jobs.control_evidence_record e WHERE e.evidence_kind = p_kind;
$$;
CREATE FUNCTION pg_temp.t11c_timeline() RETURNS bigint LANGUAGE sql AS $$
    SELECT ('x' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))::bit(32)::bigint;
$$;
GRANT EXECUTE ON FUNCTION pg_temp.t11c_timeline() TO durable_job_auditor;

SET LOCAL ROLE durable_job_auditor;
SELECT results_eq(
    $$SELECT server_timeline, previous_timeline, server_started_at, in_recovery FROM durable_jobs.server_availability()$$,
    $$SELECT pg_temp.t11c_timeline(), NULL::bigint, pg_postmaster_start_time(), false$$,
    'an auditor reads the timeline the server writes on and its start time; no timeline seen before this one');
RESET ROLE;
SELECT is(pg_temp.t11c_records('server_timeline_changed') + pg_temp.t11c_records('server_restarted'), 0::bigint,
    'nothing changed since the migration: nothing recorded');

-- A restart: the state says the server started an hour earlier.
UPDATE durable_jobs.server_timeline_state SET server_started_at = server_started_at - interval '1 hour';
SET LOCAL ROLE durable_job_auditor;
SELECT is((SELECT server_started_at FROM durable_jobs.server_availability()), pg_postmaster_start_time(),
    'after a restart the start time is the server''s');
RESET ROLE;
SELECT is(pg_temp.t11c_records('server_restarted'), 1::bigint, 'the restart is recorded');
SELECT results_eq(
    $$SELECT queue_name IS NULL, (previous_values ->> 'server_timeline')::bigint, new_values - 'seen_at',
             changed_by_role = session_user
      FROM durable_jobs.control_evidence_record WHERE evidence_kind = 'server_restarted'$$,
    $$SELECT true, pg_temp.t11c_timeline(),
             jsonb_build_object('server_timeline', pg_temp.t11c_timeline(), 'server_started_at', pg_postmaster_start_time()),
             true$$,
    'the record holds the timeline and start times only (no queue, no job), and the login that saw it');
SELECT is(pg_temp.t11c_records('server_timeline_changed'), 0::bigint, 'a restart is no timeline change');
SET LOCAL ROLE durable_job_auditor;
SELECT durable_jobs.server_availability();
RESET ROLE;
SELECT is(pg_temp.t11c_records('server_restarted'), 1::bigint, 'seen once, recorded once');

-- A promotion: the state says the bundle last saw timeline 7.
UPDATE durable_jobs.server_timeline_state SET server_timeline = 7, previous_timeline = 6;
SET LOCAL ROLE durable_job_auditor;
SELECT results_eq(
    $$SELECT server_timeline, previous_timeline, timeline_seen_at = database_time FROM durable_jobs.server_availability()$$,
    $$SELECT pg_temp.t11c_timeline(), 7::bigint, true$$,
    'after a timeline change: the new timeline, seen now, and the one before');
RESET ROLE;
SELECT results_eq(
    $$SELECT (previous_values ->> 'server_timeline')::bigint, (new_values ->> 'server_timeline')::bigint
      FROM durable_jobs.control_evidence_record WHERE evidence_kind = 'server_timeline_changed'$$,
    $$VALUES (7::bigint, pg_temp.t11c_timeline())$$,
    'the timeline change is recorded with both timelines');
SELECT is(pg_temp.t11c_records('server_restarted'), 1::bigint, 'a timeline change is no restart record');
SELECT is((SELECT count(*) FROM durable_jobs.control_evidence_record e
           WHERE e.evidence_kind IN ('server_timeline_changed', 'server_restarted')
             AND e.record_hash = sha256(e.previous_record_hash
                 || durable_jobs.evidence_content_digest(e.evidence_record_id, e.evidence_kind, e.queue_name,
                        e.previous_values, e.new_values, e.change_reason, e.changed_by_role, e.recorded_at,
                        e.change_ticket, e.change_approver))), 2::bigint,
    'both records are chained');

-- A read-only transaction records nothing and still reads.
UPDATE durable_jobs.server_timeline_state SET server_timeline = 9;
SET LOCAL transaction_read_only = on;
SET LOCAL ROLE durable_job_auditor;
SELECT results_eq(
    $$SELECT server_timeline, previous_timeline FROM durable_jobs.server_availability()$$,
    $$SELECT pg_temp.t11c_timeline(), 7::bigint$$,
    'a read-only transaction reads the timeline; the state it returns is the one seen last');
RESET ROLE;
SELECT is(pg_temp.t11c_records('server_timeline_changed'), 1::bigint, 'a read-only transaction records nothing');
SELECT is((SELECT server_timeline FROM durable_jobs.server_timeline_state), 9::bigint, 'nor changes the state');

SELECT * FROM finish();
ROLLBACK;
