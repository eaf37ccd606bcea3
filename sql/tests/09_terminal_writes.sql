-- 09_terminal_writes: the fenced writes that end a claim, one at a time
-- (complete_job, retry_job, fail_job, release_job_claim) and in batches
-- (release_job_claims, complete_jobs). A fenced claim moves the job and writes the outcome
-- ledger; a stale claim of any kind (expired, wrong token, wrong owner, other
-- login role, superseded, already terminal, cancelled) raises LF001 from
-- complete/retry/fail, returns false from release, and changes nothing: not
-- the job, not the ledger, and not the caller's own target write, which is
-- rolled back with the LF001 (throws_ok runs the target write and the
-- terminal write together in a subtransaction, i.e. a savepoint that the
-- LF001 rolls back). A batch decides each claim as the single call does.
-- Sections: the single writes; release_job_claims; complete_jobs with the
-- lease_expiry_floor and claim_next_jobs' batch claim of migration 008.
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
SELECT plan(137);
\ir fixture/fixture.sql

-- Fixtures -------------------------------------------------------------------

-- One row per claim the test holds (the fixture's claims, made by
-- pg_temp.enqueue_and_claim): the real job, token, owner and generation.
CREATE TEMP VIEW t09a_claim AS
SELECT label AS claim_label, job_record_id AS job_id, lease_claim_token AS claim_token, owner_id,
       lease_fencing_generation AS generation
FROM claims;
-- The worker's own "target" table: what it writes in the same transaction as
-- its terminal write. A stale claim must take these rows down with it.
CREATE TEMP TABLE t09a_target (claim_label text NOT NULL, terminal_write text NOT NULL);
-- Job state before the stale calls, to show they changed nothing.
CREATE TEMP TABLE t09a_before (claim_label text PRIMARY KEY, job_state text NOT NULL);
CREATE TEMP TABLE t09a_mark (mark_label text PRIMARY KEY, mark_time timestamptz NOT NULL);
GRANT ALL ON t09a_claim, t09a_target, t09a_before, t09a_mark TO PUBLIC;

-- A worker transaction: the target write, then one terminal write with the
-- presented claim. Run inside throws_ok/lives_ok it is a subtransaction.
CREATE FUNCTION pg_temp.t09a_worker_tx(p_claim_label text, p_job_id bigint, p_token uuid, p_owner_id text,
                                      p_terminal_write text)
RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO t09a_target VALUES (p_claim_label, p_terminal_write);
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
CREATE FUNCTION pg_temp.t09a_job_state(p_job_id bigint)
RETURNS text LANGUAGE sql AS $$
    SELECT (SELECT row(j.*)::text FROM durable_jobs.job_record j WHERE j.job_record_id = p_job_id)
        || ' ledger=' || (SELECT count(*) FROM durable_jobs.job_outcome_ledger l WHERE l.job_record_id = p_job_id);
$$;

-- Short-lease queues for the expired and superseded claims.
DO $$ BEGIN
    PERFORM durable_jobs.set_queue_lease_policy('t09a.expired', interval '1 second', interval '300 milliseconds',
                                                interval '1 minute', true, 't06 short lease');
    PERFORM durable_jobs.set_queue_lease_policy('t09a.superseded', interval '1 second', interval '300 milliseconds',
                                                interval '1 minute', true, 't06 short lease');
END $$;
DO $$ BEGIN PERFORM pg_temp.enqueue_and_claim('expired', 't09a.expired', 'worker-a'); END $$;
DO $$ BEGIN PERFORM pg_temp.enqueue_and_claim('superseded', 't09a.superseded', 'worker-a'); END $$;

-- complete_job ---------------------------------------------------------------

DO $$ BEGIN PERFORM pg_temp.enqueue_and_claim('complete', 't09a.complete', 'worker-a'); END $$;
SELECT lives_ok(
    format('SELECT pg_temp.t09a_worker_tx(%L, %s, %L, %L, ''complete'')', claim_label, job_id, claim_token, owner_id),
    'complete_job with a fenced claim succeeds in the same transaction as the worker''s target write')
FROM t09a_claim WHERE claim_label = 'complete';
SELECT is((SELECT job_status FROM durable_jobs.job_lifecycle_state(job_id)), 'SUCCEEDED',
          'a completed job is SUCCEEDED')
FROM t09a_claim WHERE claim_label = 'complete';
SELECT is((SELECT lease_expires_at FROM durable_jobs.job_lifecycle_state(job_id)), NULL,
          'a completed job holds no lease')
