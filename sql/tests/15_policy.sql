-- 15_policy: the lease policy of each queue. set_queue_lease_policy
-- (boundaries, LF002 for every invalid value with nothing changed, effect
-- on the next claim or renewal only), record_deployment_version, and the
-- auditor read functions; then update_queue_lease_policy, which changes
-- only the settings given. The policy functions refuse a caller that is
-- not READ COMMITTED: those checks run first, each in a transaction of its
-- own, before anything is written; the rest is one transaction. Policy
-- intervals are absolute durations, and reasons are plain text.
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
SELECT plan(144);
\ir fixture/fixture.sql

COMMIT;

-- A snapshot older than the statement is refused (nothing above writes data).
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT throws_ok(
    $$SELECT * FROM durable_jobs.update_queue_lease_policy('t15a_rr', NULL, NULL, NULL, false, 'CHG-24: repeatable read', NULL, NULL)$$,
    'LF003', 'update_queue_lease_policy must run in a READ COMMITTED transaction',
    'a REPEATABLE READ caller is refused with LF003');
COMMIT;
BEGIN ISOLATION LEVEL SERIALIZABLE;
SELECT throws_ok(
    $$SELECT * FROM durable_jobs.update_queue_lease_policy('t15a_rr', NULL, NULL, NULL, false, 'CHG-24: serializable', NULL, NULL)$$,
    'LF003', 'update_queue_lease_policy must run in a READ COMMITTED transaction',
    'a SERIALIZABLE caller is refused with LF003');
COMMIT;

-- The same for set_queue_lease_policy (nothing above writes data either).
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT throws_ok(
    $$SELECT durable_jobs.set_queue_lease_policy('t15b_rr', interval '30 seconds', interval '10 seconds',
          interval '1 hour', true, 'pgTAP 15: repeatable read')$$,
    'LF003', 'set_queue_lease_policy must run in a READ COMMITTED transaction',
    'a REPEATABLE READ caller of set_queue_lease_policy is refused with LF003');
COMMIT;
BEGIN ISOLATION LEVEL SERIALIZABLE;
SELECT throws_ok(
    $$SELECT durable_jobs.set_queue_lease_policy('t15b_rr', interval '30 seconds', interval '10 seconds',
          interval '1 hour', true, 'pgTAP 15: serializable')$$,
    'LF003', 'set_queue_lease_policy must run in a READ COMMITTED transaction',
    'a SERIALIZABLE caller of set_queue_lease_policy is refused with LF003');
COMMIT;

BEGIN;

-- ============================================================================
-- Durations and text (migration 004, assigned number 005): policy
-- intervals are absolute durations (no month part, no mixed signs, '1 day'
-- stored as 24 hours); a policy change bounds its idle time and takes the
-- evidence-order lock; change and deployment reasons are operator text
-- without control or bidirectional-control characters. (Its isolation
-- checks are at the top of the file.) It runs first in this transaction,
-- so that the idle bound it finds was set by its own policy change. The
-- two-session races are in sql/integration/counting_test.go.
-- ============================================================================

SELECT is_empty($$SELECT 1 FROM durable_jobs.queue_lease_policy WHERE queue_name = 't15b_rr'$$,
    'the refused calls wrote no policy');
SELECT is_empty($$SELECT 1 FROM durable_jobs.control_evidence_record WHERE queue_name = 't15b_rr'$$,
    'the refused calls wrote no evidence');

CREATE TEMP TABLE t15b_mark (label text PRIMARY KEY, value bigint NOT NULL) ON COMMIT DROP;
INSERT INTO t15b_mark SELECT 'evidence_before', count(*) FROM durable_jobs.control_evidence_record;

-- Absolute durations --------------------------------------------------------

SELECT lives_ok(
    $$SELECT durable_jobs.set_queue_lease_policy('t15b_days', interval '1 day', interval '1 hour',
          interval '2 days', true, 'pgTAP 15: a policy in day units')$$,
    'a policy given in day units is accepted');
SELECT results_eq(
    $$SELECT lease_duration::text, renewal_interval::text, max_claim_lifetime::text
      FROM durable_jobs.queue_lease_policies() WHERE queue_name = 't15b_days'$$,
    $$VALUES ('24:00:00', '01:00:00', '48:00:00')$$,
    'day units are stored as absolute durations: 1 day is 24:00:00, so no TimeZone can stretch or shrink a lease');
SELECT results_eq(
    $$SELECT new_values ->> 'lease_duration', new_values ->> 'max_claim_lifetime'
      FROM durable_jobs.control_evidence_record WHERE queue_name = 't15b_days' AND evidence_kind = 'lease_policy_changed'$$,
    $$VALUES ('24:00:00', '48:00:00')$$,
    'the evidence records the durations as stored');
SELECT is(
    (SELECT current_setting('idle_in_transaction_session_timeout')), '1min',
    'a policy change bounds how long its transaction may then stay idle (60 s) so it cannot hold evidence back for long');
SET LOCAL idle_in_transaction_session_timeout = '30s';
SELECT lives_ok(
    $$SELECT durable_jobs.set_queue_lease_policy('t15b_days', interval '1 day', interval '1 hour',
          interval '2 days', true, 'pgTAP 15: a shorter idle bound of the session')$$,
    'a second change in the same transaction is accepted');
SELECT is(
    (SELECT current_setting('idle_in_transaction_session_timeout')), '30s',
    'a session''s own shorter idle bound is kept');
SELECT ok(
    (SELECT o.xmax <> '0'::xid FROM durable_jobs.evidence_order_lock o),
    'a policy change locks the evidence-order lock (since migration 024 the row of evidence_order_lock; held to the end of the transaction: sql/integration TestEvidenceOrderLockIsHeldToCommitAndBoundsTheWait)');

SELECT throws_ok(
    format($$SELECT durable_jobs.set_queue_lease_policy('t15b_bad', %L::interval, %L::interval, %L::interval, true,
             'pgTAP 15: unsafe interval')$$, b.lease, b.renewal, b.max_life),
    'LF002', 'invalid lease policy', b.why)
