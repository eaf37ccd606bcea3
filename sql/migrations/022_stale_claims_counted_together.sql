-- leasefence 022: a batch renewal counts its stale claims together (issue
-- 11: a stale batch cost the square of its stale claims).
--
-- renew_job_leases (renewal_v6.sql) counted each stale claim of a call with
-- its own record_stale_call, and so its own record_lease_outcome: every one
-- updated the same tally row (this minute, queue, kind, backend, login) in
-- the call's transaction. Each update adds a version to that row's chain,
-- which pruning cannot shorten before the transaction ends, and each ON
-- CONFLICT walks the chain: 1,000 counts in one transaction took 56 ms,
-- 3,000 took 438 ms (a DO loop of record_lease_outcome, one session). A
-- heartbeat call of 1,000 claims that had all gone stale (a worker cut off
-- for longer than its lease, or a database clock step) took 60 to 86 ms,
-- against 19 ms for 1,000 claims renewed.
--
-- stale_tally_v2.sql: record_stale_calls counts many stale calls at once,
-- with 012's rule (the job's queue when the calling login made its last
-- claim, else '*'), one record_lease_outcome call per queue charged;
-- record_stale_call counts one through it. renewal_v7.sql: renew_job_leases
-- collects its stale claims and counts them in one call after its answer.
-- Same answers, counts, locks and order; renew_job_lease and
-- release_job_claim unchanged.

-- stale tally v2 (migration 022; 012 installs stale_tally.sql). The rule of
-- 012 (a stale call is charged to the job's queue only when the calling
-- login made the job's last claim, else to '*') now lives in
-- record_stale_calls, which counts many stale calls of one kind at once:
-- one record_lease_outcome call per queue charged, whatever the number of
-- calls. record_stale_call counts one through it.
--
-- Why: renew_job_leases counted each stale claim of a batch with its own
-- record_lease_outcome call, and every one of them updated the same tally
-- row (this minute, queue, kind, backend, login) in the same transaction:
-- each update adds a version to that row's chain, which no pruning can
-- shorten before the transaction ends, and each ON CONFLICT walks it, so a
-- batch's counting grew with the square of its stale claims (1,000
-- counts in one transaction 56 ms, 3,000 438 ms; a heartbeat call of 1,000
-- claims that had all gone stale, as after a partition longer than the
-- lease, 60 to 86 ms against 19 for 1,000 renewed).

-- record_stale_calls: private helper of the renewal and terminal families.
-- Counts one stale call (p_outcome_kind: stale_renewal, stale_release) per
-- element of p_job_record_ids (no NULL, no repeated id: its callers pass
-- checked input) with record_lease_outcome: under the job's queue when the
-- calling login (session_user) made the job's last claim (its own claim
-- went stale: expired, reclaimed under its own login, cancelled, finished,
-- released), else under '*' (a job id that does not exist, a job never
-- claimed or one another login claimed last): a login guessing another
-- team's job ids cannot raise that team's tally, even after claiming a job
-- of that queue itself. Decided when counted, per job, so a later claim or
-- a purge never moves a count. Reads the jobs' queues and last claimers (no
-- lock); locks the counter's own tally rows as record_lease_outcome does,
-- one call per queue charged, in queue name order.
CREATE FUNCTION durable_jobs.record_stale_calls(p_job_record_ids bigint[], p_outcome_kind text)
RETURNS void
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, pg_temp
AS $function$
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
$function$;

-- record_stale_call: one stale call, counted by record_stale_calls (the
-- rule in one place).
CREATE OR REPLACE FUNCTION durable_jobs.record_stale_call(p_job_record_id bigint, p_outcome_kind text)
RETURNS void
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, pg_temp
AS $function$
BEGIN
    PERFORM durable_jobs.record_stale_calls(ARRAY[p_job_record_id], p_outcome_kind);
END;
$function$;

