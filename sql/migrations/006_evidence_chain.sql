-- leasefence 006: evidence an auditor can rely on.
--
-- * Complete: every change of queue_lease_policy, whoever makes it and
--   however, is recorded by triggers on the table (record_policy_change);
--   set_queue_lease_policy no longer writes evidence itself. The row's
--   changed_by_role and changed_at are stamped by the database.
-- * Tamper-evident: every evidence record carries record_hash =
--   sha256(previous_record_hash || content digest), chained in id order
--   (which is commit order); existing records are chained here, in id order.
-- * Structured: records carry a ticket and an approver; reasons that look
--   like personal data or a secret are refused (LF002).
-- * Migration evidence records the operator's reason (the session setting
--   leasefence.migration_reason that `leasectl migrate --reason` sets).
-- This migration's version number appears only in its two evidence records
-- below (migration_version 6).

ALTER TABLE durable_jobs.control_evidence_record
    ADD COLUMN change_ticket text CONSTRAINT control_evidence_record_ticket_format
        CHECK (change_ticket ~ '^[A-Z][A-Z0-9]+-[0-9]+$'),
    ADD COLUMN change_approver text,
    ADD COLUMN previous_record_hash bytea,
    ADD COLUMN record_hash bytea;
COMMENT ON COLUMN durable_jobs.control_evidence_record.change_ticket IS 'Change ticket (^[A-Z][A-Z0-9]+-[0-9]+$), NULL when none was given.';
COMMENT ON COLUMN durable_jobs.control_evidence_record.change_approver IS 'Login role that approved the change (never the changer), NULL when none was given.';
COMMENT ON COLUMN durable_jobs.control_evidence_record.previous_record_hash IS 'record_hash of the record before this one in id order; 32 zero bytes for the first.';
COMMENT ON COLUMN durable_jobs.control_evidence_record.record_hash IS 'sha256(previous_record_hash || evidence_content_digest(this record)): the hash chain.';

-- Evidence guard, version 2 (the evidence-chain migration, *_evidence_chain.sql): what version 1
-- (evidence_guard.sql: refuse_evidence_change, unchanged and still in force)
-- keeps append-only, this version makes tamper-evident and complete.
--
--   evidence_content_digest  sha256 of one record's content
--   chain_evidence_record    BEFORE INSERT: links each record to the one before
--   stamp_policy_change      BEFORE INSERT/UPDATE on queue_lease_policy
--   record_policy_change     AFTER INSERT/UPDATE/DELETE on queue_lease_policy:
--                            the evidence comes from the change itself
--   refuse_policy_truncate   BEFORE TRUNCATE on queue_lease_policy
--   looks_personal_or_secret, passes_luhn, require_structured_change:
--                            the checks every change record passes

-- passes_luhn: true when a string of 13 to 19 decimal digits passes the
-- Luhn check that payment card numbers carry. NULL in, NULL out.
CREATE FUNCTION durable_jobs.passes_luhn(p_digits text)
RETURNS boolean
LANGUAGE sql
IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
RETURN p_digits ~ '^[0-9]{13,19}$' AND (
    SELECT pg_catalog.sum(CASE WHEN (pg_catalog.length(p_digits) - i) % 2 = 1
                               THEN (pg_catalog.substr(p_digits, i, 1)::integer * 2) % 10
                                    + (pg_catalog.substr(p_digits, i, 1)::integer * 2) / 10
                               ELSE pg_catalog.substr(p_digits, i, 1)::integer END) % 10 = 0
    FROM pg_catalog.generate_series(1, pg_catalog.length(p_digits)) AS g(i));

-- looks_personal_or_secret: true when free text given for append-only
-- evidence looks like personal data or a secret: a Korean resident
-- registration number (\d{6}-?[1-4]\d{6}), a run of 13 to 19 digits (spaces
-- or hyphens between them allowed) that passes the Luhn check, an e-mail
-- address, a phone number (0 followed by 9 to 10 more digits in the usual
-- groups, or + and 8 or more digits), or a credential assignment
-- (password=, passwd=, pwd=, pw=, secret=, token=, api_key=, also with ':').
-- NULL in, NULL out. A heuristic: it refuses what looks like such data and
-- cannot prove its absence. Takes no lock.
CREATE FUNCTION durable_jobs.looks_personal_or_secret(p_text text)
RETURNS boolean
LANGUAGE sql
IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
RETURN p_text ~ '(^|[^0-9])[0-9]{6}-?[1-4][0-9]{6}([^0-9]|$)'
    OR p_text ~ '[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}'
    OR p_text ~ '(^|[^0-9])0[0-9]{1,2}[ .-]?[0-9]{3,4}[ .-]?[0-9]{4}([^0-9]|$)'
    OR p_text ~ '\+[0-9][0-9 .-]{7,}[0-9]'
    OR p_text ~* '(password|passwd|pwd|pw|secret|token|api[_-]?key)[[:space:]]*[=:]'
    OR EXISTS (SELECT 1
               FROM pg_catalog.regexp_matches(p_text, '[0-9](?:[ -]?[0-9]){12,18}', 'g') AS m(candidate)
               WHERE durable_jobs.passes_luhn(pg_catalog.regexp_replace(m.candidate[1], '[ -]', '', 'g')));

