-- Rules, version 3 (migration 021): the failure reason code's rule joins
-- the other two names' (rules.sql, rules_v2.sql), so require_well_formed
-- (input_checks_v5.sql) tests all three the same way from one place; until
-- 021 it wrote the reason code's test and pattern inline. Nothing else
-- changes. Like the others: LANGUAGE sql bodies bound at creation, not
-- SECURITY DEFINER, no SET, not STRICT, so PostgreSQL inlines them; EXECUTE
-- for the definer roles only. job_record's CHECK
-- job_record_failure_reason_code_format keeps its literal, as the queue
-- name's CHECKs do (rules.sql says why); sql/tests/25_rules.sql checks that
-- it, the rule and require_well_formed answer every edge case as the
-- contract's pattern does.

-- failure_reason_code_pattern: the contract's failure reason code pattern.
-- Takes no lock.
CREATE FUNCTION durable_jobs.failure_reason_code_pattern()
RETURNS text
LANGUAGE sql
IMMUTABLE PARALLEL SAFE
RETURN '^[a-z][a-z0-9_]{0,62}$';

-- failure_reason_code_is_well_formed: p_failure_reason_code matches
-- failure_reason_code_pattern byte for byte (COLLATE "C"), tested as
-- rules_v2.sql tests the other names: at most 63 bytes and the pattern
-- with * for its bounded repeat. NULL in, NULL out. Takes no lock.
CREATE FUNCTION durable_jobs.failure_reason_code_is_well_formed(p_failure_reason_code text)
RETURNS boolean
LANGUAGE sql
IMMUTABLE PARALLEL SAFE
RETURN pg_catalog.octet_length(p_failure_reason_code) OPERATOR(pg_catalog.<=) 63
   AND (p_failure_reason_code COLLATE "C") OPERATOR(pg_catalog.~) '^[a-z][a-z0-9_]*$';

REVOKE ALL ON FUNCTION durable_jobs.failure_reason_code_pattern() FROM PUBLIC;
REVOKE ALL ON FUNCTION durable_jobs.failure_reason_code_is_well_formed(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.failure_reason_code_pattern() TO
    durable_job_producer_owner, durable_job_claim_owner, durable_job_renewal_owner,
    durable_job_terminal_owner, durable_job_policy_owner, durable_job_retention_owner, durable_job_audit_owner;
GRANT EXECUTE ON FUNCTION durable_jobs.failure_reason_code_is_well_formed(text) TO
    durable_job_producer_owner, durable_job_claim_owner, durable_job_renewal_owner,
    durable_job_terminal_owner, durable_job_policy_owner, durable_job_retention_owner, durable_job_audit_owner;
