-- leasefence 028: queue_backlog, the backlog per queue (issue 37, item 4:
-- "operators see the backlog").
--
-- leasectl health and the Prometheus collector showed leases only: running
-- jobs, expiring and expired leases, reclaims and stale calls. Nothing said
-- how many jobs wait, how many failed, or how long the oldest due job has
-- waited, which is what tells an operator that workers fall behind.
-- queue_backlog (backlog.sql) returns, per queue, the jobs queued, running
-- and retry scheduled, those that failed in the last hour, and the age of
-- the oldest due job, reading only those rows through the partial indexes
-- (never the finished jobs older than an hour). A new function: nothing
-- else changes, and it takes no lock on job_record.

{{ template "functions/backlog.sql" . }}

SELECT durable_jobs.lock_evidence_order();
INSERT INTO durable_jobs.control_evidence_record (evidence_kind, queue_name, previous_values, new_values, change_reason)
VALUES ('migration_applied', NULL, NULL, '{"migration_version": 28, "migration_name": "028_queue_backlog"}',
        COALESCE(NULLIF(pg_catalog.current_setting('leasefence.migration_reason', true), ''), 'leasefence bundle migration'));

---- create above / drop below ----

DROP FUNCTION durable_jobs.queue_backlog();

SELECT durable_jobs.lock_evidence_order();
INSERT INTO durable_jobs.control_evidence_record (evidence_kind, queue_name, previous_values, new_values, change_reason)
VALUES ('migration_reverted', NULL, NULL, '{"migration_version": 28, "migration_name": "028_queue_backlog"}',
        COALESCE(NULLIF(pg_catalog.current_setting('leasefence.migration_reason', true), ''),
                 'leasefence bundle migration rolled back'));
