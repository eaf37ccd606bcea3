-- claim v2 (migration 004; 002 installs claim.sql). What changed: a caller
-- whose transaction is not READ COMMITTED is refused (LF003), so no old
-- snapshot reads a policy that has since been tightened; and the lease and
-- the claim deadline are the policy's durations as absolute seconds, so the
-- caller's TimeZone (a daylight-saving change inside the lease) never
-- changes them.

-- claim_next_jobs: the only function that creates ownership. Claims up to
-- p_max_jobs due jobs of one queue (QUEUED/RETRY_SCHEDULED whose run-after
-- has come, or RUNNING whose lease expired by database time), each with a new
-- random token (only its sha256 is stored), attempt + 1 and fencing
-- generation + 1. A job whose attempts are used up goes to FAILED
-- (attempts_exhausted) instead and does not count. Expired claims are taken
-- before due jobs. Locks: the claimed rows, FOR UPDATE SKIP LOCKED, so
-- claimers never wait on each other. LF003 on bad input and outside READ
-- COMMITTED.
CREATE OR REPLACE FUNCTION durable_jobs.claim_next_jobs(p_queue_name text, p_worker_owner_id text, p_max_jobs integer)
RETURNS TABLE (job_record_id bigint, lease_claim_token uuid, lease_fencing_generation bigint,
               lease_expires_at timestamptz, lease_renewal_interval interval, attempt_number integer,
               job_payload jsonb, database_time timestamptz)
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $function$
#variable_conflict use_column
DECLARE
    v_lease_duration interval;
    v_renewal_interval interval;
    v_max_claim_lifetime interval;
    v_candidate record;
    v_claimed integer := 0;
    v_now timestamptz;
