-- Input checks shared by the definer functions: names, claim tokens, durations.
--
-- The current definition of each function of this family, edited in place.
-- A change reaches databases through a new migration that includes this
-- file; released migrations hold their own frozen copy (see sql/doc.go).
--
-- Below, the notes written with the versions the current definitions come
-- from, newest first. They name the files as they were then; each
-- migration's frozen SQL under sql/migrations holds the whole text.

-- Notes of migration 021 (input_checks_v5.sql in its frozen SQL):
--
-- Input checks, version 5 (migration 021): exactly version 4, except that
-- a failure reason code is tested and named by its rule functions
-- (rules_v3.sql) as the queue name and owner id are, not by a test and a
-- pattern written here. Every other function of the family stays as
-- input_checks_v2.sql installs it.

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
    v_well_formed boolean;
BEGIN
    IF p_value_kind IS NULL OR p_value_kind NOT IN ('queue_name', 'worker_owner_id', 'failure_reason_code') THEN
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
    v_well_formed := CASE p_value_kind
        WHEN 'queue_name' THEN durable_jobs.queue_name_is_well_formed(p_value)
        WHEN 'worker_owner_id' THEN durable_jobs.worker_owner_id_is_well_formed(p_value)
        ELSE durable_jobs.failure_reason_code_is_well_formed(p_value)
    END;
    IF v_well_formed IS NOT TRUE THEN
        RAISE EXCEPTION USING
            ERRCODE = p_sqlstate,
            MESSAGE = pg_catalog.format('malformed %s', p_value_kind),
            HINT = pg_catalog.format('%s must match %s', p_value_kind, CASE p_value_kind
                WHEN 'queue_name' THEN durable_jobs.queue_name_pattern()
                WHEN 'worker_owner_id' THEN durable_jobs.worker_owner_id_pattern()
                ELSE durable_jobs.failure_reason_code_pattern() END);
    END IF;
END;
$function$;

REVOKE ALL ON FUNCTION durable_jobs.require_well_formed(text, text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.require_well_formed(text, text, text) TO durable_job_producer_owner, durable_job_claim_owner, durable_job_renewal_owner, durable_job_terminal_owner, durable_job_policy_owner, durable_job_retention_owner, durable_job_audit_owner;

-- claim_token_digest: the stored form of a claim token, sha256 of its 16
-- bytes (uuid_send). The token itself is never stored. NULL in, NULL out.
CREATE OR REPLACE FUNCTION durable_jobs.claim_token_digest(p_lease_claim_token uuid)
RETURNS bytea
LANGUAGE sql
IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
RETURN pg_catalog.sha256(pg_catalog.uuid_send(p_lease_claim_token));

REVOKE ALL ON FUNCTION durable_jobs.claim_token_digest(uuid) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.claim_token_digest(uuid) TO durable_job_claim_owner, durable_job_renewal_owner, durable_job_terminal_owner;

-- absolute_duration, version 2 (migration 009): the body of migration 004's
-- version with every operator written OPERATOR(pg_catalog.x). The body is
-- an SQL-standard RETURN expression, parsed when the function is created:
-- its operators on numeric and integer have no exact match in pg_catalog,
-- so a database installed without the migrator's pinned search_path (plain
-- tern, see sql/doc.go) could have bound them to operators planted in
-- public. Qualified, they bind to pg_catalog under any search_path.
-- OPERATOR(...) has one precedence for every operator, so every operand
-- is parenthesised: the expression tree is exactly version 1's.
--
-- absolute_duration: an interval as a plain duration in seconds, without a
-- month or day part ('1 day' -> '24:00:00'), so that adding it to a
-- timestamptz gives the same instant under every TimeZone. NULL (refused by
-- the callers) when the interval has a month or year part (a month has no
-- fixed length) or day and time parts of opposite signs ('1 day -1 second').
-- NULL in, NULL out. Takes no lock.
CREATE OR REPLACE FUNCTION durable_jobs.absolute_duration(p_value interval)
RETURNS interval
LANGUAGE sql
IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
RETURN CASE
    WHEN (EXTRACT(year FROM p_value) OPERATOR(pg_catalog.<>) 0)
        OR (EXTRACT(month FROM p_value) OPERATOR(pg_catalog.<>) 0) THEN NULL
    WHEN (EXTRACT(day FROM p_value) OPERATOR(pg_catalog.*)
          (EXTRACT(epoch FROM p_value) OPERATOR(pg_catalog.-) (EXTRACT(day FROM p_value) OPERATOR(pg_catalog.*) 86400)))
        OPERATOR(pg_catalog.<) 0 THEN NULL
    ELSE pg_catalog.make_interval(secs => EXTRACT(epoch FROM p_value)::double precision)
END;

REVOKE ALL ON FUNCTION durable_jobs.absolute_duration(interval) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.absolute_duration(interval) TO durable_job_terminal_owner, durable_job_policy_owner, durable_job_retention_owner;
