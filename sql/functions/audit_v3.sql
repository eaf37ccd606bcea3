-- Auditor functions, version 3 (the evidence-chain migration, *_evidence_chain.sql): what the auditor needs to
-- rely on the evidence. The functions of audit_v2.sql are unchanged and
-- stay in force. Payload-blind like them: no payload, token, digest of a
-- token, owner id or job id is returned. They take no locks.

-- control_evidence_chain: the hash chain of the control evidence, oldest
-- first: each record's id, kind and time, the digest of its content as
-- stored now (evidence_content_digest), and the previous_record_hash and
-- record_hash it was written with. A record is intact when record_hash =
-- sha256(previous_record_hash || content_digest) and previous_record_hash is
-- the record_hash of the record before it (32 zero bytes for the first):
-- `leasectl audit` (AUDIT-EVIDENCE-CHAIN) checks both. No reason or value
-- is returned.
CREATE FUNCTION durable_jobs.control_evidence_chain()
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

-- control_evidence_records: the control evidence recorded in [p_since,
-- p_until) (either bound NULL for open), oldest first, with the structured
-- fields (ticket, approver) and each record's chain hash.
CREATE FUNCTION durable_jobs.control_evidence_records(p_since timestamptz, p_until timestamptz)
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

-- policy_evidence_mismatches: one row per queue whose live policy row is not
-- what its last lease_policy_changed record says it became (values compared
-- as durations, so '1 day' equals '24:00:00'), and per queue whose last
-- record says it has a row of its own that is now missing (or the reverse).
-- Empty when the policy table and the evidence agree.
CREATE FUNCTION durable_jobs.policy_evidence_mismatches()
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

ALTER FUNCTION durable_jobs.control_evidence_chain() OWNER TO durable_job_audit_owner;
ALTER FUNCTION durable_jobs.control_evidence_records(timestamptz, timestamptz) OWNER TO durable_job_audit_owner;
ALTER FUNCTION durable_jobs.policy_evidence_mismatches() OWNER TO durable_job_audit_owner;
REVOKE ALL ON FUNCTION durable_jobs.control_evidence_chain() FROM PUBLIC;
REVOKE ALL ON FUNCTION durable_jobs.control_evidence_records(timestamptz, timestamptz) FROM PUBLIC;
REVOKE ALL ON FUNCTION durable_jobs.policy_evidence_mismatches() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.control_evidence_chain() TO durable_job_auditor;
GRANT EXECUTE ON FUNCTION durable_jobs.control_evidence_records(timestamptz, timestamptz) TO durable_job_auditor;
GRANT EXECUTE ON FUNCTION durable_jobs.policy_evidence_mismatches() TO durable_job_auditor;
