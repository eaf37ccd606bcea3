-- 08_renewal: renew_job_lease / renew_job_leases extend only a fenced claim,
-- from clock_timestamp() + the current policy's lease, never below the
-- expiry granted and never past the claim deadline; answer stale for every
-- way a claim can be lost (and tally it), renewal_disabled when the queue's
-- policy turns renewal off, one row per claim in input order, and always the
-- database time; the caller's TimeZone, IntervalStyle and DateStyle change
-- nothing a claim or renewal grants, and a transaction that is not READ
-- COMMITTED is refused. Calls run as durable_job_worker; one 1.1 s sleep
-- lets the 1 s leases of two queues expire.
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
SELECT plan(82);
\ir fixture/fixture.sql

CREATE TEMP TABLE jobs (label text PRIMARY KEY, queue_name text NOT NULL, job_record_id bigint NOT NULL) ON COMMIT DROP;
CREATE TEMP TABLE renewals (
    label            text PRIMARY KEY,
    job_record_id    bigint,
    before_at        timestamptz NOT NULL,
    renewal_outcome  text,
    lease_expires_at timestamptz,
    database_time    timestamptz,
    after_at         timestamptz NOT NULL
) ON COMMIT DROP;
CREATE TEMP TABLE batch_renewals (
    label            text NOT NULL,
    input_position   bigint NOT NULL,
    job_record_id    bigint,
    renewal_outcome  text,
    lease_expires_at timestamptz,
    database_time    timestamptz,
    before_at        timestamptz NOT NULL,
    after_at         timestamptz NOT NULL
) ON COMMIT DROP;
CREATE TEMP TABLE marks (label text PRIMARY KEY, value bigint) ON COMMIT DROP;
GRANT ALL ON jobs, renewals, batch_renewals, marks TO PUBLIC;

-- renew_claim: renew the claim labelled p_claim_label (or the given id and token)
-- once and keep the outcome with the clock readings taken just before and after.
CREATE PROCEDURE pg_temp.renew_claim(p_label text, p_claim_label text, p_worker_owner_id text DEFAULT 'worker-a',
                                     p_token uuid DEFAULT NULL, p_job_record_id bigint DEFAULT NULL)
LANGUAGE plpgsql AS $procedure$
DECLARE
    v_job_record_id bigint := p_job_record_id;
    v_token uuid := p_token;
    v_before timestamptz;
BEGIN
    IF p_claim_label IS NOT NULL THEN
        SELECT COALESCE(v_job_record_id, c.job_record_id), COALESCE(v_token, c.lease_claim_token)
        INTO v_job_record_id, v_token
        FROM claims c WHERE c.label = p_claim_label;
    END IF;
    v_before := clock_timestamp();
    INSERT INTO renewals
    SELECT p_label, v_job_record_id, v_before, r.renewal_outcome, r.lease_expires_at, r.database_time, clock_timestamp()
    FROM durable_jobs.renew_job_lease(v_job_record_id, v_token, p_worker_owner_id) r;
END
$procedure$;

DO $setup$
BEGIN
    PERFORM durable_jobs.set_queue_lease_policy('renew_check_lower', interval '1 hour', interval '10 seconds',
                                                interval '2 hours', true, 'pgTAP 08: a long lease to lower later');
    PERFORM durable_jobs.set_queue_lease_policy('renew_check_cap', interval '10 seconds', interval '1 second',
                                                interval '20 seconds', true, 'pgTAP 08: a 20 s claim lifetime');
    PERFORM durable_jobs.set_queue_lease_policy('renew_check_disabled', interval '10 seconds', interval '1 second',
                                                interval '1 hour', true, 'pgTAP 08: renewal to be switched off');
    PERFORM durable_jobs.set_queue_lease_policy('renew_check_expiry', interval '1 second', interval '200 milliseconds',
                                                interval '1 hour', true, 'pgTAP 08: 1 s leases that expire');
    PERFORM durable_jobs.set_queue_lease_policy('renew_check_supersede', interval '1 second',
                                                interval '200 milliseconds', interval '1 hour', true,
                                                'pgTAP 08: 1 s leases that are reclaimed');
END
$setup$;

-- One job per queue, so each claim picks exactly its job. Queues without a
-- policy of their own run on the '*' default (30 s lease).
INSERT INTO jobs
SELECT label, queue_name, durable_jobs.enqueue_job(queue_name, jsonb_build_object('job', label))
FROM (VALUES ('m1', 'renew_check_m1'), ('m2', 'renew_check_m2'), ('m3', 'renew_check_m3'), ('m4', 'renew_check_m4'),
             ('m5', 'renew_check_m5'), ('m6', 'renew_check_m6'), ('b1', 'renew_check_b1'), ('b2', 'renew_check_b2'),
             ('l1', 'renew_check_lower'), ('c1', 'renew_check_cap'), ('d1', 'renew_check_disabled'),
             ('e1', 'renew_check_expiry'), ('s1', 'renew_check_supersede')) AS v(label, queue_name);
INSERT INTO marks VALUES ('star_stale_before', pg_temp.tally('*', 'stale_renewal'));

