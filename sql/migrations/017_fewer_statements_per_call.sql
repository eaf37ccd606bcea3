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
-- The down part puts claim_v4.sql and terminal_batch_v2.sql back.

{{ template "functions/claim_v5.sql" . }}
{{ template "functions/terminal_batch_v3.sql" . }}

SELECT pg_catalog.pg_advisory_xact_lock(1279655936, 1);
INSERT INTO durable_jobs.control_evidence_record (evidence_kind, queue_name, previous_values, new_values, change_reason)
VALUES ('migration_applied', NULL, NULL, '{"migration_version": 17, "migration_name": "017_fewer_statements_per_call"}',
        COALESCE(NULLIF(pg_catalog.current_setting('leasefence.migration_reason', true), ''), 'leasefence bundle migration'));

---- create above / drop below ----

{{ template "functions/claim_v4.sql" . }}
{{ template "functions/terminal_batch_v2.sql" . }}

SELECT pg_catalog.pg_advisory_xact_lock(1279655936, 1);
INSERT INTO durable_jobs.control_evidence_record (evidence_kind, queue_name, previous_values, new_values, change_reason)
VALUES ('migration_reverted', NULL, NULL, '{"migration_version": 17, "migration_name": "017_fewer_statements_per_call"}',
        COALESCE(NULLIF(pg_catalog.current_setting('leasefence.migration_reason', true), ''),
                 'leasefence bundle migration rolled back'));
