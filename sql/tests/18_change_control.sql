-- 18_change_control: migration 015 (functions/change_control.sql).
-- The change-control setting: its defaults keep the rules fixed before
-- (ticket ^[A-Z][A-Z0-9]+-[0-9]+$, no approver required, self-approval
-- refused; since migration 026 an approver must hold durable_job_operator);
-- only an operator sets it, with a structured change record, and
-- the change is control evidence; a pattern that is too long, empty or not a
-- regular expression is refused with LF003 and changes nothing; every change
-- record (lease policy, direct policy-table change, retention, change
-- control) is then checked against the new setting with LF002. A
-- migration's own evidence record is checked against it too.
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
SELECT plan(51);

-- Since migration 026 an approver must hold durable_job_operator.
CREATE ROLE t18a_approver LOGIN IN ROLE durable_job_operator;
CREATE ROLE t18a_nologin NOLOGIN IN ROLE durable_job_operator;
CREATE ROLE t18a_worker_login LOGIN IN ROLE durable_job_worker;

CREATE FUNCTION pg_temp.t18a_state()
RETURNS text LANGUAGE sql AS $$
    SELECT row(s.ticket_pattern, s.require_approver, s.approver_must_differ, s.changed_at)::text
        || ' evidence=' || (SELECT count(*) FROM durable_jobs.control_evidence_record)
    FROM durable_jobs.change_control_setting s;
$$;
CREATE TEMP TABLE t18a_mark (mark_value text NOT NULL);
GRANT ALL ON t18a_mark TO PUBLIC;
INSERT INTO t18a_mark VALUES (pg_temp.t18a_state());

-- Defaults and who may read and change the setting -------------------------------

SET LOCAL ROLE durable_job_auditor;
SELECT results_eq($$SELECT ticket_pattern, require_approver, approver_must_differ, require_second_operator, proposal_lifetime
                     FROM durable_jobs.change_control()$$,
    $$VALUES ('^[A-Z][A-Z0-9]+-[0-9]+$'::text, false, true, false, interval '24 hours')$$,
    'the defaults are the rules fixed before migration 015: the ticket pattern, no approver required, self-approval refused; and (migration 026) no maker-checker, a proposal lifetime of 24 hours');
SELECT throws_ok($$SELECT durable_jobs.set_change_control('^X-[0-9]+$', false, true, 'CHG-1 auditor', NULL)$$,
    '42501', NULL, 'an auditor cannot change the setting');
RESET ROLE;
SET LOCAL ROLE durable_job_worker;
SELECT throws_ok($$SELECT durable_jobs.set_change_control('^X-[0-9]+$', false, true, 'CHG-1 worker', NULL)$$,
    '42501', NULL, 'a worker cannot change the setting');
RESET ROLE;
SET LOCAL ROLE durable_job_producer;
SELECT throws_ok($$SELECT durable_jobs.set_change_control('^X-[0-9]+$', false, true, 'CHG-1 producer', NULL)$$,
    '42501', NULL, 'a producer cannot change the setting');
RESET ROLE;

-- Bad settings: LF003, nothing changes -------------------------------------------

SET LOCAL ROLE durable_job_operator;
SELECT throws_ok($$SELECT durable_jobs.set_change_control('([A-Z', false, true, 'CHG-1 broken pattern', NULL)$$,
    'LF003', 'invalid change control', 'a ticket pattern that is not a regular expression is refused with LF003');
SELECT throws_ok(format('SELECT durable_jobs.set_change_control(%L, false, true, %L, NULL)', repeat('A', 201), 'CHG-1 long'),
    'LF003', 'invalid change control', 'a ticket pattern longer than 200 characters is refused with LF003');
SELECT throws_ok($$SELECT durable_jobs.set_change_control('', false, true, 'CHG-1 empty pattern', NULL)$$,
    'LF003', 'invalid change control', 'an empty ticket pattern is refused with LF003');
