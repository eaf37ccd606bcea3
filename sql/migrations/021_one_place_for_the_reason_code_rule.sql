-- leasefence 021: the failure reason code's rule in one place.
--
-- Since migration 016 the queue name's and the worker owner id's rules are
-- SQL functions (rules.sql, rules_v2.sql) that require_well_formed and the
-- fenced paths use; the failure reason code's test and pattern were still
-- written inline in require_well_formed (input_checks_v4.sql: the test, and
-- the pattern for the HINT). rules_v3.sql adds failure_reason_code_pattern
-- and failure_reason_code_is_well_formed, written as the other two, and
-- require_well_formed (input_checks_v5.sql) uses them. Same answers, same
-- errors, same HINT. job_record's CHECK job_record_failure_reason_code_format
-- keeps its literal (a CHECK does not call a rule: rules.sql says why), and
-- sql/tests/25_rules.sql checks that it, the rule and require_well_formed
-- agree with the contract's pattern on every edge case and on 4,000 random
-- values. Only functions change: no table is locked.

{{ template "functions/rules_v3.sql" . }}
{{ template "functions/input_checks_v5.sql" . }}

SELECT pg_catalog.pg_advisory_xact_lock(1279655936, 1);
INSERT INTO durable_jobs.control_evidence_record (evidence_kind, queue_name, previous_values, new_values, change_reason)
VALUES ('migration_applied', NULL, NULL, '{"migration_version": 21, "migration_name": "021_one_place_for_the_reason_code_rule"}',
        COALESCE(NULLIF(pg_catalog.current_setting('leasefence.migration_reason', true), ''), 'leasefence bundle migration'));

---- create above / drop below ----

{{ template "functions/input_checks_v4.sql" . }}
DROP FUNCTION durable_jobs.failure_reason_code_is_well_formed(text);
DROP FUNCTION durable_jobs.failure_reason_code_pattern();

SELECT pg_catalog.pg_advisory_xact_lock(1279655936, 1);
INSERT INTO durable_jobs.control_evidence_record (evidence_kind, queue_name, previous_values, new_values, change_reason)
VALUES ('migration_reverted', NULL, NULL, '{"migration_version": 21, "migration_name": "021_one_place_for_the_reason_code_rule"}',
        COALESCE(NULLIF(pg_catalog.current_setting('leasefence.migration_reason', true), ''),
                 'leasefence bundle migration rolled back'));