-- worker-a claims each job under the job's label, in the order they were
-- enqueued (PostgreSQL evaluates a volatile output column after ORDER BY).
SET LOCAL ROLE durable_job_worker;
SELECT pg_temp.claim_job(label, queue_name) FROM jobs ORDER BY job_record_id;
RESET ROLE;
SELECT is((SELECT count(*)::integer FROM claims), 13, 'each of the thirteen jobs is claimed');

-- renewed: clock_timestamp() + the policy's lease ------------------------------------------

SET LOCAL ROLE durable_job_worker;
CALL pg_temp.renew_claim('m1_first', 'm1');
CALL pg_temp.renew_claim('m1_second', 'm1');
RESET ROLE;

SELECT is((SELECT renewal_outcome FROM renewals WHERE label = 'm1_first'), 'renewed',
          'renewing a fenced claim answers renewed');
SELECT ok((SELECT r.lease_expires_at BETWEEN r.before_at + interval '30 seconds' AND r.database_time + interval '30 seconds'
           FROM renewals r WHERE r.label = 'm1_first'),
          'the renewed expiry is clock_timestamp() at the renewal plus the policy''s 30 s lease');
SELECT ok((SELECT r.lease_expires_at > c.lease_expires_at FROM renewals r, claims c
           WHERE r.label = 'm1_first' AND c.label = 'm1'),
          'the renewed expiry is later than the expiry granted at claim time');
SELECT ok((SELECT s.lease_expires_at >= f.lease_expires_at FROM renewals f, renewals s
           WHERE f.label = 'm1_first' AND s.label = 'm1_second'),
          'a second renewal never moves the expiry back');
SELECT is((SELECT j.lease_expires_at FROM durable_jobs.job_record j JOIN claims c USING (job_record_id) WHERE c.label = 'm1'),
          (SELECT lease_expires_at FROM renewals WHERE label = 'm1_second'),
          'the stored expiry is the one the last renewal returned');
SELECT results_eq(
    $$SELECT j.lease_renewal_count, j.attempt_number, j.lease_fencing_generation, j.job_status::text
      FROM durable_jobs.job_record j JOIN claims c USING (job_record_id) WHERE c.label = 'm1'$$,
    $$VALUES (2::bigint, 1, 1::bigint, 'RUNNING'::text)$$,
    'two renewals count 2 and change neither the attempt, the generation nor the status');

-- renewed: never earlier than granted, never past the claim deadline --------------------------

DO $lower$
BEGIN
    PERFORM durable_jobs.set_queue_lease_policy('renew_check_lower', interval '1 second', interval '200 milliseconds',
                                                interval '2 hours', true, 'pgTAP 08: lease lowered under a claim');
    PERFORM durable_jobs.set_queue_lease_policy('renew_check_cap', interval '1 hour', interval '10 seconds',
                                                interval '7 days', true, 'pgTAP 08: lease and lifetime raised under a claim');
END
$lower$;
SET LOCAL ROLE durable_job_worker;
CALL pg_temp.renew_claim('l1_lowered', 'l1');
CALL pg_temp.renew_claim('c1_capped', 'c1');
CALL pg_temp.renew_claim('c1_capped_again', 'c1');
RESET ROLE;

SELECT is((SELECT renewal_outcome FROM renewals WHERE label = 'l1_lowered'), 'renewed',
          'a fenced claim is still renewed after its queue''s lease was lowered');
SELECT is((SELECT lease_expires_at FROM renewals WHERE label = 'l1_lowered'),
          (SELECT lease_expires_at FROM claims WHERE label = 'l1'),
          'after the lease is lowered from 1 h to 1 s, a renewal keeps the 1 h expiry already granted');
SELECT is((SELECT lease_renewal_count FROM durable_jobs.job_record j JOIN claims c USING (job_record_id) WHERE c.label = 'l1'),
          1::bigint, 'the renewal that kept the granted expiry still counts as a renewal');
SELECT is((SELECT renewal_outcome FROM renewals WHERE label = 'c1_capped'), 'renewed',
          'a fenced claim near its deadline is renewed');
SELECT is((SELECT lease_expires_at FROM renewals WHERE label = 'c1_capped'),
          (SELECT database_time + interval '20 seconds' FROM claims WHERE label = 'c1'),
          'a renewal never extends past claim time + the max_claim_lifetime in force at claim time (20 s), even after the policy raised it to 7 days');
SELECT is((SELECT lease_expires_at FROM renewals WHERE label = 'c1_capped_again'),
          (SELECT database_time + interval '20 seconds' FROM claims WHERE label = 'c1'),
          'a further renewal at the deadline leaves the expiry at the deadline');
SELECT is((SELECT j.lease_claim_deadline FROM durable_jobs.job_record j JOIN claims c USING (job_record_id) WHERE c.label = 'c1'),
          (SELECT database_time + interval '20 seconds' FROM claims WHERE label = 'c1'),
          'a policy change does not move the deadline of a claim already made');

-- stale: wrong token, wrong owner, other login role ---------------------------------------------

