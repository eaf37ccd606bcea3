-- leasefence 022: a batch renewal counts its stale claims together (issue
-- 11: a stale batch cost the square of its stale claims).
--
-- renew_job_leases (renewal_v6.sql) counted each stale claim of a call with
-- its own record_stale_call, and so its own record_lease_outcome: every one
-- updated the same tally row (this minute, queue, kind, backend, login) in
-- the call's transaction. Each update adds a version to that row's chain,
-- which pruning cannot shorten before the transaction ends, and each ON
-- CONFLICT walks the chain: 1,000 counts in one transaction took 56 ms,
-- 3,000 took 438 ms (a DO loop of record_lease_outcome, one session). A
-- heartbeat call of 1,000 claims that had all gone stale (a worker cut off
-- for longer than its lease, or a database clock step) took 60 to 86 ms,
-- against 19 ms for 1,000 claims renewed.
--
-- stale_tally_v2.sql: record_stale_calls counts many stale calls at once,
-- with 012's rule (the job's queue when the calling login made its last
-- claim, else '*'), one record_lease_outcome call per queue charged;
-- record_stale_call counts one through it. renewal_v7.sql: renew_job_leases
-- collects its stale claims and counts them in one call after its answer.
-- Same answers, counts, locks and order; renew_job_lease and
-- release_job_claim unchanged.

{{ template "functions/stale_tally_v2.sql" . }}
{{ template "functions/renewal_v7.sql" . }}

SELECT pg_catalog.pg_advisory_xact_lock(1279655936, 1);
INSERT INTO durable_jobs.control_evidence_record (evidence_kind, queue_name, previous_values, new_values, change_reason)
VALUES ('migration_applied', NULL, NULL, '{"migration_version": 22, "migration_name": "022_stale_claims_counted_together"}',
        COALESCE(NULLIF(pg_catalog.current_setting('leasefence.migration_reason', true), ''), 'leasefence bundle migration'));

---- create above / drop below ----

{{ template "functions/renewal_v6.sql" . }}
-- stale_tally.sql creates record_stale_call (not OR REPLACE): drop v2's first.
DROP FUNCTION durable_jobs.record_stale_call(bigint, text);
{{ template "functions/stale_tally.sql" . }}
DROP FUNCTION durable_jobs.record_stale_calls(bigint[], text);

SELECT pg_catalog.pg_advisory_xact_lock(1279655936, 1);
INSERT INTO durable_jobs.control_evidence_record (evidence_kind, queue_name, previous_values, new_values, change_reason)
VALUES ('migration_reverted', NULL, NULL, '{"migration_version": 22, "migration_name": "022_stale_claims_counted_together"}',
        COALESCE(NULLIF(pg_catalog.current_setting('leasefence.migration_reason', true), ''),
                 'leasefence bundle migration rolled back'));
