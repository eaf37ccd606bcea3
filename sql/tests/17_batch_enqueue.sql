-- 17_batch_enqueue: enqueue_jobs (functions/producer.sql; version 2, the
-- set-based version from migration 010; 007 installed batch_enqueue.sql)
-- enqueues a batch of one queue's jobs in one call: one id per job in input
-- order, one id drawn per element as enqueue_job draws one per call, each
-- element with enqueue_job's checks and idempotency (against the queue and
-- within the batch), all or nothing: a bad element or a malformed array is
-- LF003 naming the position, never the content, and writes no job. Calls run
-- as durable_job_producer; checks read the private tables as the superuser.
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
SELECT plan(42);

CREATE TEMP TABLE t17_batch (batch_label text PRIMARY KEY, job_ids bigint[] NOT NULL);
CREATE TEMP TABLE t17_start AS SELECT clock_timestamp() AS before_at;
GRANT ALL ON t17_batch, t17_start TO PUBLIC;
CREATE FUNCTION pg_temp.t17_ids(p_batch_label text) RETURNS bigint[] LANGUAGE sql STABLE AS $$
    SELECT job_ids FROM t17_batch WHERE batch_label = p_batch_label;
$$;

SET LOCAL ROLE durable_job_producer;

-- Ids in input order, payloads and defaults ----------------------------------

INSERT INTO t17_batch (batch_label, job_ids) VALUES ('plain', durable_jobs.enqueue_jobs('t17.plain',
    ARRAY['{"n": 1}', '{"n": 2}', '{"n": 3}']::jsonb[]));
-- One key already on the queue, from enqueue_job.
INSERT INTO t17_batch (batch_label, job_ids) VALUES ('single',
    ARRAY[durable_jobs.enqueue_job('t17.keyed', '{"first": "single"}', 'idem-t17-secret-existing')]);
INSERT INTO t17_batch (batch_label, job_ids) VALUES ('keyed', durable_jobs.enqueue_jobs('t17.keyed',
    ARRAY['{"n": 1}', '{"n": 2}', '{"n": 3}', '{"n": 4}', '{"n": 5}']::jsonb[],
    ARRAY['idem-t17-secret-a', 'idem-t17-secret-existing', NULL, 'idem-t17-secret-a', NULL],
    ARRAY['2031-05-06 07:08:09.123456+00', NULL, '2001-02-03 04:05:06+00', NULL, NULL]::timestamptz[],
    ARRAY[1, 2, 3, 4, 1000]));

RESET ROLE;

SELECT is(cardinality(pg_temp.t17_ids('plain')), 3, 'three payloads give three ids');
SELECT ok((SELECT bool_and(j.job_ids[i] < j.job_ids[i + 1]) FROM t17_batch j, generate_series(1, 2) i
           WHERE j.batch_label = 'plain'),
          'the ids follow the input order');
SELECT results_eq(
    $$SELECT p.job_payload FROM unnest(pg_temp.t17_ids('plain')) WITH ORDINALITY AS u(id, n)
      JOIN durable_jobs.job_payload_record p ON p.job_record_id = u.id ORDER BY u.n$$,
    $$VALUES ('{"n": 1}'::jsonb), ('{"n": 2}'), ('{"n": 3}')$$,
    'id i is the job of payload i');
SELECT results_eq(
    $$SELECT j.job_status::text, j.max_attempts, j.attempt_number, j.idempotency_key_digest IS NULL
      FROM unnest(pg_temp.t17_ids('plain')) AS u(id) JOIN durable_jobs.job_record j ON j.job_record_id = u.id$$,
    $$VALUES ('QUEUED', 5, 0, true), ('QUEUED', 5, 0, true), ('QUEUED', 5, 0, true)$$,
    'with no optional arrays every job is QUEUED with 5 attempts and no key');
SELECT ok((SELECT bool_and(j.run_after BETWEEN s.before_at AND clock_timestamp())
           FROM t17_start s, t17_batch b, unnest(b.job_ids) AS u(id) JOIN durable_jobs.job_record j ON j.job_record_id = u.id
           WHERE b.batch_label = 'plain'),
          'with no run-afters every job runs at once (database time)');

