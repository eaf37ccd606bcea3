-- 17_retention: set_queue_retention_policy (bounds, LF002 with nothing
-- changed, evidence), queue_retention_policies, purge_expired_job_data
-- (finished jobs only, batches, counts per queue and kind, evidence without
-- job ids, evidence never purged), erase_job_payload (refuses live jobs,
-- keeps the lifecycle row, evidence without the job id), and privileges;
-- then the reasons a retention change or an erasure may carry (migration
-- 014): nothing that looks like personal data or a secret.
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
SELECT plan(97);
\ir fixture/fixture.sql

CREATE TEMP TABLE t17a_job (job_label text PRIMARY KEY, job_id bigint NOT NULL, claim_token uuid);
CREATE TEMP TABLE t17a_mark (mark_label text PRIMARY KEY, mark_value text NOT NULL);
GRANT ALL ON t17a_job, t17a_mark TO PUBLIC;

-- Everything a rejected retention change could have touched.
CREATE FUNCTION pg_temp.t17a_policy_state()
RETURNS text LANGUAGE sql AS $$
    SELECT coalesce(string_agg(row(p.*)::text, ';' ORDER BY p.queue_name), '')
        || ' evidence=' || (SELECT count(*) FROM durable_jobs.control_evidence_record)
    FROM durable_jobs.queue_retention_policy p;
$$;

-- Enqueue one job on p_queue, finish it as p_status (or leave it QUEUED,
-- RUNNING or RETRY_SCHEDULED), with a result document when it succeeds, and
-- age it by p_age.
CREATE FUNCTION pg_temp.t17a_job(p_label text, p_queue text, p_status text, p_age interval)
RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    v_id bigint;
    v_token uuid;
BEGIN
    IF p_status = 'QUEUED' THEN
        v_id := durable_jobs.enqueue_job(p_queue, jsonb_build_object('subject', 'alice-' || p_label));
    ELSE
        v_id := pg_temp.enqueue_and_claim(p_label, p_queue, 'worker-t13', 5,
                                          jsonb_build_object('subject', 'alice-' || p_label));
        SELECT c.lease_claim_token INTO STRICT v_token FROM claims c WHERE c.label = p_label;
        IF p_status = 'SUCCEEDED' THEN
            PERFORM durable_jobs.complete_job(v_id, v_token, 'worker-t13',
                                              jsonb_build_object('result', 'alice-' || p_label));
        ELSIF p_status = 'FAILED' THEN
            PERFORM durable_jobs.fail_job(v_id, v_token, 'worker-t13', 'boom');
        ELSIF p_status = 'RETRY_SCHEDULED' THEN
            PERFORM durable_jobs.retry_job(v_id, v_token, 'worker-t13', interval '1 hour', 'later');
        ELSIF p_status = 'CANCELLED' THEN
            PERFORM durable_jobs.cancel_job(v_id);
        END IF;
    END IF;
    UPDATE durable_jobs.job_record SET status_changed_at = clock_timestamp() - p_age WHERE job_record_id = v_id;
    INSERT INTO t17a_job VALUES (p_label, v_id, v_token);
    RETURN v_id;
END $$;

CREATE FUNCTION pg_temp.t17a_has_payload(p_label text)
RETURNS boolean LANGUAGE sql AS $$
    SELECT EXISTS (SELECT 1 FROM durable_jobs.job_payload_record p JOIN t17a_job t ON t.job_id = p.job_record_id
                   WHERE t.job_label = p_label);
$$;
CREATE FUNCTION pg_temp.t17a_has_row(p_label text)
RETURNS boolean LANGUAGE sql AS $$
    SELECT EXISTS (SELECT 1 FROM durable_jobs.job_record j JOIN t17a_job t ON t.job_id = j.job_record_id
                   WHERE t.job_label = p_label);
$$;

-- The bundle's default --------------------------------------------------------

