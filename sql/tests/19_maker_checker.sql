-- 19_maker_checker: migration 026 (issue 39, item 3; functions/change_control.sql).
-- Maker-checker: with require_second_operator on (set_maker_checker), no
-- policy, retention or change-control change takes effect in the session
-- that asks for it; one operator login proposes it (propose_change,
-- change_proposed evidence) and another approves it in its own session
-- (approve_change: change_approved evidence naming the proposer, then the
-- change recorded with the approver) before the proposal expires, or
-- rejects it (reject_change, change_rejected; its proposer may withdraw
-- it). A malformed proposal is refused with LF003, an unstructured change
-- record with LF002; an approval of an unknown, decided, expired or own
-- proposal is refused and writes nothing. pending_changes lists pending,
-- expired, approved and rejected proposals. A forged
-- leasefence.change_proposal setting is no approval (approved_proposer),
-- and an approval applies the one change proposed, nothing else.
-- Two operator logins act through SET SESSION AUTHORIZATION, because the
-- functions compare session_user, not current_user.
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
SELECT plan(117);

-- Fixtures -------------------------------------------------------------------------

CREATE ROLE t19_maker LOGIN IN ROLE durable_job_operator;
CREATE ROLE t19_checker LOGIN IN ROLE durable_job_operator;
CREATE ROLE t19_worker LOGIN IN ROLE durable_job_worker;

CREATE TEMP TABLE t19_change (change_label text PRIMARY KEY, change_id bigint NOT NULL);
CREATE TEMP TABLE t19_mark (mark_label text PRIMARY KEY, evidence_id bigint NOT NULL, change_count bigint NOT NULL);
GRANT ALL ON t19_change, t19_mark TO PUBLIC;

-- A proposal, remembered by its label (called as the proposing login).
CREATE FUNCTION pg_temp.t19_propose(p_label text, p_kind text, p_queue text, p_values jsonb, p_reason text,
    p_ticket text DEFAULT NULL)
RETURNS bigint LANGUAGE sql AS $$
    INSERT INTO t19_change
    SELECT p_label, durable_jobs.propose_change(p_kind, p_queue, p_values, p_reason, p_ticket)
    RETURNING change_id;
$$;
CREATE FUNCTION pg_temp.t19_id(p_label text)
RETURNS bigint LANGUAGE sql AS $$ SELECT c.change_id FROM t19_change c WHERE c.change_label = p_label $$;
-- Marks (as the superuser): the newest evidence id and the number of proposals.
CREATE FUNCTION pg_temp.t19_mark(p_label text)
RETURNS void LANGUAGE sql AS $$
    INSERT INTO t19_mark
    SELECT p_label, (SELECT COALESCE(max(e.evidence_record_id), 0) FROM durable_jobs.control_evidence_record e),
           (SELECT count(*) FROM durable_jobs.pending_change);
$$;
CREATE FUNCTION pg_temp.t19_since(p_label text)
RETURNS SETOF durable_jobs.control_evidence_record LANGUAGE sql AS $$
    SELECT e.* FROM durable_jobs.control_evidence_record e
    WHERE e.evidence_record_id > (SELECT m.evidence_id FROM t19_mark m WHERE m.mark_label = p_label)
    ORDER BY e.evidence_record_id;
$$;
CREATE FUNCTION pg_temp.t19_unchanged(p_label text)
RETURNS boolean LANGUAGE sql AS $$
    SELECT NOT EXISTS (SELECT 1 FROM pg_temp.t19_since(p_label))
       AND (SELECT count(*) FROM durable_jobs.pending_change) = (SELECT m.change_count FROM t19_mark m WHERE m.mark_label = p_label);
$$;
-- The full change-control values of a change_control proposal, with overrides.
CREATE FUNCTION pg_temp.t19_control(p_overrides jsonb DEFAULT '{}')
RETURNS jsonb LANGUAGE sql AS $$
    SELECT '{"ticket_pattern": "^[A-Z][A-Z0-9]+-[0-9]+$", "require_approver": false, "approver_must_differ": true,
             "reason_pattern": null, "require_second_operator": true, "proposal_lifetime": "1 hour"}'::jsonb || p_overrides;
$$;

-- Who may call ----------------------------------------------------------------------

SET SESSION AUTHORIZATION t19_worker;
SELECT throws_ok($$SELECT durable_jobs.propose_change('lease_policy', 't19.lease', '{"lease_duration": "20 seconds"}', 'CHG-2900: worker')$$,
    '42501', NULL, 'a worker cannot propose a change');
SELECT throws_ok($$SELECT durable_jobs.approve_change(1)$$, '42501', NULL, 'a worker cannot approve a change');
SELECT throws_ok($$SELECT durable_jobs.reject_change(1, 'CHG-2900: worker')$$, '42501', NULL, 'a worker cannot reject a change');
SELECT throws_ok($$SELECT durable_jobs.set_maker_checker(true, '1 hour', 'CHG-2900: worker', 'CHG-2900')$$,
    '42501', NULL, 'a worker cannot switch maker-checker');
SELECT throws_ok($$SELECT * FROM durable_jobs.pending_changes()$$, '42501', NULL, 'a worker cannot list proposals');
RESET SESSION AUTHORIZATION;
SET LOCAL ROLE durable_job_auditor;
SELECT throws_ok($$SELECT durable_jobs.propose_change('lease_policy', 't19.lease', '{"lease_duration": "20 seconds"}', 'CHG-2900: auditor')$$,
    '42501', NULL, 'an auditor cannot propose a change');
