-- 12_operator_actions: what an operator (or a producer) does to a job by
-- hand, and the record it leaves. First cancel_job, replay_job and
-- job_lifecycle_state themselves; then, from migration 026 (issue 39, items
-- 1, 2 and 4), their action trail and evidence, the evidence of the
-- retention and change-control tables, and the audit functions that find
-- what was changed around them.
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
SELECT plan(137);
\ir fixture/fixture.sql

-- ============================================================================
-- cancel_job, replay_job and job_lifecycle_state.
-- Cancel moves QUEUED, RETRY_SCHEDULED and RUNNING jobs to CANCELLED (a
-- running claim is stale at once) and answers false for terminal or unknown
-- jobs; replay brings one FAILED or CANCELLED job back to QUEUED with its
-- attempts starting again; the lifecycle state is payload-blind.
-- ============================================================================

-- Fixtures -------------------------------------------------------------------

-- Every job the file enqueued; t12a_job adds the claim (the fixture's
-- claims) of those that were claimed.
CREATE TEMP TABLE t12a_enqueued (job_label text PRIMARY KEY, job_id bigint NOT NULL);
CREATE TEMP VIEW t12a_job AS
SELECT e.job_label, e.job_id, c.lease_claim_token AS claim_token, c.owner_id, c.lease_fencing_generation AS generation,
       c.lease_expires_at
FROM t12a_enqueued e LEFT JOIN claims c ON c.label = e.job_label;

-- Enqueue one job into its own queue (t12a.<label>); claim it when p_claim.
CREATE FUNCTION pg_temp.t12a_job(p_job_label text, p_claim boolean, p_max_attempts integer DEFAULT 5)
RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    v_queue_name text := 't12a.' || p_job_label;
    v_payload jsonb := jsonb_build_object('customer_email', 'pat.t07@example.com');
    v_job_id bigint;
BEGIN
    IF p_claim THEN
        v_job_id := pg_temp.enqueue_and_claim(p_job_label, v_queue_name, 'worker-t07', p_max_attempts, v_payload);
    ELSE
        v_job_id := durable_jobs.enqueue_job(v_queue_name, v_payload, NULL, NULL, p_max_attempts);
    END IF;
    INSERT INTO t12a_enqueued VALUES (p_job_label, v_job_id);
    RETURN v_job_id;
END $$;

CREATE FUNCTION pg_temp.t12a_status(p_job_label text)
RETURNS text LANGUAGE sql AS $$
    SELECT s.job_status FROM t12a_job j, durable_jobs.job_lifecycle_state(j.job_id) s WHERE j.job_label = p_job_label;
$$;

DO $$ BEGIN
    PERFORM pg_temp.t12a_job('queued', false);
    PERFORM pg_temp.t12a_job('retry_scheduled', true);
    PERFORM durable_jobs.retry_job(job_id, claim_token, owner_id, interval '1 hour', 'transient_error')
    FROM t12a_job WHERE job_label = 'retry_scheduled';
    PERFORM pg_temp.t12a_job('running', true);
    PERFORM pg_temp.t12a_job('succeeded', true);
    PERFORM durable_jobs.complete_job(job_id, claim_token, owner_id) FROM t12a_job WHERE job_label = 'succeeded';
    PERFORM pg_temp.t12a_job('failed', true);
    PERFORM durable_jobs.fail_job(job_id, claim_token, owner_id, 'bad_payload') FROM t12a_job WHERE job_label = 'failed';
END $$;

-- cancel_job -----------------------------------------------------------------

SELECT is(durable_jobs.cancel_job(job_id), true, 'cancel_job of a QUEUED job returns true')
FROM t12a_job WHERE job_label = 'queued';
SELECT is(pg_temp.t12a_status('queued'), 'CANCELLED', 'a cancelled QUEUED job is CANCELLED');
SELECT is_empty($$SELECT * FROM durable_jobs.claim_next_job('t12a.queued', 'worker-t07')$$,
                'a cancelled QUEUED job is not claimable');

SELECT is(durable_jobs.cancel_job(job_id), true, 'cancel_job of a RETRY_SCHEDULED job returns true')
FROM t12a_job WHERE job_label = 'retry_scheduled';
SELECT is(pg_temp.t12a_status('retry_scheduled'), 'CANCELLED', 'a cancelled RETRY_SCHEDULED job is CANCELLED');

SELECT is(durable_jobs.cancel_job(job_id), true, 'cancel_job of a RUNNING job returns true')
FROM t12a_job WHERE job_label = 'running';
SELECT results_eq(
    format('SELECT job_status, lease_expires_at FROM durable_jobs.job_lifecycle_state(%s)', job_id),
    $$VALUES ('CANCELLED', NULL::timestamptz)$$,
    'a cancelled RUNNING job is CANCELLED and holds no lease')
FROM t12a_job WHERE job_label = 'running';
SELECT is((SELECT renewal_outcome FROM durable_jobs.renew_job_lease(job_id, claim_token, owner_id)), 'stale',
          'the claim of a cancelled job is stale at once for renew_job_lease')
FROM t12a_job WHERE job_label = 'running';
SELECT throws_ok(format('SELECT durable_jobs.complete_job(%s, %L, %L)', job_id, claim_token, owner_id),
                 'LF001', NULL, 'the claim of a cancelled job is stale at once for complete_job (LF001)')
FROM t12a_job WHERE job_label = 'running';
SELECT is(pg_temp.t12a_status('running'), 'CANCELLED', 'a refused complete_job leaves the cancelled job CANCELLED');
SELECT is_empty($$SELECT * FROM durable_jobs.claim_next_job('t12a.running', 'worker-t07')$$,
                'a cancelled RUNNING job is not claimable');

SELECT is(durable_jobs.cancel_job(job_id), false, 'cancel_job of a SUCCEEDED job returns false')
FROM t12a_job WHERE job_label = 'succeeded';
SELECT is(pg_temp.t12a_status('succeeded'), 'SUCCEEDED', 'a refused cancel leaves a SUCCEEDED job SUCCEEDED');
SELECT is(durable_jobs.cancel_job(job_id), false, 'cancel_job of a FAILED job returns false')
FROM t12a_job WHERE job_label = 'failed';
SELECT is(pg_temp.t12a_status('failed'), 'FAILED', 'a refused cancel leaves a FAILED job FAILED');
SELECT is(durable_jobs.cancel_job(job_id), false, 'cancel_job of an already CANCELLED job returns false')
FROM t12a_job WHERE job_label = 'queued';
SELECT is(durable_jobs.cancel_job(0), false, 'cancel_job of job id 0 returns false');
SELECT is(durable_jobs.cancel_job(-7), false, 'cancel_job of a negative job id returns false');
SELECT is(durable_jobs.cancel_job((SELECT max(job_record_id) + 1000 FROM durable_jobs.job_record)), false,
          'cancel_job of a job id that does not exist returns false');

-- replay_job -----------------------------------------------------------------

-- A job whose only attempt was used up, failed by retry_job: a replay must
-- give it its attempts back or the next claim would fail it again.
DO $$ BEGIN
    PERFORM pg_temp.t12a_job('exhausted', true, 1);
    PERFORM durable_jobs.retry_job(job_id, claim_token, owner_id, interval '0', 'upstream_timeout')
    FROM t12a_job WHERE job_label = 'exhausted';