SET LOCAL ROLE durable_job_operator;
SELECT results_eq(
    $$SELECT queue_name, payload_retention, record_retention FROM durable_jobs.queue_retention_policies()$$,
    $$VALUES ('*'::text, interval '30 days', interval '365 days')$$,
    'the bundle installs the default retention policy: payload 30 days, row and ledger 365 days');
RESET ROLE;

-- Accepted boundaries and evidence ---------------------------------------------

SET LOCAL ROLE durable_job_operator;
SELECT lives_ok($$SELECT durable_jobs.set_queue_retention_policy('t17a.lower', interval '1 hour', interval '1 hour', 'DSR-1 lower bounds')$$,
                'a retention policy at the lower bounds is accepted (1 hour, record = payload)');
SELECT lives_ok($$SELECT durable_jobs.set_queue_retention_policy('t17a.upper', interval '3650 days', interval '3650 days', repeat('r', 500))$$,
                'a retention policy at the upper bounds is accepted (3650 days, a 500-character reason)');
SELECT lives_ok($$SELECT durable_jobs.set_queue_retention_policy('t17a.upper', interval '2 days', interval '10 days', 'CHG-13 shorter')$$,
                'a queue''s retention policy can be replaced');
RESET ROLE;
SELECT results_eq(
    $$SELECT queue_name, payload_retention, record_retention, changed_by_role
      FROM durable_jobs.queue_retention_policies() WHERE queue_name LIKE 't17a.%'$$,
    $$VALUES ('t17a.lower'::text, interval '1 hour', interval '1 hour', (session_user::text COLLATE "default")),
             ('t17a.upper', interval '2 days', interval '10 days', (session_user::text COLLATE "default"))$$,
    'queue_retention_policies lists each queue''s policy once, with the role that changed it');
SELECT results_eq(
    $$SELECT evidence_kind, queue_name, previous_values, new_values, change_reason
      FROM durable_jobs.control_evidence_record WHERE queue_name = 't17a.upper' ORDER BY evidence_record_id$$,
    $$VALUES ('retention_policy_changed'::text, 't17a.upper'::text,
              '{"policy_queue_name": "*", "payload_retention": "30 days", "record_retention": "365 days"}'::jsonb,
              '{"policy_queue_name": "t17a.upper", "payload_retention": "87600:00:00", "record_retention": "87600:00:00"}'::jsonb,
              repeat('r', 500)),
             ('retention_policy_changed', 't17a.upper',
              '{"policy_queue_name": "t17a.upper", "payload_retention": "87600:00:00", "record_retention": "87600:00:00"}',
              '{"policy_queue_name": "t17a.upper", "payload_retention": "48:00:00", "record_retention": "240:00:00"}',
              'CHG-13 shorter')$$,
    'each accepted change appends retention_policy_changed evidence with the old (or default) and new values and the reason (since migration 024 as plain durations: 3650 days are 87600:00:00)');

-- Rejected values: LF002 and nothing changed ------------------------------------

INSERT INTO t17a_mark VALUES ('policy_state', pg_temp.t17a_policy_state());
SELECT throws_ok(
    format('SELECT durable_jobs.set_queue_retention_policy(%L, %L::interval, %L::interval, %L)', q, pr, rr, r),
    'LF002', NULL, 'set_queue_retention_policy rejects ' || what || ' with LF002')
FROM (VALUES
    ('t17a.upper', '59 minutes', '10 days', 'r', 'a payload retention under 1 hour'),
    ('t17a.upper', '-1 day', '10 days', 'r', 'a negative payload retention'),
    ('t17a.upper', '2 days', '1 day', 'r', 'a record retention shorter than the payload retention'),
    ('t17a.upper', '2 days', '3651 days', 'r', 'a record retention over 3650 days'),
    ('t17a.upper', NULL, '10 days', 'r', 'a NULL payload retention'),
    ('t17a.upper', '2 days', NULL, 'r', 'a NULL record retention'),
    ('t17a.upper', '2 days', '10 days', NULL, 'a NULL reason'),
    ('t17a.upper', '2 days', '10 days', '', 'an empty reason'),
    ('t17a.upper', '2 days', '10 days', E' \t ', 'a blank reason'),
    ('t17a.upper', '2 days', '10 days', repeat('r', 501), 'a reason over 500 characters'),
    ('t17a.upper', '2 days', '10 days', E'line one\nline two', 'a reason with a newline'),
    ('t17a.upper', '2 days', '10 days', E'ticket\u001b[31m', 'a reason with an escape character'),
    ('T13.upper', '2 days', '10 days', 'r', 'an uppercase queue name'),
    (NULL, '2 days', '10 days', 'r', 'a NULL queue name'),
    ('*', '2 days', '1 day', 'r', 'an invalid default policy')) AS bad(q, pr, rr, r, what);
