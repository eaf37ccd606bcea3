-- leasefence 016: one rule, one place (issue 18, items 4 and 7).
--
-- * durable_jobs.update_queue_lease_policy(...) (policy_v4.sql) changes only
--   the lease-policy settings given and keeps the others from the queue's
--   effective policy, read inside the function after the evidence-order
--   lock: a partial change (leasectl policy set) can no longer overwrite a
--   change committed between reading the policy and writing it. Granted to
--   durable_job_operator like set_queue_lease_policy.
-- * Rule functions (rules.sql), each rule written once: queue_name_pattern,
--   queue_name_is_well_formed, worker_owner_id_pattern,
--   worker_owner_id_is_well_formed and effective_lease_policy_queue (which
--   policy row applies: the queue's own, else '*'). SQL functions without
--   SECURITY DEFINER or SET, so PostgreSQL inlines them: the claim and
--   renewal paths make no call. EXECUTE only to the definer roles that use
--   them. The table CHECKs keep their literal queue pattern (rules.sql says
--   why; 25_rules.sql checks it is queue_name_pattern()).
-- * The functions that wrote a rule themselves now use the rule function:
--   require_well_formed (input_checks_v3.sql), claim_next_jobs
--   (claim_v4.sql), renew_job_lease and renew_job_leases (renewal_v5.sql),
--   complete_jobs (terminal_batch_v2.sql), lease_health_by_queue
--   (audit_v5.sql) and update_queue_lease_policy.
-- * Every fenced lookup of one claim's row (renewal_v5.sql, the locking
--   probe of terminal_batch_v2.sql, lock_fenced_claim of terminal_v4.sql
--   behind complete_job, retry_job, fail_job and release_job_claim, and
--   replay_job of producer_v3.sql) checks the status as text beside the
--   primary key, so statistics gathered
--   before a burst of claims (the partial indexes of RUNNING rows then look
--   empty) can no longer make each call read every live lease of the
--   queue through job_record_running_by_queue: found by the heartbeat at
--   100,000 leases, where renew_job_leases of 1,000 claims took about 9 s.
-- The down part puts every previous version back (claim_v3.sql,
-- renewal_v4.sql, terminal_batch.sql, terminal_v2.sql and terminal_v3.sql
-- (lock_fenced_claim v2, release_job_claim v3), producer_v2.sql, audit_v4.sql, require_well_formed of
-- input_checks_v2.sql inline) and drops the new functions.

-- Rules, version 1 (migration 016): one SQL function for each rule that
-- several functions apply, so the rule is written in one place.
--
-- Each is LANGUAGE sql with a body bound at creation (RETURN / BEGIN
-- ATOMIC), not SECURITY DEFINER and without a SET clause, so that
-- PostgreSQL inlines it into the statement that uses it: the claim and
-- renewal paths pay no function call for it (sql/tests/25_rules.sql checks
-- that no call is made). Every name is schema-qualified and every operator
-- written OPERATOR(pg_catalog.x), so the body means the same under any
-- search_path. PostgreSQL inlines a function only for a role that may
-- execute it, so EXECUTE goes to the definer roles whose functions use it
-- (for the patterns, every role that may run require_well_formed), never
-- to PUBLIC or a runtime role. The table CHECKs that repeat the queue
-- pattern (job_record, queue_lease_policy, queue_retention_policy) keep
-- their literal pattern: a CHECK that called the rule would be evaluated
-- on every row written, by every role that writes job_record (each would
-- then need EXECUTE), and a later CREATE OR REPLACE of the rule would change
-- what the CHECK means without checking the rows already stored.
-- 25_rules.sql checks that the three CHECKs hold exactly
-- queue_name_pattern().

-- queue_name_pattern: the contract's queue-name pattern. Takes no lock.
CREATE FUNCTION durable_jobs.queue_name_pattern()
RETURNS text
LANGUAGE sql
IMMUTABLE PARALLEL SAFE
RETURN '^[a-z][a-z0-9_.:-]{0,62}$';

