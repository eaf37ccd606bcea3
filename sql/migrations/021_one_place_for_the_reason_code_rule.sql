-- leasefence 021: the failure reason code's rule in one place.
--
-- Since migration 016 the queue name's and the worker owner id's rules are
-- SQL functions (rules.sql, rules_v2.sql) that require_well_formed and the
-- fenced paths use; the failure reason code's test and pattern were still
-- written inline in require_well_formed (input_checks_v4.sql: the test, and
-- the pattern for the HINT). rules_v3.sql adds failure_reason_code_pattern
-- and failure_reason_code_is_well_formed, written as the other two, and
-- require_well_formed (input_checks_v5.sql) uses them. Same answers, same
-- errors, same HINT. job_record's CHECK job_record_failure_reason_code_format
-- keeps its literal (a CHECK does not call a rule: rules.sql says why), and
-- sql/tests/25_rules.sql checks that it, the rule and require_well_formed
-- agree with the contract's pattern on every edge case and on 4,000 random
-- values. Only functions change: no table is locked.

-- Rules, version 3 (migration 021): the failure reason code's rule joins
-- the other two names' (rules.sql, rules_v2.sql), so require_well_formed
-- (input_checks_v5.sql) tests all three the same way from one place; until
-- 021 it wrote the reason code's test and pattern inline. Nothing else
-- changes. Like the others: LANGUAGE sql bodies bound at creation, not
-- SECURITY DEFINER, no SET, not STRICT, so PostgreSQL inlines them; EXECUTE
-- for the definer roles only. job_record's CHECK
-- job_record_failure_reason_code_format keeps its literal, as the queue
-- name's CHECKs do (rules.sql says why); sql/tests/25_rules.sql checks that
-- it, the rule and require_well_formed answer every edge case as the
-- contract's pattern does.

-- failure_reason_code_pattern: the contract's failure reason code pattern.
-- Takes no lock.
CREATE FUNCTION durable_jobs.failure_reason_code_pattern()
RETURNS text
LANGUAGE sql
IMMUTABLE PARALLEL SAFE
RETURN '^[a-z][a-z0-9_]{0,62}$';

-- failure_reason_code_is_well_formed: p_failure_reason_code matches
-- failure_reason_code_pattern byte for byte (COLLATE "C"), tested as
-- rules_v2.sql tests the other names: at most 63 bytes and the pattern
-- with * for its bounded repeat. NULL in, NULL out. Takes no lock.
CREATE FUNCTION durable_jobs.failure_reason_code_is_well_formed(p_failure_reason_code text)
RETURNS boolean
LANGUAGE sql
IMMUTABLE PARALLEL SAFE
RETURN pg_catalog.octet_length(p_failure_reason_code) OPERATOR(pg_catalog.<=) 63
   AND (p_failure_reason_code COLLATE "C") OPERATOR(pg_catalog.~) '^[a-z][a-z0-9_]*$';

REVOKE ALL ON FUNCTION durable_jobs.failure_reason_code_pattern() FROM PUBLIC;
REVOKE ALL ON FUNCTION durable_jobs.failure_reason_code_is_well_formed(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.failure_reason_code_pattern() TO
    durable_job_producer_owner, durable_job_claim_owner, durable_job_renewal_owner,
    durable_job_terminal_owner, durable_job_policy_owner, durable_job_retention_owner, durable_job_audit_owner;
GRANT EXECUTE ON FUNCTION durable_jobs.failure_reason_code_is_well_formed(text) TO
    durable_job_producer_owner, durable_job_claim_owner, durable_job_renewal_owner,
    durable_job_terminal_owner, durable_job_policy_owner, durable_job_retention_owner, durable_job_audit_owner;

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


SELECT pg_catalog.pg_advisory_xact_lock(1279655936, 1);
INSERT INTO durable_jobs.control_evidence_record (evidence_kind, queue_name, previous_values, new_values, change_reason)
VALUES ('migration_applied', NULL, NULL, '{"migration_version": 21, "migration_name": "021_one_place_for_the_reason_code_rule"}',
        COALESCE(NULLIF(pg_catalog.current_setting('leasefence.migration_reason', true), ''), 'leasefence bundle migration'));

---- create above / drop below ----

-- Input checks, version 4 (migration 018): only require_well_formed
-- changes; it tests a value with the rule functions (rules_v2.sql: the
-- contract's patterns matched without a bounded repeat, so a test costs a
-- fraction of a microsecond instead of 3 to 7) and a failure reason code
-- the same way, and names the contract's pattern in the HINT as before.
-- Every other function of the family stays as input_checks_v2.sql
-- installs it.

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
    -- '^[a-z][a-z0-9_]{0,62}$' for a reason code, tested as rules_v2.sql
    -- tests the other two: at most 63 bytes and '^[a-z][a-z0-9_]*$'.
    v_well_formed := CASE p_value_kind
        WHEN 'queue_name' THEN durable_jobs.queue_name_is_well_formed(p_value)
        WHEN 'worker_owner_id' THEN durable_jobs.worker_owner_id_is_well_formed(p_value)
        ELSE pg_catalog.octet_length(p_value) <= 63 AND p_value COLLATE "C" ~ '^[a-z][a-z0-9_]*$'
    END;
    IF v_well_formed IS NOT TRUE THEN
        RAISE EXCEPTION USING
            ERRCODE = p_sqlstate,
            MESSAGE = pg_catalog.format('malformed %s', p_value_kind),
            HINT = pg_catalog.format('%s must match %s', p_value_kind, CASE p_value_kind
                WHEN 'queue_name' THEN durable_jobs.queue_name_pattern()
                WHEN 'worker_owner_id' THEN durable_jobs.worker_owner_id_pattern()
                ELSE '^[a-z][a-z0-9_]{0,62}$' END);
    END IF;
END;
$function$;

DROP FUNCTION durable_jobs.failure_reason_code_is_well_formed(text);
DROP FUNCTION durable_jobs.failure_reason_code_pattern();

SELECT pg_catalog.pg_advisory_xact_lock(1279655936, 1);
INSERT INTO durable_jobs.control_evidence_record (evidence_kind, queue_name, previous_values, new_values, change_reason)
VALUES ('migration_reverted', NULL, NULL, '{"migration_version": 21, "migration_name": "021_one_place_for_the_reason_code_rule"}',
        COALESCE(NULLIF(pg_catalog.current_setting('leasefence.migration_reason', true), ''),
                 'leasefence bundle migration rolled back'));
