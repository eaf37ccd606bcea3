-- leasefence 007: payload-blind operator views of single jobs
-- (operator_list_jobs, operator_job_detail) from functions/job_admin.sql,
-- owned by the audit owner, executable by durable_job_operator only. The
-- audit owner gets SELECT on the lifecycle columns they read; never on the
-- payload table, the claim digest, the owner or the idempotency key digest.
-- Also batch enqueue, enqueue_jobs from functions/batch_enqueue.sql, owned
-- by the producer owner and executable by durable_job_producer: each element
-- goes through enqueue_job, so it needs no grant of its own.
GRANT SELECT (job_record_id, attempt_number, max_attempts, lease_fencing_generation, lease_renewal_count,
              failure_reason_code, run_after, created_at, status_changed_at)
    ON durable_jobs.job_record TO durable_job_audit_owner;
GRANT EXECUTE ON FUNCTION durable_jobs.require_well_formed(text, text, text) TO durable_job_audit_owner;
-- Operator job views: payload-blind reads of individual jobs for the
-- operator (leasectl jobs list / show). They return lifecycle columns only:
-- never the payload, the claim token, its digest, the owner id, the login
-- role that claimed it or the idempotency key. Owned by the audit owner,
-- which cannot read the payload table, the claim digest, the owner id or
-- the idempotency key digest at all. They take no locks. Cancel and replay are the producer family's cancel_job and
-- replay_job, which operators already hold.

-- operator_list_jobs: up to p_max_jobs jobs, newest first (job_record_id
-- descending), of one queue and one status when given (NULL: any), with
-- ids below p_after_job_record_id when given (keyset pagination: pass the
-- last id of the previous page). Raises LF003 for a malformed queue name,
-- a status that is not a job_status_kind, or p_max_jobs NULL or outside 1
-- to 1000.
CREATE FUNCTION durable_jobs.operator_list_jobs(
    p_queue_name text DEFAULT NULL, p_job_status text DEFAULT NULL,
    p_after_job_record_id bigint DEFAULT NULL, p_max_jobs integer DEFAULT 50)
RETURNS TABLE (job_record_id bigint, queue_name text, job_status text, attempt_number integer,
               max_attempts integer, lease_fencing_generation bigint, lease_expires_at timestamptz,
               lease_renewal_count bigint, failure_reason_code text, run_after timestamptz,
               created_at timestamptz, status_changed_at timestamptz)
LANGUAGE plpgsql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $function$
BEGIN
    IF p_queue_name IS NOT NULL THEN
        PERFORM durable_jobs.require_well_formed('queue_name', p_queue_name);
    END IF;
    IF p_job_status IS NOT NULL
       AND p_job_status <> ALL (pg_catalog.enum_range(NULL::durable_jobs.job_status_kind)::text[]) THEN
        RAISE EXCEPTION 'unknown job status' USING ERRCODE = 'LF003',
            HINT = 'job status must be one of QUEUED, RUNNING, RETRY_SCHEDULED, SUCCEEDED, FAILED, CANCELLED';
    END IF;
    IF p_max_jobs IS NULL OR p_max_jobs NOT BETWEEN 1 AND 1000 THEN
        RAISE EXCEPTION 'max jobs must be 1 to 1000' USING ERRCODE = 'LF003';
    END IF;
    RETURN QUERY
    SELECT j.job_record_id, j.queue_name, j.job_status::text, j.attempt_number, j.max_attempts,
           j.lease_fencing_generation, j.lease_expires_at, j.lease_renewal_count, j.failure_reason_code,
           j.run_after, j.created_at, j.status_changed_at
    FROM durable_jobs.job_record j
    WHERE (p_queue_name IS NULL OR j.queue_name = p_queue_name)
      AND (p_job_status IS NULL OR j.job_status::text = p_job_status)
      AND (p_after_job_record_id IS NULL OR j.job_record_id < p_after_job_record_id)
    ORDER BY j.job_record_id DESC
    LIMIT p_max_jobs;
END;
$function$;

