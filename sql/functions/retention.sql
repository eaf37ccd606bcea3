-- Retention and erasure (operators).
--
-- The current definition of each function of this family, edited in place.
-- A change reaches databases through a new migration that includes this
-- file; released migrations hold their own frozen copy (see sql/doc.go).
--
-- Below, the notes written with the versions the current definitions come
-- from, newest first. They name the files as they were then; each
-- migration's frozen SQL under sql/migrations holds the whole text.

-- Notes of migration 030:
--
-- Only purge_expired_job_data changes: each pass bounds its scan of
-- job_record_finished_by_age by the latest cutoff any retention policy
-- gives (one scalar subquery of the policy table, read once a statement),
-- an index condition, so a call that finds fewer due rows than its batch
-- (the last call of every purge loop) reads the due rows and stops,
-- instead of reading the entry of every finished row (the per-queue
-- cutoff is a join filter through the policy table; 400,000 entries for
-- 200,000 finished rows inside their retention; issue 38). The per-queue
-- cutoff is still tested on every row, so what is purged does not change.
-- Left as it was: rows younger than that bound but not due (a queue with
-- a longer retention than the shortest policy's), and rows whose payload
-- is gone but whose record is kept, are still read by the pass in
-- question.

-- Notes of migration 019 (retention_v3.sql in its frozen SQL):
--
-- Retention, version 3 (migration 019): only purge_expired_job_data
-- changes. Migration 019 drops the foreign keys of job_payload_record and
-- job_outcome_ledger to job_record (each INSERT of a payload or an outcome
-- ran the key's check, a query and a row lock per row, on every enqueue and
-- completion), so their ON DELETE CASCADE is gone too: the purge deletes a
-- purged job's payload and outcome ledger rows itself, in the statement that
-- deletes the job. Everything else stays as retention.sql and
-- retention_v2.sql install it.

-- Notes of migration 014 (retention_v2.sql in its frozen SQL):
--
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

-- Notes of migration 005 (retention.sql in its frozen SQL):
--
-- The retention and erasure family (first version, installed by the
-- retention migration). Owned by durable_job_retention_owner, which may
-- delete finished jobs, delete payload rows and clear result documents,
-- but holds no SELECT on job_payload_record.job_payload or on
-- job_outcome_ledger.result_document: it removes personal data without
-- being able to read it. Executable by durable_job_operator only.

-- set_queue_retention_policy: sets how long one queue's finished jobs
-- (SUCCEEDED, FAILED, CANCELLED, aged by status_changed_at) keep their
-- payload and result documents, and how long their row and outcome ledger
-- are kept ('*' is the default for queues without their own). Valid only
-- when every value is non-NULL and a plain duration (absolute_duration: no
-- month or year part, day and time parts of one sign; since migration 024,
-- so that no interval whose parts cancel out passes a bound it does not
-- meet), 1 hour <= payload_retention <= record_retention <= 3650 days, the
-- reason is valid (see require_valid_change_reason), does not look like
-- personal data or a secret (require_structured_change) and the queue name
-- is '*' or well-formed. Otherwise LF002 and nothing changes. The policy
-- stores the durations as absolute_duration gives them ('30 days' is kept
-- as '720:00:00'), as the lease policy does. The ticket and approver are
-- checked as every change record's are (require_structured_change; since
-- migration 026, so retention can be changed where change control asks for
-- them). The table's trigger (record_retention_policy_change) appends
-- retention_policy_changed control evidence (old and new values, reason,
-- ticket, approver, session_user, database time), written the same
-- whatever the session's IntervalStyle, DateStyle, TimeZone or
-- extra_float_digits. Takes the evidence-order lock (lock_evidence_order),
-- then locks the queue's policy row.
CREATE OR REPLACE FUNCTION durable_jobs.set_queue_retention_policy(p_queue_name text, p_payload_retention interval,
    p_record_retention interval, p_change_reason text, p_change_ticket text, p_change_approver text DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET IntervalStyle = 'postgres'
SET DateStyle = 'ISO, MDY'
SET TimeZone = 'UTC'
SET extra_float_digits = '1'
AS $function$
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
$function$;

ALTER FUNCTION durable_jobs.set_queue_retention_policy(text, interval, interval, text, text, text) OWNER TO durable_job_retention_owner;
REVOKE ALL ON FUNCTION durable_jobs.set_queue_retention_policy(text, interval, interval, text, text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.set_queue_retention_policy(text, interval, interval, text, text, text) TO durable_job_operator;
-- approve_change (maker-checker, migration 026) applies an approved retention proposal.
GRANT EXECUTE ON FUNCTION durable_jobs.set_queue_retention_policy(text, interval, interval, text, text, text) TO durable_job_policy_owner;

-- set_queue_retention_policy (without ticket or approver): the same as the
-- overload above with no ticket and no approver, so it is refused (LF002)
-- when change control requires an approver.
CREATE OR REPLACE FUNCTION durable_jobs.set_queue_retention_policy(p_queue_name text, p_payload_retention interval,
    p_record_retention interval, p_change_reason text)
RETURNS void
LANGUAGE sql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
BEGIN ATOMIC
    SELECT durable_jobs.set_queue_retention_policy(p_queue_name, p_payload_retention, p_record_retention,
        p_change_reason, NULL, NULL);
END;

ALTER FUNCTION durable_jobs.set_queue_retention_policy(text, interval, interval, text) OWNER TO durable_job_retention_owner;
REVOKE ALL ON FUNCTION durable_jobs.set_queue_retention_policy(text, interval, interval, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.set_queue_retention_policy(text, interval, interval, text) TO durable_job_operator;

-- queue_retention_policies: every queue's retention policy, the default '*'
-- included, ordered by queue name. Takes no lock.
CREATE OR REPLACE FUNCTION durable_jobs.queue_retention_policies()
RETURNS TABLE (queue_name text, payload_retention interval, record_retention interval,
               changed_at timestamptz, changed_by_role text)
LANGUAGE sql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
BEGIN ATOMIC
    SELECT p.queue_name, p.payload_retention, p.record_retention, p.changed_at, p.changed_by_role
    FROM durable_jobs.queue_retention_policy p
    ORDER BY p.queue_name;
END;

ALTER FUNCTION durable_jobs.queue_retention_policies() OWNER TO durable_job_retention_owner;
REVOKE ALL ON FUNCTION durable_jobs.queue_retention_policies() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.queue_retention_policies() TO durable_job_operator;

-- purge_expired_job_data: applies the retention policies to at most
-- p_batch_size finished jobs (1 to 10,000, else LF003) and returns what it
-- removed, one row per queue and kind:
--   job_record  jobs past their record retention: the row is deleted with
--               its payload and outcome ledger (in the same statement; no
--               foreign key cascades since migration 019);
--   payload     jobs past their payload retention that still had a payload:
--               the payload is deleted and every result document of the job
--               in the outcome ledger is set to NULL; the row stays.
-- Only SUCCEEDED, FAILED and CANCELLED rows are ever touched, each locked
-- FOR UPDATE SKIP LOCKED and re-checked when locked (a concurrent replay
-- wins and the job is left alone), so it never waits on or changes a live
-- claim and may run from several places at once. Call it until it returns
-- no row. When it removed anything, it appends one job_data_purged control
-- evidence record with the counts per queue and kind (never a job id),
-- under the evidence-order lock. Control evidence itself is never purged.
-- A job is never removed less than 1 hour after it finished, whatever a
-- policy row holds (since migration 024: a row written before it could
-- hold an interval whose parts cancel out, such as '-1 year 361 days',
-- which made the cutoff lie in the future). Each pass reads finished rows
-- only up to the latest cutoff any policy gives (since migration 030), so a
-- call that finds fewer due rows than its batch does not read the others.
CREATE OR REPLACE FUNCTION durable_jobs.purge_expired_job_data(p_batch_size integer)
RETURNS TABLE (queue_name text, purge_kind text, purged_count bigint)
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $function$
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
$function$;

ALTER FUNCTION durable_jobs.purge_expired_job_data(integer) OWNER TO durable_job_retention_owner;
REVOKE ALL ON FUNCTION durable_jobs.purge_expired_job_data(integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.purge_expired_job_data(integer) TO durable_job_operator;

-- erase_job_payload: erases one finished job's payload and every result
-- document of it in the outcome ledger, for a data-subject request, and
-- keeps its lifecycle row (status, attempts, failure reason code). true when
-- a payload was erased; false for an unknown job or one already erased
-- (its result documents are cleared again either way). Refuses a job that
-- is QUEUED, RUNNING or RETRY_SCHEDULED with LF003: cancel it first. An
-- erasure appends a payload_erased row to the job's action trail
-- (job_action_record: who, when, why, ticket, approver; since migration
-- 026) and job_payload_erased control evidence with the queue, the
-- job's status, the reason, ticket, approver, session_user and database
-- time; never the job
-- id (auditors read evidence, and auditor output carries no job ids) or
-- anything of the payload. Locks the job row (waits for a terminal write
-- or cancel in progress). Raises LF003 for a NULL id or an invalid reason
-- (blank, over 500 characters, a control character), and LF002
-- (require_structured_change) for a reason that looks like personal data
-- or a secret or holds a bidirectional-control character: nothing is
-- erased then.
CREATE OR REPLACE FUNCTION durable_jobs.erase_job_payload(p_job_record_id bigint, p_change_reason text,
    p_change_ticket text, p_change_approver text DEFAULT NULL)
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
$function$;

ALTER FUNCTION durable_jobs.erase_job_payload(bigint, text, text, text) OWNER TO durable_job_retention_owner;
REVOKE ALL ON FUNCTION durable_jobs.erase_job_payload(bigint, text, text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.erase_job_payload(bigint, text, text, text) TO durable_job_operator;

-- erase_job_payload (without ticket or approver): the same as the overload
-- above with no ticket and no approver, so it is refused (LF002) when change
-- control requires an approver.
CREATE OR REPLACE FUNCTION durable_jobs.erase_job_payload(p_job_record_id bigint, p_change_reason text)
RETURNS boolean
LANGUAGE sql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
BEGIN ATOMIC
    SELECT durable_jobs.erase_job_payload(p_job_record_id, p_change_reason, NULL, NULL);
END;

ALTER FUNCTION durable_jobs.erase_job_payload(bigint, text) OWNER TO durable_job_retention_owner;
REVOKE ALL ON FUNCTION durable_jobs.erase_job_payload(bigint, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.erase_job_payload(bigint, text) TO durable_job_operator;
