-- leasefence 017: fewer statements per call on the worker's path (issue 11).
--
-- * claim_next_jobs (claim_v5.sql) runs three statements for a claim of due
--   jobs instead of eight, with the same rows claimed, locked and returned:
--   plan_cache_mode = force_generic_plan is a SET clause of the function
--   instead of two set_config calls, the expired and due probes are one
--   statement, and the UPDATE of exhausted candidates, the claim and the
--   count of reclaims run only when they have something to do.
-- * complete_jobs (terminal_batch_v3.sql) checks the size of the result
--   documents with a statement only when there are documents (the worker
--   loop completes without).
-- * The generation floor of migration 011 moves into claim_next_jobs
--   (GREATEST(generation + 1, timeline floor) in the claim, and
--   synchronous_commit = local for a transaction that claimed, as before),
--   and the trigger job_record_generation_floor and its function
--   raise_generation_to_floor are dropped: a BEFORE ROW UPDATE trigger on
--   job_record makes PostgreSQL lock the old row before every UPDATE of
--   job_record, whether the trigger fires or not, so each renewal paid an
--   extra tuple lock and WAL record (+56 WAL bytes, 1-3 % of a renewal,
--   3-5 % CPU-bound), and each claimed row a SECURITY DEFINER trigger call.
--   Dropped after claim_v5 is installed, in this migration's transaction,
--   so no claim runs without the floor. DROP TRIGGER takes an ACCESS
--   EXCLUSIVE lock on job_record, held until this migration commits (the
--   rest of it only replaces functions): every call waits for that moment,
--   and the migration waits for calls in flight (lock timeout).
-- The down part puts claim_v4.sql and terminal_batch_v2.sql back and
-- recreates the trigger and its function (generation_floor.sql) after them.

{{ template "functions/claim_v5.sql" . }}
{{ template "functions/terminal_batch_v3.sql" . }}

DROP TRIGGER job_record_generation_floor ON durable_jobs.job_record;
DROP FUNCTION durable_jobs.raise_generation_to_floor();

SELECT pg_catalog.pg_advisory_xact_lock(1279655936, 1);
INSERT INTO durable_jobs.control_evidence_record (evidence_kind, queue_name, previous_values, new_values, change_reason)
VALUES ('migration_applied', NULL, NULL, '{"migration_version": 17, "migration_name": "017_fewer_statements_per_call"}',
        COALESCE(NULLIF(pg_catalog.current_setting('leasefence.migration_reason', true), ''), 'leasefence bundle migration'));

---- create above / drop below ----

{{ template "functions/claim_v4.sql" . }}
{{ template "functions/terminal_batch_v2.sql" . }}
{{ template "functions/generation_floor.sql" . }}

SELECT pg_catalog.pg_advisory_xact_lock(1279655936, 1);
INSERT INTO durable_jobs.control_evidence_record (evidence_kind, queue_name, previous_values, new_values, change_reason)
VALUES ('migration_reverted', NULL, NULL, '{"migration_version": 17, "migration_name": "017_fewer_statements_per_call"}',
        COALESCE(NULLIF(pg_catalog.current_setting('leasefence.migration_reason', true), ''),
                 'leasefence bundle migration rolled back'));
