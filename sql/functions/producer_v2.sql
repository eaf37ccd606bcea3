-- enqueue_job: durably accepts a job (QUEUED) and returns its id; its payload
-- goes to job_payload_record. A repeated (queue, idempotency key) returns the
-- first job's id and creates nothing; the key is stored only as its sha256.
-- The queue is one namespace shared by every producer login: the same key
-- from another producer on the same queue returns the first job's id too.
-- Locks: the new rows; a concurrent insert of the same key is waited for.
-- Raises LF003 for malformed input (queue, NULL payload, a payload over
-- 1 MiB (pg_column_size of the jsonb), key length, attempts, a run-after that
-- is not finite or not from 2000-01-01 to before 2100-01-01 UTC).
CREATE OR REPLACE FUNCTION durable_jobs.enqueue_job(
    p_queue_name text, p_job_payload jsonb, p_idempotency_key text DEFAULT NULL,
    p_run_after timestamptz DEFAULT NULL, p_max_attempts integer DEFAULT 5)
RETURNS bigint
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $function$
DECLARE
    v_job_record_id bigint;
    v_key_digest bytea;
BEGIN
    PERFORM durable_jobs.require_well_formed('queue_name', p_queue_name);
    IF p_job_payload IS NULL THEN
        RAISE EXCEPTION 'job payload is required' USING ERRCODE = 'LF003';
    END IF;
    IF pg_catalog.pg_column_size(p_job_payload) > 1048576 THEN
        RAISE EXCEPTION 'job payload must be at most 1 MiB' USING ERRCODE = 'LF003';
    END IF;
    IF p_run_after IS NOT NULL AND (NOT pg_catalog.isfinite(p_run_after)
            OR p_run_after < timestamptz '2000-01-01 00:00:00+00'
            OR p_run_after >= timestamptz '2100-01-01 00:00:00+00') THEN
        RAISE EXCEPTION 'run-after must be a finite time from 2000-01-01 to before 2100-01-01 UTC'
            USING ERRCODE = 'LF003';
    END IF;
    IF p_idempotency_key IS NOT NULL AND pg_catalog.length(p_idempotency_key) NOT BETWEEN 1 AND 200 THEN
        RAISE EXCEPTION 'idempotency key must be 1 to 200 characters' USING ERRCODE = 'LF003';
    END IF;
    IF p_max_attempts IS NULL OR p_max_attempts NOT BETWEEN 1 AND 1000 THEN
        RAISE EXCEPTION 'max attempts must be 1 to 1000' USING ERRCODE = 'LF003';
    END IF;
    v_key_digest := pg_catalog.sha256(pg_catalog.convert_to(p_idempotency_key, 'UTF8'));

    INSERT INTO durable_jobs.job_record AS j (queue_name, idempotency_key_digest, run_after, max_attempts)
    VALUES (p_queue_name, v_key_digest, COALESCE(p_run_after, pg_catalog.clock_timestamp()), p_max_attempts)
    ON CONFLICT (queue_name, idempotency_key_digest) WHERE idempotency_key_digest IS NOT NULL DO NOTHING
    RETURNING j.job_record_id INTO v_job_record_id;

    IF v_job_record_id IS NULL THEN
        SELECT j.job_record_id INTO STRICT v_job_record_id
        FROM durable_jobs.job_record j
        WHERE j.queue_name = p_queue_name AND j.idempotency_key_digest = v_key_digest;
        RETURN v_job_record_id;
    END IF;

    INSERT INTO durable_jobs.job_payload_record (job_record_id, job_payload) VALUES (v_job_record_id, p_job_payload);
    RETURN v_job_record_id;
END;
$function$;

