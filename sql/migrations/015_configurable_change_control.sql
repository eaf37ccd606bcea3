-- leasefence 015: change control is configurable (issue 19, item 4).
--
-- * durable_jobs.change_control_setting, one row: the ticket pattern every
--   change ticket must match (default ^[A-Z][A-Z0-9]+-[0-9]+$, the pattern
--   fixed before), require_approver (default false) and
--   approver_must_differ (default true: before this version an approver
--   equal to session_user was always refused, and the default keeps that).
-- * durable_jobs.change_control() reads it (auditor, operator);
--   durable_jobs.set_change_control(...) changes it (operator only): LF003
--   for a pattern that is not 1 to 200 characters or not a valid regular
--   expression, LF002 for a change record that is not structured, and a
--   change_control_changed evidence record (change_control.sql).
-- * require_structured_change (evidence_guard_v3.sql) checks every change
--   record (lease policy, retention, erasure, change control, direct policy
--   table change) against the setting.
-- * The evidence table's CHECK control_evidence_record_ticket_format, which
--   fixed the ticket to ^[A-Z][A-Z0-9]+-[0-9]+$, now bounds its length (1 to
--   100 characters); require_structured_change checks the configured pattern.
-- The down part puts require_structured_change version 2 back (inline: its
-- file evidence_guard_v2.sql creates the whole family), drops the two
-- functions and the table, and narrows the evidence-kind and ticket CHECKs
-- again, each NOT VALID when records it would refuse exist (evidence is never
-- removed).

CREATE TABLE durable_jobs.change_control_setting (
    change_control_row   boolean PRIMARY KEY DEFAULT true CONSTRAINT change_control_setting_single CHECK (change_control_row),
    ticket_pattern       text NOT NULL CONSTRAINT change_control_setting_pattern CHECK (pg_catalog.length(ticket_pattern) BETWEEN 1 AND 200),
    require_approver     boolean NOT NULL,
    approver_must_differ boolean NOT NULL,
    changed_at           timestamptz NOT NULL,
    changed_by_role      text NOT NULL
);
COMMENT ON TABLE durable_jobs.change_control_setting IS 'The change-control setting every change record is checked against (require_structured_change); one row, changed only through set_change_control.';
INSERT INTO durable_jobs.change_control_setting (ticket_pattern, require_approver, approver_must_differ, changed_at, changed_by_role)
VALUES ('^[A-Z][A-Z0-9]+-[0-9]+$', false, true, pg_catalog.clock_timestamp(), SESSION_USER);
GRANT SELECT (change_control_row, ticket_pattern, require_approver, approver_must_differ, changed_at, changed_by_role)
    ON durable_jobs.change_control_setting TO durable_job_policy_owner, durable_job_retention_owner;
GRANT UPDATE (ticket_pattern, require_approver, approver_must_differ, changed_at, changed_by_role)
    ON durable_jobs.change_control_setting TO durable_job_policy_owner;

DO $kinds$
DECLARE
    v_kinds text[];
BEGIN
    SELECT pg_catalog.array_agg(m[1] ORDER BY o)
    INTO v_kinds
    FROM pg_catalog.pg_constraint c,
         LATERAL pg_catalog.regexp_matches(pg_catalog.pg_get_constraintdef(c.oid), '''([a-z_]+)''', 'g') WITH ORDINALITY AS r(m, o)
    WHERE c.conrelid = 'durable_jobs.control_evidence_record'::pg_catalog.regclass
      AND c.conname = 'control_evidence_record_kind';
    v_kinds := v_kinds || ARRAY['change_control_changed'];
    ALTER TABLE durable_jobs.control_evidence_record DROP CONSTRAINT control_evidence_record_kind;
    EXECUTE pg_catalog.format('ALTER TABLE durable_jobs.control_evidence_record ADD CONSTRAINT control_evidence_record_kind CHECK (evidence_kind IN (%s))',
        (SELECT pg_catalog.string_agg(pg_catalog.quote_literal(k), ', ' ORDER BY o) FROM pg_catalog.unnest(v_kinds) WITH ORDINALITY AS u(k, o)));
END
$kinds$;

ALTER TABLE durable_jobs.control_evidence_record
    DROP CONSTRAINT control_evidence_record_ticket_format,
    ADD CONSTRAINT control_evidence_record_ticket_format CHECK (pg_catalog.length(change_ticket) BETWEEN 1 AND 100);

-- Evidence guard, version 3 (migration 015): only require_structured_change
-- changes; every other function of the family stays as evidence_guard_v2.sql
-- installs it. The ticket pattern and the approver rules now come from the
-- operator's change-control setting (durable_jobs.change_control_setting,
-- change_control.sql) instead of being fixed.

