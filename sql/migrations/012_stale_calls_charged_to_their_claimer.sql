-- leasefence 012: stale calls counted on every path that commits, and
-- charged to a queue only by the login that claimed the job there.
--
-- * A stale release_job_claim (it answers false) is counted, as its own
--   outcome kind stale_release (functions/terminal_v3.sql); the tally's
--   CHECK allows it, and durable_job_terminal_owner, release_job_claim's
--   definer, may now write the tally and read a job's queue.
-- * Who a stale renewal or release is charged to is decided when it is
--   counted, per job (functions/stale_tally.sql, record_stale_call): the
--   job's queue only when the calling login made the job's last claim,
--   else '*'. Until now every stale renewal was counted under the job's
--   queue and the auditor functions moved it to '*' at every read unless
--   the counting login was the last claimer of any job of that queue: a
--   login that had claimed one job of a queue charged its guesses of that
--   queue's other job ids to the queue. renew_job_lease(s)
--   (functions/renewal_v4.sql) count through it; lease_health_by_queue
--   gains stale_releases_last_hour and both auditor readers sum the tally
--   as counted (functions/audit_v4.sql).
-- * Counts made before this migration keep what the old readers showed at
--   the moment of the upgrade: the stale renewals they would have shown
--   under '*' are moved there now, once.
-- * The schema's comment names docs/sql-api.md (001's named a CONTRACT.md
--   that the repository does not hold).
-- Stale terminal writes (complete_job, complete_jobs, retry_job, fail_job)
-- raise LF001 and abort their transaction, so the database cannot count
-- them; goclient does (threat model T4).
--
-- The down part puts back the renewal, release and auditor functions of
-- version 11, the CHECK, grants and comments; the stale_release counts are
-- deleted (version 11 has no such kind) and the stale renewals moved to
-- '*' stay there, which version 11's readers also show under '*' or under
-- the queue of a login that claimed there.
-- This migration's version number appears only in its two evidence
-- records below (migration_version 12).

COMMENT ON SCHEMA durable_jobs IS 'leasefence: database-authoritative, fenced durable-job leases. Tables are private; the functions documented in docs/sql-api.md are the interface.';

ALTER TABLE durable_jobs.lease_outcome_tally
    DROP CONSTRAINT lease_outcome_tally_kind,
    ADD CONSTRAINT lease_outcome_tally_kind CHECK (outcome_kind IN ('stale_renewal', 'reclaim', 'stale_release'));