SELECT throws_ok($$SELECT durable_jobs.set_change_control(NULL, false, true, 'CHG-1 no pattern', NULL)$$,
    'LF003', 'invalid change control', 'a NULL ticket pattern is refused with LF003');
SELECT throws_ok($$SELECT durable_jobs.set_change_control('^X-[0-9]+$', NULL, true, 'CHG-1 no flag', NULL)$$,
    'LF003', 'invalid change control', 'a NULL require_approver is refused with LF003');
SELECT throws_ok($$SELECT durable_jobs.set_change_control('^X-[0-9]+$', false, NULL, 'CHG-1 no flag', NULL)$$,
    'LF003', 'invalid change control', 'a NULL approver_must_differ is refused with LF003');
SELECT throws_ok($$SELECT durable_jobs.set_change_control('^X-[0-9]+$', false, true, 'CHG-1 call 010-1234-5678', NULL)$$,
    'LF002', 'invalid change record', 'a change-control change whose reason looks like personal data is refused with LF002');
SELECT throws_ok($$SELECT durable_jobs.set_change_control('^X-[0-9]+$', false, true, 'ordinary reason', 'not a ticket')$$,
    'LF002', 'invalid change record', 'a change-control change is checked against the pattern in force before it');
RESET ROLE;
SELECT is(pg_temp.t18a_state(), (SELECT mark_value FROM t18a_mark), 'the refused settings changed nothing and wrote no evidence');

-- A valid change is control evidence ----------------------------------------------

SET LOCAL ROLE durable_job_operator;
SELECT lives_ok($$SELECT durable_jobs.set_change_control('^CHG[0-9]{7}$', true, true, 'tighter change control', 'SEC-23', 't18a_approver')$$,
    'an operator sets a new pattern and requires an approver, with a ticket of the old pattern and an approver');
RESET ROLE;
SELECT results_eq(
    $$SELECT evidence_kind, queue_name, previous_values, new_values, change_reason, change_ticket, change_approver, changed_by_role = session_user
      FROM durable_jobs.control_evidence_record ORDER BY evidence_record_id DESC LIMIT 1$$,
    $$VALUES ('change_control_changed'::text, NULL::text,
              '{"ticket_pattern": "^[A-Z][A-Z0-9]+-[0-9]+$", "require_approver": false, "approver_must_differ": true, "reason_pattern": null, "require_second_operator": false, "proposal_lifetime": "24:00:00"}'::jsonb,
              '{"ticket_pattern": "^CHG[0-9]{7}$", "require_approver": true, "approver_must_differ": true, "reason_pattern": null, "require_second_operator": false, "proposal_lifetime": "24:00:00"}'::jsonb,
              'tighter change control'::text, 'SEC-23'::text, 't18a_approver'::text, true)$$,
    'the change is one change_control_changed record with every setting before and after (since migration 026 all six, the maker-checker pair included, written by the table''s trigger), reason, ticket, approver and login');
SELECT results_eq($$SELECT ticket_pattern, require_approver, approver_must_differ, changed_by_role = session_user FROM durable_jobs.change_control()$$,
    $$VALUES ('^CHG[0-9]{7}$'::text, true, true, true)$$, 'the setting holds the new values and who set them');

-- Every change record is checked against the new setting ---------------------------

SET LOCAL ROLE durable_job_operator;
SELECT throws_ok($$SELECT durable_jobs.set_queue_lease_policy('t18a.q', '30 s', '10 s', '1 h', true, 'longer lease', 'SEC-23', 't18a_approver')$$,
    'LF002', 'invalid change record', 'a ticket of the old pattern is now refused');
SELECT throws_ok($$SELECT durable_jobs.set_queue_lease_policy('t18a.q', '30 s', '10 s', '1 h', true, 'longer lease', 'CHG0000023', NULL)$$,
    'LF002', 'invalid change record', 'a policy change without an approver is refused when an approver is required');