CREATE ROLE t_renew_other_login LOGIN IN ROLE durable_job_worker;
SET LOCAL ROLE durable_job_worker;
CALL pg_temp.renew_claim('m2_wrong_token', 'm2', 'worker-a', gen_random_uuid());
CALL pg_temp.renew_claim('m2_wrong_owner', 'm2', 'worker-z');
RESET ROLE;
SET SESSION AUTHORIZATION t_renew_other_login;
CALL pg_temp.renew_claim('m2_other_login', 'm2');
RESET SESSION AUTHORIZATION;

SELECT is((SELECT renewal_outcome FROM renewals WHERE label = 'm2_wrong_token'), 'stale',
          'a renewal with a token that is not the claim''s is stale');
SELECT is((SELECT renewal_outcome FROM renewals WHERE label = 'm2_wrong_owner'), 'stale',
          'a renewal with the right token but another worker owner id is stale');
SELECT is((SELECT renewal_outcome FROM renewals WHERE label = 'm2_other_login'), 'stale',
          'a renewal with the right token and owner from another login role is stale');
SELECT results_eq(
    $$SELECT j.lease_expires_at, j.lease_renewal_count FROM durable_jobs.job_record j JOIN claims c USING (job_record_id)
      WHERE c.label = 'm2'$$,
    $$SELECT lease_expires_at, 0::bigint FROM claims WHERE label = 'm2'$$,
    'stale renewals extend nothing and count nothing');

SET LOCAL ROLE durable_job_worker;
CALL pg_temp.renew_claim('m2_right', 'm2');
RESET ROLE;
SELECT is((SELECT renewal_outcome FROM renewals WHERE label = 'm2_right'), 'renewed',
          'the same claim presented by its own login role, token and owner is still renewed');

-- stale: cancelled, SUCCEEDED, FAILED, RETRY_SCHEDULED -------------------------------------------

SET LOCAL ROLE durable_job_producer;
SELECT ok(durable_jobs.cancel_job((SELECT job_record_id FROM claims WHERE label = 'm3')), 'the running job m3 is cancelled');
RESET ROLE;
SET LOCAL ROLE durable_job_worker;
DO $terminal$
DECLARE
    v_m4 claims;
    v_m5 claims;
    v_m6 claims;
BEGIN
    SELECT * INTO STRICT v_m4 FROM claims WHERE label = 'm4';
    SELECT * INTO STRICT v_m5 FROM claims WHERE label = 'm5';
    SELECT * INTO STRICT v_m6 FROM claims WHERE label = 'm6';
    PERFORM durable_jobs.complete_job(v_m4.job_record_id, v_m4.lease_claim_token, 'worker-a');
    PERFORM durable_jobs.fail_job(v_m5.job_record_id, v_m5.lease_claim_token, 'worker-a', 'renewal_check_failure');
    PERFORM durable_jobs.retry_job(v_m6.job_record_id, v_m6.lease_claim_token, 'worker-a', interval '1 hour',
                                   'renewal_check_retry');
END
$terminal$;
CALL pg_temp.renew_claim('m3_cancelled', 'm3');
CALL pg_temp.renew_claim('m4_succeeded', 'm4');
CALL pg_temp.renew_claim('m5_failed', 'm5');
CALL pg_temp.renew_claim('m6_retry_scheduled', 'm6');
RESET ROLE;

SELECT results_eq(
    $$SELECT j.job_status::text FROM claims c JOIN durable_jobs.job_record j USING (job_record_id)
      WHERE c.label IN ('m3', 'm4', 'm5', 'm6') ORDER BY c.label$$,
    $$VALUES ('CANCELLED'::text), ('SUCCEEDED'), ('FAILED'), ('RETRY_SCHEDULED')$$,
    'the four jobs reached CANCELLED, SUCCEEDED, FAILED and RETRY_SCHEDULED');
SELECT is((SELECT renewal_outcome FROM renewals WHERE label = 'm3_cancelled'), 'stale',
          'renewing the claim of a cancelled job is stale');
SELECT is((SELECT renewal_outcome FROM renewals WHERE label = 'm4_succeeded'), 'stale',
          'renewing the claim of a SUCCEEDED job is stale');
SELECT is((SELECT renewal_outcome FROM renewals WHERE label = 'm5_failed'), 'stale',
          'renewing the claim of a FAILED job is stale');
SELECT is((SELECT renewal_outcome FROM renewals WHERE label = 'm6_retry_scheduled'), 'stale',
          'renewing the old claim of a RETRY_SCHEDULED job is stale');
SELECT is_empty(
    $$SELECT c.label FROM claims c JOIN durable_jobs.job_record j USING (job_record_id)
      WHERE c.label IN ('m3', 'm4', 'm5', 'm6') AND (j.lease_expires_at IS NOT NULL OR j.lease_renewal_count <> 0)$$,
    'stale renewals of finished jobs give them no lease and no renewal');

-- stale: unknown jobs ---------------------------------------------------------------------------------

SET LOCAL ROLE durable_job_worker;
CALL pg_temp.renew_claim('unknown_zero', NULL, 'worker-a', gen_random_uuid(), 0);
CALL pg_temp.renew_claim('unknown_negative', NULL, 'worker-a', gen_random_uuid(), -1);
CALL pg_temp.renew_claim('unknown_huge', NULL, 'worker-a', gen_random_uuid(), 9223372036854775807);
RESET ROLE;
SELECT is((SELECT renewal_outcome FROM renewals WHERE label = 'unknown_zero'), 'stale',
          'renewing job id 0 is stale, not an error');