SELECT throws_ok($$SELECT durable_jobs.set_maker_checker(true, '1 hour', 'CHG-2900: auditor', 'CHG-2900')$$,
    '42501', NULL, 'an auditor cannot switch maker-checker');
SELECT is_empty($$SELECT * FROM durable_jobs.pending_changes(true)$$, 'an auditor lists proposals (none yet)');
SELECT results_eq($$SELECT require_second_operator, proposal_lifetime FROM durable_jobs.change_control()$$,
    $$VALUES (false, interval '24 hours')$$, 'maker-checker is off by default, with a proposal lifetime of 24 hours');
RESET ROLE;

-- set_maker_checker: bad values are LF003, an unstructured record LF002 ---------------

DO $$ BEGIN PERFORM pg_temp.t19_mark('switch_refused'); END $$;
SET SESSION AUTHORIZATION t19_maker;
SELECT throws_ok($$SELECT durable_jobs.set_maker_checker(NULL, '1 hour', 'CHG-2901: four eyes', 'CHG-2901')$$,
    'LF003', 'invalid change control', 'a NULL switch is refused with LF003');
SELECT throws_ok($$SELECT durable_jobs.set_maker_checker(true, NULL, 'CHG-2901: four eyes', 'CHG-2901')$$,
    'LF003', 'invalid change control', 'a NULL proposal lifetime is refused with LF003');
SELECT throws_ok($$SELECT durable_jobs.set_maker_checker(true, '59 seconds', 'CHG-2901: four eyes', 'CHG-2901')$$,
    'LF003', 'invalid change control', 'a proposal lifetime under a minute is refused with LF003');
SELECT throws_ok($$SELECT durable_jobs.set_maker_checker(true, '30 days 1 second', 'CHG-2901: four eyes', 'CHG-2901')$$,
    'LF003', 'invalid change control', 'a proposal lifetime over 30 days is refused with LF003');
SELECT throws_ok($$SELECT durable_jobs.set_maker_checker(true, '1 mon', 'CHG-2901: four eyes', 'CHG-2901')$$,
    'LF003', 'invalid change control', 'a proposal lifetime in months, which is no plain duration, is refused with LF003');
SELECT throws_ok($$SELECT durable_jobs.set_maker_checker(true, '1 hour', 'CHG-2901 call 010-1234-5678', 'CHG-2901')$$,
    'LF002', 'invalid change record', 'a reason that looks like personal data is refused with LF002');
SELECT throws_ok($$SELECT durable_jobs.set_maker_checker(true, '1 hour', 'CHG-2901: four eyes', 'not a ticket')$$,
    'LF002', 'invalid change record', 'a ticket of another pattern is refused with LF002');
RESET SESSION AUTHORIZATION;
SELECT ok(pg_temp.t19_unchanged('switch_refused'), 'the refused switches changed nothing and wrote no evidence');
SELECT results_eq($$SELECT require_second_operator, proposal_lifetime FROM durable_jobs.change_control()$$,
    $$VALUES (false, interval '24 hours')$$, 'the setting is as before');

DO $$ BEGIN PERFORM pg_temp.t19_mark('switch'); END $$;
SET SESSION AUTHORIZATION t19_maker;
SELECT lives_ok($$SELECT durable_jobs.set_maker_checker(true, '1 day', 'CHG-2901: four eyes', 'CHG-2901')$$,
    'an operator switches maker-checker on with a lifetime of one day (a day is 24 hours)');
RESET SESSION AUTHORIZATION;
SELECT results_eq(
    $$SELECT evidence_kind, previous_values - 'ticket_pattern', new_values - 'ticket_pattern', change_reason, change_ticket,
             change_approver, changed_by_role
      FROM pg_temp.t19_since('switch')$$,
    $$VALUES ('change_control_changed'::text,
              '{"require_approver": false, "approver_must_differ": true, "reason_pattern": null, "require_second_operator": false, "proposal_lifetime": "24:00:00"}'::jsonb,
              '{"require_approver": false, "approver_must_differ": true, "reason_pattern": null, "require_second_operator": true, "proposal_lifetime": "24:00:00"}'::jsonb,
              'CHG-2901: four eyes'::text, 'CHG-2901'::text, NULL::text, 't19_maker'::text)$$,
    'switching maker-checker on is one change_control_changed record with every setting before and after, by the login that did it');
SELECT results_eq($$SELECT require_second_operator, proposal_lifetime, changed_by_role FROM durable_jobs.change_control()$$,
    $$VALUES (true, interval '24 hours', 't19_maker'::text)$$, 'change_control() shows maker-checker on and who switched it');

-- With maker-checker on a change made in one session is refused (check_change_record)

DO $$ BEGIN PERFORM pg_temp.t19_mark('alone'); END $$;
SET SESSION AUTHORIZATION t19_maker;
SELECT throws_ok($$SELECT durable_jobs.update_queue_lease_policy('t19.lease', '20 seconds', NULL, NULL, NULL, 'CHG-2902: longer', 'CHG-2902', 't19_checker')$$,
    'LF002', 'invalid change record', 'a policy change made in one session is refused, even naming another operator as approver');