-- queue_name_is_well_formed: p_queue_name matches queue_name_pattern byte
-- for byte (COLLATE "C"). NULL in, NULL out. Takes no lock.
CREATE FUNCTION durable_jobs.queue_name_is_well_formed(p_queue_name text)
RETURNS boolean
LANGUAGE sql
IMMUTABLE PARALLEL SAFE
RETURN (p_queue_name COLLATE "C") OPERATOR(pg_catalog.~) durable_jobs.queue_name_pattern();

-- worker_owner_id_pattern: the contract's worker owner id pattern. Takes no
-- lock.
CREATE FUNCTION durable_jobs.worker_owner_id_pattern()
RETURNS text
LANGUAGE sql
IMMUTABLE PARALLEL SAFE
RETURN '^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$';

-- worker_owner_id_is_well_formed: p_worker_owner_id matches
-- worker_owner_id_pattern byte for byte (COLLATE "C"). NULL in, NULL out.
-- Takes no lock.
CREATE FUNCTION durable_jobs.worker_owner_id_is_well_formed(p_worker_owner_id text)
RETURNS boolean
LANGUAGE sql
IMMUTABLE PARALLEL SAFE
RETURN (p_worker_owner_id COLLATE "C") OPERATOR(pg_catalog.~) durable_jobs.worker_owner_id_pattern();

-- effective_lease_policy_queue: which row of queue_lease_policy applies to
-- a queue: the queue's own name when it has a policy, else '*' (then no
-- row applies when '*' is missing too). One row, one column, so a caller
-- reads the policy columns it may read itself (each definer role may read
-- only some of them) by joining queue_lease_policy on it. A set-returning
-- function because PostgreSQL inlines a SQL function with a subquery only
-- where it is used in FROM (not STRICT, not VOLATILE). Reads as of the
-- calling statement's snapshot; takes no lock.
CREATE FUNCTION durable_jobs.effective_lease_policy_queue(p_queue_name text)
RETURNS TABLE (policy_queue_name text)
LANGUAGE sql
STABLE PARALLEL SAFE
BEGIN ATOMIC
    SELECT COALESCE(
        (SELECT q.queue_name FROM durable_jobs.queue_lease_policy q WHERE q.queue_name OPERATOR(pg_catalog.=) p_queue_name),
        '*');
END;

REVOKE ALL ON FUNCTION durable_jobs.queue_name_pattern() FROM PUBLIC;
REVOKE ALL ON FUNCTION durable_jobs.queue_name_is_well_formed(text) FROM PUBLIC;
REVOKE ALL ON FUNCTION durable_jobs.worker_owner_id_pattern() FROM PUBLIC;
REVOKE ALL ON FUNCTION durable_jobs.worker_owner_id_is_well_formed(text) FROM PUBLIC;
REVOKE ALL ON FUNCTION durable_jobs.effective_lease_policy_queue(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.queue_name_pattern() TO
    durable_job_producer_owner, durable_job_claim_owner, durable_job_renewal_owner,
    durable_job_terminal_owner, durable_job_policy_owner, durable_job_retention_owner, durable_job_audit_owner;
GRANT EXECUTE ON FUNCTION durable_jobs.queue_name_is_well_formed(text) TO
    durable_job_producer_owner, durable_job_claim_owner, durable_job_renewal_owner,
    durable_job_terminal_owner, durable_job_policy_owner, durable_job_retention_owner, durable_job_audit_owner;
GRANT EXECUTE ON FUNCTION durable_jobs.worker_owner_id_pattern() TO
    durable_job_producer_owner, durable_job_claim_owner, durable_job_renewal_owner,
    durable_job_terminal_owner, durable_job_policy_owner, durable_job_retention_owner, durable_job_audit_owner;
GRANT EXECUTE ON FUNCTION durable_jobs.worker_owner_id_is_well_formed(text) TO
    durable_job_producer_owner, durable_job_claim_owner, durable_job_renewal_owner,
    durable_job_terminal_owner, durable_job_policy_owner, durable_job_retention_owner, durable_job_audit_owner;
GRANT EXECUTE ON FUNCTION durable_jobs.effective_lease_policy_queue(text) TO
    durable_job_claim_owner, durable_job_renewal_owner, durable_job_policy_owner, durable_job_audit_owner;

-- Input checks, version 3 (migration 016): only require_well_formed
-- changes; it takes the queue-name and owner-id patterns from the rule
-- functions (rules.sql) instead of writing them again. Every other function
-- of the family stays as input_checks_v2.sql installs it.

-- require_well_formed: private helper that checks one bounded identifier
-- (queue name, worker owner id or failure reason code) against the
-- contract's pattern and raises p_sqlstate (LF003 by default, LF002 from
-- set_queue_lease_policy) when it is NULL or malformed. The message names
-- the kind of value, never the value itself. A value with a collation of
-- the caller's is malformed too. Takes no lock.
CREATE OR REPLACE FUNCTION durable_jobs.require_well_formed(p_value_kind text, p_value text, p_sqlstate text DEFAULT 'LF003')
RETURNS void
LANGUAGE plpgsql
IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $function$
DECLARE
    v_pattern text;
