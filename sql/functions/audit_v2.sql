-- Auditor functions: payload-blind, finite-cardinality reads for health and
-- evidence. None returns a payload, token, digest, owner id, idempotency key
-- or job id list. They take no locks and raise nothing of their own.

-- lease_health_by_queue: one row per queue that has a policy or a job:
-- running jobs, leases expiring within one renewal interval, expired leases
-- still RUNNING (awaiting reclaim), reclaims and stale renewals in the last
-- hour (tallies summed over every backend's rows; '*' holds stale renewals
-- of unknown jobs and those made by a login that is not the last claimer of
-- any job of the queue, so a guess cannot pass for the queue's trouble), the
-- oldest running claim's age, and the database time it was read at.
-- Computes in UTC whatever the caller's TimeZone.
CREATE OR REPLACE FUNCTION durable_jobs.lease_health_by_queue()
RETURNS TABLE (queue_name text, running_jobs bigint, expiring_within_interval bigint,
               expired_awaiting_reclaim bigint, reclaims_last_hour bigint, stale_renewals_last_hour bigint,
               oldest_lease_age interval, database_time timestamptz)
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
               (SELECT p.renewal_interval FROM durable_jobs.queue_lease_policy p
                WHERE p.queue_name IN (q.queue_name, '*') ORDER BY p.queue_name = '*' LIMIT 1) AS renewal_interval
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
        SELECT CASE WHEN t.outcome_kind = 'stale_renewal' AND t.counted_by_role <> ''
                         AND (t.queue_name, t.counted_by_role) NOT IN (
                             SELECT j.queue_name, j.lease_claimed_by_role FROM durable_jobs.job_record j
                             WHERE j.lease_claimed_by_role IS NOT NULL)
                    THEN '*' ELSE t.queue_name END AS queue_name,
               pg_catalog.sum(t.outcome_count) FILTER (WHERE t.outcome_kind = 'reclaim') AS reclaims,
               pg_catalog.sum(t.outcome_count) FILTER (WHERE t.outcome_kind = 'stale_renewal') AS stale_renewals
        FROM durable_jobs.lease_outcome_tally t
        CROSS JOIN read_at r
        WHERE t.tally_minute >= r.read_time - interval '1 hour'
        GROUP BY 1
    )
    SELECT e.queue_name,
           COALESCE(ru.running_jobs, 0), COALESCE(ru.expiring_soon, 0), COALESCE(ru.expired, 0),
           COALESCE(ta.reclaims, 0)::bigint, COALESCE(ta.stale_renewals, 0)::bigint,
           r.read_time - ru.oldest_claim, r.read_time
    FROM effective e
    CROSS JOIN read_at r
    LEFT JOIN running ru ON ru.queue_name = e.queue_name
    LEFT JOIN tallies ta ON ta.queue_name = e.queue_name
    ORDER BY e.queue_name;
END;

-- queue_lease_policies: every queue's lease policy, '*' (the default) included.
CREATE OR REPLACE FUNCTION durable_jobs.queue_lease_policies()
RETURNS TABLE (queue_name text, lease_duration interval, renewal_interval interval, max_claim_lifetime interval,
               renewal_enabled boolean, changed_at timestamptz, changed_by_role text)
LANGUAGE sql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
BEGIN ATOMIC
    SELECT p.queue_name, p.lease_duration, p.renewal_interval, p.max_claim_lifetime, p.renewal_enabled,
           p.changed_at, p.changed_by_role
    FROM durable_jobs.queue_lease_policy p
    ORDER BY p.queue_name;
END;

-- control_evidence_history: the append-only control evidence recorded at or
-- after p_since (all of it when NULL), oldest first.
CREATE OR REPLACE FUNCTION durable_jobs.control_evidence_history(p_since timestamptz DEFAULT NULL)
RETURNS TABLE (evidence_record_id bigint, evidence_kind text, queue_name text, previous_values jsonb,
               new_values jsonb, change_reason text, changed_by_role text, recorded_at timestamptz)
LANGUAGE sql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
BEGIN ATOMIC
    SELECT e.evidence_record_id, e.evidence_kind, e.queue_name, e.previous_values, e.new_values,
           e.change_reason, e.changed_by_role, e.recorded_at
    FROM durable_jobs.control_evidence_record e
    WHERE p_since IS NULL OR e.recorded_at >= p_since
    ORDER BY e.evidence_record_id;
END;

