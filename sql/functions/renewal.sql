-- renew_job_leases: renews many claims of one worker in ONE conditional
-- UPDATE ... RETURNING. A claim is renewed only when it is fenced: RUNNING,
-- token digest, owner and claiming session_user match and lease_expires_at >
-- clock_timestamp(). The new expiry is clock_timestamp() + the policy's lease
-- duration, never earlier than the expiry granted, never past the claim
-- deadline. One row out per claim in, in input order: renewed | stale |
-- renewal_disabled. Never creates or recovers a claim; no payload access.
-- Locks: the renewed rows (waits for a worker's open terminal transaction).
-- LF003 on bad input (lengths differ, NULL elements, duplicate ids, > 1000).
CREATE FUNCTION durable_jobs.renew_job_leases(p_worker_owner_id text, p_job_record_ids bigint[], p_lease_claim_tokens uuid[])
RETURNS TABLE (job_record_id bigint, renewal_outcome text, lease_expires_at timestamptz, database_time timestamptz)
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $function$
#variable_conflict use_column
DECLARE
    v_result record;
BEGIN
    PERFORM durable_jobs.require_well_formed('worker_owner_id', p_worker_owner_id);
    IF p_job_record_ids IS NULL OR p_lease_claim_tokens IS NULL
       OR pg_catalog.cardinality(p_job_record_ids) <> pg_catalog.cardinality(p_lease_claim_tokens)
       OR pg_catalog.cardinality(p_job_record_ids) > 1000
       OR pg_catalog.array_position(p_job_record_ids, NULL) IS NOT NULL
       OR pg_catalog.array_position(p_lease_claim_tokens, NULL) IS NOT NULL
       OR (SELECT pg_catalog.count(DISTINCT i) FROM pg_catalog.unnest(p_job_record_ids) i)
          <> pg_catalog.cardinality(p_job_record_ids) THEN
        RAISE EXCEPTION 'claims must be two arrays of equal length, at most 1000, no NULL, no repeated job id'
            USING ERRCODE = 'LF003';
    END IF;

    FOR v_result IN
        WITH claim_input AS (
            SELECT i.input_job_id, durable_jobs.claim_token_digest(i.input_token) AS input_digest,
                   i.input_position, jq.queue_name AS input_queue_name,
                   pol.lease_duration AS policy_lease_duration, pol.renewal_enabled AS policy_renewal_enabled
            FROM ROWS FROM (pg_catalog.unnest(p_job_record_ids), pg_catalog.unnest(p_lease_claim_tokens)) WITH ORDINALITY
                 AS i(input_job_id, input_token, input_position)
            LEFT JOIN durable_jobs.job_record jq ON jq.job_record_id = i.input_job_id
            LEFT JOIN LATERAL (
                SELECT p.lease_duration, p.renewal_enabled
                FROM durable_jobs.queue_lease_policy p
                WHERE p.queue_name IN (jq.queue_name, '*')
                ORDER BY p.queue_name = '*'
                LIMIT 1) pol ON true
        ), renewed AS (
            UPDATE durable_jobs.job_record j
            SET lease_expires_at = CASE WHEN c.policy_renewal_enabled
                    THEN GREATEST(j.lease_expires_at,
                                  LEAST(pg_catalog.clock_timestamp() + c.policy_lease_duration, j.lease_claim_deadline))
                    ELSE j.lease_expires_at END,
                lease_renewal_count = j.lease_renewal_count + CASE WHEN c.policy_renewal_enabled THEN 1 ELSE 0 END
            FROM claim_input c
            WHERE j.job_record_id = ANY (p_job_record_ids)  -- primary-key probe; the join alone plans a scan
              AND j.job_record_id = c.input_job_id
              AND j.job_status = 'RUNNING'
              AND j.lease_claim_digest = c.input_digest
              AND j.lease_owner_id = p_worker_owner_id
              AND j.lease_claimed_by_role = SESSION_USER
              AND j.lease_expires_at > pg_catalog.clock_timestamp()
            RETURNING j.job_record_id AS renewed_job_id, j.lease_expires_at AS renewed_expiry,
                      c.policy_renewal_enabled AS renewal_was_enabled
        )
        SELECT c.input_job_id, c.input_queue_name,
               CASE WHEN r.renewed_job_id IS NULL THEN 'stale'
                    WHEN r.renewal_was_enabled THEN 'renewed'
                    ELSE 'renewal_disabled' END AS outcome,
               r.renewed_expiry, pg_catalog.clock_timestamp() AS decided_at
        FROM claim_input c
        LEFT JOIN renewed r ON r.renewed_job_id = c.input_job_id
        ORDER BY c.input_position
    LOOP
        IF v_result.outcome = 'stale' THEN
            PERFORM durable_jobs.record_lease_outcome(COALESCE(v_result.input_queue_name, '*'), 'stale_renewal', 1);
        END IF;
        job_record_id := v_result.input_job_id;
        renewal_outcome := v_result.outcome;
        lease_expires_at := v_result.renewed_expiry;
        database_time := v_result.decided_at;
        RETURN NEXT;
    END LOOP;
END;
$function$;

-- renew_job_lease: renew_job_leases for one claim; exactly one row for
-- well-formed input. Same predicate, locks and SQLSTATEs.
CREATE FUNCTION durable_jobs.renew_job_lease(p_job_record_id bigint, p_lease_claim_token uuid, p_worker_owner_id text)
RETURNS TABLE (renewal_outcome text, lease_expires_at timestamptz, database_time timestamptz)
LANGUAGE sql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
BEGIN ATOMIC
    SELECT r.renewal_outcome, r.lease_expires_at, r.database_time
    FROM durable_jobs.renew_job_leases(p_worker_owner_id, ARRAY[p_job_record_id], ARRAY[p_lease_claim_token]) r;
END;

ALTER FUNCTION durable_jobs.renew_job_leases(text, bigint[], uuid[]) OWNER TO durable_job_renewal_owner;
ALTER FUNCTION durable_jobs.renew_job_lease(bigint, uuid, text) OWNER TO durable_job_renewal_owner;
REVOKE ALL ON FUNCTION durable_jobs.renew_job_leases(text, bigint[], uuid[]) FROM PUBLIC;
REVOKE ALL ON FUNCTION durable_jobs.renew_job_lease(bigint, uuid, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.renew_job_leases(text, bigint[], uuid[]) TO durable_job_worker;
GRANT EXECUTE ON FUNCTION durable_jobs.renew_job_lease(bigint, uuid, text) TO durable_job_worker;
