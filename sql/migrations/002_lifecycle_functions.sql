-- leasefence 002: every function of the bundle, each family from its own
-- file in functions/ (the single source of each body), with EXECUTE revoked
-- from PUBLIC and granted to exactly one runtime role.
-- require_well_formed: private helper that checks one bounded identifier
-- (queue name, worker owner id or failure reason code) against the
-- contract's pattern and raises p_sqlstate (LF003 by default, LF002 from
-- set_queue_lease_policy) when it is NULL or malformed. The message names
-- the kind of value, never the value itself. Takes no lock.
CREATE FUNCTION durable_jobs.require_well_formed(p_value_kind text, p_value text, p_sqlstate text DEFAULT 'LF003')
RETURNS void
LANGUAGE plpgsql
IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $function$
DECLARE
    v_pattern text;
BEGIN
    v_pattern := CASE p_value_kind
        WHEN 'queue_name' THEN '^[a-z][a-z0-9_.:-]{0,62}$'
        WHEN 'worker_owner_id' THEN '^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$'
        WHEN 'failure_reason_code' THEN '^[a-z][a-z0-9_]{0,62}$'
    END;
    IF v_pattern IS NULL THEN
        RAISE EXCEPTION 'unknown value kind %', p_value_kind USING ERRCODE = 'XX000';
    END IF;
    IF p_value IS NULL OR p_value !~ v_pattern THEN
        RAISE EXCEPTION USING
            ERRCODE = p_sqlstate,
            MESSAGE = pg_catalog.format('malformed %s', p_value_kind),
            HINT = pg_catalog.format('%s must match %s', p_value_kind, v_pattern);
    END IF;
END;
$function$;

-- claim_token_digest: the stored form of a claim token, sha256 of its 16
-- bytes (uuid_send). The token itself is never stored. NULL in, NULL out.
CREATE FUNCTION durable_jobs.claim_token_digest(p_lease_claim_token uuid)
RETURNS bytea
LANGUAGE sql
IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
RETURN pg_catalog.sha256(pg_catalog.uuid_send(p_lease_claim_token));

-- record_lease_outcome: adds p_outcome_count to this minute's tally of a
-- rare committed outcome (stale_renewal, reclaim). The row is chosen by
-- pg_backend_pid() % 16, so concurrent sessions add to different rows and
-- no claim or renewal waits on a shared counter. Retention is built in: the
-- row's slot is the minute modulo 30 days, so a slot's old tally is
-- overwritten when the minute comes round again. Locks one tally row.
CREATE FUNCTION durable_jobs.record_lease_outcome(p_queue_name text, p_outcome_kind text, p_outcome_count bigint)
RETURNS void
LANGUAGE sql
VOLATILE
SET search_path = pg_catalog, pg_temp
BEGIN ATOMIC
    INSERT INTO durable_jobs.lease_outcome_tally AS t
        (tally_slot, tally_minute, queue_name, outcome_kind, tally_shard, outcome_count)
    SELECT (pg_catalog.floor(EXTRACT(epoch FROM m.minute) / 60)::bigint % 43200)::integer, m.minute,
           p_queue_name, p_outcome_kind, (pg_catalog.pg_backend_pid() % 16)::smallint, p_outcome_count
    FROM (SELECT pg_catalog.date_trunc('minute', pg_catalog.clock_timestamp()) AS minute) m
    ON CONFLICT (tally_slot, queue_name, outcome_kind, tally_shard)
    DO UPDATE SET outcome_count = CASE WHEN t.tally_minute = EXCLUDED.tally_minute
                                       THEN t.outcome_count + EXCLUDED.outcome_count
                                       ELSE EXCLUDED.outcome_count END,
                  tally_minute = EXCLUDED.tally_minute;
END;