FROM (VALUES
    ('1 mon -29 days -1 second', '10 seconds', '1 day', 'a lease of one month minus 29 days and a second is refused (month part)'),
    ('1 day', '10 seconds', '1 mon -23 days', 'a max claim lifetime of one month minus 23 days is refused (month part)'),
    ('1 mon', '10 seconds', '2 mons', 'a lease of one month is refused'),
    ('1 day -1 second', '10 seconds', '2 days', 'a lease with day and time parts of opposite signs is refused'),
    ('-1 day +25 hours', '10 seconds', '2 days', 'a lease of minus one day plus 25 hours is refused (mixed signs)'),
    ('30 seconds', '1 day -86390 seconds', '1 hour', 'a renewal interval with mixed signs is refused'),
    ('1 year', '10 seconds', '1 year', 'a lease in years is refused')) AS b(lease, renewal, max_life, why);

-- Operator text -------------------------------------------------------------

SELECT throws_ok(
    format($$SELECT durable_jobs.set_queue_lease_policy('t15b_text', interval '30 seconds', interval '10 seconds',
             interval '1 hour', true, %L)$$, r.reason),
    'LF002', 'invalid lease policy', r.why)
FROM (VALUES
    (E'\u001b[2J\u001b[31mall good', 'a change reason with ESC (a terminal escape) is refused'),
    (E'line one\nline two', 'a change reason with a newline is refused'),
    (E'tab\there', 'a change reason with a tab is refused'),
    (E'C1 \u0085 next line', 'a change reason with a C1 control character is refused'),
    (E'invoice \u202Efdp.exe', 'a change reason with U+202E (right-to-left override) is refused'),
    (E'isolate \u2066x\u2069', 'a change reason with a bidirectional isolate is refused'),
    (E'mark \u200F', 'a change reason with a right-to-left mark is refused'),
    (E'para \u2029 sep', 'a change reason with a paragraph separator is refused')) AS r(reason, why);
SELECT lives_ok(
    $$SELECT durable_jobs.set_queue_lease_policy('t15b_text', interval '30 seconds', interval '10 seconds',
          interval '1 hour', true, 'Nachtlauf für Größe 🌙 — “ok”')$$,
    'a change reason in plain Unicode text (accents, quotes, emoji) is accepted');
SELECT throws_ok(
    $$SELECT durable_jobs.record_deployment_version('v1.2.3', E'release \u202Eevil')$$,
    'LF003', NULL, 'a deployment reason with U+202E is refused with LF003');
SELECT throws_ok(
    $$SELECT durable_jobs.record_deployment_version('v1.2.3', E'release\u001b[0m')$$,
    'LF003', NULL, 'a deployment reason with ESC is refused with LF003');
SELECT is((SELECT count(*) FROM durable_jobs.control_evidence_record) - (SELECT value FROM t15b_mark WHERE label = 'evidence_before'),
    3::bigint, 'only the three accepted policy changes wrote evidence');

-- ============================================================================
-- set_queue_lease_policy and the auditor read functions.
-- ============================================================================

-- Fixtures -------------------------------------------------------------------

-- The claims of worker-t08 (pg_temp.claim_job of the fixture), by label.
CREATE TEMP VIEW t15c_claim AS
SELECT label AS claim_label, job_record_id AS job_id, lease_claim_token AS claim_token, owner_id, lease_expires_at,
       database_time AS claimed_at, lease_renewal_interval AS renewal_interval
FROM claims;
CREATE TEMP TABLE t15c_mark (mark_label text PRIMARY KEY, mark_value text NOT NULL);
GRANT ALL ON t15c_claim, t15c_mark TO PUBLIC;

-- Everything a rejected policy change could have touched.
CREATE FUNCTION pg_temp.t15c_policy_state()
RETURNS text LANGUAGE sql AS $$
    SELECT coalesce(string_agg(row(p.*)::text, ';' ORDER BY p.queue_name), '')
        || ' evidence=' || (SELECT count(*) FROM durable_jobs.control_evidence_record)
    FROM durable_jobs.queue_lease_policy p;
$$;

-- Accepted boundaries --------------------------------------------------------

SELECT lives_ok($$SELECT durable_jobs.set_queue_lease_policy('t15c.lower', interval '1 second',
                    interval '100 milliseconds', interval '1 second', true, 'lower bounds')$$,
                'a policy at every lower bound is accepted (1 s lease, 100 ms renewal, lifetime = lease)');
SELECT results_eq(
    $$SELECT lease_duration, renewal_interval, max_claim_lifetime, renewal_enabled, changed_by_role
      FROM durable_jobs.queue_lease_policies() WHERE queue_name = 't15c.lower'$$,
    $$VALUES (interval '1 second', interval '100 milliseconds', interval '1 second', true, (session_user::text COLLATE "default"))$$,
    'the lower-bound policy is stored as given, changed by the session user');
SELECT lives_ok($$SELECT durable_jobs.set_queue_lease_policy('t15c.upper', interval '24 hours',
                    interval '8 hours', interval '7 days', false, 'upper bounds')$$,
                'a policy at every upper bound is accepted (24 h lease, renewal = lease / 3, 7 day lifetime)');
SELECT results_eq(
    $$SELECT lease_duration, renewal_interval, max_claim_lifetime, renewal_enabled
      FROM durable_jobs.queue_lease_policies() WHERE queue_name = 't15c.upper'$$,
    $$VALUES (interval '24 hours', interval '8 hours', interval '7 days', false)$$,
    'the upper-bound policy is stored as given');
SELECT lives_ok($$SELECT durable_jobs.set_queue_lease_policy('t15c.upper', interval '3 seconds',
                    interval '1 second', interval '3 seconds', true, 'replace')$$,
                'a queue''s policy can be replaced (renewal exactly lease / 3)');
