-- 11_renewal_locked: what migration 003 (renewal v2, claim v2) changed that
-- one session can show. (The races, a row that another session holds locked
-- and the deadlock of completions with a batch renewal, are two-session Go
-- tests in sql/integration/locked_test.go.)
--  * The caller's TimeZone, IntervalStyle and DateStyle do not change what a
--    claim or a renewal grants: under a POSIX TimeZone whose daylight saving
--    ends (12 hours back) two hours from now, a policy in day units still
--    gives exactly a 1 day lease and a claim deadline of exactly 2 days.
--  * claim_next_job(s) and renew_job_lease(s) refuse a REPEATABLE READ or
--    SERIALIZABLE transaction with LF003 (a second session opened through
--    dblink, since this file is one READ COMMITTED transaction).
--  * A batch of one's own claims is renewed, each one decided alone.
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
SELECT plan(15);
\ir fixture/fixture.sql

CREATE EXTENSION IF NOT EXISTS dblink;
CREATE TEMP TABLE renewals (label text PRIMARY KEY, renewal_outcome text, lease_expires_at timestamptz,
                            database_time timestamptz) ON COMMIT DROP;
GRANT ALL ON renewals TO PUBLIC;

DO $setup$
BEGIN
    PERFORM durable_jobs.set_queue_lease_policy('locked_check_days', interval '1 day', interval '8 hours',
                                                interval '2 days', true, 'pgTAP 11: a policy in day units');
    PERFORM durable_jobs.set_queue_lease_policy('locked_check_batch', interval '10 seconds', interval '1 second',
                                                interval '1 hour', true, 'pgTAP 11: a batch of claims');
END
$setup$;
SELECT durable_jobs.enqueue_job('locked_check_days', '{"job": "tz"}');
SELECT durable_jobs.enqueue_job('locked_check_batch', jsonb_build_object('job', n)) FROM generate_series(1, 3) n;

-- Session settings: daylight saving that ends two hours from now ----------------------------

-- Standard time is UTC, daylight time UTC+12; daylight time began on day 0
-- of this year and ends today, two hours from now (an hour of the day past
-- 24 is allowed in a POSIX rule). Then '1 day' after now is 36 hours later.
DO $tz$
DECLARE
    v_now timestamp := clock_timestamp() AT TIME ZONE 'UTC';
BEGIN
    EXECUTE format('SET LOCAL TIME ZONE %L', format('LFS0LFD-12,0/0,%s/%s',
        extract(doy FROM v_now)::integer - 1, extract(hour FROM v_now)::integer + 2 + 12));
END
$tz$;
SET LOCAL IntervalStyle = 'sql_standard';
SET LOCAL DateStyle = 'SQL, DMY';
SELECT ok(extract(epoch FROM (now() + interval '1 day') - now()) > 86400,
          'under this TimeZone, timestamptz + ''1 day'' is more than 24 hours (the setting bites)');

SET LOCAL ROLE durable_job_worker;
SELECT pg_temp.claim_job('tz', 'locked_check_days', 'worker-tz');
INSERT INTO renewals SELECT 'tz', r.* FROM claims c,
    durable_jobs.renew_job_lease(c.job_record_id, c.lease_claim_token, 'worker-tz') r WHERE c.label = 'tz';
RESET ROLE;

SELECT is((SELECT extract(epoch FROM lease_expires_at) - extract(epoch FROM database_time) FROM claims WHERE label = 'tz'),
          86400::numeric, 'the claim''s lease is exactly the policy''s 1 day, 86,400 s, whatever the TimeZone');
SELECT is((SELECT extract(epoch FROM j.lease_claim_deadline) - extract(epoch FROM j.lease_claimed_at)
           FROM durable_jobs.job_record j JOIN claims c USING (job_record_id) WHERE c.label = 'tz'),
          172800::numeric, 'the claim deadline is exactly the max_claim_lifetime of 2 days after the claim');
SELECT is((SELECT renewal_outcome FROM renewals WHERE label = 'tz'), 'renewed', 'the claim renews');
SELECT ok((SELECT extract(epoch FROM lease_expires_at) - extract(epoch FROM database_time) BETWEEN 86399 AND 86400
           FROM renewals WHERE label = 'tz'),
          'the renewed lease is 1 day from the renewal''s clock reading (just before database_time), whatever the TimeZone');
RESET TIME ZONE;
RESET IntervalStyle;
RESET DateStyle;

-- A batch of one's own claims -----------------------------------------------------------------