SELECT is((SELECT renewal_outcome FROM renewals WHERE label = 'unknown_negative'), 'stale',
          'renewing a negative job id is stale, not an error');
SELECT is((SELECT renewal_outcome FROM renewals WHERE label = 'unknown_huge'), 'stale',
          'renewing a job id that does not exist is stale');

-- renewal_disabled --------------------------------------------------------------------------------------

DO $disable$
BEGIN
    PERFORM durable_jobs.set_queue_lease_policy('renew_check_disabled', interval '10 seconds', interval '1 second',
                                                interval '1 hour', false, 'pgTAP 08: renewal switched off');
END
$disable$;
SET LOCAL ROLE durable_job_worker;
CALL pg_temp.renew_claim('d1_disabled', 'd1');
CALL pg_temp.renew_claim('d1_disabled_wrong_token', 'd1', 'worker-a', gen_random_uuid());
RESET ROLE;
SELECT is((SELECT renewal_outcome FROM renewals WHERE label = 'd1_disabled'), 'renewal_disabled',
          'renewing a valid claim after its queue''s policy switched renewal off answers renewal_disabled');
SELECT is((SELECT lease_expires_at FROM renewals WHERE label = 'd1_disabled'),
          (SELECT lease_expires_at FROM claims WHERE label = 'd1'),
          'renewal_disabled returns the unchanged expiry granted at claim time');
SELECT results_eq(
    $$SELECT j.lease_expires_at, j.lease_renewal_count, j.job_status::text
      FROM durable_jobs.job_record j JOIN claims c USING (job_record_id) WHERE c.label = 'd1'$$,
    $$SELECT lease_expires_at, 0::bigint, 'RUNNING'::text FROM claims WHERE label = 'd1'$$,
    'renewal_disabled leaves the stored expiry and renewal count unchanged and the claim RUNNING');
SELECT is((SELECT renewal_outcome FROM renewals WHERE label = 'd1_disabled_wrong_token'), 'stale',
          'a wrong token on a queue with renewal off is stale, not renewal_disabled');

-- renew_job_leases ---------------------------------------------------------------------------------------

SET LOCAL ROLE durable_job_worker;
DO $batch$
DECLARE
    v_before timestamptz := clock_timestamp();
BEGIN
    INSERT INTO batch_renewals
    SELECT 'mixed', r.ordinality, r.job_record_id, r.renewal_outcome, r.lease_expires_at, r.database_time,
           v_before, clock_timestamp()
    FROM durable_jobs.renew_job_leases('worker-a',
             ARRAY[(SELECT job_record_id FROM claims WHERE label = 'b2'), (SELECT job_record_id FROM claims WHERE label = 'm3'),
                   (SELECT job_record_id FROM claims WHERE label = 'd1'), -5,
                   (SELECT job_record_id FROM claims WHERE label = 'b1')],
             ARRAY[(SELECT lease_claim_token FROM claims WHERE label = 'b2'), (SELECT lease_claim_token FROM claims WHERE label = 'm3'),
                   (SELECT lease_claim_token FROM claims WHERE label = 'd1'), gen_random_uuid(),
                   (SELECT lease_claim_token FROM claims WHERE label = 'b1')]) WITH ORDINALITY AS r;
END
$batch$;
RESET ROLE;

SELECT results_eq(
    $$SELECT job_record_id, renewal_outcome FROM batch_renewals WHERE label = 'mixed' ORDER BY input_position$$,
    $$VALUES ((SELECT job_record_id FROM claims WHERE label = 'b2'), 'renewed'::text),
             ((SELECT job_record_id FROM claims WHERE label = 'm3'), 'stale'),
             ((SELECT job_record_id FROM claims WHERE label = 'd1'), 'renewal_disabled'),
             (-5::bigint, 'stale'),
             ((SELECT job_record_id FROM claims WHERE label = 'b1'), 'renewed')$$,
    'renew_job_leases answers one row per claim, in input order, with renewed, stale and renewal_disabled mixed');
SELECT ok((SELECT lease_expires_at BETWEEN before_at + interval '30 seconds' AND database_time + interval '30 seconds'
           FROM batch_renewals WHERE label = 'mixed' AND input_position = 1),
          'a claim renewed in a batch gets clock_timestamp() + its policy''s lease');
SELECT is((SELECT lease_expires_at FROM batch_renewals WHERE label = 'mixed' AND input_position = 3),
          (SELECT lease_expires_at FROM claims WHERE label = 'd1'),
          'a renewal_disabled claim in a batch returns its unchanged expiry');
SELECT is_empty(
    $$SELECT input_position FROM batch_renewals WHERE label = 'mixed' AND renewal_outcome = 'stale' AND lease_expires_at IS NOT NULL$$,
    'stale claims in a batch return a NULL expiry');
SELECT results_eq(
    $$SELECT c.label, j.lease_renewal_count FROM claims c JOIN durable_jobs.job_record j USING (job_record_id)
      WHERE c.label IN ('b1', 'b2', 'd1') ORDER BY c.label$$,
    $$VALUES ('b1'::text, 1::bigint), ('b2', 1::bigint), ('d1', 0::bigint)$$,
    'the batch renewed b1 and b2 once each and did not count the renewal_disabled claim');

