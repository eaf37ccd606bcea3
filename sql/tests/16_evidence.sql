-- 16_evidence: the append-only control evidence. Every accepted policy
-- change appends lease_policy_changed (old and new values, reason,
-- session_user, database time), an enablement flip also appends
-- renewal_enablement_changed, a rejected change appends nothing; nobody, the
-- superuser owner included, can update, delete or truncate it (LF004); no
-- runtime role can write it (42501); and neither the evidence nor the outcome
-- tallies ever hold a payload, token, owner id or idempotency key.
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
SELECT plan(72);

-- Fixtures -------------------------------------------------------------------

CREATE TEMP TABLE t09_mark (mark_label text PRIMARY KEY, mark_time timestamptz, mark_count bigint, mark_last_id bigint);
CREATE TEMP TABLE t09_secret (secret_label text PRIMARY KEY, secret_value text NOT NULL);
GRANT ALL ON t09_mark, t09_secret TO PUBLIC;

-- Mark the clock and the evidence count before or after a change.
CREATE FUNCTION pg_temp.t09_mark(p_mark_label text)
RETURNS void LANGUAGE sql AS $$
    INSERT INTO t09_mark SELECT p_mark_label, clock_timestamp(), count(*), max(evidence_record_id)
    FROM durable_jobs.control_evidence_record;
$$;

-- The evidence records appended since a mark, oldest first.
CREATE FUNCTION pg_temp.t09_since(p_mark_label text)
RETURNS SETOF durable_jobs.control_evidence_record LANGUAGE sql AS $$
    SELECT e.* FROM durable_jobs.control_evidence_record e
    WHERE e.evidence_record_id > (SELECT mark_last_id FROM t09_mark WHERE mark_label = p_mark_label)
    ORDER BY e.evidence_record_id;
$$;

CREATE FUNCTION pg_temp.t09_added(p_mark_label text)
RETURNS bigint LANGUAGE sql AS $$
    SELECT count(*) - (SELECT mark_count FROM t09_mark WHERE mark_label = p_mark_label)
    FROM durable_jobs.control_evidence_record;
$$;

-- The operator login that makes one of the changes below.
CREATE ROLE t09_operator_login LOGIN IN ROLE durable_job_operator;

-- Policy changes append lease_policy_changed -------------------------------

DO $$ BEGIN
    PERFORM pg_temp.t09_mark('first');
    PERFORM durable_jobs.set_queue_lease_policy('t09.evidence', interval '2 seconds', interval '500 milliseconds',
                                                interval '1 hour', true, 'ticket OPS-1: shorter leases');
    PERFORM pg_temp.t09_mark('first_done');
END $$;
SELECT is(pg_temp.t09_added('first'), 1::bigint,
          'a policy change that keeps renewal enabled appends exactly one evidence record');
SELECT results_eq(
    $$SELECT evidence_kind, queue_name, previous_values, new_values, change_reason, changed_by_role
      FROM pg_temp.t09_since('first')$$,
    $$VALUES ('lease_policy_changed', 't09.evidence',
              '{"policy_queue_name": "*", "lease_duration": "00:00:30", "renewal_interval": "00:00:10",
                "max_claim_lifetime": "24:00:00", "renewal_enabled": true}'::jsonb,
              '{"policy_queue_name": "t09.evidence", "lease_duration": "00:00:02", "renewal_interval": "00:00:00.5",
                "max_claim_lifetime": "01:00:00", "renewal_enabled": true}'::jsonb,
              'ticket OPS-1: shorter leases', (session_user::text COLLATE "default"))$$,
    'a queue''s first policy records the default it replaced as the old values, the new values, the reason and the session user');
SELECT ok((SELECT recorded_at FROM pg_temp.t09_since('first'))
              BETWEEN (SELECT mark_time FROM t09_mark WHERE mark_label = 'first')
                  AND (SELECT mark_time FROM t09_mark WHERE mark_label = 'first_done'),
          'a policy change is recorded at the database time it was made');

DO $$ BEGIN PERFORM pg_temp.t09_mark('second'); END $$;
SET SESSION AUTHORIZATION t09_operator_login;
DO $$ BEGIN
    PERFORM durable_jobs.set_queue_lease_policy('t09.evidence', interval '3 seconds', interval '1 second',
                                                interval '2 hours', true, 'ticket OPS-2: a little longer');