REVOKE ALL ON FUNCTION durable_jobs.record_stale_calls(bigint[], text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.record_stale_calls(bigint[], text) TO
    durable_job_renewal_owner, durable_job_terminal_owner;

-- renewal v7 (migration 022; 020 installs renewal_v6.sql). renew_job_lease
-- exactly as v6. renew_job_leases counts the batch's stale claims in one
-- record_stale_calls call after its answer (stale_tally_v2.sql): one tally
-- write per queue charged, not one per stale claim, whose repeated updates
-- of the same tally row in one transaction cost a batch the square of its
-- stale claims (migration 022's header gives the runs). Same answers,
-- counts, locks and order.

-- renew_job_lease: one claim; exactly one row for well-formed input:
-- renewed | stale | renewal_disabled. One conditional UPDATE, which waits
-- for a row lock another transaction holds and then decides on the row as
-- that transaction left it. LF003 on bad input and outside READ COMMITTED.
CREATE OR REPLACE FUNCTION durable_jobs.renew_job_lease(p_job_record_id bigint, p_lease_claim_token uuid, p_worker_owner_id text)
RETURNS TABLE (renewal_outcome text, lease_expires_at timestamptz, database_time timestamptz)
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $function$
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
$function$;

-- renew_job_leases: renews many claims of one worker in one call: renewed |
-- stale | renewal_disabled | locked per claim, one row out per claim in, in
-- input order. Checks the input (LF003: lengths differ, NULL elements,
-- duplicate ids, > 1000, outside READ COMMITTED), then locks FOR NO KEY
-- UPDATE (the lock an UPDATE takes), in job id order, exactly the rows whose
-- claim is fenced: a stale, guessed or foreign claim takes no row lock. A
-- fenced row that another transaction holds locked is skipped (SKIP LOCKED)
-- and answered `locked`; a claim that is not fenced on the newest committed
-- row version is `stale` whether or not its row is locked, exactly as
-- renew_job_lease answers it at once without waiting, so `locked` says no
-- more about a claim than renew_job_lease's waiting already does. The
-- locked rows are then renewed in one UPDATE. Never waits on a row lock.
CREATE OR REPLACE FUNCTION durable_jobs.renew_job_leases(p_worker_owner_id text, p_job_record_ids bigint[], p_lease_claim_tokens uuid[])
RETURNS TABLE (job_record_id bigint, renewal_outcome text, lease_expires_at timestamptz, database_time timestamptz)
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $function$
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
$function$;

ALTER FUNCTION durable_jobs.renew_job_lease(bigint, uuid, text) OWNER TO durable_job_renewal_owner;
ALTER FUNCTION durable_jobs.renew_job_leases(text, bigint[], uuid[]) OWNER TO durable_job_renewal_owner;
REVOKE ALL ON FUNCTION durable_jobs.renew_job_lease(bigint, uuid, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION durable_jobs.renew_job_leases(text, bigint[], uuid[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.renew_job_lease(bigint, uuid, text) TO durable_job_worker;
GRANT EXECUTE ON FUNCTION durable_jobs.renew_job_leases(text, bigint[], uuid[]) TO durable_job_worker;


SELECT pg_catalog.pg_advisory_xact_lock(1279655936, 1);
INSERT INTO durable_jobs.control_evidence_record (evidence_kind, queue_name, previous_values, new_values, change_reason)
VALUES ('migration_applied', NULL, NULL, '{"migration_version": 22, "migration_name": "022_stale_claims_counted_together"}',
        COALESCE(NULLIF(pg_catalog.current_setting('leasefence.migration_reason', true), ''), 'leasefence bundle migration'));

---- create above / drop below ----

-- renewal v6 (migration 020; 016 installs renewal_v5.sql). renew_job_lease
-- exactly as v5. renew_job_leases does the same work in time linear in the
-- number of claims (issue 11; migration 020's header gives the runs):
-- * the answer joins the claims in with the renewed rows by a FULL JOIN,
--   which PostgreSQL can only run as a hash or merge join: with the LEFT
--   JOIN of v5, the planner (estimating one renewed row: it cannot see how
--   many tuple ids the array holds) chose a nested loop that read every
--   renewed row once per claim in, n x n rows a call (1,000,000 for 1,000
--   claims). Every renewed row is one of the claims in, so the FULL JOIN
--   adds no row;
-- * the UPDATE finds its rows by their tuple ids alone: v5 also tested each
--   against the array of locked job ids (n comparisons a row); a row this
--   call holds locked keeps its tuple id, which therefore names exactly the
--   row the locking pass checked and locked.

-- renew_job_lease: one claim; exactly one row for well-formed input:
-- renewed | stale | renewal_disabled. One conditional UPDATE, which waits
-- for a row lock another transaction holds and then decides on the row as
-- that transaction left it. LF003 on bad input and outside READ COMMITTED.
CREATE OR REPLACE FUNCTION durable_jobs.renew_job_lease(p_job_record_id bigint, p_lease_claim_token uuid, p_worker_owner_id text)
RETURNS TABLE (renewal_outcome text, lease_expires_at timestamptz, database_time timestamptz)
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $function$
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
$function$;

-- renew_job_leases: renews many claims of one worker in one call: renewed |
-- stale | renewal_disabled | locked per claim, one row out per claim in, in
-- input order. Checks the input (LF003: lengths differ, NULL elements,
-- duplicate ids, > 1000, outside READ COMMITTED), then locks FOR NO KEY
-- UPDATE (the lock an UPDATE takes), in job id order, exactly the rows whose
-- claim is fenced: a stale, guessed or foreign claim takes no row lock. A
-- fenced row that another transaction holds locked is skipped (SKIP LOCKED)
-- and answered `locked`; a claim that is not fenced on the newest committed
-- row version is `stale` whether or not its row is locked, exactly as
-- renew_job_lease answers it at once without waiting, so `locked` says no
-- more about a claim than renew_job_lease's waiting already does. The
-- locked rows are then renewed in one UPDATE. Never waits on a row lock.
CREATE OR REPLACE FUNCTION durable_jobs.renew_job_leases(p_worker_owner_id text, p_job_record_ids bigint[], p_lease_claim_tokens uuid[])
RETURNS TABLE (job_record_id bigint, renewal_outcome text, lease_expires_at timestamptz, database_time timestamptz)
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $function$
#variable_conflict use_column
DECLARE
    v_result record;
    v_locked_ids bigint[];
    v_locked_ctids tid[];
    v_now timestamptz;
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
            PERFORM durable_jobs.record_stale_call(v_result.input_job_id, 'stale_renewal');
        END IF;
        job_record_id := v_result.input_job_id;
        renewal_outcome := v_result.outcome;
        lease_expires_at := v_result.renewed_expiry;
        database_time := v_now;
        RETURN NEXT;
    END LOOP;
END;
$function$;

ALTER FUNCTION durable_jobs.renew_job_lease(bigint, uuid, text) OWNER TO durable_job_renewal_owner;
ALTER FUNCTION durable_jobs.renew_job_leases(text, bigint[], uuid[]) OWNER TO durable_job_renewal_owner;
REVOKE ALL ON FUNCTION durable_jobs.renew_job_lease(bigint, uuid, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION durable_jobs.renew_job_leases(text, bigint[], uuid[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.renew_job_lease(bigint, uuid, text) TO durable_job_worker;
GRANT EXECUTE ON FUNCTION durable_jobs.renew_job_leases(text, bigint[], uuid[]) TO durable_job_worker;

-- stale_tally.sql creates record_stale_call (not OR REPLACE): drop v2's first.
DROP FUNCTION durable_jobs.record_stale_call(bigint, text);
-- stale tally (migration 012): who a stale call is charged to.
--
-- record_stale_call: private helper of the renewal and terminal families.
-- Counts one stale call (p_outcome_kind: stale_renewal from renew_job_lease
-- and renew_job_leases, stale_release from release_job_claim) with
-- record_lease_outcome, under the job's queue only when the calling login
-- (session_user) is the login that made the job's last claim: its own
-- claim went stale (expired, reclaimed under its own login, cancelled,
-- finished, released). Anything else, a job id that does not exist, a job
-- never claimed or one another login claimed last, is counted under '*':
-- a login guessing another team's job ids cannot raise that team's tally,
-- even after claiming a job of that queue itself. Decided when counted,
-- per job, so a later claim or a purge never moves a count. Reads the
-- job's queue and last claimer (no lock); locks the counter's own tally
-- row as record_lease_outcome does.
CREATE FUNCTION durable_jobs.record_stale_call(p_job_record_id bigint, p_outcome_kind text)
RETURNS void
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, pg_temp
AS $function$
DECLARE
    v_queue_name text;
BEGIN
    SELECT j.queue_name INTO v_queue_name
    FROM durable_jobs.job_record j
    WHERE j.job_record_id = p_job_record_id
      AND j.lease_claimed_by_role = SESSION_USER;
    PERFORM durable_jobs.record_lease_outcome(COALESCE(v_queue_name, '*'), p_outcome_kind, 1);
END;
$function$;

REVOKE ALL ON FUNCTION durable_jobs.record_stale_call(bigint, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.record_stale_call(bigint, text) TO
    durable_job_renewal_owner, durable_job_terminal_owner;

DROP FUNCTION durable_jobs.record_stale_calls(bigint[], text);

SELECT pg_catalog.pg_advisory_xact_lock(1279655936, 1);
INSERT INTO durable_jobs.control_evidence_record (evidence_kind, queue_name, previous_values, new_values, change_reason)
VALUES ('migration_reverted', NULL, NULL, '{"migration_version": 22, "migration_name": "022_stale_claims_counted_together"}',
        COALESCE(NULLIF(pg_catalog.current_setting('leasefence.migration_reason', true), ''),
                 'leasefence bundle migration rolled back'));
