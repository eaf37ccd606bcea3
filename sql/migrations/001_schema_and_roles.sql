-- leasefence 001: roles, schema, tables and the column privileges of each
-- function family's definer owner. Functions come in 002.
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


CREATE SCHEMA durable_jobs;
COMMENT ON SCHEMA durable_jobs IS 'leasefence: database-authoritative, fenced durable-job leases. Tables are private; the functions in CONTRACT.md are the interface.';
REVOKE ALL ON SCHEMA durable_jobs FROM PUBLIC;
GRANT USAGE ON SCHEMA durable_jobs TO
    durable_job_producer, durable_job_worker, durable_job_operator, durable_job_auditor,
    durable_job_producer_owner, durable_job_claim_owner, durable_job_renewal_owner,
    durable_job_terminal_owner, durable_job_policy_owner, durable_job_audit_owner;

CREATE TYPE durable_jobs.job_status_kind AS ENUM
    ('QUEUED', 'RUNNING', 'RETRY_SCHEDULED', 'SUCCEEDED', 'FAILED', 'CANCELLED');
REVOKE ALL ON TYPE durable_jobs.job_status_kind FROM PUBLIC;
GRANT USAGE ON TYPE durable_jobs.job_status_kind TO
    durable_job_producer_owner, durable_job_claim_owner, durable_job_renewal_owner,
    durable_job_terminal_owner, durable_job_audit_owner;

CREATE TABLE durable_jobs.job_record (
    job_record_id            bigint GENERATED ALWAYS AS IDENTITY CONSTRAINT job_record_pkey PRIMARY KEY,
    queue_name               text NOT NULL
        CONSTRAINT job_record_queue_name_format CHECK (queue_name ~ '^[a-z][a-z0-9_.:-]{0,62}$'),
    job_status               durable_jobs.job_status_kind NOT NULL DEFAULT 'QUEUED',
    idempotency_key_digest   bytea,
    run_after                timestamptz NOT NULL,
    max_attempts             integer NOT NULL
        CONSTRAINT job_record_max_attempts_range CHECK (max_attempts BETWEEN 1 AND 1000),
    attempt_number           integer NOT NULL DEFAULT 0
        CONSTRAINT job_record_attempt_number_range CHECK (attempt_number >= 0),
    lease_claim_digest       bytea,
    lease_owner_id           text,
    lease_claimed_by_role    text,
    lease_claimed_at         timestamptz,
    lease_expires_at         timestamptz,
    lease_claim_deadline     timestamptz,
    lease_fencing_generation bigint NOT NULL DEFAULT 0,
    lease_renewal_count      bigint NOT NULL DEFAULT 0,
    failure_reason_code      text
        CONSTRAINT job_record_failure_reason_code_format CHECK (failure_reason_code ~ '^[a-z][a-z0-9_]{0,62}$'),
    created_at               timestamptz NOT NULL DEFAULT pg_catalog.clock_timestamp(),
    status_changed_at        timestamptz NOT NULL DEFAULT pg_catalog.clock_timestamp(),
    CONSTRAINT job_record_running_has_lease CHECK (
        job_status <> 'RUNNING' OR (lease_claim_digest IS NOT NULL AND lease_owner_id IS NOT NULL
            AND lease_claimed_by_role IS NOT NULL AND lease_expires_at IS NOT NULL
            AND lease_claim_deadline IS NOT NULL))
) WITH (fillfactor = 80);
COMMENT ON TABLE durable_jobs.job_record IS 'One row per durable job: lifecycle and lease state. Never holds the payload.';
COMMENT ON COLUMN durable_jobs.job_record.idempotency_key_digest IS 'sha256 of the producer''s idempotency key (UTF-8); the key itself is never stored.';
COMMENT ON COLUMN durable_jobs.job_record.lease_claim_digest IS 'sha256(uuid_send(token)) of the current claim token; the token itself is never stored.';
COMMENT ON COLUMN durable_jobs.job_record.lease_owner_id IS 'Bounded worker identity that holds the current claim.';
COMMENT ON COLUMN durable_jobs.job_record.lease_claimed_by_role IS 'session_user that made the current claim; the claim is stale for any other login role.';
COMMENT ON COLUMN durable_jobs.job_record.lease_claim_deadline IS 'Claim time plus the max_claim_lifetime in force at claim time: no renewal extends past it.';
COMMENT ON COLUMN durable_jobs.job_record.lease_fencing_generation IS 'Strictly increases with every claim of the job; external sinks reject writes carrying an older value.';
COMMENT ON COLUMN durable_jobs.job_record.lease_renewal_count IS 'Renewals of the current claim; 0 at each claim. Counted here, never in a shared counter row.';
COMMENT ON COLUMN durable_jobs.job_record.attempt_number IS 'Claims used: every claim, reclaim included, uses one; release gives one back.';

