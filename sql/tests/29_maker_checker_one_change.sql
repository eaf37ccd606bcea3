-- 29_maker_checker_one_change: migration 026 (issue 39, item 3).
-- An approval applies the one change proposed, and nothing else: once
-- approve_change has returned, the approving login cannot reuse the
-- approval (leasefence.change_proposal set to its id again, in the same
-- transaction) to make another change alone, such as switching
-- maker-checker off or changing another queue's policy.
--
-- It failed on the first draft of 026, where approved_proposer() accepted
-- any proposal this login approved in the transaction; approve_change now
-- clears the proposal's transaction mark once it has applied the change.
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
SELECT plan(5);

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