END $$;
RESET SESSION AUTHORIZATION;
SELECT results_eq(
    $$SELECT evidence_kind, queue_name, previous_values, new_values, change_reason, changed_by_role
      FROM pg_temp.t09_since('second')$$,
    $$VALUES ('lease_policy_changed', 't09.evidence',
              '{"policy_queue_name": "t09.evidence", "lease_duration": "00:00:02", "renewal_interval": "00:00:00.5",
                "max_claim_lifetime": "01:00:00", "renewal_enabled": true}'::jsonb,
              '{"policy_queue_name": "t09.evidence", "lease_duration": "00:00:03", "renewal_interval": "00:00:01",
                "max_claim_lifetime": "02:00:00", "renewal_enabled": true}'::jsonb,
              'ticket OPS-2: a little longer', 't09_operator_login')$$,
    'a change by an operator login records that login as the session user, with the queue''s previous values');

-- Enablement flips also append renewal_enablement_changed ------------------

DO $$ BEGIN
    PERFORM pg_temp.t09_mark('disable');
    PERFORM durable_jobs.set_queue_lease_policy('t09.evidence', interval '3 seconds', interval '1 second',
                                                interval '2 hours', false, 'incident INC-9: stop renewals');
END $$;
SELECT results_eq(
    $$SELECT evidence_kind, queue_name, previous_values, new_values, change_reason
      FROM pg_temp.t09_since('disable')$$,
    $$VALUES ('lease_policy_changed', 't09.evidence',
              '{"policy_queue_name": "t09.evidence", "lease_duration": "00:00:03", "renewal_interval": "00:00:01",
                "max_claim_lifetime": "02:00:00", "renewal_enabled": true}'::jsonb,
              '{"policy_queue_name": "t09.evidence", "lease_duration": "00:00:03", "renewal_interval": "00:00:01",
                "max_claim_lifetime": "02:00:00", "renewal_enabled": false}'::jsonb,
              'incident INC-9: stop renewals'),
             ('renewal_enablement_changed', 't09.evidence', '{"renewal_enabled": true}'::jsonb,
              '{"renewal_enabled": false}'::jsonb, 'incident INC-9: stop renewals')$$,
    'switching renewal off appends lease_policy_changed and renewal_enablement_changed with the same reason');
DO $$ BEGIN
    PERFORM pg_temp.t09_mark('enable');
    PERFORM durable_jobs.set_queue_lease_policy('t09.evidence', interval '3 seconds', interval '1 second',
                                                interval '2 hours', true, 'incident INC-9 closed');
END $$;
SELECT results_eq(
    $$SELECT evidence_kind, previous_values, new_values FROM pg_temp.t09_since('enable')
      WHERE evidence_kind = 'renewal_enablement_changed'$$,
    $$VALUES ('renewal_enablement_changed', '{"renewal_enabled": false}'::jsonb, '{"renewal_enabled": true}'::jsonb)$$,
    'switching renewal back on appends renewal_enablement_changed');
SELECT is(pg_temp.t09_added('enable'), 2::bigint, 'an enablement flip appends two records in all');
DO $$ BEGIN
    PERFORM pg_temp.t09_mark('new_disabled');
    PERFORM durable_jobs.set_queue_lease_policy('t09.starts_off', interval '3 seconds', interval '1 second',
                                                interval '2 hours', false, 'new queue, renewal off');
END $$;
SELECT results_eq(
    $$SELECT evidence_kind, queue_name, previous_values, new_values FROM pg_temp.t09_since('new_disabled')
      WHERE evidence_kind = 'renewal_enablement_changed'$$,
    $$VALUES ('renewal_enablement_changed', 't09.starts_off', '{"renewal_enabled": true}'::jsonb,
              '{"renewal_enabled": false}'::jsonb)$$,
    'a new queue with renewal off records the flip from the default''s enabled renewal');

-- Rejected changes append nothing -------------------------------------------

DO $$ BEGIN PERFORM pg_temp.t09_mark('rejected'); END $$;
SELECT throws_ok($$SELECT durable_jobs.set_queue_lease_policy('t09.evidence', interval '500 milliseconds',
                     interval '100 milliseconds', interval '1 hour', true, 'too short')$$,
                 'LF002', NULL, 'an invalid policy is rejected with LF002');
SELECT throws_ok($$SELECT durable_jobs.set_queue_lease_policy('t09.evidence', interval '3 seconds',
                     interval '1 second', interval '1 hour', false, '')$$,
                 'LF002', NULL, 'a policy change without a reason is rejected with LF002');
