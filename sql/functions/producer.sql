-- Producers: enqueue (one job or many), cancel, replay and read a job's state.
--
-- The current definition of each function of this family, edited in place.
-- A change reaches databases through a new migration that includes this
-- file; released migrations hold their own frozen copy (see sql/doc.go).
--
-- Below, the notes written with the versions the current definitions come
-- from, newest first. They name the files as they were then; each
-- migration's frozen SQL under sql/migrations holds the whole text.

-- Notes of migration 016 (producer_v3.sql in its frozen SQL):
--
-- producer v3 (migration 016; 004 installs producer_v2.sql): only
-- replay_job changes, so only it is here. Version 2 found the job's row with
-- `job_status IN ('FAILED', 'CANCELLED')` beside its primary key, which
-- implies the predicate of job_record_finished_by_age: with statistics taken
-- before the jobs finished that index looks empty and a replay read every
-- finished job through it (TestCallsOnOneJobUseThePrimaryKeyUnderStaleStatistics).
-- Owner and grants stay as version 2 set them.

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

ALTER FUNCTION durable_jobs.enqueue_job(text, jsonb, text, timestamp with time zone, integer) OWNER TO durable_job_producer_owner;
REVOKE ALL ON FUNCTION durable_jobs.enqueue_job(text, jsonb, text, timestamp with time zone, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.enqueue_job(text, jsonb, text, timestamp with time zone, integer) TO durable_job_producer;

-- enqueue_jobs (version 3, set-based): enqueue_job for many jobs of one
-- queue in one call. Element i of each array describes job i; the result
-- holds one id per job, in input order. p_idempotency_keys, p_run_afters and
-- p_max_attempts are each NULL (no key, now, 5 attempts for every job) or
-- have exactly one element per payload; a NULL key or run-after element means
-- no key or now for that job. Every element gets enqueue_job's checks and
-- its idempotency: a key already on the queue, or repeated within the batch,
-- returns the first job's id and creates nothing. All or nothing: a bad
-- element raises LF003 naming its position (never its content) and no job of
-- the batch is written.
-- Writes what calling enqueue_job per element in input order writes, in a
-- few statements instead of one call per element: one pass checks every
-- element and reports the first bad one with enqueue_job's message; one
-- INSERT ... SELECT of the job rows reads the elements sorted by position
-- (so ids are drawn in input order, one per element as enqueue_job draws
-- one per call, a repeated key included): a batch without keys by a plain
-- INSERT, since nothing in it can conflict, a batch with keys skipping a key
-- already taken, on the queue or by an earlier element, with ON CONFLICT DO
-- NOTHING. Only when that left an element without a new job does a query
-- give every keyed element the id its key now holds (so it sees a
-- concurrent insert of the key that committed while this one waited, as
-- enqueue_job does), raising P0002 as enqueue_job's STRICT lookup would if
-- that job has meanwhile been deleted; otherwise each key holds its
-- element's new job already. One last INSERT writes the new jobs' payloads.
-- The job and lookup statements are planned for each call's arrays
-- (plan_cache_mode force_custom_plan): from the sixth call of a session
-- PL/pgSQL would otherwise use a generic plan, which guesses 100 elements
-- per array and joins 10,000 of them by nested loops (seconds instead of
-- milliseconds). The payload INSERT joins nothing and runs with
-- plan_cache_mode auto, because its foreign key checks each row with a
-- cached plan that force_custom_plan would plan again for every row.
-- Version 2 (migration 010) wrote the payloads in the job statement, under
-- force_custom_plan, made every row a speculative insertion (ON CONFLICT)
-- even without keys, and always ran the lookup, which PostgreSQL
-- JIT-compiled on every call: together about half its time for 10,000 jobs
-- (bench/notes.md).
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
SET plan_cache_mode = force_custom_plan
AS $function$
DECLARE
    v_job_count integer := pg_catalog.cardinality(p_job_payloads);
    v_position bigint;
    v_message text;
    v_new_job_record_ids bigint[];
    v_job_record_ids bigint[];
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

    -- enqueue_job's checks, in its order, on every element; its messages
    -- name the rule, never the value.
    SELECT u.job_position, u.refusal INTO v_position, v_message
    FROM (SELECT e.job_position,
                 CASE
                     WHEN e.job_payload IS NULL THEN 'job payload is required'
                     WHEN pg_catalog.pg_column_size(e.job_payload) > 1048576 THEN 'job payload must be at most 1 MiB'
                     WHEN e.run_after IS NOT NULL AND (NOT pg_catalog.isfinite(e.run_after)
                             OR e.run_after < timestamptz '2000-01-01 00:00:00+00'
                             OR e.run_after >= timestamptz '2100-01-01 00:00:00+00')
                         THEN 'run-after must be a finite time from 2000-01-01 to before 2100-01-01 UTC'
                     WHEN e.idempotency_key IS NOT NULL AND pg_catalog.length(e.idempotency_key) NOT BETWEEN 1 AND 200
                         THEN 'idempotency key must be 1 to 200 characters'
                     WHEN p_max_attempts IS NOT NULL AND (e.max_attempts IS NULL OR e.max_attempts NOT BETWEEN 1 AND 1000)
                         THEN 'max attempts must be 1 to 1000'
                 END AS refusal
          FROM ROWS FROM (pg_catalog.unnest(p_job_payloads), pg_catalog.unnest(p_idempotency_keys),
                          pg_catalog.unnest(p_run_afters), pg_catalog.unnest(p_max_attempts))
               WITH ORDINALITY AS e(job_payload, idempotency_key, run_after, max_attempts, job_position)) u
    WHERE u.refusal IS NOT NULL
    ORDER BY u.job_position
    LIMIT 1;
    IF v_message IS NOT NULL THEN
        RAISE EXCEPTION 'job % of the batch: %', v_position, v_message USING ERRCODE = 'LF003';
    END IF;

    -- No keys: the new jobs, the k-th by id order element k's, as ids are
    -- drawn in the order the sorted rows are inserted.
    IF p_idempotency_keys IS NULL OR pg_catalog.cardinality(pg_catalog.array_remove(p_idempotency_keys, NULL)) = 0 THEN
        WITH new_job AS (
            INSERT INTO durable_jobs.job_record AS j (queue_name, run_after, max_attempts)
            SELECT p_queue_name, COALESCE(e.run_after, pg_catalog.clock_timestamp()),
                   CASE WHEN p_max_attempts IS NULL THEN 5 ELSE e.max_attempts END
            FROM ROWS FROM (pg_catalog.unnest(p_job_payloads), pg_catalog.unnest(p_run_afters),
                            pg_catalog.unnest(p_max_attempts))
                 WITH ORDINALITY AS e(job_payload, run_after, max_attempts, job_position)
            ORDER BY e.job_position
            RETURNING j.job_record_id
        )
        SELECT pg_catalog.array_agg(n.job_record_id ORDER BY n.job_record_id) INTO v_new_job_record_ids FROM new_job n;
    ELSE
        -- Keys: the new jobs, NULL for an element whose key is already taken.
        -- A keyed job is matched to its element by the key's digest (unique
        -- among the new jobs); the k-th new keyless job by id order is the k-th
        -- keyless element, as ids are drawn in the order the sorted rows are
        -- inserted.
        WITH element AS (
            SELECT e.job_position,
                   pg_catalog.sha256(pg_catalog.convert_to(e.idempotency_key, 'UTF8')) AS key_digest,
                   e.run_after, CASE WHEN p_max_attempts IS NULL THEN 5 ELSE e.max_attempts END AS max_attempts
            FROM ROWS FROM (pg_catalog.unnest(p_job_payloads), pg_catalog.unnest(p_idempotency_keys),
                            pg_catalog.unnest(p_run_afters), pg_catalog.unnest(p_max_attempts))
                 WITH ORDINALITY AS e(job_payload, idempotency_key, run_after, max_attempts, job_position)
        ), new_job AS (
            INSERT INTO durable_jobs.job_record AS j (queue_name, idempotency_key_digest, run_after, max_attempts)
            SELECT p_queue_name, s.key_digest, COALESCE(s.run_after, pg_catalog.clock_timestamp()), s.max_attempts
            FROM (SELECT e.job_position, e.key_digest, e.run_after, e.max_attempts FROM element e
                  ORDER BY e.job_position) s
            ON CONFLICT (queue_name, idempotency_key_digest) WHERE idempotency_key_digest IS NOT NULL DO NOTHING
            RETURNING j.job_record_id, j.idempotency_key_digest
        ), placed AS (
            SELECT k.job_position, n.job_record_id
            FROM (SELECT DISTINCT ON (e.key_digest) e.key_digest, e.job_position
                  FROM element e WHERE e.key_digest IS NOT NULL
                  ORDER BY e.key_digest, e.job_position) k
            JOIN new_job n ON n.idempotency_key_digest = k.key_digest
            UNION ALL
            SELECT k.job_position, n.job_record_id
            FROM (SELECT e.job_position, pg_catalog.row_number() OVER (ORDER BY e.job_position) AS keyless_rank
                  FROM element e WHERE e.key_digest IS NULL) k
            JOIN (SELECT n.job_record_id, pg_catalog.row_number() OVER (ORDER BY n.job_record_id) AS keyless_rank
                  FROM new_job n WHERE n.idempotency_key_digest IS NULL) n ON n.keyless_rank = k.keyless_rank
        )
        SELECT pg_catalog.array_agg(p.job_record_id ORDER BY e.job_position) INTO v_new_job_record_ids
        FROM element e LEFT JOIN placed p ON p.job_position = e.job_position;
    END IF;

    IF pg_catalog.array_position(v_new_job_record_ids, NULL) IS NULL THEN
        -- Every element has a new job, and its key, if any, holds it.
        v_job_record_ids := v_new_job_record_ids;
    ELSE
        -- One id per element: its new job's, or (a key already taken) the id
        -- its key holds, looked up in a snapshot taken after the insert, so it
        -- also sees a concurrent insert of the key that this one waited for.
        SELECT pg_catalog.array_agg(r.job_record_id ORDER BY r.job_position) INTO STRICT v_job_record_ids
        FROM (SELECT u.job_position,
                     COALESCE(u.job_record_id,
                              (SELECT j.job_record_id FROM durable_jobs.job_record j
                               WHERE j.queue_name = p_queue_name
                                 AND j.idempotency_key_digest
                                     = pg_catalog.sha256(pg_catalog.convert_to(u.idempotency_key, 'UTF8')))) AS job_record_id
              FROM ROWS FROM (pg_catalog.unnest(v_new_job_record_ids), pg_catalog.unnest(p_idempotency_keys))
                   WITH ORDINALITY AS u(job_record_id, idempotency_key, job_position)) r
        HAVING pg_catalog.count(*) = pg_catalog.count(r.job_record_id); -- else P0002, as enqueue_job's STRICT lookup
    END IF;

    -- The new jobs' payloads, each element's with its new job, planned and
    -- run with plan_cache_mode auto (see above; the function's SET clause
    -- puts the caller's own value back when it returns).
    PERFORM pg_catalog.set_config('plan_cache_mode', 'auto', true);
    INSERT INTO durable_jobs.job_payload_record (job_record_id, job_payload)
    SELECT u.job_record_id, u.job_payload
    FROM ROWS FROM (pg_catalog.unnest(v_new_job_record_ids), pg_catalog.unnest(p_job_payloads))
         AS u(job_record_id, job_payload)
    WHERE u.job_record_id IS NOT NULL;
    RETURN v_job_record_ids;
END;
$function$;

ALTER FUNCTION durable_jobs.enqueue_jobs(text, jsonb[], text[], timestamp with time zone[], integer[]) OWNER TO durable_job_producer_owner;
REVOKE ALL ON FUNCTION durable_jobs.enqueue_jobs(text, jsonb[], text[], timestamp with time zone[], integer[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.enqueue_jobs(text, jsonb[], text[], timestamp with time zone[], integer[]) TO durable_job_producer;

-- cancel_job_recorded: private body of both cancel_job overloads (a NULL
-- reason: the producer's, recorded in the trail only).
CREATE OR REPLACE FUNCTION durable_jobs.cancel_job_recorded(p_job_record_id bigint, p_change_reason text,
    p_change_ticket text, p_change_approver text)
RETURNS boolean
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, pg_temp
AS $function$
DECLARE
    v_queue text;
    v_previous text;
BEGIN
    IF p_job_record_id IS NULL THEN
        RAISE EXCEPTION 'job id is required' USING ERRCODE = 'LF003';
    END IF;
    SELECT j.queue_name, j.job_status::text INTO v_queue, v_previous
    FROM durable_jobs.job_record j
    WHERE j.job_record_id = p_job_record_id AND j.job_status IN ('QUEUED', 'RETRY_SCHEDULED', 'RUNNING')
    FOR NO KEY UPDATE;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    UPDATE durable_jobs.job_record j
    SET job_status = 'CANCELLED', status_changed_at = pg_catalog.clock_timestamp(), lease_expires_at = NULL
    WHERE j.job_record_id = p_job_record_id;
    PERFORM durable_jobs.record_job_action(p_job_record_id, v_queue, 'cancelled', v_previous, 'CANCELLED',
        p_change_reason, p_change_ticket, p_change_approver);
    RETURN true;
END;
$function$;

ALTER FUNCTION durable_jobs.cancel_job_recorded(bigint, text, text, text) OWNER TO durable_job_producer_owner;
REVOKE ALL ON FUNCTION durable_jobs.cancel_job_recorded(bigint, text, text, text) FROM PUBLIC;

-- replay_job_recorded: private body of both replay_job overloads.
CREATE OR REPLACE FUNCTION durable_jobs.replay_job_recorded(p_job_record_id bigint, p_change_reason text,
    p_change_ticket text, p_change_approver text)
RETURNS boolean
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, pg_temp
AS $function$
DECLARE
    v_queue text;
    v_previous text;
BEGIN
    IF p_job_record_id IS NULL THEN
        RAISE EXCEPTION 'job id is required' USING ERRCODE = 'LF003';
    END IF;
    -- compared as text: statistics taken before the jobs finished must not
    -- make the partial index of finished jobs look cheaper than the key
    SELECT j.queue_name, j.job_status::text INTO v_queue, v_previous
    FROM durable_jobs.job_record j
    WHERE j.job_record_id = p_job_record_id AND j.job_status::text IN ('FAILED', 'CANCELLED')
    FOR NO KEY UPDATE;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    UPDATE durable_jobs.job_record j
    SET job_status = 'QUEUED', status_changed_at = pg_catalog.clock_timestamp(),
        run_after = pg_catalog.clock_timestamp(), attempt_number = 0, failure_reason_code = NULL
    WHERE j.job_record_id = p_job_record_id;
    PERFORM durable_jobs.record_job_action(p_job_record_id, v_queue, 'replayed', v_previous, 'QUEUED',
        p_change_reason, p_change_ticket, p_change_approver);
    RETURN true;
END;
$function$;

ALTER FUNCTION durable_jobs.replay_job_recorded(bigint, text, text, text) OWNER TO durable_job_producer_owner;
REVOKE ALL ON FUNCTION durable_jobs.replay_job_recorded(bigint, text, text, text) FROM PUBLIC;

-- cancel_job: QUEUED, RETRY_SCHEDULED or RUNNING to CANCELLED; a running
-- job's claim becomes stale at once (status is part of the fence). false when
-- the job is already terminal or unknown. A cancel appends a 'cancelled' row
-- to the job's action trail (record_job_action: session_user and database
-- time, no reason; since migration 026). Locks the job row (waits for a
-- worker's open terminal transaction). Raises LF003 for a NULL id.
CREATE OR REPLACE FUNCTION durable_jobs.cancel_job(p_job_record_id bigint)
RETURNS boolean
LANGUAGE sql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
BEGIN ATOMIC
    SELECT durable_jobs.cancel_job_recorded(p_job_record_id, NULL, NULL, NULL);
END;

ALTER FUNCTION durable_jobs.cancel_job(bigint) OWNER TO durable_job_producer_owner;
REVOKE ALL ON FUNCTION durable_jobs.cancel_job(bigint) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.cancel_job(bigint) TO durable_job_producer;

-- cancel_job (an operator's, with a reason): the same, and the change
-- record (reason, ticket when change control asks for one, approver) is
-- checked (LF002 and nothing changed when it is not structured), kept in
-- the job's action trail and appended as job_cancelled control evidence
-- (queue and status before; never the job id). Locks the job row, then the
-- evidence-order lock (lock_timeout 10 s, then 55P03).
CREATE OR REPLACE FUNCTION durable_jobs.cancel_job(p_job_record_id bigint, p_change_reason text,
    p_change_ticket text DEFAULT NULL, p_change_approver text DEFAULT NULL)
RETURNS boolean
LANGUAGE sql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET lock_timeout = '10s'
BEGIN ATOMIC
    SELECT durable_jobs.cancel_job_recorded(p_job_record_id, COALESCE(p_change_reason, ''), p_change_ticket,
        p_change_approver);
END;

ALTER FUNCTION durable_jobs.cancel_job(bigint, text, text, text) OWNER TO durable_job_producer_owner;
REVOKE ALL ON FUNCTION durable_jobs.cancel_job(bigint, text, text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.cancel_job(bigint, text, text, text) TO durable_job_operator;

-- replay_job: one FAILED or CANCELLED job back to QUEUED with its attempts
-- starting again (operators only). false for any other status or an unknown
-- id. Since migration 026 a replay is an operator action on record: this
-- overload, which takes no reason, records 'replayed without a reason' in
-- the job's action trail and as job_replayed control evidence, so it is
-- refused (LF002) where change control requires an approver or a reason
-- pattern. Locks the job row, then the evidence-order lock (lock_timeout
-- 10 s, then 55P03). Raises LF003 for a NULL id.
CREATE OR REPLACE FUNCTION durable_jobs.replay_job(p_job_record_id bigint)
RETURNS boolean
LANGUAGE sql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET lock_timeout = '10s'
BEGIN ATOMIC
    SELECT durable_jobs.replay_job_recorded(p_job_record_id, 'replayed without a reason', NULL, NULL);
END;

ALTER FUNCTION durable_jobs.replay_job(bigint) OWNER TO durable_job_producer_owner;
REVOKE ALL ON FUNCTION durable_jobs.replay_job(bigint) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.replay_job(bigint) TO durable_job_operator;

-- replay_job (with a reason): the same with the operator's reason, ticket
-- and approver, checked (LF002 and nothing changed when the change record
-- is not structured), kept in the job's action trail and appended as
-- job_replayed control evidence (queue and status before; never the job
-- id).
CREATE OR REPLACE FUNCTION durable_jobs.replay_job(p_job_record_id bigint, p_change_reason text,
    p_change_ticket text DEFAULT NULL, p_change_approver text DEFAULT NULL)
RETURNS boolean
LANGUAGE sql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET lock_timeout = '10s'
BEGIN ATOMIC
    SELECT durable_jobs.replay_job_recorded(p_job_record_id, COALESCE(p_change_reason, ''), p_change_ticket,
        p_change_approver);
END;

ALTER FUNCTION durable_jobs.replay_job(bigint, text, text, text) OWNER TO durable_job_producer_owner;
REVOKE ALL ON FUNCTION durable_jobs.replay_job(bigint, text, text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.replay_job(bigint, text, text, text) TO durable_job_operator;

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

ALTER FUNCTION durable_jobs.job_lifecycle_state(bigint) OWNER TO durable_job_producer_owner;
REVOKE ALL ON FUNCTION durable_jobs.job_lifecycle_state(bigint) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.job_lifecycle_state(bigint) TO durable_job_producer;
