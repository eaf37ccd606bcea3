-- leasefence 008: the fenced path at about the cost of a bare UPDATE.
--
-- * A claim costs the same whatever the number of live leases in its
--   queue: expired claims are found through job_record_reclaim_order on the
--   new column lease_expiry_floor, a lower bound of lease_expires_at that
--   renewals move about once per lease duration (so most renewals stay HOT
--   updates), and claim_next_jobs claims n jobs in one pass (claim_v3.sql).
--   Reclaim stays exact: the constraint keeps the floor at or below the
--   expiry of every RUNNING row, so every expired lease is in the index
--   range the claim scans.
-- * Renewals are one PL/pgSQL body each, renew_job_lease one conditional
--   UPDATE; renew_job_leases also refuses a multi-dimensional array (LF003),
--   which version 6 took as if it were flat (renewal_v3.sql).
-- * complete_jobs: many fenced completions of one worker in one call
--   (terminal_batch.sql); one stale claim aborts them all with LF001.
-- Every check of version 6 stays: READ COMMITTED only, absolute durations,
-- the input limits, a caller's collation refused, `locked` without waiting.
-- CREATE INDEX below takes a SHARE lock on job_record: writes wait for the
-- index build (seconds per million RUNNING rows; only RUNNING rows are in it).
-- This migration's version number appears only in its two evidence records
-- below (migration_version 8).

ALTER TABLE durable_jobs.job_record ADD COLUMN lease_expiry_floor timestamptz;
COMMENT ON COLUMN durable_jobs.job_record.lease_expiry_floor IS 'A lower bound of lease_expires_at while RUNNING, indexed for the reclaim probe. Set to the expiry by each claim; a renewal moves it up to the new expiry only when it is within a sixth of the lease duration of the clock, so most renewals change no indexed column.';
UPDATE durable_jobs.job_record SET lease_expiry_floor = lease_expires_at WHERE job_status = 'RUNNING';
ALTER TABLE durable_jobs.job_record ADD CONSTRAINT job_record_running_floor_bounds_expiry CHECK (
    job_status <> 'RUNNING' OR (lease_expiry_floor IS NOT NULL AND lease_expiry_floor <= lease_expires_at));
CREATE INDEX job_record_reclaim_order
    ON durable_jobs.job_record (queue_name, lease_expiry_floor, job_record_id)
    WHERE job_status = 'RUNNING';
GRANT SELECT (lease_expiry_floor), UPDATE (lease_expiry_floor)
    ON durable_jobs.job_record TO durable_job_claim_owner, durable_job_renewal_owner;
-- The batch renewal and batch completion lock their rows first and then
-- update them by tuple id (ctid = ANY), a plan that no table statistics can
-- turn into a scan of every running job; reading ctid needs this grant.
GRANT SELECT (ctid) ON durable_jobs.job_record TO durable_job_renewal_owner, durable_job_terminal_owner;

-- renew_job_lease(s) become PL/pgSQL bodies of their own (CREATE OR
-- REPLACE keeps their owner and grants); their v2 helper goes.
{{ template "functions/renewal_v3.sql" . }}
DROP FUNCTION durable_jobs.renew_claims(text, bigint[], uuid[], boolean);
{{ template "functions/claim_v3.sql" . }}
{{ template "functions/terminal_batch.sql" . }}

SELECT pg_catalog.pg_advisory_xact_lock(1279655936, 1);
INSERT INTO durable_jobs.control_evidence_record (evidence_kind, queue_name, previous_values, new_values, change_reason)
VALUES ('migration_applied', NULL, NULL, '{"migration_version": 8, "migration_name": "008_fast_fenced_path"}',
        COALESCE(NULLIF(pg_catalog.current_setting('leasefence.migration_reason', true), ''), 'leasefence bundle migration'));

---- create above / drop below ----

DROP FUNCTION durable_jobs.complete_jobs(text, bigint[], uuid[], jsonb[]);

-- Back to what 003 installs: renew_claims again, and renew_job_lease(s) and
-- claim_next_job as BEGIN ATOMIC bodies over their helpers (CREATE OR
-- REPLACE keeps owner and grants).
{{ template "functions/renewal_v2.sql" . }}
{{ template "functions/claim_v2.sql" . }}
-- The column takes its index, its constraint and its column privileges with it.
ALTER TABLE durable_jobs.job_record DROP COLUMN lease_expiry_floor;
REVOKE SELECT (ctid) ON durable_jobs.job_record FROM durable_job_renewal_owner, durable_job_terminal_owner;

SELECT pg_catalog.pg_advisory_xact_lock(1279655936, 1);
INSERT INTO durable_jobs.control_evidence_record (evidence_kind, queue_name, previous_values, new_values, change_reason)
VALUES ('migration_reverted', NULL, NULL, '{"migration_version": 8, "migration_name": "008_fast_fenced_path"}',
        COALESCE(NULLIF(pg_catalog.current_setting('leasefence.migration_reason', true), ''),
                 'leasefence bundle migration rolled back'));
