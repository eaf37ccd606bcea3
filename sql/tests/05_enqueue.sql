-- 05_enqueue: putting jobs in a queue, one at a time and in batches.
-- enqueue_job durably accepts a QUEUED job, keeps its payload only in
-- job_payload_record, returns the first job's id for a repeated (queue,
-- idempotency key) and stores the key only as its sha256 digest; every
-- producer login shares one idempotency namespace per queue. enqueue_jobs
-- does the same for a batch, all or nothing, by each of its own paths.
-- Calls run as durable_job_producer; checks read the private tables as the
-- superuser. Sections: enqueue_job; enqueue_jobs; one namespace per queue;
-- enqueue_jobs' keyless and all-new-keys paths.
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
SELECT plan(98);

CREATE TEMP TABLE enqueued (
    label          text PRIMARY KEY,
    job_record_id  bigint,
    before_at      timestamptz,
    after_at       timestamptz
) ON COMMIT DROP;
GRANT ALL ON enqueued TO PUBLIC;

SET LOCAL ROLE durable_job_producer;
INSERT INTO enqueued (label, before_at) VALUES ('plain', clock_timestamp());
UPDATE enqueued SET job_record_id = durable_jobs.enqueue_job('enqueue_check_a',
        '{"marker": "enqueue-payload-marker-7f3a", "n": 1}'::jsonb)
    WHERE label = 'plain';
UPDATE enqueued SET after_at = clock_timestamp() WHERE label = 'plain';

INSERT INTO enqueued (label, job_record_id) VALUES
    ('explicit', durable_jobs.enqueue_job('enqueue_check_a', '{"n": 2}'::jsonb, NULL,
                                          timestamptz '2031-05-06 07:08:09.123456+00', 3)),
    ('past', durable_jobs.enqueue_job('enqueue_check_a', '{"n": 3}'::jsonb, NULL,
                                      timestamptz '2001-02-03 04:05:06.654321+00')),
    ('no_key_1', durable_jobs.enqueue_job('enqueue_check_b', '{"same": true}'::jsonb)),
    ('no_key_2', durable_jobs.enqueue_job('enqueue_check_b', '{"same": true}'::jsonb));
INSERT INTO enqueued (label, job_record_id) VALUES
    ('keyed_first', durable_jobs.enqueue_job('enqueue_check_c', '{"version": "first"}'::jsonb,
                                             'order-4711-idempotency-raw-key', NULL, 4));
INSERT INTO enqueued (label, job_record_id) VALUES
    ('keyed_again', durable_jobs.enqueue_job('enqueue_check_c', '{"version": "second"}'::jsonb,
                                             'order-4711-idempotency-raw-key',
                                             timestamptz '2040-01-01 00:00:00+00', 9));
INSERT INTO enqueued (label, job_record_id) VALUES
    ('keyed_other_queue', durable_jobs.enqueue_job('enqueue_check_d', '{"version": "other queue"}'::jsonb,
                                                   'order-4711-idempotency-raw-key'));
INSERT INTO enqueued (label, job_record_id) VALUES
    ('unicode_key', durable_jobs.enqueue_job('enqueue_check_e', '{}'::jsonb, 'clé-ключ-鍵')),
    ('longest_key', durable_jobs.enqueue_job('enqueue_check_e', '{}'::jsonb, repeat('k', 200)));
RESET ROLE;

-- A job is accepted -------------------------------------------------------------

SELECT ok((SELECT job_record_id IS NOT NULL FROM enqueued WHERE label = 'plain'),
          'enqueue_job returns the new job''s id');
SELECT is((SELECT count(DISTINCT job_record_id)::integer FROM enqueued
           WHERE label IN ('plain', 'explicit', 'past', 'no_key_1', 'no_key_2', 'keyed_first')),
          6, 'every enqueue without a repeated key returns a distinct id');
SELECT results_eq(
    $$SELECT j.queue_name, j.job_status::text FROM durable_jobs.job_record j
      WHERE j.job_record_id = (SELECT job_record_id FROM enqueued WHERE label = 'plain')$$,
    $$VALUES ('enqueue_check_a'::text, 'QUEUED'::text)$$,
    'the returned id names a QUEUED job in the given queue');
SELECT results_eq(
    $$SELECT j.attempt_number, j.lease_fencing_generation, j.lease_renewal_count FROM durable_jobs.job_record j
      WHERE j.job_record_id = (SELECT job_record_id FROM enqueued WHERE label = 'plain')$$,
    $$VALUES (0, 0::bigint, 0::bigint)$$,
    'a new job has used no attempt, has fencing generation 0 and no renewals');
SELECT ok((SELECT j.lease_claim_digest IS NULL AND j.lease_owner_id IS NULL AND j.lease_claimed_by_role IS NULL
                  AND j.lease_claimed_at IS NULL AND j.lease_expires_at IS NULL AND j.lease_claim_deadline IS NULL
                  AND j.failure_reason_code IS NULL
           FROM durable_jobs.job_record j
           WHERE j.job_record_id = (SELECT job_record_id FROM enqueued WHERE label = 'plain')),
          'a new job has no claim, owner, lease or failure reason');

