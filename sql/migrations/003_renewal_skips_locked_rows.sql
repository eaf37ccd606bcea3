-- leasefence 003 (assigned number 004; renumber when 003 lands, and the
-- migration_version below with it): renewal v2 and claim v2.
--  * renew_job_leases never waits on a row another transaction holds
--    locked: that claim is answered `locked` and the rest of the batch is
--    renewed, so one cancel or completion in progress cannot hold back a
--    worker's whole heartbeat, and no order of terminal calls deadlocks
--    with it. renew_job_lease (one claim) still waits for the lock.
--  * claim_next_job(s) and renew_job_lease(s) refuse a transaction that is
--    not READ COMMITTED (LF003): an old snapshot must not escape a policy
--    change.
--  * Leases and claim deadlines are absolute durations: the caller's
--    TimeZone never changes them.
{{ template "functions/renewal_v2.sql" . }}
{{ template "functions/claim_v2.sql" . }}

INSERT INTO durable_jobs.control_evidence_record (evidence_kind, queue_name, previous_values, new_values, change_reason)
VALUES ('migration_applied', NULL, NULL, '{"migration_version": 3, "migration_name": "003_renewal_skips_locked_rows"}',
        'leasefence bundle migration');

---- create above / drop below ----

-- Back to what 002 installs: renew_job_lease and claim_next_job are BEGIN
-- ATOMIC bodies over renew_job_leases and claim_next_jobs, so they go first.
DROP FUNCTION durable_jobs.renew_job_lease(bigint, uuid, text);
DROP FUNCTION durable_jobs.renew_job_leases(text, bigint[], uuid[]);
DROP FUNCTION durable_jobs.renew_claims(text, bigint[], uuid[], boolean);
{{ template "functions/renewal.sql" . }}
DROP FUNCTION durable_jobs.claim_next_job(text, text);
DROP FUNCTION durable_jobs.claim_next_jobs(text, text, integer);
{{ template "functions/claim.sql" . }}

INSERT INTO durable_jobs.control_evidence_record (evidence_kind, queue_name, previous_values, new_values, change_reason)
VALUES ('migration_reverted', NULL, NULL, '{"migration_version": 3, "migration_name": "003_renewal_skips_locked_rows"}',
        'leasefence bundle migration rolled back');
