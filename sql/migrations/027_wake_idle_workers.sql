-- leasefence 027: idle workers woken when work arrives (issue 37).
--
-- An idle worker waited out its poll interval before it saw a new job.
-- This migration adds two triggers on job_record, which send an empty
-- NOTIFY on the queue's wake-up channel ('leasefence_wake_' and 16 hex
-- digits of md5(queue name)) when rows of the queue are inserted or become
-- QUEUED or RETRY_SCHEDULED, and queue_next_due_in, which tells a worker
-- when the next job of its queue falls due. The notes in the family file
-- (wakeup.sql) say why triggers, why one notifying transaction at a time
-- per queue, and what a notification shows.
--
-- CREATE TRIGGER takes a SHARE ROW EXCLUSIVE lock on job_record for the
-- moment it runs: it waits for the transactions that write the table and
-- makes new writers wait behind it (leasectl migrate bounds the wait with
-- --lock-timeout); readers are not blocked. The down part drops the triggers
-- (an ACCESS EXCLUSIVE lock for a moment) and the three functions.

{{ template "functions/wakeup.sql" . }}

SELECT durable_jobs.lock_evidence_order();
INSERT INTO durable_jobs.control_evidence_record (evidence_kind, queue_name, previous_values, new_values, change_reason)
VALUES ('migration_applied', NULL, NULL, '{"migration_version": 27, "migration_name": "027_wake_idle_workers"}',
        COALESCE(NULLIF(pg_catalog.current_setting('leasefence.migration_reason', true), ''), 'leasefence bundle migration'));

---- create above / drop below ----

DROP TRIGGER job_record_wake_workers ON durable_jobs.job_record;
DROP TRIGGER job_record_wake_workers_after_insert ON durable_jobs.job_record;
DROP FUNCTION durable_jobs.wake_queue_workers();
DROP FUNCTION durable_jobs.wake_queue_workers_after_insert();
DROP FUNCTION durable_jobs.queue_next_due_in(text);

SELECT durable_jobs.lock_evidence_order();
INSERT INTO durable_jobs.control_evidence_record (evidence_kind, queue_name, previous_values, new_values, change_reason)
VALUES ('migration_reverted', NULL, NULL, '{"migration_version": 27, "migration_name": "027_wake_idle_workers"}',
        COALESCE(NULLIF(pg_catalog.current_setting('leasefence.migration_reason', true), ''),
                 'leasefence bundle migration rolled back'));