SELECT is(pg_temp.t17a_policy_state(), (SELECT mark_value FROM t17a_mark WHERE mark_label = 'policy_state'),
          'rejected retention changes leave every policy row and the evidence count as they were');
SELECT throws_like($$SELECT durable_jobs.set_queue_retention_policy('t17a.upper', '2 days', '10 days', E'a\nb')$$,
                   'invalid change reason', 'the refusal of a reason says what is wrong, not the reason');

-- Purge: fixtures ---------------------------------------------------------------

DO $$ BEGIN
    PERFORM durable_jobs.set_queue_retention_policy('t17a.live', interval '1 hour', interval '1 hour', 't13 keep little');
    -- Live jobs, aged far past every retention: never touched.
    PERFORM pg_temp.t17a_job('queued', 't17a.live', 'QUEUED', interval '400 days');
    PERFORM pg_temp.t17a_job('running', 't17a.live.r', 'RUNNING', interval '400 days');
    PERFORM pg_temp.t17a_job('retry', 't17a.live.s', 'RETRY_SCHEDULED', interval '400 days');
    -- The default '*' (30 days payload, 365 days row) applies to t17a.def.
    PERFORM pg_temp.t17a_job('def_new', 't17a.def', 'SUCCEEDED', interval '29 days');
    PERFORM pg_temp.t17a_job('def_payload', 't17a.def', 'SUCCEEDED', interval '31 days');
    PERFORM pg_temp.t17a_job('def_payload2', 't17a.def', 'FAILED', interval '40 days');
    PERFORM pg_temp.t17a_job('def_row', 't17a.def', 'CANCELLED', interval '366 days');
    -- t17a.upper: 2 days payload, 10 days row.
    PERFORM pg_temp.t17a_job('up_row', 't17a.upper', 'FAILED', interval '11 days');
    PERFORM pg_temp.t17a_job('up_row2', 't17a.upper', 'SUCCEEDED', interval '12 days');
END $$;
INSERT INTO t17a_mark SELECT 'evidence_before_purge', count(*)::text FROM durable_jobs.control_evidence_record;

-- Purge: bad input and privileges -----------------------------------------------

SET LOCAL ROLE durable_job_operator;
SELECT throws_ok(format('SELECT * FROM durable_jobs.purge_expired_job_data(%s::integer)', coalesce(n::text, 'NULL')), 'LF003', NULL,
                 'purge_expired_job_data rejects a batch size of ' || coalesce(n::text, 'NULL') || ' with LF003')
FROM (VALUES (NULL::integer), (0), (-1), (10001)) AS bad(n);
RESET ROLE;
SET LOCAL ROLE durable_job_worker;
SELECT throws_ok('SELECT * FROM durable_jobs.purge_expired_job_data(10)', '42501', NULL, 'a worker cannot purge');
RESET ROLE;
SET LOCAL ROLE durable_job_auditor;
SELECT throws_ok('SELECT * FROM durable_jobs.purge_expired_job_data(10)', '42501', NULL, 'an auditor cannot purge');
RESET ROLE;
SELECT is((SELECT count(*) FROM durable_jobs.control_evidence_record)::text,
          (SELECT mark_value FROM t17a_mark WHERE mark_label = 'evidence_before_purge'),
          'a refused purge records nothing');

-- Purge: batches ----------------------------------------------------------------

