-- 16_evidence: the control evidence. Every accepted policy change appends
-- lease_policy_changed (old and new values, reason, session_user, database
-- time), an enablement flip also appends renewal_enablement_changed, a
-- rejected change appends nothing; nobody, the superuser owner included,
-- can update, delete or truncate it (LF004); no runtime role can write it
-- (42501); neither the evidence nor the outcome tallies ever hold a
-- payload, token, owner id or idempotency key. The records are
-- hash-chained, written only in READ COMMITTED, recorded by the policy
-- table's own triggers whoever changes it, and the table has an owner of
-- its own. Order: the REPEATABLE READ refusal, in a transaction of its own
-- before anything is written; the owner's catalog checks, before the
-- append-only section grants that owner USAGE to show the triggers still
-- refuse it; append-only and payload-blind; the chain and the structured
-- change record.
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
SELECT plan(141);
COMMIT;

-- Evidence written from an older snapshot could miss the last record: refused.
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT throws_ok(
    $$SELECT durable_jobs.record_deployment_version('1.0.0', 'pgTAP 16: repeatable read')$$,
    'LF003', 'control evidence must be written in a READ COMMITTED transaction',
    'an evidence record written in a REPEATABLE READ transaction is refused with LF003');
COMMIT;

BEGIN;

-- ============================================================================
-- The evidence owner: migration 014 gives the control evidence an owner of
-- its own. durable_jobs.control_evidence_record, its identity sequence and
-- its append-only guard refuse_evidence_change() are owned by
-- durable_job_evidence_owner: NOLOGIN, nothing elevated, no members, a
-- member of nothing, owning nothing else in the database and holding no
-- privilege of its own (not even USAGE on the schema), so nothing runs as it
-- and no login can act as the table's owner.
-- ============================================================================

SELECT table_owner_is('durable_jobs', 'control_evidence_record', 'durable_job_evidence_owner',
    'the evidence table is owned by durable_job_evidence_owner, not by the role that applied the bundle');
SELECT sequence_owner_is('durable_jobs', 'control_evidence_record_evidence_record_id_seq', 'durable_job_evidence_owner',
    'the evidence table''s identity sequence has the same owner');
SELECT function_owner_is('durable_jobs', 'refuse_evidence_change', ARRAY[]::name[], 'durable_job_evidence_owner',
    'the append-only guard is owned by the table''s owner (AUDIT-EVIDENCE-TRIGGER)');

SELECT results_eq(
    $$SELECT r.rolcanlogin, r.rolsuper, r.rolcreatedb, r.rolcreaterole, r.rolbypassrls, r.rolreplication, r.rolinherit
      FROM pg_roles r WHERE r.rolname = 'durable_job_evidence_owner'$$,
    $$VALUES (false, false, false, false, false, false, true)$$,
    'durable_job_evidence_owner exists, cannot log in and holds no elevated attribute');
SELECT is_empty(
    $$SELECT m.member::regrole::text, m.roleid::regrole::text FROM pg_auth_members m
      WHERE 'durable_job_evidence_owner'::regrole IN (m.member, m.roleid)$$,
    'durable_job_evidence_owner has no members and is a member of no role');
SELECT set_eq(
    $$SELECT c.oid::regclass::text FROM pg_class c WHERE c.relowner = 'durable_job_evidence_owner'::regrole
        AND c.relnamespace <> 'pg_toast'::regnamespace
      UNION ALL
      SELECT p.oid::regprocedure::text FROM pg_proc p WHERE p.proowner = 'durable_job_evidence_owner'::regrole
      UNION ALL
      SELECT n.nspname::text FROM pg_namespace n WHERE n.nspowner = 'durable_job_evidence_owner'::regrole$$,
    $$VALUES ('durable_jobs.control_evidence_record'), ('durable_jobs.control_evidence_record_evidence_record_id_seq'),
             ('durable_jobs.control_evidence_record_pkey'), ('durable_jobs.refuse_evidence_change()')$$,
    'durable_job_evidence_owner owns the evidence table, its sequence and index and its guard, and nothing else (its TOAST table aside)');
SELECT ok(NOT has_schema_privilege('durable_job_evidence_owner', 'durable_jobs', 'USAGE')
          AND NOT has_schema_privilege('durable_job_evidence_owner', 'durable_jobs', 'CREATE'),
    'durable_job_evidence_owner holds no privilege on schema durable_jobs');
SELECT is_empty(
    $$SELECT p.oid::regprocedure::text FROM pg_proc p
      WHERE p.pronamespace = 'durable_jobs'::regnamespace
        AND p.proowner <> 'durable_job_evidence_owner'::regrole
        AND has_function_privilege('durable_job_evidence_owner', p.oid, 'EXECUTE')$$,
    'durable_job_evidence_owner can execute no function of the schema but its own guard');
-- Nothing the bundle runs as this role: no function runs with its rights.
SELECT is_empty(
    $$SELECT p.oid::regprocedure::text FROM pg_proc p
      WHERE p.proowner = 'durable_job_evidence_owner'::regrole AND p.prosecdef$$,
    'no SECURITY DEFINER function runs as durable_job_evidence_owner');

-- ============================================================================
-- Append-only and payload-blind.
-- ============================================================================

-- Fixtures -------------------------------------------------------------------