BEGIN
    v_pattern := CASE p_value_kind
        WHEN 'queue_name' THEN durable_jobs.queue_name_pattern()
        WHEN 'worker_owner_id' THEN durable_jobs.worker_owner_id_pattern()
        WHEN 'failure_reason_code' THEN '^[a-z][a-z0-9_]{0,62}$'
    END;
    IF v_pattern IS NULL THEN
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
    IF p_value IS NULL OR p_value COLLATE "C" !~ v_pattern THEN
        RAISE EXCEPTION USING
            ERRCODE = p_sqlstate,
            MESSAGE = pg_catalog.format('malformed %s', p_value_kind),
            HINT = pg_catalog.format('%s must match %s', p_value_kind, v_pattern);
    END IF;
END;
$function$;

-- Policy family, version 4 (migration 016): adds update_queue_lease_policy;
-- every other function of the family stays as policy_v3.sql installs it.
-- The queue's effective policy is found with the rule function
-- effective_lease_policy_queue (rules.sql).

-- update_queue_lease_policy: changes only the settings given (a NULL
-- setting keeps its current value) and returns the queue's policy as
-- written. The settings left out are read, after the evidence-order lock is
-- taken, from the queue's effective policy (its own row, else the default
-- '*'), so a change committed by another session before this one got the
-- lock is kept, never overwritten with a value read earlier (a client that
-- reads the policy and then calls set_queue_lease_policy can lose it). The
-- filled-in policy is then checked and written exactly as
-- change_queue_lease_policy does (same LF002 bounds, change record rules,
-- evidence, idle bound). The ticket, when NULL, is parsed from a leading
-- 'ABC-123:' of the reason; the approver may be NULL. Refused, nothing
-- changed: LF003 unless the transaction is READ COMMITTED; LF002 for a
-- malformed queue name, a reason or change record that is not valid
-- (checked before the lock), or a setting left out when the queue has no
-- policy of its own and there is no default '*'. Locks: the evidence-order
-- lock (lock_timeout 10 s, then 55P03), then the queue's policy row.
CREATE FUNCTION durable_jobs.update_queue_lease_policy(p_queue_name text, p_lease_duration interval,
    p_renewal_interval interval, p_max_claim_lifetime interval, p_renewal_enabled boolean, p_change_reason text,
    p_change_ticket text, p_change_approver text)
RETURNS TABLE (queue_name text, lease_duration interval, renewal_interval interval, max_claim_lifetime interval,
               renewal_enabled boolean, changed_at timestamptz, changed_by_role text)
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET lock_timeout = '10s'
AS $function$
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
$function$;