SET LOCAL ROLE durable_job_operator;
-- Batch 1: the three oldest rows past their record retention fill the batch
-- (no room is left for payloads).
SELECT results_eq(
    $$SELECT queue_name, purge_kind, purged_count FROM durable_jobs.purge_expired_job_data(2) ORDER BY 1, 2$$,
    $$VALUES ('t17a.def'::text, 'job_record'::text, 1::bigint), ('t17a.upper', 'job_record', 1)$$,
    'a batch of 2 deletes the 2 oldest rows past their record retention and nothing else');
SELECT results_eq(
    $$SELECT queue_name, purge_kind, purged_count FROM durable_jobs.purge_expired_job_data(10) ORDER BY 1, 2$$,
    $$VALUES ('t17a.def'::text, 'payload'::text, 2::bigint), ('t17a.upper', 'job_record', 1)$$,
    'the next batch deletes the last expired row and, with the room left, the expired payloads');
SELECT is_empty($$SELECT * FROM durable_jobs.purge_expired_job_data(10)$$,
                'when everything due is purged, a batch returns no row');
RESET ROLE;

SELECT ok(NOT pg_temp.t17a_has_row('def_row') AND NOT pg_temp.t17a_has_row('up_row') AND NOT pg_temp.t17a_has_row('up_row2'),
          'jobs past their record retention are gone');
SELECT is((SELECT count(*) FROM durable_jobs.job_outcome_ledger l
           WHERE l.job_record_id IN (SELECT job_id FROM t17a_job WHERE job_label IN ('def_row', 'up_row', 'up_row2'))),
          0::bigint, 'their outcome ledger is gone with them');
SELECT is((SELECT count(*) FROM durable_jobs.job_payload_record p
           WHERE p.job_record_id IN (SELECT job_id FROM t17a_job WHERE job_label IN ('def_row', 'up_row', 'up_row2'))),
          0::bigint, 'and their payloads (no foreign key deletes them since migration 019: the purge does)');
SELECT is_empty($$SELECT p.job_record_id FROM durable_jobs.job_payload_record p
                  WHERE NOT EXISTS (SELECT FROM durable_jobs.job_record j WHERE j.job_record_id = p.job_record_id)
                  UNION ALL
                  SELECT l.job_record_id FROM durable_jobs.job_outcome_ledger l
                  WHERE NOT EXISTS (SELECT FROM durable_jobs.job_record j WHERE j.job_record_id = l.job_record_id)$$,
    'no payload or outcome row is left without its job');
SELECT ok(pg_temp.t17a_has_row('def_payload') AND NOT pg_temp.t17a_has_payload('def_payload')
          AND pg_temp.t17a_has_row('def_payload2') AND NOT pg_temp.t17a_has_payload('def_payload2'),
          'jobs past their payload retention keep their row and lose their payload');
SELECT is((SELECT count(*) FROM durable_jobs.job_outcome_ledger l JOIN t17a_job t ON t.job_id = l.job_record_id
           WHERE t.job_label = 'def_payload' AND l.result_document IS NULL), 1::bigint,
          'the outcome ledger of a payload-purged job stays, its result document cleared');
SELECT results_eq(
    $$SELECT s.job_status, s.failure_reason_code FROM t17a_job t, durable_jobs.job_lifecycle_state(t.job_id) s
      WHERE t.job_label = 'def_payload2'$$,
    $$VALUES ('FAILED'::text, 'boom'::text)$$,
    'a payload-purged job''s lifecycle state is unchanged');
SELECT ok(pg_temp.t17a_has_payload('def_new'), 'a finished job inside its payload retention keeps its payload');
SELECT is((SELECT count(*) FROM durable_jobs.job_outcome_ledger l JOIN t17a_job t ON t.job_id = l.job_record_id
           WHERE t.job_label = 'def_new' AND l.result_document IS NOT NULL), 1::bigint,
          'and its result document');
