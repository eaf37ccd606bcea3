-- GENERATED: do not edit. The schema durable_jobs of a fresh install of
-- the bundle at version 32, as pg_dump --schema-only prints it: tables,
-- indexes, constraints, triggers, functions, owners and grants. The
-- installing superuser is written postgres. The roles are in
-- sql/roles/bundle_roles.sql, the function bodies with their comments in
-- sql/functions. Regenerate after a new migration with:
--   go test ./sql/integration -run TestGeneratedSchemaIsAFreshInstall -update-schema

--
-- PostgreSQL database dump
--

SET statement_timeout = 0;
SET lock_timeout = 0;
SET idle_in_transaction_session_timeout = 0;
SET client_encoding = 'UTF8';
SET standard_conforming_strings = on;
SELECT pg_catalog.set_config('search_path', '', false);
SET check_function_bodies = false;
SET xmloption = content;
SET client_min_messages = warning;
SET row_security = off;

--
-- Name: durable_jobs; Type: SCHEMA; Schema: -; Owner: postgres
--

CREATE SCHEMA durable_jobs;

ALTER SCHEMA durable_jobs OWNER TO postgres;

--
-- Name: SCHEMA durable_jobs; Type: COMMENT; Schema: -; Owner: postgres
--

COMMENT ON SCHEMA durable_jobs IS 'leasefence: database-authoritative, fenced durable-job leases. Tables are private; the functions documented in docs/sql-api.md are the interface.';

--
-- Name: job_status_kind; Type: TYPE; Schema: durable_jobs; Owner: postgres
--

CREATE TYPE durable_jobs.job_status_kind AS ENUM (
    'QUEUED',
    'RUNNING',
    'RETRY_SCHEDULED',
    'SUCCEEDED',
    'FAILED',
    'CANCELLED'
);

ALTER TYPE durable_jobs.job_status_kind OWNER TO postgres;

--
-- Name: absolute_duration(interval); Type: FUNCTION; Schema: durable_jobs; Owner: postgres
--

CREATE FUNCTION durable_jobs.absolute_duration(p_value interval) RETURNS interval
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'pg_temp'
    RETURN CASE WHEN ((EXTRACT(year FROM p_value) <> (0)::numeric) OR (EXTRACT(month FROM p_value) <> (0)::numeric)) THEN NULL::interval WHEN ((EXTRACT(day FROM p_value) * (EXTRACT(epoch FROM p_value) - (EXTRACT(day FROM p_value) * (86400)::numeric))) < (0)::numeric) THEN NULL::interval ELSE make_interval(secs => (EXTRACT(epoch FROM p_value))::double precision) END;

ALTER FUNCTION durable_jobs.absolute_duration(p_value interval) OWNER TO postgres;

--
-- Name: approve_change(bigint); Type: FUNCTION; Schema: durable_jobs; Owner: durable_job_policy_owner
--

CREATE FUNCTION durable_jobs.approve_change(p_change_id bigint) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET lock_timeout TO '10s'
    AS $$
DECLARE
    v_change durable_jobs.pending_change := durable_jobs.decide_change(p_change_id, 'approved', NULL);
    v_values jsonb := v_change.proposed_values;
BEGIN
    PERFORM pg_catalog.set_config('leasefence.change_proposal', v_change.change_id::text, true);
    IF v_change.change_kind = 'lease_policy' THEN
        PERFORM durable_jobs.update_queue_lease_policy(v_change.queue_name, (v_values ->> 'lease_duration')::interval,
            (v_values ->> 'renewal_interval')::interval, (v_values ->> 'max_claim_lifetime')::interval,
            (v_values ->> 'renewal_enabled')::boolean, v_change.change_reason, v_change.change_ticket, SESSION_USER);
    ELSIF v_change.change_kind = 'retention_policy' THEN
        PERFORM durable_jobs.set_queue_retention_policy(v_change.queue_name, (v_values ->> 'payload_retention')::interval,
            (v_values ->> 'record_retention')::interval, v_change.change_reason, v_change.change_ticket, SESSION_USER);
    ELSE
        PERFORM durable_jobs.require_valid_change_control(v_values ->> 'ticket_pattern',
            (v_values ->> 'require_approver')::boolean, (v_values ->> 'approver_must_differ')::boolean,
            v_values ->> 'reason_pattern', (v_values ->> 'require_second_operator')::boolean,
            (v_values ->> 'proposal_lifetime')::interval);
        PERFORM durable_jobs.set_change_record(v_change.change_reason, v_change.change_ticket, SESSION_USER);
        UPDATE durable_jobs.change_control_setting
        SET ticket_pattern = v_values ->> 'ticket_pattern', require_approver = (v_values ->> 'require_approver')::boolean,
            approver_must_differ = (v_values ->> 'approver_must_differ')::boolean,
            reason_pattern = NULLIF(v_values ->> 'reason_pattern', ''),
            require_second_operator = (v_values ->> 'require_second_operator')::boolean,
            proposal_lifetime = durable_jobs.absolute_duration((v_values ->> 'proposal_lifetime')::interval);
        PERFORM durable_jobs.set_change_record('', '', '');
    END IF;
    -- The approval vouches for this change only: a setting forged after
    -- this call names no proposal being applied.
    UPDATE durable_jobs.pending_change c SET decided_in_transaction = NULL WHERE c.change_id = v_change.change_id;
    PERFORM pg_catalog.set_config('leasefence.change_proposal', '', true);
END;
$$;

ALTER FUNCTION durable_jobs.approve_change(p_change_id bigint) OWNER TO durable_job_policy_owner;

--
-- Name: approved_proposer(); Type: FUNCTION; Schema: durable_jobs; Owner: durable_job_policy_owner
--

CREATE FUNCTION durable_jobs.approved_proposer() RETURNS text
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $_$
DECLARE
    v_change text := pg_catalog.current_setting('leasefence.change_proposal', true);
    v_proposer text;
BEGIN
    IF v_change IS NULL OR v_change !~ '^[0-9]{1,18}$' THEN
        RETURN NULL;
    END IF;
    SELECT c.proposed_by_role INTO v_proposer
    FROM durable_jobs.pending_change c
    WHERE c.change_id = v_change::bigint AND c.change_decision = 'approved'
      AND c.decided_by_role = SESSION_USER AND c.decided_in_transaction = pg_catalog.pg_current_xact_id();
    RETURN v_proposer;
END;
$_$;

ALTER FUNCTION durable_jobs.approved_proposer() OWNER TO durable_job_policy_owner;

SET default_table_access_method = heap;

--
-- Name: control_evidence_record; Type: TABLE; Schema: durable_jobs; Owner: durable_job_evidence_owner
--

CREATE TABLE durable_jobs.control_evidence_record (
    evidence_record_id bigint NOT NULL,
    evidence_kind text NOT NULL,
    queue_name text,
    previous_values jsonb,
    new_values jsonb NOT NULL,
    change_reason text NOT NULL,
    changed_by_role text DEFAULT SESSION_USER NOT NULL,
    recorded_at timestamp with time zone DEFAULT clock_timestamp() NOT NULL,
    change_ticket text,
    change_approver text,
    previous_record_hash bytea NOT NULL,
    record_hash bytea NOT NULL,
    CONSTRAINT control_evidence_record_kind CHECK ((evidence_kind = ANY (ARRAY['migration_applied'::text, 'migration_reverted'::text, 'lease_policy_changed'::text, 'renewal_enablement_changed'::text, 'deployment_recorded'::text, 'retention_policy_changed'::text, 'job_data_purged'::text, 'job_payload_erased'::text, 'change_control_changed'::text, 'evidence_chain_continued'::text, 'job_cancelled'::text, 'job_replayed'::text, 'change_proposed'::text, 'change_approved'::text, 'change_rejected'::text, 'server_timeline_changed'::text, 'server_restarted'::text]))),
    CONSTRAINT control_evidence_record_ticket_format CHECK (((length(change_ticket) >= 1) AND (length(change_ticket) <= 100)))
);

ALTER TABLE durable_jobs.control_evidence_record OWNER TO durable_job_evidence_owner;

--
-- Name: TABLE control_evidence_record; Type: COMMENT; Schema: durable_jobs; Owner: durable_job_evidence_owner
--

COMMENT ON TABLE durable_jobs.control_evidence_record IS 'Append-only control evidence: migrations, lease policy and enablement changes, deployments. A trigger refuses UPDATE, DELETE and TRUNCATE.';

--
-- Name: COLUMN control_evidence_record.change_ticket; Type: COMMENT; Schema: durable_jobs; Owner: durable_job_evidence_owner
--

COMMENT ON COLUMN durable_jobs.control_evidence_record.change_ticket IS 'Change ticket (^[A-Z][A-Z0-9]+-[0-9]+$), NULL when none was given.';

--
-- Name: COLUMN control_evidence_record.change_approver; Type: COMMENT; Schema: durable_jobs; Owner: durable_job_evidence_owner
--

COMMENT ON COLUMN durable_jobs.control_evidence_record.change_approver IS 'Login role that approved the change (never the changer), NULL when none was given.';

--
-- Name: COLUMN control_evidence_record.previous_record_hash; Type: COMMENT; Schema: durable_jobs; Owner: durable_job_evidence_owner
--

COMMENT ON COLUMN durable_jobs.control_evidence_record.previous_record_hash IS 'record_hash of the record before this one in id order; 32 zero bytes for the first.';

--
-- Name: COLUMN control_evidence_record.record_hash; Type: COMMENT; Schema: durable_jobs; Owner: durable_job_evidence_owner
--

COMMENT ON COLUMN durable_jobs.control_evidence_record.record_hash IS 'sha256(previous_record_hash || evidence_content_digest(this record)): the hash chain.';

--
-- Name: bundle_migration_version(); Type: FUNCTION; Schema: durable_jobs; Owner: durable_job_audit_owner
--

CREATE FUNCTION durable_jobs.bundle_migration_version() RETURNS TABLE(migration_version integer, applied_at timestamp with time zone)
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    BEGIN ATOMIC
 SELECT
         CASE
             WHEN (e.evidence_kind = 'migration_applied'::text) THEN ((e.new_values ->> 'migration_version'::text))::integer
             ELSE (((e.new_values ->> 'migration_version'::text))::integer - 1)
         END AS "case",
     e.recorded_at
    FROM durable_jobs.control_evidence_record e
   WHERE (e.evidence_kind = ANY (ARRAY['migration_applied'::text, 'migration_reverted'::text]))
   ORDER BY e.evidence_record_id DESC
  LIMIT 1;
END;

ALTER FUNCTION durable_jobs.bundle_migration_version() OWNER TO durable_job_audit_owner;

--
-- Name: cancel_job_recorded(bigint, text, text, text); Type: FUNCTION; Schema: durable_jobs; Owner: durable_job_producer_owner
--

CREATE FUNCTION durable_jobs.cancel_job_recorded(p_job_record_id bigint, p_change_reason text, p_change_ticket text, p_change_approver text) RETURNS boolean
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    v_queue text;
    v_previous text;
BEGIN
    IF p_job_record_id IS NULL THEN
        RAISE EXCEPTION 'job id is required' USING ERRCODE = 'LF003';
    END IF;
    SELECT j.queue_name, j.job_status::text INTO v_queue, v_previous
    FROM durable_jobs.job_record j
    WHERE j.job_record_id = p_job_record_id AND j.job_status IN ('QUEUED', 'RETRY_SCHEDULED', 'RUNNING')
    FOR NO KEY UPDATE;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    UPDATE durable_jobs.job_record j
    SET job_status = 'CANCELLED', status_changed_at = pg_catalog.clock_timestamp(), lease_expires_at = NULL
    WHERE j.job_record_id = p_job_record_id;
    PERFORM durable_jobs.record_job_action(p_job_record_id, v_queue, 'cancelled', v_previous, 'CANCELLED',
        p_change_reason, p_change_ticket, p_change_approver);
    RETURN true;
END;
$$;

ALTER FUNCTION durable_jobs.cancel_job_recorded(p_job_record_id bigint, p_change_reason text, p_change_ticket text, p_change_approver text) OWNER TO durable_job_producer_owner;

--
-- Name: cancel_job(bigint); Type: FUNCTION; Schema: durable_jobs; Owner: durable_job_producer_owner
--

CREATE FUNCTION durable_jobs.cancel_job(p_job_record_id bigint) RETURNS boolean
    LANGUAGE sql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    BEGIN ATOMIC
 SELECT durable_jobs.cancel_job_recorded(p_job_record_id, NULL::text, NULL::text, NULL::text) AS cancel_job_recorded;
END;

ALTER FUNCTION durable_jobs.cancel_job(p_job_record_id bigint) OWNER TO durable_job_producer_owner;

--
-- Name: cancel_job(bigint, text, text, text); Type: FUNCTION; Schema: durable_jobs; Owner: durable_job_producer_owner
--

CREATE FUNCTION durable_jobs.cancel_job(p_job_record_id bigint, p_change_reason text, p_change_ticket text DEFAULT NULL::text, p_change_approver text DEFAULT NULL::text) RETURNS boolean
    LANGUAGE sql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET lock_timeout TO '10s'
    BEGIN ATOMIC
 SELECT durable_jobs.cancel_job_recorded(p_job_record_id, COALESCE(p_change_reason, ''::text), p_change_ticket, p_change_approver) AS cancel_job_recorded;
END;

ALTER FUNCTION durable_jobs.cancel_job(p_job_record_id bigint, p_change_reason text, p_change_ticket text, p_change_approver text) OWNER TO durable_job_producer_owner;

--
-- Name: chain_evidence_record(); Type: FUNCTION; Schema: durable_jobs; Owner: postgres
--

CREATE FUNCTION durable_jobs.chain_evidence_record() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    v_last_id bigint;
    v_last_hash bytea;
    v_setting durable_jobs.change_control_setting;
BEGIN
    IF pg_catalog.current_setting('transaction_isolation') <> 'read committed' THEN
        RAISE EXCEPTION 'control evidence must be written in a READ COMMITTED transaction' USING ERRCODE = 'LF003',
            HINT = 'An older snapshot could miss the record committed last, which the new record chains to.';
    END IF;
    PERFORM durable_jobs.lock_evidence_order();
    SELECT e.evidence_record_id, e.record_hash INTO v_last_id, v_last_hash
    FROM durable_jobs.control_evidence_record e
    ORDER BY e.evidence_record_id DESC
    LIMIT 1;
    IF v_last_id >= NEW.evidence_record_id THEN
        RAISE EXCEPTION 'control evidence record written out of order' USING ERRCODE = 'LF003',
            HINT = 'Take durable_jobs.lock_evidence_order() before inserting, so ids follow commit order.';
    END IF;
    IF NEW.evidence_kind IN ('migration_applied', 'migration_reverted') AND NEW.change_ticket IS NULL
       AND NEW.change_approver IS NULL THEN
        -- A migration's own record (its frozen SQL names neither): the ticket
        -- and approver leasectl migrate --ticket/--approver set, checked
        -- against the change control in force (maker-checker aside: a
        -- migration is applied by the installer, not proposed).
        NEW.change_ticket := NULLIF(pg_catalog.current_setting('leasefence.migration_ticket', true), '');
        NEW.change_approver := NULLIF(pg_catalog.current_setting('leasefence.migration_approver', true), '');
        SELECT s.* INTO STRICT v_setting FROM durable_jobs.change_control_setting s;
        v_setting.require_second_operator := false;
        PERFORM durable_jobs.check_change_record(v_setting, NEW.change_reason, NEW.change_ticket, NEW.change_approver);
    END IF;
    NEW.previous_record_hash := COALESCE(v_last_hash, pg_catalog.decode(pg_catalog.repeat('00', 32), 'hex'));
    NEW.record_hash := pg_catalog.sha256(NEW.previous_record_hash || durable_jobs.evidence_content_digest(
        NEW.evidence_record_id, NEW.evidence_kind, NEW.queue_name, NEW.previous_values, NEW.new_values,
        NEW.change_reason, NEW.changed_by_role, NEW.recorded_at, NEW.change_ticket, NEW.change_approver));
    RETURN NEW;
END;
$$;

ALTER FUNCTION durable_jobs.chain_evidence_record() OWNER TO postgres;

--
-- Name: change_control_setting; Type: TABLE; Schema: durable_jobs; Owner: postgres
--

CREATE TABLE durable_jobs.change_control_setting (
    change_control_row boolean DEFAULT true NOT NULL,
    ticket_pattern text NOT NULL,
    require_approver boolean NOT NULL,
    approver_must_differ boolean NOT NULL,
    changed_at timestamp with time zone NOT NULL,
    changed_by_role text NOT NULL,
    reason_pattern text,
    require_second_operator boolean DEFAULT false NOT NULL,
    proposal_lifetime interval DEFAULT '24:00:00'::interval NOT NULL,
    CONSTRAINT change_control_setting_pattern CHECK (((length(ticket_pattern) >= 1) AND (length(ticket_pattern) <= 200))),
    CONSTRAINT change_control_setting_proposal_lifetime CHECK (((proposal_lifetime >= '00:01:00'::interval) AND (proposal_lifetime <= '30 days'::interval))),
    CONSTRAINT change_control_setting_reason_pattern CHECK (((reason_pattern IS NULL) OR ((length(reason_pattern) >= 1) AND (length(reason_pattern) <= 200)))),
    CONSTRAINT change_control_setting_single CHECK (change_control_row)
);

ALTER TABLE durable_jobs.change_control_setting OWNER TO postgres;

--
-- Name: TABLE change_control_setting; Type: COMMENT; Schema: durable_jobs; Owner: postgres
--

COMMENT ON TABLE durable_jobs.change_control_setting IS 'The change-control setting every change record is checked against (require_structured_change); one row, changed only through set_change_control.';

--
-- Name: change_control(); Type: FUNCTION; Schema: durable_jobs; Owner: durable_job_policy_owner
--

CREATE FUNCTION durable_jobs.change_control() RETURNS TABLE(ticket_pattern text, require_approver boolean, approver_must_differ boolean, changed_at timestamp with time zone, changed_by_role text, reason_pattern text, require_second_operator boolean, proposal_lifetime interval)
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    BEGIN ATOMIC
 SELECT s.ticket_pattern,
     s.require_approver,
     s.approver_must_differ,
     s.changed_at,
     s.changed_by_role,
     s.reason_pattern,
     s.require_second_operator,
     s.proposal_lifetime
    FROM durable_jobs.change_control_setting s;
END;

ALTER FUNCTION durable_jobs.change_control() OWNER TO durable_job_policy_owner;

--
-- Name: change_queue_lease_policy(text, interval, interval, interval, boolean, text, text, text); Type: FUNCTION; Schema: durable_jobs; Owner: durable_job_policy_owner
--

CREATE FUNCTION durable_jobs.change_queue_lease_policy(p_queue_name text, p_lease_duration interval, p_renewal_interval interval, p_max_claim_lifetime interval, p_renewal_enabled boolean, p_change_reason text, p_change_ticket text, p_change_approver text) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET "TimeZone" TO 'UTC'
    SET lock_timeout TO '10s'
    AS $$
DECLARE
    v_lease_duration interval := durable_jobs.absolute_duration(p_lease_duration);
    v_renewal_interval interval := durable_jobs.absolute_duration(p_renewal_interval);
    v_max_claim_lifetime interval := durable_jobs.absolute_duration(p_max_claim_lifetime);
    v_ticket text := COALESCE(p_change_ticket, pg_catalog.substring(p_change_reason, '^([A-Z][A-Z0-9]+-[0-9]+):'));
BEGIN
    IF pg_catalog.current_setting('transaction_isolation') <> 'read committed' THEN
        RAISE EXCEPTION 'set_queue_lease_policy must run in a READ COMMITTED transaction' USING
            ERRCODE = 'LF003',
            HINT = 'A REPEATABLE READ or SERIALIZABLE snapshot may predate a concurrent change; use READ COMMITTED.';
    END IF;
    IF p_queue_name IS DISTINCT FROM '*' THEN
        PERFORM durable_jobs.require_well_formed('queue_name', p_queue_name, 'LF002');
    END IF;
    IF p_lease_duration IS NULL OR p_renewal_interval IS NULL OR p_max_claim_lifetime IS NULL
       OR p_renewal_enabled IS NULL OR p_change_reason IS NULL
       OR p_lease_duration NOT BETWEEN interval '1 second' AND interval '24 hours'
       OR p_renewal_interval < interval '100 milliseconds' OR p_renewal_interval > p_lease_duration / 3
       OR p_max_claim_lifetime < p_lease_duration OR p_max_claim_lifetime > interval '168 hours'
       OR p_change_reason !~ '[^[:space:]]' OR pg_catalog.length(p_change_reason) > 500 THEN
        RAISE EXCEPTION 'invalid lease policy' USING
            ERRCODE = 'LF002',
            DETAIL = 'Need 1 second <= lease_duration <= 24 hours, 100 milliseconds <= renewal_interval <= lease_duration / 3, '
                  || 'lease_duration <= max_claim_lifetime <= 7 days, renewal_enabled set, and a change reason of 1 to 500 characters.';
    END IF;
    IF v_lease_duration IS NULL OR v_renewal_interval IS NULL OR v_max_claim_lifetime IS NULL
       OR NOT durable_jobs.is_plain_change_reason(p_change_reason) THEN
        RAISE EXCEPTION 'invalid lease policy' USING
            ERRCODE = 'LF002',
            DETAIL = 'Need plain durations (no month or year part, day and time parts of one sign) and a change reason '
                  || 'without control or bidirectional-control characters.';
    END IF;
    PERFORM durable_jobs.require_structured_change(p_change_reason, v_ticket, p_change_approver);

    -- Taken again (a no-op) after require_structured_change took it, so the
    -- order does not depend on that helper; it also bounds how long the
    -- caller's transaction may now sit idle holding it.
    PERFORM durable_jobs.lock_evidence_order();

    -- What the trigger record_policy_change records with the change.
    PERFORM pg_catalog.set_config('leasefence.change_reason', p_change_reason, true);
    PERFORM pg_catalog.set_config('leasefence.change_ticket', COALESCE(v_ticket, ''), true);
    PERFORM pg_catalog.set_config('leasefence.change_approver', COALESCE(p_change_approver, ''), true);
    INSERT INTO durable_jobs.queue_lease_policy AS p
        (queue_name, lease_duration, renewal_interval, max_claim_lifetime, renewal_enabled, changed_at, changed_by_role)
    VALUES (p_queue_name, v_lease_duration, v_renewal_interval, v_max_claim_lifetime, p_renewal_enabled,
            pg_catalog.clock_timestamp(), SESSION_USER)
    ON CONFLICT (queue_name) DO UPDATE
    SET lease_duration = EXCLUDED.lease_duration, renewal_interval = EXCLUDED.renewal_interval,
        max_claim_lifetime = EXCLUDED.max_claim_lifetime, renewal_enabled = EXCLUDED.renewal_enabled,
        changed_at = EXCLUDED.changed_at, changed_by_role = EXCLUDED.changed_by_role;
    PERFORM pg_catalog.set_config('leasefence.change_reason', '', true);
    PERFORM pg_catalog.set_config('leasefence.change_ticket', '', true);
    PERFORM pg_catalog.set_config('leasefence.change_approver', '', true);
END;
$$;

ALTER FUNCTION durable_jobs.change_queue_lease_policy(p_queue_name text, p_lease_duration interval, p_renewal_interval interval, p_max_claim_lifetime interval, p_renewal_enabled boolean, p_change_reason text, p_change_ticket text, p_change_approver text) OWNER TO durable_job_policy_owner;

--
-- Name: check_change_record(durable_jobs.change_control_setting, text, text, text); Type: FUNCTION; Schema: durable_jobs; Owner: postgres
--

CREATE FUNCTION durable_jobs.check_change_record(p_setting durable_jobs.change_control_setting, p_change_reason text, p_change_ticket text, p_change_approver text) RETURNS void
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    v_proposer text;
BEGIN
    IF p_change_reason IS NULL OR NOT durable_jobs.is_plain_change_reason(p_change_reason) THEN
        RAISE EXCEPTION 'invalid change record' USING ERRCODE = 'LF002',
            DETAIL = 'The change reason must be 1 to 500 characters, not blank, without control or bidirectional-control characters.';
    END IF;
    IF p_setting.reason_pattern IS NOT NULL AND p_change_reason !~ p_setting.reason_pattern THEN
        RAISE EXCEPTION 'invalid change record' USING ERRCODE = 'LF002',
            DETAIL = 'The change reason must match the change-control reason pattern (durable_jobs.change_control()).';
    END IF;
    IF durable_jobs.looks_personal_or_secret(p_change_reason) THEN
        RAISE EXCEPTION 'invalid change record' USING ERRCODE = 'LF002',
            DETAIL = 'The change reason looks like it holds personal data or a secret (a resident registration, card or phone number, an e-mail address or a credential); evidence is append-only and kept, so give a ticket reference instead.';
    END IF;
    IF p_change_ticket IS NOT NULL AND (pg_catalog.length(p_change_ticket) > 100
       OR NOT durable_jobs.is_plain_change_reason(p_change_ticket) OR p_change_ticket !~ p_setting.ticket_pattern) THEN
        RAISE EXCEPTION 'invalid change record' USING ERRCODE = 'LF002',
            DETAIL = 'The change ticket must be plain text of at most 100 characters matching the change-control ticket pattern (durable_jobs.change_control()).';
    END IF;
    IF p_change_approver IS NULL AND p_setting.require_approver THEN
        RAISE EXCEPTION 'invalid change record' USING ERRCODE = 'LF002',
            DETAIL = 'Change control requires an approver for every change.';
    END IF;
    IF p_change_approver IS NOT NULL AND NOT EXISTS (
           SELECT 1 FROM pg_catalog.pg_roles r
           WHERE r.rolname = p_change_approver AND r.rolcanlogin
             AND pg_catalog.pg_has_role(r.oid, 'durable_job_operator', 'MEMBER')) THEN
        RAISE EXCEPTION 'invalid change record' USING ERRCODE = 'LF002',
            DETAIL = 'The approver must be an existing login role that holds durable_job_operator.';
    END IF;
    v_proposer := durable_jobs.approved_proposer();
    IF p_setting.require_second_operator AND v_proposer IS NULL THEN
        RAISE EXCEPTION 'invalid change record' USING ERRCODE = 'LF002',
            DETAIL = 'Change control requires every change to be proposed by one operator login and approved by another (propose_change, approve_change).';
    END IF;
    IF p_change_approver = COALESCE(v_proposer, SESSION_USER) AND p_setting.approver_must_differ THEN
        RAISE EXCEPTION 'invalid change record' USING ERRCODE = 'LF002',
            DETAIL = 'Change control requires the approver to be another login than the one making the change.';
    END IF;
END;
$$;

ALTER FUNCTION durable_jobs.check_change_record(p_setting durable_jobs.change_control_setting, p_change_reason text, p_change_ticket text, p_change_approver text) OWNER TO postgres;

--
-- Name: claim_next_job(text, text); Type: FUNCTION; Schema: durable_jobs; Owner: durable_job_claim_owner
--

CREATE FUNCTION durable_jobs.claim_next_job(p_queue_name text, p_worker_owner_id text) RETURNS TABLE(job_record_id bigint, lease_claim_token uuid, lease_fencing_generation bigint, lease_expires_at timestamp with time zone, lease_renewal_interval interval, attempt_number integer, job_payload jsonb, database_time timestamp with time zone)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    RETURN QUERY
    SELECT c.job_record_id, c.lease_claim_token, c.lease_fencing_generation, c.lease_expires_at,
           c.lease_renewal_interval, c.attempt_number, c.job_payload, c.database_time
    FROM durable_jobs.claim_next_jobs(p_queue_name, p_worker_owner_id, 1) c;
END;
$$;

ALTER FUNCTION durable_jobs.claim_next_job(p_queue_name text, p_worker_owner_id text) OWNER TO durable_job_claim_owner;

--
-- Name: claim_next_jobs(text, text, integer); Type: FUNCTION; Schema: durable_jobs; Owner: durable_job_claim_owner
--

CREATE FUNCTION durable_jobs.claim_next_jobs(p_queue_name text, p_worker_owner_id text, p_max_jobs integer) RETURNS TABLE(job_record_id bigint, lease_claim_token uuid, lease_fencing_generation bigint, lease_expires_at timestamp with time zone, lease_renewal_interval interval, attempt_number integer, job_payload jsonb, database_time timestamp with time zone)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET plan_cache_mode TO 'force_generic_plan'
    AS $$
#variable_conflict use_column
DECLARE
    v_lease_duration interval;
    v_renewal_interval interval;
    v_max_claim_lifetime interval;
    v_wanted integer;
    v_candidate_ids bigint[];
    v_candidate_kinds "char"[];
    v_exhausted integer;
    v_fetched integer;
    v_returned integer;
    v_claimed integer := 0;
    v_reclaims integer;
    v_failover_reclaims integer;
    v_now timestamptz;
    v_floor bigint;
    v_synchronous_commit text;
BEGIN
    -- The contract's patterns (the rule functions, inlined: no call), checked
    -- here first, byte for byte and only for a value without a collation of
    -- the caller's: a well-formed value (every call but a bad one) then
    -- costs no call of the helper, whose SET search_path makes each call
    -- cost as much as a small query. Anything else goes to
    -- require_well_formed, which raises LF003 as everywhere (a caller's
    -- collation included).
    IF p_queue_name IS NULL OR pg_catalog.pg_collation_for(p_queue_name) NOT IN ('"default"', '"C"', '"POSIX"')
       OR NOT durable_jobs.queue_name_is_well_formed(p_queue_name) THEN
        PERFORM durable_jobs.require_well_formed('queue_name', p_queue_name);
    END IF;
    IF p_worker_owner_id IS NULL OR pg_catalog.pg_collation_for(p_worker_owner_id) NOT IN ('"default"', '"C"', '"POSIX"')
       OR NOT durable_jobs.worker_owner_id_is_well_formed(p_worker_owner_id) THEN
        PERFORM durable_jobs.require_well_formed('worker_owner_id', p_worker_owner_id);
    END IF;
    IF p_max_jobs IS NULL OR p_max_jobs NOT BETWEEN 1 AND 1000 THEN
        RAISE EXCEPTION 'max jobs must be 1 to 1000' USING ERRCODE = 'LF003';
    END IF;
    -- A REPEATABLE READ or SERIALIZABLE snapshot may predate a policy change
    -- (a shorter lease or claim lifetime); READ COMMITTED reads the policy
    -- as of this statement.
    IF pg_catalog.current_setting('transaction_isolation') <> 'read committed' THEN
        RAISE EXCEPTION 'claiming must run in a READ COMMITTED transaction, not %',
                pg_catalog.upper(pg_catalog.current_setting('transaction_isolation'))
            USING ERRCODE = 'LF003',
                  HINT = 'Claim in a transaction at the default isolation level.';
    END IF;

    -- Durations as absolute seconds: timestamptz + '1 day' follows the
    -- caller's TimeZone across a daylight-saving change.
    SELECT pg_catalog.make_interval(secs => pg_catalog.date_part('epoch', p.lease_duration)),
           p.renewal_interval,
           pg_catalog.make_interval(secs => pg_catalog.date_part('epoch', p.max_claim_lifetime))
    INTO STRICT v_lease_duration, v_renewal_interval, v_max_claim_lifetime
    FROM durable_jobs.effective_lease_policy_queue(p_queue_name) e
    JOIN durable_jobs.queue_lease_policy p ON p.queue_name = e.policy_queue_name;

    LOOP
        -- One pass, one statement: lock up to v_wanted candidates, expired
        -- claims first (bounded scan of job_record_reclaim_order,
        -- lease_expires_at rechecked), then due jobs
        -- (job_record_claimable_queue_order). The outer LIMIT stops the
        -- UNION ALL as soon as it has v_wanted rows, so the due branch is
        -- read, and its rows locked, only for the places the expired
        -- branch left: the rows locked are exactly those returned.
        v_now := pg_catalog.clock_timestamp();
        v_wanted := p_max_jobs - v_claimed;
        -- Each candidate comes with its kind, one "char" (since migration
        -- 032, which folded 029's two flags and the count of expired
        -- candidates into it: fewer aggregates to start up on every call):
        -- 'r' an expired claim reclaimed, 'f' an expired claim lost with
        -- the database, reclaimed without costing an attempt, 'd' a due
        -- job, 'x' a job whose attempts are used up (either branch).
        SELECT COALESCE(pg_catalog.array_agg(c.candidate_id ORDER BY c.candidate_branch, c.candidate_order, c.candidate_id), '{}'),
               COALESCE(pg_catalog.array_agg(c.candidate_kind ORDER BY c.candidate_branch, c.candidate_order, c.candidate_id), '{}')
        INTO v_candidate_ids, v_candidate_kinds
        FROM (SELECT x.candidate_branch, x.candidate_order, x.candidate_id, x.candidate_kind
              FROM (SELECT 1 AS candidate_branch, j.lease_expiry_floor AS candidate_order, j.job_record_id AS candidate_id,
                           -- Lost with the database (since migration 029):
                           -- the server started after the claim (a crash or
                           -- restart in place), or the claim's generation is
                           -- of an earlier WAL timeline (a promotion since);
                           -- at most three times a job, so a job that brings
                           -- the server down does not loop for ever. Such a
                           -- claim is never exhausted: it costs no attempt.
                           -- Evaluated only for the expired leases this scan
                           -- returns (on a standby the FOR UPDATE fails
                           -- before any row).
                           CASE WHEN j.failover_reclaims < 3
                                     AND (j.lease_claimed_at < pg_catalog.pg_postmaster_start_time()
                                          OR (j.lease_fencing_generation >> 40) + 1
                                             < ('x' || pg_catalog.substr(pg_catalog.pg_walfile_name(pg_catalog.pg_current_wal_lsn()), 1, 8))::bit(32)::bigint)
                                THEN 'f'::"char"
                                WHEN j.attempt_number >= j.max_attempts THEN 'x'::"char"
                                ELSE 'r'::"char" END AS candidate_kind
                    FROM durable_jobs.job_record j
                    WHERE j.queue_name = p_queue_name AND j.job_status = 'RUNNING'
                      AND j.lease_expiry_floor <= v_now AND j.lease_expires_at <= v_now
                    ORDER BY j.lease_expiry_floor, j.job_record_id
                    LIMIT v_wanted
                    FOR UPDATE OF j SKIP LOCKED) x
              UNION ALL
              SELECT d.candidate_branch, d.candidate_order, d.candidate_id, d.candidate_kind
              FROM (SELECT 2 AS candidate_branch, j.run_after AS candidate_order, j.job_record_id AS candidate_id,
                           CASE WHEN j.attempt_number >= j.max_attempts THEN 'x'::"char" ELSE 'd'::"char" END AS candidate_kind
                    FROM durable_jobs.job_record j
                    WHERE j.queue_name = p_queue_name AND j.job_status IN ('QUEUED', 'RETRY_SCHEDULED')
                      AND j.run_after <= v_now
                    ORDER BY j.run_after, j.job_record_id
                    LIMIT v_wanted
                    FOR UPDATE OF j SKIP LOCKED) d
              LIMIT v_wanted) c;
        v_fetched := pg_catalog.cardinality(v_candidate_ids);
        v_exhausted := pg_catalog.cardinality(pg_catalog.array_positions(v_candidate_kinds, 'x'::"char"));

        -- Attempts used up: FAILED instead of claimed; they do not count.
        IF v_exhausted > 0 THEN
            UPDATE durable_jobs.job_record j
            SET job_status = 'FAILED', status_changed_at = v_now, lease_expires_at = NULL,
                failure_reason_code = 'attempts_exhausted'
            FROM ROWS FROM (pg_catalog.unnest(v_candidate_ids), pg_catalog.unnest(v_candidate_kinds))
                 AS c(candidate_id, candidate_kind)
            WHERE j.job_record_id = c.candidate_id AND c.candidate_kind = 'x'::"char";
        END IF;

        -- The rest are claimed in one UPDATE, each with its own token, and
        -- returned with their payloads in candidate order; no statement
        -- when every candidate was exhausted or there was none.
        IF v_fetched > v_exhausted THEN
            -- The generation floor, read once per call (COALESCE evaluates
            -- the timeline only when v_floor is still NULL) and only here:
            -- a call on a standby fails at its probe's FOR UPDATE as before,
            -- not at pg_walfile_name.
            v_floor := COALESCE(v_floor, ((('x' || pg_catalog.substr(pg_catalog.pg_walfile_name(pg_catalog.pg_current_wal_lsn()), 1, 8))::bit(32)::bigint - 1) << 40) + 1);
            RETURN QUERY
            WITH candidate AS (
                SELECT c.candidate_id, c.candidate_position, c.candidate_kind,
                       pg_catalog.gen_random_uuid() AS candidate_token
                FROM ROWS FROM (pg_catalog.unnest(v_candidate_ids), pg_catalog.unnest(v_candidate_kinds))
                     WITH ORDINALITY AS c(candidate_id, candidate_kind, candidate_position)
                WHERE c.candidate_kind <> 'x'::"char"
            ), claimed AS (
                UPDATE durable_jobs.job_record j
                SET job_status = 'RUNNING', status_changed_at = v_now,
                    -- A claim lost with the database costs the job no attempt.
                    attempt_number = j.attempt_number + CASE WHEN c.candidate_kind = 'f'::"char" THEN 0 ELSE 1 END,
                    failover_reclaims = j.failover_reclaims + CASE WHEN c.candidate_kind = 'f'::"char" THEN 1 ELSE 0 END,
                    -- claim_token_digest's body, written out: a SET search_path helper
                    -- is never inlined and costs a function call per row.
                    lease_claim_digest = pg_catalog.sha256(pg_catalog.uuid_send(c.candidate_token)),
                    lease_owner_id = p_worker_owner_id,
                    lease_claimed_by_role = SESSION_USER,
                    lease_claimed_at = v_now,
                    lease_expires_at = v_now + v_lease_duration,
                    lease_expiry_floor = v_now + v_lease_duration,
                    lease_claim_deadline = v_now + v_max_claim_lifetime,
                    lease_fencing_generation = GREATEST(j.lease_fencing_generation + 1, v_floor),
                    lease_renewal_count = 0,
                    failure_reason_code = NULL
                FROM candidate c
                WHERE j.job_record_id = c.candidate_id
                RETURNING j.job_record_id AS claimed_id, c.candidate_token AS claimed_token,
                          c.candidate_position AS claimed_position,
                          j.lease_fencing_generation AS claimed_generation, j.lease_expires_at AS claimed_expiry,
                          j.attempt_number AS claimed_attempt
            )
            SELECT k.claimed_id, k.claimed_token, k.claimed_generation, k.claimed_expiry, v_renewal_interval,
                   k.claimed_attempt, pr.job_payload, v_now
            FROM claimed k
            LEFT JOIN durable_jobs.job_payload_record pr ON pr.job_record_id = k.claimed_id
            ORDER BY k.claimed_position;

            GET DIAGNOSTICS v_returned = ROW_COUNT;
            v_claimed := v_claimed + v_returned;
            -- This pass claimed (every candidate not exhausted is locked,
            -- so claimed): the transaction's COMMIT does not wait for a
            -- synchronous standby. Assignments, not PERFORM: simple
            -- expressions, no SPI statement.
            v_synchronous_commit := pg_catalog.current_setting('synchronous_commit');
            IF v_synchronous_commit NOT IN ('off', 'local') THEN
                v_synchronous_commit := pg_catalog.set_config('synchronous_commit', 'local', true);
            END IF;
        END IF;
        -- Reclaims are the claimed candidates of the expired branch, those
        -- lost with the database counted apart (assignments: simple
        -- expressions, no SPI statement).
        v_reclaims := pg_catalog.cardinality(pg_catalog.array_positions(v_candidate_kinds, 'r'::"char"));
        v_failover_reclaims := pg_catalog.cardinality(pg_catalog.array_positions(v_candidate_kinds, 'f'::"char"));
        IF v_reclaims > 0 THEN
            PERFORM durable_jobs.record_lease_outcome(p_queue_name, 'reclaim', v_reclaims);
        END IF;
        IF v_failover_reclaims > 0 THEN
            PERFORM durable_jobs.record_lease_outcome(p_queue_name, 'failover_reclaim', v_failover_reclaims);
        END IF;
        -- Another pass only when jobs moved to FAILED took places that due
        -- jobs behind them may fill.
        EXIT WHEN v_fetched < v_wanted OR v_claimed >= p_max_jobs;
    END LOOP;
END;
$$;

ALTER FUNCTION durable_jobs.claim_next_jobs(p_queue_name text, p_worker_owner_id text, p_max_jobs integer) OWNER TO durable_job_claim_owner;

--
-- Name: claim_token_digest(uuid); Type: FUNCTION; Schema: durable_jobs; Owner: postgres
--

CREATE FUNCTION durable_jobs.claim_token_digest(p_lease_claim_token uuid) RETURNS bytea
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'pg_temp'
    RETURN sha256(uuid_send(p_lease_claim_token));

ALTER FUNCTION durable_jobs.claim_token_digest(p_lease_claim_token uuid) OWNER TO postgres;

--
-- Name: complete_job(bigint, uuid, text, jsonb); Type: FUNCTION; Schema: durable_jobs; Owner: durable_job_terminal_owner
--

CREATE FUNCTION durable_jobs.complete_job(p_job_record_id bigint, p_lease_claim_token uuid, p_worker_owner_id text, p_result_document jsonb DEFAULT NULL::jsonb) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    v_claim record;
BEGIN
    IF pg_catalog.pg_column_size(p_result_document) > 1048576 THEN
        RAISE EXCEPTION 'result document must be at most 1 MiB' USING ERRCODE = 'LF003';
    END IF;
    SELECT * INTO v_claim FROM durable_jobs.lock_fenced_claim(p_job_record_id, p_lease_claim_token, p_worker_owner_id);
    IF NOT FOUND THEN
        PERFORM durable_jobs.raise_stale_claim();
    END IF;
    UPDATE durable_jobs.job_record j
    SET job_status = 'SUCCEEDED', status_changed_at = pg_catalog.clock_timestamp(), lease_expires_at = NULL
    WHERE j.job_record_id = p_job_record_id;
    INSERT INTO durable_jobs.job_outcome_ledger (job_record_id, lease_fencing_generation, outcome_status, result_document)
    VALUES (p_job_record_id, v_claim.fenced_generation, 'SUCCEEDED', p_result_document);
END;
$$;

ALTER FUNCTION durable_jobs.complete_job(p_job_record_id bigint, p_lease_claim_token uuid, p_worker_owner_id text, p_result_document jsonb) OWNER TO durable_job_terminal_owner;

--
-- Name: complete_jobs(text, bigint[], uuid[], jsonb[]); Type: FUNCTION; Schema: durable_jobs; Owner: durable_job_terminal_owner
--

CREATE FUNCTION durable_jobs.complete_jobs(p_worker_owner_id text, p_job_record_ids bigint[], p_lease_claim_tokens uuid[], p_result_documents jsonb[] DEFAULT NULL::jsonb[]) RETURNS TABLE(job_record_id bigint, job_status text, lease_fencing_generation bigint)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
#variable_conflict use_column
DECLARE
    v_claims integer;
    v_locked_ctids tid[];
BEGIN
    -- The contract's owner pattern (the rule function, inlined: no call),
    -- checked here first, byte for byte and
    -- only for a value without a collation of the caller's: a well-formed
    -- value (every call but a bad one) then costs no call of the helper,
    -- whose SET search_path makes each call cost as much as a small query.
    -- Anything else goes to require_well_formed, which raises LF003 as
    -- everywhere (a caller's collation included).
    IF p_worker_owner_id IS NULL OR pg_catalog.pg_collation_for(p_worker_owner_id) NOT IN ('"default"', '"C"', '"POSIX"')
       OR NOT durable_jobs.worker_owner_id_is_well_formed(p_worker_owner_id) THEN
        PERFORM durable_jobs.require_well_formed('worker_owner_id', p_worker_owner_id);
    END IF;
    IF p_job_record_ids IS NULL OR p_lease_claim_tokens IS NULL
       OR pg_catalog.array_ndims(p_job_record_ids) > 1 OR pg_catalog.array_ndims(p_lease_claim_tokens) > 1
       OR pg_catalog.array_ndims(p_result_documents) > 1
       OR pg_catalog.cardinality(p_job_record_ids) <> pg_catalog.cardinality(p_lease_claim_tokens)
       OR (p_result_documents IS NOT NULL
           AND pg_catalog.cardinality(p_result_documents) <> pg_catalog.cardinality(p_job_record_ids))
       OR pg_catalog.cardinality(p_job_record_ids) > 1000
       OR pg_catalog.array_position(p_job_record_ids, NULL) IS NOT NULL
       OR pg_catalog.array_position(p_lease_claim_tokens, NULL) IS NOT NULL
       OR (SELECT pg_catalog.count(DISTINCT i) FROM pg_catalog.unnest(p_job_record_ids) i)
          <> pg_catalog.cardinality(p_job_record_ids) THEN
        RAISE EXCEPTION 'claims must be flat arrays of equal length, at most 1000, no NULL id or token, no repeated job id'
            USING ERRCODE = 'LF003';
    END IF;
    -- complete_job's limit on each result document (pg_column_size of the jsonb).
    IF p_result_documents IS NOT NULL THEN
        IF EXISTS (SELECT FROM pg_catalog.unnest(p_result_documents) AS d(document)
                   WHERE pg_catalog.pg_column_size(d.document) > 1048576) THEN
            RAISE EXCEPTION 'each result document must be at most 1 MiB' USING ERRCODE = 'LF003';
        END IF;
    END IF;
    v_claims := pg_catalog.cardinality(p_job_record_ids);

    -- Lock exactly the fenced rows, in job id order, one primary-key probe
    -- per claim (the locking subquery is never flattened into a join, so no
    -- table statistics can turn it into a scan of every running job; the
    -- token digest is claim_token_digest's body written out).
    SELECT pg_catalog.array_agg(f.fenced_ctid) INTO v_locked_ctids
    FROM (SELECT i.input_job_id, i.input_token
          FROM ROWS FROM (pg_catalog.unnest(p_job_record_ids), pg_catalog.unnest(p_lease_claim_tokens))
               AS i(input_job_id, input_token)
          ORDER BY i.input_job_id) i
    CROSS JOIN LATERAL (
          SELECT j.ctid AS fenced_ctid
          FROM durable_jobs.job_record j
          WHERE j.job_record_id = i.input_job_id
            -- compared as text: no statistics can then make a partial index of RUNNING
            -- rows (empty to a planner whose ANALYZE ran before the claims) look
            -- cheaper than the primary key; the key finds the row, this checks it
            AND j.job_status::text = 'RUNNING'
            AND j.lease_claim_digest = pg_catalog.sha256(pg_catalog.uuid_send(i.input_token))
            AND j.lease_owner_id = p_worker_owner_id
            AND j.lease_claimed_by_role = SESSION_USER
            AND j.lease_expires_at > pg_catalog.clock_timestamp()
          FOR UPDATE OF j) f;
    IF COALESCE(pg_catalog.cardinality(v_locked_ctids), 0) < v_claims THEN
        PERFORM durable_jobs.raise_stale_claim();
    END IF;

    -- Every row is locked and fenced (a locked row keeps its tuple id and
    -- its claim): complete them all and record the results, in input order.
    -- The rows are found by their tuple ids alone, as the renewals find
    -- theirs since migration 020: a TID scan whatever the statistics (with
    -- the job ids tested beside them, statistics taken while the jobs were
    -- queued made the planner scan the primary key by the ids instead, one
    -- more probe of the key a claim; migration 030).
    RETURN QUERY
    WITH completed AS (
        UPDATE durable_jobs.job_record j
        SET job_status = 'SUCCEEDED', status_changed_at = pg_catalog.clock_timestamp(), lease_expires_at = NULL
        WHERE j.ctid = ANY (v_locked_ctids)  -- rows this call holds locked, exactly
        RETURNING j.job_record_id AS completed_id, j.lease_fencing_generation AS completed_generation
    ), claim_output AS (
        SELECT k.completed_id, k.completed_generation, i.input_result, i.input_position
        FROM ROWS FROM (pg_catalog.unnest(p_job_record_ids),
                        pg_catalog.unnest(COALESCE(p_result_documents,
                                                   pg_catalog.array_fill(NULL::jsonb, ARRAY[v_claims]))))
             WITH ORDINALITY AS i(input_job_id, input_result, input_position)
        JOIN completed k ON k.completed_id = i.input_job_id
    ), recorded AS (
        INSERT INTO durable_jobs.job_outcome_ledger
            (job_record_id, lease_fencing_generation, outcome_status, result_document)
        SELECT o.completed_id, o.completed_generation, 'SUCCEEDED', o.input_result
        FROM claim_output o
        ORDER BY o.input_position
    )
    -- recorded is not read: a data-modifying WITH runs to completion anyway.
    SELECT o.completed_id, 'SUCCEEDED'::text, o.completed_generation
    FROM claim_output o
    ORDER BY o.input_position;
END;
$$;

ALTER FUNCTION durable_jobs.complete_jobs(p_worker_owner_id text, p_job_record_ids bigint[], p_lease_claim_tokens uuid[], p_result_documents jsonb[]) OWNER TO durable_job_terminal_owner;

--
-- Name: continue_evidence_chain(bigint, bytea, text, text, text); Type: FUNCTION; Schema: durable_jobs; Owner: durable_job_policy_owner
--

CREATE FUNCTION durable_jobs.continue_evidence_chain(p_previous_head_id bigint, p_previous_head_hash bytea, p_change_reason text, p_change_ticket text DEFAULT NULL::text, p_change_approver text DEFAULT NULL::text) RETURNS bigint
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET lock_timeout TO '10s'
    AS $$
DECLARE
    v_record_id bigint;
BEGIN
    IF p_previous_head_id IS NULL OR p_previous_head_id < 1
       OR p_previous_head_hash IS NULL OR pg_catalog.length(p_previous_head_hash) <> 32 THEN
        RAISE EXCEPTION 'invalid chain head' USING ERRCODE = 'LF003',
            DETAIL = 'Need the id (1 or more) and the 32-byte record hash of the head an export ends with.';
    END IF;
    PERFORM durable_jobs.require_structured_change(p_change_reason, p_change_ticket, p_change_approver);
    INSERT INTO durable_jobs.control_evidence_record
        (evidence_kind, queue_name, previous_values, new_values, change_reason, change_ticket, change_approver)
    VALUES ('evidence_chain_continued', NULL, NULL,
            pg_catalog.jsonb_build_object('previous_head_id', p_previous_head_id,
                'previous_head_hash', pg_catalog.encode(p_previous_head_hash, 'hex')),
            p_change_reason, p_change_ticket, p_change_approver)
    RETURNING evidence_record_id INTO v_record_id;
    RETURN v_record_id;
END;
$$;

ALTER FUNCTION durable_jobs.continue_evidence_chain(p_previous_head_id bigint, p_previous_head_hash bytea, p_change_reason text, p_change_ticket text, p_change_approver text) OWNER TO durable_job_policy_owner;

--
-- Name: evidence_content_digest(bigint, text, text, jsonb, jsonb, text, text, timestamp with time zone, text, text); Type: FUNCTION; Schema: durable_jobs; Owner: postgres
--

CREATE FUNCTION durable_jobs.evidence_content_digest(p_evidence_record_id bigint, p_evidence_kind text, p_queue_name text, p_previous_values jsonb, p_new_values jsonb, p_change_reason text, p_changed_by_role text, p_recorded_at timestamp with time zone, p_change_ticket text, p_change_approver text) RETURNS bytea
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'pg_temp'
    RETURN sha256(convert_to((jsonb_build_array(p_evidence_record_id, p_evidence_kind, p_queue_name, p_previous_values, p_new_values, p_change_reason, p_changed_by_role, (EXTRACT(epoch FROM p_recorded_at))::text, p_change_ticket, p_change_approver))::text, 'UTF8'::name));

ALTER FUNCTION durable_jobs.evidence_content_digest(p_evidence_record_id bigint, p_evidence_kind text, p_queue_name text, p_previous_values jsonb, p_new_values jsonb, p_change_reason text, p_changed_by_role text, p_recorded_at timestamp with time zone, p_change_ticket text, p_change_approver text) OWNER TO postgres;

--
-- Name: control_evidence_chain(); Type: FUNCTION; Schema: durable_jobs; Owner: durable_job_audit_owner
--

CREATE FUNCTION durable_jobs.control_evidence_chain() RETURNS TABLE(evidence_record_id bigint, evidence_kind text, recorded_at timestamp with time zone, content_digest bytea, previous_record_hash bytea, record_hash bytea)
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    BEGIN ATOMIC
 SELECT e.evidence_record_id,
     e.evidence_kind,
     e.recorded_at,
     durable_jobs.evidence_content_digest(e.evidence_record_id, e.evidence_kind, e.queue_name, e.previous_values, e.new_values, e.change_reason, e.changed_by_role, e.recorded_at, e.change_ticket, e.change_approver) AS evidence_content_digest,
     e.previous_record_hash,
     e.record_hash
    FROM durable_jobs.control_evidence_record e
   ORDER BY e.evidence_record_id;
END;

ALTER FUNCTION durable_jobs.control_evidence_chain() OWNER TO durable_job_audit_owner;

--
-- Name: control_evidence_history(timestamp with time zone); Type: FUNCTION; Schema: durable_jobs; Owner: durable_job_audit_owner
--

CREATE FUNCTION durable_jobs.control_evidence_history(p_since timestamp with time zone DEFAULT NULL::timestamp with time zone) RETURNS TABLE(evidence_record_id bigint, evidence_kind text, queue_name text, previous_values jsonb, new_values jsonb, change_reason text, changed_by_role text, recorded_at timestamp with time zone)
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    BEGIN ATOMIC
 SELECT e.evidence_record_id,
     e.evidence_kind,
     e.queue_name,
     e.previous_values,
     e.new_values,
     e.change_reason,
     e.changed_by_role,
     e.recorded_at
    FROM durable_jobs.control_evidence_record e
   WHERE ((control_evidence_history.p_since IS NULL) OR (e.recorded_at >= control_evidence_history.p_since))
   ORDER BY e.evidence_record_id;
END;

ALTER FUNCTION durable_jobs.control_evidence_history(p_since timestamp with time zone) OWNER TO durable_job_audit_owner;

--
-- Name: queue_retention_policy; Type: TABLE; Schema: durable_jobs; Owner: postgres
--

CREATE TABLE durable_jobs.queue_retention_policy (
    queue_name text NOT NULL,
    payload_retention interval NOT NULL,
    record_retention interval NOT NULL,
    changed_at timestamp with time zone DEFAULT clock_timestamp() NOT NULL,
    changed_by_role text DEFAULT SESSION_USER NOT NULL,
    CONSTRAINT queue_retention_policy_bounds CHECK (((payload_retention >= '01:00:00'::interval) AND (record_retention >= payload_retention) AND (record_retention <= '3650 days'::interval))),
    CONSTRAINT queue_retention_policy_queue_name_format CHECK (((queue_name = '*'::text) OR (queue_name ~ '^[a-z][a-z0-9_.:-]{0,62}$'::text)))
);

ALTER TABLE durable_jobs.queue_retention_policy OWNER TO postgres;

--
-- Name: TABLE queue_retention_policy; Type: COMMENT; Schema: durable_jobs; Owner: postgres
--

COMMENT ON TABLE durable_jobs.queue_retention_policy IS 'Retention per queue (''*'' is the default): how long a finished job keeps its payload and result documents, and how long its row and outcome ledger are kept.';

--
-- Name: control_evidence_mismatches(); Type: FUNCTION; Schema: durable_jobs; Owner: durable_job_audit_owner
--

CREATE FUNCTION durable_jobs.control_evidence_mismatches() RETURNS TABLE(control_table text, queue_name text, mismatch text)
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    BEGIN ATOMIC
 WITH baseline AS (
          SELECT e.evidence_record_id,
             e.new_values
            FROM durable_jobs.control_evidence_record e
           WHERE ((e.evidence_kind = 'migration_applied'::text) AND (e.new_values ? 'retention_baseline'::text))
           ORDER BY e.evidence_record_id DESC
          LIMIT 1
         ), retention_records AS (
          SELECT e.evidence_record_id,
             e.queue_name,
             e.new_values
            FROM durable_jobs.control_evidence_record e
           WHERE ((e.evidence_kind = 'retention_policy_changed'::text) AND (e.queue_name IS NOT NULL) AND (e.evidence_record_id > COALESCE(( SELECT b.evidence_record_id
                    FROM baseline b), (0)::bigint)))
         UNION ALL
          SELECT b.evidence_record_id,
             (r.row_values ->> 'policy_queue_name'::text),
             r.row_values
            FROM baseline b,
             LATERAL jsonb_array_elements((b.new_values -> 'retention_baseline'::text)) r(row_values)
         ), last_retention AS (
          SELECT DISTINCT ON (r.queue_name) r.queue_name,
             r.new_values,
             (COALESCE((r.new_values ->> 'policy_queue_name'::text), ''::text) = r.queue_name) AS has_row
            FROM retention_records r
           ORDER BY r.queue_name, r.evidence_record_id DESC
         ), last_change_control AS (
          SELECT c.new_values
            FROM ( SELECT e.evidence_record_id,
                     e.new_values
                    FROM durable_jobs.control_evidence_record e
                   WHERE ((e.evidence_kind = 'change_control_changed'::text) AND (e.new_values ?& ARRAY['ticket_pattern'::text, 'require_approver'::text, 'approver_must_differ'::text, 'reason_pattern'::text]))
                 UNION ALL
                  SELECT e.evidence_record_id,
                     (e.new_values -> 'change_control_baseline'::text)
                    FROM durable_jobs.control_evidence_record e
                   WHERE ((e.evidence_kind = 'migration_applied'::text) AND (e.new_values ? 'change_control_baseline'::text))) c
           ORDER BY c.evidence_record_id DESC
          LIMIT 1
         )
  SELECT 'queue_retention_policy'::text,
     COALESCE(p.queue_name, v.queue_name) AS "coalesce",
         CASE
             WHEN (v.queue_name IS NULL) THEN 'retention row has no evidence record'::text
             WHEN (p.queue_name IS NULL) THEN 'retention row in the evidence is missing from the table'::text
             WHEN (NOT v.has_row) THEN 'retention row exists but the evidence says it was removed'::text
             ELSE 'retention differs from what its last evidence record says'::text
         END AS "case"
    FROM (durable_jobs.queue_retention_policy p
      FULL JOIN last_retention v ON ((v.queue_name = p.queue_name)))
   WHERE ((v.queue_name IS NULL) OR ((p.queue_name IS NULL) AND v.has_row) OR ((p.queue_name IS NOT NULL) AND (NOT v.has_row)) OR ((p.queue_name IS NOT NULL) AND ((((v.new_values ->> 'payload_retention'::text))::interval IS DISTINCT FROM p.payload_retention) OR (((v.new_values ->> 'record_retention'::text))::interval IS DISTINCT FROM p.record_retention))))
 UNION ALL
  SELECT 'change_control_setting'::text,
     NULL::text,
     'change control differs from what its last evidence record says'::text
    FROM (durable_jobs.change_control_setting s
      JOIN last_change_control c ON (true))
   WHERE (((c.new_values ->> 'ticket_pattern'::text) IS DISTINCT FROM s.ticket_pattern) OR (((c.new_values ->> 'require_approver'::text))::boolean IS DISTINCT FROM s.require_approver) OR (((c.new_values ->> 'approver_must_differ'::text))::boolean IS DISTINCT FROM s.approver_must_differ) OR ((c.new_values ->> 'reason_pattern'::text) IS DISTINCT FROM s.reason_pattern) OR ((c.new_values ? 'require_second_operator'::text) AND (((c.new_values ->> 'require_second_operator'::text))::boolean IS DISTINCT FROM s.require_second_operator)) OR ((c.new_values ? 'proposal_lifetime'::text) AND (((c.new_values ->> 'proposal_lifetime'::text))::interval IS DISTINCT FROM s.proposal_lifetime)))
  ORDER BY 1, 2;
END;

ALTER FUNCTION durable_jobs.control_evidence_mismatches() OWNER TO durable_job_audit_owner;

--
-- Name: control_evidence_records(timestamp with time zone, timestamp with time zone); Type: FUNCTION; Schema: durable_jobs; Owner: durable_job_audit_owner
--

CREATE FUNCTION durable_jobs.control_evidence_records(p_since timestamp with time zone, p_until timestamp with time zone) RETURNS TABLE(evidence_record_id bigint, evidence_kind text, queue_name text, previous_values jsonb, new_values jsonb, change_reason text, change_ticket text, change_approver text, changed_by_role text, recorded_at timestamp with time zone, record_hash bytea)
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    BEGIN ATOMIC
 SELECT e.evidence_record_id,
     e.evidence_kind,
     e.queue_name,
     e.previous_values,
     e.new_values,
     e.change_reason,
     e.change_ticket,
     e.change_approver,
     e.changed_by_role,
     e.recorded_at,
     e.record_hash
    FROM durable_jobs.control_evidence_record e
   WHERE (((control_evidence_records.p_since IS NULL) OR (e.recorded_at >= control_evidence_records.p_since)) AND ((control_evidence_records.p_until IS NULL) OR (e.recorded_at < control_evidence_records.p_until)))
   ORDER BY e.evidence_record_id;
END;

ALTER FUNCTION durable_jobs.control_evidence_records(p_since timestamp with time zone, p_until timestamp with time zone) OWNER TO durable_job_audit_owner;

--
-- Name: pending_change; Type: TABLE; Schema: durable_jobs; Owner: postgres
--

CREATE TABLE durable_jobs.pending_change (
    change_id bigint NOT NULL,
    change_kind text NOT NULL,
    queue_name text,
    proposed_values jsonb NOT NULL,
    change_reason text NOT NULL,
    change_ticket text,
    proposed_by_role text DEFAULT SESSION_USER NOT NULL,
    proposed_at timestamp with time zone DEFAULT clock_timestamp() NOT NULL,
    expires_at timestamp with time zone NOT NULL,
    change_decision text,
    decided_by_role text,
    decided_at timestamp with time zone,
    decided_in_transaction xid8,
    CONSTRAINT pending_change_decision CHECK ((change_decision = ANY (ARRAY['approved'::text, 'rejected'::text]))),
    CONSTRAINT pending_change_kind CHECK ((change_kind = ANY (ARRAY['lease_policy'::text, 'retention_policy'::text, 'change_control'::text])))
);

ALTER TABLE durable_jobs.pending_change OWNER TO postgres;

--
-- Name: TABLE pending_change; Type: COMMENT; Schema: durable_jobs; Owner: postgres
--

COMMENT ON TABLE durable_jobs.pending_change IS 'Maker-checker proposals: a change proposed by one operator login, approved or rejected by another (propose_change, approve_change).';

--
-- Name: decide_change(bigint, text, text); Type: FUNCTION; Schema: durable_jobs; Owner: durable_job_policy_owner
--

CREATE FUNCTION durable_jobs.decide_change(p_change_id bigint, p_decision text, p_change_reason text) RETURNS durable_jobs.pending_change
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    v_change durable_jobs.pending_change;
BEGIN
    IF p_change_id IS NULL THEN
        RAISE EXCEPTION 'change id is required' USING ERRCODE = 'LF003';
    END IF;
    PERFORM durable_jobs.lock_evidence_order();
    SELECT c.* INTO v_change FROM durable_jobs.pending_change c WHERE c.change_id = p_change_id FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'no such proposal' USING ERRCODE = 'LF003';
    END IF;
    IF v_change.change_decision IS NOT NULL THEN
        RAISE EXCEPTION 'proposal already decided' USING ERRCODE = 'LF002',
            DETAIL = pg_catalog.format('The proposal was %s.', v_change.change_decision);
    END IF;
    IF p_decision = 'approved' AND v_change.expires_at < pg_catalog.clock_timestamp() THEN
        RAISE EXCEPTION 'proposal expired' USING ERRCODE = 'LF002',
            HINT = 'Propose the change again.';
    END IF;
    IF p_decision = 'approved' AND v_change.proposed_by_role = SESSION_USER THEN
        RAISE EXCEPTION 'invalid change record' USING ERRCODE = 'LF002',
            DETAIL = 'A proposal is approved by another operator login than the one that proposed it.';
    END IF;
    UPDATE durable_jobs.pending_change c
    SET change_decision = p_decision, decided_by_role = SESSION_USER, decided_at = pg_catalog.clock_timestamp(),
        decided_in_transaction = pg_catalog.pg_current_xact_id()
    WHERE c.change_id = p_change_id;
    INSERT INTO durable_jobs.control_evidence_record
        (evidence_kind, queue_name, previous_values, new_values, change_reason, change_ticket, change_approver)
    VALUES ('change_' || p_decision, v_change.queue_name, NULL,
            pg_catalog.jsonb_build_object('change_id', v_change.change_id, 'change_kind', v_change.change_kind,
                'proposed_by', v_change.proposed_by_role, 'proposed_at', v_change.proposed_at),
            COALESCE(p_change_reason, v_change.change_reason), v_change.change_ticket,
            CASE WHEN p_decision = 'approved' THEN SESSION_USER END);
    RETURN v_change;
END;
$$;

ALTER FUNCTION durable_jobs.decide_change(p_change_id bigint, p_decision text, p_change_reason text) OWNER TO durable_job_policy_owner;

--
-- Name: queue_lease_policy; Type: TABLE; Schema: durable_jobs; Owner: postgres
--

CREATE TABLE durable_jobs.queue_lease_policy (
    queue_name text NOT NULL,
    lease_duration interval NOT NULL,
    renewal_interval interval NOT NULL,
    max_claim_lifetime interval NOT NULL,
    renewal_enabled boolean NOT NULL,
    changed_at timestamp with time zone DEFAULT clock_timestamp() NOT NULL,
    changed_by_role text DEFAULT SESSION_USER NOT NULL,
    CONSTRAINT queue_lease_policy_absolute_durations CHECK (((EXTRACT(year FROM lease_duration) = (0)::numeric) AND (EXTRACT(month FROM lease_duration) = (0)::numeric) AND (EXTRACT(day FROM lease_duration) = (0)::numeric) AND (EXTRACT(year FROM renewal_interval) = (0)::numeric) AND (EXTRACT(month FROM renewal_interval) = (0)::numeric) AND (EXTRACT(day FROM renewal_interval) = (0)::numeric) AND (EXTRACT(year FROM max_claim_lifetime) = (0)::numeric) AND (EXTRACT(month FROM max_claim_lifetime) = (0)::numeric) AND (EXTRACT(day FROM max_claim_lifetime) = (0)::numeric))),
    CONSTRAINT queue_lease_policy_bounds CHECK (((lease_duration >= '00:00:01'::interval) AND (lease_duration <= '24:00:00'::interval) AND (renewal_interval >= '00:00:00.1'::interval) AND (renewal_interval <= (lease_duration / (3)::double precision)) AND (max_claim_lifetime >= lease_duration) AND (max_claim_lifetime <= '7 days'::interval))),
    CONSTRAINT queue_lease_policy_queue_name_format CHECK (((queue_name = '*'::text) OR (queue_name ~ '^[a-z][a-z0-9_.:-]{0,62}$'::text)))
);

ALTER TABLE durable_jobs.queue_lease_policy OWNER TO postgres;

--
-- Name: TABLE queue_lease_policy; Type: COMMENT; Schema: durable_jobs; Owner: postgres
--

COMMENT ON TABLE durable_jobs.queue_lease_policy IS 'Lease policy per queue; ''*'' is the default for queues without their own.';

--
-- Name: effective_lease_policy_queue(text); Type: FUNCTION; Schema: durable_jobs; Owner: postgres
--

CREATE FUNCTION durable_jobs.effective_lease_policy_queue(p_queue_name text) RETURNS TABLE(policy_queue_name text)
    LANGUAGE sql STABLE PARALLEL SAFE
    BEGIN ATOMIC
 SELECT COALESCE(( SELECT q.queue_name
            FROM durable_jobs.queue_lease_policy q
           WHERE (q.queue_name = effective_lease_policy_queue.p_queue_name)), '*'::text) AS "coalesce";
END;

ALTER FUNCTION durable_jobs.effective_lease_policy_queue(p_queue_name text) OWNER TO postgres;

--
-- Name: enqueue_job(text, jsonb, text, timestamp with time zone, integer); Type: FUNCTION; Schema: durable_jobs; Owner: durable_job_producer_owner
--

CREATE FUNCTION durable_jobs.enqueue_job(p_queue_name text, p_job_payload jsonb, p_idempotency_key text DEFAULT NULL::text, p_run_after timestamp with time zone DEFAULT NULL::timestamp with time zone, p_max_attempts integer DEFAULT 5) RETURNS bigint
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    v_job_record_id bigint;
    v_key_digest bytea;
BEGIN
    PERFORM durable_jobs.require_well_formed('queue_name', p_queue_name);
    IF p_job_payload IS NULL THEN
        RAISE EXCEPTION 'job payload is required' USING ERRCODE = 'LF003';
    END IF;
    IF pg_catalog.pg_column_size(p_job_payload) > 1048576 THEN
        RAISE EXCEPTION 'job payload must be at most 1 MiB' USING ERRCODE = 'LF003';
    END IF;
    IF p_run_after IS NOT NULL AND (NOT pg_catalog.isfinite(p_run_after)
            OR p_run_after < timestamptz '2000-01-01 00:00:00+00'
            OR p_run_after >= timestamptz '2100-01-01 00:00:00+00') THEN
        RAISE EXCEPTION 'run-after must be a finite time from 2000-01-01 to before 2100-01-01 UTC'
            USING ERRCODE = 'LF003';
    END IF;
    IF p_idempotency_key IS NOT NULL AND pg_catalog.length(p_idempotency_key) NOT BETWEEN 1 AND 200 THEN
        RAISE EXCEPTION 'idempotency key must be 1 to 200 characters' USING ERRCODE = 'LF003';
    END IF;
    IF p_max_attempts IS NULL OR p_max_attempts NOT BETWEEN 1 AND 1000 THEN
        RAISE EXCEPTION 'max attempts must be 1 to 1000' USING ERRCODE = 'LF003';
    END IF;
    v_key_digest := pg_catalog.sha256(pg_catalog.convert_to(p_idempotency_key, 'UTF8'));

    INSERT INTO durable_jobs.job_record AS j (queue_name, idempotency_key_digest, run_after, max_attempts)
    VALUES (p_queue_name, v_key_digest, COALESCE(p_run_after, pg_catalog.clock_timestamp()), p_max_attempts)
    ON CONFLICT (queue_name, idempotency_key_digest) WHERE idempotency_key_digest IS NOT NULL DO NOTHING
    RETURNING j.job_record_id INTO v_job_record_id;

    IF v_job_record_id IS NULL THEN
        SELECT j.job_record_id INTO STRICT v_job_record_id
        FROM durable_jobs.job_record j
        WHERE j.queue_name = p_queue_name AND j.idempotency_key_digest = v_key_digest;
        RETURN v_job_record_id;
    END IF;

    INSERT INTO durable_jobs.job_payload_record (job_record_id, job_payload) VALUES (v_job_record_id, p_job_payload);
    RETURN v_job_record_id;
END;
$$;

ALTER FUNCTION durable_jobs.enqueue_job(p_queue_name text, p_job_payload jsonb, p_idempotency_key text, p_run_after timestamp with time zone, p_max_attempts integer) OWNER TO durable_job_producer_owner;

--
-- Name: enqueue_jobs(text, jsonb[], text[], timestamp with time zone[], integer[]); Type: FUNCTION; Schema: durable_jobs; Owner: durable_job_producer_owner
--

CREATE FUNCTION durable_jobs.enqueue_jobs(p_queue_name text, p_job_payloads jsonb[], p_idempotency_keys text[] DEFAULT NULL::text[], p_run_afters timestamp with time zone[] DEFAULT NULL::timestamp with time zone[], p_max_attempts integer[] DEFAULT NULL::integer[]) RETURNS bigint[]
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET plan_cache_mode TO 'force_custom_plan'
    AS $$
DECLARE
    v_job_count integer := pg_catalog.cardinality(p_job_payloads);
    v_position bigint;
    v_message text;
    v_new_job_record_ids bigint[];
    v_job_record_ids bigint[];
BEGIN
    PERFORM durable_jobs.require_well_formed('queue_name', p_queue_name);
    IF p_job_payloads IS NULL OR pg_catalog.array_ndims(p_job_payloads) IS DISTINCT FROM 1
            OR v_job_count > 10000 THEN
        RAISE EXCEPTION 'job payloads must be a one-dimensional array of 1 to 10000 payloads' USING ERRCODE = 'LF003';
    END IF;
    IF (p_idempotency_keys IS NOT NULL AND (pg_catalog.array_ndims(p_idempotency_keys) IS DISTINCT FROM 1
                                            OR pg_catalog.cardinality(p_idempotency_keys) <> v_job_count))
            OR (p_run_afters IS NOT NULL AND (pg_catalog.array_ndims(p_run_afters) IS DISTINCT FROM 1
                                              OR pg_catalog.cardinality(p_run_afters) <> v_job_count))
            OR (p_max_attempts IS NOT NULL AND (pg_catalog.array_ndims(p_max_attempts) IS DISTINCT FROM 1
                                                OR pg_catalog.cardinality(p_max_attempts) <> v_job_count)) THEN
        RAISE EXCEPTION 'idempotency keys, run-afters and max attempts must each be NULL or hold one element per payload'
            USING ERRCODE = 'LF003';
    END IF;

    -- enqueue_job's checks, in its order, on every element; its messages
    -- name the rule, never the value.
    SELECT u.job_position, u.refusal INTO v_position, v_message
    FROM (SELECT e.job_position,
                 CASE
                     WHEN e.job_payload IS NULL THEN 'job payload is required'
                     WHEN pg_catalog.pg_column_size(e.job_payload) > 1048576 THEN 'job payload must be at most 1 MiB'
                     WHEN e.run_after IS NOT NULL AND (NOT pg_catalog.isfinite(e.run_after)
                             OR e.run_after < timestamptz '2000-01-01 00:00:00+00'
                             OR e.run_after >= timestamptz '2100-01-01 00:00:00+00')
                         THEN 'run-after must be a finite time from 2000-01-01 to before 2100-01-01 UTC'
                     WHEN e.idempotency_key IS NOT NULL AND pg_catalog.length(e.idempotency_key) NOT BETWEEN 1 AND 200
                         THEN 'idempotency key must be 1 to 200 characters'
                     WHEN p_max_attempts IS NOT NULL AND (e.max_attempts IS NULL OR e.max_attempts NOT BETWEEN 1 AND 1000)
                         THEN 'max attempts must be 1 to 1000'
                 END AS refusal
          FROM ROWS FROM (pg_catalog.unnest(p_job_payloads), pg_catalog.unnest(p_idempotency_keys),
                          pg_catalog.unnest(p_run_afters), pg_catalog.unnest(p_max_attempts))
               WITH ORDINALITY AS e(job_payload, idempotency_key, run_after, max_attempts, job_position)) u
    WHERE u.refusal IS NOT NULL
    ORDER BY u.job_position
    LIMIT 1;
    IF v_message IS NOT NULL THEN
        RAISE EXCEPTION 'job % of the batch: %', v_position, v_message USING ERRCODE = 'LF003';
    END IF;

    -- No keys: the new jobs, the k-th by id order element k's, as ids are
    -- drawn in the order the sorted rows are inserted.
    IF p_idempotency_keys IS NULL OR pg_catalog.cardinality(pg_catalog.array_remove(p_idempotency_keys, NULL)) = 0 THEN
        WITH new_job AS (
            INSERT INTO durable_jobs.job_record AS j (queue_name, run_after, max_attempts)
            SELECT p_queue_name, COALESCE(e.run_after, pg_catalog.clock_timestamp()),
                   CASE WHEN p_max_attempts IS NULL THEN 5 ELSE e.max_attempts END
            FROM ROWS FROM (pg_catalog.unnest(p_job_payloads), pg_catalog.unnest(p_run_afters),
                            pg_catalog.unnest(p_max_attempts))
                 WITH ORDINALITY AS e(job_payload, run_after, max_attempts, job_position)
            ORDER BY e.job_position
            RETURNING j.job_record_id
        )
        SELECT pg_catalog.array_agg(n.job_record_id ORDER BY n.job_record_id) INTO v_new_job_record_ids FROM new_job n;
    ELSE
        -- Keys: the new jobs, NULL for an element whose key is already taken.
        -- A keyed job is matched to its element by the key's digest (unique
        -- among the new jobs); the k-th new keyless job by id order is the k-th
        -- keyless element, as ids are drawn in the order the sorted rows are
        -- inserted.
        WITH element AS (
            SELECT e.job_position,
                   pg_catalog.sha256(pg_catalog.convert_to(e.idempotency_key, 'UTF8')) AS key_digest,
                   e.run_after, CASE WHEN p_max_attempts IS NULL THEN 5 ELSE e.max_attempts END AS max_attempts
            FROM ROWS FROM (pg_catalog.unnest(p_job_payloads), pg_catalog.unnest(p_idempotency_keys),
                            pg_catalog.unnest(p_run_afters), pg_catalog.unnest(p_max_attempts))
                 WITH ORDINALITY AS e(job_payload, idempotency_key, run_after, max_attempts, job_position)
        ), new_job AS (
            INSERT INTO durable_jobs.job_record AS j (queue_name, idempotency_key_digest, run_after, max_attempts)
            SELECT p_queue_name, s.key_digest, COALESCE(s.run_after, pg_catalog.clock_timestamp()), s.max_attempts
            FROM (SELECT e.job_position, e.key_digest, e.run_after, e.max_attempts FROM element e
                  ORDER BY e.job_position) s
            ON CONFLICT (queue_name, idempotency_key_digest) WHERE idempotency_key_digest IS NOT NULL DO NOTHING
            RETURNING j.job_record_id, j.idempotency_key_digest
        ), placed AS (
            SELECT k.job_position, n.job_record_id
            FROM (SELECT DISTINCT ON (e.key_digest) e.key_digest, e.job_position
                  FROM element e WHERE e.key_digest IS NOT NULL
                  ORDER BY e.key_digest, e.job_position) k
            JOIN new_job n ON n.idempotency_key_digest = k.key_digest
            UNION ALL
            SELECT k.job_position, n.job_record_id
            FROM (SELECT e.job_position, pg_catalog.row_number() OVER (ORDER BY e.job_position) AS keyless_rank
                  FROM element e WHERE e.key_digest IS NULL) k
            JOIN (SELECT n.job_record_id, pg_catalog.row_number() OVER (ORDER BY n.job_record_id) AS keyless_rank
                  FROM new_job n WHERE n.idempotency_key_digest IS NULL) n ON n.keyless_rank = k.keyless_rank
        )
        SELECT pg_catalog.array_agg(p.job_record_id ORDER BY e.job_position) INTO v_new_job_record_ids
        FROM element e LEFT JOIN placed p ON p.job_position = e.job_position;
    END IF;

    IF pg_catalog.array_position(v_new_job_record_ids, NULL) IS NULL THEN
        -- Every element has a new job, and its key, if any, holds it.
        v_job_record_ids := v_new_job_record_ids;
    ELSE
        -- One id per element: its new job's, or (a key already taken) the id
        -- its key holds, looked up in a snapshot taken after the insert, so it
        -- also sees a concurrent insert of the key that this one waited for.
        SELECT pg_catalog.array_agg(r.job_record_id ORDER BY r.job_position) INTO STRICT v_job_record_ids
        FROM (SELECT u.job_position,
                     COALESCE(u.job_record_id,
                              (SELECT j.job_record_id FROM durable_jobs.job_record j
                               WHERE j.queue_name = p_queue_name
                                 AND j.idempotency_key_digest
                                     = pg_catalog.sha256(pg_catalog.convert_to(u.idempotency_key, 'UTF8')))) AS job_record_id
              FROM ROWS FROM (pg_catalog.unnest(v_new_job_record_ids), pg_catalog.unnest(p_idempotency_keys))
                   WITH ORDINALITY AS u(job_record_id, idempotency_key, job_position)) r
        HAVING pg_catalog.count(*) = pg_catalog.count(r.job_record_id); -- else P0002, as enqueue_job's STRICT lookup
    END IF;

    -- The new jobs' payloads, each element's with its new job, planned and
    -- run with plan_cache_mode auto (see above; the function's SET clause
    -- puts the caller's own value back when it returns).
    PERFORM pg_catalog.set_config('plan_cache_mode', 'auto', true);
    INSERT INTO durable_jobs.job_payload_record (job_record_id, job_payload)
    SELECT u.job_record_id, u.job_payload
    FROM ROWS FROM (pg_catalog.unnest(v_new_job_record_ids), pg_catalog.unnest(p_job_payloads))
         AS u(job_record_id, job_payload)
    WHERE u.job_record_id IS NOT NULL;
    RETURN v_job_record_ids;
END;
$$;

ALTER FUNCTION durable_jobs.enqueue_jobs(p_queue_name text, p_job_payloads jsonb[], p_idempotency_keys text[], p_run_afters timestamp with time zone[], p_max_attempts integer[]) OWNER TO durable_job_producer_owner;

--
-- Name: erase_job_payload(bigint, text, text, text); Type: FUNCTION; Schema: durable_jobs; Owner: durable_job_retention_owner
--

CREATE FUNCTION durable_jobs.erase_job_payload(p_job_record_id bigint, p_change_reason text, p_change_ticket text, p_change_approver text DEFAULT NULL::text) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    v_status durable_jobs.job_status_kind;
    v_queue text;
BEGIN
    IF p_job_record_id IS NULL THEN
        RAISE EXCEPTION 'job id is required' USING ERRCODE = 'LF003';
    END IF;
    PERFORM durable_jobs.require_valid_change_reason(p_change_reason, 'LF003');

    SELECT j.job_status, j.queue_name INTO v_status, v_queue
    FROM durable_jobs.job_record j
    WHERE j.job_record_id = p_job_record_id
    FOR UPDATE;
    -- Then the evidence-order lock (taken by require_structured_change), so
    -- the record is checked against the change control in force once no
    -- other change can commit first; the job row is locked before it, as
    -- before migration 024, so an erasure that waits for a worker's
    -- terminal write holds no evidence writer up meanwhile.
    PERFORM durable_jobs.require_structured_change(p_change_reason, p_change_ticket, p_change_approver);
    IF v_status IS NULL THEN
        RETURN false;
    END IF;
    IF v_status NOT IN ('SUCCEEDED', 'FAILED', 'CANCELLED') THEN
        RAISE EXCEPTION 'job is not finished: its payload cannot be erased' USING
            ERRCODE = 'LF003',
            DETAIL = pg_catalog.format('The job is %s.', v_status),
            HINT = 'Cancel it first (cancel_job), then erase it.';
    END IF;

    UPDATE durable_jobs.job_outcome_ledger l SET result_document = NULL
    WHERE l.job_record_id = p_job_record_id;
    DELETE FROM durable_jobs.job_payload_record pr WHERE pr.job_record_id = p_job_record_id;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    INSERT INTO durable_jobs.job_action_record (job_record_id, action_kind, change_reason, change_ticket, change_approver)
    VALUES (p_job_record_id, 'payload_erased', p_change_reason, p_change_ticket, p_change_approver);
    INSERT INTO durable_jobs.control_evidence_record
        (evidence_kind, queue_name, previous_values, new_values, change_reason, change_ticket, change_approver)
    VALUES ('job_payload_erased', v_queue, NULL,
            pg_catalog.jsonb_build_object('job_status', v_status::text, 'payload_erased', true,
                                          'result_documents_cleared', true),
            p_change_reason, p_change_ticket, p_change_approver);
    RETURN true;
END;
$$;

ALTER FUNCTION durable_jobs.erase_job_payload(p_job_record_id bigint, p_change_reason text, p_change_ticket text, p_change_approver text) OWNER TO durable_job_retention_owner;

--
-- Name: erase_job_payload(bigint, text); Type: FUNCTION; Schema: durable_jobs; Owner: durable_job_retention_owner
--

CREATE FUNCTION durable_jobs.erase_job_payload(p_job_record_id bigint, p_change_reason text) RETURNS boolean
    LANGUAGE sql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    BEGIN ATOMIC
 SELECT durable_jobs.erase_job_payload(p_job_record_id, p_change_reason, NULL::text, NULL::text) AS erase_job_payload;
END;

ALTER FUNCTION durable_jobs.erase_job_payload(p_job_record_id bigint, p_change_reason text) OWNER TO durable_job_retention_owner;

--
-- Name: fail_job(bigint, uuid, text, text); Type: FUNCTION; Schema: durable_jobs; Owner: durable_job_terminal_owner
--

CREATE FUNCTION durable_jobs.fail_job(p_job_record_id bigint, p_lease_claim_token uuid, p_worker_owner_id text, p_failure_reason_code text) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    v_claim record;
BEGIN
    PERFORM durable_jobs.require_well_formed('failure_reason_code', p_failure_reason_code);
    SELECT * INTO v_claim FROM durable_jobs.lock_fenced_claim(p_job_record_id, p_lease_claim_token, p_worker_owner_id);
    IF NOT FOUND THEN
        PERFORM durable_jobs.raise_stale_claim();
    END IF;
    UPDATE durable_jobs.job_record j
    SET job_status = 'FAILED', status_changed_at = pg_catalog.clock_timestamp(),
        failure_reason_code = p_failure_reason_code, lease_expires_at = NULL
    WHERE j.job_record_id = p_job_record_id;
    INSERT INTO durable_jobs.job_outcome_ledger (job_record_id, lease_fencing_generation, outcome_status, failure_reason_code)
    VALUES (p_job_record_id, v_claim.fenced_generation, 'FAILED', p_failure_reason_code);
END;
$$;

ALTER FUNCTION durable_jobs.fail_job(p_job_record_id bigint, p_lease_claim_token uuid, p_worker_owner_id text, p_failure_reason_code text) OWNER TO durable_job_terminal_owner;

--
-- Name: failure_reason_code_is_well_formed(text); Type: FUNCTION; Schema: durable_jobs; Owner: postgres
--

CREATE FUNCTION durable_jobs.failure_reason_code_is_well_formed(p_failure_reason_code text) RETURNS boolean
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN ((octet_length(p_failure_reason_code) <= 63) AND ((p_failure_reason_code COLLATE "C") ~ '^[a-z][a-z0-9_]*$'::text));

ALTER FUNCTION durable_jobs.failure_reason_code_is_well_formed(p_failure_reason_code text) OWNER TO postgres;

--
-- Name: failure_reason_code_pattern(); Type: FUNCTION; Schema: durable_jobs; Owner: postgres
--

CREATE FUNCTION durable_jobs.failure_reason_code_pattern() RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN '^[a-z][a-z0-9_]{0,62}$'::text;

ALTER FUNCTION durable_jobs.failure_reason_code_pattern() OWNER TO postgres;

--
-- Name: is_plain_change_reason(text); Type: FUNCTION; Schema: durable_jobs; Owner: postgres
--

CREATE FUNCTION durable_jobs.is_plain_change_reason(p_change_reason text) RETURNS boolean
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'pg_temp'
    RETURN ((p_change_reason ~ '[^[:space:]]'::text) AND (length(p_change_reason) <= 500) AND (p_change_reason !~ '[\x01-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069\u00ad\u034f\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff0-\ufff8\U000e0000-\U000e007f]'::text));

ALTER FUNCTION durable_jobs.is_plain_change_reason(p_change_reason text) OWNER TO postgres;

--
-- Name: job_lifecycle_state(bigint); Type: FUNCTION; Schema: durable_jobs; Owner: durable_job_producer_owner
--

CREATE FUNCTION durable_jobs.job_lifecycle_state(p_job_record_id bigint) RETURNS TABLE(job_status text, attempt_number integer, max_attempts integer, lease_fencing_generation bigint, lease_expires_at timestamp with time zone, lease_renewal_count bigint, failure_reason_code text)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    IF p_job_record_id IS NULL THEN
        RAISE EXCEPTION 'job id is required' USING ERRCODE = 'LF003';
    END IF;
    RETURN QUERY
    SELECT j.job_status::text, j.attempt_number, j.max_attempts, j.lease_fencing_generation,
           j.lease_expires_at, j.lease_renewal_count, j.failure_reason_code
    FROM durable_jobs.job_record j
    WHERE j.job_record_id = p_job_record_id;
END;
$$;

ALTER FUNCTION durable_jobs.job_lifecycle_state(p_job_record_id bigint) OWNER TO durable_job_producer_owner;

--
-- Name: job_outcome_ledger; Type: TABLE; Schema: durable_jobs; Owner: postgres
--

CREATE TABLE durable_jobs.job_outcome_ledger (
    job_outcome_record_id bigint NOT NULL,
    job_record_id bigint NOT NULL,
    lease_fencing_generation bigint NOT NULL,
    outcome_status durable_jobs.job_status_kind NOT NULL,
    failure_reason_code text,
    result_document jsonb,
    recorded_at timestamp with time zone DEFAULT clock_timestamp() NOT NULL
);

ALTER TABLE durable_jobs.job_outcome_ledger OWNER TO postgres;

--
-- Name: TABLE job_outcome_ledger; Type: COMMENT; Schema: durable_jobs; Owner: postgres
--

COMMENT ON TABLE durable_jobs.job_outcome_ledger IS 'Fenced terminal outcomes (success with its result, retry, failure), written in the worker''s own transaction.';

--
-- Name: job_record; Type: TABLE; Schema: durable_jobs; Owner: postgres
--

CREATE TABLE durable_jobs.job_record (
    job_record_id bigint NOT NULL,
    queue_name text NOT NULL,
    job_status durable_jobs.job_status_kind DEFAULT 'QUEUED'::durable_jobs.job_status_kind NOT NULL,
    idempotency_key_digest bytea,
    run_after timestamp with time zone NOT NULL,
    max_attempts integer NOT NULL,
    attempt_number integer DEFAULT 0 NOT NULL,
    lease_claim_digest bytea,
    lease_owner_id text,
    lease_claimed_by_role text,
    lease_claimed_at timestamp with time zone,
    lease_expires_at timestamp with time zone,
    lease_claim_deadline timestamp with time zone,
    lease_fencing_generation bigint DEFAULT 0 NOT NULL,
    lease_renewal_count bigint DEFAULT 0 NOT NULL,
    failure_reason_code text,
    created_at timestamp with time zone DEFAULT clock_timestamp() NOT NULL,
    status_changed_at timestamp with time zone DEFAULT clock_timestamp() NOT NULL,
    lease_expiry_floor timestamp with time zone,
    failover_reclaims smallint DEFAULT 0 NOT NULL,
    CONSTRAINT job_record_attempt_number_range CHECK ((attempt_number >= 0)),
    CONSTRAINT job_record_failover_reclaims_range CHECK ((failover_reclaims >= 0)),
    CONSTRAINT job_record_failure_reason_code_format CHECK (((octet_length(failure_reason_code) <= 63) AND (failure_reason_code ~ '^[a-z][a-z0-9_]*$'::text))),
    CONSTRAINT job_record_max_attempts_range CHECK (((max_attempts >= 1) AND (max_attempts <= 1000))),
    CONSTRAINT job_record_queue_name_format CHECK (((octet_length(queue_name) <= 63) AND (queue_name ~ '^[a-z][a-z0-9_.:-]*$'::text))),
    CONSTRAINT job_record_running_floor_bounds_expiry CHECK (((job_status <> 'RUNNING'::durable_jobs.job_status_kind) OR ((lease_expiry_floor IS NOT NULL) AND (lease_expiry_floor <= lease_expires_at)))),
    CONSTRAINT job_record_running_has_lease CHECK (((job_status <> 'RUNNING'::durable_jobs.job_status_kind) OR ((lease_claim_digest IS NOT NULL) AND (lease_owner_id IS NOT NULL) AND (lease_claimed_by_role IS NOT NULL) AND (lease_expires_at IS NOT NULL) AND (lease_claim_deadline IS NOT NULL))))
)
WITH (fillfactor='80');

ALTER TABLE durable_jobs.job_record OWNER TO postgres;

--
-- Name: TABLE job_record; Type: COMMENT; Schema: durable_jobs; Owner: postgres
--

COMMENT ON TABLE durable_jobs.job_record IS 'One row per durable job: lifecycle and lease state. Never holds the payload.';

--
-- Name: COLUMN job_record.idempotency_key_digest; Type: COMMENT; Schema: durable_jobs; Owner: postgres
--

COMMENT ON COLUMN durable_jobs.job_record.idempotency_key_digest IS 'sha256 of the producer''s idempotency key (UTF-8); the key itself is never stored.';

--
-- Name: COLUMN job_record.attempt_number; Type: COMMENT; Schema: durable_jobs; Owner: postgres
--

COMMENT ON COLUMN durable_jobs.job_record.attempt_number IS 'Claims used: every claim, reclaim included, uses one; release gives one back.';

--
-- Name: COLUMN job_record.lease_claim_digest; Type: COMMENT; Schema: durable_jobs; Owner: postgres
--

COMMENT ON COLUMN durable_jobs.job_record.lease_claim_digest IS 'sha256(uuid_send(token)) of the current claim token; the token itself is never stored.';

--
-- Name: COLUMN job_record.lease_owner_id; Type: COMMENT; Schema: durable_jobs; Owner: postgres
--

COMMENT ON COLUMN durable_jobs.job_record.lease_owner_id IS 'Bounded worker identity that holds the current claim.';

--
-- Name: COLUMN job_record.lease_claimed_by_role; Type: COMMENT; Schema: durable_jobs; Owner: postgres
--

COMMENT ON COLUMN durable_jobs.job_record.lease_claimed_by_role IS 'session_user that made the current claim; the claim is stale for any other login role.';

--
-- Name: COLUMN job_record.lease_claim_deadline; Type: COMMENT; Schema: durable_jobs; Owner: postgres
--

COMMENT ON COLUMN durable_jobs.job_record.lease_claim_deadline IS 'Claim time plus the max_claim_lifetime in force at claim time: no renewal extends past it.';

--
-- Name: COLUMN job_record.lease_fencing_generation; Type: COMMENT; Schema: durable_jobs; Owner: postgres
--

COMMENT ON COLUMN durable_jobs.job_record.lease_fencing_generation IS 'Strictly increases with every claim of the job; external sinks reject writes carrying an older value.';

--
-- Name: COLUMN job_record.lease_renewal_count; Type: COMMENT; Schema: durable_jobs; Owner: postgres
--

COMMENT ON COLUMN durable_jobs.job_record.lease_renewal_count IS 'Renewals of the current claim; 0 at each claim. Counted here, never in a shared counter row.';

--
-- Name: COLUMN job_record.lease_expiry_floor; Type: COMMENT; Schema: durable_jobs; Owner: postgres
--

COMMENT ON COLUMN durable_jobs.job_record.lease_expiry_floor IS 'A lower bound of lease_expires_at while RUNNING, indexed for the reclaim probe. Set to the expiry by each claim; a renewal moves it up to the new expiry only when it is within a sixth of the lease duration of the clock, so most renewals change no indexed column.';

--
-- Name: COLUMN job_record.failover_reclaims; Type: COMMENT; Schema: durable_jobs; Owner: postgres
--

COMMENT ON COLUMN durable_jobs.job_record.failover_reclaims IS 'Reclaims of claims lost with the database (server restarted or promoted since the claim), which cost no attempt; at most three count so.';

--
-- Name: job_status_mismatches(); Type: FUNCTION; Schema: durable_jobs; Owner: durable_job_audit_owner
--

CREATE FUNCTION durable_jobs.job_status_mismatches() RETURNS TABLE(queue_name text, job_status text, job_count bigint)
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    BEGIN ATOMIC
 SELECT j.queue_name,
     (j.job_status)::text AS job_status,
     count(*) AS count
    FROM durable_jobs.job_record j
   WHERE (((j.job_status)::text = ANY (ARRAY['SUCCEEDED'::text, 'FAILED'::text])) AND (NOT (((j.job_status)::text = 'FAILED'::text) AND (j.attempt_number >= j.max_attempts))) AND (NOT (EXISTS ( SELECT 1
            FROM durable_jobs.job_outcome_ledger l
           WHERE ((l.job_record_id = j.job_record_id) AND (l.lease_fencing_generation = j.lease_fencing_generation) AND (l.outcome_status = j.job_status))))))
   GROUP BY j.queue_name, j.job_status
   ORDER BY j.queue_name, j.job_status;
END;

ALTER FUNCTION durable_jobs.job_status_mismatches() OWNER TO durable_job_audit_owner;

--
-- Name: job_status_totals(); Type: FUNCTION; Schema: durable_jobs; Owner: durable_job_audit_owner
--

CREATE FUNCTION durable_jobs.job_status_totals() RETURNS TABLE(queue_name text, job_status text, job_count bigint)
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    BEGIN ATOMIC
 SELECT j.queue_name,
     (j.job_status)::text AS job_status,
     count(*) AS count
    FROM durable_jobs.job_record j
   GROUP BY j.queue_name, j.job_status
   ORDER BY j.queue_name, j.job_status;
END;

ALTER FUNCTION durable_jobs.job_status_totals() OWNER TO durable_job_audit_owner;

--
-- Name: lease_outcome_tally; Type: TABLE; Schema: durable_jobs; Owner: postgres
--

CREATE TABLE durable_jobs.lease_outcome_tally (
    tally_minute timestamp with time zone NOT NULL,
    queue_name text NOT NULL,
    outcome_kind text NOT NULL,
    tally_backend_pid integer NOT NULL,
    counted_by_role text NOT NULL,
    outcome_count bigint NOT NULL,
    CONSTRAINT lease_outcome_tally_count_positive CHECK ((outcome_count > 0)),
    CONSTRAINT lease_outcome_tally_kind CHECK ((outcome_kind = ANY (ARRAY['stale_renewal'::text, 'reclaim'::text, 'stale_release'::text, 'failover_reclaim'::text])))
);

ALTER TABLE durable_jobs.lease_outcome_tally OWNER TO postgres;

--
-- Name: TABLE lease_outcome_tally; Type: COMMENT; Schema: durable_jobs; Owner: postgres
--

COMMENT ON TABLE durable_jobs.lease_outcome_tally IS 'Per-minute (UTC) tallies of committed rare outcomes. Each backend counts in rows of its own, so counting never waits on another session; readers sum. Rows older than 30 days are deleted by the writers (SKIP LOCKED).';

--
-- Name: COLUMN lease_outcome_tally.tally_minute; Type: COMMENT; Schema: durable_jobs; Owner: postgres
--

COMMENT ON COLUMN durable_jobs.lease_outcome_tally.tally_minute IS 'The UTC minute the outcomes were counted in, whatever the session''s TimeZone.';

--
-- Name: COLUMN lease_outcome_tally.queue_name; Type: COMMENT; Schema: durable_jobs; Owner: postgres
--

COMMENT ON COLUMN durable_jobs.lease_outcome_tally.queue_name IS 'Queue the outcome is charged to: a reclaim''s queue; for a stale renewal or release, the job''s queue when the counting login made the job''s last claim, else ''*'' (unknown job, or a job another login claimed last).';

--
-- Name: COLUMN lease_outcome_tally.tally_backend_pid; Type: COMMENT; Schema: durable_jobs; Owner: postgres
--

COMMENT ON COLUMN durable_jobs.lease_outcome_tally.tally_backend_pid IS 'pg_backend_pid() of the counting session: no two live sessions share a row. Negative for rows carried over from the 16 shards of version 2.';

--
-- Name: COLUMN lease_outcome_tally.counted_by_role; Type: COMMENT; Schema: durable_jobs; Owner: postgres
--

COMMENT ON COLUMN durable_jobs.lease_outcome_tally.counted_by_role IS 'session_user that counted the outcome ('''' for rows carried over from version 2). Never returned by any function.';

--
-- Name: lease_health_by_queue(); Type: FUNCTION; Schema: durable_jobs; Owner: durable_job_audit_owner
--

CREATE FUNCTION durable_jobs.lease_health_by_queue() RETURNS TABLE(queue_name text, running_jobs bigint, expiring_within_interval bigint, expired_awaiting_reclaim bigint, reclaims_last_hour bigint, failover_reclaims_last_hour bigint, stale_renewals_last_hour bigint, stale_releases_last_hour bigint, oldest_lease_age interval, database_time timestamp with time zone)
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET "TimeZone" TO 'UTC'
    BEGIN ATOMIC
 WITH read_at AS (
          SELECT clock_timestamp() AS read_time
         ), queues AS (
          SELECT p.queue_name
            FROM durable_jobs.queue_lease_policy p
         UNION
          SELECT DISTINCT j.queue_name
            FROM durable_jobs.job_record j
         ), effective AS (
          SELECT q.queue_name,
             ( SELECT p.renewal_interval
                    FROM (durable_jobs.effective_lease_policy_queue(q.queue_name) e_1(policy_queue_name)
                      JOIN durable_jobs.queue_lease_policy p ON ((p.queue_name = e_1.policy_queue_name)))) AS renewal_interval
            FROM queues q
         ), running AS (
          SELECT j.queue_name,
             count(*) AS running_jobs,
             count(*) FILTER (WHERE ((j.lease_expires_at > r_1.read_time) AND (j.lease_expires_at <= (r_1.read_time + e_1.renewal_interval)))) AS expiring_soon,
             count(*) FILTER (WHERE (j.lease_expires_at <= r_1.read_time)) AS expired,
             min(j.lease_claimed_at) AS oldest_claim
            FROM ((durable_jobs.job_record j
              CROSS JOIN read_at r_1)
              JOIN effective e_1 ON ((e_1.queue_name = j.queue_name)))
           WHERE (j.job_status = 'RUNNING'::durable_jobs.job_status_kind)
           GROUP BY j.queue_name
         ), tallies AS (
          SELECT t.queue_name,
             sum(t.outcome_count) FILTER (WHERE (t.outcome_kind = 'reclaim'::text)) AS reclaims,
             sum(t.outcome_count) FILTER (WHERE (t.outcome_kind = 'failover_reclaim'::text)) AS failover_reclaims,
             sum(t.outcome_count) FILTER (WHERE (t.outcome_kind = 'stale_renewal'::text)) AS stale_renewals,
             sum(t.outcome_count) FILTER (WHERE (t.outcome_kind = 'stale_release'::text)) AS stale_releases
            FROM (durable_jobs.lease_outcome_tally t
              CROSS JOIN read_at r_1)
           WHERE (t.tally_minute >= (r_1.read_time - '01:00:00'::interval))
           GROUP BY t.queue_name
         )
  SELECT e.queue_name,
     COALESCE(ru.running_jobs, (0)::bigint) AS "coalesce",
     COALESCE(ru.expiring_soon, (0)::bigint) AS "coalesce",
     COALESCE(ru.expired, (0)::bigint) AS "coalesce",
     (COALESCE(ta.reclaims, (0)::numeric))::bigint AS "coalesce",
     (COALESCE(ta.failover_reclaims, (0)::numeric))::bigint AS "coalesce",
     (COALESCE(ta.stale_renewals, (0)::numeric))::bigint AS "coalesce",
     (COALESCE(ta.stale_releases, (0)::numeric))::bigint AS "coalesce",
     (r.read_time - ru.oldest_claim),
     r.read_time
    FROM (((effective e
      CROSS JOIN read_at r)
      LEFT JOIN running ru ON ((ru.queue_name = e.queue_name)))
      LEFT JOIN tallies ta ON ((ta.queue_name = e.queue_name)))
   ORDER BY e.queue_name;
END;

ALTER FUNCTION durable_jobs.lease_health_by_queue() OWNER TO durable_job_audit_owner;

--
-- Name: lease_outcome_totals(timestamp with time zone); Type: FUNCTION; Schema: durable_jobs; Owner: durable_job_audit_owner
--

CREATE FUNCTION durable_jobs.lease_outcome_totals(p_since timestamp with time zone) RETURNS TABLE(queue_name text, outcome_kind text, outcome_count bigint)
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET "TimeZone" TO 'UTC'
    BEGIN ATOMIC
 SELECT a.queue_name,
     a.outcome_kind,
     (sum(a.outcome_count))::bigint AS sum
    FROM durable_jobs.lease_outcome_tally a
   WHERE ((lease_outcome_totals.p_since IS NULL) OR (a.tally_minute >= date_trunc('minute'::text, lease_outcome_totals.p_since, 'UTC'::text)))
   GROUP BY a.queue_name, a.outcome_kind
   ORDER BY a.queue_name, a.outcome_kind;
END;

ALTER FUNCTION durable_jobs.lease_outcome_totals(p_since timestamp with time zone) OWNER TO durable_job_audit_owner;

--
-- Name: lock_evidence_order(); Type: FUNCTION; Schema: durable_jobs; Owner: durable_job_policy_owner
--

CREATE FUNCTION durable_jobs.lock_evidence_order() RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET lock_timeout TO '10s'
    AS $$
DECLARE
    v_idle_timeout_ms bigint;
BEGIN
    PERFORM 1 FROM durable_jobs.evidence_order_lock l FOR UPDATE;
    SELECT s.setting::bigint INTO STRICT v_idle_timeout_ms
    FROM pg_catalog.pg_settings s WHERE s.name = 'idle_in_transaction_session_timeout';
    IF v_idle_timeout_ms = 0 OR v_idle_timeout_ms > 60000 THEN
        PERFORM pg_catalog.set_config('idle_in_transaction_session_timeout', '60s', true);
    END IF;
END;
$$;

ALTER FUNCTION durable_jobs.lock_evidence_order() OWNER TO durable_job_policy_owner;

--
-- Name: lock_fenced_claim(bigint, uuid, text); Type: FUNCTION; Schema: durable_jobs; Owner: postgres
--

CREATE FUNCTION durable_jobs.lock_fenced_claim(p_job_record_id bigint, p_lease_claim_token uuid, p_worker_owner_id text) RETURNS TABLE(fenced_generation bigint, fenced_attempt_number integer, fenced_max_attempts integer)
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    PERFORM durable_jobs.require_well_formed('worker_owner_id', p_worker_owner_id);
    IF p_job_record_id IS NULL OR p_lease_claim_token IS NULL THEN
        RAISE EXCEPTION 'job id and claim token are required' USING ERRCODE = 'LF003';
    END IF;
    RETURN QUERY
    SELECT j.lease_fencing_generation, j.attempt_number, j.max_attempts
    FROM durable_jobs.job_record j
    WHERE j.job_record_id = p_job_record_id
      -- compared as text: no statistics can then make a partial index of
      -- RUNNING rows (empty to a planner whose ANALYZE ran before the
      -- claims) look cheaper than the primary key; the key finds the row,
      -- this checks it
      AND j.job_status::text = 'RUNNING'
      AND j.lease_claim_digest = durable_jobs.claim_token_digest(p_lease_claim_token)
      AND j.lease_owner_id = p_worker_owner_id
      AND j.lease_claimed_by_role = SESSION_USER
      AND j.lease_expires_at > pg_catalog.clock_timestamp()
    FOR UPDATE OF j;
END;
$$;

ALTER FUNCTION durable_jobs.lock_fenced_claim(p_job_record_id bigint, p_lease_claim_token uuid, p_worker_owner_id text) OWNER TO postgres;

--
-- Name: passes_luhn(text); Type: FUNCTION; Schema: durable_jobs; Owner: postgres
--

CREATE FUNCTION durable_jobs.passes_luhn(p_digits text) RETURNS boolean
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'pg_temp'
    RETURN ((p_digits ~ '^[0-9]{13,19}$'::text) AND (SELECT ((sum(CASE WHEN (((length(passes_luhn.p_digits) - g.i) % 2) = 1) THEN ((((substr(passes_luhn.p_digits, g.i, 1))::integer * 2) % 10) + (((substr(passes_luhn.p_digits, g.i, 1))::integer * 2) / 10)) ELSE (substr(passes_luhn.p_digits, g.i, 1))::integer END) % (10)::bigint) = 0) FROM generate_series(1, length(passes_luhn.p_digits)) g(i)));

ALTER FUNCTION durable_jobs.passes_luhn(p_digits text) OWNER TO postgres;

--
-- Name: screening_form(text); Type: FUNCTION; Schema: durable_jobs; Owner: postgres
--

CREATE FUNCTION durable_jobs.screening_form(p_text text) RETURNS text
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'pg_temp'
    BEGIN ATOMIC
 SELECT
         CASE
             WHEN (s.t ~ '[\u0660-\u0669\u06f0-\u06f9\u0966-\u096f\u09e6-\u09ef\u0e50-\u0e59\u1040-\u1049\u17e0-\u17e9]'::text) THEN ( SELECT string_agg(
                     CASE
                         WHEN (c.ch ~ '[\u0660-\u0669]'::text) THEN chr((ascii(c.ch) - 1584))
                         WHEN (c.ch ~ '[\u06f0-\u06f9]'::text) THEN chr((ascii(c.ch) - 1728))
                         WHEN (c.ch ~ '[\u0966-\u096f]'::text) THEN chr((ascii(c.ch) - 2358))
                         WHEN (c.ch ~ '[\u09e6-\u09ef]'::text) THEN chr((ascii(c.ch) - 2486))
                         WHEN (c.ch ~ '[\u0e50-\u0e59]'::text) THEN chr((ascii(c.ch) - 3616))
                         WHEN (c.ch ~ '[\u1040-\u1049]'::text) THEN chr((ascii(c.ch) - 4112))
                         WHEN (c.ch ~ '[\u17e0-\u17e9]'::text) THEN chr((ascii(c.ch) - 6064))
                         ELSE c.ch
                     END, ''::text ORDER BY c.n) AS string_agg
                FROM regexp_split_to_table(s.t, ''::text) WITH ORDINALITY c(ch, n))
             ELSE s.t
         END AS t
    FROM ( SELECT regexp_replace(regexp_replace(regexp_replace(
                 CASE
                     WHEN (getdatabaseencoding() = 'UTF8'::name) THEN NORMALIZE(screening_form.p_text, NFKC)
                     ELSE screening_form.p_text
                 END, '[\u00ad\u034f\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff0-\ufff8\U000e0000-\U000e007f]'::text, ''::text, 'g'::text), '[\u2010-\u2015\u2212\ufe58\ufe63\uff0d]'::text, '-'::text, 'g'::text), '[\u3002\uff61]'::text, '.'::text, 'g'::text) AS t) s;
END;

ALTER FUNCTION durable_jobs.screening_form(p_text text) OWNER TO postgres;

--
-- Name: looks_personal_or_secret(text); Type: FUNCTION; Schema: durable_jobs; Owner: postgres
--

CREATE FUNCTION durable_jobs.looks_personal_or_secret(p_text text) RETURNS boolean
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'pg_temp'
    BEGIN ATOMIC
 SELECT ((s.n ~ '(^|[^0-9])[0-9]{6}[[:space:]._-]{0,3}[1-4][0-9]{6}([^0-9]|$)'::text) OR (s.n ~ '[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}'::text) OR (s.n ~ '(^|[^0-9])[(]?0[0-9]{1,2}[)]?[[:space:]._-]{0,3}[0-9]{3,4}[[:space:]._-]{0,3}[0-9]{4}([^0-9]|$)'::text) OR (s.n ~ '\+[0-9][0-9[:space:]()._-]{7,}[0-9]'::text) OR (s.n ~* '(password|passwd|pwd|pw|secret|token|api[_-]?key)[[:space:]]*[=:]'::text) OR (s.n ~* '\mpass[[:space:]]*[=:]'::text) OR (s.n ~* '\m(password|passwd|passphrase)[[:space:]]+is[[:space:]]+[^[:space:]]'::text) OR (EXISTS ( SELECT 1
            FROM regexp_matches(s.n, '[0-9](?:[[:space:]._-]?[0-9]){12,18}'::text, 'g'::text) m(candidate)
           WHERE durable_jobs.passes_luhn(regexp_replace(m.candidate[1], '[^0-9]'::text, ''::text, 'g'::text)))))
    FROM ( SELECT durable_jobs.screening_form(looks_personal_or_secret.p_text) AS n) s;
END;

ALTER FUNCTION durable_jobs.looks_personal_or_secret(p_text text) OWNER TO postgres;

--
-- Name: operator_job_actions(bigint); Type: FUNCTION; Schema: durable_jobs; Owner: durable_job_audit_owner
--

CREATE FUNCTION durable_jobs.operator_job_actions(p_job_record_id bigint) RETURNS TABLE(action_kind text, acted_at timestamp with time zone, acted_by_role text, change_reason text, change_ticket text, change_approver text)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    IF p_job_record_id IS NULL THEN
        RAISE EXCEPTION 'job id is required' USING ERRCODE = 'LF003';
    END IF;
    RETURN QUERY
    SELECT a.action_kind, a.acted_at, a.acted_by_role, a.change_reason, a.change_ticket, a.change_approver
    FROM durable_jobs.job_action_record a
    WHERE a.job_record_id = p_job_record_id
    ORDER BY a.job_action_record_id;
END;
$$;

ALTER FUNCTION durable_jobs.operator_job_actions(p_job_record_id bigint) OWNER TO durable_job_audit_owner;

--
-- Name: operator_job_detail(bigint); Type: FUNCTION; Schema: durable_jobs; Owner: durable_job_audit_owner
--

CREATE FUNCTION durable_jobs.operator_job_detail(p_job_record_id bigint) RETURNS TABLE(job_record_id bigint, queue_name text, job_status text, attempt_number integer, max_attempts integer, lease_fencing_generation bigint, lease_expires_at timestamp with time zone, lease_renewal_count bigint, failure_reason_code text, run_after timestamp with time zone, created_at timestamp with time zone, status_changed_at timestamp with time zone)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    IF p_job_record_id IS NULL THEN
        RAISE EXCEPTION 'job id is required' USING ERRCODE = 'LF003';
    END IF;
    RETURN QUERY
    SELECT j.job_record_id, j.queue_name, j.job_status::text, j.attempt_number, j.max_attempts,
           j.lease_fencing_generation, j.lease_expires_at, j.lease_renewal_count, j.failure_reason_code,
           j.run_after, j.created_at, j.status_changed_at
    FROM durable_jobs.job_record j
    WHERE j.job_record_id = p_job_record_id;
END;
$$;

ALTER FUNCTION durable_jobs.operator_job_detail(p_job_record_id bigint) OWNER TO durable_job_audit_owner;

--
-- Name: operator_list_jobs(text, text, bigint, integer); Type: FUNCTION; Schema: durable_jobs; Owner: durable_job_audit_owner
--

CREATE FUNCTION durable_jobs.operator_list_jobs(p_queue_name text DEFAULT NULL::text, p_job_status text DEFAULT NULL::text, p_after_job_record_id bigint DEFAULT NULL::bigint, p_max_jobs integer DEFAULT 50) RETURNS TABLE(job_record_id bigint, queue_name text, job_status text, attempt_number integer, max_attempts integer, lease_fencing_generation bigint, lease_expires_at timestamp with time zone, lease_renewal_count bigint, failure_reason_code text, run_after timestamp with time zone, created_at timestamp with time zone, status_changed_at timestamp with time zone)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    IF p_queue_name IS NOT NULL THEN
        PERFORM durable_jobs.require_well_formed('queue_name', p_queue_name);
    END IF;
    IF p_job_status IS NOT NULL
       AND p_job_status <> ALL (pg_catalog.enum_range(NULL::durable_jobs.job_status_kind)::text[]) THEN
        RAISE EXCEPTION 'unknown job status' USING ERRCODE = 'LF003',
            HINT = 'job status must be one of QUEUED, RUNNING, RETRY_SCHEDULED, SUCCEEDED, FAILED, CANCELLED';
    END IF;
    IF p_max_jobs IS NULL OR p_max_jobs NOT BETWEEN 1 AND 1000 THEN
        RAISE EXCEPTION 'max jobs must be 1 to 1000' USING ERRCODE = 'LF003';
    END IF;
    RETURN QUERY
    SELECT j.job_record_id, j.queue_name, j.job_status::text, j.attempt_number, j.max_attempts,
           j.lease_fencing_generation, j.lease_expires_at, j.lease_renewal_count, j.failure_reason_code,
           j.run_after, j.created_at, j.status_changed_at
    FROM durable_jobs.job_record j
    WHERE (p_queue_name IS NULL OR j.queue_name = p_queue_name)
      AND (p_job_status IS NULL OR j.job_status::text = p_job_status)
      AND (p_after_job_record_id IS NULL OR j.job_record_id < p_after_job_record_id)
    ORDER BY j.job_record_id DESC
    LIMIT p_max_jobs;
END;
$$;

ALTER FUNCTION durable_jobs.operator_list_jobs(p_queue_name text, p_job_status text, p_after_job_record_id bigint, p_max_jobs integer) OWNER TO durable_job_audit_owner;

--
-- Name: pending_changes(boolean); Type: FUNCTION; Schema: durable_jobs; Owner: durable_job_policy_owner
--

CREATE FUNCTION durable_jobs.pending_changes(p_include_decided boolean DEFAULT false) RETURNS TABLE(change_id bigint, change_kind text, queue_name text, proposed_values jsonb, change_reason text, change_ticket text, proposed_by_role text, proposed_at timestamp with time zone, expires_at timestamp with time zone, change_state text, decided_by_role text, decided_at timestamp with time zone)
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    BEGIN ATOMIC
 SELECT c.change_id,
     c.change_kind,
     c.queue_name,
     c.proposed_values,
     c.change_reason,
     c.change_ticket,
     c.proposed_by_role,
     c.proposed_at,
     c.expires_at,
     COALESCE(c.change_decision,
         CASE
             WHEN (c.expires_at < clock_timestamp()) THEN 'expired'::text
             ELSE 'pending'::text
         END) AS "coalesce",
     c.decided_by_role,
     c.decided_at
    FROM durable_jobs.pending_change c
   WHERE ((c.change_decision IS NULL) OR COALESCE(pending_changes.p_include_decided, false))
   ORDER BY c.change_id DESC;
END;

ALTER FUNCTION durable_jobs.pending_changes(p_include_decided boolean) OWNER TO durable_job_policy_owner;

--
-- Name: policy_evidence_mismatches(); Type: FUNCTION; Schema: durable_jobs; Owner: durable_job_audit_owner
--

CREATE FUNCTION durable_jobs.policy_evidence_mismatches() RETURNS TABLE(queue_name text, mismatch text)
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    BEGIN ATOMIC
 WITH last_record AS (
          SELECT DISTINCT ON (e.queue_name) e.queue_name,
             e.new_values
            FROM durable_jobs.control_evidence_record e
           WHERE ((e.evidence_kind = 'lease_policy_changed'::text) AND (e.queue_name IS NOT NULL))
           ORDER BY e.queue_name, e.evidence_record_id DESC
         ), evidenced AS (
          SELECT l.queue_name,
             l.new_values,
             (COALESCE((l.new_values ->> 'policy_queue_name'::text),
                 CASE
                     WHEN (l.new_values ? 'policy_queue_name'::text) THEN NULL::text
                     ELSE l.queue_name
                 END) = l.queue_name) AS has_row
            FROM last_record l
         )
  SELECT COALESCE(p.queue_name, v.queue_name) AS "coalesce",
         CASE
             WHEN (v.queue_name IS NULL) THEN 'policy row has no evidence record'::text
             WHEN ((p.queue_name IS NULL) AND v.has_row) THEN 'policy row in the evidence is missing from the table'::text
             WHEN ((p.queue_name IS NOT NULL) AND (NOT v.has_row)) THEN 'policy row exists but the evidence says it was removed'::text
             ELSE 'policy differs from what its last evidence record says'::text
         END AS "case"
    FROM (durable_jobs.queue_lease_policy p
      FULL JOIN evidenced v ON ((v.queue_name = p.queue_name)))
   WHERE ((v.queue_name IS NULL) OR ((p.queue_name IS NULL) AND v.has_row) OR ((p.queue_name IS NOT NULL) AND (NOT v.has_row)) OR ((p.queue_name IS NOT NULL) AND ((((v.new_values ->> 'lease_duration'::text))::interval IS DISTINCT FROM p.lease_duration) OR (((v.new_values ->> 'renewal_interval'::text))::interval IS DISTINCT FROM p.renewal_interval) OR (((v.new_values ->> 'max_claim_lifetime'::text))::interval IS DISTINCT FROM p.max_claim_lifetime) OR (((v.new_values ->> 'renewal_enabled'::text))::boolean IS DISTINCT FROM p.renewal_enabled))))
   ORDER BY COALESCE(p.queue_name, v.queue_name);
END;

ALTER FUNCTION durable_jobs.policy_evidence_mismatches() OWNER TO durable_job_audit_owner;

--
-- Name: job_action_record; Type: TABLE; Schema: durable_jobs; Owner: postgres
--

CREATE TABLE durable_jobs.job_action_record (
    job_action_record_id bigint NOT NULL,
    job_record_id bigint NOT NULL,
    action_kind text NOT NULL,
    acted_by_role text DEFAULT SESSION_USER NOT NULL,
    acted_at timestamp with time zone DEFAULT clock_timestamp() NOT NULL,
    change_reason text,
    change_ticket text,
    change_approver text,
    CONSTRAINT job_action_record_kind CHECK ((action_kind = ANY (ARRAY['cancelled'::text, 'replayed'::text, 'payload_erased'::text])))
);

ALTER TABLE durable_jobs.job_action_record OWNER TO postgres;

--
-- Name: TABLE job_action_record; Type: COMMENT; Schema: durable_jobs; Owner: postgres
--

COMMENT ON TABLE durable_jobs.job_action_record IS 'Each job''s action trail: cancels, replays and payload erasures, with who, when, why, ticket and approver. Removed with the job.';

--
-- Name: processing_counts(timestamp with time zone, timestamp with time zone); Type: FUNCTION; Schema: durable_jobs; Owner: durable_job_audit_owner
--

CREATE FUNCTION durable_jobs.processing_counts(p_since timestamp with time zone, p_until timestamp with time zone) RETURNS TABLE(queue_name text, enqueued bigint, succeeded bigint, retried bigint, failed bigint, cancelled bigint, replayed bigint)
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    BEGIN ATOMIC
 WITH events AS (
          SELECT j.queue_name,
             'enqueued'::text AS event
            FROM durable_jobs.job_record j
           WHERE (((processing_counts.p_since IS NULL) OR (j.created_at >= processing_counts.p_since)) AND ((processing_counts.p_until IS NULL) OR (j.created_at < processing_counts.p_until)))
         UNION ALL
          SELECT j.queue_name,
             (l.outcome_status)::text AS outcome_status
            FROM (durable_jobs.job_outcome_ledger l
              JOIN durable_jobs.job_record j ON ((j.job_record_id = l.job_record_id)))
           WHERE (((processing_counts.p_since IS NULL) OR (l.recorded_at >= processing_counts.p_since)) AND ((processing_counts.p_until IS NULL) OR (l.recorded_at < processing_counts.p_until)))
         UNION ALL
          SELECT j.queue_name,
             a.action_kind
            FROM (durable_jobs.job_action_record a
              JOIN durable_jobs.job_record j ON ((j.job_record_id = a.job_record_id)))
           WHERE ((a.action_kind = ANY (ARRAY['cancelled'::text, 'replayed'::text])) AND ((processing_counts.p_since IS NULL) OR (a.acted_at >= processing_counts.p_since)) AND ((processing_counts.p_until IS NULL) OR (a.acted_at < processing_counts.p_until)))
         )
  SELECT e.queue_name,
     count(*) FILTER (WHERE (e.event = 'enqueued'::text)) AS count,
     count(*) FILTER (WHERE (e.event = 'SUCCEEDED'::text)) AS count,
     count(*) FILTER (WHERE (e.event = 'RETRY_SCHEDULED'::text)) AS count,
     count(*) FILTER (WHERE (e.event = 'FAILED'::text)) AS count,
     count(*) FILTER (WHERE (e.event = 'cancelled'::text)) AS count,
     count(*) FILTER (WHERE (e.event = 'replayed'::text)) AS count
    FROM events e
   GROUP BY e.queue_name
   ORDER BY e.queue_name;
END;

ALTER FUNCTION durable_jobs.processing_counts(p_since timestamp with time zone, p_until timestamp with time zone) OWNER TO durable_job_audit_owner;

--
-- Name: propose_change(text, text, jsonb, text, text); Type: FUNCTION; Schema: durable_jobs; Owner: durable_job_policy_owner
--

CREATE FUNCTION durable_jobs.propose_change(p_change_kind text, p_queue_name text, p_proposed_values jsonb, p_change_reason text, p_change_ticket text DEFAULT NULL::text) RETURNS bigint
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET lock_timeout TO '10s'
    SET "IntervalStyle" TO 'postgres'
    SET "DateStyle" TO 'ISO, MDY'
    SET "TimeZone" TO 'UTC'
    AS $$
DECLARE
    v_allowed text[] := CASE p_change_kind
        WHEN 'lease_policy' THEN ARRAY['lease_duration', 'renewal_interval', 'max_claim_lifetime', 'renewal_enabled']
        WHEN 'retention_policy' THEN ARRAY['payload_retention', 'record_retention']
        WHEN 'change_control' THEN ARRAY['ticket_pattern', 'require_approver', 'approver_must_differ', 'reason_pattern',
                                         'require_second_operator', 'proposal_lifetime'] END;
    v_setting durable_jobs.change_control_setting;
    v_change_id bigint;
    v_expires_at timestamptz;
BEGIN
    IF v_allowed IS NULL OR pg_catalog.jsonb_typeof(p_proposed_values) IS DISTINCT FROM 'object'
       OR EXISTS (SELECT 1 FROM pg_catalog.jsonb_object_keys(p_proposed_values) k WHERE k <> ALL (v_allowed))
       OR (p_change_kind = 'change_control') <> (p_queue_name IS NULL)
       OR (p_change_kind = 'change_control' AND NOT p_proposed_values ?& v_allowed)
       OR (p_change_kind = 'retention_policy' AND NOT p_proposed_values ?& v_allowed)
       OR p_proposed_values = '{}' THEN
        RAISE EXCEPTION 'invalid proposal' USING ERRCODE = 'LF003',
            DETAIL = 'Need a kind (lease_policy or retention_policy for a queue, change_control for none) and its values: see durable_jobs.propose_change.';
    END IF;
    IF p_queue_name IS DISTINCT FROM '*' AND p_queue_name IS NOT NULL THEN
        PERFORM durable_jobs.require_well_formed('queue_name', p_queue_name);
    END IF;
    BEGIN
        PERFORM (p_proposed_values ->> 'lease_duration')::interval, (p_proposed_values ->> 'renewal_interval')::interval,
                (p_proposed_values ->> 'max_claim_lifetime')::interval, (p_proposed_values ->> 'renewal_enabled')::boolean,
                (p_proposed_values ->> 'payload_retention')::interval, (p_proposed_values ->> 'record_retention')::interval,
                (p_proposed_values ->> 'require_approver')::boolean, (p_proposed_values ->> 'approver_must_differ')::boolean,
                (p_proposed_values ->> 'require_second_operator')::boolean,
                (p_proposed_values ->> 'proposal_lifetime')::interval;
    EXCEPTION WHEN invalid_datetime_format OR invalid_text_representation OR datetime_field_overflow
                   OR interval_field_overflow THEN
        RAISE EXCEPTION 'invalid proposal' USING ERRCODE = 'LF003',
            DETAIL = 'A duration or a switch of the proposal is not one.';
    END;
    IF p_change_kind = 'change_control' THEN
        PERFORM durable_jobs.require_valid_change_control(p_proposed_values ->> 'ticket_pattern',
            (p_proposed_values ->> 'require_approver')::boolean, (p_proposed_values ->> 'approver_must_differ')::boolean,
            p_proposed_values ->> 'reason_pattern', (p_proposed_values ->> 'require_second_operator')::boolean,
            (p_proposed_values ->> 'proposal_lifetime')::interval);
    END IF;
    PERFORM durable_jobs.lock_evidence_order();
    SELECT s.* INTO STRICT v_setting FROM durable_jobs.change_control_setting s;
    v_expires_at := pg_catalog.clock_timestamp() + v_setting.proposal_lifetime;
    -- The approver and the second operator come with the approval.
    v_setting.require_approver := false;
    v_setting.require_second_operator := false;
    PERFORM durable_jobs.check_change_record(v_setting, p_change_reason, p_change_ticket, NULL);
    INSERT INTO durable_jobs.pending_change (change_kind, queue_name, proposed_values, change_reason, change_ticket, expires_at)
    VALUES (p_change_kind, p_queue_name, p_proposed_values, p_change_reason, p_change_ticket, v_expires_at)
    RETURNING change_id INTO v_change_id;
    INSERT INTO durable_jobs.control_evidence_record
        (evidence_kind, queue_name, previous_values, new_values, change_reason, change_ticket, change_approver)
    VALUES ('change_proposed', p_queue_name, NULL,
            pg_catalog.jsonb_build_object('change_id', v_change_id, 'change_kind', p_change_kind,
                'proposed_values', p_proposed_values, 'expires_at', v_expires_at),
            p_change_reason, p_change_ticket, NULL);
    RETURN v_change_id;
END;
$$;

ALTER FUNCTION durable_jobs.propose_change(p_change_kind text, p_queue_name text, p_proposed_values jsonb, p_change_reason text, p_change_ticket text) OWNER TO durable_job_policy_owner;

--
-- Name: purge_expired_job_data(integer); Type: FUNCTION; Schema: durable_jobs; Owner: durable_job_retention_owner
--

CREATE FUNCTION durable_jobs.purge_expired_job_data(p_batch_size integer) RETURNS TABLE(queue_name text, purge_kind text, purged_count bigint)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    v_now timestamptz := pg_catalog.clock_timestamp();
    v_counts jsonb;
    v_left integer;
    v_rows jsonb := '[]'::jsonb;
BEGIN
    IF p_batch_size IS NULL OR p_batch_size NOT BETWEEN 1 AND 10000 THEN
        RAISE EXCEPTION 'batch size must be 1 to 10000' USING ERRCODE = 'LF003';
    END IF;

    WITH doomed AS (
        SELECT j.job_record_id
        FROM durable_jobs.job_record j
        LEFT JOIN durable_jobs.queue_retention_policy q ON q.queue_name = j.queue_name
        LEFT JOIN durable_jobs.queue_retention_policy d ON d.queue_name = '*'
        WHERE j.job_status IN ('SUCCEEDED', 'FAILED', 'CANCELLED')
          -- The latest cutoff of any policy, once for the statement: an
          -- index condition on job_record_finished_by_age, so the scan ends
          -- at the last row any policy could make due instead of reading
          -- every finished row (the per-queue cutoff below is a join
          -- filter); NULL, and nothing read, when there is no policy.
          AND j.status_changed_at < (SELECT pg_catalog.max(LEAST(v_now - b.record_retention, v_now - interval '1 hour'))
                                     FROM durable_jobs.queue_retention_policy b)
          AND j.status_changed_at < LEAST(v_now - COALESCE(q.record_retention, d.record_retention),
                                          v_now - interval '1 hour')
        ORDER BY j.status_changed_at
        LIMIT p_batch_size
        FOR UPDATE OF j SKIP LOCKED
    ), gone AS (
        DELETE FROM durable_jobs.job_record j
        USING doomed
        WHERE j.job_record_id = doomed.job_record_id
        RETURNING j.queue_name
    ), gone_payloads AS (
        -- Since migration 019 no foreign key deletes these with the job:
        -- its payload and outcome ledger rows go in the same statement.
        DELETE FROM durable_jobs.job_payload_record pr
        USING doomed
        WHERE pr.job_record_id = doomed.job_record_id
    ), gone_outcomes AS (
        DELETE FROM durable_jobs.job_outcome_ledger l
        USING doomed
        WHERE l.job_record_id = doomed.job_record_id
    )
    SELECT COALESCE(pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object('queue_name', c.queue_name,
               'purge_kind', 'job_record', 'purged_count', c.n) ORDER BY c.queue_name), '[]')
    INTO v_counts
    FROM (SELECT gone.queue_name, pg_catalog.count(*) AS n FROM gone GROUP BY gone.queue_name) c;
    v_rows := v_rows || v_counts;
    v_left := p_batch_size - (SELECT COALESCE(pg_catalog.sum((e ->> 'purged_count')::bigint), 0)
                              FROM pg_catalog.jsonb_array_elements(v_counts) e)::integer;

    IF v_left > 0 THEN
        WITH doomed AS (
            SELECT j.job_record_id, j.queue_name
            FROM durable_jobs.job_record j
            LEFT JOIN durable_jobs.queue_retention_policy q ON q.queue_name = j.queue_name
            LEFT JOIN durable_jobs.queue_retention_policy d ON d.queue_name = '*'
            WHERE j.job_status IN ('SUCCEEDED', 'FAILED', 'CANCELLED')
              -- the latest payload cutoff of any policy, as above
              AND j.status_changed_at < (SELECT pg_catalog.max(LEAST(v_now - b.payload_retention, v_now - interval '1 hour'))
                                         FROM durable_jobs.queue_retention_policy b)
              AND j.status_changed_at < LEAST(v_now - COALESCE(q.payload_retention, d.payload_retention),
                                              v_now - interval '1 hour')
              AND EXISTS (SELECT 1 FROM durable_jobs.job_payload_record pr WHERE pr.job_record_id = j.job_record_id)
            ORDER BY j.status_changed_at
            LIMIT v_left
            FOR UPDATE OF j SKIP LOCKED
        ), gone_payload AS (
            DELETE FROM durable_jobs.job_payload_record pr
            USING doomed
            WHERE pr.job_record_id = doomed.job_record_id
            RETURNING pr.job_record_id
        ), cleared AS (
            UPDATE durable_jobs.job_outcome_ledger l
            SET result_document = NULL
            FROM doomed
            WHERE l.job_record_id = doomed.job_record_id
            RETURNING l.job_record_id
        )
        SELECT COALESCE(pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object('queue_name', c.queue_name,
                   'purge_kind', 'payload', 'purged_count', c.n) ORDER BY c.queue_name), '[]')
        INTO v_counts
        FROM (SELECT doomed.queue_name, pg_catalog.count(*) AS n
              FROM doomed JOIN gone_payload ON gone_payload.job_record_id = doomed.job_record_id
              GROUP BY doomed.queue_name) c;
        v_rows := v_rows || v_counts;
    END IF;

    IF pg_catalog.jsonb_array_length(v_rows) > 0 THEN
        PERFORM durable_jobs.lock_evidence_order();
        INSERT INTO durable_jobs.control_evidence_record (evidence_kind, queue_name, previous_values, new_values, change_reason)
        VALUES ('job_data_purged', NULL, NULL,
                pg_catalog.jsonb_build_object('batch_size', p_batch_size, 'purged', v_rows),
                'retention policy applied by purge_expired_job_data');
    END IF;

    RETURN QUERY
    SELECT e ->> 'queue_name', e ->> 'purge_kind', (e ->> 'purged_count')::bigint
    FROM pg_catalog.jsonb_array_elements(v_rows) e;
END;
$$;

ALTER FUNCTION durable_jobs.purge_expired_job_data(p_batch_size integer) OWNER TO durable_job_retention_owner;

--
-- Name: queue_backlog(); Type: FUNCTION; Schema: durable_jobs; Owner: durable_job_audit_owner
--

CREATE FUNCTION durable_jobs.queue_backlog() RETURNS TABLE(queue_name text, queued bigint, running bigint, retry_scheduled bigint, failed_last_hour bigint, oldest_due_age interval, database_time timestamp with time zone)
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET "TimeZone" TO 'UTC'
    SET enable_seqscan TO 'off'
    BEGIN ATOMIC
 WITH waiting AS (
          SELECT j.queue_name,
             count(*) FILTER (WHERE (j.job_status = 'QUEUED'::durable_jobs.job_status_kind)) AS queued,
             count(*) FILTER (WHERE (j.job_status = 'RETRY_SCHEDULED'::durable_jobs.job_status_kind)) AS retry_scheduled,
             min(j.run_after) FILTER (WHERE (j.run_after <= statement_timestamp())) AS oldest_due
            FROM durable_jobs.job_record j
           WHERE (j.job_status = ANY (ARRAY['QUEUED'::durable_jobs.job_status_kind, 'RETRY_SCHEDULED'::durable_jobs.job_status_kind]))
           GROUP BY j.queue_name
         ), running AS (
          SELECT j.queue_name,
             count(*) AS running
            FROM durable_jobs.job_record j
           WHERE (j.job_status = 'RUNNING'::durable_jobs.job_status_kind)
           GROUP BY j.queue_name
         ), failed AS (
          SELECT j.queue_name,
             count(*) AS failed
            FROM durable_jobs.job_record j
           WHERE ((j.job_status = 'FAILED'::durable_jobs.job_status_kind) AND (j.status_changed_at >= (statement_timestamp() - '01:00:00'::interval)))
           GROUP BY j.queue_name
         ), queues AS (
          SELECT p.queue_name
            FROM durable_jobs.queue_lease_policy p
         UNION
          SELECT w_1.queue_name
            FROM waiting w_1
         UNION
          SELECT ru_1.queue_name
            FROM running ru_1
         UNION
          SELECT f_1.queue_name
            FROM failed f_1
         )
  SELECT q.queue_name,
     COALESCE(w.queued, (0)::bigint) AS "coalesce",
     COALESCE(ru.running, (0)::bigint) AS "coalesce",
     COALESCE(w.retry_scheduled, (0)::bigint) AS "coalesce",
     COALESCE(f.failed, (0)::bigint) AS "coalesce",
     (statement_timestamp() - w.oldest_due),
     statement_timestamp() AS statement_timestamp
    FROM (((queues q
      LEFT JOIN waiting w ON ((w.queue_name = q.queue_name)))
      LEFT JOIN running ru ON ((ru.queue_name = q.queue_name)))
      LEFT JOIN failed f ON ((f.queue_name = q.queue_name)))
   ORDER BY q.queue_name;
END;

ALTER FUNCTION durable_jobs.queue_backlog() OWNER TO durable_job_audit_owner;

--
-- Name: queue_lease_policies(); Type: FUNCTION; Schema: durable_jobs; Owner: durable_job_audit_owner
--

CREATE FUNCTION durable_jobs.queue_lease_policies() RETURNS TABLE(queue_name text, lease_duration interval, renewal_interval interval, max_claim_lifetime interval, renewal_enabled boolean, changed_at timestamp with time zone, changed_by_role text)
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    BEGIN ATOMIC
 SELECT p.queue_name,
     p.lease_duration,
     p.renewal_interval,
     p.max_claim_lifetime,
     p.renewal_enabled,
     p.changed_at,
     p.changed_by_role
    FROM durable_jobs.queue_lease_policy p
   ORDER BY p.queue_name;
END;

ALTER FUNCTION durable_jobs.queue_lease_policies() OWNER TO durable_job_audit_owner;

--
-- Name: queue_name_is_well_formed(text); Type: FUNCTION; Schema: durable_jobs; Owner: postgres
--

CREATE FUNCTION durable_jobs.queue_name_is_well_formed(p_queue_name text) RETURNS boolean
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN ((octet_length(p_queue_name) <= 63) AND ((p_queue_name COLLATE "C") ~ '^[a-z][a-z0-9_.:-]*$'::text));

ALTER FUNCTION durable_jobs.queue_name_is_well_formed(p_queue_name text) OWNER TO postgres;

--
-- Name: queue_name_pattern(); Type: FUNCTION; Schema: durable_jobs; Owner: postgres
--

CREATE FUNCTION durable_jobs.queue_name_pattern() RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN '^[a-z][a-z0-9_.:-]{0,62}$'::text;

ALTER FUNCTION durable_jobs.queue_name_pattern() OWNER TO postgres;

--
-- Name: queue_next_due_in(text); Type: FUNCTION; Schema: durable_jobs; Owner: durable_job_claim_owner
--

CREATE FUNCTION durable_jobs.queue_next_due_in(p_queue_name text) RETURNS interval
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    v_next timestamptz;
    v_now timestamptz;
BEGIN
    IF p_queue_name IS NULL OR pg_catalog.pg_collation_for(p_queue_name) NOT IN ('"default"', '"C"', '"POSIX"')
       OR NOT durable_jobs.queue_name_is_well_formed(p_queue_name) THEN
        PERFORM durable_jobs.require_well_formed('queue_name', p_queue_name);
    END IF;
    SELECT j.run_after INTO v_next
    FROM durable_jobs.job_record j
    WHERE j.queue_name = p_queue_name AND j.job_status IN ('QUEUED', 'RETRY_SCHEDULED')
    ORDER BY j.run_after
    LIMIT 1;
    v_now := pg_catalog.clock_timestamp();
    RETURN CASE WHEN v_next > v_now THEN pg_catalog.make_interval(secs => pg_catalog.date_part('epoch', v_next - v_now))
                WHEN v_next IS NOT NULL THEN interval '0' END;
END;
$$;

ALTER FUNCTION durable_jobs.queue_next_due_in(p_queue_name text) OWNER TO durable_job_claim_owner;

--
-- Name: queue_retention_policies(); Type: FUNCTION; Schema: durable_jobs; Owner: durable_job_retention_owner
--

CREATE FUNCTION durable_jobs.queue_retention_policies() RETURNS TABLE(queue_name text, payload_retention interval, record_retention interval, changed_at timestamp with time zone, changed_by_role text)
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    BEGIN ATOMIC
 SELECT p.queue_name,
     p.payload_retention,
     p.record_retention,
     p.changed_at,
     p.changed_by_role
    FROM durable_jobs.queue_retention_policy p
   ORDER BY p.queue_name;
END;

ALTER FUNCTION durable_jobs.queue_retention_policies() OWNER TO durable_job_retention_owner;

--
-- Name: raise_stale_claim(); Type: FUNCTION; Schema: durable_jobs; Owner: postgres
--

CREATE FUNCTION durable_jobs.raise_stale_claim() RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    RAISE EXCEPTION USING
        ERRCODE = 'LF001',
        MESSAGE = 'stale claim: the lease is expired, cancelled, terminal, superseded or not yours',
        HINT = 'Stop work on this job and roll back; only claim_next_job creates ownership.';
END;
$$;

ALTER FUNCTION durable_jobs.raise_stale_claim() OWNER TO postgres;

--
-- Name: record_change_control_change(); Type: FUNCTION; Schema: durable_jobs; Owner: durable_job_policy_owner
--

CREATE FUNCTION durable_jobs.record_change_control_change() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET lock_timeout TO '10s'
    SET "IntervalStyle" TO 'postgres'
    AS $$
DECLARE
    v_reason text := COALESCE(NULLIF(pg_catalog.current_setting('leasefence.change_reason', true), ''),
                              'direct table change without a reason');
    v_ticket text := NULLIF(pg_catalog.current_setting('leasefence.change_ticket', true), '');
    v_approver text := NULLIF(pg_catalog.current_setting('leasefence.change_approver', true), '');
BEGIN
    PERFORM durable_jobs.lock_evidence_order();
    PERFORM durable_jobs.check_change_record(OLD, v_reason, v_ticket, v_approver);
    INSERT INTO durable_jobs.control_evidence_record
        (evidence_kind, queue_name, previous_values, new_values, change_reason, change_ticket, change_approver)
    VALUES ('change_control_changed', NULL,
            pg_catalog.jsonb_build_object('ticket_pattern', OLD.ticket_pattern, 'require_approver', OLD.require_approver,
                'approver_must_differ', OLD.approver_must_differ, 'reason_pattern', OLD.reason_pattern,
                'require_second_operator', OLD.require_second_operator, 'proposal_lifetime', OLD.proposal_lifetime),
            pg_catalog.jsonb_build_object('ticket_pattern', NEW.ticket_pattern, 'require_approver', NEW.require_approver,
                'approver_must_differ', NEW.approver_must_differ, 'reason_pattern', NEW.reason_pattern,
                'require_second_operator', NEW.require_second_operator, 'proposal_lifetime', NEW.proposal_lifetime),
            v_reason, v_ticket, v_approver);
    RETURN NULL;
END;
$$;

ALTER FUNCTION durable_jobs.record_change_control_change() OWNER TO durable_job_policy_owner;

--
-- Name: record_deployment(text, text, text, text, text); Type: FUNCTION; Schema: durable_jobs; Owner: durable_job_policy_owner
--

CREATE FUNCTION durable_jobs.record_deployment(p_deployment_version text, p_source_digest text, p_deployed_by text, p_change_ticket text, p_change_reason text) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET lock_timeout TO '10s'
    AS $_$
BEGIN
    IF p_deployment_version IS NULL OR p_deployment_version !~ '^[A-Za-z0-9][A-Za-z0-9._+-]{0,63}$'
       OR p_source_digest IS NULL OR p_source_digest !~ '^([0-9a-f]{40}|[0-9a-f]{64}|sha256:[0-9a-f]{64})$'
       OR p_deployed_by IS NULL OR p_deployed_by !~ '^[a-z][a-z0-9._-]{0,62}$'
       OR p_change_ticket IS NULL THEN
        RAISE EXCEPTION 'invalid deployment record' USING ERRCODE = 'LF002',
            DETAIL = 'Need a version matching ^[A-Za-z0-9][A-Za-z0-9._+-]{0,63}$, a commit (40 or 64 hex digits) or '
                  || 'artifact digest (sha256:<64 hex digits>), a person handle matching ^[a-z][a-z0-9._-]{0,62}$ and a ticket.';
    END IF;
    PERFORM durable_jobs.require_structured_change(p_change_reason, p_change_ticket, NULL);
    PERFORM durable_jobs.lock_evidence_order();
    INSERT INTO durable_jobs.control_evidence_record
        (evidence_kind, queue_name, previous_values, new_values, change_reason, change_ticket)
    VALUES ('deployment_recorded', NULL, NULL,
            pg_catalog.jsonb_build_object('deployment_version', p_deployment_version, 'source_digest', p_source_digest,
                                          'deployed_by', p_deployed_by),
            p_change_reason, p_change_ticket);
END;
$_$;

ALTER FUNCTION durable_jobs.record_deployment(p_deployment_version text, p_source_digest text, p_deployed_by text, p_change_ticket text, p_change_reason text) OWNER TO durable_job_policy_owner;

--
-- Name: record_deployment_version(text, text); Type: FUNCTION; Schema: durable_jobs; Owner: durable_job_policy_owner
--

CREATE FUNCTION durable_jobs.record_deployment_version(p_deployment_version text, p_change_reason text) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET lock_timeout TO '10s'
    AS $_$
BEGIN
    IF p_deployment_version IS NULL OR p_deployment_version !~ '^[A-Za-z0-9][A-Za-z0-9._+-]{0,63}$' THEN
        RAISE EXCEPTION 'malformed deployment version' USING ERRCODE = 'LF003',
            HINT = 'deployment version must match ^[A-Za-z0-9][A-Za-z0-9._+-]{0,63}$';
    END IF;
    IF p_change_reason IS NULL OR NOT durable_jobs.is_plain_change_reason(p_change_reason) THEN
        RAISE EXCEPTION 'change reason must be 1 to 500 characters, not blank, without control or bidirectional-control characters'
            USING ERRCODE = 'LF003';
    END IF;
    PERFORM durable_jobs.require_structured_change(p_change_reason, NULL, NULL);
    PERFORM durable_jobs.lock_evidence_order();
    INSERT INTO durable_jobs.control_evidence_record (evidence_kind, queue_name, previous_values, new_values, change_reason)
    VALUES ('deployment_recorded', NULL, NULL,
            pg_catalog.jsonb_build_object('deployment_version', p_deployment_version), p_change_reason);
END;
$_$;

ALTER FUNCTION durable_jobs.record_deployment_version(p_deployment_version text, p_change_reason text) OWNER TO durable_job_policy_owner;

--
-- Name: record_job_action(bigint, text, text, text, text, text, text, text); Type: FUNCTION; Schema: durable_jobs; Owner: durable_job_retention_owner
--

CREATE FUNCTION durable_jobs.record_job_action(p_job_record_id bigint, p_queue_name text, p_action_kind text, p_previous_status text, p_new_status text, p_change_reason text, p_change_ticket text, p_change_approver text) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    IF p_change_reason IS NOT NULL THEN
        PERFORM durable_jobs.require_structured_change(p_change_reason, p_change_ticket, p_change_approver);
        INSERT INTO durable_jobs.control_evidence_record
            (evidence_kind, queue_name, previous_values, new_values, change_reason, change_ticket, change_approver)
        VALUES ('job_' || p_action_kind, p_queue_name, pg_catalog.jsonb_build_object('job_status', p_previous_status),
                pg_catalog.jsonb_build_object('job_status', p_new_status), p_change_reason, p_change_ticket,
                p_change_approver);
    END IF;
    INSERT INTO durable_jobs.job_action_record (job_record_id, action_kind, change_reason, change_ticket, change_approver)
    VALUES (p_job_record_id, p_action_kind, p_change_reason, p_change_ticket, p_change_approver);
END;
$$;

ALTER FUNCTION durable_jobs.record_job_action(p_job_record_id bigint, p_queue_name text, p_action_kind text, p_previous_status text, p_new_status text, p_change_reason text, p_change_ticket text, p_change_approver text) OWNER TO durable_job_retention_owner;

--
-- Name: record_lease_outcome(text, text, bigint); Type: FUNCTION; Schema: durable_jobs; Owner: postgres
--

CREATE FUNCTION durable_jobs.record_lease_outcome(p_queue_name text, p_outcome_kind text, p_outcome_count bigint) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET "TimeZone" TO 'UTC'
    AS $$
DECLARE
    v_minute timestamptz := pg_catalog.date_trunc('minute', pg_catalog.clock_timestamp(), 'UTC');
BEGIN
    INSERT INTO durable_jobs.lease_outcome_tally AS t
        (tally_minute, queue_name, outcome_kind, tally_backend_pid, counted_by_role, outcome_count)
    VALUES (v_minute, p_queue_name, p_outcome_kind, pg_catalog.pg_backend_pid(), SESSION_USER, p_outcome_count)
    ON CONFLICT (tally_minute, queue_name, outcome_kind, tally_backend_pid, counted_by_role)
    DO UPDATE SET outcome_count = t.outcome_count + EXCLUDED.outcome_count;

    DELETE FROM durable_jobs.lease_outcome_tally t
    WHERE (t.tally_minute, t.queue_name, t.outcome_kind, t.tally_backend_pid, t.counted_by_role) IN (
        SELECT o.tally_minute, o.queue_name, o.outcome_kind, o.tally_backend_pid, o.counted_by_role
        FROM durable_jobs.lease_outcome_tally o
        WHERE o.tally_minute < v_minute - interval '30 days'
        ORDER BY o.tally_minute
        LIMIT 16
        FOR UPDATE SKIP LOCKED);
END;
$$;

ALTER FUNCTION durable_jobs.record_lease_outcome(p_queue_name text, p_outcome_kind text, p_outcome_count bigint) OWNER TO postgres;

--
-- Name: record_policy_change(); Type: FUNCTION; Schema: durable_jobs; Owner: durable_job_policy_owner
--

CREATE FUNCTION durable_jobs.record_policy_change() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET lock_timeout TO '10s'
    SET "IntervalStyle" TO 'postgres'
    SET "DateStyle" TO 'ISO, MDY'
    SET "TimeZone" TO 'UTC'
    SET extra_float_digits TO '1'
    AS $$
DECLARE
    v_reason text := COALESCE(NULLIF(pg_catalog.current_setting('leasefence.change_reason', true), ''),
                              'direct table change without a reason');
    v_ticket text := NULLIF(pg_catalog.current_setting('leasefence.change_ticket', true), '');
    v_approver text := NULLIF(pg_catalog.current_setting('leasefence.change_approver', true), '');
    v_queue text;
    v_previous jsonb;
    v_previous_enabled boolean;
    v_new jsonb;
    v_new_enabled boolean;
BEGIN
    PERFORM durable_jobs.require_structured_change(v_reason, v_ticket, v_approver);
    PERFORM durable_jobs.lock_evidence_order();
    IF TG_OP = 'INSERT' THEN
        v_queue := NEW.queue_name;
        SELECT pg_catalog.jsonb_build_object('policy_queue_name', p.queue_name, 'lease_duration', p.lease_duration,
                   'renewal_interval', p.renewal_interval, 'max_claim_lifetime', p.max_claim_lifetime,
                   'renewal_enabled', p.renewal_enabled), p.renewal_enabled
        INTO v_previous, v_previous_enabled
        FROM durable_jobs.queue_lease_policy p
        WHERE p.queue_name = '*' AND v_queue <> '*';
    ELSE
        v_queue := OLD.queue_name;
        v_previous := pg_catalog.jsonb_build_object('policy_queue_name', OLD.queue_name,
            'lease_duration', OLD.lease_duration, 'renewal_interval', OLD.renewal_interval,
            'max_claim_lifetime', OLD.max_claim_lifetime, 'renewal_enabled', OLD.renewal_enabled);
        v_previous_enabled := OLD.renewal_enabled;
    END IF;
    IF TG_OP = 'DELETE' THEN
        SELECT pg_catalog.jsonb_build_object('policy_queue_name', p.queue_name, 'lease_duration', p.lease_duration,
                   'renewal_interval', p.renewal_interval, 'max_claim_lifetime', p.max_claim_lifetime,
                   'renewal_enabled', p.renewal_enabled), p.renewal_enabled
        INTO v_new, v_new_enabled
        FROM durable_jobs.queue_lease_policy p
        WHERE p.queue_name = '*' AND v_queue <> '*';
        v_new := COALESCE(v_new, pg_catalog.jsonb_build_object('policy_queue_name', NULL));
    ELSE
        v_new := pg_catalog.jsonb_build_object('policy_queue_name', NEW.queue_name,
            'lease_duration', NEW.lease_duration, 'renewal_interval', NEW.renewal_interval,
            'max_claim_lifetime', NEW.max_claim_lifetime, 'renewal_enabled', NEW.renewal_enabled);
        v_new_enabled := NEW.renewal_enabled;
    END IF;

    INSERT INTO durable_jobs.control_evidence_record
        (evidence_kind, queue_name, previous_values, new_values, change_reason, change_ticket, change_approver)
    VALUES ('lease_policy_changed', v_queue, v_previous, v_new, v_reason, v_ticket, v_approver);
    IF v_previous_enabled IS DISTINCT FROM v_new_enabled THEN
        INSERT INTO durable_jobs.control_evidence_record
            (evidence_kind, queue_name, previous_values, new_values, change_reason, change_ticket, change_approver)
        VALUES ('renewal_enablement_changed', v_queue,
                pg_catalog.jsonb_build_object('renewal_enabled', v_previous_enabled),
                pg_catalog.jsonb_build_object('renewal_enabled', v_new_enabled), v_reason, v_ticket, v_approver);
    END IF;
    RETURN NULL;
END;
$$;

ALTER FUNCTION durable_jobs.record_policy_change() OWNER TO durable_job_policy_owner;

--
-- Name: record_retention_policy_change(); Type: FUNCTION; Schema: durable_jobs; Owner: durable_job_retention_owner
--

CREATE FUNCTION durable_jobs.record_retention_policy_change() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET lock_timeout TO '10s'
    SET "IntervalStyle" TO 'postgres'
    SET "DateStyle" TO 'ISO, MDY'
    SET "TimeZone" TO 'UTC'
    SET extra_float_digits TO '1'
    AS $$
DECLARE
    v_reason text := COALESCE(NULLIF(pg_catalog.current_setting('leasefence.change_reason', true), ''),
                              'direct table change without a reason');
    v_ticket text := NULLIF(pg_catalog.current_setting('leasefence.change_ticket', true), '');
    v_approver text := NULLIF(pg_catalog.current_setting('leasefence.change_approver', true), '');
    v_queue text;
    v_previous jsonb;
    v_new jsonb;
BEGIN
    PERFORM durable_jobs.require_structured_change(v_reason, v_ticket, v_approver);
    IF TG_OP = 'INSERT' THEN
        v_queue := NEW.queue_name;
        SELECT pg_catalog.jsonb_build_object('policy_queue_name', p.queue_name,
                   'payload_retention', p.payload_retention, 'record_retention', p.record_retention)
        INTO v_previous
        FROM durable_jobs.queue_retention_policy p
        WHERE p.queue_name = '*' AND v_queue <> '*';
    ELSE
        v_queue := OLD.queue_name;
        v_previous := pg_catalog.jsonb_build_object('policy_queue_name', OLD.queue_name,
            'payload_retention', OLD.payload_retention, 'record_retention', OLD.record_retention);
    END IF;
    IF TG_OP = 'DELETE' THEN
        SELECT pg_catalog.jsonb_build_object('policy_queue_name', p.queue_name,
                   'payload_retention', p.payload_retention, 'record_retention', p.record_retention)
        INTO v_new
        FROM durable_jobs.queue_retention_policy p
        WHERE p.queue_name = '*' AND v_queue <> '*';
        v_new := COALESCE(v_new, pg_catalog.jsonb_build_object('policy_queue_name', NULL));
    ELSE
        v_new := pg_catalog.jsonb_build_object('policy_queue_name', NEW.queue_name,
            'payload_retention', NEW.payload_retention, 'record_retention', NEW.record_retention);
    END IF;
    INSERT INTO durable_jobs.control_evidence_record
        (evidence_kind, queue_name, previous_values, new_values, change_reason, change_ticket, change_approver)
    VALUES ('retention_policy_changed', v_queue, v_previous, v_new, v_reason, v_ticket, v_approver);
    RETURN NULL;
END;
$$;

ALTER FUNCTION durable_jobs.record_retention_policy_change() OWNER TO durable_job_retention_owner;

--
-- Name: record_stale_call(bigint, text); Type: FUNCTION; Schema: durable_jobs; Owner: postgres
--

CREATE FUNCTION durable_jobs.record_stale_call(p_job_record_id bigint, p_outcome_kind text) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    PERFORM durable_jobs.record_stale_calls(ARRAY[p_job_record_id], p_outcome_kind);
END;
$$;

ALTER FUNCTION durable_jobs.record_stale_call(p_job_record_id bigint, p_outcome_kind text) OWNER TO postgres;

--
-- Name: record_stale_calls(bigint[], text); Type: FUNCTION; Schema: durable_jobs; Owner: postgres
--

CREATE FUNCTION durable_jobs.record_stale_calls(p_job_record_ids bigint[], p_outcome_kind text) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    v_charge record;
BEGIN
    FOR v_charge IN
        SELECT COALESCE(j.queue_name, '*') AS charged_queue, pg_catalog.count(*) AS charged_calls
        FROM pg_catalog.unnest(p_job_record_ids) AS s(stale_job_id)
        LEFT JOIN durable_jobs.job_record j
               ON j.job_record_id = s.stale_job_id AND j.lease_claimed_by_role = SESSION_USER
        GROUP BY 1
        ORDER BY 1
    LOOP
        PERFORM durable_jobs.record_lease_outcome(v_charge.charged_queue, p_outcome_kind, v_charge.charged_calls);
    END LOOP;
END;
$$;

ALTER FUNCTION durable_jobs.record_stale_calls(p_job_record_ids bigint[], p_outcome_kind text) OWNER TO postgres;

--
-- Name: refuse_control_removal(); Type: FUNCTION; Schema: durable_jobs; Owner: postgres
--

CREATE FUNCTION durable_jobs.refuse_control_removal() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    RAISE EXCEPTION USING
        ERRCODE = 'LF002',
        MESSAGE = pg_catalog.format('%s of %s is refused', TG_OP, TG_TABLE_NAME),
        HINT = 'Change a control through its function (or row by row), so that each change is recorded as evidence.';
END;
$$;

ALTER FUNCTION durable_jobs.refuse_control_removal() OWNER TO postgres;

--
-- Name: refuse_evidence_change(); Type: FUNCTION; Schema: durable_jobs; Owner: durable_job_evidence_owner
--

CREATE FUNCTION durable_jobs.refuse_evidence_change() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    RAISE EXCEPTION USING
        ERRCODE = 'LF004',
        MESSAGE = 'control evidence is append-only',
        DETAIL = pg_catalog.format('%s on %s is refused', TG_OP, TG_TABLE_NAME),
        HINT = 'Append a new evidence record instead.';
END;
$$;

ALTER FUNCTION durable_jobs.refuse_evidence_change() OWNER TO durable_job_evidence_owner;

--
-- Name: refuse_policy_truncate(); Type: FUNCTION; Schema: durable_jobs; Owner: postgres
--

CREATE FUNCTION durable_jobs.refuse_policy_truncate() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    RAISE EXCEPTION 'TRUNCATE of queue_lease_policy is refused' USING ERRCODE = 'LF002',
        HINT = 'Delete the rows instead, so that each removal is recorded as evidence.';
END;
$$;

ALTER FUNCTION durable_jobs.refuse_policy_truncate() OWNER TO postgres;

--
-- Name: reject_change(bigint, text); Type: FUNCTION; Schema: durable_jobs; Owner: durable_job_policy_owner
--

CREATE FUNCTION durable_jobs.reject_change(p_change_id bigint, p_change_reason text) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET lock_timeout TO '10s'
    AS $$
DECLARE
    v_setting durable_jobs.change_control_setting;
BEGIN
    PERFORM durable_jobs.lock_evidence_order();
    SELECT s.* INTO STRICT v_setting FROM durable_jobs.change_control_setting s;
    v_setting.require_approver := false;
    v_setting.require_second_operator := false;
    PERFORM durable_jobs.check_change_record(v_setting, p_change_reason, NULL, NULL);
    PERFORM durable_jobs.decide_change(p_change_id, 'rejected', p_change_reason);
END;
$$;

ALTER FUNCTION durable_jobs.reject_change(p_change_id bigint, p_change_reason text) OWNER TO durable_job_policy_owner;

--
-- Name: release_job_claim(bigint, uuid, text); Type: FUNCTION; Schema: durable_jobs; Owner: durable_job_terminal_owner
--

CREATE FUNCTION durable_jobs.release_job_claim(p_job_record_id bigint, p_lease_claim_token uuid, p_worker_owner_id text) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    PERFORM 1 FROM durable_jobs.lock_fenced_claim(p_job_record_id, p_lease_claim_token, p_worker_owner_id);
    IF NOT FOUND THEN
        PERFORM durable_jobs.record_stale_call(p_job_record_id, 'stale_release');
        RETURN false;
    END IF;
    UPDATE durable_jobs.job_record j
    SET job_status = 'QUEUED', status_changed_at = pg_catalog.clock_timestamp(),
        run_after = pg_catalog.clock_timestamp(), attempt_number = GREATEST(j.attempt_number - 1, 0),
        lease_expires_at = NULL
    WHERE j.job_record_id = p_job_record_id;
    RETURN true;
END;
$$;

ALTER FUNCTION durable_jobs.release_job_claim(p_job_record_id bigint, p_lease_claim_token uuid, p_worker_owner_id text) OWNER TO durable_job_terminal_owner;

--
-- Name: release_job_claims(text, bigint[], uuid[]); Type: FUNCTION; Schema: durable_jobs; Owner: durable_job_terminal_owner
--

CREATE FUNCTION durable_jobs.release_job_claims(p_worker_owner_id text, p_job_record_ids bigint[], p_lease_claim_tokens uuid[]) RETURNS TABLE(job_record_id bigint, released boolean)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
#variable_conflict use_column
DECLARE
    v_result record;
    v_locked_ctids tid[];
    v_stale_ids bigint[] := ARRAY[]::bigint[];
BEGIN
    -- The contract's owner pattern (the rule function, inlined: no call),
    -- checked here first, byte for byte and only for a value without a
    -- collation of the caller's; anything else goes to require_well_formed,
    -- which raises LF003 as everywhere (a caller's collation included).
    IF p_worker_owner_id IS NULL OR pg_catalog.pg_collation_for(p_worker_owner_id) NOT IN ('"default"', '"C"', '"POSIX"')
       OR NOT durable_jobs.worker_owner_id_is_well_formed(p_worker_owner_id) THEN
        PERFORM durable_jobs.require_well_formed('worker_owner_id', p_worker_owner_id);
    END IF;
    IF p_job_record_ids IS NULL OR p_lease_claim_tokens IS NULL
       OR pg_catalog.array_ndims(p_job_record_ids) > 1 OR pg_catalog.array_ndims(p_lease_claim_tokens) > 1
       OR pg_catalog.cardinality(p_job_record_ids) <> pg_catalog.cardinality(p_lease_claim_tokens)
       OR pg_catalog.cardinality(p_job_record_ids) > 1000
       OR pg_catalog.array_position(p_job_record_ids, NULL) IS NOT NULL
       OR pg_catalog.array_position(p_lease_claim_tokens, NULL) IS NOT NULL
       OR (SELECT pg_catalog.count(DISTINCT i) FROM pg_catalog.unnest(p_job_record_ids) i)
          <> pg_catalog.cardinality(p_job_record_ids) THEN
        RAISE EXCEPTION 'claims must be two flat arrays of equal length, at most 1000, no NULL, no repeated job id'
            USING ERRCODE = 'LF003';
    END IF;

    -- Lock exactly the fenced rows, in job id order, one primary-key probe
    -- per claim (the locking subquery is never flattened into a join, so no
    -- table statistics can turn it into a scan of every running job). A
    -- stale claim's row is never locked.
    SELECT pg_catalog.array_agg(f.fenced_ctid) INTO v_locked_ctids
    FROM (SELECT i.input_job_id, i.input_token
          FROM ROWS FROM (pg_catalog.unnest(p_job_record_ids), pg_catalog.unnest(p_lease_claim_tokens))
               AS i(input_job_id, input_token)
          ORDER BY i.input_job_id) i
    CROSS JOIN LATERAL (
          SELECT j.ctid AS fenced_ctid
          FROM durable_jobs.job_record j
          WHERE j.job_record_id = i.input_job_id
            -- compared as text: no statistics can then make a partial index of RUNNING
            -- rows (empty to a planner whose ANALYZE ran before the claims) look
            -- cheaper than the primary key; the key finds the row, this checks it
            AND j.job_status::text = 'RUNNING'
            AND j.lease_claim_digest = pg_catalog.sha256(pg_catalog.uuid_send(i.input_token))
            AND j.lease_owner_id = p_worker_owner_id
            AND j.lease_claimed_by_role = SESSION_USER
            AND j.lease_expires_at > pg_catalog.clock_timestamp()
          FOR UPDATE OF j) f;

    -- The locked rows (a locked row keeps its tuple id and its claim) are
    -- released as release_job_claim releases one; every claim is answered
    -- in input order (FULL JOIN: a hash or merge join, never a nested loop
    -- over the claims; every released row is one of the claims in).
    FOR v_result IN
        WITH claim_input AS (
            SELECT i.input_job_id, i.input_position
            FROM pg_catalog.unnest(p_job_record_ids) WITH ORDINALITY AS i(input_job_id, input_position)
        ), given_up AS (
            UPDATE durable_jobs.job_record j
            SET job_status = 'QUEUED', status_changed_at = pg_catalog.clock_timestamp(),
                run_after = pg_catalog.clock_timestamp(), attempt_number = GREATEST(j.attempt_number - 1, 0),
                lease_expires_at = NULL
            WHERE j.ctid = ANY (v_locked_ctids)
            RETURNING j.job_record_id AS given_up_id
        )
        SELECT c.input_job_id, g.given_up_id IS NOT NULL AS was_released
        FROM claim_input c
        FULL JOIN given_up g ON g.given_up_id = c.input_job_id
        ORDER BY c.input_position
    LOOP
        IF NOT v_result.was_released THEN
            v_stale_ids := pg_catalog.array_append(v_stale_ids, v_result.input_job_id);
        END IF;
        job_record_id := v_result.input_job_id;
        released := v_result.was_released;
        RETURN NEXT;
    END LOOP;
    -- The stale releases counted together: one tally write per queue charged.
    IF pg_catalog.cardinality(v_stale_ids) > 0 THEN
        PERFORM durable_jobs.record_stale_calls(v_stale_ids, 'stale_release');
    END IF;
END;
$$;

ALTER FUNCTION durable_jobs.release_job_claims(p_worker_owner_id text, p_job_record_ids bigint[], p_lease_claim_tokens uuid[]) OWNER TO durable_job_terminal_owner;

--
-- Name: renew_job_lease(bigint, uuid, text); Type: FUNCTION; Schema: durable_jobs; Owner: durable_job_renewal_owner
--

CREATE FUNCTION durable_jobs.renew_job_lease(p_job_record_id bigint, p_lease_claim_token uuid, p_worker_owner_id text) RETURNS TABLE(renewal_outcome text, lease_expires_at timestamp with time zone, database_time timestamp with time zone)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
#variable_conflict use_column
DECLARE
    v_now timestamptz;
    v_enabled boolean;
BEGIN
    -- The contract's owner pattern (the rule function, inlined: no call),
    -- checked here first, byte for byte and
    -- only for a value without a collation of the caller's: a well-formed
    -- value (every call but a bad one) then costs no call of the helper,
    -- whose SET search_path makes each call cost as much as a small query.
    -- Anything else goes to require_well_formed, which raises LF003 as
    -- everywhere (a caller's collation included).
    IF p_worker_owner_id IS NULL OR pg_catalog.pg_collation_for(p_worker_owner_id) NOT IN ('"default"', '"C"', '"POSIX"')
       OR NOT durable_jobs.worker_owner_id_is_well_formed(p_worker_owner_id) THEN
        PERFORM durable_jobs.require_well_formed('worker_owner_id', p_worker_owner_id);
    END IF;
    IF p_job_record_id IS NULL OR p_lease_claim_token IS NULL THEN
        RAISE EXCEPTION 'job id and claim token are required'
            USING ERRCODE = 'LF003';
    END IF;
    -- A REPEATABLE READ or SERIALIZABLE snapshot may predate a policy change
    -- (renewal switched off, a shorter lease); READ COMMITTED reads the
    -- policy as of this statement.
    IF pg_catalog.current_setting('transaction_isolation') <> 'read committed' THEN
        RAISE EXCEPTION 'lease renewal must run in a READ COMMITTED transaction, not %',
                pg_catalog.upper(pg_catalog.current_setting('transaction_isolation'))
            USING ERRCODE = 'LF003',
                  HINT = 'Renew in a short transaction of its own at the default isolation level.';
    END IF;

    v_now := pg_catalog.clock_timestamp();
    UPDATE durable_jobs.job_record j
    SET lease_expires_at = CASE WHEN p.renewal_enabled
            THEN GREATEST(j.lease_expires_at,
                          LEAST(v_now + pg_catalog.make_interval(secs => pg_catalog.date_part('epoch', p.lease_duration)),
                                j.lease_claim_deadline))
            ELSE j.lease_expires_at END,
        lease_expiry_floor = CASE
            WHEN j.lease_expiry_floor > v_now + pg_catalog.make_interval(secs => pg_catalog.date_part('epoch', p.lease_duration) / 6)
                THEN j.lease_expiry_floor
            WHEN p.renewal_enabled
                THEN GREATEST(j.lease_expires_at,
                              LEAST(v_now + pg_catalog.make_interval(secs => pg_catalog.date_part('epoch', p.lease_duration)),
                                    j.lease_claim_deadline))
            ELSE j.lease_expires_at END,
        lease_renewal_count = j.lease_renewal_count + CASE WHEN p.renewal_enabled THEN 1 ELSE 0 END
    FROM durable_jobs.queue_lease_policy p
    WHERE j.job_record_id = p_job_record_id
      -- compared as text: no statistics can then make a partial index of RUNNING
      -- rows (empty to a planner whose ANALYZE ran before the claims) look
      -- cheaper than the primary key; the key finds the row, this checks it
      AND j.job_status::text = 'RUNNING'
      AND j.lease_claim_digest = pg_catalog.sha256(pg_catalog.uuid_send(p_lease_claim_token))
      AND j.lease_owner_id = p_worker_owner_id
      AND j.lease_claimed_by_role = SESSION_USER
      AND j.lease_expires_at > pg_catalog.clock_timestamp()
      -- the queue's own policy, else '*'
      AND p.queue_name = (SELECT e.policy_queue_name FROM durable_jobs.effective_lease_policy_queue(j.queue_name) e)
    RETURNING p.renewal_enabled, j.lease_expires_at INTO v_enabled, lease_expires_at;

    database_time := v_now;
    IF v_enabled IS NULL THEN
        PERFORM durable_jobs.record_stale_call(p_job_record_id, 'stale_renewal');
        renewal_outcome := 'stale';
    ELSIF v_enabled THEN
        renewal_outcome := 'renewed';
    ELSE
        renewal_outcome := 'renewal_disabled';
    END IF;
    RETURN NEXT;
END;
$$;

ALTER FUNCTION durable_jobs.renew_job_lease(p_job_record_id bigint, p_lease_claim_token uuid, p_worker_owner_id text) OWNER TO durable_job_renewal_owner;

--
-- Name: renew_job_leases(text, bigint[], uuid[]); Type: FUNCTION; Schema: durable_jobs; Owner: durable_job_renewal_owner
--

CREATE FUNCTION durable_jobs.renew_job_leases(p_worker_owner_id text, p_job_record_ids bigint[], p_lease_claim_tokens uuid[]) RETURNS TABLE(job_record_id bigint, renewal_outcome text, lease_expires_at timestamp with time zone, database_time timestamp with time zone)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
#variable_conflict use_column
DECLARE
    v_result record;
    v_locked_ids bigint[];
    v_locked_ctids tid[];
    v_now timestamptz;
    v_stale_ids bigint[] := ARRAY[]::bigint[];
BEGIN
    -- The contract's owner pattern (the rule function, inlined: no call),
    -- checked here first, byte for byte and
    -- only for a value without a collation of the caller's: a well-formed
    -- value (every call but a bad one) then costs no call of the helper,
    -- whose SET search_path makes each call cost as much as a small query.
    -- Anything else goes to require_well_formed, which raises LF003 as
    -- everywhere (a caller's collation included).
    IF p_worker_owner_id IS NULL OR pg_catalog.pg_collation_for(p_worker_owner_id) NOT IN ('"default"', '"C"', '"POSIX"')
       OR NOT durable_jobs.worker_owner_id_is_well_formed(p_worker_owner_id) THEN
        PERFORM durable_jobs.require_well_formed('worker_owner_id', p_worker_owner_id);
    END IF;
    IF p_job_record_ids IS NULL OR p_lease_claim_tokens IS NULL
       OR pg_catalog.array_ndims(p_job_record_ids) > 1 OR pg_catalog.array_ndims(p_lease_claim_tokens) > 1
       OR pg_catalog.cardinality(p_job_record_ids) <> pg_catalog.cardinality(p_lease_claim_tokens)
       OR pg_catalog.cardinality(p_job_record_ids) > 1000
       OR pg_catalog.array_position(p_job_record_ids, NULL) IS NOT NULL
       OR pg_catalog.array_position(p_lease_claim_tokens, NULL) IS NOT NULL
       OR (SELECT pg_catalog.count(DISTINCT i) FROM pg_catalog.unnest(p_job_record_ids) i)
          <> pg_catalog.cardinality(p_job_record_ids) THEN
        RAISE EXCEPTION 'claims must be two flat arrays of equal length, at most 1000, no NULL, no repeated job id'
            USING ERRCODE = 'LF003';
    END IF;
    -- A REPEATABLE READ or SERIALIZABLE snapshot may predate a policy change
    -- (renewal switched off, a shorter lease); READ COMMITTED reads the
    -- policy as of this statement.
    IF pg_catalog.current_setting('transaction_isolation') <> 'read committed' THEN
        RAISE EXCEPTION 'lease renewal must run in a READ COMMITTED transaction, not %',
                pg_catalog.upper(pg_catalog.current_setting('transaction_isolation'))
            USING ERRCODE = 'LF003',
                  HINT = 'Renew in a short transaction of its own at the default isolation level.';
    END IF;

    -- Lock the fenced rows first, in job id order, one primary-key probe
    -- per claim: the locking subquery is never flattened into a join, so no
    -- table statistics can turn this into a scan of every running job.
    -- Only a fenced claim's row is ever locked, so a stale call cannot hold
    -- back anyone's completion.
    SELECT pg_catalog.array_agg(f.fenced_id), pg_catalog.array_agg(f.fenced_ctid) INTO v_locked_ids, v_locked_ctids
    FROM (SELECT i.input_job_id, i.input_token
          FROM ROWS FROM (pg_catalog.unnest(p_job_record_ids), pg_catalog.unnest(p_lease_claim_tokens))
               AS i(input_job_id, input_token)
          ORDER BY i.input_job_id) i
    CROSS JOIN LATERAL (
          SELECT j.job_record_id AS fenced_id, j.ctid AS fenced_ctid
          FROM durable_jobs.job_record j
          WHERE j.job_record_id = i.input_job_id
            -- compared as text: no statistics can then make a partial index of RUNNING
            -- rows (empty to a planner whose ANALYZE ran before the claims) look
            -- cheaper than the primary key; the key finds the row, this checks it
            AND j.job_status::text = 'RUNNING'
            AND j.lease_claim_digest = pg_catalog.sha256(pg_catalog.uuid_send(i.input_token))
            AND j.lease_owner_id = p_worker_owner_id
            AND j.lease_claimed_by_role = SESSION_USER
            AND j.lease_expires_at > pg_catalog.clock_timestamp()
          FOR NO KEY UPDATE OF j SKIP LOCKED) f;

    -- One statement, one snapshot taken after the locks: the rows locked
    -- above are renewed, found by their tuple ids (a row this transaction
    -- holds locked keeps its tuple id, and its claim cannot change under the
    -- lock; the expiry is checked again at this statement's time). Any other
    -- claim is `locked` when it is fenced on the newest committed version of
    -- its row (so another transaction held that row locked), else `stale`.
    v_now := pg_catalog.clock_timestamp();
    FOR v_result IN
        WITH claim_input AS (
            SELECT i.input_job_id, i.input_token, i.input_position
            FROM ROWS FROM (pg_catalog.unnest(p_job_record_ids), pg_catalog.unnest(p_lease_claim_tokens)) WITH ORDINALITY
                 AS i(input_job_id, input_token, input_position)
        ), renewed AS (
            UPDATE durable_jobs.job_record j
            SET lease_expires_at = CASE WHEN p.renewal_enabled
                    THEN GREATEST(j.lease_expires_at,
                                  LEAST(v_now + pg_catalog.make_interval(secs => pg_catalog.date_part('epoch', p.lease_duration)),
                                        j.lease_claim_deadline))
                    ELSE j.lease_expires_at END,
                lease_expiry_floor = CASE
                    WHEN j.lease_expiry_floor > v_now + pg_catalog.make_interval(secs => pg_catalog.date_part('epoch', p.lease_duration) / 6)
                        THEN j.lease_expiry_floor
                    WHEN p.renewal_enabled
                        THEN GREATEST(j.lease_expires_at,
                                      LEAST(v_now + pg_catalog.make_interval(secs => pg_catalog.date_part('epoch', p.lease_duration)),
                                            j.lease_claim_deadline))
                    ELSE j.lease_expires_at END,
                lease_renewal_count = j.lease_renewal_count + CASE WHEN p.renewal_enabled THEN 1 ELSE 0 END
            FROM durable_jobs.queue_lease_policy p
            WHERE j.ctid = ANY (v_locked_ctids)  -- rows this call holds locked, exactly
              AND j.lease_expires_at > pg_catalog.clock_timestamp()
              -- the queue's own policy, else '*'
              AND p.queue_name = (SELECT e.policy_queue_name FROM durable_jobs.effective_lease_policy_queue(j.queue_name) e)
            RETURNING j.job_record_id AS renewed_job_id, j.lease_expires_at AS renewed_expiry,
                      p.renewal_enabled AS renewal_was_enabled
        )
        SELECT c.input_job_id, r.renewed_expiry,
               CASE WHEN r.renewal_was_enabled THEN 'renewed'
                    WHEN NOT r.renewal_was_enabled THEN 'renewal_disabled'
                    -- Not renewed (rare): look at the row only now.
                    WHEN c.input_job_id <> ALL (COALESCE(v_locked_ids, '{}'))
                         AND EXISTS (SELECT FROM durable_jobs.job_record jq
                                     WHERE jq.job_record_id = c.input_job_id
                                       -- compared as text: no statistics can then make a partial index of RUNNING
                                       -- rows (empty to a planner whose ANALYZE ran before the claims) look
                                       -- cheaper than the primary key; the key finds the row, this checks it
                                       AND jq.job_status::text = 'RUNNING'
                                       AND jq.lease_claim_digest = pg_catalog.sha256(pg_catalog.uuid_send(c.input_token))
                                       AND jq.lease_owner_id = p_worker_owner_id
                                       AND jq.lease_claimed_by_role = SESSION_USER
                                       AND jq.lease_expires_at > pg_catalog.clock_timestamp()) THEN 'locked'
                    ELSE 'stale' END AS outcome
        FROM claim_input c
        -- FULL, not LEFT: never a nested loop (renewed is a subset of the
        -- claims in, so no row is added)
        FULL JOIN renewed r ON r.renewed_job_id = c.input_job_id
        ORDER BY c.input_position
    LOOP
        IF v_result.outcome = 'stale' THEN
            v_stale_ids := pg_catalog.array_append(v_stale_ids, v_result.input_job_id);
        END IF;
        job_record_id := v_result.input_job_id;
        renewal_outcome := v_result.outcome;
        lease_expires_at := v_result.renewed_expiry;
        database_time := v_now;
        RETURN NEXT;
    END LOOP;
    -- The stale claims counted together: one tally write per queue charged
    -- (record_lease_outcome updating the same row once per stale claim in
    -- one transaction cost the square of their number).
    IF pg_catalog.cardinality(v_stale_ids) > 0 THEN
        PERFORM durable_jobs.record_stale_calls(v_stale_ids, 'stale_renewal');
    END IF;
END;
$$;

ALTER FUNCTION durable_jobs.renew_job_leases(p_worker_owner_id text, p_job_record_ids bigint[], p_lease_claim_tokens uuid[]) OWNER TO durable_job_renewal_owner;

--
-- Name: replay_job_recorded(bigint, text, text, text); Type: FUNCTION; Schema: durable_jobs; Owner: durable_job_producer_owner
--

CREATE FUNCTION durable_jobs.replay_job_recorded(p_job_record_id bigint, p_change_reason text, p_change_ticket text, p_change_approver text) RETURNS boolean
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    v_queue text;
    v_previous text;
BEGIN
    IF p_job_record_id IS NULL THEN
        RAISE EXCEPTION 'job id is required' USING ERRCODE = 'LF003';
    END IF;
    -- compared as text: statistics taken before the jobs finished must not
    -- make the partial index of finished jobs look cheaper than the key
    SELECT j.queue_name, j.job_status::text INTO v_queue, v_previous
    FROM durable_jobs.job_record j
    WHERE j.job_record_id = p_job_record_id AND j.job_status::text IN ('FAILED', 'CANCELLED')
    FOR NO KEY UPDATE;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    UPDATE durable_jobs.job_record j
    SET job_status = 'QUEUED', status_changed_at = pg_catalog.clock_timestamp(),
        run_after = pg_catalog.clock_timestamp(), attempt_number = 0, failure_reason_code = NULL
    WHERE j.job_record_id = p_job_record_id;
    PERFORM durable_jobs.record_job_action(p_job_record_id, v_queue, 'replayed', v_previous, 'QUEUED',
        p_change_reason, p_change_ticket, p_change_approver);
    RETURN true;
END;
$$;

ALTER FUNCTION durable_jobs.replay_job_recorded(p_job_record_id bigint, p_change_reason text, p_change_ticket text, p_change_approver text) OWNER TO durable_job_producer_owner;

--
-- Name: replay_job(bigint); Type: FUNCTION; Schema: durable_jobs; Owner: durable_job_producer_owner
--

CREATE FUNCTION durable_jobs.replay_job(p_job_record_id bigint) RETURNS boolean
    LANGUAGE sql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET lock_timeout TO '10s'
    BEGIN ATOMIC
 SELECT durable_jobs.replay_job_recorded(p_job_record_id, 'replayed without a reason'::text, NULL::text, NULL::text) AS replay_job_recorded;
END;

ALTER FUNCTION durable_jobs.replay_job(p_job_record_id bigint) OWNER TO durable_job_producer_owner;

--
-- Name: replay_job(bigint, text, text, text); Type: FUNCTION; Schema: durable_jobs; Owner: durable_job_producer_owner
--

CREATE FUNCTION durable_jobs.replay_job(p_job_record_id bigint, p_change_reason text, p_change_ticket text DEFAULT NULL::text, p_change_approver text DEFAULT NULL::text) RETURNS boolean
    LANGUAGE sql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET lock_timeout TO '10s'
    BEGIN ATOMIC
 SELECT durable_jobs.replay_job_recorded(p_job_record_id, COALESCE(p_change_reason, ''::text), p_change_ticket, p_change_approver) AS replay_job_recorded;
END;

ALTER FUNCTION durable_jobs.replay_job(p_job_record_id bigint, p_change_reason text, p_change_ticket text, p_change_approver text) OWNER TO durable_job_producer_owner;

--
-- Name: require_structured_change(text, text, text); Type: FUNCTION; Schema: durable_jobs; Owner: postgres
--

CREATE FUNCTION durable_jobs.require_structured_change(p_change_reason text, p_change_ticket text, p_change_approver text) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    v_setting durable_jobs.change_control_setting;
BEGIN
    PERFORM durable_jobs.lock_evidence_order();
    SELECT s.* INTO STRICT v_setting FROM durable_jobs.change_control_setting s;
    PERFORM durable_jobs.check_change_record(v_setting, p_change_reason, p_change_ticket, p_change_approver);
END;
$$;

ALTER FUNCTION durable_jobs.require_structured_change(p_change_reason text, p_change_ticket text, p_change_approver text) OWNER TO postgres;

--
-- Name: require_valid_change_control(text, boolean, boolean, text, boolean, interval); Type: FUNCTION; Schema: durable_jobs; Owner: postgres
--

CREATE FUNCTION durable_jobs.require_valid_change_control(p_ticket_pattern text, p_require_approver boolean, p_approver_must_differ boolean, p_reason_pattern text, p_require_second_operator boolean, p_proposal_lifetime interval) RETURNS void
    LANGUAGE plpgsql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    v_lifetime interval := durable_jobs.absolute_duration(p_proposal_lifetime);
BEGIN
    IF p_ticket_pattern IS NULL OR p_require_approver IS NULL OR p_approver_must_differ IS NULL
       OR p_require_second_operator IS NULL OR pg_catalog.length(p_ticket_pattern) NOT BETWEEN 1 AND 200
       OR pg_catalog.length(p_reason_pattern) > 200
       OR v_lifetime IS NULL OR v_lifetime NOT BETWEEN interval '1 minute' AND interval '30 days' THEN
        RAISE EXCEPTION 'invalid change control' USING ERRCODE = 'LF003',
            DETAIL = 'Need a ticket pattern of 1 to 200 characters, a reason pattern of at most 200 (or none), every switch set and a proposal lifetime of 1 minute to 30 days.';
    END IF;
    BEGIN
        PERFORM '' ~ p_ticket_pattern, '' ~ p_reason_pattern;
    EXCEPTION WHEN invalid_regular_expression THEN
        RAISE EXCEPTION 'invalid change control' USING ERRCODE = 'LF003',
            DETAIL = 'A pattern is not a valid regular expression.';
    END;
END;
$$;

ALTER FUNCTION durable_jobs.require_valid_change_control(p_ticket_pattern text, p_require_approver boolean, p_approver_must_differ boolean, p_reason_pattern text, p_require_second_operator boolean, p_proposal_lifetime interval) OWNER TO postgres;

--
-- Name: require_valid_change_reason(text, text); Type: FUNCTION; Schema: durable_jobs; Owner: durable_job_retention_owner
--

CREATE FUNCTION durable_jobs.require_valid_change_reason(p_change_reason text, p_sqlstate text) RETURNS void
    LANGUAGE plpgsql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    IF p_change_reason IS NULL OR p_change_reason !~ '[^[:space:]]' OR pg_catalog.length(p_change_reason) > 500
       OR p_change_reason ~ '[[:cntrl:]]' THEN
        RAISE EXCEPTION USING
            ERRCODE = p_sqlstate,
            MESSAGE = 'invalid change reason',
            DETAIL = 'A change reason is 1 to 500 characters, not blank, without control characters (newlines, tabs).';
    END IF;
END;
$$;

ALTER FUNCTION durable_jobs.require_valid_change_reason(p_change_reason text, p_sqlstate text) OWNER TO durable_job_retention_owner;

--
-- Name: require_well_formed(text, text, text); Type: FUNCTION; Schema: durable_jobs; Owner: postgres
--

CREATE FUNCTION durable_jobs.require_well_formed(p_value_kind text, p_value text, p_sqlstate text DEFAULT 'LF003'::text) RETURNS void
    LANGUAGE plpgsql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    v_well_formed boolean;
BEGIN
    IF p_value_kind IS NULL OR p_value_kind NOT IN ('queue_name', 'worker_owner_id', 'failure_reason_code') THEN
        RAISE EXCEPTION 'unknown value kind %', p_value_kind USING ERRCODE = 'XX000';
    END IF;
    -- A value that carries a collation of the caller's (COLLATE "x" on the
    -- argument; a parameter inherits it) is refused: a nondeterministic one
    -- would make the pattern match raise 0A000 and the fenced comparisons
    -- compare by that collation instead of byte for byte.
    IF p_value IS NOT NULL
       AND pg_catalog.pg_collation_for(p_value) NOT IN ('"default"', '"C"', '"POSIX"') THEN
        RAISE EXCEPTION USING
            ERRCODE = p_sqlstate,
            MESSAGE = pg_catalog.format('%s must not carry a collation', p_value_kind),
            HINT = 'Pass the value without COLLATE.';
    END IF;
    v_well_formed := CASE p_value_kind
        WHEN 'queue_name' THEN durable_jobs.queue_name_is_well_formed(p_value)
        WHEN 'worker_owner_id' THEN durable_jobs.worker_owner_id_is_well_formed(p_value)
        ELSE durable_jobs.failure_reason_code_is_well_formed(p_value)
    END;
    IF v_well_formed IS NOT TRUE THEN
        RAISE EXCEPTION USING
            ERRCODE = p_sqlstate,
            MESSAGE = pg_catalog.format('malformed %s', p_value_kind),
            HINT = pg_catalog.format('%s must match %s', p_value_kind, CASE p_value_kind
                WHEN 'queue_name' THEN durable_jobs.queue_name_pattern()
                WHEN 'worker_owner_id' THEN durable_jobs.worker_owner_id_pattern()
                ELSE durable_jobs.failure_reason_code_pattern() END);
    END IF;
END;
$$;

ALTER FUNCTION durable_jobs.require_well_formed(p_value_kind text, p_value text, p_sqlstate text) OWNER TO postgres;

--
-- Name: retry_job(bigint, uuid, text, interval, text); Type: FUNCTION; Schema: durable_jobs; Owner: durable_job_terminal_owner
--

CREATE FUNCTION durable_jobs.retry_job(p_job_record_id bigint, p_lease_claim_token uuid, p_worker_owner_id text, p_retry_delay interval, p_failure_reason_code text) RETURNS text
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET "TimeZone" TO 'UTC'
    AS $$
DECLARE
    v_claim record;
    v_new_status durable_jobs.job_status_kind;
    v_retry_delay interval := durable_jobs.absolute_duration(p_retry_delay);
BEGIN
    PERFORM durable_jobs.require_well_formed('failure_reason_code', p_failure_reason_code);
    IF v_retry_delay IS NULL OR v_retry_delay < interval '0' OR v_retry_delay > interval '720 hours' THEN
        RAISE EXCEPTION 'retry delay must be a plain duration of 0 to 30 days' USING ERRCODE = 'LF003',
            HINT = 'No month part and no day and time parts of opposite signs.';
    END IF;
    SELECT * INTO v_claim FROM durable_jobs.lock_fenced_claim(p_job_record_id, p_lease_claim_token, p_worker_owner_id);
    IF NOT FOUND THEN
        PERFORM durable_jobs.raise_stale_claim();
    END IF;
    v_new_status := CASE WHEN v_claim.fenced_attempt_number >= v_claim.fenced_max_attempts
                         THEN 'FAILED'::durable_jobs.job_status_kind
                         ELSE 'RETRY_SCHEDULED'::durable_jobs.job_status_kind END;
    UPDATE durable_jobs.job_record j
    SET job_status = v_new_status, status_changed_at = pg_catalog.clock_timestamp(),
        run_after = pg_catalog.clock_timestamp() + v_retry_delay,
        failure_reason_code = p_failure_reason_code, lease_expires_at = NULL
    WHERE j.job_record_id = p_job_record_id;
    INSERT INTO durable_jobs.job_outcome_ledger (job_record_id, lease_fencing_generation, outcome_status, failure_reason_code)
    VALUES (p_job_record_id, v_claim.fenced_generation, v_new_status, p_failure_reason_code);
    RETURN v_new_status::text;
END;
$$;

ALTER FUNCTION durable_jobs.retry_job(p_job_record_id bigint, p_lease_claim_token uuid, p_worker_owner_id text, p_retry_delay interval, p_failure_reason_code text) OWNER TO durable_job_terminal_owner;

--
-- Name: server_availability(); Type: FUNCTION; Schema: durable_jobs; Owner: durable_job_policy_owner
--

CREATE FUNCTION durable_jobs.server_availability() RETURNS TABLE(server_timeline bigint, timeline_seen_at timestamp with time zone, previous_timeline bigint, server_started_at timestamp with time zone, in_recovery boolean, database_time timestamp with time zone)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    v_in_recovery boolean := pg_catalog.pg_is_in_recovery();
    v_started_at timestamptz := pg_catalog.pg_postmaster_start_time();
    v_timeline bigint;
    v_state durable_jobs.server_timeline_state%ROWTYPE;
    v_before durable_jobs.server_timeline_state%ROWTYPE;
    v_now timestamptz := pg_catalog.clock_timestamp();
BEGIN
    -- A standby replays the primary's WAL and hides its own timeline
    -- (pg_walfile_name refuses to run during recovery).
    v_timeline := CASE WHEN NOT v_in_recovery
                       THEN ('x' || pg_catalog.substr(pg_catalog.pg_walfile_name(pg_catalog.pg_current_wal_lsn()), 1, 8))::bit(32)::bigint
                  END;
    SELECT s.* INTO STRICT v_state FROM durable_jobs.server_timeline_state s;
    -- Something to record: on a primary, in a
    -- transaction that may write (a read-only one records nothing: the
    -- next writable caller does).
    IF NOT v_in_recovery AND (v_timeline <> v_state.server_timeline OR v_started_at <> v_state.server_started_at)
       AND pg_catalog.current_setting('transaction_read_only') = 'off' THEN
        -- Locked and read again: a caller that saw the same change waits
        -- here for the first one's commit, then reads the new state and
        -- inserts no record (the INSERT's WHERE) and changes nothing.
        SELECT s.* INTO STRICT v_before FROM durable_jobs.server_timeline_state s FOR UPDATE;
        PERFORM durable_jobs.lock_evidence_order();
        INSERT INTO durable_jobs.control_evidence_record (evidence_kind, queue_name, previous_values, new_values, change_reason)
        SELECT CASE WHEN v_timeline <> v_before.server_timeline THEN 'server_timeline_changed' ELSE 'server_restarted' END,
               NULL,
               pg_catalog.jsonb_build_object('server_timeline', v_before.server_timeline,
                                             'server_started_at', v_before.server_started_at),
               pg_catalog.jsonb_build_object('server_timeline', v_timeline, 'server_started_at', v_started_at,
                                             'seen_at', v_now),
               CASE WHEN v_timeline <> v_before.server_timeline
                    THEN 'the server writes on a new WAL timeline: a promotion, or a recovery that started a timeline'
                    ELSE 'the server restarted on the same WAL timeline: a crash or a restart in place' END
        WHERE v_timeline <> v_before.server_timeline OR v_started_at <> v_before.server_started_at;
        UPDATE durable_jobs.server_timeline_state s
        SET server_timeline = v_timeline,
            timeline_seen_at = CASE WHEN v_timeline <> v_before.server_timeline THEN v_now ELSE v_before.timeline_seen_at END,
            previous_timeline = CASE WHEN v_timeline <> v_before.server_timeline THEN v_before.server_timeline
                                     ELSE v_before.previous_timeline END,
            server_started_at = v_started_at
        RETURNING s.* INTO STRICT v_state;
    END IF;
    RETURN QUERY SELECT v_timeline, v_state.timeline_seen_at, v_state.previous_timeline, v_started_at, v_in_recovery, v_now;
END;
$$;

ALTER FUNCTION durable_jobs.server_availability() OWNER TO durable_job_policy_owner;

--
-- Name: set_change_control(text, boolean, boolean, text, text, text); Type: FUNCTION; Schema: durable_jobs; Owner: durable_job_policy_owner
--

CREATE FUNCTION durable_jobs.set_change_control(p_ticket_pattern text, p_require_approver boolean, p_approver_must_differ boolean, p_change_reason text, p_change_ticket text, p_change_approver text DEFAULT NULL::text) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET lock_timeout TO '10s'
    AS $$
BEGIN
    IF p_ticket_pattern IS NULL OR p_require_approver IS NULL OR p_approver_must_differ IS NULL
       OR pg_catalog.length(p_ticket_pattern) NOT BETWEEN 1 AND 200 THEN
        RAISE EXCEPTION 'invalid change control' USING ERRCODE = 'LF003',
            DETAIL = 'Need a ticket pattern of 1 to 200 characters, require_approver and approver_must_differ set.';
    END IF;
    BEGIN
        PERFORM '' ~ p_ticket_pattern;
    EXCEPTION WHEN invalid_regular_expression THEN
        RAISE EXCEPTION 'invalid change control' USING ERRCODE = 'LF003',
            DETAIL = 'The ticket pattern is not a valid regular expression.';
    END;
    -- Takes the evidence-order lock, then checks against what is in force.
    PERFORM durable_jobs.require_structured_change(p_change_reason, p_change_ticket, p_change_approver);
    PERFORM durable_jobs.set_change_record(p_change_reason, p_change_ticket, p_change_approver);
    UPDATE durable_jobs.change_control_setting
    SET ticket_pattern = p_ticket_pattern, require_approver = p_require_approver,
        approver_must_differ = p_approver_must_differ;
    PERFORM durable_jobs.set_change_record('', '', '');
END;
$$;

ALTER FUNCTION durable_jobs.set_change_control(p_ticket_pattern text, p_require_approver boolean, p_approver_must_differ boolean, p_change_reason text, p_change_ticket text, p_change_approver text) OWNER TO durable_job_policy_owner;

--
-- Name: set_change_reason_pattern(text, text, text, text); Type: FUNCTION; Schema: durable_jobs; Owner: durable_job_policy_owner
--

CREATE FUNCTION durable_jobs.set_change_reason_pattern(p_reason_pattern text, p_change_reason text, p_change_ticket text, p_change_approver text DEFAULT NULL::text) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET lock_timeout TO '10s'
    AS $$
DECLARE
    v_pattern text := NULLIF(p_reason_pattern, '');
BEGIN
    IF pg_catalog.length(v_pattern) > 200 THEN
        RAISE EXCEPTION 'invalid change control' USING ERRCODE = 'LF003',
            DETAIL = 'A reason pattern is at most 200 characters (NULL or empty: free text).';
    END IF;
    BEGIN
        PERFORM '' ~ v_pattern;
    EXCEPTION WHEN invalid_regular_expression THEN
        RAISE EXCEPTION 'invalid change control' USING ERRCODE = 'LF003',
            DETAIL = 'The reason pattern is not a valid regular expression.';
    END;
    PERFORM durable_jobs.require_structured_change(p_change_reason, p_change_ticket, p_change_approver);
    PERFORM durable_jobs.set_change_record(p_change_reason, p_change_ticket, p_change_approver);
    UPDATE durable_jobs.change_control_setting SET reason_pattern = v_pattern;
    PERFORM durable_jobs.set_change_record('', '', '');
END;
$$;

ALTER FUNCTION durable_jobs.set_change_reason_pattern(p_reason_pattern text, p_change_reason text, p_change_ticket text, p_change_approver text) OWNER TO durable_job_policy_owner;

--
-- Name: set_change_record(text, text, text); Type: FUNCTION; Schema: durable_jobs; Owner: postgres
--

CREATE FUNCTION durable_jobs.set_change_record(p_change_reason text, p_change_ticket text, p_change_approver text) RETURNS void
    LANGUAGE sql
    SET search_path TO 'pg_catalog', 'pg_temp'
    BEGIN ATOMIC
 SELECT set_config('leasefence.change_reason'::text, COALESCE(p_change_reason, ''::text), true) AS set_config,
     set_config('leasefence.change_ticket'::text, COALESCE(p_change_ticket, ''::text), true) AS set_config,
     set_config('leasefence.change_approver'::text, COALESCE(p_change_approver, ''::text), true) AS set_config;
END;

ALTER FUNCTION durable_jobs.set_change_record(p_change_reason text, p_change_ticket text, p_change_approver text) OWNER TO postgres;

--
-- Name: set_maker_checker(boolean, interval, text, text, text); Type: FUNCTION; Schema: durable_jobs; Owner: durable_job_policy_owner
--

CREATE FUNCTION durable_jobs.set_maker_checker(p_require_second_operator boolean, p_proposal_lifetime interval, p_change_reason text, p_change_ticket text, p_change_approver text DEFAULT NULL::text) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET lock_timeout TO '10s'
    SET "IntervalStyle" TO 'postgres'
    AS $$
DECLARE
    v_setting durable_jobs.change_control_setting;
BEGIN
    PERFORM durable_jobs.require_structured_change(p_change_reason, p_change_ticket, p_change_approver);
    SELECT s.* INTO STRICT v_setting FROM durable_jobs.change_control_setting s;
    PERFORM durable_jobs.require_valid_change_control(v_setting.ticket_pattern, v_setting.require_approver,
        v_setting.approver_must_differ, v_setting.reason_pattern, p_require_second_operator, p_proposal_lifetime);
    PERFORM durable_jobs.set_change_record(p_change_reason, p_change_ticket, p_change_approver);
    UPDATE durable_jobs.change_control_setting
    SET require_second_operator = p_require_second_operator,
        proposal_lifetime = durable_jobs.absolute_duration(p_proposal_lifetime);
    PERFORM durable_jobs.set_change_record('', '', '');
END;
$$;

ALTER FUNCTION durable_jobs.set_maker_checker(p_require_second_operator boolean, p_proposal_lifetime interval, p_change_reason text, p_change_ticket text, p_change_approver text) OWNER TO durable_job_policy_owner;

--
-- Name: set_queue_lease_policy(text, interval, interval, interval, boolean, text); Type: FUNCTION; Schema: durable_jobs; Owner: durable_job_policy_owner
--

CREATE FUNCTION durable_jobs.set_queue_lease_policy(p_queue_name text, p_lease_duration interval, p_renewal_interval interval, p_max_claim_lifetime interval, p_renewal_enabled boolean, p_change_reason text) RETURNS void
    LANGUAGE sql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    BEGIN ATOMIC
 SELECT durable_jobs.change_queue_lease_policy(p_queue_name, p_lease_duration, p_renewal_interval, p_max_claim_lifetime, p_renewal_enabled, p_change_reason, NULL::text, NULL::text) AS change_queue_lease_policy;
END;

ALTER FUNCTION durable_jobs.set_queue_lease_policy(p_queue_name text, p_lease_duration interval, p_renewal_interval interval, p_max_claim_lifetime interval, p_renewal_enabled boolean, p_change_reason text) OWNER TO durable_job_policy_owner;

--
-- Name: set_queue_lease_policy(text, interval, interval, interval, boolean, text, text, text); Type: FUNCTION; Schema: durable_jobs; Owner: durable_job_policy_owner
--

CREATE FUNCTION durable_jobs.set_queue_lease_policy(p_queue_name text, p_lease_duration interval, p_renewal_interval interval, p_max_claim_lifetime interval, p_renewal_enabled boolean, p_change_reason text, p_change_ticket text, p_change_approver text) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $_$
BEGIN
    IF p_change_ticket IS NULL THEN
        RAISE EXCEPTION 'invalid change record' USING ERRCODE = 'LF002',
            DETAIL = 'This overload needs a change ticket matching ^[A-Z][A-Z0-9]+-[0-9]+$.';
    END IF;
    PERFORM durable_jobs.change_queue_lease_policy(p_queue_name, p_lease_duration, p_renewal_interval,
        p_max_claim_lifetime, p_renewal_enabled, p_change_reason, p_change_ticket, p_change_approver);
END;
$_$;

ALTER FUNCTION durable_jobs.set_queue_lease_policy(p_queue_name text, p_lease_duration interval, p_renewal_interval interval, p_max_claim_lifetime interval, p_renewal_enabled boolean, p_change_reason text, p_change_ticket text, p_change_approver text) OWNER TO durable_job_policy_owner;

--
-- Name: set_queue_retention_policy(text, interval, interval, text, text, text); Type: FUNCTION; Schema: durable_jobs; Owner: durable_job_retention_owner
--

CREATE FUNCTION durable_jobs.set_queue_retention_policy(p_queue_name text, p_payload_retention interval, p_record_retention interval, p_change_reason text, p_change_ticket text, p_change_approver text DEFAULT NULL::text) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET "IntervalStyle" TO 'postgres'
    SET "DateStyle" TO 'ISO, MDY'
    SET "TimeZone" TO 'UTC'
    SET extra_float_digits TO '1'
    AS $$
DECLARE
    v_payload_retention interval := durable_jobs.absolute_duration(p_payload_retention);
    v_record_retention interval := durable_jobs.absolute_duration(p_record_retention);
BEGIN
    IF p_queue_name IS DISTINCT FROM '*' THEN
        PERFORM durable_jobs.require_well_formed('queue_name', p_queue_name, 'LF002');
    END IF;
    IF v_payload_retention IS NULL OR v_record_retention IS NULL
       OR v_payload_retention < interval '1 hour' OR v_record_retention < v_payload_retention
       OR v_record_retention > interval '3650 days' THEN
        RAISE EXCEPTION 'invalid retention policy' USING
            ERRCODE = 'LF002',
            DETAIL = 'Need plain durations (no month or year part, day and time parts of one sign) with '
                  || '1 hour <= payload_retention <= record_retention <= 3650 days.';
    END IF;
    PERFORM durable_jobs.require_valid_change_reason(p_change_reason, 'LF002');
    -- Takes the evidence-order lock first and checks the record against the
    -- change control in force once it holds it.
    PERFORM durable_jobs.require_structured_change(p_change_reason, p_change_ticket, p_change_approver);

    -- What the table's trigger (record_retention_policy_change) records.
    PERFORM durable_jobs.set_change_record(p_change_reason, p_change_ticket, p_change_approver);
    INSERT INTO durable_jobs.queue_retention_policy AS p
        (queue_name, payload_retention, record_retention, changed_at, changed_by_role)
    VALUES (p_queue_name, v_payload_retention, v_record_retention, pg_catalog.clock_timestamp(), SESSION_USER)
    ON CONFLICT (queue_name) DO UPDATE
    SET payload_retention = EXCLUDED.payload_retention, record_retention = EXCLUDED.record_retention;
    PERFORM durable_jobs.set_change_record('', '', '');
END;
$$;

ALTER FUNCTION durable_jobs.set_queue_retention_policy(p_queue_name text, p_payload_retention interval, p_record_retention interval, p_change_reason text, p_change_ticket text, p_change_approver text) OWNER TO durable_job_retention_owner;

--
-- Name: set_queue_retention_policy(text, interval, interval, text); Type: FUNCTION; Schema: durable_jobs; Owner: durable_job_retention_owner
--

CREATE FUNCTION durable_jobs.set_queue_retention_policy(p_queue_name text, p_payload_retention interval, p_record_retention interval, p_change_reason text) RETURNS void
    LANGUAGE sql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    BEGIN ATOMIC
 SELECT durable_jobs.set_queue_retention_policy(p_queue_name, p_payload_retention, p_record_retention, p_change_reason, NULL::text, NULL::text) AS set_queue_retention_policy;
END;

ALTER FUNCTION durable_jobs.set_queue_retention_policy(p_queue_name text, p_payload_retention interval, p_record_retention interval, p_change_reason text) OWNER TO durable_job_retention_owner;

--
-- Name: stamp_control_change(); Type: FUNCTION; Schema: durable_jobs; Owner: postgres
--

CREATE FUNCTION durable_jobs.stamp_control_change() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    IF TG_OP = 'UPDATE' AND (pg_catalog.to_jsonb(NEW) -> 'queue_name') IS DISTINCT FROM (pg_catalog.to_jsonb(OLD) -> 'queue_name') THEN
        RAISE EXCEPTION 'a queue''s retention policy row cannot be renamed' USING ERRCODE = 'LF002',
            HINT = 'Delete the row and insert one for the new queue name.';
    END IF;
    NEW.changed_by_role := SESSION_USER::text;
    NEW.changed_at := pg_catalog.clock_timestamp();
    RETURN NEW;
END;
$$;

ALTER FUNCTION durable_jobs.stamp_control_change() OWNER TO postgres;

--
-- Name: stamp_policy_change(); Type: FUNCTION; Schema: durable_jobs; Owner: postgres
--

CREATE FUNCTION durable_jobs.stamp_policy_change() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    IF TG_OP = 'UPDATE' AND NEW.queue_name IS DISTINCT FROM OLD.queue_name THEN
        RAISE EXCEPTION 'a queue''s lease policy row cannot be renamed' USING ERRCODE = 'LF002',
            HINT = 'Delete the row and insert one for the new queue name.';
    END IF;
    NEW.changed_by_role := SESSION_USER::text;
    NEW.changed_at := pg_catalog.clock_timestamp();
    RETURN NEW;
END;
$$;

ALTER FUNCTION durable_jobs.stamp_policy_change() OWNER TO postgres;

--
-- Name: update_queue_lease_policy(text, interval, interval, interval, boolean, text, text, text); Type: FUNCTION; Schema: durable_jobs; Owner: durable_job_policy_owner
--

CREATE FUNCTION durable_jobs.update_queue_lease_policy(p_queue_name text, p_lease_duration interval, p_renewal_interval interval, p_max_claim_lifetime interval, p_renewal_enabled boolean, p_change_reason text, p_change_ticket text, p_change_approver text) RETURNS TABLE(queue_name text, lease_duration interval, renewal_interval interval, max_claim_lifetime interval, renewal_enabled boolean, changed_at timestamp with time zone, changed_by_role text)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET lock_timeout TO '10s'
    AS $$
DECLARE
    v_current durable_jobs.queue_lease_policy;
BEGIN
    IF pg_catalog.current_setting('transaction_isolation') <> 'read committed' THEN
        RAISE EXCEPTION 'update_queue_lease_policy must run in a READ COMMITTED transaction' USING
            ERRCODE = 'LF003',
            HINT = 'A REPEATABLE READ or SERIALIZABLE snapshot may predate a concurrent change; use READ COMMITTED.';
    END IF;
    IF p_queue_name IS DISTINCT FROM '*' THEN
        PERFORM durable_jobs.require_well_formed('queue_name', p_queue_name, 'LF002');
    END IF;
    PERFORM durable_jobs.require_structured_change(p_change_reason,
        COALESCE(p_change_ticket, pg_catalog.substring(p_change_reason, '^([A-Z][A-Z0-9]+-[0-9]+):')), p_change_approver);

    -- Read what is kept only once no other change can commit before ours:
    -- every policy change takes this lock first, and a READ COMMITTED
    -- statement after it sees every change committed before.
    PERFORM durable_jobs.lock_evidence_order();
    IF p_lease_duration IS NULL OR p_renewal_interval IS NULL OR p_max_claim_lifetime IS NULL
       OR p_renewal_enabled IS NULL THEN
        SELECT p.* INTO v_current
        FROM durable_jobs.effective_lease_policy_queue(p_queue_name) e
        JOIN durable_jobs.queue_lease_policy p ON p.queue_name = e.policy_queue_name;
        IF NOT FOUND THEN
            RAISE EXCEPTION 'invalid lease policy' USING
                ERRCODE = 'LF002',
                DETAIL = 'The queue has no policy of its own and there is no default ''*'' to keep settings from; give every setting.';
        END IF;
    END IF;
    PERFORM durable_jobs.change_queue_lease_policy(p_queue_name,
        COALESCE(p_lease_duration, v_current.lease_duration), COALESCE(p_renewal_interval, v_current.renewal_interval),
        COALESCE(p_max_claim_lifetime, v_current.max_claim_lifetime), COALESCE(p_renewal_enabled, v_current.renewal_enabled),
        p_change_reason, p_change_ticket, p_change_approver);
    RETURN QUERY
        SELECT p.queue_name, p.lease_duration, p.renewal_interval, p.max_claim_lifetime, p.renewal_enabled,
               p.changed_at, p.changed_by_role
        FROM durable_jobs.queue_lease_policy p
        WHERE p.queue_name = p_queue_name;
END;
$$;

ALTER FUNCTION durable_jobs.update_queue_lease_policy(p_queue_name text, p_lease_duration interval, p_renewal_interval interval, p_max_claim_lifetime interval, p_renewal_enabled boolean, p_change_reason text, p_change_ticket text, p_change_approver text) OWNER TO durable_job_policy_owner;

--
-- Name: wake_queue_workers(); Type: FUNCTION; Schema: durable_jobs; Owner: durable_job_claim_owner
--

CREATE FUNCTION durable_jobs.wake_queue_workers() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    PERFORM pg_catalog.pg_notify('leasefence_wake_' || pg_catalog.left(pg_catalog.md5(NEW.queue_name), 16), '')
    WHERE pg_catalog.pg_try_advisory_xact_lock(1279678293, pg_catalog.hashtext(NEW.queue_name));
    RETURN NULL;
END;
$$;

ALTER FUNCTION durable_jobs.wake_queue_workers() OWNER TO durable_job_claim_owner;

--
-- Name: wake_queue_workers_after_insert(); Type: FUNCTION; Schema: durable_jobs; Owner: durable_job_claim_owner
--

CREATE FUNCTION durable_jobs.wake_queue_workers_after_insert() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    -- Row by row, not over the DISTINCT queue names: PostgreSQL folds the
    -- identical notifications into one, and the key, once taken, is held;
    -- a DISTINCT cost a single enqueue about a tenth more (the same
    -- measure), going row by row nothing that could be told from the noise.
    PERFORM pg_catalog.pg_notify('leasefence_wake_' || pg_catalog.left(pg_catalog.md5(i.queue_name), 16), '')
    FROM inserted_jobs i
    WHERE i.job_status IN ('QUEUED', 'RETRY_SCHEDULED')
      AND pg_catalog.pg_try_advisory_xact_lock(1279678293, pg_catalog.hashtext(i.queue_name));
    RETURN NULL;
END;
$$;

ALTER FUNCTION durable_jobs.wake_queue_workers_after_insert() OWNER TO durable_job_claim_owner;

--
-- Name: worker_owner_id_is_well_formed(text); Type: FUNCTION; Schema: durable_jobs; Owner: postgres
--

CREATE FUNCTION durable_jobs.worker_owner_id_is_well_formed(p_worker_owner_id text) RETURNS boolean
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN ((octet_length(p_worker_owner_id) <= 128) AND ((p_worker_owner_id COLLATE "C") ~ '^[A-Za-z0-9][A-Za-z0-9._:-]*$'::text));

ALTER FUNCTION durable_jobs.worker_owner_id_is_well_formed(p_worker_owner_id text) OWNER TO postgres;

--
-- Name: worker_owner_id_pattern(); Type: FUNCTION; Schema: durable_jobs; Owner: postgres
--

CREATE FUNCTION durable_jobs.worker_owner_id_pattern() RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN '^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$'::text;

ALTER FUNCTION durable_jobs.worker_owner_id_pattern() OWNER TO postgres;

--
-- Name: control_evidence_record_evidence_record_id_seq; Type: SEQUENCE; Schema: durable_jobs; Owner: durable_job_evidence_owner
--

ALTER TABLE durable_jobs.control_evidence_record ALTER COLUMN evidence_record_id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME durable_jobs.control_evidence_record_evidence_record_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

--
-- Name: evidence_order_lock; Type: TABLE; Schema: durable_jobs; Owner: postgres
--

CREATE TABLE durable_jobs.evidence_order_lock (
    lock_slot smallint NOT NULL,
    CONSTRAINT evidence_order_lock_single CHECK ((lock_slot = 1))
);

ALTER TABLE durable_jobs.evidence_order_lock OWNER TO postgres;

--
-- Name: TABLE evidence_order_lock; Type: COMMENT; Schema: durable_jobs; Owner: postgres
--

COMMENT ON TABLE durable_jobs.evidence_order_lock IS 'leasefence: the evidence-order lock, one row locked FOR UPDATE by lock_evidence_order; private to its owner.';

--
-- Name: job_action_record_job_action_record_id_seq; Type: SEQUENCE; Schema: durable_jobs; Owner: postgres
--

ALTER TABLE durable_jobs.job_action_record ALTER COLUMN job_action_record_id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME durable_jobs.job_action_record_job_action_record_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

--
-- Name: job_outcome_ledger_job_outcome_record_id_seq; Type: SEQUENCE; Schema: durable_jobs; Owner: postgres
--

ALTER TABLE durable_jobs.job_outcome_ledger ALTER COLUMN job_outcome_record_id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME durable_jobs.job_outcome_ledger_job_outcome_record_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

--
-- Name: job_payload_record; Type: TABLE; Schema: durable_jobs; Owner: postgres
--

CREATE TABLE durable_jobs.job_payload_record (
    job_record_id bigint NOT NULL,
    job_payload jsonb NOT NULL
);

ALTER TABLE durable_jobs.job_payload_record OWNER TO postgres;

--
-- Name: TABLE job_payload_record; Type: COMMENT; Schema: durable_jobs; Owner: postgres
--

COMMENT ON TABLE durable_jobs.job_payload_record IS 'Job payloads, kept apart from lease state: the renewal and audit owners have no privilege here.';

--
-- Name: job_record_job_record_id_seq; Type: SEQUENCE; Schema: durable_jobs; Owner: postgres
--

ALTER TABLE durable_jobs.job_record ALTER COLUMN job_record_id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME durable_jobs.job_record_job_record_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

--
-- Name: pending_change_change_id_seq; Type: SEQUENCE; Schema: durable_jobs; Owner: postgres
--

ALTER TABLE durable_jobs.pending_change ALTER COLUMN change_id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME durable_jobs.pending_change_change_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

--
-- Name: server_timeline_state; Type: TABLE; Schema: durable_jobs; Owner: postgres
--

CREATE TABLE durable_jobs.server_timeline_state (
    state_slot smallint NOT NULL,
    server_timeline bigint NOT NULL,
    timeline_seen_at timestamp with time zone NOT NULL,
    previous_timeline bigint,
    server_started_at timestamp with time zone NOT NULL,
    CONSTRAINT server_timeline_state_single CHECK ((state_slot = 1)),
    CONSTRAINT server_timeline_state_timeline CHECK ((server_timeline >= 1))
);

ALTER TABLE durable_jobs.server_timeline_state OWNER TO postgres;

--
-- Name: TABLE server_timeline_state; Type: COMMENT; Schema: durable_jobs; Owner: postgres
--

COMMENT ON TABLE durable_jobs.server_timeline_state IS 'leasefence: the WAL timeline and server start time server_availability() saw last; one row, private to its owner.';

--
-- Name: change_control_setting change_control_setting_pkey; Type: CONSTRAINT; Schema: durable_jobs; Owner: postgres
--

ALTER TABLE ONLY durable_jobs.change_control_setting
    ADD CONSTRAINT change_control_setting_pkey PRIMARY KEY (change_control_row);

--
-- Name: control_evidence_record control_evidence_record_pkey; Type: CONSTRAINT; Schema: durable_jobs; Owner: durable_job_evidence_owner
--

ALTER TABLE ONLY durable_jobs.control_evidence_record
    ADD CONSTRAINT control_evidence_record_pkey PRIMARY KEY (evidence_record_id);

--
-- Name: evidence_order_lock evidence_order_lock_pkey; Type: CONSTRAINT; Schema: durable_jobs; Owner: postgres
--

ALTER TABLE ONLY durable_jobs.evidence_order_lock
    ADD CONSTRAINT evidence_order_lock_pkey PRIMARY KEY (lock_slot);

--
-- Name: job_action_record job_action_record_pkey; Type: CONSTRAINT; Schema: durable_jobs; Owner: postgres
--

ALTER TABLE ONLY durable_jobs.job_action_record
    ADD CONSTRAINT job_action_record_pkey PRIMARY KEY (job_action_record_id);

--
-- Name: job_outcome_ledger job_outcome_ledger_pkey; Type: CONSTRAINT; Schema: durable_jobs; Owner: postgres
--

ALTER TABLE ONLY durable_jobs.job_outcome_ledger
    ADD CONSTRAINT job_outcome_ledger_pkey PRIMARY KEY (job_outcome_record_id);

--
-- Name: job_payload_record job_payload_record_pkey; Type: CONSTRAINT; Schema: durable_jobs; Owner: postgres
--

ALTER TABLE ONLY durable_jobs.job_payload_record
    ADD CONSTRAINT job_payload_record_pkey PRIMARY KEY (job_record_id);

--
-- Name: job_record job_record_pkey; Type: CONSTRAINT; Schema: durable_jobs; Owner: postgres
--

ALTER TABLE ONLY durable_jobs.job_record
    ADD CONSTRAINT job_record_pkey PRIMARY KEY (job_record_id);

--
-- Name: lease_outcome_tally lease_outcome_tally_pkey; Type: CONSTRAINT; Schema: durable_jobs; Owner: postgres
--

ALTER TABLE ONLY durable_jobs.lease_outcome_tally
    ADD CONSTRAINT lease_outcome_tally_pkey PRIMARY KEY (tally_minute, queue_name, outcome_kind, tally_backend_pid, counted_by_role);

--
-- Name: pending_change pending_change_pkey; Type: CONSTRAINT; Schema: durable_jobs; Owner: postgres
--

ALTER TABLE ONLY durable_jobs.pending_change
    ADD CONSTRAINT pending_change_pkey PRIMARY KEY (change_id);

--
-- Name: queue_lease_policy queue_lease_policy_pkey; Type: CONSTRAINT; Schema: durable_jobs; Owner: postgres
--

ALTER TABLE ONLY durable_jobs.queue_lease_policy
    ADD CONSTRAINT queue_lease_policy_pkey PRIMARY KEY (queue_name);

--
-- Name: queue_retention_policy queue_retention_policy_pkey; Type: CONSTRAINT; Schema: durable_jobs; Owner: postgres
--

ALTER TABLE ONLY durable_jobs.queue_retention_policy
    ADD CONSTRAINT queue_retention_policy_pkey PRIMARY KEY (queue_name);

--
-- Name: server_timeline_state server_timeline_state_pkey; Type: CONSTRAINT; Schema: durable_jobs; Owner: postgres
--

ALTER TABLE ONLY durable_jobs.server_timeline_state
    ADD CONSTRAINT server_timeline_state_pkey PRIMARY KEY (state_slot);

--
-- Name: job_action_record_job_lookup; Type: INDEX; Schema: durable_jobs; Owner: postgres
--

CREATE INDEX job_action_record_job_lookup ON durable_jobs.job_action_record USING btree (job_record_id);

--
-- Name: job_outcome_ledger_job_lookup; Type: INDEX; Schema: durable_jobs; Owner: postgres
--

CREATE INDEX job_outcome_ledger_job_lookup ON durable_jobs.job_outcome_ledger USING btree (job_record_id);

--
-- Name: job_record_claimable_queue_order; Type: INDEX; Schema: durable_jobs; Owner: postgres
--

CREATE INDEX job_record_claimable_queue_order ON durable_jobs.job_record USING btree (queue_name, run_after, job_record_id) WHERE (job_status = ANY (ARRAY['QUEUED'::durable_jobs.job_status_kind, 'RETRY_SCHEDULED'::durable_jobs.job_status_kind]));

--
-- Name: job_record_finished_by_age; Type: INDEX; Schema: durable_jobs; Owner: postgres
--

CREATE INDEX job_record_finished_by_age ON durable_jobs.job_record USING btree (status_changed_at) WHERE (job_status = ANY (ARRAY['SUCCEEDED'::durable_jobs.job_status_kind, 'FAILED'::durable_jobs.job_status_kind, 'CANCELLED'::durable_jobs.job_status_kind]));

--
-- Name: job_record_idempotency_key_unique; Type: INDEX; Schema: durable_jobs; Owner: postgres
--

CREATE UNIQUE INDEX job_record_idempotency_key_unique ON durable_jobs.job_record USING btree (queue_name, idempotency_key_digest) WHERE (idempotency_key_digest IS NOT NULL);

--
-- Name: job_record_reclaim_order; Type: INDEX; Schema: durable_jobs; Owner: postgres
--

CREATE INDEX job_record_reclaim_order ON durable_jobs.job_record USING btree (queue_name, lease_expiry_floor, job_record_id) WHERE (job_status = 'RUNNING'::durable_jobs.job_status_kind);

--
-- Name: lease_outcome_tally_recent; Type: INDEX; Schema: durable_jobs; Owner: postgres
--

CREATE INDEX lease_outcome_tally_recent ON durable_jobs.lease_outcome_tally USING btree (tally_minute);

--
-- Name: change_control_setting change_control_setting_evidence; Type: TRIGGER; Schema: durable_jobs; Owner: postgres
--

CREATE TRIGGER change_control_setting_evidence AFTER UPDATE ON durable_jobs.change_control_setting FOR EACH ROW EXECUTE FUNCTION durable_jobs.record_change_control_change();

--
-- Name: change_control_setting change_control_setting_no_delete; Type: TRIGGER; Schema: durable_jobs; Owner: postgres
--

CREATE TRIGGER change_control_setting_no_delete BEFORE DELETE ON durable_jobs.change_control_setting FOR EACH ROW EXECUTE FUNCTION durable_jobs.refuse_control_removal();

--
-- Name: change_control_setting change_control_setting_no_truncate; Type: TRIGGER; Schema: durable_jobs; Owner: postgres
--

CREATE TRIGGER change_control_setting_no_truncate BEFORE TRUNCATE ON durable_jobs.change_control_setting FOR EACH STATEMENT EXECUTE FUNCTION durable_jobs.refuse_control_removal();

--
-- Name: change_control_setting change_control_setting_stamp; Type: TRIGGER; Schema: durable_jobs; Owner: postgres
--

CREATE TRIGGER change_control_setting_stamp BEFORE UPDATE ON durable_jobs.change_control_setting FOR EACH ROW EXECUTE FUNCTION durable_jobs.stamp_control_change();

--
-- Name: control_evidence_record control_evidence_record_append_only; Type: TRIGGER; Schema: durable_jobs; Owner: durable_job_evidence_owner
--

CREATE TRIGGER control_evidence_record_append_only BEFORE DELETE OR UPDATE ON durable_jobs.control_evidence_record FOR EACH ROW EXECUTE FUNCTION durable_jobs.refuse_evidence_change();

--
-- Name: control_evidence_record control_evidence_record_chain; Type: TRIGGER; Schema: durable_jobs; Owner: durable_job_evidence_owner
--

CREATE TRIGGER control_evidence_record_chain BEFORE INSERT ON durable_jobs.control_evidence_record FOR EACH ROW EXECUTE FUNCTION durable_jobs.chain_evidence_record();

--
-- Name: control_evidence_record control_evidence_record_no_truncate; Type: TRIGGER; Schema: durable_jobs; Owner: durable_job_evidence_owner
--

CREATE TRIGGER control_evidence_record_no_truncate BEFORE TRUNCATE ON durable_jobs.control_evidence_record FOR EACH STATEMENT EXECUTE FUNCTION durable_jobs.refuse_evidence_change();

--
-- Name: job_record job_record_wake_workers; Type: TRIGGER; Schema: durable_jobs; Owner: postgres
--

CREATE TRIGGER job_record_wake_workers AFTER UPDATE OF run_after ON durable_jobs.job_record FOR EACH ROW WHEN ((new.job_status = ANY (ARRAY['QUEUED'::durable_jobs.job_status_kind, 'RETRY_SCHEDULED'::durable_jobs.job_status_kind]))) EXECUTE FUNCTION durable_jobs.wake_queue_workers();

--
-- Name: job_record job_record_wake_workers_after_insert; Type: TRIGGER; Schema: durable_jobs; Owner: postgres
--

CREATE TRIGGER job_record_wake_workers_after_insert AFTER INSERT ON durable_jobs.job_record REFERENCING NEW TABLE AS inserted_jobs FOR EACH STATEMENT EXECUTE FUNCTION durable_jobs.wake_queue_workers_after_insert();

--
-- Name: queue_lease_policy queue_lease_policy_evidence; Type: TRIGGER; Schema: durable_jobs; Owner: postgres
--

CREATE TRIGGER queue_lease_policy_evidence AFTER INSERT OR DELETE OR UPDATE ON durable_jobs.queue_lease_policy FOR EACH ROW EXECUTE FUNCTION durable_jobs.record_policy_change();

--
-- Name: queue_lease_policy queue_lease_policy_no_truncate; Type: TRIGGER; Schema: durable_jobs; Owner: postgres
--

CREATE TRIGGER queue_lease_policy_no_truncate BEFORE TRUNCATE ON durable_jobs.queue_lease_policy FOR EACH STATEMENT EXECUTE FUNCTION durable_jobs.refuse_policy_truncate();

--
-- Name: queue_lease_policy queue_lease_policy_stamp; Type: TRIGGER; Schema: durable_jobs; Owner: postgres
--

CREATE TRIGGER queue_lease_policy_stamp BEFORE INSERT OR UPDATE ON durable_jobs.queue_lease_policy FOR EACH ROW EXECUTE FUNCTION durable_jobs.stamp_policy_change();

--
-- Name: queue_retention_policy queue_retention_policy_evidence; Type: TRIGGER; Schema: durable_jobs; Owner: postgres
--

CREATE TRIGGER queue_retention_policy_evidence AFTER INSERT OR DELETE OR UPDATE ON durable_jobs.queue_retention_policy FOR EACH ROW EXECUTE FUNCTION durable_jobs.record_retention_policy_change();

--
-- Name: queue_retention_policy queue_retention_policy_no_truncate; Type: TRIGGER; Schema: durable_jobs; Owner: postgres
--

CREATE TRIGGER queue_retention_policy_no_truncate BEFORE TRUNCATE ON durable_jobs.queue_retention_policy FOR EACH STATEMENT EXECUTE FUNCTION durable_jobs.refuse_control_removal();

--
-- Name: queue_retention_policy queue_retention_policy_stamp; Type: TRIGGER; Schema: durable_jobs; Owner: postgres
--

CREATE TRIGGER queue_retention_policy_stamp BEFORE INSERT OR UPDATE ON durable_jobs.queue_retention_policy FOR EACH ROW EXECUTE FUNCTION durable_jobs.stamp_control_change();

--
-- Name: job_action_record job_action_record_job; Type: FK CONSTRAINT; Schema: durable_jobs; Owner: postgres
--

ALTER TABLE ONLY durable_jobs.job_action_record
    ADD CONSTRAINT job_action_record_job FOREIGN KEY (job_record_id) REFERENCES durable_jobs.job_record(job_record_id) ON DELETE CASCADE;

--
-- Name: SCHEMA durable_jobs; Type: ACL; Schema: -; Owner: postgres
--

GRANT USAGE ON SCHEMA durable_jobs TO durable_job_producer;
GRANT USAGE ON SCHEMA durable_jobs TO durable_job_worker;
GRANT USAGE ON SCHEMA durable_jobs TO durable_job_operator;
GRANT USAGE ON SCHEMA durable_jobs TO durable_job_auditor;
GRANT USAGE ON SCHEMA durable_jobs TO durable_job_producer_owner;
GRANT USAGE ON SCHEMA durable_jobs TO durable_job_claim_owner;
GRANT USAGE ON SCHEMA durable_jobs TO durable_job_renewal_owner;
GRANT USAGE ON SCHEMA durable_jobs TO durable_job_terminal_owner;
GRANT USAGE ON SCHEMA durable_jobs TO durable_job_policy_owner;
GRANT USAGE ON SCHEMA durable_jobs TO durable_job_audit_owner;
GRANT USAGE ON SCHEMA durable_jobs TO durable_job_retention_owner;

--
-- Name: TYPE job_status_kind; Type: ACL; Schema: durable_jobs; Owner: postgres
--

REVOKE ALL ON TYPE durable_jobs.job_status_kind FROM PUBLIC;
GRANT ALL ON TYPE durable_jobs.job_status_kind TO durable_job_producer_owner;
GRANT ALL ON TYPE durable_jobs.job_status_kind TO durable_job_claim_owner;
GRANT ALL ON TYPE durable_jobs.job_status_kind TO durable_job_renewal_owner;
GRANT ALL ON TYPE durable_jobs.job_status_kind TO durable_job_terminal_owner;
GRANT ALL ON TYPE durable_jobs.job_status_kind TO durable_job_audit_owner;
GRANT ALL ON TYPE durable_jobs.job_status_kind TO durable_job_retention_owner;

--
-- Name: FUNCTION absolute_duration(p_value interval); Type: ACL; Schema: durable_jobs; Owner: postgres
--

REVOKE ALL ON FUNCTION durable_jobs.absolute_duration(p_value interval) FROM PUBLIC;
GRANT ALL ON FUNCTION durable_jobs.absolute_duration(p_value interval) TO durable_job_terminal_owner;
GRANT ALL ON FUNCTION durable_jobs.absolute_duration(p_value interval) TO durable_job_policy_owner;
GRANT ALL ON FUNCTION durable_jobs.absolute_duration(p_value interval) TO durable_job_retention_owner;

--
-- Name: FUNCTION approve_change(p_change_id bigint); Type: ACL; Schema: durable_jobs; Owner: durable_job_policy_owner
--

REVOKE ALL ON FUNCTION durable_jobs.approve_change(p_change_id bigint) FROM PUBLIC;
GRANT ALL ON FUNCTION durable_jobs.approve_change(p_change_id bigint) TO durable_job_operator;

--
-- Name: FUNCTION approved_proposer(); Type: ACL; Schema: durable_jobs; Owner: durable_job_policy_owner
--

REVOKE ALL ON FUNCTION durable_jobs.approved_proposer() FROM PUBLIC;
GRANT ALL ON FUNCTION durable_jobs.approved_proposer() TO durable_job_retention_owner;

--
-- Name: COLUMN control_evidence_record.evidence_record_id; Type: ACL; Schema: durable_jobs; Owner: durable_job_evidence_owner
--

GRANT SELECT(evidence_record_id) ON TABLE durable_jobs.control_evidence_record TO durable_job_audit_owner;
GRANT SELECT(evidence_record_id) ON TABLE durable_jobs.control_evidence_record TO durable_job_policy_owner;
GRANT SELECT(evidence_record_id) ON TABLE durable_jobs.control_evidence_record TO durable_job_retention_owner;

--
-- Name: COLUMN control_evidence_record.evidence_kind; Type: ACL; Schema: durable_jobs; Owner: durable_job_evidence_owner
--

GRANT INSERT(evidence_kind) ON TABLE durable_jobs.control_evidence_record TO durable_job_policy_owner;
GRANT SELECT(evidence_kind) ON TABLE durable_jobs.control_evidence_record TO durable_job_audit_owner;
GRANT INSERT(evidence_kind) ON TABLE durable_jobs.control_evidence_record TO durable_job_retention_owner;

--
-- Name: COLUMN control_evidence_record.queue_name; Type: ACL; Schema: durable_jobs; Owner: durable_job_evidence_owner
--

GRANT INSERT(queue_name) ON TABLE durable_jobs.control_evidence_record TO durable_job_policy_owner;
GRANT SELECT(queue_name) ON TABLE durable_jobs.control_evidence_record TO durable_job_audit_owner;
GRANT INSERT(queue_name) ON TABLE durable_jobs.control_evidence_record TO durable_job_retention_owner;

--
-- Name: COLUMN control_evidence_record.previous_values; Type: ACL; Schema: durable_jobs; Owner: durable_job_evidence_owner
--

GRANT INSERT(previous_values) ON TABLE durable_jobs.control_evidence_record TO durable_job_policy_owner;
GRANT SELECT(previous_values) ON TABLE durable_jobs.control_evidence_record TO durable_job_audit_owner;
GRANT INSERT(previous_values) ON TABLE durable_jobs.control_evidence_record TO durable_job_retention_owner;

--
-- Name: COLUMN control_evidence_record.new_values; Type: ACL; Schema: durable_jobs; Owner: durable_job_evidence_owner
--

GRANT INSERT(new_values) ON TABLE durable_jobs.control_evidence_record TO durable_job_policy_owner;
GRANT SELECT(new_values) ON TABLE durable_jobs.control_evidence_record TO durable_job_audit_owner;
GRANT INSERT(new_values) ON TABLE durable_jobs.control_evidence_record TO durable_job_retention_owner;

--
-- Name: COLUMN control_evidence_record.change_reason; Type: ACL; Schema: durable_jobs; Owner: durable_job_evidence_owner
--

GRANT INSERT(change_reason) ON TABLE durable_jobs.control_evidence_record TO durable_job_policy_owner;
GRANT SELECT(change_reason) ON TABLE durable_jobs.control_evidence_record TO durable_job_audit_owner;
GRANT INSERT(change_reason) ON TABLE durable_jobs.control_evidence_record TO durable_job_retention_owner;

--
-- Name: COLUMN control_evidence_record.changed_by_role; Type: ACL; Schema: durable_jobs; Owner: durable_job_evidence_owner
--

GRANT SELECT(changed_by_role) ON TABLE durable_jobs.control_evidence_record TO durable_job_audit_owner;

--
-- Name: COLUMN control_evidence_record.recorded_at; Type: ACL; Schema: durable_jobs; Owner: durable_job_evidence_owner
--

GRANT SELECT(recorded_at) ON TABLE durable_jobs.control_evidence_record TO durable_job_audit_owner;

--
-- Name: COLUMN control_evidence_record.change_ticket; Type: ACL; Schema: durable_jobs; Owner: durable_job_evidence_owner
--

GRANT INSERT(change_ticket) ON TABLE durable_jobs.control_evidence_record TO durable_job_policy_owner;
GRANT SELECT(change_ticket) ON TABLE durable_jobs.control_evidence_record TO durable_job_audit_owner;
GRANT INSERT(change_ticket) ON TABLE durable_jobs.control_evidence_record TO durable_job_retention_owner;

--
-- Name: COLUMN control_evidence_record.change_approver; Type: ACL; Schema: durable_jobs; Owner: durable_job_evidence_owner
--

GRANT INSERT(change_approver) ON TABLE durable_jobs.control_evidence_record TO durable_job_policy_owner;
GRANT SELECT(change_approver) ON TABLE durable_jobs.control_evidence_record TO durable_job_audit_owner;
GRANT INSERT(change_approver) ON TABLE durable_jobs.control_evidence_record TO durable_job_retention_owner;

--
-- Name: COLUMN control_evidence_record.previous_record_hash; Type: ACL; Schema: durable_jobs; Owner: durable_job_evidence_owner
--

GRANT SELECT(previous_record_hash) ON TABLE durable_jobs.control_evidence_record TO durable_job_audit_owner;

--
-- Name: COLUMN control_evidence_record.record_hash; Type: ACL; Schema: durable_jobs; Owner: durable_job_evidence_owner
--

GRANT SELECT(record_hash) ON TABLE durable_jobs.control_evidence_record TO durable_job_policy_owner;
GRANT SELECT(record_hash) ON TABLE durable_jobs.control_evidence_record TO durable_job_audit_owner;
GRANT SELECT(record_hash) ON TABLE durable_jobs.control_evidence_record TO durable_job_retention_owner;

--
-- Name: FUNCTION bundle_migration_version(); Type: ACL; Schema: durable_jobs; Owner: durable_job_audit_owner
--

REVOKE ALL ON FUNCTION durable_jobs.bundle_migration_version() FROM PUBLIC;
GRANT ALL ON FUNCTION durable_jobs.bundle_migration_version() TO durable_job_auditor;

--
-- Name: FUNCTION cancel_job_recorded(p_job_record_id bigint, p_change_reason text, p_change_ticket text, p_change_approver text); Type: ACL; Schema: durable_jobs; Owner: durable_job_producer_owner
--

REVOKE ALL ON FUNCTION durable_jobs.cancel_job_recorded(p_job_record_id bigint, p_change_reason text, p_change_ticket text, p_change_approver text) FROM PUBLIC;

--
-- Name: FUNCTION cancel_job(p_job_record_id bigint); Type: ACL; Schema: durable_jobs; Owner: durable_job_producer_owner
--

REVOKE ALL ON FUNCTION durable_jobs.cancel_job(p_job_record_id bigint) FROM PUBLIC;
GRANT ALL ON FUNCTION durable_jobs.cancel_job(p_job_record_id bigint) TO durable_job_producer;

--
-- Name: FUNCTION cancel_job(p_job_record_id bigint, p_change_reason text, p_change_ticket text, p_change_approver text); Type: ACL; Schema: durable_jobs; Owner: durable_job_producer_owner
--

REVOKE ALL ON FUNCTION durable_jobs.cancel_job(p_job_record_id bigint, p_change_reason text, p_change_ticket text, p_change_approver text) FROM PUBLIC;
GRANT ALL ON FUNCTION durable_jobs.cancel_job(p_job_record_id bigint, p_change_reason text, p_change_ticket text, p_change_approver text) TO durable_job_operator;

--
-- Name: FUNCTION chain_evidence_record(); Type: ACL; Schema: durable_jobs; Owner: postgres
--

REVOKE ALL ON FUNCTION durable_jobs.chain_evidence_record() FROM PUBLIC;

--
-- Name: COLUMN change_control_setting.change_control_row; Type: ACL; Schema: durable_jobs; Owner: postgres
--

GRANT SELECT(change_control_row) ON TABLE durable_jobs.change_control_setting TO durable_job_policy_owner;
GRANT SELECT(change_control_row) ON TABLE durable_jobs.change_control_setting TO durable_job_retention_owner;

--
-- Name: COLUMN change_control_setting.ticket_pattern; Type: ACL; Schema: durable_jobs; Owner: postgres
--

GRANT SELECT(ticket_pattern),UPDATE(ticket_pattern) ON TABLE durable_jobs.change_control_setting TO durable_job_policy_owner;
GRANT SELECT(ticket_pattern) ON TABLE durable_jobs.change_control_setting TO durable_job_retention_owner;
GRANT SELECT(ticket_pattern) ON TABLE durable_jobs.change_control_setting TO durable_job_audit_owner;

--
-- Name: COLUMN change_control_setting.require_approver; Type: ACL; Schema: durable_jobs; Owner: postgres
--

GRANT SELECT(require_approver),UPDATE(require_approver) ON TABLE durable_jobs.change_control_setting TO durable_job_policy_owner;
GRANT SELECT(require_approver) ON TABLE durable_jobs.change_control_setting TO durable_job_retention_owner;
GRANT SELECT(require_approver) ON TABLE durable_jobs.change_control_setting TO durable_job_audit_owner;

--
-- Name: COLUMN change_control_setting.approver_must_differ; Type: ACL; Schema: durable_jobs; Owner: postgres
--

GRANT SELECT(approver_must_differ),UPDATE(approver_must_differ) ON TABLE durable_jobs.change_control_setting TO durable_job_policy_owner;
GRANT SELECT(approver_must_differ) ON TABLE durable_jobs.change_control_setting TO durable_job_retention_owner;
GRANT SELECT(approver_must_differ) ON TABLE durable_jobs.change_control_setting TO durable_job_audit_owner;

--
-- Name: COLUMN change_control_setting.changed_at; Type: ACL; Schema: durable_jobs; Owner: postgres
--

GRANT SELECT(changed_at),UPDATE(changed_at) ON TABLE durable_jobs.change_control_setting TO durable_job_policy_owner;
GRANT SELECT(changed_at) ON TABLE durable_jobs.change_control_setting TO durable_job_retention_owner;

--
-- Name: COLUMN change_control_setting.changed_by_role; Type: ACL; Schema: durable_jobs; Owner: postgres
--

GRANT SELECT(changed_by_role),UPDATE(changed_by_role) ON TABLE durable_jobs.change_control_setting TO durable_job_policy_owner;
GRANT SELECT(changed_by_role) ON TABLE durable_jobs.change_control_setting TO durable_job_retention_owner;

--
-- Name: COLUMN change_control_setting.reason_pattern; Type: ACL; Schema: durable_jobs; Owner: postgres
--

GRANT SELECT(reason_pattern),UPDATE(reason_pattern) ON TABLE durable_jobs.change_control_setting TO durable_job_policy_owner;
GRANT SELECT(reason_pattern) ON TABLE durable_jobs.change_control_setting TO durable_job_retention_owner;
GRANT SELECT(reason_pattern) ON TABLE durable_jobs.change_control_setting TO durable_job_audit_owner;

--
-- Name: COLUMN change_control_setting.require_second_operator; Type: ACL; Schema: durable_jobs; Owner: postgres
--

GRANT SELECT(require_second_operator),UPDATE(require_second_operator) ON TABLE durable_jobs.change_control_setting TO durable_job_policy_owner;
GRANT SELECT(require_second_operator) ON TABLE durable_jobs.change_control_setting TO durable_job_retention_owner;
GRANT SELECT(require_second_operator) ON TABLE durable_jobs.change_control_setting TO durable_job_audit_owner;

--
-- Name: COLUMN change_control_setting.proposal_lifetime; Type: ACL; Schema: durable_jobs; Owner: postgres
--

GRANT SELECT(proposal_lifetime),UPDATE(proposal_lifetime) ON TABLE durable_jobs.change_control_setting TO durable_job_policy_owner;
GRANT SELECT(proposal_lifetime) ON TABLE durable_jobs.change_control_setting TO durable_job_retention_owner;
GRANT SELECT(proposal_lifetime) ON TABLE durable_jobs.change_control_setting TO durable_job_audit_owner;

--
-- Name: FUNCTION change_control(); Type: ACL; Schema: durable_jobs; Owner: durable_job_policy_owner
--

REVOKE ALL ON FUNCTION durable_jobs.change_control() FROM PUBLIC;
GRANT ALL ON FUNCTION durable_jobs.change_control() TO durable_job_auditor;
GRANT ALL ON FUNCTION durable_jobs.change_control() TO durable_job_operator;

--
-- Name: FUNCTION change_queue_lease_policy(p_queue_name text, p_lease_duration interval, p_renewal_interval interval, p_max_claim_lifetime interval, p_renewal_enabled boolean, p_change_reason text, p_change_ticket text, p_change_approver text); Type: ACL; Schema: durable_jobs; Owner: durable_job_policy_owner
--

REVOKE ALL ON FUNCTION durable_jobs.change_queue_lease_policy(p_queue_name text, p_lease_duration interval, p_renewal_interval interval, p_max_claim_lifetime interval, p_renewal_enabled boolean, p_change_reason text, p_change_ticket text, p_change_approver text) FROM PUBLIC;

--
-- Name: FUNCTION check_change_record(p_setting durable_jobs.change_control_setting, p_change_reason text, p_change_ticket text, p_change_approver text); Type: ACL; Schema: durable_jobs; Owner: postgres
--

REVOKE ALL ON FUNCTION durable_jobs.check_change_record(p_setting durable_jobs.change_control_setting, p_change_reason text, p_change_ticket text, p_change_approver text) FROM PUBLIC;
GRANT ALL ON FUNCTION durable_jobs.check_change_record(p_setting durable_jobs.change_control_setting, p_change_reason text, p_change_ticket text, p_change_approver text) TO durable_job_policy_owner;
GRANT ALL ON FUNCTION durable_jobs.check_change_record(p_setting durable_jobs.change_control_setting, p_change_reason text, p_change_ticket text, p_change_approver text) TO durable_job_retention_owner;

--
-- Name: FUNCTION claim_next_job(p_queue_name text, p_worker_owner_id text); Type: ACL; Schema: durable_jobs; Owner: durable_job_claim_owner
--

REVOKE ALL ON FUNCTION durable_jobs.claim_next_job(p_queue_name text, p_worker_owner_id text) FROM PUBLIC;
GRANT ALL ON FUNCTION durable_jobs.claim_next_job(p_queue_name text, p_worker_owner_id text) TO durable_job_worker;

--
-- Name: FUNCTION claim_next_jobs(p_queue_name text, p_worker_owner_id text, p_max_jobs integer); Type: ACL; Schema: durable_jobs; Owner: durable_job_claim_owner
--

REVOKE ALL ON FUNCTION durable_jobs.claim_next_jobs(p_queue_name text, p_worker_owner_id text, p_max_jobs integer) FROM PUBLIC;
GRANT ALL ON FUNCTION durable_jobs.claim_next_jobs(p_queue_name text, p_worker_owner_id text, p_max_jobs integer) TO durable_job_worker;

--
-- Name: FUNCTION claim_token_digest(p_lease_claim_token uuid); Type: ACL; Schema: durable_jobs; Owner: postgres
--

REVOKE ALL ON FUNCTION durable_jobs.claim_token_digest(p_lease_claim_token uuid) FROM PUBLIC;
GRANT ALL ON FUNCTION durable_jobs.claim_token_digest(p_lease_claim_token uuid) TO durable_job_claim_owner;
GRANT ALL ON FUNCTION durable_jobs.claim_token_digest(p_lease_claim_token uuid) TO durable_job_renewal_owner;
GRANT ALL ON FUNCTION durable_jobs.claim_token_digest(p_lease_claim_token uuid) TO durable_job_terminal_owner;

--
-- Name: FUNCTION complete_job(p_job_record_id bigint, p_lease_claim_token uuid, p_worker_owner_id text, p_result_document jsonb); Type: ACL; Schema: durable_jobs; Owner: durable_job_terminal_owner
--

REVOKE ALL ON FUNCTION durable_jobs.complete_job(p_job_record_id bigint, p_lease_claim_token uuid, p_worker_owner_id text, p_result_document jsonb) FROM PUBLIC;
GRANT ALL ON FUNCTION durable_jobs.complete_job(p_job_record_id bigint, p_lease_claim_token uuid, p_worker_owner_id text, p_result_document jsonb) TO durable_job_worker;

--
-- Name: FUNCTION complete_jobs(p_worker_owner_id text, p_job_record_ids bigint[], p_lease_claim_tokens uuid[], p_result_documents jsonb[]); Type: ACL; Schema: durable_jobs; Owner: durable_job_terminal_owner
--

REVOKE ALL ON FUNCTION durable_jobs.complete_jobs(p_worker_owner_id text, p_job_record_ids bigint[], p_lease_claim_tokens uuid[], p_result_documents jsonb[]) FROM PUBLIC;
GRANT ALL ON FUNCTION durable_jobs.complete_jobs(p_worker_owner_id text, p_job_record_ids bigint[], p_lease_claim_tokens uuid[], p_result_documents jsonb[]) TO durable_job_worker;

--
-- Name: FUNCTION continue_evidence_chain(p_previous_head_id bigint, p_previous_head_hash bytea, p_change_reason text, p_change_ticket text, p_change_approver text); Type: ACL; Schema: durable_jobs; Owner: durable_job_policy_owner
--

REVOKE ALL ON FUNCTION durable_jobs.continue_evidence_chain(p_previous_head_id bigint, p_previous_head_hash bytea, p_change_reason text, p_change_ticket text, p_change_approver text) FROM PUBLIC;
GRANT ALL ON FUNCTION durable_jobs.continue_evidence_chain(p_previous_head_id bigint, p_previous_head_hash bytea, p_change_reason text, p_change_ticket text, p_change_approver text) TO durable_job_operator;

--
-- Name: FUNCTION evidence_content_digest(p_evidence_record_id bigint, p_evidence_kind text, p_queue_name text, p_previous_values jsonb, p_new_values jsonb, p_change_reason text, p_changed_by_role text, p_recorded_at timestamp with time zone, p_change_ticket text, p_change_approver text); Type: ACL; Schema: durable_jobs; Owner: postgres
--

REVOKE ALL ON FUNCTION durable_jobs.evidence_content_digest(p_evidence_record_id bigint, p_evidence_kind text, p_queue_name text, p_previous_values jsonb, p_new_values jsonb, p_change_reason text, p_changed_by_role text, p_recorded_at timestamp with time zone, p_change_ticket text, p_change_approver text) FROM PUBLIC;
GRANT ALL ON FUNCTION durable_jobs.evidence_content_digest(p_evidence_record_id bigint, p_evidence_kind text, p_queue_name text, p_previous_values jsonb, p_new_values jsonb, p_change_reason text, p_changed_by_role text, p_recorded_at timestamp with time zone, p_change_ticket text, p_change_approver text) TO durable_job_policy_owner;
GRANT ALL ON FUNCTION durable_jobs.evidence_content_digest(p_evidence_record_id bigint, p_evidence_kind text, p_queue_name text, p_previous_values jsonb, p_new_values jsonb, p_change_reason text, p_changed_by_role text, p_recorded_at timestamp with time zone, p_change_ticket text, p_change_approver text) TO durable_job_audit_owner;
GRANT ALL ON FUNCTION durable_jobs.evidence_content_digest(p_evidence_record_id bigint, p_evidence_kind text, p_queue_name text, p_previous_values jsonb, p_new_values jsonb, p_change_reason text, p_changed_by_role text, p_recorded_at timestamp with time zone, p_change_ticket text, p_change_approver text) TO durable_job_retention_owner;

--
-- Name: FUNCTION control_evidence_chain(); Type: ACL; Schema: durable_jobs; Owner: durable_job_audit_owner
--

REVOKE ALL ON FUNCTION durable_jobs.control_evidence_chain() FROM PUBLIC;
GRANT ALL ON FUNCTION durable_jobs.control_evidence_chain() TO durable_job_auditor;

--
-- Name: FUNCTION control_evidence_history(p_since timestamp with time zone); Type: ACL; Schema: durable_jobs; Owner: durable_job_audit_owner
--

REVOKE ALL ON FUNCTION durable_jobs.control_evidence_history(p_since timestamp with time zone) FROM PUBLIC;
GRANT ALL ON FUNCTION durable_jobs.control_evidence_history(p_since timestamp with time zone) TO durable_job_auditor;

--
-- Name: COLUMN queue_retention_policy.queue_name; Type: ACL; Schema: durable_jobs; Owner: postgres
--

GRANT SELECT(queue_name),INSERT(queue_name) ON TABLE durable_jobs.queue_retention_policy TO durable_job_retention_owner;
GRANT SELECT(queue_name) ON TABLE durable_jobs.queue_retention_policy TO durable_job_audit_owner;

--
-- Name: COLUMN queue_retention_policy.payload_retention; Type: ACL; Schema: durable_jobs; Owner: postgres
--

GRANT SELECT(payload_retention),INSERT(payload_retention),UPDATE(payload_retention) ON TABLE durable_jobs.queue_retention_policy TO durable_job_retention_owner;
GRANT SELECT(payload_retention) ON TABLE durable_jobs.queue_retention_policy TO durable_job_audit_owner;

--
-- Name: COLUMN queue_retention_policy.record_retention; Type: ACL; Schema: durable_jobs; Owner: postgres
--

GRANT SELECT(record_retention),INSERT(record_retention),UPDATE(record_retention) ON TABLE durable_jobs.queue_retention_policy TO durable_job_retention_owner;
GRANT SELECT(record_retention) ON TABLE durable_jobs.queue_retention_policy TO durable_job_audit_owner;

--
-- Name: COLUMN queue_retention_policy.changed_at; Type: ACL; Schema: durable_jobs; Owner: postgres
--

GRANT SELECT(changed_at),INSERT(changed_at),UPDATE(changed_at) ON TABLE durable_jobs.queue_retention_policy TO durable_job_retention_owner;

--
-- Name: COLUMN queue_retention_policy.changed_by_role; Type: ACL; Schema: durable_jobs; Owner: postgres
--

GRANT SELECT(changed_by_role),INSERT(changed_by_role),UPDATE(changed_by_role) ON TABLE durable_jobs.queue_retention_policy TO durable_job_retention_owner;

--
-- Name: FUNCTION control_evidence_mismatches(); Type: ACL; Schema: durable_jobs; Owner: durable_job_audit_owner
--

REVOKE ALL ON FUNCTION durable_jobs.control_evidence_mismatches() FROM PUBLIC;
GRANT ALL ON FUNCTION durable_jobs.control_evidence_mismatches() TO durable_job_auditor;

--
-- Name: FUNCTION control_evidence_records(p_since timestamp with time zone, p_until timestamp with time zone); Type: ACL; Schema: durable_jobs; Owner: durable_job_audit_owner
--

REVOKE ALL ON FUNCTION durable_jobs.control_evidence_records(p_since timestamp with time zone, p_until timestamp with time zone) FROM PUBLIC;
GRANT ALL ON FUNCTION durable_jobs.control_evidence_records(p_since timestamp with time zone, p_until timestamp with time zone) TO durable_job_auditor;

--
-- Name: TABLE pending_change; Type: ACL; Schema: durable_jobs; Owner: postgres
--

GRANT SELECT ON TABLE durable_jobs.pending_change TO durable_job_policy_owner;

--
-- Name: COLUMN pending_change.change_kind; Type: ACL; Schema: durable_jobs; Owner: postgres
--

GRANT INSERT(change_kind) ON TABLE durable_jobs.pending_change TO durable_job_policy_owner;

--
-- Name: COLUMN pending_change.queue_name; Type: ACL; Schema: durable_jobs; Owner: postgres
--

GRANT INSERT(queue_name) ON TABLE durable_jobs.pending_change TO durable_job_policy_owner;

--
-- Name: COLUMN pending_change.proposed_values; Type: ACL; Schema: durable_jobs; Owner: postgres
--

GRANT INSERT(proposed_values) ON TABLE durable_jobs.pending_change TO durable_job_policy_owner;

--
-- Name: COLUMN pending_change.change_reason; Type: ACL; Schema: durable_jobs; Owner: postgres
--

GRANT INSERT(change_reason) ON TABLE durable_jobs.pending_change TO durable_job_policy_owner;

--
-- Name: COLUMN pending_change.change_ticket; Type: ACL; Schema: durable_jobs; Owner: postgres
--

GRANT INSERT(change_ticket) ON TABLE durable_jobs.pending_change TO durable_job_policy_owner;

--
-- Name: COLUMN pending_change.expires_at; Type: ACL; Schema: durable_jobs; Owner: postgres
--

GRANT INSERT(expires_at) ON TABLE durable_jobs.pending_change TO durable_job_policy_owner;

--
-- Name: COLUMN pending_change.change_decision; Type: ACL; Schema: durable_jobs; Owner: postgres
--

GRANT UPDATE(change_decision) ON TABLE durable_jobs.pending_change TO durable_job_policy_owner;

--
-- Name: COLUMN pending_change.decided_by_role; Type: ACL; Schema: durable_jobs; Owner: postgres
--

GRANT UPDATE(decided_by_role) ON TABLE durable_jobs.pending_change TO durable_job_policy_owner;

--
-- Name: COLUMN pending_change.decided_at; Type: ACL; Schema: durable_jobs; Owner: postgres
--

GRANT UPDATE(decided_at) ON TABLE durable_jobs.pending_change TO durable_job_policy_owner;

--
-- Name: COLUMN pending_change.decided_in_transaction; Type: ACL; Schema: durable_jobs; Owner: postgres
--

GRANT UPDATE(decided_in_transaction) ON TABLE durable_jobs.pending_change TO durable_job_policy_owner;

--
-- Name: FUNCTION decide_change(p_change_id bigint, p_decision text, p_change_reason text); Type: ACL; Schema: durable_jobs; Owner: durable_job_policy_owner
--

REVOKE ALL ON FUNCTION durable_jobs.decide_change(p_change_id bigint, p_decision text, p_change_reason text) FROM PUBLIC;

--
-- Name: COLUMN queue_lease_policy.queue_name; Type: ACL; Schema: durable_jobs; Owner: postgres
--

GRANT SELECT(queue_name) ON TABLE durable_jobs.queue_lease_policy TO durable_job_claim_owner;
GRANT SELECT(queue_name) ON TABLE durable_jobs.queue_lease_policy TO durable_job_renewal_owner;
GRANT SELECT(queue_name),INSERT(queue_name) ON TABLE durable_jobs.queue_lease_policy TO durable_job_policy_owner;
GRANT SELECT(queue_name) ON TABLE durable_jobs.queue_lease_policy TO durable_job_audit_owner;

--
-- Name: COLUMN queue_lease_policy.lease_duration; Type: ACL; Schema: durable_jobs; Owner: postgres
--

GRANT SELECT(lease_duration) ON TABLE durable_jobs.queue_lease_policy TO durable_job_claim_owner;
GRANT SELECT(lease_duration) ON TABLE durable_jobs.queue_lease_policy TO durable_job_renewal_owner;
GRANT SELECT(lease_duration),INSERT(lease_duration),UPDATE(lease_duration) ON TABLE durable_jobs.queue_lease_policy TO durable_job_policy_owner;
GRANT SELECT(lease_duration) ON TABLE durable_jobs.queue_lease_policy TO durable_job_audit_owner;

--
-- Name: COLUMN queue_lease_policy.renewal_interval; Type: ACL; Schema: durable_jobs; Owner: postgres
--

GRANT SELECT(renewal_interval) ON TABLE durable_jobs.queue_lease_policy TO durable_job_claim_owner;
GRANT SELECT(renewal_interval),INSERT(renewal_interval),UPDATE(renewal_interval) ON TABLE durable_jobs.queue_lease_policy TO durable_job_policy_owner;
GRANT SELECT(renewal_interval) ON TABLE durable_jobs.queue_lease_policy TO durable_job_audit_owner;

--
-- Name: COLUMN queue_lease_policy.max_claim_lifetime; Type: ACL; Schema: durable_jobs; Owner: postgres
--

GRANT SELECT(max_claim_lifetime) ON TABLE durable_jobs.queue_lease_policy TO durable_job_claim_owner;
GRANT SELECT(max_claim_lifetime),INSERT(max_claim_lifetime),UPDATE(max_claim_lifetime) ON TABLE durable_jobs.queue_lease_policy TO durable_job_policy_owner;
GRANT SELECT(max_claim_lifetime) ON TABLE durable_jobs.queue_lease_policy TO durable_job_audit_owner;

--
-- Name: COLUMN queue_lease_policy.renewal_enabled; Type: ACL; Schema: durable_jobs; Owner: postgres
--

GRANT SELECT(renewal_enabled) ON TABLE durable_jobs.queue_lease_policy TO durable_job_renewal_owner;
GRANT SELECT(renewal_enabled),INSERT(renewal_enabled),UPDATE(renewal_enabled) ON TABLE durable_jobs.queue_lease_policy TO durable_job_policy_owner;
GRANT SELECT(renewal_enabled) ON TABLE durable_jobs.queue_lease_policy TO durable_job_audit_owner;

--
-- Name: COLUMN queue_lease_policy.changed_at; Type: ACL; Schema: durable_jobs; Owner: postgres
--

GRANT SELECT(changed_at),INSERT(changed_at),UPDATE(changed_at) ON TABLE durable_jobs.queue_lease_policy TO durable_job_policy_owner;
GRANT SELECT(changed_at) ON TABLE durable_jobs.queue_lease_policy TO durable_job_audit_owner;

--
-- Name: COLUMN queue_lease_policy.changed_by_role; Type: ACL; Schema: durable_jobs; Owner: postgres
--

GRANT SELECT(changed_by_role),INSERT(changed_by_role),UPDATE(changed_by_role) ON TABLE durable_jobs.queue_lease_policy TO durable_job_policy_owner;
GRANT SELECT(changed_by_role) ON TABLE durable_jobs.queue_lease_policy TO durable_job_audit_owner;

--
-- Name: FUNCTION effective_lease_policy_queue(p_queue_name text); Type: ACL; Schema: durable_jobs; Owner: postgres
--

REVOKE ALL ON FUNCTION durable_jobs.effective_lease_policy_queue(p_queue_name text) FROM PUBLIC;
GRANT ALL ON FUNCTION durable_jobs.effective_lease_policy_queue(p_queue_name text) TO durable_job_claim_owner;
GRANT ALL ON FUNCTION durable_jobs.effective_lease_policy_queue(p_queue_name text) TO durable_job_renewal_owner;
GRANT ALL ON FUNCTION durable_jobs.effective_lease_policy_queue(p_queue_name text) TO durable_job_policy_owner;
GRANT ALL ON FUNCTION durable_jobs.effective_lease_policy_queue(p_queue_name text) TO durable_job_audit_owner;

--
-- Name: FUNCTION enqueue_job(p_queue_name text, p_job_payload jsonb, p_idempotency_key text, p_run_after timestamp with time zone, p_max_attempts integer); Type: ACL; Schema: durable_jobs; Owner: durable_job_producer_owner
--

REVOKE ALL ON FUNCTION durable_jobs.enqueue_job(p_queue_name text, p_job_payload jsonb, p_idempotency_key text, p_run_after timestamp with time zone, p_max_attempts integer) FROM PUBLIC;
GRANT ALL ON FUNCTION durable_jobs.enqueue_job(p_queue_name text, p_job_payload jsonb, p_idempotency_key text, p_run_after timestamp with time zone, p_max_attempts integer) TO durable_job_producer;

--
-- Name: FUNCTION enqueue_jobs(p_queue_name text, p_job_payloads jsonb[], p_idempotency_keys text[], p_run_afters timestamp with time zone[], p_max_attempts integer[]); Type: ACL; Schema: durable_jobs; Owner: durable_job_producer_owner
--

REVOKE ALL ON FUNCTION durable_jobs.enqueue_jobs(p_queue_name text, p_job_payloads jsonb[], p_idempotency_keys text[], p_run_afters timestamp with time zone[], p_max_attempts integer[]) FROM PUBLIC;
GRANT ALL ON FUNCTION durable_jobs.enqueue_jobs(p_queue_name text, p_job_payloads jsonb[], p_idempotency_keys text[], p_run_afters timestamp with time zone[], p_max_attempts integer[]) TO durable_job_producer;

--
-- Name: FUNCTION erase_job_payload(p_job_record_id bigint, p_change_reason text, p_change_ticket text, p_change_approver text); Type: ACL; Schema: durable_jobs; Owner: durable_job_retention_owner
--

REVOKE ALL ON FUNCTION durable_jobs.erase_job_payload(p_job_record_id bigint, p_change_reason text, p_change_ticket text, p_change_approver text) FROM PUBLIC;
GRANT ALL ON FUNCTION durable_jobs.erase_job_payload(p_job_record_id bigint, p_change_reason text, p_change_ticket text, p_change_approver text) TO durable_job_operator;

--
-- Name: FUNCTION erase_job_payload(p_job_record_id bigint, p_change_reason text); Type: ACL; Schema: durable_jobs; Owner: durable_job_retention_owner
--

REVOKE ALL ON FUNCTION durable_jobs.erase_job_payload(p_job_record_id bigint, p_change_reason text) FROM PUBLIC;
GRANT ALL ON FUNCTION durable_jobs.erase_job_payload(p_job_record_id bigint, p_change_reason text) TO durable_job_operator;

--
-- Name: FUNCTION fail_job(p_job_record_id bigint, p_lease_claim_token uuid, p_worker_owner_id text, p_failure_reason_code text); Type: ACL; Schema: durable_jobs; Owner: durable_job_terminal_owner
--

REVOKE ALL ON FUNCTION durable_jobs.fail_job(p_job_record_id bigint, p_lease_claim_token uuid, p_worker_owner_id text, p_failure_reason_code text) FROM PUBLIC;
GRANT ALL ON FUNCTION durable_jobs.fail_job(p_job_record_id bigint, p_lease_claim_token uuid, p_worker_owner_id text, p_failure_reason_code text) TO durable_job_worker;

--
-- Name: FUNCTION failure_reason_code_is_well_formed(p_failure_reason_code text); Type: ACL; Schema: durable_jobs; Owner: postgres
--

REVOKE ALL ON FUNCTION durable_jobs.failure_reason_code_is_well_formed(p_failure_reason_code text) FROM PUBLIC;
GRANT ALL ON FUNCTION durable_jobs.failure_reason_code_is_well_formed(p_failure_reason_code text) TO durable_job_producer_owner;
GRANT ALL ON FUNCTION durable_jobs.failure_reason_code_is_well_formed(p_failure_reason_code text) TO durable_job_claim_owner;
GRANT ALL ON FUNCTION durable_jobs.failure_reason_code_is_well_formed(p_failure_reason_code text) TO durable_job_renewal_owner;
GRANT ALL ON FUNCTION durable_jobs.failure_reason_code_is_well_formed(p_failure_reason_code text) TO durable_job_terminal_owner;
GRANT ALL ON FUNCTION durable_jobs.failure_reason_code_is_well_formed(p_failure_reason_code text) TO durable_job_policy_owner;
GRANT ALL ON FUNCTION durable_jobs.failure_reason_code_is_well_formed(p_failure_reason_code text) TO durable_job_retention_owner;
GRANT ALL ON FUNCTION durable_jobs.failure_reason_code_is_well_formed(p_failure_reason_code text) TO durable_job_audit_owner;

--
-- Name: FUNCTION failure_reason_code_pattern(); Type: ACL; Schema: durable_jobs; Owner: postgres
--

REVOKE ALL ON FUNCTION durable_jobs.failure_reason_code_pattern() FROM PUBLIC;
GRANT ALL ON FUNCTION durable_jobs.failure_reason_code_pattern() TO durable_job_producer_owner;
GRANT ALL ON FUNCTION durable_jobs.failure_reason_code_pattern() TO durable_job_claim_owner;
GRANT ALL ON FUNCTION durable_jobs.failure_reason_code_pattern() TO durable_job_renewal_owner;
GRANT ALL ON FUNCTION durable_jobs.failure_reason_code_pattern() TO durable_job_terminal_owner;
GRANT ALL ON FUNCTION durable_jobs.failure_reason_code_pattern() TO durable_job_policy_owner;
GRANT ALL ON FUNCTION durable_jobs.failure_reason_code_pattern() TO durable_job_retention_owner;
GRANT ALL ON FUNCTION durable_jobs.failure_reason_code_pattern() TO durable_job_audit_owner;

--
-- Name: FUNCTION is_plain_change_reason(p_change_reason text); Type: ACL; Schema: durable_jobs; Owner: postgres
--

REVOKE ALL ON FUNCTION durable_jobs.is_plain_change_reason(p_change_reason text) FROM PUBLIC;
GRANT ALL ON FUNCTION durable_jobs.is_plain_change_reason(p_change_reason text) TO durable_job_policy_owner;
GRANT ALL ON FUNCTION durable_jobs.is_plain_change_reason(p_change_reason text) TO durable_job_retention_owner;

--
-- Name: FUNCTION job_lifecycle_state(p_job_record_id bigint); Type: ACL; Schema: durable_jobs; Owner: durable_job_producer_owner
--

REVOKE ALL ON FUNCTION durable_jobs.job_lifecycle_state(p_job_record_id bigint) FROM PUBLIC;
GRANT ALL ON FUNCTION durable_jobs.job_lifecycle_state(p_job_record_id bigint) TO durable_job_producer;

--
-- Name: TABLE job_outcome_ledger; Type: ACL; Schema: durable_jobs; Owner: postgres
--

GRANT DELETE ON TABLE durable_jobs.job_outcome_ledger TO durable_job_retention_owner;

--
-- Name: COLUMN job_outcome_ledger.job_record_id; Type: ACL; Schema: durable_jobs; Owner: postgres
--

GRANT INSERT(job_record_id) ON TABLE durable_jobs.job_outcome_ledger TO durable_job_terminal_owner;
GRANT SELECT(job_record_id) ON TABLE durable_jobs.job_outcome_ledger TO durable_job_retention_owner;
GRANT SELECT(job_record_id) ON TABLE durable_jobs.job_outcome_ledger TO durable_job_audit_owner;

--
-- Name: COLUMN job_outcome_ledger.lease_fencing_generation; Type: ACL; Schema: durable_jobs; Owner: postgres
--

GRANT INSERT(lease_fencing_generation) ON TABLE durable_jobs.job_outcome_ledger TO durable_job_terminal_owner;
GRANT SELECT(lease_fencing_generation) ON TABLE durable_jobs.job_outcome_ledger TO durable_job_audit_owner;

--
-- Name: COLUMN job_outcome_ledger.outcome_status; Type: ACL; Schema: durable_jobs; Owner: postgres
--

GRANT INSERT(outcome_status) ON TABLE durable_jobs.job_outcome_ledger TO durable_job_terminal_owner;
GRANT SELECT(outcome_status) ON TABLE durable_jobs.job_outcome_ledger TO durable_job_audit_owner;

--
-- Name: COLUMN job_outcome_ledger.failure_reason_code; Type: ACL; Schema: durable_jobs; Owner: postgres
--

GRANT INSERT(failure_reason_code) ON TABLE durable_jobs.job_outcome_ledger TO durable_job_terminal_owner;

--
-- Name: COLUMN job_outcome_ledger.result_document; Type: ACL; Schema: durable_jobs; Owner: postgres
--

GRANT INSERT(result_document) ON TABLE durable_jobs.job_outcome_ledger TO durable_job_terminal_owner;
GRANT UPDATE(result_document) ON TABLE durable_jobs.job_outcome_ledger TO durable_job_retention_owner;

--
-- Name: COLUMN job_outcome_ledger.recorded_at; Type: ACL; Schema: durable_jobs; Owner: postgres
--

GRANT SELECT(recorded_at) ON TABLE durable_jobs.job_outcome_ledger TO durable_job_audit_owner;

--
-- Name: TABLE job_record; Type: ACL; Schema: durable_jobs; Owner: postgres
--

GRANT DELETE ON TABLE durable_jobs.job_record TO durable_job_retention_owner;

--
-- Name: COLUMN job_record.ctid; Type: ACL; Schema: durable_jobs; Owner: postgres
--

GRANT SELECT(ctid) ON TABLE durable_jobs.job_record TO durable_job_renewal_owner;
GRANT SELECT(ctid) ON TABLE durable_jobs.job_record TO durable_job_terminal_owner;

--
-- Name: COLUMN job_record.job_record_id; Type: ACL; Schema: durable_jobs; Owner: postgres
--

GRANT SELECT(job_record_id) ON TABLE durable_jobs.job_record TO durable_job_producer_owner;
GRANT SELECT(job_record_id) ON TABLE durable_jobs.job_record TO durable_job_claim_owner;
GRANT SELECT(job_record_id) ON TABLE durable_jobs.job_record TO durable_job_renewal_owner;
GRANT SELECT(job_record_id) ON TABLE durable_jobs.job_record TO durable_job_terminal_owner;
GRANT SELECT(job_record_id) ON TABLE durable_jobs.job_record TO durable_job_retention_owner;
GRANT SELECT(job_record_id) ON TABLE durable_jobs.job_record TO durable_job_audit_owner;

--
-- Name: COLUMN job_record.queue_name; Type: ACL; Schema: durable_jobs; Owner: postgres
--

GRANT SELECT(queue_name),INSERT(queue_name) ON TABLE durable_jobs.job_record TO durable_job_producer_owner;
GRANT SELECT(queue_name) ON TABLE durable_jobs.job_record TO durable_job_claim_owner;
GRANT SELECT(queue_name) ON TABLE durable_jobs.job_record TO durable_job_renewal_owner;
GRANT SELECT(queue_name) ON TABLE durable_jobs.job_record TO durable_job_audit_owner;
GRANT SELECT(queue_name) ON TABLE durable_jobs.job_record TO durable_job_retention_owner;
GRANT SELECT(queue_name) ON TABLE durable_jobs.job_record TO durable_job_terminal_owner;

--
-- Name: COLUMN job_record.job_status; Type: ACL; Schema: durable_jobs; Owner: postgres
--

GRANT SELECT(job_status),UPDATE(job_status) ON TABLE durable_jobs.job_record TO durable_job_producer_owner;
GRANT SELECT(job_status),UPDATE(job_status) ON TABLE durable_jobs.job_record TO durable_job_claim_owner;
GRANT SELECT(job_status) ON TABLE durable_jobs.job_record TO durable_job_renewal_owner;
GRANT SELECT(job_status),UPDATE(job_status) ON TABLE durable_jobs.job_record TO durable_job_terminal_owner;
GRANT SELECT(job_status) ON TABLE durable_jobs.job_record TO durable_job_audit_owner;
GRANT SELECT(job_status) ON TABLE durable_jobs.job_record TO durable_job_retention_owner;

--
-- Name: COLUMN job_record.idempotency_key_digest; Type: ACL; Schema: durable_jobs; Owner: postgres
--

GRANT SELECT(idempotency_key_digest),INSERT(idempotency_key_digest) ON TABLE durable_jobs.job_record TO durable_job_producer_owner;

--
-- Name: COLUMN job_record.run_after; Type: ACL; Schema: durable_jobs; Owner: postgres
--

GRANT INSERT(run_after),UPDATE(run_after) ON TABLE durable_jobs.job_record TO durable_job_producer_owner;
GRANT SELECT(run_after) ON TABLE durable_jobs.job_record TO durable_job_claim_owner;
GRANT UPDATE(run_after) ON TABLE durable_jobs.job_record TO durable_job_terminal_owner;
GRANT SELECT(run_after) ON TABLE durable_jobs.job_record TO durable_job_audit_owner;

--
-- Name: COLUMN job_record.max_attempts; Type: ACL; Schema: durable_jobs; Owner: postgres
--

GRANT SELECT(max_attempts),INSERT(max_attempts) ON TABLE durable_jobs.job_record TO durable_job_producer_owner;
GRANT SELECT(max_attempts) ON TABLE durable_jobs.job_record TO durable_job_claim_owner;
GRANT SELECT(max_attempts) ON TABLE durable_jobs.job_record TO durable_job_terminal_owner;
GRANT SELECT(max_attempts) ON TABLE durable_jobs.job_record TO durable_job_audit_owner;

--
-- Name: COLUMN job_record.attempt_number; Type: ACL; Schema: durable_jobs; Owner: postgres
--

GRANT SELECT(attempt_number),UPDATE(attempt_number) ON TABLE durable_jobs.job_record TO durable_job_producer_owner;
GRANT SELECT(attempt_number),UPDATE(attempt_number) ON TABLE durable_jobs.job_record TO durable_job_claim_owner;
GRANT SELECT(attempt_number),UPDATE(attempt_number) ON TABLE durable_jobs.job_record TO durable_job_terminal_owner;
GRANT SELECT(attempt_number) ON TABLE durable_jobs.job_record TO durable_job_audit_owner;

--
-- Name: COLUMN job_record.lease_claim_digest; Type: ACL; Schema: durable_jobs; Owner: postgres
--

GRANT UPDATE(lease_claim_digest) ON TABLE durable_jobs.job_record TO durable_job_claim_owner;
GRANT SELECT(lease_claim_digest) ON TABLE durable_jobs.job_record TO durable_job_renewal_owner;
GRANT SELECT(lease_claim_digest) ON TABLE durable_jobs.job_record TO durable_job_terminal_owner;

--
-- Name: COLUMN job_record.lease_owner_id; Type: ACL; Schema: durable_jobs; Owner: postgres
--

GRANT UPDATE(lease_owner_id) ON TABLE durable_jobs.job_record TO durable_job_claim_owner;
GRANT SELECT(lease_owner_id) ON TABLE durable_jobs.job_record TO durable_job_renewal_owner;
GRANT SELECT(lease_owner_id) ON TABLE durable_jobs.job_record TO durable_job_terminal_owner;

--
-- Name: COLUMN job_record.lease_claimed_by_role; Type: ACL; Schema: durable_jobs; Owner: postgres
--

GRANT UPDATE(lease_claimed_by_role) ON TABLE durable_jobs.job_record TO durable_job_claim_owner;
GRANT SELECT(lease_claimed_by_role) ON TABLE durable_jobs.job_record TO durable_job_renewal_owner;
GRANT SELECT(lease_claimed_by_role) ON TABLE durable_jobs.job_record TO durable_job_terminal_owner;
GRANT SELECT(lease_claimed_by_role) ON TABLE durable_jobs.job_record TO durable_job_audit_owner;

--
-- Name: COLUMN job_record.lease_claimed_at; Type: ACL; Schema: durable_jobs; Owner: postgres
--

GRANT SELECT(lease_claimed_at),UPDATE(lease_claimed_at) ON TABLE durable_jobs.job_record TO durable_job_claim_owner;
GRANT SELECT(lease_claimed_at) ON TABLE durable_jobs.job_record TO durable_job_audit_owner;

--
-- Name: COLUMN job_record.lease_expires_at; Type: ACL; Schema: durable_jobs; Owner: postgres
--

GRANT SELECT(lease_expires_at),UPDATE(lease_expires_at) ON TABLE durable_jobs.job_record TO durable_job_producer_owner;
GRANT SELECT(lease_expires_at),UPDATE(lease_expires_at) ON TABLE durable_jobs.job_record TO durable_job_claim_owner;
GRANT SELECT(lease_expires_at),UPDATE(lease_expires_at) ON TABLE durable_jobs.job_record TO durable_job_renewal_owner;
GRANT SELECT(lease_expires_at),UPDATE(lease_expires_at) ON TABLE durable_jobs.job_record TO durable_job_terminal_owner;
GRANT SELECT(lease_expires_at) ON TABLE durable_jobs.job_record TO durable_job_audit_owner;

--
-- Name: COLUMN job_record.lease_claim_deadline; Type: ACL; Schema: durable_jobs; Owner: postgres
--

GRANT UPDATE(lease_claim_deadline) ON TABLE durable_jobs.job_record TO durable_job_claim_owner;
GRANT SELECT(lease_claim_deadline) ON TABLE durable_jobs.job_record TO durable_job_renewal_owner;

--
-- Name: COLUMN job_record.lease_fencing_generation; Type: ACL; Schema: durable_jobs; Owner: postgres
--

GRANT SELECT(lease_fencing_generation) ON TABLE durable_jobs.job_record TO durable_job_producer_owner;
GRANT SELECT(lease_fencing_generation),UPDATE(lease_fencing_generation) ON TABLE durable_jobs.job_record TO durable_job_claim_owner;
GRANT SELECT(lease_fencing_generation) ON TABLE durable_jobs.job_record TO durable_job_terminal_owner;
GRANT SELECT(lease_fencing_generation) ON TABLE durable_jobs.job_record TO durable_job_audit_owner;

--
-- Name: COLUMN job_record.lease_renewal_count; Type: ACL; Schema: durable_jobs; Owner: postgres
--

GRANT SELECT(lease_renewal_count) ON TABLE durable_jobs.job_record TO durable_job_producer_owner;
GRANT UPDATE(lease_renewal_count) ON TABLE durable_jobs.job_record TO durable_job_claim_owner;
GRANT SELECT(lease_renewal_count),UPDATE(lease_renewal_count) ON TABLE durable_jobs.job_record TO durable_job_renewal_owner;
GRANT SELECT(lease_renewal_count) ON TABLE durable_jobs.job_record TO durable_job_audit_owner;

--
-- Name: COLUMN job_record.failure_reason_code; Type: ACL; Schema: durable_jobs; Owner: postgres
--

GRANT SELECT(failure_reason_code),UPDATE(failure_reason_code) ON TABLE durable_jobs.job_record TO durable_job_producer_owner;
GRANT UPDATE(failure_reason_code) ON TABLE durable_jobs.job_record TO durable_job_claim_owner;
GRANT UPDATE(failure_reason_code) ON TABLE durable_jobs.job_record TO durable_job_terminal_owner;
GRANT SELECT(failure_reason_code) ON TABLE durable_jobs.job_record TO durable_job_audit_owner;

--
-- Name: COLUMN job_record.created_at; Type: ACL; Schema: durable_jobs; Owner: postgres
--

GRANT SELECT(created_at) ON TABLE durable_jobs.job_record TO durable_job_audit_owner;

--
-- Name: COLUMN job_record.status_changed_at; Type: ACL; Schema: durable_jobs; Owner: postgres
--

GRANT UPDATE(status_changed_at) ON TABLE durable_jobs.job_record TO durable_job_producer_owner;
GRANT UPDATE(status_changed_at) ON TABLE durable_jobs.job_record TO durable_job_claim_owner;
GRANT UPDATE(status_changed_at) ON TABLE durable_jobs.job_record TO durable_job_terminal_owner;
GRANT SELECT(status_changed_at),UPDATE(status_changed_at) ON TABLE durable_jobs.job_record TO durable_job_retention_owner;
GRANT SELECT(status_changed_at) ON TABLE durable_jobs.job_record TO durable_job_audit_owner;

--
-- Name: COLUMN job_record.lease_expiry_floor; Type: ACL; Schema: durable_jobs; Owner: postgres
--

GRANT SELECT(lease_expiry_floor),UPDATE(lease_expiry_floor) ON TABLE durable_jobs.job_record TO durable_job_claim_owner;
GRANT SELECT(lease_expiry_floor),UPDATE(lease_expiry_floor) ON TABLE durable_jobs.job_record TO durable_job_renewal_owner;

--
-- Name: COLUMN job_record.failover_reclaims; Type: ACL; Schema: durable_jobs; Owner: postgres
--

GRANT SELECT(failover_reclaims),UPDATE(failover_reclaims) ON TABLE durable_jobs.job_record TO durable_job_claim_owner;

--
-- Name: FUNCTION job_status_mismatches(); Type: ACL; Schema: durable_jobs; Owner: durable_job_audit_owner
--

REVOKE ALL ON FUNCTION durable_jobs.job_status_mismatches() FROM PUBLIC;
GRANT ALL ON FUNCTION durable_jobs.job_status_mismatches() TO durable_job_auditor;

--
-- Name: FUNCTION job_status_totals(); Type: ACL; Schema: durable_jobs; Owner: durable_job_audit_owner
--

REVOKE ALL ON FUNCTION durable_jobs.job_status_totals() FROM PUBLIC;
GRANT ALL ON FUNCTION durable_jobs.job_status_totals() TO durable_job_auditor;

--
-- Name: TABLE lease_outcome_tally; Type: ACL; Schema: durable_jobs; Owner: postgres
--

GRANT DELETE ON TABLE durable_jobs.lease_outcome_tally TO durable_job_claim_owner;
GRANT DELETE ON TABLE durable_jobs.lease_outcome_tally TO durable_job_renewal_owner;
GRANT DELETE ON TABLE durable_jobs.lease_outcome_tally TO durable_job_terminal_owner;

--
-- Name: COLUMN lease_outcome_tally.tally_minute; Type: ACL; Schema: durable_jobs; Owner: postgres
--

GRANT SELECT(tally_minute),INSERT(tally_minute) ON TABLE durable_jobs.lease_outcome_tally TO durable_job_claim_owner;
GRANT SELECT(tally_minute),INSERT(tally_minute) ON TABLE durable_jobs.lease_outcome_tally TO durable_job_renewal_owner;
GRANT SELECT(tally_minute) ON TABLE durable_jobs.lease_outcome_tally TO durable_job_audit_owner;
GRANT SELECT(tally_minute),INSERT(tally_minute) ON TABLE durable_jobs.lease_outcome_tally TO durable_job_terminal_owner;

--
-- Name: COLUMN lease_outcome_tally.queue_name; Type: ACL; Schema: durable_jobs; Owner: postgres
--

GRANT SELECT(queue_name),INSERT(queue_name) ON TABLE durable_jobs.lease_outcome_tally TO durable_job_claim_owner;
GRANT SELECT(queue_name),INSERT(queue_name) ON TABLE durable_jobs.lease_outcome_tally TO durable_job_renewal_owner;
GRANT SELECT(queue_name) ON TABLE durable_jobs.lease_outcome_tally TO durable_job_audit_owner;
GRANT SELECT(queue_name),INSERT(queue_name) ON TABLE durable_jobs.lease_outcome_tally TO durable_job_terminal_owner;

--
-- Name: COLUMN lease_outcome_tally.outcome_kind; Type: ACL; Schema: durable_jobs; Owner: postgres
--

GRANT SELECT(outcome_kind),INSERT(outcome_kind) ON TABLE durable_jobs.lease_outcome_tally TO durable_job_claim_owner;
GRANT SELECT(outcome_kind),INSERT(outcome_kind) ON TABLE durable_jobs.lease_outcome_tally TO durable_job_renewal_owner;
GRANT SELECT(outcome_kind) ON TABLE durable_jobs.lease_outcome_tally TO durable_job_audit_owner;
GRANT SELECT(outcome_kind),INSERT(outcome_kind) ON TABLE durable_jobs.lease_outcome_tally TO durable_job_terminal_owner;

--
-- Name: COLUMN lease_outcome_tally.tally_backend_pid; Type: ACL; Schema: durable_jobs; Owner: postgres
--

GRANT SELECT(tally_backend_pid),INSERT(tally_backend_pid) ON TABLE durable_jobs.lease_outcome_tally TO durable_job_claim_owner;
GRANT SELECT(tally_backend_pid),INSERT(tally_backend_pid) ON TABLE durable_jobs.lease_outcome_tally TO durable_job_renewal_owner;
GRANT SELECT(tally_backend_pid),INSERT(tally_backend_pid) ON TABLE durable_jobs.lease_outcome_tally TO durable_job_terminal_owner;

--
-- Name: COLUMN lease_outcome_tally.counted_by_role; Type: ACL; Schema: durable_jobs; Owner: postgres
--

GRANT SELECT(counted_by_role),INSERT(counted_by_role) ON TABLE durable_jobs.lease_outcome_tally TO durable_job_claim_owner;
GRANT SELECT(counted_by_role),INSERT(counted_by_role) ON TABLE durable_jobs.lease_outcome_tally TO durable_job_renewal_owner;
GRANT SELECT(counted_by_role) ON TABLE durable_jobs.lease_outcome_tally TO durable_job_audit_owner;
GRANT SELECT(counted_by_role),INSERT(counted_by_role) ON TABLE durable_jobs.lease_outcome_tally TO durable_job_terminal_owner;

--
-- Name: COLUMN lease_outcome_tally.outcome_count; Type: ACL; Schema: durable_jobs; Owner: postgres
--

GRANT SELECT(outcome_count),INSERT(outcome_count),UPDATE(outcome_count) ON TABLE durable_jobs.lease_outcome_tally TO durable_job_claim_owner;
GRANT SELECT(outcome_count),INSERT(outcome_count),UPDATE(outcome_count) ON TABLE durable_jobs.lease_outcome_tally TO durable_job_renewal_owner;
GRANT SELECT(outcome_count) ON TABLE durable_jobs.lease_outcome_tally TO durable_job_audit_owner;
GRANT SELECT(outcome_count),INSERT(outcome_count),UPDATE(outcome_count) ON TABLE durable_jobs.lease_outcome_tally TO durable_job_terminal_owner;

--
-- Name: FUNCTION lease_health_by_queue(); Type: ACL; Schema: durable_jobs; Owner: durable_job_audit_owner
--

REVOKE ALL ON FUNCTION durable_jobs.lease_health_by_queue() FROM PUBLIC;
GRANT ALL ON FUNCTION durable_jobs.lease_health_by_queue() TO durable_job_auditor;

--
-- Name: FUNCTION lease_outcome_totals(p_since timestamp with time zone); Type: ACL; Schema: durable_jobs; Owner: durable_job_audit_owner
--

REVOKE ALL ON FUNCTION durable_jobs.lease_outcome_totals(p_since timestamp with time zone) FROM PUBLIC;
GRANT ALL ON FUNCTION durable_jobs.lease_outcome_totals(p_since timestamp with time zone) TO durable_job_auditor;

--
-- Name: FUNCTION lock_evidence_order(); Type: ACL; Schema: durable_jobs; Owner: durable_job_policy_owner
--

REVOKE ALL ON FUNCTION durable_jobs.lock_evidence_order() FROM PUBLIC;
GRANT ALL ON FUNCTION durable_jobs.lock_evidence_order() TO durable_job_retention_owner;

--
-- Name: FUNCTION lock_fenced_claim(p_job_record_id bigint, p_lease_claim_token uuid, p_worker_owner_id text); Type: ACL; Schema: durable_jobs; Owner: postgres
--

REVOKE ALL ON FUNCTION durable_jobs.lock_fenced_claim(p_job_record_id bigint, p_lease_claim_token uuid, p_worker_owner_id text) FROM PUBLIC;
GRANT ALL ON FUNCTION durable_jobs.lock_fenced_claim(p_job_record_id bigint, p_lease_claim_token uuid, p_worker_owner_id text) TO durable_job_terminal_owner;

--
-- Name: FUNCTION passes_luhn(p_digits text); Type: ACL; Schema: durable_jobs; Owner: postgres
--

REVOKE ALL ON FUNCTION durable_jobs.passes_luhn(p_digits text) FROM PUBLIC;
GRANT ALL ON FUNCTION durable_jobs.passes_luhn(p_digits text) TO durable_job_policy_owner;
GRANT ALL ON FUNCTION durable_jobs.passes_luhn(p_digits text) TO durable_job_retention_owner;

--
-- Name: FUNCTION screening_form(p_text text); Type: ACL; Schema: durable_jobs; Owner: postgres
--

REVOKE ALL ON FUNCTION durable_jobs.screening_form(p_text text) FROM PUBLIC;
GRANT ALL ON FUNCTION durable_jobs.screening_form(p_text text) TO durable_job_policy_owner;
GRANT ALL ON FUNCTION durable_jobs.screening_form(p_text text) TO durable_job_retention_owner;

--
-- Name: FUNCTION looks_personal_or_secret(p_text text); Type: ACL; Schema: durable_jobs; Owner: postgres
--

REVOKE ALL ON FUNCTION durable_jobs.looks_personal_or_secret(p_text text) FROM PUBLIC;
GRANT ALL ON FUNCTION durable_jobs.looks_personal_or_secret(p_text text) TO durable_job_policy_owner;
GRANT ALL ON FUNCTION durable_jobs.looks_personal_or_secret(p_text text) TO durable_job_retention_owner;

--
-- Name: FUNCTION operator_job_actions(p_job_record_id bigint); Type: ACL; Schema: durable_jobs; Owner: durable_job_audit_owner
--

REVOKE ALL ON FUNCTION durable_jobs.operator_job_actions(p_job_record_id bigint) FROM PUBLIC;
GRANT ALL ON FUNCTION durable_jobs.operator_job_actions(p_job_record_id bigint) TO durable_job_operator;

--
-- Name: FUNCTION operator_job_detail(p_job_record_id bigint); Type: ACL; Schema: durable_jobs; Owner: durable_job_audit_owner
--

REVOKE ALL ON FUNCTION durable_jobs.operator_job_detail(p_job_record_id bigint) FROM PUBLIC;
GRANT ALL ON FUNCTION durable_jobs.operator_job_detail(p_job_record_id bigint) TO durable_job_operator;

--
-- Name: FUNCTION operator_list_jobs(p_queue_name text, p_job_status text, p_after_job_record_id bigint, p_max_jobs integer); Type: ACL; Schema: durable_jobs; Owner: durable_job_audit_owner
--

REVOKE ALL ON FUNCTION durable_jobs.operator_list_jobs(p_queue_name text, p_job_status text, p_after_job_record_id bigint, p_max_jobs integer) FROM PUBLIC;
GRANT ALL ON FUNCTION durable_jobs.operator_list_jobs(p_queue_name text, p_job_status text, p_after_job_record_id bigint, p_max_jobs integer) TO durable_job_operator;

--
-- Name: FUNCTION pending_changes(p_include_decided boolean); Type: ACL; Schema: durable_jobs; Owner: durable_job_policy_owner
--

REVOKE ALL ON FUNCTION durable_jobs.pending_changes(p_include_decided boolean) FROM PUBLIC;
GRANT ALL ON FUNCTION durable_jobs.pending_changes(p_include_decided boolean) TO durable_job_operator;
GRANT ALL ON FUNCTION durable_jobs.pending_changes(p_include_decided boolean) TO durable_job_auditor;

--
-- Name: FUNCTION policy_evidence_mismatches(); Type: ACL; Schema: durable_jobs; Owner: durable_job_audit_owner
--

REVOKE ALL ON FUNCTION durable_jobs.policy_evidence_mismatches() FROM PUBLIC;
GRANT ALL ON FUNCTION durable_jobs.policy_evidence_mismatches() TO durable_job_auditor;

--
-- Name: COLUMN job_action_record.job_action_record_id; Type: ACL; Schema: durable_jobs; Owner: postgres
--

GRANT SELECT(job_action_record_id) ON TABLE durable_jobs.job_action_record TO durable_job_audit_owner;

--
-- Name: COLUMN job_action_record.job_record_id; Type: ACL; Schema: durable_jobs; Owner: postgres
--

GRANT INSERT(job_record_id) ON TABLE durable_jobs.job_action_record TO durable_job_retention_owner;
GRANT SELECT(job_record_id) ON TABLE durable_jobs.job_action_record TO durable_job_audit_owner;

--
-- Name: COLUMN job_action_record.action_kind; Type: ACL; Schema: durable_jobs; Owner: postgres
--

GRANT INSERT(action_kind) ON TABLE durable_jobs.job_action_record TO durable_job_retention_owner;
GRANT SELECT(action_kind) ON TABLE durable_jobs.job_action_record TO durable_job_audit_owner;

--
-- Name: COLUMN job_action_record.acted_by_role; Type: ACL; Schema: durable_jobs; Owner: postgres
--

GRANT SELECT(acted_by_role) ON TABLE durable_jobs.job_action_record TO durable_job_audit_owner;

--
-- Name: COLUMN job_action_record.acted_at; Type: ACL; Schema: durable_jobs; Owner: postgres
--

GRANT SELECT(acted_at) ON TABLE durable_jobs.job_action_record TO durable_job_audit_owner;

--
-- Name: COLUMN job_action_record.change_reason; Type: ACL; Schema: durable_jobs; Owner: postgres
--

GRANT INSERT(change_reason) ON TABLE durable_jobs.job_action_record TO durable_job_retention_owner;
GRANT SELECT(change_reason) ON TABLE durable_jobs.job_action_record TO durable_job_audit_owner;

--
-- Name: COLUMN job_action_record.change_ticket; Type: ACL; Schema: durable_jobs; Owner: postgres
--

GRANT INSERT(change_ticket) ON TABLE durable_jobs.job_action_record TO durable_job_retention_owner;
GRANT SELECT(change_ticket) ON TABLE durable_jobs.job_action_record TO durable_job_audit_owner;

--
-- Name: COLUMN job_action_record.change_approver; Type: ACL; Schema: durable_jobs; Owner: postgres
--

GRANT INSERT(change_approver) ON TABLE durable_jobs.job_action_record TO durable_job_retention_owner;
GRANT SELECT(change_approver) ON TABLE durable_jobs.job_action_record TO durable_job_audit_owner;

--
-- Name: FUNCTION processing_counts(p_since timestamp with time zone, p_until timestamp with time zone); Type: ACL; Schema: durable_jobs; Owner: durable_job_audit_owner
--

REVOKE ALL ON FUNCTION durable_jobs.processing_counts(p_since timestamp with time zone, p_until timestamp with time zone) FROM PUBLIC;
GRANT ALL ON FUNCTION durable_jobs.processing_counts(p_since timestamp with time zone, p_until timestamp with time zone) TO durable_job_auditor;

--
-- Name: FUNCTION propose_change(p_change_kind text, p_queue_name text, p_proposed_values jsonb, p_change_reason text, p_change_ticket text); Type: ACL; Schema: durable_jobs; Owner: durable_job_policy_owner
--

REVOKE ALL ON FUNCTION durable_jobs.propose_change(p_change_kind text, p_queue_name text, p_proposed_values jsonb, p_change_reason text, p_change_ticket text) FROM PUBLIC;
GRANT ALL ON FUNCTION durable_jobs.propose_change(p_change_kind text, p_queue_name text, p_proposed_values jsonb, p_change_reason text, p_change_ticket text) TO durable_job_operator;

--
-- Name: FUNCTION purge_expired_job_data(p_batch_size integer); Type: ACL; Schema: durable_jobs; Owner: durable_job_retention_owner
--

REVOKE ALL ON FUNCTION durable_jobs.purge_expired_job_data(p_batch_size integer) FROM PUBLIC;
GRANT ALL ON FUNCTION durable_jobs.purge_expired_job_data(p_batch_size integer) TO durable_job_operator;

--
-- Name: FUNCTION queue_backlog(); Type: ACL; Schema: durable_jobs; Owner: durable_job_audit_owner
--

REVOKE ALL ON FUNCTION durable_jobs.queue_backlog() FROM PUBLIC;
GRANT ALL ON FUNCTION durable_jobs.queue_backlog() TO durable_job_auditor;

--
-- Name: FUNCTION queue_lease_policies(); Type: ACL; Schema: durable_jobs; Owner: durable_job_audit_owner
--

REVOKE ALL ON FUNCTION durable_jobs.queue_lease_policies() FROM PUBLIC;
GRANT ALL ON FUNCTION durable_jobs.queue_lease_policies() TO durable_job_auditor;

--
-- Name: FUNCTION queue_name_is_well_formed(p_queue_name text); Type: ACL; Schema: durable_jobs; Owner: postgres
--

REVOKE ALL ON FUNCTION durable_jobs.queue_name_is_well_formed(p_queue_name text) FROM PUBLIC;
GRANT ALL ON FUNCTION durable_jobs.queue_name_is_well_formed(p_queue_name text) TO durable_job_producer_owner;
GRANT ALL ON FUNCTION durable_jobs.queue_name_is_well_formed(p_queue_name text) TO durable_job_claim_owner;
GRANT ALL ON FUNCTION durable_jobs.queue_name_is_well_formed(p_queue_name text) TO durable_job_renewal_owner;
GRANT ALL ON FUNCTION durable_jobs.queue_name_is_well_formed(p_queue_name text) TO durable_job_terminal_owner;
GRANT ALL ON FUNCTION durable_jobs.queue_name_is_well_formed(p_queue_name text) TO durable_job_policy_owner;
GRANT ALL ON FUNCTION durable_jobs.queue_name_is_well_formed(p_queue_name text) TO durable_job_retention_owner;
GRANT ALL ON FUNCTION durable_jobs.queue_name_is_well_formed(p_queue_name text) TO durable_job_audit_owner;

--
-- Name: FUNCTION queue_name_pattern(); Type: ACL; Schema: durable_jobs; Owner: postgres
--

REVOKE ALL ON FUNCTION durable_jobs.queue_name_pattern() FROM PUBLIC;
GRANT ALL ON FUNCTION durable_jobs.queue_name_pattern() TO durable_job_producer_owner;
GRANT ALL ON FUNCTION durable_jobs.queue_name_pattern() TO durable_job_claim_owner;
GRANT ALL ON FUNCTION durable_jobs.queue_name_pattern() TO durable_job_renewal_owner;
GRANT ALL ON FUNCTION durable_jobs.queue_name_pattern() TO durable_job_terminal_owner;
GRANT ALL ON FUNCTION durable_jobs.queue_name_pattern() TO durable_job_policy_owner;
GRANT ALL ON FUNCTION durable_jobs.queue_name_pattern() TO durable_job_retention_owner;
GRANT ALL ON FUNCTION durable_jobs.queue_name_pattern() TO durable_job_audit_owner;

--
-- Name: FUNCTION queue_next_due_in(p_queue_name text); Type: ACL; Schema: durable_jobs; Owner: durable_job_claim_owner
--

REVOKE ALL ON FUNCTION durable_jobs.queue_next_due_in(p_queue_name text) FROM PUBLIC;
GRANT ALL ON FUNCTION durable_jobs.queue_next_due_in(p_queue_name text) TO durable_job_worker;

--
-- Name: FUNCTION queue_retention_policies(); Type: ACL; Schema: durable_jobs; Owner: durable_job_retention_owner
--

REVOKE ALL ON FUNCTION durable_jobs.queue_retention_policies() FROM PUBLIC;
GRANT ALL ON FUNCTION durable_jobs.queue_retention_policies() TO durable_job_operator;

--
-- Name: FUNCTION raise_stale_claim(); Type: ACL; Schema: durable_jobs; Owner: postgres
--

REVOKE ALL ON FUNCTION durable_jobs.raise_stale_claim() FROM PUBLIC;
GRANT ALL ON FUNCTION durable_jobs.raise_stale_claim() TO durable_job_terminal_owner;

--
-- Name: FUNCTION record_change_control_change(); Type: ACL; Schema: durable_jobs; Owner: durable_job_policy_owner
--

REVOKE ALL ON FUNCTION durable_jobs.record_change_control_change() FROM PUBLIC;

--
-- Name: FUNCTION record_deployment(p_deployment_version text, p_source_digest text, p_deployed_by text, p_change_ticket text, p_change_reason text); Type: ACL; Schema: durable_jobs; Owner: durable_job_policy_owner
--

REVOKE ALL ON FUNCTION durable_jobs.record_deployment(p_deployment_version text, p_source_digest text, p_deployed_by text, p_change_ticket text, p_change_reason text) FROM PUBLIC;
GRANT ALL ON FUNCTION durable_jobs.record_deployment(p_deployment_version text, p_source_digest text, p_deployed_by text, p_change_ticket text, p_change_reason text) TO postgres;

--
-- Name: FUNCTION record_deployment_version(p_deployment_version text, p_change_reason text); Type: ACL; Schema: durable_jobs; Owner: durable_job_policy_owner
--

REVOKE ALL ON FUNCTION durable_jobs.record_deployment_version(p_deployment_version text, p_change_reason text) FROM PUBLIC;
GRANT ALL ON FUNCTION durable_jobs.record_deployment_version(p_deployment_version text, p_change_reason text) TO postgres;

--
-- Name: FUNCTION record_job_action(p_job_record_id bigint, p_queue_name text, p_action_kind text, p_previous_status text, p_new_status text, p_change_reason text, p_change_ticket text, p_change_approver text); Type: ACL; Schema: durable_jobs; Owner: durable_job_retention_owner
--

REVOKE ALL ON FUNCTION durable_jobs.record_job_action(p_job_record_id bigint, p_queue_name text, p_action_kind text, p_previous_status text, p_new_status text, p_change_reason text, p_change_ticket text, p_change_approver text) FROM PUBLIC;
GRANT ALL ON FUNCTION durable_jobs.record_job_action(p_job_record_id bigint, p_queue_name text, p_action_kind text, p_previous_status text, p_new_status text, p_change_reason text, p_change_ticket text, p_change_approver text) TO durable_job_producer_owner;

--
-- Name: FUNCTION record_lease_outcome(p_queue_name text, p_outcome_kind text, p_outcome_count bigint); Type: ACL; Schema: durable_jobs; Owner: postgres
--

REVOKE ALL ON FUNCTION durable_jobs.record_lease_outcome(p_queue_name text, p_outcome_kind text, p_outcome_count bigint) FROM PUBLIC;
GRANT ALL ON FUNCTION durable_jobs.record_lease_outcome(p_queue_name text, p_outcome_kind text, p_outcome_count bigint) TO durable_job_claim_owner;
GRANT ALL ON FUNCTION durable_jobs.record_lease_outcome(p_queue_name text, p_outcome_kind text, p_outcome_count bigint) TO durable_job_renewal_owner;
GRANT ALL ON FUNCTION durable_jobs.record_lease_outcome(p_queue_name text, p_outcome_kind text, p_outcome_count bigint) TO durable_job_terminal_owner;

--
-- Name: FUNCTION record_policy_change(); Type: ACL; Schema: durable_jobs; Owner: durable_job_policy_owner
--

REVOKE ALL ON FUNCTION durable_jobs.record_policy_change() FROM PUBLIC;

--
-- Name: FUNCTION record_retention_policy_change(); Type: ACL; Schema: durable_jobs; Owner: durable_job_retention_owner
--

REVOKE ALL ON FUNCTION durable_jobs.record_retention_policy_change() FROM PUBLIC;

--
-- Name: FUNCTION record_stale_call(p_job_record_id bigint, p_outcome_kind text); Type: ACL; Schema: durable_jobs; Owner: postgres
--

REVOKE ALL ON FUNCTION durable_jobs.record_stale_call(p_job_record_id bigint, p_outcome_kind text) FROM PUBLIC;
GRANT ALL ON FUNCTION durable_jobs.record_stale_call(p_job_record_id bigint, p_outcome_kind text) TO durable_job_renewal_owner;
GRANT ALL ON FUNCTION durable_jobs.record_stale_call(p_job_record_id bigint, p_outcome_kind text) TO durable_job_terminal_owner;

--
-- Name: FUNCTION record_stale_calls(p_job_record_ids bigint[], p_outcome_kind text); Type: ACL; Schema: durable_jobs; Owner: postgres
--

REVOKE ALL ON FUNCTION durable_jobs.record_stale_calls(p_job_record_ids bigint[], p_outcome_kind text) FROM PUBLIC;
GRANT ALL ON FUNCTION durable_jobs.record_stale_calls(p_job_record_ids bigint[], p_outcome_kind text) TO durable_job_renewal_owner;
GRANT ALL ON FUNCTION durable_jobs.record_stale_calls(p_job_record_ids bigint[], p_outcome_kind text) TO durable_job_terminal_owner;

--
-- Name: FUNCTION refuse_control_removal(); Type: ACL; Schema: durable_jobs; Owner: postgres
--

REVOKE ALL ON FUNCTION durable_jobs.refuse_control_removal() FROM PUBLIC;

--
-- Name: FUNCTION refuse_evidence_change(); Type: ACL; Schema: durable_jobs; Owner: durable_job_evidence_owner
--

REVOKE ALL ON FUNCTION durable_jobs.refuse_evidence_change() FROM PUBLIC;

--
-- Name: FUNCTION refuse_policy_truncate(); Type: ACL; Schema: durable_jobs; Owner: postgres
--

REVOKE ALL ON FUNCTION durable_jobs.refuse_policy_truncate() FROM PUBLIC;

--
-- Name: FUNCTION reject_change(p_change_id bigint, p_change_reason text); Type: ACL; Schema: durable_jobs; Owner: durable_job_policy_owner
--

REVOKE ALL ON FUNCTION durable_jobs.reject_change(p_change_id bigint, p_change_reason text) FROM PUBLIC;
GRANT ALL ON FUNCTION durable_jobs.reject_change(p_change_id bigint, p_change_reason text) TO durable_job_operator;

--
-- Name: FUNCTION release_job_claim(p_job_record_id bigint, p_lease_claim_token uuid, p_worker_owner_id text); Type: ACL; Schema: durable_jobs; Owner: durable_job_terminal_owner
--

REVOKE ALL ON FUNCTION durable_jobs.release_job_claim(p_job_record_id bigint, p_lease_claim_token uuid, p_worker_owner_id text) FROM PUBLIC;
GRANT ALL ON FUNCTION durable_jobs.release_job_claim(p_job_record_id bigint, p_lease_claim_token uuid, p_worker_owner_id text) TO durable_job_worker;

--
-- Name: FUNCTION release_job_claims(p_worker_owner_id text, p_job_record_ids bigint[], p_lease_claim_tokens uuid[]); Type: ACL; Schema: durable_jobs; Owner: durable_job_terminal_owner
--

REVOKE ALL ON FUNCTION durable_jobs.release_job_claims(p_worker_owner_id text, p_job_record_ids bigint[], p_lease_claim_tokens uuid[]) FROM PUBLIC;
GRANT ALL ON FUNCTION durable_jobs.release_job_claims(p_worker_owner_id text, p_job_record_ids bigint[], p_lease_claim_tokens uuid[]) TO durable_job_worker;

--
-- Name: FUNCTION renew_job_lease(p_job_record_id bigint, p_lease_claim_token uuid, p_worker_owner_id text); Type: ACL; Schema: durable_jobs; Owner: durable_job_renewal_owner
--

REVOKE ALL ON FUNCTION durable_jobs.renew_job_lease(p_job_record_id bigint, p_lease_claim_token uuid, p_worker_owner_id text) FROM PUBLIC;
GRANT ALL ON FUNCTION durable_jobs.renew_job_lease(p_job_record_id bigint, p_lease_claim_token uuid, p_worker_owner_id text) TO durable_job_worker;

--
-- Name: FUNCTION renew_job_leases(p_worker_owner_id text, p_job_record_ids bigint[], p_lease_claim_tokens uuid[]); Type: ACL; Schema: durable_jobs; Owner: durable_job_renewal_owner
--

REVOKE ALL ON FUNCTION durable_jobs.renew_job_leases(p_worker_owner_id text, p_job_record_ids bigint[], p_lease_claim_tokens uuid[]) FROM PUBLIC;
GRANT ALL ON FUNCTION durable_jobs.renew_job_leases(p_worker_owner_id text, p_job_record_ids bigint[], p_lease_claim_tokens uuid[]) TO durable_job_worker;

--
-- Name: FUNCTION replay_job_recorded(p_job_record_id bigint, p_change_reason text, p_change_ticket text, p_change_approver text); Type: ACL; Schema: durable_jobs; Owner: durable_job_producer_owner
--

REVOKE ALL ON FUNCTION durable_jobs.replay_job_recorded(p_job_record_id bigint, p_change_reason text, p_change_ticket text, p_change_approver text) FROM PUBLIC;

--
-- Name: FUNCTION replay_job(p_job_record_id bigint); Type: ACL; Schema: durable_jobs; Owner: durable_job_producer_owner
--

REVOKE ALL ON FUNCTION durable_jobs.replay_job(p_job_record_id bigint) FROM PUBLIC;
GRANT ALL ON FUNCTION durable_jobs.replay_job(p_job_record_id bigint) TO durable_job_operator;

--
-- Name: FUNCTION replay_job(p_job_record_id bigint, p_change_reason text, p_change_ticket text, p_change_approver text); Type: ACL; Schema: durable_jobs; Owner: durable_job_producer_owner
--

REVOKE ALL ON FUNCTION durable_jobs.replay_job(p_job_record_id bigint, p_change_reason text, p_change_ticket text, p_change_approver text) FROM PUBLIC;
GRANT ALL ON FUNCTION durable_jobs.replay_job(p_job_record_id bigint, p_change_reason text, p_change_ticket text, p_change_approver text) TO durable_job_operator;

--
-- Name: FUNCTION require_structured_change(p_change_reason text, p_change_ticket text, p_change_approver text); Type: ACL; Schema: durable_jobs; Owner: postgres
--

REVOKE ALL ON FUNCTION durable_jobs.require_structured_change(p_change_reason text, p_change_ticket text, p_change_approver text) FROM PUBLIC;
GRANT ALL ON FUNCTION durable_jobs.require_structured_change(p_change_reason text, p_change_ticket text, p_change_approver text) TO durable_job_policy_owner;
GRANT ALL ON FUNCTION durable_jobs.require_structured_change(p_change_reason text, p_change_ticket text, p_change_approver text) TO durable_job_retention_owner;

--
-- Name: FUNCTION require_valid_change_control(p_ticket_pattern text, p_require_approver boolean, p_approver_must_differ boolean, p_reason_pattern text, p_require_second_operator boolean, p_proposal_lifetime interval); Type: ACL; Schema: durable_jobs; Owner: postgres
--

REVOKE ALL ON FUNCTION durable_jobs.require_valid_change_control(p_ticket_pattern text, p_require_approver boolean, p_approver_must_differ boolean, p_reason_pattern text, p_require_second_operator boolean, p_proposal_lifetime interval) FROM PUBLIC;
GRANT ALL ON FUNCTION durable_jobs.require_valid_change_control(p_ticket_pattern text, p_require_approver boolean, p_approver_must_differ boolean, p_reason_pattern text, p_require_second_operator boolean, p_proposal_lifetime interval) TO durable_job_policy_owner;

--
-- Name: FUNCTION require_valid_change_reason(p_change_reason text, p_sqlstate text); Type: ACL; Schema: durable_jobs; Owner: durable_job_retention_owner
--

REVOKE ALL ON FUNCTION durable_jobs.require_valid_change_reason(p_change_reason text, p_sqlstate text) FROM PUBLIC;

--
-- Name: FUNCTION require_well_formed(p_value_kind text, p_value text, p_sqlstate text); Type: ACL; Schema: durable_jobs; Owner: postgres
--

REVOKE ALL ON FUNCTION durable_jobs.require_well_formed(p_value_kind text, p_value text, p_sqlstate text) FROM PUBLIC;
GRANT ALL ON FUNCTION durable_jobs.require_well_formed(p_value_kind text, p_value text, p_sqlstate text) TO durable_job_producer_owner;
GRANT ALL ON FUNCTION durable_jobs.require_well_formed(p_value_kind text, p_value text, p_sqlstate text) TO durable_job_claim_owner;
GRANT ALL ON FUNCTION durable_jobs.require_well_formed(p_value_kind text, p_value text, p_sqlstate text) TO durable_job_renewal_owner;
GRANT ALL ON FUNCTION durable_jobs.require_well_formed(p_value_kind text, p_value text, p_sqlstate text) TO durable_job_terminal_owner;
GRANT ALL ON FUNCTION durable_jobs.require_well_formed(p_value_kind text, p_value text, p_sqlstate text) TO durable_job_policy_owner;
GRANT ALL ON FUNCTION durable_jobs.require_well_formed(p_value_kind text, p_value text, p_sqlstate text) TO durable_job_retention_owner;
GRANT ALL ON FUNCTION durable_jobs.require_well_formed(p_value_kind text, p_value text, p_sqlstate text) TO durable_job_audit_owner;

--
-- Name: FUNCTION retry_job(p_job_record_id bigint, p_lease_claim_token uuid, p_worker_owner_id text, p_retry_delay interval, p_failure_reason_code text); Type: ACL; Schema: durable_jobs; Owner: durable_job_terminal_owner
--

REVOKE ALL ON FUNCTION durable_jobs.retry_job(p_job_record_id bigint, p_lease_claim_token uuid, p_worker_owner_id text, p_retry_delay interval, p_failure_reason_code text) FROM PUBLIC;
GRANT ALL ON FUNCTION durable_jobs.retry_job(p_job_record_id bigint, p_lease_claim_token uuid, p_worker_owner_id text, p_retry_delay interval, p_failure_reason_code text) TO durable_job_worker;

--
-- Name: FUNCTION server_availability(); Type: ACL; Schema: durable_jobs; Owner: durable_job_policy_owner
--

REVOKE ALL ON FUNCTION durable_jobs.server_availability() FROM PUBLIC;
GRANT ALL ON FUNCTION durable_jobs.server_availability() TO durable_job_auditor;

--
-- Name: FUNCTION set_change_control(p_ticket_pattern text, p_require_approver boolean, p_approver_must_differ boolean, p_change_reason text, p_change_ticket text, p_change_approver text); Type: ACL; Schema: durable_jobs; Owner: durable_job_policy_owner
--

REVOKE ALL ON FUNCTION durable_jobs.set_change_control(p_ticket_pattern text, p_require_approver boolean, p_approver_must_differ boolean, p_change_reason text, p_change_ticket text, p_change_approver text) FROM PUBLIC;
GRANT ALL ON FUNCTION durable_jobs.set_change_control(p_ticket_pattern text, p_require_approver boolean, p_approver_must_differ boolean, p_change_reason text, p_change_ticket text, p_change_approver text) TO durable_job_operator;

--
-- Name: FUNCTION set_change_reason_pattern(p_reason_pattern text, p_change_reason text, p_change_ticket text, p_change_approver text); Type: ACL; Schema: durable_jobs; Owner: durable_job_policy_owner
--

REVOKE ALL ON FUNCTION durable_jobs.set_change_reason_pattern(p_reason_pattern text, p_change_reason text, p_change_ticket text, p_change_approver text) FROM PUBLIC;
GRANT ALL ON FUNCTION durable_jobs.set_change_reason_pattern(p_reason_pattern text, p_change_reason text, p_change_ticket text, p_change_approver text) TO durable_job_operator;

--
-- Name: FUNCTION set_change_record(p_change_reason text, p_change_ticket text, p_change_approver text); Type: ACL; Schema: durable_jobs; Owner: postgres
--

REVOKE ALL ON FUNCTION durable_jobs.set_change_record(p_change_reason text, p_change_ticket text, p_change_approver text) FROM PUBLIC;
GRANT ALL ON FUNCTION durable_jobs.set_change_record(p_change_reason text, p_change_ticket text, p_change_approver text) TO durable_job_policy_owner;
GRANT ALL ON FUNCTION durable_jobs.set_change_record(p_change_reason text, p_change_ticket text, p_change_approver text) TO durable_job_retention_owner;

--
-- Name: FUNCTION set_maker_checker(p_require_second_operator boolean, p_proposal_lifetime interval, p_change_reason text, p_change_ticket text, p_change_approver text); Type: ACL; Schema: durable_jobs; Owner: durable_job_policy_owner
--

REVOKE ALL ON FUNCTION durable_jobs.set_maker_checker(p_require_second_operator boolean, p_proposal_lifetime interval, p_change_reason text, p_change_ticket text, p_change_approver text) FROM PUBLIC;
GRANT ALL ON FUNCTION durable_jobs.set_maker_checker(p_require_second_operator boolean, p_proposal_lifetime interval, p_change_reason text, p_change_ticket text, p_change_approver text) TO durable_job_operator;

--
-- Name: FUNCTION set_queue_lease_policy(p_queue_name text, p_lease_duration interval, p_renewal_interval interval, p_max_claim_lifetime interval, p_renewal_enabled boolean, p_change_reason text); Type: ACL; Schema: durable_jobs; Owner: durable_job_policy_owner
--

REVOKE ALL ON FUNCTION durable_jobs.set_queue_lease_policy(p_queue_name text, p_lease_duration interval, p_renewal_interval interval, p_max_claim_lifetime interval, p_renewal_enabled boolean, p_change_reason text) FROM PUBLIC;
GRANT ALL ON FUNCTION durable_jobs.set_queue_lease_policy(p_queue_name text, p_lease_duration interval, p_renewal_interval interval, p_max_claim_lifetime interval, p_renewal_enabled boolean, p_change_reason text) TO durable_job_operator;

--
-- Name: FUNCTION set_queue_lease_policy(p_queue_name text, p_lease_duration interval, p_renewal_interval interval, p_max_claim_lifetime interval, p_renewal_enabled boolean, p_change_reason text, p_change_ticket text, p_change_approver text); Type: ACL; Schema: durable_jobs; Owner: durable_job_policy_owner
--

REVOKE ALL ON FUNCTION durable_jobs.set_queue_lease_policy(p_queue_name text, p_lease_duration interval, p_renewal_interval interval, p_max_claim_lifetime interval, p_renewal_enabled boolean, p_change_reason text, p_change_ticket text, p_change_approver text) FROM PUBLIC;
GRANT ALL ON FUNCTION durable_jobs.set_queue_lease_policy(p_queue_name text, p_lease_duration interval, p_renewal_interval interval, p_max_claim_lifetime interval, p_renewal_enabled boolean, p_change_reason text, p_change_ticket text, p_change_approver text) TO durable_job_operator;

--
-- Name: FUNCTION set_queue_retention_policy(p_queue_name text, p_payload_retention interval, p_record_retention interval, p_change_reason text, p_change_ticket text, p_change_approver text); Type: ACL; Schema: durable_jobs; Owner: durable_job_retention_owner
--

REVOKE ALL ON FUNCTION durable_jobs.set_queue_retention_policy(p_queue_name text, p_payload_retention interval, p_record_retention interval, p_change_reason text, p_change_ticket text, p_change_approver text) FROM PUBLIC;
GRANT ALL ON FUNCTION durable_jobs.set_queue_retention_policy(p_queue_name text, p_payload_retention interval, p_record_retention interval, p_change_reason text, p_change_ticket text, p_change_approver text) TO durable_job_operator;
GRANT ALL ON FUNCTION durable_jobs.set_queue_retention_policy(p_queue_name text, p_payload_retention interval, p_record_retention interval, p_change_reason text, p_change_ticket text, p_change_approver text) TO durable_job_policy_owner;

--
-- Name: FUNCTION set_queue_retention_policy(p_queue_name text, p_payload_retention interval, p_record_retention interval, p_change_reason text); Type: ACL; Schema: durable_jobs; Owner: durable_job_retention_owner
--

REVOKE ALL ON FUNCTION durable_jobs.set_queue_retention_policy(p_queue_name text, p_payload_retention interval, p_record_retention interval, p_change_reason text) FROM PUBLIC;
GRANT ALL ON FUNCTION durable_jobs.set_queue_retention_policy(p_queue_name text, p_payload_retention interval, p_record_retention interval, p_change_reason text) TO durable_job_operator;

--
-- Name: FUNCTION stamp_control_change(); Type: ACL; Schema: durable_jobs; Owner: postgres
--

REVOKE ALL ON FUNCTION durable_jobs.stamp_control_change() FROM PUBLIC;

--
-- Name: FUNCTION stamp_policy_change(); Type: ACL; Schema: durable_jobs; Owner: postgres
--

REVOKE ALL ON FUNCTION durable_jobs.stamp_policy_change() FROM PUBLIC;

--
-- Name: FUNCTION update_queue_lease_policy(p_queue_name text, p_lease_duration interval, p_renewal_interval interval, p_max_claim_lifetime interval, p_renewal_enabled boolean, p_change_reason text, p_change_ticket text, p_change_approver text); Type: ACL; Schema: durable_jobs; Owner: durable_job_policy_owner
--

REVOKE ALL ON FUNCTION durable_jobs.update_queue_lease_policy(p_queue_name text, p_lease_duration interval, p_renewal_interval interval, p_max_claim_lifetime interval, p_renewal_enabled boolean, p_change_reason text, p_change_ticket text, p_change_approver text) FROM PUBLIC;
GRANT ALL ON FUNCTION durable_jobs.update_queue_lease_policy(p_queue_name text, p_lease_duration interval, p_renewal_interval interval, p_max_claim_lifetime interval, p_renewal_enabled boolean, p_change_reason text, p_change_ticket text, p_change_approver text) TO durable_job_operator;

--
-- Name: FUNCTION wake_queue_workers(); Type: ACL; Schema: durable_jobs; Owner: durable_job_claim_owner
--

REVOKE ALL ON FUNCTION durable_jobs.wake_queue_workers() FROM PUBLIC;

--
-- Name: FUNCTION wake_queue_workers_after_insert(); Type: ACL; Schema: durable_jobs; Owner: durable_job_claim_owner
--

REVOKE ALL ON FUNCTION durable_jobs.wake_queue_workers_after_insert() FROM PUBLIC;

--
-- Name: FUNCTION worker_owner_id_is_well_formed(p_worker_owner_id text); Type: ACL; Schema: durable_jobs; Owner: postgres
--

REVOKE ALL ON FUNCTION durable_jobs.worker_owner_id_is_well_formed(p_worker_owner_id text) FROM PUBLIC;
GRANT ALL ON FUNCTION durable_jobs.worker_owner_id_is_well_formed(p_worker_owner_id text) TO durable_job_producer_owner;
GRANT ALL ON FUNCTION durable_jobs.worker_owner_id_is_well_formed(p_worker_owner_id text) TO durable_job_claim_owner;
GRANT ALL ON FUNCTION durable_jobs.worker_owner_id_is_well_formed(p_worker_owner_id text) TO durable_job_renewal_owner;
GRANT ALL ON FUNCTION durable_jobs.worker_owner_id_is_well_formed(p_worker_owner_id text) TO durable_job_terminal_owner;
GRANT ALL ON FUNCTION durable_jobs.worker_owner_id_is_well_formed(p_worker_owner_id text) TO durable_job_policy_owner;
GRANT ALL ON FUNCTION durable_jobs.worker_owner_id_is_well_formed(p_worker_owner_id text) TO durable_job_retention_owner;
GRANT ALL ON FUNCTION durable_jobs.worker_owner_id_is_well_formed(p_worker_owner_id text) TO durable_job_audit_owner;

--
-- Name: FUNCTION worker_owner_id_pattern(); Type: ACL; Schema: durable_jobs; Owner: postgres
--

REVOKE ALL ON FUNCTION durable_jobs.worker_owner_id_pattern() FROM PUBLIC;
GRANT ALL ON FUNCTION durable_jobs.worker_owner_id_pattern() TO durable_job_producer_owner;
GRANT ALL ON FUNCTION durable_jobs.worker_owner_id_pattern() TO durable_job_claim_owner;
GRANT ALL ON FUNCTION durable_jobs.worker_owner_id_pattern() TO durable_job_renewal_owner;
GRANT ALL ON FUNCTION durable_jobs.worker_owner_id_pattern() TO durable_job_terminal_owner;
GRANT ALL ON FUNCTION durable_jobs.worker_owner_id_pattern() TO durable_job_policy_owner;
GRANT ALL ON FUNCTION durable_jobs.worker_owner_id_pattern() TO durable_job_retention_owner;
GRANT ALL ON FUNCTION durable_jobs.worker_owner_id_pattern() TO durable_job_audit_owner;

--
-- Name: COLUMN evidence_order_lock.lock_slot; Type: ACL; Schema: durable_jobs; Owner: postgres
--

GRANT SELECT(lock_slot),UPDATE(lock_slot) ON TABLE durable_jobs.evidence_order_lock TO durable_job_policy_owner;

--
-- Name: TABLE job_payload_record; Type: ACL; Schema: durable_jobs; Owner: postgres
--

GRANT DELETE ON TABLE durable_jobs.job_payload_record TO durable_job_retention_owner;

--
-- Name: COLUMN job_payload_record.job_record_id; Type: ACL; Schema: durable_jobs; Owner: postgres
--

GRANT INSERT(job_record_id) ON TABLE durable_jobs.job_payload_record TO durable_job_producer_owner;
GRANT SELECT(job_record_id) ON TABLE durable_jobs.job_payload_record TO durable_job_claim_owner;
GRANT SELECT(job_record_id) ON TABLE durable_jobs.job_payload_record TO durable_job_retention_owner;

--
-- Name: COLUMN job_payload_record.job_payload; Type: ACL; Schema: durable_jobs; Owner: postgres
--

GRANT INSERT(job_payload) ON TABLE durable_jobs.job_payload_record TO durable_job_producer_owner;
GRANT SELECT(job_payload) ON TABLE durable_jobs.job_payload_record TO durable_job_claim_owner;

--
-- Name: COLUMN server_timeline_state.state_slot; Type: ACL; Schema: durable_jobs; Owner: postgres
--

GRANT SELECT(state_slot) ON TABLE durable_jobs.server_timeline_state TO durable_job_policy_owner;

--
-- Name: COLUMN server_timeline_state.server_timeline; Type: ACL; Schema: durable_jobs; Owner: postgres
--

GRANT SELECT(server_timeline),UPDATE(server_timeline) ON TABLE durable_jobs.server_timeline_state TO durable_job_policy_owner;

--
-- Name: COLUMN server_timeline_state.timeline_seen_at; Type: ACL; Schema: durable_jobs; Owner: postgres
--

GRANT SELECT(timeline_seen_at),UPDATE(timeline_seen_at) ON TABLE durable_jobs.server_timeline_state TO durable_job_policy_owner;

--
-- Name: COLUMN server_timeline_state.previous_timeline; Type: ACL; Schema: durable_jobs; Owner: postgres
--

GRANT SELECT(previous_timeline),UPDATE(previous_timeline) ON TABLE durable_jobs.server_timeline_state TO durable_job_policy_owner;

--
-- Name: COLUMN server_timeline_state.server_started_at; Type: ACL; Schema: durable_jobs; Owner: postgres
--

GRANT SELECT(server_started_at),UPDATE(server_started_at) ON TABLE durable_jobs.server_timeline_state TO durable_job_policy_owner;

--
-- PostgreSQL database dump complete
--