ALTER FUNCTION durable_jobs.update_queue_lease_policy(text, interval, interval, interval, boolean, text, text, text) OWNER TO durable_job_policy_owner;
REVOKE ALL ON FUNCTION durable_jobs.update_queue_lease_policy(text, interval, interval, interval, boolean, text, text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.update_queue_lease_policy(text, interval, interval, interval, boolean, text, text, text) TO durable_job_operator;

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

-- renewal v5 (migration 016; 012 installs renewal_v4.sql). Exactly v4,
-- except where its rules come from: the owner-id pattern is the rule
-- function worker_owner_id_is_well_formed and the queue's policy (its own,
-- else '*') is effective_lease_policy_queue (rules.sql), both inlined by
-- PostgreSQL.

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
            WHERE j.ctid = ANY (v_locked_ctids)  -- rows this call holds locked
              AND j.job_record_id = ANY (v_locked_ids)
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

-- producer v3 (migration 016; 004 installs producer_v2.sql): only
-- replay_job changes, so only it is here. Version 2 found the job's row with
-- `job_status IN ('FAILED', 'CANCELLED')` beside its primary key, which
-- implies the predicate of job_record_finished_by_age: with statistics taken
-- before the jobs finished that index looks empty and a replay read every
-- finished job through it (TestCallsOnOneJobUseThePrimaryKeyUnderStaleStatistics).
-- Owner and grants stay as version 2 set them.

-- replay_job: one FAILED or CANCELLED job back to QUEUED with its attempts
-- starting again (operators only). false for any other status or an unknown
-- id. Locks the job row. Raises LF003 for a NULL id.
CREATE OR REPLACE FUNCTION durable_jobs.replay_job(p_job_record_id bigint)
RETURNS boolean
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $function$
BEGIN
    IF p_job_record_id IS NULL THEN
        RAISE EXCEPTION 'job id is required' USING ERRCODE = 'LF003';
    END IF;
    UPDATE durable_jobs.job_record j
    SET job_status = 'QUEUED', status_changed_at = pg_catalog.clock_timestamp(),
        run_after = pg_catalog.clock_timestamp(), attempt_number = 0, failure_reason_code = NULL
    -- compared as text: statistics taken before the jobs finished must not
    -- make the partial index of finished jobs look cheaper than the key
    WHERE j.job_record_id = p_job_record_id AND j.job_status::text IN ('FAILED', 'CANCELLED');
    RETURN FOUND;
END;
$function$;

-- audit v5 (migration 016; 012 installs audit_v4.sql): only
-- lease_health_by_queue changes, and only in where the queue's policy (its
-- own, else '*') comes from: the rule function effective_lease_policy_queue
-- (rules.sql) instead of a lookup of its own. Same result, no locks.

