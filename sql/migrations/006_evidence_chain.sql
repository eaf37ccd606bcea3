-- leasefence 006: evidence an auditor can rely on.
--
-- * Complete: every change of queue_lease_policy, whoever makes it and
--   however, is recorded by triggers on the table (record_policy_change);
--   set_queue_lease_policy no longer writes evidence itself. The row's
--   changed_by_role and changed_at are stamped by the database.
-- * Tamper-evident: every evidence record carries record_hash =
--   sha256(previous_record_hash || content digest), chained in id order
--   (which is commit order); existing records are chained here, in id order.
-- * Structured: records carry a ticket and an approver; reasons that look
--   like personal data or a secret are refused (LF002).
-- * Migration evidence records the operator's reason (the session setting
--   leasefence.migration_reason that `leasectl migrate --reason` sets).
-- This migration's version number appears only in its two evidence records
-- below (migration_version 6).

ALTER TABLE durable_jobs.control_evidence_record
    ADD COLUMN change_ticket text CONSTRAINT control_evidence_record_ticket_format
        CHECK (change_ticket ~ '^[A-Z][A-Z0-9]+-[0-9]+$'),
    ADD COLUMN change_approver text,
    ADD COLUMN previous_record_hash bytea,
    ADD COLUMN record_hash bytea;
COMMENT ON COLUMN durable_jobs.control_evidence_record.change_ticket IS 'Change ticket (^[A-Z][A-Z0-9]+-[0-9]+$), NULL when none was given.';
COMMENT ON COLUMN durable_jobs.control_evidence_record.change_approver IS 'Login role that approved the change (never the changer), NULL when none was given.';
COMMENT ON COLUMN durable_jobs.control_evidence_record.previous_record_hash IS 'record_hash of the record before this one in id order; 32 zero bytes for the first.';
COMMENT ON COLUMN durable_jobs.control_evidence_record.record_hash IS 'sha256(previous_record_hash || evidence_content_digest(this record)): the hash chain.';

{{ template "functions/evidence_guard_v2.sql" . }}

