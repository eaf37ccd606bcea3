-- Lease policy and deployment records (operators).
--
-- The current definition of each function of this family, edited in place.
-- A change reaches databases through a new migration that includes this
-- file; released migrations hold their own frozen copy (see sql/doc.go).
--
-- Below, the notes written with the versions the current definitions come
-- from, newest first. They name the files as they were then; each
-- migration's frozen SQL under sql/migrations holds the whole text.

-- Notes of migration 016 (policy_v4.sql in its frozen SQL):
--
-- Policy family, version 4 (migration 016): adds update_queue_lease_policy;
-- every other function of the family stays as policy_v3.sql installs it.
-- The queue's effective policy is found with the rule function
-- effective_lease_policy_queue (rules.sql).

-- Notes of migration 006 (policy_v3.sql in its frozen SQL):
--
-- Policy family, version 3 (the evidence-chain migration, *_evidence_chain.sql). Policy evidence now comes from
-- the change itself (record_policy_change, a trigger on queue_lease_policy,
-- evidence_guard_v2.sql): the functions here only validate, set the
-- transaction-local change settings the trigger records and change the
-- table. Every change record is structured: a ticket, an optional approver
-- and a reason refused when it looks like personal data or a secret.

-- set_queue_lease_policy (the contract's signature): sets one queue's lease
-- policy ('*' is the default); see change_queue_lease_policy for the rules.
-- The ticket is parsed from a leading 'ABC-123:' of the reason (none when
-- the reason has no such prefix); no approver.
CREATE OR REPLACE FUNCTION durable_jobs.set_queue_lease_policy(p_queue_name text, p_lease_duration interval,
    p_renewal_interval interval, p_max_claim_lifetime interval, p_renewal_enabled boolean, p_change_reason text)
RETURNS void
LANGUAGE sql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
BEGIN ATOMIC
    SELECT durable_jobs.change_queue_lease_policy(p_queue_name, p_lease_duration, p_renewal_interval,
        p_max_claim_lifetime, p_renewal_enabled, p_change_reason, NULL, NULL);
END;

-- set_queue_lease_policy (structured overload): the same with an explicit
-- ticket, required (^[A-Z][A-Z0-9]+-[0-9]+$), and an approver login (NULL
-- for none; never the caller's own login); LF002 otherwise.
CREATE OR REPLACE FUNCTION durable_jobs.set_queue_lease_policy(p_queue_name text, p_lease_duration interval,
    p_renewal_interval interval, p_max_claim_lifetime interval, p_renewal_enabled boolean, p_change_reason text,
    p_change_ticket text, p_change_approver text)
RETURNS void
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $function$
BEGIN
    IF p_change_ticket IS NULL THEN
        RAISE EXCEPTION 'invalid change record' USING ERRCODE = 'LF002',
            DETAIL = 'This overload needs a change ticket matching ^[A-Z][A-Z0-9]+-[0-9]+$.';
    END IF;
    PERFORM durable_jobs.change_queue_lease_policy(p_queue_name, p_lease_duration, p_renewal_interval,
        p_max_claim_lifetime, p_renewal_enabled, p_change_reason, p_change_ticket, p_change_approver);
END;
$function$;

ALTER FUNCTION durable_jobs.set_queue_lease_policy(text, interval, interval, interval, boolean, text) OWNER TO durable_job_policy_owner;
REVOKE ALL ON FUNCTION durable_jobs.set_queue_lease_policy(text, interval, interval, interval, boolean, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.set_queue_lease_policy(text, interval, interval, interval, boolean, text) TO durable_job_operator;
ALTER FUNCTION durable_jobs.set_queue_lease_policy(text, interval, interval, interval, boolean, text, text, text) OWNER TO durable_job_policy_owner;
REVOKE ALL ON FUNCTION durable_jobs.set_queue_lease_policy(text, interval, interval, interval, boolean, text, text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.set_queue_lease_policy(text, interval, interval, interval, boolean, text, text, text) TO durable_job_operator;

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
CREATE OR REPLACE FUNCTION durable_jobs.update_queue_lease_policy(p_queue_name text, p_lease_duration interval,
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

-- change_queue_lease_policy: the body of both set_queue_lease_policy
-- overloads (not granted to anyone; they run it as durable_job_policy_owner).
-- Refused with LF003 unless the caller's transaction is READ COMMITTED (an
-- older snapshot would record wrong previous values). Intervals are stored
-- as plain durations in seconds ('1 day' is stored as '24:00:00'); an
-- interval with a month part or with day and time parts of opposite signs is
-- refused. Valid only when every value is non-NULL, 1 s <= lease <= 24 h,
-- 100 ms <= renewal interval <= lease / 3, lease <= max claim lifetime <= 7 d,
-- the queue name is '*' or well-formed and the change record is structured
-- (require_structured_change: a plain reason that does not look like
-- personal data or a secret, a ticket matching ^[A-Z][A-Z0-9]+-[0-9]+$ when
-- given, else parsed from a leading 'ABC-123:' of the reason, an approver
-- that is another existing login when given); else LF002 and nothing
-- changes. It sets leasefence.change_reason, leasefence.change_ticket and
-- leasefence.change_approver for the upsert only (cleared after it), and the
-- trigger record_policy_change appends the evidence (old and new values,
-- reason, ticket, approver, session_user, database time; a
-- renewal_enablement_changed record when the effective enablement flips).
-- Affects the next claim or renewal, never an expiry already granted.
-- Locks: the evidence-order lock (lock_evidence_order) before it changes the
-- policy, so concurrent changes run one after the other and each records
-- exactly the policy the one before it committed; the wait is bounded by
-- lock_timeout = 10 s (then 55P03, nothing changed), and the caller's
-- transaction may then stay idle for at most 60 s
-- (idle_in_transaction_session_timeout, set for the rest of the transaction
-- unless the session's own bound is shorter) before the server ends it.
CREATE OR REPLACE FUNCTION durable_jobs.change_queue_lease_policy(p_queue_name text, p_lease_duration interval,
    p_renewal_interval interval, p_max_claim_lifetime interval, p_renewal_enabled boolean, p_change_reason text,
    p_change_ticket text, p_change_approver text)
RETURNS void
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, pg_temp
SET TimeZone = 'UTC'
SET lock_timeout = '10s'
AS $function$
DECLARE
    v_lease_duration interval := durable_jobs.absolute_duration(p_lease_duration);
    v_renewal_interval interval := durable_jobs.absolute_duration(p_renewal_interval);
    v_max_claim_lifetime interval := durable_jobs.absolute_duration(p_max_claim_lifetime);
    v_ticket text := COALESCE(p_change_ticket, pg_catalog.substring(p_change_reason, '^([A-Z][A-Z0-9]+-[0-9]+):'));
BEGIN
    IF pg_catalog.current_setting('transaction_isolation') <> 'read committed' THEN
        RAISE EXCEPTION 'set_queue_lease_policy must run in a READ COMMITTED transaction' USING
            ERRCODE = 'LF003',
            HINT = 'A REPEATABLE READ or SERIALIZABLE snapshot may predate a concurrent change; use READ COMMITTED.';
    END IF;
    IF p_queue_name IS DISTINCT FROM '*' THEN
        PERFORM durable_jobs.require_well_formed('queue_name', p_queue_name, 'LF002');
    END IF;
    IF p_lease_duration IS NULL OR p_renewal_interval IS NULL OR p_max_claim_lifetime IS NULL
       OR p_renewal_enabled IS NULL OR p_change_reason IS NULL
       OR p_lease_duration NOT BETWEEN interval '1 second' AND interval '24 hours'
       OR p_renewal_interval < interval '100 milliseconds' OR p_renewal_interval > p_lease_duration / 3
       OR p_max_claim_lifetime < p_lease_duration OR p_max_claim_lifetime > interval '168 hours'
       OR p_change_reason !~ '[^[:space:]]' OR pg_catalog.length(p_change_reason) > 500 THEN
        RAISE EXCEPTION 'invalid lease policy' USING
            ERRCODE = 'LF002',
            DETAIL = 'Need 1 second <= lease_duration <= 24 hours, 100 milliseconds <= renewal_interval <= lease_duration / 3, '
                  || 'lease_duration <= max_claim_lifetime <= 7 days, renewal_enabled set, and a change reason of 1 to 500 characters.';
    END IF;
    IF v_lease_duration IS NULL OR v_renewal_interval IS NULL OR v_max_claim_lifetime IS NULL
       OR NOT durable_jobs.is_plain_change_reason(p_change_reason) THEN
        RAISE EXCEPTION 'invalid lease policy' USING
            ERRCODE = 'LF002',
            DETAIL = 'Need plain durations (no month or year part, day and time parts of one sign) and a change reason '
                  || 'without control or bidirectional-control characters.';
    END IF;
    PERFORM durable_jobs.require_structured_change(p_change_reason, v_ticket, p_change_approver);

    -- Taken again (a no-op) after require_structured_change took it, so the
    -- order does not depend on that helper; it also bounds how long the
    -- caller's transaction may now sit idle holding it.
    PERFORM durable_jobs.lock_evidence_order();

    -- What the trigger record_policy_change records with the change.
    PERFORM pg_catalog.set_config('leasefence.change_reason', p_change_reason, true);
    PERFORM pg_catalog.set_config('leasefence.change_ticket', COALESCE(v_ticket, ''), true);
    PERFORM pg_catalog.set_config('leasefence.change_approver', COALESCE(p_change_approver, ''), true);
    INSERT INTO durable_jobs.queue_lease_policy AS p
        (queue_name, lease_duration, renewal_interval, max_claim_lifetime, renewal_enabled, changed_at, changed_by_role)
    VALUES (p_queue_name, v_lease_duration, v_renewal_interval, v_max_claim_lifetime, p_renewal_enabled,
            pg_catalog.clock_timestamp(), SESSION_USER)
    ON CONFLICT (queue_name) DO UPDATE
    SET lease_duration = EXCLUDED.lease_duration, renewal_interval = EXCLUDED.renewal_interval,
        max_claim_lifetime = EXCLUDED.max_claim_lifetime, renewal_enabled = EXCLUDED.renewal_enabled,
        changed_at = EXCLUDED.changed_at, changed_by_role = EXCLUDED.changed_by_role;
    PERFORM pg_catalog.set_config('leasefence.change_reason', '', true);
    PERFORM pg_catalog.set_config('leasefence.change_ticket', '', true);
    PERFORM pg_catalog.set_config('leasefence.change_approver', '', true);
END;
$function$;

ALTER FUNCTION durable_jobs.change_queue_lease_policy(text, interval, interval, interval, boolean, text, text, text) OWNER TO durable_job_policy_owner;
REVOKE ALL ON FUNCTION durable_jobs.change_queue_lease_policy(text, interval, interval, interval, boolean, text, text, text) FROM PUBLIC;

-- record_deployment_version: appends deployment_recorded control evidence
-- (version, reason, session_user, database time). Not part of the runtime
-- contract: only the role that applies the bundle may execute it. Raises
-- LF003 for a malformed version (^[A-Za-z0-9][A-Za-z0-9._+-]{0,63}$) or a
-- reason that is not plain text (is_plain_change_reason), and LF002 for a
-- reason that looks like personal data or a secret (looks_personal_or_secret).
-- record_deployment records the commit or artifact digest, the ticket and
-- the person as well. Takes the evidence-order lock (lock_timeout 10 s).
CREATE OR REPLACE FUNCTION durable_jobs.record_deployment_version(p_deployment_version text, p_change_reason text)
RETURNS void
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET lock_timeout = '10s'
AS $function$
BEGIN
    IF p_deployment_version IS NULL OR p_deployment_version !~ '^[A-Za-z0-9][A-Za-z0-9._+-]{0,63}$' THEN
        RAISE EXCEPTION 'malformed deployment version' USING ERRCODE = 'LF003',
            HINT = 'deployment version must match ^[A-Za-z0-9][A-Za-z0-9._+-]{0,63}$';
    END IF;
    IF p_change_reason IS NULL OR NOT durable_jobs.is_plain_change_reason(p_change_reason) THEN
        RAISE EXCEPTION 'change reason must be 1 to 500 characters, not blank, without control or bidirectional-control characters'
            USING ERRCODE = 'LF003';
    END IF;
    PERFORM durable_jobs.require_structured_change(p_change_reason, NULL, NULL);
    PERFORM durable_jobs.lock_evidence_order();
    INSERT INTO durable_jobs.control_evidence_record (evidence_kind, queue_name, previous_values, new_values, change_reason)
    VALUES ('deployment_recorded', NULL, NULL,
            pg_catalog.jsonb_build_object('deployment_version', p_deployment_version), p_change_reason);
END;
$function$;

ALTER FUNCTION durable_jobs.record_deployment_version(text, text) OWNER TO durable_job_policy_owner;
REVOKE ALL ON FUNCTION durable_jobs.record_deployment_version(text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.record_deployment_version(text, text) TO CURRENT_USER;

-- record_deployment: appends deployment_recorded control evidence with the
-- deployed version, the commit (40 or 64 hex digits) or artifact digest
-- (sha256:<64 hex>) it was built from, the person who deployed it (a
-- directory handle, ^[a-z][a-z0-9._-]{0,62}$, never a full name or e-mail),
-- the change ticket (^[A-Z][A-Z0-9]+-[0-9]+$) and a reason
-- (require_structured_change). Raises LF002, naming the field, for any
-- value that does not match; nothing is written then. Only the role that
-- applies the bundle may execute it. Takes the evidence-order lock.
CREATE OR REPLACE FUNCTION durable_jobs.record_deployment(p_deployment_version text, p_source_digest text, p_deployed_by text,
    p_change_ticket text, p_change_reason text)
RETURNS void
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET lock_timeout = '10s'
AS $function$
BEGIN
    IF p_deployment_version IS NULL OR p_deployment_version !~ '^[A-Za-z0-9][A-Za-z0-9._+-]{0,63}$'
       OR p_source_digest IS NULL OR p_source_digest !~ '^([0-9a-f]{40}|[0-9a-f]{64}|sha256:[0-9a-f]{64})$'
       OR p_deployed_by IS NULL OR p_deployed_by !~ '^[a-z][a-z0-9._-]{0,62}$'
       OR p_change_ticket IS NULL THEN
        RAISE EXCEPTION 'invalid deployment record' USING ERRCODE = 'LF002',
            DETAIL = 'Need a version matching ^[A-Za-z0-9][A-Za-z0-9._+-]{0,63}$, a commit (40 or 64 hex digits) or '
                  || 'artifact digest (sha256:<64 hex digits>), a person handle matching ^[a-z][a-z0-9._-]{0,62}$ and a ticket.';
    END IF;
    PERFORM durable_jobs.require_structured_change(p_change_reason, p_change_ticket, NULL);
    PERFORM durable_jobs.lock_evidence_order();
    INSERT INTO durable_jobs.control_evidence_record
        (evidence_kind, queue_name, previous_values, new_values, change_reason, change_ticket)
    VALUES ('deployment_recorded', NULL, NULL,
            pg_catalog.jsonb_build_object('deployment_version', p_deployment_version, 'source_digest', p_source_digest,
                                          'deployed_by', p_deployed_by),
            p_change_reason, p_change_ticket);
END;
$function$;

ALTER FUNCTION durable_jobs.record_deployment(text, text, text, text, text) OWNER TO durable_job_policy_owner;
REVOKE ALL ON FUNCTION durable_jobs.record_deployment(text, text, text, text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.record_deployment(text, text, text, text, text) TO CURRENT_USER;