REVOKE ALL ON FUNCTION durable_jobs.require_well_formed(text, text, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION durable_jobs.claim_token_digest(uuid) FROM PUBLIC;
REVOKE ALL ON FUNCTION durable_jobs.record_lease_outcome(text, text, bigint) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.require_well_formed(text, text, text) TO
    durable_job_producer_owner, durable_job_claim_owner, durable_job_renewal_owner,
    durable_job_terminal_owner, durable_job_policy_owner;
GRANT EXECUTE ON FUNCTION durable_jobs.claim_token_digest(uuid) TO
    durable_job_claim_owner, durable_job_renewal_owner, durable_job_terminal_owner;
GRANT EXECUTE ON FUNCTION durable_jobs.record_lease_outcome(text, text, bigint) TO
    durable_job_claim_owner, durable_job_renewal_owner;

-- enqueue_job: durably accepts a job (QUEUED) and returns its id; its payload
-- goes to job_payload_record. A repeated (queue, idempotency key) returns the
-- first job's id and creates nothing; the key is stored only as its sha256.
-- Locks: the new rows; a concurrent insert of the same key is waited for.
-- Raises LF003 for malformed input (queue, NULL payload, key length, attempts).
CREATE FUNCTION durable_jobs.enqueue_job(
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

-- cancel_job: QUEUED, RETRY_SCHEDULED or RUNNING to CANCELLED; a running
-- job's claim becomes stale at once (status is part of the fence). false when
-- the job is already terminal or unknown. Locks the job row (waits for a
-- worker's open terminal transaction). Raises LF003 for a NULL id.
CREATE FUNCTION durable_jobs.cancel_job(p_job_record_id bigint)
RETURNS boolean
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $function$
BEGIN
    IF p_job_record_id IS NULL THEN
        RAISE EXCEPTION 'job id is required' USING ERRCODE = 'LF003';
    END IF;
    UPDATE durable_jobs.job_record j
    SET job_status = 'CANCELLED', status_changed_at = pg_catalog.clock_timestamp(), lease_expires_at = NULL
    WHERE j.job_record_id = p_job_record_id AND j.job_status IN ('QUEUED', 'RETRY_SCHEDULED', 'RUNNING');
    RETURN FOUND;
END;
$function$;

-- replay_job: one FAILED or CANCELLED job back to QUEUED with its attempts
-- starting again (operators only). false for any other status or an unknown
-- id. Locks the job row. Raises LF003 for a NULL id.
CREATE FUNCTION durable_jobs.replay_job(p_job_record_id bigint)
RETURNS boolean
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $function$
BEGIN
    IF p_job_record_id IS NULL THEN
        RAISE EXCEPTION 'job id is required' USING ERRCODE = 'LF003';
    END IF;
    UPDATE durable_jobs.job_record j
    SET job_status = 'QUEUED', status_changed_at = pg_catalog.clock_timestamp(),
        run_after = pg_catalog.clock_timestamp(), attempt_number = 0, failure_reason_code = NULL
    WHERE j.job_record_id = p_job_record_id AND j.job_status IN ('FAILED', 'CANCELLED');
    RETURN FOUND;
END;
$function$;

-- job_lifecycle_state: payload-blind inspection of one job. Never returns the
-- payload, the token, its digest or the owner. Zero rows for an unknown id.
-- Takes no lock. Raises LF003 for a NULL id.
CREATE FUNCTION durable_jobs.job_lifecycle_state(p_job_record_id bigint)
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

ALTER FUNCTION durable_jobs.enqueue_job(text, jsonb, text, timestamptz, integer) OWNER TO durable_job_producer_owner;
ALTER FUNCTION durable_jobs.cancel_job(bigint) OWNER TO durable_job_producer_owner;
ALTER FUNCTION durable_jobs.replay_job(bigint) OWNER TO durable_job_producer_owner;
ALTER FUNCTION durable_jobs.job_lifecycle_state(bigint) OWNER TO durable_job_producer_owner;
REVOKE ALL ON FUNCTION durable_jobs.enqueue_job(text, jsonb, text, timestamptz, integer) FROM PUBLIC;
REVOKE ALL ON FUNCTION durable_jobs.cancel_job(bigint) FROM PUBLIC;
REVOKE ALL ON FUNCTION durable_jobs.replay_job(bigint) FROM PUBLIC;
REVOKE ALL ON FUNCTION durable_jobs.job_lifecycle_state(bigint) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.enqueue_job(text, jsonb, text, timestamptz, integer) TO durable_job_producer;
GRANT EXECUTE ON FUNCTION durable_jobs.cancel_job(bigint) TO durable_job_producer;
GRANT EXECUTE ON FUNCTION durable_jobs.job_lifecycle_state(bigint) TO durable_job_producer;
GRANT EXECUTE ON FUNCTION durable_jobs.replay_job(bigint) TO durable_job_operator;

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

-- lock_fenced_claim: private helper of the terminal family. Checks the claim
-- arguments (LF003 when malformed) and locks the job row FOR UPDATE only if
-- the claim is fenced: RUNNING, token digest, owner and claiming session_user
-- match, and lease_expires_at > clock_timestamp(). Zero rows when stale. A
-- concurrent renewal or cancel is waited for and the fence re-checked.
CREATE FUNCTION durable_jobs.lock_fenced_claim(p_job_record_id bigint, p_lease_claim_token uuid, p_worker_owner_id text)
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
CREATE FUNCTION durable_jobs.raise_stale_claim()
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
-- target writes so that all commit or none do. Locks the job row.
-- Raises LF003 for malformed input, LF001 for a stale claim.
CREATE FUNCTION durable_jobs.complete_job(p_job_record_id bigint, p_lease_claim_token uuid, p_worker_owner_id text,
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
-- when the attempts are used up; returns the new status. Locks the job row.
-- Raises LF003 for malformed input (delay outside 0 to 30 days), LF001 for a stale claim.
CREATE FUNCTION durable_jobs.retry_job(p_job_record_id bigint, p_lease_claim_token uuid, p_worker_owner_id text,
                                       p_retry_delay interval, p_failure_reason_code text)
RETURNS text
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $function$
DECLARE
    v_claim record;
    v_new_status durable_jobs.job_status_kind;
BEGIN
    PERFORM durable_jobs.require_well_formed('failure_reason_code', p_failure_reason_code);
    IF p_retry_delay IS NULL OR p_retry_delay < interval '0' OR p_retry_delay > interval '30 days' THEN
        RAISE EXCEPTION 'retry delay must be 0 to 30 days' USING ERRCODE = 'LF003';
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
        run_after = pg_catalog.clock_timestamp() + p_retry_delay,
        failure_reason_code = p_failure_reason_code, lease_expires_at = NULL
    WHERE j.job_record_id = p_job_record_id;
    INSERT INTO durable_jobs.job_outcome_ledger (job_record_id, lease_fencing_generation, outcome_status, failure_reason_code)
    VALUES (p_job_record_id, v_claim.fenced_generation, v_new_status, p_failure_reason_code);
    RETURN v_new_status::text;
END;
$function$;

-- fail_job: fenced RUNNING -> FAILED with a bounded reason code. Locks the
-- job row. Raises LF003 for malformed input, LF001 for a stale claim.
CREATE FUNCTION durable_jobs.fail_job(p_job_record_id bigint, p_lease_claim_token uuid, p_worker_owner_id text,
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
CREATE FUNCTION durable_jobs.release_job_claim(p_job_record_id bigint, p_lease_claim_token uuid, p_worker_owner_id text)
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

-- set_queue_lease_policy: sets one queue's lease policy ('*' is the default).
-- Valid only when every value is non-NULL, 1 s <= lease <= 24 h,
-- 100 ms <= renewal interval <= lease / 3, lease <= max claim lifetime <= 7 d,
-- the reason is not blank (at most 500 characters) and the queue name is '*'
-- or well-formed. Appends control evidence (old and new values, reason,
-- session_user, database time), and a renewal_enablement_changed record when
-- the queue's effective enablement flips. Affects the next claim or renewal,
-- never an expiry already granted. Locks the policy row. Raises LF002.
CREATE FUNCTION durable_jobs.set_queue_lease_policy(p_queue_name text, p_lease_duration interval,
    p_renewal_interval interval, p_max_claim_lifetime interval, p_renewal_enabled boolean, p_change_reason text)
RETURNS void
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $function$
DECLARE
    v_previous jsonb;
    v_previous_enabled boolean;
    v_new jsonb;
BEGIN
    IF p_queue_name IS DISTINCT FROM '*' THEN
        PERFORM durable_jobs.require_well_formed('queue_name', p_queue_name, 'LF002');
    END IF;
    IF p_lease_duration IS NULL OR p_renewal_interval IS NULL OR p_max_claim_lifetime IS NULL
       OR p_renewal_enabled IS NULL OR p_change_reason IS NULL
       OR p_lease_duration NOT BETWEEN interval '1 second' AND interval '24 hours'
       OR p_renewal_interval < interval '100 milliseconds' OR p_renewal_interval > p_lease_duration / 3
       OR p_max_claim_lifetime < p_lease_duration OR p_max_claim_lifetime > interval '7 days'
       OR p_change_reason !~ '[^[:space:]]' OR pg_catalog.length(p_change_reason) > 500 THEN
        RAISE EXCEPTION 'invalid lease policy' USING
            ERRCODE = 'LF002',
            DETAIL = 'Need 1 second <= lease_duration <= 24 hours, 100 milliseconds <= renewal_interval <= lease_duration / 3, '
                  || 'lease_duration <= max_claim_lifetime <= 7 days, renewal_enabled set, and a change reason of 1 to 500 characters.';
    END IF;

    -- The queue's effective policy before the change: its own row, else the default.
    SELECT pg_catalog.jsonb_build_object('policy_queue_name', p.queue_name, 'lease_duration', p.lease_duration,
               'renewal_interval', p.renewal_interval, 'max_claim_lifetime', p.max_claim_lifetime,
               'renewal_enabled', p.renewal_enabled),
           p.renewal_enabled
    INTO v_previous, v_previous_enabled
    FROM durable_jobs.queue_lease_policy p
    WHERE p.queue_name IN (p_queue_name, '*')
    ORDER BY p.queue_name = '*'
    LIMIT 1
    FOR UPDATE;

    INSERT INTO durable_jobs.queue_lease_policy AS p
        (queue_name, lease_duration, renewal_interval, max_claim_lifetime, renewal_enabled, changed_at, changed_by_role)
    VALUES (p_queue_name, p_lease_duration, p_renewal_interval, p_max_claim_lifetime, p_renewal_enabled,
            pg_catalog.clock_timestamp(), SESSION_USER)
    ON CONFLICT (queue_name) DO UPDATE
    SET lease_duration = EXCLUDED.lease_duration, renewal_interval = EXCLUDED.renewal_interval,
        max_claim_lifetime = EXCLUDED.max_claim_lifetime, renewal_enabled = EXCLUDED.renewal_enabled,
        changed_at = EXCLUDED.changed_at, changed_by_role = EXCLUDED.changed_by_role;

    v_new := pg_catalog.jsonb_build_object('policy_queue_name', p_queue_name, 'lease_duration', p_lease_duration,
                 'renewal_interval', p_renewal_interval, 'max_claim_lifetime', p_max_claim_lifetime,
                 'renewal_enabled', p_renewal_enabled);
    INSERT INTO durable_jobs.control_evidence_record (evidence_kind, queue_name, previous_values, new_values, change_reason)
    VALUES ('lease_policy_changed', p_queue_name, v_previous, v_new, p_change_reason);
    IF v_previous_enabled IS DISTINCT FROM p_renewal_enabled THEN
        INSERT INTO durable_jobs.control_evidence_record (evidence_kind, queue_name, previous_values, new_values, change_reason)
        VALUES ('renewal_enablement_changed', p_queue_name,
                pg_catalog.jsonb_build_object('renewal_enabled', v_previous_enabled),
                pg_catalog.jsonb_build_object('renewal_enabled', p_renewal_enabled), p_change_reason);
    END IF;
END;
$function$;

-- record_deployment_version: appends deployment_recorded control evidence
-- (version, reason, session_user, database time) so a release can be tied to
-- the database it runs against. Not part of the runtime contract: no runtime
-- role may execute it, only the role that applies the bundle (the deploying
-- pipeline). Takes no lock. Raises LF003 for a malformed version
-- (^[A-Za-z0-9][A-Za-z0-9._+-]{0,63}$) or a blank or > 500 character reason.
CREATE FUNCTION durable_jobs.record_deployment_version(p_deployment_version text, p_change_reason text)
RETURNS void
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $function$
BEGIN
    IF p_deployment_version IS NULL OR p_deployment_version !~ '^[A-Za-z0-9][A-Za-z0-9._+-]{0,63}$' THEN
        RAISE EXCEPTION 'malformed deployment version' USING ERRCODE = 'LF003',
            HINT = 'deployment version must match ^[A-Za-z0-9][A-Za-z0-9._+-]{0,63}$';
    END IF;
    IF p_change_reason IS NULL OR p_change_reason !~ '[^[:space:]]' OR pg_catalog.length(p_change_reason) > 500 THEN
        RAISE EXCEPTION 'change reason must be 1 to 500 characters and not blank' USING ERRCODE = 'LF003';
    END IF;
    INSERT INTO durable_jobs.control_evidence_record (evidence_kind, queue_name, previous_values, new_values, change_reason)
    VALUES ('deployment_recorded', NULL, NULL,
            pg_catalog.jsonb_build_object('deployment_version', p_deployment_version), p_change_reason);
END;
$function$;

ALTER FUNCTION durable_jobs.set_queue_lease_policy(text, interval, interval, interval, boolean, text) OWNER TO durable_job_policy_owner;
ALTER FUNCTION durable_jobs.record_deployment_version(text, text) OWNER TO durable_job_policy_owner;
REVOKE ALL ON FUNCTION durable_jobs.set_queue_lease_policy(text, interval, interval, interval, boolean, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION durable_jobs.record_deployment_version(text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.set_queue_lease_policy(text, interval, interval, interval, boolean, text) TO durable_job_operator;
GRANT EXECUTE ON FUNCTION durable_jobs.record_deployment_version(text, text) TO CURRENT_USER;

-- Auditor functions: payload-blind, finite-cardinality reads for health and
-- evidence. None returns a payload, token, digest, owner id, idempotency key
-- or job id list. They take no locks and raise nothing of their own.

-- lease_health_by_queue: one row per queue that has a policy or a job:
-- running jobs, leases expiring within one renewal interval, expired leases
-- still RUNNING (awaiting reclaim), reclaims and stale renewals in the last
-- hour (tallies; '*' holds stale renewals of unknown jobs), the oldest
-- running claim's age, and the database time it was read at.
CREATE FUNCTION durable_jobs.lease_health_by_queue()
RETURNS TABLE (queue_name text, running_jobs bigint, expiring_within_interval bigint,
               expired_awaiting_reclaim bigint, reclaims_last_hour bigint, stale_renewals_last_hour bigint,
               oldest_lease_age interval, database_time timestamptz)
LANGUAGE sql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
BEGIN ATOMIC
    WITH read_at AS (SELECT pg_catalog.clock_timestamp() AS read_time),
    queues AS (
        SELECT p.queue_name FROM durable_jobs.queue_lease_policy p
        UNION
        SELECT DISTINCT j.queue_name FROM durable_jobs.job_record j
    ),
    effective AS (
        SELECT q.queue_name,
               (SELECT p.renewal_interval FROM durable_jobs.queue_lease_policy p
                WHERE p.queue_name IN (q.queue_name, '*') ORDER BY p.queue_name = '*' LIMIT 1) AS renewal_interval
        FROM queues q
    ),
    running AS (
        SELECT j.queue_name,
               pg_catalog.count(*) AS running_jobs,
               pg_catalog.count(*) FILTER (WHERE j.lease_expires_at > r.read_time
                   AND j.lease_expires_at <= r.read_time + e.renewal_interval) AS expiring_soon,
               pg_catalog.count(*) FILTER (WHERE j.lease_expires_at <= r.read_time) AS expired,
               pg_catalog.min(j.lease_claimed_at) AS oldest_claim
        FROM durable_jobs.job_record j
        CROSS JOIN read_at r
        JOIN effective e ON e.queue_name = j.queue_name
        WHERE j.job_status = 'RUNNING'
        GROUP BY j.queue_name
    ),
    tallies AS (
        SELECT t.queue_name,
               pg_catalog.sum(t.outcome_count) FILTER (WHERE t.outcome_kind = 'reclaim') AS reclaims,
               pg_catalog.sum(t.outcome_count) FILTER (WHERE t.outcome_kind = 'stale_renewal') AS stale_renewals
        FROM durable_jobs.lease_outcome_tally t
        CROSS JOIN read_at r
        WHERE t.tally_minute >= r.read_time - interval '1 hour'
        GROUP BY t.queue_name
    )
    SELECT e.queue_name,
           COALESCE(ru.running_jobs, 0), COALESCE(ru.expiring_soon, 0), COALESCE(ru.expired, 0),
           COALESCE(ta.reclaims, 0)::bigint, COALESCE(ta.stale_renewals, 0)::bigint,
           r.read_time - ru.oldest_claim, r.read_time
    FROM effective e
    CROSS JOIN read_at r
    LEFT JOIN running ru ON ru.queue_name = e.queue_name
    LEFT JOIN tallies ta ON ta.queue_name = e.queue_name
    ORDER BY e.queue_name;
END;

-- queue_lease_policies: every queue's lease policy, '*' (the default) included.
CREATE FUNCTION durable_jobs.queue_lease_policies()
RETURNS TABLE (queue_name text, lease_duration interval, renewal_interval interval, max_claim_lifetime interval,
               renewal_enabled boolean, changed_at timestamptz, changed_by_role text)
LANGUAGE sql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
BEGIN ATOMIC
    SELECT p.queue_name, p.lease_duration, p.renewal_interval, p.max_claim_lifetime, p.renewal_enabled,
           p.changed_at, p.changed_by_role
    FROM durable_jobs.queue_lease_policy p
    ORDER BY p.queue_name;
END;

-- control_evidence_history: the append-only control evidence recorded at or
-- after p_since (all of it when NULL), oldest first.
CREATE FUNCTION durable_jobs.control_evidence_history(p_since timestamptz DEFAULT NULL)
RETURNS TABLE (evidence_record_id bigint, evidence_kind text, queue_name text, previous_values jsonb,
               new_values jsonb, change_reason text, changed_by_role text, recorded_at timestamptz)
LANGUAGE sql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
BEGIN ATOMIC
    SELECT e.evidence_record_id, e.evidence_kind, e.queue_name, e.previous_values, e.new_values,
           e.change_reason, e.changed_by_role, e.recorded_at
    FROM durable_jobs.control_evidence_record e
    WHERE p_since IS NULL OR e.recorded_at >= p_since
    ORDER BY e.evidence_record_id;
END;

-- lease_outcome_totals: stale renewals and reclaims per queue summed over
-- the per-minute tallies since p_since (all of them when NULL).
CREATE FUNCTION durable_jobs.lease_outcome_totals(p_since timestamptz)
RETURNS TABLE (queue_name text, outcome_kind text, outcome_count bigint)
LANGUAGE sql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
BEGIN ATOMIC
    SELECT t.queue_name, t.outcome_kind, pg_catalog.sum(t.outcome_count)::bigint
    FROM durable_jobs.lease_outcome_tally t
    WHERE p_since IS NULL OR t.tally_minute >= pg_catalog.date_trunc('minute', p_since)
    GROUP BY t.queue_name, t.outcome_kind
    ORDER BY t.queue_name, t.outcome_kind;
END;

-- job_status_totals: how many jobs each queue has in each status.
CREATE FUNCTION durable_jobs.job_status_totals()
RETURNS TABLE (queue_name text, job_status text, job_count bigint)
LANGUAGE sql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
BEGIN ATOMIC
    SELECT j.queue_name, j.job_status::text, pg_catalog.count(*)
    FROM durable_jobs.job_record j
    GROUP BY j.queue_name, j.job_status
    ORDER BY j.queue_name, j.job_status;
END;

-- bundle_migration_version: the bundle version this database was last
-- migrated to and when, from the newest migration evidence record.
CREATE FUNCTION durable_jobs.bundle_migration_version()
RETURNS TABLE (migration_version integer, applied_at timestamptz)
LANGUAGE sql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
BEGIN ATOMIC
    SELECT CASE WHEN e.evidence_kind = 'migration_applied'
                THEN (e.new_values ->> 'migration_version')::integer
                ELSE (e.new_values ->> 'migration_version')::integer - 1 END,
           e.recorded_at
    FROM durable_jobs.control_evidence_record e
    WHERE e.evidence_kind IN ('migration_applied', 'migration_reverted')
    ORDER BY e.evidence_record_id DESC
    LIMIT 1;
END;

ALTER FUNCTION durable_jobs.lease_health_by_queue() OWNER TO durable_job_audit_owner;
ALTER FUNCTION durable_jobs.queue_lease_policies() OWNER TO durable_job_audit_owner;
ALTER FUNCTION durable_jobs.control_evidence_history(timestamptz) OWNER TO durable_job_audit_owner;
ALTER FUNCTION durable_jobs.lease_outcome_totals(timestamptz) OWNER TO durable_job_audit_owner;
ALTER FUNCTION durable_jobs.job_status_totals() OWNER TO durable_job_audit_owner;
ALTER FUNCTION durable_jobs.bundle_migration_version() OWNER TO durable_job_audit_owner;
REVOKE ALL ON FUNCTION durable_jobs.lease_health_by_queue() FROM PUBLIC;
REVOKE ALL ON FUNCTION durable_jobs.queue_lease_policies() FROM PUBLIC;
REVOKE ALL ON FUNCTION durable_jobs.control_evidence_history(timestamptz) FROM PUBLIC;
REVOKE ALL ON FUNCTION durable_jobs.lease_outcome_totals(timestamptz) FROM PUBLIC;
REVOKE ALL ON FUNCTION durable_jobs.job_status_totals() FROM PUBLIC;
REVOKE ALL ON FUNCTION durable_jobs.bundle_migration_version() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.lease_health_by_queue() TO durable_job_auditor;
GRANT EXECUTE ON FUNCTION durable_jobs.queue_lease_policies() TO durable_job_auditor;
GRANT EXECUTE ON FUNCTION durable_jobs.control_evidence_history(timestamptz) TO durable_job_auditor;
GRANT EXECUTE ON FUNCTION durable_jobs.lease_outcome_totals(timestamptz) TO durable_job_auditor;
GRANT EXECUTE ON FUNCTION durable_jobs.job_status_totals() TO durable_job_auditor;
GRANT EXECUTE ON FUNCTION durable_jobs.bundle_migration_version() TO durable_job_auditor;


INSERT INTO durable_jobs.control_evidence_record (evidence_kind, queue_name, previous_values, new_values, change_reason)
VALUES ('migration_applied', NULL, NULL, '{"migration_version": 2, "migration_name": "002_lifecycle_functions"}',
        'leasefence bundle migration');

---- create above / drop below ----

DROP FUNCTION durable_jobs.bundle_migration_version();
DROP FUNCTION durable_jobs.job_status_totals();
DROP FUNCTION durable_jobs.lease_outcome_totals(timestamptz);
DROP FUNCTION durable_jobs.control_evidence_history(timestamptz);
DROP FUNCTION durable_jobs.queue_lease_policies();
DROP FUNCTION durable_jobs.lease_health_by_queue();
DROP FUNCTION durable_jobs.record_deployment_version(text, text);
DROP FUNCTION durable_jobs.set_queue_lease_policy(text, interval, interval, interval, boolean, text);
DROP FUNCTION durable_jobs.release_job_claim(bigint, uuid, text);
DROP FUNCTION durable_jobs.fail_job(bigint, uuid, text, text);
DROP FUNCTION durable_jobs.retry_job(bigint, uuid, text, interval, text);
DROP FUNCTION durable_jobs.complete_job(bigint, uuid, text, jsonb);
DROP FUNCTION durable_jobs.raise_stale_claim();
DROP FUNCTION durable_jobs.lock_fenced_claim(bigint, uuid, text);
DROP FUNCTION durable_jobs.renew_job_lease(bigint, uuid, text);
DROP FUNCTION durable_jobs.renew_job_leases(text, bigint[], uuid[]);
DROP FUNCTION durable_jobs.claim_next_job(text, text);
DROP FUNCTION durable_jobs.claim_next_jobs(text, text, integer);
DROP FUNCTION durable_jobs.job_lifecycle_state(bigint);
DROP FUNCTION durable_jobs.replay_job(bigint);
DROP FUNCTION durable_jobs.cancel_job(bigint);
DROP FUNCTION durable_jobs.enqueue_job(text, jsonb, text, timestamptz, integer);
DROP FUNCTION durable_jobs.record_lease_outcome(text, text, bigint);
DROP FUNCTION durable_jobs.claim_token_digest(uuid);
DROP FUNCTION durable_jobs.require_well_formed(text, text, text);

INSERT INTO durable_jobs.control_evidence_record (evidence_kind, queue_name, previous_values, new_values, change_reason)
VALUES ('migration_reverted', NULL, NULL, '{"migration_version": 2, "migration_name": "002_lifecycle_functions"}',
        'leasefence bundle migration rolled back');