SELECT ok(pg_temp.t17a_has_payload(l) AND pg_temp.t17a_has_row(l), 'a ' || l || ' job is never purged, however old')
FROM unnest(ARRAY['queued', 'running', 'retry']) AS l;
SELECT results_eq(
    $$SELECT s.job_status, s.lease_renewal_count FROM t17a_job t, durable_jobs.job_lifecycle_state(t.job_id) s
      WHERE t.job_label = 'running'$$,
    $$VALUES ('RUNNING'::text, 0::bigint)$$,
    'a running job is still running after the purge');
SELECT is((SELECT r.renewal_outcome FROM t17a_job t, durable_jobs.renew_job_lease(t.job_id, t.claim_token, 'worker-t13') r
           WHERE t.job_label = 'running'), 'renewed', 'and its claim still renews');

-- Purge: evidence -------------------------------------------------------------

SELECT is((SELECT count(*) FROM durable_jobs.control_evidence_record)::integer,
          (SELECT mark_value::integer + 2 FROM t17a_mark WHERE mark_label = 'evidence_before_purge'),
          'each batch that purged something appended one evidence record, an empty batch none; evidence is never purged');
SELECT results_eq(
    $$SELECT new_values FROM durable_jobs.control_evidence_record WHERE evidence_kind = 'job_data_purged' ORDER BY evidence_record_id$$,
    $$VALUES ('{"batch_size": 2, "purged": [{"queue_name": "t17a.def", "purge_kind": "job_record", "purged_count": 1},
                                            {"queue_name": "t17a.upper", "purge_kind": "job_record", "purged_count": 1}]}'::jsonb),
             ('{"batch_size": 10, "purged": [{"queue_name": "t17a.upper", "purge_kind": "job_record", "purged_count": 1},
                                             {"queue_name": "t17a.def", "purge_kind": "payload", "purged_count": 2}]}')$$,
    'job_data_purged evidence holds the batch size and the counts per queue and kind, nothing else');

-- Erasure -----------------------------------------------------------------------

DO $$ BEGIN
    PERFORM pg_temp.t17a_job('erase_done', 't17a.erase', 'SUCCEEDED', interval '0');
    PERFORM pg_temp.t17a_job('erase_cancelled', 't17a.erase', 'CANCELLED', interval '0');
END $$;
SET LOCAL ROLE durable_job_operator;
SELECT throws_ok($$SELECT durable_jobs.erase_job_payload(NULL, 'DSR-7')$$, 'LF003', NULL,
                 'erase_job_payload rejects a NULL job id with LF003');
SELECT throws_ok(format('SELECT durable_jobs.erase_job_payload(%s, %L)', job_id, r), 'LF003', NULL,
                 'erase_job_payload rejects ' || what || ' with LF003')
FROM t17a_job, (VALUES (NULL, 'a NULL reason'), ('  ', 'a blank reason'), (repeat('r', 501), 'a reason over 500 characters'),
                      (E'DSR\t7', 'a reason with a tab')) AS bad(r, what)
WHERE job_label = 'erase_done';
SELECT throws_ok(format('SELECT durable_jobs.erase_job_payload(%s, ''DSR-7'')', job_id), 'LF003',
                 'job is not finished: its payload cannot be erased', 'erase_job_payload refuses a ' || job_label || ' job with LF003')
FROM t17a_job WHERE job_label IN ('queued', 'running', 'retry') ORDER BY job_label;
SELECT is(durable_jobs.erase_job_payload(0, 'DSR-7'), false, 'erasing an unknown job returns false');
SELECT is(durable_jobs.erase_job_payload(job_id, 'DSR-7 erasure request'), true, 'erasing a finished job returns true')
FROM t17a_job WHERE job_label = 'erase_done';
SELECT is(durable_jobs.erase_job_payload(job_id, 'DSR-7 erasure request'), false, 'erasing it again returns false')
FROM t17a_job WHERE job_label = 'erase_done';
SELECT is(durable_jobs.erase_job_payload(job_id, 'DSR-8'), true, 'a cancelled job can be erased')
FROM t17a_job WHERE job_label = 'erase_cancelled';
RESET ROLE;
SELECT ok(pg_temp.t17a_has_payload(l) AND pg_temp.t17a_has_row(l), 'the refused erasure left the ' || l || ' job as it was')
FROM unnest(ARRAY['queued', 'running', 'retry']) AS l;
SELECT ok(pg_temp.t17a_has_row('erase_done') AND NOT pg_temp.t17a_has_payload('erase_done'),
          'an erased job keeps its row and has no payload');
