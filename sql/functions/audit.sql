-- Auditor functions: read-only views of policy, health, outcomes and evidence.
--
-- The current definition of each function of this family, edited in place.
-- A change reaches databases through a new migration that includes this
-- file; released migrations hold their own frozen copy (see sql/doc.go).
--
-- Below, the notes written with the versions the current definitions come
-- from, newest first. They name the files as they were then; each
-- migration's frozen SQL under sql/migrations holds the whole text.

-- Notes of migration 031 (audit.sql in its frozen SQL):
--
-- Only lease_health_by_queue changes: it gains failover_reclaims_last_hour
-- (a new result column: 031 drops the function first), the claims lost
-- with the database that migration 029 reclaims without charging an
-- attempt and tallies as failover_reclaim. reclaims_last_hour still counts
-- the other reclaims only, so a failover no longer hides among ordinary
-- reclaims, nor is invisible.

-- Notes of migration 016 (audit_v5.sql in its frozen SQL):
--
-- audit v5 (migration 016; 012 installs audit_v4.sql): only
-- lease_health_by_queue changes, and only in where the queue's policy (its
-- own, else '*') comes from: the rule function effective_lease_policy_queue
-- (rules.sql) instead of a lookup of its own. Same result, no locks.

-- Notes of migration 012 (audit_v4.sql in its frozen SQL):
--
-- audit v4 (migration 012; 004 installs audit_v2.sql, 006 adds
-- audit_v3.sql): only the two readers of the tally change, so only they are
-- here. lease_health_by_queue gains stale_releases_last_hour (a new result
-- column: 012 drops the function first), and both read each count under
-- the queue it was charged to when it was counted (record_stale_call): v2
-- re-attributed stale renewals at every read by whether the counting login
-- was the last claimer of any job of the queue, which a login that claimed
-- one job there passed, and which a later claim or purge changed after the
-- fact. Still payload-blind and finite: no job id, owner, token or login
-- is returned; no locks.

-- Notes of migration 006 (audit_v3.sql in its frozen SQL):
--
-- Auditor functions, version 3 (the evidence-chain migration, *_evidence_chain.sql): what the auditor needs to
-- rely on the evidence. The functions of audit_v2.sql are unchanged and
-- stay in force. Payload-blind like them: no payload, token, digest of a
-- token, owner id or job id is returned. They take no locks.

-- Notes of migration 004 (audit_v2.sql in its frozen SQL):
--
-- Auditor functions: payload-blind, finite-cardinality reads for health and
-- evidence. None returns a payload, token, digest, owner id, idempotency key
-- or job id list. They take no locks and raise nothing of their own.

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

ALTER FUNCTION durable_jobs.bundle_migration_version() OWNER TO durable_job_audit_owner;
REVOKE ALL ON FUNCTION durable_jobs.bundle_migration_version() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.bundle_migration_version() TO durable_job_auditor;

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

ALTER FUNCTION durable_jobs.queue_lease_policies() OWNER TO durable_job_audit_owner;
REVOKE ALL ON FUNCTION durable_jobs.queue_lease_policies() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.queue_lease_policies() TO durable_job_auditor;

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

ALTER FUNCTION durable_jobs.job_status_totals() OWNER TO durable_job_audit_owner;
REVOKE ALL ON FUNCTION durable_jobs.job_status_totals() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.job_status_totals() TO durable_job_auditor;

-- lease_outcome_totals: reclaims, stale renewals and stale releases per
-- queue and kind, summed over every backend's per-minute tallies since the
-- UTC minute of p_since (all of them when NULL), whatever the caller's
-- TimeZone. Each stale call is under the queue it was charged to when it
-- was counted (record_stale_call): '*' holds those of unknown jobs and of
-- jobs the calling login did not claim last.
CREATE OR REPLACE FUNCTION durable_jobs.lease_outcome_totals(p_since timestamptz)
RETURNS TABLE (queue_name text, outcome_kind text, outcome_count bigint)
LANGUAGE sql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET TimeZone = 'UTC'
BEGIN ATOMIC
    SELECT a.queue_name, a.outcome_kind, pg_catalog.sum(a.outcome_count)::bigint
    FROM durable_jobs.lease_outcome_tally a
    WHERE p_since IS NULL OR a.tally_minute >= pg_catalog.date_trunc('minute', p_since, 'UTC')
    GROUP BY a.queue_name, a.outcome_kind
    ORDER BY a.queue_name, a.outcome_kind;
END;