SELECT throws_ok($$SELECT durable_jobs.set_queue_lease_policy('t18a.q', '30 s', '10 s', '1 h', true, 'longer lease')$$,
    'LF002', 'invalid change record', 'the contract overload, which has no approver, is refused when an approver is required');
SELECT throws_ok(format('SELECT durable_jobs.set_queue_lease_policy(%L, %L, %L, %L, true, %L, %L, %L)',
        't18a.q', '30 s', '10 s', '1 h', 'longer lease', 'CHG0000023', session_user),
    'LF002', 'invalid change record', 'the changing login cannot approve its own change when approver_must_differ is set');
SELECT throws_ok($$SELECT durable_jobs.set_queue_lease_policy('t18a.q', '30 s', '10 s', '1 h', true, 'longer lease', 'CHG0000023', 't18a_nologin')$$,
    'LF002', 'invalid change record', 'an approver that is not a login is refused');
SELECT throws_ok($$SELECT durable_jobs.set_queue_lease_policy('t18a.q', '30 s', '10 s', '1 h', true, 'longer lease', 'CHG0000023', 't18a_worker_login')$$,
    'LF002', 'invalid change record', 'a login that does not hold durable_job_operator (a worker''s) is refused as approver (migration 026)');
SELECT throws_ok($$SELECT durable_jobs.set_queue_retention_policy('t18a.q', '2 days', '10 days', 'CHG0000023 shorter retention')$$,
    'LF002', 'invalid change record', 'a retention change, which carries no approver, is refused when an approver is required');
SELECT throws_ok($$SELECT durable_jobs.set_change_control('^CHG[0-9]{7}$', false, true, 'loosen', 'CHG0000023')$$,
    'LF002', 'invalid change record', 'loosening change control itself needs an approver while one is required');
SELECT lives_ok($$SELECT durable_jobs.set_queue_lease_policy('t18a.q', '30 s', '10 s', '1 h', true, 'longer lease', 'CHG0000023', 't18a_approver')$$,
    'a policy change with a ticket of the new pattern and another login as approver is accepted');
RESET ROLE;
SELECT results_eq(
    $$SELECT change_ticket, change_approver FROM durable_jobs.control_evidence_record
      WHERE queue_name = 't18a.q' AND evidence_kind = 'lease_policy_changed'$$,
    $$VALUES ('CHG0000023'::text, 't18a_approver'::text)$$, 'the accepted change is recorded with its ticket and approver');
SELECT throws_ok($$UPDATE durable_jobs.queue_lease_policy SET renewal_enabled = false WHERE queue_name = 't18a.q'$$,
    'LF002', 'invalid change record', 'a direct table change, which names no approver, is refused when an approver is required');

-- approver_must_differ off: the changing login may approve ---------------------------

SET LOCAL ROLE durable_job_operator;
SELECT lives_ok($$SELECT durable_jobs.set_change_control('^CHG[0-9]{7}$', true, false, 'self approval allowed', 'CHG0000024', 't18a_approver')$$,
    'an operator switches approver_must_differ off, with an approver');
SELECT lives_ok(format('SELECT durable_jobs.set_queue_lease_policy(%L, %L, %L, %L, true, %L, %L, %L)',
        't18a.q', '40 s', '10 s', '1 h', 'longer lease', 'CHG0000025', session_user),
    'with approver_must_differ off the changing login may approve its own change');
SELECT throws_ok($$SELECT durable_jobs.set_queue_lease_policy('t18a.q', '30 s', '10 s', '1 h', true, 'longer lease', 'CHG0000026', 't18a_missing')$$,
    'LF002', 'invalid change record', 'an approver that does not exist is still refused');
SELECT throws_ok($$SELECT durable_jobs.set_queue_lease_policy('t18a.q', '30 s', '10 s', '1 h', true, 'longer lease', 'CHG0000026', 't18a_worker_login')$$,
    'LF002', 'invalid change record', 'a worker login is still refused as approver with approver_must_differ off');
