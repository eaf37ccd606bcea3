-- leasefence 002: every function of the bundle, each family from its own
-- file in functions/ (the single source of each body), with EXECUTE revoked
-- from PUBLIC and granted to exactly one runtime role.
{{ template "functions/input_checks.sql" . }}
{{ template "functions/producer.sql" . }}
{{ template "functions/claim.sql" . }}
{{ template "functions/renewal.sql" . }}
{{ template "functions/terminal.sql" . }}
{{ template "functions/policy.sql" . }}
{{ template "functions/audit.sql" . }}

INSERT INTO durable_jobs.control_evidence_record (evidence_kind, queue_name, previous_values, new_values, change_reason)
VALUES ('migration_applied', NULL, NULL, '{"migration_version": 2, "migration_name": "002_lifecycle_functions"}',
        'leasefence bundle migration');

---- create above / drop below ----

DROP FUNCTION durable_jobs.bundle_migration_version();
DROP FUNCTION durable_jobs.job_status_totals();
DROP FUNCTION durable_jobs.lease_outcome_totals(timestamptz);
DROP FUNCTION durable_jobs.control_evidence_history(timestamptz);
DROP FUNCTION durable_jobs.queue_lease_policies();
DROP FUNCTION durable_jobs.lease_health_by_queue();
DROP FUNCTION durable_jobs.record_deployment_version(text, text);
DROP FUNCTION durable_jobs.set_queue_lease_policy(text, interval, interval, interval, boolean, text);
DROP FUNCTION durable_jobs.release_job_claim(bigint, uuid, text);
DROP FUNCTION durable_jobs.fail_job(bigint, uuid, text, text);
DROP FUNCTION durable_jobs.retry_job(bigint, uuid, text, interval, text);
DROP FUNCTION durable_jobs.complete_job(bigint, uuid, text, jsonb);
DROP FUNCTION durable_jobs.raise_stale_claim();
DROP FUNCTION durable_jobs.lock_fenced_claim(bigint, uuid, text);
DROP FUNCTION durable_jobs.renew_job_lease(bigint, uuid, text);
DROP FUNCTION durable_jobs.renew_job_leases(text, bigint[], uuid[]);
DROP FUNCTION durable_jobs.claim_next_job(text, text);
DROP FUNCTION durable_jobs.claim_next_jobs(text, text, integer);
DROP FUNCTION durable_jobs.job_lifecycle_state(bigint);
DROP FUNCTION durable_jobs.replay_job(bigint);
DROP FUNCTION durable_jobs.cancel_job(bigint);
DROP FUNCTION durable_jobs.enqueue_job(text, jsonb, text, timestamptz, integer);
DROP FUNCTION durable_jobs.record_lease_outcome(text, text, bigint);
DROP FUNCTION durable_jobs.claim_token_digest(uuid);
DROP FUNCTION durable_jobs.require_well_formed(text, text, text);

INSERT INTO durable_jobs.control_evidence_record (evidence_kind, queue_name, previous_values, new_values, change_reason)
VALUES ('migration_reverted', NULL, NULL, '{"migration_version": 2, "migration_name": "002_lifecycle_functions"}',
        'leasefence bundle migration rolled back');
