-- renewal v2 (migration 004; 002 installs renewal.sql). What changed:
--  * renew_job_leases never waits on a row another transaction holds
--    locked: that claim's outcome is `locked` (NULL expiry, nothing changed)
--    and the rest of the batch is decided as usual. Since the batch never
--    waits, no order of terminal calls in the worker's own transactions can
--    deadlock with it. renew_job_lease still waits for the lock.
--  * Both refuse (LF003) a transaction that is not READ COMMITTED, so no
--    snapshot older than the statement decides a renewal against an old
--    policy.
--  * The expiry is clock_timestamp() plus the policy's lease duration as an
--    absolute number of seconds, so the caller's TimeZone (a daylight-saving
--    change inside the lease) never lengthens or shortens the lease.

-- renew_claims: private helper of the renewal family, the one body of
-- renew_job_leases (p_wait_for_locks false) and renew_job_lease (true).
-- Checks the input (LF003), then locks FOR NO KEY UPDATE (the lock an UPDATE takes), in job id order, exactly
-- the rows whose claim is fenced (RUNNING, token digest, owner and claiming
-- session_user match, lease_expires_at > clock_timestamp()): a stale, guessed
-- or foreign claim takes no row lock. Without p_wait_for_locks a fenced row
-- that another transaction holds locked is skipped (SKIP LOCKED) and answered
-- `locked`; a claim that is not fenced on the newest committed row version
-- is `stale` whether or not its row is locked, exactly as renew_job_lease
-- answers it at once without waiting, so `locked` says no more about a
-- claim than renew_job_lease's waiting already does. The locked rows are
-- then renewed in one UPDATE: clock_timestamp() + the current policy's lease
-- duration, never earlier than the expiry granted, never past the claim
-- deadline. One row out per claim in, in input order. Stale answers are
-- tallied; no payload access.
CREATE FUNCTION durable_jobs.renew_claims(p_worker_owner_id text, p_job_record_ids bigint[],
                                          p_lease_claim_tokens uuid[], p_wait_for_locks boolean)
RETURNS TABLE (job_record_id bigint, renewal_outcome text, lease_expires_at timestamptz, database_time timestamptz)
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, pg_temp
AS $function$
#variable_conflict use_column
DECLARE
    v_result record;
    v_locked_ids bigint[];
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
    -- A REPEATABLE READ or SERIALIZABLE snapshot may predate a policy change
    -- (renewal switched off, a shorter lease); READ COMMITTED reads the
    -- policy as of this statement.
    IF pg_catalog.current_setting('transaction_isolation') <> 'read committed' THEN
        RAISE EXCEPTION 'lease renewal must run in a READ COMMITTED transaction, not %',
                pg_catalog.upper(pg_catalog.current_setting('transaction_isolation'))
            USING ERRCODE = 'LF003',
                  HINT = 'Renew in a short transaction of its own at the default isolation level.';
    END IF;

    -- Lock the fenced rows first, in job id order. Only a fenced claim's row
    -- is ever locked, so a stale call cannot hold back anyone's completion.
    IF p_wait_for_locks THEN
        SELECT pg_catalog.array_agg(f.fenced_id) INTO v_locked_ids
        FROM (SELECT j.job_record_id AS fenced_id
              FROM durable_jobs.job_record j
              JOIN ROWS FROM (pg_catalog.unnest(p_job_record_ids), pg_catalog.unnest(p_lease_claim_tokens))
                   AS i(input_job_id, input_token) ON j.job_record_id = i.input_job_id
              WHERE j.job_record_id = ANY (p_job_record_ids)  -- primary-key probe
                AND j.job_status = 'RUNNING'
                AND j.lease_claim_digest = durable_jobs.claim_token_digest(i.input_token)
                AND j.lease_owner_id = p_worker_owner_id
                AND j.lease_claimed_by_role = SESSION_USER
                AND j.lease_expires_at > pg_catalog.clock_timestamp()
              ORDER BY j.job_record_id
              FOR NO KEY UPDATE OF j) f;
    ELSE
        SELECT pg_catalog.array_agg(f.fenced_id) INTO v_locked_ids
        FROM (SELECT j.job_record_id AS fenced_id
              FROM durable_jobs.job_record j
              JOIN ROWS FROM (pg_catalog.unnest(p_job_record_ids), pg_catalog.unnest(p_lease_claim_tokens))
                   AS i(input_job_id, input_token) ON j.job_record_id = i.input_job_id
              WHERE j.job_record_id = ANY (p_job_record_ids)  -- primary-key probe
                AND j.job_status = 'RUNNING'
                AND j.lease_claim_digest = durable_jobs.claim_token_digest(i.input_token)
                AND j.lease_owner_id = p_worker_owner_id
                AND j.lease_claimed_by_role = SESSION_USER
                AND j.lease_expires_at > pg_catalog.clock_timestamp()
              ORDER BY j.job_record_id
              FOR NO KEY UPDATE OF j SKIP LOCKED) f;
    END IF;

    -- One statement, one snapshot taken after the locks: the rows locked
    -- above are renewed; any other claim is `locked` when it is fenced on
    -- the newest committed version of its row (so another transaction held
    -- that row locked), else `stale`.
    FOR v_result IN
        WITH claim_input AS (
            SELECT i.input_job_id, durable_jobs.claim_token_digest(i.input_token) AS input_digest,
                   i.input_position, jq.queue_name AS input_queue_name,
                   (jq.job_status = 'RUNNING'
                    AND jq.lease_claim_digest = durable_jobs.claim_token_digest(i.input_token)
                    AND jq.lease_owner_id = p_worker_owner_id
                    AND jq.lease_claimed_by_role = SESSION_USER
                    AND jq.lease_expires_at > pg_catalog.clock_timestamp()) IS TRUE AS input_fenced,
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
                                  LEAST(pg_catalog.clock_timestamp()
                                        -- absolute seconds: no TimeZone, no daylight-saving day
                                        + pg_catalog.make_interval(secs => pg_catalog.date_part('epoch', c.policy_lease_duration)),
                                        j.lease_claim_deadline))
                    ELSE j.lease_expires_at END,
                lease_renewal_count = j.lease_renewal_count + CASE WHEN c.policy_renewal_enabled THEN 1 ELSE 0 END
            FROM claim_input c
            WHERE j.job_record_id = ANY (v_locked_ids)  -- rows this call holds locked
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
               CASE WHEN r.renewed_job_id IS NOT NULL AND r.renewal_was_enabled THEN 'renewed'
                    WHEN r.renewed_job_id IS NOT NULL THEN 'renewal_disabled'
                    WHEN c.input_fenced AND c.input_job_id <> ALL (COALESCE(v_locked_ids, '{}')) THEN 'locked'
                    ELSE 'stale' END AS outcome,
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

