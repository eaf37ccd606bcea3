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
