-- 06_wakeup (migrations 027 and 032, wakeup.sql): the trigger
-- job_record_wake_workers fires after an UPDATE of run_after, only for rows that are
-- then QUEUED or RETRY_SCHEDULED, and job_record_wake_workers_after_insert
-- once per INSERT statement; both notify the queue's hashed channel with an
-- empty payload (the delivery itself, after COMMIT, one notifying
-- transaction per queue at a time, is tested in sql/integration:
-- wakeup_test.go). queue_next_due_in answers how long until
-- the next job of a queue falls due: NULL for none, zero for a job due now,
-- the wait for a job due later; running jobs do not count; a malformed
-- queue name is LF003.
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
SELECT plan(10);
\ir fixture/fixture.sql

SELECT is((SELECT pg_get_triggerdef(t.oid) FROM pg_trigger t
           WHERE t.tgrelid = 'durable_jobs.job_record'::regclass AND t.tgname = 'job_record_wake_workers'),
    'CREATE TRIGGER job_record_wake_workers AFTER UPDATE OF run_after ON durable_jobs.job_record '
    || 'FOR EACH ROW WHEN ((new.job_status = ANY (ARRAY[''QUEUED''::durable_jobs.job_status_kind, '
    || '''RETRY_SCHEDULED''::durable_jobs.job_status_kind]))) EXECUTE FUNCTION durable_jobs.wake_queue_workers()',
    'the UPDATE wake-up trigger fires only when run_after is set (never for a claim, renewal or terminal write), and calls its function only for a claimable row');
SELECT is((SELECT pg_get_triggerdef(t.oid) FROM pg_trigger t
           WHERE t.tgrelid = 'durable_jobs.job_record'::regclass AND t.tgname = 'job_record_wake_workers_after_insert'),
    'CREATE TRIGGER job_record_wake_workers_after_insert AFTER INSERT ON durable_jobs.job_record '
    || 'REFERENCING NEW TABLE AS inserted_jobs FOR EACH STATEMENT EXECUTE FUNCTION durable_jobs.wake_queue_workers_after_insert()',
    'the INSERT wake-up trigger fires once per statement, however many rows it inserts');

SET LOCAL ROLE durable_job_worker;
SELECT is(durable_jobs.queue_next_due_in('t06.empty'), NULL::interval, 'a queue without jobs has no next due time');
RESET ROLE;

SELECT durable_jobs.enqueue_job('t06.later', '{}', NULL, clock_timestamp() + interval '1 hour');
SET LOCAL ROLE durable_job_worker;
SELECT ok(durable_jobs.queue_next_due_in('t06.later') BETWEEN interval '59 minutes' AND interval '1 hour',
    'a job due in an hour is due in an hour');
SELECT is(date_part('day', durable_jobs.queue_next_due_in('t06.later')), 0::double precision,
    'the wait is absolute: seconds, no day part');
RESET ROLE;

SELECT durable_jobs.enqueue_job('t06.later', '{}');
SET LOCAL ROLE durable_job_worker;
SELECT is(durable_jobs.queue_next_due_in('t06.later'), interval '0', 'a job due now makes the wait zero');
SELECT pg_temp.claim_job('now', 't06.later');
SELECT ok(durable_jobs.queue_next_due_in('t06.later') > interval '59 minutes',
    'a claimed (running) job does not count: the next due is the later one again');
SELECT throws_ok($$SELECT durable_jobs.queue_next_due_in('Bad Queue')$$, 'LF003', NULL,
    'a malformed queue name is LF003');
SELECT throws_ok($$SELECT durable_jobs.queue_next_due_in(NULL)$$, 'LF003', NULL, 'a NULL queue name is LF003');
RESET ROLE;
SET LOCAL ROLE durable_job_producer;
SELECT throws_ok($$SELECT durable_jobs.queue_next_due_in('t06.later')$$, '42501', NULL,
    'a producer may not read the next due time (only workers are granted it)');
RESET ROLE;

SELECT * FROM finish();
ROLLBACK;
