-- leasefence 020: a batch renewal's cost linear in its number of claims
-- (issue 11).
--
-- renew_job_leases (renewal_v5.sql) answered with the claims in LEFT JOIN
-- the rows its UPDATE renewed. PostgreSQL estimates an UPDATE that finds
-- its rows by an array of tuple ids at one row, so it planned that join as
-- a nested loop: every renewed row read once per claim in, n x n rows a
-- call ('Rows Removed by Join Filter: 9900' for 100 claims, 999,000 for
-- 1,000). Its UPDATE also tested each row's job id against the array of
-- locked job ids, n comparisons a row. The goclient heartbeat renews up to
-- 1,000 claims a call.
--
-- Measured on one cluster with durable commits (2 cores, load 2 to 4: the
-- other work on the machine), 20,100 live claims, pgbench -M prepared,
-- both functions in one interleaved run (two scripts, per-script mean
-- latency, 20 s): 1,000 claims a call 81 to 93 ms with v5 against 19 ms
-- with v6 (4.2 to 4.8 x); 100 claims 2.1 to 3.5 ms against 1.7 to 2.8
-- (1.26 x). Against the same batched UPDATE written bare on job_record:
-- 0.49 (v5) and 0.61 (v6) at 100 claims, 0.62 (v6) at 1,000. Of the 1,000
-- claims' gain, the job-id test was 11 % (v6 with and without it, 14.0
-- against 12.6 ms), the join the rest.
--
-- renewal_v6.sql: the answer joins by FULL JOIN, which PostgreSQL can only
-- run as a hash or merge join (every renewed row is one of the claims in,
-- so no row is added), and the UPDATE finds its rows by tuple id alone (a
-- row this call holds locked keeps its tuple id). renew_job_lease is
-- unchanged. Nothing else changes: same answers, same locks, same order.

{{ template "functions/renewal_v6.sql" . }}

SELECT pg_catalog.pg_advisory_xact_lock(1279655936, 1);
INSERT INTO durable_jobs.control_evidence_record (evidence_kind, queue_name, previous_values, new_values, change_reason)
VALUES ('migration_applied', NULL, NULL, '{"migration_version": 20, "migration_name": "020_batch_renewal_linear_in_its_size"}',
        COALESCE(NULLIF(pg_catalog.current_setting('leasefence.migration_reason', true), ''), 'leasefence bundle migration'));

---- create above / drop below ----

{{ template "functions/renewal_v5.sql" . }}

SELECT pg_catalog.pg_advisory_xact_lock(1279655936, 1);
INSERT INTO durable_jobs.control_evidence_record (evidence_kind, queue_name, previous_values, new_values, change_reason)
VALUES ('migration_reverted', NULL, NULL, '{"migration_version": 20, "migration_name": "020_batch_renewal_linear_in_its_size"}',
        COALESCE(NULLIF(pg_catalog.current_setting('leasefence.migration_reason', true), ''),
                 'leasefence bundle migration rolled back'));
