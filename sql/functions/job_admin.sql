-- Operator job views: list and inspect jobs without their payloads.
--
-- The current definition of each function of this family, edited in place.
-- A change reaches databases through a new migration that includes this
-- file; released migrations hold their own frozen copy (see sql/doc.go).
--
-- Below, the notes written with the versions the current definitions come
-- from, newest first. They name the files as they were then; each
-- migration's frozen SQL under sql/migrations holds the whole text.

-- Notes of migration 007 (job_admin.sql in its frozen SQL):
--
-- Operator job views: payload-blind reads of individual jobs for the
-- operator (leasectl jobs list / show). They return lifecycle columns only:
-- never the payload, the claim token, its digest, the owner id, the login
-- role that claimed it or the idempotency key. Owned by the audit owner,
-- which cannot read the payload table, the claim digest, the owner id or
-- the idempotency key digest at all. They take no locks. Cancel and replay are the producer family's cancel_job and
-- replay_job, which operators already hold.

-- operator_list_jobs: up to p_max_jobs jobs, newest first (job_record_id
-- descending), of one queue and one status when given (NULL: any), with
-- ids below p_after_job_record_id when given (keyset pagination: pass the
-- last id of the previous page). Raises LF003 for a malformed queue name,
-- a status that is not a job_status_kind, or p_max_jobs NULL or outside 1
-- to 1000.
CREATE OR REPLACE FUNCTION durable_jobs.operator_list_jobs(
    p_queue_name text DEFAULT NULL, p_job_status text DEFAULT NULL,
    p_after_job_record_id bigint DEFAULT NULL, p_max_jobs integer DEFAULT 50)
RETURNS TABLE (job_record_id bigint, queue_name text, job_status text, attempt_number integer,
               max_attempts integer, lease_fencing_generation bigint, lease_expires_at timestamptz,
               lease_renewal_count bigint, failure_reason_code text, run_after timestamptz,
               created_at timestamptz, status_changed_at timestamptz)
LANGUAGE plpgsql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $function$
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
$function$;

ALTER FUNCTION durable_jobs.operator_list_jobs(text, text, bigint, integer) OWNER TO durable_job_audit_owner;
REVOKE ALL ON FUNCTION durable_jobs.operator_list_jobs(text, text, bigint, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.operator_list_jobs(text, text, bigint, integer) TO durable_job_operator;

-- operator_job_detail: the same columns for one job. Zero rows for an
-- unknown id. Raises LF003 for a NULL id.
CREATE OR REPLACE FUNCTION durable_jobs.operator_job_detail(p_job_record_id bigint)
RETURNS TABLE (job_record_id bigint, queue_name text, job_status text, attempt_number integer,
               max_attempts integer, lease_fencing_generation bigint, lease_expires_at timestamptz,
               lease_renewal_count bigint, failure_reason_code text, run_after timestamptz,
               created_at timestamptz, status_changed_at timestamptz)
LANGUAGE plpgsql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $function$
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
$function$;

ALTER FUNCTION durable_jobs.operator_job_detail(bigint) OWNER TO durable_job_audit_owner;
REVOKE ALL ON FUNCTION durable_jobs.operator_job_detail(bigint) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.operator_job_detail(bigint) TO durable_job_operator;

-- record_job_action: private helper of cancel_job, replay_job and their
-- reasoned overloads (since migration 026): appends one row to the job's
-- action trail (job_action_record: the action, session_user, database
-- time, reason, ticket, approver). With a reason it first checks the change
-- record (require_structured_change, under the evidence-order lock: LF002
-- and nothing changed when it is not structured) and appends a chained
-- job_cancelled or job_replayed control evidence record with the queue and
-- the status before and after: never the job id or anything of the payload
-- (auditors read evidence). Without a reason (a producer's own cancel) it
-- writes the trail row only and takes no lock.
CREATE OR REPLACE FUNCTION durable_jobs.record_job_action(p_job_record_id bigint, p_queue_name text,
    p_action_kind text, p_previous_status text, p_new_status text, p_change_reason text, p_change_ticket text,
    p_change_approver text)
RETURNS void
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $function$
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
$function$;

ALTER FUNCTION durable_jobs.record_job_action(bigint, text, text, text, text, text, text, text) OWNER TO durable_job_retention_owner;
REVOKE ALL ON FUNCTION durable_jobs.record_job_action(bigint, text, text, text, text, text, text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.record_job_action(bigint, text, text, text, text, text, text, text) TO durable_job_producer_owner;

-- operator_job_actions: one job's action trail (cancel, replay, payload
-- erasure since migration 026), oldest first: the action, when, the login
-- that acted, its reason, ticket and approver. Zero rows for an unknown job
-- or one nobody acted on. Never the payload. Raises LF003 for a NULL id.
-- Takes no lock.
CREATE OR REPLACE FUNCTION durable_jobs.operator_job_actions(p_job_record_id bigint)
RETURNS TABLE (action_kind text, acted_at timestamptz, acted_by_role text, change_reason text,
               change_ticket text, change_approver text)
LANGUAGE plpgsql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $function$
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
$function$;

ALTER FUNCTION durable_jobs.operator_job_actions(bigint) OWNER TO durable_job_audit_owner;
REVOKE ALL ON FUNCTION durable_jobs.operator_job_actions(bigint) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.operator_job_actions(bigint) TO durable_job_operator;
