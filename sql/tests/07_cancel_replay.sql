-- 07_cancel_replay: cancel_job, replay_job and job_lifecycle_state.
-- Cancel moves QUEUED, RETRY_SCHEDULED and RUNNING jobs to CANCELLED (a
-- running claim is stale at once) and answers false for terminal or unknown
-- jobs; replay brings one FAILED or CANCELLED job back to QUEUED with its
-- attempts starting again; the lifecycle state is payload-blind.
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
SELECT plan(52);
\ir fixture/fixture.sql

-- Fixtures -------------------------------------------------------------------

-- Every job the file enqueued; t07_job adds the claim (the fixture's
-- claims) of those that were claimed.
CREATE TEMP TABLE t07_enqueued (job_label text PRIMARY KEY, job_id bigint NOT NULL);
CREATE TEMP VIEW t07_job AS
SELECT e.job_label, e.job_id, c.lease_claim_token AS claim_token, c.owner_id, c.lease_fencing_generation AS generation,
       c.lease_expires_at
FROM t07_enqueued e LEFT JOIN claims c ON c.label = e.job_label;

-- Enqueue one job into its own queue (t07.<label>); claim it when p_claim.
CREATE FUNCTION pg_temp.t07_job(p_job_label text, p_claim boolean, p_max_attempts integer DEFAULT 5)
RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    v_queue_name text := 't07.' || p_job_label;
    v_payload jsonb := jsonb_build_object('customer_email', 'pat.t07@example.com');
    v_job_id bigint;
BEGIN
    IF p_claim THEN
        v_job_id := pg_temp.enqueue_and_claim(p_job_label, v_queue_name, 'worker-t07', p_max_attempts, v_payload);
    ELSE
        v_job_id := durable_jobs.enqueue_job(v_queue_name, v_payload, NULL, NULL, p_max_attempts);
    END IF;
    INSERT INTO t07_enqueued VALUES (p_job_label, v_job_id);
    RETURN v_job_id;
END $$;

CREATE FUNCTION pg_temp.t07_status(p_job_label text)
RETURNS text LANGUAGE sql AS $$
    SELECT s.job_status FROM t07_job j, durable_jobs.job_lifecycle_state(j.job_id) s WHERE j.job_label = p_job_label;
$$;

DO $$ BEGIN
    PERFORM pg_temp.t07_job('queued', false);
    PERFORM pg_temp.t07_job('retry_scheduled', true);
    PERFORM durable_jobs.retry_job(job_id, claim_token, owner_id, interval '1 hour', 'transient_error')
    FROM t07_job WHERE job_label = 'retry_scheduled';
    PERFORM pg_temp.t07_job('running', true);
    PERFORM pg_temp.t07_job('succeeded', true);
    PERFORM durable_jobs.complete_job(job_id, claim_token, owner_id) FROM t07_job WHERE job_label = 'succeeded';
    PERFORM pg_temp.t07_job('failed', true);
    PERFORM durable_jobs.fail_job(job_id, claim_token, owner_id, 'bad_payload') FROM t07_job WHERE job_label = 'failed';
END $$;

-- cancel_job -----------------------------------------------------------------

SELECT is(durable_jobs.cancel_job(job_id), true, 'cancel_job of a QUEUED job returns true')
FROM t07_job WHERE job_label = 'queued';
SELECT is(pg_temp.t07_status('queued'), 'CANCELLED', 'a cancelled QUEUED job is CANCELLED');
SELECT is_empty($$SELECT * FROM durable_jobs.claim_next_job('t07.queued', 'worker-t07')$$,
                'a cancelled QUEUED job is not claimable');

SELECT is(durable_jobs.cancel_job(job_id), true, 'cancel_job of a RETRY_SCHEDULED job returns true')
FROM t07_job WHERE job_label = 'retry_scheduled';
SELECT is(pg_temp.t07_status('retry_scheduled'), 'CANCELLED', 'a cancelled RETRY_SCHEDULED job is CANCELLED');

SELECT is(durable_jobs.cancel_job(job_id), true, 'cancel_job of a RUNNING job returns true')
FROM t07_job WHERE job_label = 'running';
SELECT results_eq(
    format('SELECT job_status, lease_expires_at FROM durable_jobs.job_lifecycle_state(%s)', job_id),
    $$VALUES ('CANCELLED', NULL::timestamptz)$$,
    'a cancelled RUNNING job is CANCELLED and holds no lease')
