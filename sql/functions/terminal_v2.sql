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
      AND j.job_status = 'RUNNING'
      AND j.lease_claim_digest = durable_jobs.claim_token_digest(p_lease_claim_token)
      AND j.lease_owner_id = p_worker_owner_id
      AND j.lease_claimed_by_role = SESSION_USER
      AND j.lease_expires_at > pg_catalog.clock_timestamp()
    FOR UPDATE OF j;
END;
$function$;

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

-- release_job_claim: the worker gives a fenced claim up (shutdown): the job is
-- QUEUED and claimable at once, the attempt it used is given back and the old
-- token is stale for everything. false when the claim was already stale.
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

REVOKE ALL ON FUNCTION durable_jobs.lock_fenced_claim(bigint, uuid, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION durable_jobs.raise_stale_claim() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.lock_fenced_claim(bigint, uuid, text) TO durable_job_terminal_owner;
GRANT EXECUTE ON FUNCTION durable_jobs.raise_stale_claim() TO durable_job_terminal_owner;
ALTER FUNCTION durable_jobs.complete_job(bigint, uuid, text, jsonb) OWNER TO durable_job_terminal_owner;
ALTER FUNCTION durable_jobs.retry_job(bigint, uuid, text, interval, text) OWNER TO durable_job_terminal_owner;
ALTER FUNCTION durable_jobs.fail_job(bigint, uuid, text, text) OWNER TO durable_job_terminal_owner;
ALTER FUNCTION durable_jobs.release_job_claim(bigint, uuid, text) OWNER TO durable_job_terminal_owner;
REVOKE ALL ON FUNCTION durable_jobs.complete_job(bigint, uuid, text, jsonb) FROM PUBLIC;
REVOKE ALL ON FUNCTION durable_jobs.retry_job(bigint, uuid, text, interval, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION durable_jobs.fail_job(bigint, uuid, text, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION durable_jobs.release_job_claim(bigint, uuid, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.complete_job(bigint, uuid, text, jsonb) TO durable_job_worker;
GRANT EXECUTE ON FUNCTION durable_jobs.retry_job(bigint, uuid, text, interval, text) TO durable_job_worker;
GRANT EXECUTE ON FUNCTION durable_jobs.fail_job(bigint, uuid, text, text) TO durable_job_worker;
GRANT EXECUTE ON FUNCTION durable_jobs.release_job_claim(bigint, uuid, text) TO durable_job_worker;