SET LOCAL ROLE durable_job_producer;
SELECT results_eq(
    $$SELECT job_status, attempt_number, max_attempts, lease_fencing_generation, lease_expires_at,
             lease_renewal_count, failure_reason_code
      FROM durable_jobs.job_lifecycle_state((SELECT job_record_id FROM enqueued WHERE label = 'plain'))$$,
    $$VALUES ('QUEUED'::text, 0, 5, 0::bigint, NULL::timestamptz, 0::bigint, NULL::text)$$,
    'the producer sees the new job as QUEUED with no attempt used through job_lifecycle_state');
RESET ROLE;

-- The payload lives in job_payload_record only ---------------------------------------

SELECT is((SELECT p.job_payload FROM durable_jobs.job_payload_record p
           WHERE p.job_record_id = (SELECT job_record_id FROM enqueued WHERE label = 'plain')),
          '{"marker": "enqueue-payload-marker-7f3a", "n": 1}'::jsonb,
          'the payload is stored unchanged in job_payload_record under the job''s id');
SELECT is((SELECT count(*)::integer FROM durable_jobs.job_payload_record p
           WHERE p.job_payload::text LIKE '%enqueue-payload-marker-7f3a%'),
          1, 'the payload is stored exactly once');
SELECT is_empty(
    $$SELECT 'job_record', j.job_record_id FROM durable_jobs.job_record j
       WHERE to_jsonb(j)::text LIKE '%enqueue-payload-marker-7f3a%'
      UNION ALL SELECT 'job_outcome_ledger', l.job_outcome_record_id FROM durable_jobs.job_outcome_ledger l
       WHERE to_jsonb(l)::text LIKE '%enqueue-payload-marker-7f3a%'
      UNION ALL SELECT 'control_evidence_record', e.evidence_record_id FROM durable_jobs.control_evidence_record e
       WHERE to_jsonb(e)::text LIKE '%enqueue-payload-marker-7f3a%'
      UNION ALL SELECT 'queue_lease_policy', 0 FROM durable_jobs.queue_lease_policy q
       WHERE to_jsonb(q)::text LIKE '%enqueue-payload-marker-7f3a%'
      UNION ALL SELECT 'lease_outcome_tally', 0 FROM durable_jobs.lease_outcome_tally t
       WHERE to_jsonb(t)::text LIKE '%enqueue-payload-marker-7f3a%'$$,
    'no table other than job_payload_record holds any part of the payload');
SELECT is((SELECT count(*)::integer FROM durable_jobs.job_payload_record p
           WHERE p.job_record_id IN (SELECT job_record_id FROM enqueued)),
          (SELECT count(DISTINCT job_record_id)::integer FROM enqueued),
          'every accepted job has exactly one payload row');

-- run_after and max_attempts -------------------------------------------------------

SELECT ok((SELECT j.run_after BETWEEN e.before_at AND e.after_at
           FROM durable_jobs.job_record j JOIN enqueued e USING (job_record_id) WHERE e.label = 'plain'),
          'without p_run_after the job is due at the database time of the enqueue');
SELECT is((SELECT j.run_after FROM durable_jobs.job_record j JOIN enqueued e USING (job_record_id)
           WHERE e.label = 'explicit'),
          timestamptz '2031-05-06 07:08:09.123456+00',
          'an explicit future p_run_after is stored exactly, to the microsecond');
SELECT is((SELECT j.run_after FROM durable_jobs.job_record j JOIN enqueued e USING (job_record_id)
           WHERE e.label = 'past'),
          timestamptz '2001-02-03 04:05:06.654321+00',
          'an explicit past p_run_after is accepted and stored exactly');
SELECT is((SELECT j.max_attempts FROM durable_jobs.job_record j JOIN enqueued e USING (job_record_id)
           WHERE e.label = 'plain'),
          5, 'without p_max_attempts a job may be attempted 5 times');
SELECT is((SELECT j.max_attempts FROM durable_jobs.job_record j JOIN enqueued e USING (job_record_id)
           WHERE e.label = 'explicit'),
          3, 'an explicit p_max_attempts is stored');

-- Idempotency -------------------------------------------------------------------------

SELECT is((SELECT job_record_id FROM enqueued WHERE label = 'keyed_again'),
          (SELECT job_record_id FROM enqueued WHERE label = 'keyed_first'),
          'a repeated (queue, idempotency key) returns the first job''s id');
SELECT is((SELECT count(*)::integer FROM durable_jobs.job_record WHERE queue_name = 'enqueue_check_c'),
          1, 'a repeated (queue, idempotency key) creates no second job');
SELECT is((SELECT count(*)::integer FROM durable_jobs.job_payload_record p
           WHERE p.job_payload IN ('{"version": "first"}'::jsonb, '{"version": "second"}'::jsonb)),
          1, 'a repeated (queue, idempotency key) stores no second payload');
SELECT is((SELECT p.job_payload FROM durable_jobs.job_payload_record p
           WHERE p.job_record_id = (SELECT job_record_id FROM enqueued WHERE label = 'keyed_first')),
          '{"version": "first"}'::jsonb,
          'a repeated (queue, idempotency key) leaves the first job''s payload unchanged');