-- require_structured_change: raises LF002, naming the rule and never the
-- value, unless a change record is structured: a reason that is plain text
-- (is_plain_change_reason) and does not look like personal data or a secret
-- (looks_personal_or_secret); a ticket, when given, of plain text of at
-- most 100 characters matching the setting's ticket_pattern (default
-- ^[A-Z][A-Z0-9]+-[0-9]+$); an approver, when given,
-- that is an existing login role; an approver at all when require_approver
-- is set; and an approver other than session_user when
-- approver_must_differ is set (the default, as before version 3). Takes no
-- lock.
CREATE OR REPLACE FUNCTION durable_jobs.require_structured_change(p_change_reason text, p_change_ticket text, p_change_approver text)
RETURNS void
LANGUAGE plpgsql
STABLE
SET search_path = pg_catalog, pg_temp
AS $function$
DECLARE
    v_setting durable_jobs.change_control_setting;
BEGIN
    SELECT s.* INTO STRICT v_setting FROM durable_jobs.change_control_setting s;
    IF p_change_reason IS NULL OR NOT durable_jobs.is_plain_change_reason(p_change_reason) THEN
        RAISE EXCEPTION 'invalid change record' USING ERRCODE = 'LF002',
            DETAIL = 'The change reason must be 1 to 500 characters, not blank, without control or bidirectional-control characters.';
    END IF;
    IF durable_jobs.looks_personal_or_secret(p_change_reason) THEN
        RAISE EXCEPTION 'invalid change record' USING ERRCODE = 'LF002',
            DETAIL = 'The change reason looks like it holds personal data or a secret (a resident registration, card or phone number, an e-mail address or a credential); evidence is append-only and kept, so give a ticket reference instead.';
    END IF;
    IF p_change_ticket IS NOT NULL AND (pg_catalog.length(p_change_ticket) > 100
       OR NOT durable_jobs.is_plain_change_reason(p_change_ticket) OR p_change_ticket !~ v_setting.ticket_pattern) THEN
        RAISE EXCEPTION 'invalid change record' USING ERRCODE = 'LF002',
            DETAIL = 'The change ticket must be plain text of at most 100 characters matching the change-control ticket pattern (durable_jobs.change_control()).';
    END IF;
    IF p_change_approver IS NULL AND v_setting.require_approver THEN
        RAISE EXCEPTION 'invalid change record' USING ERRCODE = 'LF002',
            DETAIL = 'Change control requires an approver for every change.';
    END IF;
    IF p_change_approver IS NOT NULL AND NOT EXISTS (
           SELECT 1 FROM pg_catalog.pg_roles r WHERE r.rolname = p_change_approver AND r.rolcanlogin) THEN
        RAISE EXCEPTION 'invalid change record' USING ERRCODE = 'LF002',
            DETAIL = 'The approver must be an existing login role.';
    END IF;
    IF p_change_approver = SESSION_USER AND v_setting.approver_must_differ THEN
        RAISE EXCEPTION 'invalid change record' USING ERRCODE = 'LF002',
            DETAIL = 'Change control requires the approver to be another login than the one making the change.';
    END IF;
END;
$function$;

-- Change control (migration 015): the operator's setting that every change
-- record is checked against (require_structured_change, evidence_guard_v3.sql).
--
--   change_control         the setting: ticket pattern, require_approver,
--                          approver_must_differ (auditor and operator read it)
--   set_change_control     an operator changes it, recorded as control
--                          evidence (change_control_changed) like a policy change

-- change_control: the one row of durable_jobs.change_control_setting.
-- Takes no lock.
CREATE FUNCTION durable_jobs.change_control()
RETURNS TABLE(ticket_pattern text, require_approver boolean, approver_must_differ boolean,
              changed_at timestamptz, changed_by_role text)
LANGUAGE sql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
BEGIN ATOMIC
    SELECT s.ticket_pattern, s.require_approver, s.approver_must_differ, s.changed_at, s.changed_by_role
    FROM durable_jobs.change_control_setting s;
END;