CREATE UNIQUE INDEX job_record_idempotency_key_unique
    ON durable_jobs.job_record (queue_name, idempotency_key_digest) WHERE idempotency_key_digest IS NOT NULL;
CREATE INDEX job_record_claimable_queue_order
    ON durable_jobs.job_record (queue_name, run_after, job_record_id)
    WHERE job_status IN ('QUEUED', 'RETRY_SCHEDULED');
-- Running jobs per queue, for the reclaim probe. lease_expires_at is left
-- out on purpose: a renewal then changes no indexed column and can be a HOT
-- update (fillfactor leaves room on each page), so renewals add no index
-- entries and no index bloat.
CREATE INDEX job_record_running_by_queue
    ON durable_jobs.job_record (queue_name)
    WHERE job_status = 'RUNNING';

CREATE TABLE durable_jobs.job_payload_record (
    job_record_id bigint CONSTRAINT job_payload_record_pkey PRIMARY KEY
        CONSTRAINT job_payload_record_job_fkey REFERENCES durable_jobs.job_record (job_record_id) ON DELETE CASCADE,
    job_payload   jsonb NOT NULL
);
COMMENT ON TABLE durable_jobs.job_payload_record IS 'Job payloads, kept apart from lease state: the renewal and audit owners have no privilege here.';

CREATE TABLE durable_jobs.job_outcome_ledger (
    job_outcome_record_id    bigint GENERATED ALWAYS AS IDENTITY CONSTRAINT job_outcome_ledger_pkey PRIMARY KEY,
    job_record_id            bigint NOT NULL
        CONSTRAINT job_outcome_ledger_job_fkey REFERENCES durable_jobs.job_record (job_record_id) ON DELETE CASCADE,
    lease_fencing_generation bigint NOT NULL,
    outcome_status           durable_jobs.job_status_kind NOT NULL,
    failure_reason_code      text,
    result_document          jsonb,
    recorded_at              timestamptz NOT NULL DEFAULT pg_catalog.clock_timestamp()
);
COMMENT ON TABLE durable_jobs.job_outcome_ledger IS 'Fenced terminal outcomes (success with its result, retry, failure), written in the worker''s own transaction.';
CREATE INDEX job_outcome_ledger_job_lookup ON durable_jobs.job_outcome_ledger (job_record_id);

CREATE TABLE durable_jobs.queue_lease_policy (
    queue_name         text CONSTRAINT queue_lease_policy_pkey PRIMARY KEY
        CONSTRAINT queue_lease_policy_queue_name_format CHECK (queue_name = '*' OR queue_name ~ '^[a-z][a-z0-9_.:-]{0,62}$'),
    lease_duration     interval NOT NULL,
    renewal_interval   interval NOT NULL,
    max_claim_lifetime interval NOT NULL,
    renewal_enabled    boolean NOT NULL,
    changed_at         timestamptz NOT NULL DEFAULT pg_catalog.clock_timestamp(),
    changed_by_role    text NOT NULL DEFAULT SESSION_USER,
    CONSTRAINT queue_lease_policy_bounds CHECK (
        lease_duration BETWEEN interval '1 second' AND interval '24 hours'
        AND renewal_interval >= interval '100 milliseconds' AND renewal_interval <= lease_duration / 3
        AND max_claim_lifetime >= lease_duration AND max_claim_lifetime <= interval '7 days')
);
COMMENT ON TABLE durable_jobs.queue_lease_policy IS 'Lease policy per queue; ''*'' is the default for queues without their own.';

CREATE TABLE durable_jobs.control_evidence_record (
    evidence_record_id bigint GENERATED ALWAYS AS IDENTITY CONSTRAINT control_evidence_record_pkey PRIMARY KEY,
    evidence_kind      text NOT NULL CONSTRAINT control_evidence_record_kind CHECK (evidence_kind IN (
        'migration_applied', 'migration_reverted', 'lease_policy_changed', 'renewal_enablement_changed',
        'deployment_recorded')),
    queue_name         text,
    previous_values    jsonb,
    new_values         jsonb NOT NULL,
    change_reason      text NOT NULL,
    changed_by_role    text NOT NULL DEFAULT SESSION_USER,
    recorded_at        timestamptz NOT NULL DEFAULT pg_catalog.clock_timestamp()
);
COMMENT ON TABLE durable_jobs.control_evidence_record IS 'Append-only control evidence: migrations, lease policy and enablement changes, deployments. A trigger refuses UPDATE, DELETE and TRUNCATE.';

