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
