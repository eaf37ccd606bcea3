-- leasefence 018: the contract's name patterns tested without a bounded
-- repeat (issue 11).
--
-- PostgreSQL's regular-expression engine pays for a bounded repeat
-- ({0,62}, {0,127}) on every match: one automaton state per repetition,
-- DFA states rebuilt for each match, so the cost grows with the value's
-- length. Testing an owner id against '^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$'
-- cost 5.3 microseconds at 14 characters, 13 at 25 (goclient's default
-- owner id has 27), 39 at 128, and a queue name against
-- '^[a-z][a-z0-9_.:-]{0,62}$' 3 to 5 at 15, against 0.5 to 0.8 at any
-- length for the same test written as 'at most 128 (63) bytes and
-- ^[A-Za-z0-9][A-Za-z0-9._:-]*$' (one session, 20,000 tests of each, DO
-- loop, 017 against 018): the same language, since every character either
-- pattern admits is one byte (rules_v2.sql gives the argument). Every claim
-- tested both names in claim_next_jobs, every renewal and batch completion
-- the owner id, every complete_job, retry_job, fail_job, release_job_claim
-- and enqueue one or two names in require_well_formed, and every UPDATE of
-- job_record (each renewal, claim and completion) the queue-name CHECK.
--
-- * queue_name_is_well_formed and worker_owner_id_is_well_formed
--   (rules_v2.sql) test the length and the unbounded pattern; the pattern
--   functions still return the contract's patterns word for word.
-- * require_well_formed (input_checks_v4.sql) tests with them, and a
--   failure reason code the same way; the HINT still names the contract's
--   pattern.
-- * job_record's CHECKs job_record_queue_name_format and
--   job_record_failure_reason_code_format are re-created with the same
--   names and meaning in that form (every operator qualified). Re-adding
--   them validates job_record's rows, one scan for both, under the ACCESS
--   EXCLUSIVE lock ALTER TABLE takes, held until this migration commits:
--   every call waits for that moment (about a second a million rows), and
--   the migration waits for calls in flight (lock timeout). The CHECKs of
--   queue_lease_policy and queue_retention_policy (a row a queue, written
--   only by a policy change) keep 001's text.
-- The down part puts back rules.sql's two bodies (inline: rules.sql creates
-- without OR REPLACE), input_checks_v3.sql and 001's two CHECKs.

