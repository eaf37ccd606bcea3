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

{{ template "functions/rules_v2.sql" . }}
{{ template "functions/input_checks_v4.sql" . }}

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

{{ template "functions/input_checks_v3.sql" . }}
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