SET LOCAL ROLE durable_job_worker;
SELECT is_empty($$SELECT * FROM durable_jobs.renew_job_leases('worker-a', ARRAY[]::bigint[], ARRAY[]::uuid[])$$,
    'renew_job_leases with empty arrays answers zero rows');
SELECT throws_ok(
    format($$SELECT * FROM durable_jobs.renew_job_leases('worker-a', ARRAY[%s, %s]::bigint[], ARRAY[%L]::uuid[])$$,
           (SELECT job_record_id FROM claims WHERE label = 'b1'), (SELECT job_record_id FROM claims WHERE label = 'b2'),
           (SELECT lease_claim_token FROM claims WHERE label = 'b1')),
    'LF003', NULL, 'arrays of different lengths are refused with LF003');
SELECT throws_ok(
    format($$SELECT * FROM durable_jobs.renew_job_leases('worker-a', ARRAY[%s, NULL]::bigint[], ARRAY[%L, %L]::uuid[])$$,
           (SELECT job_record_id FROM claims WHERE label = 'b1'), (SELECT lease_claim_token FROM claims WHERE label = 'b1'),
           (SELECT lease_claim_token FROM claims WHERE label = 'b2')),
    'LF003', NULL, 'a NULL job id in the array is refused with LF003');
SELECT throws_ok(
    format($$SELECT * FROM durable_jobs.renew_job_leases('worker-a', ARRAY[%s, %s]::bigint[], ARRAY[%L, NULL]::uuid[])$$,
           (SELECT job_record_id FROM claims WHERE label = 'b1'), (SELECT job_record_id FROM claims WHERE label = 'b2'),
           (SELECT lease_claim_token FROM claims WHERE label = 'b1')),
    'LF003', NULL, 'a NULL token in the array is refused with LF003');
SELECT throws_ok(
    format($$SELECT * FROM durable_jobs.renew_job_leases('worker-a', ARRAY[%s, %s]::bigint[], ARRAY[%L, %L]::uuid[])$$,
           (SELECT job_record_id FROM claims WHERE label = 'b1'), (SELECT job_record_id FROM claims WHERE label = 'b1'),
           (SELECT lease_claim_token FROM claims WHERE label = 'b1'), (SELECT lease_claim_token FROM claims WHERE label = 'b1')),
    'LF003', NULL, 'a job id given twice is refused with LF003');
SELECT throws_ok(
    $$SELECT * FROM durable_jobs.renew_job_leases('worker-a',
          (SELECT array_agg(i) FROM generate_series(1, 1001) i),
          (SELECT array_agg(gen_random_uuid()) FROM generate_series(1, 1001)))$$,
    'LF003', NULL, 'more than 1,000 claims are refused with LF003');
SELECT throws_ok($$SELECT * FROM durable_jobs.renew_job_leases('worker-a', NULL, ARRAY[]::uuid[])$$,
    'LF003', NULL, 'a NULL id array is refused with LF003');
SELECT throws_ok(
    format($$SELECT * FROM durable_jobs.renew_job_leases('not a worker id', ARRAY[%s]::bigint[], ARRAY[%L]::uuid[])$$,
           (SELECT job_record_id FROM claims WHERE label = 'b1'), (SELECT lease_claim_token FROM claims WHERE label = 'b1')),
    'LF003', NULL, 'a malformed worker owner id is refused with LF003 even though the claim is valid');
SELECT throws_ok(
    format($$SELECT * FROM durable_jobs.renew_job_lease(%s, NULL, 'worker-a')$$,
           (SELECT job_record_id FROM claims WHERE label = 'b1')),
    'LF003', NULL, 'renew_job_lease with a NULL token is refused with LF003');
SELECT throws_ok(
    format($$SELECT * FROM durable_jobs.renew_job_lease(NULL, %L, 'worker-a')$$,
           (SELECT lease_claim_token FROM claims WHERE label = 'b1')),
    'LF003', NULL, 'renew_job_lease with a NULL job id is refused with LF003');
SELECT lives_ok(
    $$SELECT * FROM durable_jobs.renew_job_leases('worker-a',
          (SELECT array_agg(-i) FROM generate_series(1, 1000) i),
          (SELECT array_agg(gen_random_uuid()) FROM generate_series(1, 1000)))$$,
    'exactly 1,000 claims are accepted');
RESET ROLE;
INSERT INTO marks VALUES ('star_stale_after_1000', pg_temp.tally('*', 'stale_renewal'));
SELECT is((SELECT lease_renewal_count FROM durable_jobs.job_record j JOIN claims c USING (job_record_id) WHERE c.label = 'b1'),
          1::bigint, 'refused batches renewed nothing');

-- renewal_count resets on a new claim; a released token is stale ---------------------------------------------

SET LOCAL ROLE durable_job_worker;
SELECT ok(durable_jobs.release_job_claim((SELECT job_record_id FROM claims WHERE label = 'm1'),
                                         (SELECT lease_claim_token FROM claims WHERE label = 'm1'), 'worker-a'),
          'the worker releases its claim on m1');
