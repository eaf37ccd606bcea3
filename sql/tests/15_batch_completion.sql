-- 15_batch_completion: what migration 008's performance work changed.
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
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
SELECT plan(43);
\ir fixture/fixture.sql

CREATE TEMP TABLE completions (label text NOT NULL, job_record_id bigint, job_status text,
                               lease_fencing_generation bigint, position integer) ON COMMIT DROP;
GRANT ALL ON completions TO PUBLIC;

DO $setup$
BEGIN
    PERFORM durable_jobs.set_queue_lease_policy('batch_check_done', interval '1 hour', interval '10 minutes',
                                                interval '2 hours', true, 'pgTAP 15: batch completion');
    PERFORM durable_jobs.set_queue_lease_policy('batch_check_floor', interval '60 seconds', interval '20 seconds',
                                                interval '2 hours', true, 'pgTAP 15: a 60 s lease for the floor');
    PERFORM durable_jobs.set_queue_lease_policy('batch_check_off', interval '60 seconds', interval '20 seconds',
                                                interval '2 hours', false, 'pgTAP 15: renewal switched off');
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