SELECT results_eq(
    $$SELECT j.max_attempts, j.run_after <= clock_timestamp() FROM durable_jobs.job_record j
      WHERE j.job_record_id = (SELECT job_record_id FROM enqueued WHERE label = 'keyed_first')$$,
    $$VALUES (4, true)$$,
    'a repeated (queue, idempotency key) leaves the first job''s max_attempts and run_after unchanged');
SELECT isnt((SELECT job_record_id FROM enqueued WHERE label = 'keyed_other_queue'),
            (SELECT job_record_id FROM enqueued WHERE label = 'keyed_first'),
            'the same idempotency key in another queue is a different job');
SELECT isnt((SELECT job_record_id FROM enqueued WHERE label = 'no_key_1'),
            (SELECT job_record_id FROM enqueued WHERE label = 'no_key_2'),
            'without an idempotency key, identical enqueues create separate jobs');
SELECT ok((SELECT bool_and(j.idempotency_key_digest IS NULL) FROM durable_jobs.job_record j
           WHERE j.job_record_id IN (SELECT job_record_id FROM enqueued WHERE label IN ('no_key_1', 'no_key_2'))),
          'a job enqueued without a key stores no key digest');

SET LOCAL ROLE durable_job_producer;
SELECT ok(durable_jobs.cancel_job((SELECT job_record_id FROM enqueued WHERE label = 'keyed_first')),
          'the keyed job can be cancelled');
SELECT is(durable_jobs.enqueue_job('enqueue_check_c', '{"version": "third"}'::jsonb, 'order-4711-idempotency-raw-key'),
          (SELECT job_record_id FROM enqueued WHERE label = 'keyed_first'),
          'a repeated key returns the first job''s id even after that job has reached a terminal status');
SELECT is((SELECT job_status FROM durable_jobs.job_lifecycle_state(
               (SELECT job_record_id FROM enqueued WHERE label = 'keyed_first'))),
          'CANCELLED', 'a repeated key does not revive the first job');
RESET ROLE;
SELECT is((SELECT count(*)::integer FROM durable_jobs.job_record WHERE queue_name = 'enqueue_check_c'),
          1, 'a repeated key after the first job finished still creates nothing');

-- The key is stored only as its sha256 digest -----------------------------------------

SELECT is((SELECT j.idempotency_key_digest FROM durable_jobs.job_record j
           WHERE j.job_record_id = (SELECT job_record_id FROM enqueued WHERE label = 'keyed_first')),
          sha256(convert_to('order-4711-idempotency-raw-key', 'UTF8')),
          'the idempotency key is stored as sha256 of its UTF-8 bytes');
SELECT is((SELECT j.idempotency_key_digest FROM durable_jobs.job_record j
           WHERE j.job_record_id = (SELECT job_record_id FROM enqueued WHERE label = 'unicode_key')),
          sha256(convert_to('clé-ключ-鍵', 'UTF8')),
          'a non-ASCII idempotency key is digested from its UTF-8 bytes');
SELECT ok((SELECT job_record_id IS NOT NULL FROM enqueued WHERE label = 'longest_key'),
          'an idempotency key of exactly 200 characters is accepted');
SELECT is_empty(
    $$SELECT j.job_record_id, c.key FROM durable_jobs.job_record j CROSS JOIN LATERAL jsonb_each_text(to_jsonb(j)) c
      WHERE c.value = 'order-4711-idempotency-raw-key'$$,
    'no job_record column equals the raw idempotency key');
SELECT is_empty(
    $$SELECT 'job_record', j.job_record_id FROM durable_jobs.job_record j
       WHERE to_jsonb(j)::text LIKE '%order-4711%'
          OR to_jsonb(j)::text LIKE '%' || encode(convert_to('order-4711-idempotency-raw-key', 'UTF8'), 'hex') || '%'
      UNION ALL SELECT 'job_payload_record', p.job_record_id FROM durable_jobs.job_payload_record p
       WHERE p.job_payload::text LIKE '%order-4711%'
      UNION ALL SELECT 'job_outcome_ledger', l.job_outcome_record_id FROM durable_jobs.job_outcome_ledger l
       WHERE to_jsonb(l)::text LIKE '%order-4711%'
      UNION ALL SELECT 'control_evidence_record', e.evidence_record_id FROM durable_jobs.control_evidence_record e
       WHERE to_jsonb(e)::text LIKE '%order-4711%'
      UNION ALL SELECT 'lease_outcome_tally', 0 FROM durable_jobs.lease_outcome_tally t
       WHERE to_jsonb(t)::text LIKE '%order-4711%'$$,
    'the raw idempotency key, as text or as its bytes in hex, is stored in no table at all');

-- Malformed input is refused with LF003 and writes nothing ------------------------------

SET LOCAL ROLE durable_job_producer;
SELECT throws_ok($$SELECT durable_jobs.enqueue_job('Enqueue Check', '{}'::jsonb)$$, 'LF003', NULL,
    'a malformed queue name is refused with LF003');
SELECT throws_ok($$SELECT durable_jobs.enqueue_job(NULL, '{}'::jsonb)$$, 'LF003', NULL,
    'a NULL queue name is refused with LF003');
SELECT throws_ok($$SELECT durable_jobs.enqueue_job('enqueue_check_f', NULL)$$, 'LF003', NULL,
    'a NULL payload is refused with LF003');
