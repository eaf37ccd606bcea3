-- 14_backlog (migration 028): queue_backlog counts, per queue, the jobs
-- queued (due or later), running, retry scheduled and failed in the last
-- hour, and the age of the oldest due job; a queue with a policy and no job
-- shows zeros, a queue with only finished jobs (or failures older than an
-- hour) does not show; every row carries the one database time it was read
-- at; no sequential scan of job_record. That its reads stay within the rows
-- it counts on a big table under stale statistics is in sql/integration
-- (backlog_test.go).
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
SELECT plan(12);
\ir fixture/fixture.sql

CREATE TEMP TABLE backlog_marks (label text PRIMARY KEY, at timestamptz, n bigint) ON COMMIT DROP;
GRANT ALL ON backlog_marks TO PUBLIC;

DO $setup$
DECLARE
    v_id bigint;
BEGIN
    PERFORM durable_jobs.set_queue_lease_policy('t14.a', interval '1 hour', interval '10 minutes',
                                                interval '2 hours', true, 'pgTAP 14: backlog');
    PERFORM durable_jobs.set_queue_lease_policy('t14.empty', interval '1 hour', interval '10 minutes',
                                                interval '2 hours', true, 'pgTAP 14: backlog');
    -- t14.a: one of each, claimed in order, then three waiting jobs.
    PERFORM pg_temp.enqueue_and_claim('run', 't14.a', 'worker-28');
    PERFORM pg_temp.enqueue_and_claim('retry', 't14.a', 'worker-28');
    PERFORM durable_jobs.retry_job(c.job_record_id, c.lease_claim_token, c.owner_id, interval '1 hour', 'busy')
    FROM claims c WHERE c.label = 'retry';
    PERFORM pg_temp.enqueue_and_claim('failed_now', 't14.a', 'worker-28');
    PERFORM pg_temp.enqueue_and_claim('failed_before', 't14.a', 'worker-28');
    PERFORM durable_jobs.fail_job(c.job_record_id, c.lease_claim_token, c.owner_id, 'bad_input')
    FROM claims c WHERE c.label IN ('failed_now', 'failed_before');
    UPDATE durable_jobs.job_record j SET status_changed_at = pg_catalog.clock_timestamp() - interval '2 hours'
    FROM claims c WHERE c.label = 'failed_before' AND j.job_record_id = c.job_record_id;
    PERFORM pg_temp.enqueue_and_claim('done', 't14.a', 'worker-28');
    PERFORM durable_jobs.complete_job(c.job_record_id, c.lease_claim_token, c.owner_id)
    FROM claims c WHERE c.label = 'done';
    v_id := durable_jobs.enqueue_job('t14.a', '{}');
    PERFORM durable_jobs.cancel_job(v_id);
    PERFORM durable_jobs.enqueue_job('t14.a', '{}');
    v_id := durable_jobs.enqueue_job('t14.a', '{}');
    UPDATE durable_jobs.job_record SET run_after = pg_catalog.clock_timestamp() - interval '10 minutes'
    WHERE job_record_id = v_id;
    PERFORM durable_jobs.enqueue_job('t14.a', '{}', NULL, pg_catalog.clock_timestamp() + interval '1 hour');
    -- t14.retry: a retry that has been due for 20 minutes, and nothing else.
    PERFORM pg_temp.enqueue_and_claim('retry_due', 't14.retry', 'worker-28');
    PERFORM durable_jobs.retry_job(c.job_record_id, c.lease_claim_token, c.owner_id, interval '1 hour', 'busy')
    FROM claims c WHERE c.label = 'retry_due';
    UPDATE durable_jobs.job_record j SET run_after = pg_catalog.clock_timestamp() - interval '20 minutes'
    FROM claims c WHERE c.label = 'retry_due' AND j.job_record_id = c.job_record_id;
    -- t14.later: only a job due in an hour. t14.finished: only finished jobs.
    PERFORM durable_jobs.enqueue_job('t14.later', '{}', NULL, pg_catalog.clock_timestamp() + interval '1 hour');
    PERFORM pg_temp.enqueue_and_claim('finished', 't14.finished', 'worker-28');
    PERFORM durable_jobs.complete_job(c.job_record_id, c.lease_claim_token, c.owner_id)
    FROM claims c WHERE c.label = 'finished';
    PERFORM pg_temp.enqueue_and_claim('failed_long_ago', 't14.finished', 'worker-28');
    PERFORM durable_jobs.fail_job(c.job_record_id, c.lease_claim_token, c.owner_id, 'bad_input')
    FROM claims c WHERE c.label = 'failed_long_ago';
    UPDATE durable_jobs.job_record j SET status_changed_at = pg_catalog.clock_timestamp() - interval '3 hours'
    FROM claims c WHERE c.label = 'failed_long_ago' AND j.job_record_id = c.job_record_id;