-- require_structured_change: raises LF002, naming the rule and never the
-- value, unless a change record is structured: a reason that is plain text
-- (is_plain_change_reason) and does not look like personal data or a secret
-- (looks_personal_or_secret); a ticket, when given, matching
-- ^[A-Z][A-Z0-9]+-[0-9]+$; an approver, when given, that is an existing
-- login role other than session_user (nobody approves their own change).
-- Takes no lock.
CREATE FUNCTION durable_jobs.require_structured_change(p_change_reason text, p_change_ticket text, p_change_approver text)
RETURNS void
LANGUAGE plpgsql
STABLE
SET search_path = pg_catalog, pg_temp
AS $function$
BEGIN
    IF p_change_reason IS NULL OR NOT durable_jobs.is_plain_change_reason(p_change_reason) THEN
        RAISE EXCEPTION 'invalid change record' USING ERRCODE = 'LF002',
            DETAIL = 'The change reason must be 1 to 500 characters, not blank, without control or bidirectional-control characters.';
    END IF;
    IF durable_jobs.looks_personal_or_secret(p_change_reason) THEN
        RAISE EXCEPTION 'invalid change record' USING ERRCODE = 'LF002',
            DETAIL = 'The change reason looks like it holds personal data or a secret (a resident registration, card or phone number, an e-mail address or a credential); evidence is append-only and kept, so give a ticket reference instead.';
    END IF;
    IF p_change_ticket IS NOT NULL AND p_change_ticket !~ '^[A-Z][A-Z0-9]+-[0-9]+$' THEN
        RAISE EXCEPTION 'invalid change record' USING ERRCODE = 'LF002',
            DETAIL = 'The change ticket must match ^[A-Z][A-Z0-9]+-[0-9]+$.';
    END IF;
    IF p_change_approver IS NOT NULL AND (p_change_approver = SESSION_USER OR NOT EXISTS (
           SELECT 1 FROM pg_catalog.pg_roles r WHERE r.rolname = p_change_approver AND r.rolcanlogin)) THEN
        RAISE EXCEPTION 'invalid change record' USING ERRCODE = 'LF002',
            DETAIL = 'The approver must be an existing login role other than the one making the change.';
    END IF;
END;
$function$;

-- evidence_content_digest: sha256 over one evidence record's content (its
-- id, kind, queue, previous and new values, reason, changed-by role,
-- recorded time as epoch seconds, ticket and approver), serialised as a
-- jsonb array's text, which is the same for the same values on every
-- server. NULL fields are part of the content. Takes no lock.
CREATE FUNCTION durable_jobs.evidence_content_digest(p_evidence_record_id bigint, p_evidence_kind text,
    p_queue_name text, p_previous_values jsonb, p_new_values jsonb, p_change_reason text, p_changed_by_role text,
    p_recorded_at timestamptz, p_change_ticket text, p_change_approver text)
RETURNS bytea
LANGUAGE sql
IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
RETURN pg_catalog.sha256(pg_catalog.convert_to(pg_catalog.jsonb_build_array(
    p_evidence_record_id, p_evidence_kind, p_queue_name, p_previous_values, p_new_values, p_change_reason,
    p_changed_by_role, (EXTRACT(epoch FROM p_recorded_at))::text, p_change_ticket, p_change_approver)::text, 'UTF8'));