SELECT results_eq(
    $$SELECT lease_duration, renewal_interval, max_claim_lifetime, renewal_enabled
      FROM durable_jobs.queue_lease_policies() WHERE queue_name = 't15c.upper'$$,
    $$VALUES (interval '3 seconds', interval '1 second', interval '3 seconds', true)$$,
    'a replaced policy holds the new values only (one row per queue)');
SELECT is((SELECT count(*) FROM durable_jobs.queue_lease_policies() WHERE queue_name = 't15c.upper'), 1::bigint,
          'a replaced policy is still one row');

SET LOCAL ROLE durable_job_operator;
SELECT lives_ok($$SELECT durable_jobs.set_queue_lease_policy('t15c.by_operator', interval '2 seconds',
                    interval '500 milliseconds', interval '1 minute', true, 'operator change')$$,
                'an operator may set a lease policy');
RESET ROLE;
SET LOCAL ROLE durable_job_worker;
SELECT throws_ok($$SELECT durable_jobs.set_queue_lease_policy('t15c.by_worker', interval '2 seconds',
                     interval '500 milliseconds', interval '1 minute', true, 'worker change')$$,
                 '42501', NULL, 'a worker cannot set a lease policy');
RESET ROLE;

-- Rejected values: LF002 and nothing changed ---------------------------------

INSERT INTO t15c_mark VALUES ('policy_state', pg_temp.t15c_policy_state());
CREATE TEMP TABLE t15c_invalid (case_order serial, case_text text NOT NULL, queue_name text, lease_duration interval,
                               renewal_interval interval, max_claim_lifetime interval, renewal_enabled boolean,
                               change_reason text);
INSERT INTO t15c_invalid (case_text, queue_name, lease_duration, renewal_interval, max_claim_lifetime,
                         renewal_enabled, change_reason) VALUES
    ('a lease under 1 second',             't15c.upper', '999 milliseconds', '100 milliseconds', '1 minute', true, 'r'),
    ('a lease over 24 hours',              't15c.upper', '24 hours 1 second', '1 hour', '7 days', true, 'r'),
    ('a renewal interval under 100 ms',    't15c.upper', '3 seconds', '99 milliseconds', '1 minute', true, 'r'),
    ('a renewal interval over lease / 3',  't15c.upper', '3 seconds', '1001 milliseconds', '1 minute', true, 'r'),
    ('a zero renewal interval',            't15c.upper', '3 seconds', '0', '1 minute', true, 'r'),
    ('a negative lease',                   't15c.upper', '-30 seconds', '100 milliseconds', '1 minute', true, 'r'),
    ('a lifetime shorter than the lease',  't15c.upper', '3 seconds', '1 second', '2999 milliseconds', true, 'r'),
    ('a lifetime over 7 days',             't15c.upper', '3 seconds', '1 second', '7 days 1 second', true, 'r'),
    ('a NULL lease',                       't15c.upper', NULL, '1 second', '1 minute', true, 'r'),
    ('a NULL renewal interval',            't15c.upper', '3 seconds', NULL, '1 minute', true, 'r'),
    ('a NULL lifetime',                    't15c.upper', '3 seconds', '1 second', NULL, true, 'r'),
    ('a NULL renewal switch',              't15c.upper', '3 seconds', '1 second', '1 minute', NULL, 'r'),
    ('a NULL reason',                      't15c.upper', '3 seconds', '1 second', '1 minute', true, NULL),
    ('an empty reason',                    't15c.upper', '3 seconds', '1 second', '1 minute', true, ''),
    ('a reason of spaces only',            't15c.upper', '3 seconds', '1 second', '1 minute', true, '   '),
    ('a reason of tabs and newlines only', 't15c.upper', '3 seconds', '1 second', '1 minute', true, E'\t\n '),
    ('a reason over 500 characters',       't15c.upper', '3 seconds', '1 second', '1 minute', true, repeat('r', 501)),
    ('an uppercase queue name',            't15c.Upper', '3 seconds', '1 second', '1 minute', true, 'r'),
    ('a 64-character queue name',          't' || repeat('x', 63), '3 seconds', '1 second', '1 minute', true, 'r'),
    ('an empty queue name',                '', '3 seconds', '1 second', '1 minute', true, 'r'),
    ('a queue name with a leading digit',  '8t08', '3 seconds', '1 second', '1 minute', true, 'r'),
    ('a queue name with a space',          't08 upper', '3 seconds', '1 second', '1 minute', true, 'r'),
    ('a NULL queue name',                  NULL, '3 seconds', '1 second', '1 minute', true, 'r'),
    ('a new queue with an invalid lease',  't15c.never', '0', '100 milliseconds', '1 minute', true, 'r'),
    ('an invalid default policy',          '*', '3 seconds', '2 seconds', '1 minute', true, 'r');
SELECT throws_ok(
    format('SELECT durable_jobs.set_queue_lease_policy(%L, %L::interval, %L::interval, %L::interval, %L::boolean, %L)',
           queue_name, lease_duration, renewal_interval, max_claim_lifetime, renewal_enabled, change_reason),
    'LF002', NULL, format('set_queue_lease_policy rejects %s with LF002', case_text))
FROM t15c_invalid ORDER BY case_order;
SELECT is(pg_temp.t15c_policy_state(), (SELECT mark_value FROM t15c_mark WHERE mark_label = 'policy_state'),
          'rejected policy changes leave every policy row and the evidence count as they were');
SELECT is_empty($$SELECT 1 FROM durable_jobs.queue_lease_policies() WHERE queue_name = 't15c.never'$$,
                'a rejected policy for a new queue creates no row');
SELECT results_eq(
    $$SELECT lease_duration, renewal_interval, max_claim_lifetime, renewal_enabled
      FROM durable_jobs.queue_lease_policies() WHERE queue_name = '*'$$,
    $$VALUES (interval '30 seconds', interval '10 seconds', interval '24 hours', true)$$,
    'the bundle''s default policy is 30 s lease, 10 s renewal, 24 h lifetime, renewal enabled');