-- operator_job_detail: the same columns for one job. Zero rows for an
-- unknown id. Raises LF003 for a NULL id.
CREATE FUNCTION durable_jobs.operator_job_detail(p_job_record_id bigint)
RETURNS TABLE (job_record_id bigint, queue_name text, job_status text, attempt_number integer,
               max_attempts integer, lease_fencing_generation bigint, lease_expires_at timestamptz,
               lease_renewal_count bigint, failure_reason_code text, run_after timestamptz,
               created_at timestamptz, status_changed_at timestamptz)
LANGUAGE plpgsql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $function$
BEGIN
    IF p_job_record_id IS NULL THEN
        RAISE EXCEPTION 'job id is required' USING ERRCODE = 'LF003';
    END IF;
    RETURN QUERY
    SELECT j.job_record_id, j.queue_name, j.job_status::text, j.attempt_number, j.max_attempts,
           j.lease_fencing_generation, j.lease_expires_at, j.lease_renewal_count, j.failure_reason_code,
           j.run_after, j.created_at, j.status_changed_at
    FROM durable_jobs.job_record j
    WHERE j.job_record_id = p_job_record_id;
END;
$function$;

ALTER FUNCTION durable_jobs.operator_list_jobs(text, text, bigint, integer) OWNER TO durable_job_audit_owner;
ALTER FUNCTION durable_jobs.operator_job_detail(bigint) OWNER TO durable_job_audit_owner;
REVOKE ALL ON FUNCTION durable_jobs.operator_list_jobs(text, text, bigint, integer) FROM PUBLIC;
REVOKE ALL ON FUNCTION durable_jobs.operator_job_detail(bigint) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.operator_list_jobs(text, text, bigint, integer) TO durable_job_operator;
GRANT EXECUTE ON FUNCTION durable_jobs.operator_job_detail(bigint) TO durable_job_operator;

-- enqueue_jobs: enqueue_job for many jobs of one queue in one call. Element
-- i of each array describes job i; the result holds one id per job, in input
-- order. p_idempotency_keys, p_run_afters and p_max_attempts are each NULL
-- (no key, now, 5 attempts for every job) or have exactly one element per
-- payload; a NULL key or run-after element means no key or now for that job.
-- Each job goes through enqueue_job, so every element gets its checks and
-- its idempotency: a key already on the queue, or repeated within the batch,
-- returns the first job's id and creates nothing. All or nothing: a bad
-- element raises LF003 naming its position (never its content) and no job of
-- the batch is written.
-- Locks: the new rows; a concurrent insert of the same key is waited for, so
-- two concurrent batches that share keys in different orders can deadlock
-- (40P01, nothing written by the one refused); sort keys to avoid it.
-- Raises LF003 for a NULL queue or payload array, an array that is not
-- one-dimensional, fewer than 1 or more than 10,000 payloads, an optional
-- array whose length differs from the payloads', and any element enqueue_job
-- refuses.
CREATE OR REPLACE FUNCTION durable_jobs.enqueue_jobs(
    p_queue_name text, p_job_payloads jsonb[], p_idempotency_keys text[] DEFAULT NULL,
    p_run_afters timestamptz[] DEFAULT NULL, p_max_attempts integer[] DEFAULT NULL)
RETURNS bigint[]
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $function$
DECLARE
    v_job_count integer := pg_catalog.cardinality(p_job_payloads);
    v_job record;
    v_position bigint;
    v_job_record_ids bigint[] := ARRAY[]::bigint[];
    v_message text;