SELECT throws_ok($$SELECT durable_jobs.set_queue_retention_policy('t19.keep', '2 hours', '3 hours', 'CHG-2902: shorter', 'CHG-2902', 't19_checker')$$,
    'LF002', 'invalid change record', 'a retention change made in one session is refused');
SELECT throws_ok($$SELECT durable_jobs.set_change_reason_pattern('^CHG-[0-9]+: .+$', 'CHG-2902: pattern', 'CHG-2902', 't19_checker')$$,
    'LF002', 'invalid change record', 'a change-control change made in one session is refused');
SELECT throws_ok($$SELECT durable_jobs.set_maker_checker(false, '1 hour', 'CHG-2902: back to one', 'CHG-2902', 't19_checker')$$,
    'LF002', 'invalid change record', 'maker-checker is not switched off by one login: that needs an approved proposal too');
RESET SESSION AUTHORIZATION;
SELECT throws_ok($$UPDATE durable_jobs.queue_lease_policy SET renewal_enabled = false WHERE queue_name = '*'$$,
    'LF002', 'invalid change record', 'a superuser''s direct table change is refused too');
SELECT ok(pg_temp.t19_unchanged('alone'), 'the refused changes changed nothing and wrote no evidence');

-- propose_change: malformed proposals are LF003, unstructured records LF002 ----------

DO $$ BEGIN PERFORM pg_temp.t19_mark('proposal_refused'); END $$;
SET SESSION AUTHORIZATION t19_maker;
SELECT throws_ok($$SELECT durable_jobs.propose_change('queue_rules', 't19.lease', '{"lease_duration": "20 seconds"}', 'CHG-2903: r')$$,
    'LF003', 'invalid proposal', 'an unknown kind is refused with LF003');
SELECT throws_ok($$SELECT durable_jobs.propose_change(NULL, 't19.lease', '{"lease_duration": "20 seconds"}', 'CHG-2903: r')$$,
    'LF003', 'invalid proposal', 'a NULL kind is refused with LF003');
SELECT throws_ok($$SELECT durable_jobs.propose_change('lease_policy', 't19.lease', '["lease_duration"]', 'CHG-2903: r')$$,
    'LF003', 'invalid proposal', 'values that are not a JSON object are refused with LF003');
SELECT throws_ok($$SELECT durable_jobs.propose_change('lease_policy', 't19.lease', NULL, 'CHG-2903: r')$$,
    'LF003', 'invalid proposal', 'NULL values are refused with LF003');
SELECT throws_ok($$SELECT durable_jobs.propose_change('lease_policy', 't19.lease', '{"lease_duration": "20 seconds", "colour": "red"}', 'CHG-2903: r')$$,
    'LF003', 'invalid proposal', 'a key the kind does not know is refused with LF003');
SELECT throws_ok($$SELECT durable_jobs.propose_change('lease_policy', 't19.lease', '{"payload_retention": "2 hours"}', 'CHG-2903: r')$$,
    'LF003', 'invalid proposal', 'a key of another kind is refused with LF003');
SELECT throws_ok($$SELECT durable_jobs.propose_change('retention_policy', 't19.keep', '{"payload_retention": "2 hours"}', 'CHG-2903: r')$$,
    'LF003', 'invalid proposal', 'a retention proposal without both retentions is refused with LF003');
SELECT throws_ok(format('SELECT durable_jobs.propose_change(%L, NULL, %L, %L)', 'change_control',
        pg_temp.t19_control() - 'proposal_lifetime', 'CHG-2903: r'),
    'LF003', 'invalid proposal', 'a change-control proposal without every setting is refused with LF003');
SELECT throws_ok(format('SELECT durable_jobs.propose_change(%L, %L, %L, %L)', 'change_control', 't19.lease',
        pg_temp.t19_control(), 'CHG-2903: r'),
    'LF003', 'invalid proposal', 'a change-control proposal for a queue is refused with LF003');
SELECT throws_ok($$SELECT durable_jobs.propose_change('lease_policy', NULL, '{"lease_duration": "20 seconds"}', 'CHG-2903: r')$$,
    'LF003', 'invalid proposal', 'a lease-policy proposal without a queue is refused with LF003');
SELECT throws_ok($$SELECT durable_jobs.propose_change('retention_policy', NULL, '{"payload_retention": "2 hours", "record_retention": "3 hours"}', 'CHG-2903: r')$$,
    'LF003', 'invalid proposal', 'a retention proposal without a queue is refused with LF003');
SELECT throws_ok($$SELECT durable_jobs.propose_change('lease_policy', 't19.lease', '{}', 'CHG-2903: r')$$,
    'LF003', 'invalid proposal', 'an empty proposal is refused with LF003');
SELECT throws_ok($$SELECT durable_jobs.propose_change('lease_policy', 'not a queue!', '{"lease_duration": "20 seconds"}', 'CHG-2903: r')$$,
    'LF003', NULL, 'a malformed queue name is refused with LF003');
SELECT throws_ok($$SELECT durable_jobs.propose_change('lease_policy', 't19.lease', '{"lease_duration": "soon"}', 'CHG-2903: r')$$,
    'LF003', 'invalid proposal', 'a duration that is not one is refused with LF003');