ALTER FUNCTION durable_jobs.lease_outcome_totals(timestamp with time zone) OWNER TO durable_job_audit_owner;
REVOKE ALL ON FUNCTION durable_jobs.lease_outcome_totals(timestamp with time zone) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.lease_outcome_totals(timestamp with time zone) TO durable_job_auditor;

-- lease_health_by_queue: one row per queue that has a policy or a job:
-- running jobs, leases expiring within one renewal interval, expired leases
-- still RUNNING (awaiting reclaim), reclaims, failover reclaims (claims
-- lost with the database, which cost no attempt), stale renewals and stale
-- releases in the last hour (tallies summed over every backend's rows, each
-- stale call under the queue it was charged to when counted: '*' holds
-- those of unknown jobs and of jobs the calling login did not claim last,
-- so a guess cannot pass for the queue's trouble), the oldest running
-- claim's age, and the database time it was read at. Computes in UTC
-- whatever the caller's TimeZone.
CREATE OR REPLACE FUNCTION durable_jobs.lease_health_by_queue()
RETURNS TABLE (queue_name text, running_jobs bigint, expiring_within_interval bigint,
               expired_awaiting_reclaim bigint, reclaims_last_hour bigint, failover_reclaims_last_hour bigint,
               stale_renewals_last_hour bigint,
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
               pg_catalog.sum(t.outcome_count) FILTER (WHERE t.outcome_kind = 'failover_reclaim') AS failover_reclaims,
               pg_catalog.sum(t.outcome_count) FILTER (WHERE t.outcome_kind = 'stale_renewal') AS stale_renewals,
               pg_catalog.sum(t.outcome_count) FILTER (WHERE t.outcome_kind = 'stale_release') AS stale_releases
        FROM durable_jobs.lease_outcome_tally t
        CROSS JOIN read_at r
        WHERE t.tally_minute >= r.read_time - interval '1 hour'
        GROUP BY t.queue_name
    )
    SELECT e.queue_name,
           COALESCE(ru.running_jobs, 0), COALESCE(ru.expiring_soon, 0), COALESCE(ru.expired, 0),
           COALESCE(ta.reclaims, 0)::bigint, COALESCE(ta.failover_reclaims, 0)::bigint,
           COALESCE(ta.stale_renewals, 0)::bigint,
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

ALTER FUNCTION durable_jobs.control_evidence_history(timestamp with time zone) OWNER TO durable_job_audit_owner;
REVOKE ALL ON FUNCTION durable_jobs.control_evidence_history(timestamp with time zone) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.control_evidence_history(timestamp with time zone) TO durable_job_auditor;

-- control_evidence_records: the control evidence recorded in [p_since,
-- p_until) (either bound NULL for open), oldest first, with the structured
-- fields (ticket, approver) and each record's chain hash.
CREATE OR REPLACE FUNCTION durable_jobs.control_evidence_records(p_since timestamptz, p_until timestamptz)
RETURNS TABLE (evidence_record_id bigint, evidence_kind text, queue_name text, previous_values jsonb,
               new_values jsonb, change_reason text, change_ticket text, change_approver text, changed_by_role text,
               recorded_at timestamptz, record_hash bytea)
LANGUAGE sql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
BEGIN ATOMIC
    SELECT e.evidence_record_id, e.evidence_kind, e.queue_name, e.previous_values, e.new_values,
           e.change_reason, e.change_ticket, e.change_approver, e.changed_by_role, e.recorded_at, e.record_hash
    FROM durable_jobs.control_evidence_record e
    WHERE (p_since IS NULL OR e.recorded_at >= p_since) AND (p_until IS NULL OR e.recorded_at < p_until)
    ORDER BY e.evidence_record_id;
END;

ALTER FUNCTION durable_jobs.control_evidence_records(timestamp with time zone, timestamp with time zone) OWNER TO durable_job_audit_owner;
REVOKE ALL ON FUNCTION durable_jobs.control_evidence_records(timestamp with time zone, timestamp with time zone) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.control_evidence_records(timestamp with time zone, timestamp with time zone) TO durable_job_auditor;

-- control_evidence_chain: the hash chain of the control evidence, oldest
-- first: each record's id, kind and time, the digest of its content as
-- stored now (evidence_content_digest), and the previous_record_hash and
-- record_hash it was written with. A record is intact when record_hash =
-- sha256(previous_record_hash || content_digest) and previous_record_hash is
-- the record_hash of the record before it (32 zero bytes for the first):
-- `leasectl audit` (AUDIT-EVIDENCE-CHAIN) checks both. No reason or value
-- is returned.
CREATE OR REPLACE FUNCTION durable_jobs.control_evidence_chain()
RETURNS TABLE (evidence_record_id bigint, evidence_kind text, recorded_at timestamptz, content_digest bytea,
               previous_record_hash bytea, record_hash bytea)
LANGUAGE sql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
BEGIN ATOMIC
    SELECT e.evidence_record_id, e.evidence_kind, e.recorded_at,
           durable_jobs.evidence_content_digest(e.evidence_record_id, e.evidence_kind, e.queue_name, e.previous_values,
               e.new_values, e.change_reason, e.changed_by_role, e.recorded_at, e.change_ticket, e.change_approver),
           e.previous_record_hash, e.record_hash
    FROM durable_jobs.control_evidence_record e
    ORDER BY e.evidence_record_id;
END;

ALTER FUNCTION durable_jobs.control_evidence_chain() OWNER TO durable_job_audit_owner;
REVOKE ALL ON FUNCTION durable_jobs.control_evidence_chain() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.control_evidence_chain() TO durable_job_auditor;

-- policy_evidence_mismatches: one row per queue whose live policy row is not
-- what its last lease_policy_changed record says it became (values compared
-- as durations, so '1 day' equals '24:00:00'), and per queue whose last
-- record says it has a row of its own that is now missing (or the reverse).
-- Empty when the policy table and the evidence agree.
CREATE OR REPLACE FUNCTION durable_jobs.policy_evidence_mismatches()
RETURNS TABLE (queue_name text, mismatch text)
LANGUAGE sql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
BEGIN ATOMIC
    WITH last_record AS (
        SELECT DISTINCT ON (e.queue_name) e.queue_name, e.new_values
        FROM durable_jobs.control_evidence_record e
        WHERE e.evidence_kind = 'lease_policy_changed' AND e.queue_name IS NOT NULL
        ORDER BY e.queue_name, e.evidence_record_id DESC
    ),
    evidenced AS (
        SELECT l.queue_name, l.new_values,
               COALESCE(l.new_values ->> 'policy_queue_name', CASE WHEN l.new_values ? 'policy_queue_name'
                                                                   THEN NULL ELSE l.queue_name END) = l.queue_name AS has_row
        FROM last_record l
    )
    SELECT COALESCE(p.queue_name, v.queue_name),
           CASE WHEN v.queue_name IS NULL THEN 'policy row has no evidence record'
                WHEN p.queue_name IS NULL AND v.has_row THEN 'policy row in the evidence is missing from the table'
                WHEN p.queue_name IS NOT NULL AND NOT v.has_row THEN 'policy row exists but the evidence says it was removed'
                ELSE 'policy differs from what its last evidence record says' END
    FROM durable_jobs.queue_lease_policy p
    FULL JOIN evidenced v ON v.queue_name = p.queue_name
    WHERE v.queue_name IS NULL
       OR (p.queue_name IS NULL AND v.has_row)
       OR (p.queue_name IS NOT NULL AND NOT v.has_row)
       OR (p.queue_name IS NOT NULL AND (
              (v.new_values ->> 'lease_duration')::interval IS DISTINCT FROM p.lease_duration
           OR (v.new_values ->> 'renewal_interval')::interval IS DISTINCT FROM p.renewal_interval
           OR (v.new_values ->> 'max_claim_lifetime')::interval IS DISTINCT FROM p.max_claim_lifetime
           OR (v.new_values ->> 'renewal_enabled')::boolean IS DISTINCT FROM p.renewal_enabled))
    ORDER BY 1;
END;

ALTER FUNCTION durable_jobs.policy_evidence_mismatches() OWNER TO durable_job_audit_owner;
REVOKE ALL ON FUNCTION durable_jobs.policy_evidence_mismatches() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.policy_evidence_mismatches() TO durable_job_auditor;

-- control_evidence_mismatches: one row per control-table row that is not
-- what its last evidence record says it became (since migration 026): each
-- queue's retention policy against its last retention_policy_changed record
-- (durations compared as durations; a row without a record, or a record
-- that says a row exists that is missing, or the reverse) and the
-- change-control setting against its last change_control_changed record
-- that holds every setting; the newest baseline (in migration 026's
-- migration_applied record) counts as a record of every row it holds, and
-- retention records before it are not compared (a row removed without
-- evidence before 026 is not in the baseline and stays unreported, as
-- nothing could clear it). A control changed with its evidence trigger
-- disabled shows here. Empty when the tables and the evidence agree.
CREATE OR REPLACE FUNCTION durable_jobs.control_evidence_mismatches()
RETURNS TABLE (control_table text, queue_name text, mismatch text)
LANGUAGE sql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
BEGIN ATOMIC
    WITH baseline AS (
        SELECT e.evidence_record_id, e.new_values
        FROM durable_jobs.control_evidence_record e
        WHERE e.evidence_kind = 'migration_applied' AND e.new_values ? 'retention_baseline'
        ORDER BY e.evidence_record_id DESC
        LIMIT 1
    ),
    retention_records AS (
        SELECT e.evidence_record_id, e.queue_name, e.new_values
        FROM durable_jobs.control_evidence_record e
        WHERE e.evidence_kind = 'retention_policy_changed' AND e.queue_name IS NOT NULL
          AND e.evidence_record_id > COALESCE((SELECT b.evidence_record_id FROM baseline b), 0)
        UNION ALL
        SELECT b.evidence_record_id, r.row_values ->> 'policy_queue_name', r.row_values
        FROM baseline b, LATERAL pg_catalog.jsonb_array_elements(b.new_values -> 'retention_baseline') AS r(row_values)
    ),
    last_retention AS (
        SELECT DISTINCT ON (r.queue_name) r.queue_name, r.new_values,
               COALESCE(r.new_values ->> 'policy_queue_name', '') = r.queue_name AS has_row
        FROM retention_records r
        ORDER BY r.queue_name, r.evidence_record_id DESC
    ),
    last_change_control AS (
        SELECT c.new_values
        FROM (SELECT e.evidence_record_id, e.new_values
              FROM durable_jobs.control_evidence_record e
              WHERE e.evidence_kind = 'change_control_changed'
                AND e.new_values ?& ARRAY['ticket_pattern', 'require_approver', 'approver_must_differ', 'reason_pattern']
              UNION ALL
              SELECT e.evidence_record_id, e.new_values -> 'change_control_baseline'
              FROM durable_jobs.control_evidence_record e
              WHERE e.evidence_kind = 'migration_applied' AND e.new_values ? 'change_control_baseline') c
        ORDER BY c.evidence_record_id DESC
        LIMIT 1
    )
    SELECT 'queue_retention_policy', COALESCE(p.queue_name, v.queue_name),
           CASE WHEN v.queue_name IS NULL THEN 'retention row has no evidence record'
                WHEN p.queue_name IS NULL THEN 'retention row in the evidence is missing from the table'
                WHEN NOT v.has_row THEN 'retention row exists but the evidence says it was removed'
                ELSE 'retention differs from what its last evidence record says' END
    FROM durable_jobs.queue_retention_policy p
    FULL JOIN last_retention v ON v.queue_name = p.queue_name
    WHERE v.queue_name IS NULL
       OR (p.queue_name IS NULL AND v.has_row)
       OR (p.queue_name IS NOT NULL AND NOT v.has_row)
       OR (p.queue_name IS NOT NULL AND (
              (v.new_values ->> 'payload_retention')::interval IS DISTINCT FROM p.payload_retention
           OR (v.new_values ->> 'record_retention')::interval IS DISTINCT FROM p.record_retention))
    UNION ALL
    SELECT 'change_control_setting', NULL, 'change control differs from what its last evidence record says'
    FROM durable_jobs.change_control_setting s
    JOIN last_change_control c ON true
    WHERE (c.new_values ->> 'ticket_pattern') IS DISTINCT FROM s.ticket_pattern
       OR (c.new_values ->> 'require_approver')::boolean IS DISTINCT FROM s.require_approver
       OR (c.new_values ->> 'approver_must_differ')::boolean IS DISTINCT FROM s.approver_must_differ
       OR (c.new_values ->> 'reason_pattern') IS DISTINCT FROM s.reason_pattern
       OR (c.new_values ? 'require_second_operator'
           AND (c.new_values ->> 'require_second_operator')::boolean IS DISTINCT FROM s.require_second_operator)
       OR (c.new_values ? 'proposal_lifetime'
           AND (c.new_values ->> 'proposal_lifetime')::interval IS DISTINCT FROM s.proposal_lifetime)
    ORDER BY 1, 2;
END;

ALTER FUNCTION durable_jobs.control_evidence_mismatches() OWNER TO durable_job_audit_owner;
REVOKE ALL ON FUNCTION durable_jobs.control_evidence_mismatches() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.control_evidence_mismatches() TO durable_job_auditor;

-- job_status_mismatches: per queue and status, how many finished jobs hold
-- a status that no fenced write or recorded action explains (since
-- migration 026): a SUCCEEDED job without a SUCCEEDED outcome at its
-- current fencing generation, a FAILED job without a FAILED outcome at it
-- and with attempts left (a claim fails a job whose attempts are used up
-- without an outcome). A superuser's UPDATE of job statuses shows here.
-- Counts only; never a job id. Empty when every status is explained.
-- Reads every finished job (one pass, no lock).
CREATE OR REPLACE FUNCTION durable_jobs.job_status_mismatches()
RETURNS TABLE (queue_name text, job_status text, job_count bigint)
LANGUAGE sql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
BEGIN ATOMIC
    SELECT j.queue_name, j.job_status::text, pg_catalog.count(*)
    FROM durable_jobs.job_record j
    WHERE j.job_status::text IN ('SUCCEEDED', 'FAILED')
      AND NOT (j.job_status::text = 'FAILED' AND j.attempt_number >= j.max_attempts)
      AND NOT EXISTS (
          SELECT 1 FROM durable_jobs.job_outcome_ledger l
          WHERE l.job_record_id = j.job_record_id
            AND l.lease_fencing_generation = j.lease_fencing_generation
            AND l.outcome_status = j.job_status)
    GROUP BY j.queue_name, j.job_status
    ORDER BY j.queue_name, j.job_status;
END;

ALTER FUNCTION durable_jobs.job_status_mismatches() OWNER TO durable_job_audit_owner;
REVOKE ALL ON FUNCTION durable_jobs.job_status_mismatches() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.job_status_mismatches() TO durable_job_auditor;

-- processing_counts: per queue, what was processed in [p_since, p_until)
-- (since migration 026; NULL: open): jobs enqueued (created then), outcomes
-- the workers recorded (succeeded, retried, failed: the outcome ledger's
-- rows recorded then) and the operators' cancels and replays (the action
-- trail, since 026). Each figure is counted where it happened, so a
-- period's figures do not change once it has passed, until the retention
-- purge removes its jobs (the purge's own counts are in its evidence). A
-- job failed by a claim because its attempts were used up writes no
-- outcome and is not counted as failed. Counts only. Reads the job, ledger
-- and action tables in one pass each; takes no lock.
CREATE OR REPLACE FUNCTION durable_jobs.processing_counts(p_since timestamptz, p_until timestamptz)
RETURNS TABLE (queue_name text, enqueued bigint, succeeded bigint, retried bigint, failed bigint,
               cancelled bigint, replayed bigint)
LANGUAGE sql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
BEGIN ATOMIC
    WITH events AS (
        SELECT j.queue_name, 'enqueued' AS event
        FROM durable_jobs.job_record j
        WHERE (p_since IS NULL OR j.created_at >= p_since) AND (p_until IS NULL OR j.created_at < p_until)
        UNION ALL
        SELECT j.queue_name, l.outcome_status::text
        FROM durable_jobs.job_outcome_ledger l
        JOIN durable_jobs.job_record j ON j.job_record_id = l.job_record_id
        WHERE (p_since IS NULL OR l.recorded_at >= p_since) AND (p_until IS NULL OR l.recorded_at < p_until)
        UNION ALL
        SELECT j.queue_name, a.action_kind
        FROM durable_jobs.job_action_record a
        JOIN durable_jobs.job_record j ON j.job_record_id = a.job_record_id
        WHERE a.action_kind IN ('cancelled', 'replayed')
          AND (p_since IS NULL OR a.acted_at >= p_since) AND (p_until IS NULL OR a.acted_at < p_until)
    )
    SELECT e.queue_name,
           pg_catalog.count(*) FILTER (WHERE e.event = 'enqueued'),
           pg_catalog.count(*) FILTER (WHERE e.event = 'SUCCEEDED'),
           pg_catalog.count(*) FILTER (WHERE e.event = 'RETRY_SCHEDULED'),
           pg_catalog.count(*) FILTER (WHERE e.event = 'FAILED'),
           pg_catalog.count(*) FILTER (WHERE e.event = 'cancelled'),
           pg_catalog.count(*) FILTER (WHERE e.event = 'replayed')
    FROM events e
    GROUP BY e.queue_name
    ORDER BY e.queue_name;
END;

ALTER FUNCTION durable_jobs.processing_counts(timestamptz, timestamptz) OWNER TO durable_job_audit_owner;
REVOKE ALL ON FUNCTION durable_jobs.processing_counts(timestamptz, timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.processing_counts(timestamptz, timestamptz) TO durable_job_auditor;
