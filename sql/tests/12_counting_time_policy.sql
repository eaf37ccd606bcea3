-- 12_counting_time_policy: migration 004 (assigned number 005). Tallies are
-- counted per backend in UTC minutes and expire after 30 days; policy
-- intervals and retry delays are absolute durations (no month part, no
-- mixed signs, '1 day' stored as 24 hours); set_queue_lease_policy refuses
-- a caller that is not READ COMMITTED and takes the evidence-order lock;
-- operator text without control or bidirectional-control characters; size
-- limits on payloads and results; finite, plausible run-after times; one
-- idempotency namespace per queue shared by producers. The two-session races
-- are in sql/integration/counting_test.go.
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
SELECT plan(49);
COMMIT;

-- A snapshot older than the statement is refused (nothing above writes data).
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT throws_ok(
    $$SELECT durable_jobs.set_queue_lease_policy('t12_rr', interval '30 seconds', interval '10 seconds',
          interval '1 hour', true, 'pgTAP 12: repeatable read')$$,
    'LF003', 'set_queue_lease_policy must run in a READ COMMITTED transaction',
    'a REPEATABLE READ caller of set_queue_lease_policy is refused with LF003');
COMMIT;
BEGIN ISOLATION LEVEL SERIALIZABLE;
SELECT throws_ok(
    $$SELECT durable_jobs.set_queue_lease_policy('t12_rr', interval '30 seconds', interval '10 seconds',
          interval '1 hour', true, 'pgTAP 12: serializable')$$,
    'LF003', 'set_queue_lease_policy must run in a READ COMMITTED transaction',
    'a SERIALIZABLE caller of set_queue_lease_policy is refused with LF003');
COMMIT;

BEGIN;
SELECT is_empty($$SELECT 1 FROM durable_jobs.queue_lease_policy WHERE queue_name = 't12_rr'$$,
    'the refused calls wrote no policy');
SELECT is_empty($$SELECT 1 FROM durable_jobs.control_evidence_record WHERE queue_name = 't12_rr'$$,
    'the refused calls wrote no evidence');

CREATE TEMP TABLE t12_mark (label text PRIMARY KEY, value bigint NOT NULL) ON COMMIT DROP;
INSERT INTO t12_mark SELECT 'evidence_before', count(*) FROM durable_jobs.control_evidence_record;

-- Absolute durations --------------------------------------------------------

SELECT lives_ok(
    $$SELECT durable_jobs.set_queue_lease_policy('t12_days', interval '1 day', interval '1 hour',
          interval '2 days', true, 'pgTAP 12: a policy in day units')$$,
    'a policy given in day units is accepted');
SELECT results_eq(
    $$SELECT lease_duration::text, renewal_interval::text, max_claim_lifetime::text
      FROM durable_jobs.queue_lease_policies() WHERE queue_name = 't12_days'$$,
    $$VALUES ('24:00:00', '01:00:00', '48:00:00')$$,
    'day units are stored as absolute durations: 1 day is 24:00:00, so no TimeZone can stretch or shrink a lease');
SELECT results_eq(
    $$SELECT new_values ->> 'lease_duration', new_values ->> 'max_claim_lifetime'
      FROM durable_jobs.control_evidence_record WHERE queue_name = 't12_days' AND evidence_kind = 'lease_policy_changed'$$,
    $$VALUES ('24:00:00', '48:00:00')$$,
    'the evidence records the durations as stored');
SELECT is(
    (SELECT current_setting('idle_in_transaction_session_timeout')), '1min',
    'a policy change bounds how long its transaction may then stay idle (60 s) so it cannot hold evidence back for long');
SET LOCAL idle_in_transaction_session_timeout = '30s';
SELECT lives_ok(
    $$SELECT durable_jobs.set_queue_lease_policy('t12_days', interval '1 day', interval '1 hour',
          interval '2 days', true, 'pgTAP 12: a shorter idle bound of the session')$$,
    'a second change in the same transaction is accepted');
SELECT is(
    (SELECT current_setting('idle_in_transaction_session_timeout')), '30s',
    'a session''s own shorter idle bound is kept');