SELECT throws_ok($$SELECT durable_jobs.propose_change('lease_policy', 't19.lease', '{"renewal_enabled": "maybe"}', 'CHG-2903: r')$$,
    'LF003', 'invalid proposal', 'a switch that is not a boolean is refused with LF003');
SELECT throws_ok($$SELECT durable_jobs.propose_change('retention_policy', 't19.keep', '{"payload_retention": "2 hours", "record_retention": "99999999999 hours"}', 'CHG-2903: r')$$,
    'LF003', 'invalid proposal', 'a duration out of range is refused with LF003');
SELECT throws_ok(format('SELECT durable_jobs.propose_change(%L, NULL, %L, %L)', 'change_control', pg_temp.t19_control(o), 'CHG-2903: r'),
    'LF003', 'invalid change control', 'a change-control proposal with ' || d || ' is refused with LF003 (require_valid_change_control)')
FROM (VALUES ('{"ticket_pattern": "([A-Z"}'::jsonb, 'a ticket pattern that is not a regular expression'),
             ('{"reason_pattern": "(unclosed"}', 'a reason pattern that is not a regular expression'),
             ('{"ticket_pattern": ""}', 'an empty ticket pattern'),
             (jsonb_build_object('ticket_pattern', repeat('A', 201)), 'a ticket pattern over 200 characters'),
             (jsonb_build_object('reason_pattern', repeat('x', 201)), 'a reason pattern over 200 characters'),
             ('{"ticket_pattern": null}', 'no ticket pattern'),
             ('{"require_approver": null}', 'no require_approver'),
             ('{"approver_must_differ": null}', 'no approver_must_differ'),
             ('{"require_second_operator": null}', 'no require_second_operator'),
             ('{"proposal_lifetime": null}', 'no proposal lifetime'),
             ('{"proposal_lifetime": "59 seconds"}', 'a proposal lifetime under a minute'),
             ('{"proposal_lifetime": "31 days"}', 'a proposal lifetime over 30 days')) AS bad(o, d);
SELECT throws_ok($$SELECT durable_jobs.propose_change('lease_policy', 't19.lease', '{"lease_duration": "20 seconds"}', 'CHG-2903 call 010-1234-5678')$$,
    'LF002', 'invalid change record', 'a reason that looks like personal data is refused with LF002');
SELECT throws_ok($$SELECT durable_jobs.propose_change('lease_policy', 't19.lease', '{"lease_duration": "20 seconds"}', NULL)$$,
    'LF002', 'invalid change record', 'a proposal without a reason is refused with LF002');
SELECT throws_ok($$SELECT durable_jobs.propose_change('lease_policy', 't19.lease', '{"lease_duration": "20 seconds"}', 'CHG-2903: r', 'not a ticket')$$,
    'LF002', 'invalid change record', 'a ticket of another pattern is refused with LF002');
RESET SESSION AUTHORIZATION;
SELECT ok(pg_temp.t19_unchanged('proposal_refused'), 'the refused proposals wrote no proposal and no evidence');

-- Proposals are recorded ---------------------------------------------------------------

DO $$ BEGIN PERFORM pg_temp.t19_mark('proposed'); END $$;
SET SESSION AUTHORIZATION t19_maker;
SELECT lives_ok($$SELECT pg_temp.t19_propose('lease', 'lease_policy', 't19.lease', '{"lease_duration": "90 seconds"}', 'CHG-2904: longer lease', 'CHG-2904')$$,
    'the maker proposes a lease-policy change for a queue');
SELECT lives_ok($$SELECT pg_temp.t19_propose('keep', 'retention_policy', 't19.keep', '{"payload_retention": "2 hours", "record_retention": "3 hours"}', 'CHG-2905: shorter retention')$$,
    'the maker proposes a retention change, without a ticket');
SELECT lives_ok($$SELECT pg_temp.t19_propose('default', 'lease_policy', '*', '{"renewal_enabled": false}', 'CHG-2906: no renewals')$$,
    'the maker proposes a change of the default policy (queue *)');
SELECT lives_ok($$SELECT pg_temp.t19_propose('old', 'lease_policy', 't19.old', '{"lease_duration": "25 seconds"}', 'CHG-2907: soon old')$$,
    'the maker proposes a change that will expire');
SELECT lives_ok($$SELECT pg_temp.t19_propose('unbounded', 'lease_policy', 't19.lease', '{"lease_duration": "1 second", "renewal_interval": "10 seconds"}', 'CHG-2908: out of bounds')$$,
    'the maker proposes a change that is well formed but out of the policy bounds');
SELECT lives_ok($$SELECT pg_temp.t19_propose('open', 'lease_policy', 't19.open', '{"max_claim_lifetime": "2 hours"}', 'CHG-2909: left open')$$,
    'the maker proposes a change nobody decides');
