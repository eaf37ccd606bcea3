-- leasefence 019: no foreign-key check per enqueued or completed job
-- (issue 11).
--
-- job_payload_record and job_outcome_ledger referenced job_record with a
-- foreign key (ON DELETE CASCADE). PostgreSQL checks a foreign key on every
-- row inserted with a query of its own and a row lock (FOR KEY SHARE, a WAL
-- record) on the referenced job row, run from a trigger: every enqueue paid
-- it for the payload, every completion (complete_job, complete_jobs,
-- retry_job and fail_job's outcomes) for the outcome row. Both tables are
-- written only by the bundle's SECURITY DEFINER functions, and each writes
-- the row in the call that inserts (enqueue) or has just updated and holds
-- locked (the terminal functions) the job row it references, so the check
-- could never fail. Measured on a copy of complete_jobs (100 jobs a call,
-- 100 calls each, alternating, one session): 33-37 us a job without the
-- check against 44-48 with it; the enqueue note in bench/notes.md measured
-- the payload key at about 4.7 us a job.
--
-- * Both foreign keys are dropped (ALTER TABLE takes ACCESS EXCLUSIVE on
--   job_record and both tables until this migration commits; dropping a
--   key reads no rows).
-- * What their ON DELETE CASCADE did, purge_expired_job_data
--   (retention_v3.sql) now does itself: it deletes a purged job's payload
--   and outcome ledger rows in the statement that deletes the job, for
--   which durable_job_retention_owner gets DELETE on job_outcome_ledger.
--   Nothing else in the bundle deletes a job row.
-- The down part puts purge_expired_job_data of retention.sql back (inline:
-- retention.sql creates without OR REPLACE), revokes that DELETE and adds
-- both foreign keys again as 001 wrote them, which validates every row (it
-- fails if a row refers to a job that no longer exists: somebody deleted a
-- job row outside the bundle's functions).

ALTER TABLE durable_jobs.job_payload_record DROP CONSTRAINT job_payload_record_job_fkey;
ALTER TABLE durable_jobs.job_outcome_ledger DROP CONSTRAINT job_outcome_ledger_job_fkey;
GRANT DELETE ON durable_jobs.job_outcome_ledger TO durable_job_retention_owner;
-- Retention, version 3 (migration 019): only purge_expired_job_data
-- changes. Migration 019 drops the foreign keys of job_payload_record and
-- job_outcome_ledger to job_record (each INSERT of a payload or an outcome
-- ran the key's check, a query and a row lock per row, on every enqueue and
-- completion), so their ON DELETE CASCADE is gone too: the purge deletes a
-- purged job's payload and outcome ledger rows itself, in the statement that
-- deletes the job. Everything else stays as retention.sql and
-- retention_v2.sql install it.

-- purge_expired_job_data: applies the retention policies to at most
-- p_batch_size finished jobs (1 to 10,000, else LF003) and returns what it
-- removed, one row per queue and kind:
--   job_record  jobs past their record retention: the row is deleted with
--               its payload and outcome ledger (in the same statement; no
--               foreign key cascades since migration 019);
--   payload     jobs past their payload retention that still had a payload:
--               the payload is deleted and every result document of the job
--               in the outcome ledger is set to NULL; the row stays.
-- Only SUCCEEDED, FAILED and CANCELLED rows are ever touched, each locked
-- FOR UPDATE SKIP LOCKED and re-checked when locked (a concurrent replay
-- wins and the job is left alone), so it never waits on or changes a live
-- claim and may run from several places at once. Call it until it returns
-- no row. When it removed anything, it appends one job_data_purged control
-- evidence record with the counts per queue and kind (never a job id).
-- Control evidence itself is never purged.
CREATE OR REPLACE FUNCTION durable_jobs.purge_expired_job_data(p_batch_size integer)
RETURNS TABLE (queue_name text, purge_kind text, purged_count bigint)
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $function$
DECLARE
    v_now timestamptz := pg_catalog.clock_timestamp();
    v_counts jsonb;
    v_left integer;
    v_rows jsonb := '[]'::jsonb;
BEGIN
    IF p_batch_size IS NULL OR p_batch_size NOT BETWEEN 1 AND 10000 THEN
        RAISE EXCEPTION 'batch size must be 1 to 10000' USING ERRCODE = 'LF003';
    END IF;

    WITH doomed AS (
        SELECT j.job_record_id
        FROM durable_jobs.job_record j
        LEFT JOIN durable_jobs.queue_retention_policy q ON q.queue_name = j.queue_name
        LEFT JOIN durable_jobs.queue_retention_policy d ON d.queue_name = '*'
        WHERE j.job_status IN ('SUCCEEDED', 'FAILED', 'CANCELLED')
          AND j.status_changed_at < v_now - COALESCE(q.record_retention, d.record_retention)
        ORDER BY j.status_changed_at
        LIMIT p_batch_size
        FOR UPDATE OF j SKIP LOCKED
    ), gone AS (
        DELETE FROM durable_jobs.job_record j
        USING doomed
        WHERE j.job_record_id = doomed.job_record_id
        RETURNING j.queue_name
    ), gone_payloads AS (
        -- Since migration 019 no foreign key deletes these with the job:
        -- its payload and outcome ledger rows go in the same statement.
        DELETE FROM durable_jobs.job_payload_record pr
        USING doomed
        WHERE pr.job_record_id = doomed.job_record_id
    ), gone_outcomes AS (
        DELETE FROM durable_jobs.job_outcome_ledger l
        USING doomed
        WHERE l.job_record_id = doomed.job_record_id
    )
    SELECT COALESCE(pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object('queue_name', c.queue_name,
               'purge_kind', 'job_record', 'purged_count', c.n) ORDER BY c.queue_name), '[]')
    INTO v_counts
    FROM (SELECT gone.queue_name, pg_catalog.count(*) AS n FROM gone GROUP BY gone.queue_name) c;
    v_rows := v_rows || v_counts;
    v_left := p_batch_size - (SELECT COALESCE(pg_catalog.sum((e ->> 'purged_count')::bigint), 0)
                              FROM pg_catalog.jsonb_array_elements(v_counts) e)::integer;

    IF v_left > 0 THEN
        WITH doomed AS (
            SELECT j.job_record_id, j.queue_name
            FROM durable_jobs.job_record j
            LEFT JOIN durable_jobs.queue_retention_policy q ON q.queue_name = j.queue_name
            LEFT JOIN durable_jobs.queue_retention_policy d ON d.queue_name = '*'
            WHERE j.job_status IN ('SUCCEEDED', 'FAILED', 'CANCELLED')
              AND j.status_changed_at < v_now - COALESCE(q.payload_retention, d.payload_retention)
              AND EXISTS (SELECT 1 FROM durable_jobs.job_payload_record pr WHERE pr.job_record_id = j.job_record_id)
            ORDER BY j.status_changed_at
            LIMIT v_left
            FOR UPDATE OF j SKIP LOCKED
        ), gone_payload AS (
            DELETE FROM durable_jobs.job_payload_record pr
            USING doomed
            WHERE pr.job_record_id = doomed.job_record_id
            RETURNING pr.job_record_id
        ), cleared AS (
            UPDATE durable_jobs.job_outcome_ledger l
            SET result_document = NULL
            FROM doomed
            WHERE l.job_record_id = doomed.job_record_id
            RETURNING l.job_record_id
        )
        SELECT COALESCE(pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object('queue_name', c.queue_name,
                   'purge_kind', 'payload', 'purged_count', c.n) ORDER BY c.queue_name), '[]')
        INTO v_counts
        FROM (SELECT doomed.queue_name, pg_catalog.count(*) AS n
              FROM doomed JOIN gone_payload ON gone_payload.job_record_id = doomed.job_record_id
              GROUP BY doomed.queue_name) c;
        v_rows := v_rows || v_counts;
    END IF;

    IF pg_catalog.jsonb_array_length(v_rows) > 0 THEN
        PERFORM pg_catalog.pg_advisory_xact_lock(1279655936, 1);
        INSERT INTO durable_jobs.control_evidence_record (evidence_kind, queue_name, previous_values, new_values, change_reason)
        VALUES ('job_data_purged', NULL, NULL,
                pg_catalog.jsonb_build_object('batch_size', p_batch_size, 'purged', v_rows),
                'retention policy applied by purge_expired_job_data');
    END IF;

    RETURN QUERY
    SELECT e ->> 'queue_name', e ->> 'purge_kind', (e ->> 'purged_count')::bigint
    FROM pg_catalog.jsonb_array_elements(v_rows) e;