FROM t07_job WHERE job_label = 'running';
SELECT is((SELECT renewal_outcome FROM durable_jobs.renew_job_lease(job_id, claim_token, owner_id)), 'stale',
          'the claim of a cancelled job is stale at once for renew_job_lease')
FROM t07_job WHERE job_label = 'running';
SELECT throws_ok(format('SELECT durable_jobs.complete_job(%s, %L, %L)', job_id, claim_token, owner_id),
                 'LF001', NULL, 'the claim of a cancelled job is stale at once for complete_job (LF001)')
FROM t07_job WHERE job_label = 'running';
SELECT is(pg_temp.t07_status('running'), 'CANCELLED', 'a refused complete_job leaves the cancelled job CANCELLED');
SELECT is_empty($$SELECT * FROM durable_jobs.claim_next_job('t07.running', 'worker-t07')$$,
                'a cancelled RUNNING job is not claimable');

SELECT is(durable_jobs.cancel_job(job_id), false, 'cancel_job of a SUCCEEDED job returns false')
FROM t07_job WHERE job_label = 'succeeded';
SELECT is(pg_temp.t07_status('succeeded'), 'SUCCEEDED', 'a refused cancel leaves a SUCCEEDED job SUCCEEDED');
SELECT is(durable_jobs.cancel_job(job_id), false, 'cancel_job of a FAILED job returns false')
FROM t07_job WHERE job_label = 'failed';
SELECT is(pg_temp.t07_status('failed'), 'FAILED', 'a refused cancel leaves a FAILED job FAILED');
SELECT is(durable_jobs.cancel_job(job_id), false, 'cancel_job of an already CANCELLED job returns false')
FROM t07_job WHERE job_label = 'queued';
SELECT is(durable_jobs.cancel_job(0), false, 'cancel_job of job id 0 returns false');
SELECT is(durable_jobs.cancel_job(-7), false, 'cancel_job of a negative job id returns false');
SELECT is(durable_jobs.cancel_job((SELECT max(job_record_id) + 1000 FROM durable_jobs.job_record)), false,
          'cancel_job of a job id that does not exist returns false');

-- replay_job -----------------------------------------------------------------

-- A job whose only attempt was used up, failed by retry_job: a replay must
-- give it its attempts back or the next claim would fail it again.
DO $$ BEGIN
    PERFORM pg_temp.t07_job('exhausted', true, 1);
    PERFORM durable_jobs.retry_job(job_id, claim_token, owner_id, interval '0', 'upstream_timeout')
    FROM t07_job WHERE job_label = 'exhausted';
END $$;
SELECT results_eq(
    format('SELECT job_status, attempt_number, failure_reason_code FROM durable_jobs.job_lifecycle_state(%s)', job_id),
    $$VALUES ('FAILED', 1, 'upstream_timeout'::text)$$,
    'the job to replay has FAILED with its only attempt used')