SELECT is((SELECT count(*) FROM durable_jobs.job_outcome_ledger l JOIN t17a_job t ON t.job_id = l.job_record_id
           WHERE t.job_label = 'erase_done' AND l.result_document IS NULL), 1::bigint,
          'an erased job''s outcome ledger row stays, its result document cleared');
SELECT results_eq(
    $$SELECT s.job_status FROM t17a_job t, durable_jobs.job_lifecycle_state(t.job_id) s WHERE t.job_label = 'erase_done'$$,
    $$VALUES ('SUCCEEDED'::text)$$, 'an erased job''s lifecycle state is unchanged');
SELECT results_eq(
    $$SELECT evidence_kind, queue_name, previous_values, new_values, change_reason, changed_by_role
      FROM durable_jobs.control_evidence_record WHERE evidence_kind = 'job_payload_erased' ORDER BY evidence_record_id$$,
    $$VALUES ('job_payload_erased'::text, 't17a.erase'::text, NULL::jsonb,
              '{"job_status": "SUCCEEDED", "payload_erased": true, "result_documents_cleared": true}'::jsonb,
              'DSR-7 erasure request'::text, (session_user::text COLLATE "default")),
             ('job_payload_erased', 't17a.erase', NULL,
              '{"job_status": "CANCELLED", "payload_erased": true, "result_documents_cleared": true}', 'DSR-8',
              (session_user::text COLLATE "default"))$$,
    'each erasure appends job_payload_erased evidence with the queue, status, reason and role; a repeat appends nothing');
SELECT is_empty(
    $$SELECT 1 FROM durable_jobs.control_evidence_record e
      WHERE e.evidence_kind IN ('job_data_purged', 'job_payload_erased')
        AND (e.new_values ?| ARRAY['job_record_id', 'job_id'] OR e.new_values::text LIKE '%alice%')$$,
    'no purge or erasure evidence holds a job id key or any payload or result text');
SET LOCAL ROLE durable_job_producer;
SELECT throws_ok($$SELECT durable_jobs.erase_job_payload(1, 'r')$$, '42501', NULL, 'a producer cannot erase payloads');
RESET ROLE;
SET LOCAL ROLE durable_job_auditor;
SELECT throws_ok($$SELECT * FROM durable_jobs.queue_retention_policies()$$, '42501', NULL,
                 'retention policies are for operators');
RESET ROLE;
SET LOCAL ROLE durable_job_worker;
SELECT throws_ok($$SELECT durable_jobs.set_queue_retention_policy('t17a.x', '1 day', '2 days', 'r')$$, '42501', NULL,
                 'a worker cannot set a retention policy');
RESET ROLE;

-- Privileges of the family's owner ------------------------------------------------

SELECT ok((SELECT NOT rolsuper AND NOT rolbypassrls AND NOT rolcreaterole AND NOT rolcreatedb AND NOT rolcanlogin
           FROM pg_roles WHERE rolname = 'durable_job_retention_owner'),
          'the retention owner is NOLOGIN and holds no elevated attribute');
SELECT ok(NOT has_column_privilege('durable_job_retention_owner', 'durable_jobs.job_payload_record', 'job_payload', 'SELECT'),
          'the retention owner cannot read payloads');
SELECT ok(NOT has_column_privilege('durable_job_retention_owner', 'durable_jobs.job_outcome_ledger', 'result_document', 'SELECT'),
          'the retention owner cannot read result documents');