RESET SESSION AUTHORIZATION;
SELECT results_eq(
    $$SELECT evidence_kind, queue_name, previous_values, new_values - 'expires_at', change_reason, change_ticket, change_approver, changed_by_role
      FROM pg_temp.t19_since('proposed') LIMIT 2$$,
    $$VALUES ('change_proposed'::text, 't19.lease'::text, NULL::jsonb,
              jsonb_build_object('change_id', pg_temp.t19_id('lease'), 'change_kind', 'lease_policy',
                                 'proposed_values', '{"lease_duration": "90 seconds"}'::jsonb),
              'CHG-2904: longer lease'::text, 'CHG-2904'::text, NULL::text, 't19_maker'::text),
             ('change_proposed', 't19.keep', NULL,
              jsonb_build_object('change_id', pg_temp.t19_id('keep'), 'change_kind', 'retention_policy',
                                 'proposed_values', '{"payload_retention": "2 hours", "record_retention": "3 hours"}'::jsonb),
              'CHG-2905: shorter retention', NULL, NULL, 't19_maker')$$,
    'each proposal is one change_proposed record: kind, queue, values, reason, ticket, no approver, by the proposing login');
SELECT is((SELECT count(*)::integer FROM pg_temp.t19_since('proposed') WHERE evidence_kind = 'change_proposed'), 6,
    'six proposals, six change_proposed records, nothing else');
SELECT ok((SELECT bool_and((e.new_values ->> 'expires_at')::timestamptz = c.expires_at
                           AND c.expires_at - c.proposed_at BETWEEN interval '23:59:59' AND interval '24:00:01')
           FROM pg_temp.t19_since('proposed') e JOIN durable_jobs.pending_change c ON c.change_id = (e.new_values ->> 'change_id')::bigint),
    'a proposal expires after the lifetime in force (24 hours), and its record says when');
SELECT results_eq(
    $$SELECT c.change_kind, c.queue_name, c.proposed_by_role, c.change_decision, c.decided_by_role, c.decided_at, c.decided_in_transaction
      FROM durable_jobs.pending_change c WHERE c.change_id = pg_temp.t19_id('lease')$$,
    $$VALUES ('lease_policy'::text, 't19.lease'::text, 't19_maker'::text, NULL::text, NULL::text, NULL::timestamptz, NULL::xid8)$$,
    'the proposal is stored undecided, with its proposer');
UPDATE durable_jobs.pending_change SET expires_at = clock_timestamp() - interval '1 second' WHERE change_id = pg_temp.t19_id('old');

SET SESSION AUTHORIZATION t19_checker;
SELECT results_eq(
    $$SELECT c.change_label, p.change_state, p.proposed_by_role, p.decided_by_role
      FROM durable_jobs.pending_changes() p JOIN t19_change c USING (change_id) ORDER BY p.change_id DESC$$,
    $$VALUES ('open'::text, 'pending'::text, 't19_maker'::text, NULL::text), ('unbounded', 'pending', 't19_maker', NULL),
             ('old', 'expired', 't19_maker', NULL), ('default', 'pending', 't19_maker', NULL),
             ('keep', 'pending', 't19_maker', NULL), ('lease', 'pending', 't19_maker', NULL)$$,
    'pending_changes lists the undecided proposals, newest first, pending or expired');

-- decide_change: refused approvals write nothing ----------------------------------------

RESET SESSION AUTHORIZATION;
DO $$ BEGIN PERFORM pg_temp.t19_mark('approval_refused'); END $$;
SET SESSION AUTHORIZATION t19_checker;
SELECT throws_ok($$SELECT durable_jobs.approve_change(NULL)$$, 'LF003', 'change id is required', 'approving a NULL id is refused with LF003');
SELECT throws_ok($$SELECT durable_jobs.approve_change(-1)$$, 'LF003', 'no such proposal', 'approving an unknown id is refused with LF003');
SELECT throws_ok(format('SELECT durable_jobs.approve_change(%s)', pg_temp.t19_id('old')),
    'LF002', 'proposal expired', 'an expired proposal is not approved (LF002)');
SELECT throws_ok(format('SELECT durable_jobs.approve_change(%s)', pg_temp.t19_id('unbounded')),
    'LF002', NULL, 'a proposal refused when applied (outside the policy bounds) is not approved (LF002)');
RESET SESSION AUTHORIZATION;
SET SESSION AUTHORIZATION t19_maker;
SELECT throws_ok(format('SELECT durable_jobs.approve_change(%s)', pg_temp.t19_id('lease')),
    'LF002', 'invalid change record', 'the proposer cannot approve its own proposal (LF002)');
RESET SESSION AUTHORIZATION;
SELECT ok(pg_temp.t19_unchanged('approval_refused'), 'the refused approvals wrote no evidence');
SELECT is_empty($$SELECT 1 FROM durable_jobs.pending_change WHERE change_decision IS NOT NULL$$,
    'the refused approvals left every proposal undecided (the one refused when applied included)');

-- A forged setting is no approval (approved_proposer) ------------------------------------

DO $$ BEGIN PERFORM set_config('leasefence.change_proposal', 'not a number', true); END $$;
SELECT is(durable_jobs.approved_proposer(), NULL, 'a setting that is not a proposal id names no proposer');
DO $$ BEGIN PERFORM set_config('leasefence.change_proposal', pg_temp.t19_id('lease')::text, true); END $$;
SELECT is(durable_jobs.approved_proposer(), NULL, 'the id of a proposal that is not approved names no proposer');
DO $$ BEGIN PERFORM set_config('leasefence.change_proposal', '', true); END $$;
SET SESSION AUTHORIZATION t19_checker;
SELECT throws_ok(format($$SELECT set_config('leasefence.change_proposal', '%s', true),
                               durable_jobs.update_queue_lease_policy('t19.lease', '20 seconds', NULL, NULL, NULL, 'CHG-2904: longer lease', 'CHG-2904', 't19_checker')$$,
                        pg_temp.t19_id('lease')),
    'LF002', 'invalid change record', 'a policy change with a forged leasefence.change_proposal setting is refused (LF002)');
