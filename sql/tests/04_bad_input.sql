-- 04_bad_input: the input rules of docs/sql-api.md (each function's section
-- and the SQLSTATEs table), function by function and argument by argument. Malformed or NULL input raises LF003 (LF002 from
-- set_queue_lease_policy) before anything else, so it wins over a stale
-- claim, and writes nothing; each boundary value just inside the limits is
-- accepted; an id that does not exist (0, negative) is unknown, not
-- malformed: false, zero rows, stale or LF001 as each function says. The
-- last section holds the limits on sizes, run-after times and retry delays.
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
SELECT plan(219);
\ir fixture/fixture.sql

-- Fixtures -------------------------------------------------------------------

-- 'fenced': a valid claim, so a call with it fails only for the bad value.
-- 'stale': the claim of a cancelled job.
-- (The fixture's claims, made by pg_temp.enqueue_and_claim.)
CREATE TEMP VIEW t04a_claim AS
SELECT label AS claim_label, job_record_id AS job_id, lease_claim_token AS claim_token FROM claims;
DO $$
BEGIN
    PERFORM pg_temp.enqueue_and_claim('fenced', 't04a.fenced', 'worker-t10');
    PERFORM durable_jobs.cancel_job(pg_temp.enqueue_and_claim('stale', 't04a.stale', 'worker-t10'));
    -- A job that a malformed claim call must leave QUEUED.
    PERFORM durable_jobs.enqueue_job('t04a.waiting', '{"fixture": "waiting"}');
END $$;

-- Everything a malformed call could write.
CREATE FUNCTION pg_temp.t04a_database_state()
RETURNS text LANGUAGE sql AS $$
    SELECT concat_ws(' | ',
        (SELECT string_agg(row(j.*)::text, ';' ORDER BY j.job_record_id) FROM durable_jobs.job_record j),
        (SELECT count(*) FROM durable_jobs.job_payload_record)::text,
        (SELECT count(*) FROM durable_jobs.job_outcome_ledger)::text,
        (SELECT string_agg(row(p.*)::text, ';' ORDER BY p.queue_name) FROM durable_jobs.queue_lease_policy p),
        (SELECT count(*) FROM durable_jobs.control_evidence_record)::text,
        (SELECT coalesce(sum(outcome_count), 0) FROM durable_jobs.lease_outcome_tally)::text);
$$;
CREATE TEMP TABLE t04a_state AS SELECT pg_temp.t04a_database_state() AS state_before;

-- The malformed calls, each with the SQLSTATE it must raise.
CREATE TEMP TABLE t04a_bad_call (
    case_order  serial PRIMARY KEY,
    call_sql    text NOT NULL,
    sqlstate    text NOT NULL,
    description text NOT NULL
);

-- Queue names, for every function that takes one.
INSERT INTO t04a_bad_call (call_sql, sqlstate, description)
SELECT format(f.call_template, q.bad_value), f.sqlstate,
       format('%s rejects %s with %s', f.function_name, q.case_text, f.sqlstate)
FROM (VALUES (1, 'Orders', 'an uppercase queue name'),
             (2, 't' || repeat('a', 63), 'a 64-character queue name'),
             (3, '', 'an empty queue name'),
             (4, '1orders', 'a queue name with a leading digit'),
             (5, NULL, 'a NULL queue name'),
             (6, 'or ders', 'a queue name with a space'),
             (7, '_orders', 'a queue name with a leading underscore'),
             (8, 'orders/eu', 'a queue name with a slash')) AS q(value_order, bad_value, case_text)
CROSS JOIN (VALUES (1, 'enqueue_job', 'SELECT durable_jobs.enqueue_job(%L, ''{}'')', 'LF003'),
                   (2, 'claim_next_job', 'SELECT * FROM durable_jobs.claim_next_job(%L, ''worker-t10'')', 'LF003'),
                   (3, 'claim_next_jobs', 'SELECT * FROM durable_jobs.claim_next_jobs(%L, ''worker-t10'', 1)', 'LF003'),
                   (4, 'set_queue_lease_policy',
                    'SELECT durable_jobs.set_queue_lease_policy(%L, interval ''3 seconds'', interval ''1 second'', interval ''1 minute'', true, ''r'')',
                    'LF002')) AS f(function_order, function_name, call_template, sqlstate)
ORDER BY f.function_order, q.value_order;

-- Worker owner ids, for every function that takes one (with the fenced claim).
INSERT INTO t04a_bad_call (call_sql, sqlstate, description)
SELECT format(f.call_template, c.job_id, c.claim_token, o.bad_value), 'LF003',
       format('%s rejects %s with LF003', f.function_name, o.case_text)
FROM t04a_claim c
CROSS JOIN (VALUES (1, repeat('w', 129), 'a 129-character owner id'),
                   (2, 'worker a', 'an owner id with a space'),
                   (3, 'worker/1', 'an owner id with a slash'),
                   (4, 'w' || chr(246) || 'rker', 'an owner id with a non-ASCII letter'),
                   (5, '', 'an empty owner id'),
                   (6, NULL, 'a NULL owner id'),
                   (7, '-worker', 'an owner id with a leading dash'),
                   (8, '.worker', 'an owner id with a leading dot'),
                   (9, E'worker\n', 'an owner id with a trailing newline')) AS o(value_order, bad_value, case_text)
CROSS JOIN (VALUES
    (1, 'claim_next_job', 'SELECT * FROM durable_jobs.claim_next_job(''t04a.waiting'', %3$L)'),
    (2, 'claim_next_jobs', 'SELECT * FROM durable_jobs.claim_next_jobs(''t04a.waiting'', %3$L, 1)'),
    (3, 'renew_job_lease', 'SELECT * FROM durable_jobs.renew_job_lease(%s, %L, %L)'),
    (4, 'renew_job_leases', 'SELECT * FROM durable_jobs.renew_job_leases(%3$L, ARRAY[%1$s]::bigint[], ARRAY[%2$L]::uuid[])'),
    (5, 'complete_job', 'SELECT durable_jobs.complete_job(%s, %L, %L)'),
    (6, 'retry_job', 'SELECT durable_jobs.retry_job(%s, %L, %L, interval ''1 second'', ''transient_error'')'),
    (7, 'fail_job', 'SELECT durable_jobs.fail_job(%s, %L, %L, ''permanent_error'')'),
    (8, 'release_job_claim', 'SELECT durable_jobs.release_job_claim(%s, %L, %L)')) AS f(function_order, function_name, call_template)
WHERE c.claim_label = 'fenced'
ORDER BY f.function_order, o.value_order;

-- Failure reason codes (with the fenced claim).
INSERT INTO t04a_bad_call (call_sql, sqlstate, description)
SELECT format(f.call_template, c.job_id, c.claim_token, r.bad_value), 'LF003',
       format('%s rejects %s with LF003', f.function_name, r.case_text)
FROM t04a_claim c
CROSS JOIN (VALUES (1, '', 'an empty reason code'),
                   (2, NULL, 'a NULL reason code'),
                   (3, 'Timeout', 'an uppercase reason code'),
                   (4, 'time out', 'a reason code with a space'),
                   (5, '1timeout', 'a reason code with a leading digit'),
                   (6, 'r' || repeat('x', 63), 'a 64-character reason code'),
                   (7, 'time-out', 'a reason code with a dash'),
                   (8, 'connection refused by 10.0.0.7', 'free text as a reason code')) AS r(value_order, bad_value, case_text)
CROSS JOIN (VALUES
    (1, 'retry_job', 'SELECT durable_jobs.retry_job(%s, %L, ''worker-t10'', interval ''1 second'', %L)'),
    (2, 'fail_job', 'SELECT durable_jobs.fail_job(%s, %L, ''worker-t10'', %L)')) AS f(function_order, function_name, call_template)
WHERE c.claim_label = 'fenced'
ORDER BY f.function_order, r.value_order;

-- Retry delays (with the fenced claim).
INSERT INTO t04a_bad_call (call_sql, sqlstate, description)
SELECT format('SELECT durable_jobs.retry_job(%s, %L, ''worker-t10'', %L::interval, ''transient_error'')',
              c.job_id, c.claim_token, d.bad_value), 'LF003',
       format('retry_job rejects %s with LF003', d.case_text)
FROM t04a_claim c
CROSS JOIN (VALUES (1, '-1 second', 'a retry delay of -1 second'),
                   (2, '31 days', 'a retry delay of 31 days'),
                   (3, '30 days 1 second', 'a retry delay just over 30 days'),
                   (4, NULL, 'a NULL retry delay')) AS d(value_order, bad_value, case_text)
WHERE c.claim_label = 'fenced'
ORDER BY d.value_order;

-- NULL ids and tokens of the claim (with the fenced claim's other values).
INSERT INTO t04a_bad_call (call_sql, sqlstate, description)
SELECT format(f.call_template, n.job_id_sql, n.token_sql), 'LF003',
       format('%s rejects %s with LF003', f.function_name, n.case_text)
FROM t04a_claim c
CROSS JOIN LATERAL (VALUES (1, 'NULL::bigint', quote_literal(c.claim_token) || '::uuid', 'a NULL job id'),
                           (2, c.job_id::text, 'NULL::uuid', 'a NULL claim token')) AS n(value_order, job_id_sql, token_sql, case_text)
CROSS JOIN (VALUES
    (1, 'renew_job_lease', 'SELECT * FROM durable_jobs.renew_job_lease(%s, %s, ''worker-t10'')'),
    (2, 'complete_job', 'SELECT durable_jobs.complete_job(%s, %s, ''worker-t10'')'),
    (3, 'retry_job', 'SELECT durable_jobs.retry_job(%s, %s, ''worker-t10'', interval ''1 second'', ''transient_error'')'),
    (4, 'fail_job', 'SELECT durable_jobs.fail_job(%s, %s, ''worker-t10'', ''permanent_error'')'),
    (5, 'release_job_claim', 'SELECT durable_jobs.release_job_claim(%s, %s, ''worker-t10'')')) AS f(function_order, function_name, call_template)
WHERE c.claim_label = 'fenced'
ORDER BY f.function_order, n.value_order;

-- renew_job_leases arrays (the fenced claim is in each, and must not be renewed).
INSERT INTO t04a_bad_call (call_sql, sqlstate, description)
SELECT format('SELECT * FROM durable_jobs.renew_job_leases(''worker-t10'', %s, %s)',
              format(a.ids_template, c.job_id), format(a.tokens_template, c.claim_token)), 'LF003',
       format('renew_job_leases rejects %s with LF003', a.case_text)
FROM t04a_claim c
CROSS JOIN (VALUES
    (1, 'ARRAY[%s]::bigint[]', 'ARRAY[%L, gen_random_uuid()]::uuid[]', 'arrays of different lengths'),
    (2, 'ARRAY[%s, -1]::bigint[]', 'ARRAY[%L]::uuid[]', 'more job ids than tokens'),
    (3, 'ARRAY[%s, NULL]::bigint[]', 'ARRAY[%L, gen_random_uuid()]::uuid[]', 'a NULL job id element'),
    (4, 'ARRAY[%s, -1]::bigint[]', 'ARRAY[%L, NULL]::uuid[]', 'a NULL token element'),
    (5, 'ARRAY[%s, %1$s]::bigint[]', 'ARRAY[%L, %1$L]::uuid[]', 'the same job id twice'),
    (6, 'ARRAY[%s] || ARRAY(SELECT -g FROM generate_series(1, 1000) g)::bigint[]',
        'ARRAY[%L]::uuid[] || ARRAY(SELECT gen_random_uuid() FROM generate_series(1, 1000))', '1001 claims'),
    (7, 'NULL::bigint[]', 'ARRAY[%L]::uuid[]', 'a NULL job id array'),
    (8, 'ARRAY[%s]::bigint[]', 'NULL::uuid[]', 'a NULL token array'),
    -- Migration 008: version 6 took a multi-dimensional array as if it were flat.
    (9, 'ARRAY[[%s], [-1]]::bigint[]', 'ARRAY[%L, gen_random_uuid()]::uuid[]', 'a two-dimensional job id array'),
    (10, 'ARRAY[%s, -1]::bigint[]', 'ARRAY[[%L], [gen_random_uuid()]]::uuid[]', 'a two-dimensional token array')) AS a(value_order, ids_template, tokens_template, case_text)
WHERE c.claim_label = 'fenced'
ORDER BY a.value_order;

-- enqueue_job's other arguments.
INSERT INTO t04a_bad_call (call_sql, sqlstate, description) VALUES
    ($$SELECT durable_jobs.enqueue_job('t04a.enqueue', NULL)$$, 'LF003', 'enqueue_job rejects a NULL payload with LF003'),
    ($$SELECT durable_jobs.enqueue_job('t04a.enqueue', '{}', '')$$, 'LF003',
     'enqueue_job rejects an empty idempotency key with LF003'),
    (format('SELECT durable_jobs.enqueue_job(''t04a.enqueue'', ''{}'', %L)', repeat('k', 201)), 'LF003',
     'enqueue_job rejects a 201-character idempotency key with LF003'),
    (format('SELECT durable_jobs.enqueue_job(''t04a.enqueue'', ''{}'', %L)', repeat(chr(8364), 201)), 'LF003',
     'enqueue_job rejects a 201-character multibyte idempotency key with LF003'),
    ($$SELECT durable_jobs.enqueue_job('t04a.enqueue', '{}', NULL, NULL, NULL)$$, 'LF003',
     'enqueue_job rejects an explicit NULL max attempts with LF003'),
    ($$SELECT durable_jobs.enqueue_job('t04a.enqueue', '{}', NULL, NULL, 0)$$, 'LF003',
     'enqueue_job rejects max attempts 0 with LF003'),
    ($$SELECT durable_jobs.enqueue_job('t04a.enqueue', '{}', NULL, NULL, 1001)$$, 'LF003',
     'enqueue_job rejects max attempts 1001 with LF003'),
    ($$SELECT durable_jobs.enqueue_job('t04a.enqueue', '{}', NULL, NULL, -5)$$, 'LF003',
     'enqueue_job rejects negative max attempts with LF003');

-- claim_next_jobs batch sizes.
INSERT INTO t04a_bad_call (call_sql, sqlstate, description) VALUES
    ($$SELECT * FROM durable_jobs.claim_next_jobs('t04a.waiting', 'worker-t10', 0)$$, 'LF003',
     'claim_next_jobs rejects p_max_jobs 0 with LF003'),
    ($$SELECT * FROM durable_jobs.claim_next_jobs('t04a.waiting', 'worker-t10', 1001)$$, 'LF003',
     'claim_next_jobs rejects p_max_jobs 1001 with LF003'),
    ($$SELECT * FROM durable_jobs.claim_next_jobs('t04a.waiting', 'worker-t10', NULL)$$, 'LF003',
     'claim_next_jobs rejects a NULL p_max_jobs with LF003'),
    ($$SELECT * FROM durable_jobs.claim_next_jobs('t04a.waiting', 'worker-t10', -1)$$, 'LF003',
     'claim_next_jobs rejects a negative p_max_jobs with LF003');

-- Job ids of the producer and operator functions.
INSERT INTO t04a_bad_call (call_sql, sqlstate, description) VALUES
    ('SELECT durable_jobs.cancel_job(NULL)', 'LF003', 'cancel_job rejects a NULL job id with LF003'),
    ('SELECT durable_jobs.replay_job(NULL)', 'LF003', 'replay_job rejects a NULL job id with LF003'),
    ('SELECT * FROM durable_jobs.job_lifecycle_state(NULL)', 'LF003', 'job_lifecycle_state rejects a NULL job id with LF003');

-- set_queue_lease_policy's NULL values (the invalid ranges are in 15_policy).
INSERT INTO t04a_bad_call (call_sql, sqlstate, description)
SELECT format('SELECT durable_jobs.set_queue_lease_policy(''t04a.policy'', %s, %s, %s, %s, %s)',
              CASE WHEN n = 1 THEN 'NULL' ELSE 'interval ''3 seconds''' END,
              CASE WHEN n = 2 THEN 'NULL' ELSE 'interval ''1 second''' END,
              CASE WHEN n = 3 THEN 'NULL' ELSE 'interval ''1 minute''' END,
              CASE WHEN n = 4 THEN 'NULL' ELSE 'true' END,
              CASE WHEN n = 5 THEN 'NULL' ELSE '''r''' END), 'LF002',
       format('set_queue_lease_policy rejects a NULL %s with LF002',
              (ARRAY['lease duration', 'renewal interval', 'max claim lifetime', 'renewal switch', 'change reason'])[n])
FROM generate_series(1, 5) AS n ORDER BY n;

-- A malformed call gets LF003 even when its claim is also stale.
INSERT INTO t04a_bad_call (call_sql, sqlstate, description)
SELECT format(f.call_template, c.job_id, c.claim_token), 'LF003', f.case_text
FROM t04a_claim c
CROSS JOIN (VALUES
    (1, 'SELECT * FROM durable_jobs.renew_job_lease(%s, %L, ''Bad Owner'')',
     'renew_job_lease with a stale claim and a malformed owner raises LF003, not stale'),
    (2, 'SELECT * FROM durable_jobs.renew_job_leases(''worker-t10'', ARRAY[%s, %1$s], ARRAY[%L, %2$L]::uuid[])',
     'renew_job_leases with a stale claim given twice raises LF003, not stale'),
    (3, 'SELECT durable_jobs.complete_job(%s, %L, ''Bad Owner'')',
     'complete_job with a stale claim and a malformed owner raises LF003, not LF001'),
    (4, 'SELECT durable_jobs.retry_job(%s, %L, ''worker-t10'', interval ''1 second'', ''Bad Reason'')',
     'retry_job with a stale claim and a malformed reason raises LF003, not LF001'),
    (5, 'SELECT durable_jobs.retry_job(%s, %L, ''worker-t10'', interval ''-1 second'', ''transient_error'')',
     'retry_job with a stale claim and a negative delay raises LF003, not LF001'),
    (6, 'SELECT durable_jobs.fail_job(%s, %L, ''worker-t10'', NULL)',
     'fail_job with a stale claim and a NULL reason raises LF003, not LF001'),
    (7, 'SELECT durable_jobs.release_job_claim(%s, %L, '''')',
     'release_job_claim with a stale claim and an empty owner raises LF003, not false')) AS f(value_order, call_template, case_text)
WHERE c.claim_label = 'stale'
ORDER BY f.value_order;
-- ...and when the job id is unknown.
INSERT INTO t04a_bad_call (call_sql, sqlstate, description) VALUES
    ($$SELECT durable_jobs.complete_job(0, gen_random_uuid(), 'worker t10')$$, 'LF003',
     'complete_job with an unknown job id and a malformed owner raises LF003, not LF001'),
    ($$SELECT * FROM durable_jobs.renew_job_lease(-1, gen_random_uuid(), NULL)$$, 'LF003',
     'renew_job_lease with an unknown job id and a NULL owner raises LF003, not stale');

SELECT throws_ok(call_sql, sqlstate, NULL, description) FROM t04a_bad_call ORDER BY case_order;

SELECT is(pg_temp.t04a_database_state(), (SELECT state_before FROM t04a_state),
          'no malformed call wrote anything: jobs, payloads, ledger, policies, evidence and tallies as before');
SELECT is((SELECT job_status FROM durable_jobs.job_record j WHERE j.queue_name = 't04a.waiting'), 'QUEUED',
          'malformed claim calls claimed nothing');
SELECT is((SELECT renewal_outcome FROM durable_jobs.renew_job_lease(job_id, claim_token, 'worker-t10')), 'renewed',
          'the fenced claim used by the malformed calls is still valid (none of them touched it)')
FROM t04a_claim WHERE claim_label = 'fenced';

-- Values just inside the limits are accepted --------------------------------

SELECT lives_ok(format('SELECT durable_jobs.enqueue_job(%L, ''{}'')', 't' || repeat('a', 62)),
                'enqueue_job accepts a 63-character queue name');
SELECT lives_ok($$SELECT durable_jobs.enqueue_job('q', '{}')$$, 'enqueue_job accepts a one-letter queue name');
SELECT lives_ok($$SELECT durable_jobs.enqueue_job('t04a.q-v1:eu_2', '{}')$$,
                'enqueue_job accepts a queue name with digits, dot, dash, colon and underscore');
SELECT lives_ok(format('SELECT durable_jobs.enqueue_job(''t04a.enqueue'', ''{}'', %L)', repeat('k', 200)),
                'enqueue_job accepts a 200-character idempotency key');
SELECT lives_ok($$SELECT durable_jobs.enqueue_job('t04a.enqueue', '{}', 'k')$$,
                'enqueue_job accepts a 1-character idempotency key');
SELECT lives_ok($$SELECT durable_jobs.enqueue_job('t04a.multibyte', '{}', repeat(chr(8364), 200))$$,
          'enqueue_job accepts a 200-character multibyte idempotency key (600 bytes): lengths count characters');
SELECT is(durable_jobs.enqueue_job('t04a.multibyte', '{"again": true}', repeat(chr(8364), 200)),
          (SELECT job_record_id FROM durable_jobs.job_record WHERE queue_name = 't04a.multibyte'),
          'the 200-character multibyte key is an idempotency key like any other');
SELECT lives_ok($$SELECT durable_jobs.enqueue_job('t04a.multibyte', '{}', repeat(chr(128512), 200))$$,
                'enqueue_job accepts a 200-character key of 4-byte characters');
SELECT lives_ok($$SELECT durable_jobs.enqueue_job('t04a.enqueue', '{}', NULL, NULL, 1)$$,
                'enqueue_job accepts max attempts 1');
SELECT lives_ok($$SELECT durable_jobs.enqueue_job('t04a.enqueue', '{}', NULL, NULL, 1000)$$,
                'enqueue_job accepts max attempts 1000');
SELECT lives_ok($$SELECT durable_jobs.enqueue_job('t04a.enqueue', '{}', NULL, NULL)$$,
                'enqueue_job accepts a NULL run-after (run at once)');
SELECT lives_ok($$SELECT durable_jobs.enqueue_job('t04a.enqueue', 'null')$$,
                'enqueue_job accepts a JSON null payload (only SQL NULL is missing)');
SELECT lives_ok(format('SELECT * FROM durable_jobs.claim_next_job(''t04a.none'', %L)', 'W' || repeat('w', 127)),
                'claim_next_job accepts a 128-character owner id');
SELECT lives_ok($$SELECT * FROM durable_jobs.claim_next_job('t04a.none', 'Worker-1.pod_a:7')$$,
                'claim_next_job accepts an owner id with letters, digits, dot, dash, underscore and colon');
SELECT lives_ok($$SELECT * FROM durable_jobs.claim_next_jobs('t04a.none', 'worker-t10', 1)$$,
                'claim_next_jobs accepts p_max_jobs 1');
SELECT lives_ok($$SELECT * FROM durable_jobs.claim_next_jobs('t04a.none', 'worker-t10', 1000)$$,
                'claim_next_jobs accepts p_max_jobs 1000');
SELECT is_empty($$SELECT * FROM durable_jobs.renew_job_leases('worker-t10', ARRAY[]::bigint[], ARRAY[]::uuid[])$$,
                'renew_job_leases of empty arrays returns zero rows');
SELECT results_eq(
    format('SELECT renewal_outcome, count(*) FROM durable_jobs.renew_job_leases(''worker-t10'',
                ARRAY[%s] || ARRAY(SELECT -g FROM generate_series(1, 999) g)::bigint[],
                ARRAY[%L]::uuid[] || ARRAY(SELECT gen_random_uuid() FROM generate_series(1, 999)))
            GROUP BY renewal_outcome ORDER BY renewal_outcome', job_id, claim_token),
    $$VALUES ('renewed', 1::bigint), ('stale', 999::bigint)$$,
    'renew_job_leases accepts exactly 1000 claims and renews the valid one')
FROM t04a_claim WHERE claim_label = 'fenced';
SELECT is(durable_jobs.retry_job(job_id, claim_token, 'worker-t10', interval '30 days', 'r' || repeat('x', 62)),
          'RETRY_SCHEDULED', 'retry_job accepts a 30-day delay and a 63-character reason code')
FROM t04a_claim WHERE claim_label = 'fenced';

-- Unknown ids are not malformed ---------------------------------------------

SELECT throws_ok($$SELECT durable_jobs.complete_job(0, gen_random_uuid(), 'worker-t10')$$, 'LF001', NULL,
                 'complete_job of job id 0 is a stale claim (LF001), not malformed');
SELECT throws_ok($$SELECT durable_jobs.retry_job(-1, gen_random_uuid(), 'worker-t10', interval '0', 'transient_error')$$,
                 'LF001', NULL, 'retry_job of a negative job id is a stale claim (LF001), not malformed');
SELECT throws_ok($$SELECT durable_jobs.fail_job(0, gen_random_uuid(), 'worker-t10', 'permanent_error')$$, 'LF001', NULL,
                 'fail_job of job id 0 is a stale claim (LF001), not malformed');
SELECT is(durable_jobs.release_job_claim(-1, gen_random_uuid(), 'worker-t10'), false,
          'release_job_claim of a negative job id returns false');
SELECT results_eq($$SELECT renewal_outcome, lease_expires_at FROM durable_jobs.renew_job_lease(0, gen_random_uuid(), 'worker-t10')$$,
                  $$VALUES ('stale', NULL::timestamptz)$$,
                  'renew_job_lease of job id 0 is stale, with no expiry');
SELECT results_eq($$SELECT job_record_id, renewal_outcome FROM durable_jobs.renew_job_leases('worker-t10',
                        ARRAY[0, -1]::bigint[], ARRAY[gen_random_uuid(), gen_random_uuid()])$$,
                  $$VALUES (0::bigint, 'stale'), (-1::bigint, 'stale')$$,
                  'renew_job_leases of unknown job ids is stale for each, in input order');
SELECT is(durable_jobs.cancel_job(-1), false, 'cancel_job of a negative job id returns false');
SELECT is(durable_jobs.replay_job(0), false, 'replay_job of job id 0 returns false');
SELECT is_empty('SELECT * FROM durable_jobs.job_lifecycle_state(-1)',
                'job_lifecycle_state of a negative job id has zero rows');

-- The private identifier check refuses a kind it does not know ---------------

SELECT throws_ok($$SELECT durable_jobs.require_well_formed('no_such_kind', 'x')$$, 'XX000', NULL,
                 'require_well_formed raises XX000 for an unknown value kind (a bundle bug, never input)');

-- A caller's collation on an identifier is bad input, not 0A000 ------------

CREATE COLLATION t04a_case_blind (provider = icu, locale = 'und-u-ks-level2', deterministic = false);
SELECT throws_ok($$SELECT * FROM durable_jobs.claim_next_jobs('t04a.fenced' COLLATE t04a_case_blind, 'worker-t10', 1)$$,
                 'LF003', 'queue_name must not carry a collation',
                 'claim_next_jobs refuses a queue name with a nondeterministic collation with LF003');
SELECT throws_ok($$SELECT durable_jobs.require_well_formed('worker_owner_id', 'w1' COLLATE "en-x-icu")$$,
                 'LF003', 'worker_owner_id must not carry a collation',
                 'require_well_formed refuses any collation but default, C and POSIX');

-- ============================================================================
-- Limits of migration 004 (assigned number 005):
-- size limits on payloads and results, finite and plausible run-after
-- times, retry delays that are plain durations of 0 to 30 days.
-- ============================================================================

-- Sizes ---------------------------------------------------------------------------

SELECT throws_ok(
    $$SELECT durable_jobs.enqueue_job('t04b_size', jsonb_build_object('blob', repeat('x', 1048576)))$$,
    'LF003', 'job payload must be at most 1 MiB', 'a payload over 1 MiB is refused with LF003');
SELECT lives_ok(
    $$SELECT durable_jobs.enqueue_job('t04b_size', jsonb_build_object('blob', repeat('x', 1000000)))$$,
    'a payload just under 1 MiB is accepted');
SELECT throws_ok(
    $$SELECT durable_jobs.complete_job(0, gen_random_uuid(), 'worker-t12', jsonb_build_object('blob', repeat('x', 1048576)))$$,
    'LF003', 'result document must be at most 1 MiB',
    'a result document over 1 MiB is refused with LF003, before the claim is even looked at');

-- Run-after -----------------------------------------------------------------------

SELECT throws_ok(
    format($$SELECT durable_jobs.enqueue_job('t04b_when', '{}'::jsonb, NULL, %L::timestamptz)$$, w.run_after),
    'LF003', 'run-after must be a finite time from 2000-01-01 to before 2100-01-01 UTC', w.why)
FROM (VALUES ('-infinity', 'a run-after of -infinity is refused'),
             ('infinity', 'a run-after of infinity is refused'),
             ('0044-03-15 00:00:00+00 BC', 'a run-after in 44 BC is refused'),
             ('1999-12-31 23:59:59+00', 'a run-after before 2000 is refused'),
             ('2100-01-01 00:00:00+00', 'a run-after in 2100 is refused')) AS w(run_after, why);
SELECT lives_ok(
    $$SELECT durable_jobs.enqueue_job('t04b_when', '{}'::jsonb, NULL, timestamptz '2099-12-31 23:59:59+00')$$,
    'a run-after late in 2099 is accepted');

-- Retry delay ---------------------------------------------------------------------

SELECT throws_ok(
    format($$SELECT durable_jobs.retry_job(0, gen_random_uuid(), 'worker-t12', %L::interval, 'target_unavailable')$$, d.delay),
    'LF003', 'retry delay must be a plain duration of 0 to 30 days', d.why)
FROM (VALUES ('1 month', 'a retry delay of one month is refused with LF003, before the claim is looked at'),
             ('1 day -1 second', 'a retry delay with mixed signs is refused'),
             ('721 hours', 'a retry delay over 30 days is refused')) AS d(delay, why);

SELECT * FROM finish();
ROLLBACK;