CREATE TABLE durable_jobs.lease_outcome_tally (
    tally_slot    integer NOT NULL CONSTRAINT lease_outcome_tally_slot_range CHECK (tally_slot BETWEEN 0 AND 43199),
    tally_minute  timestamptz NOT NULL,
    queue_name    text NOT NULL,
    outcome_kind  text NOT NULL CONSTRAINT lease_outcome_tally_kind CHECK (outcome_kind IN ('stale_renewal', 'reclaim')),
    tally_shard   smallint NOT NULL CONSTRAINT lease_outcome_tally_shard_range CHECK (tally_shard BETWEEN 0 AND 15),
    outcome_count bigint NOT NULL CONSTRAINT lease_outcome_tally_count_positive CHECK (outcome_count > 0),
    CONSTRAINT lease_outcome_tally_pkey PRIMARY KEY (tally_slot, queue_name, outcome_kind, tally_shard)
);
COMMENT ON TABLE durable_jobs.lease_outcome_tally IS 'Bounded per-minute tallies of committed rare outcomes over the last 30 days. Sharded by backend so no single row is hot.';
COMMENT ON COLUMN durable_jobs.lease_outcome_tally.tally_slot IS 'Minute since the epoch modulo 43200 (30 days): a slot is reused, and its old tally overwritten, when its minute comes round again.';
CREATE INDEX lease_outcome_tally_recent ON durable_jobs.lease_outcome_tally (tally_minute);
COMMENT ON COLUMN durable_jobs.lease_outcome_tally.queue_name IS 'Queue of the job; ''*'' when the renewal named a job that does not exist.';
COMMENT ON COLUMN durable_jobs.lease_outcome_tally.tally_shard IS 'pg_backend_pid() % 16: concurrent sessions add to different rows.';

-- Tables are private: no runtime role and not PUBLIC holds any privilege.
REVOKE ALL ON ALL TABLES IN SCHEMA durable_jobs FROM PUBLIC;

-- Column privileges per definer owner: exactly what each family reads and writes.
GRANT SELECT (job_record_id, queue_name, job_status, idempotency_key_digest),
      INSERT (queue_name, idempotency_key_digest, run_after, max_attempts),
      UPDATE (job_status, status_changed_at, attempt_number, run_after, failure_reason_code, lease_expires_at)
    ON durable_jobs.job_record TO durable_job_producer_owner;
GRANT SELECT (job_record_id, job_status, attempt_number, max_attempts, lease_fencing_generation,
              lease_expires_at, lease_renewal_count, failure_reason_code)
    ON durable_jobs.job_record TO durable_job_producer_owner;
GRANT INSERT (job_record_id, job_payload) ON durable_jobs.job_payload_record TO durable_job_producer_owner;

GRANT SELECT (job_record_id, queue_name, job_status, run_after, max_attempts, attempt_number,
              lease_expires_at, lease_fencing_generation),
      UPDATE (job_status, status_changed_at, attempt_number, lease_claim_digest, lease_owner_id,
              lease_claimed_by_role, lease_claimed_at, lease_expires_at, lease_claim_deadline,
              lease_fencing_generation, lease_renewal_count, failure_reason_code)
    ON durable_jobs.job_record TO durable_job_claim_owner;
GRANT SELECT (job_record_id, job_payload) ON durable_jobs.job_payload_record TO durable_job_claim_owner;
GRANT SELECT (queue_name, lease_duration, renewal_interval, max_claim_lifetime)
    ON durable_jobs.queue_lease_policy TO durable_job_claim_owner;
GRANT SELECT (tally_slot, tally_minute, queue_name, outcome_kind, tally_shard, outcome_count),
      INSERT (tally_slot, tally_minute, queue_name, outcome_kind, tally_shard, outcome_count),
      UPDATE (tally_minute, outcome_count)
    ON durable_jobs.lease_outcome_tally TO durable_job_claim_owner;

GRANT SELECT (job_record_id, queue_name, job_status, lease_claim_digest, lease_owner_id,
              lease_claimed_by_role, lease_expires_at, lease_claim_deadline, lease_renewal_count),
      UPDATE (lease_expires_at, lease_renewal_count)
    ON durable_jobs.job_record TO durable_job_renewal_owner;
GRANT SELECT (queue_name, lease_duration, renewal_enabled)
    ON durable_jobs.queue_lease_policy TO durable_job_renewal_owner;