-- Per-element settings and idempotency -----------------------------------------

SELECT is(cardinality(pg_temp.t17_ids('keyed')), 5, 'five payloads give five ids, repeated keys included');
SELECT is((pg_temp.t17_ids('keyed'))[2], (pg_temp.t17_ids('single'))[1],
          'a key already on the queue returns the first job''s id');
SELECT is((pg_temp.t17_ids('keyed'))[4], (pg_temp.t17_ids('keyed'))[1],
          'a key repeated within the batch returns the id of its first element');
SELECT is((SELECT count(DISTINCT u.id)::integer FROM unnest(pg_temp.t17_ids('keyed')) AS u(id)), 4,
          'elements without a key are distinct jobs, so five elements made three new jobs and matched one');
SELECT is((SELECT count(*)::integer FROM durable_jobs.job_record WHERE queue_name = 't17.keyed'), 4,
          'the queue holds the single job and the three new ones, nothing for the repeats');
SELECT is((SELECT p.job_payload FROM durable_jobs.job_payload_record p
           WHERE p.job_record_id = (pg_temp.t17_ids('single'))[1]),
          '{"first": "single"}'::jsonb, 'a repeated key leaves the first job''s payload as it was');
SELECT is((SELECT p.job_payload FROM durable_jobs.job_payload_record p
           WHERE p.job_record_id = (pg_temp.t17_ids('keyed'))[1]),
          '{"n": 1}'::jsonb, 'a key repeated within the batch keeps its first element''s payload');
SELECT results_eq(
    $$SELECT j.max_attempts, j.run_after = timestamptz '2031-05-06 07:08:09.123456+00',
             j.idempotency_key_digest = sha256(convert_to('idem-t17-secret-a', 'UTF8'))
      FROM durable_jobs.job_record j WHERE j.job_record_id = (pg_temp.t17_ids('keyed'))[1]$$,
    $$VALUES (1, true, true)$$,
    'element 1 has its own attempts, run-after and key, stored as its sha256 only');
SELECT results_eq(
    $$SELECT j.max_attempts, j.run_after, j.idempotency_key_digest IS NULL
      FROM durable_jobs.job_record j WHERE j.job_record_id = (pg_temp.t17_ids('keyed'))[3]$$,
    $$VALUES (3, timestamptz '2001-02-03 04:05:06+00', true)$$,
    'a NULL key element is a job without a key, with its own attempts and run-after');
SELECT results_eq(
    $$SELECT j.max_attempts, j.run_after BETWEEN s.before_at AND clock_timestamp()
      FROM t17_start s, t17_batch b JOIN durable_jobs.job_record j ON j.job_record_id = b.job_ids[5]
      WHERE b.batch_label = 'keyed'$$,
    $$VALUES (1000, true)$$,
    'a NULL run-after element runs at once; the attempts are the element''s');
SELECT is_empty(
    $$SELECT 1 FROM durable_jobs.job_record j
      WHERE j.idempotency_key_digest = sha256(convert_to('idem-t17-secret-existing', 'UTF8'))
        AND j.job_record_id <> (pg_temp.t17_ids('single'))[1]$$,
    'no second job holds the key that was already on the queue');

-- Bad elements: LF003 naming the position, nothing written -------------------

CREATE TEMP TABLE t17_count AS SELECT count(*) AS job_count FROM durable_jobs.job_record;
GRANT SELECT ON t17_count TO PUBLIC;
SET LOCAL ROLE durable_job_producer;

SELECT throws_ok($$SELECT durable_jobs.enqueue_jobs('t17.bad', ARRAY['{}', NULL, '{}']::jsonb[])$$,
    'LF003', 'job 2 of the batch: job payload is required', 'a NULL payload element is LF003 naming its position');
SELECT throws_ok($$SELECT durable_jobs.enqueue_jobs('t17.bad', ARRAY['{}', '{}']::jsonb[],
                                                    ARRAY['idem-t17-secret-good', ''])$$,
    'LF003', 'job 2 of the batch: idempotency key must be 1 to 200 characters',
    'an empty key element is LF003 naming its position, never the key');