-- Rules, version 2 (migration 018): the two pattern tests match without a
-- bounded repeat. queue_name_pattern() and worker_owner_id_pattern() stay
-- the contract's patterns, word for word (they are what an error's HINT
-- shows and what goclient's copy is checked against); only how a value is
-- tested against them changes.
--
-- Why: PostgreSQL's regular-expression engine builds the automaton of a
-- pattern's bounded repeat ({0,62}, {0,127}) one state per repetition and
-- rebuilds its DFA states on every match, so each test of a name against
-- the contract's pattern cost microseconds, more the longer the name: an
-- owner id 5.3 us at 14 characters, 13 at 25, 39 at 128; a 15-character
-- queue name 3 to 5; against 0.5 to 0.8 at any length for the same test
-- without the bounded repeat (migration 018's header gives the runs).
-- Every claim tested two names, every renewal and completion the owner id.
--
-- The test is the same language: for a pattern ^[A][B]{0,n}$ whose
-- bracket sets A and B hold ASCII characters only, a value matches it
-- exactly when it matches ^[A][B]*$ (then every character is one byte)
-- and has at most n + 1 bytes. The byte length is tested first (a value
-- longer than any name is refused without running the regex). NULL in,
-- NULL out, as before. sql/tests/25_rules.sql checks the answers against
-- the contract's patterns on every edge case; goclient's
-- TestGoCopiesOfTheRulesEqualTheDatabaseRules on 2,000 random names.
-- Everything else about them (inlined, no SECURITY DEFINER, no SET, the
-- grants) is as rules.sql says.

-- queue_name_is_well_formed: p_queue_name matches queue_name_pattern byte
-- for byte (COLLATE "C"). NULL in, NULL out. Takes no lock.
CREATE OR REPLACE FUNCTION durable_jobs.queue_name_is_well_formed(p_queue_name text)
RETURNS boolean
LANGUAGE sql
IMMUTABLE PARALLEL SAFE
RETURN pg_catalog.octet_length(p_queue_name) OPERATOR(pg_catalog.<=) 63
   AND (p_queue_name COLLATE "C") OPERATOR(pg_catalog.~) '^[a-z][a-z0-9_.:-]*$';

-- worker_owner_id_is_well_formed: p_worker_owner_id matches
-- worker_owner_id_pattern byte for byte (COLLATE "C"). NULL in, NULL out.
-- Takes no lock.
CREATE OR REPLACE FUNCTION durable_jobs.worker_owner_id_is_well_formed(p_worker_owner_id text)
RETURNS boolean
LANGUAGE sql
IMMUTABLE PARALLEL SAFE
RETURN pg_catalog.octet_length(p_worker_owner_id) OPERATOR(pg_catalog.<=) 128
   AND (p_worker_owner_id COLLATE "C") OPERATOR(pg_catalog.~) '^[A-Za-z0-9][A-Za-z0-9._:-]*$';

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


ALTER TABLE durable_jobs.job_record
    DROP CONSTRAINT job_record_queue_name_format,
    ADD CONSTRAINT job_record_queue_name_format
        CHECK (pg_catalog.octet_length(queue_name) OPERATOR(pg_catalog.<=) 63
               AND queue_name OPERATOR(pg_catalog.~) '^[a-z][a-z0-9_.:-]*$'::text),
    DROP CONSTRAINT job_record_failure_reason_code_format,
    ADD CONSTRAINT job_record_failure_reason_code_format
        CHECK (pg_catalog.octet_length(failure_reason_code) OPERATOR(pg_catalog.<=) 63
               AND failure_reason_code OPERATOR(pg_catalog.~) '^[a-z][a-z0-9_]*$'::text);

SELECT pg_catalog.pg_advisory_xact_lock(1279655936, 1);
INSERT INTO durable_jobs.control_evidence_record (evidence_kind, queue_name, previous_values, new_values, change_reason)
VALUES ('migration_applied', NULL, NULL, '{"migration_version": 18, "migration_name": "018_patterns_without_bounded_repeats"}',
        COALESCE(NULLIF(pg_catalog.current_setting('leasefence.migration_reason', true), ''), 'leasefence bundle migration'));

---- create above / drop below ----

ALTER TABLE durable_jobs.job_record
    DROP CONSTRAINT job_record_queue_name_format,
    ADD CONSTRAINT job_record_queue_name_format CHECK (queue_name ~ '^[a-z][a-z0-9_.:-]{0,62}$'),
    DROP CONSTRAINT job_record_failure_reason_code_format,
    ADD CONSTRAINT job_record_failure_reason_code_format CHECK (failure_reason_code ~ '^[a-z][a-z0-9_]{0,62}$');

-- Input checks, version 3 (migration 016): only require_well_formed
-- changes; it takes the queue-name and owner-id patterns from the rule
-- functions (rules.sql) instead of writing them again. Every other function
-- of the family stays as input_checks_v2.sql installs it.

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
        WHEN 'queue_name' THEN durable_jobs.queue_name_pattern()
        WHEN 'worker_owner_id' THEN durable_jobs.worker_owner_id_pattern()
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

-- rules.sql's two bodies, exactly as it defines them.
CREATE OR REPLACE FUNCTION durable_jobs.queue_name_is_well_formed(p_queue_name text)
RETURNS boolean
LANGUAGE sql
IMMUTABLE PARALLEL SAFE
RETURN (p_queue_name COLLATE "C") OPERATOR(pg_catalog.~) durable_jobs.queue_name_pattern();

CREATE OR REPLACE FUNCTION durable_jobs.worker_owner_id_is_well_formed(p_worker_owner_id text)
RETURNS boolean
LANGUAGE sql
IMMUTABLE PARALLEL SAFE
RETURN (p_worker_owner_id COLLATE "C") OPERATOR(pg_catalog.~) durable_jobs.worker_owner_id_pattern();

SELECT pg_catalog.pg_advisory_xact_lock(1279655936, 1);
INSERT INTO durable_jobs.control_evidence_record (evidence_kind, queue_name, previous_values, new_values, change_reason)
VALUES ('migration_reverted', NULL, NULL, '{"migration_version": 18, "migration_name": "018_patterns_without_bounded_repeats"}',
        COALESCE(NULLIF(pg_catalog.current_setting('leasefence.migration_reason', true), ''),
                 'leasefence bundle migration rolled back'));