GRANT SELECT (tally_slot, tally_minute, queue_name, outcome_kind, tally_shard, outcome_count),
      INSERT (tally_slot, tally_minute, queue_name, outcome_kind, tally_shard, outcome_count),
      UPDATE (tally_minute, outcome_count)
    ON durable_jobs.lease_outcome_tally TO durable_job_renewal_owner;

GRANT SELECT (job_record_id, job_status, lease_claim_digest, lease_owner_id, lease_claimed_by_role,
              lease_expires_at, lease_fencing_generation, attempt_number, max_attempts),
      UPDATE (job_status, status_changed_at, run_after, attempt_number, failure_reason_code, lease_expires_at)
    ON durable_jobs.job_record TO durable_job_terminal_owner;
GRANT INSERT (job_record_id, lease_fencing_generation, outcome_status, failure_reason_code, result_document)
    ON durable_jobs.job_outcome_ledger TO durable_job_terminal_owner;

GRANT SELECT (queue_name, lease_duration, renewal_interval, max_claim_lifetime, renewal_enabled,
              changed_at, changed_by_role),
      INSERT (queue_name, lease_duration, renewal_interval, max_claim_lifetime, renewal_enabled,
              changed_at, changed_by_role),
      UPDATE (lease_duration, renewal_interval, max_claim_lifetime, renewal_enabled, changed_at, changed_by_role)
    ON durable_jobs.queue_lease_policy TO durable_job_policy_owner;
GRANT INSERT (evidence_kind, queue_name, previous_values, new_values, change_reason)
    ON durable_jobs.control_evidence_record TO durable_job_policy_owner;

GRANT SELECT (queue_name, job_status, lease_claimed_at, lease_expires_at)
    ON durable_jobs.job_record TO durable_job_audit_owner;
GRANT SELECT (queue_name, lease_duration, renewal_interval, max_claim_lifetime, renewal_enabled,
              changed_at, changed_by_role)
    ON durable_jobs.queue_lease_policy TO durable_job_audit_owner;
GRANT SELECT (evidence_record_id, evidence_kind, queue_name, previous_values, new_values, change_reason,
              changed_by_role, recorded_at)
    ON durable_jobs.control_evidence_record TO durable_job_audit_owner;
GRANT SELECT (tally_minute, queue_name, outcome_kind, outcome_count)
    ON durable_jobs.lease_outcome_tally TO durable_job_audit_owner;

-- Append-only evidence: refused for every role, the table owner included.
-- refuse_evidence_change: trigger that keeps control_evidence_record
-- append-only. Fires before UPDATE, DELETE (per row) and TRUNCATE (per
-- statement) for every role, the table owner included.
-- Raises LF004 (evidence is append-only). Takes no lock of its own.
CREATE FUNCTION durable_jobs.refuse_evidence_change()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $function$
BEGIN
    RAISE EXCEPTION USING
        ERRCODE = 'LF004',
        MESSAGE = 'control evidence is append-only',
        DETAIL = pg_catalog.format('%s on %s is refused', TG_OP, TG_TABLE_NAME),
        HINT = 'Append a new evidence record instead.';
END;
$function$;
REVOKE ALL ON FUNCTION durable_jobs.refuse_evidence_change() FROM PUBLIC;

CREATE TRIGGER control_evidence_record_append_only
    BEFORE UPDATE OR DELETE ON durable_jobs.control_evidence_record
    FOR EACH ROW EXECUTE FUNCTION durable_jobs.refuse_evidence_change();
CREATE TRIGGER control_evidence_record_no_truncate
    BEFORE TRUNCATE ON durable_jobs.control_evidence_record
    FOR EACH STATEMENT EXECUTE FUNCTION durable_jobs.refuse_evidence_change();

INSERT INTO durable_jobs.queue_lease_policy
    (queue_name, lease_duration, renewal_interval, max_claim_lifetime, renewal_enabled)
VALUES ('*', interval '30 seconds', interval '10 seconds', interval '24 hours', true);

INSERT INTO durable_jobs.control_evidence_record (evidence_kind, queue_name, previous_values, new_values, change_reason)
VALUES ('lease_policy_changed', '*', NULL,
        '{"lease_duration": "00:00:30", "renewal_interval": "00:00:10", "max_claim_lifetime": "24:00:00", "renewal_enabled": true}',
        'bundle default policy installed by migration 001'),
       ('migration_applied', NULL, NULL, '{"migration_version": 1, "migration_name": "001_schema_and_roles"}',
        'leasefence bundle migration');

---- create above / drop below ----

DROP SCHEMA durable_jobs CASCADE;
