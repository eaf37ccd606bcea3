-- set_queue_lease_policy: sets one queue's lease policy ('*' is the default).
-- Refused with LF003 unless the caller's transaction is READ COMMITTED (an
-- older snapshot would record wrong previous values). Intervals are stored
-- as plain durations in seconds ('1 day' is stored as '24:00:00'); an
-- interval with a month part or with day and time parts of opposite signs is
-- refused. Valid only when every value is non-NULL, 1 s <= lease <= 24 h,
-- 100 ms <= renewal interval <= lease / 3, lease <= max claim lifetime <= 7 d,
-- the reason is plain text (is_plain_change_reason) and the queue name is '*'
-- or well-formed; else LF002 and nothing changes. Appends control evidence
-- (old and new values, reason, session_user, database time), and a
-- renewal_enablement_changed record when the queue's effective enablement
-- flips. Affects the next claim or renewal, never an expiry already granted.
-- Locks: the evidence-order lock (lock_evidence_order) before it reads the
-- previous policy, so concurrent changes run one after the other and each
-- records exactly the policy the one before it committed; the wait is bounded
-- by lock_timeout = 10 s (then 55P03, nothing changed), and the caller's
-- transaction may then stay idle for at most 60 s
-- (idle_in_transaction_session_timeout, set for the rest of the transaction
-- unless the session's own bound is shorter) before the server ends it, so a
-- held change blocks others for a bounded time.
CREATE OR REPLACE FUNCTION durable_jobs.set_queue_lease_policy(p_queue_name text, p_lease_duration interval,
    p_renewal_interval interval, p_max_claim_lifetime interval, p_renewal_enabled boolean, p_change_reason text)
RETURNS void
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET TimeZone = 'UTC'
SET lock_timeout = '10s'
AS $function$
DECLARE
    v_lease_duration interval := durable_jobs.absolute_duration(p_lease_duration);
    v_renewal_interval interval := durable_jobs.absolute_duration(p_renewal_interval);
    v_max_claim_lifetime interval := durable_jobs.absolute_duration(p_max_claim_lifetime);
    v_previous jsonb;
    v_previous_enabled boolean;
    v_new jsonb;
    v_idle_timeout_ms bigint;
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

    PERFORM durable_jobs.lock_evidence_order();
    -- Bound how long the caller's transaction may now sit idle holding the
    -- lock: 60 s, unless the session already has a shorter bound.
    SELECT s.setting::bigint INTO STRICT v_idle_timeout_ms
    FROM pg_catalog.pg_settings s WHERE s.name = 'idle_in_transaction_session_timeout';
    IF v_idle_timeout_ms = 0 OR v_idle_timeout_ms > 60000 THEN
        PERFORM pg_catalog.set_config('idle_in_transaction_session_timeout', '60s', true);
    END IF;

    -- The queue's effective policy before the change: its own row, else the
    -- default, read after the lock so it is what the last change committed.
    SELECT pg_catalog.jsonb_build_object('policy_queue_name', p.queue_name, 'lease_duration', p.lease_duration,
               'renewal_interval', p.renewal_interval, 'max_claim_lifetime', p.max_claim_lifetime,
               'renewal_enabled', p.renewal_enabled),
           p.renewal_enabled
    INTO v_previous, v_previous_enabled
    FROM durable_jobs.queue_lease_policy p
    WHERE p.queue_name IN (p_queue_name, '*')
    ORDER BY p.queue_name = '*'
    LIMIT 1;

    INSERT INTO durable_jobs.queue_lease_policy AS p
        (queue_name, lease_duration, renewal_interval, max_claim_lifetime, renewal_enabled, changed_at, changed_by_role)
    VALUES (p_queue_name, v_lease_duration, v_renewal_interval, v_max_claim_lifetime, p_renewal_enabled,
            pg_catalog.clock_timestamp(), SESSION_USER)
    ON CONFLICT (queue_name) DO UPDATE
    SET lease_duration = EXCLUDED.lease_duration, renewal_interval = EXCLUDED.renewal_interval,
        max_claim_lifetime = EXCLUDED.max_claim_lifetime, renewal_enabled = EXCLUDED.renewal_enabled,
        changed_at = EXCLUDED.changed_at, changed_by_role = EXCLUDED.changed_by_role;

    v_new := pg_catalog.jsonb_build_object('policy_queue_name', p_queue_name, 'lease_duration', v_lease_duration,
                 'renewal_interval', v_renewal_interval, 'max_claim_lifetime', v_max_claim_lifetime,
                 'renewal_enabled', p_renewal_enabled);
    INSERT INTO durable_jobs.control_evidence_record (evidence_kind, queue_name, previous_values, new_values, change_reason)
    VALUES ('lease_policy_changed', p_queue_name, v_previous, v_new, p_change_reason);
    IF v_previous_enabled IS DISTINCT FROM p_renewal_enabled THEN
        INSERT INTO durable_jobs.control_evidence_record (evidence_kind, queue_name, previous_values, new_values, change_reason)
        VALUES ('renewal_enablement_changed', p_queue_name,
                pg_catalog.jsonb_build_object('renewal_enabled', v_previous_enabled),
                pg_catalog.jsonb_build_object('renewal_enabled', p_renewal_enabled), p_change_reason);
    END IF;
END;
$function$;

-- record_deployment_version: appends deployment_recorded control evidence
-- (version, reason, session_user, database time) so a release can be tied to
-- the database it runs against. Not part of the runtime contract: no runtime
-- role may execute it, only the role that applies the bundle (the deploying
-- pipeline). Takes the evidence-order lock (lock_evidence_order; lock_timeout
-- 10 s, then 55P03). Raises LF003 for a malformed version
-- (^[A-Za-z0-9][A-Za-z0-9._+-]{0,63}$) or a reason that is not plain text
-- (is_plain_change_reason: 1 to 500 characters, not blank, no control or
-- bidirectional-control characters).
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
    PERFORM durable_jobs.lock_evidence_order();
    INSERT INTO durable_jobs.control_evidence_record (evidence_kind, queue_name, previous_values, new_values, change_reason)
    VALUES ('deployment_recorded', NULL, NULL,
            pg_catalog.jsonb_build_object('deployment_version', p_deployment_version), p_change_reason);
END;
$function$;

ALTER FUNCTION durable_jobs.set_queue_lease_policy(text, interval, interval, interval, boolean, text) OWNER TO durable_job_policy_owner;
ALTER FUNCTION durable_jobs.record_deployment_version(text, text) OWNER TO durable_job_policy_owner;
REVOKE ALL ON FUNCTION durable_jobs.set_queue_lease_policy(text, interval, interval, interval, boolean, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION durable_jobs.record_deployment_version(text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.set_queue_lease_policy(text, interval, interval, interval, boolean, text) TO durable_job_operator;
GRANT EXECUTE ON FUNCTION durable_jobs.record_deployment_version(text, text) TO CURRENT_USER;
