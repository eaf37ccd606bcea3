-- 10_outcome_tallies: how lease outcomes are counted in lease_outcome_tally.
-- Since migration 012 a stale renewal or release is counted,
-- and charged to the job's queue only when the calling login made the
-- job's last claim; else to '*'. A login that claimed one job of a queue
-- and guesses the ids of that queue's other jobs (renew_job_lease,
-- renew_job_leases, release_job_claim) raises nothing of that queue's; a
-- stale release is its own kind, stale_release, which the tally's CHECK
-- allows and lease_health_by_queue and lease_outcome_totals report. Two
-- logins of durable_job_worker made here: t10a_victim and t10a_guesser.
-- Since migration 004 (assigned number 005) every count goes to a whole
-- UTC minute, in a row of the writer's backend and login, and rows expire
-- after 30 days.
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
SELECT plan(25);
\ir fixture/fixture.sql

CREATE ROLE t10a_victim LOGIN IN ROLE durable_job_worker;
CREATE ROLE t10a_guesser LOGIN IN ROLE durable_job_worker;
CREATE TEMP TABLE answers (label text PRIMARY KEY, answer text) ON COMMIT DROP;
GRANT ALL ON answers TO PUBLIC;
CREATE TEMP TABLE marks (label text PRIMARY KEY, value bigint) ON COMMIT DROP;
INSERT INTO marks VALUES ('star_renewals', pg_temp.tally('*', 'stale_renewal')),
                         ('star_releases', pg_temp.tally('*', 'stale_release'));

SELECT durable_jobs.enqueue_job('t10a.victim', jsonb_build_object('job', n)) FROM generate_series(1, 2) AS n;

-- The guesser claims one job of the victim's queue; the victim the other.
SET SESSION AUTHORIZATION t10a_guesser;
SELECT pg_temp.claim_job('guesser', 't10a.victim', 'guesser-1');
RESET SESSION AUTHORIZATION;
SET SESSION AUTHORIZATION t10a_victim;
SELECT pg_temp.claim_job('victim', 't10a.victim', 'victim-1');
RESET SESSION AUTHORIZATION;
SELECT is((SELECT count(DISTINCT job_record_id)::integer FROM claims), 2, 'each login holds a claim on its own job of t10a.victim');

-- The guesser, a claimer of the queue, guesses the victim's job id.
SET SESSION AUTHORIZATION t10a_guesser;
INSERT INTO answers SELECT 'guess_single', r.renewal_outcome
FROM claims c, durable_jobs.renew_job_lease(c.job_record_id, gen_random_uuid(), 'victim-1') r WHERE c.label = 'victim';
INSERT INTO answers SELECT 'guess_batch', string_agg(r.renewal_outcome, ',')
FROM claims c, durable_jobs.renew_job_leases('victim-1', ARRAY[c.job_record_id], ARRAY[gen_random_uuid()]) r
WHERE c.label = 'victim';
INSERT INTO answers SELECT 'guess_release', durable_jobs.release_job_claim(c.job_record_id, gen_random_uuid(), 'victim-1')::text
FROM claims c WHERE c.label = 'victim';
INSERT INTO answers SELECT 'unknown_release', durable_jobs.release_job_claim(-19, gen_random_uuid(), 'guesser-1')::text;
RESET SESSION AUTHORIZATION;

SELECT results_eq($$SELECT answer FROM answers WHERE label LIKE 'guess\_%' ORDER BY label$$,
    $$VALUES ('stale'), ('false'), ('stale')$$,
    'the guesser''s single and batch renewals are stale and its release answers false');
SELECT is(pg_temp.tally('t10a.victim', 'stale_renewal'), 0::bigint,
    'a login that claimed a job of the queue cannot raise the queue''s stale-renewal tally by guessing another job''s id');
SELECT is(pg_temp.tally('t10a.victim', 'stale_release'), 0::bigint,
    'nor its stale-release tally');
SELECT is(pg_temp.tally('*', 'stale_renewal') - (SELECT value FROM marks WHERE label = 'star_renewals'), 2::bigint,
    'the two guessed renewals are counted under ''*''');
SELECT is(pg_temp.tally('*', 'stale_release') - (SELECT value FROM marks WHERE label = 'star_releases'), 2::bigint,
    'the guessed release and the release of an unknown job are counted under ''*'' as stale_release');
SELECT is((SELECT sum(outcome_count)::bigint FROM durable_jobs.lease_outcome_tally
           WHERE queue_name = '*' AND counted_by_role = 't10a_guesser'), 4::bigint,
    'the guesses are stored with the guessing login (never returned)');