-- lease_outcome_totals: stale renewals and reclaims per queue summed over
-- every backend's per-minute tallies since the UTC minute of p_since (all of
-- them when NULL), whatever the caller's TimeZone. A stale renewal made by a
-- login that is not the last claimer of any job of its queue is counted
-- under '*' (as are renewals of unknown jobs).
CREATE OR REPLACE FUNCTION durable_jobs.lease_outcome_totals(p_since timestamptz)
RETURNS TABLE (queue_name text, outcome_kind text, outcome_count bigint)
LANGUAGE sql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET TimeZone = 'UTC'
BEGIN ATOMIC
    SELECT a.queue_name, a.outcome_kind, pg_catalog.sum(a.outcome_count)::bigint
    FROM (SELECT CASE WHEN t.outcome_kind = 'stale_renewal' AND t.counted_by_role <> ''
                           AND (t.queue_name, t.counted_by_role) NOT IN (
                             SELECT j.queue_name, j.lease_claimed_by_role FROM durable_jobs.job_record j
                             WHERE j.lease_claimed_by_role IS NOT NULL)
                      THEN '*' ELSE t.queue_name END AS queue_name,
                 t.outcome_kind, t.outcome_count
          FROM durable_jobs.lease_outcome_tally t
          WHERE p_since IS NULL OR t.tally_minute >= pg_catalog.date_trunc('minute', p_since, 'UTC')) a
    GROUP BY a.queue_name, a.outcome_kind
    ORDER BY a.queue_name, a.outcome_kind;
END;

-- job_status_totals: how many jobs each queue has in each status.
CREATE OR REPLACE FUNCTION durable_jobs.job_status_totals()
RETURNS TABLE (queue_name text, job_status text, job_count bigint)
LANGUAGE sql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
BEGIN ATOMIC
    SELECT j.queue_name, j.job_status::text, pg_catalog.count(*)
    FROM durable_jobs.job_record j
    GROUP BY j.queue_name, j.job_status
    ORDER BY j.queue_name, j.job_status;
END;

-- bundle_migration_version: the bundle version this database was last
-- migrated to and when, from the newest migration evidence record.
CREATE OR REPLACE FUNCTION durable_jobs.bundle_migration_version()
RETURNS TABLE (migration_version integer, applied_at timestamptz)
LANGUAGE sql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
BEGIN ATOMIC
    SELECT CASE WHEN e.evidence_kind = 'migration_applied'
                THEN (e.new_values ->> 'migration_version')::integer
                ELSE (e.new_values ->> 'migration_version')::integer - 1 END,
           e.recorded_at
    FROM durable_jobs.control_evidence_record e
    WHERE e.evidence_kind IN ('migration_applied', 'migration_reverted')
    ORDER BY e.evidence_record_id DESC
    LIMIT 1;
END;

ALTER FUNCTION durable_jobs.lease_health_by_queue() OWNER TO durable_job_audit_owner;
ALTER FUNCTION durable_jobs.queue_lease_policies() OWNER TO durable_job_audit_owner;
ALTER FUNCTION durable_jobs.control_evidence_history(timestamptz) OWNER TO durable_job_audit_owner;
ALTER FUNCTION durable_jobs.lease_outcome_totals(timestamptz) OWNER TO durable_job_audit_owner;
ALTER FUNCTION durable_jobs.job_status_totals() OWNER TO durable_job_audit_owner;
ALTER FUNCTION durable_jobs.bundle_migration_version() OWNER TO durable_job_audit_owner;
REVOKE ALL ON FUNCTION durable_jobs.lease_health_by_queue() FROM PUBLIC;
REVOKE ALL ON FUNCTION durable_jobs.queue_lease_policies() FROM PUBLIC;
REVOKE ALL ON FUNCTION durable_jobs.control_evidence_history(timestamptz) FROM PUBLIC;
REVOKE ALL ON FUNCTION durable_jobs.lease_outcome_totals(timestamptz) FROM PUBLIC;
REVOKE ALL ON FUNCTION durable_jobs.job_status_totals() FROM PUBLIC;
REVOKE ALL ON FUNCTION durable_jobs.bundle_migration_version() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.lease_health_by_queue() TO durable_job_auditor;
GRANT EXECUTE ON FUNCTION durable_jobs.queue_lease_policies() TO durable_job_auditor;
GRANT EXECUTE ON FUNCTION durable_jobs.control_evidence_history(timestamptz) TO durable_job_auditor;
GRANT EXECUTE ON FUNCTION durable_jobs.lease_outcome_totals(timestamptz) TO durable_job_auditor;
GRANT EXECUTE ON FUNCTION durable_jobs.job_status_totals() TO durable_job_auditor;
GRANT EXECUTE ON FUNCTION durable_jobs.bundle_migration_version() TO durable_job_auditor;
