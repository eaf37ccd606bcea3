-- Rules, version 1 (migration 016): one SQL function for each rule that
-- several functions apply, so the rule is written in one place.
--
-- Each is LANGUAGE sql with a body bound at creation (RETURN / BEGIN
-- ATOMIC), not SECURITY DEFINER and without a SET clause, so that
-- PostgreSQL inlines it into the statement that uses it: the claim and
-- renewal paths pay no function call for it (sql/tests/25_rules.sql checks
-- that no call is made). Every name is schema-qualified and every operator
-- written OPERATOR(pg_catalog.x), so the body means the same under any
-- search_path. PostgreSQL inlines a function only for a role that may
-- execute it, so EXECUTE goes to the definer roles whose functions use it
-- (for the patterns, every role that may run require_well_formed), never
-- to PUBLIC or a runtime role. The table CHECKs that repeat the queue
-- pattern (job_record, queue_lease_policy, queue_retention_policy) keep
-- their literal pattern: a CHECK that called the rule would be evaluated
-- on every row written, by every role that writes job_record (each would
-- then need EXECUTE), and a later CREATE OR REPLACE of the rule would change
-- what the CHECK means without checking the rows already stored.
-- 25_rules.sql checks that the three CHECKs hold exactly
-- queue_name_pattern().

-- queue_name_pattern: the contract's queue-name pattern. Takes no lock.
CREATE FUNCTION durable_jobs.queue_name_pattern()
RETURNS text
LANGUAGE sql
IMMUTABLE PARALLEL SAFE
RETURN '^[a-z][a-z0-9_.:-]{0,62}$';

-- queue_name_is_well_formed: p_queue_name matches queue_name_pattern byte
-- for byte (COLLATE "C"). NULL in, NULL out. Takes no lock.
CREATE FUNCTION durable_jobs.queue_name_is_well_formed(p_queue_name text)
RETURNS boolean
LANGUAGE sql
IMMUTABLE PARALLEL SAFE
RETURN (p_queue_name COLLATE "C") OPERATOR(pg_catalog.~) durable_jobs.queue_name_pattern();

-- worker_owner_id_pattern: the contract's worker owner id pattern. Takes no
-- lock.
CREATE FUNCTION durable_jobs.worker_owner_id_pattern()
RETURNS text
LANGUAGE sql
IMMUTABLE PARALLEL SAFE
RETURN '^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$';

-- worker_owner_id_is_well_formed: p_worker_owner_id matches
-- worker_owner_id_pattern byte for byte (COLLATE "C"). NULL in, NULL out.
-- Takes no lock.
CREATE FUNCTION durable_jobs.worker_owner_id_is_well_formed(p_worker_owner_id text)
RETURNS boolean
LANGUAGE sql
IMMUTABLE PARALLEL SAFE
RETURN (p_worker_owner_id COLLATE "C") OPERATOR(pg_catalog.~) durable_jobs.worker_owner_id_pattern();

-- effective_lease_policy_queue: which row of queue_lease_policy applies to
-- a queue: the queue's own name when it has a policy, else '*' (then no
-- row applies when '*' is missing too). One row, one column, so a caller
-- reads the policy columns it may read itself (each definer role may read
-- only some of them) by joining queue_lease_policy on it. A set-returning
-- function because PostgreSQL inlines a SQL function with a subquery only
-- where it is used in FROM (not STRICT, not VOLATILE). Reads as of the
-- calling statement's snapshot; takes no lock.
CREATE FUNCTION durable_jobs.effective_lease_policy_queue(p_queue_name text)
RETURNS TABLE (policy_queue_name text)
LANGUAGE sql
STABLE PARALLEL SAFE
BEGIN ATOMIC
    SELECT COALESCE(
        (SELECT q.queue_name FROM durable_jobs.queue_lease_policy q WHERE q.queue_name OPERATOR(pg_catalog.=) p_queue_name),
        '*');
END;

REVOKE ALL ON FUNCTION durable_jobs.queue_name_pattern() FROM PUBLIC;
REVOKE ALL ON FUNCTION durable_jobs.queue_name_is_well_formed(text) FROM PUBLIC;
REVOKE ALL ON FUNCTION durable_jobs.worker_owner_id_pattern() FROM PUBLIC;
REVOKE ALL ON FUNCTION durable_jobs.worker_owner_id_is_well_formed(text) FROM PUBLIC;
REVOKE ALL ON FUNCTION durable_jobs.effective_lease_policy_queue(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.queue_name_pattern() TO
    durable_job_producer_owner, durable_job_claim_owner, durable_job_renewal_owner,
    durable_job_terminal_owner, durable_job_policy_owner, durable_job_retention_owner, durable_job_audit_owner;
GRANT EXECUTE ON FUNCTION durable_jobs.queue_name_is_well_formed(text) TO
    durable_job_producer_owner, durable_job_claim_owner, durable_job_renewal_owner,
    durable_job_terminal_owner, durable_job_policy_owner, durable_job_retention_owner, durable_job_audit_owner;
GRANT EXECUTE ON FUNCTION durable_jobs.worker_owner_id_pattern() TO
    durable_job_producer_owner, durable_job_claim_owner, durable_job_renewal_owner,
    durable_job_terminal_owner, durable_job_policy_owner, durable_job_retention_owner, durable_job_audit_owner;
GRANT EXECUTE ON FUNCTION durable_jobs.worker_owner_id_is_well_formed(text) TO
    durable_job_producer_owner, durable_job_claim_owner, durable_job_renewal_owner,
    durable_job_terminal_owner, durable_job_policy_owner, durable_job_retention_owner, durable_job_audit_owner;
GRANT EXECUTE ON FUNCTION durable_jobs.effective_lease_policy_queue(text) TO
    durable_job_claim_owner, durable_job_renewal_owner, durable_job_policy_owner, durable_job_audit_owner;
