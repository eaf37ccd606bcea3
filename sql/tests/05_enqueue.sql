-- 05_enqueue: enqueue_job durably accepts a QUEUED job, keeps its payload
-- only in job_payload_record, returns the first job's id for a repeated
-- (queue, idempotency key) and stores the key only as its sha256 digest.
-- Calls run as durable_job_producer; checks read the private tables as the
-- superuser.
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
SELECT plan(44);

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

SELECT * FROM finish();
ROLLBACK;
