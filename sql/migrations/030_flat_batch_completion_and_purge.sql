-- leasefence 030: a batch completion and the last call of a purge loop read
-- what they write, whatever the statistics (issue 38).
--
-- complete_jobs finds the rows its lock pass locked by their tuple ids
-- alone, as the renewals do since migration 020: with the job ids tested
-- beside them, statistics taken while the jobs were queued planned its
-- UPDATE as a scan of the primary key by the ids (about 3.5 index entries
-- a claim against 1 to 2 with the TID scan that fresh statistics gave).
-- The fencing (status, token digest, owner, claiming session_user, expiry
-- by database time) is the lock pass's and does not change.
--
-- purge_expired_job_data bounds each pass's scan of
-- job_record_finished_by_age by the latest cutoff any retention policy
-- gives, an index condition: a call that finds fewer due rows than its
-- batch read the entry of every finished row (the per-queue cutoff is a
-- join filter through the policy table), 400,000 entries for 200,000
-- finished rows inside their retention.
--
-- Functions only: no table is locked beyond what CREATE OR REPLACE
-- FUNCTION takes.

-- Terminal writes: fenced RUNNING -> SUCCEEDED, retry or FAILED, one claim or many.
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
-- Only complete_jobs changes: its UPDATE finds the locked rows by their
-- tuple ids alone (it also tested their job ids, which let statistics
-- taken while the jobs were queued plan it as a scan of the primary key
-- by the ids: about 3.5 index entries a claim against 1 to 2 with a TID
-- scan; issue 38). Which rows it completes does not change: exactly the
-- rows its lock pass found fenced and locked, by the same checks (status,
-- token digest, owner, claiming session_user, expiry by database time).

-- Notes of migration 017 (terminal_batch_v3.sql in its frozen SQL):
--
-- terminal batch v3 (migration 017; 016 installs terminal_batch_v2.sql).
-- Exactly v2, except that the 1 MiB check of the result documents runs as
-- a statement only when there are documents: the worker loop completes
-- without results (p_result_documents NULL), and a statement that reads
-- nothing still costs an executor start and end on every call.

-- Notes of migration 016 (terminal_v4.sql in its frozen SQL):
--
-- terminal v4 (migration 016; 004 installs terminal_v2.sql, 012 terminal_v3.sql):
-- only lock_fenced_claim changes, so only it is here. Version 2 found the
-- claim's row with `job_status = 'RUNNING'` beside its primary key, which
-- let a planner whose statistics predate the claims (ANALYZE while the jobs
-- were queued: the partial indexes of RUNNING rows look empty) read the
-- whole job_record_running_by_queue index for every complete_job,
-- retry_job, fail_job and release_job_claim: O(live leases) per call
-- (TestCallsOnOneJobUseThePrimaryKeyUnderStaleStatistics). The
-- other terminal functions stay as v2 and v3 have them.

-- lock_fenced_claim: private helper of the terminal family. Checks the claim
-- arguments (LF003 when malformed) and locks the job row FOR UPDATE only if
-- the claim is fenced: RUNNING, token digest, owner and claiming session_user
-- match, and lease_expires_at > clock_timestamp(). Zero rows when stale. A
-- concurrent renewal or cancel is waited for and the fence re-checked.
CREATE OR REPLACE FUNCTION durable_jobs.lock_fenced_claim(p_job_record_id bigint, p_lease_claim_token uuid, p_worker_owner_id text)
RETURNS TABLE (fenced_generation bigint, fenced_attempt_number integer, fenced_max_attempts integer)
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, pg_temp
AS $function$
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
$function$;

