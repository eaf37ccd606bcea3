-- 13_job_admin: the operator's payload-blind job views, operator_list_jobs
-- and operator_job_detail (functions/job_admin.sql). Lists are newest first
-- and keyset-paginated, filter by queue and status, return lifecycle
-- columns only, refuse bad input with LF003 and are executable by
-- durable_job_operator alone.
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
SELECT plan(35);

-- Fixtures -------------------------------------------------------------------

CREATE TEMP TABLE t13_job (job_label text PRIMARY KEY, job_id bigint NOT NULL);
GRANT SELECT ON t13_job TO PUBLIC;

DO $$
DECLARE
    v_claim record;
BEGIN
    -- t13.a: a1 queued, a2 running and renewed once, a3 failed; t13.b: b1, b2 queued.
    INSERT INTO t13_job VALUES
        ('a1', durable_jobs.enqueue_job('t13.a', '{"customer_email": "pat.t14@example.com"}', 'idem-t13-secret-a1')),
        ('a2', durable_jobs.enqueue_job('t13.a', '{"customer_email": "pat.t14@example.com"}')),
        ('b1', durable_jobs.enqueue_job('t13.b', '{"customer_email": "pat.t14@example.com"}')),
        ('a3', durable_jobs.enqueue_job('t13.a', '{"customer_email": "pat.t14@example.com"}')),
        ('b2', durable_jobs.enqueue_job('t13.b', '{"customer_email": "pat.t14@example.com"}'));
    -- Claim a1 and fail it, then claim a2 and renew it.
    SELECT * INTO v_claim FROM durable_jobs.claim_next_job('t13.a', 'worker-t14');
    PERFORM durable_jobs.fail_job(v_claim.job_record_id, v_claim.lease_claim_token, 'worker-t14', 'bad_payload');
    UPDATE t13_job SET job_label = 'failed' WHERE job_id = v_claim.job_record_id;
    SELECT * INTO v_claim FROM durable_jobs.claim_next_job('t13.a', 'worker-t14');
    PERFORM durable_jobs.renew_job_lease(v_claim.job_record_id, v_claim.lease_claim_token, 'worker-t14');
    UPDATE t13_job SET job_label = 'running' WHERE job_id = v_claim.job_record_id;
END $$;

CREATE FUNCTION pg_temp.t13_id(p_job_label text) RETURNS bigint LANGUAGE sql STABLE AS $$
    SELECT job_id FROM t13_job WHERE job_label = p_job_label;
$$;

SET LOCAL ROLE durable_job_operator;

-- Listing --------------------------------------------------------------------

SELECT results_eq($$SELECT job_record_id FROM durable_jobs.operator_list_jobs()$$,
    $$SELECT job_id FROM t13_job ORDER BY job_id DESC$$,
    'with no filter an operator sees every job, newest first');
SELECT results_eq($$SELECT job_record_id FROM durable_jobs.operator_list_jobs('t13.b')$$,
    $$SELECT job_id FROM t13_job WHERE job_label IN ('b1', 'b2') ORDER BY job_id DESC$$,
    'a queue filter lists only that queue''s jobs, newest first');
SELECT results_eq($$SELECT job_record_id FROM durable_jobs.operator_list_jobs('t13.a', 'QUEUED')$$,
    $$SELECT job_id FROM t13_job WHERE job_label = 'a3'$$,
    'queue and status filters combine');
SELECT results_eq($$SELECT job_record_id FROM durable_jobs.operator_list_jobs(NULL, 'FAILED')$$,
    $$SELECT job_id FROM t13_job WHERE job_label = 'failed'$$,
    'a status filter alone lists that status across queues');
SELECT results_eq($$SELECT job_record_id FROM durable_jobs.operator_list_jobs(NULL, NULL, NULL, 2)$$,
    $$SELECT job_id FROM t13_job ORDER BY job_id DESC LIMIT 2$$,
    'p_max_jobs bounds the page to the newest jobs');
SELECT results_eq(
    format('SELECT job_record_id FROM durable_jobs.operator_list_jobs(NULL, NULL, %s, 2)',
           (SELECT min(job_record_id) FROM durable_jobs.operator_list_jobs(NULL, NULL, NULL, 2))),
    $$SELECT job_id FROM t13_job ORDER BY job_id DESC OFFSET 2 LIMIT 2$$,
    'passing the last id of a page as p_after_job_record_id gives the next page');
SELECT is_empty(
    format('SELECT 1 FROM durable_jobs.operator_list_jobs(NULL, NULL, %s)', (SELECT min(job_id) FROM t13_job)),
    'after the oldest job the next page is empty');
SELECT is_empty($$SELECT 1 FROM durable_jobs.operator_list_jobs('t13.nothing')$$,
    'a well-formed queue without jobs lists nothing');

-- One job --------------------------------------------------------------------

SELECT results_eq(
    format($$SELECT queue_name, job_status, attempt_number, max_attempts, lease_fencing_generation,
                    lease_expires_at IS NOT NULL, lease_renewal_count, failure_reason_code,
                    created_at <= status_changed_at
             FROM durable_jobs.operator_job_detail(%s)$$, pg_temp.t13_id('running')),
    $$VALUES ('t13.a', 'RUNNING', 1, 5, 1::bigint, true, 1::bigint, NULL::text, true)$$,
    'operator_job_detail shows a running job''s status, attempts, generation, lease expiry, renewal count and times');
