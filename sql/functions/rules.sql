-- Rules: one SQL function for each rule that several functions apply, so each rule is written in one place.
--
-- The current definition of each function of this family, edited in place.
-- A change reaches databases through a new migration that includes this
-- file; released migrations hold their own frozen copy (see sql/doc.go).
--
-- Below, the notes written with the versions the current definitions come
-- from, newest first. They name the files as they were then; each
-- migration's frozen SQL under sql/migrations holds the whole text.

-- Notes of migration 021 (rules_v3.sql in its frozen SQL):
--
-- Rules, version 3 (migration 021): the failure reason code's rule joins
-- the other two names' (rules.sql, rules_v2.sql), so require_well_formed
-- (input_checks_v5.sql) tests all three the same way from one place; until
-- 021 it wrote the reason code's test and pattern inline. Nothing else
-- changes. Like the others: LANGUAGE sql bodies bound at creation, not
-- SECURITY DEFINER, no SET, not STRICT, so PostgreSQL inlines them; EXECUTE
-- for the definer roles only. job_record's CHECK
-- job_record_failure_reason_code_format keeps its literal, as the queue
-- name's CHECKs do (rules.sql says why); sql/tests/03_rules.sql checks that
-- it, the rule and require_well_formed answer every edge case as the
-- contract's pattern does.

