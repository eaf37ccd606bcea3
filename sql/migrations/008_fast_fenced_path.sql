-- leasefence 008: the fenced path at about the cost of a bare UPDATE.
--
-- * A claim costs the same whatever the number of live leases in its
--   queue: expired claims are found through job_record_reclaim_order on the
--   new column lease_expiry_floor, a lower bound of lease_expires_at that
--   renewals move about once per lease duration (so most renewals stay HOT
--   updates), and claim_next_jobs claims n jobs in one pass (claim_v3.sql).
--   Reclaim stays exact: the constraint keeps the floor at or below the
--   expiry of every RUNNING row, so every expired lease is in the index
--   range the claim scans.
-- * Renewals are one PL/pgSQL body each, renew_job_lease one conditional
--   UPDATE; renew_job_leases also refuses a multi-dimensional array (LF003),
--   which version 6 took as if it were flat (renewal_v3.sql).
-- * complete_jobs: many fenced completions of one worker in one call
--   (terminal_batch.sql); one stale claim aborts them all with LF001.
-- Every check of version 6 stays: READ COMMITTED only, absolute durations,
-- the input limits, a caller's collation refused, `locked` without waiting.
-- CREATE INDEX below takes a SHARE lock on job_record: writes wait for the
-- index build (seconds per million RUNNING rows; only RUNNING rows are in it).
-- This migration's version number appears only in its two evidence records
-- below (migration_version 8).

ALTER TABLE durable_jobs.job_record ADD COLUMN lease_expiry_floor timestamptz;
COMMENT ON COLUMN durable_jobs.job_record.lease_expiry_floor IS 'A lower bound of lease_expires_at while RUNNING, indexed for the reclaim probe. Set to the expiry by each claim; a renewal moves it up to the new expiry only when it is within a sixth of the lease duration of the clock, so most renewals change no indexed column.';
UPDATE durable_jobs.job_record SET lease_expiry_floor = lease_expires_at WHERE job_status = 'RUNNING';
ALTER TABLE durable_jobs.job_record ADD CONSTRAINT job_record_running_floor_bounds_expiry CHECK (
    job_status <> 'RUNNING' OR (lease_expiry_floor IS NOT NULL AND lease_expiry_floor <= lease_expires_at));
CREATE INDEX job_record_reclaim_order
    ON durable_jobs.job_record (queue_name, lease_expiry_floor, job_record_id)
    WHERE job_status = 'RUNNING';
GRANT SELECT (lease_expiry_floor), UPDATE (lease_expiry_floor)
    ON durable_jobs.job_record TO durable_job_claim_owner, durable_job_renewal_owner;
-- The batch renewal and batch completion lock their rows first and then
-- update them by tuple id (ctid = ANY), a plan that no table statistics can
-- turn into a scan of every running job; reading ctid needs this grant.
GRANT SELECT (ctid) ON durable_jobs.job_record TO durable_job_renewal_owner, durable_job_terminal_owner;