DO $$ BEGIN PERFORM set_config('leasefence.change_proposal', '', true); END $$;
RESET SESSION AUTHORIZATION;
SELECT ok(pg_temp.t19_unchanged('approval_refused'), 'the forged change wrote nothing');

-- approve_change: each kind takes effect, recorded with proposer and approver ------------

DO $$ BEGIN PERFORM pg_temp.t19_mark('approve_lease'); END $$;
SET SESSION AUTHORIZATION t19_checker;
SELECT lives_ok(format('SELECT durable_jobs.approve_change(%s)', pg_temp.t19_id('lease')),
    'another operator login approves the lease-policy proposal in its own session');
RESET SESSION AUTHORIZATION;
SELECT is((SELECT lease_duration FROM durable_jobs.queue_lease_policies() WHERE queue_name = 't19.lease'), interval '90 seconds',
    'the approved lease-policy change took effect');
SELECT results_eq(
    $$SELECT evidence_kind, queue_name, new_values - 'proposed_at', change_reason, change_ticket, change_approver, changed_by_role
      FROM pg_temp.t19_since('approve_lease') WHERE evidence_kind = 'change_approved'$$,
    $$VALUES ('change_approved'::text, 't19.lease'::text,
              jsonb_build_object('change_id', pg_temp.t19_id('lease'), 'change_kind', 'lease_policy', 'proposed_by', 't19_maker'),
              'CHG-2904: longer lease'::text, 'CHG-2904'::text, 't19_checker'::text, 't19_checker'::text)$$,
    'the approval is one change_approved record: change id, kind, proposer, the proposal''s reason and ticket, the approver as approver and changer');
SELECT results_eq(
    $$SELECT evidence_kind, change_reason, change_ticket, change_approver, changed_by_role FROM pg_temp.t19_since('approve_lease')$$,
    $$VALUES ('change_approved'::text, 'CHG-2904: longer lease'::text, 'CHG-2904'::text, 't19_checker'::text, 't19_checker'::text),
             ('lease_policy_changed', 'CHG-2904: longer lease', 'CHG-2904', 't19_checker', 't19_checker')$$,
    'the approval comes first, then the change recorded as every policy change is, with the approver');
SELECT ok((SELECT (e.new_values ->> 'proposed_at')::timestamptz = c.proposed_at
           FROM pg_temp.t19_since('approve_lease') e JOIN durable_jobs.pending_change c ON c.change_id = pg_temp.t19_id('lease')
           WHERE e.evidence_kind = 'change_approved'),
    'the approval record names when the change was proposed');
SELECT results_eq(
    $$SELECT c.change_decision, c.decided_by_role, c.decided_at IS NOT NULL, c.decided_in_transaction IS NULL
      FROM durable_jobs.pending_change c WHERE c.change_id = pg_temp.t19_id('lease')$$,
    $$VALUES ('approved'::text, 't19_checker'::text, true, true)$$,
    'the proposal is approved, by the approver, now; once applied it vouches for nothing more');
SELECT is(current_setting('leasefence.change_proposal', true), '', 'approve_change leaves no proposal setting behind');

DO $$ BEGIN PERFORM pg_temp.t19_mark('decided_refused'); END $$;
SET SESSION AUTHORIZATION t19_checker;
SELECT throws_ok(format('SELECT durable_jobs.approve_change(%s)', pg_temp.t19_id('lease')),
    'LF002', 'proposal already decided', 'an approved proposal is not approved twice (LF002)');
SELECT throws_ok(format('SELECT durable_jobs.reject_change(%s, %L)', pg_temp.t19_id('lease'), 'CHG-2904: too late'),
    'LF002', 'proposal already decided', 'an approved proposal is not rejected (LF002)');
RESET SESSION AUTHORIZATION;
SELECT ok(pg_temp.t19_unchanged('decided_refused'), 'a decided proposal refused again writes nothing');

DO $$ BEGIN PERFORM pg_temp.t19_mark('approve_keep'); END $$;
SET SESSION AUTHORIZATION t19_checker;
SELECT lives_ok(format('SELECT durable_jobs.approve_change(%s)', pg_temp.t19_id('keep')),
    'another operator login approves the retention proposal');
RESET SESSION AUTHORIZATION;
SELECT results_eq($$SELECT payload_retention, record_retention FROM durable_jobs.queue_retention_policies() WHERE queue_name = 't19.keep'$$,
    $$VALUES (interval '2 hours', interval '3 hours')$$, 'the approved retention change took effect');
SELECT results_eq(
    $$SELECT evidence_kind, new_values ->> 'proposed_by', change_reason, change_ticket, change_approver, changed_by_role
      FROM pg_temp.t19_since('approve_keep')$$,
    $$VALUES ('change_approved'::text, 't19_maker'::text, 'CHG-2905: shorter retention'::text, NULL::text, 't19_checker'::text, 't19_checker'::text),
             ('retention_policy_changed', NULL, 'CHG-2905: shorter retention', NULL, 't19_checker', 't19_checker')$$,
    'the retention approval and change are recorded with the proposer and the approver');