END;
$function$;


SELECT pg_catalog.pg_advisory_xact_lock(1279655936, 1);
INSERT INTO durable_jobs.control_evidence_record (evidence_kind, queue_name, previous_values, new_values, change_reason)
VALUES ('migration_applied', NULL, NULL, '{"migration_version": 19, "migration_name": "019_no_foreign_key_check_per_row"}',
        COALESCE(NULLIF(pg_catalog.current_setting('leasefence.migration_reason', true), ''), 'leasefence bundle migration'));

---- create above / drop below ----

-- purge_expired_job_data exactly as retention.sql defines it (OR REPLACE
-- added).
-- purge_expired_job_data: applies the retention policies to at most
-- p_batch_size finished jobs (1 to 10,000, else LF003) and returns what it
-- removed, one row per queue and kind:
--   job_record  jobs past their record retention: the row is deleted with
--               its payload and outcome ledger;
--   payload     jobs past their payload retention that still had a payload:
--               the payload is deleted and every result document of the job
--               in the outcome ledger is set to NULL; the row stays.
-- Only SUCCEEDED, FAILED and CANCELLED rows are ever touched, each locked
-- FOR UPDATE SKIP LOCKED and re-checked when locked (a concurrent replay
-- wins and the job is left alone), so it never waits on or changes a live
-- claim and may run from several places at once. Call it until it returns
-- no row. When it removed anything, it appends one job_data_purged control
-- evidence record with the counts per queue and kind (never a job id).
-- Control evidence itself is never purged.
CREATE OR REPLACE FUNCTION durable_jobs.purge_expired_job_data(p_batch_size integer)
RETURNS TABLE (queue_name text, purge_kind text, purged_count bigint)
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $function$
DECLARE
    v_now timestamptz := pg_catalog.clock_timestamp();
    v_counts jsonb;
    v_left integer;
    v_rows jsonb := '[]'::jsonb;
