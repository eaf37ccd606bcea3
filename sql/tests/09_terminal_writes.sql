-- 09_terminal_writes: the fenced terminal writes (complete_job, retry_job, fail_job,
-- release_job_claim). A fenced claim moves the job and writes the outcome
-- ledger; a stale claim of any kind (expired, wrong token, wrong owner, other
-- login role, superseded, already terminal, cancelled) raises LF001 from
-- complete/retry/fail, returns false from release, and changes nothing: not
-- the job, not the ledger, and not the caller's own target write, which is
-- rolled back with the LF001 (throws_ok runs the target write and the
-- terminal write together in a subtransaction, i.e. a savepoint that the
-- LF001 rolls back).
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
SELECT plan(73);
\ir fixture/fixture.sql

-- Fixtures -------------------------------------------------------------------

-- One row per claim the test holds (the fixture's claims, made by
-- pg_temp.enqueue_and_claim): the real job, token, owner and generation.
CREATE TEMP VIEW t06_claim AS
SELECT label AS claim_label, job_record_id AS job_id, lease_claim_token AS claim_token, owner_id,
       lease_fencing_generation AS generation
FROM claims;
-- The worker's own "target" table: what it writes in the same transaction as
-- its terminal write. A stale claim must take these rows down with it.
CREATE TEMP TABLE t06_target (claim_label text NOT NULL, terminal_write text NOT NULL);
-- Job state before the stale calls, to show they changed nothing.
CREATE TEMP TABLE t06_before (claim_label text PRIMARY KEY, job_state text NOT NULL);
CREATE TEMP TABLE t06_mark (mark_label text PRIMARY KEY, mark_time timestamptz NOT NULL);
GRANT ALL ON t06_claim, t06_target, t06_before, t06_mark TO PUBLIC;

-- A worker transaction: the target write, then one terminal write with the
-- presented claim. Run inside throws_ok/lives_ok it is a subtransaction.
CREATE FUNCTION pg_temp.t06_worker_tx(p_claim_label text, p_job_id bigint, p_token uuid, p_owner_id text,
                                      p_terminal_write text)
RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO t06_target VALUES (p_claim_label, p_terminal_write);
    CASE p_terminal_write
        WHEN 'complete' THEN
            PERFORM durable_jobs.complete_job(p_job_id, p_token, p_owner_id, '{"rows_written": 1}');
            RETURN 'SUCCEEDED';
        WHEN 'retry' THEN
            RETURN durable_jobs.retry_job(p_job_id, p_token, p_owner_id, interval '1 second', 'transient_error');
        WHEN 'fail' THEN
            PERFORM durable_jobs.fail_job(p_job_id, p_token, p_owner_id, 'permanent_error');
            RETURN 'FAILED';
    END CASE;
END $$;

-- Everything about a job that a write could change, its ledger rows included.
CREATE FUNCTION pg_temp.t06_job_state(p_job_id bigint)
RETURNS text LANGUAGE sql AS $$
    SELECT (SELECT row(j.*)::text FROM durable_jobs.job_record j WHERE j.job_record_id = p_job_id)
        || ' ledger=' || (SELECT count(*) FROM durable_jobs.job_outcome_ledger l WHERE l.job_record_id = p_job_id);
$$;

-- Short-lease queues for the expired and superseded claims.
DO $$ BEGIN
    PERFORM durable_jobs.set_queue_lease_policy('t06.expired', interval '1 second', interval '300 milliseconds',
                                                interval '1 minute', true, 't06 short lease');
    PERFORM durable_jobs.set_queue_lease_policy('t06.superseded', interval '1 second', interval '300 milliseconds',
                                                interval '1 minute', true, 't06 short lease');
END $$;
DO $$ BEGIN PERFORM pg_temp.enqueue_and_claim('expired', 't06.expired', 'worker-a'); END $$;
DO $$ BEGIN PERFORM pg_temp.enqueue_and_claim('superseded', 't06.superseded', 'worker-a'); END $$;

-- complete_job ---------------------------------------------------------------

DO $$ BEGIN PERFORM pg_temp.enqueue_and_claim('complete', 't06.complete', 'worker-a'); END $$;
SELECT lives_ok(
    format('SELECT pg_temp.t06_worker_tx(%L, %s, %L, %L, ''complete'')', claim_label, job_id, claim_token, owner_id),
    'complete_job with a fenced claim succeeds in the same transaction as the worker''s target write')