-- Notes of migration 018 (rules_v2.sql in its frozen SQL):
--
-- Rules, version 2 (migration 018): the two pattern tests match without a
-- bounded repeat. queue_name_pattern() and worker_owner_id_pattern() stay
-- the contract's patterns, word for word (they are what an error's HINT
-- shows and what goclient's copy is checked against); only how a value is
-- tested against them changes.
--
-- Why: PostgreSQL's regular-expression engine builds the automaton of a
-- pattern's bounded repeat ({0,62}, {0,127}) one state per repetition and
-- rebuilds its DFA states on every match, so each test of a name against
-- the contract's pattern cost microseconds, more the longer the name: an
-- owner id 5.3 us at 14 characters, 13 at 25, 39 at 128; a 15-character
-- queue name 3 to 5; against 0.5 to 0.8 at any length for the same test
-- without the bounded repeat (migration 018's header gives the runs).
-- Every claim tested two names, every renewal and completion the owner id.
--
-- The test is the same language: for a pattern ^[A][B]{0,n}$ whose
-- bracket sets A and B hold ASCII characters only, a value matches it
-- exactly when it matches ^[A][B]*$ (then every character is one byte)
-- and has at most n + 1 bytes. The byte length is tested first (a value
-- longer than any name is refused without running the regex). NULL in,
-- NULL out, as before. sql/tests/03_rules.sql checks the answers against
-- the contract's patterns on every edge case; goclient's
-- TestGoCopiesOfTheRulesEqualTheDatabaseRules on 2,000 random names.
-- Everything else about them (inlined, no SECURITY DEFINER, no SET, the
-- grants) is as rules.sql says.

-- Notes of migration 016 (rules.sql in its frozen SQL):
--
-- Rules, version 1 (migration 016): one SQL function for each rule that
-- several functions apply, so the rule is written in one place.
--
-- Each is LANGUAGE sql with a body bound at creation (RETURN / BEGIN
-- ATOMIC), not SECURITY DEFINER and without a SET clause, so that
-- PostgreSQL inlines it into the statement that uses it: the claim and
-- renewal paths pay no function call for it (sql/tests/03_rules.sql checks
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
-- 03_rules.sql checks that the three CHECKs hold exactly
-- queue_name_pattern().

-- queue_name_pattern: the contract's queue-name pattern. Takes no lock.
CREATE OR REPLACE FUNCTION durable_jobs.queue_name_pattern()
RETURNS text
LANGUAGE sql
IMMUTABLE PARALLEL SAFE
RETURN '^[a-z][a-z0-9_.:-]{0,62}$';

REVOKE ALL ON FUNCTION durable_jobs.queue_name_pattern() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.queue_name_pattern() TO durable_job_producer_owner, durable_job_claim_owner, durable_job_renewal_owner, durable_job_terminal_owner, durable_job_policy_owner, durable_job_retention_owner, durable_job_audit_owner;

-- queue_name_is_well_formed: p_queue_name matches queue_name_pattern byte
-- for byte (COLLATE "C"). NULL in, NULL out. Takes no lock.
CREATE OR REPLACE FUNCTION durable_jobs.queue_name_is_well_formed(p_queue_name text)
RETURNS boolean
LANGUAGE sql
IMMUTABLE PARALLEL SAFE
RETURN pg_catalog.octet_length(p_queue_name) OPERATOR(pg_catalog.<=) 63
   AND (p_queue_name COLLATE "C") OPERATOR(pg_catalog.~) '^[a-z][a-z0-9_.:-]*$';

REVOKE ALL ON FUNCTION durable_jobs.queue_name_is_well_formed(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.queue_name_is_well_formed(text) TO durable_job_producer_owner, durable_job_claim_owner, durable_job_renewal_owner, durable_job_terminal_owner, durable_job_policy_owner, durable_job_retention_owner, durable_job_audit_owner;

-- worker_owner_id_pattern: the contract's worker owner id pattern. Takes no
-- lock.
CREATE OR REPLACE FUNCTION durable_jobs.worker_owner_id_pattern()
RETURNS text
LANGUAGE sql
IMMUTABLE PARALLEL SAFE
RETURN '^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$';

REVOKE ALL ON FUNCTION durable_jobs.worker_owner_id_pattern() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.worker_owner_id_pattern() TO durable_job_producer_owner, durable_job_claim_owner, durable_job_renewal_owner, durable_job_terminal_owner, durable_job_policy_owner, durable_job_retention_owner, durable_job_audit_owner;

-- worker_owner_id_is_well_formed: p_worker_owner_id matches
-- worker_owner_id_pattern byte for byte (COLLATE "C"). NULL in, NULL out.
-- Takes no lock.
CREATE OR REPLACE FUNCTION durable_jobs.worker_owner_id_is_well_formed(p_worker_owner_id text)
RETURNS boolean
LANGUAGE sql
IMMUTABLE PARALLEL SAFE
RETURN pg_catalog.octet_length(p_worker_owner_id) OPERATOR(pg_catalog.<=) 128
   AND (p_worker_owner_id COLLATE "C") OPERATOR(pg_catalog.~) '^[A-Za-z0-9][A-Za-z0-9._:-]*$';

REVOKE ALL ON FUNCTION durable_jobs.worker_owner_id_is_well_formed(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.worker_owner_id_is_well_formed(text) TO durable_job_producer_owner, durable_job_claim_owner, durable_job_renewal_owner, durable_job_terminal_owner, durable_job_policy_owner, durable_job_retention_owner, durable_job_audit_owner;

-- failure_reason_code_pattern: the contract's failure reason code pattern.
-- Takes no lock.
CREATE OR REPLACE FUNCTION durable_jobs.failure_reason_code_pattern()
RETURNS text
LANGUAGE sql
IMMUTABLE PARALLEL SAFE
RETURN '^[a-z][a-z0-9_]{0,62}$';

REVOKE ALL ON FUNCTION durable_jobs.failure_reason_code_pattern() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.failure_reason_code_pattern() TO durable_job_producer_owner, durable_job_claim_owner, durable_job_renewal_owner, durable_job_terminal_owner, durable_job_policy_owner, durable_job_retention_owner, durable_job_audit_owner;

-- failure_reason_code_is_well_formed: p_failure_reason_code matches
-- failure_reason_code_pattern byte for byte (COLLATE "C"), tested as
-- queue_name_is_well_formed tests the other names: at most 63 bytes and the pattern
-- with * for its bounded repeat. NULL in, NULL out. Takes no lock.
CREATE OR REPLACE FUNCTION durable_jobs.failure_reason_code_is_well_formed(p_failure_reason_code text)
RETURNS boolean
LANGUAGE sql
IMMUTABLE PARALLEL SAFE
RETURN pg_catalog.octet_length(p_failure_reason_code) OPERATOR(pg_catalog.<=) 63
   AND (p_failure_reason_code COLLATE "C") OPERATOR(pg_catalog.~) '^[a-z][a-z0-9_]*$';

REVOKE ALL ON FUNCTION durable_jobs.failure_reason_code_is_well_formed(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.failure_reason_code_is_well_formed(text) TO durable_job_producer_owner, durable_job_claim_owner, durable_job_renewal_owner, durable_job_terminal_owner, durable_job_policy_owner, durable_job_retention_owner, durable_job_audit_owner;

-- effective_lease_policy_queue: which row of queue_lease_policy applies to
-- a queue: the queue's own name when it has a policy, else '*' (then no
-- row applies when '*' is missing too). One row, one column, so a caller
-- reads the policy columns it may read itself (each definer role may read
-- only some of them) by joining queue_lease_policy on it. A set-returning
-- function because PostgreSQL inlines a SQL function with a subquery only
-- where it is used in FROM (not STRICT, not VOLATILE). Reads as of the
-- calling statement's snapshot; takes no lock.
CREATE OR REPLACE FUNCTION durable_jobs.effective_lease_policy_queue(p_queue_name text)
RETURNS TABLE (policy_queue_name text)
LANGUAGE sql
STABLE PARALLEL SAFE
BEGIN ATOMIC
    SELECT COALESCE(
        (SELECT q.queue_name FROM durable_jobs.queue_lease_policy q WHERE q.queue_name OPERATOR(pg_catalog.=) p_queue_name),
        '*');
END;

REVOKE ALL ON FUNCTION durable_jobs.effective_lease_policy_queue(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.effective_lease_policy_queue(text) TO durable_job_claim_owner, durable_job_renewal_owner, durable_job_policy_owner, durable_job_audit_owner;