END
$setup$;

SET LOCAL ROLE durable_job_auditor;
INSERT INTO backlog_marks VALUES ('before', clock_timestamp(), pg_stat_get_xact_numscans('durable_jobs.job_record'::regclass));
CREATE TEMP TABLE t14_backlog AS SELECT * FROM durable_jobs.queue_backlog();
INSERT INTO backlog_marks VALUES ('after', clock_timestamp(), pg_stat_get_xact_numscans('durable_jobs.job_record'::regclass));
RESET ROLE;

SELECT results_eq(
    $$SELECT queued, running, retry_scheduled, failed_last_hour FROM t14_backlog WHERE queue_name = 't14.a'$$,
    $$VALUES (3::bigint, 1::bigint, 1::bigint, 1::bigint)$$,
    'queue_backlog counts the QUEUED jobs (due or later), the RUNNING ones, the RETRY_SCHEDULED ones and the failures of the last hour');
SELECT ok((SELECT oldest_due_age BETWEEN interval '10 minutes' AND interval '11 minutes' FROM t14_backlog WHERE queue_name = 't14.a'),
    'queue_backlog''s oldest_due_age is how long the oldest due job has been due');
SELECT results_eq(
    $$SELECT queued, running, retry_scheduled, failed_last_hour FROM t14_backlog WHERE queue_name = 't14.retry'$$,
    $$VALUES (0::bigint, 0::bigint, 1::bigint, 0::bigint)$$,
    'queue_backlog shows a queue without a policy of its own while it has a job waiting');
SELECT ok((SELECT oldest_due_age BETWEEN interval '20 minutes' AND interval '21 minutes' FROM t14_backlog WHERE queue_name = 't14.retry'),
    'a due RETRY_SCHEDULED job counts for the oldest due job');
SELECT results_eq(
    $$SELECT queued, running, retry_scheduled, failed_last_hour, oldest_due_age FROM t14_backlog WHERE queue_name = 't14.later'$$,
    $$VALUES (1::bigint, 0::bigint, 0::bigint, 0::bigint, NULL::interval)$$,
    'a job due later counts as queued, and no job is due yet');
SELECT results_eq(
    $$SELECT queued, running, retry_scheduled, failed_last_hour, oldest_due_age FROM t14_backlog WHERE queue_name = 't14.empty'$$,
    $$VALUES (0::bigint, 0::bigint, 0::bigint, 0::bigint, NULL::interval)$$,
    'queue_backlog shows a queue that has a policy but no job, with zeros');
SELECT is_empty($$SELECT 1 FROM t14_backlog WHERE queue_name = 't14.finished'$$,
    'a queue with only finished jobs, its failures older than an hour, has no row');
SELECT ok(EXISTS (SELECT 1 FROM t14_backlog WHERE queue_name = '*'),
    'the default policy ''*'' has its row, as in lease_health_by_queue');
SELECT is((SELECT count(DISTINCT database_time) FROM t14_backlog), 1::bigint,
    'queue_backlog reads every queue at one database time');
SELECT ok((SELECT bool_and(database_time BETWEEN (SELECT at FROM backlog_marks WHERE label = 'before')
                                             AND (SELECT at FROM backlog_marks WHERE label = 'after')) FROM t14_backlog),
    'its database_time is the time of the statement that read it');
SELECT is((SELECT n FROM backlog_marks WHERE label = 'after') - (SELECT n FROM backlog_marks WHERE label = 'before'), 0::bigint,
    'queue_backlog reads job_record through its partial indexes, with no sequential scan');
SELECT is((SELECT array_agg(queue_name ORDER BY queue_name) FROM t14_backlog WHERE queue_name LIKE 't14.%'),
    ARRAY['t14.a', 't14.empty', 't14.later', 't14.retry']::text[],
    'one row per queue, ordered by queue name');

SELECT * FROM finish();
ROLLBACK;
