-- leasefence 032: claims that cost what they did at version 23 (issue 38:
-- the claims with fresh statistics no worse than before its migrations).
--
-- Measured by the backend's CPU time a claim (bench/notes.md), version
-- 31's claim cost about 9 % more than version 23's, from two additions
-- paid on every call:
-- * migration 029's bookkeeping of claims lost with the database: four
--   aggregates and a LATERAL join to start up on every call, for a branch
--   that is empty unless a claim expired. claim_next_jobs' probe now
--   returns each candidate's kind as one "char" ('r' an expired claim
--   reclaimed, 'f' one lost with the database and reclaimed without
--   costing an attempt, 'd' a due job, 'x' a job whose attempts are used
--   up), computed by one CASE: two aggregates, no join node. What a claim
--   locks, writes, counts and returns does not change.
-- * migration 027's wake-up trigger, whose WHEN clause PostgreSQL reads
--   and compiles for every UPDATE statement that passes its column check:
--   a claim sets job_status, which was in the list. The list is now
--   run_after alone: every write that makes a job claimable sets it (a
--   retry, a release, a replay), no other write does, so the same writes
--   wake the same workers.
--
-- CREATE OR REPLACE TRIGGER takes a SHARE ROW EXCLUSIVE lock on job_record
-- for a moment (as migration 027 did): its writers, claims and renewals
-- included, wait for the transactions already writing it. The functions
-- are replaced under the usual catalog locks.

-- Claims: the only way a worker becomes a job's owner.
--
-- The current definition of each function of this family, edited in place.
-- A change reaches databases through a new migration that includes this
-- file; released migrations hold their own frozen copy (see sql/doc.go).
--
-- Below, the notes written with the versions the current definitions come
-- from, newest first. They name the files as they were then; each
-- migration's frozen SQL under sql/migrations holds the whole text.

-- Notes of migration 032:
--
-- claim_next_jobs' probe returns each candidate's kind as one "char" ('r'
-- reclaim, 'f' failover reclaim, 'd' due, 'x' exhausted) instead of two
-- boolean arrays and a count of expired candidates, and computes the kind
-- with one CASE instead of a LATERAL subquery: two aggregates to start up
-- on every call instead of four, no join node. What it claims, locks,
-- counts and returns is unchanged. With the wake-up trigger's narrower
-- column list (wakeup.sql, same migration) a claim costs the backend
-- about as much CPU time as at version 23 (issue 38, bench/notes.md).

-- Notes of migration 017 (claim_v5.sql in its frozen SQL):
--
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

-- Notes of migration 008 (claim_v3.sql in its frozen SQL):
--
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