SELECT throws_ok($$SELECT durable_jobs.enqueue_job('enqueue_check_f', '{}'::jsonb, '')$$, 'LF003', NULL,
    'an empty idempotency key is refused with LF003');
SELECT throws_ok($$SELECT durable_jobs.enqueue_job('enqueue_check_f', '{}'::jsonb, repeat('k', 201))$$, 'LF003', NULL,
    'an idempotency key of 201 characters is refused with LF003');
SELECT throws_ok($$SELECT durable_jobs.enqueue_job('enqueue_check_f', '{}'::jsonb, NULL, NULL, 0)$$, 'LF003', NULL,
    'p_max_attempts 0 is refused with LF003');
SELECT throws_ok($$SELECT durable_jobs.enqueue_job('enqueue_check_f', '{}'::jsonb, NULL, NULL, 1001)$$, 'LF003', NULL,
    'p_max_attempts 1001 is refused with LF003');
SELECT throws_ok($$SELECT durable_jobs.enqueue_job('enqueue_check_f', '{}'::jsonb, NULL, NULL, NULL)$$, 'LF003', NULL,
    'an explicit NULL p_max_attempts is refused with LF003');
SELECT lives_ok($$SELECT durable_jobs.enqueue_job('enqueue_check_g', '{}'::jsonb, NULL, NULL, 1000)$$,
    'p_max_attempts 1000 is accepted');
SELECT lives_ok($$SELECT durable_jobs.enqueue_job('enqueue_check_g', '{}'::jsonb, NULL, NULL, 1)$$,
    'p_max_attempts 1 is accepted');
RESET ROLE;
SELECT is((SELECT count(*)::integer FROM durable_jobs.job_record WHERE queue_name = 'enqueue_check_f'),
          0, 'refused enqueues wrote no job');
SELECT is((SELECT count(*)::integer FROM durable_jobs.job_record WHERE queue_name = 'enqueue_check_g'),
          2, 'the boundary values of p_max_attempts each wrote one job');

-- ============================================================================
-- enqueue_jobs (functions/producer.sql; version 2, the
-- set-based version from migration 010; 007 installed batch_enqueue.sql)
-- enqueues a batch of one queue's jobs in one call: one id per job in input
-- order, one id drawn per element as enqueue_job draws one per call, each
-- element with enqueue_job's checks and idempotency (against the queue and
-- within the batch), all or nothing: a bad element or a malformed array is
-- LF003 naming the position, never the content, and writes no job. Calls run
-- as durable_job_producer; checks read the private tables as the superuser.
-- ============================================================================

CREATE TEMP TABLE t05a_batch (batch_label text PRIMARY KEY, job_ids bigint[] NOT NULL);
CREATE TEMP TABLE t05a_start AS SELECT clock_timestamp() AS before_at;
GRANT ALL ON t05a_batch, t05a_start TO PUBLIC;
CREATE FUNCTION pg_temp.t05a_ids(p_batch_label text) RETURNS bigint[] LANGUAGE sql STABLE AS $$
    SELECT job_ids FROM t05a_batch WHERE batch_label = p_batch_label;
$$;

SET LOCAL ROLE durable_job_producer;

-- Ids in input order, payloads and defaults ----------------------------------

INSERT INTO t05a_batch (batch_label, job_ids) VALUES ('plain', durable_jobs.enqueue_jobs('t05a.plain',
    ARRAY['{"n": 1}', '{"n": 2}', '{"n": 3}']::jsonb[]));
-- One key already on the queue, from enqueue_job.
INSERT INTO t05a_batch (batch_label, job_ids) VALUES ('single',
    ARRAY[durable_jobs.enqueue_job('t05a.keyed', '{"first": "single"}', 'idem-t05a-secret-existing')]);
INSERT INTO t05a_batch (batch_label, job_ids) VALUES ('keyed', durable_jobs.enqueue_jobs('t05a.keyed',
    ARRAY['{"n": 1}', '{"n": 2}', '{"n": 3}', '{"n": 4}', '{"n": 5}']::jsonb[],
    ARRAY['idem-t05a-secret-a', 'idem-t05a-secret-existing', NULL, 'idem-t05a-secret-a', NULL],
    ARRAY['2031-05-06 07:08:09.123456+00', NULL, '2001-02-03 04:05:06+00', NULL, NULL]::timestamptz[],
    ARRAY[1, 2, 3, 4, 1000]));

RESET ROLE;

SELECT is(cardinality(pg_temp.t05a_ids('plain')), 3, 'three payloads give three ids');
SELECT ok((SELECT bool_and(j.job_ids[i] < j.job_ids[i + 1]) FROM t05a_batch j, generate_series(1, 2) i
           WHERE j.batch_label = 'plain'),
          'the ids follow the input order');
SELECT results_eq(
    $$SELECT p.job_payload FROM unnest(pg_temp.t05a_ids('plain')) WITH ORDINALITY AS u(id, n)
      JOIN durable_jobs.job_payload_record p ON p.job_record_id = u.id ORDER BY u.n$$,
    $$VALUES ('{"n": 1}'::jsonb), ('{"n": 2}'), ('{"n": 3}')$$,
    'id i is the job of payload i');