SELECT pg_temp.claim_job('m1_again', 'renew_check_m1');
RESET ROLE;
SELECT results_eq(
    $$SELECT j.lease_renewal_count, j.lease_fencing_generation FROM durable_jobs.job_record j
      JOIN claims c USING (job_record_id) WHERE c.label = 'm1_again'$$,
    $$VALUES (0::bigint, 2::bigint)$$,
    'a new claim of a job that was renewed twice starts again at renewal count 0, with generation 2');
SET LOCAL ROLE durable_job_worker;
CALL pg_temp.renew_claim('m1_released_token', 'm1');
CALL pg_temp.renew_claim('m1_again', 'm1_again');
RESET ROLE;
SELECT is((SELECT renewal_outcome FROM renewals WHERE label = 'm1_released_token'), 'stale',
          'the token of a released claim is stale after the job is claimed again');
SELECT is((SELECT lease_renewal_count FROM durable_jobs.job_record j JOIN claims c USING (job_record_id) WHERE c.label = 'm1_again'),
          1::bigint, 'renewing the new claim counts from 0 to 1');

-- stale: expired, and superseded by a reclaim -------------------------------------------------------------------

DO $wait$ BEGIN PERFORM pg_sleep(1.1); END $wait$;

SET LOCAL ROLE durable_job_worker;
CALL pg_temp.renew_claim('e1_expired', 'e1');
SELECT pg_temp.claim_job('s1_reclaimed', 'renew_check_supersede', 'worker-a');
CALL pg_temp.renew_claim('s1_superseded', 's1');
CALL pg_temp.renew_claim('s1_new_token', 's1_reclaimed');
RESET ROLE;

SELECT is((SELECT renewal_outcome FROM renewals WHERE label = 'e1_expired'), 'stale',
          'renewing a claim whose lease expired by database time is stale, even before anyone reclaims it');
SELECT results_eq(
    $$SELECT j.job_status::text, j.lease_expires_at, j.lease_renewal_count
      FROM durable_jobs.job_record j JOIN claims c USING (job_record_id) WHERE c.label = 'e1'$$,
    $$SELECT 'RUNNING'::text, lease_expires_at, 0::bigint FROM claims WHERE label = 'e1'$$,
    'a stale renewal of an expired claim does not extend or count it');
SELECT is((SELECT job_record_id FROM claims WHERE label = 's1_reclaimed'),
          (SELECT job_record_id FROM claims WHERE label = 's1'),
          'the expired claim on s1 is reclaimed by the same worker id');
SELECT is((SELECT renewal_outcome FROM renewals WHERE label = 's1_superseded'), 'stale',
          'after a reclaim the superseded old token is stale, even for the same worker id and login role');
SELECT is((SELECT renewal_outcome FROM renewals WHERE label = 's1_new_token'), 'renewed',
          'after a reclaim the new token is renewed');
SELECT is((SELECT lease_renewal_count FROM durable_jobs.job_record j JOIN claims c USING (job_record_id) WHERE c.label = 's1'),
          1::bigint, 'the reclaimed claim''s renewal count started again at 0');

-- database_time in every outcome; stale renewals are tallied ------------------------------------------------------

SELECT is((SELECT count(*)::integer FROM renewals), 23, 'twenty-three single renewals were recorded, one row each');
SELECT is_empty(
    $$SELECT label FROM renewals WHERE database_time IS NULL OR database_time NOT BETWEEN before_at AND after_at
      UNION ALL
      SELECT label || input_position FROM batch_renewals
      WHERE database_time IS NULL OR database_time NOT BETWEEN before_at AND after_at$$,
    'every outcome, renewed, stale or renewal_disabled, carries the database time of its decision');
SELECT is_empty(
    $$SELECT label FROM renewals WHERE renewal_outcome = 'stale' AND lease_expires_at IS NOT NULL$$,
    'every stale outcome has a NULL expiry');
SELECT is_empty(
    $$SELECT label FROM renewals WHERE renewal_outcome IN ('renewed', 'renewal_disabled')
        AND (lease_expires_at IS NULL OR lease_expires_at <= database_time)$$,
    'every renewed or renewal_disabled outcome has an expiry still in the future at its database time');
SELECT set_eq(
    $$SELECT t.queue_name, sum(t.outcome_count)::bigint FROM durable_jobs.lease_outcome_tally t
      WHERE t.outcome_kind = 'stale_renewal' AND t.queue_name LIKE 'renew\_check\_%' GROUP BY t.queue_name$$,
    $$SELECT j.queue_name, count(*)::bigint
      FROM (SELECT job_record_id FROM renewals WHERE renewal_outcome = 'stale' AND label <> 'm2_other_login'
            UNION ALL SELECT job_record_id FROM batch_renewals WHERE renewal_outcome = 'stale') s
      JOIN jobs j USING (job_record_id) GROUP BY j.queue_name$$,
    'each stale renewal by the login that claimed the job is tallied once under its job''s queue, and nothing else is');
