-- leasefence 013: enqueue_jobs version 3 (functions/batch_enqueue_v3.sql).
-- Version 2 (010) wrote the payloads inside its job statement under its
-- plan_cache_mode force_custom_plan, so the payload foreign key's cached
-- check was planned again for every row; it made every row a speculative
-- insertion (ON CONFLICT) even in a batch without keys; and it always ran
-- its final key lookup, which PostgreSQL JIT-compiled on every call.
-- Version 3 writes the payloads in a statement of their own with
-- plan_cache_mode auto, inserts a batch without keys by a plain INSERT and
-- runs the lookup only when a key was already taken, with the same result,
-- the same rows, the same errors and the same owner, settings and grants.
-- No privilege changes. The down part puts version 2 back.
{{ template "functions/batch_enqueue_v3.sql" . }}

SELECT pg_catalog.pg_advisory_xact_lock(1279655936, 1);
INSERT INTO durable_jobs.control_evidence_record (evidence_kind, queue_name, previous_values, new_values, change_reason)
VALUES ('migration_applied', NULL, NULL, '{"migration_version": 13, "migration_name": "013_batch_enqueue_without_speculation"}',
        COALESCE(NULLIF(pg_catalog.current_setting('leasefence.migration_reason', true), ''), 'leasefence bundle migration'));

---- create above / drop below ----

{{ template "functions/batch_enqueue_v2.sql" . }}

SELECT pg_catalog.pg_advisory_xact_lock(1279655936, 1);
INSERT INTO durable_jobs.control_evidence_record (evidence_kind, queue_name, previous_values, new_values, change_reason)
VALUES ('migration_reverted', NULL, NULL, '{"migration_version": 13, "migration_name": "013_batch_enqueue_without_speculation"}',
        COALESCE(NULLIF(pg_catalog.current_setting('leasefence.migration_reason', true), ''),
                 'leasefence bundle migration rolled back'));