RESET ROLE;
SELECT is((SELECT count(*)::integer FROM durable_jobs.control_evidence_record WHERE evidence_kind = 'change_control_changed'), 2,
    'each accepted change-control change wrote exactly one record, each refused one none');
SELECT ok((SELECT s.ticket_pattern = '^CHG[0-9]{7}$' AND s.require_approver AND NOT s.approver_must_differ
           FROM durable_jobs.change_control_setting s), 'the table holds the last accepted setting');

-- The reason pattern (migration 024) ------------------------------------------------

SET LOCAL ROLE durable_job_auditor;
SELECT throws_ok($$SELECT durable_jobs.set_change_reason_pattern('^x$', 'CHG0000030: pattern', 'CHG0000030', 't18a_approver')$$,
    '42501', NULL, 'an auditor cannot set the reason pattern');
RESET ROLE;
SET LOCAL ROLE durable_job_operator;
SELECT is((SELECT reason_pattern FROM durable_jobs.change_control()), NULL,
    'reasons are free text until a pattern is set (change_control() shows NULL)');
SELECT throws_ok(format('SELECT durable_jobs.set_change_reason_pattern(%L, %L, %L, %L)',
        repeat('x', 201), 'CHG0000031: pattern', 'CHG0000031', 't18a_approver'),
    'LF003', 'invalid change control', 'a reason pattern over 200 characters is refused');
SELECT throws_ok($$SELECT durable_jobs.set_change_reason_pattern('(unclosed', 'CHG0000032: pattern', 'CHG0000032', 't18a_approver')$$,
    'LF003', 'invalid change control', 'a reason pattern that is not a regular expression is refused');
SELECT throws_ok($$SELECT durable_jobs.set_change_reason_pattern('^CHG[0-9]{7}: (rollout|rollback)$', 'pattern', 'CHG0000033')$$,
    'LF002', 'invalid change record', 'setting it is a change record like any other (an approver is required here)');
SELECT lives_ok($$SELECT durable_jobs.set_change_reason_pattern('^CHG[0-9]{7}: (rollout|rollback|pattern)$',
        'CHG0000034: pattern', 'CHG0000034', 't18a_approver')$$,
    'an operator limits reasons to a ticket and a fixed vocabulary');
SELECT is((SELECT reason_pattern FROM durable_jobs.change_control()), '^CHG[0-9]{7}: (rollout|rollback|pattern)$',
    'change_control() shows the pattern in force');
SELECT throws_ok($$SELECT durable_jobs.set_queue_lease_policy('t18a.q', '30 s', '10 s', '1 h', true,
        'CHG0000035: the customer asked by phone', 'CHG0000035', 't18a_approver')$$,
    'LF002', 'invalid change record', 'free text outside the pattern is refused from then on');
SELECT lives_ok($$SELECT durable_jobs.set_queue_lease_policy('t18a.q', '35 s', '10 s', '1 h', true,
        'CHG0000036: rollout', 'CHG0000036', 't18a_approver')$$,
    'a reason of the pattern is accepted');
SELECT lives_ok($$SELECT durable_jobs.set_change_reason_pattern('', 'CHG0000037: pattern', 'CHG0000037', 't18a_approver')$$,
    'an empty pattern makes reasons free text again');
