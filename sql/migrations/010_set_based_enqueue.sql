-- leasefence 010: enqueue_jobs set-based (functions/batch_enqueue_v2.sql).
-- Version 1 (007) called enqueue_job once per element; version 2 checks
-- every element in one pass and writes the batch with one INSERT ... SELECT
-- of the job rows and their payloads, with the same result, the same rows,
-- the same errors and the same owner, settings and grants. No privilege
-- changes: it reads and writes what enqueue_job does. The down part puts
-- version 1 back.
{{ template "functions/batch_enqueue_v2.sql" . }}

SELECT pg_catalog.pg_advisory_xact_lock(1279655936, 1);
INSERT INTO durable_jobs.control_evidence_record (evidence_kind, queue_name, previous_values, new_values, change_reason)
VALUES ('migration_applied', NULL, NULL, '{"migration_version": 10, "migration_name": "010_set_based_enqueue"}',
        COALESCE(NULLIF(pg_catalog.current_setting('leasefence.migration_reason', true), ''), 'leasefence bundle migration'));

---- create above / drop below ----

{{ template "functions/batch_enqueue.sql" . }}

SELECT pg_catalog.pg_advisory_xact_lock(1279655936, 1);
INSERT INTO durable_jobs.control_evidence_record (evidence_kind, queue_name, previous_values, new_values, change_reason)
VALUES ('migration_reverted', NULL, NULL, '{"migration_version": 10, "migration_name": "010_set_based_enqueue"}',
        COALESCE(NULLIF(pg_catalog.current_setting('leasefence.migration_reason', true), ''),
                 'leasefence bundle migration rolled back'));