COMMENT ON COLUMN durable_jobs.lease_outcome_tally.queue_name IS 'Queue the outcome is charged to: a reclaim''s queue; for a stale renewal or release, the job''s queue when the counting login made the job''s last claim, else ''*'' (unknown job, or a job another login claimed last).';
COMMENT ON COLUMN durable_jobs.lease_outcome_tally.counted_by_role IS 'session_user that counted the outcome ('''' for rows carried over from version 2). Never returned by any function.';

-- Counts made before: each stale renewal the version-11 readers showed
-- under '*' (its login was not the last claimer of any job of its queue)
-- is moved to '*' now, summed into the row of the same minute, backend
-- and login.
WITH moved AS (
    DELETE FROM durable_jobs.lease_outcome_tally t
    WHERE t.outcome_kind = 'stale_renewal' AND t.counted_by_role <> '' AND t.queue_name <> '*'
      AND (t.queue_name, t.counted_by_role) NOT IN (
          SELECT j.queue_name, j.lease_claimed_by_role FROM durable_jobs.job_record j
          WHERE j.lease_claimed_by_role IS NOT NULL)
    RETURNING t.tally_minute, t.outcome_kind, t.tally_backend_pid, t.counted_by_role, t.outcome_count
)
INSERT INTO durable_jobs.lease_outcome_tally AS t
    (tally_minute, queue_name, outcome_kind, tally_backend_pid, counted_by_role, outcome_count)
SELECT m.tally_minute, '*', m.outcome_kind, m.tally_backend_pid, m.counted_by_role, pg_catalog.sum(m.outcome_count)
FROM moved m
GROUP BY m.tally_minute, m.outcome_kind, m.tally_backend_pid, m.counted_by_role
ON CONFLICT (tally_minute, queue_name, outcome_kind, tally_backend_pid, counted_by_role)
DO UPDATE SET outcome_count = t.outcome_count + EXCLUDED.outcome_count;

-- release_job_claim's definer counts a stale release.
GRANT SELECT (tally_minute, queue_name, outcome_kind, tally_backend_pid, counted_by_role, outcome_count),
      INSERT (tally_minute, queue_name, outcome_kind, tally_backend_pid, counted_by_role, outcome_count),
      UPDATE (outcome_count), DELETE
    ON durable_jobs.lease_outcome_tally TO durable_job_terminal_owner;
GRANT SELECT (queue_name) ON durable_jobs.job_record TO durable_job_terminal_owner;
GRANT EXECUTE ON FUNCTION durable_jobs.record_lease_outcome(text, text, bigint) TO durable_job_terminal_owner;

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

-- renewal v4 (migration 012; 008 installs renewal_v3.sql). Exactly v3,
-- except who a stale answer is charged to: v3 counted every stale renewal
-- under the job's queue, and the auditor functions moved it to '*' only
-- when the renewing login was not the last claimer of any job of that
-- queue, so a login that had claimed one job of a queue could raise that
-- queue's stale tally by guessing the ids of its other jobs. v4 counts a
-- stale answer with record_stale_call (stale_tally.sql): under the job's
-- queue only when the renewing login made the job's last claim, else under
-- '*', decided per job when it is counted.
--
-- Everything else as in v3: renew_job_leases never waits on a locked row
-- and answers it `locked`, READ COMMITTED only, absolute durations, LF003
-- on bad input (a multi-dimensional array, a caller's collation included),
-- lease_expiry_floor kept ahead of the clock, one PL/pgSQL body each.
--
-- The fenced predicate, in both functions: RUNNING, token digest, owner and
-- claiming session_user match, lease_expires_at > clock_timestamp(). The new
-- expiry: decision time + the current policy's lease duration, never earlier
-- than the expiry granted, never past the claim deadline; unchanged when the
-- policy has renewal switched off (renewal_disabled). Stale answers are
-- tallied (record_stale_call); neither function reads a payload.

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

-- terminal v3 (migration 012; 004 installs terminal_v2.sql): only
-- release_job_claim changes, so only it is here. v2 answered a stale
-- release `false` and counted nothing: a release is the one call of the
-- terminal family whose stale answer commits (complete_job, complete_jobs,
-- retry_job and fail_job raise LF001 and their transaction aborts), so v3
-- counts it as a stale_release with record_stale_call (stale_tally.sql):
-- under the job's queue when the releasing login made the job's last
-- claim, else under '*'. The other terminal functions stay as v2 has them.

-- release_job_claim: the worker gives a fenced claim up (shutdown): the job is
-- QUEUED and claimable at once, the attempt it used is given back and the old
-- token is stale for everything. false when the claim was already stale,
-- and that stale release is counted (stale_release, record_stale_call).
-- Locks the job row. Raises LF003 for malformed input.
CREATE OR REPLACE FUNCTION durable_jobs.release_job_claim(p_job_record_id bigint, p_lease_claim_token uuid, p_worker_owner_id text)
RETURNS boolean
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $function$
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
$function$;

ALTER FUNCTION durable_jobs.release_job_claim(bigint, uuid, text) OWNER TO durable_job_terminal_owner;
REVOKE ALL ON FUNCTION durable_jobs.release_job_claim(bigint, uuid, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.release_job_claim(bigint, uuid, text) TO durable_job_worker;

DROP FUNCTION durable_jobs.lease_health_by_queue();
-- audit v4 (migration 012; 004 installs audit_v2.sql, 006 adds
-- audit_v3.sql): only the two readers of the tally change, so only they are
-- here. lease_health_by_queue gains stale_releases_last_hour (a new result
-- column: 012 drops the function first), and both read each count under
-- the queue it was charged to when it was counted (record_stale_call): v2
-- re-attributed stale renewals at every read by whether the counting login
-- was the last claimer of any job of the queue, which a login that claimed
-- one job there passed, and which a later claim or purge changed after the
-- fact. Still payload-blind and finite: no job id, owner, token or login
-- is returned; no locks.

-- lease_health_by_queue: one row per queue that has a policy or a job:
-- running jobs, leases expiring within one renewal interval, expired leases
-- still RUNNING (awaiting reclaim), reclaims, stale renewals and stale
-- releases in the last hour (tallies summed over every backend's rows, each
-- stale call under the queue it was charged to when counted: '*' holds
-- those of unknown jobs and of jobs the calling login did not claim last,
-- so a guess cannot pass for the queue's trouble), the oldest running
-- claim's age, and the database time it was read at. Computes in UTC
-- whatever the caller's TimeZone.
CREATE FUNCTION durable_jobs.lease_health_by_queue()
RETURNS TABLE (queue_name text, running_jobs bigint, expiring_within_interval bigint,
               expired_awaiting_reclaim bigint, reclaims_last_hour bigint, stale_renewals_last_hour bigint,
               stale_releases_last_hour bigint, oldest_lease_age interval, database_time timestamptz)
LANGUAGE sql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET TimeZone = 'UTC'
BEGIN ATOMIC
    WITH read_at AS (SELECT pg_catalog.clock_timestamp() AS read_time),
    queues AS (
        SELECT p.queue_name FROM durable_jobs.queue_lease_policy p
        UNION
        SELECT DISTINCT j.queue_name FROM durable_jobs.job_record j
    ),
    effective AS (
        SELECT q.queue_name,
               (SELECT p.renewal_interval FROM durable_jobs.queue_lease_policy p
                WHERE p.queue_name IN (q.queue_name, '*') ORDER BY p.queue_name = '*' LIMIT 1) AS renewal_interval
        FROM queues q
    ),
    running AS (
        SELECT j.queue_name,
               pg_catalog.count(*) AS running_jobs,
               pg_catalog.count(*) FILTER (WHERE j.lease_expires_at > r.read_time
                   AND j.lease_expires_at <= r.read_time + e.renewal_interval) AS expiring_soon,
               pg_catalog.count(*) FILTER (WHERE j.lease_expires_at <= r.read_time) AS expired,
               pg_catalog.min(j.lease_claimed_at) AS oldest_claim
        FROM durable_jobs.job_record j
        CROSS JOIN read_at r
        JOIN effective e ON e.queue_name = j.queue_name
        WHERE j.job_status = 'RUNNING'
        GROUP BY j.queue_name
    ),
    tallies AS (
        SELECT t.queue_name,
               pg_catalog.sum(t.outcome_count) FILTER (WHERE t.outcome_kind = 'reclaim') AS reclaims,
               pg_catalog.sum(t.outcome_count) FILTER (WHERE t.outcome_kind = 'stale_renewal') AS stale_renewals,
               pg_catalog.sum(t.outcome_count) FILTER (WHERE t.outcome_kind = 'stale_release') AS stale_releases
        FROM durable_jobs.lease_outcome_tally t
        CROSS JOIN read_at r
        WHERE t.tally_minute >= r.read_time - interval '1 hour'
        GROUP BY t.queue_name
    )
    SELECT e.queue_name,
           COALESCE(ru.running_jobs, 0), COALESCE(ru.expiring_soon, 0), COALESCE(ru.expired, 0),
           COALESCE(ta.reclaims, 0)::bigint, COALESCE(ta.stale_renewals, 0)::bigint,
           COALESCE(ta.stale_releases, 0)::bigint,
           r.read_time - ru.oldest_claim, r.read_time
    FROM effective e
    CROSS JOIN read_at r
    LEFT JOIN running ru ON ru.queue_name = e.queue_name
    LEFT JOIN tallies ta ON ta.queue_name = e.queue_name
    ORDER BY e.queue_name;
END;

-- lease_outcome_totals: reclaims, stale renewals and stale releases per
-- queue and kind, summed over every backend's per-minute tallies since the
-- UTC minute of p_since (all of them when NULL), whatever the caller's
-- TimeZone. Each stale call is under the queue it was charged to when it
-- was counted (record_stale_call): '*' holds those of unknown jobs and of
-- jobs the calling login did not claim last.
CREATE OR REPLACE FUNCTION durable_jobs.lease_outcome_totals(p_since timestamptz)
RETURNS TABLE (queue_name text, outcome_kind text, outcome_count bigint)
LANGUAGE sql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET TimeZone = 'UTC'
BEGIN ATOMIC
    SELECT a.queue_name, a.outcome_kind, pg_catalog.sum(a.outcome_count)::bigint
    FROM durable_jobs.lease_outcome_tally a
    WHERE p_since IS NULL OR a.tally_minute >= pg_catalog.date_trunc('minute', p_since, 'UTC')
    GROUP BY a.queue_name, a.outcome_kind
    ORDER BY a.queue_name, a.outcome_kind;
END;

ALTER FUNCTION durable_jobs.lease_health_by_queue() OWNER TO durable_job_audit_owner;
ALTER FUNCTION durable_jobs.lease_outcome_totals(timestamptz) OWNER TO durable_job_audit_owner;
REVOKE ALL ON FUNCTION durable_jobs.lease_health_by_queue() FROM PUBLIC;
REVOKE ALL ON FUNCTION durable_jobs.lease_outcome_totals(timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.lease_health_by_queue() TO durable_job_auditor;
GRANT EXECUTE ON FUNCTION durable_jobs.lease_outcome_totals(timestamptz) TO durable_job_auditor;


SELECT pg_catalog.pg_advisory_xact_lock(1279655936, 1);
INSERT INTO durable_jobs.control_evidence_record (evidence_kind, queue_name, previous_values, new_values, change_reason)
VALUES ('migration_applied', NULL, NULL, '{"migration_version": 12, "migration_name": "012_stale_calls_charged_to_their_claimer"}',
        COALESCE(NULLIF(pg_catalog.current_setting('leasefence.migration_reason', true), ''), 'leasefence bundle migration'));

---- create above / drop below ----

DROP FUNCTION durable_jobs.lease_health_by_queue();
-- Auditor functions: payload-blind, finite-cardinality reads for health and
-- evidence. None returns a payload, token, digest, owner id, idempotency key
-- or job id list. They take no locks and raise nothing of their own.

-- lease_health_by_queue: one row per queue that has a policy or a job:
-- running jobs, leases expiring within one renewal interval, expired leases
-- still RUNNING (awaiting reclaim), reclaims and stale renewals in the last
-- hour (tallies summed over every backend's rows; '*' holds stale renewals
-- of unknown jobs and those made by a login that is not the last claimer of
-- any job of the queue, so a guess cannot pass for the queue's trouble), the
-- oldest running claim's age, and the database time it was read at.
-- Computes in UTC whatever the caller's TimeZone.
CREATE OR REPLACE FUNCTION durable_jobs.lease_health_by_queue()
RETURNS TABLE (queue_name text, running_jobs bigint, expiring_within_interval bigint,
               expired_awaiting_reclaim bigint, reclaims_last_hour bigint, stale_renewals_last_hour bigint,
               oldest_lease_age interval, database_time timestamptz)
LANGUAGE sql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET TimeZone = 'UTC'
BEGIN ATOMIC
    WITH read_at AS (SELECT pg_catalog.clock_timestamp() AS read_time),
    queues AS (
        SELECT p.queue_name FROM durable_jobs.queue_lease_policy p
        UNION
        SELECT DISTINCT j.queue_name FROM durable_jobs.job_record j
    ),
    effective AS (
        SELECT q.queue_name,
               (SELECT p.renewal_interval FROM durable_jobs.queue_lease_policy p
                WHERE p.queue_name IN (q.queue_name, '*') ORDER BY p.queue_name = '*' LIMIT 1) AS renewal_interval
        FROM queues q
    ),
    running AS (
        SELECT j.queue_name,
               pg_catalog.count(*) AS running_jobs,
               pg_catalog.count(*) FILTER (WHERE j.lease_expires_at > r.read_time
                   AND j.lease_expires_at <= r.read_time + e.renewal_interval) AS expiring_soon,
               pg_catalog.count(*) FILTER (WHERE j.lease_expires_at <= r.read_time) AS expired,
               pg_catalog.min(j.lease_claimed_at) AS oldest_claim
        FROM durable_jobs.job_record j
        CROSS JOIN read_at r
        JOIN effective e ON e.queue_name = j.queue_name
        WHERE j.job_status = 'RUNNING'
        GROUP BY j.queue_name
    ),
    tallies AS (
        SELECT CASE WHEN t.outcome_kind = 'stale_renewal' AND t.counted_by_role <> ''
                         AND (t.queue_name, t.counted_by_role) NOT IN (
                             SELECT j.queue_name, j.lease_claimed_by_role FROM durable_jobs.job_record j
                             WHERE j.lease_claimed_by_role IS NOT NULL)
                    THEN '*' ELSE t.queue_name END AS queue_name,
               pg_catalog.sum(t.outcome_count) FILTER (WHERE t.outcome_kind = 'reclaim') AS reclaims,
               pg_catalog.sum(t.outcome_count) FILTER (WHERE t.outcome_kind = 'stale_renewal') AS stale_renewals
        FROM durable_jobs.lease_outcome_tally t
        CROSS JOIN read_at r
        WHERE t.tally_minute >= r.read_time - interval '1 hour'
        GROUP BY 1
    )
    SELECT e.queue_name,
           COALESCE(ru.running_jobs, 0), COALESCE(ru.expiring_soon, 0), COALESCE(ru.expired, 0),
           COALESCE(ta.reclaims, 0)::bigint, COALESCE(ta.stale_renewals, 0)::bigint,
           r.read_time - ru.oldest_claim, r.read_time
    FROM effective e
    CROSS JOIN read_at r
    LEFT JOIN running ru ON ru.queue_name = e.queue_name
    LEFT JOIN tallies ta ON ta.queue_name = e.queue_name
    ORDER BY e.queue_name;
END;

-- queue_lease_policies: every queue's lease policy, '*' (the default) included.
CREATE OR REPLACE FUNCTION durable_jobs.queue_lease_policies()
RETURNS TABLE (queue_name text, lease_duration interval, renewal_interval interval, max_claim_lifetime interval,
               renewal_enabled boolean, changed_at timestamptz, changed_by_role text)
LANGUAGE sql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
BEGIN ATOMIC
    SELECT p.queue_name, p.lease_duration, p.renewal_interval, p.max_claim_lifetime, p.renewal_enabled,
           p.changed_at, p.changed_by_role
    FROM durable_jobs.queue_lease_policy p
    ORDER BY p.queue_name;
END;

-- control_evidence_history: the append-only control evidence recorded at or
-- after p_since (all of it when NULL), oldest first.
CREATE OR REPLACE FUNCTION durable_jobs.control_evidence_history(p_since timestamptz DEFAULT NULL)
RETURNS TABLE (evidence_record_id bigint, evidence_kind text, queue_name text, previous_values jsonb,
               new_values jsonb, change_reason text, changed_by_role text, recorded_at timestamptz)
LANGUAGE sql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
BEGIN ATOMIC
    SELECT e.evidence_record_id, e.evidence_kind, e.queue_name, e.previous_values, e.new_values,
           e.change_reason, e.changed_by_role, e.recorded_at
    FROM durable_jobs.control_evidence_record e
    WHERE p_since IS NULL OR e.recorded_at >= p_since
    ORDER BY e.evidence_record_id;
END;

-- lease_outcome_totals: stale renewals and reclaims per queue summed over
-- every backend's per-minute tallies since the UTC minute of p_since (all of
-- them when NULL), whatever the caller's TimeZone. A stale renewal made by a
-- login that is not the last claimer of any job of its queue is counted
-- under '*' (as are renewals of unknown jobs).
CREATE OR REPLACE FUNCTION durable_jobs.lease_outcome_totals(p_since timestamptz)
RETURNS TABLE (queue_name text, outcome_kind text, outcome_count bigint)
LANGUAGE sql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET TimeZone = 'UTC'
BEGIN ATOMIC
    SELECT a.queue_name, a.outcome_kind, pg_catalog.sum(a.outcome_count)::bigint
    FROM (SELECT CASE WHEN t.outcome_kind = 'stale_renewal' AND t.counted_by_role <> ''
                           AND (t.queue_name, t.counted_by_role) NOT IN (
                             SELECT j.queue_name, j.lease_claimed_by_role FROM durable_jobs.job_record j
                             WHERE j.lease_claimed_by_role IS NOT NULL)
                      THEN '*' ELSE t.queue_name END AS queue_name,
                 t.outcome_kind, t.outcome_count
          FROM durable_jobs.lease_outcome_tally t
          WHERE p_since IS NULL OR t.tally_minute >= pg_catalog.date_trunc('minute', p_since, 'UTC')) a
    GROUP BY a.queue_name, a.outcome_kind
    ORDER BY a.queue_name, a.outcome_kind;
END;

-- job_status_totals: how many jobs each queue has in each status.
CREATE OR REPLACE FUNCTION durable_jobs.job_status_totals()
RETURNS TABLE (queue_name text, job_status text, job_count bigint)
LANGUAGE sql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
BEGIN ATOMIC
    SELECT j.queue_name, j.job_status::text, pg_catalog.count(*)
    FROM durable_jobs.job_record j
    GROUP BY j.queue_name, j.job_status
    ORDER BY j.queue_name, j.job_status;
END;

-- bundle_migration_version: the bundle version this database was last
-- migrated to and when, from the newest migration evidence record.
CREATE OR REPLACE FUNCTION durable_jobs.bundle_migration_version()
RETURNS TABLE (migration_version integer, applied_at timestamptz)
LANGUAGE sql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
BEGIN ATOMIC
    SELECT CASE WHEN e.evidence_kind = 'migration_applied'
                THEN (e.new_values ->> 'migration_version')::integer
                ELSE (e.new_values ->> 'migration_version')::integer - 1 END,
           e.recorded_at
    FROM durable_jobs.control_evidence_record e
    WHERE e.evidence_kind IN ('migration_applied', 'migration_reverted')
    ORDER BY e.evidence_record_id DESC
    LIMIT 1;
END;

ALTER FUNCTION durable_jobs.lease_health_by_queue() OWNER TO durable_job_audit_owner;
ALTER FUNCTION durable_jobs.queue_lease_policies() OWNER TO durable_job_audit_owner;
ALTER FUNCTION durable_jobs.control_evidence_history(timestamptz) OWNER TO durable_job_audit_owner;
ALTER FUNCTION durable_jobs.lease_outcome_totals(timestamptz) OWNER TO durable_job_audit_owner;
ALTER FUNCTION durable_jobs.job_status_totals() OWNER TO durable_job_audit_owner;
ALTER FUNCTION durable_jobs.bundle_migration_version() OWNER TO durable_job_audit_owner;
REVOKE ALL ON FUNCTION durable_jobs.lease_health_by_queue() FROM PUBLIC;
REVOKE ALL ON FUNCTION durable_jobs.queue_lease_policies() FROM PUBLIC;
REVOKE ALL ON FUNCTION durable_jobs.control_evidence_history(timestamptz) FROM PUBLIC;
REVOKE ALL ON FUNCTION durable_jobs.lease_outcome_totals(timestamptz) FROM PUBLIC;
REVOKE ALL ON FUNCTION durable_jobs.job_status_totals() FROM PUBLIC;
REVOKE ALL ON FUNCTION durable_jobs.bundle_migration_version() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.lease_health_by_queue() TO durable_job_auditor;
GRANT EXECUTE ON FUNCTION durable_jobs.queue_lease_policies() TO durable_job_auditor;
GRANT EXECUTE ON FUNCTION durable_jobs.control_evidence_history(timestamptz) TO durable_job_auditor;
GRANT EXECUTE ON FUNCTION durable_jobs.lease_outcome_totals(timestamptz) TO durable_job_auditor;
GRANT EXECUTE ON FUNCTION durable_jobs.job_status_totals() TO durable_job_auditor;
GRANT EXECUTE ON FUNCTION durable_jobs.bundle_migration_version() TO durable_job_auditor;

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
      AND j.job_status = 'RUNNING'
      AND j.lease_claim_digest = durable_jobs.claim_token_digest(p_lease_claim_token)
      AND j.lease_owner_id = p_worker_owner_id
      AND j.lease_claimed_by_role = SESSION_USER
      AND j.lease_expires_at > pg_catalog.clock_timestamp()
    FOR UPDATE OF j;
END;
$function$;

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

-- release_job_claim: the worker gives a fenced claim up (shutdown): the job is
-- QUEUED and claimable at once, the attempt it used is given back and the old
-- token is stale for everything. false when the claim was already stale.
-- Locks the job row. Raises LF003 for malformed input.
CREATE OR REPLACE FUNCTION durable_jobs.release_job_claim(p_job_record_id bigint, p_lease_claim_token uuid, p_worker_owner_id text)
RETURNS boolean
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $function$
BEGIN
    PERFORM 1 FROM durable_jobs.lock_fenced_claim(p_job_record_id, p_lease_claim_token, p_worker_owner_id);
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    UPDATE durable_jobs.job_record j
    SET job_status = 'QUEUED', status_changed_at = pg_catalog.clock_timestamp(),
        run_after = pg_catalog.clock_timestamp(), attempt_number = GREATEST(j.attempt_number - 1, 0),
        lease_expires_at = NULL
    WHERE j.job_record_id = p_job_record_id;
    RETURN true;
END;
$function$;

REVOKE ALL ON FUNCTION durable_jobs.lock_fenced_claim(bigint, uuid, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION durable_jobs.raise_stale_claim() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.lock_fenced_claim(bigint, uuid, text) TO durable_job_terminal_owner;
GRANT EXECUTE ON FUNCTION durable_jobs.raise_stale_claim() TO durable_job_terminal_owner;
ALTER FUNCTION durable_jobs.complete_job(bigint, uuid, text, jsonb) OWNER TO durable_job_terminal_owner;
ALTER FUNCTION durable_jobs.retry_job(bigint, uuid, text, interval, text) OWNER TO durable_job_terminal_owner;
ALTER FUNCTION durable_jobs.fail_job(bigint, uuid, text, text) OWNER TO durable_job_terminal_owner;
ALTER FUNCTION durable_jobs.release_job_claim(bigint, uuid, text) OWNER TO durable_job_terminal_owner;
REVOKE ALL ON FUNCTION durable_jobs.complete_job(bigint, uuid, text, jsonb) FROM PUBLIC;
REVOKE ALL ON FUNCTION durable_jobs.retry_job(bigint, uuid, text, interval, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION durable_jobs.fail_job(bigint, uuid, text, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION durable_jobs.release_job_claim(bigint, uuid, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.complete_job(bigint, uuid, text, jsonb) TO durable_job_worker;
GRANT EXECUTE ON FUNCTION durable_jobs.retry_job(bigint, uuid, text, interval, text) TO durable_job_worker;
GRANT EXECUTE ON FUNCTION durable_jobs.fail_job(bigint, uuid, text, text) TO durable_job_worker;
GRANT EXECUTE ON FUNCTION durable_jobs.release_job_claim(bigint, uuid, text) TO durable_job_worker;

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

DROP FUNCTION durable_jobs.record_stale_call(bigint, text);

REVOKE EXECUTE ON FUNCTION durable_jobs.record_lease_outcome(text, text, bigint) FROM durable_job_terminal_owner;
REVOKE SELECT (queue_name) ON durable_jobs.job_record FROM durable_job_terminal_owner;
REVOKE ALL ON durable_jobs.lease_outcome_tally FROM durable_job_terminal_owner;

DELETE FROM durable_jobs.lease_outcome_tally WHERE outcome_kind = 'stale_release';
ALTER TABLE durable_jobs.lease_outcome_tally
    DROP CONSTRAINT lease_outcome_tally_kind,
    ADD CONSTRAINT lease_outcome_tally_kind CHECK (outcome_kind IN ('stale_renewal', 'reclaim'));
COMMENT ON COLUMN durable_jobs.lease_outcome_tally.queue_name IS 'Queue of the job; ''*'' when the renewal named a job that does not exist.';
COMMENT ON COLUMN durable_jobs.lease_outcome_tally.counted_by_role IS 'session_user that counted the outcome ('''' for rows carried over from version 2). Never returned: the auditor functions charge a stale renewal to its queue only when this login is the last claimer of a job there, else to ''*''.';

COMMENT ON SCHEMA durable_jobs IS 'leasefence: database-authoritative, fenced durable-job leases. Tables are private; the functions in CONTRACT.md are the interface.';

SELECT pg_catalog.pg_advisory_xact_lock(1279655936, 1);
INSERT INTO durable_jobs.control_evidence_record (evidence_kind, queue_name, previous_values, new_values, change_reason)
VALUES ('migration_reverted', NULL, NULL, '{"migration_version": 12, "migration_name": "012_stale_calls_charged_to_their_claimer"}',
        COALESCE(NULLIF(pg_catalog.current_setting('leasefence.migration_reason', true), ''),
                 'leasefence bundle migration rolled back'));