-- Chain the records that exist, in id order (the append-only trigger is
-- off for this transaction's UPDATE only).
ALTER TABLE durable_jobs.control_evidence_record DISABLE TRIGGER control_evidence_record_append_only;
DO $chain$
DECLARE
    v_previous bytea := pg_catalog.decode(pg_catalog.repeat('00', 32), 'hex');
    v_record record;
BEGIN
    FOR v_record IN
        SELECT e.* FROM durable_jobs.control_evidence_record e ORDER BY e.evidence_record_id
    LOOP
        UPDATE durable_jobs.control_evidence_record e
        SET previous_record_hash = v_previous,
            record_hash = pg_catalog.sha256(v_previous || durable_jobs.evidence_content_digest(
                v_record.evidence_record_id, v_record.evidence_kind, v_record.queue_name, v_record.previous_values,
                v_record.new_values, v_record.change_reason, v_record.changed_by_role, v_record.recorded_at,
                v_record.change_ticket, v_record.change_approver))
        WHERE e.evidence_record_id = v_record.evidence_record_id
        RETURNING e.record_hash INTO v_previous;
    END LOOP;
END
$chain$;
ALTER TABLE durable_jobs.control_evidence_record ENABLE TRIGGER control_evidence_record_append_only;
ALTER TABLE durable_jobs.control_evidence_record
    ALTER COLUMN previous_record_hash SET NOT NULL,
    ALTER COLUMN record_hash SET NOT NULL;

CREATE TRIGGER control_evidence_record_chain
    BEFORE INSERT ON durable_jobs.control_evidence_record
    FOR EACH ROW EXECUTE FUNCTION durable_jobs.chain_evidence_record();
CREATE TRIGGER queue_lease_policy_stamp
    BEFORE INSERT OR UPDATE ON durable_jobs.queue_lease_policy
    FOR EACH ROW EXECUTE FUNCTION durable_jobs.stamp_policy_change();
CREATE TRIGGER queue_lease_policy_evidence
    AFTER INSERT OR UPDATE OR DELETE ON durable_jobs.queue_lease_policy
    FOR EACH ROW EXECUTE FUNCTION durable_jobs.record_policy_change();
CREATE TRIGGER queue_lease_policy_no_truncate
    BEFORE TRUNCATE ON durable_jobs.queue_lease_policy
    FOR EACH STATEMENT EXECUTE FUNCTION durable_jobs.refuse_policy_truncate();

-- The chain trigger runs as the writer: the policy owner reads the last
-- record's hash and writes the structured fields; the auditor owner reads them.
GRANT SELECT (evidence_record_id, record_hash) ON durable_jobs.control_evidence_record TO durable_job_policy_owner;
GRANT INSERT (change_ticket, change_approver) ON durable_jobs.control_evidence_record TO durable_job_policy_owner;
GRANT SELECT (change_ticket, change_approver, previous_record_hash, record_hash)
    ON durable_jobs.control_evidence_record TO durable_job_audit_owner;
-- The retention family (migration 005) writes evidence too.
GRANT SELECT (evidence_record_id, record_hash) ON durable_jobs.control_evidence_record TO durable_job_retention_owner;
-- The policy trigger deletes nothing itself, but a DELETE of a policy row
-- is now recorded; the owner still has no DELETE privilege.

GRANT EXECUTE ON FUNCTION durable_jobs.lock_evidence_order() TO durable_job_retention_owner;
GRANT EXECUTE ON FUNCTION durable_jobs.evidence_content_digest(bigint, text, text, jsonb, jsonb, text, text, timestamptz, text, text)
    TO durable_job_retention_owner;

{{ template "functions/policy_v3.sql" . }}
{{ template "functions/audit_v3.sql" . }}

SELECT pg_catalog.pg_advisory_xact_lock(1279655936, 1);
INSERT INTO durable_jobs.control_evidence_record (evidence_kind, queue_name, previous_values, new_values, change_reason)
VALUES ('migration_applied', NULL, NULL, '{"migration_version": 6, "migration_name": "006_evidence_chain"}',
        COALESCE(NULLIF(pg_catalog.current_setting('leasefence.migration_reason', true), ''), 'leasefence bundle migration'));

---- create above / drop below ----

DROP FUNCTION durable_jobs.policy_evidence_mismatches();
DROP FUNCTION durable_jobs.control_evidence_records(timestamptz, timestamptz);
DROP FUNCTION durable_jobs.control_evidence_chain();
{{ template "functions/policy_v2.sql" . }}
DROP FUNCTION durable_jobs.record_deployment(text, text, text, text, text);
DROP FUNCTION durable_jobs.set_queue_lease_policy(text, interval, interval, interval, boolean, text, text, text);
DROP FUNCTION durable_jobs.change_queue_lease_policy(text, interval, interval, interval, boolean, text, text, text);

DROP TRIGGER queue_lease_policy_no_truncate ON durable_jobs.queue_lease_policy;
DROP TRIGGER queue_lease_policy_evidence ON durable_jobs.queue_lease_policy;
DROP TRIGGER queue_lease_policy_stamp ON durable_jobs.queue_lease_policy;
DROP TRIGGER control_evidence_record_chain ON durable_jobs.control_evidence_record;
DROP FUNCTION durable_jobs.refuse_policy_truncate();
DROP FUNCTION durable_jobs.record_policy_change();
DROP FUNCTION durable_jobs.stamp_policy_change();
DROP FUNCTION durable_jobs.chain_evidence_record();
REVOKE EXECUTE ON FUNCTION durable_jobs.lock_evidence_order() FROM durable_job_retention_owner;
DROP FUNCTION durable_jobs.evidence_content_digest(bigint, text, text, jsonb, jsonb, text, text, timestamptz, text, text);
DROP FUNCTION durable_jobs.require_structured_change(text, text, text);
DROP FUNCTION durable_jobs.looks_personal_or_secret(text);
DROP FUNCTION durable_jobs.passes_luhn(text);

-- Version 4's evidence has no chain and no structured fields: they go, the
-- records stay (their reasons and values are what version 4 shows).
REVOKE SELECT (change_ticket, change_approver, previous_record_hash, record_hash)
    ON durable_jobs.control_evidence_record FROM durable_job_audit_owner;
REVOKE INSERT (change_ticket, change_approver) ON durable_jobs.control_evidence_record FROM durable_job_policy_owner;
REVOKE SELECT (evidence_record_id, record_hash) ON durable_jobs.control_evidence_record FROM durable_job_policy_owner;
REVOKE SELECT (evidence_record_id, record_hash) ON durable_jobs.control_evidence_record FROM durable_job_retention_owner;
ALTER TABLE durable_jobs.control_evidence_record
    DROP COLUMN record_hash,
    DROP COLUMN previous_record_hash,
    DROP COLUMN change_approver,
    DROP COLUMN change_ticket;

SELECT pg_catalog.pg_advisory_xact_lock(1279655936, 1);
INSERT INTO durable_jobs.control_evidence_record (evidence_kind, queue_name, previous_values, new_values, change_reason)
VALUES ('migration_reverted', NULL, NULL, '{"migration_version": 6, "migration_name": "006_evidence_chain"}',
        COALESCE(NULLIF(pg_catalog.current_setting('leasefence.migration_reason', true), ''),
                 'leasefence bundle migration rolled back'));