BEGIN
    PERFORM durable_jobs.require_well_formed('queue_name', p_queue_name);
    PERFORM durable_jobs.require_well_formed('worker_owner_id', p_worker_owner_id);
    IF p_max_jobs IS NULL OR p_max_jobs NOT BETWEEN 1 AND 1000 THEN
        RAISE EXCEPTION 'max jobs must be 1 to 1000' USING ERRCODE = 'LF003';
    END IF;
    -- A REPEATABLE READ or SERIALIZABLE snapshot may predate a policy change
    -- (a shorter lease or claim lifetime); READ COMMITTED reads the policy
    -- as of this statement.
    IF pg_catalog.current_setting('transaction_isolation') <> 'read committed' THEN
        RAISE EXCEPTION 'claiming must run in a READ COMMITTED transaction, not %',
                pg_catalog.upper(pg_catalog.current_setting('transaction_isolation'))
            USING ERRCODE = 'LF003',
                  HINT = 'Claim in a transaction at the default isolation level.';
    END IF;

    -- Durations as absolute seconds: timestamptz + '1 day' follows the
    -- caller's TimeZone across a daylight-saving change.
    SELECT pg_catalog.make_interval(secs => pg_catalog.date_part('epoch', p.lease_duration)),
           p.renewal_interval,
           pg_catalog.make_interval(secs => pg_catalog.date_part('epoch', p.max_claim_lifetime))
    INTO STRICT v_lease_duration, v_renewal_interval, v_max_claim_lifetime
    FROM durable_jobs.queue_lease_policy p
    WHERE p.queue_name IN (p_queue_name, '*')
    ORDER BY p.queue_name = '*'
    LIMIT 1;

    LOOP
        -- Expired claims first (reclaims), then due jobs; each probe walks its
        -- own partial index in order and stops at the first unlocked row.
        v_now := pg_catalog.clock_timestamp();
        SELECT j.job_record_id AS candidate_id, j.job_status AS candidate_status,
               j.attempt_number AS candidate_attempt, j.max_attempts AS candidate_max_attempts
        INTO v_candidate
        FROM durable_jobs.job_record j
        WHERE j.queue_name = p_queue_name AND j.job_status = 'RUNNING' AND j.lease_expires_at <= v_now
        ORDER BY j.lease_expires_at, j.job_record_id
        LIMIT 1
        FOR UPDATE OF j SKIP LOCKED;
        IF NOT FOUND THEN
            SELECT j.job_record_id AS candidate_id, j.job_status AS candidate_status,
                   j.attempt_number AS candidate_attempt, j.max_attempts AS candidate_max_attempts
            INTO v_candidate
            FROM durable_jobs.job_record j
            WHERE j.queue_name = p_queue_name AND j.job_status IN ('QUEUED', 'RETRY_SCHEDULED')
              AND j.run_after <= v_now
            ORDER BY j.run_after, j.job_record_id
            LIMIT 1
            FOR UPDATE OF j SKIP LOCKED;
            EXIT WHEN NOT FOUND;
        END IF;

        IF v_candidate.candidate_attempt >= v_candidate.candidate_max_attempts THEN
            UPDATE durable_jobs.job_record j
            SET job_status = 'FAILED', status_changed_at = v_now, lease_expires_at = NULL,
                failure_reason_code = 'attempts_exhausted'
            WHERE j.job_record_id = v_candidate.candidate_id;
            CONTINUE;
        END IF;

        lease_claim_token := pg_catalog.gen_random_uuid();
        UPDATE durable_jobs.job_record j
        SET job_status = 'RUNNING', status_changed_at = v_now,
            attempt_number = j.attempt_number + 1,
            lease_claim_digest = durable_jobs.claim_token_digest(lease_claim_token),
            lease_owner_id = p_worker_owner_id,
            lease_claimed_by_role = SESSION_USER,
            lease_claimed_at = v_now,
            lease_expires_at = v_now + v_lease_duration,
            lease_claim_deadline = v_now + v_max_claim_lifetime,
            lease_fencing_generation = j.lease_fencing_generation + 1,
            lease_renewal_count = 0,
            failure_reason_code = NULL
        WHERE j.job_record_id = v_candidate.candidate_id
        RETURNING j.job_record_id, j.lease_fencing_generation, j.lease_expires_at, j.attempt_number
        INTO job_record_id, lease_fencing_generation, lease_expires_at, attempt_number;

        IF v_candidate.candidate_status = 'RUNNING' THEN
            PERFORM durable_jobs.record_lease_outcome(p_queue_name, 'reclaim', 1);
        END IF;

        SELECT pr.job_payload INTO job_payload
        FROM durable_jobs.job_payload_record pr
        WHERE pr.job_record_id = v_candidate.candidate_id;
        lease_renewal_interval := v_renewal_interval;
        database_time := v_now;
        v_claimed := v_claimed + 1;
        RETURN NEXT;
        EXIT WHEN v_claimed >= p_max_jobs;
    END LOOP;
END;
$function$;

-- claim_next_job: claim_next_jobs for one job. Zero rows when nothing is
-- claimable. Same locks and SQLSTATEs.
CREATE OR REPLACE FUNCTION durable_jobs.claim_next_job(p_queue_name text, p_worker_owner_id text)
RETURNS TABLE (job_record_id bigint, lease_claim_token uuid, lease_fencing_generation bigint,
               lease_expires_at timestamptz, lease_renewal_interval interval, attempt_number integer,
               job_payload jsonb, database_time timestamptz)
LANGUAGE sql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
BEGIN ATOMIC
    SELECT c.job_record_id, c.lease_claim_token, c.lease_fencing_generation, c.lease_expires_at,
           c.lease_renewal_interval, c.attempt_number, c.job_payload, c.database_time
    FROM durable_jobs.claim_next_jobs(p_queue_name, p_worker_owner_id, 1) c;
END;

ALTER FUNCTION durable_jobs.claim_next_jobs(text, text, integer) OWNER TO durable_job_claim_owner;
ALTER FUNCTION durable_jobs.claim_next_job(text, text) OWNER TO durable_job_claim_owner;
REVOKE ALL ON FUNCTION durable_jobs.claim_next_jobs(text, text, integer) FROM PUBLIC;
REVOKE ALL ON FUNCTION durable_jobs.claim_next_job(text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.claim_next_jobs(text, text, integer) TO durable_job_worker;
GRANT EXECUTE ON FUNCTION durable_jobs.claim_next_job(text, text) TO durable_job_worker;