SELECT is((SELECT value FROM marks WHERE label = 'star_stale_after_1000') - (SELECT value FROM marks WHERE label = 'star_stale_before'),
          1005::bigint,
          'stale renewals of unknown jobs and of a job another login claimed are tallied under queue ''*'' (3 single, 1 in the mixed batch, 1,000 in the largest batch, m2''s from another login role)');
SELECT is(pg_temp.tally('renew_check_m2', 'stale_renewal'),
          2::bigint, 'm2''s stale renewals with a wrong token and a wrong owner are tallied under its queue, the one from another login role is not (migration 012)');

-- ============================================================================
-- Session settings, isolation and batches: what migration 003 (renewal v2,
-- claim v2) changed that one session can show. It comes last: it sets the
-- session's TimeZone, IntervalStyle and DateStyle for the rest of the
-- file. (The races, a row that another session holds locked and the
-- deadlock of completions with a batch renewal, are two-session Go tests
-- in sql/integration/locked_test.go.)
--  * The caller's TimeZone, IntervalStyle and DateStyle do not change what a
--    claim or a renewal grants: under a POSIX TimeZone whose daylight saving
--    ends (12 hours back) two hours from now, a policy in day units still
--    gives exactly a 1 day lease and a claim deadline of exactly 2 days.
--  * claim_next_job(s) and renew_job_lease(s) refuse a REPEATABLE READ or
--    SERIALIZABLE transaction with LF003 (a second session opened through
--    dblink, since this file is one READ COMMITTED transaction).
--  * A batch of one's own claims is renewed, each one decided alone.
-- ============================================================================

CREATE EXTENSION IF NOT EXISTS dblink;
CREATE TEMP TABLE locked_renewals (label text PRIMARY KEY, renewal_outcome text, lease_expires_at timestamptz,
                            database_time timestamptz) ON COMMIT DROP;
GRANT ALL ON locked_renewals TO PUBLIC;

DO $setup$
BEGIN
    PERFORM durable_jobs.set_queue_lease_policy('locked_check_days', interval '1 day', interval '8 hours',
                                                interval '2 days', true, 'pgTAP 08: a policy in day units');
    PERFORM durable_jobs.set_queue_lease_policy('locked_check_batch', interval '10 seconds', interval '1 second',
                                                interval '1 hour', true, 'pgTAP 08: a batch of claims');
END
$setup$;
SELECT durable_jobs.enqueue_job('locked_check_days', '{"job": "tz"}');
SELECT durable_jobs.enqueue_job('locked_check_batch', jsonb_build_object('job', n)) FROM generate_series(1, 3) n;

-- Session settings: daylight saving that ends two hours from now ----------------------------

-- Standard time is UTC, daylight time UTC+12; daylight time began on day 0
-- of this year and ends today, two hours from now (an hour of the day past
-- 24 is allowed in a POSIX rule). Then '1 day' after now is 36 hours later.
DO $tz$
DECLARE
    v_now timestamp := clock_timestamp() AT TIME ZONE 'UTC';
BEGIN
    EXECUTE format('SET LOCAL TIME ZONE %L', format('LFS0LFD-12,0/0,%s/%s',
        extract(doy FROM v_now)::integer - 1, extract(hour FROM v_now)::integer + 2 + 12));
END
$tz$;
SET LOCAL IntervalStyle = 'sql_standard';
SET LOCAL DateStyle = 'SQL, DMY';
SELECT ok(extract(epoch FROM (now() + interval '1 day') - now()) > 86400,
          'under this TimeZone, timestamptz + ''1 day'' is more than 24 hours (the setting bites)');

SET LOCAL ROLE durable_job_worker;
SELECT pg_temp.claim_job('tz', 'locked_check_days', 'worker-tz');
INSERT INTO locked_renewals SELECT 'tz', r.* FROM claims c,
    durable_jobs.renew_job_lease(c.job_record_id, c.lease_claim_token, 'worker-tz') r WHERE c.label = 'tz';
RESET ROLE;

SELECT is((SELECT extract(epoch FROM lease_expires_at) - extract(epoch FROM database_time) FROM claims WHERE label = 'tz'),
          86400::numeric, 'the claim''s lease is exactly the policy''s 1 day, 86,400 s, whatever the TimeZone');
SELECT is((SELECT extract(epoch FROM j.lease_claim_deadline) - extract(epoch FROM j.lease_claimed_at)
           FROM durable_jobs.job_record j JOIN claims c USING (job_record_id) WHERE c.label = 'tz'),
          172800::numeric, 'the claim deadline is exactly the max_claim_lifetime of 2 days after the claim');
SELECT is((SELECT renewal_outcome FROM locked_renewals WHERE label = 'tz'), 'renewed', 'the claim renews');
SELECT ok((SELECT extract(epoch FROM lease_expires_at) - extract(epoch FROM database_time) BETWEEN 86399 AND 86400
           FROM locked_renewals WHERE label = 'tz'),
          'the renewed lease is 1 day from the renewal''s clock reading (just before database_time), whatever the TimeZone');
RESET TIME ZONE;
RESET IntervalStyle;
RESET DateStyle;

-- A batch of one's own claims -----------------------------------------------------------------