FROM t09a_claim WHERE claim_label = 'complete';
SELECT results_eq(
    format('SELECT lease_fencing_generation, outcome_status::text, failure_reason_code, result_document
            FROM durable_jobs.job_outcome_ledger WHERE job_record_id = %s', job_id),
    format('VALUES (%s::bigint, ''SUCCEEDED'', NULL::text, ''{"rows_written": 1}''::jsonb)', generation),
    'complete_job writes one ledger row with the claim''s fencing generation and the result document')
FROM t09a_claim WHERE claim_label = 'complete';
SELECT is((SELECT count(*) FROM t09a_target WHERE claim_label = 'complete'), 1::bigint,
          'the fenced worker''s target write is kept')
;
DO $$ BEGIN PERFORM pg_temp.enqueue_and_claim('complete_no_result', 't09a.complete', 'worker-a'); END $$;
SELECT lives_ok(format('SELECT durable_jobs.complete_job(%s, %L, %L)', job_id, claim_token, owner_id),
                'complete_job without a result document is accepted')
FROM t09a_claim WHERE claim_label = 'complete_no_result';
SELECT is((SELECT result_document FROM durable_jobs.job_outcome_ledger l WHERE l.job_record_id = job_id), NULL,
          'complete_job without a result document records a NULL result')
FROM t09a_claim WHERE claim_label = 'complete_no_result';

-- retry_job ------------------------------------------------------------------

DO $$ BEGIN PERFORM pg_temp.enqueue_and_claim('retry', 't09a.retry', 'worker-a', 3); END $$;
INSERT INTO t09a_mark SELECT 'retry_before', clock_timestamp();
SELECT is(durable_jobs.retry_job(job_id, claim_token, owner_id, interval '5 minutes', 'upstream_timeout'),
          'RETRY_SCHEDULED', 'retry_job with attempts left returns RETRY_SCHEDULED')
FROM t09a_claim WHERE claim_label = 'retry';
INSERT INTO t09a_mark SELECT 'retry_after', clock_timestamp();
SELECT results_eq(
    format('SELECT job_status, attempt_number, failure_reason_code, lease_expires_at
            FROM durable_jobs.job_lifecycle_state(%s)', job_id),
    $$VALUES ('RETRY_SCHEDULED', 1, 'upstream_timeout'::text, NULL::timestamptz)$$,
    'a retried job is RETRY_SCHEDULED with the caller''s reason code, its attempt counted and no lease')
FROM t09a_claim WHERE claim_label = 'retry';
SELECT ok(j.run_after >= (SELECT mark_time FROM t09a_mark WHERE mark_label = 'retry_before') + interval '5 minutes'
          AND j.run_after <= (SELECT mark_time FROM t09a_mark WHERE mark_label = 'retry_after') + interval '5 minutes',
          'retry_job sets run_after to clock_timestamp() plus the retry delay')
FROM t09a_claim c JOIN durable_jobs.job_record j ON j.job_record_id = c.job_id WHERE c.claim_label = 'retry';
SELECT results_eq(
    format('SELECT lease_fencing_generation, outcome_status::text, failure_reason_code
            FROM durable_jobs.job_outcome_ledger WHERE job_record_id = %s', job_id),
    format('VALUES (%s::bigint, ''RETRY_SCHEDULED'', ''upstream_timeout''::text)', generation),
    'retry_job writes one ledger row with the claim''s generation and reason code')
FROM t09a_claim WHERE claim_label = 'retry';
SELECT is_empty($$SELECT * FROM durable_jobs.claim_next_job('t09a.retry', 'worker-b')$$,
                'a retried job is not claimable before its run_after');

DO $$ BEGIN PERFORM pg_temp.enqueue_and_claim('retry_now', 't09a.retry_now', 'worker-a', 3); END $$;
SELECT is(durable_jobs.retry_job(job_id, claim_token, owner_id, interval '0', 'transient_error'),
          'RETRY_SCHEDULED', 'retry_job accepts a zero delay')
FROM t09a_claim WHERE claim_label = 'retry_now';
SELECT results_eq(
    $$SELECT job_record_id, attempt_number, lease_fencing_generation FROM durable_jobs.claim_next_job('t09a.retry_now', 'worker-b')$$,
    format('VALUES (%s::bigint, 2, %s::bigint)', job_id, generation + 1),
    'a job retried with zero delay is claimable at once as its next attempt with the next generation')
FROM t09a_claim WHERE claim_label = 'retry_now';

DO $$ BEGIN PERFORM pg_temp.enqueue_and_claim('retry_last', 't09a.retry_last', 'worker-a', 1); END $$;
SELECT is(durable_jobs.retry_job(job_id, claim_token, owner_id, interval '1 minute', 'quota_exceeded'),
          'FAILED', 'retry_job on the last attempt returns FAILED')
FROM t09a_claim WHERE claim_label = 'retry_last';
SELECT results_eq(
    format('SELECT job_status, attempt_number, failure_reason_code FROM durable_jobs.job_lifecycle_state(%s)', job_id),
    $$VALUES ('FAILED', 1, 'quota_exceeded'::text)$$,
    'retry_job with the attempts used up fails the job with the caller''s reason code')
FROM t09a_claim WHERE claim_label = 'retry_last';
SELECT results_eq(
    format('SELECT lease_fencing_generation, outcome_status::text, failure_reason_code
            FROM durable_jobs.job_outcome_ledger WHERE job_record_id = %s', job_id),
    format('VALUES (%s::bigint, ''FAILED'', ''quota_exceeded''::text)', generation),
    'retry_job on the last attempt writes a FAILED ledger row')
FROM t09a_claim WHERE claim_label = 'retry_last';
SELECT is_empty($$SELECT * FROM durable_jobs.claim_next_job('t09a.retry_last', 'worker-b')$$,
                'a job failed by retry_job is not claimable');

-- fail_job -------------------------------------------------------------------

DO $$ BEGIN PERFORM pg_temp.enqueue_and_claim('fail', 't09a.fail', 'worker-a'); END $$;
SELECT lives_ok(format('SELECT durable_jobs.fail_job(%s, %L, %L, ''bad_payload'')', job_id, claim_token, owner_id),
                'fail_job with a fenced claim is accepted')
FROM t09a_claim WHERE claim_label = 'fail';
SELECT results_eq(
    format('SELECT job_status, failure_reason_code, lease_expires_at FROM durable_jobs.job_lifecycle_state(%s)', job_id),
    $$VALUES ('FAILED', 'bad_payload'::text, NULL::timestamptz)$$,
    'a failed job is FAILED with the caller''s reason code and no lease')
FROM t09a_claim WHERE claim_label = 'fail';
SELECT results_eq(
    format('SELECT lease_fencing_generation, outcome_status::text, failure_reason_code
            FROM durable_jobs.job_outcome_ledger WHERE job_record_id = %s', job_id),
    format('VALUES (%s::bigint, ''FAILED'', ''bad_payload''::text)', generation),
    'fail_job writes one ledger row with the claim''s generation and reason code')
FROM t09a_claim WHERE claim_label = 'fail';
SELECT is_empty($$SELECT * FROM durable_jobs.claim_next_job('t09a.fail', 'worker-b')$$,
                'a failed job is not claimable');

-- release_job_claim ----------------------------------------------------------

-- max_attempts 1: the reclaim below only works if the attempt was given back.
DO $$ BEGIN PERFORM pg_temp.enqueue_and_claim('release', 't09a.release', 'worker-a', 1); END $$;
SELECT is(durable_jobs.release_job_claim(job_id, claim_token, owner_id), true,
          'release_job_claim of a fenced claim returns true')
FROM t09a_claim WHERE claim_label = 'release';
SELECT results_eq(
    format('SELECT job_status, attempt_number, lease_expires_at FROM durable_jobs.job_lifecycle_state(%s)', job_id),
    $$VALUES ('QUEUED', 0, NULL::timestamptz)$$,
    'a released job is QUEUED with its attempt given back and no lease')
FROM t09a_claim WHERE claim_label = 'release';
SELECT is((SELECT count(*) FROM durable_jobs.job_outcome_ledger l WHERE l.job_record_id = job_id), 0::bigint,
          'release_job_claim writes no outcome')
FROM t09a_claim WHERE claim_label = 'release';
SELECT is((SELECT renewal_outcome FROM durable_jobs.renew_job_lease(job_id, claim_token, owner_id)), 'stale',
          'a released token is stale for renew_job_lease')
FROM t09a_claim WHERE claim_label = 'release';
SELECT is(durable_jobs.release_job_claim(job_id, claim_token, owner_id), false,
          'a released token is stale for release_job_claim (false)')
FROM t09a_claim WHERE claim_label = 'release';
SELECT throws_ok(format('SELECT durable_jobs.complete_job(%s, %L, %L)', job_id, claim_token, owner_id),
                 'LF001', NULL, 'a released token is stale for complete_job (LF001)')
FROM t09a_claim WHERE claim_label = 'release';
SELECT throws_ok(format('SELECT durable_jobs.retry_job(%s, %L, %L, interval ''1 second'', ''transient_error'')',
                        job_id, claim_token, owner_id),
                 'LF001', NULL, 'a released token is stale for retry_job (LF001)')
FROM t09a_claim WHERE claim_label = 'release';
SELECT throws_ok(format('SELECT durable_jobs.fail_job(%s, %L, %L, ''permanent_error'')', job_id, claim_token, owner_id),
                 'LF001', NULL, 'a released token is stale for fail_job (LF001)')
FROM t09a_claim WHERE claim_label = 'release';
SELECT results_eq(
    $$SELECT job_record_id, attempt_number, lease_fencing_generation FROM durable_jobs.claim_next_job('t09a.release', 'worker-b')$$,
    format('VALUES (%s::bigint, 1, %s::bigint)', job_id, generation + 1),
    'a released job is claimable at once, as attempt 1 again, with the next generation')
FROM t09a_claim WHERE claim_label = 'release';
SELECT is((SELECT renewal_outcome FROM durable_jobs.renew_job_lease(job_id, claim_token, owner_id)), 'stale',
          'a released token stays stale after the job is claimed again')
FROM t09a_claim WHERE claim_label = 'release';

-- Stale claims ---------------------------------------------------------------

DO $$ BEGIN PERFORM pg_temp.enqueue_and_claim('wrong_token', 't09a.wrong_token', 'worker-a'); END $$;
DO $$ BEGIN PERFORM pg_temp.enqueue_and_claim('wrong_owner', 't09a.wrong_owner', 'worker-a'); END $$;
DO $$ BEGIN PERFORM pg_temp.enqueue_and_claim('other_role', 't09a.other_role', 'worker-a'); END $$;
DO $$ BEGIN PERFORM pg_temp.enqueue_and_claim('terminal', 't09a.terminal', 'worker-a'); END $$;
DO $$ BEGIN PERFORM durable_jobs.complete_job(job_id, claim_token, owner_id) FROM t09a_claim WHERE claim_label = 'terminal'; END $$;
DO $$ BEGIN PERFORM pg_temp.enqueue_and_claim('cancelled', 't09a.cancelled', 'worker-a'); END $$;
DO $$ BEGIN PERFORM durable_jobs.cancel_job(job_id) FROM t09a_claim WHERE claim_label = 'cancelled'; END $$;

-- Let the 1 s leases run out by the database clock, then supersede one.
DO $$ BEGIN PERFORM pg_sleep(1.1); END $$;
SELECT is((SELECT job_record_id FROM durable_jobs.claim_next_job('t09a.superseded', 'worker-b')), job_id,
          'an expired claim is reclaimed by another worker (the superseding claim)')
FROM t09a_claim WHERE claim_label = 'superseded';

INSERT INTO t09a_before SELECT claim_label, pg_temp.t09a_job_state(job_id) FROM t09a_claim
WHERE claim_label IN ('expired', 'superseded', 'wrong_token', 'wrong_owner', 'other_role', 'terminal', 'cancelled');

-- The claim each case presents: the real one except for the token or owner.
CREATE TEMP TABLE t09a_presented AS
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
FROM t09a_claim c
WHERE c.claim_label IN ('expired', 'superseded', 'wrong_token', 'wrong_owner', 'other_role', 'terminal', 'cancelled');
GRANT ALL ON t09a_presented TO PUBLIC;

-- The other login role holds durable_job_worker, as the claiming role does.
CREATE ROLE t09a_other_login LOGIN IN ROLE durable_job_worker;

SELECT throws_ok(
    format('SELECT pg_temp.t09a_worker_tx(%L, %s, %L, %L, %L)', claim_label, job_id, presented_token, presented_owner, w),
    'LF001', NULL, format('%s_job with %s raises LF001 and rolls back the target write', w, case_text))
FROM t09a_presented CROSS JOIN (VALUES ('complete'), ('retry'), ('fail')) AS terminal_write(w)
WHERE claim_label <> 'other_role'
ORDER BY claim_label, w;
SELECT is(durable_jobs.release_job_claim(job_id, presented_token, presented_owner), false,
          format('release_job_claim with %s returns false', case_text))
FROM t09a_presented WHERE claim_label <> 'other_role'
ORDER BY claim_label;

SET SESSION AUTHORIZATION t09a_other_login;
SELECT throws_ok(
    format('SELECT pg_temp.t09a_worker_tx(%L, %s, %L, %L, %L)', claim_label, job_id, presented_token, presented_owner, w),
    'LF001', NULL, format('%s_job with %s raises LF001 and rolls back the target write', w, case_text))
FROM t09a_presented CROSS JOIN (VALUES ('complete'), ('retry'), ('fail')) AS terminal_write(w)
WHERE claim_label = 'other_role'
ORDER BY w;
SELECT is(durable_jobs.release_job_claim(job_id, presented_token, presented_owner), false,
          format('release_job_claim with %s returns false', case_text))
FROM t09a_presented WHERE claim_label = 'other_role';
SELECT is((SELECT renewal_outcome FROM durable_jobs.renew_job_lease(job_id, presented_token, presented_owner)),
          'stale', 'renew_job_lease with a claim presented by another login role is stale')
FROM t09a_presented WHERE claim_label = 'other_role';
RESET SESSION AUTHORIZATION;

SELECT is(pg_temp.t09a_job_state(b.claim_label_job), b.job_state,
          format('stale terminal writes with %s change nothing: job row and ledger as before', p.case_text))
FROM (SELECT t.claim_label, t.job_state, c.job_id AS claim_label_job
      FROM t09a_before t JOIN t09a_claim c USING (claim_label)) b
JOIN t09a_presented p USING (claim_label)
ORDER BY b.claim_label;
SELECT is((SELECT count(*) FROM t09a_target t JOIN t09a_presented p USING (claim_label)), 0::bigint,
          'no target write of a stale worker survives its LF001');

-- The claims refused above were refused for being stale, not broken: the real
-- holder can still finish them.
SELECT lives_ok(format('SELECT durable_jobs.complete_job(%s, %L, %L)', c.job_id, c.claim_token, c.owner_id),
                format('after refusing %s, the claim''s own holder still completes it', p.case_text))
FROM t09a_claim c JOIN t09a_presented p USING (claim_label)
WHERE c.claim_label IN ('wrong_token', 'wrong_owner', 'other_role')
ORDER BY c.claim_label;

-- ============================================================================
-- release_job_claims (migration 023) gives up many claims
-- of one worker in one call, each decided exactly as release_job_claim
-- decides one: a fenced claim's job is QUEUED and claimable at once, its
-- attempt given back, its token stale (true); a claim already stale answers
-- false and is counted as a stale_release, charged as release_job_claim
-- charges it; one row out per claim in, in input order; a stale claim does
-- not stop the others; bad input is LF003 and changes nothing. The lock
-- wait and the batch-equals-single differential test are in
-- sql/integration (batch_release_test.go).
-- ============================================================================

CREATE TEMP TABLE releases (label text NOT NULL, job_record_id bigint, released boolean, position integer) ON COMMIT DROP;
GRANT ALL ON releases TO PUBLIC;
CREATE TEMP TABLE marks (label text PRIMARY KEY, value bigint) ON COMMIT DROP;

DO $setup$
BEGIN
    PERFORM durable_jobs.set_queue_lease_policy('t09b.release', interval '1 hour', interval '10 minutes',
                                                interval '2 hours', true, 'pgTAP 09: batch release');
END
$setup$;
SELECT durable_jobs.enqueue_job('t09b.release', jsonb_build_object('n', n)) FROM generate_series(1, 6) n;
SET LOCAL ROLE durable_job_worker;
SELECT pg_temp.claim_jobs('mine', 't09b.release', 'worker-a', 4);
SELECT pg_temp.claim_jobs('other', 't09b.release', 'worker-b', 2);
RESET ROLE;
INSERT INTO marks VALUES ('star', pg_temp.tally('*', 'stale_release'));

CREATE TEMP VIEW mine AS
    SELECT job_record_id, lease_claim_token, row_number() OVER (ORDER BY job_record_id) AS n
    FROM claims WHERE label = 'mine';
GRANT SELECT ON mine TO PUBLIC;
CREATE TEMP VIEW theirs AS
    SELECT job_record_id, lease_claim_token, row_number() OVER (ORDER BY job_record_id) AS n
    FROM claims WHERE label = 'other';
GRANT SELECT ON theirs TO PUBLIC;

SET LOCAL ROLE durable_job_worker;
-- Bad input, each on claims that are fenced: LF003, nothing released.
SELECT throws_ok($$SELECT * FROM durable_jobs.release_job_claims('bad owner!',
        ARRAY(SELECT job_record_id FROM mine), ARRAY(SELECT lease_claim_token FROM mine))$$,
    'LF003', NULL, 'release_job_claims: a malformed owner id is LF003');
SELECT throws_ok($$SELECT * FROM durable_jobs.release_job_claims('worker-a', NULL, ARRAY[]::uuid[])$$,
    'LF003', NULL, 'release_job_claims: NULL job ids are LF003');
SELECT throws_ok($$SELECT * FROM durable_jobs.release_job_claims('worker-a', ARRAY[]::bigint[], NULL)$$,
    'LF003', NULL, 'release_job_claims: NULL tokens are LF003');
SELECT throws_ok($$SELECT * FROM durable_jobs.release_job_claims('worker-a',
        ARRAY(SELECT job_record_id FROM mine), ARRAY(SELECT lease_claim_token FROM mine WHERE n < 4))$$,
    'LF003', NULL, 'release_job_claims: arrays of different lengths are LF003');
SELECT throws_ok($$SELECT * FROM durable_jobs.release_job_claims('worker-a', ARRAY[[1::bigint], [2::bigint]],
        ARRAY[[gen_random_uuid()], [gen_random_uuid()]])$$,
    'LF003', NULL, 'release_job_claims: multi-dimensional arrays are LF003');
SELECT throws_ok($$SELECT * FROM durable_jobs.release_job_claims('worker-a',
        ARRAY(SELECT job_record_id FROM mine) || NULL::bigint, ARRAY(SELECT lease_claim_token FROM mine) || gen_random_uuid())$$,
    'LF003', NULL, 'release_job_claims: a NULL job id is LF003');
SELECT throws_ok($$SELECT * FROM durable_jobs.release_job_claims('worker-a',
        ARRAY(SELECT job_record_id FROM mine) || 1::bigint, ARRAY(SELECT lease_claim_token FROM mine) || NULL::uuid)$$,
    'LF003', NULL, 'release_job_claims: a NULL token is LF003');
SELECT throws_ok($$SELECT * FROM durable_jobs.release_job_claims('worker-a',
        ARRAY(SELECT job_record_id FROM mine) || (SELECT job_record_id FROM mine WHERE n = 1),
        ARRAY(SELECT lease_claim_token FROM mine) || (SELECT lease_claim_token FROM mine WHERE n = 1))$$,
    'LF003', NULL, 'release_job_claims: a job id given twice is LF003');
SELECT throws_ok($$SELECT * FROM durable_jobs.release_job_claims('worker-a',
        ARRAY(SELECT g::bigint FROM generate_series(1, 1001) g), ARRAY(SELECT gen_random_uuid() FROM generate_series(1, 1001)))$$,
    'LF003', NULL, 'release_job_claims: more than 1,000 claims are LF003');
RESET ROLE;
SELECT is((SELECT count(*)::integer FROM durable_jobs.job_record WHERE queue_name = 't09b.release' AND job_status = 'RUNNING'), 6,
    'bad input released nothing');
SELECT is(pg_temp.tally('*', 'stale_release') - (SELECT value FROM marks WHERE label = 'star'), 0::bigint,
    'bad input counted nothing');

SET LOCAL ROLE durable_job_worker;
SELECT is_empty($$SELECT * FROM durable_jobs.release_job_claims('worker-a', ARRAY[]::bigint[], ARRAY[]::uuid[])$$,
    'release_job_claims: empty arrays give zero rows');

-- One batch, in an order that is not the job id order: claim 3, another
-- worker's claim, an unknown job, claim 1 with a wrong token, claim 2, claim 4.
INSERT INTO releases
SELECT 'mixed', r.job_record_id, r.released, row_number() OVER ()
FROM durable_jobs.release_job_claims('worker-a',
        ARRAY[(SELECT job_record_id FROM mine WHERE n = 3), (SELECT job_record_id FROM theirs WHERE n = 1),
              -26, (SELECT job_record_id FROM mine WHERE n = 1), (SELECT job_record_id FROM mine WHERE n = 2),
              (SELECT job_record_id FROM mine WHERE n = 4)],
        ARRAY[(SELECT lease_claim_token FROM mine WHERE n = 3), (SELECT lease_claim_token FROM theirs WHERE n = 1),
              gen_random_uuid(), gen_random_uuid(), (SELECT lease_claim_token FROM mine WHERE n = 2),
              (SELECT lease_claim_token FROM mine WHERE n = 4)]) r;
RESET ROLE;
SELECT results_eq($$SELECT job_record_id, released FROM releases WHERE label = 'mixed' ORDER BY position$$,
    $$VALUES ((SELECT job_record_id FROM mine WHERE n = 3), true), ((SELECT job_record_id FROM theirs WHERE n = 1), false),
             (-26::bigint, false), ((SELECT job_record_id FROM mine WHERE n = 1), false),
             ((SELECT job_record_id FROM mine WHERE n = 2), true), ((SELECT job_record_id FROM mine WHERE n = 4), true)$$,
    'one row per claim in, in input order: the fenced claims released, the others false');
SELECT results_eq(
    $$SELECT job_status::text, attempt_number, lease_expires_at IS NULL, run_after <= clock_timestamp()
      FROM durable_jobs.job_record WHERE job_record_id IN (SELECT job_record_id FROM mine WHERE n IN (2, 3, 4))$$,
    $$VALUES ('QUEUED', 0, true, true), ('QUEUED', 0, true, true), ('QUEUED', 0, true, true)$$,
    'a released job is QUEUED and due at once, its attempt given back, no lease');
SELECT results_eq(
    $$SELECT job_status::text, attempt_number FROM durable_jobs.job_record
      WHERE job_record_id IN ((SELECT job_record_id FROM mine WHERE n = 1), (SELECT job_record_id FROM theirs WHERE n = 1))
      ORDER BY job_record_id$$,
    $$VALUES ('RUNNING', 1), ('RUNNING', 1)$$,
    'a claim with a wrong token or of another owner id is not released: a stale claim does not stop the others, nor is it touched');
SELECT is(pg_temp.tally('t09b.release', 'stale_release'), 2::bigint,
    'the wrong token and the other owner''s claim, both jobs this login claimed last, are counted under the queue');
SELECT is(pg_temp.tally('*', 'stale_release') - (SELECT value FROM marks WHERE label = 'star'), 1::bigint,
    'the unknown job is counted under ''*''');

-- The released tokens are stale for everything, and a release again is false.
SET LOCAL ROLE durable_job_worker;
INSERT INTO releases
SELECT 'again', r.job_record_id, r.released, row_number() OVER ()
FROM durable_jobs.release_job_claims('worker-a', ARRAY(SELECT job_record_id FROM mine WHERE n = 3),
                                     ARRAY(SELECT lease_claim_token FROM mine WHERE n = 3)) r;
SELECT throws_ok($$SELECT durable_jobs.complete_job((SELECT job_record_id FROM mine WHERE n = 2),
        (SELECT lease_claim_token FROM mine WHERE n = 2), 'worker-a')$$,
    'LF001', NULL, 'a released claim''s token cannot complete its job');
RESET ROLE;
SELECT is((SELECT released FROM releases WHERE label = 'again'), false, 'releasing a released claim again answers false');
SELECT is(pg_temp.tally('t09b.release', 'stale_release'), 3::bigint, 'and is counted');

-- A released job is claimable at once and its next claim is attempt 1 again.
SET LOCAL ROLE durable_job_worker;
SELECT pg_temp.claim_jobs('again', 't09b.release', 'worker-a', 3);
RESET ROLE;
SELECT results_eq($$SELECT job_record_id, attempt_number FROM claims WHERE label = 'again' ORDER BY job_record_id$$,
    $$SELECT job_record_id, 1 FROM mine WHERE n IN (2, 3, 4) ORDER BY job_record_id$$,
    'the released jobs are claimed again at once, at attempt 1');

-- ============================================================================
-- complete_jobs and the lease expiry floor: what migration 008's
-- performance work changed.
--  * complete_jobs completes many fenced claims of one worker in one call,
--    each fenced exactly as complete_job: one row out per claim in, in input
--    order, results in the ledger; one stale claim raises LF001 and nothing
--    is completed; bad input is LF003 before anything else.
--  * lease_expiry_floor, the reclaim index's lower bound of lease_expires_at:
--    a claim sets it to the expiry; a renewal leaves it alone until it is
--    within a sixth of the lease of the clock and then moves it up to the new
--    expiry; the constraint keeps it at or below the expiry; a live lease
--    whose floor has passed is skipped, an expired one reclaimed at once.
--  * claim_next_jobs claims n jobs in one pass (reclaims first, tallied
--    together) and leaves the caller's plan_cache_mode as it found it.
--  * The fast input checks (a well-formed value skips require_well_formed)
--    still send a value with a caller's collation to it: LF003.
-- Claims run as durable_job_worker; the floor is moved by hand as superuser
-- so that nothing needs to sleep.
-- ============================================================================

CREATE TEMP TABLE completions (label text NOT NULL, job_record_id bigint, job_status text,
                               lease_fencing_generation bigint, position integer) ON COMMIT DROP;
GRANT ALL ON completions TO PUBLIC;

DO $setup$
BEGIN
    PERFORM durable_jobs.set_queue_lease_policy('batch_check_done', interval '1 hour', interval '10 minutes',
                                                interval '2 hours', true, 'pgTAP 09: batch completion');
    PERFORM durable_jobs.set_queue_lease_policy('batch_check_floor', interval '60 seconds', interval '20 seconds',
                                                interval '2 hours', true, 'pgTAP 09: a 60 s lease for the floor');
    PERFORM durable_jobs.set_queue_lease_policy('batch_check_off', interval '60 seconds', interval '20 seconds',
                                                interval '2 hours', false, 'pgTAP 09: renewal switched off');
END
$setup$;
SELECT durable_jobs.enqueue_job('batch_check_done', jsonb_build_object('n', n)) FROM generate_series(1, 6) n;
SELECT durable_jobs.enqueue_job('batch_check_floor', jsonb_build_object('n', n)) FROM generate_series(1, 4) n;
SELECT durable_jobs.enqueue_job('batch_check_off', '{"n": 1}');
SELECT durable_jobs.enqueue_job('batch_check_pass', jsonb_build_object('n', n)) FROM generate_series(1, 4) n;

SET LOCAL ROLE durable_job_worker;
SELECT pg_temp.claim_jobs('done', 'batch_check_done', 'worker-a', 6);
SELECT pg_temp.claim_jobs('floor', 'batch_check_floor', 'worker-a', 4);
SELECT pg_temp.claim_job('off', 'batch_check_off', 'worker-a');
SELECT pg_temp.claim_jobs('pass', 'batch_check_pass', 'worker-a', 2);
RESET ROLE;

-- complete_jobs ------------------------------------------------------------------------------

CREATE TEMP VIEW done_claims AS
    SELECT job_record_id, lease_claim_token, row_number() OVER (ORDER BY job_record_id) AS n
    FROM claims WHERE label = 'done';
GRANT SELECT ON done_claims TO PUBLIC;

SET LOCAL ROLE durable_job_worker;
-- Bad input, each on claims that are fenced: LF003 before anything else.
SELECT throws_ok($$SELECT * FROM durable_jobs.complete_jobs('bad owner!',
        ARRAY(SELECT job_record_id FROM done_claims), ARRAY(SELECT lease_claim_token FROM done_claims))$$,
    'LF003', NULL, 'complete_jobs: a malformed owner id is LF003');
SELECT throws_ok($$SELECT * FROM durable_jobs.complete_jobs('worker-a', NULL, ARRAY[]::uuid[])$$,
    'LF003', NULL, 'complete_jobs: a NULL id array is LF003');
SELECT throws_ok($$SELECT * FROM durable_jobs.complete_jobs('worker-a', ARRAY[]::bigint[], NULL)$$,
    'LF003', NULL, 'complete_jobs: a NULL token array is LF003');
SELECT throws_ok($$SELECT * FROM durable_jobs.complete_jobs('worker-a',
        ARRAY(SELECT job_record_id FROM done_claims), ARRAY(SELECT lease_claim_token FROM done_claims WHERE n > 1))$$,
    'LF003', NULL, 'complete_jobs: arrays of different lengths are LF003');
SELECT throws_ok($$SELECT * FROM durable_jobs.complete_jobs('worker-a',
        ARRAY(SELECT job_record_id FROM done_claims), ARRAY(SELECT lease_claim_token FROM done_claims),
        ARRAY['{}'::jsonb])$$,
    'LF003', NULL, 'complete_jobs: a result array of another length is LF003');
SELECT throws_ok($$SELECT * FROM durable_jobs.complete_jobs('worker-a',
        ARRAY(SELECT job_record_id FROM done_claims) || NULL::bigint,
        ARRAY(SELECT lease_claim_token FROM done_claims) || gen_random_uuid())$$,
    'LF003', NULL, 'complete_jobs: a NULL job id is LF003');
SELECT throws_ok($$SELECT * FROM durable_jobs.complete_jobs('worker-a',
        ARRAY(SELECT job_record_id FROM done_claims), ARRAY(SELECT lease_claim_token FROM done_claims WHERE n > 1) || NULL::uuid)$$,
    'LF003', NULL, 'complete_jobs: a NULL token is LF003');
SELECT throws_ok($$SELECT * FROM durable_jobs.complete_jobs('worker-a',
        ARRAY(SELECT job_record_id FROM done_claims WHERE n = 1) || ARRAY(SELECT job_record_id FROM done_claims WHERE n = 1),
        ARRAY(SELECT lease_claim_token FROM done_claims WHERE n = 1) || ARRAY(SELECT lease_claim_token FROM done_claims WHERE n = 1))$$,
    'LF003', NULL, 'complete_jobs: a job id given twice is LF003');
SELECT throws_ok($$SELECT * FROM durable_jobs.complete_jobs('worker-a',
        ARRAY(SELECT g::bigint FROM generate_series(1, 1001) g), ARRAY(SELECT gen_random_uuid() FROM generate_series(1, 1001)))$$,
    'LF003', NULL, 'complete_jobs: more than 1,000 claims is LF003');
SELECT throws_ok($$SELECT * FROM durable_jobs.complete_jobs('worker-a',
        ARRAY[ARRAY(SELECT job_record_id FROM done_claims WHERE n <= 2)], ARRAY(SELECT lease_claim_token FROM done_claims WHERE n <= 2))$$,
    'LF003', NULL, 'complete_jobs: a two-dimensional id array is LF003');
SELECT throws_ok($$SELECT * FROM durable_jobs.complete_jobs('worker-a',
        ARRAY(SELECT job_record_id FROM done_claims WHERE n = 1), ARRAY(SELECT lease_claim_token FROM done_claims WHERE n = 1),
        ARRAY[ARRAY['{}'::jsonb]])$$,
    'LF003', NULL, 'complete_jobs: a two-dimensional result array is LF003');
SELECT throws_ok($$SELECT * FROM durable_jobs.complete_jobs('worker-a',
        ARRAY(SELECT job_record_id FROM done_claims WHERE n = 1), ARRAY(SELECT lease_claim_token FROM done_claims WHERE n = 1),
        ARRAY[jsonb_build_object('big', (SELECT string_agg(md5(g::text), '') FROM generate_series(1, 40000) g))])$$,
    'LF003', 'each result document must be at most 1 MiB', 'complete_jobs: a result document over 1 MiB is LF003, as for complete_job');
SELECT throws_ok($$SELECT * FROM durable_jobs.complete_jobs('worker-a' COLLATE "en-x-icu",
        ARRAY(SELECT job_record_id FROM done_claims), ARRAY(SELECT lease_claim_token FROM done_claims))$$,
    'LF003', 'worker_owner_id must not carry a collation', 'complete_jobs: an owner id with a collation of the caller''s is LF003');
SELECT throws_ok($$SELECT * FROM durable_jobs.renew_job_leases('worker-a' COLLATE "en-x-icu",
        ARRAY(SELECT job_record_id FROM done_claims), ARRAY(SELECT lease_claim_token FROM done_claims))$$,
    'LF003', 'worker_owner_id must not carry a collation', 'renew_job_leases: an owner id with a collation of the caller''s is LF003');
SELECT throws_ok($$SELECT * FROM durable_jobs.renew_job_lease((SELECT job_record_id FROM done_claims WHERE n = 1),
        (SELECT lease_claim_token FROM done_claims WHERE n = 1), 'worker-a' COLLATE "en-x-icu")$$,
    'LF003', 'worker_owner_id must not carry a collation', 'renew_job_lease: an owner id with a collation of the caller''s is LF003');
SELECT throws_ok($$SELECT * FROM durable_jobs.claim_next_job('batch_check_done', 'worker-a' COLLATE "en-x-icu")$$,
    'LF003', 'queue_name must not carry a collation',
    'claim_next_job: an owner id with a collation of the caller''s is LF003 (the call''s collation is every text argument''s)');
SELECT is((SELECT count(*)::integer FROM durable_jobs.complete_jobs('worker-a', ARRAY[]::bigint[], ARRAY[]::uuid[])),
          0, 'complete_jobs: empty arrays give zero rows');

-- One stale claim (a wrong token for job 3, or another owner) aborts the whole batch.
SELECT throws_ok($$SELECT * FROM durable_jobs.complete_jobs('worker-a',
        ARRAY(SELECT job_record_id FROM done_claims WHERE n <= 3),
        ARRAY(SELECT CASE WHEN n = 3 THEN gen_random_uuid() ELSE lease_claim_token END FROM done_claims WHERE n <= 3))$$,
    'LF001', NULL, 'complete_jobs: one stale claim in the batch raises LF001');
SELECT throws_ok($$SELECT * FROM durable_jobs.complete_jobs('worker-b',
        ARRAY(SELECT job_record_id FROM done_claims WHERE n <= 3), ARRAY(SELECT lease_claim_token FROM done_claims WHERE n <= 3))$$,
    'LF001', NULL, 'complete_jobs: another owner''s claims raise LF001');
RESET ROLE;
SELECT is((SELECT count(*)::integer FROM durable_jobs.job_record j JOIN done_claims d USING (job_record_id)
           WHERE j.job_status = 'RUNNING'),
          6, 'after LF001 nothing of the batch was completed: every job is still RUNNING');

-- A batch of three, in an order that is not job id order, with results.
SET LOCAL ROLE durable_job_worker;
INSERT INTO completions
SELECT 'three', c.*, row_number() OVER () FROM durable_jobs.complete_jobs('worker-a',
    ARRAY(SELECT job_record_id FROM done_claims WHERE n <= 3 ORDER BY n DESC),
    ARRAY(SELECT lease_claim_token FROM done_claims WHERE n <= 3 ORDER BY n DESC),
    ARRAY(SELECT jsonb_build_object('result', n) FROM done_claims WHERE n <= 3 ORDER BY n DESC)) c;
-- Without results: every result is NULL.
INSERT INTO completions
SELECT 'plain', c.*, row_number() OVER () FROM durable_jobs.complete_jobs('worker-a',
    ARRAY(SELECT job_record_id FROM done_claims WHERE n IN (4, 5)),
    ARRAY(SELECT lease_claim_token FROM done_claims WHERE n IN (4, 5))) c;
-- A completed claim is stale for a second batch.
SELECT throws_ok($$SELECT * FROM durable_jobs.complete_jobs('worker-a',
        ARRAY(SELECT job_record_id FROM done_claims WHERE n IN (1, 6)), ARRAY(SELECT lease_claim_token FROM done_claims WHERE n IN (1, 6)))$$,
    'LF001', NULL, 'complete_jobs: a claim already completed is stale, and the batch with it raises LF001');
RESET ROLE;

SELECT is(ARRAY(SELECT job_record_id FROM completions WHERE label = 'three' ORDER BY position),
          ARRAY(SELECT job_record_id FROM done_claims WHERE n <= 3 ORDER BY n DESC),
          'complete_jobs returns one row per claim, in input order');
SELECT is(ARRAY(SELECT DISTINCT job_status FROM completions), ARRAY['SUCCEEDED'],
          'every row out says SUCCEEDED');
SELECT is(ARRAY(SELECT c.lease_fencing_generation FROM completions c ORDER BY c.job_record_id),
          ARRAY(SELECT j.lease_fencing_generation FROM durable_jobs.job_record j
                WHERE j.job_record_id IN (SELECT job_record_id FROM completions) ORDER BY j.job_record_id),
          'each row carries the fencing generation of the claim it completed');
SELECT is((SELECT count(*)::integer FROM durable_jobs.job_record j JOIN done_claims d USING (job_record_id)
           WHERE j.job_status = 'SUCCEEDED' AND j.lease_expires_at IS NULL),
          5, 'the five completed jobs are SUCCEEDED with no lease');
SELECT is((SELECT job_status::text FROM durable_jobs.job_record WHERE job_record_id = (SELECT job_record_id FROM done_claims WHERE n = 6)),
          'RUNNING', 'the job of the refused second batch that was not completed before is still RUNNING');
SELECT set_eq(
    $$SELECT l.job_record_id, l.outcome_status::text, l.result_document, l.lease_fencing_generation
      FROM durable_jobs.job_outcome_ledger l JOIN done_claims d USING (job_record_id)$$,
    $$SELECT d.job_record_id, 'SUCCEEDED', CASE WHEN d.n <= 3 THEN jsonb_build_object('result', d.n) END, j.lease_fencing_generation
      FROM done_claims d JOIN durable_jobs.job_record j USING (job_record_id) WHERE d.n <= 5$$,
    'the ledger holds one SUCCEEDED outcome per completed job, with its result (NULL when none was given) and generation');

-- lease_expiry_floor --------------------------------------------------------------------------

CREATE TEMP VIEW floor_claims AS
    SELECT c.job_record_id, c.lease_claim_token, row_number() OVER (ORDER BY c.job_record_id) AS n
    FROM claims c WHERE c.label = 'floor';
GRANT SELECT ON floor_claims TO PUBLIC;

SELECT is((SELECT count(*)::integer FROM durable_jobs.job_record j JOIN floor_claims f USING (job_record_id)
           WHERE j.lease_expiry_floor = j.lease_expires_at),
          4, 'a claim sets lease_expiry_floor to the lease''s expiry');

-- Claim 1: its floor is a minute ahead, far more than a sixth of the lease (10 s): a renewal leaves it.
CREATE TEMP TABLE floor_before ON COMMIT DROP AS
    SELECT lease_expiry_floor FROM durable_jobs.job_record
    WHERE job_record_id = (SELECT job_record_id FROM floor_claims WHERE n = 1);
-- Claim 2: its floor is 5 s ahead, within a sixth of the lease: a renewal moves it to the new expiry.
UPDATE durable_jobs.job_record SET lease_expiry_floor = clock_timestamp() + interval '5 seconds'
WHERE job_record_id = (SELECT job_record_id FROM floor_claims WHERE n = 2);
-- The renewal-switched-off claim, its floor 5 s ahead: moved, but only to the unchanged expiry.
UPDATE durable_jobs.job_record SET lease_expiry_floor = clock_timestamp() + interval '5 seconds'
WHERE job_record_id = (SELECT job_record_id FROM claims WHERE label = 'off');

SET LOCAL ROLE durable_job_worker;
SELECT is(ARRAY(SELECT r.renewal_outcome FROM durable_jobs.renew_job_leases('worker-a',
              ARRAY(SELECT job_record_id FROM floor_claims WHERE n <= 2 ORDER BY n),
              ARRAY(SELECT lease_claim_token FROM floor_claims WHERE n <= 2 ORDER BY n)) r),
          ARRAY['renewed', 'renewed'], 'both claims renew');
SELECT is((SELECT r.renewal_outcome FROM claims c, durable_jobs.renew_job_lease(c.job_record_id, c.lease_claim_token, 'worker-a') r
           WHERE c.label = 'off'),
          'renewal_disabled', 'the claim whose queue has renewal switched off is renewal_disabled');
RESET ROLE;

SELECT is((SELECT lease_expiry_floor FROM durable_jobs.job_record
           WHERE job_record_id = (SELECT job_record_id FROM floor_claims WHERE n = 1)),
          (SELECT lease_expiry_floor FROM floor_before), 'a renewal leaves a floor that is well ahead of the clock alone (no indexed column changes)');
SELECT ok((SELECT lease_expiry_floor < lease_expires_at FROM durable_jobs.job_record
           WHERE job_record_id = (SELECT job_record_id FROM floor_claims WHERE n = 1)),
          'and that floor stays below the extended expiry');
SELECT is((SELECT lease_expiry_floor FROM durable_jobs.job_record
           WHERE job_record_id = (SELECT job_record_id FROM floor_claims WHERE n = 2)),
          (SELECT lease_expires_at FROM durable_jobs.job_record
           WHERE job_record_id = (SELECT job_record_id FROM floor_claims WHERE n = 2)),
          'a renewal moves a floor within a sixth of the lease of the clock up to the new expiry');
SELECT is((SELECT lease_expiry_floor = lease_expires_at FROM durable_jobs.job_record
           WHERE job_record_id = (SELECT job_record_id FROM claims WHERE label = 'off')),
          true, 'with renewal switched off the floor moves up to the unchanged expiry');

SELECT throws_ok($$UPDATE durable_jobs.job_record SET lease_expiry_floor = lease_expires_at + interval '1 second'
                   WHERE job_record_id = (SELECT job_record_id FROM floor_claims WHERE n = 1)$$,
    '23514', NULL, 'a RUNNING job''s floor above its expiry breaks job_record_running_floor_bounds_expiry');
SELECT throws_ok($$UPDATE durable_jobs.job_record SET lease_expiry_floor = NULL
                   WHERE job_record_id = (SELECT job_record_id FROM floor_claims WHERE n = 1)$$,
    '23514', NULL, 'a RUNNING job without a floor breaks job_record_running_floor_bounds_expiry');

-- Claim 3: floor passed, lease still live (its worker renews late): skipped, not reclaimed.
-- Claim 4: floor and lease passed: reclaimed at once by the next claim.
UPDATE durable_jobs.job_record SET lease_expiry_floor = clock_timestamp() - interval '10 seconds'
WHERE job_record_id = (SELECT job_record_id FROM floor_claims WHERE n = 3);
UPDATE durable_jobs.job_record
SET lease_expiry_floor = clock_timestamp() - interval '2 seconds', lease_expires_at = clock_timestamp() - interval '1 second'
WHERE job_record_id = (SELECT job_record_id FROM floor_claims WHERE n = 4);
SET LOCAL ROLE durable_job_worker;
SELECT pg_temp.claim_jobs('floor_reclaim', 'batch_check_floor', 'worker-b', 5);
RESET ROLE;
SELECT is(ARRAY(SELECT job_record_id FROM claims WHERE label = 'floor_reclaim'),
          ARRAY(SELECT job_record_id FROM floor_claims WHERE n = 4),
          'only the expired claim is reclaimed; the live lease whose floor has passed is skipped');
SELECT is((SELECT attempt_number FROM claims WHERE label = 'floor_reclaim'), 2, 'the reclaim is attempt 2');

-- claim_next_jobs: one pass, reclaims first ----------------------------------------------------

-- Both claims of batch_check_pass expire; two due jobs remain.
UPDATE durable_jobs.job_record
SET lease_expiry_floor = clock_timestamp() - interval '2 seconds', lease_expires_at = clock_timestamp() - interval '1 second'
WHERE job_record_id IN (SELECT job_record_id FROM claims WHERE label = 'pass');
SET LOCAL plan_cache_mode = force_custom_plan;
SET LOCAL ROLE durable_job_worker;
SELECT pg_temp.claim_jobs('pass_again', 'batch_check_pass', 'worker-b', 3);
RESET ROLE;
SELECT is((SELECT count(*)::integer FROM claims WHERE label = 'pass_again'), 3, 'claim_next_jobs(…, 3) claims three jobs');
SELECT is((SELECT count(*)::integer FROM claims WHERE label = 'pass_again'
           AND job_record_id IN (SELECT job_record_id FROM claims WHERE label = 'pass')),
          2, 'the two expired claims are among them (reclaims come first)');
SELECT is((SELECT count(DISTINCT lease_claim_token)::integer FROM claims WHERE label = 'pass_again'),
          3, 'each job has a token of its own');
SELECT is(pg_temp.tally('batch_check_pass', 'reclaim'),
          2::bigint, 'the reclaims of the pass are tallied: 2');
SELECT is(current_setting('plan_cache_mode'), 'force_custom_plan',
          'claim_next_jobs leaves the caller''s plan_cache_mode as it found it');

SELECT * FROM finish();
ROLLBACK;
