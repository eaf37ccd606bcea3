-- Wake-ups: idle workers told that their queue has work, and when it will.
--
-- The current definition of each function of this family, edited in place.
-- A change reaches databases through a new migration that includes this
-- file; released migrations hold their own frozen copy (see sql/doc.go).
--
-- Below, the notes written with the versions the current definitions come
-- from, newest first. They name the files as they were then; each
-- migration's frozen SQL under sql/migrations holds the whole text.

-- Notes of migration 032:
--
-- The UPDATE trigger's column list is run_after alone (027: job_status,
-- run_after). Every write that makes a job QUEUED or RETRY_SCHEDULED sets
-- when it falls due (a retry, a release, single or batched, a replay), and
-- no other write sets run_after: so a claim, a completion, a failure and a
-- cancel, which set job_status, no longer pass the column check, and
-- PostgreSQL no longer reads and compiles the WHEN clause (stored as text)
-- for each of their statements. That was about 5 % of a claim's backend
-- CPU time (bench/notes.md, issue 38). A function that makes a job
-- claimable must set run_after, or it wakes nobody and its job waits for
-- the poll (sql/integration wakeup_test.go covers every such write).

-- Notes of migration 027 (wakeup.sql in its frozen SQL):
--
-- wake-ups (migration 027, issue 37): an idle worker waited out its poll
-- interval (1 s by default) before it saw a new job. Now a write that makes
-- a job QUEUED or RETRY_SCHEDULED (an enqueue, single or batched, a
-- release, a replay, a retry, an operator's action) sends a NOTIFY on its
-- queue's wake-up channel when its transaction commits, and a worker that
-- LISTENs there claims at once; queue_next_due_in tells a worker when the
-- next job of its queue falls due (run_after, a retry delay), so it sleeps
-- until then rather than a whole poll.
--
-- Triggers, not a NOTIFY in each writer: they cover every function that
-- makes a job claimable, now and later, without editing the families that
-- write job_record. An INSERT fires one statement-level trigger, which
-- notifies once per queue of the inserted rows (a batch enqueue of 1,000
-- jobs is one call, not 1,000: a row-level INSERT trigger made a batch of
-- 100 take about twice as long as without any trigger, medians of nine
-- rounds in one transaction on a loaded machine, 63 against 28 us a job). An UPDATE fires a row-level trigger whose
-- column list (job_status, run_after) keeps a renewal, which sets
-- neither, from even evaluating its WHEN clause, and whose WHEN clause
-- stops a claim or a terminal write (job_status set to something else)
-- without a call. Unlike a BEFORE ROW UPDATE trigger (see the notes of
-- migration 017 in claim.sql), an AFTER ROW trigger takes no tuple lock
-- and writes no WAL: PostgreSQL re-reads the old row version from the page
-- the UPDATE just wrote. (An UPDATE trigger cannot be statement-level with
-- a column list: PostgreSQL refuses transition tables there.)
--
-- One notification at a time per queue: a transaction that NOTIFYs takes
-- PostgreSQL's notification lock (one for the whole cluster) at COMMIT and
-- holds it until its commit record is flushed, so notifying transactions
-- commit one after another, each waiting for its own WAL flush, instead of
-- together (group commit): four clients enqueueing one job per transaction
-- went from 5.3 to 17.1 ms of wall time per job (bench/notes.md). So a
-- transaction notifies a queue only when it gets the transaction-level
-- advisory lock (1279678293, hashtext(queue)) without waiting
-- (pg_try_advisory_xact_lock): while one transaction that notifies the
-- queue is in progress, the others that make its jobs claimable commit
-- without a notification, and the worker woken by the first claims their
-- jobs too when they committed before its claim (it claims again at once
-- after a claim that got jobs). A job that commits later than that is
-- claimed by the next notification or by the poll, as before 027. Any login
-- may take that advisory key; holding it only turns the queue's wake-ups
-- back into polling (docs/threat-model).
--
-- What a notification tells a stranger: any login may LISTEN on any
-- channel. The channel is 'leasefence_wake_' and the first 16 hex digits of
-- md5(queue name), so the queue name is not in clear, and one queue's
-- traffic wakes only the workers of that queue; the payload is empty (no
-- job id, payload, token, owner or time). PostgreSQL folds identical
-- notifications (same channel, same payload) of one transaction into one.
-- What is left is timing: a login that guesses a queue's name can watch
-- when its work arrives (docs/threat-model).

-- wake_queue_workers: AFTER UPDATE OF run_after trigger on job_record,
-- for rows that are QUEUED or RETRY_SCHEDULED after the statement (the
-- trigger's WHEN clause). Sends an empty notification on
-- the row's queue's wake-up channel, delivered when the transaction
-- commits (never when it rolls back), unless another transaction holds the
-- queue's wake-up key (1279678293, hashtext(queue name)): then it sends
-- nothing. Takes that key (transaction-level advisory lock, never waits).
CREATE OR REPLACE FUNCTION durable_jobs.wake_queue_workers()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $function$
BEGIN
    PERFORM pg_catalog.pg_notify('leasefence_wake_' || pg_catalog.left(pg_catalog.md5(NEW.queue_name), 16), '')
    WHERE pg_catalog.pg_try_advisory_xact_lock(1279678293, pg_catalog.hashtext(NEW.queue_name));
    RETURN NULL;
END;
$function$;

ALTER FUNCTION durable_jobs.wake_queue_workers() OWNER TO durable_job_claim_owner;
REVOKE ALL ON FUNCTION durable_jobs.wake_queue_workers() FROM PUBLIC;

CREATE OR REPLACE TRIGGER job_record_wake_workers
    AFTER UPDATE OF run_after ON durable_jobs.job_record
    FOR EACH ROW
    WHEN (NEW.job_status IN ('QUEUED', 'RETRY_SCHEDULED'))
    EXECUTE FUNCTION durable_jobs.wake_queue_workers();

-- wake_queue_workers_after_insert: AFTER INSERT statement-level trigger on
-- job_record (the transition table inserted_jobs): for each queue of the
-- inserted rows that are QUEUED or RETRY_SCHEDULED, wake_queue_workers'
-- notification, under the same wake-up key.
CREATE OR REPLACE FUNCTION durable_jobs.wake_queue_workers_after_insert()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $function$
BEGIN
    -- Row by row, not over the DISTINCT queue names: PostgreSQL folds the
    -- identical notifications into one, and the key, once taken, is held;
    -- a DISTINCT cost a single enqueue about a tenth more (the same
    -- measure), going row by row nothing that could be told from the noise.
    PERFORM pg_catalog.pg_notify('leasefence_wake_' || pg_catalog.left(pg_catalog.md5(i.queue_name), 16), '')
    FROM inserted_jobs i
    WHERE i.job_status IN ('QUEUED', 'RETRY_SCHEDULED')
      AND pg_catalog.pg_try_advisory_xact_lock(1279678293, pg_catalog.hashtext(i.queue_name));
    RETURN NULL;
END;
$function$;

ALTER FUNCTION durable_jobs.wake_queue_workers_after_insert() OWNER TO durable_job_claim_owner;
REVOKE ALL ON FUNCTION durable_jobs.wake_queue_workers_after_insert() FROM PUBLIC;

CREATE OR REPLACE TRIGGER job_record_wake_workers_after_insert
    AFTER INSERT ON durable_jobs.job_record
    REFERENCING NEW TABLE AS inserted_jobs
    FOR EACH STATEMENT
    EXECUTE FUNCTION durable_jobs.wake_queue_workers_after_insert();

-- queue_next_due_in: how long until the next QUEUED or RETRY_SCHEDULED job
-- of a queue falls due by database time: zero when one is due now, NULL
-- when the queue has none. An absolute interval (seconds, no day part).
-- A worker that found nothing to claim sleeps that long (at most its poll
-- interval) instead of a whole poll. Expired leases are not counted: a
-- worker finds those at its next poll. Reads one entry of the index
-- job_record_claimable_queue_order; takes no lock. Raises LF003 for a
-- malformed queue name. Answers nothing else about any job.
CREATE OR REPLACE FUNCTION durable_jobs.queue_next_due_in(p_queue_name text)
RETURNS interval
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $function$
DECLARE
    v_next timestamptz;
    v_now timestamptz;
BEGIN
    IF p_queue_name IS NULL OR pg_catalog.pg_collation_for(p_queue_name) NOT IN ('"default"', '"C"', '"POSIX"')
       OR NOT durable_jobs.queue_name_is_well_formed(p_queue_name) THEN
        PERFORM durable_jobs.require_well_formed('queue_name', p_queue_name);
    END IF;
    SELECT j.run_after INTO v_next
    FROM durable_jobs.job_record j
    WHERE j.queue_name = p_queue_name AND j.job_status IN ('QUEUED', 'RETRY_SCHEDULED')
    ORDER BY j.run_after
    LIMIT 1;
    v_now := pg_catalog.clock_timestamp();
    RETURN CASE WHEN v_next > v_now THEN pg_catalog.make_interval(secs => pg_catalog.date_part('epoch', v_next - v_now))
                WHEN v_next IS NOT NULL THEN interval '0' END;
END;
$function$;

ALTER FUNCTION durable_jobs.queue_next_due_in(text) OWNER TO durable_job_claim_owner;
REVOKE ALL ON FUNCTION durable_jobs.queue_next_due_in(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.queue_next_due_in(text) TO durable_job_worker;