SET LOCAL ROLE durable_job_worker;
SELECT pg_temp.claim_jobs('locked_batch', 'locked_check_batch', 'worker-b', 3);
RESET ROLE;
SELECT is((SELECT count(*)::integer FROM claims WHERE label LIKE 'locked_batch%'), 3, 'three jobs of the batch queue are claimed');
SET LOCAL ROLE durable_job_worker;
SELECT results_eq(
    $$SELECT r.job_record_id, r.renewal_outcome FROM durable_jobs.renew_job_leases('worker-b',
          (SELECT array_agg(job_record_id ORDER BY job_record_id DESC) FROM claims WHERE label LIKE 'locked_batch%'),
          (SELECT array_agg(lease_claim_token ORDER BY job_record_id DESC) FROM claims WHERE label LIKE 'locked_batch%')) r$$,
    $$SELECT job_record_id, 'renewed'::text FROM claims WHERE label LIKE 'locked_batch%' ORDER BY job_record_id DESC$$,
    'a batch in descending id order is renewed, one row per claim in input order');
SELECT results_eq(
    $$SELECT r.renewal_outcome, r.lease_expires_at IS NULL FROM durable_jobs.renew_job_leases('worker-b',
          (SELECT array_agg(job_record_id ORDER BY job_record_id) FROM claims WHERE label LIKE 'locked_batch%'),
          (SELECT array_agg(CASE WHEN job_record_id = (SELECT min(job_record_id) FROM claims WHERE label LIKE 'locked_batch%')
                                 THEN gen_random_uuid() ELSE lease_claim_token END ORDER BY job_record_id)
           FROM claims WHERE label LIKE 'locked_batch%')) r$$,
    $$VALUES ('stale'::text, true), ('renewed', false), ('renewed', false)$$,
    'in a batch, a wrong token is stale with no expiry and the other claims are renewed');
SELECT is((SELECT count(*)::integer FROM durable_jobs.renew_job_leases('worker-b', '{}', '{}')), 0,
          'an empty batch answers zero rows');
RESET ROLE;

-- Isolation: a second session, in REPEATABLE READ and SERIALIZABLE -----------------------------

SELECT dblink_connect('other', format('host=%s port=%s dbname=%s user=%s',
    COALESCE(host(inet_server_addr()), split_part(current_setting('unix_socket_directories'), ',', 1)),
    COALESCE(inet_server_port()::text, current_setting('port')), current_database(), current_user));

SELECT dblink_exec('other', 'BEGIN ISOLATION LEVEL REPEATABLE READ');
SELECT throws_ok($$SELECT * FROM dblink('other', 'SELECT renewal_outcome FROM durable_jobs.renew_job_leases(''worker-b'', ''{-1}'', ''{00000000-0000-4000-8000-000000000000}'')') AS t(o text)$$,
                 'LF003', NULL, 'renew_job_leases in a REPEATABLE READ transaction is refused with LF003');
SELECT dblink_exec('other', 'ROLLBACK');
SELECT dblink_exec('other', 'BEGIN ISOLATION LEVEL SERIALIZABLE');
SELECT throws_ok($$SELECT * FROM dblink('other', 'SELECT renewal_outcome FROM durable_jobs.renew_job_lease(-1, ''00000000-0000-4000-8000-000000000000'', ''worker-b'')') AS t(o text)$$,
                 'LF003', NULL, 'renew_job_lease in a SERIALIZABLE transaction is refused with LF003');
SELECT dblink_exec('other', 'ROLLBACK');
SELECT dblink_exec('other', 'BEGIN ISOLATION LEVEL REPEATABLE READ');
SELECT throws_ok($$SELECT * FROM dblink('other', 'SELECT job_record_id FROM durable_jobs.claim_next_job(''locked_check_none'', ''worker-b'')') AS t(i bigint)$$,
                 'LF003', NULL, 'claim_next_job in a REPEATABLE READ transaction is refused with LF003');
SELECT dblink_exec('other', 'ROLLBACK');
SELECT dblink_exec('other', 'BEGIN ISOLATION LEVEL SERIALIZABLE');
SELECT throws_ok($$SELECT * FROM dblink('other', 'SELECT job_record_id FROM durable_jobs.claim_next_jobs(''locked_check_none'', ''worker-b'', 5)') AS t(i bigint)$$,
                 'LF003', NULL, 'claim_next_jobs in a SERIALIZABLE transaction is refused with LF003');
SELECT dblink_exec('other', 'ROLLBACK');
SELECT dblink_exec('other', 'BEGIN ISOLATION LEVEL READ COMMITTED');
SELECT is((SELECT o FROM dblink('other', 'SELECT renewal_outcome FROM durable_jobs.renew_job_lease(-1, ''00000000-0000-4000-8000-000000000000'', ''worker-b'')') AS t(o text)),
          'stale', 'in READ COMMITTED the same unknown claim is simply stale');
SELECT dblink_exec('other', 'ROLLBACK');
SELECT dblink_disconnect('other');

SELECT is((SELECT count(*)::integer FROM durable_jobs.control_evidence_record
           WHERE new_values ->> 'migration_name' = '003_renewal_skips_locked_rows' AND evidence_kind = 'migration_applied'),
          1, 'migration 003 recorded migration_applied');

SELECT * FROM finish();
ROLLBACK;