SELECT throws_ok(format($$SELECT durable_jobs.enqueue_jobs('t17.bad', ARRAY['{}', '{}', '{}']::jsonb[],
                                                           ARRAY[NULL, NULL, %L])$$, repeat('k', 201)),
    'LF003', 'job 3 of the batch: idempotency key must be 1 to 200 characters',
    'a 201-character key element is LF003');
SELECT throws_ok($$SELECT durable_jobs.enqueue_jobs('t17.bad', ARRAY['{}', '{}']::jsonb[], NULL, NULL,
                                                    ARRAY[5, NULL])$$,
    'LF003', 'job 2 of the batch: max attempts must be 1 to 1000', 'a NULL attempts element is LF003');
SELECT throws_ok($$SELECT durable_jobs.enqueue_jobs('t17.bad', ARRAY['{}']::jsonb[], NULL, NULL, ARRAY[1001])$$,
    'LF003', 'job 1 of the batch: max attempts must be 1 to 1000', 'attempts 1001 in an element is LF003');
SELECT throws_ok($$SELECT durable_jobs.enqueue_jobs('t17.bad', ARRAY['{}', '{}']::jsonb[], NULL,
                                                    ARRAY[NULL, 'infinity']::timestamptz[])$$,
    'LF003', 'job 2 of the batch: run-after must be a finite time from 2000-01-01 to before 2100-01-01 UTC',
    'an infinite run-after element is LF003');
SELECT throws_ok($$SELECT durable_jobs.enqueue_jobs('t17.bad',
                       ARRAY['{}', jsonb_build_object('big', repeat('x', 1100000))]::jsonb[])$$,
    'LF003', 'job 2 of the batch: job payload must be at most 1 MiB', 'a payload element over 1 MiB is LF003');
SELECT throws_ok($$SELECT durable_jobs.enqueue_jobs('t17.keyed', ARRAY['{}', '{}', NULL]::jsonb[],
                                                    ARRAY['idem-t17-secret-new', 'idem-t17-secret-existing', NULL])$$,
    'LF003', 'job 3 of the batch: job payload is required',
    'a bad element after good and repeated ones is LF003 too');
SELECT throws_ok($$SELECT durable_jobs.enqueue_jobs('t17.bad', ARRAY['{}', '{}', NULL, '{}']::jsonb[], NULL, NULL,
                                                    ARRAY[1, 0, 1, 0])$$,
    'LF003', 'job 2 of the batch: max attempts must be 1 to 1000',
    'of several bad elements the first is named');
SELECT throws_ok($$SELECT durable_jobs.enqueue_jobs('t17.bad', ARRAY[NULL]::jsonb[], ARRAY[''],
                                                    ARRAY['infinity']::timestamptz[], ARRAY[0])$$,
    'LF003', 'job 1 of the batch: job payload is required',
    'an element breaking several rules gets enqueue_job''s first message');
SELECT throws_ok($$SELECT durable_jobs.enqueue_jobs('t17.bad', array_fill('{}'::jsonb, ARRAY[10000]),
                       array_append(array_fill(NULL::text, ARRAY[9999]), ''))$$,
    'LF003', 'job 10000 of the batch: idempotency key must be 1 to 200 characters',
    'a bad last element of 10,000 is named by its position');

-- Bad arrays and queues.
SELECT throws_ok($$SELECT durable_jobs.enqueue_jobs('t17.bad', NULL)$$,
    'LF003', 'job payloads must be a one-dimensional array of 1 to 10000 payloads', 'a NULL payload array is LF003');
SELECT throws_ok($$SELECT durable_jobs.enqueue_jobs('t17.bad', ARRAY[]::jsonb[])$$,
    'LF003', 'job payloads must be a one-dimensional array of 1 to 10000 payloads', 'an empty payload array is LF003');
SELECT throws_ok($$SELECT durable_jobs.enqueue_jobs('t17.bad', ARRAY[['{}', '{}'], ['{}', '{}']]::jsonb[])$$,
    'LF003', 'job payloads must be a one-dimensional array of 1 to 10000 payloads',
    'a two-dimensional payload array is LF003');
SELECT throws_ok($$SELECT durable_jobs.enqueue_jobs('t17.bad', array_fill('{}'::jsonb, ARRAY[10001]))$$,
    'LF003', 'job payloads must be a one-dimensional array of 1 to 10000 payloads', '10,001 payloads are LF003');