CREATE TEMP TABLE t16a_mark (mark_label text PRIMARY KEY, mark_time timestamptz, mark_count bigint, mark_last_id bigint);
CREATE TEMP TABLE t16a_secret (secret_label text PRIMARY KEY, secret_value text NOT NULL);
GRANT ALL ON t16a_mark, t16a_secret TO PUBLIC;

-- Mark the clock and the evidence count before or after a change.
CREATE FUNCTION pg_temp.t16a_mark(p_mark_label text)
RETURNS void LANGUAGE sql AS $$
    INSERT INTO t16a_mark SELECT p_mark_label, clock_timestamp(), count(*), max(evidence_record_id)
    FROM durable_jobs.control_evidence_record;
$$;

-- The evidence records appended since a mark, oldest first.
CREATE FUNCTION pg_temp.t16a_since(p_mark_label text)
RETURNS SETOF durable_jobs.control_evidence_record LANGUAGE sql AS $$
    SELECT e.* FROM durable_jobs.control_evidence_record e
    WHERE e.evidence_record_id > (SELECT mark_last_id FROM t16a_mark WHERE mark_label = p_mark_label)
    ORDER BY e.evidence_record_id;
$$;

CREATE FUNCTION pg_temp.t16a_added(p_mark_label text)
RETURNS bigint LANGUAGE sql AS $$
    SELECT count(*) - (SELECT mark_count FROM t16a_mark WHERE mark_label = p_mark_label)
    FROM durable_jobs.control_evidence_record;
$$;

-- The operator login that makes one of the changes below.
CREATE ROLE t16a_operator_login LOGIN IN ROLE durable_job_operator;

-- Policy changes append lease_policy_changed -------------------------------

DO $$ BEGIN
    PERFORM pg_temp.t16a_mark('first');
    PERFORM durable_jobs.set_queue_lease_policy('t16a.evidence', interval '2 seconds', interval '500 milliseconds',
                                                interval '1 hour', true, 'ticket OPS-1: shorter leases');
    PERFORM pg_temp.t16a_mark('first_done');
END $$;
SELECT is(pg_temp.t16a_added('first'), 1::bigint,
          'a policy change that keeps renewal enabled appends exactly one evidence record');
SELECT results_eq(
    $$SELECT evidence_kind, queue_name, previous_values, new_values, change_reason, changed_by_role
      FROM pg_temp.t16a_since('first')$$,
    $$VALUES ('lease_policy_changed', 't16a.evidence',
              '{"policy_queue_name": "*", "lease_duration": "00:00:30", "renewal_interval": "00:00:10",
                "max_claim_lifetime": "24:00:00", "renewal_enabled": true}'::jsonb,
              '{"policy_queue_name": "t16a.evidence", "lease_duration": "00:00:02", "renewal_interval": "00:00:00.5",
                "max_claim_lifetime": "01:00:00", "renewal_enabled": true}'::jsonb,
              'ticket OPS-1: shorter leases', (session_user::text COLLATE "default"))$$,
    'a queue''s first policy records the default it replaced as the old values, the new values, the reason and the session user');
SELECT ok((SELECT recorded_at FROM pg_temp.t16a_since('first'))
              BETWEEN (SELECT mark_time FROM t16a_mark WHERE mark_label = 'first')
                  AND (SELECT mark_time FROM t16a_mark WHERE mark_label = 'first_done'),
          'a policy change is recorded at the database time it was made');

DO $$ BEGIN PERFORM pg_temp.t16a_mark('second'); END $$;
SET SESSION AUTHORIZATION t16a_operator_login;
DO $$ BEGIN
    PERFORM durable_jobs.set_queue_lease_policy('t16a.evidence', interval '3 seconds', interval '1 second',
                                                interval '2 hours', true, 'ticket OPS-2: a little longer');
END $$;
RESET SESSION AUTHORIZATION;
SELECT results_eq(
    $$SELECT evidence_kind, queue_name, previous_values, new_values, change_reason, changed_by_role
      FROM pg_temp.t16a_since('second')$$,
    $$VALUES ('lease_policy_changed', 't16a.evidence',
              '{"policy_queue_name": "t16a.evidence", "lease_duration": "00:00:02", "renewal_interval": "00:00:00.5",
                "max_claim_lifetime": "01:00:00", "renewal_enabled": true}'::jsonb,
              '{"policy_queue_name": "t16a.evidence", "lease_duration": "00:00:03", "renewal_interval": "00:00:01",
                "max_claim_lifetime": "02:00:00", "renewal_enabled": true}'::jsonb,
              'ticket OPS-2: a little longer', 't16a_operator_login')$$,
    'a change by an operator login records that login as the session user, with the queue''s previous values');

-- Enablement flips also append renewal_enablement_changed ------------------

DO $$ BEGIN
    PERFORM pg_temp.t16a_mark('disable');
    PERFORM durable_jobs.set_queue_lease_policy('t16a.evidence', interval '3 seconds', interval '1 second',
                                                interval '2 hours', false, 'incident INC-9: stop renewals');