-- A policy change affects the next claim or renewal, never a granted expiry --

DO $$ BEGIN
    PERFORM durable_jobs.set_queue_lease_policy('t15c.change', interval '10 minutes', interval '1 minute',
                                                interval '1 hour', true, 'before');
    PERFORM durable_jobs.enqueue_job('t15c.change', '{}');
    PERFORM durable_jobs.enqueue_job('t15c.change', '{}');
    PERFORM pg_temp.claim_job('first', 't15c.change', 'worker-t08');
    PERFORM durable_jobs.set_queue_lease_policy('t15c.change', interval '2 minutes', interval '30 seconds',
                                                interval '1 hour', true, 'shorter lease');
    PERFORM pg_temp.claim_job('second', 't15c.change', 'worker-t08');
END $$;
SELECT is(lease_expires_at - claimed_at, interval '10 minutes', 'a claim gets the lease duration in force at claim time')
FROM t15c_claim WHERE claim_label = 'first';
SELECT is((SELECT s.lease_expires_at FROM durable_jobs.job_lifecycle_state(job_id) s), lease_expires_at,
          'a shorter lease policy does not shorten an expiry already granted')
FROM t15c_claim WHERE claim_label = 'first';
SELECT results_eq(
    format('SELECT %L::timestamptz - %L::timestamptz, %L::interval', lease_expires_at, claimed_at, renewal_interval),
    $$VALUES (interval '2 minutes', interval '30 seconds')$$,
    'the next claim after a policy change gets the new lease duration and renewal interval')
FROM t15c_claim WHERE claim_label = 'second';
SELECT results_eq(
    format('SELECT renewal_outcome, lease_expires_at FROM durable_jobs.renew_job_lease(%s, %L, %L)',
           job_id, claim_token, owner_id),
    format('VALUES (''renewed'', %L::timestamptz)', lease_expires_at),
    'a renewal under a shorter lease never moves the granted expiry earlier')
FROM t15c_claim WHERE claim_label = 'first';
DO $$ BEGIN
    PERFORM durable_jobs.set_queue_lease_policy('t15c.change', interval '20 minutes', interval '5 minutes',
                                                interval '7 days', true, 'longer lease');
END $$;
-- (The expiry is computed a moment before the reported database_time, so the
-- difference is a hair under the lease duration.)
SELECT ok((SELECT r.lease_expires_at - r.database_time BETWEEN interval '19 minutes 59 seconds' AND interval '20 minutes'
           FROM durable_jobs.renew_job_lease(job_id, claim_token, owner_id) r),
          'the next renewal after a policy change uses the new lease duration')
FROM t15c_claim WHERE claim_label = 'first';
DO $$ BEGIN
    PERFORM durable_jobs.set_queue_lease_policy('t15c.change', interval '24 hours', interval '1 hour',
                                                interval '7 days', true, 'longest lease');
END $$;
SELECT is((SELECT r.lease_expires_at FROM durable_jobs.renew_job_lease(job_id, claim_token, owner_id) r),
          claimed_at + interval '1 hour',
          'a renewal never passes the claim time plus the max claim lifetime in force at claim time')
FROM t15c_claim WHERE claim_label = 'first';
DO $$ BEGIN
    PERFORM durable_jobs.set_queue_lease_policy('t15c.change', interval '24 hours', interval '1 hour',
                                                interval '7 days', false, 'renewal off');
END $$;
SELECT results_eq(
    format('SELECT renewal_outcome, lease_expires_at FROM durable_jobs.renew_job_lease(%s, %L, %L)',
           job_id, claim_token, owner_id),
    format('VALUES (''renewal_disabled''::text, %L::timestamptz)', lease_expires_at),
    'after renewal is switched off, the next renewal is renewal_disabled with the expiry unchanged')
FROM t15c_claim WHERE claim_label = 'second';

-- '*' is the default for queues without their own policy.
SELECT lives_ok($$SELECT durable_jobs.set_queue_lease_policy('*', interval '45 seconds', interval '15 seconds',
                    interval '2 hours', true, 'new default')$$,
                'the default policy ''*'' can be set');
DO $$ BEGIN
    PERFORM durable_jobs.enqueue_job('t15c.default', '{}');
    PERFORM pg_temp.claim_job('default', 't15c.default', 'worker-t08');
END $$;
SELECT results_eq(
    format('SELECT %L::timestamptz - %L::timestamptz, %L::interval', lease_expires_at, claimed_at, renewal_interval),
    $$VALUES (interval '45 seconds', interval '15 seconds')$$,
    'a queue without its own policy is claimed under the new default policy')
FROM t15c_claim WHERE claim_label = 'default';

-- record_deployment_version --------------------------------------------------

INSERT INTO t15c_mark SELECT 'evidence_before_deploy', count(*)::text FROM durable_jobs.control_evidence_record;
SELECT lives_ok($$SELECT durable_jobs.record_deployment_version('v1.4.0+build.27_rc-1', 'release 1.4.0')$$,
                'record_deployment_version accepts a well-formed version and reason');
SELECT results_eq(
    $$SELECT evidence_kind, queue_name, previous_values, new_values, change_reason, changed_by_role
      FROM durable_jobs.control_evidence_record ORDER BY evidence_record_id DESC LIMIT 1$$,
    $$VALUES ('deployment_recorded', NULL::text, NULL::jsonb, '{"deployment_version": "v1.4.0+build.27_rc-1"}'::jsonb,
              'release 1.4.0', (session_user::text COLLATE "default"))$$,
    'record_deployment_version appends deployment_recorded evidence with the version, reason and session user');
SELECT lives_ok(format('SELECT durable_jobs.record_deployment_version(%L, %L)', 'A' || repeat('9', 63), repeat('r', 500)),
                'record_deployment_version accepts a 64-character version and a 500-character reason');
