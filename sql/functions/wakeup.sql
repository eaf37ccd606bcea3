-- Wake-ups: idle workers told that their queue has work, and when it will.
--
-- The current definition of each function of this family, edited in place.
-- A change reaches databases through a new migration that includes this
-- file; released migrations hold their own frozen copy (see sql/doc.go).
--
-- Below, the notes written with the versions the current definitions come
-- from, newest first. They name the files as they were then; each
-- migration's frozen SQL under sql/migrations holds the whole text.

-- Notes of migration 027 (wakeup.sql in its frozen SQL):
--
-- wake-ups (migration 027, issue 37): an idle worker waited out its poll
-- interval (1 s by default) before it saw a new job. Now every row of
-- job_record that becomes QUEUED or RETRY_SCHEDULED (an enqueue, single or
-- batched, a release, a replay, a retry, an operator's action) sends a
-- NOTIFY on its queue's wake-up channel when its transaction commits, and
-- a worker that LISTENs there claims at once; queue_next_due_in tells a
-- worker when the next job of its queue falls due (run_after, a retry
-- delay), so it sleeps until then rather than a whole poll.
--
-- A trigger, not a NOTIFY in each writer: one AFTER ROW trigger covers every
-- function that makes a job claimable, now and later, without editing the
-- families that write job_record. It costs the writes that do not make a
-- job claimable nothing measurable: its column list (job_status, run_after)
-- keeps a renewal, which sets neither, from even evaluating its WHEN
-- clause, and a claim or a terminal write, which set job_status to
-- something else, stop at the WHEN clause without a call. Unlike a BEFORE
-- ROW UPDATE trigger (see the notes of migration 017 in claim.sql), an AFTER
-- ROW trigger takes no tuple lock and writes no WAL: PostgreSQL re-reads
-- the old row version from the page the UPDATE just wrote. bench/notes.md
-- has the renewal and enqueue figures with and without it.
--
-- What a notification tells a stranger: any login may LISTEN on any
-- channel. The channel is 'leasefence_wake_' and the first 16 hex digits of
-- md5(queue name), so the queue name is not in clear, and one queue's
-- traffic wakes only the workers of that queue; the payload is empty (no
-- job id, payload, token, owner or time). PostgreSQL folds identical
-- notifications (same channel, same payload) of one transaction into one,
-- so a batch enqueue sends one per queue. What is left is timing: a login
-- that guesses a queue's name can watch when its work arrives
-- (docs/threat-model).

-- wake_queue_workers: AFTER INSERT OR UPDATE OF job_status, run_after
-- trigger on job_record, for rows that are QUEUED or RETRY_SCHEDULED after
-- the statement (the trigger's WHEN clause). Sends an empty notification
-- on the row's queue's wake-up channel, delivered when the transaction
-- commits (never when it rolls back). Takes no lock.
CREATE OR REPLACE FUNCTION durable_jobs.wake_queue_workers()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $function$
BEGIN
    PERFORM pg_catalog.pg_notify('leasefence_wake_' || pg_catalog.left(pg_catalog.md5(NEW.queue_name), 16), '');
    RETURN NULL;
END;
$function$;

ALTER FUNCTION durable_jobs.wake_queue_workers() OWNER TO durable_job_claim_owner;
REVOKE ALL ON FUNCTION durable_jobs.wake_queue_workers() FROM PUBLIC;

CREATE OR REPLACE TRIGGER job_record_wake_workers
    AFTER INSERT OR UPDATE OF job_status, run_after ON durable_jobs.job_record
    FOR EACH ROW
    WHEN (NEW.job_status IN ('QUEUED', 'RETRY_SCHEDULED'))
    EXECUTE FUNCTION durable_jobs.wake_queue_workers();

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
