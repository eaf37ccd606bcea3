-- leasefence 004 (assigned number 005; renumber when the reserved migration
-- lands, and the migration_version below with it): counting that never makes a session wait,
-- time computed in UTC, absolute policy durations, policy changes and
-- evidence serialised in commit order, bounded inputs.
--
-- lease_outcome_tally is rebuilt insert-only per backend: a row per
-- (UTC minute, queue, kind, pg_backend_pid()), so two live sessions never
-- write one row; readers sum. Existing rows keep their counts, their shard n
-- becoming tally_backend_pid -1 - n (never a live backend's pid).

-- Every function that reads the tally table depends on it: drop them first.
DROP FUNCTION durable_jobs.lease_health_by_queue();
DROP FUNCTION durable_jobs.lease_outcome_totals(timestamptz);
DROP FUNCTION durable_jobs.record_lease_outcome(text, text, bigint);

CREATE TABLE durable_jobs.lease_outcome_tally_next (
    tally_minute      timestamptz NOT NULL,
    queue_name        text NOT NULL,
    outcome_kind      text NOT NULL CONSTRAINT lease_outcome_tally_kind CHECK (outcome_kind IN ('stale_renewal', 'reclaim')),
    tally_backend_pid integer NOT NULL,
    counted_by_role   text NOT NULL,
    outcome_count     bigint NOT NULL CONSTRAINT lease_outcome_tally_count_positive CHECK (outcome_count > 0),
    CONSTRAINT lease_outcome_tally_next_pkey
        PRIMARY KEY (tally_minute, queue_name, outcome_kind, tally_backend_pid, counted_by_role)
);
INSERT INTO durable_jobs.lease_outcome_tally_next
    (tally_minute, queue_name, outcome_kind, tally_backend_pid, counted_by_role, outcome_count)
SELECT t.tally_minute, t.queue_name, t.outcome_kind, -1 - t.tally_shard, '', t.outcome_count
FROM durable_jobs.lease_outcome_tally t;
DROP TABLE durable_jobs.lease_outcome_tally;
ALTER TABLE durable_jobs.lease_outcome_tally_next RENAME TO lease_outcome_tally;
ALTER TABLE durable_jobs.lease_outcome_tally RENAME CONSTRAINT lease_outcome_tally_next_pkey TO lease_outcome_tally_pkey;
CREATE INDEX lease_outcome_tally_recent ON durable_jobs.lease_outcome_tally (tally_minute);
COMMENT ON TABLE durable_jobs.lease_outcome_tally IS 'Per-minute (UTC) tallies of committed rare outcomes. Each backend counts in rows of its own, so counting never waits on another session; readers sum. Rows older than 30 days are deleted by the writers (SKIP LOCKED).';
COMMENT ON COLUMN durable_jobs.lease_outcome_tally.tally_minute IS 'The UTC minute the outcomes were counted in, whatever the session''s TimeZone.';
COMMENT ON COLUMN durable_jobs.lease_outcome_tally.queue_name IS 'Queue of the job; ''*'' when the renewal named a job that does not exist.';
COMMENT ON COLUMN durable_jobs.lease_outcome_tally.counted_by_role IS 'session_user that counted the outcome ('''' for rows carried over from version 2). Never returned: the auditor functions charge a stale renewal to its queue only when this login is the last claimer of a job there, else to ''*''.';
COMMENT ON COLUMN durable_jobs.lease_outcome_tally.tally_backend_pid IS 'pg_backend_pid() of the counting session: no two live sessions share a row. Negative for rows carried over from the 16 shards of version 2.';
REVOKE ALL ON durable_jobs.lease_outcome_tally FROM PUBLIC;
GRANT SELECT (tally_minute, queue_name, outcome_kind, tally_backend_pid, counted_by_role, outcome_count),
      INSERT (tally_minute, queue_name, outcome_kind, tally_backend_pid, counted_by_role, outcome_count),
      UPDATE (outcome_count), DELETE
    ON durable_jobs.lease_outcome_tally TO durable_job_claim_owner, durable_job_renewal_owner;
GRANT SELECT (tally_minute, queue_name, outcome_kind, counted_by_role, outcome_count)
    ON durable_jobs.lease_outcome_tally TO durable_job_audit_owner;
-- The auditor functions attribute stale renewals by the job's last claimer.
GRANT SELECT (lease_claimed_by_role) ON durable_jobs.job_record TO durable_job_audit_owner;

-- Policy intervals become absolute durations: no month or day part, so
-- adding one to a time gives the same instant under every TimeZone.
UPDATE durable_jobs.queue_lease_policy p
SET lease_duration = pg_catalog.make_interval(secs => EXTRACT(epoch FROM p.lease_duration)::double precision),
    renewal_interval = pg_catalog.make_interval(secs => EXTRACT(epoch FROM p.renewal_interval)::double precision),
    max_claim_lifetime = pg_catalog.make_interval(secs => EXTRACT(epoch FROM p.max_claim_lifetime)::double precision);
ALTER TABLE durable_jobs.queue_lease_policy ADD CONSTRAINT queue_lease_policy_absolute_durations CHECK (
    EXTRACT(year FROM lease_duration) = 0 AND EXTRACT(month FROM lease_duration) = 0 AND EXTRACT(day FROM lease_duration) = 0
    AND EXTRACT(year FROM renewal_interval) = 0 AND EXTRACT(month FROM renewal_interval) = 0
    AND EXTRACT(day FROM renewal_interval) = 0
    AND EXTRACT(year FROM max_claim_lifetime) = 0 AND EXTRACT(month FROM max_claim_lifetime) = 0
    AND EXTRACT(day FROM max_claim_lifetime) = 0);

-- require_well_formed: private helper that checks one bounded identifier
-- (queue name, worker owner id or failure reason code) against the
-- contract's pattern and raises p_sqlstate (LF003 by default, LF002 from
-- set_queue_lease_policy) when it is NULL or malformed. The message names
-- the kind of value, never the value itself. A value with a collation of
-- the caller's is malformed too. Takes no lock.
CREATE OR REPLACE FUNCTION durable_jobs.require_well_formed(p_value_kind text, p_value text, p_sqlstate text DEFAULT 'LF003')
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
    -- A value that carries a collation of the caller's (COLLATE "x" on the
    -- argument; a parameter inherits it) is refused: a nondeterministic one
    -- would make the pattern match raise 0A000 and the fenced comparisons
    -- compare by that collation instead of byte for byte.
    IF p_value IS NOT NULL
       AND pg_catalog.pg_collation_for(p_value) NOT IN ('"default"', '"C"', '"POSIX"') THEN
        RAISE EXCEPTION USING
            ERRCODE = p_sqlstate,
            MESSAGE = pg_catalog.format('%s must not carry a collation', p_value_kind),
            HINT = 'Pass the value without COLLATE.';
    END IF;
    IF p_value IS NULL OR p_value COLLATE "C" !~ v_pattern THEN
        RAISE EXCEPTION USING
            ERRCODE = p_sqlstate,
            MESSAGE = pg_catalog.format('malformed %s', p_value_kind),
            HINT = pg_catalog.format('%s must match %s', p_value_kind, v_pattern);
    END IF;
END;
$function$;

-- claim_token_digest: the stored form of a claim token, sha256 of its 16
-- bytes (uuid_send). The token itself is never stored. NULL in, NULL out.
CREATE OR REPLACE FUNCTION durable_jobs.claim_token_digest(p_lease_claim_token uuid)
RETURNS bytea
LANGUAGE sql
IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
RETURN pg_catalog.sha256(pg_catalog.uuid_send(p_lease_claim_token));

-- absolute_duration: an interval as a plain duration in seconds, without a
-- month or day part ('1 day' -> '24:00:00'), so that adding it to a
-- timestamptz gives the same instant under every TimeZone. NULL (refused by
-- the callers) when the interval has a month or year part (a month has no
-- fixed length) or day and time parts of opposite signs ('1 day -1 second').
-- NULL in, NULL out. Takes no lock.
CREATE FUNCTION durable_jobs.absolute_duration(p_value interval)
RETURNS interval
LANGUAGE sql
IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
RETURN CASE
    WHEN EXTRACT(year FROM p_value) <> 0 OR EXTRACT(month FROM p_value) <> 0 THEN NULL
    WHEN EXTRACT(day FROM p_value) * (EXTRACT(epoch FROM p_value) - EXTRACT(day FROM p_value) * 86400) < 0 THEN NULL
    ELSE pg_catalog.make_interval(secs => EXTRACT(epoch FROM p_value)::double precision)
END;

-- is_plain_change_reason: true when an operator's change reason is 1 to 500
-- characters, not blank, and has no control character (C0, DEL, C1: ESC,
-- newlines and tabs included) and no bidirectional-control or line/paragraph
-- separator character (U+061C, U+200E, U+200F, U+2028 to U+202E, U+2066 to
-- U+2069) that could make evidence read differently from what it holds.
-- NULL in, NULL out. Takes no lock.
CREATE FUNCTION durable_jobs.is_plain_change_reason(p_change_reason text)
RETURNS boolean
LANGUAGE sql
IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
RETURN p_change_reason ~ '[^[:space:]]'
   AND pg_catalog.length(p_change_reason) <= 500
   AND p_change_reason !~ '[\x01-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]';

-- lock_evidence_order: every writer of control evidence calls this before
-- it reads what it records and before it inserts, so evidence writers run
-- one at a time and each record's id and recorded_at come after those of
-- every record committed before it: an export by id never skips a record
-- that commits later. A transaction-level advisory lock on the bundle's key
-- (1279655936 = 'LF' << 16, 1); released at commit or rollback. Waits for
-- another evidence writer's open transaction.
CREATE FUNCTION durable_jobs.lock_evidence_order()
RETURNS void
LANGUAGE sql
VOLATILE
SET search_path = pg_catalog, pg_temp
RETURN pg_catalog.pg_advisory_xact_lock(1279655936, 1);

-- record_lease_outcome: adds p_outcome_count to this minute's (UTC) tally
-- of a rare committed outcome (stale_renewal, reclaim) under p_queue_name.
-- Each backend counts in rows of its own, keyed by (minute, queue, kind,
-- pg_backend_pid(), session_user): no two live sessions ever write the same
-- row, so counting never makes a session wait on another. The row records
-- the counting login (counted_by_role, never returned by any function) so
-- that the auditor functions can charge a stale renewal to its queue only
-- when that login has claimed a job there, and to '*' otherwise.
-- Retention: each call deletes up to 16 rows older than 30 days that no one
-- else has locked (SKIP LOCKED), so the table stays bounded without anyone
-- waiting. Locks its own tally row and the expired rows it deletes.
CREATE OR REPLACE FUNCTION durable_jobs.record_lease_outcome(p_queue_name text, p_outcome_kind text, p_outcome_count bigint)
RETURNS void
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, pg_temp
SET TimeZone = 'UTC'
AS $function$
DECLARE
    v_minute timestamptz := pg_catalog.date_trunc('minute', pg_catalog.clock_timestamp(), 'UTC');
BEGIN
    INSERT INTO durable_jobs.lease_outcome_tally AS t
        (tally_minute, queue_name, outcome_kind, tally_backend_pid, counted_by_role, outcome_count)
    VALUES (v_minute, p_queue_name, p_outcome_kind, pg_catalog.pg_backend_pid(), SESSION_USER, p_outcome_count)
    ON CONFLICT (tally_minute, queue_name, outcome_kind, tally_backend_pid, counted_by_role)
    DO UPDATE SET outcome_count = t.outcome_count + EXCLUDED.outcome_count;

    DELETE FROM durable_jobs.lease_outcome_tally t
    WHERE (t.tally_minute, t.queue_name, t.outcome_kind, t.tally_backend_pid, t.counted_by_role) IN (
        SELECT o.tally_minute, o.queue_name, o.outcome_kind, o.tally_backend_pid, o.counted_by_role
        FROM durable_jobs.lease_outcome_tally o
        WHERE o.tally_minute < v_minute - interval '30 days'
        ORDER BY o.tally_minute
        LIMIT 16
        FOR UPDATE SKIP LOCKED);
END;
$function$;

REVOKE ALL ON FUNCTION durable_jobs.require_well_formed(text, text, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION durable_jobs.claim_token_digest(uuid) FROM PUBLIC;
REVOKE ALL ON FUNCTION durable_jobs.record_lease_outcome(text, text, bigint) FROM PUBLIC;
REVOKE ALL ON FUNCTION durable_jobs.absolute_duration(interval) FROM PUBLIC;
REVOKE ALL ON FUNCTION durable_jobs.is_plain_change_reason(text) FROM PUBLIC;
REVOKE ALL ON FUNCTION durable_jobs.lock_evidence_order() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.require_well_formed(text, text, text) TO
    durable_job_producer_owner, durable_job_claim_owner, durable_job_renewal_owner,
    durable_job_terminal_owner, durable_job_policy_owner;
GRANT EXECUTE ON FUNCTION durable_jobs.claim_token_digest(uuid) TO
    durable_job_claim_owner, durable_job_renewal_owner, durable_job_terminal_owner;
GRANT EXECUTE ON FUNCTION durable_jobs.record_lease_outcome(text, text, bigint) TO
    durable_job_claim_owner, durable_job_renewal_owner;
GRANT EXECUTE ON FUNCTION durable_jobs.absolute_duration(interval) TO
    durable_job_terminal_owner, durable_job_policy_owner;
GRANT EXECUTE ON FUNCTION durable_jobs.is_plain_change_reason(text) TO durable_job_policy_owner;
GRANT EXECUTE ON FUNCTION durable_jobs.lock_evidence_order() TO durable_job_policy_owner;

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

-- cancel_job: QUEUED, RETRY_SCHEDULED or RUNNING to CANCELLED; a running
-- job's claim becomes stale at once (status is part of the fence). false when
-- the job is already terminal or unknown. Locks the job row (waits for a
-- worker's open terminal transaction). Raises LF003 for a NULL id.
CREATE OR REPLACE FUNCTION durable_jobs.cancel_job(p_job_record_id bigint)
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
CREATE OR REPLACE FUNCTION durable_jobs.replay_job(p_job_record_id bigint)
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

-- set_queue_lease_policy: sets one queue's lease policy ('*' is the default).
-- Refused with LF003 unless the caller's transaction is READ COMMITTED (an
-- older snapshot would record wrong previous values). Intervals are stored
-- as plain durations in seconds ('1 day' is stored as '24:00:00'); an
-- interval with a month part or with day and time parts of opposite signs is
-- refused. Valid only when every value is non-NULL, 1 s <= lease <= 24 h,
-- 100 ms <= renewal interval <= lease / 3, lease <= max claim lifetime <= 7 d,
-- the reason is plain text (is_plain_change_reason) and the queue name is '*'
-- or well-formed; else LF002 and nothing changes. Appends control evidence
-- (old and new values, reason, session_user, database time), and a
-- renewal_enablement_changed record when the queue's effective enablement
-- flips. Affects the next claim or renewal, never an expiry already granted.
-- Locks: the evidence-order lock (lock_evidence_order) before it reads the
-- previous policy, so concurrent changes run one after the other and each
-- records exactly the policy the one before it committed; the wait is bounded
-- by lock_timeout = 10 s (then 55P03, nothing changed), and the caller's
-- transaction may then stay idle for at most 60 s
-- (idle_in_transaction_session_timeout, set for the rest of the transaction
-- unless the session's own bound is shorter) before the server ends it, so a
-- held change blocks others for a bounded time.
CREATE OR REPLACE FUNCTION durable_jobs.set_queue_lease_policy(p_queue_name text, p_lease_duration interval,
    p_renewal_interval interval, p_max_claim_lifetime interval, p_renewal_enabled boolean, p_change_reason text)
RETURNS void
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET TimeZone = 'UTC'
SET lock_timeout = '10s'
AS $function$
DECLARE
    v_lease_duration interval := durable_jobs.absolute_duration(p_lease_duration);
    v_renewal_interval interval := durable_jobs.absolute_duration(p_renewal_interval);
    v_max_claim_lifetime interval := durable_jobs.absolute_duration(p_max_claim_lifetime);
    v_previous jsonb;
    v_previous_enabled boolean;
    v_new jsonb;
    v_idle_timeout_ms bigint;
BEGIN
    IF pg_catalog.current_setting('transaction_isolation') <> 'read committed' THEN
        RAISE EXCEPTION 'set_queue_lease_policy must run in a READ COMMITTED transaction' USING
            ERRCODE = 'LF003',
            HINT = 'A REPEATABLE READ or SERIALIZABLE snapshot may predate a concurrent change; use READ COMMITTED.';
    END IF;
    IF p_queue_name IS DISTINCT FROM '*' THEN
        PERFORM durable_jobs.require_well_formed('queue_name', p_queue_name, 'LF002');
    END IF;
    IF p_lease_duration IS NULL OR p_renewal_interval IS NULL OR p_max_claim_lifetime IS NULL
       OR p_renewal_enabled IS NULL OR p_change_reason IS NULL
       OR p_lease_duration NOT BETWEEN interval '1 second' AND interval '24 hours'
       OR p_renewal_interval < interval '100 milliseconds' OR p_renewal_interval > p_lease_duration / 3
       OR p_max_claim_lifetime < p_lease_duration OR p_max_claim_lifetime > interval '168 hours'
       OR p_change_reason !~ '[^[:space:]]' OR pg_catalog.length(p_change_reason) > 500 THEN
        RAISE EXCEPTION 'invalid lease policy' USING
            ERRCODE = 'LF002',
            DETAIL = 'Need 1 second <= lease_duration <= 24 hours, 100 milliseconds <= renewal_interval <= lease_duration / 3, '
                  || 'lease_duration <= max_claim_lifetime <= 7 days, renewal_enabled set, and a change reason of 1 to 500 characters.';
    END IF;
    IF v_lease_duration IS NULL OR v_renewal_interval IS NULL OR v_max_claim_lifetime IS NULL
       OR NOT durable_jobs.is_plain_change_reason(p_change_reason) THEN
        RAISE EXCEPTION 'invalid lease policy' USING
            ERRCODE = 'LF002',
            DETAIL = 'Need plain durations (no month or year part, day and time parts of one sign) and a change reason '
                  || 'without control or bidirectional-control characters.';
    END IF;

    PERFORM durable_jobs.lock_evidence_order();
    -- Bound how long the caller's transaction may now sit idle holding the
    -- lock: 60 s, unless the session already has a shorter bound.
    SELECT s.setting::bigint INTO STRICT v_idle_timeout_ms
    FROM pg_catalog.pg_settings s WHERE s.name = 'idle_in_transaction_session_timeout';
    IF v_idle_timeout_ms = 0 OR v_idle_timeout_ms > 60000 THEN
        PERFORM pg_catalog.set_config('idle_in_transaction_session_timeout', '60s', true);
    END IF;

    -- The queue's effective policy before the change: its own row, else the
    -- default, read after the lock so it is what the last change committed.
    SELECT pg_catalog.jsonb_build_object('policy_queue_name', p.queue_name, 'lease_duration', p.lease_duration,
               'renewal_interval', p.renewal_interval, 'max_claim_lifetime', p.max_claim_lifetime,
               'renewal_enabled', p.renewal_enabled),
           p.renewal_enabled
    INTO v_previous, v_previous_enabled
    FROM durable_jobs.queue_lease_policy p
    WHERE p.queue_name IN (p_queue_name, '*')
    ORDER BY p.queue_name = '*'
    LIMIT 1;

    INSERT INTO durable_jobs.queue_lease_policy AS p
        (queue_name, lease_duration, renewal_interval, max_claim_lifetime, renewal_enabled, changed_at, changed_by_role)
    VALUES (p_queue_name, v_lease_duration, v_renewal_interval, v_max_claim_lifetime, p_renewal_enabled,
            pg_catalog.clock_timestamp(), SESSION_USER)
    ON CONFLICT (queue_name) DO UPDATE
    SET lease_duration = EXCLUDED.lease_duration, renewal_interval = EXCLUDED.renewal_interval,
        max_claim_lifetime = EXCLUDED.max_claim_lifetime, renewal_enabled = EXCLUDED.renewal_enabled,
        changed_at = EXCLUDED.changed_at, changed_by_role = EXCLUDED.changed_by_role;

    v_new := pg_catalog.jsonb_build_object('policy_queue_name', p_queue_name, 'lease_duration', v_lease_duration,
                 'renewal_interval', v_renewal_interval, 'max_claim_lifetime', v_max_claim_lifetime,
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
-- pipeline). Takes the evidence-order lock (lock_evidence_order; lock_timeout
-- 10 s, then 55P03). Raises LF003 for a malformed version
-- (^[A-Za-z0-9][A-Za-z0-9._+-]{0,63}$) or a reason that is not plain text
-- (is_plain_change_reason: 1 to 500 characters, not blank, no control or
-- bidirectional-control characters).
CREATE OR REPLACE FUNCTION durable_jobs.record_deployment_version(p_deployment_version text, p_change_reason text)
RETURNS void
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET lock_timeout = '10s'
AS $function$
BEGIN
    IF p_deployment_version IS NULL OR p_deployment_version !~ '^[A-Za-z0-9][A-Za-z0-9._+-]{0,63}$' THEN
        RAISE EXCEPTION 'malformed deployment version' USING ERRCODE = 'LF003',
            HINT = 'deployment version must match ^[A-Za-z0-9][A-Za-z0-9._+-]{0,63}$';
    END IF;
    IF p_change_reason IS NULL OR NOT durable_jobs.is_plain_change_reason(p_change_reason) THEN
        RAISE EXCEPTION 'change reason must be 1 to 500 characters, not blank, without control or bidirectional-control characters'
            USING ERRCODE = 'LF003';
    END IF;
    PERFORM durable_jobs.lock_evidence_order();
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
-- hour (tallies summed over every backend's rows; '*' holds stale renewals
-- of unknown jobs and those made by a login that is not the last claimer of
-- any job of the queue, so a guess cannot pass for the queue's trouble), the
-- oldest running claim's age, and the database time it was read at.
-- Computes in UTC whatever the caller's TimeZone.
CREATE OR REPLACE FUNCTION durable_jobs.lease_health_by_queue()
RETURNS TABLE (queue_name text, running_jobs bigint, expiring_within_interval bigint,
               expired_awaiting_reclaim bigint, reclaims_last_hour bigint, stale_renewals_last_hour bigint,
               oldest_lease_age interval, database_time timestamptz)
LANGUAGE sql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET TimeZone = 'UTC'
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
        SELECT CASE WHEN t.outcome_kind = 'stale_renewal' AND t.counted_by_role <> ''
                         AND (t.queue_name, t.counted_by_role) NOT IN (
                             SELECT j.queue_name, j.lease_claimed_by_role FROM durable_jobs.job_record j
                             WHERE j.lease_claimed_by_role IS NOT NULL)
                    THEN '*' ELSE t.queue_name END AS queue_name,
               pg_catalog.sum(t.outcome_count) FILTER (WHERE t.outcome_kind = 'reclaim') AS reclaims,
               pg_catalog.sum(t.outcome_count) FILTER (WHERE t.outcome_kind = 'stale_renewal') AS stale_renewals
        FROM durable_jobs.lease_outcome_tally t
        CROSS JOIN read_at r
        WHERE t.tally_minute >= r.read_time - interval '1 hour'
        GROUP BY 1
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
CREATE OR REPLACE FUNCTION durable_jobs.queue_lease_policies()
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
CREATE OR REPLACE FUNCTION durable_jobs.control_evidence_history(p_since timestamptz DEFAULT NULL)
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
-- every backend's per-minute tallies since the UTC minute of p_since (all of
-- them when NULL), whatever the caller's TimeZone. A stale renewal made by a
-- login that is not the last claimer of any job of its queue is counted
-- under '*' (as are renewals of unknown jobs).
CREATE OR REPLACE FUNCTION durable_jobs.lease_outcome_totals(p_since timestamptz)
RETURNS TABLE (queue_name text, outcome_kind text, outcome_count bigint)
LANGUAGE sql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET TimeZone = 'UTC'
BEGIN ATOMIC
    SELECT a.queue_name, a.outcome_kind, pg_catalog.sum(a.outcome_count)::bigint
    FROM (SELECT CASE WHEN t.outcome_kind = 'stale_renewal' AND t.counted_by_role <> ''
                           AND (t.queue_name, t.counted_by_role) NOT IN (
                             SELECT j.queue_name, j.lease_claimed_by_role FROM durable_jobs.job_record j
                             WHERE j.lease_claimed_by_role IS NOT NULL)
                      THEN '*' ELSE t.queue_name END AS queue_name,
                 t.outcome_kind, t.outcome_count
          FROM durable_jobs.lease_outcome_tally t
          WHERE p_since IS NULL OR t.tally_minute >= pg_catalog.date_trunc('minute', p_since, 'UTC')) a
    GROUP BY a.queue_name, a.outcome_kind
    ORDER BY a.queue_name, a.outcome_kind;
END;

-- job_status_totals: how many jobs each queue has in each status.
CREATE OR REPLACE FUNCTION durable_jobs.job_status_totals()
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
CREATE OR REPLACE FUNCTION durable_jobs.bundle_migration_version()
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


SELECT pg_catalog.pg_advisory_xact_lock(1279655936, 1);
INSERT INTO durable_jobs.control_evidence_record (evidence_kind, queue_name, previous_values, new_values, change_reason)
VALUES ('migration_applied', NULL, NULL, '{"migration_version": 4, "migration_name": "004_counting_time_and_policy"}',
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
DROP FUNCTION durable_jobs.job_lifecycle_state(bigint);
DROP FUNCTION durable_jobs.replay_job(bigint);
DROP FUNCTION durable_jobs.cancel_job(bigint);
DROP FUNCTION durable_jobs.enqueue_job(text, jsonb, text, timestamptz, integer);
DROP FUNCTION durable_jobs.record_lease_outcome(text, text, bigint);
DROP FUNCTION durable_jobs.lock_evidence_order();
DROP FUNCTION durable_jobs.is_plain_change_reason(text);
DROP FUNCTION durable_jobs.absolute_duration(interval);
DROP FUNCTION durable_jobs.claim_token_digest(uuid);
DROP FUNCTION durable_jobs.require_well_formed(text, text, text);

REVOKE SELECT (lease_claimed_by_role) ON durable_jobs.job_record FROM durable_job_audit_owner;

-- Durations stay as stored ('24:00:00' is also valid for version 2).
ALTER TABLE durable_jobs.queue_lease_policy DROP CONSTRAINT queue_lease_policy_absolute_durations;

-- The tally table of version 2, exactly as 001 made it; each row goes to
-- its minute's slot and its backend's shard (a carried-over row to the
-- shard it came from), newest minute per slot, counts summed over logins.
CREATE TABLE durable_jobs.lease_outcome_tally_prev (
    tally_slot    integer NOT NULL CONSTRAINT lease_outcome_tally_slot_range CHECK (tally_slot BETWEEN 0 AND 43199),
    tally_minute  timestamptz NOT NULL,
    queue_name    text NOT NULL,
    outcome_kind  text NOT NULL CONSTRAINT lease_outcome_tally_kind CHECK (outcome_kind IN ('stale_renewal', 'reclaim')),
    tally_shard   smallint NOT NULL CONSTRAINT lease_outcome_tally_shard_range CHECK (tally_shard BETWEEN 0 AND 15),
    outcome_count bigint NOT NULL CONSTRAINT lease_outcome_tally_count_positive CHECK (outcome_count > 0),
    CONSTRAINT lease_outcome_tally_prev_pkey PRIMARY KEY (tally_slot, queue_name, outcome_kind, tally_shard)
);
INSERT INTO durable_jobs.lease_outcome_tally_prev (tally_slot, tally_minute, queue_name, outcome_kind, tally_shard, outcome_count)
SELECT k.slot, k.tally_minute, k.queue_name, k.outcome_kind, k.shard, pg_catalog.sum(k.outcome_count)
FROM (SELECT s.*, pg_catalog.max(s.tally_minute) OVER (PARTITION BY s.slot, s.queue_name, s.outcome_kind, s.shard) AS newest
      FROM (SELECT (pg_catalog.floor(EXTRACT(epoch FROM t.tally_minute) / 60)::bigint % 43200)::integer AS slot,
                   t.tally_minute, t.queue_name, t.outcome_kind,
                   (CASE WHEN t.tally_backend_pid < 0 THEN -1 - t.tally_backend_pid ELSE t.tally_backend_pid % 16 END)::smallint AS shard,
                   t.outcome_count
            FROM durable_jobs.lease_outcome_tally t) s) k
WHERE k.tally_minute = k.newest
GROUP BY k.slot, k.tally_minute, k.queue_name, k.outcome_kind, k.shard;
DROP TABLE durable_jobs.lease_outcome_tally;
ALTER TABLE durable_jobs.lease_outcome_tally_prev RENAME TO lease_outcome_tally;
ALTER TABLE durable_jobs.lease_outcome_tally RENAME CONSTRAINT lease_outcome_tally_prev_pkey TO lease_outcome_tally_pkey;
COMMENT ON TABLE durable_jobs.lease_outcome_tally IS 'Bounded per-minute tallies of committed rare outcomes over the last 30 days. Sharded by backend so no single row is hot.';
COMMENT ON COLUMN durable_jobs.lease_outcome_tally.tally_slot IS 'Minute since the epoch modulo 43200 (30 days): a slot is reused, and its old tally overwritten, when its minute comes round again.';
CREATE INDEX lease_outcome_tally_recent ON durable_jobs.lease_outcome_tally (tally_minute);
COMMENT ON COLUMN durable_jobs.lease_outcome_tally.queue_name IS 'Queue of the job; ''*'' when the renewal named a job that does not exist.';
COMMENT ON COLUMN durable_jobs.lease_outcome_tally.tally_shard IS 'pg_backend_pid() % 16: concurrent sessions add to different rows.';
REVOKE ALL ON durable_jobs.lease_outcome_tally FROM PUBLIC;
GRANT SELECT (tally_slot, tally_minute, queue_name, outcome_kind, tally_shard, outcome_count),
      INSERT (tally_slot, tally_minute, queue_name, outcome_kind, tally_shard, outcome_count),
      UPDATE (tally_minute, outcome_count)
    ON durable_jobs.lease_outcome_tally TO durable_job_claim_owner;
GRANT SELECT (tally_slot, tally_minute, queue_name, outcome_kind, tally_shard, outcome_count),
      INSERT (tally_slot, tally_minute, queue_name, outcome_kind, tally_shard, outcome_count),
      UPDATE (tally_minute, outcome_count)
    ON durable_jobs.lease_outcome_tally TO durable_job_renewal_owner;
GRANT SELECT (tally_minute, queue_name, outcome_kind, outcome_count)
    ON durable_jobs.lease_outcome_tally TO durable_job_audit_owner;

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


SELECT pg_catalog.pg_advisory_xact_lock(1279655936, 1);
INSERT INTO durable_jobs.control_evidence_record (evidence_kind, queue_name, previous_values, new_values, change_reason)
VALUES ('migration_reverted', NULL, NULL, '{"migration_version": 4, "migration_name": "004_counting_time_and_policy"}',
        'leasefence bundle migration rolled back');
