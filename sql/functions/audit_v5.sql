-- audit v5 (migration 016; 012 installs audit_v4.sql): only
-- lease_health_by_queue changes, and only in where the queue's policy (its
-- own, else '*') comes from: the rule function effective_lease_policy_queue
-- (rules.sql) instead of a lookup of its own. Same result, no locks.

-- lease_health_by_queue: one row per queue that has a policy or a job:
-- running jobs, leases expiring within one renewal interval, expired leases
-- still RUNNING (awaiting reclaim), reclaims, stale renewals and stale
-- releases in the last hour (tallies summed over every backend's rows, each
-- stale call under the queue it was charged to when counted: '*' holds
-- those of unknown jobs and of jobs the calling login did not claim last,
-- so a guess cannot pass for the queue's trouble), the oldest running
-- claim's age, and the database time it was read at. Computes in UTC
-- whatever the caller's TimeZone.
CREATE OR REPLACE FUNCTION durable_jobs.lease_health_by_queue()
RETURNS TABLE (queue_name text, running_jobs bigint, expiring_within_interval bigint,
               expired_awaiting_reclaim bigint, reclaims_last_hour bigint, stale_renewals_last_hour bigint,
               stale_releases_last_hour bigint, oldest_lease_age interval, database_time timestamptz)
LANGUAGE sql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET TimeZone = 'UTC'
BEGIN ATOMIC
    WITH read_at AS (SELECT pg_catalog.clock_timestamp() AS read_time),
    queues AS (
        SELECT p.queue_name FROM durable_jobs.queue_lease_policy p
        UNION
        SELECT DISTINCT j.queue_name FROM durable_jobs.job_record j
    ),
    effective AS (
        SELECT q.queue_name,
               (SELECT p.renewal_interval FROM durable_jobs.effective_lease_policy_queue(q.queue_name) e
                JOIN durable_jobs.queue_lease_policy p ON p.queue_name = e.policy_queue_name) AS renewal_interval
        FROM queues q
    ),
    running AS (
        SELECT j.queue_name,
               pg_catalog.count(*) AS running_jobs,
               pg_catalog.count(*) FILTER (WHERE j.lease_expires_at > r.read_time
                   AND j.lease_expires_at <= r.read_time + e.renewal_interval) AS expiring_soon,
               pg_catalog.count(*) FILTER (WHERE j.lease_expires_at <= r.read_time) AS expired,
               pg_catalog.min(j.lease_claimed_at) AS oldest_claim
        FROM durable_jobs.job_record j
        CROSS JOIN read_at r
        JOIN effective e ON e.queue_name = j.queue_name
        WHERE j.job_status = 'RUNNING'
        GROUP BY j.queue_name
    ),
    tallies AS (
        SELECT t.queue_name,
               pg_catalog.sum(t.outcome_count) FILTER (WHERE t.outcome_kind = 'reclaim') AS reclaims,
               pg_catalog.sum(t.outcome_count) FILTER (WHERE t.outcome_kind = 'stale_renewal') AS stale_renewals,
               pg_catalog.sum(t.outcome_count) FILTER (WHERE t.outcome_kind = 'stale_release') AS stale_releases
        FROM durable_jobs.lease_outcome_tally t
        CROSS JOIN read_at r
        WHERE t.tally_minute >= r.read_time - interval '1 hour'
        GROUP BY t.queue_name
    )
    SELECT e.queue_name,
           COALESCE(ru.running_jobs, 0), COALESCE(ru.expiring_soon, 0), COALESCE(ru.expired, 0),
           COALESCE(ta.reclaims, 0)::bigint, COALESCE(ta.stale_renewals, 0)::bigint,
           COALESCE(ta.stale_releases, 0)::bigint,
           r.read_time - ru.oldest_claim, r.read_time
    FROM effective e
    CROSS JOIN read_at r
    LEFT JOIN running ru ON ru.queue_name = e.queue_name
    LEFT JOIN tallies ta ON ta.queue_name = e.queue_name
    ORDER BY e.queue_name;
END;

ALTER FUNCTION durable_jobs.lease_health_by_queue() OWNER TO durable_job_audit_owner;
REVOKE ALL ON FUNCTION durable_jobs.lease_health_by_queue() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.lease_health_by_queue() TO durable_job_auditor;
