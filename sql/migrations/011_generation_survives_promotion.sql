-- leasefence 011: the fencing generation survives promotion
-- (functions/generation_floor.sql). A BEFORE UPDATE trigger on job_record
-- raises every claim's generation to at least ((timeline - 1) << 40) + 1,
-- timeline being the WAL timeline the server writes on, so a generation
-- issued after a promotion is above every generation an earlier primary
-- issued, even when the promotion lost the claims the old primary
-- acknowledged; and it sets synchronous_commit = local for the claiming
-- transaction only, so a claim's COMMIT never waits for a synchronous
-- standby (terminal writes and renewals still do). Function owned by
-- durable_job_claim_owner, EXECUTE for nobody: only the trigger calls it.
-- No function family changes. The down part drops the trigger and its
-- function.
{{ template "functions/generation_floor.sql" . }}

SELECT pg_catalog.pg_advisory_xact_lock(1279655936, 1);
INSERT INTO durable_jobs.control_evidence_record (evidence_kind, queue_name, previous_values, new_values, change_reason)
VALUES ('migration_applied', NULL, NULL, '{"migration_version": 11, "migration_name": "011_generation_survives_promotion"}',
        COALESCE(NULLIF(pg_catalog.current_setting('leasefence.migration_reason', true), ''), 'leasefence bundle migration'));

---- create above / drop below ----

DROP TRIGGER job_record_generation_floor ON durable_jobs.job_record;
DROP FUNCTION durable_jobs.raise_generation_to_floor();

SELECT pg_catalog.pg_advisory_xact_lock(1279655936, 1);
INSERT INTO durable_jobs.control_evidence_record (evidence_kind, queue_name, previous_values, new_values, change_reason)
VALUES ('migration_reverted', NULL, NULL, '{"migration_version": 11, "migration_name": "011_generation_survives_promotion"}',
        COALESCE(NULLIF(pg_catalog.current_setting('leasefence.migration_reason', true), ''),
                 'leasefence bundle migration rolled back'));
