-- leasefence 003 (assigned number 004; renumber when 003 lands, and the
-- migration_version below with it): renewal v2 and claim v2.
--  * renew_job_leases never waits on a row another transaction holds
--    locked: that claim is answered `locked` and the rest of the batch is
--    renewed, so one cancel or completion in progress cannot hold back a
--    worker's whole heartbeat, and no order of terminal calls deadlocks
--    with it. renew_job_lease (one claim) still waits for the lock.
--  * claim_next_job(s) and renew_job_lease(s) refuse a transaction that is
--    not READ COMMITTED (LF003): an old snapshot must not escape a policy
--    change.
--  * Leases and claim deadlines are absolute durations: the caller's
--    TimeZone never changes them.
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


INSERT INTO durable_jobs.control_evidence_record (evidence_kind, queue_name, previous_values, new_values, change_reason)
VALUES ('migration_applied', NULL, NULL, '{"migration_version": 3, "migration_name": "003_renewal_skips_locked_rows"}',
        'leasefence bundle migration');

---- create above / drop below ----

-- Back to what 002 installs: renew_job_lease and claim_next_job are BEGIN
-- ATOMIC bodies over renew_job_leases and claim_next_jobs, so they go first.
DROP FUNCTION durable_jobs.renew_job_lease(bigint, uuid, text);
DROP FUNCTION durable_jobs.renew_job_leases(text, bigint[], uuid[]);
DROP FUNCTION durable_jobs.renew_claims(text, bigint[], uuid[], boolean);
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

DROP FUNCTION durable_jobs.claim_next_job(text, text);
DROP FUNCTION durable_jobs.claim_next_jobs(text, text, integer);
-- claim_next_jobs: the only function that creates ownership. Claims up to
-- p_max_jobs due jobs of one queue (QUEUED/RETRY_SCHEDULED whose run-after
-- has come, or RUNNING whose lease expired by database time), each with a new
-- random token (only its sha256 is stored), attempt + 1 and fencing
-- generation + 1. A job whose attempts are used up goes to FAILED
-- (attempts_exhausted) instead and does not count. Expired claims are taken
-- before due jobs. Locks: the claimed rows, FOR UPDATE SKIP LOCKED, so
-- claimers never wait on each other. LF003 on bad input.
CREATE FUNCTION durable_jobs.claim_next_jobs(p_queue_name text, p_worker_owner_id text, p_max_jobs integer)
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

    SELECT p.lease_duration, p.renewal_interval, p.max_claim_lifetime
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
CREATE FUNCTION durable_jobs.claim_next_job(p_queue_name text, p_worker_owner_id text)
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


INSERT INTO durable_jobs.control_evidence_record (evidence_kind, queue_name, previous_values, new_values, change_reason)
VALUES ('migration_reverted', NULL, NULL, '{"migration_version": 3, "migration_name": "003_renewal_skips_locked_rows"}',
        'leasefence bundle migration rolled back');