REVOKE ALL ON FUNCTION durable_jobs.lock_fenced_claim(bigint, uuid, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.lock_fenced_claim(bigint, uuid, text) TO durable_job_terminal_owner;

-- raise_stale_claim: the one place LF001 is raised, so every terminal write
-- refuses a stale claim the same way and the caller's transaction, target
-- writes included, cannot commit. The message carries no claim value.
CREATE OR REPLACE FUNCTION durable_jobs.raise_stale_claim()
RETURNS void
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, pg_temp
AS $function$
BEGIN
    RAISE EXCEPTION USING
        ERRCODE = 'LF001',
        MESSAGE = 'stale claim: the lease is expired, cancelled, terminal, superseded or not yours',
        HINT = 'Stop work on this job and roll back; only claim_next_job creates ownership.';
END;
$function$;

REVOKE ALL ON FUNCTION durable_jobs.raise_stale_claim() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.raise_stale_claim() TO durable_job_terminal_owner;

-- complete_job: fenced RUNNING -> SUCCEEDED, with the result recorded in the
-- outcome ledger. Meant to run in the worker's own transaction with its
-- target writes so that all commit or none do. Locks the job row. Raises
-- LF003 for malformed input (a result document over 1 MiB, pg_column_size
-- of the jsonb, included), LF001 for a stale claim.
CREATE OR REPLACE FUNCTION durable_jobs.complete_job(p_job_record_id bigint, p_lease_claim_token uuid, p_worker_owner_id text,
                                          p_result_document jsonb DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $function$
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
$function$;

ALTER FUNCTION durable_jobs.complete_job(bigint, uuid, text, jsonb) OWNER TO durable_job_terminal_owner;
REVOKE ALL ON FUNCTION durable_jobs.complete_job(bigint, uuid, text, jsonb) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.complete_job(bigint, uuid, text, jsonb) TO durable_job_worker;

-- complete_jobs: every claim in is fenced exactly as complete_job fences one
-- (RUNNING, token digest, owner and claiming session_user match,
-- lease_expires_at > clock_timestamp()) and moves to SUCCEEDED with its
-- result in the outcome ledger; one row out per claim in, in input order.
-- Completion is transactional: one stale claim raises LF001 and nothing is
-- completed (the caller's transaction, target writes included, cannot
-- commit). Locks the rows FOR UPDATE in job id order, so two batches (or a
-- batch and complete_job calls in id order) cannot deadlock; like
-- complete_job it waits for a row another transaction holds locked and then
-- decides on the row as that transaction left it. p_result_documents NULL:
-- every result is NULL; else one document (or NULL) per claim. LF003 on
-- bad input: malformed owner, NULL arrays, multi-dimensional arrays, lengths
-- that differ, NULL ids or tokens, a job id given twice, more than 1,000
-- claims, a result document over 1 MiB. Empty arrays: zero rows.
CREATE OR REPLACE FUNCTION durable_jobs.complete_jobs(p_worker_owner_id text, p_job_record_ids bigint[],
                                           p_lease_claim_tokens uuid[], p_result_documents jsonb[] DEFAULT NULL)
RETURNS TABLE (job_record_id bigint, job_status text, lease_fencing_generation bigint)
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $function$
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
$function$;

ALTER FUNCTION durable_jobs.complete_jobs(text, bigint[], uuid[], jsonb[]) OWNER TO durable_job_terminal_owner;
REVOKE ALL ON FUNCTION durable_jobs.complete_jobs(text, bigint[], uuid[], jsonb[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.complete_jobs(text, bigint[], uuid[], jsonb[]) TO durable_job_worker;

-- retry_job: fenced RUNNING -> RETRY_SCHEDULED with run-after
-- clock_timestamp() + p_retry_delay, or FAILED with the caller's reason code
-- when the attempts are used up; returns the new status. The delay is taken
-- as a plain duration ('1 day' is 24 hours under every TimeZone). Locks the
-- job row. Raises LF003 for malformed input (a delay outside 0 to 30 days,
-- with a month part or with day and time parts of opposite signs), LF001 for
-- a stale claim.
CREATE OR REPLACE FUNCTION durable_jobs.retry_job(p_job_record_id bigint, p_lease_claim_token uuid, p_worker_owner_id text,
                                       p_retry_delay interval, p_failure_reason_code text)
RETURNS text
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET TimeZone = 'UTC'
AS $function$
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
$function$;

ALTER FUNCTION durable_jobs.retry_job(bigint, uuid, text, interval, text) OWNER TO durable_job_terminal_owner;
REVOKE ALL ON FUNCTION durable_jobs.retry_job(bigint, uuid, text, interval, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.retry_job(bigint, uuid, text, interval, text) TO durable_job_worker;

-- fail_job: fenced RUNNING -> FAILED with a bounded reason code. Locks the
-- job row. Raises LF003 for malformed input, LF001 for a stale claim.
CREATE OR REPLACE FUNCTION durable_jobs.fail_job(p_job_record_id bigint, p_lease_claim_token uuid, p_worker_owner_id text,
                                      p_failure_reason_code text)
RETURNS void
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $function$
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
$function$;

ALTER FUNCTION durable_jobs.fail_job(bigint, uuid, text, text) OWNER TO durable_job_terminal_owner;
REVOKE ALL ON FUNCTION durable_jobs.fail_job(bigint, uuid, text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.fail_job(bigint, uuid, text, text) TO durable_job_worker;


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


SELECT durable_jobs.lock_evidence_order();
INSERT INTO durable_jobs.control_evidence_record (evidence_kind, queue_name, previous_values, new_values, change_reason)
VALUES ('migration_applied', NULL, NULL, '{"migration_version": 30, "migration_name": "030_flat_batch_completion_and_purge"}',
        COALESCE(NULLIF(pg_catalog.current_setting('leasefence.migration_reason', true), ''), 'leasefence bundle migration'));

---- create above / drop below ----

-- The terminal family as migration 029 left it.
-- Terminal writes: fenced RUNNING -> SUCCEEDED, retry or FAILED, one claim or many.
--
-- The current definition of each function of this family, edited in place.
-- A change reaches databases through a new migration that includes this
-- file; released migrations hold their own frozen copy (see sql/doc.go).
--
-- Below, the notes written with the versions the current definitions come
-- from, newest first. They name the files as they were then; each
-- migration's frozen SQL under sql/migrations holds the whole text.

-- Notes of migration 017 (terminal_batch_v3.sql in its frozen SQL):
--
-- terminal batch v3 (migration 017; 016 installs terminal_batch_v2.sql).
-- Exactly v2, except that the 1 MiB check of the result documents runs as
-- a statement only when there are documents: the worker loop completes
-- without results (p_result_documents NULL), and a statement that reads
-- nothing still costs an executor start and end on every call.

-- Notes of migration 016 (terminal_v4.sql in its frozen SQL):
--
-- terminal v4 (migration 016; 004 installs terminal_v2.sql, 012 terminal_v3.sql):
-- only lock_fenced_claim changes, so only it is here. Version 2 found the
-- claim's row with `job_status = 'RUNNING'` beside its primary key, which
-- let a planner whose statistics predate the claims (ANALYZE while the jobs
-- were queued: the partial indexes of RUNNING rows look empty) read the
-- whole job_record_running_by_queue index for every complete_job,
-- retry_job, fail_job and release_job_claim: O(live leases) per call
-- (TestCallsOnOneJobUseThePrimaryKeyUnderStaleStatistics). The
-- other terminal functions stay as v2 and v3 have them.

-- lock_fenced_claim: private helper of the terminal family. Checks the claim
-- arguments (LF003 when malformed) and locks the job row FOR UPDATE only if
-- the claim is fenced: RUNNING, token digest, owner and claiming session_user
-- match, and lease_expires_at > clock_timestamp(). Zero rows when stale. A
-- concurrent renewal or cancel is waited for and the fence re-checked.
CREATE OR REPLACE FUNCTION durable_jobs.lock_fenced_claim(p_job_record_id bigint, p_lease_claim_token uuid, p_worker_owner_id text)
RETURNS TABLE (fenced_generation bigint, fenced_attempt_number integer, fenced_max_attempts integer)
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, pg_temp
AS $function$
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
$function$;

REVOKE ALL ON FUNCTION durable_jobs.lock_fenced_claim(bigint, uuid, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.lock_fenced_claim(bigint, uuid, text) TO durable_job_terminal_owner;

-- raise_stale_claim: the one place LF001 is raised, so every terminal write
-- refuses a stale claim the same way and the caller's transaction, target
-- writes included, cannot commit. The message carries no claim value.
CREATE OR REPLACE FUNCTION durable_jobs.raise_stale_claim()
RETURNS void
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, pg_temp
AS $function$
BEGIN
    RAISE EXCEPTION USING
        ERRCODE = 'LF001',
        MESSAGE = 'stale claim: the lease is expired, cancelled, terminal, superseded or not yours',
        HINT = 'Stop work on this job and roll back; only claim_next_job creates ownership.';
END;
$function$;

REVOKE ALL ON FUNCTION durable_jobs.raise_stale_claim() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.raise_stale_claim() TO durable_job_terminal_owner;

-- complete_job: fenced RUNNING -> SUCCEEDED, with the result recorded in the
-- outcome ledger. Meant to run in the worker's own transaction with its
-- target writes so that all commit or none do. Locks the job row. Raises
-- LF003 for malformed input (a result document over 1 MiB, pg_column_size
-- of the jsonb, included), LF001 for a stale claim.
CREATE OR REPLACE FUNCTION durable_jobs.complete_job(p_job_record_id bigint, p_lease_claim_token uuid, p_worker_owner_id text,
                                          p_result_document jsonb DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $function$
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
$function$;

ALTER FUNCTION durable_jobs.complete_job(bigint, uuid, text, jsonb) OWNER TO durable_job_terminal_owner;
REVOKE ALL ON FUNCTION durable_jobs.complete_job(bigint, uuid, text, jsonb) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.complete_job(bigint, uuid, text, jsonb) TO durable_job_worker;

-- complete_jobs: every claim in is fenced exactly as complete_job fences one
-- (RUNNING, token digest, owner and claiming session_user match,
-- lease_expires_at > clock_timestamp()) and moves to SUCCEEDED with its
-- result in the outcome ledger; one row out per claim in, in input order.
-- Completion is transactional: one stale claim raises LF001 and nothing is
-- completed (the caller's transaction, target writes included, cannot
-- commit). Locks the rows FOR UPDATE in job id order, so two batches (or a
-- batch and complete_job calls in id order) cannot deadlock; like
-- complete_job it waits for a row another transaction holds locked and then
-- decides on the row as that transaction left it. p_result_documents NULL:
-- every result is NULL; else one document (or NULL) per claim. LF003 on
-- bad input: malformed owner, NULL arrays, multi-dimensional arrays, lengths
-- that differ, NULL ids or tokens, a job id given twice, more than 1,000
-- claims, a result document over 1 MiB. Empty arrays: zero rows.
CREATE OR REPLACE FUNCTION durable_jobs.complete_jobs(p_worker_owner_id text, p_job_record_ids bigint[],
                                           p_lease_claim_tokens uuid[], p_result_documents jsonb[] DEFAULT NULL)
RETURNS TABLE (job_record_id bigint, job_status text, lease_fencing_generation bigint)
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $function$
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
    RETURN QUERY
    WITH completed AS (
        UPDATE durable_jobs.job_record j
        SET job_status = 'SUCCEEDED', status_changed_at = pg_catalog.clock_timestamp(), lease_expires_at = NULL
        WHERE j.ctid = ANY (v_locked_ctids) AND j.job_record_id = ANY (p_job_record_ids)
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
$function$;

ALTER FUNCTION durable_jobs.complete_jobs(text, bigint[], uuid[], jsonb[]) OWNER TO durable_job_terminal_owner;
REVOKE ALL ON FUNCTION durable_jobs.complete_jobs(text, bigint[], uuid[], jsonb[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.complete_jobs(text, bigint[], uuid[], jsonb[]) TO durable_job_worker;

-- retry_job: fenced RUNNING -> RETRY_SCHEDULED with run-after
-- clock_timestamp() + p_retry_delay, or FAILED with the caller's reason code
-- when the attempts are used up; returns the new status. The delay is taken
-- as a plain duration ('1 day' is 24 hours under every TimeZone). Locks the
-- job row. Raises LF003 for malformed input (a delay outside 0 to 30 days,
-- with a month part or with day and time parts of opposite signs), LF001 for
-- a stale claim.
CREATE OR REPLACE FUNCTION durable_jobs.retry_job(p_job_record_id bigint, p_lease_claim_token uuid, p_worker_owner_id text,
                                       p_retry_delay interval, p_failure_reason_code text)
RETURNS text
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET TimeZone = 'UTC'
AS $function$
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
$function$;

ALTER FUNCTION durable_jobs.retry_job(bigint, uuid, text, interval, text) OWNER TO durable_job_terminal_owner;
REVOKE ALL ON FUNCTION durable_jobs.retry_job(bigint, uuid, text, interval, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.retry_job(bigint, uuid, text, interval, text) TO durable_job_worker;

-- fail_job: fenced RUNNING -> FAILED with a bounded reason code. Locks the
-- job row. Raises LF003 for malformed input, LF001 for a stale claim.
CREATE OR REPLACE FUNCTION durable_jobs.fail_job(p_job_record_id bigint, p_lease_claim_token uuid, p_worker_owner_id text,
                                      p_failure_reason_code text)
RETURNS void
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $function$
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
$function$;

ALTER FUNCTION durable_jobs.fail_job(bigint, uuid, text, text) OWNER TO durable_job_terminal_owner;
REVOKE ALL ON FUNCTION durable_jobs.fail_job(bigint, uuid, text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.fail_job(bigint, uuid, text, text) TO durable_job_worker;

-- The retention family as migration 029 left it.
-- Retention and erasure (operators).
--
-- The current definition of each function of this family, edited in place.
-- A change reaches databases through a new migration that includes this
-- file; released migrations hold their own frozen copy (see sql/doc.go).
--
-- Below, the notes written with the versions the current definitions come
-- from, newest first. They name the files as they were then; each
-- migration's frozen SQL under sql/migrations holds the whole text.

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
-- which made the cutoff lie in the future).
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

SELECT durable_jobs.lock_evidence_order();
INSERT INTO durable_jobs.control_evidence_record (evidence_kind, queue_name, previous_values, new_values, change_reason)
VALUES ('migration_reverted', NULL, NULL, '{"migration_version": 30, "migration_name": "030_flat_batch_completion_and_purge"}',
        COALESCE(NULLIF(pg_catalog.current_setting('leasefence.migration_reason', true), ''),
                 'leasefence bundle migration rolled back'));
