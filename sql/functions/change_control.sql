-- Change control: what a recorded change must carry (ticket, approver), and who may change that.
--
-- The current definition of each function of this family, edited in place.
-- A change reaches databases through a new migration that includes this
-- file; released migrations hold their own frozen copy (see sql/doc.go).
--
-- Below, the notes written with the versions the current definitions come
-- from, newest first. They name the files as they were then; each
-- migration's frozen SQL under sql/migrations holds the whole text.

-- Notes of migration 015 (change_control.sql in its frozen SQL):
--
-- Change control (migration 015): the operator's setting that every change
-- record is checked against (require_structured_change, evidence_guard_v3.sql).
--
--   change_control         the setting: ticket pattern, require_approver,
--                          approver_must_differ (auditor and operator read it)
--   set_change_control     an operator changes it, recorded as control
--                          evidence (change_control_changed) like a policy change

-- Notes of migration 015 (evidence_guard_v3.sql in its frozen SQL):
--
-- Evidence guard, version 3 (migration 015): only require_structured_change
-- changes; every other function of the family stays as evidence_guard_v2.sql
-- installs it. The ticket pattern and the approver rules now come from the
-- operator's change-control setting (durable_jobs.change_control_setting,
-- change_control.sql) instead of being fixed.

-- change_control: the one row of durable_jobs.change_control_setting:
-- the ticket pattern, the approver rules, who changed them last and when,
-- (since migration 024) the reason pattern, NULL while reasons are free
-- text, and (since migration 026, last) the maker-checker rule: whether
-- every policy change must be proposed by one operator login and approved
-- by another, and how long a proposal waits. Takes no lock.
CREATE OR REPLACE FUNCTION durable_jobs.change_control()
RETURNS TABLE(ticket_pattern text, require_approver boolean, approver_must_differ boolean,
              changed_at timestamptz, changed_by_role text, reason_pattern text,
              require_second_operator boolean, proposal_lifetime interval)
LANGUAGE sql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
BEGIN ATOMIC
    SELECT s.ticket_pattern, s.require_approver, s.approver_must_differ, s.changed_at, s.changed_by_role,
           s.reason_pattern, s.require_second_operator, s.proposal_lifetime
    FROM durable_jobs.change_control_setting s;
END;

ALTER FUNCTION durable_jobs.change_control() OWNER TO durable_job_policy_owner;
REVOKE ALL ON FUNCTION durable_jobs.change_control() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.change_control() TO durable_job_auditor, durable_job_operator;

