-- Server availability: which WAL timeline the server writes on, since
-- when, and when it last started, recorded as chained evidence whenever
-- either changes.
--
-- The current definition of each function of this family, edited in place.
-- A change reaches databases through a new migration that includes this
-- file; released migrations hold their own frozen copy (see sql/doc.go).
--
-- Below, the notes written with the versions the current definitions come
-- from, newest first. They name the files as they were then; each
-- migration's frozen SQL under sql/migrations holds the whole text.

-- Notes of migration 031 (availability.sql in its frozen SQL):
--
-- A failover was invisible (issue 36, item 2): nothing said that the
-- server had been promoted or restarted, and an incident timeline had no
-- record of it. server_availability() reads the server's WAL timeline and
-- start time and compares them with the last ones the bundle saw
-- (durable_jobs.server_timeline_state, one row); when they differ it
-- records one chained evidence record, server_timeline_changed (a
-- promotion, or a recovery that started a new timeline) or
-- server_restarted (the same timeline, a new start: a crash or a restart
-- in place), with the timelines and times only: no job id, owner or
-- payload. It is called by the readers an operator runs: `leasectl
-- health`, the Prometheus collector at each scrape and the evidence
-- report, so a change is recorded at the first of them after it (within a
-- scrape interval where the collector runs). On a standby it records
-- nothing and returns what the primary recorded last, with no timeline.

-- server_availability: the server's WAL timeline (the first 8 hex digits
-- of the current WAL file's name; NULL on a standby, where recovery hides
-- it), when the bundle first saw that timeline and the one before it, when
-- the server started (pg_postmaster_start_time()), whether it is in
-- recovery, and the database time it was read at. On a primary, in a
-- transaction that is not read-only, whose timeline or start time differs
-- from the last ones seen, it first records the change (server_timeline_changed or server_restarted) and the new
-- state, in the caller's transaction; two callers that see the same change
-- record it once (the second waits for the first's row lock, then finds
-- nothing to record). Writing the record waits for other evidence writers
-- as every evidence writer does (lock_evidence_order: at most 10 s, then
-- 55P03 and nothing changed). Auditor role.
CREATE OR REPLACE FUNCTION durable_jobs.server_availability()
RETURNS TABLE (server_timeline bigint, timeline_seen_at timestamptz, previous_timeline bigint,
               server_started_at timestamptz, in_recovery boolean, database_time timestamptz)
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $function$
DECLARE
    v_in_recovery boolean := pg_catalog.pg_is_in_recovery();
    v_started_at timestamptz := pg_catalog.pg_postmaster_start_time();
    v_timeline bigint;
    v_state durable_jobs.server_timeline_state%ROWTYPE;
    v_before durable_jobs.server_timeline_state%ROWTYPE;
    v_now timestamptz := pg_catalog.clock_timestamp();
BEGIN
    -- A standby replays the primary's WAL and hides its own timeline
    -- (pg_walfile_name refuses to run during recovery).
    v_timeline := CASE WHEN NOT v_in_recovery
                       THEN ('x' || pg_catalog.substr(pg_catalog.pg_walfile_name(pg_catalog.pg_current_wal_lsn()), 1, 8))::bit(32)::bigint
                  END;
    SELECT s.* INTO STRICT v_state FROM durable_jobs.server_timeline_state s;
    -- Something to record: on a primary, in a
    -- transaction that may write (a read-only one records nothing: the
    -- next writable caller does).
    IF NOT v_in_recovery AND (v_timeline <> v_state.server_timeline OR v_started_at <> v_state.server_started_at)
       AND pg_catalog.current_setting('transaction_read_only') = 'off' THEN
        -- Locked and read again: a caller that saw the same change waits
        -- here for the first one's commit, then reads the new state and
        -- inserts no record (the INSERT's WHERE) and changes nothing.
        SELECT s.* INTO STRICT v_before FROM durable_jobs.server_timeline_state s FOR UPDATE;
        PERFORM durable_jobs.lock_evidence_order();
        INSERT INTO durable_jobs.control_evidence_record (evidence_kind, queue_name, previous_values, new_values, change_reason)
        SELECT CASE WHEN v_timeline <> v_before.server_timeline THEN 'server_timeline_changed' ELSE 'server_restarted' END,
               NULL,
               pg_catalog.jsonb_build_object('server_timeline', v_before.server_timeline,
                                             'server_started_at', v_before.server_started_at),
               pg_catalog.jsonb_build_object('server_timeline', v_timeline, 'server_started_at', v_started_at,
                                             'seen_at', v_now),
               CASE WHEN v_timeline <> v_before.server_timeline
                    THEN 'the server writes on a new WAL timeline: a promotion, or a recovery that started a timeline'
                    ELSE 'the server restarted on the same WAL timeline: a crash or a restart in place' END
        WHERE v_timeline <> v_before.server_timeline OR v_started_at <> v_before.server_started_at;
        UPDATE durable_jobs.server_timeline_state s
        SET server_timeline = v_timeline,
            timeline_seen_at = CASE WHEN v_timeline <> v_before.server_timeline THEN v_now ELSE v_before.timeline_seen_at END,
            previous_timeline = CASE WHEN v_timeline <> v_before.server_timeline THEN v_before.server_timeline
                                     ELSE v_before.previous_timeline END,
            server_started_at = v_started_at
        RETURNING s.* INTO STRICT v_state;
    END IF;
    RETURN QUERY SELECT v_timeline, v_state.timeline_seen_at, v_state.previous_timeline, v_started_at, v_in_recovery, v_now;
END;
$function$;

ALTER FUNCTION durable_jobs.server_availability() OWNER TO durable_job_policy_owner;
REVOKE ALL ON FUNCTION durable_jobs.server_availability() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.server_availability() TO durable_job_auditor;
