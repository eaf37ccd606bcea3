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
