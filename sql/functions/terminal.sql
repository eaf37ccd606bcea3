-- Terminal writes: fenced RUNNING -> SUCCEEDED, retry or FAILED, one claim or many.
--
-- The current definition of each function of this family, edited in place.
-- A change reaches databases through a new migration that includes this
-- file; released migrations hold their own frozen copy (see sql/doc.go).
--
-- Below, the notes written with the versions the current definitions come
-- from, newest first. They name the files as they were then; each
-- migration's frozen SQL under sql/migrations holds the whole text.

-- Notes of migration 030:
--
-- Only complete_jobs changes: its UPDATE finds the locked rows by their
-- tuple ids alone (it also tested their job ids, which let statistics
-- taken while the jobs were queued plan it as a scan of the primary key
-- by the ids: about 3.5 index entries a claim against 1 to 2 with a TID
-- scan; issue 38). Which rows it completes does not change: exactly the
-- rows its lock pass found fenced and locked, by the same checks (status,
-- token digest, owner, claiming session_user, expiry by database time).

-- Notes of migration 017 (terminal_batch_v3.sql in its frozen SQL):
--
-- terminal batch v3 (migration 017; 016 installs terminal_batch_v2.sql).
-- Exactly v2, except that the 1 MiB check of the result documents runs as
-- a statement only when there are documents: the worker loop completes
-- without results (p_result_documents NULL), and a statement that reads
-- nothing still costs an executor start and end on every call.

-- Notes of migration 016 (terminal_v4.sql in its frozen SQL):
--
-- terminal v4 (migration 016; 004 installs terminal_v2.sql, 012 terminal_v3.sql):
-- only lock_fenced_claim changes, so only it is here. Version 2 found the
-- claim's row with `job_status = 'RUNNING'` beside its primary key, which
-- let a planner whose statistics predate the claims (ANALYZE while the jobs
-- were queued: the partial indexes of RUNNING rows look empty) read the
-- whole job_record_running_by_queue index for every complete_job,
-- retry_job, fail_job and release_job_claim: O(live leases) per call
-- (TestCallsOnOneJobUseThePrimaryKeyUnderStaleStatistics). The
-- other terminal functions stay as v2 and v3 have them.

-- lock_fenced_claim: private helper of the terminal family. Checks the claim
-- arguments (LF003 when malformed) and locks the job row FOR UPDATE only if
-- the claim is fenced: RUNNING, token digest, owner and claiming session_user
-- match, and lease_expires_at > clock_timestamp(). Zero rows when stale. A
-- concurrent renewal or cancel is waited for and the fence re-checked.
CREATE OR REPLACE FUNCTION durable_jobs.lock_fenced_claim(p_job_record_id bigint, p_lease_claim_token uuid, p_worker_owner_id text)
RETURNS TABLE (fenced_generation bigint, fenced_attempt_number integer, fenced_max_attempts integer)
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, pg_temp
AS $function$
BEGIN
    PERFORM durable_jobs.require_well_formed('worker_owner_id', p_worker_owner_id);
    IF p_job_record_id IS NULL OR p_lease_claim_token IS NULL THEN
        RAISE EXCEPTION 'job id and claim token are required' USING ERRCODE = 'LF003';
    END IF;
    RETURN QUERY
    SELECT j.lease_fencing_generation, j.attempt_number, j.max_attempts
    FROM durable_jobs.job_record j
    WHERE j.job_record_id = p_job_record_id
      -- compared as text: no statistics can then make a partial index of
      -- RUNNING rows (empty to a planner whose ANALYZE ran before the
      -- claims) look cheaper than the primary key; the key finds the row,
      -- this checks it
      AND j.job_status::text = 'RUNNING'
      AND j.lease_claim_digest = durable_jobs.claim_token_digest(p_lease_claim_token)
      AND j.lease_owner_id = p_worker_owner_id
      AND j.lease_claimed_by_role = SESSION_USER
      AND j.lease_expires_at > pg_catalog.clock_timestamp()
    FOR UPDATE OF j;