BEGIN
    IF p_batch_size IS NULL OR p_batch_size NOT BETWEEN 1 AND 10000 THEN
        RAISE EXCEPTION 'batch size must be 1 to 10000' USING ERRCODE = 'LF003';
    END IF;

    WITH doomed AS (
        SELECT j.job_record_id
        FROM durable_jobs.job_record j
        LEFT JOIN durable_jobs.queue_retention_policy q ON q.queue_name = j.queue_name
        LEFT JOIN durable_jobs.queue_retention_policy d ON d.queue_name = '*'
        WHERE j.job_status IN ('SUCCEEDED', 'FAILED', 'CANCELLED')
          AND j.status_changed_at < v_now - COALESCE(q.record_retention, d.record_retention)
        ORDER BY j.status_changed_at
        LIMIT p_batch_size
        FOR UPDATE OF j SKIP LOCKED
    ), gone AS (
        DELETE FROM durable_jobs.job_record j
        USING doomed
        WHERE j.job_record_id = doomed.job_record_id
        RETURNING j.queue_name
    )
    SELECT COALESCE(pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object('queue_name', c.queue_name,
               'purge_kind', 'job_record', 'purged_count', c.n) ORDER BY c.queue_name), '[]')
    INTO v_counts
    FROM (SELECT gone.queue_name, pg_catalog.count(*) AS n FROM gone GROUP BY gone.queue_name) c;
    v_rows := v_rows || v_counts;
    v_left := p_batch_size - (SELECT COALESCE(pg_catalog.sum((e ->> 'purged_count')::bigint), 0)
                              FROM pg_catalog.jsonb_array_elements(v_counts) e)::integer;

    IF v_left > 0 THEN
        WITH doomed AS (
            SELECT j.job_record_id, j.queue_name
            FROM durable_jobs.job_record j
            LEFT JOIN durable_jobs.queue_retention_policy q ON q.queue_name = j.queue_name
            LEFT JOIN durable_jobs.queue_retention_policy d ON d.queue_name = '*'
            WHERE j.job_status IN ('SUCCEEDED', 'FAILED', 'CANCELLED')
              AND j.status_changed_at < v_now - COALESCE(q.payload_retention, d.payload_retention)
              AND EXISTS (SELECT 1 FROM durable_jobs.job_payload_record pr WHERE pr.job_record_id = j.job_record_id)
            ORDER BY j.status_changed_at
            LIMIT v_left
            FOR UPDATE OF j SKIP LOCKED
        ), gone_payload AS (
            DELETE FROM durable_jobs.job_payload_record pr
            USING doomed
            WHERE pr.job_record_id = doomed.job_record_id
            RETURNING pr.job_record_id
        ), cleared AS (
            UPDATE durable_jobs.job_outcome_ledger l
            SET result_document = NULL
            FROM doomed
            WHERE l.job_record_id = doomed.job_record_id
            RETURNING l.job_record_id
        )
        SELECT COALESCE(pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object('queue_name', c.queue_name,
                   'purge_kind', 'payload', 'purged_count', c.n) ORDER BY c.queue_name), '[]')
        INTO v_counts
        FROM (SELECT doomed.queue_name, pg_catalog.count(*) AS n
              FROM doomed JOIN gone_payload ON gone_payload.job_record_id = doomed.job_record_id
              GROUP BY doomed.queue_name) c;
        v_rows := v_rows || v_counts;
    END IF;

    IF pg_catalog.jsonb_array_length(v_rows) > 0 THEN
        PERFORM pg_catalog.pg_advisory_xact_lock(1279655936, 1);
        INSERT INTO durable_jobs.control_evidence_record (evidence_kind, queue_name, previous_values, new_values, change_reason)
        VALUES ('job_data_purged', NULL, NULL,
                pg_catalog.jsonb_build_object('batch_size', p_batch_size, 'purged', v_rows),
                'retention policy applied by purge_expired_job_data');
    END IF;

    RETURN QUERY
    SELECT e ->> 'queue_name', e ->> 'purge_kind', (e ->> 'purged_count')::bigint
    FROM pg_catalog.jsonb_array_elements(v_rows) e;
END;
$function$;

REVOKE DELETE ON durable_jobs.job_outcome_ledger FROM durable_job_retention_owner;
ALTER TABLE durable_jobs.job_payload_record ADD CONSTRAINT job_payload_record_job_fkey
    FOREIGN KEY (job_record_id) REFERENCES durable_jobs.job_record (job_record_id) ON DELETE CASCADE;
ALTER TABLE durable_jobs.job_outcome_ledger ADD CONSTRAINT job_outcome_ledger_job_fkey
    FOREIGN KEY (job_record_id) REFERENCES durable_jobs.job_record (job_record_id) ON DELETE CASCADE;

SELECT pg_catalog.pg_advisory_xact_lock(1279655936, 1);
INSERT INTO durable_jobs.control_evidence_record (evidence_kind, queue_name, previous_values, new_values, change_reason)
VALUES ('migration_reverted', NULL, NULL, '{"migration_version": 19, "migration_name": "019_no_foreign_key_check_per_row"}',
        COALESCE(NULLIF(pg_catalog.current_setting('leasefence.migration_reason', true), ''),
                 'leasefence bundle migration rolled back'));
