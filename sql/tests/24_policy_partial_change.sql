-- 24_policy_partial_change: migration 016 (functions/policy.sql).
-- update_queue_lease_policy changes only the settings given and keeps the
-- others from the queue's effective policy (its own row, else '*'), read
-- after the evidence-order lock; it returns the policy as written and is
-- granted to operators only. Bad input is refused with the documented
-- SQLSTATE and changes nothing: LF003 outside READ COMMITTED; LF002 for a
-- malformed queue name, a bad change record, bounds the filled-in policy
-- breaks, and a setting left out when the queue has no policy and there is
-- no '*'. The two-session race is cmd/leasectl's
-- TestPolicySetKeepsAChangeCommittedMeanwhile.
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
SELECT plan(32);
COMMIT;

-- A snapshot older than the statement is refused (nothing above writes data).
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT throws_ok(
    $$SELECT * FROM durable_jobs.update_queue_lease_policy('t24_rr', NULL, NULL, NULL, false, 'CHG-24: repeatable read', NULL, NULL)$$,
    'LF003', 'update_queue_lease_policy must run in a READ COMMITTED transaction',
    'a REPEATABLE READ caller is refused with LF003');
COMMIT;
BEGIN ISOLATION LEVEL SERIALIZABLE;
SELECT throws_ok(
    $$SELECT * FROM durable_jobs.update_queue_lease_policy('t24_rr', NULL, NULL, NULL, false, 'CHG-24: serializable', NULL, NULL)$$,
    'LF003', 'update_queue_lease_policy must run in a READ COMMITTED transaction',
    'a SERIALIZABLE caller is refused with LF003');
COMMIT;

BEGIN;
SELECT is_empty($$SELECT 1 FROM durable_jobs.queue_lease_policy WHERE queue_name = 't24_rr'$$,
    'the refused calls wrote no policy');

CREATE FUNCTION pg_temp.t24_state()
RETURNS text LANGUAGE sql AS $$
    SELECT COALESCE(string_agg(row(p.*)::text, ';' ORDER BY p.queue_name), '')
        || ' evidence=' || (SELECT count(*) FROM durable_jobs.control_evidence_record)
    FROM durable_jobs.queue_lease_policy p;
$$;
CREATE TEMP TABLE t24_mark (mark_value text NOT NULL);
GRANT ALL ON t24_mark TO PUBLIC;

-- Shape and privileges -------------------------------------------------------------

SELECT is((SELECT p.prosecdef FROM pg_proc p
           WHERE p.oid = 'durable_jobs.update_queue_lease_policy(text, interval, interval, interval, boolean, text, text, text)'::regprocedure),
    true, 'update_queue_lease_policy is SECURITY DEFINER');
SELECT is((SELECT p.proowner::regrole::text FROM pg_proc p
           WHERE p.oid = 'durable_jobs.update_queue_lease_policy(text, interval, interval, interval, boolean, text, text, text)'::regprocedure),
    'durable_job_policy_owner', 'it is owned by the policy owner, like set_queue_lease_policy');
SELECT ok(has_function_privilege('durable_job_operator',
    'durable_jobs.update_queue_lease_policy(text, interval, interval, interval, boolean, text, text, text)', 'EXECUTE'),
    'an operator may execute it');
SELECT ok(NOT has_function_privilege('public',
    'durable_jobs.update_queue_lease_policy(text, interval, interval, interval, boolean, text, text, text)', 'EXECUTE'),
    'PUBLIC may not');
INSERT INTO t24_mark VALUES (pg_temp.t24_state());
SET LOCAL ROLE durable_job_auditor;
SELECT throws_ok($$SELECT * FROM durable_jobs.update_queue_lease_policy('t24_q', NULL, NULL, NULL, false, 'CHG-24: auditor', NULL, NULL)$$,
    '42501', NULL, 'an auditor cannot change a policy');
RESET ROLE;
SET LOCAL ROLE durable_job_worker;
SELECT throws_ok($$SELECT * FROM durable_jobs.update_queue_lease_policy('t24_q', NULL, NULL, NULL, false, 'CHG-24: worker', NULL, NULL)$$,
    '42501', NULL, 'a worker cannot change a policy');