END;
$function$;

REVOKE ALL ON FUNCTION durable_jobs.lock_fenced_claim(bigint, uuid, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.lock_fenced_claim(bigint, uuid, text) TO durable_job_terminal_owner;

-- raise_stale_claim: the one place LF001 is raised, so every terminal write
-- refuses a stale claim the same way and the caller's transaction, target
-- writes included, cannot commit. The message carries no claim value.
CREATE OR REPLACE FUNCTION durable_jobs.raise_stale_claim()
RETURNS void
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, pg_temp
AS $function$
BEGIN
    RAISE EXCEPTION USING
        ERRCODE = 'LF001',
        MESSAGE = 'stale claim: the lease is expired, cancelled, terminal, superseded or not yours',
        HINT = 'Stop work on this job and roll back; only claim_next_job creates ownership.';
END;
$function$;

REVOKE ALL ON FUNCTION durable_jobs.raise_stale_claim() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.raise_stale_claim() TO durable_job_terminal_owner;

-- complete_job: fenced RUNNING -> SUCCEEDED, with the result recorded in the
-- outcome ledger. Meant to run in the worker's own transaction with its
-- target writes so that all commit or none do. Locks the job row. Raises
-- LF003 for malformed input (a result document over 1 MiB, pg_column_size
-- of the jsonb, included), LF001 for a stale claim.
CREATE OR REPLACE FUNCTION durable_jobs.complete_job(p_job_record_id bigint, p_lease_claim_token uuid, p_worker_owner_id text,
                                          p_result_document jsonb DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $function$
DECLARE
    v_claim record;
BEGIN
    IF pg_catalog.pg_column_size(p_result_document) > 1048576 THEN
        RAISE EXCEPTION 'result document must be at most 1 MiB' USING ERRCODE = 'LF003';
    END IF;
    SELECT * INTO v_claim FROM durable_jobs.lock_fenced_claim(p_job_record_id, p_lease_claim_token, p_worker_owner_id);
    IF NOT FOUND THEN
        PERFORM durable_jobs.raise_stale_claim();
    END IF;
    UPDATE durable_jobs.job_record j
    SET job_status = 'SUCCEEDED', status_changed_at = pg_catalog.clock_timestamp(), lease_expires_at = NULL
    WHERE j.job_record_id = p_job_record_id;
    INSERT INTO durable_jobs.job_outcome_ledger (job_record_id, lease_fencing_generation, outcome_status, result_document)
    VALUES (p_job_record_id, v_claim.fenced_generation, 'SUCCEEDED', p_result_document);
END;
$function$;

ALTER FUNCTION durable_jobs.complete_job(bigint, uuid, text, jsonb) OWNER TO durable_job_terminal_owner;
REVOKE ALL ON FUNCTION durable_jobs.complete_job(bigint, uuid, text, jsonb) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.complete_job(bigint, uuid, text, jsonb) TO durable_job_worker;

-- complete_jobs: every claim in is fenced exactly as complete_job fences one
-- (RUNNING, token digest, owner and claiming session_user match,
-- lease_expires_at > clock_timestamp()) and moves to SUCCEEDED with its
-- result in the outcome ledger; one row out per claim in, in input order.
-- Completion is transactional: one stale claim raises LF001 and nothing is
-- completed (the caller's transaction, target writes included, cannot
-- commit). Locks the rows FOR UPDATE in job id order, so two batches (or a
-- batch and complete_job calls in id order) cannot deadlock; like
-- complete_job it waits for a row another transaction holds locked and then
-- decides on the row as that transaction left it. p_result_documents NULL:
-- every result is NULL; else one document (or NULL) per claim. LF003 on
-- bad input: malformed owner, NULL arrays, multi-dimensional arrays, lengths
-- that differ, NULL ids or tokens, a job id given twice, more than 1,000
-- claims, a result document over 1 MiB. Empty arrays: zero rows.
CREATE OR REPLACE FUNCTION durable_jobs.complete_jobs(p_worker_owner_id text, p_job_record_ids bigint[],
                                           p_lease_claim_tokens uuid[], p_result_documents jsonb[] DEFAULT NULL)
RETURNS TABLE (job_record_id bigint, job_status text, lease_fencing_generation bigint)
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $function$
#variable_conflict use_column
DECLARE
    v_claims integer;
    v_locked_ctids tid[];
BEGIN
    -- The contract's owner pattern (the rule function, inlined: no call),
    -- checked here first, byte for byte and
    -- only for a value without a collation of the caller's: a well-formed
    -- value (every call but a bad one) then costs no call of the helper,
    -- whose SET search_path makes each call cost as much as a small query.
    -- Anything else goes to require_well_formed, which raises LF003 as
    -- everywhere (a caller's collation included).
    IF p_worker_owner_id IS NULL OR pg_catalog.pg_collation_for(p_worker_owner_id) NOT IN ('"default"', '"C"', '"POSIX"')
       OR NOT durable_jobs.worker_owner_id_is_well_formed(p_worker_owner_id) THEN
        PERFORM durable_jobs.require_well_formed('worker_owner_id', p_worker_owner_id);
    END IF;
    IF p_job_record_ids IS NULL OR p_lease_claim_tokens IS NULL
       OR pg_catalog.array_ndims(p_job_record_ids) > 1 OR pg_catalog.array_ndims(p_lease_claim_tokens) > 1
       OR pg_catalog.array_ndims(p_result_documents) > 1
       OR pg_catalog.cardinality(p_job_record_ids) <> pg_catalog.cardinality(p_lease_claim_tokens)
       OR (p_result_documents IS NOT NULL
           AND pg_catalog.cardinality(p_result_documents) <> pg_catalog.cardinality(p_job_record_ids))
       OR pg_catalog.cardinality(p_job_record_ids) > 1000
       OR pg_catalog.array_position(p_job_record_ids, NULL) IS NOT NULL
       OR pg_catalog.array_position(p_lease_claim_tokens, NULL) IS NOT NULL
       OR (SELECT pg_catalog.count(DISTINCT i) FROM pg_catalog.unnest(p_job_record_ids) i)
          <> pg_catalog.cardinality(p_job_record_ids) THEN
        RAISE EXCEPTION 'claims must be flat arrays of equal length, at most 1000, no NULL id or token, no repeated job id'
            USING ERRCODE = 'LF003';
    END IF;
    -- complete_job's limit on each result document (pg_column_size of the jsonb).
    IF p_result_documents IS NOT NULL THEN
        IF EXISTS (SELECT FROM pg_catalog.unnest(p_result_documents) AS d(document)
                   WHERE pg_catalog.pg_column_size(d.document) > 1048576) THEN
            RAISE EXCEPTION 'each result document must be at most 1 MiB' USING ERRCODE = 'LF003';
        END IF;
    END IF;
    v_claims := pg_catalog.cardinality(p_job_record_ids);

    -- Lock exactly the fenced rows, in job id order, one primary-key probe
    -- per claim (the locking subquery is never flattened into a join, so no
    -- table statistics can turn it into a scan of every running job; the
    -- token digest is claim_token_digest's body written out).
    SELECT pg_catalog.array_agg(f.fenced_ctid) INTO v_locked_ctids
    FROM (SELECT i.input_job_id, i.input_token
          FROM ROWS FROM (pg_catalog.unnest(p_job_record_ids), pg_catalog.unnest(p_lease_claim_tokens))
               AS i(input_job_id, input_token)
          ORDER BY i.input_job_id) i
    CROSS JOIN LATERAL (
          SELECT j.ctid AS fenced_ctid
          FROM durable_jobs.job_record j
          WHERE j.job_record_id = i.input_job_id
            -- compared as text: no statistics can then make a partial index of RUNNING
            -- rows (empty to a planner whose ANALYZE ran before the claims) look
            -- cheaper than the primary key; the key finds the row, this checks it
            AND j.job_status::text = 'RUNNING'
            AND j.lease_claim_digest = pg_catalog.sha256(pg_catalog.uuid_send(i.input_token))
            AND j.lease_owner_id = p_worker_owner_id
            AND j.lease_claimed_by_role = SESSION_USER
            AND j.lease_expires_at > pg_catalog.clock_timestamp()
          FOR UPDATE OF j) f;
    IF COALESCE(pg_catalog.cardinality(v_locked_ctids), 0) < v_claims THEN
        PERFORM durable_jobs.raise_stale_claim();
    END IF;

    -- Every row is locked and fenced (a locked row keeps its tuple id and
    -- its claim): complete them all and record the results, in input order.
    -- The rows are found by their tuple ids alone, as the renewals find
    -- theirs since migration 020: a TID scan whatever the statistics (with
    -- the job ids tested beside them, statistics taken while the jobs were
    -- queued made the planner scan the primary key by the ids instead, one
    -- more probe of the key a claim; migration 030).
    RETURN QUERY
    WITH completed AS (
        UPDATE durable_jobs.job_record j
        SET job_status = 'SUCCEEDED', status_changed_at = pg_catalog.clock_timestamp(), lease_expires_at = NULL
        WHERE j.ctid = ANY (v_locked_ctids)  -- rows this call holds locked, exactly
        RETURNING j.job_record_id AS completed_id, j.lease_fencing_generation AS completed_generation
    ), claim_output AS (
        SELECT k.completed_id, k.completed_generation, i.input_result, i.input_position
        FROM ROWS FROM (pg_catalog.unnest(p_job_record_ids),
                        pg_catalog.unnest(COALESCE(p_result_documents,
                                                   pg_catalog.array_fill(NULL::jsonb, ARRAY[v_claims]))))
             WITH ORDINALITY AS i(input_job_id, input_result, input_position)
        JOIN completed k ON k.completed_id = i.input_job_id
    ), recorded AS (
        INSERT INTO durable_jobs.job_outcome_ledger
            (job_record_id, lease_fencing_generation, outcome_status, result_document)
        SELECT o.completed_id, o.completed_generation, 'SUCCEEDED', o.input_result
        FROM claim_output o
        ORDER BY o.input_position
    )
    -- recorded is not read: a data-modifying WITH runs to completion anyway.
    SELECT o.completed_id, 'SUCCEEDED'::text, o.completed_generation
    FROM claim_output o
    ORDER BY o.input_position;
END;
$function$;

ALTER FUNCTION durable_jobs.complete_jobs(text, bigint[], uuid[], jsonb[]) OWNER TO durable_job_terminal_owner;
REVOKE ALL ON FUNCTION durable_jobs.complete_jobs(text, bigint[], uuid[], jsonb[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.complete_jobs(text, bigint[], uuid[], jsonb[]) TO durable_job_worker;

-- retry_job: fenced RUNNING -> RETRY_SCHEDULED with run-after
-- clock_timestamp() + p_retry_delay, or FAILED with the caller's reason code
-- when the attempts are used up; returns the new status. The delay is taken
-- as a plain duration ('1 day' is 24 hours under every TimeZone). Locks the
-- job row. Raises LF003 for malformed input (a delay outside 0 to 30 days,
-- with a month part or with day and time parts of opposite signs), LF001 for
-- a stale claim.
CREATE OR REPLACE FUNCTION durable_jobs.retry_job(p_job_record_id bigint, p_lease_claim_token uuid, p_worker_owner_id text,
                                       p_retry_delay interval, p_failure_reason_code text)
RETURNS text
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET TimeZone = 'UTC'
AS $function$
DECLARE
    v_claim record;
    v_new_status durable_jobs.job_status_kind;
    v_retry_delay interval := durable_jobs.absolute_duration(p_retry_delay);
BEGIN
    PERFORM durable_jobs.require_well_formed('failure_reason_code', p_failure_reason_code);
    IF v_retry_delay IS NULL OR v_retry_delay < interval '0' OR v_retry_delay > interval '720 hours' THEN
        RAISE EXCEPTION 'retry delay must be a plain duration of 0 to 30 days' USING ERRCODE = 'LF003',
            HINT = 'No month part and no day and time parts of opposite signs.';
    END IF;
    SELECT * INTO v_claim FROM durable_jobs.lock_fenced_claim(p_job_record_id, p_lease_claim_token, p_worker_owner_id);
    IF NOT FOUND THEN
        PERFORM durable_jobs.raise_stale_claim();
    END IF;
    v_new_status := CASE WHEN v_claim.fenced_attempt_number >= v_claim.fenced_max_attempts
                         THEN 'FAILED'::durable_jobs.job_status_kind
                         ELSE 'RETRY_SCHEDULED'::durable_jobs.job_status_kind END;
    UPDATE durable_jobs.job_record j
    SET job_status = v_new_status, status_changed_at = pg_catalog.clock_timestamp(),
        run_after = pg_catalog.clock_timestamp() + v_retry_delay,
        failure_reason_code = p_failure_reason_code, lease_expires_at = NULL
    WHERE j.job_record_id = p_job_record_id;
    INSERT INTO durable_jobs.job_outcome_ledger (job_record_id, lease_fencing_generation, outcome_status, failure_reason_code)
    VALUES (p_job_record_id, v_claim.fenced_generation, v_new_status, p_failure_reason_code);
    RETURN v_new_status::text;
END;
$function$;

ALTER FUNCTION durable_jobs.retry_job(bigint, uuid, text, interval, text) OWNER TO durable_job_terminal_owner;
REVOKE ALL ON FUNCTION durable_jobs.retry_job(bigint, uuid, text, interval, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.retry_job(bigint, uuid, text, interval, text) TO durable_job_worker;

-- fail_job: fenced RUNNING -> FAILED with a bounded reason code. Locks the
-- job row. Raises LF003 for malformed input, LF001 for a stale claim.
CREATE OR REPLACE FUNCTION durable_jobs.fail_job(p_job_record_id bigint, p_lease_claim_token uuid, p_worker_owner_id text,
                                      p_failure_reason_code text)
RETURNS void
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $function$
DECLARE
    v_claim record;
BEGIN
    PERFORM durable_jobs.require_well_formed('failure_reason_code', p_failure_reason_code);
    SELECT * INTO v_claim FROM durable_jobs.lock_fenced_claim(p_job_record_id, p_lease_claim_token, p_worker_owner_id);
    IF NOT FOUND THEN
        PERFORM durable_jobs.raise_stale_claim();
    END IF;
    UPDATE durable_jobs.job_record j
    SET job_status = 'FAILED', status_changed_at = pg_catalog.clock_timestamp(),
        failure_reason_code = p_failure_reason_code, lease_expires_at = NULL
    WHERE j.job_record_id = p_job_record_id;
    INSERT INTO durable_jobs.job_outcome_ledger (job_record_id, lease_fencing_generation, outcome_status, failure_reason_code)
    VALUES (p_job_record_id, v_claim.fenced_generation, 'FAILED', p_failure_reason_code);
END;
$function$;

ALTER FUNCTION durable_jobs.fail_job(bigint, uuid, text, text) OWNER TO durable_job_terminal_owner;
REVOKE ALL ON FUNCTION durable_jobs.fail_job(bigint, uuid, text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.fail_job(bigint, uuid, text, text) TO durable_job_worker;