-- set_change_control: sets the change-control setting. Raises LF003 and
-- changes nothing when a value is NULL or the ticket pattern is not 1 to 200
-- characters or not a valid regular expression; LF002
-- (require_structured_change, checked against the setting in force before
-- this change) when the change record is not structured. Appends a
-- change_control_changed evidence record with the previous and new values,
-- reason, ticket, approver and session_user. Locks: the evidence-order lock
-- (lock_timeout 10 s, then 55P03 and nothing changed).
CREATE FUNCTION durable_jobs.set_change_control(p_ticket_pattern text, p_require_approver boolean,
    p_approver_must_differ boolean, p_change_reason text, p_change_ticket text, p_change_approver text DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET lock_timeout = '10s'
AS $function$
DECLARE
    v_previous jsonb;
    v_new jsonb := pg_catalog.jsonb_build_object('ticket_pattern', p_ticket_pattern,
        'require_approver', p_require_approver, 'approver_must_differ', p_approver_must_differ);
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
    PERFORM durable_jobs.require_structured_change(p_change_reason, p_change_ticket, p_change_approver);
    PERFORM durable_jobs.lock_evidence_order();
    SELECT pg_catalog.jsonb_build_object('ticket_pattern', s.ticket_pattern,
               'require_approver', s.require_approver, 'approver_must_differ', s.approver_must_differ)
    INTO STRICT v_previous
    FROM durable_jobs.change_control_setting s FOR UPDATE;
    UPDATE durable_jobs.change_control_setting
    SET ticket_pattern = p_ticket_pattern, require_approver = p_require_approver,
        approver_must_differ = p_approver_must_differ, changed_at = pg_catalog.clock_timestamp(),
        changed_by_role = SESSION_USER;
    INSERT INTO durable_jobs.control_evidence_record
        (evidence_kind, queue_name, previous_values, new_values, change_reason, change_ticket, change_approver)
    VALUES ('change_control_changed', NULL, v_previous, v_new, p_change_reason, p_change_ticket, p_change_approver);
END;
$function$;

ALTER FUNCTION durable_jobs.change_control() OWNER TO durable_job_policy_owner;
ALTER FUNCTION durable_jobs.set_change_control(text, boolean, boolean, text, text, text) OWNER TO durable_job_policy_owner;
REVOKE ALL ON FUNCTION durable_jobs.change_control() FROM PUBLIC;
REVOKE ALL ON FUNCTION durable_jobs.set_change_control(text, boolean, boolean, text, text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.change_control() TO durable_job_auditor, durable_job_operator;
GRANT EXECUTE ON FUNCTION durable_jobs.set_change_control(text, boolean, boolean, text, text, text) TO durable_job_operator;


SELECT pg_catalog.pg_advisory_xact_lock(1279655936, 1);
INSERT INTO durable_jobs.control_evidence_record (evidence_kind, queue_name, previous_values, new_values, change_reason)
VALUES ('migration_applied', NULL, NULL, '{"migration_version": 15, "migration_name": "015_configurable_change_control"}',
        COALESCE(NULLIF(pg_catalog.current_setting('leasefence.migration_reason', true), ''), 'leasefence bundle migration'));

---- create above / drop below ----

DROP FUNCTION durable_jobs.set_change_control(text, boolean, boolean, text, text, text);
DROP FUNCTION durable_jobs.change_control();
-- require_structured_change version 2, exactly as evidence_guard_v2.sql defines it.
CREATE OR REPLACE FUNCTION durable_jobs.require_structured_change(p_change_reason text, p_change_ticket text, p_change_approver text)
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
DROP TABLE durable_jobs.change_control_setting;

ALTER TABLE durable_jobs.control_evidence_record DROP CONSTRAINT control_evidence_record_ticket_format;
DO $ticket$
BEGIN
    EXECUTE 'ALTER TABLE durable_jobs.control_evidence_record ADD CONSTRAINT control_evidence_record_ticket_format '
        || 'CHECK (change_ticket ~ ''^[A-Z][A-Z0-9]+-[0-9]+$'')'
        || CASE WHEN EXISTS (SELECT 1 FROM durable_jobs.control_evidence_record e
                             WHERE e.change_ticket !~ '^[A-Z][A-Z0-9]+-[0-9]+$')
                THEN ' NOT VALID' ELSE '' END;
END
$ticket$;

DO $kinds$
DECLARE
    v_kinds text[];
    v_ours text[] := ARRAY['change_control_changed'];
BEGIN
    SELECT pg_catalog.array_agg(m[1] ORDER BY o)
    INTO v_kinds
    FROM pg_catalog.pg_constraint c,
         LATERAL pg_catalog.regexp_matches(pg_catalog.pg_get_constraintdef(c.oid), '''([a-z_]+)''', 'g') WITH ORDINALITY AS r(m, o)
    WHERE c.conrelid = 'durable_jobs.control_evidence_record'::pg_catalog.regclass
      AND c.conname = 'control_evidence_record_kind'
      AND m[1] <> ALL (v_ours);
    ALTER TABLE durable_jobs.control_evidence_record DROP CONSTRAINT control_evidence_record_kind;
    EXECUTE pg_catalog.format('ALTER TABLE durable_jobs.control_evidence_record ADD CONSTRAINT control_evidence_record_kind CHECK (evidence_kind IN (%s))%s',
        (SELECT pg_catalog.string_agg(pg_catalog.quote_literal(k), ', ' ORDER BY o) FROM pg_catalog.unnest(v_kinds) WITH ORDINALITY AS u(k, o)),
        CASE WHEN EXISTS (SELECT 1 FROM durable_jobs.control_evidence_record e WHERE e.evidence_kind = ANY (v_ours))
             THEN ' NOT VALID' ELSE '' END);
END
$kinds$;

SELECT pg_catalog.pg_advisory_xact_lock(1279655936, 1);
INSERT INTO durable_jobs.control_evidence_record (evidence_kind, queue_name, previous_values, new_values, change_reason)
VALUES ('migration_reverted', NULL, NULL, '{"migration_version": 15, "migration_name": "015_configurable_change_control"}',
        COALESCE(NULLIF(pg_catalog.current_setting('leasefence.migration_reason', true), ''),
                 'leasefence bundle migration rolled back'));