FROM t07_job WHERE job_label = 'exhausted';
SELECT is(durable_jobs.replay_job(job_id), true, 'replay_job of a FAILED job returns true')
FROM t07_job WHERE job_label = 'exhausted';
SELECT results_eq(
    format('SELECT job_status, attempt_number, max_attempts, failure_reason_code, lease_expires_at
            FROM durable_jobs.job_lifecycle_state(%s)', job_id),
    $$VALUES ('QUEUED', 0, 1, NULL::text, NULL::timestamptz)$$,
    'a replayed FAILED job is QUEUED with its attempts starting again and no failure reason')
FROM t07_job WHERE job_label = 'exhausted';
SELECT is((SELECT renewal_outcome FROM durable_jobs.renew_job_lease(job_id, claim_token, owner_id)), 'stale',
          'the old claim of a replayed job stays stale')
FROM t07_job WHERE job_label = 'exhausted';
SELECT results_eq(
    $$SELECT job_record_id, attempt_number, lease_fencing_generation FROM durable_jobs.claim_next_job('t07.exhausted', 'worker-t07')$$,
    format('VALUES (%s::bigint, 1, %s::bigint)', job_id, generation + 1),
    'a replayed FAILED job is claimable at once, as attempt 1, with the next fencing generation')
FROM t07_job WHERE job_label = 'exhausted';

SELECT is(durable_jobs.replay_job(job_id), true, 'replay_job of a job cancelled while RUNNING returns true')
FROM t07_job WHERE job_label = 'running';
SELECT results_eq(
    format('SELECT job_status, attempt_number FROM durable_jobs.job_lifecycle_state(%s)', job_id),
    $$VALUES ('QUEUED', 0)$$,
    'a replayed CANCELLED job is QUEUED with its attempts starting again')
FROM t07_job WHERE job_label = 'running';
SELECT throws_ok(format('SELECT durable_jobs.complete_job(%s, %L, %L)', job_id, claim_token, owner_id),
                 'LF001', NULL, 'the claim that was cancelled stays stale after the replay (LF001)')
FROM t07_job WHERE job_label = 'running';
SELECT is((SELECT job_record_id FROM durable_jobs.claim_next_job('t07.running', 'worker-t07')), job_id,
          'a replayed CANCELLED job is claimable at once')
FROM t07_job WHERE job_label = 'running';
SELECT is(durable_jobs.replay_job(job_id), true, 'replay_job of a job cancelled while QUEUED returns true')
FROM t07_job WHERE job_label = 'queued';
SELECT is(pg_temp.t07_status('queued'), 'QUEUED', 'a replayed job cancelled while QUEUED is QUEUED');

DO $$ BEGIN
    PERFORM pg_temp.t07_job('replay_queued', false);
    PERFORM pg_temp.t07_job('replay_running', true);
    PERFORM pg_temp.t07_job('replay_retry', true);
    PERFORM durable_jobs.retry_job(job_id, claim_token, owner_id, interval '1 hour', 'transient_error')
    FROM t07_job WHERE job_label = 'replay_retry';
END $$;
SELECT is(durable_jobs.replay_job(job_id), false, 'replay_job of a QUEUED job returns false')
FROM t07_job WHERE job_label = 'replay_queued';
SELECT is(durable_jobs.replay_job(job_id), false, 'replay_job of a RUNNING job returns false')
FROM t07_job WHERE job_label = 'replay_running';
SELECT results_eq(
    format('SELECT job_status, attempt_number, lease_fencing_generation, lease_expires_at
            FROM durable_jobs.job_lifecycle_state(%s)', job_id),
    format('VALUES (''RUNNING'', 1, %s::bigint, %L::timestamptz)', generation, lease_expires_at),
    'a refused replay leaves the RUNNING job and its lease as they were')
FROM t07_job WHERE job_label = 'replay_running';
SELECT is((SELECT renewal_outcome FROM durable_jobs.renew_job_lease(job_id, claim_token, owner_id)), 'renewed',
          'a refused replay leaves the running claim valid')
FROM t07_job WHERE job_label = 'replay_running';
SELECT is(durable_jobs.replay_job(job_id), false, 'replay_job of a RETRY_SCHEDULED job returns false')
FROM t07_job WHERE job_label = 'replay_retry';
SELECT results_eq(
    format('SELECT job_status, attempt_number, failure_reason_code FROM durable_jobs.job_lifecycle_state(%s)', job_id),
    $$VALUES ('RETRY_SCHEDULED', 1, 'transient_error'::text)$$,
    'a refused replay leaves the RETRY_SCHEDULED job as it was')
FROM t07_job WHERE job_label = 'replay_retry';
SELECT is(durable_jobs.replay_job(job_id), false, 'replay_job of a SUCCEEDED job returns false')
FROM t07_job WHERE job_label = 'succeeded';
SELECT is(pg_temp.t07_status('succeeded'), 'SUCCEEDED', 'a refused replay leaves a SUCCEEDED job SUCCEEDED');
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
              (SELECT to_jsonb(s) FROM t07_job j, durable_jobs.job_lifecycle_state(j.job_id) s
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
FROM t07_job WHERE job_label = 'replay_running';
SELECT ok(s::text NOT LIKE '%' || j.owner_id || '%' AND s::text NOT LIKE '%' || j.claim_token::text || '%'
          AND s::text NOT LIKE '%pat.t07@example.com%',
          'a job_lifecycle_state row carries neither the owner id, the token nor any payload value')
FROM t07_job j, durable_jobs.job_lifecycle_state(j.job_id) s WHERE j.job_label = 'replay_running';
SELECT is_empty('SELECT * FROM durable_jobs.job_lifecycle_state(0)', 'job_lifecycle_state of job id 0 has zero rows');
SELECT is_empty('SELECT * FROM durable_jobs.job_lifecycle_state(-7)',
                'job_lifecycle_state of a negative job id has zero rows');
SELECT is_empty('SELECT * FROM durable_jobs.job_lifecycle_state((SELECT max(job_record_id) + 1000 FROM durable_jobs.job_record))',
                'job_lifecycle_state of a job id that does not exist has zero rows');

SELECT * FROM finish();
ROLLBACK;