INSERT INTO t15c_mark SELECT 'evidence_after_deploy', count(*)::text FROM durable_jobs.control_evidence_record;
SELECT throws_ok(format('SELECT durable_jobs.record_deployment_version(%L, ''r'')', v), 'LF003', NULL,
                 format('record_deployment_version rejects %s with LF003', t))
FROM (VALUES (NULL, 'a NULL version'), ('', 'an empty version'), ('-1.0', 'a version with a leading dash'),
             ('1.0 beta', 'a version with a space'), ('v1/0', 'a version with a slash'),
             ('A' || repeat('9', 64), 'a 65-character version')) AS bad(v, t);
SELECT throws_ok(format('SELECT durable_jobs.record_deployment_version(''1.0.0'', %L)', r), 'LF003', NULL,
                 format('record_deployment_version rejects %s with LF003', t))
FROM (VALUES (NULL, 'a NULL reason'), ('', 'an empty reason'), ('   ', 'a reason of spaces only'),
             (E'\t\n ', 'a reason of tabs and newlines only'),
             (repeat('r', 501), 'a reason over 500 characters')) AS bad(r, t);
SELECT is((SELECT count(*)::text FROM durable_jobs.control_evidence_record),
          (SELECT mark_value FROM t15c_mark WHERE mark_label = 'evidence_after_deploy'),
          'rejected deployment versions append no evidence');
SET LOCAL ROLE durable_job_operator;
SELECT throws_ok($$SELECT durable_jobs.record_deployment_version('1.0.0', 'operator')$$, '42501', NULL,
                 'record_deployment_version is not executable by an operator (deploying role only)');
RESET ROLE;

-- Auditor functions ----------------------------------------------------------

DO $$ BEGIN
    -- t15c.health: one lease that will expire within the renewal interval of a
    -- later, longer policy, and one claimed under that policy that will not.
    PERFORM durable_jobs.set_queue_lease_policy('t15c.health', interval '30 seconds', interval '10 seconds',
                                                interval '1 hour', true, 'health');
    PERFORM durable_jobs.enqueue_job('t15c.health', '{}');
    PERFORM durable_jobs.enqueue_job('t15c.health', '{}');
    PERFORM pg_temp.claim_job('health_soon', 't15c.health', 'worker-t08');
    PERFORM durable_jobs.set_queue_lease_policy('t15c.health', interval '24 hours', interval '8 hours',
                                                interval '7 days', true, 'health longer');
    PERFORM pg_temp.claim_job('health_later', 't15c.health', 'worker-t08');
    -- t15c.expiry: two 1 s leases, left to expire.
    PERFORM durable_jobs.set_queue_lease_policy('t15c.expiry', interval '1 second', interval '300 milliseconds',
                                                interval '1 minute', true, 'expiry');
    PERFORM durable_jobs.enqueue_job('t15c.expiry', '{}');
    PERFORM durable_jobs.enqueue_job('t15c.expiry', '{}');
    PERFORM pg_temp.claim_job('expiry_reclaimed', 't15c.expiry', 'worker-t08');
    PERFORM pg_temp.claim_job('expiry_left', 't15c.expiry', 'worker-t08');
    -- t15c.totals: two QUEUED, one SUCCEEDED, one CANCELLED.
    PERFORM durable_jobs.enqueue_job('t15c.totals', '{}') FROM generate_series(1, 4);
    PERFORM pg_temp.claim_job('totals_done', 't15c.totals', 'worker-t08');
    PERFORM durable_jobs.complete_job(job_id, claim_token, owner_id) FROM t15c_claim WHERE claim_label = 'totals_done';
    PERFORM pg_temp.claim_job('totals_cancelled', 't15c.totals', 'worker-t08');
    PERFORM durable_jobs.cancel_job(job_id) FROM t15c_claim WHERE claim_label = 'totals_cancelled';
    PERFORM pg_sleep(1.1);
END $$;
-- One reclaim (the first expired lease) and one stale renewal (its old token).
SELECT is((SELECT job_record_id FROM durable_jobs.claim_next_job('t15c.expiry', 'worker-t15c-b')), job_id,
          'the earliest expired lease is reclaimed first')
FROM t15c_claim WHERE claim_label = 'expiry_reclaimed';
SELECT is((SELECT renewal_outcome FROM durable_jobs.renew_job_lease(job_id, claim_token, owner_id)), 'stale',
          'renewing a reclaimed claim is stale')
FROM t15c_claim WHERE claim_label = 'expiry_reclaimed';

INSERT INTO t15c_mark SELECT 'newest_version', version::text FROM public.leasefence_schema_version;
SET LOCAL ROLE durable_job_auditor;
INSERT INTO t15c_mark SELECT 'health_before', clock_timestamp()::text;
CREATE TEMP TABLE t15c_health AS SELECT * FROM durable_jobs.lease_health_by_queue();
INSERT INTO t15c_mark SELECT 'health_after', clock_timestamp()::text;
SELECT results_eq(
    $$SELECT running_jobs, expiring_within_interval, expired_awaiting_reclaim, reclaims_last_hour,
             stale_renewals_last_hour FROM t15c_health WHERE queue_name = 't15c.health'$$,
    $$VALUES (2::bigint, 1::bigint, 0::bigint, 0::bigint, 0::bigint)$$,
    'lease_health_by_queue counts running leases and those expiring within the renewal interval');
SELECT results_eq(
    $$SELECT running_jobs, expiring_within_interval, expired_awaiting_reclaim, reclaims_last_hour,
             stale_renewals_last_hour FROM t15c_health WHERE queue_name = 't15c.expiry'$$,
    $$VALUES (2::bigint, 0::bigint, 1::bigint, 1::bigint, 1::bigint)$$,
    'lease_health_by_queue counts expired leases awaiting reclaim, reclaims and stale renewals in the last hour');
SELECT ok(oldest_lease_age >= interval '1.1 seconds' AND oldest_lease_age < interval '1 minute',
          'lease_health_by_queue reports the age of the oldest running claim')
