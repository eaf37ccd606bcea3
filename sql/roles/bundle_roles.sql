-- Cluster-wide roles of the leasefence bundle, as the bundle has them now
-- (migration 001 created the first ten, 005 durable_job_retention_owner,
-- 014 durable_job_evidence_owner; each migration's frozen SQL holds its own
-- statements). Edited in place, like sql/functions; a new migration that
-- adds a role includes this file.
--
-- Runtime roles are NOLOGIN groups that application login roles are granted;
-- definer owners are NOLOGIN roles that own one function family each and
-- hold only the column privileges that family needs. None of them is a
-- superuser or has BYPASSRLS, CREATEROLE or CREATEDB. A definer owner that
-- already exists must still be a plain NOLOGIN role without members: one
-- that is not is refused (42501), never adopted. The list is
-- sqlbundle.RuntimeRoles and sqlbundle.DefinerOwnerRoles
-- (TestRoleFileHoldsEveryBundleRole keeps them equal).
DO $roles$
DECLARE
    v_role_name text;
BEGIN
    FOREACH v_role_name IN ARRAY ARRAY[
        'durable_job_producer', 'durable_job_worker', 'durable_job_operator', 'durable_job_auditor',
        'durable_job_producer_owner', 'durable_job_claim_owner', 'durable_job_renewal_owner',
        'durable_job_terminal_owner', 'durable_job_policy_owner', 'durable_job_audit_owner',
        'durable_job_retention_owner', 'durable_job_evidence_owner']
    LOOP
        IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = v_role_name) THEN
            EXECUTE pg_catalog.format(
                'CREATE ROLE %I NOLOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOBYPASSRLS', v_role_name);
        ELSIF v_role_name LIKE '%\_owner' AND EXISTS (
                SELECT 1 FROM pg_catalog.pg_roles r WHERE r.rolname = v_role_name
                AND (r.rolcanlogin OR r.rolsuper OR r.rolcreatedb OR r.rolcreaterole OR r.rolbypassrls OR r.rolreplication
                     OR EXISTS (SELECT 1 FROM pg_catalog.pg_auth_members m WHERE m.roleid = r.oid OR m.member = r.oid))) THEN
            RAISE EXCEPTION 'bundle role % exists but is not a plain NOLOGIN role without members', v_role_name
                USING ERRCODE = '42501', HINT = 'Fix or drop the role as a superuser after checking who made it.';
        END IF;
    END LOOP;
END
$roles$;

-- Operators hold every producer and auditor function.
GRANT durable_job_producer TO durable_job_operator;
GRANT durable_job_auditor TO durable_job_operator;