SELECT results_eq(
    $$SELECT j.job_status::text, j.max_attempts, j.attempt_number, j.idempotency_key_digest IS NULL
      FROM unnest(pg_temp.t05a_ids('plain')) AS u(id) JOIN durable_jobs.job_record j ON j.job_record_id = u.id$$,
    $$VALUES ('QUEUED', 5, 0, true), ('QUEUED', 5, 0, true), ('QUEUED', 5, 0, true)$$,
    'with no optional arrays every job is QUEUED with 5 attempts and no key');
SELECT ok((SELECT bool_and(j.run_after BETWEEN s.before_at AND clock_timestamp())
           FROM t05a_start s, t05a_batch b, unnest(b.job_ids) AS u(id) JOIN durable_jobs.job_record j ON j.job_record_id = u.id
           WHERE b.batch_label = 'plain'),
          'with no run-afters every job runs at once (database time)');

-- Per-element settings and idempotency -----------------------------------------

SELECT is(cardinality(pg_temp.t05a_ids('keyed')), 5, 'five payloads give five ids, repeated keys included');
SELECT is((pg_temp.t05a_ids('keyed'))[2], (pg_temp.t05a_ids('single'))[1],
          'a key already on the queue returns the first job''s id');
SELECT is((pg_temp.t05a_ids('keyed'))[4], (pg_temp.t05a_ids('keyed'))[1],
          'a key repeated within the batch returns the id of its first element');
SELECT is((SELECT count(DISTINCT u.id)::integer FROM unnest(pg_temp.t05a_ids('keyed')) AS u(id)), 4,
          'elements without a key are distinct jobs, so five elements made three new jobs and matched one');
SELECT is((SELECT count(*)::integer FROM durable_jobs.job_record WHERE queue_name = 't05a.keyed'), 4,
          'the queue holds the single job and the three new ones, nothing for the repeats');
SELECT is((SELECT p.job_payload FROM durable_jobs.job_payload_record p
           WHERE p.job_record_id = (pg_temp.t05a_ids('single'))[1]),
          '{"first": "single"}'::jsonb, 'a repeated key leaves the first job''s payload as it was');
SELECT is((SELECT p.job_payload FROM durable_jobs.job_payload_record p
           WHERE p.job_record_id = (pg_temp.t05a_ids('keyed'))[1]),
          '{"n": 1}'::jsonb, 'a key repeated within the batch keeps its first element''s payload');
SELECT results_eq(
    $$SELECT j.max_attempts, j.run_after = timestamptz '2031-05-06 07:08:09.123456+00',
             j.idempotency_key_digest = sha256(convert_to('idem-t05a-secret-a', 'UTF8'))
      FROM durable_jobs.job_record j WHERE j.job_record_id = (pg_temp.t05a_ids('keyed'))[1]$$,
    $$VALUES (1, true, true)$$,
    'element 1 has its own attempts, run-after and key, stored as its sha256 only');
SELECT results_eq(
    $$SELECT j.max_attempts, j.run_after, j.idempotency_key_digest IS NULL
      FROM durable_jobs.job_record j WHERE j.job_record_id = (pg_temp.t05a_ids('keyed'))[3]$$,
    $$VALUES (3, timestamptz '2001-02-03 04:05:06+00', true)$$,
    'a NULL key element is a job without a key, with its own attempts and run-after');
SELECT results_eq(
    $$SELECT j.max_attempts, j.run_after BETWEEN s.before_at AND clock_timestamp()
      FROM t05a_start s, t05a_batch b JOIN durable_jobs.job_record j ON j.job_record_id = b.job_ids[5]
      WHERE b.batch_label = 'keyed'$$,
    $$VALUES (1000, true)$$,
    'a NULL run-after element runs at once; the attempts are the element''s');
SELECT is_empty(
    $$SELECT 1 FROM durable_jobs.job_record j
      WHERE j.idempotency_key_digest = sha256(convert_to('idem-t05a-secret-existing', 'UTF8'))
        AND j.job_record_id <> (pg_temp.t05a_ids('single'))[1]$$,
    'no second job holds the key that was already on the queue');

-- Bad elements: LF003 naming the position, nothing written -------------------

CREATE TEMP TABLE t05a_count AS SELECT count(*) AS job_count FROM durable_jobs.job_record;
GRANT SELECT ON t05a_count TO PUBLIC;
SET LOCAL ROLE durable_job_producer;

SELECT throws_ok($$SELECT durable_jobs.enqueue_jobs('t05a.bad', ARRAY['{}', NULL, '{}']::jsonb[])$$,
    'LF003', 'job 2 of the batch: job payload is required', 'a NULL payload element is LF003 naming its position');
SELECT throws_ok($$SELECT durable_jobs.enqueue_jobs('t05a.bad', ARRAY['{}', '{}']::jsonb[],
                                                    ARRAY['idem-t05a-secret-good', ''])$$,
    'LF003', 'job 2 of the batch: idempotency key must be 1 to 200 characters',
    'an empty key element is LF003 naming its position, never the key');
