-- Cluster-wide roles of the leasefence bundle, created once per cluster.
-- Runtime roles are NOLOGIN groups that application login roles are granted;
-- definer owners are NOLOGIN roles that own one function family each and
-- hold only the column privileges that family needs. None of them is a
-- superuser or has BYPASSRLS, CREATEROLE or CREATEDB.
DO $roles$
DECLARE
    v_role_name text;
BEGIN
    FOREACH v_role_name IN ARRAY ARRAY[
        'durable_job_producer', 'durable_job_worker', 'durable_job_operator', 'durable_job_auditor',
        'durable_job_producer_owner', 'durable_job_claim_owner', 'durable_job_renewal_owner',
        'durable_job_terminal_owner', 'durable_job_policy_owner', 'durable_job_audit_owner']
    LOOP
        IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = v_role_name) THEN
            EXECUTE pg_catalog.format(
                'CREATE ROLE %I NOLOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOBYPASSRLS', v_role_name);
        END IF;
    END LOOP;
END
$roles$;

-- Operators hold every producer and auditor function.
GRANT durable_job_producer TO durable_job_operator;
GRANT durable_job_auditor TO durable_job_operator;