FROM t15c_health WHERE queue_name = 't15c.expiry';
SELECT results_eq(
    $$SELECT running_jobs, expiring_within_interval, expired_awaiting_reclaim, reclaims_last_hour,
             stale_renewals_last_hour, oldest_lease_age FROM t15c_health WHERE queue_name = 't15c.lower'$$,
    $$VALUES (0::bigint, 0::bigint, 0::bigint, 0::bigint, 0::bigint, NULL::interval)$$,
    'lease_health_by_queue shows a queue that has a policy but no job, with zeros');
SELECT results_eq(
    $$SELECT running_jobs, expired_awaiting_reclaim FROM t15c_health WHERE queue_name = 't15c.totals'$$,
    $$VALUES (0::bigint, 0::bigint)$$,
    'lease_health_by_queue shows a queue that has jobs but no policy of its own');
SELECT is((SELECT count(*) FROM t15c_health WHERE queue_name IN ('t15c.health', 't15c.expiry', 't15c.totals', '*')),
          4::bigint, 'lease_health_by_queue has one row per queue, the default ''*'' included');
SELECT is((SELECT count(DISTINCT database_time) FROM t15c_health), 1::bigint,
          'lease_health_by_queue reads every queue at one database time');
SELECT ok((SELECT bool_and(database_time BETWEEN (SELECT mark_value::timestamptz FROM t15c_mark WHERE mark_label = 'health_before')
                                             AND (SELECT mark_value::timestamptz FROM t15c_mark WHERE mark_label = 'health_after'))
           FROM t15c_health),
          'lease_health_by_queue''s database_time is the clock time it was read at');

SELECT results_eq(
    $$SELECT queue_name, lease_duration, renewal_interval, max_claim_lifetime, renewal_enabled, changed_by_role
      FROM durable_jobs.queue_lease_policies() WHERE queue_name IN ('*', 't15c.change', 't15c.lower')$$,
    $$VALUES ('*', interval '45 seconds', interval '15 seconds', interval '2 hours', true, (session_user::text COLLATE "default")),
             ('t15c.change', interval '24 hours', interval '1 hour', interval '7 days', false, (session_user::text COLLATE "default")),
             ('t15c.lower', interval '1 second', interval '100 milliseconds', interval '1 second', true, (session_user::text COLLATE "default"))$$,
    'queue_lease_policies lists every queue''s policy, ordered by queue name');
SELECT ok((SELECT bool_and(changed_at <= clock_timestamp() AND changed_at >= now())
           FROM durable_jobs.queue_lease_policies() WHERE queue_name LIKE 't15c.%'),
          'queue_lease_policies shows when each policy was changed, by database time');

SELECT results_eq(
    format('SELECT outcome_kind, outcome_count FROM durable_jobs.lease_outcome_totals(%L) WHERE queue_name = ''t15c.expiry''',
           now()),
    $$VALUES ('reclaim', 1::bigint), ('stale_renewal', 1::bigint)$$,
    'lease_outcome_totals sums reclaims and stale renewals per queue since a time');
SELECT results_eq(
    $$SELECT outcome_kind, outcome_count FROM durable_jobs.lease_outcome_totals(NULL) WHERE queue_name = 't15c.expiry'$$,
    $$VALUES ('reclaim', 1::bigint), ('stale_renewal', 1::bigint)$$,
    'lease_outcome_totals with a NULL start sums every tally');
SELECT is_empty(
    $$SELECT 1 FROM durable_jobs.lease_outcome_totals(clock_timestamp() + interval '2 minutes')
      WHERE queue_name = 't15c.expiry'$$,
    'lease_outcome_totals counts nothing recorded before its start');

SELECT results_eq(
    $$SELECT job_status, job_count FROM durable_jobs.job_status_totals() WHERE queue_name = 't15c.totals'$$,
    $$VALUES ('QUEUED', 2::bigint), ('SUCCEEDED', 1::bigint), ('CANCELLED', 1::bigint)$$,
    'job_status_totals counts each queue''s jobs per status');
SELECT results_eq(
    $$SELECT job_status, job_count FROM durable_jobs.job_status_totals() WHERE queue_name = 't15c.expiry'$$,
    $$VALUES ('RUNNING', 2::bigint)$$,
    'job_status_totals counts expired-but-unreclaimed jobs as RUNNING');

SELECT results_eq(
    $$SELECT migration_version FROM durable_jobs.bundle_migration_version()$$,
    format('VALUES (%s)', (SELECT mark_value FROM t15c_mark WHERE mark_label = 'newest_version')),
    'bundle_migration_version is the version tern recorded');
SELECT ok((SELECT applied_at <= now() FROM durable_jobs.bundle_migration_version()),
          'bundle_migration_version says when the migration was applied');
RESET ROLE;

-- No auditor function returns a payload, token, digest, owner, idempotency key or job id.
SELECT is(
    ARRAY(SELECT p.proname || '.' || a.arg_name
          FROM pg_proc p, unnest(p.proargnames, p.proargmodes) AS a(arg_name, arg_mode)
          WHERE p.oid IN ('durable_jobs.lease_health_by_queue()'::regprocedure,
                          'durable_jobs.queue_lease_policies()'::regprocedure,
                          'durable_jobs.control_evidence_history(timestamptz)'::regprocedure,
                          'durable_jobs.lease_outcome_totals(timestamptz)'::regprocedure,
                          'durable_jobs.job_status_totals()'::regprocedure,
                          'durable_jobs.bundle_migration_version()'::regprocedure)
            AND a.arg_mode = 't' AND a.arg_name ~ '(payload|token|digest|owner|idempotency|job_record_id)'),
    ARRAY[]::text[],
    'no auditor function has a payload, token, digest, owner, idempotency key or job id column');