SELECT throws_ok($$SELECT durable_jobs.set_queue_lease_policy('T09', interval '3 seconds',
                     interval '1 second', interval '1 hour', false, 'bad queue')$$,
                 'LF002', NULL, 'a policy change for a malformed queue is rejected with LF002');
SELECT is(pg_temp.t09_added('rejected'), 0::bigint, 'rejected policy changes append no evidence');

-- Append-only: LF004 for everyone, the superuser owner included -------------

SELECT is((SELECT rolsuper FROM pg_roles WHERE rolname = session_user), true,
          'these refusals are tested as a superuser');
DO $$ BEGIN PERFORM pg_temp.t09_mark('append_only'); END $$;
CREATE TEMP TABLE t09_evidence_before AS SELECT * FROM durable_jobs.control_evidence_record;
SELECT throws_ok($$UPDATE durable_jobs.control_evidence_record SET change_reason = 'rewritten'$$, 'LF004', NULL,
                 'UPDATE of control evidence is refused with LF004, even for the superuser');
SELECT throws_ok($$UPDATE durable_jobs.control_evidence_record SET new_values = '{}'
                   WHERE evidence_kind = 'migration_applied'$$, 'LF004', NULL,
                 'UPDATE of migration evidence is refused with LF004');
SELECT throws_ok($$DELETE FROM durable_jobs.control_evidence_record$$, 'LF004', NULL,
                 'DELETE of control evidence is refused with LF004, even for the superuser');
SELECT throws_ok($$DELETE FROM durable_jobs.control_evidence_record WHERE queue_name = 't09.evidence'$$, 'LF004', NULL,
                 'DELETE of one queue''s evidence is refused with LF004');
SELECT throws_ok($$TRUNCATE durable_jobs.control_evidence_record$$, 'LF004', NULL,
                 'TRUNCATE of control evidence is refused with LF004, even for the superuser');
-- The same, acting as the table's owner (durable_job_evidence_owner since
-- migration 014). It holds no USAGE on the schema (21_evidence_owner); this
-- transaction grants it, to show that even then the triggers refuse it.
DO $$ BEGIN
    EXECUTE format('GRANT USAGE ON SCHEMA durable_jobs TO %I',
                   (SELECT relowner::regrole::text FROM pg_class WHERE oid = 'durable_jobs.control_evidence_record'::regclass));
    EXECUTE format('SET LOCAL ROLE %I',
                   (SELECT relowner::regrole::text FROM pg_class WHERE oid = 'durable_jobs.control_evidence_record'::regclass));
END $$;
SELECT is(current_user::text, (SELECT relowner::regrole::text FROM pg_class
                               WHERE oid = 'durable_jobs.control_evidence_record'::regclass),
          'the next refusals are tested as the evidence table''s owner');
SELECT throws_ok($$UPDATE durable_jobs.control_evidence_record SET change_reason = 'rewritten'$$, 'LF004', NULL,
                 'UPDATE of control evidence is refused with LF004 for the table owner');
SELECT throws_ok($$DELETE FROM durable_jobs.control_evidence_record$$, 'LF004', NULL,
                 'DELETE of control evidence is refused with LF004 for the table owner');
SELECT throws_ok($$TRUNCATE durable_jobs.control_evidence_record$$, 'LF004', NULL,
                 'TRUNCATE of control evidence is refused with LF004 for the table owner');
RESET ROLE;
SET LOCAL ROLE durable_job_policy_owner;
SELECT throws_ok($$UPDATE durable_jobs.control_evidence_record SET change_reason = 'rewritten'$$, '42501', NULL,
                 'the policy family''s owner, which appends evidence, cannot update it');
SELECT throws_ok($$DELETE FROM durable_jobs.control_evidence_record$$, '42501', NULL,
                 'the policy family''s owner cannot delete evidence');
RESET ROLE;
SELECT set_eq($$SELECT * FROM durable_jobs.control_evidence_record$$, $$SELECT * FROM t09_evidence_before$$,
              'every refused change left the evidence exactly as it was');

-- Runtime roles cannot touch the table at all (42501) ------------------------

CREATE TEMP TABLE t09_role_write (role_name text, write_sql text, write_kind text);
INSERT INTO t09_role_write
SELECT r, w, k
FROM unnest(ARRAY['durable_job_producer', 'durable_job_worker', 'durable_job_operator', 'durable_job_auditor']) AS r,
     (VALUES ('INSERT', $$INSERT INTO durable_jobs.control_evidence_record (evidence_kind, new_values, change_reason)
                           VALUES ('deployment_recorded', '{}', 'forged')$$),
             ('UPDATE', $$UPDATE durable_jobs.control_evidence_record SET change_reason = 'rewritten'$$),
             ('DELETE', $$DELETE FROM durable_jobs.control_evidence_record$$),
             ('TRUNCATE', $$TRUNCATE durable_jobs.control_evidence_record$$)) AS writes(k, w);