-- chain_evidence_record: BEFORE INSERT trigger on control_evidence_record.
-- Under the evidence-order lock (lock_evidence_order) it sets the new
-- record's previous_record_hash to the record_hash of the record with the
-- highest id (32 zero bytes for the first) and its record_hash to
-- sha256(previous_record_hash || evidence_content_digest(...)), so chain
-- order is id order is commit order. Raises LF003 when the transaction is
-- not READ COMMITTED (an older snapshot could miss the last record) or when
-- the new id is not above every committed id (the writer drew its id before
-- taking the lock); nothing is written then.
CREATE FUNCTION durable_jobs.chain_evidence_record()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $function$
DECLARE
    v_last_id bigint;
    v_last_hash bytea;
BEGIN
    IF pg_catalog.current_setting('transaction_isolation') <> 'read committed' THEN
        RAISE EXCEPTION 'control evidence must be written in a READ COMMITTED transaction' USING ERRCODE = 'LF003',
            HINT = 'An older snapshot could miss the record committed last, which the new record chains to.';
    END IF;
    PERFORM durable_jobs.lock_evidence_order();
    SELECT e.evidence_record_id, e.record_hash INTO v_last_id, v_last_hash
    FROM durable_jobs.control_evidence_record e
    ORDER BY e.evidence_record_id DESC
    LIMIT 1;
    IF v_last_id >= NEW.evidence_record_id THEN
        RAISE EXCEPTION 'control evidence record written out of order' USING ERRCODE = 'LF003',
            HINT = 'Take durable_jobs.lock_evidence_order() before inserting, so ids follow commit order.';
    END IF;
    NEW.previous_record_hash := COALESCE(v_last_hash, pg_catalog.decode(pg_catalog.repeat('00', 32), 'hex'));
    NEW.record_hash := pg_catalog.sha256(NEW.previous_record_hash || durable_jobs.evidence_content_digest(
        NEW.evidence_record_id, NEW.evidence_kind, NEW.queue_name, NEW.previous_values, NEW.new_values,
        NEW.change_reason, NEW.changed_by_role, NEW.recorded_at, NEW.change_ticket, NEW.change_approver));
    RETURN NEW;
END;
$function$;

-- stamp_policy_change: BEFORE INSERT OR UPDATE trigger on
-- queue_lease_policy. Sets changed_by_role to session_user and changed_at to
-- the database time whatever the statement wrote, so the row cannot name
-- someone else. Raises LF002 when an UPDATE renames a queue's row (delete
-- it and insert the new one instead). Takes no lock.
CREATE FUNCTION durable_jobs.stamp_policy_change()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $function$
BEGIN
    IF TG_OP = 'UPDATE' AND NEW.queue_name IS DISTINCT FROM OLD.queue_name THEN
        RAISE EXCEPTION 'a queue''s lease policy row cannot be renamed' USING ERRCODE = 'LF002',
            HINT = 'Delete the row and insert one for the new queue name.';
    END IF;
    NEW.changed_by_role := SESSION_USER::text;
    NEW.changed_at := pg_catalog.clock_timestamp();
    RETURN NEW;
END;
$function$;

