-- Queue backlog: what waits, what runs and what failed lately, per queue.
--
-- The current definition of each function of this family, edited in place.
-- A change reaches databases through a new migration that includes this
-- file; released migrations hold their own frozen copy (see sql/doc.go).
--
-- Below, the notes written with the versions the current definitions come
-- from, newest first. They name the files as they were then; each
-- migration's frozen SQL under sql/migrations holds the whole text.

-- Notes of migration 028 (backlog.sql in its frozen SQL):
--
-- The backlog an operator watches (issue 37, item 4): how many jobs wait
-- (QUEUED, RETRY_SCHEDULED), run and failed in the last hour, and how long
-- the oldest due job has waited. An auditor function like
-- lease_health_by_queue, and as payload-blind: counts and one age, never a
-- job id, owner, token, payload or login.
--
-- It reads only the rows it counts, on any size of table: the waiting jobs
-- through the partial index job_record_claimable_queue_order, the running
-- ones through job_record_reclaim_order, the jobs that finished in the last
-- hour through job_record_finished_by_age (a range of status_changed_at),
-- never the older finished jobs, which are most of a big table. A count of
-- every FAILED job would have to read those (no index holds FAILED rows
-- alone), so failures are counted over the last hour, as lease health
-- counts reclaims and stale calls. Sequential scans are off for its
-- statements (SET enable_seqscan = off): statistics taken while a burst
-- was waiting say the waiting jobs are most of the table, and the planner
-- would then read the whole table for them.

-- queue_backlog: per queue that has a policy, or a job that is QUEUED,
-- RUNNING or RETRY_SCHEDULED or became FAILED in the last hour: queued
-- (QUEUED jobs, due or scheduled later), running (RUNNING, expired leases
-- included), retry_scheduled (RETRY_SCHEDULED, due or not), failed_last_hour
-- (jobs whose status became FAILED in the last hour and is still FAILED),
-- oldest_due_age (how long the oldest due QUEUED or RETRY_SCHEDULED job has
-- been due: database_time minus its run_after; NULL when none is due), and
-- database_time, the time of the statement that read them. Computes in UTC
-- whatever the caller's TimeZone. Takes no locks.
CREATE OR REPLACE FUNCTION durable_jobs.queue_backlog()
RETURNS TABLE (queue_name text, queued bigint, running bigint, retry_scheduled bigint, failed_last_hour bigint,
               oldest_due_age interval, database_time timestamptz)
LANGUAGE sql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET TimeZone = 'UTC'
SET enable_seqscan = off
BEGIN ATOMIC
    WITH waiting AS (
        SELECT j.queue_name,
               pg_catalog.count(*) FILTER (WHERE j.job_status = 'QUEUED') AS queued,
               pg_catalog.count(*) FILTER (WHERE j.job_status = 'RETRY_SCHEDULED') AS retry_scheduled,
               pg_catalog.min(j.run_after) FILTER (WHERE j.run_after <= pg_catalog.statement_timestamp()) AS oldest_due
        FROM durable_jobs.job_record j
        WHERE j.job_status IN ('QUEUED', 'RETRY_SCHEDULED')
        GROUP BY j.queue_name
    ),
    running AS (
        SELECT j.queue_name, pg_catalog.count(*) AS running
        FROM durable_jobs.job_record j
        WHERE j.job_status = 'RUNNING'
        GROUP BY j.queue_name
    ),
    failed AS (
        SELECT j.queue_name, pg_catalog.count(*) AS failed
        FROM durable_jobs.job_record j
        WHERE j.job_status = 'FAILED'
          AND j.status_changed_at >= pg_catalog.statement_timestamp() - interval '1 hour'
        GROUP BY j.queue_name
    ),
    queues AS (
        SELECT p.queue_name FROM durable_jobs.queue_lease_policy p
        UNION
        SELECT w.queue_name FROM waiting w
        UNION
        SELECT ru.queue_name FROM running ru
        UNION
        SELECT f.queue_name FROM failed f
    )
    SELECT q.queue_name, COALESCE(w.queued, 0), COALESCE(ru.running, 0), COALESCE(w.retry_scheduled, 0),
           COALESCE(f.failed, 0), pg_catalog.statement_timestamp() - w.oldest_due, pg_catalog.statement_timestamp()
    FROM queues q
    LEFT JOIN waiting w ON w.queue_name = q.queue_name
    LEFT JOIN running ru ON ru.queue_name = q.queue_name
    LEFT JOIN failed f ON f.queue_name = q.queue_name
    ORDER BY q.queue_name;
END;

ALTER FUNCTION durable_jobs.queue_backlog() OWNER TO durable_job_audit_owner;
REVOKE ALL ON FUNCTION durable_jobs.queue_backlog() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.queue_backlog() TO durable_job_auditor;