-- The victim's own stale calls are its queue's trouble.
SET SESSION AUTHORIZATION t10a_victim;
INSERT INTO answers SELECT 'own_wrong_token', r.renewal_outcome
FROM claims c, durable_jobs.renew_job_lease(c.job_record_id, gen_random_uuid(), 'victim-1') r WHERE c.label = 'victim';
INSERT INTO answers SELECT 'own_release', durable_jobs.release_job_claim(c.job_record_id, c.lease_claim_token, 'victim-1')::text
FROM claims c WHERE c.label = 'victim';
INSERT INTO answers SELECT 'own_release_again', durable_jobs.release_job_claim(c.job_record_id, c.lease_claim_token, 'victim-1')::text
FROM claims c WHERE c.label = 'victim';
RESET SESSION AUTHORIZATION;

SELECT results_eq($$SELECT answer FROM answers WHERE label LIKE 'own\_%' ORDER BY label$$,
    $$VALUES ('true'), ('false'), ('stale')$$,
    'the victim''s release answers true, the same release again false, its wrong token stale');
SELECT is(pg_temp.tally('t10a.victim', 'stale_renewal'), 1::bigint,
    'a stale renewal by the login that made the job''s last claim is counted under the job''s queue');
SELECT is(pg_temp.tally('t10a.victim', 'stale_release'), 1::bigint,
    'a stale release by the login that made the job''s last claim is counted under the job''s queue as stale_release');
SELECT is((SELECT count(*)::integer FROM durable_jobs.lease_outcome_tally WHERE queue_name = 't10a.victim'
           AND outcome_kind = 'stale_release' AND counted_by_role = 't10a_victim'), 1,
    'the victim''s stale release is in a row of its own login');

-- The auditor functions report the new kind, under the queue it was charged to.
SET LOCAL ROLE durable_job_auditor;
SELECT results_eq(
    $$SELECT stale_renewals_last_hour, stale_releases_last_hour, reclaims_last_hour
      FROM durable_jobs.lease_health_by_queue() WHERE queue_name = 't10a.victim'$$,
    $$VALUES (1::bigint, 1::bigint, 0::bigint)$$,
    'lease_health_by_queue reports the queue''s stale renewals and stale releases of the last hour');
SELECT ok((SELECT stale_renewals_last_hour >= 2 AND stale_releases_last_hour >= 2
           FROM durable_jobs.lease_health_by_queue() WHERE queue_name = '*'),
    'lease_health_by_queue reports the guesses under ''*''');
SELECT results_eq(
    $$SELECT outcome_kind, outcome_count FROM durable_jobs.lease_outcome_totals(NULL) WHERE queue_name = 't10a.victim'
      ORDER BY outcome_kind$$,
    $$VALUES ('stale_release', 1::bigint), ('stale_renewal', 1::bigint)$$,
    'lease_outcome_totals reports stale_release as its own kind');
RESET ROLE;

-- Migration 022: a batch's stale claims are counted together, one tally
-- write per queue charged (renew_job_leases counted each with its own
-- write of the same row, whose versions every later write walked: the
-- square of the stale claims). The victim's batch: three own claims of
-- t10a.batch_a, two of t10a.batch_b, the guesser's job and an unknown id,
-- all with wrong tokens: five charged to their queues, two to '*', in
-- three writes.
SELECT durable_jobs.enqueue_job(b.q, jsonb_build_object('job', n))
FROM (VALUES ('t10a.batch_a', 3), ('t10a.batch_b', 2)) AS b(q, k), generate_series(1, b.k) AS n;
SET SESSION AUTHORIZATION t10a_victim;
SELECT pg_temp.claim_jobs('batch_a', 't10a.batch_a', 'victim-1', 3);
SELECT pg_temp.claim_jobs('batch_b', 't10a.batch_b', 'victim-1', 2);
RESET SESSION AUTHORIZATION;
INSERT INTO marks VALUES ('star_renewals_batch', pg_temp.tally('*', 'stale_renewal')),
    ('tally_writes', (SELECT n_tup_ins + n_tup_upd FROM pg_stat_xact_user_tables
                      WHERE schemaname = 'durable_jobs' AND relname = 'lease_outcome_tally'));
SET SESSION AUTHORIZATION t10a_victim;
INSERT INTO answers SELECT 'batch_stale', string_agg(DISTINCT r.renewal_outcome, ',') || ' x' || count(*)
FROM durable_jobs.renew_job_leases('victim-1',
        ARRAY(SELECT job_record_id FROM claims WHERE label IN ('batch_a', 'batch_b', 'guesser') ORDER BY job_record_id) || -19::bigint,
        ARRAY(SELECT gen_random_uuid() FROM claims WHERE label IN ('batch_a', 'batch_b', 'guesser')) || gen_random_uuid()) r;
RESET SESSION AUTHORIZATION;
SELECT is((SELECT answer FROM answers WHERE label = 'batch_stale'), 'stale x7',
    'a batch of seven claims with wrong tokens is answered stale seven times');