SELECT throws_ok(format($$SELECT durable_jobs.enqueue_jobs('t05a.bad', ARRAY['{}', '{}', '{}']::jsonb[],
                                                           ARRAY[NULL, NULL, %L])$$, repeat('k', 201)),
    'LF003', 'job 3 of the batch: idempotency key must be 1 to 200 characters',
    'a 201-character key element is LF003');
SELECT throws_ok($$SELECT durable_jobs.enqueue_jobs('t05a.bad', ARRAY['{}', '{}']::jsonb[], NULL, NULL,
                                                    ARRAY[5, NULL])$$,
    'LF003', 'job 2 of the batch: max attempts must be 1 to 1000', 'a NULL attempts element is LF003');
SELECT throws_ok($$SELECT durable_jobs.enqueue_jobs('t05a.bad', ARRAY['{}']::jsonb[], NULL, NULL, ARRAY[1001])$$,
    'LF003', 'job 1 of the batch: max attempts must be 1 to 1000', 'attempts 1001 in an element is LF003');
SELECT throws_ok($$SELECT durable_jobs.enqueue_jobs('t05a.bad', ARRAY['{}', '{}']::jsonb[], NULL,
                                                    ARRAY[NULL, 'infinity']::timestamptz[])$$,
    'LF003', 'job 2 of the batch: run-after must be a finite time from 2000-01-01 to before 2100-01-01 UTC',
    'an infinite run-after element is LF003');
SELECT throws_ok($$SELECT durable_jobs.enqueue_jobs('t05a.bad',
                       ARRAY['{}', jsonb_build_object('big', repeat('x', 1100000))]::jsonb[])$$,
    'LF003', 'job 2 of the batch: job payload must be at most 1 MiB', 'a payload element over 1 MiB is LF003');
SELECT throws_ok($$SELECT durable_jobs.enqueue_jobs('t05a.keyed', ARRAY['{}', '{}', NULL]::jsonb[],
                                                    ARRAY['idem-t05a-secret-new', 'idem-t05a-secret-existing', NULL])$$,
    'LF003', 'job 3 of the batch: job payload is required',
    'a bad element after good and repeated ones is LF003 too');
SELECT throws_ok($$SELECT durable_jobs.enqueue_jobs('t05a.bad', ARRAY['{}', '{}', NULL, '{}']::jsonb[], NULL, NULL,
                                                    ARRAY[1, 0, 1, 0])$$,
    'LF003', 'job 2 of the batch: max attempts must be 1 to 1000',
    'of several bad elements the first is named');
SELECT throws_ok($$SELECT durable_jobs.enqueue_jobs('t05a.bad', ARRAY[NULL]::jsonb[], ARRAY[''],
                                                    ARRAY['infinity']::timestamptz[], ARRAY[0])$$,
    'LF003', 'job 1 of the batch: job payload is required',
    'an element breaking several rules gets enqueue_job''s first message');
SELECT throws_ok($$SELECT durable_jobs.enqueue_jobs('t05a.bad', array_fill('{}'::jsonb, ARRAY[10000]),
                       array_append(array_fill(NULL::text, ARRAY[9999]), ''))$$,
    'LF003', 'job 10000 of the batch: idempotency key must be 1 to 200 characters',
    'a bad last element of 10,000 is named by its position');

-- Bad arrays and queues.
SELECT throws_ok($$SELECT durable_jobs.enqueue_jobs('t05a.bad', NULL)$$,
    'LF003', 'job payloads must be a one-dimensional array of 1 to 10000 payloads', 'a NULL payload array is LF003');
SELECT throws_ok($$SELECT durable_jobs.enqueue_jobs('t05a.bad', ARRAY[]::jsonb[])$$,
    'LF003', 'job payloads must be a one-dimensional array of 1 to 10000 payloads', 'an empty payload array is LF003');
SELECT throws_ok($$SELECT durable_jobs.enqueue_jobs('t05a.bad', ARRAY[['{}', '{}'], ['{}', '{}']]::jsonb[])$$,
    'LF003', 'job payloads must be a one-dimensional array of 1 to 10000 payloads',
    'a two-dimensional payload array is LF003');
SELECT throws_ok($$SELECT durable_jobs.enqueue_jobs('t05a.bad', array_fill('{}'::jsonb, ARRAY[10001]))$$,
    'LF003', 'job payloads must be a one-dimensional array of 1 to 10000 payloads', '10,001 payloads are LF003');
SELECT throws_ok($$SELECT durable_jobs.enqueue_jobs('t05a.bad', ARRAY['{}', '{}']::jsonb[], ARRAY['idem-t05a-secret-k'])$$,
    'LF003', 'idempotency keys, run-afters and max attempts must each be NULL or hold one element per payload',
    'fewer keys than payloads is LF003');
SELECT throws_ok($$SELECT durable_jobs.enqueue_jobs('t05a.bad', ARRAY['{}']::jsonb[], ARRAY[['k1'], ['k2']])$$,
    'LF003', 'idempotency keys, run-afters and max attempts must each be NULL or hold one element per payload',
    'a two-dimensional key array is LF003');
SELECT throws_ok($$SELECT durable_jobs.enqueue_jobs('t05a.bad', ARRAY['{}']::jsonb[], NULL,
                                                    ARRAY[NULL, NULL]::timestamptz[])$$,
    'LF003', 'idempotency keys, run-afters and max attempts must each be NULL or hold one element per payload',
    'more run-afters than payloads is LF003');