-- cancel_job: QUEUED, RETRY_SCHEDULED or RUNNING to CANCELLED; a running
-- job's claim becomes stale at once (status is part of the fence). false when
-- the job is already terminal or unknown. Locks the job row (waits for a
-- worker's open terminal transaction). Raises LF003 for a NULL id.
CREATE OR REPLACE FUNCTION durable_jobs.cancel_job(p_job_record_id bigint)
RETURNS boolean
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $function$
BEGIN
    IF p_job_record_id IS NULL THEN
        RAISE EXCEPTION 'job id is required' USING ERRCODE = 'LF003';
    END IF;
    UPDATE durable_jobs.job_record j
    SET job_status = 'CANCELLED', status_changed_at = pg_catalog.clock_timestamp(), lease_expires_at = NULL
    WHERE j.job_record_id = p_job_record_id AND j.job_status IN ('QUEUED', 'RETRY_SCHEDULED', 'RUNNING');
    RETURN FOUND;
END;
$function$;

-- replay_job: one FAILED or CANCELLED job back to QUEUED with its attempts
-- starting again (operators only). false for any other status or an unknown
-- id. Locks the job row. Raises LF003 for a NULL id.
CREATE OR REPLACE FUNCTION durable_jobs.replay_job(p_job_record_id bigint)
RETURNS boolean
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $function$
BEGIN
    IF p_job_record_id IS NULL THEN
        RAISE EXCEPTION 'job id is required' USING ERRCODE = 'LF003';
    END IF;
    UPDATE durable_jobs.job_record j
    SET job_status = 'QUEUED', status_changed_at = pg_catalog.clock_timestamp(),
        run_after = pg_catalog.clock_timestamp(), attempt_number = 0, failure_reason_code = NULL
    WHERE j.job_record_id = p_job_record_id AND j.job_status IN ('FAILED', 'CANCELLED');
    RETURN FOUND;
END;
$function$;

-- job_lifecycle_state: payload-blind inspection of one job. Never returns the
-- payload, the token, its digest or the owner. Zero rows for an unknown id.
-- Takes no lock. Raises LF003 for a NULL id.
CREATE OR REPLACE FUNCTION durable_jobs.job_lifecycle_state(p_job_record_id bigint)
RETURNS TABLE (job_status text, attempt_number integer, max_attempts integer, lease_fencing_generation bigint,
               lease_expires_at timestamptz, lease_renewal_count bigint, failure_reason_code text)
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
    SELECT j.job_status::text, j.attempt_number, j.max_attempts, j.lease_fencing_generation,
           j.lease_expires_at, j.lease_renewal_count, j.failure_reason_code
    FROM durable_jobs.job_record j
    WHERE j.job_record_id = p_job_record_id;
END;
$function$;

ALTER FUNCTION durable_jobs.enqueue_job(text, jsonb, text, timestamptz, integer) OWNER TO durable_job_producer_owner;
ALTER FUNCTION durable_jobs.cancel_job(bigint) OWNER TO durable_job_producer_owner;
ALTER FUNCTION durable_jobs.replay_job(bigint) OWNER TO durable_job_producer_owner;
ALTER FUNCTION durable_jobs.job_lifecycle_state(bigint) OWNER TO durable_job_producer_owner;
REVOKE ALL ON FUNCTION durable_jobs.enqueue_job(text, jsonb, text, timestamptz, integer) FROM PUBLIC;
REVOKE ALL ON FUNCTION durable_jobs.cancel_job(bigint) FROM PUBLIC;
REVOKE ALL ON FUNCTION durable_jobs.replay_job(bigint) FROM PUBLIC;
REVOKE ALL ON FUNCTION durable_jobs.job_lifecycle_state(bigint) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.enqueue_job(text, jsonb, text, timestamptz, integer) TO durable_job_producer;
GRANT EXECUTE ON FUNCTION durable_jobs.cancel_job(bigint) TO durable_job_producer;
GRANT EXECUTE ON FUNCTION durable_jobs.job_lifecycle_state(bigint) TO durable_job_producer;
GRANT EXECUTE ON FUNCTION durable_jobs.replay_job(bigint) TO durable_job_operator;