-- record_policy_change: AFTER INSERT OR UPDATE OR DELETE row trigger on
-- queue_lease_policy, SECURITY DEFINER (owned by durable_job_policy_owner),
-- so every change of the table is recorded, however it was made. Appends a
-- lease_policy_changed record with the queue's effective policy before and
-- after (its own row, else the default '*'; policy_queue_name says which;
-- {"policy_queue_name": null} when none is left), and a
-- renewal_enablement_changed record when the effective enablement flips.
-- changed_by_role is session_user (the evidence table's default), never the
-- row's changed_by_role column. The reason, ticket and approver come from
-- the transaction-local settings leasefence.change_reason,
-- leasefence.change_ticket and leasefence.change_approver, which
-- set_queue_lease_policy sets; a change without a reason is recorded as
-- 'direct table change without a reason'. Raises LF002
-- (require_structured_change) when a given setting is not acceptable, so
-- the change is refused. Takes the evidence-order lock (lock_timeout 10 s).
CREATE FUNCTION durable_jobs.record_policy_change()
RETURNS trigger
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET lock_timeout = '10s'
AS $function$
DECLARE
    v_reason text := COALESCE(NULLIF(pg_catalog.current_setting('leasefence.change_reason', true), ''),
                              'direct table change without a reason');
    v_ticket text := NULLIF(pg_catalog.current_setting('leasefence.change_ticket', true), '');
    v_approver text := NULLIF(pg_catalog.current_setting('leasefence.change_approver', true), '');
    v_queue text;
    v_previous jsonb;
    v_previous_enabled boolean;
    v_new jsonb;
    v_new_enabled boolean;
BEGIN
    PERFORM durable_jobs.require_structured_change(v_reason, v_ticket, v_approver);
    PERFORM durable_jobs.lock_evidence_order();
    IF TG_OP = 'INSERT' THEN
        v_queue := NEW.queue_name;
        SELECT pg_catalog.jsonb_build_object('policy_queue_name', p.queue_name, 'lease_duration', p.lease_duration,
                   'renewal_interval', p.renewal_interval, 'max_claim_lifetime', p.max_claim_lifetime,
                   'renewal_enabled', p.renewal_enabled), p.renewal_enabled
        INTO v_previous, v_previous_enabled
        FROM durable_jobs.queue_lease_policy p
        WHERE p.queue_name = '*' AND v_queue <> '*';
    ELSE
        v_queue := OLD.queue_name;
        v_previous := pg_catalog.jsonb_build_object('policy_queue_name', OLD.queue_name,
            'lease_duration', OLD.lease_duration, 'renewal_interval', OLD.renewal_interval,
            'max_claim_lifetime', OLD.max_claim_lifetime, 'renewal_enabled', OLD.renewal_enabled);
        v_previous_enabled := OLD.renewal_enabled;
    END IF;
    IF TG_OP = 'DELETE' THEN
        SELECT pg_catalog.jsonb_build_object('policy_queue_name', p.queue_name, 'lease_duration', p.lease_duration,
                   'renewal_interval', p.renewal_interval, 'max_claim_lifetime', p.max_claim_lifetime,
                   'renewal_enabled', p.renewal_enabled), p.renewal_enabled
        INTO v_new, v_new_enabled
        FROM durable_jobs.queue_lease_policy p
        WHERE p.queue_name = '*' AND v_queue <> '*';
        v_new := COALESCE(v_new, pg_catalog.jsonb_build_object('policy_queue_name', NULL));
    ELSE
        v_new := pg_catalog.jsonb_build_object('policy_queue_name', NEW.queue_name,
            'lease_duration', NEW.lease_duration, 'renewal_interval', NEW.renewal_interval,
            'max_claim_lifetime', NEW.max_claim_lifetime, 'renewal_enabled', NEW.renewal_enabled);
        v_new_enabled := NEW.renewal_enabled;
    END IF;

    INSERT INTO durable_jobs.control_evidence_record
        (evidence_kind, queue_name, previous_values, new_values, change_reason, change_ticket, change_approver)
    VALUES ('lease_policy_changed', v_queue, v_previous, v_new, v_reason, v_ticket, v_approver);
    IF v_previous_enabled IS DISTINCT FROM v_new_enabled THEN
        INSERT INTO durable_jobs.control_evidence_record
            (evidence_kind, queue_name, previous_values, new_values, change_reason, change_ticket, change_approver)
        VALUES ('renewal_enablement_changed', v_queue,
                pg_catalog.jsonb_build_object('renewal_enabled', v_previous_enabled),
                pg_catalog.jsonb_build_object('renewal_enabled', v_new_enabled), v_reason, v_ticket, v_approver);
    END IF;
    RETURN NULL;
END;
$function$;

-- refuse_policy_truncate: BEFORE TRUNCATE trigger on queue_lease_policy.
-- TRUNCATE fires no row trigger, so it would remove policies without
-- evidence: refused for every role with LF002. Takes no lock.
CREATE FUNCTION durable_jobs.refuse_policy_truncate()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $function$
BEGIN
    RAISE EXCEPTION 'TRUNCATE of queue_lease_policy is refused' USING ERRCODE = 'LF002',
        HINT = 'Delete the rows instead, so that each removal is recorded as evidence.';
END;
$function$;

ALTER FUNCTION durable_jobs.record_policy_change() OWNER TO durable_job_policy_owner;
REVOKE ALL ON FUNCTION durable_jobs.passes_luhn(text) FROM PUBLIC;
REVOKE ALL ON FUNCTION durable_jobs.looks_personal_or_secret(text) FROM PUBLIC;
REVOKE ALL ON FUNCTION durable_jobs.require_structured_change(text, text, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION durable_jobs.evidence_content_digest(bigint, text, text, jsonb, jsonb, text, text, timestamptz, text, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION durable_jobs.chain_evidence_record() FROM PUBLIC;
REVOKE ALL ON FUNCTION durable_jobs.stamp_policy_change() FROM PUBLIC;
REVOKE ALL ON FUNCTION durable_jobs.record_policy_change() FROM PUBLIC;
REVOKE ALL ON FUNCTION durable_jobs.refuse_policy_truncate() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.passes_luhn(text) TO durable_job_policy_owner;
GRANT EXECUTE ON FUNCTION durable_jobs.looks_personal_or_secret(text) TO durable_job_policy_owner;
GRANT EXECUTE ON FUNCTION durable_jobs.require_structured_change(text, text, text) TO durable_job_policy_owner;
GRANT EXECUTE ON FUNCTION durable_jobs.evidence_content_digest(bigint, text, text, jsonb, jsonb, text, text, timestamptz, text, text)
    TO durable_job_policy_owner, durable_job_audit_owner;


-- Chain the records that exist, in id order (the append-only trigger is
-- off for this transaction's UPDATE only).
ALTER TABLE durable_jobs.control_evidence_record DISABLE TRIGGER control_evidence_record_append_only;
DO $chain$
DECLARE
    v_previous bytea := pg_catalog.decode(pg_catalog.repeat('00', 32), 'hex');
    v_record record;
BEGIN
    FOR v_record IN
        SELECT e.* FROM durable_jobs.control_evidence_record e ORDER BY e.evidence_record_id
    LOOP
        UPDATE durable_jobs.control_evidence_record e
        SET previous_record_hash = v_previous,
            record_hash = pg_catalog.sha256(v_previous || durable_jobs.evidence_content_digest(
                v_record.evidence_record_id, v_record.evidence_kind, v_record.queue_name, v_record.previous_values,
                v_record.new_values, v_record.change_reason, v_record.changed_by_role, v_record.recorded_at,
                v_record.change_ticket, v_record.change_approver))
        WHERE e.evidence_record_id = v_record.evidence_record_id
        RETURNING e.record_hash INTO v_previous;
    END LOOP;
END
$chain$;
ALTER TABLE durable_jobs.control_evidence_record ENABLE TRIGGER control_evidence_record_append_only;
ALTER TABLE durable_jobs.control_evidence_record
    ALTER COLUMN previous_record_hash SET NOT NULL,
    ALTER COLUMN record_hash SET NOT NULL;

CREATE TRIGGER control_evidence_record_chain
    BEFORE INSERT ON durable_jobs.control_evidence_record
    FOR EACH ROW EXECUTE FUNCTION durable_jobs.chain_evidence_record();
CREATE TRIGGER queue_lease_policy_stamp
    BEFORE INSERT OR UPDATE ON durable_jobs.queue_lease_policy
    FOR EACH ROW EXECUTE FUNCTION durable_jobs.stamp_policy_change();
CREATE TRIGGER queue_lease_policy_evidence
    AFTER INSERT OR UPDATE OR DELETE ON durable_jobs.queue_lease_policy
    FOR EACH ROW EXECUTE FUNCTION durable_jobs.record_policy_change();
CREATE TRIGGER queue_lease_policy_no_truncate
    BEFORE TRUNCATE ON durable_jobs.queue_lease_policy
    FOR EACH STATEMENT EXECUTE FUNCTION durable_jobs.refuse_policy_truncate();

-- The chain trigger runs as the writer: the policy owner reads the last
-- record's hash and writes the structured fields; the auditor owner reads them.
GRANT SELECT (evidence_record_id, record_hash) ON durable_jobs.control_evidence_record TO durable_job_policy_owner;
GRANT INSERT (change_ticket, change_approver) ON durable_jobs.control_evidence_record TO durable_job_policy_owner;
GRANT SELECT (change_ticket, change_approver, previous_record_hash, record_hash)
    ON durable_jobs.control_evidence_record TO durable_job_audit_owner;
-- The retention family (migration 005) writes evidence too.
GRANT SELECT (evidence_record_id, record_hash) ON durable_jobs.control_evidence_record TO durable_job_retention_owner;
-- The policy trigger deletes nothing itself, but a DELETE of a policy row
-- is now recorded; the owner still has no DELETE privilege.

GRANT EXECUTE ON FUNCTION durable_jobs.lock_evidence_order() TO durable_job_retention_owner;
GRANT EXECUTE ON FUNCTION durable_jobs.evidence_content_digest(bigint, text, text, jsonb, jsonb, text, text, timestamptz, text, text)
    TO durable_job_retention_owner;

-- Policy family, version 3 (the evidence-chain migration, *_evidence_chain.sql). Policy evidence now comes from
-- the change itself (record_policy_change, a trigger on queue_lease_policy,
-- evidence_guard_v2.sql): the functions here only validate, set the
-- transaction-local change settings the trigger records and change the
-- table. Every change record is structured: a ticket, an optional approver
-- and a reason refused when it looks like personal data or a secret.

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
CREATE FUNCTION durable_jobs.change_queue_lease_policy(p_queue_name text, p_lease_duration interval,
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
    PERFORM durable_jobs.require_structured_change(p_change_reason, v_ticket, p_change_approver);

    PERFORM durable_jobs.lock_evidence_order();
    -- Bound how long the caller's transaction may now sit idle holding the
    -- lock: 60 s, unless the session already has a shorter bound.
    SELECT s.setting::bigint INTO STRICT v_idle_timeout_ms
    FROM pg_catalog.pg_settings s WHERE s.name = 'idle_in_transaction_session_timeout';
    IF v_idle_timeout_ms = 0 OR v_idle_timeout_ms > 60000 THEN
        PERFORM pg_catalog.set_config('idle_in_transaction_session_timeout', '60s', true);
    END IF;

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
CREATE FUNCTION durable_jobs.set_queue_lease_policy(p_queue_name text, p_lease_duration interval,
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

-- record_deployment: appends deployment_recorded control evidence with the
-- deployed version, the commit (40 or 64 hex digits) or artifact digest
-- (sha256:<64 hex>) it was built from, the person who deployed it (a
-- directory handle, ^[a-z][a-z0-9._-]{0,62}$, never a full name or e-mail),
-- the change ticket (^[A-Z][A-Z0-9]+-[0-9]+$) and a reason
-- (require_structured_change). Raises LF002, naming the field, for any
-- value that does not match; nothing is written then. Only the role that
-- applies the bundle may execute it. Takes the evidence-order lock.
CREATE FUNCTION durable_jobs.record_deployment(p_deployment_version text, p_source_digest text, p_deployed_by text,
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

ALTER FUNCTION durable_jobs.change_queue_lease_policy(text, interval, interval, interval, boolean, text, text, text) OWNER TO durable_job_policy_owner;
ALTER FUNCTION durable_jobs.set_queue_lease_policy(text, interval, interval, interval, boolean, text) OWNER TO durable_job_policy_owner;
ALTER FUNCTION durable_jobs.set_queue_lease_policy(text, interval, interval, interval, boolean, text, text, text) OWNER TO durable_job_policy_owner;
ALTER FUNCTION durable_jobs.record_deployment_version(text, text) OWNER TO durable_job_policy_owner;
ALTER FUNCTION durable_jobs.record_deployment(text, text, text, text, text) OWNER TO durable_job_policy_owner;
REVOKE ALL ON FUNCTION durable_jobs.change_queue_lease_policy(text, interval, interval, interval, boolean, text, text, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION durable_jobs.set_queue_lease_policy(text, interval, interval, interval, boolean, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION durable_jobs.set_queue_lease_policy(text, interval, interval, interval, boolean, text, text, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION durable_jobs.record_deployment_version(text, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION durable_jobs.record_deployment(text, text, text, text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.set_queue_lease_policy(text, interval, interval, interval, boolean, text) TO durable_job_operator;
GRANT EXECUTE ON FUNCTION durable_jobs.set_queue_lease_policy(text, interval, interval, interval, boolean, text, text, text) TO durable_job_operator;
GRANT EXECUTE ON FUNCTION durable_jobs.record_deployment_version(text, text) TO CURRENT_USER;
GRANT EXECUTE ON FUNCTION durable_jobs.record_deployment(text, text, text, text, text) TO CURRENT_USER;

-- Auditor functions, version 3 (the evidence-chain migration, *_evidence_chain.sql): what the auditor needs to
-- rely on the evidence. The functions of audit_v2.sql are unchanged and
-- stay in force. Payload-blind like them: no payload, token, digest of a
-- token, owner id or job id is returned. They take no locks.

-- control_evidence_chain: the hash chain of the control evidence, oldest
-- first: each record's id, kind and time, the digest of its content as
-- stored now (evidence_content_digest), and the previous_record_hash and
-- record_hash it was written with. A record is intact when record_hash =
-- sha256(previous_record_hash || content_digest) and previous_record_hash is
-- the record_hash of the record before it (32 zero bytes for the first):
-- `leasectl audit` (AUDIT-EVIDENCE-CHAIN) checks both. No reason or value
-- is returned.
CREATE FUNCTION durable_jobs.control_evidence_chain()
RETURNS TABLE (evidence_record_id bigint, evidence_kind text, recorded_at timestamptz, content_digest bytea,
               previous_record_hash bytea, record_hash bytea)
LANGUAGE sql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
BEGIN ATOMIC
    SELECT e.evidence_record_id, e.evidence_kind, e.recorded_at,
           durable_jobs.evidence_content_digest(e.evidence_record_id, e.evidence_kind, e.queue_name, e.previous_values,
               e.new_values, e.change_reason, e.changed_by_role, e.recorded_at, e.change_ticket, e.change_approver),
           e.previous_record_hash, e.record_hash
    FROM durable_jobs.control_evidence_record e
    ORDER BY e.evidence_record_id;
END;

-- control_evidence_records: the control evidence recorded in [p_since,
-- p_until) (either bound NULL for open), oldest first, with the structured
-- fields (ticket, approver) and each record's chain hash.
CREATE FUNCTION durable_jobs.control_evidence_records(p_since timestamptz, p_until timestamptz)
RETURNS TABLE (evidence_record_id bigint, evidence_kind text, queue_name text, previous_values jsonb,
               new_values jsonb, change_reason text, change_ticket text, change_approver text, changed_by_role text,
               recorded_at timestamptz, record_hash bytea)
LANGUAGE sql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
BEGIN ATOMIC
    SELECT e.evidence_record_id, e.evidence_kind, e.queue_name, e.previous_values, e.new_values,
           e.change_reason, e.change_ticket, e.change_approver, e.changed_by_role, e.recorded_at, e.record_hash
    FROM durable_jobs.control_evidence_record e
    WHERE (p_since IS NULL OR e.recorded_at >= p_since) AND (p_until IS NULL OR e.recorded_at < p_until)
    ORDER BY e.evidence_record_id;
END;

-- policy_evidence_mismatches: one row per queue whose live policy row is not
-- what its last lease_policy_changed record says it became (values compared
-- as durations, so '1 day' equals '24:00:00'), and per queue whose last
-- record says it has a row of its own that is now missing (or the reverse).
-- Empty when the policy table and the evidence agree.
CREATE FUNCTION durable_jobs.policy_evidence_mismatches()
RETURNS TABLE (queue_name text, mismatch text)
LANGUAGE sql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
BEGIN ATOMIC
    WITH last_record AS (
        SELECT DISTINCT ON (e.queue_name) e.queue_name, e.new_values
        FROM durable_jobs.control_evidence_record e
        WHERE e.evidence_kind = 'lease_policy_changed' AND e.queue_name IS NOT NULL
        ORDER BY e.queue_name, e.evidence_record_id DESC
    ),
    evidenced AS (
        SELECT l.queue_name, l.new_values,
               COALESCE(l.new_values ->> 'policy_queue_name', CASE WHEN l.new_values ? 'policy_queue_name'
                                                                   THEN NULL ELSE l.queue_name END) = l.queue_name AS has_row
        FROM last_record l
    )
    SELECT COALESCE(p.queue_name, v.queue_name),
           CASE WHEN v.queue_name IS NULL THEN 'policy row has no evidence record'
                WHEN p.queue_name IS NULL AND v.has_row THEN 'policy row in the evidence is missing from the table'
                WHEN p.queue_name IS NOT NULL AND NOT v.has_row THEN 'policy row exists but the evidence says it was removed'
                ELSE 'policy differs from what its last evidence record says' END
    FROM durable_jobs.queue_lease_policy p
    FULL JOIN evidenced v ON v.queue_name = p.queue_name
    WHERE v.queue_name IS NULL
       OR (p.queue_name IS NULL AND v.has_row)
       OR (p.queue_name IS NOT NULL AND NOT v.has_row)
       OR (p.queue_name IS NOT NULL AND (
              (v.new_values ->> 'lease_duration')::interval IS DISTINCT FROM p.lease_duration
           OR (v.new_values ->> 'renewal_interval')::interval IS DISTINCT FROM p.renewal_interval
           OR (v.new_values ->> 'max_claim_lifetime')::interval IS DISTINCT FROM p.max_claim_lifetime
           OR (v.new_values ->> 'renewal_enabled')::boolean IS DISTINCT FROM p.renewal_enabled))
    ORDER BY 1;
END;

ALTER FUNCTION durable_jobs.control_evidence_chain() OWNER TO durable_job_audit_owner;
ALTER FUNCTION durable_jobs.control_evidence_records(timestamptz, timestamptz) OWNER TO durable_job_audit_owner;
ALTER FUNCTION durable_jobs.policy_evidence_mismatches() OWNER TO durable_job_audit_owner;
REVOKE ALL ON FUNCTION durable_jobs.control_evidence_chain() FROM PUBLIC;
REVOKE ALL ON FUNCTION durable_jobs.control_evidence_records(timestamptz, timestamptz) FROM PUBLIC;
REVOKE ALL ON FUNCTION durable_jobs.policy_evidence_mismatches() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.control_evidence_chain() TO durable_job_auditor;
GRANT EXECUTE ON FUNCTION durable_jobs.control_evidence_records(timestamptz, timestamptz) TO durable_job_auditor;
GRANT EXECUTE ON FUNCTION durable_jobs.policy_evidence_mismatches() TO durable_job_auditor;


SELECT pg_catalog.pg_advisory_xact_lock(1279655936, 1);
INSERT INTO durable_jobs.control_evidence_record (evidence_kind, queue_name, previous_values, new_values, change_reason)
VALUES ('migration_applied', NULL, NULL, '{"migration_version": 6, "migration_name": "006_evidence_chain"}',
        COALESCE(NULLIF(pg_catalog.current_setting('leasefence.migration_reason', true), ''), 'leasefence bundle migration'));

---- create above / drop below ----

DROP FUNCTION durable_jobs.policy_evidence_mismatches();
DROP FUNCTION durable_jobs.control_evidence_records(timestamptz, timestamptz);
DROP FUNCTION durable_jobs.control_evidence_chain();
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

DROP FUNCTION durable_jobs.record_deployment(text, text, text, text, text);
DROP FUNCTION durable_jobs.set_queue_lease_policy(text, interval, interval, interval, boolean, text, text, text);
DROP FUNCTION durable_jobs.change_queue_lease_policy(text, interval, interval, interval, boolean, text, text, text);

DROP TRIGGER queue_lease_policy_no_truncate ON durable_jobs.queue_lease_policy;
DROP TRIGGER queue_lease_policy_evidence ON durable_jobs.queue_lease_policy;
DROP TRIGGER queue_lease_policy_stamp ON durable_jobs.queue_lease_policy;
DROP TRIGGER control_evidence_record_chain ON durable_jobs.control_evidence_record;
DROP FUNCTION durable_jobs.refuse_policy_truncate();
DROP FUNCTION durable_jobs.record_policy_change();
DROP FUNCTION durable_jobs.stamp_policy_change();
DROP FUNCTION durable_jobs.chain_evidence_record();
REVOKE EXECUTE ON FUNCTION durable_jobs.lock_evidence_order() FROM durable_job_retention_owner;
DROP FUNCTION durable_jobs.evidence_content_digest(bigint, text, text, jsonb, jsonb, text, text, timestamptz, text, text);
DROP FUNCTION durable_jobs.require_structured_change(text, text, text);
DROP FUNCTION durable_jobs.looks_personal_or_secret(text);
DROP FUNCTION durable_jobs.passes_luhn(text);

-- Version 4's evidence has no chain and no structured fields: they go, the
-- records stay (their reasons and values are what version 4 shows).
REVOKE SELECT (change_ticket, change_approver, previous_record_hash, record_hash)
    ON durable_jobs.control_evidence_record FROM durable_job_audit_owner;
REVOKE INSERT (change_ticket, change_approver) ON durable_jobs.control_evidence_record FROM durable_job_policy_owner;
REVOKE SELECT (evidence_record_id, record_hash) ON durable_jobs.control_evidence_record FROM durable_job_policy_owner;
REVOKE SELECT (evidence_record_id, record_hash) ON durable_jobs.control_evidence_record FROM durable_job_retention_owner;
ALTER TABLE durable_jobs.control_evidence_record
    DROP COLUMN record_hash,
    DROP COLUMN previous_record_hash,
    DROP COLUMN change_approver,
    DROP COLUMN change_ticket;

SELECT pg_catalog.pg_advisory_xact_lock(1279655936, 1);
INSERT INTO durable_jobs.control_evidence_record (evidence_kind, queue_name, previous_values, new_values, change_reason)
VALUES ('migration_reverted', NULL, NULL, '{"migration_version": 6, "migration_name": "006_evidence_chain"}',
        COALESCE(NULLIF(pg_catalog.current_setting('leasefence.migration_reason', true), ''),
                 'leasefence bundle migration rolled back'));