SELECT throws_ok($$SELECT durable_jobs.enqueue_jobs('t17.bad', ARRAY['{}', '{}']::jsonb[], ARRAY['idem-t17-secret-k'])$$,
    'LF003', 'idempotency keys, run-afters and max attempts must each be NULL or hold one element per payload',
    'fewer keys than payloads is LF003');
SELECT throws_ok($$SELECT durable_jobs.enqueue_jobs('t17.bad', ARRAY['{}']::jsonb[], ARRAY[['k1'], ['k2']])$$,
    'LF003', 'idempotency keys, run-afters and max attempts must each be NULL or hold one element per payload',
    'a two-dimensional key array is LF003');
SELECT throws_ok($$SELECT durable_jobs.enqueue_jobs('t17.bad', ARRAY['{}']::jsonb[], NULL,
                                                    ARRAY[NULL, NULL]::timestamptz[])$$,
    'LF003', 'idempotency keys, run-afters and max attempts must each be NULL or hold one element per payload',
    'more run-afters than payloads is LF003');
SELECT throws_ok($$SELECT durable_jobs.enqueue_jobs('t17.bad', ARRAY['{}', '{}']::jsonb[], NULL, NULL, ARRAY[]::integer[])$$,
    'LF003', 'idempotency keys, run-afters and max attempts must each be NULL or hold one element per payload',
    'an empty attempts array for two payloads is LF003');
SELECT throws_ok($$SELECT durable_jobs.enqueue_jobs('T17.Bad', ARRAY['{}']::jsonb[])$$,
    'LF003', NULL, 'a malformed queue name is LF003');
SELECT throws_ok($$SELECT durable_jobs.enqueue_jobs(NULL, ARRAY['{}']::jsonb[])$$,
    'LF003', NULL, 'a NULL queue name is LF003');

RESET ROLE;
SELECT is((SELECT count(*) FROM durable_jobs.job_record), (SELECT job_count FROM t17_count),
          'no refused batch wrote a job, not even its good elements');

-- The bounds: 10,000 payloads in one call; the worker cannot call it.
SET LOCAL ROLE durable_job_producer;
SELECT is(cardinality(durable_jobs.enqueue_jobs('t17.bound', array_fill('{}'::jsonb, ARRAY[10000]))), 10000,
          '10,000 payloads are one batch');
RESET ROLE;
SET LOCAL ROLE durable_job_worker;
SELECT throws_ok($$SELECT durable_jobs.enqueue_jobs('t17.worker', ARRAY['{}']::jsonb[])$$, '42501', NULL,
                 'a worker cannot enqueue a batch');
-- One id drawn per element, in input order, as enqueue_job draws one per
-- call: a repeated key's element uses one up too.
SET LOCAL ROLE durable_job_producer;
INSERT INTO t17_batch (batch_label, job_ids) VALUES ('drawn', durable_jobs.enqueue_jobs('t17.drawn',
    ARRAY['{"n": 1}', '{"n": 2}', '{"n": 3}', '{"n": 4}']::jsonb[],
    ARRAY[NULL, 'idem-t17-secret-d', 'idem-t17-secret-d', NULL]));
RESET ROLE;
SELECT is((SELECT ARRAY[j[2] - j[1], j[3] - j[1], j[4] - j[1]] FROM t17_batch b, LATERAL (SELECT b.job_ids) AS x(j)
           WHERE b.batch_label = 'drawn'),
          ARRAY[1::bigint, 1, 3], 'the repeat returns its first element''s id and the next job''s id skips one');
SELECT results_eq(
    $$SELECT p.job_payload FROM unnest(pg_temp.t17_ids('drawn')) WITH ORDINALITY AS u(id, n)
      JOIN durable_jobs.job_payload_record p ON p.job_record_id = u.id ORDER BY u.n$$,
    $$VALUES ('{"n": 1}'::jsonb), ('{"n": 2}'), ('{"n": 2}'), ('{"n": 4}')$$,
    'each new job holds its own element''s payload, keyed or not');

SELECT * FROM finish();
ROLLBACK;
