-- leasefence 017: fewer statements per call on the worker's path (issue 11).
--
-- * claim_next_jobs (claim_v5.sql) runs three statements for a claim of due
--   jobs instead of eight, with the same rows claimed, locked and returned:
--   plan_cache_mode = force_generic_plan is a SET clause of the function
--   instead of two set_config calls, the expired and due probes are one
--   statement, and the UPDATE of exhausted candidates, the claim and the
--   count of reclaims run only when they have something to do.
-- * complete_jobs (terminal_batch_v3.sql) checks the size of the result
--   documents with a statement only when there are documents (the worker
--   loop completes without).
-- * The generation floor of migration 011 moves into claim_next_jobs
--   (GREATEST(generation + 1, timeline floor) in the claim, and
--   synchronous_commit = local for a transaction that claimed, as before),
--   and the trigger job_record_generation_floor and its function
--   raise_generation_to_floor are dropped: a BEFORE ROW UPDATE trigger on
--   job_record makes PostgreSQL lock the old row before every UPDATE of
--   job_record, whether the trigger fires or not, so each renewal paid an
--   extra tuple lock and WAL record (+56 WAL bytes, 1-3 % of a renewal,
--   3-5 % CPU-bound), and each claimed row a SECURITY DEFINER trigger call.
--   Dropped after claim_v5 is installed, in this migration's transaction,
--   so no claim runs without the floor. DROP TRIGGER takes an ACCESS
--   EXCLUSIVE lock on job_record, held until this migration commits (the
--   rest of it only replaces functions): every call waits for that moment,
--   and the migration waits for calls in flight (lock timeout).
-- The down part puts claim_v4.sql and terminal_batch_v2.sql back and
-- recreates the trigger and its function (generation_floor.sql) after them.

-- claim v5 (migration 017; 016 installs claim_v4.sql). Only claim_next_jobs
-- changes, and only in how many statements a claim runs, not in what it
-- claims, locks or returns: a claim of due jobs ran eight (the policy read,
-- two PERFORMs switching plan_cache_mode, the expired probe, the due probe,
-- the UPDATE of exhausted candidates, the claim and the count of reclaims);
-- it now runs three (the policy read, one probe, the claim):
--  * plan_cache_mode = force_generic_plan is a SET clause of the function
--    (set and restored with the call, as search_path is) instead of two
--    set_config calls;
--  * the expired probe and the due probe are one statement whose due half
--    runs only when the expired half found fewer than wanted (a LIMIT over
--    UNION ALL reads its second branch only then), locking exactly the rows
--    the two statements locked;
--  * the exhausted candidates' UPDATE runs only when there is one, the
--    claim only when there is a candidate, and the reclaims are counted
--    from the arrays without a statement.
-- claim_next_job is exactly v3.
--
-- And the generation floor of migration 011 moves from its trigger into
-- the claim (017 drops the trigger job_record_generation_floor and its
-- function raise_generation_to_floor): the claim sets
-- lease_fencing_generation = GREATEST(generation + 1, floor), the floor of
-- WAL timeline t being ((t - 1) << 40) + 1, read once per call, and a pass
-- that claimed sets synchronous_commit to local for the rest of the
-- transaction unless it is already off or local, as the trigger did. Why:
-- a BEFORE ROW UPDATE trigger on job_record, whatever its column list or
-- WHEN clause, makes PostgreSQL lock the old row (GetTupleForTrigger)
-- before every UPDATE of job_record, so every renewal paid an extra tuple
-- lock and WAL record (+56 WAL bytes, 1-3 % of a renewal, 3-5 % when
-- CPU-bound) for a trigger that never fired for it, and every claimed row
-- paid a SECURITY DEFINER PL/pgSQL call. claim_next_jobs is the only
-- writer that raises the generation.