SELECT throws_ok($$SELECT durable_jobs.enqueue_jobs('t05a.bad', ARRAY['{}', '{}']::jsonb[], NULL, NULL, ARRAY[]::integer[])$$,
    'LF003', 'idempotency keys, run-afters and max attempts must each be NULL or hold one element per payload',
    'an empty attempts array for two payloads is LF003');
SELECT throws_ok($$SELECT durable_jobs.enqueue_jobs('T17.Bad', ARRAY['{}']::jsonb[])$$,
    'LF003', NULL, 'a malformed queue name is LF003');
SELECT throws_ok($$SELECT durable_jobs.enqueue_jobs(NULL, ARRAY['{}']::jsonb[])$$,
    'LF003', NULL, 'a NULL queue name is LF003');

RESET ROLE;
SELECT is((SELECT count(*) FROM durable_jobs.job_record), (SELECT job_count FROM t05a_count),
          'no refused batch wrote a job, not even its good elements');

-- The bounds: 10,000 payloads in one call; the worker cannot call it.
SET LOCAL ROLE durable_job_producer;
SELECT is(cardinality(durable_jobs.enqueue_jobs('t05a.bound', array_fill('{}'::jsonb, ARRAY[10000]))), 10000,
          '10,000 payloads are one batch');
RESET ROLE;
SET LOCAL ROLE durable_job_worker;
SELECT throws_ok($$SELECT durable_jobs.enqueue_jobs('t05a.worker', ARRAY['{}']::jsonb[])$$, '42501', NULL,
                 'a worker cannot enqueue a batch');
-- One id drawn per element, in input order, as enqueue_job draws one per
-- call: a repeated key's element uses one up too.
SET LOCAL ROLE durable_job_producer;
INSERT INTO t05a_batch (batch_label, job_ids) VALUES ('drawn', durable_jobs.enqueue_jobs('t05a.drawn',
    ARRAY['{"n": 1}', '{"n": 2}', '{"n": 3}', '{"n": 4}']::jsonb[],
    ARRAY[NULL, 'idem-t05a-secret-d', 'idem-t05a-secret-d', NULL]));
RESET ROLE;
SELECT is((SELECT ARRAY[j[2] - j[1], j[3] - j[1], j[4] - j[1]] FROM t05a_batch b, LATERAL (SELECT b.job_ids) AS x(j)
           WHERE b.batch_label = 'drawn'),
          ARRAY[1::bigint, 1, 3], 'the repeat returns its first element''s id and the next job''s id skips one');
SELECT results_eq(
    $$SELECT p.job_payload FROM unnest(pg_temp.t05a_ids('drawn')) WITH ORDINALITY AS u(id, n)
      JOIN durable_jobs.job_payload_record p ON p.job_record_id = u.id ORDER BY u.n$$,
    $$VALUES ('{"n": 1}'::jsonb), ('{"n": 2}'), ('{"n": 2}'), ('{"n": 4}')$$,
    'each new job holds its own element''s payload, keyed or not');

-- ============================================================================
-- One idempotency namespace per queue, shared by every producer login
-- (migration 004, assigned number 005).
-- ============================================================================

-- Producers share each queue's idempotency namespace --------------------------------

CREATE ROLE t05b_producer_a LOGIN IN ROLE durable_job_producer;
CREATE ROLE t05b_producer_b LOGIN IN ROLE durable_job_producer;
SET SESSION AUTHORIZATION t05b_producer_a;
CREATE TEMP TABLE t05b_enqueued (who text PRIMARY KEY, job_id bigint NOT NULL);
INSERT INTO t05b_enqueued VALUES ('a', durable_jobs.enqueue_job('t05b_shared', '{"from": "a"}', 'shared-key-1'));
RESET SESSION AUTHORIZATION;
GRANT INSERT, SELECT ON t05b_enqueued TO t05b_producer_b;
SET SESSION AUTHORIZATION t05b_producer_b;
INSERT INTO t05b_enqueued VALUES ('b', durable_jobs.enqueue_job('t05b_shared', '{"from": "b"}', 'shared-key-1'));
SELECT ok(durable_jobs.cancel_job((SELECT job_id FROM t05b_enqueued WHERE who = 'a')),
    'documented: any producer login may cancel any job id (queues are not scoped to a producer)');
RESET SESSION AUTHORIZATION;
SELECT is((SELECT count(DISTINCT job_id)::integer FROM t05b_enqueued), 1,
    'documented: the same idempotency key on the same queue from another producer login returns the first job (one namespace per queue)');

-- ============================================================================
-- enqueue_jobs' own paths: what version 3 (migration 013; now in
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
-- ============================================================================

CREATE TEMP TABLE t05c_batch (batch_label text PRIMARY KEY, job_ids bigint[] NOT NULL);
GRANT ALL ON t05c_batch TO PUBLIC;
CREATE FUNCTION pg_temp.t05c_ids(p_batch_label text) RETURNS bigint[] LANGUAGE sql STABLE AS $$
    SELECT job_ids FROM t05c_batch WHERE batch_label = p_batch_label;
$$;

SET LOCAL ROLE durable_job_producer;

