-- leasefence 007: payload-blind operator views of single jobs
-- (operator_list_jobs, operator_job_detail) from functions/job_admin.sql,
-- owned by the audit owner, executable by durable_job_operator only. The
-- audit owner gets SELECT on the lifecycle columns they read; never on the
-- payload table, the claim digest, the owner or the idempotency key digest.
-- Also batch enqueue, enqueue_jobs from functions/batch_enqueue.sql, owned
-- by the producer owner and executable by durable_job_producer: each element
-- goes through enqueue_job, so it needs no grant of its own.
GRANT SELECT (job_record_id, attempt_number, max_attempts, lease_fencing_generation, lease_renewal_count,
              failure_reason_code, run_after, created_at, status_changed_at)
    ON durable_jobs.job_record TO durable_job_audit_owner;
GRANT EXECUTE ON FUNCTION durable_jobs.require_well_formed(text, text, text) TO durable_job_audit_owner;
{{ template "functions/job_admin.sql" . }}
{{ template "functions/batch_enqueue.sql" . }}

SELECT pg_catalog.pg_advisory_xact_lock(1279655936, 1);
INSERT INTO durable_jobs.control_evidence_record (evidence_kind, queue_name, previous_values, new_values, change_reason)
VALUES ('migration_applied', NULL, NULL, '{"migration_version": 7, "migration_name": "007_operator_job_views"}',
        COALESCE(NULLIF(pg_catalog.current_setting('leasefence.migration_reason', true), ''), 'leasefence bundle migration'));

---- create above / drop below ----

DROP FUNCTION durable_jobs.enqueue_jobs(text, jsonb[], text[], timestamptz[], integer[]);
DROP FUNCTION durable_jobs.operator_job_detail(bigint);
DROP FUNCTION durable_jobs.operator_list_jobs(text, text, bigint, integer);
REVOKE EXECUTE ON FUNCTION durable_jobs.require_well_formed(text, text, text) FROM durable_job_audit_owner;
REVOKE SELECT (job_record_id, attempt_number, max_attempts, lease_fencing_generation, lease_renewal_count,
               failure_reason_code, run_after, created_at, status_changed_at)
    ON durable_jobs.job_record FROM durable_job_audit_owner;

SELECT pg_catalog.pg_advisory_xact_lock(1279655936, 1);
INSERT INTO durable_jobs.control_evidence_record (evidence_kind, queue_name, previous_values, new_values, change_reason)
VALUES ('migration_reverted', NULL, NULL, '{"migration_version": 7, "migration_name": "007_operator_job_views"}',
        COALESCE(NULLIF(pg_catalog.current_setting('leasefence.migration_reason', true), ''),
                 'leasefence bundle migration rolled back'));