SELECT ok(NOT has_table_privilege('durable_job_retention_owner', 'durable_jobs.control_evidence_record', 'DELETE')
          AND NOT has_any_column_privilege('durable_job_retention_owner', 'durable_jobs.control_evidence_record', 'UPDATE'),
          'the retention owner can neither delete nor update control evidence');
SELECT is(ARRAY(SELECT p.oid::regprocedure::text FROM pg_proc p
                WHERE p.proowner = 'durable_job_retention_owner'::regrole ORDER BY 1),
          ARRAY['durable_jobs.erase_job_payload(bigint,text)', 'durable_jobs.erase_job_payload(bigint,text,text,text)',
                'durable_jobs.purge_expired_job_data(integer)', 'durable_jobs.queue_retention_policies()',
                'durable_jobs.record_job_action(bigint,text,text,text,text,text,text,text)',
                'durable_jobs.record_retention_policy_change()', 'durable_jobs.require_valid_change_reason(text,text)',
                'durable_jobs.set_queue_retention_policy(text,interval,interval,text)',
                'durable_jobs.set_queue_retention_policy(text,interval,interval,text,text,text)'],
          'the retention owner owns exactly the family''s functions (since migration 026 also the overloads with ticket and approver, the retention table''s evidence trigger and the job action trail''s writer)');
SELECT is(ARRAY(SELECT p.oid::regprocedure::text FROM pg_proc p
                WHERE p.proowner = 'durable_job_retention_owner'::regrole
                  AND has_function_privilege('durable_job_operator', p.oid, 'EXECUTE') ORDER BY 1),
          ARRAY['durable_jobs.erase_job_payload(bigint,text)', 'durable_jobs.erase_job_payload(bigint,text,text,text)',
                'durable_jobs.purge_expired_job_data(integer)', 'durable_jobs.queue_retention_policies()',
                'durable_jobs.set_queue_retention_policy(text,interval,interval,text)',
                'durable_jobs.set_queue_retention_policy(text,interval,interval,text,text,text)'],
          'operators execute the family''s public functions, not its private helpers (the reason check, the evidence trigger, the action trail''s writer)');
SELECT is_empty(
    $$SELECT p.oid::regprocedure::text FROM pg_proc p
      WHERE p.proowner = 'durable_job_retention_owner'::regrole
        AND (has_function_privilege('durable_job_worker', p.oid, 'EXECUTE')
             OR has_function_privilege('durable_job_auditor', p.oid, 'EXECUTE')
             OR has_function_privilege('durable_job_producer', p.oid, 'EXECUTE'))$$,
    'no worker, auditor or producer executes a retention function');
SELECT is_empty(
    $$SELECT p.oid::regprocedure::text FROM pg_proc p
      WHERE p.proowner = 'durable_job_retention_owner'::regrole
        AND (p.prosecdef IS DISTINCT FROM (p.proname <> 'require_valid_change_reason')
             OR p.proconfig IS DISTINCT FROM CASE p.oid::regprocedure::text
                 WHEN 'durable_jobs.set_queue_retention_policy(text,interval,interval,text,text,text)'
                 THEN ARRAY['search_path=pg_catalog, pg_temp', 'IntervalStyle=postgres', 'DateStyle=ISO, MDY',
                            'TimeZone=UTC', 'extra_float_digits=1']
                 WHEN 'durable_jobs.record_retention_policy_change()'
                 THEN ARRAY['search_path=pg_catalog, pg_temp', 'lock_timeout=10s', 'IntervalStyle=postgres',
                            'DateStyle=ISO, MDY', 'TimeZone=UTC', 'extra_float_digits=1']
                 ELSE ARRAY['search_path=pg_catalog, pg_temp'] END)$$,
    'every retention function but the reason check is SECURITY DEFINER and every one pins search_path (and, migration 024, set_queue_retention_policy the settings its evidence is rendered under; since migration 026 the evidence is written by the table''s trigger, which pins them and bounds its wait for the evidence-order lock, and the four-argument overload is a SQL wrapper of the six-argument one)');