RESET ROLE;
SET LOCAL ROLE durable_job_producer;
SELECT throws_ok($$SELECT * FROM durable_jobs.update_queue_lease_policy('t24_q', NULL, NULL, NULL, false, 'CHG-24: producer', NULL, NULL)$$,
    '42501', NULL, 'a producer cannot change a policy');
RESET ROLE;
SELECT is(pg_temp.t24_state(), (SELECT mark_value FROM t24_mark), 'the refused callers changed nothing');

-- Partial changes ------------------------------------------------------------------

SET LOCAL ROLE durable_job_operator;
SELECT results_eq(
    $$SELECT queue_name, lease_duration, renewal_interval, max_claim_lifetime, renewal_enabled
      FROM durable_jobs.update_queue_lease_policy('t24_q', interval '90 seconds', NULL, NULL, NULL, 'CHG-24: longer lease', NULL, NULL)$$,
    $$VALUES ('t24_q'::text, interval '90 seconds', interval '10 seconds', interval '24 hours', true)$$,
    'a queue without its own policy keeps the default''s other settings, and the change returns what it wrote');
SELECT results_eq(
    $$SELECT queue_name, lease_duration, renewal_interval, max_claim_lifetime, renewal_enabled
      FROM durable_jobs.update_queue_lease_policy('t24_q', NULL, NULL, NULL, false, 'CHG-25: stop renewals', NULL, NULL)$$,
    $$VALUES ('t24_q'::text, interval '90 seconds', interval '10 seconds', interval '24 hours', false)$$,
    'a queue with its own policy keeps its own other settings');
RESET ROLE;
SELECT results_eq(
    $$SELECT lease_duration, renewal_interval, max_claim_lifetime, renewal_enabled
      FROM durable_jobs.queue_lease_policy WHERE queue_name = 't24_q'$$,
    $$VALUES (interval '90 seconds', interval '10 seconds', interval '24 hours', false)$$,
    'the table holds what the change returned');
SELECT results_eq(
    $$SELECT evidence_kind, previous_values->>'lease_duration', new_values->>'lease_duration', change_reason, change_ticket
      FROM durable_jobs.control_evidence_record WHERE queue_name = 't24_q' ORDER BY evidence_record_id$$,
    $$VALUES ('lease_policy_changed'::text, '00:00:30'::text, '00:01:30'::text, 'CHG-24: longer lease'::text, 'CHG-24'::text),
             ('lease_policy_changed', '00:01:30', '00:01:30', 'CHG-25: stop renewals', 'CHG-25'),
             ('renewal_enablement_changed', NULL, NULL, 'CHG-25: stop renewals', 'CHG-25')$$,
    'each change is recorded as control evidence (previous values the effective ones), the ticket parsed from the reason');
SET LOCAL ROLE durable_job_operator;
SELECT results_eq(
    $$SELECT queue_name, renewal_interval, max_claim_lifetime
      FROM durable_jobs.update_queue_lease_policy('*', NULL, interval '5 seconds', NULL, NULL, 'pgTAP 24 default', 'CHG-26', NULL)$$,
    $$VALUES ('*'::text, interval '5 seconds', interval '24 hours')$$,
    'the default ''*'' is changed the same way, with an explicit ticket');
RESET ROLE;
SELECT is((SELECT change_ticket FROM durable_jobs.control_evidence_record
           WHERE queue_name = '*' ORDER BY evidence_record_id DESC LIMIT 1),
    'CHG-26', 'the explicit ticket is recorded');

-- Bad input: the documented SQLSTATE, nothing changed ------------------------------

DELETE FROM t24_mark;
INSERT INTO t24_mark VALUES (pg_temp.t24_state());
SET LOCAL ROLE durable_job_operator;
SELECT throws_ok($$SELECT * FROM durable_jobs.update_queue_lease_policy('t24_q', interval '20 seconds', NULL, NULL, NULL, 'CHG-27: short', NULL, NULL)$$,
    'LF002', 'invalid lease policy', 'a lease the kept renewal interval is more than a third of is refused with LF002');
SELECT throws_ok($$SELECT * FROM durable_jobs.update_queue_lease_policy('t24_q', NULL, NULL, interval '8 days', NULL, 'CHG-27: long', NULL, NULL)$$,
    'LF002', 'invalid lease policy', 'a max claim lifetime above 7 days is refused with LF002');
