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
