-- 20_batch_enqueue_v3: what enqueue_jobs version 3 (migration 013; now in
-- functions/producer.sql) does by its own paths gives what
-- version 2 gave. A batch without keys (no key array, or one of NULLs only)
-- is a plain INSERT: ids in input order, each element's payload, run-after
-- and max attempts. A keyed batch whose every element gets a new job
-- returns without the final key lookup: ids in input order, each key
-- holding its element's job, and the same keys again return those ids.
-- The payloads are written with plan_cache_mode auto inside the call; the
-- caller's own setting is what it was afterwards.
-- Calls run as durable_job_producer; checks read the private tables as the
-- superuser.
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
SELECT plan(10);

CREATE TEMP TABLE t20_batch (batch_label text PRIMARY KEY, job_ids bigint[] NOT NULL);
GRANT ALL ON t20_batch TO PUBLIC;
CREATE FUNCTION pg_temp.t20_ids(p_batch_label text) RETURNS bigint[] LANGUAGE sql STABLE AS $$
    SELECT job_ids FROM t20_batch WHERE batch_label = p_batch_label;
$$;

SET LOCAL ROLE durable_job_producer;

INSERT INTO t20_batch (batch_label, job_ids) VALUES ('keyless', durable_jobs.enqueue_jobs('t20.keyless',
    ARRAY['{"n": 1}', '{"n": 2}', '{"n": 3}']::jsonb[],
    ARRAY[NULL, NULL, NULL]::text[],
    ARRAY['2031-05-06 07:08:09.123456+00', NULL, '2001-02-03 04:05:06+00']::timestamptz[],
    ARRAY[7, 1, 1000]));
INSERT INTO t20_batch (batch_label, job_ids) VALUES ('new-keys', durable_jobs.enqueue_jobs('t20.keyed',
    ARRAY['{"k": 1}', '{"k": 2}', '{"k": 3}', '{"k": 4}']::jsonb[],
    ARRAY['idem-t20-secret-a', NULL, 'idem-t20-secret-b', 'idem-t20-secret-c']));
INSERT INTO t20_batch (batch_label, job_ids) VALUES ('same-keys', durable_jobs.enqueue_jobs('t20.keyed',
    ARRAY['{"again": 1}', '{"again": 2}', '{"again": 3}']::jsonb[],
    ARRAY['idem-t20-secret-c', 'idem-t20-secret-a', 'idem-t20-secret-b']));

-- The payload INSERT runs with plan_cache_mode auto; the caller keeps its own.
SET LOCAL plan_cache_mode = force_generic_plan;
INSERT INTO t20_batch (batch_label, job_ids) VALUES ('generic-caller', durable_jobs.enqueue_jobs('t20.caller',
    ARRAY['{"c": 1}']::jsonb[]));
SELECT is(current_setting('plan_cache_mode'), 'force_generic_plan',
          'enqueue_jobs leaves the caller''s plan_cache_mode as it found it');

RESET ROLE;

SELECT ok((SELECT bool_and(j.job_ids[i] < j.job_ids[i + 1]) FROM t20_batch j, generate_series(1, 2) i
           WHERE j.batch_label = 'keyless'),
          'a batch whose keys are all NULL gets its ids in input order');
SELECT results_eq(
    $$SELECT p.job_payload, j.run_after, j.max_attempts, j.idempotency_key_digest IS NULL, j.job_status::text
      FROM unnest(pg_temp.t20_ids('keyless')) WITH ORDINALITY AS u(id, n)
      JOIN durable_jobs.job_record j ON j.job_record_id = u.id
      JOIN durable_jobs.job_payload_record p ON p.job_record_id = u.id
      WHERE u.n <> 2 ORDER BY u.n$$,
    $$VALUES ('{"n": 1}'::jsonb, '2031-05-06 07:08:09.123456+00'::timestamptz, 7, true, 'QUEUED'),
             ('{"n": 3}', '2001-02-03 04:05:06+00', 1000, true, 'QUEUED')$$,
    'each job of a keyless batch holds its own element''s payload, run-after and max attempts');
SELECT ok((SELECT j.run_after BETWEEN now() AND clock_timestamp() AND j.max_attempts = 1
           FROM durable_jobs.job_record j WHERE j.job_record_id = (pg_temp.t20_ids('keyless'))[2]),
          'a NULL run-after of a keyless batch is database time');
SELECT is((SELECT count(*)::integer FROM durable_jobs.job_record WHERE queue_name = 't20.keyless'), 3,
          'a keyless batch of three writes three jobs');

SELECT is(cardinality(pg_temp.t20_ids('new-keys')), 4, 'four new elements, three keyed, give four ids');
SELECT ok((SELECT bool_and(j.job_ids[i] < j.job_ids[i + 1]) FROM t20_batch j, generate_series(1, 3) i
           WHERE j.batch_label = 'new-keys'),
          'a keyed batch of new keys gets its ids in input order');
SELECT results_eq(
    $$SELECT u.n, j.idempotency_key_digest, p.job_payload
      FROM unnest(pg_temp.t20_ids('new-keys')) WITH ORDINALITY AS u(id, n)
      JOIN durable_jobs.job_record j ON j.job_record_id = u.id
      JOIN durable_jobs.job_payload_record p ON p.job_record_id = u.id ORDER BY u.n$$,
    $$VALUES (1::bigint, sha256(convert_to('idem-t20-secret-a', 'UTF8')), '{"k": 1}'::jsonb),
             (2, NULL, '{"k": 2}'), (3, sha256(convert_to('idem-t20-secret-b', 'UTF8')), '{"k": 3}'),
             (4, sha256(convert_to('idem-t20-secret-c', 'UTF8')), '{"k": 4}')$$,
    'each key of the batch holds its own element''s new job and payload');
SELECT is(pg_temp.t20_ids('same-keys'),
          ARRAY[(pg_temp.t20_ids('new-keys'))[4], (pg_temp.t20_ids('new-keys'))[1], (pg_temp.t20_ids('new-keys'))[3]],
          'the same keys again return the jobs they hold');
SELECT is((SELECT count(*)::integer FROM durable_jobs.job_record WHERE queue_name = 't20.keyed'), 4,
          'keys already taken write no job');

SELECT * FROM finish();
ROLLBACK;