SELECT throws_ok($$SELECT * FROM durable_jobs.update_queue_lease_policy('t24_q', interval '1 mon', NULL, NULL, NULL, 'CHG-27: month', NULL, NULL)$$,
    'LF002', 'invalid lease policy', 'an interval with a month part is refused with LF002');
SELECT throws_ok($$SELECT * FROM durable_jobs.update_queue_lease_policy('T24 Bad', NULL, NULL, NULL, false, 'CHG-27: name', NULL, NULL)$$,
    'LF002', NULL, 'a malformed queue name is refused with LF002');
SELECT throws_ok($$SELECT * FROM durable_jobs.update_queue_lease_policy(NULL, NULL, NULL, NULL, false, 'CHG-27: no name', NULL, NULL)$$,
    'LF002', NULL, 'a NULL queue name is refused with LF002');
SELECT throws_ok($$SELECT * FROM durable_jobs.update_queue_lease_policy('t24_q', NULL, NULL, NULL, true, '   ', NULL, NULL)$$,
    'LF002', 'invalid change record', 'a blank reason is refused with LF002');
SELECT throws_ok($$SELECT * FROM durable_jobs.update_queue_lease_policy('t24_q', NULL, NULL, NULL, true, NULL, NULL, NULL)$$,
    'LF002', 'invalid change record', 'a NULL reason is refused with LF002');
SELECT throws_ok($$SELECT * FROM durable_jobs.update_queue_lease_policy('t24_q', NULL, NULL, NULL, true, 'CHG-27: call 010-1234-5678', NULL, NULL)$$,
    'LF002', 'invalid change record', 'a reason that looks like personal data is refused with LF002');
SELECT throws_ok($$SELECT * FROM durable_jobs.update_queue_lease_policy('t24_q', NULL, NULL, NULL, true, 'resume', 'not a ticket', NULL)$$,
    'LF002', 'invalid change record', 'a ticket that does not match the pattern is refused with LF002');
SELECT throws_ok($$SELECT * FROM durable_jobs.update_queue_lease_policy('t24_q', NULL, NULL, NULL, true, 'CHG-27: resume', NULL, 't24_no_such_login')$$,
    'LF002', 'invalid change record', 'an approver that is no login is refused with LF002');
RESET ROLE;
SELECT is(pg_temp.t24_state(), (SELECT mark_value FROM t24_mark), 'the refused changes changed no policy and wrote no evidence');

-- No policy of the queue's own and no default ----------------------------------

SELECT set_config('leasefence.change_reason', 'pgTAP 24: remove the default', true);
SELECT set_config('leasefence.change_ticket', 'CHG-28', true);
DELETE FROM durable_jobs.queue_lease_policy WHERE queue_name = '*';
SELECT set_config('leasefence.change_reason', '', true);
SELECT set_config('leasefence.change_ticket', '', true);
DELETE FROM t24_mark;
INSERT INTO t24_mark VALUES (pg_temp.t24_state());
SET LOCAL ROLE durable_job_operator;
SELECT throws_ok($$SELECT * FROM durable_jobs.update_queue_lease_policy('t24_new', interval '30 seconds', NULL, NULL, NULL, 'CHG-29: new queue', NULL, NULL)$$,
    'LF002', 'invalid lease policy', 'a setting left out with no policy of the queue''s own and no ''*'' is refused with LF002');
RESET ROLE;
SELECT is(pg_temp.t24_state(), (SELECT mark_value FROM t24_mark), 'that refusal changed nothing');
SET LOCAL ROLE durable_job_operator;
SELECT results_eq(
    $$SELECT queue_name, lease_duration FROM durable_jobs.update_queue_lease_policy('t24_new', interval '30 seconds',
          interval '10 seconds', interval '1 hour', true, 'CHG-29: new queue', NULL, NULL)$$,
    $$VALUES ('t24_new'::text, interval '30 seconds')$$,
    'every setting given, a queue needs no policy to start from');
SELECT results_eq(
    $$SELECT lease_duration, renewal_enabled FROM durable_jobs.update_queue_lease_policy('t24_q', NULL, NULL, NULL, true,
          'CHG-30: resume', NULL, NULL)$$,
    $$VALUES (interval '90 seconds', true)$$,
    'a queue with its own policy needs no default');
RESET ROLE;

SELECT * FROM finish();
ROLLBACK;