END $$;
SELECT results_eq(
    $$SELECT evidence_kind, queue_name, previous_values, new_values, change_reason
      FROM pg_temp.t16a_since('disable')$$,
    $$VALUES ('lease_policy_changed', 't16a.evidence',
              '{"policy_queue_name": "t16a.evidence", "lease_duration": "00:00:03", "renewal_interval": "00:00:01",
                "max_claim_lifetime": "02:00:00", "renewal_enabled": true}'::jsonb,
              '{"policy_queue_name": "t16a.evidence", "lease_duration": "00:00:03", "renewal_interval": "00:00:01",
                "max_claim_lifetime": "02:00:00", "renewal_enabled": false}'::jsonb,
              'incident INC-9: stop renewals'),
             ('renewal_enablement_changed', 't16a.evidence', '{"renewal_enabled": true}'::jsonb,
              '{"renewal_enabled": false}'::jsonb, 'incident INC-9: stop renewals')$$,
    'switching renewal off appends lease_policy_changed and renewal_enablement_changed with the same reason');
DO $$ BEGIN
    PERFORM pg_temp.t16a_mark('enable');
    PERFORM durable_jobs.set_queue_lease_policy('t16a.evidence', interval '3 seconds', interval '1 second',
                                                interval '2 hours', true, 'incident INC-9 closed');
END $$;
SELECT results_eq(
    $$SELECT evidence_kind, previous_values, new_values FROM pg_temp.t16a_since('enable')
      WHERE evidence_kind = 'renewal_enablement_changed'$$,
    $$VALUES ('renewal_enablement_changed', '{"renewal_enabled": false}'::jsonb, '{"renewal_enabled": true}'::jsonb)$$,
    'switching renewal back on appends renewal_enablement_changed');
SELECT is(pg_temp.t16a_added('enable'), 2::bigint, 'an enablement flip appends two records in all');
DO $$ BEGIN
    PERFORM pg_temp.t16a_mark('new_disabled');
    PERFORM durable_jobs.set_queue_lease_policy('t16a.starts_off', interval '3 seconds', interval '1 second',
                                                interval '2 hours', false, 'new queue, renewal off');
END $$;
SELECT results_eq(
    $$SELECT evidence_kind, queue_name, previous_values, new_values FROM pg_temp.t16a_since('new_disabled')
      WHERE evidence_kind = 'renewal_enablement_changed'$$,
    $$VALUES ('renewal_enablement_changed', 't16a.starts_off', '{"renewal_enabled": true}'::jsonb,
              '{"renewal_enabled": false}'::jsonb)$$,
    'a new queue with renewal off records the flip from the default''s enabled renewal');

-- Rejected changes append nothing -------------------------------------------

DO $$ BEGIN PERFORM pg_temp.t16a_mark('rejected'); END $$;
SELECT throws_ok($$SELECT durable_jobs.set_queue_lease_policy('t16a.evidence', interval '500 milliseconds',
                     interval '100 milliseconds', interval '1 hour', true, 'too short')$$,
                 'LF002', NULL, 'an invalid policy is rejected with LF002');
SELECT throws_ok($$SELECT durable_jobs.set_queue_lease_policy('t16a.evidence', interval '3 seconds',
                     interval '1 second', interval '1 hour', false, '')$$,
                 'LF002', NULL, 'a policy change without a reason is rejected with LF002');
SELECT throws_ok($$SELECT durable_jobs.set_queue_lease_policy('T09', interval '3 seconds',
                     interval '1 second', interval '1 hour', false, 'bad queue')$$,
                 'LF002', NULL, 'a policy change for a malformed queue is rejected with LF002');
SELECT is(pg_temp.t16a_added('rejected'), 0::bigint, 'rejected policy changes append no evidence');

-- Append-only: LF004 for everyone, the superuser owner included -------------

SELECT is((SELECT rolsuper FROM pg_roles WHERE rolname = session_user), true,
          'these refusals are tested as a superuser');
DO $$ BEGIN PERFORM pg_temp.t16a_mark('append_only'); END $$;
CREATE TEMP TABLE t16a_evidence_before AS SELECT * FROM durable_jobs.control_evidence_record;
SELECT throws_ok($$UPDATE durable_jobs.control_evidence_record SET change_reason = 'rewritten'$$, 'LF004', NULL,
                 'UPDATE of control evidence is refused with LF004, even for the superuser');
SELECT throws_ok($$UPDATE durable_jobs.control_evidence_record SET new_values = '{}'
                   WHERE evidence_kind = 'migration_applied'$$, 'LF004', NULL,
                 'UPDATE of migration evidence is refused with LF004');
SELECT throws_ok($$DELETE FROM durable_jobs.control_evidence_record$$, 'LF004', NULL,
                 'DELETE of control evidence is refused with LF004, even for the superuser');
SELECT throws_ok($$DELETE FROM durable_jobs.control_evidence_record WHERE queue_name = 't16a.evidence'$$, 'LF004', NULL,
                 'DELETE of one queue''s evidence is refused with LF004');
SELECT throws_ok($$TRUNCATE durable_jobs.control_evidence_record$$, 'LF004', NULL,
                 'TRUNCATE of control evidence is refused with LF004, even for the superuser');
-- The same, acting as the table's owner (durable_job_evidence_owner since
-- migration 014). It holds no USAGE on the schema (the section above); this
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
SELECT set_eq($$SELECT * FROM durable_jobs.control_evidence_record$$, $$SELECT * FROM t16a_evidence_before$$,
              'every refused change left the evidence exactly as it was');

