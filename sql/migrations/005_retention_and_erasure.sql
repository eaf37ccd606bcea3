-- leasefence retention and erasure: a retention policy per queue, a bounded
-- purge of finished jobs' data, and erasure of one job's payload on request.
-- Self-contained: it depends only on what 001 and 002 install, and it adds
-- its evidence kinds to whatever list the evidence CHECK holds when it runs.

-- The family's definer owner: NOLOGIN, nothing elevated, no members.
-- Cluster-wide like every bundle role: created when missing, reused only
-- when it is exactly that (sqlbundle.Preflight checks it too), kept by
-- down, removed by leasectl migrate down --to 0 --drop-roles.
DO $roles$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = 'durable_job_retention_owner') THEN
        CREATE ROLE durable_job_retention_owner NOLOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOBYPASSRLS;
    ELSIF EXISTS (SELECT 1 FROM pg_catalog.pg_roles r WHERE r.rolname = 'durable_job_retention_owner'
                  AND (r.rolcanlogin OR r.rolsuper OR r.rolcreatedb OR r.rolcreaterole OR r.rolbypassrls OR r.rolreplication
                       OR EXISTS (SELECT 1 FROM pg_catalog.pg_auth_members m WHERE m.roleid = r.oid OR m.member = r.oid))) THEN
        RAISE EXCEPTION 'bundle role durable_job_retention_owner exists but is not a plain NOLOGIN role without members'
            USING ERRCODE = '42501', HINT = 'Fix or drop the role as a superuser after checking who made it.';
    END IF;
END
$roles$;
GRANT USAGE ON SCHEMA durable_jobs TO durable_job_retention_owner;
GRANT USAGE ON TYPE durable_jobs.job_status_kind TO durable_job_retention_owner;

CREATE TABLE durable_jobs.queue_retention_policy (
    queue_name        text CONSTRAINT queue_retention_policy_pkey PRIMARY KEY
        CONSTRAINT queue_retention_policy_queue_name_format CHECK (queue_name = '*' OR queue_name ~ '^[a-z][a-z0-9_.:-]{0,62}$'),
    payload_retention interval NOT NULL,
    record_retention  interval NOT NULL,
    changed_at        timestamptz NOT NULL DEFAULT pg_catalog.clock_timestamp(),
    changed_by_role   text NOT NULL DEFAULT SESSION_USER,
    CONSTRAINT queue_retention_policy_bounds CHECK (
        payload_retention >= interval '1 hour' AND record_retention >= payload_retention
        AND record_retention <= interval '3650 days')
);
COMMENT ON TABLE durable_jobs.queue_retention_policy IS 'Retention per queue (''*'' is the default): how long a finished job keeps its payload and result documents, and how long its row and outcome ledger are kept.';
REVOKE ALL ON durable_jobs.queue_retention_policy FROM PUBLIC;

-- Finished jobs by age, for the purge. Claims and terminal writes already
-- change job_status, an indexed column; renewals change neither column.
CREATE INDEX job_record_finished_by_age
    ON durable_jobs.job_record (status_changed_at)
    WHERE job_status IN ('SUCCEEDED', 'FAILED', 'CANCELLED');

-- What the family reads and writes. It can delete payload rows and clear
-- result documents but can read neither. UPDATE (status_changed_at) is
-- there only because SELECT ... FOR UPDATE needs UPDATE on one column; no
-- function of the family updates a job row.
GRANT SELECT (job_record_id, queue_name, job_status, status_changed_at), UPDATE (status_changed_at), DELETE
    ON durable_jobs.job_record TO durable_job_retention_owner;
GRANT SELECT (job_record_id), DELETE ON durable_jobs.job_payload_record TO durable_job_retention_owner;
GRANT SELECT (job_record_id), UPDATE (result_document) ON durable_jobs.job_outcome_ledger TO durable_job_retention_owner;
GRANT SELECT (queue_name, payload_retention, record_retention, changed_at, changed_by_role),
      INSERT (queue_name, payload_retention, record_retention, changed_at, changed_by_role),
      UPDATE (payload_retention, record_retention, changed_at, changed_by_role)
    ON durable_jobs.queue_retention_policy TO durable_job_retention_owner;
GRANT INSERT (evidence_kind, queue_name, previous_values, new_values, change_reason)
    ON durable_jobs.control_evidence_record TO durable_job_retention_owner;
GRANT EXECUTE ON FUNCTION durable_jobs.require_well_formed(text, text, text) TO durable_job_retention_owner;

-- The evidence kinds this family writes, added to the CHECK's current list.
DO $kinds$
DECLARE
    v_kinds text[];