ALTER FUNCTION durable_jobs.claim_next_job(text, text) OWNER TO durable_job_claim_owner;
REVOKE ALL ON FUNCTION durable_jobs.claim_next_job(text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.claim_next_job(text, text) TO durable_job_worker;

-- claim_next_jobs: the only function that creates ownership. Claims up to
-- p_max_jobs due jobs of one queue (QUEUED/RETRY_SCHEDULED whose run-after
-- has come, or RUNNING whose lease expired by database time), each with a new
-- random token (only its sha256 is stored), attempt + 1 and fencing
-- generation + 1, or the WAL timeline's floor ((timeline - 1) << 40) + 1
-- when that is higher: generations strictly increase across promotions
-- (every promotion starts a higher timeline; timeline 1 has floor 1, so a
-- fresh install issues 1, 2, 3, ...). A job whose attempts are used up goes to FAILED
-- (attempts_exhausted) instead and does not count. An expired claim lost
-- with the database (the server started after the claim, or a promotion
-- since: the claim's generation is of an earlier timeline) is reclaimed
-- without costing an attempt, at most three times a job, and counted as a
-- failover_reclaim, not a reclaim (since migration 029). Expired claims are taken
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
$function$;

ALTER FUNCTION durable_jobs.claim_next_jobs(text, text, integer) OWNER TO durable_job_claim_owner;
REVOKE ALL ON FUNCTION durable_jobs.claim_next_jobs(text, text, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.claim_next_jobs(text, text, integer) TO durable_job_worker;


-- Wake-ups: idle workers told that their queue has work, and when it will.
--
-- The current definition of each function of this family, edited in place.
-- A change reaches databases through a new migration that includes this
-- file; released migrations hold their own frozen copy (see sql/doc.go).
--
-- Below, the notes written with the versions the current definitions come
-- from, newest first. They name the files as they were then; each
-- migration's frozen SQL under sql/migrations holds the whole text.

-- Notes of migration 032:
--
-- The UPDATE trigger's column list is run_after alone (027: job_status,
-- run_after). Every write that makes a job QUEUED or RETRY_SCHEDULED sets
-- when it falls due (a retry, a release, single or batched, a replay), and
-- no other write sets run_after: so a claim, a completion, a failure and a
-- cancel, which set job_status, no longer pass the column check, and
-- PostgreSQL no longer reads and compiles the WHEN clause (stored as text)
-- for each of their statements. That was about 5 % of a claim's backend
-- CPU time (bench/notes.md, issue 38). A function that makes a job
-- claimable must set run_after, or it wakes nobody and its job waits for
-- the poll (sql/integration wakeup_test.go covers every such write).

-- Notes of migration 027 (wakeup.sql in its frozen SQL):
--
-- wake-ups (migration 027, issue 37): an idle worker waited out its poll
-- interval (1 s by default) before it saw a new job. Now a write that makes
-- a job QUEUED or RETRY_SCHEDULED (an enqueue, single or batched, a
-- release, a replay, a retry, an operator's action) sends a NOTIFY on its
-- queue's wake-up channel when its transaction commits, and a worker that
-- LISTENs there claims at once; queue_next_due_in tells a worker when the
-- next job of its queue falls due (run_after, a retry delay), so it sleeps
-- until then rather than a whole poll.
--
-- Triggers, not a NOTIFY in each writer: they cover every function that
-- makes a job claimable, now and later, without editing the families that
-- write job_record. An INSERT fires one statement-level trigger, which
-- notifies once per queue of the inserted rows (a batch enqueue of 1,000
-- jobs is one call, not 1,000: a row-level INSERT trigger made a batch of
-- 100 take about twice as long as without any trigger, medians of nine
-- rounds in one transaction on a loaded machine, 63 against 28 us a job). An UPDATE fires a row-level trigger whose
-- column list (job_status, run_after) keeps a renewal, which sets
-- neither, from even evaluating its WHEN clause, and whose WHEN clause
-- stops a claim or a terminal write (job_status set to something else)
-- without a call. Unlike a BEFORE ROW UPDATE trigger (see the notes of
-- migration 017 in claim.sql), an AFTER ROW trigger takes no tuple lock
-- and writes no WAL: PostgreSQL re-reads the old row version from the page
-- the UPDATE just wrote. (An UPDATE trigger cannot be statement-level with
-- a column list: PostgreSQL refuses transition tables there.)
--
-- One notification at a time per queue: a transaction that NOTIFYs takes
-- PostgreSQL's notification lock (one for the whole cluster) at COMMIT and
-- holds it until its commit record is flushed, so notifying transactions
-- commit one after another, each waiting for its own WAL flush, instead of
-- together (group commit): four clients enqueueing one job per transaction
-- went from 5.3 to 17.1 ms of wall time per job (bench/notes.md). So a
-- transaction notifies a queue only when it gets the transaction-level
-- advisory lock (1279678293, hashtext(queue)) without waiting
-- (pg_try_advisory_xact_lock): while one transaction that notifies the
-- queue is in progress, the others that make its jobs claimable commit
-- without a notification, and the worker woken by the first claims their
-- jobs too when they committed before its claim (it claims again at once
-- after a claim that got jobs). A job that commits later than that is
-- claimed by the next notification or by the poll, as before 027. Any login
-- may take that advisory key; holding it only turns the queue's wake-ups
-- back into polling (docs/threat-model).
--
-- What a notification tells a stranger: any login may LISTEN on any
-- channel. The channel is 'leasefence_wake_' and the first 16 hex digits of
-- md5(queue name), so the queue name is not in clear, and one queue's
-- traffic wakes only the workers of that queue; the payload is empty (no
-- job id, payload, token, owner or time). PostgreSQL folds identical
-- notifications (same channel, same payload) of one transaction into one.
-- What is left is timing: a login that guesses a queue's name can watch
-- when its work arrives (docs/threat-model).

-- wake_queue_workers: AFTER UPDATE OF run_after trigger on job_record,
-- for rows that are QUEUED or RETRY_SCHEDULED after the statement (the
-- trigger's WHEN clause). Sends an empty notification on
-- the row's queue's wake-up channel, delivered when the transaction
-- commits (never when it rolls back), unless another transaction holds the
-- queue's wake-up key (1279678293, hashtext(queue name)): then it sends
-- nothing. Takes that key (transaction-level advisory lock, never waits).
CREATE OR REPLACE FUNCTION durable_jobs.wake_queue_workers()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $function$
BEGIN
    PERFORM pg_catalog.pg_notify('leasefence_wake_' || pg_catalog.left(pg_catalog.md5(NEW.queue_name), 16), '')
    WHERE pg_catalog.pg_try_advisory_xact_lock(1279678293, pg_catalog.hashtext(NEW.queue_name));
    RETURN NULL;
END;
$function$;

ALTER FUNCTION durable_jobs.wake_queue_workers() OWNER TO durable_job_claim_owner;
REVOKE ALL ON FUNCTION durable_jobs.wake_queue_workers() FROM PUBLIC;

CREATE OR REPLACE TRIGGER job_record_wake_workers
    AFTER UPDATE OF run_after ON durable_jobs.job_record
    FOR EACH ROW
    WHEN (NEW.job_status IN ('QUEUED', 'RETRY_SCHEDULED'))
    EXECUTE FUNCTION durable_jobs.wake_queue_workers();

-- wake_queue_workers_after_insert: AFTER INSERT statement-level trigger on
-- job_record (the transition table inserted_jobs): for each queue of the
-- inserted rows that are QUEUED or RETRY_SCHEDULED, wake_queue_workers'
-- notification, under the same wake-up key.
CREATE OR REPLACE FUNCTION durable_jobs.wake_queue_workers_after_insert()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $function$
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
$function$;

ALTER FUNCTION durable_jobs.wake_queue_workers_after_insert() OWNER TO durable_job_claim_owner;
REVOKE ALL ON FUNCTION durable_jobs.wake_queue_workers_after_insert() FROM PUBLIC;

CREATE OR REPLACE TRIGGER job_record_wake_workers_after_insert
    AFTER INSERT ON durable_jobs.job_record
    REFERENCING NEW TABLE AS inserted_jobs
    FOR EACH STATEMENT
    EXECUTE FUNCTION durable_jobs.wake_queue_workers_after_insert();

-- queue_next_due_in: how long until the next QUEUED or RETRY_SCHEDULED job
-- of a queue falls due by database time: zero when one is due now, NULL
-- when the queue has none. An absolute interval (seconds, no day part).
-- A worker that found nothing to claim sleeps that long (at most its poll
-- interval) instead of a whole poll. Expired leases are not counted: a
-- worker finds those at its next poll. Reads one entry of the index
-- job_record_claimable_queue_order; takes no lock. Raises LF003 for a
-- malformed queue name. Answers nothing else about any job.
CREATE OR REPLACE FUNCTION durable_jobs.queue_next_due_in(p_queue_name text)
RETURNS interval
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $function$
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
$function$;

ALTER FUNCTION durable_jobs.queue_next_due_in(text) OWNER TO durable_job_claim_owner;
REVOKE ALL ON FUNCTION durable_jobs.queue_next_due_in(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.queue_next_due_in(text) TO durable_job_worker;


SELECT durable_jobs.lock_evidence_order();
INSERT INTO durable_jobs.control_evidence_record (evidence_kind, queue_name, previous_values, new_values, change_reason)
VALUES ('migration_applied', NULL, NULL, '{"migration_version": 32, "migration_name": "032_lighter_claims"}',
        COALESCE(NULLIF(pg_catalog.current_setting('leasefence.migration_reason', true), ''), 'leasefence bundle migration'));

---- create above / drop below ----

-- The claim family as migration 029 left it.
-- Claims: the only way a worker becomes a job's owner.
--
-- The current definition of each function of this family, edited in place.
-- A change reaches databases through a new migration that includes this
-- file; released migrations hold their own frozen copy (see sql/doc.go).
--
-- Below, the notes written with the versions the current definitions come
-- from, newest first. They name the files as they were then; each
-- migration's frozen SQL under sql/migrations holds the whole text.

-- Notes of migration 017 (claim_v5.sql in its frozen SQL):
--
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

-- Notes of migration 008 (claim_v3.sql in its frozen SQL):
--
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

ALTER FUNCTION durable_jobs.claim_next_job(text, text) OWNER TO durable_job_claim_owner;
REVOKE ALL ON FUNCTION durable_jobs.claim_next_job(text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.claim_next_job(text, text) TO durable_job_worker;

-- claim_next_jobs: the only function that creates ownership. Claims up to
-- p_max_jobs due jobs of one queue (QUEUED/RETRY_SCHEDULED whose run-after
-- has come, or RUNNING whose lease expired by database time), each with a new
-- random token (only its sha256 is stored), attempt + 1 and fencing
-- generation + 1, or the WAL timeline's floor ((timeline - 1) << 40) + 1
-- when that is higher: generations strictly increase across promotions
-- (every promotion starts a higher timeline; timeline 1 has floor 1, so a
-- fresh install issues 1, 2, 3, ...). A job whose attempts are used up goes to FAILED
-- (attempts_exhausted) instead and does not count. An expired claim lost
-- with the database (the server started after the claim, or a promotion
-- since: the claim's generation is of an earlier timeline) is reclaimed
-- without costing an attempt, at most three times a job, and counted as a
-- failover_reclaim, not a reclaim (since migration 029). Expired claims are taken
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
    v_candidate_failover boolean[];
    v_expired integer;
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
        SELECT COALESCE(pg_catalog.array_agg(c.candidate_id ORDER BY c.candidate_branch, c.candidate_order, c.candidate_id), '{}'),
               COALESCE(pg_catalog.array_agg(c.candidate_exhausted ORDER BY c.candidate_branch, c.candidate_order, c.candidate_id), '{}'),
               COALESCE(pg_catalog.array_agg(c.candidate_failover ORDER BY c.candidate_branch, c.candidate_order, c.candidate_id), '{}'),
               pg_catalog.count(*) FILTER (WHERE c.candidate_branch = 1)::integer
        INTO v_candidate_ids, v_candidate_exhausted, v_candidate_failover, v_expired
        FROM (SELECT x.candidate_branch, x.candidate_order, x.candidate_id, x.candidate_exhausted, x.candidate_failover
              FROM (SELECT 1 AS candidate_branch, j.lease_expiry_floor AS candidate_order, j.job_record_id AS candidate_id,
                           j.attempt_number >= j.max_attempts AND NOT f.lost_with_database AS candidate_exhausted,
                           f.lost_with_database AS candidate_failover
                    FROM durable_jobs.job_record j
                    -- Lost with the database (since migration 029): the
                    -- server started after the claim (a crash or restart
                    -- in place), or the claim's generation is of an
                    -- earlier WAL timeline (a promotion since); at most
                    -- three times a job, so a job that brings the server
                    -- down does not loop for ever. Evaluated only for the
                    -- expired leases this scan returns (on a standby the
                    -- FOR UPDATE fails before any row).
                    CROSS JOIN LATERAL (
                        SELECT j.failover_reclaims < 3
                               AND (j.lease_claimed_at < pg_catalog.pg_postmaster_start_time()
                                    OR (j.lease_fencing_generation >> 40) + 1
                                       < ('x' || pg_catalog.substr(pg_catalog.pg_walfile_name(pg_catalog.pg_current_wal_lsn()), 1, 8))::bit(32)::bigint)
                               AS lost_with_database) f
                    WHERE j.queue_name = p_queue_name AND j.job_status = 'RUNNING'
                      AND j.lease_expiry_floor <= v_now AND j.lease_expires_at <= v_now
                    ORDER BY j.lease_expiry_floor, j.job_record_id
                    LIMIT v_wanted
                    FOR UPDATE OF j SKIP LOCKED) x
              UNION ALL
              SELECT d.candidate_branch, d.candidate_order, d.candidate_id, d.candidate_exhausted, false
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
                SELECT c.candidate_id, c.candidate_position, c.candidate_failover,
                       pg_catalog.gen_random_uuid() AS candidate_token
                FROM ROWS FROM (pg_catalog.unnest(v_candidate_ids), pg_catalog.unnest(v_candidate_exhausted),
                                pg_catalog.unnest(v_candidate_failover))
                     WITH ORDINALITY AS c(candidate_id, candidate_exhausted, candidate_failover, candidate_position)
                WHERE NOT c.candidate_exhausted
            ), claimed AS (
                UPDATE durable_jobs.job_record j
                SET job_status = 'RUNNING', status_changed_at = v_now,
                    -- A claim lost with the database costs the job no attempt.
                    attempt_number = j.attempt_number + CASE WHEN c.candidate_failover THEN 0 ELSE 1 END,
                    failover_reclaims = j.failover_reclaims + CASE WHEN c.candidate_failover THEN 1 ELSE 0 END,
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
            -- Those lost with the database are counted apart (never
            -- exhausted: they cost no attempt).
            v_failover_reclaims := pg_catalog.cardinality(pg_catalog.array_positions(v_candidate_failover[1:v_expired], true));
            v_reclaims := v_expired - v_failover_reclaims
                - pg_catalog.cardinality(pg_catalog.array_positions(v_candidate_exhausted[1:v_expired], true));
            IF v_reclaims > 0 THEN
                PERFORM durable_jobs.record_lease_outcome(p_queue_name, 'reclaim', v_reclaims);
            END IF;
            IF v_failover_reclaims > 0 THEN
                PERFORM durable_jobs.record_lease_outcome(p_queue_name, 'failover_reclaim', v_failover_reclaims);
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

-- The wake-up family as migration 027 left it.
-- Wake-ups: idle workers told that their queue has work, and when it will.
--
-- The current definition of each function of this family, edited in place.
-- A change reaches databases through a new migration that includes this
-- file; released migrations hold their own frozen copy (see sql/doc.go).
--
-- Below, the notes written with the versions the current definitions come
-- from, newest first. They name the files as they were then; each
-- migration's frozen SQL under sql/migrations holds the whole text.

-- Notes of migration 027 (wakeup.sql in its frozen SQL):
--
-- wake-ups (migration 027, issue 37): an idle worker waited out its poll
-- interval (1 s by default) before it saw a new job. Now a write that makes
-- a job QUEUED or RETRY_SCHEDULED (an enqueue, single or batched, a
-- release, a replay, a retry, an operator's action) sends a NOTIFY on its
-- queue's wake-up channel when its transaction commits, and a worker that
-- LISTENs there claims at once; queue_next_due_in tells a worker when the
-- next job of its queue falls due (run_after, a retry delay), so it sleeps
-- until then rather than a whole poll.
--
-- Triggers, not a NOTIFY in each writer: they cover every function that
-- makes a job claimable, now and later, without editing the families that
-- write job_record. An INSERT fires one statement-level trigger, which
-- notifies once per queue of the inserted rows (a batch enqueue of 1,000
-- jobs is one call, not 1,000: a row-level INSERT trigger made a batch of
-- 100 take about twice as long as without any trigger, medians of nine
-- rounds in one transaction on a loaded machine, 63 against 28 us a job). An UPDATE fires a row-level trigger whose
-- column list (job_status, run_after) keeps a renewal, which sets
-- neither, from even evaluating its WHEN clause, and whose WHEN clause
-- stops a claim or a terminal write (job_status set to something else)
-- without a call. Unlike a BEFORE ROW UPDATE trigger (see the notes of
-- migration 017 in claim.sql), an AFTER ROW trigger takes no tuple lock
-- and writes no WAL: PostgreSQL re-reads the old row version from the page
-- the UPDATE just wrote. (An UPDATE trigger cannot be statement-level with
-- a column list: PostgreSQL refuses transition tables there.)
--
-- One notification at a time per queue: a transaction that NOTIFYs takes
-- PostgreSQL's notification lock (one for the whole cluster) at COMMIT and
-- holds it until its commit record is flushed, so notifying transactions
-- commit one after another, each waiting for its own WAL flush, instead of
-- together (group commit): four clients enqueueing one job per transaction
-- went from 5.3 to 17.1 ms of wall time per job (bench/notes.md). So a
-- transaction notifies a queue only when it gets the transaction-level
-- advisory lock (1279678293, hashtext(queue)) without waiting
-- (pg_try_advisory_xact_lock): while one transaction that notifies the
-- queue is in progress, the others that make its jobs claimable commit
-- without a notification, and the worker woken by the first claims their
-- jobs too when they committed before its claim (it claims again at once
-- after a claim that got jobs). A job that commits later than that is
-- claimed by the next notification or by the poll, as before 027. Any login
-- may take that advisory key; holding it only turns the queue's wake-ups
-- back into polling (docs/threat-model).
--
-- What a notification tells a stranger: any login may LISTEN on any
-- channel. The channel is 'leasefence_wake_' and the first 16 hex digits of
-- md5(queue name), so the queue name is not in clear, and one queue's
-- traffic wakes only the workers of that queue; the payload is empty (no
-- job id, payload, token, owner or time). PostgreSQL folds identical
-- notifications (same channel, same payload) of one transaction into one.
-- What is left is timing: a login that guesses a queue's name can watch
-- when its work arrives (docs/threat-model).

-- wake_queue_workers: AFTER UPDATE OF job_status, run_after trigger on
-- job_record, for rows that are QUEUED or RETRY_SCHEDULED after the
-- statement (the trigger's WHEN clause). Sends an empty notification on
-- the row's queue's wake-up channel, delivered when the transaction
-- commits (never when it rolls back), unless another transaction holds the
-- queue's wake-up key (1279678293, hashtext(queue name)): then it sends
-- nothing. Takes that key (transaction-level advisory lock, never waits).
CREATE OR REPLACE FUNCTION durable_jobs.wake_queue_workers()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $function$
BEGIN
    PERFORM pg_catalog.pg_notify('leasefence_wake_' || pg_catalog.left(pg_catalog.md5(NEW.queue_name), 16), '')
    WHERE pg_catalog.pg_try_advisory_xact_lock(1279678293, pg_catalog.hashtext(NEW.queue_name));
    RETURN NULL;
END;
$function$;

ALTER FUNCTION durable_jobs.wake_queue_workers() OWNER TO durable_job_claim_owner;
REVOKE ALL ON FUNCTION durable_jobs.wake_queue_workers() FROM PUBLIC;

CREATE OR REPLACE TRIGGER job_record_wake_workers
    AFTER UPDATE OF job_status, run_after ON durable_jobs.job_record
    FOR EACH ROW
    WHEN (NEW.job_status IN ('QUEUED', 'RETRY_SCHEDULED'))
    EXECUTE FUNCTION durable_jobs.wake_queue_workers();

-- wake_queue_workers_after_insert: AFTER INSERT statement-level trigger on
-- job_record (the transition table inserted_jobs): for each queue of the
-- inserted rows that are QUEUED or RETRY_SCHEDULED, wake_queue_workers'
-- notification, under the same wake-up key.
CREATE OR REPLACE FUNCTION durable_jobs.wake_queue_workers_after_insert()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $function$
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
$function$;

ALTER FUNCTION durable_jobs.wake_queue_workers_after_insert() OWNER TO durable_job_claim_owner;
REVOKE ALL ON FUNCTION durable_jobs.wake_queue_workers_after_insert() FROM PUBLIC;

CREATE OR REPLACE TRIGGER job_record_wake_workers_after_insert
    AFTER INSERT ON durable_jobs.job_record
    REFERENCING NEW TABLE AS inserted_jobs
    FOR EACH STATEMENT
    EXECUTE FUNCTION durable_jobs.wake_queue_workers_after_insert();

-- queue_next_due_in: how long until the next QUEUED or RETRY_SCHEDULED job
-- of a queue falls due by database time: zero when one is due now, NULL
-- when the queue has none. An absolute interval (seconds, no day part).
-- A worker that found nothing to claim sleeps that long (at most its poll
-- interval) instead of a whole poll. Expired leases are not counted: a
-- worker finds those at its next poll. Reads one entry of the index
-- job_record_claimable_queue_order; takes no lock. Raises LF003 for a
-- malformed queue name. Answers nothing else about any job.
CREATE OR REPLACE FUNCTION durable_jobs.queue_next_due_in(p_queue_name text)
RETURNS interval
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $function$
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
$function$;

ALTER FUNCTION durable_jobs.queue_next_due_in(text) OWNER TO durable_job_claim_owner;
REVOKE ALL ON FUNCTION durable_jobs.queue_next_due_in(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.queue_next_due_in(text) TO durable_job_worker;

SELECT durable_jobs.lock_evidence_order();
INSERT INTO durable_jobs.control_evidence_record (evidence_kind, queue_name, previous_values, new_values, change_reason)
VALUES ('migration_reverted', NULL, NULL, '{"migration_version": 32, "migration_name": "032_lighter_claims"}',
        COALESCE(NULLIF(pg_catalog.current_setting('leasefence.migration_reason', true), ''),
                 'leasefence bundle migration rolled back'));