RESET ROLE;
SELECT results_eq(
    $$SELECT previous_values, new_values FROM durable_jobs.control_evidence_record
      WHERE evidence_kind = 'change_control_changed'
        AND previous_values -> 'reason_pattern' IS DISTINCT FROM new_values -> 'reason_pattern' ORDER BY evidence_record_id$$,
    $$VALUES ('{"ticket_pattern": "^CHG[0-9]{7}$", "require_approver": true, "approver_must_differ": false, "reason_pattern": null, "require_second_operator": false, "proposal_lifetime": "24:00:00"}'::jsonb,
              '{"ticket_pattern": "^CHG[0-9]{7}$", "require_approver": true, "approver_must_differ": false, "reason_pattern": "^CHG[0-9]{7}: (rollout|rollback|pattern)$", "require_second_operator": false, "proposal_lifetime": "24:00:00"}'::jsonb),
             ('{"ticket_pattern": "^CHG[0-9]{7}$", "require_approver": true, "approver_must_differ": false, "reason_pattern": "^CHG[0-9]{7}: (rollout|rollback|pattern)$", "require_second_operator": false, "proposal_lifetime": "24:00:00"}',
              '{"ticket_pattern": "^CHG[0-9]{7}$", "require_approver": true, "approver_must_differ": false, "reason_pattern": null, "require_second_operator": false, "proposal_lifetime": "24:00:00"}')$$,
    'each accepted pattern change is change_control_changed evidence with the pattern, and every other setting, before and after');
SELECT is((SELECT reason_pattern FROM durable_jobs.change_control_setting), NULL, 'the table holds no pattern now');

-- ============================================================================
-- Migration records (migration 026): a migration's own evidence record
-- (migration_applied, migration_reverted, which its frozen SQL writes
-- without ticket or approver) takes the ticket and approver that leasectl
-- migrate --ticket/--approver set (leasefence.migration_ticket,
-- leasefence.migration_approver) and is checked against the change control
-- in force; other records are not touched. The CLI path is in
-- cmd/leasectl (TestMigrateRecordsTicketAndApproverChangeControlAsksFor).
-- ============================================================================

-- The sections above leave a stricter change control in force; this one
-- starts from the defaults, as a fresh database has them.
SET LOCAL ROLE durable_job_operator;
SELECT durable_jobs.set_change_control('^[A-Z][A-Z0-9]+-[0-9]+$', false, true, 'CHG0000038: back to the defaults',
    'CHG0000038', 't18a_approver');
RESET ROLE;

CREATE ROLE t18b_approver LOGIN IN ROLE durable_job_operator;

CREATE FUNCTION pg_temp.record_migration(p_version integer) RETURNS bigint LANGUAGE sql AS $$
    SELECT durable_jobs.lock_evidence_order();
    INSERT INTO durable_jobs.control_evidence_record (evidence_kind, new_values, change_reason)
    VALUES ('migration_applied', pg_catalog.jsonb_build_object('migration_version', p_version), 'pgTAP 18: a migration')
    RETURNING evidence_record_id;
$$;

SELECT lives_ok($$SELECT pg_temp.record_migration(900)$$, 'a migration without ticket or approver is recorded as before');
SELECT results_eq($$SELECT change_ticket, change_approver FROM durable_jobs.control_evidence_record
                    ORDER BY evidence_record_id DESC LIMIT 1$$,
    $$VALUES (NULL::text, NULL::text)$$, 'with neither');

SELECT set_config('leasefence.migration_ticket', 'REL-30', true);
SELECT set_config('leasefence.migration_approver', 't18b_approver', true);
SELECT lives_ok($$SELECT pg_temp.record_migration(901)$$, 'a migration with the ticket and approver leasectl set');
SELECT results_eq($$SELECT change_ticket, change_approver FROM durable_jobs.control_evidence_record
                    ORDER BY evidence_record_id DESC LIMIT 1$$,
    $$VALUES ('REL-30'::text, 't18b_approver'::text)$$, 'records them');

SELECT set_config('leasefence.migration_ticket', 'not a ticket', true);
SELECT throws_ok($$SELECT pg_temp.record_migration(902)$$, 'LF002', NULL,
    'a ticket that does not match the change control refuses the migration');
SELECT set_config('leasefence.migration_ticket', '', true);
SELECT set_config('leasefence.migration_approver', '', true);
UPDATE durable_jobs.change_control_setting SET require_approver = true;
SELECT throws_ok($$SELECT pg_temp.record_migration(903)$$, 'LF002', NULL,
    'where change control requires an approver, a migration without one is refused');

SELECT * FROM finish();
ROLLBACK;