FROM t06_claim WHERE claim_label = 'complete';
SELECT is((SELECT job_status FROM durable_jobs.job_lifecycle_state(job_id)), 'SUCCEEDED',
          'a completed job is SUCCEEDED')
FROM t06_claim WHERE claim_label = 'complete';
SELECT is((SELECT lease_expires_at FROM durable_jobs.job_lifecycle_state(job_id)), NULL,
          'a completed job holds no lease')
FROM t06_claim WHERE claim_label = 'complete';
SELECT results_eq(
    format('SELECT lease_fencing_generation, outcome_status::text, failure_reason_code, result_document
            FROM durable_jobs.job_outcome_ledger WHERE job_record_id = %s', job_id),
    format('VALUES (%s::bigint, ''SUCCEEDED'', NULL::text, ''{"rows_written": 1}''::jsonb)', generation),
    'complete_job writes one ledger row with the claim''s fencing generation and the result document')
FROM t06_claim WHERE claim_label = 'complete';
SELECT is((SELECT count(*) FROM t06_target WHERE claim_label = 'complete'), 1::bigint,
          'the fenced worker''s target write is kept')
;
DO $$ BEGIN PERFORM pg_temp.enqueue_and_claim('complete_no_result', 't06.complete', 'worker-a'); END $$;
SELECT lives_ok(format('SELECT durable_jobs.complete_job(%s, %L, %L)', job_id, claim_token, owner_id),
                'complete_job without a result document is accepted')
FROM t06_claim WHERE claim_label = 'complete_no_result';
SELECT is((SELECT result_document FROM durable_jobs.job_outcome_ledger l WHERE l.job_record_id = job_id), NULL,
          'complete_job without a result document records a NULL result')
FROM t06_claim WHERE claim_label = 'complete_no_result';

-- retry_job ------------------------------------------------------------------

DO $$ BEGIN PERFORM pg_temp.enqueue_and_claim('retry', 't06.retry', 'worker-a', 3); END $$;
INSERT INTO t06_mark SELECT 'retry_before', clock_timestamp();
SELECT is(durable_jobs.retry_job(job_id, claim_token, owner_id, interval '5 minutes', 'upstream_timeout'),
          'RETRY_SCHEDULED', 'retry_job with attempts left returns RETRY_SCHEDULED')
FROM t06_claim WHERE claim_label = 'retry';
INSERT INTO t06_mark SELECT 'retry_after', clock_timestamp();
SELECT results_eq(
    format('SELECT job_status, attempt_number, failure_reason_code, lease_expires_at
            FROM durable_jobs.job_lifecycle_state(%s)', job_id),
    $$VALUES ('RETRY_SCHEDULED', 1, 'upstream_timeout'::text, NULL::timestamptz)$$,
    'a retried job is RETRY_SCHEDULED with the caller''s reason code, its attempt counted and no lease')
FROM t06_claim WHERE claim_label = 'retry';
SELECT ok(j.run_after >= (SELECT mark_time FROM t06_mark WHERE mark_label = 'retry_before') + interval '5 minutes'
          AND j.run_after <= (SELECT mark_time FROM t06_mark WHERE mark_label = 'retry_after') + interval '5 minutes',
          'retry_job sets run_after to clock_timestamp() plus the retry delay')
FROM t06_claim c JOIN durable_jobs.job_record j ON j.job_record_id = c.job_id WHERE c.claim_label = 'retry';
SELECT results_eq(
    format('SELECT lease_fencing_generation, outcome_status::text, failure_reason_code
            FROM durable_jobs.job_outcome_ledger WHERE job_record_id = %s', job_id),
    format('VALUES (%s::bigint, ''RETRY_SCHEDULED'', ''upstream_timeout''::text)', generation),
    'retry_job writes one ledger row with the claim''s generation and reason code')
FROM t06_claim WHERE claim_label = 'retry';
SELECT is_empty($$SELECT * FROM durable_jobs.claim_next_job('t06.retry', 'worker-b')$$,
                'a retried job is not claimable before its run_after');

DO $$ BEGIN PERFORM pg_temp.enqueue_and_claim('retry_now', 't06.retry_now', 'worker-a', 3); END $$;
SELECT is(durable_jobs.retry_job(job_id, claim_token, owner_id, interval '0', 'transient_error'),
          'RETRY_SCHEDULED', 'retry_job accepts a zero delay')
FROM t06_claim WHERE claim_label = 'retry_now';
SELECT results_eq(
    $$SELECT job_record_id, attempt_number, lease_fencing_generation FROM durable_jobs.claim_next_job('t06.retry_now', 'worker-b')$$,
    format('VALUES (%s::bigint, 2, %s::bigint)', job_id, generation + 1),
    'a job retried with zero delay is claimable at once as its next attempt with the next generation')
FROM t06_claim WHERE claim_label = 'retry_now';

DO $$ BEGIN PERFORM pg_temp.enqueue_and_claim('retry_last', 't06.retry_last', 'worker-a', 1); END $$;
SELECT is(durable_jobs.retry_job(job_id, claim_token, owner_id, interval '1 minute', 'quota_exceeded'),
          'FAILED', 'retry_job on the last attempt returns FAILED')
FROM t06_claim WHERE claim_label = 'retry_last';
SELECT results_eq(
    format('SELECT job_status, attempt_number, failure_reason_code FROM durable_jobs.job_lifecycle_state(%s)', job_id),
    $$VALUES ('FAILED', 1, 'quota_exceeded'::text)$$,
    'retry_job with the attempts used up fails the job with the caller''s reason code')
FROM t06_claim WHERE claim_label = 'retry_last';
SELECT results_eq(
    format('SELECT lease_fencing_generation, outcome_status::text, failure_reason_code
            FROM durable_jobs.job_outcome_ledger WHERE job_record_id = %s', job_id),
    format('VALUES (%s::bigint, ''FAILED'', ''quota_exceeded''::text)', generation),
    'retry_job on the last attempt writes a FAILED ledger row')
FROM t06_claim WHERE claim_label = 'retry_last';
SELECT is_empty($$SELECT * FROM durable_jobs.claim_next_job('t06.retry_last', 'worker-b')$$,
                'a job failed by retry_job is not claimable');

-- fail_job -------------------------------------------------------------------

DO $$ BEGIN PERFORM pg_temp.enqueue_and_claim('fail', 't06.fail', 'worker-a'); END $$;
SELECT lives_ok(format('SELECT durable_jobs.fail_job(%s, %L, %L, ''bad_payload'')', job_id, claim_token, owner_id),
                'fail_job with a fenced claim is accepted')
FROM t06_claim WHERE claim_label = 'fail';
SELECT results_eq(
    format('SELECT job_status, failure_reason_code, lease_expires_at FROM durable_jobs.job_lifecycle_state(%s)', job_id),
    $$VALUES ('FAILED', 'bad_payload'::text, NULL::timestamptz)$$,
    'a failed job is FAILED with the caller''s reason code and no lease')
FROM t06_claim WHERE claim_label = 'fail';
SELECT results_eq(
    format('SELECT lease_fencing_generation, outcome_status::text, failure_reason_code
            FROM durable_jobs.job_outcome_ledger WHERE job_record_id = %s', job_id),
    format('VALUES (%s::bigint, ''FAILED'', ''bad_payload''::text)', generation),
    'fail_job writes one ledger row with the claim''s generation and reason code')
FROM t06_claim WHERE claim_label = 'fail';
SELECT is_empty($$SELECT * FROM durable_jobs.claim_next_job('t06.fail', 'worker-b')$$,
                'a failed job is not claimable');

-- release_job_claim ----------------------------------------------------------

-- max_attempts 1: the reclaim below only works if the attempt was given back.
DO $$ BEGIN PERFORM pg_temp.enqueue_and_claim('release', 't06.release', 'worker-a', 1); END $$;
SELECT is(durable_jobs.release_job_claim(job_id, claim_token, owner_id), true,
          'release_job_claim of a fenced claim returns true')
FROM t06_claim WHERE claim_label = 'release';
SELECT results_eq(
    format('SELECT job_status, attempt_number, lease_expires_at FROM durable_jobs.job_lifecycle_state(%s)', job_id),
    $$VALUES ('QUEUED', 0, NULL::timestamptz)$$,
    'a released job is QUEUED with its attempt given back and no lease')
FROM t06_claim WHERE claim_label = 'release';
SELECT is((SELECT count(*) FROM durable_jobs.job_outcome_ledger l WHERE l.job_record_id = job_id), 0::bigint,
          'release_job_claim writes no outcome')
FROM t06_claim WHERE claim_label = 'release';
SELECT is((SELECT renewal_outcome FROM durable_jobs.renew_job_lease(job_id, claim_token, owner_id)), 'stale',
          'a released token is stale for renew_job_lease')
FROM t06_claim WHERE claim_label = 'release';
SELECT is(durable_jobs.release_job_claim(job_id, claim_token, owner_id), false,
          'a released token is stale for release_job_claim (false)')
FROM t06_claim WHERE claim_label = 'release';
SELECT throws_ok(format('SELECT durable_jobs.complete_job(%s, %L, %L)', job_id, claim_token, owner_id),
                 'LF001', NULL, 'a released token is stale for complete_job (LF001)')
FROM t06_claim WHERE claim_label = 'release';
SELECT throws_ok(format('SELECT durable_jobs.retry_job(%s, %L, %L, interval ''1 second'', ''transient_error'')',
                        job_id, claim_token, owner_id),
                 'LF001', NULL, 'a released token is stale for retry_job (LF001)')
FROM t06_claim WHERE claim_label = 'release';
SELECT throws_ok(format('SELECT durable_jobs.fail_job(%s, %L, %L, ''permanent_error'')', job_id, claim_token, owner_id),
                 'LF001', NULL, 'a released token is stale for fail_job (LF001)')
FROM t06_claim WHERE claim_label = 'release';
SELECT results_eq(
    $$SELECT job_record_id, attempt_number, lease_fencing_generation FROM durable_jobs.claim_next_job('t06.release', 'worker-b')$$,
    format('VALUES (%s::bigint, 1, %s::bigint)', job_id, generation + 1),
    'a released job is claimable at once, as attempt 1 again, with the next generation')
FROM t06_claim WHERE claim_label = 'release';
SELECT is((SELECT renewal_outcome FROM durable_jobs.renew_job_lease(job_id, claim_token, owner_id)), 'stale',
          'a released token stays stale after the job is claimed again')
FROM t06_claim WHERE claim_label = 'release';

-- Stale claims ---------------------------------------------------------------

DO $$ BEGIN PERFORM pg_temp.enqueue_and_claim('wrong_token', 't06.wrong_token', 'worker-a'); END $$;
DO $$ BEGIN PERFORM pg_temp.enqueue_and_claim('wrong_owner', 't06.wrong_owner', 'worker-a'); END $$;
DO $$ BEGIN PERFORM pg_temp.enqueue_and_claim('other_role', 't06.other_role', 'worker-a'); END $$;
DO $$ BEGIN PERFORM pg_temp.enqueue_and_claim('terminal', 't06.terminal', 'worker-a'); END $$;
DO $$ BEGIN PERFORM durable_jobs.complete_job(job_id, claim_token, owner_id) FROM t06_claim WHERE claim_label = 'terminal'; END $$;
DO $$ BEGIN PERFORM pg_temp.enqueue_and_claim('cancelled', 't06.cancelled', 'worker-a'); END $$;
DO $$ BEGIN PERFORM durable_jobs.cancel_job(job_id) FROM t06_claim WHERE claim_label = 'cancelled'; END $$;

-- Let the 1 s leases run out by the database clock, then supersede one.
DO $$ BEGIN PERFORM pg_sleep(1.1); END $$;
SELECT is((SELECT job_record_id FROM durable_jobs.claim_next_job('t06.superseded', 'worker-b')), job_id,
          'an expired claim is reclaimed by another worker (the superseding claim)')
FROM t06_claim WHERE claim_label = 'superseded';

INSERT INTO t06_before SELECT claim_label, pg_temp.t06_job_state(job_id) FROM t06_claim
WHERE claim_label IN ('expired', 'superseded', 'wrong_token', 'wrong_owner', 'other_role', 'terminal', 'cancelled');

-- The claim each case presents: the real one except for the token or owner.
CREATE TEMP TABLE t06_presented AS
SELECT c.claim_label, c.job_id,
       CASE WHEN c.claim_label = 'wrong_token' THEN gen_random_uuid() ELSE c.claim_token END AS presented_token,
       CASE WHEN c.claim_label = 'wrong_owner' THEN 'worker-intruder' ELSE c.owner_id END AS presented_owner,
       CASE c.claim_label
           WHEN 'expired' THEN 'an expired claim'
           WHEN 'superseded' THEN 'a superseded claim'
           WHEN 'wrong_token' THEN 'a claim with the wrong token'
           WHEN 'wrong_owner' THEN 'a claim with the wrong owner'
           WHEN 'other_role' THEN 'a claim presented by another login role'
           WHEN 'terminal' THEN 'the claim of an already completed job'
           WHEN 'cancelled' THEN 'the claim of a cancelled job'
       END AS case_text
FROM t06_claim c
WHERE c.claim_label IN ('expired', 'superseded', 'wrong_token', 'wrong_owner', 'other_role', 'terminal', 'cancelled');
GRANT ALL ON t06_presented TO PUBLIC;

-- The other login role holds durable_job_worker, as the claiming role does.
CREATE ROLE t06_other_login LOGIN IN ROLE durable_job_worker;

SELECT throws_ok(
    format('SELECT pg_temp.t06_worker_tx(%L, %s, %L, %L, %L)', claim_label, job_id, presented_token, presented_owner, w),
    'LF001', NULL, format('%s_job with %s raises LF001 and rolls back the target write', w, case_text))
FROM t06_presented CROSS JOIN (VALUES ('complete'), ('retry'), ('fail')) AS terminal_write(w)
WHERE claim_label <> 'other_role'
ORDER BY claim_label, w;
SELECT is(durable_jobs.release_job_claim(job_id, presented_token, presented_owner), false,
          format('release_job_claim with %s returns false', case_text))
FROM t06_presented WHERE claim_label <> 'other_role'
ORDER BY claim_label;

SET SESSION AUTHORIZATION t06_other_login;
SELECT throws_ok(
    format('SELECT pg_temp.t06_worker_tx(%L, %s, %L, %L, %L)', claim_label, job_id, presented_token, presented_owner, w),
    'LF001', NULL, format('%s_job with %s raises LF001 and rolls back the target write', w, case_text))
FROM t06_presented CROSS JOIN (VALUES ('complete'), ('retry'), ('fail')) AS terminal_write(w)
WHERE claim_label = 'other_role'
ORDER BY w;
SELECT is(durable_jobs.release_job_claim(job_id, presented_token, presented_owner), false,
          format('release_job_claim with %s returns false', case_text))
FROM t06_presented WHERE claim_label = 'other_role';
SELECT is((SELECT renewal_outcome FROM durable_jobs.renew_job_lease(job_id, presented_token, presented_owner)),
          'stale', 'renew_job_lease with a claim presented by another login role is stale')
FROM t06_presented WHERE claim_label = 'other_role';
RESET SESSION AUTHORIZATION;

SELECT is(pg_temp.t06_job_state(b.claim_label_job), b.job_state,
          format('stale terminal writes with %s change nothing: job row and ledger as before', p.case_text))
FROM (SELECT t.claim_label, t.job_state, c.job_id AS claim_label_job
      FROM t06_before t JOIN t06_claim c USING (claim_label)) b
JOIN t06_presented p USING (claim_label)
ORDER BY b.claim_label;
SELECT is((SELECT count(*) FROM t06_target t JOIN t06_presented p USING (claim_label)), 0::bigint,
          'no target write of a stale worker survives its LF001');

-- The claims refused above were refused for being stale, not broken: the real
-- holder can still finish them.
SELECT lives_ok(format('SELECT durable_jobs.complete_job(%s, %L, %L)', c.job_id, c.claim_token, c.owner_id),
                format('after refusing %s, the claim''s own holder still completes it', p.case_text))
FROM t06_claim c JOIN t06_presented p USING (claim_label)
WHERE c.claim_label IN ('wrong_token', 'wrong_owner', 'other_role')
ORDER BY c.claim_label;

SELECT * FROM finish();
ROLLBACK;
