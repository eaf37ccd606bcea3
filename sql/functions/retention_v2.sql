-- The retention and erasure family, version 2 (migration 014; 005 installs
-- retention.sql): only set_queue_retention_policy and erase_job_payload
-- change, so only they are here. Version 1 refused a reason that was blank,
-- too long or held a control character, and nothing else: a reason naming a
-- person, a card or a password went into append-only evidence that can never
-- be erased. Version 2 also passes every reason through
-- require_structured_change (the evidence-chain migration's check of policy
-- change reasons: LF002 for what looks like personal data or a secret), as
-- set_queue_lease_policy does. Owner, settings and grants are unchanged; the
-- owner, durable_job_retention_owner, is granted EXECUTE on that check and
-- the helpers it calls by the migration.

-- set_queue_retention_policy: sets how long one queue's finished jobs
-- (SUCCEEDED, FAILED, CANCELLED, aged by status_changed_at) keep their
-- payload and result documents, and how long their row and outcome ledger
-- are kept ('*' is the default for queues without their own). Valid only
-- when every value is non-NULL, 1 hour <= payload_retention <=
-- record_retention <= 3650 days, the reason is valid (see
-- require_valid_change_reason), does not look like personal data or a
-- secret (require_structured_change) and the queue name is '*' or
-- well-formed. Otherwise LF002 and nothing changes. Appends retention_policy_changed
-- control evidence (old and new values, reason, session_user, database
-- time). Locks the queue's policy row (and the default's) and takes the
-- evidence-order advisory lock.
CREATE OR REPLACE FUNCTION durable_jobs.set_queue_retention_policy(p_queue_name text, p_payload_retention interval,
    p_record_retention interval, p_change_reason text)
RETURNS void
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $function$
DECLARE
    v_previous jsonb;
BEGIN
    IF p_queue_name IS DISTINCT FROM '*' THEN
        PERFORM durable_jobs.require_well_formed('queue_name', p_queue_name, 'LF002');
    END IF;
    IF p_payload_retention IS NULL OR p_record_retention IS NULL
       OR p_payload_retention < interval '1 hour' OR p_record_retention < p_payload_retention
       OR p_record_retention > interval '3650 days' THEN
        RAISE EXCEPTION 'invalid retention policy' USING
            ERRCODE = 'LF002',
            DETAIL = 'Need 1 hour <= payload_retention <= record_retention <= 3650 days.';
    END IF;
    PERFORM durable_jobs.require_valid_change_reason(p_change_reason, 'LF002');
    PERFORM durable_jobs.require_structured_change(p_change_reason, NULL, NULL);
    -- Evidence writers run one at a time, in commit order (the bundle's
    -- evidence-order advisory key, taken inline so this family needs no
    -- other migration's helper).
    PERFORM pg_catalog.pg_advisory_xact_lock(1279655936, 1);

    SELECT pg_catalog.jsonb_build_object('policy_queue_name', p.queue_name,
               'payload_retention', p.payload_retention, 'record_retention', p.record_retention)
    INTO v_previous
    FROM durable_jobs.queue_retention_policy p
    WHERE p.queue_name IN (p_queue_name, '*')
    ORDER BY p.queue_name = '*'
    LIMIT 1
    FOR UPDATE;

    INSERT INTO durable_jobs.queue_retention_policy AS p
        (queue_name, payload_retention, record_retention, changed_at, changed_by_role)
    VALUES (p_queue_name, p_payload_retention, p_record_retention, pg_catalog.clock_timestamp(), SESSION_USER)
    ON CONFLICT (queue_name) DO UPDATE
    SET payload_retention = EXCLUDED.payload_retention, record_retention = EXCLUDED.record_retention,
        changed_at = EXCLUDED.changed_at, changed_by_role = EXCLUDED.changed_by_role;

    INSERT INTO durable_jobs.control_evidence_record (evidence_kind, queue_name, previous_values, new_values, change_reason)
    VALUES ('retention_policy_changed', p_queue_name, v_previous,
            pg_catalog.jsonb_build_object('policy_queue_name', p_queue_name,
                'payload_retention', p_payload_retention, 'record_retention', p_record_retention),
            p_change_reason);
END;
$function$;

-- erase_job_payload: erases one finished job's payload and every result
-- document of it in the outcome ledger, for a data-subject request, and
-- keeps its lifecycle row (status, attempts, failure reason code). true when
-- a payload was erased; false for an unknown job or one already erased
-- (its result documents are cleared again either way). Refuses a job that
-- is QUEUED, RUNNING or RETRY_SCHEDULED with LF003: cancel it first. An
-- erasure appends job_payload_erased control evidence with the queue, the
-- job's status, the reason, session_user and database time; never the job
-- id (auditors read evidence, and auditor output carries no job ids) or
-- anything of the payload. Locks the job row (waits for a terminal write
-- or cancel in progress). Raises LF003 for a NULL id or an invalid reason
-- (blank, over 500 characters, a control character), and LF002
-- (require_structured_change) for a reason that looks like personal data
-- or a secret or holds a bidirectional-control character: nothing is
-- erased then.
CREATE OR REPLACE FUNCTION durable_jobs.erase_job_payload(p_job_record_id bigint, p_change_reason text)
RETURNS boolean
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $function$
DECLARE
    v_status durable_jobs.job_status_kind;
    v_queue text;
BEGIN
    IF p_job_record_id IS NULL THEN
        RAISE EXCEPTION 'job id is required' USING ERRCODE = 'LF003';
    END IF;
    PERFORM durable_jobs.require_valid_change_reason(p_change_reason, 'LF003');
    PERFORM durable_jobs.require_structured_change(p_change_reason, NULL, NULL);

    SELECT j.job_status, j.queue_name INTO v_status, v_queue
    FROM durable_jobs.job_record j
    WHERE j.job_record_id = p_job_record_id
    FOR UPDATE;
    IF NOT FOUND THEN
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
    PERFORM pg_catalog.pg_advisory_xact_lock(1279655936, 1);
    INSERT INTO durable_jobs.control_evidence_record (evidence_kind, queue_name, previous_values, new_values, change_reason)
    VALUES ('job_payload_erased', v_queue, NULL,
            pg_catalog.jsonb_build_object('job_status', v_status::text, 'payload_erased', true,
                                          'result_documents_cleared', true),
            p_change_reason);
    RETURN true;
END;
$function$;