-- ============================================================================
-- Reasons (migration 014, functions/retention.sql): a retention policy
-- change or a payload erasure whose reason looks like personal data or a
-- secret is refused with LF002 (require_structured_change, as for a lease
-- policy change), naming the rule and never the reason, and changes
-- nothing: no policy row, no evidence, no erased payload. A plain reason
-- with a ticket reference is still accepted.
-- ============================================================================

CREATE TEMP TABLE t17b_job (job_id bigint NOT NULL);
GRANT ALL ON t17b_job TO PUBLIC;
DO $$
DECLARE
    v_id bigint := pg_temp.enqueue_and_claim('erase', 't17b.erase', 'worker-t22', 5, '{"subject": "t22"}'::jsonb);
    v_token uuid;
BEGIN
    SELECT c.lease_claim_token INTO STRICT v_token FROM claims c WHERE c.label = 'erase';
    PERFORM durable_jobs.complete_job(v_id, v_token, 'worker-t22', '{"result": "t22"}'::jsonb);
    INSERT INTO t17b_job VALUES (v_id);
END $$;

CREATE FUNCTION pg_temp.t17b_state()
RETURNS text LANGUAGE sql AS $$
    SELECT coalesce(string_agg(row(p.*)::text, ';' ORDER BY p.queue_name), '')
        || ' evidence=' || (SELECT count(*) FROM durable_jobs.control_evidence_record)
        || ' payloads=' || (SELECT count(*) FROM durable_jobs.job_payload_record pr JOIN t17b_job t ON t.job_id = pr.job_record_id)
    FROM durable_jobs.queue_retention_policy p;
$$;
CREATE TEMP TABLE t17b_mark (mark_value text NOT NULL);
GRANT ALL ON t17b_mark TO PUBLIC;
INSERT INTO t17b_mark VALUES (pg_temp.t17b_state());

CREATE TEMP TABLE t17b_reason (reason text NOT NULL, what text NOT NULL);
GRANT ALL ON t17b_reason TO PUBLIC;
INSERT INTO t17b_reason VALUES
    ('INC-77 customer RRN 900101-1234567', 'a resident registration number'),
    ('INC-77 card 4111 1111 1111 1111', 'a card number that passes the Luhn check'),
    ('INC-77 ask kim@example.com', 'an e-mail address'),
    ('INC-77 call 010-1234-5678', 'a phone number'),
    ('INC-77 pw=hunter2', 'a credential'),
    ('INC-77 secret: s3cr3t', 'a secret'),
    (E'INC-77 \u202Ereversed', 'a bidirectional-control character');

SET LOCAL ROLE durable_job_operator;
SELECT throws_ok(format('SELECT durable_jobs.set_queue_retention_policy(%L, %L::interval, %L::interval, %L)',
                        't17b.policy', '2 days', '10 days', r.reason),
                 'LF002', 'invalid change record', 'set_queue_retention_policy refuses a reason with ' || r.what || ' with LF002')
FROM t17b_reason r ORDER BY r.what;
SELECT throws_ok(format('SELECT durable_jobs.erase_job_payload(%s, %L)', t.job_id, r.reason),
                 'LF002', 'invalid change record', 'erase_job_payload refuses a reason with ' || r.what || ' with LF002')
FROM t17b_job t, t17b_reason r ORDER BY r.what;
RESET ROLE;
SELECT is(pg_temp.t17b_state(), (SELECT mark_value FROM t17b_mark),
          'the refused changes left the retention policies, the evidence and the payload as they were');

SET LOCAL ROLE durable_job_operator;
SELECT lives_ok($$SELECT durable_jobs.set_queue_retention_policy('t17b.policy', '2 days', '10 days', 'CHG-22 shorter retention')$$,
                'a plain reason with a ticket reference is still accepted for a retention change');
SELECT is(durable_jobs.erase_job_payload(t.job_id, 'DSR-22 erasure request'), true,
          'a plain reason with a ticket reference is still accepted for an erasure')
FROM t17b_job t;
RESET ROLE;

SELECT * FROM finish();
ROLLBACK;