-- renew_job_leases: renews many claims of one worker in one call (see
-- renew_claims): renewed | stale | renewal_disabled | locked per claim, in
-- input order. Never waits on a row lock. LF003 on bad input (lengths
-- differ, NULL elements, duplicate ids, > 1000) and outside READ COMMITTED.
CREATE OR REPLACE FUNCTION durable_jobs.renew_job_leases(p_worker_owner_id text, p_job_record_ids bigint[], p_lease_claim_tokens uuid[])
RETURNS TABLE (job_record_id bigint, renewal_outcome text, lease_expires_at timestamptz, database_time timestamptz)
LANGUAGE sql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
BEGIN ATOMIC
    SELECT r.job_record_id, r.renewal_outcome, r.lease_expires_at, r.database_time
    FROM durable_jobs.renew_claims(p_worker_owner_id, p_job_record_ids, p_lease_claim_tokens, false) r;
END;

-- renew_job_lease: one claim; exactly one row for well-formed input:
-- renewed | stale | renewal_disabled. Waits for a row lock another
-- transaction holds, then decides on the row as that transaction left it.
-- Same predicate and SQLSTATEs as renew_job_leases.
CREATE OR REPLACE FUNCTION durable_jobs.renew_job_lease(p_job_record_id bigint, p_lease_claim_token uuid, p_worker_owner_id text)
RETURNS TABLE (renewal_outcome text, lease_expires_at timestamptz, database_time timestamptz)
LANGUAGE sql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
BEGIN ATOMIC
    SELECT r.renewal_outcome, r.lease_expires_at, r.database_time
    FROM durable_jobs.renew_claims(p_worker_owner_id, ARRAY[p_job_record_id], ARRAY[p_lease_claim_token], true) r;
END;

ALTER FUNCTION durable_jobs.renew_claims(text, bigint[], uuid[], boolean) OWNER TO durable_job_renewal_owner;
REVOKE ALL ON FUNCTION durable_jobs.renew_claims(text, bigint[], uuid[], boolean) FROM PUBLIC;