-- ============================================================================
-- Partial changes: migration 016 (functions/policy.sql).
-- update_queue_lease_policy changes only the settings given and keeps the
-- others from the queue's effective policy (its own row, else '*'), read
-- after the evidence-order lock; it returns the policy as written and is
-- granted to operators only. Bad input is refused with the documented
-- SQLSTATE and changes nothing: LF003 outside READ COMMITTED; LF002 for a
-- malformed queue name, a bad change record, bounds the filled-in policy
-- breaks, and a setting left out when the queue has no policy and there is
-- no '*'. The two-session race is cmd/leasectl's
-- TestPolicySetKeepsAChangeCommittedMeanwhile.
-- ============================================================================

-- The sections above leave their own default policy in force; this one
-- starts from the bundle's, as a fresh database has it.
SELECT durable_jobs.set_queue_lease_policy('*', interval '30 seconds', interval '10 seconds', interval '24 hours', true,
                                           'pgTAP 15: the default back as installed');

SELECT is_empty($$SELECT 1 FROM durable_jobs.queue_lease_policy WHERE queue_name = 't15a_rr'$$,
    'the refused calls wrote no policy');

CREATE FUNCTION pg_temp.t15a_state()
RETURNS text LANGUAGE sql AS $$
    SELECT COALESCE(string_agg(row(p.*)::text, ';' ORDER BY p.queue_name), '')
        || ' evidence=' || (SELECT count(*) FROM durable_jobs.control_evidence_record)
    FROM durable_jobs.queue_lease_policy p;
$$;
CREATE TEMP TABLE t15a_mark (mark_value text NOT NULL);
GRANT ALL ON t15a_mark TO PUBLIC;

-- Shape and privileges -------------------------------------------------------------

SELECT is((SELECT p.prosecdef FROM pg_proc p
           WHERE p.oid = 'durable_jobs.update_queue_lease_policy(text, interval, interval, interval, boolean, text, text, text)'::regprocedure),
    true, 'update_queue_lease_policy is SECURITY DEFINER');
SELECT is((SELECT p.proowner::regrole::text FROM pg_proc p
           WHERE p.oid = 'durable_jobs.update_queue_lease_policy(text, interval, interval, interval, boolean, text, text, text)'::regprocedure),
    'durable_job_policy_owner', 'it is owned by the policy owner, like set_queue_lease_policy');
SELECT ok(has_function_privilege('durable_job_operator',
    'durable_jobs.update_queue_lease_policy(text, interval, interval, interval, boolean, text, text, text)', 'EXECUTE'),
    'an operator may execute it');
SELECT ok(NOT has_function_privilege('public',
    'durable_jobs.update_queue_lease_policy(text, interval, interval, interval, boolean, text, text, text)', 'EXECUTE'),
    'PUBLIC may not');
INSERT INTO t15a_mark VALUES (pg_temp.t15a_state());
SET LOCAL ROLE durable_job_auditor;
SELECT throws_ok($$SELECT * FROM durable_jobs.update_queue_lease_policy('t15a_q', NULL, NULL, NULL, false, 'CHG-24: auditor', NULL, NULL)$$,
    '42501', NULL, 'an auditor cannot change a policy');
RESET ROLE;
SET LOCAL ROLE durable_job_worker;
SELECT throws_ok($$SELECT * FROM durable_jobs.update_queue_lease_policy('t15a_q', NULL, NULL, NULL, false, 'CHG-24: worker', NULL, NULL)$$,
    '42501', NULL, 'a worker cannot change a policy');
RESET ROLE;
SET LOCAL ROLE durable_job_producer;
SELECT throws_ok($$SELECT * FROM durable_jobs.update_queue_lease_policy('t15a_q', NULL, NULL, NULL, false, 'CHG-24: producer', NULL, NULL)$$,
    '42501', NULL, 'a producer cannot change a policy');
RESET ROLE;
SELECT is(pg_temp.t15a_state(), (SELECT mark_value FROM t15a_mark), 'the refused callers changed nothing');

-- Partial changes ------------------------------------------------------------------

SET LOCAL ROLE durable_job_operator;
SELECT results_eq(
    $$SELECT queue_name, lease_duration, renewal_interval, max_claim_lifetime, renewal_enabled
      FROM durable_jobs.update_queue_lease_policy('t15a_q', interval '90 seconds', NULL, NULL, NULL, 'CHG-24: longer lease', NULL, NULL)$$,
    $$VALUES ('t15a_q'::text, interval '90 seconds', interval '10 seconds', interval '24 hours', true)$$,
    'a queue without its own policy keeps the default''s other settings, and the change returns what it wrote');
SELECT results_eq(
    $$SELECT queue_name, lease_duration, renewal_interval, max_claim_lifetime, renewal_enabled
      FROM durable_jobs.update_queue_lease_policy('t15a_q', NULL, NULL, NULL, false, 'CHG-25: stop renewals', NULL, NULL)$$,
    $$VALUES ('t15a_q'::text, interval '90 seconds', interval '10 seconds', interval '24 hours', false)$$,
    'a queue with its own policy keeps its own other settings');
RESET ROLE;
SELECT results_eq(
    $$SELECT lease_duration, renewal_interval, max_claim_lifetime, renewal_enabled
      FROM durable_jobs.queue_lease_policy WHERE queue_name = 't15a_q'$$,
    $$VALUES (interval '90 seconds', interval '10 seconds', interval '24 hours', false)$$,
    'the table holds what the change returned');
SELECT results_eq(
    $$SELECT evidence_kind, previous_values->>'lease_duration', new_values->>'lease_duration', change_reason, change_ticket
      FROM durable_jobs.control_evidence_record WHERE queue_name = 't15a_q' ORDER BY evidence_record_id$$,
    $$VALUES ('lease_policy_changed'::text, '00:00:30'::text, '00:01:30'::text, 'CHG-24: longer lease'::text, 'CHG-24'::text),
             ('lease_policy_changed', '00:01:30', '00:01:30', 'CHG-25: stop renewals', 'CHG-25'),
             ('renewal_enablement_changed', NULL, NULL, 'CHG-25: stop renewals', 'CHG-25')$$,
    'each change is recorded as control evidence (previous values the effective ones), the ticket parsed from the reason');
