-- 32_server_availability (migration 031): server_availability() returns the
-- server's WAL timeline and start time and records, once, each change of
-- either it sees as chained evidence: server_restarted (same timeline) or
-- server_timeline_changed. A restart and a promotion are played by moving
-- the state the bundle saw last; the real promotion is the Go side's
-- (sql/integration TestServerAvailabilityRecordsAPromotionOnce).
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
SELECT plan(14);
\ir fixture/fixture.sql

CREATE FUNCTION pg_temp.t32_records(p_kind text) RETURNS bigint LANGUAGE sql AS $$
    SELECT count(*) FROM durable_jobs.control_evidence_record e WHERE e.evidence_kind = p_kind;
$$;
CREATE FUNCTION pg_temp.t32_timeline() RETURNS bigint LANGUAGE sql AS $$
    SELECT ('x' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))::bit(32)::bigint;
$$;
GRANT EXECUTE ON FUNCTION pg_temp.t32_timeline() TO durable_job_auditor;

SET LOCAL ROLE durable_job_auditor;
SELECT results_eq(
    $$SELECT server_timeline, previous_timeline, server_started_at, in_recovery FROM durable_jobs.server_availability()$$,
    $$SELECT pg_temp.t32_timeline(), NULL::bigint, pg_postmaster_start_time(), false$$,
    'an auditor reads the timeline the server writes on and its start time; no timeline seen before this one');
RESET ROLE;
SELECT is(pg_temp.t32_records('server_timeline_changed') + pg_temp.t32_records('server_restarted'), 0::bigint,
    'nothing changed since the migration: nothing recorded');

-- A restart: the state says the server started an hour earlier.
UPDATE durable_jobs.server_timeline_state SET server_started_at = server_started_at - interval '1 hour';
SET LOCAL ROLE durable_job_auditor;
SELECT is((SELECT server_started_at FROM durable_jobs.server_availability()), pg_postmaster_start_time(),
    'after a restart the start time is the server''s');
RESET ROLE;
SELECT is(pg_temp.t32_records('server_restarted'), 1::bigint, 'the restart is recorded');
SELECT results_eq(
    $$SELECT queue_name IS NULL, (previous_values ->> 'server_timeline')::bigint, new_values - 'seen_at',
             changed_by_role = session_user
      FROM durable_jobs.control_evidence_record WHERE evidence_kind = 'server_restarted'$$,
    $$SELECT true, pg_temp.t32_timeline(),
             jsonb_build_object('server_timeline', pg_temp.t32_timeline(), 'server_started_at', pg_postmaster_start_time()),
             true$$,
    'the record holds the timeline and start times only (no queue, no job), and the login that saw it');
SELECT is(pg_temp.t32_records('server_timeline_changed'), 0::bigint, 'a restart is no timeline change');
SET LOCAL ROLE durable_job_auditor;
SELECT durable_jobs.server_availability();
RESET ROLE;
SELECT is(pg_temp.t32_records('server_restarted'), 1::bigint, 'seen once, recorded once');

-- A promotion: the state says the bundle last saw timeline 7.
UPDATE durable_jobs.server_timeline_state SET server_timeline = 7, previous_timeline = 6;
SET LOCAL ROLE durable_job_auditor;
SELECT results_eq(
    $$SELECT server_timeline, previous_timeline, timeline_seen_at = database_time FROM durable_jobs.server_availability()$$,
    $$SELECT pg_temp.t32_timeline(), 7::bigint, true$$,
    'after a timeline change: the new timeline, seen now, and the one before');
RESET ROLE;
SELECT results_eq(
    $$SELECT (previous_values ->> 'server_timeline')::bigint, (new_values ->> 'server_timeline')::bigint
      FROM durable_jobs.control_evidence_record WHERE evidence_kind = 'server_timeline_changed'$$,
    $$VALUES (7::bigint, pg_temp.t32_timeline())$$,
    'the timeline change is recorded with both timelines');
SELECT is(pg_temp.t32_records('server_restarted'), 1::bigint, 'a timeline change is no restart record');
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
    $$SELECT pg_temp.t32_timeline(), 7::bigint$$,
    'a read-only transaction reads the timeline; the state it returns is the one seen last');
RESET ROLE;
SELECT is(pg_temp.t32_records('server_timeline_changed'), 1::bigint, 'a read-only transaction records nothing');
SELECT is((SELECT server_timeline FROM durable_jobs.server_timeline_state), 9::bigint, 'nor changes the state');

SELECT * FROM finish();
ROLLBACK;