END $$;
SELECT results_eq(
    format('SELECT job_status, attempt_number, failure_reason_code FROM durable_jobs.job_lifecycle_state(%s)', job_id),
    $$VALUES ('FAILED', 1, 'upstream_timeout'::text)$$,
    'the job to replay has FAILED with its only attempt used')
FROM t12a_job WHERE job_label = 'exhausted';
SELECT is(durable_jobs.replay_job(job_id), true, 'replay_job of a FAILED job returns true')
FROM t12a_job WHERE job_label = 'exhausted';
SELECT results_eq(
    format('SELECT job_status, attempt_number, max_attempts, failure_reason_code, lease_expires_at
            FROM durable_jobs.job_lifecycle_state(%s)', job_id),
    $$VALUES ('QUEUED', 0, 1, NULL::text, NULL::timestamptz)$$,
    'a replayed FAILED job is QUEUED with its attempts starting again and no failure reason')
FROM t12a_job WHERE job_label = 'exhausted';
SELECT is((SELECT renewal_outcome FROM durable_jobs.renew_job_lease(job_id, claim_token, owner_id)), 'stale',
          'the old claim of a replayed job stays stale')
FROM t12a_job WHERE job_label = 'exhausted';
SELECT results_eq(
    $$SELECT job_record_id, attempt_number, lease_fencing_generation FROM durable_jobs.claim_next_job('t12a.exhausted', 'worker-t07')$$,
    format('VALUES (%s::bigint, 1, %s::bigint)', job_id, generation + 1),
    'a replayed FAILED job is claimable at once, as attempt 1, with the next fencing generation')
FROM t12a_job WHERE job_label = 'exhausted';

SELECT is(durable_jobs.replay_job(job_id), true, 'replay_job of a job cancelled while RUNNING returns true')
FROM t12a_job WHERE job_label = 'running';
SELECT results_eq(
    format('SELECT job_status, attempt_number FROM durable_jobs.job_lifecycle_state(%s)', job_id),
    $$VALUES ('QUEUED', 0)$$,
    'a replayed CANCELLED job is QUEUED with its attempts starting again')
FROM t12a_job WHERE job_label = 'running';
SELECT throws_ok(format('SELECT durable_jobs.complete_job(%s, %L, %L)', job_id, claim_token, owner_id),
                 'LF001', NULL, 'the claim that was cancelled stays stale after the replay (LF001)')
FROM t12a_job WHERE job_label = 'running';
SELECT is((SELECT job_record_id FROM durable_jobs.claim_next_job('t12a.running', 'worker-t07')), job_id,
          'a replayed CANCELLED job is claimable at once')
FROM t12a_job WHERE job_label = 'running';
SELECT is(durable_jobs.replay_job(job_id), true, 'replay_job of a job cancelled while QUEUED returns true')
FROM t12a_job WHERE job_label = 'queued';
SELECT is(pg_temp.t12a_status('queued'), 'QUEUED', 'a replayed job cancelled while QUEUED is QUEUED');

DO $$ BEGIN
    PERFORM pg_temp.t12a_job('replay_queued', false);
    PERFORM pg_temp.t12a_job('replay_running', true);
    PERFORM pg_temp.t12a_job('replay_retry', true);
    PERFORM durable_jobs.retry_job(job_id, claim_token, owner_id, interval '1 hour', 'transient_error')
    FROM t12a_job WHERE job_label = 'replay_retry';
END $$;
SELECT is(durable_jobs.replay_job(job_id), false, 'replay_job of a QUEUED job returns false')
FROM t12a_job WHERE job_label = 'replay_queued';
SELECT is(durable_jobs.replay_job(job_id), false, 'replay_job of a RUNNING job returns false')
FROM t12a_job WHERE job_label = 'replay_running';
SELECT results_eq(
    format('SELECT job_status, attempt_number, lease_fencing_generation, lease_expires_at
            FROM durable_jobs.job_lifecycle_state(%s)', job_id),
    format('VALUES (''RUNNING'', 1, %s::bigint, %L::timestamptz)', generation, lease_expires_at),
    'a refused replay leaves the RUNNING job and its lease as they were')
FROM t12a_job WHERE job_label = 'replay_running';
SELECT is((SELECT renewal_outcome FROM durable_jobs.renew_job_lease(job_id, claim_token, owner_id)), 'renewed',
          'a refused replay leaves the running claim valid')
FROM t12a_job WHERE job_label = 'replay_running';
SELECT is(durable_jobs.replay_job(job_id), false, 'replay_job of a RETRY_SCHEDULED job returns false')
FROM t12a_job WHERE job_label = 'replay_retry';
SELECT results_eq(
    format('SELECT job_status, attempt_number, failure_reason_code FROM durable_jobs.job_lifecycle_state(%s)', job_id),
    $$VALUES ('RETRY_SCHEDULED', 1, 'transient_error'::text)$$,
    'a refused replay leaves the RETRY_SCHEDULED job as it was')
FROM t12a_job WHERE job_label = 'replay_retry';
SELECT is(durable_jobs.replay_job(job_id), false, 'replay_job of a SUCCEEDED job returns false')
FROM t12a_job WHERE job_label = 'succeeded';
SELECT is(pg_temp.t12a_status('succeeded'), 'SUCCEEDED', 'a refused replay leaves a SUCCEEDED job SUCCEEDED');
SELECT is(durable_jobs.replay_job(0), false, 'replay_job of job id 0 returns false');
SELECT is(durable_jobs.replay_job(-7), false, 'replay_job of a negative job id returns false');
SELECT is(durable_jobs.replay_job((SELECT max(job_record_id) + 1000 FROM durable_jobs.job_record)), false,
          'replay_job of a job id that does not exist returns false');

-- Who may call them: cancel is a producer function, replay an operator one.
SET LOCAL ROLE durable_job_producer;
SELECT throws_ok('SELECT durable_jobs.replay_job(0)', '42501', NULL, 'a producer cannot replay a job');
SELECT is(durable_jobs.cancel_job(0), false, 'a producer may cancel');
RESET ROLE;
SET LOCAL ROLE durable_job_operator;
SELECT is(durable_jobs.replay_job(0), false, 'an operator may replay');
SELECT is(durable_jobs.cancel_job(0), false, 'an operator may cancel (it holds every producer function)');
RESET ROLE;

-- job_lifecycle_state --------------------------------------------------------

SELECT is(
    ARRAY(SELECT a.arg_name
          FROM pg_proc p,
               unnest(p.proargnames, p.proargmodes) WITH ORDINALITY AS a(arg_name, arg_mode, arg_position)
          WHERE p.oid = 'durable_jobs.job_lifecycle_state(bigint)'::regprocedure AND a.arg_mode = 't'
          ORDER BY a.arg_position),
    ARRAY['job_status', 'attempt_number', 'max_attempts', 'lease_fencing_generation', 'lease_expires_at',
          'lease_renewal_count', 'failure_reason_code']::name[]::text[],
    'job_lifecycle_state returns exactly the contract''s columns, in order');
SELECT is(
    ARRAY(SELECT k FROM jsonb_object_keys(
              (SELECT to_jsonb(s) FROM t12a_job j, durable_jobs.job_lifecycle_state(j.job_id) s
               WHERE j.job_label = 'replay_running')) AS k
          WHERE k ~ '(payload|token|digest|owner|idempotency)'),
    ARRAY[]::text[],
    'a job_lifecycle_state row has no payload, token, digest, owner or idempotency key column');
SELECT results_eq(
    format('SELECT job_status, attempt_number, max_attempts, lease_fencing_generation, lease_renewal_count,
                   failure_reason_code, lease_expires_at > %L::timestamptz
            FROM durable_jobs.job_lifecycle_state(%s)', lease_expires_at, job_id),
    $$VALUES ('RUNNING', 1, 5, 1::bigint, 1::bigint, NULL::text, true)$$,
    'job_lifecycle_state shows a renewed running job: attempt, limits, generation, renewal count and extended expiry')
FROM t12a_job WHERE job_label = 'replay_running';
SELECT ok(s::text NOT LIKE '%' || j.owner_id || '%' AND s::text NOT LIKE '%' || j.claim_token::text || '%'
          AND s::text NOT LIKE '%pat.t07@example.com%',
          'a job_lifecycle_state row carries neither the owner id, the token nor any payload value')
FROM t12a_job j, durable_jobs.job_lifecycle_state(j.job_id) s WHERE j.job_label = 'replay_running';
SELECT is_empty('SELECT * FROM durable_jobs.job_lifecycle_state(0)', 'job_lifecycle_state of job id 0 has zero rows');
SELECT is_empty('SELECT * FROM durable_jobs.job_lifecycle_state(-7)',
                'job_lifecycle_state of a negative job id has zero rows');
SELECT is_empty('SELECT * FROM durable_jobs.job_lifecycle_state((SELECT max(job_record_id) + 1000 FROM durable_jobs.job_record))',
                'job_lifecycle_state of a job id that does not exist has zero rows');

-- ============================================================================
-- The record of operator actions: migration 026 (issue 39, items 1, 2 and 4).
-- Operator actions on jobs are on record: every cancel, replay and erasure
-- appends to the job's action trail (operator_job_actions: who, when, why,
-- ticket, approver); a cancel with a reason and every replay also append
-- chained job_cancelled / job_replayed evidence with the queue and the
-- status, never the job id; a change record that is not structured is
-- refused with LF002 and changes nothing. continue_evidence_chain names the
-- head of an export kept outside. The retention policy and the
-- change-control setting record every change of their rows as evidence,
-- whoever makes it and however (a superuser's direct UPDATE, INSERT or
-- DELETE included), and refuse what would change them without a row
-- trigger (TRUNCATE, and DELETE of the change-control row). The audit finds
-- a control changed with its evidence trigger disabled
-- (control_evidence_mismatches) and finished jobs whose status no fenced
-- write explains (job_status_mismatches).
-- ============================================================================

-- Fixtures -------------------------------------------------------------------------

-- The logins that act: two operators (one approves the other's changes), a
-- producer and a worker (never an acceptable approver).
CREATE ROLE t12b_operator LOGIN IN ROLE durable_job_operator;
CREATE ROLE t12b_approver LOGIN IN ROLE durable_job_operator;
CREATE ROLE t12b_producer LOGIN IN ROLE durable_job_producer;
CREATE ROLE t12b_worker LOGIN IN ROLE durable_job_worker;

CREATE TEMP TABLE t12b_job (job_label text PRIMARY KEY, job_id bigint NOT NULL);
GRANT ALL ON t12b_job TO PUBLIC;

-- One job in its own queue (t12b.<label>), left QUEUED, RUNNING, SUCCEEDED or
-- FAILED (fail_job).
CREATE FUNCTION pg_temp.t12b_job(p_job_label text, p_state text, p_max_attempts integer DEFAULT 5)
RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    v_queue_name text := 't12b.' || p_job_label;
    v_payload jsonb := jsonb_build_object('t27', p_job_label);
    v_job_id bigint;
    v_token uuid;
BEGIN
    IF p_state = 'queued' THEN
        v_job_id := durable_jobs.enqueue_job(v_queue_name, v_payload, NULL, NULL, p_max_attempts);
    ELSE
        v_job_id := pg_temp.enqueue_and_claim(p_job_label, v_queue_name, 'worker-t27', p_max_attempts, v_payload);
        SELECT c.lease_claim_token INTO STRICT v_token FROM claims c WHERE c.label = p_job_label;
        IF p_state = 'succeeded' THEN
            PERFORM durable_jobs.complete_job(v_job_id, v_token, 'worker-t27');
        ELSIF p_state = 'failed' THEN
            PERFORM durable_jobs.fail_job(v_job_id, v_token, 'worker-t27', 'bad_payload');
        END IF;
    END IF;
    INSERT INTO t12b_job VALUES (p_job_label, v_job_id);
    RETURN v_job_id;
END $$;

CREATE FUNCTION pg_temp.t12b_id(p_job_label text)
RETURNS bigint LANGUAGE sql AS $$
    SELECT j.job_id FROM t12b_job j WHERE j.job_label = p_job_label;
$$;

CREATE FUNCTION pg_temp.t12b_status(p_job_label text)
RETURNS text LANGUAGE sql AS $$
    SELECT r.job_status::text FROM durable_jobs.job_record r WHERE r.job_record_id = pg_temp.t12b_id(p_job_label);
$$;

-- A mark: the newest evidence id and the number of trail rows at a point.
CREATE TEMP TABLE t12b_mark (mark_label text PRIMARY KEY, evidence_id bigint NOT NULL, trail_rows bigint NOT NULL);
CREATE FUNCTION pg_temp.t12b_mark(p_mark_label text)
RETURNS void LANGUAGE sql AS $$
    INSERT INTO t12b_mark
    SELECT p_mark_label, (SELECT max(e.evidence_record_id) FROM durable_jobs.control_evidence_record e),
           (SELECT count(*) FROM durable_jobs.job_action_record);
$$;

-- The evidence appended since a mark, oldest first.
CREATE FUNCTION pg_temp.t12b_since(p_mark_label text)
RETURNS SETOF durable_jobs.control_evidence_record LANGUAGE sql AS $$
    SELECT e.* FROM durable_jobs.control_evidence_record e
    WHERE e.evidence_record_id > (SELECT m.evidence_id FROM t12b_mark m WHERE m.mark_label = p_mark_label)
    ORDER BY e.evidence_record_id;
$$;

-- true when no evidence and no trail row was added since a mark.
CREATE FUNCTION pg_temp.t12b_unchanged(p_mark_label text)
RETURNS boolean LANGUAGE sql AS $$
    SELECT (SELECT max(e.evidence_record_id) FROM durable_jobs.control_evidence_record e) = m.evidence_id
       AND (SELECT count(*) FROM durable_jobs.job_action_record) = m.trail_rows
    FROM t12b_mark m WHERE m.mark_label = p_mark_label;
$$;

DO $setup$
BEGIN
    PERFORM pg_temp.t12b_job('p_queued', 'queued');
    PERFORM pg_temp.t12b_job('o_queued', 'queued');
    PERFORM pg_temp.t12b_job('o_running', 'running');
    PERFORM pg_temp.t12b_job('o_failed', 'failed');
    PERFORM pg_temp.t12b_job('n_failed', 'failed');
    PERFORM pg_temp.t12b_job('r_queued', 'queued');
    PERFORM pg_temp.t12b_job('r_failed', 'failed');
    PERFORM pg_temp.t12b_job('u_succeeded', 'succeeded');
    PERFORM pg_temp.t12b_job('trail', 'queued');
    PERFORM pg_temp.t12b_job('ca_queued', 'queued');
    PERFORM pg_temp.t12b_job('ca_queued2', 'queued');
    PERFORM pg_temp.t12b_job('ca_failed', 'failed');
    PERFORM pg_temp.t12b_job('s_forged', 'failed');
    PERFORM pg_temp.t12b_job('s_forged_fail', 'succeeded');
    -- One attempt and a 1 s lease: a claim after it expires fails the job
    -- (attempts_exhausted) without an outcome.
    PERFORM durable_jobs.set_queue_lease_policy('t12b.s_exhausted', interval '1 second', interval '200 milliseconds',
                                                interval '1 hour', true, 'pgTAP 12: 1 s leases for attempts used up');
    PERFORM pg_temp.t12b_job('s_exhausted', 'running', 1);
    -- Finished by the other fenced writes: a batch completion, and a
    -- completion at the second generation after a replay.
    PERFORM pg_temp.t12b_job('s_batch', 'running');
    PERFORM durable_jobs.complete_jobs('worker-t27', ARRAY[c.job_record_id], ARRAY[c.lease_claim_token])
    FROM claims c WHERE c.label = 's_batch';
    PERFORM pg_temp.t12b_job('s_replayed', 'failed');
    PERFORM durable_jobs.replay_job(pg_temp.t12b_id('s_replayed'), 'CHG-2700: replay in the fixture');
    PERFORM pg_temp.claim_job('s_replayed_again', 't12b.s_replayed', 'worker-t27');
    PERFORM durable_jobs.complete_job(c.job_record_id, c.lease_claim_token, 'worker-t27')
    FROM claims c WHERE c.label = 's_replayed_again';
    PERFORM pg_temp.t12b_mark('start');
END
$setup$;

-- A producer's cancel: on the trail, no evidence --------------------------------------

SET SESSION AUTHORIZATION t12b_producer;
SELECT is(durable_jobs.cancel_job(pg_temp.t12b_id('p_queued')), true, 'a producer cancels a QUEUED job');
RESET SESSION AUTHORIZATION;
SELECT is(pg_temp.t12b_status('p_queued'), 'CANCELLED', 'the job is CANCELLED');
SELECT results_eq(
    $$SELECT action_kind, acted_by_role, change_reason, change_ticket, change_approver, acted_at IS NOT NULL
      FROM durable_jobs.operator_job_actions(pg_temp.t12b_id('p_queued'))$$,
    $$VALUES ('cancelled'::text, 't12b_producer'::text, NULL::text, NULL::text, NULL::text, true)$$,
    'the producer''s cancel is one trail row: cancelled, by the producer''s login, with no reason');
SELECT is_empty($$SELECT * FROM pg_temp.t12b_since('start')$$,
    'a producer''s cancel, which takes no reason, appends no evidence');

-- An operator's cancel and replay with a reason: trail and chained evidence -------------

DO $$ BEGIN PERFORM pg_temp.t12b_mark('operator'); END $$;
SET SESSION AUTHORIZATION t12b_operator;
SELECT is(durable_jobs.cancel_job(pg_temp.t12b_id('o_queued'), 'CHG-2701: stop a duplicate run', 'CHG-2701', 't12b_approver'),
    true, 'an operator cancels a QUEUED job with a reason, a ticket and an approver');
SELECT is(durable_jobs.cancel_job(pg_temp.t12b_id('o_running'), 'CHG-2702: stop the runaway export'),
    true, 'an operator cancels a RUNNING job with a reason only');
SELECT is(durable_jobs.replay_job(pg_temp.t12b_id('o_failed'), 'CHG-2703: replay after the fix', 'CHG-2703'),
    true, 'an operator replays a FAILED job with a reason and a ticket');
SELECT results_eq(
    $$SELECT action_kind, acted_by_role, change_reason, change_ticket, change_approver
      FROM durable_jobs.operator_job_actions(pg_temp.t12b_id('o_queued'))$$,
    $$VALUES ('cancelled'::text, 't12b_operator'::text, 'CHG-2701: stop a duplicate run'::text, 'CHG-2701'::text,
              't12b_approver'::text)$$,
    'operator_job_actions shows the cancel with its login, reason, ticket and approver');
RESET SESSION AUTHORIZATION;
SELECT is(pg_temp.t12b_status('o_queued') || ' ' || pg_temp.t12b_status('o_running') || ' ' || pg_temp.t12b_status('o_failed'),
    'CANCELLED CANCELLED QUEUED', 'the two jobs are CANCELLED and the replayed one QUEUED');
SELECT results_eq(
    $$SELECT evidence_kind, queue_name, previous_values, new_values, change_reason, change_ticket, change_approver,
             changed_by_role
      FROM pg_temp.t12b_since('operator')$$,
    $$VALUES ('job_cancelled'::text, 't12b.o_queued'::text, '{"job_status": "QUEUED"}'::jsonb, '{"job_status": "CANCELLED"}'::jsonb,
              'CHG-2701: stop a duplicate run'::text, 'CHG-2701'::text, 't12b_approver'::text, 't12b_operator'::text),
             ('job_cancelled', 't12b.o_running', '{"job_status": "RUNNING"}', '{"job_status": "CANCELLED"}',
              'CHG-2702: stop the runaway export', NULL, NULL, 't12b_operator'),
             ('job_replayed', 't12b.o_failed', '{"job_status": "FAILED"}', '{"job_status": "QUEUED"}',
              'CHG-2703: replay after the fix', 'CHG-2703', NULL, 't12b_operator')$$,
    'each reasoned action appends one chained record with the queue, the status before and after, the change record and the login');
SELECT is((SELECT count(*)::integer FROM durable_jobs.job_action_record a
           WHERE a.job_record_id IN (pg_temp.t12b_id('o_queued'), pg_temp.t12b_id('o_running'), pg_temp.t12b_id('o_failed'))),
          3, 'each of the three actions is one trail row');
SELECT is_empty(
    $$SELECT e.evidence_record_id FROM durable_jobs.control_evidence_record e
      WHERE e.evidence_kind IN ('job_cancelled', 'job_replayed')
        AND (ARRAY(SELECT jsonb_object_keys(e.previous_values)) <> ARRAY['job_status']
             OR ARRAY(SELECT jsonb_object_keys(e.new_values)) <> ARRAY['job_status'])$$,
    'job action evidence holds the status and nothing else: never the job id or anything of the payload');

-- A replay without a reason --------------------------------------------------------------

DO $$ BEGIN PERFORM pg_temp.t12b_mark('no_reason'); END $$;
SET SESSION AUTHORIZATION t12b_operator;
SELECT is(durable_jobs.replay_job(pg_temp.t12b_id('n_failed')), true, 'an operator replays a FAILED job without a reason');
SELECT results_eq(
    $$SELECT action_kind, acted_by_role, change_reason, change_ticket, change_approver
      FROM durable_jobs.operator_job_actions(pg_temp.t12b_id('n_failed'))$$,
    $$VALUES ('replayed'::text, 't12b_operator'::text, 'replayed without a reason'::text, NULL::text, NULL::text)$$,
    'the replay is on the trail as ''replayed without a reason''');
RESET SESSION AUTHORIZATION;
SELECT results_eq(
    $$SELECT evidence_kind, queue_name, previous_values, new_values, change_reason, change_ticket, change_approver
      FROM pg_temp.t12b_since('no_reason')$$,
    $$VALUES ('job_replayed'::text, 't12b.n_failed'::text, '{"job_status": "FAILED"}'::jsonb, '{"job_status": "QUEUED"}'::jsonb,
              'replayed without a reason'::text, NULL::text, NULL::text)$$,
    'a replay without a reason is job_replayed evidence too, recorded as ''replayed without a reason''');
SELECT results_eq(
    $$SELECT job_status, attempt_number FROM durable_jobs.job_lifecycle_state(pg_temp.t12b_id('n_failed'))$$,
    $$VALUES ('QUEUED'::text, 0)$$, 'the replayed job is QUEUED with its attempts starting again');

-- Refused change records: LF002, nothing changed -------------------------------------------

DO $$ BEGIN PERFORM pg_temp.t12b_mark('refused'); END $$;
SET SESSION AUTHORIZATION t12b_operator;
SELECT throws_ok(format('SELECT durable_jobs.cancel_job(%s, NULL)', pg_temp.t12b_id('r_queued')),
    'LF002', 'invalid change record', 'a cancel with a NULL reason through the reasoned overload is refused');
SELECT throws_ok(format('SELECT durable_jobs.cancel_job(%s, %L)', pg_temp.t12b_id('r_queued'), '   '),
    'LF002', 'invalid change record', 'a cancel with a blank reason is refused');
SELECT throws_ok(format('SELECT durable_jobs.cancel_job(%s, %L)', pg_temp.t12b_id('r_queued'), 'CHG-2704: call 010-1234-5678'),
    'LF002', 'invalid change record', 'a cancel whose reason looks like personal data is refused');
SELECT throws_ok(format('SELECT durable_jobs.cancel_job(%s, %L, %L)', pg_temp.t12b_id('r_queued'), 'CHG-2704: stop', 'not a ticket'),
    'LF002', 'invalid change record', 'a cancel with a ticket outside the ticket pattern is refused');
SELECT throws_ok(format('SELECT durable_jobs.cancel_job(%s, %L, %L, %L)', pg_temp.t12b_id('r_queued'), 'CHG-2704: stop',
        'CHG-2704', 't12b_worker'),
    'LF002', 'invalid change record', 'a cancel approved by a login that does not hold durable_job_operator is refused');
SELECT throws_ok(format('SELECT durable_jobs.cancel_job(%s, %L, %L, %L)', pg_temp.t12b_id('r_queued'), 'CHG-2704: stop',
        'CHG-2704', 't12b_operator'),
    'LF002', 'invalid change record', 'a cancel approved by the cancelling login is refused (approver_must_differ)');
SELECT throws_ok(format('SELECT durable_jobs.replay_job(%s, %L)', pg_temp.t12b_id('r_failed'), ''),
    'LF002', 'invalid change record', 'a replay with an empty reason is refused');
SELECT throws_ok(format('SELECT durable_jobs.replay_job(%s, %L, NULL, %L)', pg_temp.t12b_id('r_failed'), 'CHG-2704: replay',
        't12b_worker'),
    'LF002', 'invalid change record', 'a replay approved by a worker login is refused');
RESET SESSION AUTHORIZATION;
SELECT is(pg_temp.t12b_status('r_queued') || ' ' || pg_temp.t12b_status('r_failed'), 'QUEUED FAILED',
    'the refused actions left both jobs as they were');
SELECT ok(pg_temp.t12b_unchanged('refused'), 'the refused actions wrote no trail row and no evidence');

-- NULL ids: LF003 -------------------------------------------------------------------------

SET SESSION AUTHORIZATION t12b_producer;
SELECT throws_ok($$SELECT durable_jobs.cancel_job(NULL::bigint)$$, 'LF003', 'job id is required',
    'a producer''s cancel of a NULL id is refused with LF003');
RESET SESSION AUTHORIZATION;
SET SESSION AUTHORIZATION t12b_operator;
SELECT throws_ok($$SELECT durable_jobs.cancel_job(NULL, 'CHG-2705: stop')$$, 'LF003', 'job id is required',
    'a reasoned cancel of a NULL id is refused with LF003');
SELECT throws_ok($$SELECT durable_jobs.replay_job(NULL::bigint)$$, 'LF003', 'job id is required',
    'a replay of a NULL id is refused with LF003');
SELECT throws_ok($$SELECT durable_jobs.replay_job(NULL, 'CHG-2705: replay')$$, 'LF003', 'job id is required',
    'a reasoned replay of a NULL id is refused with LF003');
SELECT throws_ok($$SELECT * FROM durable_jobs.operator_job_actions(NULL)$$, 'LF003', 'job id is required',
    'operator_job_actions of a NULL id is refused with LF003');

-- Unknown and terminal jobs: false, nothing recorded -------------------------------------

SELECT is(durable_jobs.cancel_job(0, 'CHG-2705: stop'), false, 'a reasoned cancel of an unknown job answers false');
SELECT is(durable_jobs.cancel_job(pg_temp.t12b_id('u_succeeded'), 'CHG-2705: stop'), false,
    'a reasoned cancel of a SUCCEEDED job answers false');
SELECT is(durable_jobs.replay_job(0), false, 'a replay of an unknown job answers false');
SELECT is(durable_jobs.replay_job(pg_temp.t12b_id('u_succeeded'), 'CHG-2705: replay'), false,
    'a reasoned replay of a SUCCEEDED job answers false');
SELECT is(durable_jobs.replay_job(pg_temp.t12b_id('r_queued')), false, 'a replay of a QUEUED job answers false');
SELECT is_empty($$SELECT * FROM durable_jobs.operator_job_actions(pg_temp.t12b_id('u_succeeded'))$$,
    'a job nobody acted on has an empty trail');
SELECT is_empty($$SELECT * FROM durable_jobs.operator_job_actions(0)$$, 'an unknown job has an empty trail');
RESET SESSION AUTHORIZATION;
SET SESSION AUTHORIZATION t12b_producer;
SELECT is(durable_jobs.cancel_job(pg_temp.t12b_id('u_succeeded')), false, 'a producer''s cancel of a SUCCEEDED job answers false');
RESET SESSION AUTHORIZATION;
SELECT ok(pg_temp.t12b_unchanged('refused'), 'actions that answered false wrote no trail row and no evidence');

-- One job's trail, oldest first; an erasure is on it -----------------------------------

DO $$ BEGIN PERFORM pg_temp.t12b_mark('trail'); END $$;
SET SESSION AUTHORIZATION t12b_producer;
SELECT is(durable_jobs.cancel_job(pg_temp.t12b_id('trail')), true, 'the producer cancels the trail job');
RESET SESSION AUTHORIZATION;
SET SESSION AUTHORIZATION t12b_operator;
SELECT is(durable_jobs.replay_job(pg_temp.t12b_id('trail'), 'CHG-2706: replay after the fix', 'CHG-2706'), true,
    'an operator replays it');
SELECT is(durable_jobs.cancel_job(pg_temp.t12b_id('trail'), 'CHG-2706: cancel again', NULL, 't12b_approver'), true,
    'an operator cancels it again, with an approver');
SELECT is(durable_jobs.erase_job_payload(pg_temp.t12b_id('trail'), 'CHG-2707: erasure request', 'CHG-2707', 't12b_approver'),
    true, 'an operator erases its payload with a ticket and an approver');
SELECT results_eq(
    $$SELECT action_kind, acted_by_role, change_reason, change_ticket, change_approver
      FROM durable_jobs.operator_job_actions(pg_temp.t12b_id('trail'))$$,
    $$VALUES ('cancelled'::text, 't12b_producer'::text, NULL::text, NULL::text, NULL::text),
             ('replayed', 't12b_operator', 'CHG-2706: replay after the fix', 'CHG-2706', NULL),
             ('cancelled', 't12b_operator', 'CHG-2706: cancel again', NULL, 't12b_approver'),
             ('payload_erased', 't12b_operator', 'CHG-2707: erasure request', 'CHG-2707', 't12b_approver')$$,
    'operator_job_actions lists every action on the job, oldest first, the erasure included');
SELECT ok((SELECT bool_and(a.acted_at >= a.previous_at)
           FROM (SELECT t.acted_at, lag(t.acted_at) OVER (ORDER BY t.n) AS previous_at
                 FROM durable_jobs.operator_job_actions(pg_temp.t12b_id('trail')) WITH ORDINALITY
                      AS t(action_kind, acted_at, acted_by_role, change_reason, change_ticket, change_approver, n)) a
           WHERE a.previous_at IS NOT NULL),
          'the trail is in the order of the actions'' database times');
RESET SESSION AUTHORIZATION;
SELECT results_eq(
    $$SELECT evidence_kind, queue_name, new_values, change_reason, change_ticket, change_approver, changed_by_role
      FROM pg_temp.t12b_since('trail')$$,
    $$VALUES ('job_replayed'::text, 't12b.trail'::text, '{"job_status": "QUEUED"}'::jsonb, 'CHG-2706: replay after the fix'::text,
              'CHG-2706'::text, NULL::text, 't12b_operator'::text),
             ('job_cancelled', 't12b.trail', '{"job_status": "CANCELLED"}', 'CHG-2706: cancel again', NULL, 't12b_approver',
              't12b_operator'),
             ('job_payload_erased', 't12b.trail',
              '{"job_status": "CANCELLED", "payload_erased": true, "result_documents_cleared": true}',
              'CHG-2707: erasure request', 'CHG-2707', 't12b_approver', 't12b_operator')$$,
    'the reasoned actions and the erasure are evidence (the erasure with its ticket and approver); the producer''s cancel is not');

-- continue_evidence_chain ------------------------------------------------------------------

DO $$ BEGIN PERFORM pg_temp.t12b_mark('continued'); END $$;
SET SESSION AUTHORIZATION t12b_operator;
SELECT throws_ok($$SELECT durable_jobs.continue_evidence_chain(NULL, decode(repeat('ab', 32), 'hex'), 'CHG-2708: restored')$$,
    'LF003', 'invalid chain head', 'a NULL head id is refused with LF003');
SELECT throws_ok($$SELECT durable_jobs.continue_evidence_chain(0, decode(repeat('ab', 32), 'hex'), 'CHG-2708: restored')$$,
    'LF003', 'invalid chain head', 'a head id of 0 is refused with LF003');
SELECT throws_ok($$SELECT durable_jobs.continue_evidence_chain(41, NULL, 'CHG-2708: restored')$$,
    'LF003', 'invalid chain head', 'a NULL head hash is refused with LF003');
SELECT throws_ok($$SELECT durable_jobs.continue_evidence_chain(41, decode(repeat('ab', 31), 'hex'), 'CHG-2708: restored')$$,
    'LF003', 'invalid chain head', 'a head hash of 31 bytes is refused with LF003');
SELECT throws_ok($$SELECT durable_jobs.continue_evidence_chain(41, decode(repeat('ab', 33), 'hex'), 'CHG-2708: restored')$$,
    'LF003', 'invalid chain head', 'a head hash of 33 bytes is refused with LF003');
SELECT throws_ok($$SELECT durable_jobs.continue_evidence_chain(41, decode(repeat('ab', 32), 'hex'), 'CHG-2708: call 010-1234-5678')$$,
    'LF002', 'invalid change record', 'a reason that looks like personal data is refused with LF002');
SELECT throws_ok($$SELECT durable_jobs.continue_evidence_chain(41, decode(repeat('ab', 32), 'hex'), 'CHG-2708: restored',
        'CHG-2708', 't12b_worker')$$,
    'LF002', 'invalid change record', 'an approver that does not hold durable_job_operator is refused with LF002');
RESET SESSION AUTHORIZATION;
SELECT ok(pg_temp.t12b_unchanged('continued'), 'the refused continuations wrote nothing');
SET SESSION AUTHORIZATION t12b_operator;
CREATE TEMP TABLE t12b_continued AS
SELECT durable_jobs.continue_evidence_chain(41, decode(repeat('ab', 32), 'hex'), 'CHG-2708: restored the backup of 03:00',
    'CHG-2708', 't12b_approver') AS evidence_record_id;
RESET SESSION AUTHORIZATION;
SELECT results_eq(
    $$SELECT evidence_record_id, evidence_kind, queue_name, previous_values, new_values, change_reason, change_ticket,
             change_approver, changed_by_role
      FROM pg_temp.t12b_since('continued')$$,
    format($$VALUES (%s::bigint, 'evidence_chain_continued'::text, NULL::text, NULL::jsonb,
                     jsonb_build_object('previous_head_id', 41, 'previous_head_hash', %L),
                     'CHG-2708: restored the backup of 03:00'::text, 'CHG-2708'::text, 't12b_approver'::text,
                     't12b_operator'::text)$$,
           (SELECT evidence_record_id FROM t12b_continued), repeat('ab', 32)),
    'an accepted continuation is one evidence_chain_continued record naming the head id and its hash in lowercase hex, and returns its id');

-- The retention policy records every change of its rows --------------------------------

DO $$ BEGIN PERFORM pg_temp.t12b_mark('retention'); END $$;
SET SESSION AUTHORIZATION t12b_operator;
SELECT lives_ok($$SELECT durable_jobs.set_queue_retention_policy('t12b.kept', '2 days', '20 days', 'CHG-2709: keep less',
        'CHG-2709', 't12b_approver')$$,
    'an operator sets a queue''s retention with a ticket and an approver');
RESET SESSION AUTHORIZATION;
UPDATE durable_jobs.queue_retention_policy SET record_retention = '21 days' WHERE queue_name = 't12b.kept';
INSERT INTO durable_jobs.queue_retention_policy (queue_name, payload_retention, record_retention, changed_at, changed_by_role)
VALUES ('t12b.direct', '2 days', '10 days', '2000-01-01 00:00+00', 'someone_else');
SELECT results_eq(
    $$SELECT changed_by_role, changed_at > '2000-01-01 00:00+00'
      FROM durable_jobs.queue_retention_policies() WHERE queue_name IN ('t12b.kept', 't12b.direct') ORDER BY queue_name$$,
    $$VALUES (session_user::text COLLATE "default", true), (session_user::text, true)$$,
    'a direct INSERT or UPDATE names session_user and the database time, whatever the statement wrote');
UPDATE durable_jobs.queue_retention_policy SET record_retention = '20 days' WHERE queue_name = 't12b.direct';
SELECT throws_ok($$UPDATE durable_jobs.queue_retention_policy SET queue_name = 't12b.renamed' WHERE queue_name = 't12b.direct'$$,
    'LF002', 'a queue''s retention policy row cannot be renamed', 'renaming a queue''s retention row is refused with LF002');
DELETE FROM durable_jobs.queue_retention_policy WHERE queue_name = 't12b.direct';
SELECT throws_ok($$TRUNCATE durable_jobs.queue_retention_policy$$,
    'LF002', 'TRUNCATE of queue_retention_policy is refused', 'TRUNCATE of the retention policy is refused with LF002');
-- A superuser who gives a reason gives it as the functions do.
DO $$
BEGIN
    PERFORM set_config('leasefence.change_reason', 'CHG-2710: manual correction', true),
            set_config('leasefence.change_ticket', 'CHG-2710', true);
    UPDATE durable_jobs.queue_retention_policy SET payload_retention = '31 days' WHERE queue_name = '*';
    PERFORM set_config('leasefence.change_reason', '', true), set_config('leasefence.change_ticket', '', true);
END $$;
DELETE FROM durable_jobs.queue_retention_policy WHERE queue_name = '*';
INSERT INTO durable_jobs.queue_retention_policy (queue_name, payload_retention, record_retention)
VALUES ('*', '30 days', '365 days');
SELECT results_eq(
    $$SELECT queue_name, previous_values, new_values, change_reason, change_ticket, change_approver,
             changed_by_role = session_user
      FROM pg_temp.t12b_since('retention') WHERE evidence_kind = 'retention_policy_changed'$$,
    $$VALUES ('t12b.kept'::text,
              '{"policy_queue_name": "*", "payload_retention": "30 days", "record_retention": "365 days"}'::jsonb,
              '{"policy_queue_name": "t12b.kept", "payload_retention": "48:00:00", "record_retention": "480:00:00"}'::jsonb,
              'CHG-2709: keep less'::text, 'CHG-2709'::text, 't12b_approver'::text, false),
             ('t12b.kept',
              '{"policy_queue_name": "t12b.kept", "payload_retention": "48:00:00", "record_retention": "480:00:00"}',
              '{"policy_queue_name": "t12b.kept", "payload_retention": "48:00:00", "record_retention": "21 days"}',
              'direct table change without a reason', NULL, NULL, true),
             ('t12b.direct',
              '{"policy_queue_name": "*", "payload_retention": "30 days", "record_retention": "365 days"}',
              '{"policy_queue_name": "t12b.direct", "payload_retention": "2 days", "record_retention": "10 days"}',
              'direct table change without a reason', NULL, NULL, true),
             ('t12b.direct',
              '{"policy_queue_name": "t12b.direct", "payload_retention": "2 days", "record_retention": "10 days"}',
              '{"policy_queue_name": "t12b.direct", "payload_retention": "2 days", "record_retention": "20 days"}',
              'direct table change without a reason', NULL, NULL, true),
             ('t12b.direct',
              '{"policy_queue_name": "t12b.direct", "payload_retention": "2 days", "record_retention": "20 days"}',
              '{"policy_queue_name": "*", "payload_retention": "30 days", "record_retention": "365 days"}',
              'direct table change without a reason', NULL, NULL, true),
             ('*',
              '{"policy_queue_name": "*", "payload_retention": "30 days", "record_retention": "365 days"}',
              '{"policy_queue_name": "*", "payload_retention": "31 days", "record_retention": "365 days"}',
              'CHG-2710: manual correction', 'CHG-2710', NULL, true),
             ('*',
              '{"policy_queue_name": "*", "payload_retention": "31 days", "record_retention": "365 days"}',
              '{"policy_queue_name": null}',
              'direct table change without a reason', NULL, NULL, true),
             ('*', NULL,
              '{"policy_queue_name": "*", "payload_retention": "30 days", "record_retention": "365 days"}',
              'direct table change without a reason', NULL, NULL, true)$$,
    'every change of the retention table is one record with the effective retention before and after: the function''s with its change record, a superuser''s direct UPDATE, INSERT and DELETE as ''direct table change without a reason'' by session_user (the function''s reason does not carry over), one with a reason the superuser set as given');
SELECT is((SELECT count(*)::integer FROM pg_temp.t12b_since('retention')), 8,
    'the refused rename and TRUNCATE wrote nothing');

-- The change-control setting records every change of its row ------------------------------

DO $$ BEGIN PERFORM pg_temp.t12b_mark('change_control'); END $$;
UPDATE durable_jobs.change_control_setting SET ticket_pattern = '^[A-Z]+-[0-9]+$', changed_by_role = 'someone_else';
SELECT results_eq(
    $$SELECT evidence_kind, previous_values, new_values, change_reason, change_ticket, change_approver,
             changed_by_role = session_user
      FROM pg_temp.t12b_since('change_control')$$,
    $$VALUES ('change_control_changed'::text,
              '{"ticket_pattern": "^[A-Z][A-Z0-9]+-[0-9]+$", "require_approver": false, "approver_must_differ": true, "reason_pattern": null, "require_second_operator": false, "proposal_lifetime": "24:00:00"}'::jsonb,
              '{"ticket_pattern": "^[A-Z]+-[0-9]+$", "require_approver": false, "approver_must_differ": true, "reason_pattern": null, "require_second_operator": false, "proposal_lifetime": "24:00:00"}'::jsonb,
              'direct table change without a reason'::text, NULL::text, NULL::text, true)$$,
    'a superuser''s direct UPDATE of the change control is one record with every setting before and after, by session_user');
SELECT ok((SELECT changed_by_role = session_user FROM durable_jobs.change_control()),
    'change_control() names the login that changed it directly, not what the statement wrote');
SELECT throws_ok($$DELETE FROM durable_jobs.change_control_setting$$,
    'LF002', 'DELETE of change_control_setting is refused', 'DELETE of the change-control row is refused with LF002');
SELECT throws_ok($$TRUNCATE durable_jobs.change_control_setting$$,
    'LF002', 'TRUNCATE of change_control_setting is refused', 'TRUNCATE of the change control is refused with LF002');
SELECT is((SELECT count(*)::integer FROM pg_temp.t12b_since('change_control')), 1,
    'the refused DELETE and TRUNCATE wrote nothing');

-- Under require_approver ------------------------------------------------------------------

SET SESSION AUTHORIZATION t12b_operator;
SELECT lives_ok($$SELECT durable_jobs.set_change_control('^[A-Z]+-[0-9]+$', true, true, 'CHG-2711: approvals required',
        'CHG-2711', 't12b_approver')$$,
    'an operator requires an approver for every change');
RESET SESSION AUTHORIZATION;
DO $$ BEGIN PERFORM pg_temp.t12b_mark('approver'); END $$;
SET SESSION AUTHORIZATION t12b_operator;
SELECT throws_ok(format('SELECT durable_jobs.replay_job(%s)', pg_temp.t12b_id('ca_failed')),
    'LF002', 'invalid change record', 'a replay without a reason, which names no approver, is refused when an approver is required');
SELECT throws_ok(format('SELECT durable_jobs.cancel_job(%s, %L, %L)', pg_temp.t12b_id('ca_queued2'), 'CHG-2712: stop', 'CHG-2712'),
    'LF002', 'invalid change record', 'a reasoned cancel without an approver is refused when one is required');
RESET SESSION AUTHORIZATION;
SELECT throws_ok($$UPDATE durable_jobs.queue_retention_policy SET record_retention = '400 days' WHERE queue_name = '*'$$,
    'LF002', 'invalid change record', 'a direct retention change, which names no approver, is refused when one is required');
SELECT throws_ok($$UPDATE durable_jobs.change_control_setting SET require_approver = false$$,
    'LF002', 'invalid change record', 'a direct change-control change is checked against the setting before it: refused without an approver');
SELECT is(pg_temp.t12b_status('ca_failed') || ' ' || pg_temp.t12b_status('ca_queued2'), 'FAILED QUEUED',
    'the refused actions left the jobs as they were');
SELECT ok(pg_temp.t12b_unchanged('approver'), 'the refused actions and changes wrote no trail row and no evidence');
SET SESSION AUTHORIZATION t12b_producer;
SELECT is(durable_jobs.cancel_job(pg_temp.t12b_id('ca_queued')), true,
    'a producer''s cancel, which carries no change record, still works');
RESET SESSION AUTHORIZATION;
SET SESSION AUTHORIZATION t12b_operator;
SELECT is(durable_jobs.cancel_job(pg_temp.t12b_id('ca_queued2'), 'CHG-2712: stop', 'CHG-2712', 't12b_approver'), true,
    'a reasoned cancel with an approver is accepted');
RESET SESSION AUTHORIZATION;
DO $$
BEGIN
    PERFORM set_config('leasefence.change_reason', 'CHG-2713: approvals no longer required', true),
            set_config('leasefence.change_ticket', 'CHG-2713', true),
            set_config('leasefence.change_approver', 't12b_approver', true);
    UPDATE durable_jobs.change_control_setting SET require_approver = false;
    PERFORM set_config('leasefence.change_reason', '', true), set_config('leasefence.change_ticket', '', true),
            set_config('leasefence.change_approver', '', true);
END $$;
SELECT results_eq(
    $$SELECT evidence_kind, queue_name, new_values, change_reason, change_ticket, change_approver
      FROM pg_temp.t12b_since('approver')$$,
    $$VALUES ('job_cancelled'::text, 't12b.ca_queued2'::text, '{"job_status": "CANCELLED"}'::jsonb, 'CHG-2712: stop'::text,
              'CHG-2712'::text, 't12b_approver'::text),
             ('change_control_changed', NULL,
              '{"ticket_pattern": "^[A-Z]+-[0-9]+$", "require_approver": false, "approver_must_differ": true, "reason_pattern": null, "require_second_operator": false, "proposal_lifetime": "24:00:00"}',
              'CHG-2713: approvals no longer required', 'CHG-2713', 't12b_approver')$$,
    'the approved cancel and a direct change with an approver are recorded with it; the producer''s cancel is not evidence');

-- control_evidence_mismatches ---------------------------------------------------------------

SET LOCAL ROLE durable_job_auditor;
SELECT is_empty($$SELECT * FROM durable_jobs.control_evidence_mismatches()$$,
    'after every change above, through the functions or directly, each control row is what its last record says');
RESET ROLE;
ALTER TABLE durable_jobs.queue_retention_policy DISABLE TRIGGER queue_retention_policy_evidence;
INSERT INTO durable_jobs.queue_retention_policy (queue_name, payload_retention, record_retention)
VALUES ('t12b.ghost', '1 day', '2 days'), ('t12b.direct', '1 day', '2 days');
UPDATE durable_jobs.queue_retention_policy SET payload_retention = '40 days' WHERE queue_name = '*';
DELETE FROM durable_jobs.queue_retention_policy WHERE queue_name = 't12b.kept';
ALTER TABLE durable_jobs.queue_retention_policy ENABLE TRIGGER queue_retention_policy_evidence;
ALTER TABLE durable_jobs.change_control_setting DISABLE TRIGGER change_control_setting_evidence;
UPDATE durable_jobs.change_control_setting SET approver_must_differ = false;
ALTER TABLE durable_jobs.change_control_setting ENABLE TRIGGER change_control_setting_evidence;
SET LOCAL ROLE durable_job_auditor;
SELECT set_eq($$SELECT * FROM durable_jobs.control_evidence_mismatches()$$,
    $$VALUES ('change_control_setting'::text, NULL::text, 'change control differs from what its last evidence record says'::text),
             ('queue_retention_policy', '*', 'retention differs from what its last evidence record says'),
             ('queue_retention_policy', 't12b.direct', 'retention row exists but the evidence says it was removed'),
             ('queue_retention_policy', 't12b.ghost', 'retention row has no evidence record'),
             ('queue_retention_policy', 't12b.kept', 'retention row in the evidence is missing from the table')$$,
    'changes made with the evidence triggers disabled are found: a changed row, a row without a record, a row recorded as removed, a recorded row missing, a changed change control');
RESET ROLE;

-- job_status_mismatches ----------------------------------------------------------------------

DO $$ BEGIN PERFORM pg_sleep(1.1); END $$;
SELECT is(pg_temp.claim_job('s_exhausted_again', 't12b.s_exhausted', 'worker-t27'), NULL::bigint,
    'a claim after the one-attempt job''s lease expired claims nothing');
SELECT results_eq(
    $$SELECT job_status::text, failure_reason_code FROM durable_jobs.job_record WHERE job_record_id = pg_temp.t12b_id('s_exhausted')$$,
    $$VALUES ('FAILED'::text, 'attempts_exhausted'::text)$$,
    'the claim failed it (attempts_exhausted) without an outcome');
SELECT results_eq(
    $$SELECT job_status::text, lease_fencing_generation FROM durable_jobs.job_record
      WHERE job_record_id IN (pg_temp.t12b_id('s_batch'), pg_temp.t12b_id('s_replayed')) ORDER BY job_record_id$$,
    $$VALUES ('SUCCEEDED'::text, 1::bigint), ('SUCCEEDED', 2)$$,
    'the batch-completed job and the job completed after its replay (at generation 2) are SUCCEEDED');
SET LOCAL ROLE durable_job_auditor;
SELECT is_empty($$SELECT * FROM durable_jobs.job_status_mismatches()$$,
    'every status the bundle''s functions wrote is explained: completions (one by batch, one at the second generation after a replay), failures, cancels, replays and attempts used up');
RESET ROLE;
UPDATE durable_jobs.job_record SET job_status = 'SUCCEEDED' WHERE job_record_id = pg_temp.t12b_id('s_forged');
UPDATE durable_jobs.job_record SET job_status = 'FAILED' WHERE job_record_id = pg_temp.t12b_id('s_forged_fail');
SET LOCAL ROLE durable_job_auditor;
SELECT results_eq($$SELECT * FROM durable_jobs.job_status_mismatches()$$,
    $$VALUES ('t12b.s_forged'::text, 'SUCCEEDED'::text, 1::bigint), ('t12b.s_forged_fail', 'FAILED', 1)$$,
    'a FAILED job UPDATEd to SUCCEEDED, and a SUCCEEDED one UPDATEd to FAILED with attempts left, are counted per queue and status (no job id)');
RESET ROLE;

-- The chain still links ------------------------------------------------------------------

SELECT is_empty(
    $$SELECT x.evidence_record_id
      FROM (SELECT c.*, lag(c.record_hash) OVER (ORDER BY c.evidence_record_id) AS prior_hash
            FROM durable_jobs.control_evidence_chain() c) x
      WHERE x.record_hash <> sha256(x.previous_record_hash || x.content_digest)
         OR x.previous_record_hash <> COALESCE(x.prior_hash, decode(repeat('00', 32), 'hex'))$$,
    'every record written above, by the functions and by the control tables'' triggers, is chained to the one before it');

SELECT * FROM finish();
ROLLBACK;