SET LOCAL ROLE durable_job_worker;
SELECT pg_temp.claim_jobs('b', 'locked_check_batch', 'worker-b', 3);
RESET ROLE;
SELECT is((SELECT count(*)::integer FROM claims WHERE label LIKE 'b%'), 3, 'three jobs of the batch queue are claimed');
SET LOCAL ROLE durable_job_worker;
SELECT results_eq(
    $$SELECT r.job_record_id, r.renewal_outcome FROM durable_jobs.renew_job_leases('worker-b',
          (SELECT array_agg(job_record_id ORDER BY job_record_id DESC) FROM claims WHERE label LIKE 'b%'),
          (SELECT array_agg(lease_claim_token ORDER BY job_record_id DESC) FROM claims WHERE label LIKE 'b%')) r$$,
    $$SELECT job_record_id, 'renewed'::text FROM claims WHERE label LIKE 'b%' ORDER BY job_record_id DESC$$,
    'a batch in descending id order is renewed, one row per claim in input order');
SELECT results_eq(
    $$SELECT r.renewal_outcome, r.lease_expires_at IS NULL FROM durable_jobs.renew_job_leases('worker-b',
          (SELECT array_agg(job_record_id ORDER BY job_record_id) FROM claims WHERE label LIKE 'b%'),
          (SELECT array_agg(CASE WHEN job_record_id = (SELECT min(job_record_id) FROM claims WHERE label LIKE 'b%')
                                 THEN gen_random_uuid() ELSE lease_claim_token END ORDER BY job_record_id)
           FROM claims WHERE label LIKE 'b%')) r$$,
    $$VALUES ('stale'::text, true), ('renewed', false), ('renewed', false)$$,
    'in a batch, a wrong token is stale with no expiry and the other claims are renewed');
SELECT is((SELECT count(*)::integer FROM durable_jobs.renew_job_leases('worker-b', '{}', '{}')), 0,
          'an empty batch answers zero rows');
RESET ROLE;

-- Isolation: a second session, in REPEATABLE READ and SERIALIZABLE -----------------------------

SELECT dblink_connect('other', format('host=%s port=%s dbname=%s user=%s',
    COALESCE(host(inet_server_addr()), split_part(current_setting('unix_socket_directories'), ',', 1)),
    COALESCE(inet_server_port()::text, current_setting('port')), current_database(), current_user));

SELECT dblink_exec('other', 'BEGIN ISOLATION LEVEL REPEATABLE READ');
SELECT throws_ok($$SELECT * FROM dblink('other', 'SELECT renewal_outcome FROM durable_jobs.renew_job_leases(''worker-b'', ''{-1}'', ''{00000000-0000-4000-8000-000000000000}'')') AS t(o text)$$,
                 'LF003', NULL, 'renew_job_leases in a REPEATABLE READ transaction is refused with LF003');
SELECT dblink_exec('other', 'ROLLBACK');
SELECT dblink_exec('other', 'BEGIN ISOLATION LEVEL SERIALIZABLE');
SELECT throws_ok($$SELECT * FROM dblink('other', 'SELECT renewal_outcome FROM durable_jobs.renew_job_lease(-1, ''00000000-0000-4000-8000-000000000000'', ''worker-b'')') AS t(o text)$$,
                 'LF003', NULL, 'renew_job_lease in a SERIALIZABLE transaction is refused with LF003');
SELECT dblink_exec('other', 'ROLLBACK');
SELECT dblink_exec('other', 'BEGIN ISOLATION LEVEL REPEATABLE READ');
SELECT throws_ok($$SELECT * FROM dblink('other', 'SELECT job_record_id FROM durable_jobs.claim_next_job(''locked_check_none'', ''worker-b'')') AS t(i bigint)$$,
                 'LF003', NULL, 'claim_next_job in a REPEATABLE READ transaction is refused with LF003');
SELECT dblink_exec('other', 'ROLLBACK');
SELECT dblink_exec('other', 'BEGIN ISOLATION LEVEL SERIALIZABLE');
SELECT throws_ok($$SELECT * FROM dblink('other', 'SELECT job_record_id FROM durable_jobs.claim_next_jobs(''locked_check_none'', ''worker-b'', 5)') AS t(i bigint)$$,
                 'LF003', NULL, 'claim_next_jobs in a SERIALIZABLE transaction is refused with LF003');
SELECT dblink_exec('other', 'ROLLBACK');
SELECT dblink_exec('other', 'BEGIN ISOLATION LEVEL READ COMMITTED');
SELECT is((SELECT o FROM dblink('other', 'SELECT renewal_outcome FROM durable_jobs.renew_job_lease(-1, ''00000000-0000-4000-8000-000000000000'', ''worker-b'')') AS t(o text)),
          'stale', 'in READ COMMITTED the same unknown claim is simply stale');
SELECT dblink_exec('other', 'ROLLBACK');
SELECT dblink_disconnect('other');

SELECT is((SELECT count(*)::integer FROM durable_jobs.control_evidence_record
           WHERE new_values ->> 'migration_name' = '003_renewal_skips_locked_rows' AND evidence_kind = 'migration_applied'),
          1, 'migration 003 recorded migration_applied');

SELECT * FROM finish();
ROLLBACK;