SET LOCAL ROLE durable_job_operator;
SELECT results_eq(
    $$SELECT queue_name, renewal_interval, max_claim_lifetime
      FROM durable_jobs.update_queue_lease_policy('*', NULL, interval '5 seconds', NULL, NULL, 'pgTAP 15 default', 'CHG-26', NULL)$$,
    $$VALUES ('*'::text, interval '5 seconds', interval '24 hours')$$,
    'the default ''*'' is changed the same way, with an explicit ticket');
RESET ROLE;
SELECT is((SELECT change_ticket FROM durable_jobs.control_evidence_record
           WHERE queue_name = '*' ORDER BY evidence_record_id DESC LIMIT 1),
    'CHG-26', 'the explicit ticket is recorded');

-- Bad input: the documented SQLSTATE, nothing changed ------------------------------

DELETE FROM t15a_mark;
INSERT INTO t15a_mark VALUES (pg_temp.t15a_state());
SET LOCAL ROLE durable_job_operator;
SELECT throws_ok($$SELECT * FROM durable_jobs.update_queue_lease_policy('t15a_q', interval '20 seconds', NULL, NULL, NULL, 'CHG-27: short', NULL, NULL)$$,
    'LF002', 'invalid lease policy', 'a lease the kept renewal interval is more than a third of is refused with LF002');
SELECT throws_ok($$SELECT * FROM durable_jobs.update_queue_lease_policy('t15a_q', NULL, NULL, interval '8 days', NULL, 'CHG-27: long', NULL, NULL)$$,
    'LF002', 'invalid lease policy', 'a max claim lifetime above 7 days is refused with LF002');
SELECT throws_ok($$SELECT * FROM durable_jobs.update_queue_lease_policy('t15a_q', interval '1 mon', NULL, NULL, NULL, 'CHG-27: month', NULL, NULL)$$,
    'LF002', 'invalid lease policy', 'an interval with a month part is refused with LF002');
SELECT throws_ok($$SELECT * FROM durable_jobs.update_queue_lease_policy('T24 Bad', NULL, NULL, NULL, false, 'CHG-27: name', NULL, NULL)$$,
    'LF002', NULL, 'a malformed queue name is refused with LF002');
SELECT throws_ok($$SELECT * FROM durable_jobs.update_queue_lease_policy(NULL, NULL, NULL, NULL, false, 'CHG-27: no name', NULL, NULL)$$,
    'LF002', NULL, 'a NULL queue name is refused with LF002');
SELECT throws_ok($$SELECT * FROM durable_jobs.update_queue_lease_policy('t15a_q', NULL, NULL, NULL, true, '   ', NULL, NULL)$$,
    'LF002', 'invalid change record', 'a blank reason is refused with LF002');
SELECT throws_ok($$SELECT * FROM durable_jobs.update_queue_lease_policy('t15a_q', NULL, NULL, NULL, true, NULL, NULL, NULL)$$,
    'LF002', 'invalid change record', 'a NULL reason is refused with LF002');
SELECT throws_ok($$SELECT * FROM durable_jobs.update_queue_lease_policy('t15a_q', NULL, NULL, NULL, true, 'CHG-27: call 010-1234-5678', NULL, NULL)$$,
    'LF002', 'invalid change record', 'a reason that looks like personal data is refused with LF002');
SELECT throws_ok($$SELECT * FROM durable_jobs.update_queue_lease_policy('t15a_q', NULL, NULL, NULL, true, 'resume', 'not a ticket', NULL)$$,
    'LF002', 'invalid change record', 'a ticket that does not match the pattern is refused with LF002');
SELECT throws_ok($$SELECT * FROM durable_jobs.update_queue_lease_policy('t15a_q', NULL, NULL, NULL, true, 'CHG-27: resume', NULL, 't15a_no_such_login')$$,
    'LF002', 'invalid change record', 'an approver that is no login is refused with LF002');
RESET ROLE;
SELECT is(pg_temp.t15a_state(), (SELECT mark_value FROM t15a_mark), 'the refused changes changed no policy and wrote no evidence');

-- No policy of the queue's own and no default ----------------------------------

SELECT set_config('leasefence.change_reason', 'pgTAP 15: remove the default', true);
SELECT set_config('leasefence.change_ticket', 'CHG-28', true);
DELETE FROM durable_jobs.queue_lease_policy WHERE queue_name = '*';
SELECT set_config('leasefence.change_reason', '', true);
SELECT set_config('leasefence.change_ticket', '', true);
DELETE FROM t15a_mark;
INSERT INTO t15a_mark VALUES (pg_temp.t15a_state());
SET LOCAL ROLE durable_job_operator;
SELECT throws_ok($$SELECT * FROM durable_jobs.update_queue_lease_policy('t15a_new', interval '30 seconds', NULL, NULL, NULL, 'CHG-29: new queue', NULL, NULL)$$,
    'LF002', 'invalid lease policy', 'a setting left out with no policy of the queue''s own and no ''*'' is refused with LF002');
RESET ROLE;
SELECT is(pg_temp.t15a_state(), (SELECT mark_value FROM t15a_mark), 'that refusal changed nothing');
SET LOCAL ROLE durable_job_operator;
SELECT results_eq(
    $$SELECT queue_name, lease_duration FROM durable_jobs.update_queue_lease_policy('t15a_new', interval '30 seconds',
          interval '10 seconds', interval '1 hour', true, 'CHG-29: new queue', NULL, NULL)$$,
    $$VALUES ('t15a_new'::text, interval '30 seconds')$$,
    'every setting given, a queue needs no policy to start from');
SELECT results_eq(
    $$SELECT lease_duration, renewal_enabled FROM durable_jobs.update_queue_lease_policy('t15a_q', NULL, NULL, NULL, true,
          'CHG-30: resume', NULL, NULL)$$,
    $$VALUES (interval '90 seconds', true)$$,
    'a queue with its own policy needs no default');
RESET ROLE;

SELECT * FROM finish();
ROLLBACK;
