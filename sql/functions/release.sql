-- Releases: a claim given back unfinished, one or many.
--
-- The current definition of each function of this family, edited in place.
-- A change reaches databases through a new migration that includes this
-- file; released migrations hold their own frozen copy (see sql/doc.go).
--
-- Below, the notes written with the versions the current definitions come
-- from, newest first. They name the files as they were then; each
-- migration's frozen SQL under sql/migrations holds the whole text.

-- Notes of migration 023 (release_batch.sql in its frozen SQL):
--
-- release batch (migration 023): release_job_claims, the batched form of
-- release_job_claim (terminal_v3.sql), as complete_jobs is complete_job's.
-- The worker loop's shutdown and the heartbeat's close give up every claim
-- they still hold in one call instead of one release_job_claim per claim.

-- Notes of migration 012 (terminal_v3.sql in its frozen SQL):
--
-- terminal v3 (migration 012; 004 installs terminal_v2.sql): only
-- release_job_claim changes, so only it is here. v2 answered a stale
-- release `false` and counted nothing: a release is the one call of the
-- terminal family whose stale answer commits (complete_job, complete_jobs,
-- retry_job and fail_job raise LF001 and their transaction aborts), so v3
-- counts it as a stale_release with record_stale_call (stale_tally.sql):
-- under the job's queue when the releasing login made the job's last
-- claim, else under '*'. The other terminal functions stay as v2 has them.

-- release_job_claim: the worker gives a fenced claim up (shutdown): the job is
-- QUEUED and claimable at once, the attempt it used is given back and the old
-- token is stale for everything. false when the claim was already stale,
-- and that stale release is counted (stale_release, record_stale_call).
-- Locks the job row. Raises LF003 for malformed input.
CREATE OR REPLACE FUNCTION durable_jobs.release_job_claim(p_job_record_id bigint, p_lease_claim_token uuid, p_worker_owner_id text)
RETURNS boolean
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $function$
BEGIN
    PERFORM 1 FROM durable_jobs.lock_fenced_claim(p_job_record_id, p_lease_claim_token, p_worker_owner_id);
    IF NOT FOUND THEN
        PERFORM durable_jobs.record_stale_call(p_job_record_id, 'stale_release');
        RETURN false;
    END IF;
    UPDATE durable_jobs.job_record j
    SET job_status = 'QUEUED', status_changed_at = pg_catalog.clock_timestamp(),
        run_after = pg_catalog.clock_timestamp(), attempt_number = GREATEST(j.attempt_number - 1, 0),
        lease_expires_at = NULL
    WHERE j.job_record_id = p_job_record_id;
    RETURN true;
END;
$function$;

