-- leasefence 014: the evidence table gets an owner of its own, and
-- retention and erasure reasons are checked like policy change reasons.
--
-- * durable_jobs.control_evidence_record (with its identity sequence) and
--   its append-only guard durable_jobs.refuse_evidence_change() were owned
--   by the role that applied the bundle, a login: whoever logs in as it or
--   is granted it acts as the table's owner, who can disable the guard, and
--   it may outlive its superuser attribute. They move to
--   durable_job_evidence_owner, a NOLOGIN role without members, login or
--   elevated attributes, which owns nothing else and that nothing runs as
--   (so nobody but a superuser can act as the table's owner). The grants on
--   the table stay; every writer (the definer families, and the migrations,
--   which run as a superuser) appends as before.
-- * set_queue_retention_policy and erase_job_payload (retention_v2.sql)
--   refuse a reason that looks like personal data or a secret with LF002
--   (require_structured_change), as set_queue_lease_policy does.
-- The down part gives the table, its sequence and the guard back to the
-- owner of schema durable_jobs, which is the role that applied 001 and so
-- the owner every version before this one has; the role stays, like every
-- bundle role (leasectl migrate down --to 0 --drop-roles removes it). It
-- puts retention version 1 back: retention.sql creates the whole family, so
-- the family's five functions are dropped first.

-- Cluster-wide like every bundle role: created when missing, reused only
-- when it is exactly that (sqlbundle.Preflight checks it too).
DO $roles$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = 'durable_job_evidence_owner') THEN
        CREATE ROLE durable_job_evidence_owner NOLOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOBYPASSRLS;
    ELSIF EXISTS (SELECT 1 FROM pg_catalog.pg_roles r WHERE r.rolname = 'durable_job_evidence_owner'
                  AND (r.rolcanlogin OR r.rolsuper OR r.rolcreatedb OR r.rolcreaterole OR r.rolbypassrls OR r.rolreplication
                       OR EXISTS (SELECT 1 FROM pg_catalog.pg_auth_members m WHERE m.roleid = r.oid OR m.member = r.oid))) THEN
        RAISE EXCEPTION 'bundle role durable_job_evidence_owner exists but is not a plain NOLOGIN role without members'
            USING ERRCODE = '42501', HINT = 'Fix or drop the role as a superuser after checking who made it.';
    END IF;
END
$roles$;

ALTER TABLE durable_jobs.control_evidence_record OWNER TO durable_job_evidence_owner;
ALTER FUNCTION durable_jobs.refuse_evidence_change() OWNER TO durable_job_evidence_owner;

GRANT EXECUTE ON FUNCTION durable_jobs.require_structured_change(text, text, text) TO durable_job_retention_owner;
GRANT EXECUTE ON FUNCTION durable_jobs.is_plain_change_reason(text) TO durable_job_retention_owner;
GRANT EXECUTE ON FUNCTION durable_jobs.looks_personal_or_secret(text) TO durable_job_retention_owner;
GRANT EXECUTE ON FUNCTION durable_jobs.passes_luhn(text) TO durable_job_retention_owner;
{{ template "functions/retention_v2.sql" . }}

SELECT pg_catalog.pg_advisory_xact_lock(1279655936, 1);
INSERT INTO durable_jobs.control_evidence_record (evidence_kind, queue_name, previous_values, new_values, change_reason)
VALUES ('migration_applied', NULL, NULL, '{"migration_version": 14, "migration_name": "014_evidence_owner_and_retention_reasons"}',
        COALESCE(NULLIF(pg_catalog.current_setting('leasefence.migration_reason', true), ''), 'leasefence bundle migration'));

---- create above / drop below ----

DROP FUNCTION durable_jobs.erase_job_payload(bigint, text);
DROP FUNCTION durable_jobs.purge_expired_job_data(integer);
DROP FUNCTION durable_jobs.queue_retention_policies();
DROP FUNCTION durable_jobs.set_queue_retention_policy(text, interval, interval, text);
DROP FUNCTION durable_jobs.require_valid_change_reason(text, text);
{{ template "functions/retention.sql" . }}
REVOKE EXECUTE ON FUNCTION durable_jobs.passes_luhn(text) FROM durable_job_retention_owner;
REVOKE EXECUTE ON FUNCTION durable_jobs.looks_personal_or_secret(text) FROM durable_job_retention_owner;
REVOKE EXECUTE ON FUNCTION durable_jobs.is_plain_change_reason(text) FROM durable_job_retention_owner;
REVOKE EXECUTE ON FUNCTION durable_jobs.require_structured_change(text, text, text) FROM durable_job_retention_owner;

DO $owner$
BEGIN
    EXECUTE pg_catalog.format('ALTER FUNCTION durable_jobs.refuse_evidence_change() OWNER TO %I',
        (SELECT pg_catalog.pg_get_userbyid(n.nspowner) FROM pg_catalog.pg_namespace n WHERE n.nspname = 'durable_jobs'));
    EXECUTE pg_catalog.format('ALTER TABLE durable_jobs.control_evidence_record OWNER TO %I',
        (SELECT pg_catalog.pg_get_userbyid(n.nspowner) FROM pg_catalog.pg_namespace n WHERE n.nspname = 'durable_jobs'));
END
$owner$;

SELECT pg_catalog.pg_advisory_xact_lock(1279655936, 1);
INSERT INTO durable_jobs.control_evidence_record (evidence_kind, queue_name, previous_values, new_values, change_reason)
VALUES ('migration_reverted', NULL, NULL, '{"migration_version": 14, "migration_name": "014_evidence_owner_and_retention_reasons"}',
        COALESCE(NULLIF(pg_catalog.current_setting('leasefence.migration_reason', true), ''),
                 'leasefence bundle migration rolled back'));
