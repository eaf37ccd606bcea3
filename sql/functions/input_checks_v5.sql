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