BEGIN
    PERFORM durable_jobs.require_well_formed('queue_name', p_queue_name);
    IF p_job_payloads IS NULL OR pg_catalog.array_ndims(p_job_payloads) IS DISTINCT FROM 1
            OR v_job_count > 10000 THEN
        RAISE EXCEPTION 'job payloads must be a one-dimensional array of 1 to 10000 payloads' USING ERRCODE = 'LF003';
    END IF;
    IF (p_idempotency_keys IS NOT NULL AND (pg_catalog.array_ndims(p_idempotency_keys) IS DISTINCT FROM 1
                                            OR pg_catalog.cardinality(p_idempotency_keys) <> v_job_count))
            OR (p_run_afters IS NOT NULL AND (pg_catalog.array_ndims(p_run_afters) IS DISTINCT FROM 1
                                              OR pg_catalog.cardinality(p_run_afters) <> v_job_count))
            OR (p_max_attempts IS NOT NULL AND (pg_catalog.array_ndims(p_max_attempts) IS DISTINCT FROM 1
                                                OR pg_catalog.cardinality(p_max_attempts) <> v_job_count)) THEN
        RAISE EXCEPTION 'idempotency keys, run-afters and max attempts must each be NULL or hold one element per payload'
            USING ERRCODE = 'LF003';
    END IF;

    BEGIN
        FOR v_job IN
            SELECT u.job_position, u.job_payload, u.idempotency_key, u.run_after, u.max_attempts
            FROM ROWS FROM (pg_catalog.unnest(p_job_payloads), pg_catalog.unnest(p_idempotency_keys),
                            pg_catalog.unnest(p_run_afters), pg_catalog.unnest(p_max_attempts))
                 WITH ORDINALITY AS u(job_payload, idempotency_key, run_after, max_attempts, job_position)
            ORDER BY u.job_position
        LOOP
            v_position := v_job.job_position;
            v_job_record_ids[v_position] := durable_jobs.enqueue_job(
                p_queue_name, v_job.job_payload, v_job.idempotency_key, v_job.run_after,
                CASE WHEN p_max_attempts IS NULL THEN 5 ELSE v_job.max_attempts END);
        END LOOP;
    EXCEPTION WHEN SQLSTATE 'LF003' THEN
        -- enqueue_job's messages name the rule, never the value.
        GET STACKED DIAGNOSTICS v_message = MESSAGE_TEXT;
        RAISE EXCEPTION 'job % of the batch: %', v_position, v_message USING ERRCODE = 'LF003';
    END;
    RETURN v_job_record_ids;
END;
$function$;

ALTER FUNCTION durable_jobs.enqueue_jobs(text, jsonb[], text[], timestamptz[], integer[]) OWNER TO durable_job_producer_owner;
REVOKE ALL ON FUNCTION durable_jobs.enqueue_jobs(text, jsonb[], text[], timestamptz[], integer[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.enqueue_jobs(text, jsonb[], text[], timestamptz[], integer[]) TO durable_job_producer;


SELECT pg_catalog.pg_advisory_xact_lock(1279655936, 1);
INSERT INTO durable_jobs.control_evidence_record (evidence_kind, queue_name, previous_values, new_values, change_reason)
VALUES ('migration_applied', NULL, NULL, '{"migration_version": 7, "migration_name": "007_operator_job_views"}',
        COALESCE(NULLIF(pg_catalog.current_setting('leasefence.migration_reason', true), ''), 'leasefence bundle migration'));

---- create above / drop below ----

DROP FUNCTION durable_jobs.enqueue_jobs(text, jsonb[], text[], timestamptz[], integer[]);
DROP FUNCTION durable_jobs.operator_job_detail(bigint);
DROP FUNCTION durable_jobs.operator_list_jobs(text, text, bigint, integer);
REVOKE EXECUTE ON FUNCTION durable_jobs.require_well_formed(text, text, text) FROM durable_job_audit_owner;
REVOKE SELECT (job_record_id, attempt_number, max_attempts, lease_fencing_generation, lease_renewal_count,
               failure_reason_code, run_after, created_at, status_changed_at)
    ON durable_jobs.job_record FROM durable_job_audit_owner;

SELECT pg_catalog.pg_advisory_xact_lock(1279655936, 1);
INSERT INTO durable_jobs.control_evidence_record (evidence_kind, queue_name, previous_values, new_values, change_reason)
VALUES ('migration_reverted', NULL, NULL, '{"migration_version": 7, "migration_name": "007_operator_job_views"}',
        COALESCE(NULLIF(pg_catalog.current_setting('leasefence.migration_reason', true), ''),
                 'leasefence bundle migration rolled back'));