INSERT INTO t05c_batch (batch_label, job_ids) VALUES ('keyless', durable_jobs.enqueue_jobs('t05c.keyless',
    ARRAY['{"n": 1}', '{"n": 2}', '{"n": 3}']::jsonb[],
    ARRAY[NULL, NULL, NULL]::text[],
    ARRAY['2031-05-06 07:08:09.123456+00', NULL, '2001-02-03 04:05:06+00']::timestamptz[],
    ARRAY[7, 1, 1000]));
INSERT INTO t05c_batch (batch_label, job_ids) VALUES ('new-keys', durable_jobs.enqueue_jobs('t05c.keyed',
    ARRAY['{"k": 1}', '{"k": 2}', '{"k": 3}', '{"k": 4}']::jsonb[],
    ARRAY['idem-t05c-secret-a', NULL, 'idem-t05c-secret-b', 'idem-t05c-secret-c']));
INSERT INTO t05c_batch (batch_label, job_ids) VALUES ('same-keys', durable_jobs.enqueue_jobs('t05c.keyed',
    ARRAY['{"again": 1}', '{"again": 2}', '{"again": 3}']::jsonb[],
    ARRAY['idem-t05c-secret-c', 'idem-t05c-secret-a', 'idem-t05c-secret-b']));

-- The payload INSERT runs with plan_cache_mode auto; the caller keeps its own.
SET LOCAL plan_cache_mode = force_generic_plan;
INSERT INTO t05c_batch (batch_label, job_ids) VALUES ('generic-caller', durable_jobs.enqueue_jobs('t05c.caller',
    ARRAY['{"c": 1}']::jsonb[]));
SELECT is(current_setting('plan_cache_mode'), 'force_generic_plan',
          'enqueue_jobs leaves the caller''s plan_cache_mode as it found it');

RESET ROLE;

SELECT ok((SELECT bool_and(j.job_ids[i] < j.job_ids[i + 1]) FROM t05c_batch j, generate_series(1, 2) i
           WHERE j.batch_label = 'keyless'),
          'a batch whose keys are all NULL gets its ids in input order');
SELECT results_eq(
    $$SELECT p.job_payload, j.run_after, j.max_attempts, j.idempotency_key_digest IS NULL, j.job_status::text
      FROM unnest(pg_temp.t05c_ids('keyless')) WITH ORDINALITY AS u(id, n)
      JOIN durable_jobs.job_record j ON j.job_record_id = u.id
      JOIN durable_jobs.job_payload_record p ON p.job_record_id = u.id
      WHERE u.n <> 2 ORDER BY u.n$$,
    $$VALUES ('{"n": 1}'::jsonb, '2031-05-06 07:08:09.123456+00'::timestamptz, 7, true, 'QUEUED'),
             ('{"n": 3}', '2001-02-03 04:05:06+00', 1000, true, 'QUEUED')$$,
    'each job of a keyless batch holds its own element''s payload, run-after and max attempts');
SELECT ok((SELECT j.run_after BETWEEN now() AND clock_timestamp() AND j.max_attempts = 1
           FROM durable_jobs.job_record j WHERE j.job_record_id = (pg_temp.t05c_ids('keyless'))[2]),
          'a NULL run-after of a keyless batch is database time');
SELECT is((SELECT count(*)::integer FROM durable_jobs.job_record WHERE queue_name = 't05c.keyless'), 3,
          'a keyless batch of three writes three jobs');

SELECT is(cardinality(pg_temp.t05c_ids('new-keys')), 4, 'four new elements, three keyed, give four ids');
SELECT ok((SELECT bool_and(j.job_ids[i] < j.job_ids[i + 1]) FROM t05c_batch j, generate_series(1, 3) i
           WHERE j.batch_label = 'new-keys'),
          'a keyed batch of new keys gets its ids in input order');
SELECT results_eq(
    $$SELECT u.n, j.idempotency_key_digest, p.job_payload
      FROM unnest(pg_temp.t05c_ids('new-keys')) WITH ORDINALITY AS u(id, n)
      JOIN durable_jobs.job_record j ON j.job_record_id = u.id
      JOIN durable_jobs.job_payload_record p ON p.job_record_id = u.id ORDER BY u.n$$,
    $$VALUES (1::bigint, sha256(convert_to('idem-t05c-secret-a', 'UTF8')), '{"k": 1}'::jsonb),
             (2, NULL, '{"k": 2}'), (3, sha256(convert_to('idem-t05c-secret-b', 'UTF8')), '{"k": 3}'),
             (4, sha256(convert_to('idem-t05c-secret-c', 'UTF8')), '{"k": 4}')$$,
    'each key of the batch holds its own element''s new job and payload');
SELECT is(pg_temp.t05c_ids('same-keys'),
          ARRAY[(pg_temp.t05c_ids('new-keys'))[4], (pg_temp.t05c_ids('new-keys'))[1], (pg_temp.t05c_ids('new-keys'))[3]],
          'the same keys again return the jobs they hold');
SELECT is((SELECT count(*)::integer FROM durable_jobs.job_record WHERE queue_name = 't05c.keyed'), 4,
          'keys already taken write no job');

SELECT * FROM finish();
ROLLBACK;