-- renew_job_lease(s) become PL/pgSQL bodies of their own (CREATE OR
-- REPLACE keeps their owner and grants); their v2 helper goes.
-- renewal v3 (migration 008; 003 installs renewal_v2.sql). Everything v2
-- does (renew_job_leases never waits on a locked row and answers it
-- `locked`, READ COMMITTED only, absolute durations, LF003 on bad input, a
-- caller's collation refused), and:
--  * renew_job_leases refuses (LF003) a multi-dimensional array: v2 took
--    ARRAY[[id1], [id2]] as if it were flat.
--  * A renewal keeps lease_expiry_floor (the reclaim index's lower bound of
--    lease_expires_at, see claim_v3.sql) ahead of the clock: when the floor
--    is within a sixth of the lease duration of the decision time it moves
--    up to the new expiry, else it is left alone. Under a policy that renews
--    every third of the lease, one renewal in three changes an indexed
--    column (a non-HOT update); the others change only lease_expires_at and
--    lease_renewal_count, which no index holds, and stay HOT.
--  * Cost: each function is one PL/pgSQL body (v2's SQL-language wrappers
--    over the helper renew_claims were planned again on every call, and the
--    helper is gone), renew_job_lease is one conditional UPDATE, the token
--    digest is written out as sha256(uuid_send(token)) (claim_token_digest,
--    a SET search_path function, is never inlined and ran once per claim),
--    the policy is read inside the renewing UPDATE, and a well-formed owner
--    id costs no call of require_well_formed.
--
-- The fenced predicate, in both functions: RUNNING, token digest, owner and
-- claiming session_user match, lease_expires_at > clock_timestamp(). The new
-- expiry: decision time + the current policy's lease duration, never earlier
-- than the expiry granted, never past the claim deadline; unchanged when the
-- policy has renewal switched off (renewal_disabled). Stale answers are
-- tallied; neither function reads a payload.

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
    v_queue_name text;
BEGIN
    -- The contract's owner pattern, checked here first, byte for byte and
    -- only for a value without a collation of the caller's: a well-formed
    -- value (every call but a bad one) then costs no call of the helper,
    -- whose SET search_path makes each call cost as much as a small query.
    -- Anything else goes to require_well_formed, which raises LF003 as
    -- everywhere (a caller's collation included).
    IF p_worker_owner_id IS NULL OR pg_catalog.pg_collation_for(p_worker_owner_id) NOT IN ('"default"', '"C"', '"POSIX"')
       OR p_worker_owner_id COLLATE "C" !~ '^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$' THEN
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
      AND j.job_status = 'RUNNING'
      AND j.lease_claim_digest = pg_catalog.sha256(pg_catalog.uuid_send(p_lease_claim_token))
      AND j.lease_owner_id = p_worker_owner_id
      AND j.lease_claimed_by_role = SESSION_USER
      AND j.lease_expires_at > pg_catalog.clock_timestamp()
      -- the queue's own policy, else '*'
      AND p.queue_name = COALESCE((SELECT q.queue_name FROM durable_jobs.queue_lease_policy q
                                   WHERE q.queue_name = j.queue_name), '*')
    RETURNING p.renewal_enabled, j.lease_expires_at INTO v_enabled, lease_expires_at;

    database_time := v_now;
    IF v_enabled IS NULL THEN
        SELECT j.queue_name INTO v_queue_name FROM durable_jobs.job_record j WHERE j.job_record_id = p_job_record_id;
        PERFORM durable_jobs.record_lease_outcome(COALESCE(v_queue_name, '*'), 'stale_renewal', 1);
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
    -- The contract's owner pattern, checked here first, byte for byte and
    -- only for a value without a collation of the caller's: a well-formed
    -- value (every call but a bad one) then costs no call of the helper,
    -- whose SET search_path makes each call cost as much as a small query.
    -- Anything else goes to require_well_formed, which raises LF003 as
    -- everywhere (a caller's collation included).
    IF p_worker_owner_id IS NULL OR pg_catalog.pg_collation_for(p_worker_owner_id) NOT IN ('"default"', '"C"', '"POSIX"')
       OR p_worker_owner_id COLLATE "C" !~ '^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$' THEN
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
            AND j.job_status = 'RUNNING'
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
            WHERE j.ctid = ANY (v_locked_ctids)  -- rows this call holds locked
              AND j.job_record_id = ANY (v_locked_ids)
              AND j.lease_expires_at > pg_catalog.clock_timestamp()
              -- the queue's own policy, else '*'
              AND p.queue_name = COALESCE((SELECT q.queue_name FROM durable_jobs.queue_lease_policy q
                                           WHERE q.queue_name = j.queue_name), '*')
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
                                       AND jq.job_status = 'RUNNING'
                                       AND jq.lease_claim_digest = pg_catalog.sha256(pg_catalog.uuid_send(c.input_token))
                                       AND jq.lease_owner_id = p_worker_owner_id
                                       AND jq.lease_claimed_by_role = SESSION_USER
                                       AND jq.lease_expires_at > pg_catalog.clock_timestamp()) THEN 'locked'
                    ELSE 'stale' END AS outcome
        FROM claim_input c
        LEFT JOIN renewed r ON r.renewed_job_id = c.input_job_id
        ORDER BY c.input_position
    LOOP
        IF v_result.outcome = 'stale' THEN
            PERFORM durable_jobs.record_lease_outcome(
                COALESCE((SELECT jq.queue_name FROM durable_jobs.job_record jq
                          WHERE jq.job_record_id = v_result.input_job_id), '*'),
                'stale_renewal', 1);
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

DROP FUNCTION durable_jobs.renew_claims(text, bigint[], uuid[], boolean);
-- claim v3 (migration 008; 003 installs claim_v2.sql). Everything v2 does
-- (READ COMMITTED only, absolute durations, LF003 on bad input, a caller's
-- collation refused), and a claim costs the same whatever the number of
-- live leases in its queue:
--  * expired claims are found through job_record_reclaim_order, an index on
--    lease_expiry_floor (a lower bound of lease_expires_at that a renewal
--    moves only about once per lease duration, so most renewals stay HOT
--    updates), not by reading and sorting every live lease of the queue;
--  * n jobs are claimed in one pass of set statements, not n probes;
--  * the statements run with generic plans (planning was most of a claim's
--    server time), the token digest is written out, and a well-formed queue
--    name and owner id cost no call of require_well_formed;
--  * claim_next_job is PL/pgSQL, not a BEGIN ATOMIC body (PostgreSQL 15
--    plans a SQL function's body again on every call).

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
    -- The contract's patterns, checked here first, byte for byte and only
    -- for a value without a collation of the caller's: a well-formed value
    -- (every call but a bad one) then costs no call of the helper, whose SET
    -- search_path makes each call cost as much as a small query. Anything
    -- else goes to require_well_formed, which raises LF003 as everywhere
    -- (a caller's collation included).
    IF p_queue_name IS NULL OR pg_catalog.pg_collation_for(p_queue_name) NOT IN ('"default"', '"C"', '"POSIX"')
       OR p_queue_name COLLATE "C" !~ '^[a-z][a-z0-9_.:-]{0,62}$' THEN
        PERFORM durable_jobs.require_well_formed('queue_name', p_queue_name);
    END IF;
    IF p_worker_owner_id IS NULL OR pg_catalog.pg_collation_for(p_worker_owner_id) NOT IN ('"default"', '"C"', '"POSIX"')
       OR p_worker_owner_id COLLATE "C" !~ '^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$' THEN
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
    FROM durable_jobs.queue_lease_policy p
    WHERE p.queue_name IN (p_queue_name, '*')
    ORDER BY p.queue_name = '*'
    LIMIT 1;

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

-- claim_next_job: claim_next_jobs for one job. Zero rows when nothing is
-- claimable. Same locks and SQLSTATEs. PL/pgSQL rather than a BEGIN ATOMIC
-- body: PostgreSQL 15 plans a SQL function's body on every call, which cost
-- a claim more than the claim itself; PL/pgSQL keeps the plan.
CREATE OR REPLACE FUNCTION durable_jobs.claim_next_job(p_queue_name text, p_worker_owner_id text)
RETURNS TABLE (job_record_id bigint, lease_claim_token uuid, lease_fencing_generation bigint,
               lease_expires_at timestamptz, lease_renewal_interval interval, attempt_number integer,
               job_payload jsonb, database_time timestamptz)
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $function$
BEGIN
    RETURN QUERY
    SELECT c.job_record_id, c.lease_claim_token, c.lease_fencing_generation, c.lease_expires_at,
           c.lease_renewal_interval, c.attempt_number, c.job_payload, c.database_time
    FROM durable_jobs.claim_next_jobs(p_queue_name, p_worker_owner_id, 1) c;
END;
$function$;

ALTER FUNCTION durable_jobs.claim_next_jobs(text, text, integer) OWNER TO durable_job_claim_owner;
ALTER FUNCTION durable_jobs.claim_next_job(text, text) OWNER TO durable_job_claim_owner;
REVOKE ALL ON FUNCTION durable_jobs.claim_next_jobs(text, text, integer) FROM PUBLIC;
REVOKE ALL ON FUNCTION durable_jobs.claim_next_job(text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.claim_next_jobs(text, text, integer) TO durable_job_worker;
GRANT EXECUTE ON FUNCTION durable_jobs.claim_next_job(text, text) TO durable_job_worker;

-- terminal batch (migration 008): complete_jobs, many fenced completions of
-- one worker in one call, for handlers that finish close together.

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
CREATE FUNCTION durable_jobs.complete_jobs(p_worker_owner_id text, p_job_record_ids bigint[],
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
    -- The contract's owner pattern, checked here first, byte for byte and
    -- only for a value without a collation of the caller's: a well-formed
    -- value (every call but a bad one) then costs no call of the helper,
    -- whose SET search_path makes each call cost as much as a small query.
    -- Anything else goes to require_well_formed, which raises LF003 as
    -- everywhere (a caller's collation included).
    IF p_worker_owner_id IS NULL OR pg_catalog.pg_collation_for(p_worker_owner_id) NOT IN ('"default"', '"C"', '"POSIX"')
       OR p_worker_owner_id COLLATE "C" !~ '^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$' THEN
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
            AND j.job_status = 'RUNNING'
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


SELECT pg_catalog.pg_advisory_xact_lock(1279655936, 1);
INSERT INTO durable_jobs.control_evidence_record (evidence_kind, queue_name, previous_values, new_values, change_reason)
VALUES ('migration_applied', NULL, NULL, '{"migration_version": 8, "migration_name": "008_fast_fenced_path"}',
        COALESCE(NULLIF(pg_catalog.current_setting('leasefence.migration_reason', true), ''), 'leasefence bundle migration'));

---- create above / drop below ----

DROP FUNCTION durable_jobs.complete_jobs(text, bigint[], uuid[], jsonb[]);

-- Back to what 003 installs: renew_claims again, and renew_job_lease(s) and
-- claim_next_job as BEGIN ATOMIC bodies over their helpers (CREATE OR
-- REPLACE keeps owner and grants).
-- renewal v2 (migration 004; 002 installs renewal.sql). What changed:
--  * renew_job_leases never waits on a row another transaction holds
--    locked: that claim's outcome is `locked` (NULL expiry, nothing changed)
--    and the rest of the batch is decided as usual. Since the batch never
--    waits, no order of terminal calls in the worker's own transactions can
--    deadlock with it. renew_job_lease still waits for the lock.
--  * Both refuse (LF003) a transaction that is not READ COMMITTED, so no
--    snapshot older than the statement decides a renewal against an old
--    policy.
--  * The expiry is clock_timestamp() plus the policy's lease duration as an
--    absolute number of seconds, so the caller's TimeZone (a daylight-saving
--    change inside the lease) never lengthens or shortens the lease.

-- renew_claims: private helper of the renewal family, the one body of
-- renew_job_leases (p_wait_for_locks false) and renew_job_lease (true).
-- Checks the input (LF003), then locks FOR NO KEY UPDATE (the lock an UPDATE takes), in job id order, exactly
-- the rows whose claim is fenced (RUNNING, token digest, owner and claiming
-- session_user match, lease_expires_at > clock_timestamp()): a stale, guessed
-- or foreign claim takes no row lock. Without p_wait_for_locks a fenced row
-- that another transaction holds locked is skipped (SKIP LOCKED) and answered
-- `locked`; a claim that is not fenced on the newest committed row version
-- is `stale` whether or not its row is locked, exactly as renew_job_lease
-- answers it at once without waiting, so `locked` says no more about a
-- claim than renew_job_lease's waiting already does. The locked rows are
-- then renewed in one UPDATE: clock_timestamp() + the current policy's lease
-- duration, never earlier than the expiry granted, never past the claim
-- deadline. One row out per claim in, in input order. Stale answers are
-- tallied; no payload access.
CREATE FUNCTION durable_jobs.renew_claims(p_worker_owner_id text, p_job_record_ids bigint[],
                                          p_lease_claim_tokens uuid[], p_wait_for_locks boolean)
RETURNS TABLE (job_record_id bigint, renewal_outcome text, lease_expires_at timestamptz, database_time timestamptz)
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, pg_temp
AS $function$
#variable_conflict use_column
DECLARE
    v_result record;
    v_locked_ids bigint[];
BEGIN
    PERFORM durable_jobs.require_well_formed('worker_owner_id', p_worker_owner_id);
    IF p_job_record_ids IS NULL OR p_lease_claim_tokens IS NULL
       OR pg_catalog.cardinality(p_job_record_ids) <> pg_catalog.cardinality(p_lease_claim_tokens)
       OR pg_catalog.cardinality(p_job_record_ids) > 1000
       OR pg_catalog.array_position(p_job_record_ids, NULL) IS NOT NULL
       OR pg_catalog.array_position(p_lease_claim_tokens, NULL) IS NOT NULL
       OR (SELECT pg_catalog.count(DISTINCT i) FROM pg_catalog.unnest(p_job_record_ids) i)
          <> pg_catalog.cardinality(p_job_record_ids) THEN
        RAISE EXCEPTION 'claims must be two arrays of equal length, at most 1000, no NULL, no repeated job id'
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

    -- Lock the fenced rows first, in job id order. Only a fenced claim's row
    -- is ever locked, so a stale call cannot hold back anyone's completion.
    IF p_wait_for_locks THEN
        SELECT pg_catalog.array_agg(f.fenced_id) INTO v_locked_ids
        FROM (SELECT j.job_record_id AS fenced_id
              FROM durable_jobs.job_record j
              JOIN ROWS FROM (pg_catalog.unnest(p_job_record_ids), pg_catalog.unnest(p_lease_claim_tokens))
                   AS i(input_job_id, input_token) ON j.job_record_id = i.input_job_id
              WHERE j.job_record_id = ANY (p_job_record_ids)  -- primary-key probe
                AND j.job_status = 'RUNNING'
                AND j.lease_claim_digest = durable_jobs.claim_token_digest(i.input_token)
                AND j.lease_owner_id = p_worker_owner_id
                AND j.lease_claimed_by_role = SESSION_USER
                AND j.lease_expires_at > pg_catalog.clock_timestamp()
              ORDER BY j.job_record_id
              FOR NO KEY UPDATE OF j) f;
    ELSE
        SELECT pg_catalog.array_agg(f.fenced_id) INTO v_locked_ids
        FROM (SELECT j.job_record_id AS fenced_id
              FROM durable_jobs.job_record j
              JOIN ROWS FROM (pg_catalog.unnest(p_job_record_ids), pg_catalog.unnest(p_lease_claim_tokens))
                   AS i(input_job_id, input_token) ON j.job_record_id = i.input_job_id
              WHERE j.job_record_id = ANY (p_job_record_ids)  -- primary-key probe
                AND j.job_status = 'RUNNING'
                AND j.lease_claim_digest = durable_jobs.claim_token_digest(i.input_token)
                AND j.lease_owner_id = p_worker_owner_id
                AND j.lease_claimed_by_role = SESSION_USER
                AND j.lease_expires_at > pg_catalog.clock_timestamp()
              ORDER BY j.job_record_id
              FOR NO KEY UPDATE OF j SKIP LOCKED) f;
    END IF;

    -- One statement, one snapshot taken after the locks: the rows locked
    -- above are renewed; any other claim is `locked` when it is fenced on
    -- the newest committed version of its row (so another transaction held
    -- that row locked), else `stale`.
    FOR v_result IN
        WITH claim_input AS (
            SELECT i.input_job_id, durable_jobs.claim_token_digest(i.input_token) AS input_digest,
                   i.input_position, jq.queue_name AS input_queue_name,
                   (jq.job_status = 'RUNNING'
                    AND jq.lease_claim_digest = durable_jobs.claim_token_digest(i.input_token)
                    AND jq.lease_owner_id = p_worker_owner_id
                    AND jq.lease_claimed_by_role = SESSION_USER
                    AND jq.lease_expires_at > pg_catalog.clock_timestamp()) IS TRUE AS input_fenced,
                   pol.lease_duration AS policy_lease_duration, pol.renewal_enabled AS policy_renewal_enabled
            FROM ROWS FROM (pg_catalog.unnest(p_job_record_ids), pg_catalog.unnest(p_lease_claim_tokens)) WITH ORDINALITY
                 AS i(input_job_id, input_token, input_position)
            LEFT JOIN durable_jobs.job_record jq ON jq.job_record_id = i.input_job_id
            LEFT JOIN LATERAL (
                SELECT p.lease_duration, p.renewal_enabled
                FROM durable_jobs.queue_lease_policy p
                WHERE p.queue_name IN (jq.queue_name, '*')
                ORDER BY p.queue_name = '*'
                LIMIT 1) pol ON true
        ), renewed AS (
            UPDATE durable_jobs.job_record j
            SET lease_expires_at = CASE WHEN c.policy_renewal_enabled
                    THEN GREATEST(j.lease_expires_at,
                                  LEAST(pg_catalog.clock_timestamp()
                                        -- absolute seconds: no TimeZone, no daylight-saving day
                                        + pg_catalog.make_interval(secs => pg_catalog.date_part('epoch', c.policy_lease_duration)),
                                        j.lease_claim_deadline))
                    ELSE j.lease_expires_at END,
                lease_renewal_count = j.lease_renewal_count + CASE WHEN c.policy_renewal_enabled THEN 1 ELSE 0 END
            FROM claim_input c
            WHERE j.job_record_id = ANY (v_locked_ids)  -- rows this call holds locked
              AND j.job_record_id = c.input_job_id
              AND j.job_status = 'RUNNING'
              AND j.lease_claim_digest = c.input_digest
              AND j.lease_owner_id = p_worker_owner_id
              AND j.lease_claimed_by_role = SESSION_USER
              AND j.lease_expires_at > pg_catalog.clock_timestamp()
            RETURNING j.job_record_id AS renewed_job_id, j.lease_expires_at AS renewed_expiry,
                      c.policy_renewal_enabled AS renewal_was_enabled
        )
        SELECT c.input_job_id, c.input_queue_name,
               CASE WHEN r.renewed_job_id IS NOT NULL AND r.renewal_was_enabled THEN 'renewed'
                    WHEN r.renewed_job_id IS NOT NULL THEN 'renewal_disabled'
                    WHEN c.input_fenced AND c.input_job_id <> ALL (COALESCE(v_locked_ids, '{}')) THEN 'locked'
                    ELSE 'stale' END AS outcome,
               r.renewed_expiry, pg_catalog.clock_timestamp() AS decided_at
        FROM claim_input c
        LEFT JOIN renewed r ON r.renewed_job_id = c.input_job_id
        ORDER BY c.input_position
    LOOP
        IF v_result.outcome = 'stale' THEN
            PERFORM durable_jobs.record_lease_outcome(COALESCE(v_result.input_queue_name, '*'), 'stale_renewal', 1);
        END IF;
        job_record_id := v_result.input_job_id;
        renewal_outcome := v_result.outcome;
        lease_expires_at := v_result.renewed_expiry;
        database_time := v_result.decided_at;
        RETURN NEXT;
    END LOOP;
END;
$function$;

-- renew_job_leases: renews many claims of one worker in one call (see
-- renew_claims): renewed | stale | renewal_disabled | locked per claim, in
-- input order. Never waits on a row lock. LF003 on bad input (lengths
-- differ, NULL elements, duplicate ids, > 1000) and outside READ COMMITTED.
CREATE OR REPLACE FUNCTION durable_jobs.renew_job_leases(p_worker_owner_id text, p_job_record_ids bigint[], p_lease_claim_tokens uuid[])
RETURNS TABLE (job_record_id bigint, renewal_outcome text, lease_expires_at timestamptz, database_time timestamptz)
LANGUAGE sql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
BEGIN ATOMIC
    SELECT r.job_record_id, r.renewal_outcome, r.lease_expires_at, r.database_time
    FROM durable_jobs.renew_claims(p_worker_owner_id, p_job_record_ids, p_lease_claim_tokens, false) r;
END;

-- renew_job_lease: one claim; exactly one row for well-formed input:
-- renewed | stale | renewal_disabled. Waits for a row lock another
-- transaction holds, then decides on the row as that transaction left it.
-- Same predicate and SQLSTATEs as renew_job_leases.
CREATE OR REPLACE FUNCTION durable_jobs.renew_job_lease(p_job_record_id bigint, p_lease_claim_token uuid, p_worker_owner_id text)
RETURNS TABLE (renewal_outcome text, lease_expires_at timestamptz, database_time timestamptz)
LANGUAGE sql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
BEGIN ATOMIC
    SELECT r.renewal_outcome, r.lease_expires_at, r.database_time
    FROM durable_jobs.renew_claims(p_worker_owner_id, ARRAY[p_job_record_id], ARRAY[p_lease_claim_token], true) r;
END;

ALTER FUNCTION durable_jobs.renew_claims(text, bigint[], uuid[], boolean) OWNER TO durable_job_renewal_owner;
REVOKE ALL ON FUNCTION durable_jobs.renew_claims(text, bigint[], uuid[], boolean) FROM PUBLIC;

-- claim v2 (migration 004; 002 installs claim.sql). What changed: a caller
-- whose transaction is not READ COMMITTED is refused (LF003), so no old
-- snapshot reads a policy that has since been tightened; and the lease and
-- the claim deadline are the policy's durations as absolute seconds, so the
-- caller's TimeZone (a daylight-saving change inside the lease) never
-- changes them.

-- claim_next_jobs: the only function that creates ownership. Claims up to
-- p_max_jobs due jobs of one queue (QUEUED/RETRY_SCHEDULED whose run-after
-- has come, or RUNNING whose lease expired by database time), each with a new
-- random token (only its sha256 is stored), attempt + 1 and fencing
-- generation + 1. A job whose attempts are used up goes to FAILED
-- (attempts_exhausted) instead and does not count. Expired claims are taken
-- before due jobs. Locks: the claimed rows, FOR UPDATE SKIP LOCKED, so
-- claimers never wait on each other. LF003 on bad input and outside READ
-- COMMITTED.
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
    v_candidate record;
    v_claimed integer := 0;
    v_now timestamptz;
BEGIN
    PERFORM durable_jobs.require_well_formed('queue_name', p_queue_name);
    PERFORM durable_jobs.require_well_formed('worker_owner_id', p_worker_owner_id);
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
    FROM durable_jobs.queue_lease_policy p
    WHERE p.queue_name IN (p_queue_name, '*')
    ORDER BY p.queue_name = '*'
    LIMIT 1;

    LOOP
        -- Expired claims first (reclaims), then due jobs; each probe walks its
        -- own partial index in order and stops at the first unlocked row.
        v_now := pg_catalog.clock_timestamp();
        SELECT j.job_record_id AS candidate_id, j.job_status AS candidate_status,
               j.attempt_number AS candidate_attempt, j.max_attempts AS candidate_max_attempts
        INTO v_candidate
        FROM durable_jobs.job_record j
        WHERE j.queue_name = p_queue_name AND j.job_status = 'RUNNING' AND j.lease_expires_at <= v_now
        ORDER BY j.lease_expires_at, j.job_record_id
        LIMIT 1
        FOR UPDATE OF j SKIP LOCKED;
        IF NOT FOUND THEN
            SELECT j.job_record_id AS candidate_id, j.job_status AS candidate_status,
                   j.attempt_number AS candidate_attempt, j.max_attempts AS candidate_max_attempts
            INTO v_candidate
            FROM durable_jobs.job_record j
            WHERE j.queue_name = p_queue_name AND j.job_status IN ('QUEUED', 'RETRY_SCHEDULED')
              AND j.run_after <= v_now
            ORDER BY j.run_after, j.job_record_id
            LIMIT 1
            FOR UPDATE OF j SKIP LOCKED;
            EXIT WHEN NOT FOUND;
        END IF;

        IF v_candidate.candidate_attempt >= v_candidate.candidate_max_attempts THEN
            UPDATE durable_jobs.job_record j
            SET job_status = 'FAILED', status_changed_at = v_now, lease_expires_at = NULL,
                failure_reason_code = 'attempts_exhausted'
            WHERE j.job_record_id = v_candidate.candidate_id;
            CONTINUE;
        END IF;

        lease_claim_token := pg_catalog.gen_random_uuid();
        UPDATE durable_jobs.job_record j
        SET job_status = 'RUNNING', status_changed_at = v_now,
            attempt_number = j.attempt_number + 1,
            lease_claim_digest = durable_jobs.claim_token_digest(lease_claim_token),
            lease_owner_id = p_worker_owner_id,
            lease_claimed_by_role = SESSION_USER,
            lease_claimed_at = v_now,
            lease_expires_at = v_now + v_lease_duration,
            lease_claim_deadline = v_now + v_max_claim_lifetime,
            lease_fencing_generation = j.lease_fencing_generation + 1,
            lease_renewal_count = 0,
            failure_reason_code = NULL
        WHERE j.job_record_id = v_candidate.candidate_id
        RETURNING j.job_record_id, j.lease_fencing_generation, j.lease_expires_at, j.attempt_number
        INTO job_record_id, lease_fencing_generation, lease_expires_at, attempt_number;

        IF v_candidate.candidate_status = 'RUNNING' THEN
            PERFORM durable_jobs.record_lease_outcome(p_queue_name, 'reclaim', 1);
        END IF;

        SELECT pr.job_payload INTO job_payload
        FROM durable_jobs.job_payload_record pr
        WHERE pr.job_record_id = v_candidate.candidate_id;
        lease_renewal_interval := v_renewal_interval;
        database_time := v_now;
        v_claimed := v_claimed + 1;
        RETURN NEXT;
        EXIT WHEN v_claimed >= p_max_jobs;
    END LOOP;
END;
$function$;

-- claim_next_job: claim_next_jobs for one job. Zero rows when nothing is
-- claimable. Same locks and SQLSTATEs.
CREATE OR REPLACE FUNCTION durable_jobs.claim_next_job(p_queue_name text, p_worker_owner_id text)
RETURNS TABLE (job_record_id bigint, lease_claim_token uuid, lease_fencing_generation bigint,
               lease_expires_at timestamptz, lease_renewal_interval interval, attempt_number integer,
               job_payload jsonb, database_time timestamptz)
LANGUAGE sql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
BEGIN ATOMIC
    SELECT c.job_record_id, c.lease_claim_token, c.lease_fencing_generation, c.lease_expires_at,
           c.lease_renewal_interval, c.attempt_number, c.job_payload, c.database_time
    FROM durable_jobs.claim_next_jobs(p_queue_name, p_worker_owner_id, 1) c;
END;

ALTER FUNCTION durable_jobs.claim_next_jobs(text, text, integer) OWNER TO durable_job_claim_owner;
ALTER FUNCTION durable_jobs.claim_next_job(text, text) OWNER TO durable_job_claim_owner;
REVOKE ALL ON FUNCTION durable_jobs.claim_next_jobs(text, text, integer) FROM PUBLIC;
REVOKE ALL ON FUNCTION durable_jobs.claim_next_job(text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.claim_next_jobs(text, text, integer) TO durable_job_worker;
GRANT EXECUTE ON FUNCTION durable_jobs.claim_next_job(text, text) TO durable_job_worker;

-- The column takes its index, its constraint and its column privileges with it.
ALTER TABLE durable_jobs.job_record DROP COLUMN lease_expiry_floor;
REVOKE SELECT (ctid) ON durable_jobs.job_record FROM durable_job_renewal_owner, durable_job_terminal_owner;

SELECT pg_catalog.pg_advisory_xact_lock(1279655936, 1);
INSERT INTO durable_jobs.control_evidence_record (evidence_kind, queue_name, previous_values, new_values, change_reason)
VALUES ('migration_reverted', NULL, NULL, '{"migration_version": 8, "migration_name": "008_fast_fenced_path"}',
        COALESCE(NULLIF(pg_catalog.current_setting('leasefence.migration_reason', true), ''),
                 'leasefence bundle migration rolled back'));
