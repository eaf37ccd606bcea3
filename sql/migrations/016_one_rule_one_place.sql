-- leasefence 016: one rule, one place (issue 18, items 4 and 7).
--
-- * durable_jobs.update_queue_lease_policy(...) (policy_v4.sql) changes only
--   the lease-policy settings given and keeps the others from the queue's
--   effective policy, read inside the function after the evidence-order
--   lock: a partial change (leasectl policy set) can no longer overwrite a
--   change committed between reading the policy and writing it. Granted to
--   durable_job_operator like set_queue_lease_policy.
-- The down part drops it.

{{ template "functions/policy_v4.sql" . }}

SELECT pg_catalog.pg_advisory_xact_lock(1279655936, 1);
INSERT INTO durable_jobs.control_evidence_record (evidence_kind, queue_name, previous_values, new_values, change_reason)
VALUES ('migration_applied', NULL, NULL, '{"migration_version": 16, "migration_name": "016_one_rule_one_place"}',
        COALESCE(NULLIF(pg_catalog.current_setting('leasefence.migration_reason', true), ''), 'leasefence bundle migration'));

---- create above / drop below ----

DROP FUNCTION durable_jobs.update_queue_lease_policy(text, interval, interval, interval, boolean, text, text, text);

SELECT pg_catalog.pg_advisory_xact_lock(1279655936, 1);
INSERT INTO durable_jobs.control_evidence_record (evidence_kind, queue_name, previous_values, new_values, change_reason)
VALUES ('migration_reverted', NULL, NULL, '{"migration_version": 16, "migration_name": "016_one_rule_one_place"}',
        COALESCE(NULLIF(pg_catalog.current_setting('leasefence.migration_reason', true), ''),
                 'leasefence bundle migration rolled back'));