-- set_change_control: sets the change-control setting. Raises LF003 and
-- changes nothing when a value is NULL or the ticket pattern is not 1 to 200
-- characters or not a valid regular expression; LF002
-- (require_structured_change, checked against the setting in force once
-- this call holds the evidence-order lock, so a tightening committed while
-- it waited applies to it) when the change record is not structured. The
-- table's trigger (record_change_control_change) appends a
-- change_control_changed evidence record with every setting before and
-- after, reason, ticket, approver and session_user. Locks: the evidence-order lock
-- (lock_timeout 10 s, then 55P03 and nothing changed).
CREATE OR REPLACE FUNCTION durable_jobs.set_change_control(p_ticket_pattern text, p_require_approver boolean,
    p_approver_must_differ boolean, p_change_reason text, p_change_ticket text, p_change_approver text DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET lock_timeout = '10s'
AS $function$
BEGIN
    IF p_ticket_pattern IS NULL OR p_require_approver IS NULL OR p_approver_must_differ IS NULL
       OR pg_catalog.length(p_ticket_pattern) NOT BETWEEN 1 AND 200 THEN
        RAISE EXCEPTION 'invalid change control' USING ERRCODE = 'LF003',
            DETAIL = 'Need a ticket pattern of 1 to 200 characters, require_approver and approver_must_differ set.';
    END IF;
    BEGIN
        PERFORM '' ~ p_ticket_pattern;
    EXCEPTION WHEN invalid_regular_expression THEN
        RAISE EXCEPTION 'invalid change control' USING ERRCODE = 'LF003',
            DETAIL = 'The ticket pattern is not a valid regular expression.';
    END;
    -- Takes the evidence-order lock, then checks against what is in force.
    PERFORM durable_jobs.require_structured_change(p_change_reason, p_change_ticket, p_change_approver);
    PERFORM durable_jobs.set_change_record(p_change_reason, p_change_ticket, p_change_approver);
    UPDATE durable_jobs.change_control_setting
    SET ticket_pattern = p_ticket_pattern, require_approver = p_require_approver,
        approver_must_differ = p_approver_must_differ;
    PERFORM durable_jobs.set_change_record('', '', '');
END;
$function$;

ALTER FUNCTION durable_jobs.set_change_control(text, boolean, boolean, text, text, text) OWNER TO durable_job_policy_owner;
REVOKE ALL ON FUNCTION durable_jobs.set_change_control(text, boolean, boolean, text, text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.set_change_control(text, boolean, boolean, text, text, text) TO durable_job_operator;

-- set_change_reason_pattern: limits every change reason to a pattern
-- (migration 024), for an organization that forbids free text in
-- evidence: with a pattern such as '^[A-Z]+-[0-9]+: (rollout|rollback|incident)$'
-- no reason can hold anything but a ticket and a word of a fixed
-- vocabulary. NULL or '' clears it (free text again, still screened by
-- looks_personal_or_secret). Raises LF003 and changes nothing for a pattern
-- over 200 characters or not a valid regular expression; LF002
-- (require_structured_change, under the evidence-order lock, against the
-- setting in force then, the current reason pattern included) when the
-- change record is not structured. The table's trigger appends a
-- change_control_changed evidence record with every setting before and
-- after. Locks: the
-- evidence-order lock (lock_timeout 10 s, then 55P03 and nothing changed).
CREATE OR REPLACE FUNCTION durable_jobs.set_change_reason_pattern(p_reason_pattern text, p_change_reason text,
    p_change_ticket text, p_change_approver text DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET lock_timeout = '10s'
AS $function$
DECLARE
    v_pattern text := NULLIF(p_reason_pattern, '');
BEGIN
    IF pg_catalog.length(v_pattern) > 200 THEN
        RAISE EXCEPTION 'invalid change control' USING ERRCODE = 'LF003',
            DETAIL = 'A reason pattern is at most 200 characters (NULL or empty: free text).';
    END IF;
    BEGIN
        PERFORM '' ~ v_pattern;
    EXCEPTION WHEN invalid_regular_expression THEN
        RAISE EXCEPTION 'invalid change control' USING ERRCODE = 'LF003',
            DETAIL = 'The reason pattern is not a valid regular expression.';
    END;
    PERFORM durable_jobs.require_structured_change(p_change_reason, p_change_ticket, p_change_approver);
    PERFORM durable_jobs.set_change_record(p_change_reason, p_change_ticket, p_change_approver);
    UPDATE durable_jobs.change_control_setting SET reason_pattern = v_pattern;
    PERFORM durable_jobs.set_change_record('', '', '');
END;
$function$;

ALTER FUNCTION durable_jobs.set_change_reason_pattern(text, text, text, text) OWNER TO durable_job_policy_owner;
REVOKE ALL ON FUNCTION durable_jobs.set_change_reason_pattern(text, text, text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.set_change_reason_pattern(text, text, text, text) TO durable_job_operator;

-- require_structured_change: raises LF002, naming the rule and never the
-- value, unless a change record is structured under the change control in
-- force (check_change_record). Takes the evidence-order lock
-- (lock_evidence_order) first and reads the setting after it (VOLATILE:
-- the read takes a snapshot of its own), so every writer is checked against
-- the change control in force when no other change can commit before it
-- (since migration 024; before, a loosening that waited for a tightening's
-- lock committed against the old rules).
CREATE OR REPLACE FUNCTION durable_jobs.require_structured_change(p_change_reason text, p_change_ticket text, p_change_approver text)
RETURNS void
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, pg_temp
AS $function$
DECLARE
    v_setting durable_jobs.change_control_setting;
BEGIN
    PERFORM durable_jobs.lock_evidence_order();
    SELECT s.* INTO STRICT v_setting FROM durable_jobs.change_control_setting s;
    PERFORM durable_jobs.check_change_record(v_setting, p_change_reason, p_change_ticket, p_change_approver);
END;
$function$;

REVOKE ALL ON FUNCTION durable_jobs.require_structured_change(text, text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.require_structured_change(text, text, text) TO durable_job_policy_owner, durable_job_retention_owner;

-- check_change_record: raises LF002, naming the rule and never the value,
-- unless a change record is structured under the given change-control
-- setting: a reason that is plain text (is_plain_change_reason), matches
-- the reason pattern when the setting has one (since migration 024) and
-- does not look like personal data or a secret (looks_personal_or_secret);
-- a ticket, when given, of plain text of at most 100 characters matching
-- the setting's ticket_pattern (default ^[A-Z][A-Z0-9]+-[0-9]+$); an
-- approver, when given, that is an existing login role and a member of
-- durable_job_operator (since migration 026; before, any login, a worker's
-- too, could be named); an approver at all when require_approver is set;
-- an approved proposal of another operator login when
-- require_second_operator is set (maker-checker, since migration 026:
-- approve_change applies it in the approver's own session); and an
-- approver other than the login making the change (for an approved
-- proposal: other than its proposer) when approver_must_differ is set
-- (the default). The change-control trigger checks a change against the
-- setting before it with this function. Takes no lock.
CREATE OR REPLACE FUNCTION durable_jobs.check_change_record(p_setting durable_jobs.change_control_setting,
    p_change_reason text, p_change_ticket text, p_change_approver text)
RETURNS void
LANGUAGE plpgsql
STABLE
SET search_path = pg_catalog, pg_temp
AS $function$
DECLARE
    v_proposer text;
BEGIN
    IF p_change_reason IS NULL OR NOT durable_jobs.is_plain_change_reason(p_change_reason) THEN
        RAISE EXCEPTION 'invalid change record' USING ERRCODE = 'LF002',
            DETAIL = 'The change reason must be 1 to 500 characters, not blank, without control or bidirectional-control characters.';
    END IF;
    IF p_setting.reason_pattern IS NOT NULL AND p_change_reason !~ p_setting.reason_pattern THEN
        RAISE EXCEPTION 'invalid change record' USING ERRCODE = 'LF002',
            DETAIL = 'The change reason must match the change-control reason pattern (durable_jobs.change_control()).';
    END IF;
    IF durable_jobs.looks_personal_or_secret(p_change_reason) THEN
        RAISE EXCEPTION 'invalid change record' USING ERRCODE = 'LF002',
            DETAIL = 'The change reason looks like it holds personal data or a secret (a resident registration, card or phone number, an e-mail address or a credential); evidence is append-only and kept, so give a ticket reference instead.';
    END IF;
    IF p_change_ticket IS NOT NULL AND (pg_catalog.length(p_change_ticket) > 100
       OR NOT durable_jobs.is_plain_change_reason(p_change_ticket) OR p_change_ticket !~ p_setting.ticket_pattern) THEN
        RAISE EXCEPTION 'invalid change record' USING ERRCODE = 'LF002',
            DETAIL = 'The change ticket must be plain text of at most 100 characters matching the change-control ticket pattern (durable_jobs.change_control()).';
    END IF;
    IF p_change_approver IS NULL AND p_setting.require_approver THEN
        RAISE EXCEPTION 'invalid change record' USING ERRCODE = 'LF002',
            DETAIL = 'Change control requires an approver for every change.';
    END IF;
    IF p_change_approver IS NOT NULL AND NOT EXISTS (
           SELECT 1 FROM pg_catalog.pg_roles r
           WHERE r.rolname = p_change_approver AND r.rolcanlogin
             AND pg_catalog.pg_has_role(r.oid, 'durable_job_operator', 'MEMBER')) THEN
        RAISE EXCEPTION 'invalid change record' USING ERRCODE = 'LF002',
            DETAIL = 'The approver must be an existing login role that holds durable_job_operator.';
    END IF;
    v_proposer := durable_jobs.approved_proposer();
    IF p_setting.require_second_operator AND v_proposer IS NULL THEN
        RAISE EXCEPTION 'invalid change record' USING ERRCODE = 'LF002',
            DETAIL = 'Change control requires every change to be proposed by one operator login and approved by another (propose_change, approve_change).';
    END IF;
    IF p_change_approver = COALESCE(v_proposer, SESSION_USER) AND p_setting.approver_must_differ THEN
        RAISE EXCEPTION 'invalid change record' USING ERRCODE = 'LF002',
            DETAIL = 'Change control requires the approver to be another login than the one making the change.';
    END IF;
END;
$function$;

REVOKE ALL ON FUNCTION durable_jobs.check_change_record(durable_jobs.change_control_setting, text, text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.check_change_record(durable_jobs.change_control_setting, text, text, text) TO durable_job_policy_owner, durable_job_retention_owner;

-- require_valid_change_control: private check of a whole change-control
-- setting (since migration 026, for set_maker_checker and an approved
-- change-control proposal): raises LF003 unless the ticket pattern is 1 to
-- 200 characters and a valid regular expression, the reason pattern is
-- NULL or at most 200 characters and valid, the three switches are set and
-- the proposal lifetime is a plain duration of 1 minute to 30 days. Takes
-- no lock.
CREATE OR REPLACE FUNCTION durable_jobs.require_valid_change_control(p_ticket_pattern text, p_require_approver boolean,
    p_approver_must_differ boolean, p_reason_pattern text, p_require_second_operator boolean, p_proposal_lifetime interval)
RETURNS void
LANGUAGE plpgsql
STABLE
SET search_path = pg_catalog, pg_temp
AS $function$
DECLARE
    v_lifetime interval := durable_jobs.absolute_duration(p_proposal_lifetime);
BEGIN
    IF p_ticket_pattern IS NULL OR p_require_approver IS NULL OR p_approver_must_differ IS NULL
       OR p_require_second_operator IS NULL OR pg_catalog.length(p_ticket_pattern) NOT BETWEEN 1 AND 200
       OR pg_catalog.length(p_reason_pattern) > 200
       OR v_lifetime IS NULL OR v_lifetime NOT BETWEEN interval '1 minute' AND interval '30 days' THEN
        RAISE EXCEPTION 'invalid change control' USING ERRCODE = 'LF003',
            DETAIL = 'Need a ticket pattern of 1 to 200 characters, a reason pattern of at most 200 (or none), every switch set and a proposal lifetime of 1 minute to 30 days.';
    END IF;
    BEGIN
        PERFORM '' ~ p_ticket_pattern, '' ~ p_reason_pattern;
    EXCEPTION WHEN invalid_regular_expression THEN
        RAISE EXCEPTION 'invalid change control' USING ERRCODE = 'LF003',
            DETAIL = 'A pattern is not a valid regular expression.';
    END;
END;
$function$;

REVOKE ALL ON FUNCTION durable_jobs.require_valid_change_control(text, boolean, boolean, text, boolean, interval) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.require_valid_change_control(text, boolean, boolean, text, boolean, interval) TO durable_job_policy_owner;

-- set_maker_checker: switches the maker-checker rule (since migration 026):
-- with require_second_operator on, no policy, retention or change-control
-- change takes effect in the session that asks for it; one operator login
-- proposes it (propose_change) and another approves it in its own session
-- (approve_change) before the proposal lifetime runs out. Raises LF003 and
-- changes nothing for a NULL switch or a lifetime that is no plain duration
-- of 1 minute to 30 days; LF002 (require_structured_change, under the
-- evidence-order lock, against the setting in force then) when the change
-- record is not structured: with maker-checker on, switching it off is
-- itself a change that needs an approved proposal. The table's trigger
-- appends a change_control_changed evidence record with every setting
-- before and after. Locks: the evidence-order lock (lock_timeout 10 s, then
-- 55P03 and nothing changed).
CREATE OR REPLACE FUNCTION durable_jobs.set_maker_checker(p_require_second_operator boolean, p_proposal_lifetime interval,
    p_change_reason text, p_change_ticket text, p_change_approver text DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET lock_timeout = '10s'
SET IntervalStyle = 'postgres'
AS $function$
DECLARE
    v_setting durable_jobs.change_control_setting;
BEGIN
    PERFORM durable_jobs.require_structured_change(p_change_reason, p_change_ticket, p_change_approver);
    SELECT s.* INTO STRICT v_setting FROM durable_jobs.change_control_setting s;
    PERFORM durable_jobs.require_valid_change_control(v_setting.ticket_pattern, v_setting.require_approver,
        v_setting.approver_must_differ, v_setting.reason_pattern, p_require_second_operator, p_proposal_lifetime);
    PERFORM durable_jobs.set_change_record(p_change_reason, p_change_ticket, p_change_approver);
    UPDATE durable_jobs.change_control_setting
    SET require_second_operator = p_require_second_operator,
        proposal_lifetime = durable_jobs.absolute_duration(p_proposal_lifetime);
    PERFORM durable_jobs.set_change_record('', '', '');
END;
$function$;

ALTER FUNCTION durable_jobs.set_maker_checker(boolean, interval, text, text, text) OWNER TO durable_job_policy_owner;
REVOKE ALL ON FUNCTION durable_jobs.set_maker_checker(boolean, interval, text, text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.set_maker_checker(boolean, interval, text, text, text) TO durable_job_operator;

-- approved_proposer: the login that proposed the change this transaction
-- applies, when approve_change approved it in this very transaction and
-- session (the transaction-local setting leasefence.change_proposal names
-- it, and the proposal row holds this transaction's id, which only
-- approve_change writes); NULL otherwise, a forged setting included.
-- Takes no lock.
CREATE OR REPLACE FUNCTION durable_jobs.approved_proposer()
RETURNS text
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $function$
DECLARE
    v_change text := pg_catalog.current_setting('leasefence.change_proposal', true);
    v_proposer text;
BEGIN
    IF v_change IS NULL OR v_change !~ '^[0-9]{1,18}$' THEN
        RETURN NULL;
    END IF;
    SELECT c.proposed_by_role INTO v_proposer
    FROM durable_jobs.pending_change c
    WHERE c.change_id = v_change::bigint AND c.change_decision = 'approved'
      AND c.decided_by_role = SESSION_USER AND c.decided_in_transaction = pg_catalog.pg_current_xact_id();
    RETURN v_proposer;
END;
$function$;

ALTER FUNCTION durable_jobs.approved_proposer() OWNER TO durable_job_policy_owner;
REVOKE ALL ON FUNCTION durable_jobs.approved_proposer() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.approved_proposer() TO durable_job_retention_owner;

-- propose_change: an operator proposes a change for another operator to
-- approve (maker-checker, since migration 026); returns its id. Kinds and
-- values: 'lease_policy' for a queue ('*' the default) with any of
-- lease_duration, renewal_interval, max_claim_lifetime (durations) and
-- renewal_enabled (a boolean), the rest kept as update_queue_lease_policy
-- keeps it; 'retention_policy' for a queue with payload_retention and
-- record_retention; 'change_control' (no queue) with every setting:
-- ticket_pattern, require_approver, approver_must_differ, reason_pattern
-- (null for free text), require_second_operator and proposal_lifetime.
-- Values are checked for their form here and in full when applied. The
-- reason and ticket are checked as every change record's are (an approver
-- comes with the approval). Appends change_proposed evidence (kind, queue,
-- values, expiry; the proposer is its changed_by_role). Raises LF003 for an
-- unknown kind, a malformed queue or values; LF002 for a change record that
-- is not structured: nothing is written then. Takes the evidence-order lock
-- (lock_timeout 10 s, then 55P03).
CREATE OR REPLACE FUNCTION durable_jobs.propose_change(p_change_kind text, p_queue_name text, p_proposed_values jsonb,
    p_change_reason text, p_change_ticket text DEFAULT NULL)
RETURNS bigint
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET lock_timeout = '10s'
SET IntervalStyle = 'postgres'
SET DateStyle = 'ISO, MDY'
SET TimeZone = 'UTC'
AS $function$
DECLARE
    v_allowed text[] := CASE p_change_kind
        WHEN 'lease_policy' THEN ARRAY['lease_duration', 'renewal_interval', 'max_claim_lifetime', 'renewal_enabled']
        WHEN 'retention_policy' THEN ARRAY['payload_retention', 'record_retention']
        WHEN 'change_control' THEN ARRAY['ticket_pattern', 'require_approver', 'approver_must_differ', 'reason_pattern',
                                         'require_second_operator', 'proposal_lifetime'] END;
    v_setting durable_jobs.change_control_setting;
    v_change_id bigint;
    v_expires_at timestamptz;
BEGIN
    IF v_allowed IS NULL OR pg_catalog.jsonb_typeof(p_proposed_values) IS DISTINCT FROM 'object'
       OR EXISTS (SELECT 1 FROM pg_catalog.jsonb_object_keys(p_proposed_values) k WHERE k <> ALL (v_allowed))
       OR (p_change_kind = 'change_control') <> (p_queue_name IS NULL)
       OR (p_change_kind = 'change_control' AND NOT p_proposed_values ?& v_allowed)
       OR (p_change_kind = 'retention_policy' AND NOT p_proposed_values ?& v_allowed)
       OR p_proposed_values = '{}' THEN
        RAISE EXCEPTION 'invalid proposal' USING ERRCODE = 'LF003',
            DETAIL = 'Need a kind (lease_policy or retention_policy for a queue, change_control for none) and its values: see durable_jobs.propose_change.';
    END IF;
    IF p_queue_name IS DISTINCT FROM '*' AND p_queue_name IS NOT NULL THEN
        PERFORM durable_jobs.require_well_formed('queue_name', p_queue_name);
    END IF;
    BEGIN
        PERFORM (p_proposed_values ->> 'lease_duration')::interval, (p_proposed_values ->> 'renewal_interval')::interval,
                (p_proposed_values ->> 'max_claim_lifetime')::interval, (p_proposed_values ->> 'renewal_enabled')::boolean,
                (p_proposed_values ->> 'payload_retention')::interval, (p_proposed_values ->> 'record_retention')::interval,
                (p_proposed_values ->> 'require_approver')::boolean, (p_proposed_values ->> 'approver_must_differ')::boolean,
                (p_proposed_values ->> 'require_second_operator')::boolean,
                (p_proposed_values ->> 'proposal_lifetime')::interval;
    EXCEPTION WHEN invalid_datetime_format OR invalid_text_representation OR datetime_field_overflow
                   OR interval_field_overflow THEN
        RAISE EXCEPTION 'invalid proposal' USING ERRCODE = 'LF003',
            DETAIL = 'A duration or a switch of the proposal is not one.';
    END;
    IF p_change_kind = 'change_control' THEN
        PERFORM durable_jobs.require_valid_change_control(p_proposed_values ->> 'ticket_pattern',
            (p_proposed_values ->> 'require_approver')::boolean, (p_proposed_values ->> 'approver_must_differ')::boolean,
            p_proposed_values ->> 'reason_pattern', (p_proposed_values ->> 'require_second_operator')::boolean,
            (p_proposed_values ->> 'proposal_lifetime')::interval);
    END IF;
    PERFORM durable_jobs.lock_evidence_order();
    SELECT s.* INTO STRICT v_setting FROM durable_jobs.change_control_setting s;
    v_expires_at := pg_catalog.clock_timestamp() + v_setting.proposal_lifetime;
    -- The approver and the second operator come with the approval.
    v_setting.require_approver := false;
    v_setting.require_second_operator := false;
    PERFORM durable_jobs.check_change_record(v_setting, p_change_reason, p_change_ticket, NULL);
    INSERT INTO durable_jobs.pending_change (change_kind, queue_name, proposed_values, change_reason, change_ticket, expires_at)
    VALUES (p_change_kind, p_queue_name, p_proposed_values, p_change_reason, p_change_ticket, v_expires_at)
    RETURNING change_id INTO v_change_id;
    INSERT INTO durable_jobs.control_evidence_record
        (evidence_kind, queue_name, previous_values, new_values, change_reason, change_ticket, change_approver)
    VALUES ('change_proposed', p_queue_name, NULL,
            pg_catalog.jsonb_build_object('change_id', v_change_id, 'change_kind', p_change_kind,
                'proposed_values', p_proposed_values, 'expires_at', v_expires_at),
            p_change_reason, p_change_ticket, NULL);
    RETURN v_change_id;
END;
$function$;

ALTER FUNCTION durable_jobs.propose_change(text, text, jsonb, text, text) OWNER TO durable_job_policy_owner;
REVOKE ALL ON FUNCTION durable_jobs.propose_change(text, text, jsonb, text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.propose_change(text, text, jsonb, text, text) TO durable_job_operator;

-- decide_change: private first step of approve_change and reject_change:
-- takes the evidence-order lock, locks the pending proposal and raises
-- LF003 for a NULL or unknown id, LF002 when it was decided already, has
-- expired (an approval only) or is decided by its own proposer (an
-- approval only; its proposer may withdraw it). Marks it decided by
-- session_user in this transaction and appends change_approved or
-- change_rejected evidence (change id, kind, proposer and proposal time;
-- the reason is the proposal's for an approval, the caller's for a
-- rejection). Returns the proposal.
CREATE OR REPLACE FUNCTION durable_jobs.decide_change(p_change_id bigint, p_decision text, p_change_reason text)
RETURNS durable_jobs.pending_change
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, pg_temp
AS $function$
DECLARE
    v_change durable_jobs.pending_change;
BEGIN
    IF p_change_id IS NULL THEN
        RAISE EXCEPTION 'change id is required' USING ERRCODE = 'LF003';
    END IF;
    PERFORM durable_jobs.lock_evidence_order();
    SELECT c.* INTO v_change FROM durable_jobs.pending_change c WHERE c.change_id = p_change_id FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'no such proposal' USING ERRCODE = 'LF003';
    END IF;
    IF v_change.change_decision IS NOT NULL THEN
        RAISE EXCEPTION 'proposal already decided' USING ERRCODE = 'LF002',
            DETAIL = pg_catalog.format('The proposal was %s.', v_change.change_decision);
    END IF;
    IF p_decision = 'approved' AND v_change.expires_at < pg_catalog.clock_timestamp() THEN
        RAISE EXCEPTION 'proposal expired' USING ERRCODE = 'LF002',
            HINT = 'Propose the change again.';
    END IF;
    IF p_decision = 'approved' AND v_change.proposed_by_role = SESSION_USER THEN
        RAISE EXCEPTION 'invalid change record' USING ERRCODE = 'LF002',
            DETAIL = 'A proposal is approved by another operator login than the one that proposed it.';
    END IF;
    UPDATE durable_jobs.pending_change c
    SET change_decision = p_decision, decided_by_role = SESSION_USER, decided_at = pg_catalog.clock_timestamp(),
        decided_in_transaction = pg_catalog.pg_current_xact_id()
    WHERE c.change_id = p_change_id;
    INSERT INTO durable_jobs.control_evidence_record
        (evidence_kind, queue_name, previous_values, new_values, change_reason, change_ticket, change_approver)
    VALUES ('change_' || p_decision, v_change.queue_name, NULL,
            pg_catalog.jsonb_build_object('change_id', v_change.change_id, 'change_kind', v_change.change_kind,
                'proposed_by', v_change.proposed_by_role, 'proposed_at', v_change.proposed_at),
            COALESCE(p_change_reason, v_change.change_reason), v_change.change_ticket,
            CASE WHEN p_decision = 'approved' THEN SESSION_USER END);
    RETURN v_change;
END;
$function$;

ALTER FUNCTION durable_jobs.decide_change(bigint, text, text) OWNER TO durable_job_policy_owner;
REVOKE ALL ON FUNCTION durable_jobs.decide_change(bigint, text, text) FROM PUBLIC;

-- approve_change: another operator login approves a proposal in its own
-- session (maker-checker, since migration 026), and the change takes
-- effect in this transaction, checked in full: a lease policy through
-- update_queue_lease_policy, a retention policy through
-- set_queue_retention_policy, a change-control setting as one change of
-- the table; each with the proposal's reason and ticket and this login as
-- the approver, and recorded as such changes always are, after a
-- change_approved record (change id, proposer, proposal time). Raises
-- LF003 for a NULL or unknown id; LF002 when the proposal was decided
-- already, has expired, was proposed by this login, or the change is
-- refused when applied (nothing changes then, the approval included).
-- Locks: the evidence-order lock (lock_timeout 10 s, then 55P03), the
-- proposal, then what the change locks.
CREATE OR REPLACE FUNCTION durable_jobs.approve_change(p_change_id bigint)
RETURNS void
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET lock_timeout = '10s'
AS $function$
DECLARE
    v_change durable_jobs.pending_change := durable_jobs.decide_change(p_change_id, 'approved', NULL);
    v_values jsonb := v_change.proposed_values;
BEGIN
    PERFORM pg_catalog.set_config('leasefence.change_proposal', v_change.change_id::text, true);
    IF v_change.change_kind = 'lease_policy' THEN
        PERFORM durable_jobs.update_queue_lease_policy(v_change.queue_name, (v_values ->> 'lease_duration')::interval,
            (v_values ->> 'renewal_interval')::interval, (v_values ->> 'max_claim_lifetime')::interval,
            (v_values ->> 'renewal_enabled')::boolean, v_change.change_reason, v_change.change_ticket, SESSION_USER);
    ELSIF v_change.change_kind = 'retention_policy' THEN
        PERFORM durable_jobs.set_queue_retention_policy(v_change.queue_name, (v_values ->> 'payload_retention')::interval,
            (v_values ->> 'record_retention')::interval, v_change.change_reason, v_change.change_ticket, SESSION_USER);
    ELSE
        PERFORM durable_jobs.require_valid_change_control(v_values ->> 'ticket_pattern',
            (v_values ->> 'require_approver')::boolean, (v_values ->> 'approver_must_differ')::boolean,
            v_values ->> 'reason_pattern', (v_values ->> 'require_second_operator')::boolean,
            (v_values ->> 'proposal_lifetime')::interval);
        PERFORM durable_jobs.set_change_record(v_change.change_reason, v_change.change_ticket, SESSION_USER);
        UPDATE durable_jobs.change_control_setting
        SET ticket_pattern = v_values ->> 'ticket_pattern', require_approver = (v_values ->> 'require_approver')::boolean,
            approver_must_differ = (v_values ->> 'approver_must_differ')::boolean,
            reason_pattern = NULLIF(v_values ->> 'reason_pattern', ''),
            require_second_operator = (v_values ->> 'require_second_operator')::boolean,
            proposal_lifetime = durable_jobs.absolute_duration((v_values ->> 'proposal_lifetime')::interval);
        PERFORM durable_jobs.set_change_record('', '', '');
    END IF;
    PERFORM pg_catalog.set_config('leasefence.change_proposal', '', true);
END;
$function$;

ALTER FUNCTION durable_jobs.approve_change(bigint) OWNER TO durable_job_policy_owner;
REVOKE ALL ON FUNCTION durable_jobs.approve_change(bigint) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.approve_change(bigint) TO durable_job_operator;

-- reject_change: an operator login rejects (its proposer: withdraws) a
-- pending proposal, with a reason checked as every change record's is;
-- appends change_rejected evidence. Raises LF003 for a NULL or unknown id,
-- LF002 when it was decided already or the reason is not acceptable.
-- Locks: the evidence-order lock (lock_timeout 10 s), the proposal.
CREATE OR REPLACE FUNCTION durable_jobs.reject_change(p_change_id bigint, p_change_reason text)
RETURNS void
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET lock_timeout = '10s'
AS $function$
DECLARE
    v_setting durable_jobs.change_control_setting;
BEGIN
    PERFORM durable_jobs.lock_evidence_order();
    SELECT s.* INTO STRICT v_setting FROM durable_jobs.change_control_setting s;
    v_setting.require_approver := false;
    v_setting.require_second_operator := false;
    PERFORM durable_jobs.check_change_record(v_setting, p_change_reason, NULL, NULL);
    PERFORM durable_jobs.decide_change(p_change_id, 'rejected', p_change_reason);
END;
$function$;

ALTER FUNCTION durable_jobs.reject_change(bigint, text) OWNER TO durable_job_policy_owner;
REVOKE ALL ON FUNCTION durable_jobs.reject_change(bigint, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.reject_change(bigint, text) TO durable_job_operator;

-- pending_changes: the proposals, newest first: pending and expired ones,
-- and with p_include_decided the approved and rejected ones too, with who
-- proposed and decided them and when. change_state is pending, expired,
-- approved or rejected. Takes no lock.
CREATE OR REPLACE FUNCTION durable_jobs.pending_changes(p_include_decided boolean DEFAULT false)
RETURNS TABLE (change_id bigint, change_kind text, queue_name text, proposed_values jsonb, change_reason text,
               change_ticket text, proposed_by_role text, proposed_at timestamptz, expires_at timestamptz,
               change_state text, decided_by_role text, decided_at timestamptz)
LANGUAGE sql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
BEGIN ATOMIC
    SELECT c.change_id, c.change_kind, c.queue_name, c.proposed_values, c.change_reason, c.change_ticket,
           c.proposed_by_role, c.proposed_at, c.expires_at,
           COALESCE(c.change_decision, CASE WHEN c.expires_at < pg_catalog.clock_timestamp() THEN 'expired' ELSE 'pending' END),
           c.decided_by_role, c.decided_at
    FROM durable_jobs.pending_change c
    WHERE c.change_decision IS NULL OR COALESCE(p_include_decided, false)
    ORDER BY c.change_id DESC;
END;

ALTER FUNCTION durable_jobs.pending_changes(boolean) OWNER TO durable_job_policy_owner;
REVOKE ALL ON FUNCTION durable_jobs.pending_changes(boolean) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.pending_changes(boolean) TO durable_job_operator, durable_job_auditor;
