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
-- and (since migration 024, last) the reason pattern, NULL while reasons
-- are free text. Takes no lock.
CREATE OR REPLACE FUNCTION durable_jobs.change_control()
RETURNS TABLE(ticket_pattern text, require_approver boolean, approver_must_differ boolean,
              changed_at timestamptz, changed_by_role text, reason_pattern text)
LANGUAGE sql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
BEGIN ATOMIC
    SELECT s.ticket_pattern, s.require_approver, s.approver_must_differ, s.changed_at, s.changed_by_role,
           s.reason_pattern
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
-- and an approver other than session_user when approver_must_differ is set
-- (the default). The change-control trigger checks a change against the
-- setting before it with this function. Takes no lock.
CREATE OR REPLACE FUNCTION durable_jobs.check_change_record(p_setting durable_jobs.change_control_setting,
    p_change_reason text, p_change_ticket text, p_change_approver text)
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
    IF p_change_approver = SESSION_USER AND p_setting.approver_must_differ THEN
        RAISE EXCEPTION 'invalid change record' USING ERRCODE = 'LF002',
            DETAIL = 'Change control requires the approver to be another login than the one making the change.';
    END IF;
END;
$function$;

REVOKE ALL ON FUNCTION durable_jobs.check_change_record(durable_jobs.change_control_setting, text, text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.check_change_record(durable_jobs.change_control_setting, text, text, text) TO durable_job_policy_owner, durable_job_retention_owner;