BEGIN
    SELECT pg_catalog.array_agg(m[1] ORDER BY o)
    INTO v_kinds
    FROM pg_catalog.pg_constraint c,
         LATERAL pg_catalog.regexp_matches(pg_catalog.pg_get_constraintdef(c.oid), '''([a-z_]+)''', 'g') WITH ORDINALITY AS r(m, o)
    WHERE c.conrelid = 'durable_jobs.control_evidence_record'::pg_catalog.regclass
      AND c.conname = 'control_evidence_record_kind';
    v_kinds := v_kinds || ARRAY['retention_policy_changed', 'job_data_purged', 'job_payload_erased'];
    ALTER TABLE durable_jobs.control_evidence_record DROP CONSTRAINT control_evidence_record_kind;
    EXECUTE pg_catalog.format('ALTER TABLE durable_jobs.control_evidence_record ADD CONSTRAINT control_evidence_record_kind CHECK (evidence_kind IN (%s))',
        (SELECT pg_catalog.string_agg(pg_catalog.quote_literal(k), ', ' ORDER BY o) FROM pg_catalog.unnest(v_kinds) WITH ORDINALITY AS u(k, o)));
END
$kinds$;

{{ template "functions/retention.sql" . }}

INSERT INTO durable_jobs.queue_retention_policy (queue_name, payload_retention, record_retention)
VALUES ('*', interval '30 days', interval '365 days');

INSERT INTO durable_jobs.control_evidence_record (evidence_kind, queue_name, previous_values, new_values, change_reason)
VALUES ('migration_applied', NULL, NULL,
        '{"migration_version": 5, "migration_name": "005_retention_and_erasure", "default_retention_policy": {"payload_retention": "30 days", "record_retention": "365 days"}}',
        'leasefence bundle migration');

---- create above / drop below ----

DROP FUNCTION durable_jobs.erase_job_payload(bigint, text);
DROP FUNCTION durable_jobs.purge_expired_job_data(integer);
DROP FUNCTION durable_jobs.queue_retention_policies();
DROP FUNCTION durable_jobs.set_queue_retention_policy(text, interval, interval, text);
DROP FUNCTION durable_jobs.require_valid_change_reason(text, text);
DROP TABLE durable_jobs.queue_retention_policy;
DROP INDEX durable_jobs.job_record_finished_by_age;

-- Evidence is append-only and is never removed: when records of this
-- family's kinds exist, the narrower CHECK is added NOT VALID, so it holds
-- for every new record and the old ones stay.
DO $kinds$
DECLARE
    v_kinds text[];
    v_ours text[] := ARRAY['retention_policy_changed', 'job_data_purged', 'job_payload_erased'];
BEGIN
    SELECT pg_catalog.array_agg(m[1] ORDER BY o)
    INTO v_kinds
    FROM pg_catalog.pg_constraint c,
         LATERAL pg_catalog.regexp_matches(pg_catalog.pg_get_constraintdef(c.oid), '''([a-z_]+)''', 'g') WITH ORDINALITY AS r(m, o)
    WHERE c.conrelid = 'durable_jobs.control_evidence_record'::pg_catalog.regclass
      AND c.conname = 'control_evidence_record_kind'
      AND m[1] <> ALL (v_ours);
    ALTER TABLE durable_jobs.control_evidence_record DROP CONSTRAINT control_evidence_record_kind;
    EXECUTE pg_catalog.format('ALTER TABLE durable_jobs.control_evidence_record ADD CONSTRAINT control_evidence_record_kind CHECK (evidence_kind IN (%s))%s',
        (SELECT pg_catalog.string_agg(pg_catalog.quote_literal(k), ', ' ORDER BY o) FROM pg_catalog.unnest(v_kinds) WITH ORDINALITY AS u(k, o)),
        CASE WHEN EXISTS (SELECT 1 FROM durable_jobs.control_evidence_record e WHERE e.evidence_kind = ANY (v_ours))
             THEN ' NOT VALID' ELSE '' END);
END
$kinds$;

REVOKE EXECUTE ON FUNCTION durable_jobs.require_well_formed(text, text, text) FROM durable_job_retention_owner;
REVOKE ALL ON durable_jobs.job_record FROM durable_job_retention_owner;
REVOKE ALL ON durable_jobs.job_payload_record FROM durable_job_retention_owner;
REVOKE ALL ON durable_jobs.job_outcome_ledger FROM durable_job_retention_owner;
REVOKE ALL ON durable_jobs.control_evidence_record FROM durable_job_retention_owner;
REVOKE ALL (evidence_kind, queue_name, previous_values, new_values, change_reason)
    ON durable_jobs.control_evidence_record FROM durable_job_retention_owner;
REVOKE ALL (job_record_id, queue_name, job_status, status_changed_at) ON durable_jobs.job_record FROM durable_job_retention_owner;
REVOKE ALL (job_record_id) ON durable_jobs.job_payload_record FROM durable_job_retention_owner;
REVOKE ALL (job_record_id, result_document) ON durable_jobs.job_outcome_ledger FROM durable_job_retention_owner;
REVOKE USAGE ON TYPE durable_jobs.job_status_kind FROM durable_job_retention_owner;
REVOKE USAGE ON SCHEMA durable_jobs FROM durable_job_retention_owner;
-- durable_job_retention_owner stays, like every bundle role.

INSERT INTO durable_jobs.control_evidence_record (evidence_kind, queue_name, previous_values, new_values, change_reason)
VALUES ('migration_reverted', NULL, NULL, '{"migration_version": 5, "migration_name": "005_retention_and_erasure"}',
        'leasefence bundle migration rolled back');