-- A change-control proposal: the roles swap, and maker-checker is switched off ----------

DO $$ BEGIN PERFORM pg_temp.t19_mark('approve_control'); END $$;
SET SESSION AUTHORIZATION t19_checker;
SELECT lives_ok(format('SELECT pg_temp.t19_propose(%L, %L, NULL, %L, %L, %L)', 'control', 'change_control',
        pg_temp.t19_control('{"reason_pattern": "", "require_second_operator": false, "proposal_lifetime": "2 hours"}'),
        'CHG-2910: back to one', 'CHG-2910'),
    'the checker proposes switching maker-checker off (a change-control proposal without a queue)');
RESET SESSION AUTHORIZATION;
SET SESSION AUTHORIZATION t19_maker;
SELECT lives_ok(format('SELECT durable_jobs.approve_change(%s)', pg_temp.t19_id('control')),
    'the maker approves it in its own session');
RESET SESSION AUTHORIZATION;
SELECT results_eq(
    $$SELECT ticket_pattern, require_approver, approver_must_differ, reason_pattern, require_second_operator, proposal_lifetime, changed_by_role
      FROM durable_jobs.change_control()$$,
    $$VALUES ('^[A-Z][A-Z0-9]+-[0-9]+$'::text, false, true, NULL::text, false, interval '2 hours', 't19_maker'::text)$$,
    'the approved change-control change took effect (an empty reason pattern is none)');
SELECT results_eq(
    $$SELECT evidence_kind, new_values ->> 'change_kind', new_values ->> 'proposed_by', change_reason, change_ticket, change_approver, changed_by_role
      FROM pg_temp.t19_since('approve_control')$$,
    $$VALUES ('change_proposed'::text, 'change_control'::text, NULL::text, 'CHG-2910: back to one'::text, 'CHG-2910'::text, NULL::text, 't19_checker'::text),
             ('change_approved', 'change_control', 't19_checker', 'CHG-2910: back to one', 'CHG-2910', 't19_maker', 't19_maker'),
             ('change_control_changed', NULL, NULL, 'CHG-2910: back to one', 'CHG-2910', 't19_maker', 't19_maker')$$,
    'proposal, approval and change are recorded, each by the login that made it, the change with its approver');
SELECT results_eq(
    $$SELECT previous_values ->> 'require_second_operator', new_values ->> 'require_second_operator',
             previous_values ->> 'proposal_lifetime', new_values ->> 'proposal_lifetime'
      FROM pg_temp.t19_since('approve_control') WHERE evidence_kind = 'change_control_changed'$$,
    $$VALUES ('true'::text, 'false'::text, '24:00:00'::text, '02:00:00'::text)$$,
    'the change-control record holds the maker-checker settings before and after');
SET SESSION AUTHORIZATION t19_maker;
SELECT lives_ok($$SELECT durable_jobs.update_queue_lease_policy('t19.lease', '120 seconds', NULL, NULL, NULL, 'CHG-2911: alone again', 'CHG-2911', NULL)$$,
    'with maker-checker off one login changes a policy alone again');
RESET SESSION AUTHORIZATION;

-- reject_change: a reason checked as every change record's; the proposer withdraws -----

DO $$ BEGIN PERFORM pg_temp.t19_mark('reject'); END $$;
SET SESSION AUTHORIZATION t19_checker;
SELECT throws_ok(format('SELECT durable_jobs.reject_change(%s, %L)', pg_temp.t19_id('open'), 'CHG-2912 call 010-1234-5678'),
    'LF002', 'invalid change record', 'a rejection whose reason looks like personal data is refused (LF002)');
SELECT throws_ok(format('SELECT durable_jobs.reject_change(%s, NULL)', pg_temp.t19_id('open')),
    'LF002', 'invalid change record', 'a rejection without a reason is refused (LF002)');
SELECT throws_ok($$SELECT durable_jobs.reject_change(NULL, 'CHG-2912: no')$$, 'LF003', 'change id is required',
    'rejecting a NULL id is refused with LF003');
SELECT throws_ok($$SELECT durable_jobs.reject_change(-1, 'CHG-2912: no')$$, 'LF003', 'no such proposal',
    'rejecting an unknown id is refused with LF003');
RESET SESSION AUTHORIZATION;
SELECT ok(pg_temp.t19_unchanged('reject'), 'the refused rejections wrote nothing');
SET SESSION AUTHORIZATION t19_maker;
SELECT lives_ok(format('SELECT durable_jobs.reject_change(%s, %L)', pg_temp.t19_id('default'), 'CHG-2912: withdrawn'),
    'the proposer withdraws its own proposal');
RESET SESSION AUTHORIZATION;
SET SESSION AUTHORIZATION t19_checker;
SELECT lives_ok(format('SELECT durable_jobs.reject_change(%s, %L)', pg_temp.t19_id('old'), 'CHG-2913: expired anyway'),
    'another operator rejects an expired proposal');