-- lease_health_by_queue: one row per queue that has a policy or a job:
-- running jobs, leases expiring within one renewal interval, expired leases
-- still RUNNING (awaiting reclaim), reclaims, stale renewals and stale
-- releases in the last hour (tallies summed over every backend's rows, each
-- stale call under the queue it was charged to when counted: '*' holds
-- those of unknown jobs and of jobs the calling login did not claim last,
-- so a guess cannot pass for the queue's trouble), the oldest running
-- claim's age, and the database time it was read at. Computes in UTC
-- whatever the caller's TimeZone.
CREATE OR REPLACE FUNCTION durable_jobs.lease_health_by_queue()
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
               (SELECT p.renewal_interval FROM durable_jobs.effective_lease_policy_queue(q.queue_name) e
                JOIN durable_jobs.queue_lease_policy p ON p.queue_name = e.policy_queue_name) AS renewal_interval
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

ALTER FUNCTION durable_jobs.lease_health_by_queue() OWNER TO durable_job_audit_owner;
REVOKE ALL ON FUNCTION durable_jobs.lease_health_by_queue() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.lease_health_by_queue() TO durable_job_auditor;


SELECT pg_catalog.pg_advisory_xact_lock(1279655936, 1);
INSERT INTO durable_jobs.control_evidence_record (evidence_kind, queue_name, previous_values, new_values, change_reason)
VALUES ('migration_applied', NULL, NULL, '{"migration_version": 16, "migration_name": "016_one_rule_one_place"}',
        COALESCE(NULLIF(pg_catalog.current_setting('leasefence.migration_reason', true), ''), 'leasefence bundle migration'));

---- create above / drop below ----

DROP FUNCTION durable_jobs.update_queue_lease_policy(text, interval, interval, interval, boolean, text, text, text);
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

DROP FUNCTION durable_jobs.complete_jobs(text, bigint[], uuid[], jsonb[]);
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

-- enqueue_job: durably accepts a job (QUEUED) and returns its id; its payload
-- goes to job_payload_record. A repeated (queue, idempotency key) returns the
-- first job's id and creates nothing; the key is stored only as its sha256.
-- The queue is one namespace shared by every producer login: the same key
-- from another producer on the same queue returns the first job's id too.
-- Locks: the new rows; a concurrent insert of the same key is waited for.
-- Raises LF003 for malformed input (queue, NULL payload, a payload over
-- 1 MiB (pg_column_size of the jsonb), key length, attempts, a run-after that
-- is not finite or not from 2000-01-01 to before 2100-01-01 UTC).
CREATE OR REPLACE FUNCTION durable_jobs.enqueue_job(
    p_queue_name text, p_job_payload jsonb, p_idempotency_key text DEFAULT NULL,
    p_run_after timestamptz DEFAULT NULL, p_max_attempts integer DEFAULT 5)
RETURNS bigint
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $function$
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
$function$;

-- cancel_job: QUEUED, RETRY_SCHEDULED or RUNNING to CANCELLED; a running
-- job's claim becomes stale at once (status is part of the fence). false when
-- the job is already terminal or unknown. Locks the job row (waits for a
-- worker's open terminal transaction). Raises LF003 for a NULL id.
CREATE OR REPLACE FUNCTION durable_jobs.cancel_job(p_job_record_id bigint)
RETURNS boolean
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $function$
BEGIN
    IF p_job_record_id IS NULL THEN
        RAISE EXCEPTION 'job id is required' USING ERRCODE = 'LF003';
    END IF;
    UPDATE durable_jobs.job_record j
    SET job_status = 'CANCELLED', status_changed_at = pg_catalog.clock_timestamp(), lease_expires_at = NULL
    WHERE j.job_record_id = p_job_record_id AND j.job_status IN ('QUEUED', 'RETRY_SCHEDULED', 'RUNNING');
    RETURN FOUND;
END;
$function$;

-- replay_job: one FAILED or CANCELLED job back to QUEUED with its attempts
-- starting again (operators only). false for any other status or an unknown
-- id. Locks the job row. Raises LF003 for a NULL id.
CREATE OR REPLACE FUNCTION durable_jobs.replay_job(p_job_record_id bigint)
RETURNS boolean
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $function$
BEGIN
    IF p_job_record_id IS NULL THEN
        RAISE EXCEPTION 'job id is required' USING ERRCODE = 'LF003';
    END IF;
    UPDATE durable_jobs.job_record j
    SET job_status = 'QUEUED', status_changed_at = pg_catalog.clock_timestamp(),
        run_after = pg_catalog.clock_timestamp(), attempt_number = 0, failure_reason_code = NULL
    WHERE j.job_record_id = p_job_record_id AND j.job_status IN ('FAILED', 'CANCELLED');
    RETURN FOUND;
END;
$function$;

-- job_lifecycle_state: payload-blind inspection of one job. Never returns the
-- payload, the token, its digest or the owner. Zero rows for an unknown id.
-- Takes no lock. Raises LF003 for a NULL id.
CREATE OR REPLACE FUNCTION durable_jobs.job_lifecycle_state(p_job_record_id bigint)
RETURNS TABLE (job_status text, attempt_number integer, max_attempts integer, lease_fencing_generation bigint,
               lease_expires_at timestamptz, lease_renewal_count bigint, failure_reason_code text)
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
    SELECT j.job_status::text, j.attempt_number, j.max_attempts, j.lease_fencing_generation,
           j.lease_expires_at, j.lease_renewal_count, j.failure_reason_code
    FROM durable_jobs.job_record j
    WHERE j.job_record_id = p_job_record_id;
END;
$function$;

ALTER FUNCTION durable_jobs.enqueue_job(text, jsonb, text, timestamptz, integer) OWNER TO durable_job_producer_owner;
ALTER FUNCTION durable_jobs.cancel_job(bigint) OWNER TO durable_job_producer_owner;
ALTER FUNCTION durable_jobs.replay_job(bigint) OWNER TO durable_job_producer_owner;
ALTER FUNCTION durable_jobs.job_lifecycle_state(bigint) OWNER TO durable_job_producer_owner;
REVOKE ALL ON FUNCTION durable_jobs.enqueue_job(text, jsonb, text, timestamptz, integer) FROM PUBLIC;
REVOKE ALL ON FUNCTION durable_jobs.cancel_job(bigint) FROM PUBLIC;
REVOKE ALL ON FUNCTION durable_jobs.replay_job(bigint) FROM PUBLIC;
REVOKE ALL ON FUNCTION durable_jobs.job_lifecycle_state(bigint) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.enqueue_job(text, jsonb, text, timestamptz, integer) TO durable_job_producer;
GRANT EXECUTE ON FUNCTION durable_jobs.cancel_job(bigint) TO durable_job_producer;
GRANT EXECUTE ON FUNCTION durable_jobs.job_lifecycle_state(bigint) TO durable_job_producer;
GRANT EXECUTE ON FUNCTION durable_jobs.replay_job(bigint) TO durable_job_operator;

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

-- require_well_formed version 2, exactly as input_checks_v2.sql defines it.
CREATE OR REPLACE FUNCTION durable_jobs.require_well_formed(p_value_kind text, p_value text, p_sqlstate text DEFAULT 'LF003')
RETURNS void
LANGUAGE plpgsql
IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $function$
DECLARE
    v_pattern text;
BEGIN
    v_pattern := CASE p_value_kind
        WHEN 'queue_name' THEN '^[a-z][a-z0-9_.:-]{0,62}$'
        WHEN 'worker_owner_id' THEN '^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$'
        WHEN 'failure_reason_code' THEN '^[a-z][a-z0-9_]{0,62}$'
    END;
    IF v_pattern IS NULL THEN
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
    IF p_value IS NULL OR p_value COLLATE "C" !~ v_pattern THEN
        RAISE EXCEPTION USING
            ERRCODE = p_sqlstate,
            MESSAGE = pg_catalog.format('malformed %s', p_value_kind),
            HINT = pg_catalog.format('%s must match %s', p_value_kind, v_pattern);
    END IF;
END;
$function$;
DROP FUNCTION durable_jobs.effective_lease_policy_queue(text);
DROP FUNCTION durable_jobs.worker_owner_id_is_well_formed(text);
DROP FUNCTION durable_jobs.worker_owner_id_pattern();
DROP FUNCTION durable_jobs.queue_name_is_well_formed(text);
DROP FUNCTION durable_jobs.queue_name_pattern();

SELECT pg_catalog.pg_advisory_xact_lock(1279655936, 1);
INSERT INTO durable_jobs.control_evidence_record (evidence_kind, queue_name, previous_values, new_values, change_reason)
VALUES ('migration_reverted', NULL, NULL, '{"migration_version": 16, "migration_name": "016_one_rule_one_place"}',
        COALESCE(NULLIF(pg_catalog.current_setting('leasefence.migration_reason', true), ''),
                 'leasefence bundle migration rolled back'));
