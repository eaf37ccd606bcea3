-- leasefence 025: claims that stay flat when the planner's statistics are
-- stale (issue 38).
--
-- Found with auto_explain on a table of 200,000 queued jobs analyzed once,
-- then 40,000 of them claimed (every claim live, autovacuum off): the
-- claim's expired-claims probe ran on job_record_running_by_queue, the
-- partial index of RUNNING rows keyed by queue alone, which the stale
-- statistics say is empty (estimated 1 row), and filtered every live lease
-- of the queue for lease_expiry_floor <= now ('Rows Removed by Filter:
-- 40401', 55 ms a claim; 200 claims 6.5 s against 0.43 s with fresh
-- statistics). With fresh statistics the planner takes
-- job_record_reclaim_order (queue_name, lease_expiry_floor, job_record_id),
-- whose index condition bounds the scan by the expiry floor. That index
-- holds the same rows with the same first column, so it serves every
-- statement the other served (the counts of running jobs per queue too);
-- dropping job_record_running_by_queue leaves the planner no plan whose
-- cost depends on how many leases are live: the same 200 claims took
-- 0.13 s with stale statistics and 0.09 s with fresh ones. It also saves
-- an index entry (72 WAL bytes) per claim.
--
-- DROP INDEX takes an ACCESS EXCLUSIVE lock on job_record for the moment
-- it runs: it waits for every transaction that uses the table and makes
-- new ones wait behind it (leasectl migrate bounds the wait with
-- --lock-timeout). The down part builds the index again (a SHARE lock for
-- the time of one scan of the RUNNING rows).

DROP INDEX durable_jobs.job_record_running_by_queue;

SELECT durable_jobs.lock_evidence_order();
INSERT INTO durable_jobs.control_evidence_record (evidence_kind, queue_name, previous_values, new_values, change_reason)
VALUES ('migration_applied', NULL, NULL, '{"migration_version": 25, "migration_name": "025_claims_flat_under_stale_statistics"}',
        COALESCE(NULLIF(pg_catalog.current_setting('leasefence.migration_reason', true), ''), 'leasefence bundle migration'));

---- create above / drop below ----

CREATE INDEX job_record_running_by_queue ON durable_jobs.job_record (queue_name)
    WHERE job_status = 'RUNNING';

SELECT durable_jobs.lock_evidence_order();
INSERT INTO durable_jobs.control_evidence_record (evidence_kind, queue_name, previous_values, new_values, change_reason)
VALUES ('migration_reverted', NULL, NULL, '{"migration_version": 25, "migration_name": "025_claims_flat_under_stale_statistics"}',
        COALESCE(NULLIF(pg_catalog.current_setting('leasefence.migration_reason', true), ''),
                 'leasefence bundle migration rolled back'));