-- claim_next_jobs: the only function that creates ownership. Claims up to
-- p_max_jobs due jobs of one queue (QUEUED/RETRY_SCHEDULED whose run-after
-- has come, or RUNNING whose lease expired by database time), each with a new
-- random token (only its sha256 is stored), attempt + 1 and fencing
-- generation + 1, or the WAL timeline's floor ((timeline - 1) << 40) + 1
-- when that is higher: generations strictly increase across promotions
-- (every promotion starts a higher timeline; timeline 1 has floor 1, so a
-- fresh install issues 1, 2, 3, ...). A job whose attempts are used up goes to FAILED
-- (attempts_exhausted) instead and does not count. Expired claims are taken
-- before due jobs. Locks: the claimed rows, FOR UPDATE SKIP LOCKED, so
-- claimers never wait on each other. LF003 on bad input and outside READ
-- COMMITTED.
--
-- Reclaim is exact: lease_expiry_floor <= lease_expires_at holds for every
-- RUNNING row (constraint job_record_running_floor_bounds_expiry), so every
-- expired lease has lease_expiry_floor <= now and the bounded scan of
-- job_record_reclaim_order finds it; lease_expires_at is rechecked on each
-- row. A live lease whose floor has passed (its worker renews late) is only
-- skipped over.
--
-- A call that claims sets synchronous_commit to local for the rest of its
-- transaction (set_config(..., true); not restored at the function's exit,
-- which restores only search_path and plan_cache_mode, the variables of its
-- SET clauses) unless it is already off or local: a claim's COMMIT never
-- waits for a synchronous standby, so a stalled standby cannot turn claims
-- into orphans that burn attempts. A claim lost in a failover is harmless:
-- its token is unknown on the new primary and its generation is below every
-- generation issued there. Renewals and terminal writes still wait. The
-- timeline is the one the server writes WAL on now (the first 8 hex digits
-- of the current WAL file's name), read only when there is a job to claim.
CREATE OR REPLACE FUNCTION durable_jobs.claim_next_jobs(p_queue_name text, p_worker_owner_id text, p_max_jobs integer)
RETURNS TABLE (job_record_id bigint, lease_claim_token uuid, lease_fencing_generation bigint,
               lease_expires_at timestamptz, lease_renewal_interval interval, attempt_number integer,
               job_payload jsonb, database_time timestamptz)
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
-- Generic plans for every statement: their custom plans are no better
-- (each walks an index in order under a LIMIT), but PostgreSQL would plan
-- them again on every call, because a generic plan's estimate for LIMIT $n
-- and lease_expiry_floor <= $now is higher. Planning was most of a
-- claim's server time. Set for this call only, like search_path.
SET plan_cache_mode = force_generic_plan
AS $function$
#variable_conflict use_column
DECLARE
    v_lease_duration interval;
    v_renewal_interval interval;
    v_max_claim_lifetime interval;
    v_wanted integer;
    v_candidate_ids bigint[];
    v_candidate_exhausted boolean[];
    v_expired integer;
    v_fetched integer;
    v_returned integer;
    v_claimed integer := 0;
    v_reclaims integer;
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
        SELECT COALESCE(pg_catalog.array_agg(c.candidate_id ORDER BY c.candidate_branch, c.candidate_order, c.candidate_id), '{}'),
               COALESCE(pg_catalog.array_agg(c.candidate_exhausted ORDER BY c.candidate_branch, c.candidate_order, c.candidate_id), '{}'),
               pg_catalog.count(*) FILTER (WHERE c.candidate_branch = 1)::integer
        INTO v_candidate_ids, v_candidate_exhausted, v_expired
        FROM (SELECT x.candidate_branch, x.candidate_order, x.candidate_id, x.candidate_exhausted
              FROM (SELECT 1 AS candidate_branch, j.lease_expiry_floor AS candidate_order, j.job_record_id AS candidate_id,
                           j.attempt_number >= j.max_attempts AS candidate_exhausted
                    FROM durable_jobs.job_record j
                    WHERE j.queue_name = p_queue_name AND j.job_status = 'RUNNING'
                      AND j.lease_expiry_floor <= v_now AND j.lease_expires_at <= v_now
                    ORDER BY j.lease_expiry_floor, j.job_record_id
                    LIMIT v_wanted
                    FOR UPDATE OF j SKIP LOCKED) x
              UNION ALL
              SELECT d.candidate_branch, d.candidate_order, d.candidate_id, d.candidate_exhausted
              FROM (SELECT 2 AS candidate_branch, j.run_after AS candidate_order, j.job_record_id AS candidate_id,
                           j.attempt_number >= j.max_attempts AS candidate_exhausted
                    FROM durable_jobs.job_record j
                    WHERE j.queue_name = p_queue_name AND j.job_status IN ('QUEUED', 'RETRY_SCHEDULED')
                      AND j.run_after <= v_now
                    ORDER BY j.run_after, j.job_record_id
                    LIMIT v_wanted
                    FOR UPDATE OF j SKIP LOCKED) d
              LIMIT v_wanted) c;
        v_fetched := pg_catalog.cardinality(v_candidate_ids);

        -- Attempts used up: FAILED instead of claimed; they do not count.
        IF pg_catalog.array_position(v_candidate_exhausted, true) IS NOT NULL THEN
            UPDATE durable_jobs.job_record j
            SET job_status = 'FAILED', status_changed_at = v_now, lease_expires_at = NULL,
                failure_reason_code = 'attempts_exhausted'
            FROM ROWS FROM (pg_catalog.unnest(v_candidate_ids), pg_catalog.unnest(v_candidate_exhausted))
                 AS c(candidate_id, candidate_exhausted)
            WHERE j.job_record_id = c.candidate_id AND c.candidate_exhausted;
        END IF;

        -- The rest are claimed in one UPDATE, each with its own token, and
        -- returned with their payloads in candidate order; no statement
        -- when every candidate was exhausted or there was none.
        IF pg_catalog.array_position(v_candidate_exhausted, false) IS NOT NULL THEN
            -- The generation floor, read once per call (COALESCE evaluates
            -- the timeline only when v_floor is still NULL) and only here:
            -- a call on a standby fails at its probe's FOR UPDATE as before,
            -- not at pg_walfile_name.
            v_floor := COALESCE(v_floor, ((('x' || pg_catalog.substr(pg_catalog.pg_walfile_name(pg_catalog.pg_current_wal_lsn()), 1, 8))::bit(32)::bigint - 1) << 40) + 1);
            RETURN QUERY
            WITH candidate AS (
                SELECT c.candidate_id, c.candidate_position, pg_catalog.gen_random_uuid() AS candidate_token
                FROM ROWS FROM (pg_catalog.unnest(v_candidate_ids), pg_catalog.unnest(v_candidate_exhausted))
                     WITH ORDINALITY AS c(candidate_id, candidate_exhausted, candidate_position)
                WHERE NOT c.candidate_exhausted
            ), claimed AS (
                UPDATE durable_jobs.job_record j
                SET job_status = 'RUNNING', status_changed_at = v_now,
                    attempt_number = j.attempt_number + 1,
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
        -- Reclaims are the claimed candidates of the expired branch: those
        -- not exhausted among its first v_expired.
        IF v_expired > 0 THEN
            v_reclaims := v_expired - pg_catalog.cardinality(pg_catalog.array_positions(v_candidate_exhausted[1:v_expired], true));
            IF v_reclaims > 0 THEN
                PERFORM durable_jobs.record_lease_outcome(p_queue_name, 'reclaim', v_reclaims);
            END IF;
        END IF;
        -- Another pass only when jobs moved to FAILED took places that due
        -- jobs behind them may fill.
        EXIT WHEN v_fetched < v_wanted OR v_claimed >= p_max_jobs;
    END LOOP;
END;
$function$;

ALTER FUNCTION durable_jobs.claim_next_jobs(text, text, integer) OWNER TO durable_job_claim_owner;
REVOKE ALL ON FUNCTION durable_jobs.claim_next_jobs(text, text, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.claim_next_jobs(text, text, integer) TO durable_job_worker;

-- terminal batch v3 (migration 017; 016 installs terminal_batch_v2.sql).
-- Exactly v2, except that the 1 MiB check of the result documents runs as
-- a statement only when there are documents: the worker loop completes
-- without results (p_result_documents NULL), and a statement that reads
-- nothing still costs an executor start and end on every call.

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


DROP TRIGGER job_record_generation_floor ON durable_jobs.job_record;
DROP FUNCTION durable_jobs.raise_generation_to_floor();

SELECT pg_catalog.pg_advisory_xact_lock(1279655936, 1);
INSERT INTO durable_jobs.control_evidence_record (evidence_kind, queue_name, previous_values, new_values, change_reason)
VALUES ('migration_applied', NULL, NULL, '{"migration_version": 17, "migration_name": "017_fewer_statements_per_call"}',
        COALESCE(NULLIF(pg_catalog.current_setting('leasefence.migration_reason', true), ''), 'leasefence bundle migration'));

---- create above / drop below ----

-- claim v4 (migration 016; 008 installs claim_v3.sql). Only
-- claim_next_jobs changes, and only in where its rules come from: the
-- queue-name and owner-id patterns are the rule functions
-- queue_name_is_well_formed and worker_owner_id_is_well_formed, and the
-- queue's policy (its own, else '*') is effective_lease_policy_queue (rules.sql),
-- all three inlined by PostgreSQL. Everything else, claim_next_job included,
-- is exactly v3.

-- claim_next_jobs: the only function that creates ownership. Claims up to
-- p_max_jobs due jobs of one queue (QUEUED/RETRY_SCHEDULED whose run-after
-- has come, or RUNNING whose lease expired by database time), each with a new
-- random token (only its sha256 is stored), attempt + 1 and fencing
-- generation + 1. A job whose attempts are used up goes to FAILED
-- (attempts_exhausted) instead and does not count. Expired claims are taken
-- before due jobs. Locks: the claimed rows, FOR UPDATE SKIP LOCKED, so
-- claimers never wait on each other. LF003 on bad input and outside READ
-- COMMITTED.
--
-- Reclaim is exact: lease_expiry_floor <= lease_expires_at holds for every
-- RUNNING row (constraint job_record_running_floor_bounds_expiry), so every
-- expired lease has lease_expiry_floor <= now and the bounded scan of
-- job_record_reclaim_order finds it; lease_expires_at is rechecked on each
-- row. A live lease whose floor has passed (its worker renews late) is only
-- skipped over.
CREATE OR REPLACE FUNCTION durable_jobs.claim_next_jobs(p_queue_name text, p_worker_owner_id text, p_max_jobs integer)
RETURNS TABLE (job_record_id bigint, lease_claim_token uuid, lease_fencing_generation bigint,
               lease_expires_at timestamptz, lease_renewal_interval interval, attempt_number integer,
               job_payload jsonb, database_time timestamptz)
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $function$
#variable_conflict use_column
DECLARE
    v_lease_duration interval;
    v_renewal_interval interval;
    v_max_claim_lifetime interval;
    v_wanted integer;
    v_candidate_ids bigint[];
    v_candidate_exhausted boolean[];
    v_due_ids bigint[];
    v_due_exhausted boolean[];
    v_expired integer;
    v_fetched integer;
    v_returned integer;
    v_claimed integer := 0;
    v_reclaims integer;
    v_now timestamptz;
    v_plan_cache_mode text;
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

    -- Generic plans for the statements below: their custom plans are no
    -- better (each walks an index in order under a LIMIT), but PostgreSQL
    -- would plan them again on every call, because a generic plan's
    -- estimate for LIMIT $n and lease_expiry_floor <= $now is higher.
    -- Planning was most of a claim's server time. Set for this call only
    -- (a raised error rolls it back with the transaction or savepoint).
    v_plan_cache_mode := pg_catalog.current_setting('plan_cache_mode');
    PERFORM pg_catalog.set_config('plan_cache_mode', 'force_generic_plan', true);

    LOOP
        -- One pass: lock up to v_wanted candidates, expired claims first
        -- (bounded scan of job_record_reclaim_order, lease_expires_at
        -- rechecked), then due jobs (job_record_claimable_queue_order).
        v_now := pg_catalog.clock_timestamp();
        v_wanted := p_max_jobs - v_claimed;
        SELECT COALESCE(pg_catalog.array_agg(e.candidate_id ORDER BY e.candidate_floor, e.candidate_id), '{}'),
               COALESCE(pg_catalog.array_agg(e.candidate_exhausted ORDER BY e.candidate_floor, e.candidate_id), '{}')
        INTO v_candidate_ids, v_candidate_exhausted
        FROM (SELECT j.job_record_id AS candidate_id, j.lease_expiry_floor AS candidate_floor,
                     j.attempt_number >= j.max_attempts AS candidate_exhausted
              FROM durable_jobs.job_record j
              WHERE j.queue_name = p_queue_name AND j.job_status = 'RUNNING'
                AND j.lease_expiry_floor <= v_now AND j.lease_expires_at <= v_now
              ORDER BY j.lease_expiry_floor, j.job_record_id
              LIMIT v_wanted
              FOR UPDATE OF j SKIP LOCKED) e;
        v_expired := pg_catalog.cardinality(v_candidate_ids);
        IF v_expired < v_wanted THEN
            SELECT COALESCE(pg_catalog.array_agg(d.candidate_id ORDER BY d.candidate_run_after, d.candidate_id), '{}'),
                   COALESCE(pg_catalog.array_agg(d.candidate_exhausted ORDER BY d.candidate_run_after, d.candidate_id), '{}')
            INTO v_due_ids, v_due_exhausted
            FROM (SELECT j.job_record_id AS candidate_id, j.run_after AS candidate_run_after,
                         j.attempt_number >= j.max_attempts AS candidate_exhausted
                  FROM durable_jobs.job_record j
                  WHERE j.queue_name = p_queue_name AND j.job_status IN ('QUEUED', 'RETRY_SCHEDULED')
                    AND j.run_after <= v_now
                  ORDER BY j.run_after, j.job_record_id
                  LIMIT v_wanted - v_expired
                  FOR UPDATE OF j SKIP LOCKED) d;
            v_candidate_ids := v_candidate_ids || v_due_ids;
            v_candidate_exhausted := v_candidate_exhausted || v_due_exhausted;
        END IF;
        v_fetched := pg_catalog.cardinality(v_candidate_ids);

        -- Attempts used up: FAILED instead of claimed; they do not count.
        UPDATE durable_jobs.job_record j
        SET job_status = 'FAILED', status_changed_at = v_now, lease_expires_at = NULL,
            failure_reason_code = 'attempts_exhausted'
        FROM ROWS FROM (pg_catalog.unnest(v_candidate_ids), pg_catalog.unnest(v_candidate_exhausted))
             AS c(candidate_id, candidate_exhausted)
        WHERE j.job_record_id = c.candidate_id AND c.candidate_exhausted;

        -- The rest are claimed in one UPDATE, each with its own token, and
        -- returned with their payloads in candidate order.
        RETURN QUERY
        WITH candidate AS (
            SELECT c.candidate_id, c.candidate_position, pg_catalog.gen_random_uuid() AS candidate_token
            FROM ROWS FROM (pg_catalog.unnest(v_candidate_ids), pg_catalog.unnest(v_candidate_exhausted))
                 WITH ORDINALITY AS c(candidate_id, candidate_exhausted, candidate_position)
            WHERE NOT c.candidate_exhausted
        ), claimed AS (
            UPDATE durable_jobs.job_record j
            SET job_status = 'RUNNING', status_changed_at = v_now,
                attempt_number = j.attempt_number + 1,
                -- claim_token_digest's body, written out: a SET search_path helper
                -- is never inlined and costs a function call per row.
                lease_claim_digest = pg_catalog.sha256(pg_catalog.uuid_send(c.candidate_token)),
                lease_owner_id = p_worker_owner_id,
                lease_claimed_by_role = SESSION_USER,
                lease_claimed_at = v_now,
                lease_expires_at = v_now + v_lease_duration,
                lease_expiry_floor = v_now + v_lease_duration,
                lease_claim_deadline = v_now + v_max_claim_lifetime,
                lease_fencing_generation = j.lease_fencing_generation + 1,
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
        -- Reclaims are the claimed candidates of the expired probe.
        SELECT pg_catalog.count(*)::integer INTO v_reclaims
        FROM pg_catalog.unnest(v_candidate_exhausted[1:v_expired]) AS x(exhausted)
        WHERE NOT x.exhausted;
        IF v_reclaims > 0 THEN
            PERFORM durable_jobs.record_lease_outcome(p_queue_name, 'reclaim', v_reclaims);
        END IF;
        -- Another pass only when jobs moved to FAILED took places that due
        -- jobs behind them may fill.
        EXIT WHEN v_fetched < v_wanted OR v_claimed >= p_max_jobs;
    END LOOP;
    PERFORM pg_catalog.set_config('plan_cache_mode', v_plan_cache_mode, true);
END;
$function$;

ALTER FUNCTION durable_jobs.claim_next_jobs(text, text, integer) OWNER TO durable_job_claim_owner;
REVOKE ALL ON FUNCTION durable_jobs.claim_next_jobs(text, text, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.claim_next_jobs(text, text, integer) TO durable_job_worker;

-- terminal batch v2 (migration 016; 008 installs terminal_batch.sql).
-- Exactly v1, except that the owner-id pattern is the rule function
-- worker_owner_id_is_well_formed (rules.sql), inlined by PostgreSQL.

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
    IF EXISTS (SELECT FROM pg_catalog.unnest(p_result_documents) AS d(document)
               WHERE pg_catalog.pg_column_size(d.document) > 1048576) THEN
        RAISE EXCEPTION 'each result document must be at most 1 MiB' USING ERRCODE = 'LF003';
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

-- Generation floor (migration 011): the fencing generation strictly
-- increases across promotions, and a claim's own COMMIT does not wait for a
-- synchronous standby. Done by a trigger on job_record, so the claim,
-- renewal, terminal and audit function families stay as they are.
--
--   raise_generation_to_floor  BEFORE UPDATE OF lease_fencing_generation,
--                              only when the generation increases (a claim)
--
-- The floor of WAL timeline t is ((t - 1) << 40) + 1. Every promotion
-- (pg_ctl promote, pg_promote) starts a new timeline, higher than the
-- timeline of every primary before it, so a claim on the promoted primary
-- gets a generation at least the new floor, and every generation an earlier
-- primary issued (on a lower timeline, at most 2^40 claims of one job above
-- its own floor) is below it. A primary that crashed and was started again
-- without a rewind stays on its old timeline and keeps issuing generations
-- below the new primary's; it must still be fenced (see the threat model).
-- Timeline 1 has floor 1: a fresh install issues 1, 2, 3, ... as before.

-- raise_generation_to_floor: on a claim (the UPDATE raises
-- lease_fencing_generation; the trigger's WHEN clause fires it only then)
-- raises NEW.lease_fencing_generation to the current timeline's floor when
-- it is below it, and, unless synchronous_commit is already off or local,
-- sets it to local for the rest of the claiming transaction
-- (set_config(..., true)): a claim's COMMIT then never
-- waits for a synchronous standby, so a stalled standby cannot turn claims
-- into orphans that burn attempts. A claim lost in a failover is harmless:
-- its token is unknown on the new primary and its generation is below every
-- generation issued there. Renewals and terminal writes do not raise the
-- generation and still wait. The timeline is the one the server writes WAL
-- on now (the first 8 hex digits of the current WAL file's name), which
-- changes the moment a promotion ends. Takes no lock beyond the row's.
CREATE FUNCTION durable_jobs.raise_generation_to_floor()
RETURNS trigger
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $function$
DECLARE
    v_floor bigint := ((('x' || pg_catalog.substr(pg_catalog.pg_walfile_name(pg_catalog.pg_current_wal_lsn()), 1, 8))::bit(32)::bigint - 1) << 40) + 1;
BEGIN
    IF NEW.lease_fencing_generation < v_floor THEN
        NEW.lease_fencing_generation := v_floor;
    END IF;
    IF pg_catalog.current_setting('synchronous_commit') NOT IN ('off', 'local') THEN
        PERFORM pg_catalog.set_config('synchronous_commit', 'local', true);
    END IF;
    RETURN NEW;
END;
$function$;

ALTER FUNCTION durable_jobs.raise_generation_to_floor() OWNER TO durable_job_claim_owner;
REVOKE ALL ON FUNCTION durable_jobs.raise_generation_to_floor() FROM PUBLIC;

CREATE TRIGGER job_record_generation_floor
    BEFORE UPDATE OF lease_fencing_generation ON durable_jobs.job_record
    FOR EACH ROW
    WHEN (NEW.lease_fencing_generation > OLD.lease_fencing_generation)
    EXECUTE FUNCTION durable_jobs.raise_generation_to_floor();
COMMENT ON TRIGGER job_record_generation_floor ON durable_jobs.job_record IS
    'Raises a claim''s fencing generation to the WAL timeline''s floor, ((timeline - 1) << 40) + 1, so it strictly increases across promotions; the claim''s COMMIT does not wait for a synchronous standby.';


SELECT pg_catalog.pg_advisory_xact_lock(1279655936, 1);
INSERT INTO durable_jobs.control_evidence_record (evidence_kind, queue_name, previous_values, new_values, change_reason)
VALUES ('migration_reverted', NULL, NULL, '{"migration_version": 17, "migration_name": "017_fewer_statements_per_call"}',
        COALESCE(NULLIF(pg_catalog.current_setting('leasefence.migration_reason', true), ''),
                 'leasefence bundle migration rolled back'));