-- Runtime roles cannot touch the table at all (42501) ------------------------

CREATE TEMP TABLE t16a_role_write (role_name text, write_sql text, write_kind text);
INSERT INTO t16a_role_write
SELECT r, w, k
FROM unnest(ARRAY['durable_job_producer', 'durable_job_worker', 'durable_job_operator', 'durable_job_auditor']) AS r,
     (VALUES ('INSERT', $$INSERT INTO durable_jobs.control_evidence_record (evidence_kind, new_values, change_reason)
                           VALUES ('deployment_recorded', '{}', 'forged')$$),
             ('UPDATE', $$UPDATE durable_jobs.control_evidence_record SET change_reason = 'rewritten'$$),
             ('DELETE', $$DELETE FROM durable_jobs.control_evidence_record$$),
             ('TRUNCATE', $$TRUNCATE durable_jobs.control_evidence_record$$)) AS writes(k, w);
GRANT SELECT ON t16a_role_write TO PUBLIC;
-- Each role in turn; the SET LOCAL ROLE is undone by RESET ROLE before the next.
SET LOCAL ROLE durable_job_producer;
SELECT throws_ok(write_sql, '42501', NULL, format('%s cannot %s control evidence', role_name, write_kind))
FROM t16a_role_write WHERE role_name = 'durable_job_producer' ORDER BY write_kind;
RESET ROLE;
SET LOCAL ROLE durable_job_worker;
SELECT throws_ok(write_sql, '42501', NULL, format('%s cannot %s control evidence', role_name, write_kind))
FROM t16a_role_write WHERE role_name = 'durable_job_worker' ORDER BY write_kind;
RESET ROLE;
SET LOCAL ROLE durable_job_operator;
SELECT throws_ok(write_sql, '42501', NULL, format('%s cannot %s control evidence', role_name, write_kind))
FROM t16a_role_write WHERE role_name = 'durable_job_operator' ORDER BY write_kind;
RESET ROLE;
SET LOCAL ROLE durable_job_auditor;
SELECT throws_ok(write_sql, '42501', NULL, format('%s cannot %s control evidence', role_name, write_kind))
FROM t16a_role_write WHERE role_name = 'durable_job_auditor' ORDER BY write_kind;
-- ...but an auditor reads it through control_evidence_history.
SELECT results_eq(
    format('SELECT evidence_kind, change_reason FROM durable_jobs.control_evidence_history(%L) WHERE queue_name = ''t16a.evidence''',
           (SELECT mark_time FROM t16a_mark WHERE mark_label = 'first')),
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
    INSERT INTO t16a_secret VALUES
        ('payload_ssn', '078-05-1120'),
        ('payload_email', 'jane.doe.t09@example.com'),
        ('result_card', '4111-1111-1111-1111'),
        ('idempotency_key', 'idem-t16a-4f1d2c-order-991'),
        ('first_owner', 'worker-t16a-alpha'),
        ('second_owner', 'worker-t16a-bravo');
    INSERT INTO t16a_secret SELECT 'idempotency_key_digest', encode(sha256(convert_to(secret_value, 'UTF8')), 'hex')
    FROM t16a_secret WHERE secret_label = 'idempotency_key';
    PERFORM durable_jobs.set_queue_lease_policy('t16a.pii', interval '1 second', interval '300 milliseconds',
                                                interval '1 minute', true, 'pii lifecycle');
    PERFORM durable_jobs.enqueue_job('t16a.pii',
        jsonb_build_object('ssn', '078-05-1120', 'email', 'jane.doe.t09@example.com'),
        'idem-t16a-4f1d2c-order-991');
    INSERT INTO t16a_secret SELECT 'first_token', lease_claim_token::text
    FROM durable_jobs.claim_next_job('t16a.pii', 'worker-t16a-alpha');
    PERFORM durable_jobs.renew_job_lease(j.job_record_id, s.secret_value::uuid, 'worker-t16a-alpha')
    FROM durable_jobs.job_record j, t16a_secret s WHERE j.queue_name = 't16a.pii' AND s.secret_label = 'first_token';
    PERFORM pg_sleep(1.1);
    INSERT INTO t16a_secret SELECT 'second_token', lease_claim_token::text
    FROM durable_jobs.claim_next_job('t16a.pii', 'worker-t16a-bravo');
    PERFORM durable_jobs.renew_job_lease(j.job_record_id, s.secret_value::uuid, 'worker-t16a-alpha')
    FROM durable_jobs.job_record j, t16a_secret s WHERE j.queue_name = 't16a.pii' AND s.secret_label = 'first_token';
    PERFORM durable_jobs.complete_job(j.job_record_id, s.secret_value::uuid, 'worker-t16a-bravo',
                                      '{"card": "4111-1111-1111-1111"}')
    FROM durable_jobs.job_record j, t16a_secret s WHERE j.queue_name = 't16a.pii' AND s.secret_label = 'second_token';
    INSERT INTO t16a_secret SELECT 'job_id', job_record_id::text FROM durable_jobs.job_record WHERE queue_name = 't16a.pii';
    INSERT INTO t16a_secret SELECT secret_label || '_digest', encode(durable_jobs.claim_token_digest(secret_value::uuid), 'hex')
    FROM t16a_secret WHERE secret_label IN ('first_token', 'second_token');
    PERFORM durable_jobs.record_deployment_version('9.9.9', 'after the pii lifecycle');
END $$;
SELECT is((SELECT job_status FROM durable_jobs.job_lifecycle_state((SELECT secret_value::bigint FROM t16a_secret
                                                                    WHERE secret_label = 'job_id'))),
          'SUCCEEDED', 'the PII lifecycle ran: enqueue, claim, renew, expiry, reclaim, stale renewal, complete');
SELECT results_eq(
    $$SELECT outcome_kind, sum(outcome_count)::bigint FROM durable_jobs.lease_outcome_tally
      WHERE queue_name = 't16a.pii' GROUP BY outcome_kind ORDER BY outcome_kind$$,
    $$VALUES ('reclaim', 1::bigint), ('stale_renewal', 1::bigint)$$,
    'the PII lifecycle left one reclaim and one stale renewal in the tallies');
SELECT ok(position(s.secret_value IN (SELECT string_agg(e::text, ' ') FROM durable_jobs.control_evidence_record e)) = 0,
          format('control evidence does not contain the %s', replace(s.secret_label, '_', ' ')))
FROM t16a_secret s WHERE s.secret_label <> 'job_id' ORDER BY s.secret_label;
SELECT ok(position(s.secret_value IN (SELECT string_agg(t::text, ' ') FROM durable_jobs.lease_outcome_tally t)) = 0,
          format('the lease outcome tallies do not contain the %s', replace(s.secret_label, '_', ' ')))
FROM t16a_secret s WHERE s.secret_label <> 'job_id' ORDER BY s.secret_label;
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

-- ============================================================================
-- The evidence chain (sql/migrations/*_evidence_chain.sql). (Its first
-- assertion, the REPEATABLE READ refusal, is at the top of the file.)
-- Every change of queue_lease_policy is recorded by the table's own
-- triggers, whoever makes it (a direct UPDATE included) and with
-- session_user as the changer; evidence records are hash-chained in id
-- order; change records are structured (ticket, approver) and refuse
-- reasons that look like personal data or a secret (LF002). The
-- two-session races are in sql/integration/evidence_chain_test.go.
-- ============================================================================

CREATE TEMP VIEW t16_broken_links AS
    SELECT x.evidence_record_id
    FROM (SELECT c.*, lag(c.record_hash) OVER (ORDER BY c.evidence_record_id) AS prior_hash
          FROM durable_jobs.control_evidence_chain() c) x
    WHERE x.record_hash <> pg_catalog.sha256(x.previous_record_hash || x.content_digest)
       OR x.previous_record_hash <> COALESCE(x.prior_hash, decode(repeat('00', 32), 'hex'));
-- Since migration 026 an approver must hold durable_job_operator: both do,
-- so the one refused below is refused for not being a login.
CREATE ROLE t16_approver LOGIN IN ROLE durable_job_operator;
CREATE ROLE t16_nologin NOLOGIN IN ROLE durable_job_operator;

-- The chain ---------------------------------------------------------------------

SELECT is_empty($$SELECT * FROM t16_broken_links$$,
    'the records that existed before the evidence-chain migration were chained in id order, and every link holds');
SELECT is((SELECT previous_record_hash FROM durable_jobs.control_evidence_chain() ORDER BY evidence_record_id LIMIT 1),
    decode(repeat('00', 32), 'hex'), 'the first record chains to 32 zero bytes');
SELECT throws_ok(
    $$INSERT INTO durable_jobs.control_evidence_record 
          (evidence_record_id, evidence_kind, new_values, change_reason) OVERRIDING SYSTEM VALUE
      VALUES (1, 'deployment_recorded', '{}', 'pgTAP 16: an id below the last one')$$,
    'LF003', 'control evidence record written out of order',
    'a record whose id is not above every committed id is refused, so chain order is id order');
SELECT lives_ok($$SELECT durable_jobs.record_deployment_version('1.2.3', 'pgTAP 16: chained deployment')$$,
    'a new record is accepted');
SELECT is_empty($$SELECT * FROM t16_broken_links$$, 'the new record is linked to the one before it');
SELECT ok((SELECT record_hash IS NOT NULL AND length(record_hash) = 32 FROM durable_jobs.control_evidence_record
           ORDER BY evidence_record_id DESC LIMIT 1), 'every record carries a 32-byte sha256 record_hash');

-- A direct change of the policy table is recorded by the change itself -----------

SELECT lives_ok(
    $$SELECT durable_jobs.set_queue_lease_policy('t16_direct', interval '30 seconds', interval '10 seconds',
          interval '1 hour', true, 'OPS-12: pgTAP 16 baseline')$$,
    'a policy set through the function is accepted');
SELECT results_eq(
    $$SELECT count(*)::integer, min(change_ticket), min(change_reason) FROM durable_jobs.control_evidence_record
      WHERE queue_name = 't16_direct' AND evidence_kind = 'lease_policy_changed'$$,
    $$VALUES (1, 'OPS-12', 'OPS-12: pgTAP 16 baseline')$$,
    'set_queue_lease_policy records one policy record (by the trigger, not twice), its ticket parsed from the reason');

UPDATE durable_jobs.queue_lease_policy
SET lease_duration = interval '60 seconds', renewal_enabled = false, changed_by_role = 'ops_alice'
WHERE queue_name = 't16_direct';
SELECT results_eq(
    $$SELECT evidence_kind, changed_by_role, change_reason, previous_values ->> 'lease_duration',
             new_values ->> 'lease_duration', (new_values ->> 'renewal_enabled')
      FROM durable_jobs.control_evidence_record WHERE queue_name = 't16_direct' AND evidence_kind = 'lease_policy_changed'
      ORDER BY evidence_record_id DESC LIMIT 1$$,
    $$VALUES ('lease_policy_changed', session_user::text COLLATE "default", 'direct table change without a reason', '00:00:30', '00:01:00', 'false')$$,
    'a direct UPDATE of the policy table is recorded with old and new values, session_user as changer (not the forged column) and a reason saying none was given');
SELECT results_eq(
    $$SELECT previous_values ->> 'renewal_enabled', new_values ->> 'renewal_enabled' FROM durable_jobs.control_evidence_record
      WHERE queue_name = 't16_direct' AND evidence_kind = 'renewal_enablement_changed' ORDER BY evidence_record_id DESC LIMIT 1$$,
    $$VALUES ('true', 'false')$$,
    'the direct UPDATE that switched renewal off is also recorded as an enablement change');
SELECT is((SELECT changed_by_role FROM durable_jobs.queue_lease_policy WHERE queue_name = 't16_direct'),
    session_user::text, 'the row''s changed_by_role is stamped with session_user, so it cannot name someone else');
SELECT is_empty($$SELECT * FROM durable_jobs.policy_evidence_mismatches()$$,
    'every queue''s policy equals what its last evidence record says');

SELECT set_config('leasefence.change_reason', 'OPS-13: direct change with a reason', true);
SELECT set_config('leasefence.change_ticket', 'OPS-13', true);
UPDATE durable_jobs.queue_lease_policy SET renewal_enabled = true WHERE queue_name = 't16_direct';
SELECT results_eq(
    $$SELECT change_reason, change_ticket FROM durable_jobs.control_evidence_record
      WHERE queue_name = 't16_direct' ORDER BY evidence_record_id DESC LIMIT 1$$,
    $$VALUES ('OPS-13: direct change with a reason', 'OPS-13')$$,
    'a direct change records the reason and ticket set in leasefence.change_reason and leasefence.change_ticket');
SELECT set_config('leasefence.change_ticket', 'not a ticket', true);
SELECT throws_ok($$UPDATE durable_jobs.queue_lease_policy SET renewal_enabled = false WHERE queue_name = 't16_direct'$$,
    'LF002', 'invalid change record', 'a direct change with a malformed ticket setting is refused (LF002)');
SELECT set_config('leasefence.change_ticket', '', true);
SELECT set_config('leasefence.change_reason', E'bad\u202ereason', true);
SELECT throws_ok($$UPDATE durable_jobs.queue_lease_policy SET renewal_enabled = false WHERE queue_name = 't16_direct'$$,
    'LF002', 'invalid change record', 'a direct change whose reason setting has a bidirectional control is refused (LF002)');
SELECT set_config('leasefence.change_reason', '', true);

SELECT throws_ok($$UPDATE durable_jobs.queue_lease_policy SET queue_name = 't16_renamed' WHERE queue_name = 't16_direct'$$,
    'LF002', 'a queue''s lease policy row cannot be renamed', 'renaming a policy row is refused (LF002)');
SELECT throws_ok($$TRUNCATE durable_jobs.queue_lease_policy$$,
    'LF002', 'TRUNCATE of queue_lease_policy is refused', 'TRUNCATE of the policy table, which fires no row trigger, is refused');

DELETE FROM durable_jobs.queue_lease_policy WHERE queue_name = 't16_direct';
SELECT results_eq(
    $$SELECT previous_values ->> 'policy_queue_name', new_values ->> 'policy_queue_name', new_values ->> 'lease_duration'
      FROM durable_jobs.control_evidence_record WHERE queue_name = 't16_direct' AND evidence_kind = 'lease_policy_changed'
      ORDER BY evidence_record_id DESC LIMIT 1$$,
    $$VALUES ('t16_direct', '*', '00:00:30')$$,
    'deleting a queue''s row is recorded: its effective policy becomes the default');
SELECT is_empty($$SELECT * FROM durable_jobs.policy_evidence_mismatches()$$,
    'after the delete the policy table and the evidence still agree');

CREATE TEMP TABLE t16_default ON COMMIT DROP AS SELECT * FROM durable_jobs.queue_lease_policy WHERE queue_name = '*';
DELETE FROM durable_jobs.queue_lease_policy WHERE queue_name = '*';
SELECT results_eq(
    $$SELECT new_values FROM durable_jobs.control_evidence_record WHERE queue_name = '*' AND evidence_kind = 'lease_policy_changed'
      ORDER BY evidence_record_id DESC LIMIT 1$$,
    $$VALUES ('{"policy_queue_name": null}'::jsonb)$$,
    'deleting the default row is recorded as leaving no policy');
INSERT INTO durable_jobs.queue_lease_policy (queue_name, lease_duration, renewal_interval, max_claim_lifetime, renewal_enabled)
SELECT queue_name, lease_duration, renewal_interval, max_claim_lifetime, renewal_enabled FROM t16_default;
SELECT results_eq(
    $$SELECT previous_values IS NULL, new_values ->> 'policy_queue_name' FROM durable_jobs.control_evidence_record
      WHERE queue_name = '*' AND evidence_kind = 'lease_policy_changed' ORDER BY evidence_record_id DESC LIMIT 1$$,
    $$VALUES (true, '*')$$, 'inserting the default row again is recorded, with no previous policy');

-- The audit's comparison finds changes made around the triggers -------------------

SET LOCAL session_replication_role = replica;
UPDATE durable_jobs.queue_lease_policy SET lease_duration = interval '45 seconds' WHERE queue_name = '*';
INSERT INTO durable_jobs.queue_lease_policy (queue_name, lease_duration, renewal_interval, max_claim_lifetime, renewal_enabled)
VALUES ('t16_silent', interval '30 seconds', interval '10 seconds', interval '1 hour', true);
SET LOCAL session_replication_role = origin;
SELECT results_eq(
    $$SELECT queue_name, mismatch FROM durable_jobs.policy_evidence_mismatches()$$,
    $$VALUES ('*', 'policy differs from what its last evidence record says'),
             ('t16_silent', 'policy row has no evidence record')$$,
    'policy_evidence_mismatches finds a superuser change made with triggers off and a row with no evidence');
SET LOCAL session_replication_role = replica;
DELETE FROM durable_jobs.queue_lease_policy WHERE queue_name = 't16_silent';
UPDATE durable_jobs.queue_lease_policy SET lease_duration = interval '30 seconds' WHERE queue_name = '*';
SET LOCAL session_replication_role = origin;
SELECT lives_ok(
    $$SELECT durable_jobs.set_queue_lease_policy('t16_gone', interval '30 seconds', interval '10 seconds',
          interval '1 hour', true, 'pgTAP 16: soon removed without evidence')$$, 'another queue gets a policy');
SET LOCAL session_replication_role = replica;
DELETE FROM durable_jobs.queue_lease_policy WHERE queue_name = 't16_gone';
SET LOCAL session_replication_role = origin;
SELECT results_eq($$SELECT queue_name, mismatch FROM durable_jobs.policy_evidence_mismatches()$$,
    $$VALUES ('t16_gone', 'policy row in the evidence is missing from the table')$$,
    'a row removed without evidence is found');
SET LOCAL session_replication_role = replica;
INSERT INTO durable_jobs.queue_lease_policy (queue_name, lease_duration, renewal_interval, max_claim_lifetime, renewal_enabled)
VALUES ('t16_direct', interval '30 seconds', interval '10 seconds', interval '1 hour', true),
       ('t16_gone', interval '30 seconds', interval '10 seconds', interval '1 hour', true);
SET LOCAL session_replication_role = origin;
SELECT results_eq($$SELECT queue_name, mismatch FROM durable_jobs.policy_evidence_mismatches()$$,
    $$VALUES ('t16_direct', 'policy row exists but the evidence says it was removed')$$,
    'a row put back without evidence after a recorded removal is found');
SET LOCAL session_replication_role = replica;
DELETE FROM durable_jobs.queue_lease_policy WHERE queue_name = 't16_direct';
SET LOCAL session_replication_role = origin;

-- Structured change records ---------------------------------------------------------

SELECT throws_ok(
    $$SELECT durable_jobs.set_queue_lease_policy('t16_pii', interval '30 seconds', interval '10 seconds', interval '1 hour',
          true, 'INC-77 customer 김민수 RRN 900101-1234567 phone 010-1234-5678 pw=hunter2')$$,
    'LF002', 'invalid change record', 'the reason with a resident registration number, phone and password is refused (LF002)');
SELECT ok(durable_jobs.looks_personal_or_secret(r), 'looks like personal data or a secret: ' || label)
FROM (VALUES ('RRN with hyphen', 'customer 900101-1234567'), ('RRN without hyphen', 'id 9001011234567'),
             ('card number (Luhn) in groups', 'card 4111 1111 1111 1111'), ('card number (Luhn) plain', 'paid with 5500005555555559'),
             ('e-mail address', 'asked by kim.minsu@example.co.kr'), ('Korean mobile number', 'call 010-1234-5678'),
             ('international number', 'call +82 10 1234 5678'), ('password assignment', 'password=hunter2'),
             ('pw assignment', 'pw=hunter2'), ('secret assignment', 'SECRET: abc'), ('token assignment', 'token=abc')) AS v(label, r);
SELECT ok(NOT durable_jobs.looks_personal_or_secret(r), 'plain reason accepted: ' || r)
FROM (VALUES ('OPS-1234: raise lease to 60 s for the nightly batch'), ('INC-77: renewal off during incident 77'),
             ('card 4111 1111 1111 1112 is not a Luhn number')) AS v(r);
SELECT is(durable_jobs.passes_luhn('123'), false, 'passes_luhn refuses fewer than 13 digits');

SELECT throws_ok(
    $$SELECT durable_jobs.set_queue_lease_policy('t16_ticket', interval '30 seconds', interval '10 seconds', interval '1 hour',
          true, 'pgTAP 16: no ticket', NULL, NULL)$$,
    'LF002', 'invalid change record', 'the structured overload needs a ticket');
SELECT throws_ok(
    $$SELECT durable_jobs.set_queue_lease_policy('t16_ticket', interval '30 seconds', interval '10 seconds', interval '1 hour',
          true, 'pgTAP 16: bad ticket', 'ops-1', NULL)$$,
    'LF002', 'invalid change record', 'a ticket not matching ^[A-Z][A-Z0-9]+-[0-9]+$ is refused');
SELECT throws_ok(
    $$SELECT durable_jobs.set_queue_lease_policy('t16_ticket', interval '30 seconds', interval '10 seconds', interval '1 hour',
          true, 'pgTAP 16: self approval', 'OPS-2', session_user)$$,
    'LF002', 'invalid change record', 'an approver who is the changer is refused');
SELECT throws_ok(
    $$SELECT durable_jobs.set_queue_lease_policy('t16_ticket', interval '30 seconds', interval '10 seconds', interval '1 hour',
          true, 'pgTAP 16: approver cannot log in', 'OPS-2', 't16_nologin')$$,
    'LF002', 'invalid change record', 'an approver that is not a login role is refused');
SELECT is_empty($$SELECT 1 FROM durable_jobs.control_evidence_record WHERE queue_name IN ('t16_pii', 't16_ticket')$$,
    'the refused changes wrote no evidence');
SELECT is_empty($$SELECT 1 FROM durable_jobs.queue_lease_policy WHERE queue_name IN ('t16_pii', 't16_ticket')$$,
    'the refused changes wrote no policy');
SELECT lives_ok(
    $$SELECT durable_jobs.set_queue_lease_policy('t16_ticket', interval '30 seconds', interval '10 seconds', interval '1 hour',
          true, 'raise lease for batch', 'OPS-3', 't16_approver')$$,
    'a structured change with ticket and another login as approver is accepted');
SELECT results_eq(
    $$SELECT change_ticket, change_approver, changed_by_role FROM durable_jobs.control_evidence_record
      WHERE queue_name = 't16_ticket' AND evidence_kind = 'lease_policy_changed'$$,
    $$VALUES ('OPS-3', 't16_approver', session_user::text COLLATE "default")$$,
    'the record carries the ticket, the approver and the changer');
SELECT is(current_setting('leasefence.change_reason'), '',
    'set_queue_lease_policy clears the change settings after its change, so a later direct change is not credited with its reason');

-- Deployments -------------------------------------------------------------------

SELECT throws_ok($$SELECT durable_jobs.record_deployment_version('1.2.4', 'deployed by kim@example.com')$$,
    'LF002', 'invalid change record', 'a deployment reason holding an e-mail address is refused (LF002)');
SELECT throws_ok(
    $$SELECT durable_jobs.record_deployment('1.2.4', 'not-a-digest', 'jkim', 'REL-9', 'release 1.2.4')$$,
    'LF002', 'invalid deployment record', 'a deployment record without a commit or artifact digest is refused');
SELECT throws_ok(
    $$SELECT durable_jobs.record_deployment('1.2.4', repeat('a', 40), 'jkim', 'REL-9', 'token=abc')$$,
    'LF002', 'invalid change record', 'a deployment record with a secret in its reason is refused');
SELECT lives_ok(
    $$SELECT durable_jobs.record_deployment('1.2.4', 'sha256:' || repeat('b', 64), 'jkim', 'REL-9', 'release 1.2.4')$$,
    'a deployment record with version, artifact digest, person and ticket is accepted');
SELECT results_eq(
    $$SELECT new_values, change_ticket FROM durable_jobs.control_evidence_record
      WHERE evidence_kind = 'deployment_recorded' ORDER BY evidence_record_id DESC LIMIT 1$$,
    $$VALUES ('{"deployed_by": "jkim", "source_digest": "sha256:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb", "deployment_version": "1.2.4"}'::jsonb, 'REL-9')$$,
    'the deployment record carries version, digest, person and ticket');

-- Tampering is evident --------------------------------------------------------------

SELECT is_empty($$SELECT * FROM t16_broken_links$$, 'before tampering every link holds');
SELECT is(
    (SELECT count(*)::integer FROM durable_jobs.control_evidence_records(NULL, NULL)),
    (SELECT count(*)::integer FROM durable_jobs.control_evidence_record),
    'control_evidence_records with open bounds returns every record');
ALTER TABLE durable_jobs.control_evidence_record DISABLE TRIGGER control_evidence_record_append_only;
UPDATE durable_jobs.control_evidence_record SET change_reason = 'rewritten'
WHERE evidence_record_id = (SELECT min(evidence_record_id) FROM durable_jobs.control_evidence_record WHERE queue_name = 't16_ticket');
SELECT results_eq($$SELECT * FROM t16_broken_links$$,
    $$SELECT min(evidence_record_id) FROM durable_jobs.control_evidence_record WHERE queue_name = 't16_ticket'$$,
    'an altered record no longer matches its hash');
DELETE FROM durable_jobs.control_evidence_record WHERE queue_name = 't16_ticket';
SELECT isnt_empty($$SELECT * FROM t16_broken_links$$, 'a deleted record breaks the link of the record after it');
ALTER TABLE durable_jobs.control_evidence_record ENABLE TRIGGER control_evidence_record_append_only;

SELECT * FROM finish();
ROLLBACK;