ALTER FUNCTION durable_jobs.release_job_claim(bigint, uuid, text) OWNER TO durable_job_terminal_owner;
REVOKE ALL ON FUNCTION durable_jobs.release_job_claim(bigint, uuid, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.release_job_claim(bigint, uuid, text) TO durable_job_worker;

-- release_job_claims: a worker gives up many claims at once (shutdown).
-- Every claim in is decided exactly as release_job_claim decides one: a
-- fenced claim (RUNNING, token digest, owner and claiming session_user
-- match, lease_expires_at > clock_timestamp()) has its job QUEUED and
-- claimable at once, the attempt it used given back and its token stale
-- for everything: released true. A claim already stale: released false,
-- and that stale release is counted (stale_release; record_stale_calls,
-- one tally write per queue charged). One row out per claim in, in input
-- order. Unlike complete_jobs, one stale claim does not stop the others:
-- a stale release is an answer, not an error, as it is for
-- release_job_claim. Locks the fenced rows FOR UPDATE in job id order, so
-- two batches (or a batch and single terminal calls in id order) cannot
-- deadlock; like release_job_claim it waits for a row another transaction
-- holds locked and then decides on the row as that transaction left it.
-- LF003 on bad input: malformed owner, NULL arrays, multi-dimensional
-- arrays, lengths that differ, NULL ids or tokens, a job id given twice,
-- more than 1,000 claims. Empty arrays: zero rows.
CREATE OR REPLACE FUNCTION durable_jobs.release_job_claims(p_worker_owner_id text, p_job_record_ids bigint[],
                                                p_lease_claim_tokens uuid[])
RETURNS TABLE (job_record_id bigint, released boolean)
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $function$
#variable_conflict use_column
DECLARE
    v_result record;
    v_locked_ctids tid[];
    v_stale_ids bigint[] := ARRAY[]::bigint[];
BEGIN
    -- The contract's owner pattern (the rule function, inlined: no call),
    -- checked here first, byte for byte and only for a value without a
    -- collation of the caller's; anything else goes to require_well_formed,
    -- which raises LF003 as everywhere (a caller's collation included).
    IF p_worker_owner_id IS NULL OR pg_catalog.pg_collation_for(p_worker_owner_id) NOT IN ('"default"', '"C"', '"POSIX"')
       OR NOT durable_jobs.worker_owner_id_is_well_formed(p_worker_owner_id) THEN
        PERFORM durable_jobs.require_well_formed('worker_owner_id', p_worker_owner_id);
    END IF;
    IF p_job_record_ids IS NULL OR p_lease_claim_tokens IS NULL
       OR pg_catalog.array_ndims(p_job_record_ids) > 1 OR pg_catalog.array_ndims(p_lease_claim_tokens) > 1
       OR pg_catalog.cardinality(p_job_record_ids) <> pg_catalog.cardinality(p_lease_claim_tokens)
       OR pg_catalog.cardinality(p_job_record_ids) > 1000
       OR pg_catalog.array_position(p_job_record_ids, NULL) IS NOT NULL
       OR pg_catalog.array_position(p_lease_claim_tokens, NULL) IS NOT NULL
       OR (SELECT pg_catalog.count(DISTINCT i) FROM pg_catalog.unnest(p_job_record_ids) i)
          <> pg_catalog.cardinality(p_job_record_ids) THEN
        RAISE EXCEPTION 'claims must be two flat arrays of equal length, at most 1000, no NULL, no repeated job id'
            USING ERRCODE = 'LF003';
    END IF;

    -- Lock exactly the fenced rows, in job id order, one primary-key probe
    -- per claim (the locking subquery is never flattened into a join, so no
    -- table statistics can turn it into a scan of every running job). A
    -- stale claim's row is never locked.
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

    -- The locked rows (a locked row keeps its tuple id and its claim) are
    -- released as release_job_claim releases one; every claim is answered
    -- in input order (FULL JOIN: a hash or merge join, never a nested loop
    -- over the claims; every released row is one of the claims in).
    FOR v_result IN
        WITH claim_input AS (
            SELECT i.input_job_id, i.input_position
            FROM pg_catalog.unnest(p_job_record_ids) WITH ORDINALITY AS i(input_job_id, input_position)
        ), given_up AS (
            UPDATE durable_jobs.job_record j
            SET job_status = 'QUEUED', status_changed_at = pg_catalog.clock_timestamp(),
                run_after = pg_catalog.clock_timestamp(), attempt_number = GREATEST(j.attempt_number - 1, 0),
                lease_expires_at = NULL
            WHERE j.ctid = ANY (v_locked_ctids)
            RETURNING j.job_record_id AS given_up_id
        )
        SELECT c.input_job_id, g.given_up_id IS NOT NULL AS was_released
        FROM claim_input c
        FULL JOIN given_up g ON g.given_up_id = c.input_job_id
        ORDER BY c.input_position
    LOOP
        IF NOT v_result.was_released THEN
            v_stale_ids := pg_catalog.array_append(v_stale_ids, v_result.input_job_id);
        END IF;
        job_record_id := v_result.input_job_id;
        released := v_result.was_released;
        RETURN NEXT;
    END LOOP;
    -- The stale releases counted together: one tally write per queue charged.
    IF pg_catalog.cardinality(v_stale_ids) > 0 THEN
        PERFORM durable_jobs.record_stale_calls(v_stale_ids, 'stale_release');
    END IF;
END;
$function$;

ALTER FUNCTION durable_jobs.release_job_claims(text, bigint[], uuid[]) OWNER TO durable_job_terminal_owner;
REVOKE ALL ON FUNCTION durable_jobs.release_job_claims(text, bigint[], uuid[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.release_job_claims(text, bigint[], uuid[]) TO durable_job_worker;
