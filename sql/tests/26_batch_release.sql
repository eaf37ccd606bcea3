-- 26_batch_release (migration 023): release_job_claims gives up many claims
-- of one worker in one call, each decided exactly as release_job_claim
-- decides one: a fenced claim's job is QUEUED and claimable at once, its
-- attempt given back, its token stale (true); a claim already stale answers
-- false and is counted as a stale_release, charged as release_job_claim
-- charges it; one row out per claim in, in input order; a stale claim does
-- not stop the others; bad input is LF003 and changes nothing. The lock
-- wait and the batch-equals-single differential test are in
-- sql/integration (batch_release_test.go).
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
SELECT plan(21);
\ir fixture/fixture.sql

CREATE TEMP TABLE releases (label text NOT NULL, job_record_id bigint, released boolean, position integer) ON COMMIT DROP;
GRANT ALL ON releases TO PUBLIC;
CREATE TEMP TABLE marks (label text PRIMARY KEY, value bigint) ON COMMIT DROP;

DO $setup$
BEGIN
    PERFORM durable_jobs.set_queue_lease_policy('t26.release', interval '1 hour', interval '10 minutes',
                                                interval '2 hours', true, 'pgTAP 26: batch release');
END
$setup$;
SELECT durable_jobs.enqueue_job('t26.release', jsonb_build_object('n', n)) FROM generate_series(1, 6) n;
SET LOCAL ROLE durable_job_worker;
SELECT pg_temp.claim_jobs('mine', 't26.release', 'worker-a', 4);
SELECT pg_temp.claim_jobs('other', 't26.release', 'worker-b', 2);
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
SELECT is((SELECT count(*)::integer FROM durable_jobs.job_record WHERE queue_name = 't26.release' AND job_status = 'RUNNING'), 6,
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
SELECT is(pg_temp.tally('t26.release', 'stale_release'), 2::bigint,
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
SELECT is(pg_temp.tally('t26.release', 'stale_release'), 3::bigint, 'and is counted');

-- A released job is claimable at once and its next claim is attempt 1 again.
SET LOCAL ROLE durable_job_worker;
SELECT pg_temp.claim_jobs('again', 't26.release', 'worker-a', 3);
RESET ROLE;
SELECT results_eq($$SELECT job_record_id, attempt_number FROM claims WHERE label = 'again' ORDER BY job_record_id$$,
    $$SELECT job_record_id, 1 FROM mine WHERE n IN (2, 3, 4) ORDER BY job_record_id$$,
    'the released jobs are claimed again at once, at attempt 1');

SELECT * FROM finish();
ROLLBACK;