GRANT SELECT ON t09_role_write TO PUBLIC;
-- Each role in turn; the SET LOCAL ROLE is undone by RESET ROLE before the next.
SET LOCAL ROLE durable_job_producer;
SELECT throws_ok(write_sql, '42501', NULL, format('%s cannot %s control evidence', role_name, write_kind))
FROM t09_role_write WHERE role_name = 'durable_job_producer' ORDER BY write_kind;
RESET ROLE;
SET LOCAL ROLE durable_job_worker;
SELECT throws_ok(write_sql, '42501', NULL, format('%s cannot %s control evidence', role_name, write_kind))
FROM t09_role_write WHERE role_name = 'durable_job_worker' ORDER BY write_kind;
RESET ROLE;
SET LOCAL ROLE durable_job_operator;
SELECT throws_ok(write_sql, '42501', NULL, format('%s cannot %s control evidence', role_name, write_kind))
FROM t09_role_write WHERE role_name = 'durable_job_operator' ORDER BY write_kind;
RESET ROLE;
SET LOCAL ROLE durable_job_auditor;
SELECT throws_ok(write_sql, '42501', NULL, format('%s cannot %s control evidence', role_name, write_kind))
FROM t09_role_write WHERE role_name = 'durable_job_auditor' ORDER BY write_kind;
-- ...but an auditor reads it through control_evidence_history.
SELECT results_eq(
    format('SELECT evidence_kind, change_reason FROM durable_jobs.control_evidence_history(%L) WHERE queue_name = ''t09.evidence''',
           (SELECT mark_time FROM t09_mark WHERE mark_label = 'first')),
    $$VALUES ('lease_policy_changed', 'ticket OPS-1: shorter leases'), ('lease_policy_changed', 'ticket OPS-2: a little longer'),
             ('lease_policy_changed', 'incident INC-9: stop renewals'),
             ('renewal_enablement_changed', 'incident INC-9: stop renewals'),
             ('lease_policy_changed', 'incident INC-9 closed'), ('renewal_enablement_changed', 'incident INC-9 closed')$$,
    'control_evidence_history gives an auditor the queue''s evidence since a time, oldest first');
SELECT is_empty(
    format('SELECT 1 FROM durable_jobs.control_evidence_history(%L)', clock_timestamp() + interval '1 minute'),
    'control_evidence_history has nothing after the present');
SELECT ok((SELECT count(*) FROM durable_jobs.control_evidence_history(NULL) WHERE evidence_kind = 'migration_applied') >= 2,
          'control_evidence_history with a NULL start includes the migration records');
RESET ROLE;

-- Migration evidence --------------------------------------------------------

SELECT results_eq(
    $$SELECT DISTINCT (new_values ->> 'migration_version')::integer, new_values ->> 'migration_name'
      FROM durable_jobs.control_evidence_record WHERE evidence_kind = 'migration_applied'
        AND (new_values ->> 'migration_version')::integer <= 4 ORDER BY 1$$,
    $$VALUES (1, '001_schema_and_roles'), (2, '002_lifecycle_functions'), (3, '003_renewal_skips_locked_rows'),
             (4, '004_counting_time_and_policy')$$,
    'migration_applied evidence exists for bundle versions 1 to 4');
SELECT ok((SELECT bool_and(changed_by_role <> '' AND change_reason <> '' AND recorded_at <= now())
           FROM durable_jobs.control_evidence_record WHERE evidence_kind = 'migration_applied'),
          'migration evidence says who applied it, why and when');

-- No payload, token, owner or idempotency key in evidence or tallies --------