SELECT results_eq(
    $$SELECT pg_temp.tally('t10a.batch_a', 'stale_renewal'), pg_temp.tally('t10a.batch_b', 'stale_renewal'),
             pg_temp.tally('*', 'stale_renewal') - (SELECT value FROM marks WHERE label = 'star_renewals_batch')$$,
    $$VALUES (3::bigint, 2::bigint, 2::bigint)$$,
    'a batch''s stale claims are charged as single calls are: its own claims to their queues, the guessed and unknown ids to ''*''');
SELECT is((SELECT n_tup_ins + n_tup_upd FROM pg_stat_xact_user_tables
           WHERE schemaname = 'durable_jobs' AND relname = 'lease_outcome_tally')
          - (SELECT value FROM marks WHERE label = 'tally_writes'), 3::bigint,
    'the batch wrote the tally once per queue charged (three), not once per stale claim (seven)');

-- The tally's CHECK: the three kinds, nothing else.
SELECT lives_ok(
    $$INSERT INTO durable_jobs.lease_outcome_tally (tally_minute, queue_name, outcome_kind, tally_backend_pid, counted_by_role, outcome_count)
      VALUES (date_trunc('minute', clock_timestamp()), 't10a.check', 'stale_release', -19, '', 1)$$,
    'the tally accepts the kind stale_release');
SELECT throws_ok(
    $$INSERT INTO durable_jobs.lease_outcome_tally (tally_minute, queue_name, outcome_kind, tally_backend_pid, counted_by_role, outcome_count)
      VALUES (date_trunc('minute', clock_timestamp()), 't10a.check', 'stale_complete', -19, '', 1)$$,
    '23514', NULL, 'the tally refuses a kind it does not know');
SELECT is((SELECT count(*)::integer FROM durable_jobs.lease_outcome_tally
           WHERE counted_by_role IN ('t10a_victim', 't10a_guesser') AND queue_name NOT IN ('*', 't10a.victim', 't10a.batch_a', 't10a.batch_b')), 0,
    'no stale call of this file is counted under any other queue');

-- ============================================================================
-- Counting in UTC minutes, per writer (migration 004, assigned number 005):
-- tallies are counted in whole UTC minutes whatever the writer's TimeZone,
-- in rows keyed by the writer's backend pid and login, and expire after 30
-- days. The two-session races are in sql/integration/counting_test.go.
-- ============================================================================

-- Tallies: UTC minutes ---------------------------------------------------------

SELECT durable_jobs.record_lease_outcome('t10b_tz', 'reclaim', 1000);
SET LOCAL TIME ZONE 0.01;
SELECT durable_jobs.record_lease_outcome('t10b_tz', 'reclaim', 1);
SELECT is(
    (SELECT sum(outcome_count)::bigint FROM durable_jobs.lease_outcome_tally WHERE queue_name = 't10b_tz'),
    1001::bigint,
    'a session in TimeZone 0.01 (36 s east) adds to the same UTC minute: 1,000 + 1 counted, nothing overwritten');
SELECT is_empty(
    $$SELECT tally_minute FROM durable_jobs.lease_outcome_tally
      WHERE queue_name = 't10b_tz' AND tally_minute <> date_trunc('minute', tally_minute, 'UTC')$$,
    'every tally minute is a whole UTC minute whatever the writer''s TimeZone');
SELECT is(
    (SELECT outcome_count FROM durable_jobs.lease_outcome_totals(clock_timestamp()) WHERE queue_name = 't10b_tz'),
    1001::bigint,
    'lease_outcome_totals since now counts the current UTC minute in any caller TimeZone');
RESET TIME ZONE;

-- Tallies: one row per backend, 30-day retention -----------------------------------

INSERT INTO durable_jobs.lease_outcome_tally (tally_minute, queue_name, outcome_kind, tally_backend_pid, counted_by_role, outcome_count)
VALUES (date_trunc('minute', clock_timestamp(), 'UTC') - interval '40 days', 't10b_old', 'reclaim', -3, '', 7),
       (date_trunc('minute', clock_timestamp(), 'UTC') - interval '29 days', 't10b_old', 'reclaim', -3, '', 5);
SELECT durable_jobs.record_lease_outcome('t10b_tz', 'reclaim', 1);
SELECT is_empty(
    $$SELECT 1 FROM durable_jobs.lease_outcome_tally
      WHERE queue_name = 't10b_tz' AND (tally_backend_pid <> pg_backend_pid()
            OR counted_by_role COLLATE "C" <> session_user::text COLLATE "C")$$,
    'this session''s outcomes are counted in rows keyed by its own backend pid and login');
SELECT results_eq(
    $$SELECT outcome_count FROM durable_jobs.lease_outcome_tally WHERE queue_name = 't10b_old' ORDER BY tally_minute$$,
    $$VALUES (5::bigint)$$,
    'a counting call deleted the row older than 30 days and kept the one 29 days old');

SELECT * FROM finish();
ROLLBACK;