SELECT ok(
    (SELECT o.xmax <> '0'::xid FROM durable_jobs.evidence_order_lock o),
    'a policy change locks the evidence-order lock (since migration 024 the row of evidence_order_lock; held to the end of the transaction: sql/integration TestEvidenceOrderLockIsHeldToCommitAndBoundsTheWait)');

SELECT throws_ok(
    format($$SELECT durable_jobs.set_queue_lease_policy('t12_bad', %L::interval, %L::interval, %L::interval, true,
             'pgTAP 12: unsafe interval')$$, b.lease, b.renewal, b.max_life),
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
    format($$SELECT durable_jobs.set_queue_lease_policy('t12_text', interval '30 seconds', interval '10 seconds',
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
    $$SELECT durable_jobs.set_queue_lease_policy('t12_text', interval '30 seconds', interval '10 seconds',
          interval '1 hour', true, 'Nachtlauf für Größe 🌙 — “ok”')$$,
    'a change reason in plain Unicode text (accents, quotes, emoji) is accepted');
SELECT throws_ok(
    $$SELECT durable_jobs.record_deployment_version('v1.2.3', E'release \u202Eevil')$$,
    'LF003', NULL, 'a deployment reason with U+202E is refused with LF003');
SELECT throws_ok(
    $$SELECT durable_jobs.record_deployment_version('v1.2.3', E'release\u001b[0m')$$,
    'LF003', NULL, 'a deployment reason with ESC is refused with LF003');
SELECT is((SELECT count(*) FROM durable_jobs.control_evidence_record) - (SELECT value FROM t12_mark WHERE label = 'evidence_before'),
    3::bigint, 'only the three accepted policy changes wrote evidence');

-- Tallies: UTC minutes ---------------------------------------------------------

SELECT durable_jobs.record_lease_outcome('t12_tz', 'reclaim', 1000);
SET LOCAL TIME ZONE 0.01;
SELECT durable_jobs.record_lease_outcome('t12_tz', 'reclaim', 1);
SELECT is(
    (SELECT sum(outcome_count)::bigint FROM durable_jobs.lease_outcome_tally WHERE queue_name = 't12_tz'),
    1001::bigint,
    'a session in TimeZone 0.01 (36 s east) adds to the same UTC minute: 1,000 + 1 counted, nothing overwritten');
SELECT is_empty(
    $$SELECT tally_minute FROM durable_jobs.lease_outcome_tally
      WHERE queue_name = 't12_tz' AND tally_minute <> date_trunc('minute', tally_minute, 'UTC')$$,
    'every tally minute is a whole UTC minute whatever the writer''s TimeZone');
SELECT is(
    (SELECT outcome_count FROM durable_jobs.lease_outcome_totals(clock_timestamp()) WHERE queue_name = 't12_tz'),
    1001::bigint,
    'lease_outcome_totals since now counts the current UTC minute in any caller TimeZone');
RESET TIME ZONE;

-- Sizes ---------------------------------------------------------------------------

SELECT throws_ok(
    $$SELECT durable_jobs.enqueue_job('t12_size', jsonb_build_object('blob', repeat('x', 1048576)))$$,
    'LF003', 'job payload must be at most 1 MiB', 'a payload over 1 MiB is refused with LF003');
SELECT lives_ok(
    $$SELECT durable_jobs.enqueue_job('t12_size', jsonb_build_object('blob', repeat('x', 1000000)))$$,
    'a payload just under 1 MiB is accepted');
SELECT throws_ok(
    $$SELECT durable_jobs.complete_job(0, gen_random_uuid(), 'worker-t12', jsonb_build_object('blob', repeat('x', 1048576)))$$,
    'LF003', 'result document must be at most 1 MiB',
    'a result document over 1 MiB is refused with LF003, before the claim is even looked at');

-- Run-after -----------------------------------------------------------------------

SELECT throws_ok(
    format($$SELECT durable_jobs.enqueue_job('t12_when', '{}'::jsonb, NULL, %L::timestamptz)$$, w.run_after),
    'LF003', 'run-after must be a finite time from 2000-01-01 to before 2100-01-01 UTC', w.why)
FROM (VALUES ('-infinity', 'a run-after of -infinity is refused'),
             ('infinity', 'a run-after of infinity is refused'),
             ('0044-03-15 00:00:00+00 BC', 'a run-after in 44 BC is refused'),
             ('1999-12-31 23:59:59+00', 'a run-after before 2000 is refused'),
             ('2100-01-01 00:00:00+00', 'a run-after in 2100 is refused')) AS w(run_after, why);
SELECT lives_ok(
    $$SELECT durable_jobs.enqueue_job('t12_when', '{}'::jsonb, NULL, timestamptz '2099-12-31 23:59:59+00')$$,
    'a run-after late in 2099 is accepted');

-- Retry delay ---------------------------------------------------------------------

SELECT throws_ok(
    format($$SELECT durable_jobs.retry_job(0, gen_random_uuid(), 'worker-t12', %L::interval, 'target_unavailable')$$, d.delay),
    'LF003', 'retry delay must be a plain duration of 0 to 30 days', d.why)
FROM (VALUES ('1 month', 'a retry delay of one month is refused with LF003, before the claim is looked at'),
             ('1 day -1 second', 'a retry delay with mixed signs is refused'),
             ('721 hours', 'a retry delay over 30 days is refused')) AS d(delay, why);

-- Producers share each queue's idempotency namespace --------------------------------

CREATE ROLE t12_producer_a LOGIN IN ROLE durable_job_producer;
CREATE ROLE t12_producer_b LOGIN IN ROLE durable_job_producer;
SET SESSION AUTHORIZATION t12_producer_a;
CREATE TEMP TABLE t12_enqueued (who text PRIMARY KEY, job_id bigint NOT NULL);
INSERT INTO t12_enqueued VALUES ('a', durable_jobs.enqueue_job('t12_shared', '{"from": "a"}', 'shared-key-1'));
RESET SESSION AUTHORIZATION;
GRANT INSERT, SELECT ON t12_enqueued TO t12_producer_b;
SET SESSION AUTHORIZATION t12_producer_b;
INSERT INTO t12_enqueued VALUES ('b', durable_jobs.enqueue_job('t12_shared', '{"from": "b"}', 'shared-key-1'));
SELECT ok(durable_jobs.cancel_job((SELECT job_id FROM t12_enqueued WHERE who = 'a')),
    'documented: any producer login may cancel any job id (queues are not scoped to a producer)');
RESET SESSION AUTHORIZATION;
SELECT is((SELECT count(DISTINCT job_id)::integer FROM t12_enqueued), 1,
    'documented: the same idempotency key on the same queue from another producer login returns the first job (one namespace per queue)');

-- Tallies: one row per backend, 30-day retention (last: the columns are new) --

INSERT INTO durable_jobs.lease_outcome_tally (tally_minute, queue_name, outcome_kind, tally_backend_pid, counted_by_role, outcome_count)
VALUES (date_trunc('minute', clock_timestamp(), 'UTC') - interval '40 days', 't12_old', 'reclaim', -3, '', 7),
       (date_trunc('minute', clock_timestamp(), 'UTC') - interval '29 days', 't12_old', 'reclaim', -3, '', 5);
SELECT durable_jobs.record_lease_outcome('t12_tz', 'reclaim', 1);
SELECT is_empty(
    $$SELECT 1 FROM durable_jobs.lease_outcome_tally
      WHERE queue_name = 't12_tz' AND (tally_backend_pid <> pg_backend_pid()
            OR counted_by_role COLLATE "C" <> session_user::text COLLATE "C")$$,
    'this session''s outcomes are counted in rows keyed by its own backend pid and login');
SELECT results_eq(
    $$SELECT outcome_count FROM durable_jobs.lease_outcome_tally WHERE queue_name = 't12_old' ORDER BY tally_minute$$,
    $$VALUES (5::bigint)$$,
    'a counting call deleted the row older than 30 days and kept the one 29 days old');

SELECT * FROM finish();
ROLLBACK;