DO $$ BEGIN
    INSERT INTO t09_secret VALUES
        ('payload_ssn', '078-05-1120'),
        ('payload_email', 'jane.doe.t09@example.com'),
        ('result_card', '4111-1111-1111-1111'),
        ('idempotency_key', 'idem-t09-4f1d2c-order-991'),
        ('first_owner', 'worker-t09-alpha'),
        ('second_owner', 'worker-t09-bravo');
    INSERT INTO t09_secret SELECT 'idempotency_key_digest', encode(sha256(convert_to(secret_value, 'UTF8')), 'hex')
    FROM t09_secret WHERE secret_label = 'idempotency_key';
    PERFORM durable_jobs.set_queue_lease_policy('t09.pii', interval '1 second', interval '300 milliseconds',
                                                interval '1 minute', true, 'pii lifecycle');
    PERFORM durable_jobs.enqueue_job('t09.pii',
        jsonb_build_object('ssn', '078-05-1120', 'email', 'jane.doe.t09@example.com'),
        'idem-t09-4f1d2c-order-991');
    INSERT INTO t09_secret SELECT 'first_token', lease_claim_token::text
    FROM durable_jobs.claim_next_job('t09.pii', 'worker-t09-alpha');
    PERFORM durable_jobs.renew_job_lease(j.job_record_id, s.secret_value::uuid, 'worker-t09-alpha')
    FROM durable_jobs.job_record j, t09_secret s WHERE j.queue_name = 't09.pii' AND s.secret_label = 'first_token';
    PERFORM pg_sleep(1.1);
    INSERT INTO t09_secret SELECT 'second_token', lease_claim_token::text
    FROM durable_jobs.claim_next_job('t09.pii', 'worker-t09-bravo');
    PERFORM durable_jobs.renew_job_lease(j.job_record_id, s.secret_value::uuid, 'worker-t09-alpha')
    FROM durable_jobs.job_record j, t09_secret s WHERE j.queue_name = 't09.pii' AND s.secret_label = 'first_token';
    PERFORM durable_jobs.complete_job(j.job_record_id, s.secret_value::uuid, 'worker-t09-bravo',
                                      '{"card": "4111-1111-1111-1111"}')
    FROM durable_jobs.job_record j, t09_secret s WHERE j.queue_name = 't09.pii' AND s.secret_label = 'second_token';
    INSERT INTO t09_secret SELECT 'job_id', job_record_id::text FROM durable_jobs.job_record WHERE queue_name = 't09.pii';
    INSERT INTO t09_secret SELECT secret_label || '_digest', encode(durable_jobs.claim_token_digest(secret_value::uuid), 'hex')
    FROM t09_secret WHERE secret_label IN ('first_token', 'second_token');
    PERFORM durable_jobs.record_deployment_version('9.9.9', 'after the pii lifecycle');
END $$;
SELECT is((SELECT job_status FROM durable_jobs.job_lifecycle_state((SELECT secret_value::bigint FROM t09_secret
                                                                    WHERE secret_label = 'job_id'))),
          'SUCCEEDED', 'the PII lifecycle ran: enqueue, claim, renew, expiry, reclaim, stale renewal, complete');
SELECT results_eq(
    $$SELECT outcome_kind, sum(outcome_count)::bigint FROM durable_jobs.lease_outcome_tally
      WHERE queue_name = 't09.pii' GROUP BY outcome_kind ORDER BY outcome_kind$$,
    $$VALUES ('reclaim', 1::bigint), ('stale_renewal', 1::bigint)$$,
    'the PII lifecycle left one reclaim and one stale renewal in the tallies');
SELECT ok(position(s.secret_value IN (SELECT string_agg(e::text, ' ') FROM durable_jobs.control_evidence_record e)) = 0,
          format('control evidence does not contain the %s', replace(s.secret_label, '_', ' ')))
FROM t09_secret s WHERE s.secret_label <> 'job_id' ORDER BY s.secret_label;
SELECT ok(position(s.secret_value IN (SELECT string_agg(t::text, ' ') FROM durable_jobs.lease_outcome_tally t)) = 0,
          format('the lease outcome tallies do not contain the %s', replace(s.secret_label, '_', ' ')))
FROM t09_secret s WHERE s.secret_label <> 'job_id' ORDER BY s.secret_label;
SELECT is(
    ARRAY(SELECT attname::text FROM pg_attribute
          WHERE attrelid = 'durable_jobs.lease_outcome_tally'::regclass AND attnum > 0 AND NOT attisdropped
            AND attname ~ '(payload|token|digest|owner|idempotency|job_record_id)'),
    ARRAY[]::text[],
    'the tallies have no column for a job, owner, token, digest, idempotency key or payload');
SELECT is(
    ARRAY(SELECT attname::text FROM pg_attribute
          WHERE attrelid = 'durable_jobs.control_evidence_record'::regclass AND attnum > 0 AND NOT attisdropped
            AND attname ~ '(payload|token|digest|owner|idempotency|job_record_id)'),
    ARRAY[]::text[],
    'the evidence table has no column for a job, owner, token, digest, idempotency key or payload');

SELECT * FROM finish();
ROLLBACK;
