-- leasefence 023: release_job_claims, many claims given up in one call
-- (issue 11: "a fenced batched completion ... and the same for releases on
-- shutdown").
--
-- A worker that stops gives up the claims of the jobs it did not finish
-- (goclient's Worker after ShutdownTimeout, a heartbeat closed with claims
-- left). Until now that was one release_job_claim per claim, pipelined in
-- one round trip: one SECURITY DEFINER call, one lock_fenced_claim call and
-- one input check per claim, and one stale release's tally write per stale
-- claim. release_job_claims (release_batch.sql) decides every claim exactly
-- as release_job_claim does, in one call: the fenced rows locked in job id
-- order by one statement, released by one UPDATE, each claim answered in
-- input order, the stale ones counted together (record_stale_calls, 022).
-- release_job_claim is unchanged.

{{ template "functions/release_batch.sql" . }}

SELECT pg_catalog.pg_advisory_xact_lock(1279655936, 1);
INSERT INTO durable_jobs.control_evidence_record (evidence_kind, queue_name, previous_values, new_values, change_reason)
VALUES ('migration_applied', NULL, NULL, '{"migration_version": 23, "migration_name": "023_batched_release"}',
        COALESCE(NULLIF(pg_catalog.current_setting('leasefence.migration_reason', true), ''), 'leasefence bundle migration'));

---- create above / drop below ----

DROP FUNCTION durable_jobs.release_job_claims(text, bigint[], uuid[]);

SELECT pg_catalog.pg_advisory_xact_lock(1279655936, 1);
INSERT INTO durable_jobs.control_evidence_record (evidence_kind, queue_name, previous_values, new_values, change_reason)
VALUES ('migration_reverted', NULL, NULL, '{"migration_version": 23, "migration_name": "023_batched_release"}',
        COALESCE(NULLIF(pg_catalog.current_setting('leasefence.migration_reason', true), ''),
                 'leasefence bundle migration rolled back'));