RESET SESSION AUTHORIZATION;
SELECT results_eq(
    $$SELECT evidence_kind, queue_name, new_values - 'proposed_at', change_reason, change_ticket, change_approver, changed_by_role
      FROM pg_temp.t19_since('reject')$$,
    $$VALUES ('change_rejected'::text, '*'::text,
              jsonb_build_object('change_id', pg_temp.t19_id('default'), 'change_kind', 'lease_policy', 'proposed_by', 't19_maker'),
              'CHG-2912: withdrawn'::text, NULL::text, NULL::text, 't19_maker'::text),
             ('change_rejected', 't19.old',
              jsonb_build_object('change_id', pg_temp.t19_id('old'), 'change_kind', 'lease_policy', 'proposed_by', 't19_maker'),
              'CHG-2913: expired anyway', NULL, NULL, 't19_checker')$$,
    'each rejection is one change_rejected record with the rejecting login''s reason and no approver');
SELECT is((SELECT renewal_enabled FROM durable_jobs.queue_lease_policies() WHERE queue_name = '*'), true,
    'a rejected proposal never takes effect');

-- pending_changes: every state ------------------------------------------------------------

SET LOCAL ROLE durable_job_auditor;
SELECT results_eq(
    $$SELECT c.change_label, p.change_state, p.proposed_by_role, p.decided_by_role, p.decided_at IS NOT NULL
      FROM durable_jobs.pending_changes(true) p JOIN t19_change c USING (change_id) ORDER BY p.change_id DESC$$,
    $$VALUES ('control'::text, 'approved'::text, 't19_checker'::text, 't19_maker'::text, true),
             ('open', 'pending', 't19_maker', NULL, false), ('unbounded', 'pending', 't19_maker', NULL, false),
             ('old', 'rejected', 't19_maker', 't19_checker', true), ('default', 'rejected', 't19_maker', 't19_maker', true),
             ('keep', 'approved', 't19_maker', 't19_checker', true), ('lease', 'approved', 't19_maker', 't19_checker', true)$$,
    'pending_changes(true), as the auditor, lists every proposal with its state: pending, approved or rejected, who decided it and when');
SELECT results_eq(
    $$SELECT c.change_label FROM durable_jobs.pending_changes() p JOIN t19_change c USING (change_id) ORDER BY p.change_id DESC$$,
    $$VALUES ('open'::text), ('unbounded')$$,
    'pending_changes() lists only the undecided ones');
SELECT results_eq(
    $$SELECT c.change_label FROM durable_jobs.pending_changes(NULL) p JOIN t19_change c USING (change_id) ORDER BY p.change_id DESC$$,
    $$VALUES ('open'::text), ('unbounded')$$,
    'pending_changes(NULL) is pending_changes(false)');
RESET ROLE;

-- ============================================================================
-- One approval, one change: migration 026 (issue 39, item 3).
-- An approval applies the one change proposed, and nothing else: once
-- approve_change has returned, the approving login cannot reuse the
-- approval (leasefence.change_proposal set to its id again, in the same
-- transaction) to make another change alone, such as switching
-- maker-checker off or changing another queue's policy.
--
-- It failed on the first draft of 026, where approved_proposer() accepted
-- any proposal this login approved in the transaction; approve_change now
-- clears the proposal's transaction mark once it has applied the change.
-- ============================================================================

-- The sections above end with maker-checker switched off again (the
-- approved 'control' proposal), as this one starts.
CREATE ROLE t29o_maker LOGIN IN ROLE durable_job_operator;
CREATE ROLE t29o_checker LOGIN IN ROLE durable_job_operator;
CREATE TEMP TABLE t29o_change (change_id bigint NOT NULL);
GRANT ALL ON t29o_change TO PUBLIC;

SET SESSION AUTHORIZATION t29o_maker;
SELECT lives_ok($$SELECT durable_jobs.set_maker_checker(true, '1 hour', 'CHG-2950: four eyes', 'CHG-2950')$$,
    'the maker switches maker-checker on');
SELECT lives_ok($$INSERT INTO t29o_change SELECT durable_jobs.propose_change('lease_policy', 't29o.a',
        '{"lease_duration": "90 seconds"}', 'CHG-2951: longer lease', 'CHG-2951')$$,
    'the maker proposes one lease-policy change for queue t29o.a');
RESET SESSION AUTHORIZATION;

SET SESSION AUTHORIZATION t29o_checker;
SELECT lives_ok(format('SELECT durable_jobs.approve_change(%s)', (SELECT change_id FROM t29o_change)),
    'the checker approves it, and it takes effect');
-- The same transaction, after the approval: the checker names the approved
-- proposal again and makes changes nobody proposed (the other queue's
-- first, while maker-checker is still on).
SELECT throws_ok(format($$SELECT set_config('leasefence.change_proposal', '%s', true),
                               durable_jobs.update_queue_lease_policy('t29o.b', '120 seconds', NULL, NULL, NULL, 'CHG-2953: other queue', 'CHG-2953', 't29o_checker')$$,
                        (SELECT change_id FROM t29o_change)),
    'LF002', 'invalid change record',
    'the approver cannot reuse an approval to change another queue''s policy alone');
SELECT throws_ok(format($$SELECT set_config('leasefence.change_proposal', '%s', true),
                               durable_jobs.set_maker_checker(false, '1 hour', 'CHG-2952: back to one', 'CHG-2952', 't29o_checker')$$,
                        (SELECT change_id FROM t29o_change)),
    'LF002', 'invalid change record',
    'the approver cannot reuse an approval to switch maker-checker off alone');
RESET SESSION AUTHORIZATION;

SELECT * FROM finish();
ROLLBACK;
