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