SELECT results_eq(
    format($$SELECT job_status, failure_reason_code, lease_expires_at FROM durable_jobs.operator_job_detail(%s)$$,
           pg_temp.t13_id('failed')),
    $$VALUES ('FAILED', 'bad_payload'::text, NULL::timestamptz)$$,
    'operator_job_detail shows a failed job''s reason code');
SELECT results_eq(
    format('SELECT * FROM durable_jobs.operator_job_detail(%s)', pg_temp.t13_id('running')),
    format('SELECT * FROM durable_jobs.operator_list_jobs(NULL, NULL, %s, 1)', pg_temp.t13_id('running') + 1),
    'a job''s detail row equals its row in the list');
SELECT is_empty($$SELECT 1 FROM durable_jobs.operator_job_detail(0)$$, 'job id 0 is unknown: zero rows');
SELECT is_empty($$SELECT 1 FROM durable_jobs.operator_job_detail(-7)$$, 'a negative job id is unknown: zero rows');
SELECT is_empty($$SELECT 1 FROM durable_jobs.operator_job_detail(9223372036854775807)$$,
    'an id never issued is unknown: zero rows');

-- Payload-blind --------------------------------------------------------------

SELECT doesnt_match(pg_get_function_result(f),
    '(payload|token|digest|owner|role|idempotency)',
    f::text || ' returns no payload, token, digest, owner, role or idempotency column')
FROM unnest(ARRAY['durable_jobs.operator_list_jobs(text,text,bigint,integer)'::regprocedure,
                  'durable_jobs.operator_job_detail(bigint)'::regprocedure]) AS f;
SELECT is_empty(
    $$SELECT 1 FROM durable_jobs.operator_list_jobs() l
      WHERE row_to_json(l)::text ~ '(pat\.t14@example\.com|idem-t13-secret|worker-t14)'$$,
    'no listed row carries the payload, the idempotency key or the owner id');
RESET ROLE;
SELECT ok(NOT has_column_privilege('durable_job_audit_owner', 'durable_jobs.job_record', c, 'SELECT'),
          'the owner of the operator views cannot read job_record.' || c)
FROM unnest(ARRAY['lease_claim_digest', 'lease_owner_id', 'idempotency_key_digest']) AS c;
SELECT ok(NOT has_any_column_privilege('durable_job_audit_owner', 'durable_jobs.job_payload_record', 'SELECT'),
          'the owner of the operator views cannot read job_payload_record');

-- Bad input: LF003 -----------------------------------------------------------

SET LOCAL ROLE durable_job_operator;
SELECT throws_ok($$SELECT * FROM durable_jobs.operator_job_detail(NULL)$$, 'LF003', NULL,
    'operator_job_detail refuses a NULL id with LF003');
SELECT throws_ok($$SELECT * FROM durable_jobs.operator_list_jobs('Bad Queue')$$, 'LF003', NULL,
    'operator_list_jobs refuses a malformed queue name with LF003');
SELECT throws_ok($$SELECT * FROM durable_jobs.operator_list_jobs(NULL, 'running')$$, 'LF003', NULL,
    'operator_list_jobs refuses a status that is not a job_status_kind (they are upper case) with LF003');
SELECT throws_ok($$SELECT * FROM durable_jobs.operator_list_jobs(NULL, NULL, NULL, 0)$$, 'LF003', NULL,
    'operator_list_jobs refuses a page of 0 jobs with LF003');
SELECT throws_ok($$SELECT * FROM durable_jobs.operator_list_jobs(NULL, NULL, NULL, 1001)$$, 'LF003', NULL,
    'operator_list_jobs refuses a page of more than 1000 jobs with LF003');
SELECT throws_ok($$SELECT * FROM durable_jobs.operator_list_jobs(NULL, NULL, NULL, NULL)$$, 'LF003', NULL,
    'operator_list_jobs refuses an explicit NULL page size with LF003');

-- Cancel and replay: the producer family's functions, which operators hold ---

SELECT is(durable_jobs.cancel_job(pg_temp.t13_id('a3')), true, 'an operator can cancel a queued job');
SELECT is(durable_jobs.replay_job(pg_temp.t13_id('a3')), true, 'an operator can replay the cancelled job');
SELECT is((SELECT job_status FROM durable_jobs.operator_job_detail(pg_temp.t13_id('a3'))), 'QUEUED',
    'the replayed job is QUEUED again');
RESET ROLE;

-- Refused to every other runtime role ----------------------------------------

SET LOCAL ROLE durable_job_worker;
SELECT throws_ok($$SELECT * FROM durable_jobs.operator_list_jobs()$$, '42501', NULL, 'a worker cannot list jobs');
SELECT throws_ok($$SELECT * FROM durable_jobs.operator_job_detail(1)$$, '42501', NULL, 'a worker cannot show a job');
RESET ROLE;
SET LOCAL ROLE durable_job_producer;
SELECT throws_ok($$SELECT * FROM durable_jobs.operator_list_jobs()$$, '42501', NULL, 'a producer cannot list jobs');
SELECT throws_ok($$SELECT * FROM durable_jobs.operator_job_detail(1)$$, '42501', NULL, 'a producer cannot show a job');
RESET ROLE;
SET LOCAL ROLE durable_job_auditor;
SELECT throws_ok($$SELECT * FROM durable_jobs.operator_list_jobs()$$, '42501', NULL, 'an auditor cannot list jobs');
RESET ROLE;

SELECT * FROM finish();
ROLLBACK;
