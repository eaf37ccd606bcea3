-- leasefence 026: evidence an auditor accepts without trusting the DBA
-- (issue 39).
--
-- * A chain can be followed across a restart or a restore:
--   continue_evidence_chain appends an evidence_chain_continued record that
--   names the head of an export kept outside the database, which
--   `leasectl evidence verify --anchor` follows.
-- * Every control table records its own changes, whatever the path: the
--   retention policy and the change-control setting gain an evidence trigger
--   (who, before, after, reason, ticket, approver) and a stamp trigger
--   (changed_by_role is session_user), and refuse TRUNCATE (the
--   change-control row also DELETE); set_queue_retention_policy and
--   erase_job_payload take a ticket and an approver. This migration's own
--   record holds every control row as it stands (a baseline), so the
--   audit's control_evidence_mismatches compares from now on.
-- * An approver named in a change must hold durable_job_operator, and
--   change control can require maker-checker: a policy, retention or
--   change-control change proposed by one operator login (propose_change)
--   takes effect only when another approves it in its own session
--   (approve_change) before the proposal expires; both recorded, with
--   times (change_proposed, change_approved, change_rejected).
-- * Operator actions on jobs are on record: cancel_job and replay_job gain
--   overloads that take a reason, ticket and approver; every cancel, replay
--   and erasure appends to the job's action trail (job_action_record,
--   operator_job_actions); reasoned cancels, every replay and erasures
--   append chained evidence (queue and status, never the job id).
-- * job_status_mismatches counts finished jobs whose status no fenced
--   write or action explains (a superuser's UPDATE of statuses), and
--   processing_counts gives a period's processing figures per queue.
-- The down part puts the six families back as migration 025 left them.

ALTER TABLE durable_jobs.control_evidence_record DROP CONSTRAINT control_evidence_record_kind;
ALTER TABLE durable_jobs.control_evidence_record ADD CONSTRAINT control_evidence_record_kind CHECK (evidence_kind IN (
    'migration_applied', 'migration_reverted', 'lease_policy_changed', 'renewal_enablement_changed',
    'deployment_recorded', 'retention_policy_changed', 'job_data_purged', 'job_payload_erased',
    'change_control_changed', 'evidence_chain_continued', 'job_cancelled', 'job_replayed', 'change_proposed',
    'change_approved', 'change_rejected'));

-- Maker-checker: the change control's two new settings, and the proposals.
ALTER TABLE durable_jobs.change_control_setting
    ADD COLUMN require_second_operator boolean NOT NULL DEFAULT false,
    ADD COLUMN proposal_lifetime interval NOT NULL DEFAULT '24:00:00'
        CONSTRAINT change_control_setting_proposal_lifetime CHECK (proposal_lifetime BETWEEN interval '1 minute' AND interval '30 days');
GRANT SELECT (require_second_operator, proposal_lifetime), UPDATE (require_second_operator, proposal_lifetime)
    ON durable_jobs.change_control_setting TO durable_job_policy_owner;
GRANT SELECT (require_second_operator, proposal_lifetime) ON durable_jobs.change_control_setting
    TO durable_job_retention_owner, durable_job_audit_owner;
CREATE TABLE durable_jobs.pending_change (
    change_id bigint GENERATED ALWAYS AS IDENTITY CONSTRAINT pending_change_pkey PRIMARY KEY,
    change_kind text NOT NULL CONSTRAINT pending_change_kind CHECK (change_kind IN ('lease_policy', 'retention_policy', 'change_control')),
    queue_name text,
    proposed_values jsonb NOT NULL,
    change_reason text NOT NULL,
    change_ticket text,
    proposed_by_role text NOT NULL DEFAULT SESSION_USER,
    proposed_at timestamptz NOT NULL DEFAULT pg_catalog.clock_timestamp(),
    expires_at timestamptz NOT NULL,
    change_decision text CONSTRAINT pending_change_decision CHECK (change_decision IN ('approved', 'rejected')),
    decided_by_role text,
    decided_at timestamptz,
    decided_in_transaction xid8
);
COMMENT ON TABLE durable_jobs.pending_change IS
    'Maker-checker proposals: a change proposed by one operator login, approved or rejected by another (propose_change, approve_change).';
REVOKE ALL ON durable_jobs.pending_change FROM PUBLIC;
GRANT SELECT, INSERT (change_kind, queue_name, proposed_values, change_reason, change_ticket, expires_at),
      UPDATE (change_decision, decided_by_role, decided_at, decided_in_transaction)
    ON durable_jobs.pending_change TO durable_job_policy_owner;
-- change_control() returns the two new settings (a new row type).
DROP FUNCTION durable_jobs.change_control();

CREATE TABLE durable_jobs.job_action_record (
    job_action_record_id bigint GENERATED ALWAYS AS IDENTITY CONSTRAINT job_action_record_pkey PRIMARY KEY,
    job_record_id bigint NOT NULL CONSTRAINT job_action_record_job
        REFERENCES durable_jobs.job_record (job_record_id) ON DELETE CASCADE,
    action_kind text NOT NULL CONSTRAINT job_action_record_kind CHECK (action_kind IN ('cancelled', 'replayed', 'payload_erased')),
    acted_by_role text NOT NULL DEFAULT SESSION_USER,
    acted_at timestamptz NOT NULL DEFAULT pg_catalog.clock_timestamp(),
    change_reason text,
    change_ticket text,
    change_approver text
);
CREATE INDEX job_action_record_job_lookup ON durable_jobs.job_action_record (job_record_id);
COMMENT ON TABLE durable_jobs.job_action_record IS
    'Each job''s action trail: cancels, replays and payload erasures, with who, when, why, ticket and approver. Removed with the job.';
REVOKE ALL ON durable_jobs.job_action_record FROM PUBLIC;
GRANT INSERT (job_record_id, action_kind, change_reason, change_ticket, change_approver)
    ON durable_jobs.job_action_record TO durable_job_retention_owner;
GRANT SELECT (job_action_record_id, job_record_id, action_kind, acted_by_role, acted_at, change_reason, change_ticket,
              change_approver)
    ON durable_jobs.job_action_record TO durable_job_audit_owner;
-- Erasures, reasoned job actions and retention changes record a ticket and
-- an approver.
GRANT INSERT (change_ticket, change_approver) ON durable_jobs.control_evidence_record TO durable_job_retention_owner;
-- control_evidence_mismatches compares the control tables with their records.
GRANT SELECT (queue_name, payload_retention, record_retention) ON durable_jobs.queue_retention_policy TO durable_job_audit_owner;
GRANT SELECT (ticket_pattern, require_approver, approver_must_differ, reason_pattern) ON durable_jobs.change_control_setting
    TO durable_job_audit_owner;
-- job_status_mismatches reads which outcome each job has, never a result.
GRANT SELECT (job_record_id, lease_fencing_generation, outcome_status, recorded_at) ON durable_jobs.job_outcome_ledger
    TO durable_job_audit_owner;

-- Control evidence: the order lock, the hash chain, the append-only guard, the reason checks and the policy-table trigger.
--
-- The current definition of each function of this family, edited in place.
-- A change reaches databases through a new migration that includes this
-- file; released migrations hold their own frozen copy (see sql/doc.go).
--
-- Below, the notes written with the versions the current definitions come
-- from, newest first. They name the files as they were then; each
-- migration's frozen SQL under sql/migrations holds the whole text.

-- Notes of migration 006 (evidence_guard_v2.sql in its frozen SQL):
--
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

-- Notes of migration 005 (retention.sql in its frozen SQL):
--
-- The retention and erasure family (first version, installed by the
-- retention migration). Owned by durable_job_retention_owner, which may
-- delete finished jobs, delete payload rows and clear result documents,
-- but holds no SELECT on job_payload_record.job_payload or on
-- job_outcome_ledger.result_document: it removes personal data without
-- being able to read it. Executable by durable_job_operator only.

-- lock_evidence_order: every writer of control evidence calls this before
-- it reads what it records and before it inserts, so evidence writers run
-- one at a time and each record's id and recorded_at come after those of
-- every record committed before it: an export by id never skips a record
-- that commits later. Since migration 024 the lock is the row of
-- durable_jobs.evidence_order_lock, locked FOR UPDATE until commit or
-- rollback: a private table whose row only durable_job_policy_owner (a
-- NOLOGIN role without members, which owns this function) may lock, so no
-- login but a superuser can hold every evidence writer up (before 024 it was a transaction-level advisory
-- lock on a key the docs printed, which any login could take and keep).
-- Every writer waits for it at most 10 s (lock_timeout, then 55P03 and
-- nothing changed), and a transaction that holds it may then sit idle for
-- at most 60 s (idle_in_transaction_session_timeout, set for the rest of
-- the transaction unless the session's own bound is shorter) before the
-- server ends it. Waits for another evidence writer's open transaction.
CREATE OR REPLACE FUNCTION durable_jobs.lock_evidence_order()
RETURNS void
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET lock_timeout = '10s'
AS $function$
DECLARE
    v_idle_timeout_ms bigint;
BEGIN
    PERFORM 1 FROM durable_jobs.evidence_order_lock l FOR UPDATE;
    SELECT s.setting::bigint INTO STRICT v_idle_timeout_ms
    FROM pg_catalog.pg_settings s WHERE s.name = 'idle_in_transaction_session_timeout';
    IF v_idle_timeout_ms = 0 OR v_idle_timeout_ms > 60000 THEN
        PERFORM pg_catalog.set_config('idle_in_transaction_session_timeout', '60s', true);
    END IF;
END;
$function$;

ALTER FUNCTION durable_jobs.lock_evidence_order() OWNER TO durable_job_policy_owner;
REVOKE ALL ON FUNCTION durable_jobs.lock_evidence_order() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.lock_evidence_order() TO durable_job_retention_owner;

-- evidence_content_digest: sha256 over one evidence record's content (its
-- id, kind, queue, previous and new values, reason, changed-by role,
-- recorded time as epoch seconds, ticket and approver), serialised as a
-- jsonb array's text, which is the same for the same values on every
-- server. NULL fields are part of the content. Takes no lock.
CREATE OR REPLACE FUNCTION durable_jobs.evidence_content_digest(p_evidence_record_id bigint, p_evidence_kind text,
    p_queue_name text, p_previous_values jsonb, p_new_values jsonb, p_change_reason text, p_changed_by_role text,
    p_recorded_at timestamptz, p_change_ticket text, p_change_approver text)
RETURNS bytea
LANGUAGE sql
IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
RETURN pg_catalog.sha256(pg_catalog.convert_to(pg_catalog.jsonb_build_array(
    p_evidence_record_id, p_evidence_kind, p_queue_name, p_previous_values, p_new_values, p_change_reason,
    p_changed_by_role, (EXTRACT(epoch FROM p_recorded_at))::text, p_change_ticket, p_change_approver)::text, 'UTF8'));

REVOKE ALL ON FUNCTION durable_jobs.evidence_content_digest(bigint, text, text, jsonb, jsonb, text, text, timestamp with time zone, text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.evidence_content_digest(bigint, text, text, jsonb, jsonb, text, text, timestamp with time zone, text, text) TO durable_job_policy_owner, durable_job_audit_owner, durable_job_retention_owner;

-- chain_evidence_record: BEFORE INSERT trigger on control_evidence_record.
-- Under the evidence-order lock (lock_evidence_order) it sets the new
-- record's previous_record_hash to the record_hash of the record with the
-- highest id (32 zero bytes for the first) and its record_hash to
-- sha256(previous_record_hash || evidence_content_digest(...)), so chain
-- order is id order is commit order. Raises LF003 when the transaction is
-- not READ COMMITTED (an older snapshot could miss the last record) or when
-- the new id is not above every committed id (the writer drew its id before
-- taking the lock); nothing is written then. Since migration 026 a
-- migration's own record (migration_applied or migration_reverted, which
-- its frozen SQL writes without ticket or approver) takes the ticket and
-- approver from the settings leasefence.migration_ticket and
-- leasefence.migration_approver (leasectl migrate --ticket, --approver)
-- and is checked against the change control in force
-- (check_change_record, maker-checker aside): LF002 refuses the migration
-- where change control requires an approver and none was given.
CREATE OR REPLACE FUNCTION durable_jobs.chain_evidence_record()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $function$
DECLARE
    v_last_id bigint;
    v_last_hash bytea;
    v_setting durable_jobs.change_control_setting;
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
    IF NEW.evidence_kind IN ('migration_applied', 'migration_reverted') AND NEW.change_ticket IS NULL
       AND NEW.change_approver IS NULL THEN
        -- A migration's own record (its frozen SQL names neither): the ticket
        -- and approver leasectl migrate --ticket/--approver set, checked
        -- against the change control in force (maker-checker aside: a
        -- migration is applied by the installer, not proposed).
        NEW.change_ticket := NULLIF(pg_catalog.current_setting('leasefence.migration_ticket', true), '');
        NEW.change_approver := NULLIF(pg_catalog.current_setting('leasefence.migration_approver', true), '');
        SELECT s.* INTO STRICT v_setting FROM durable_jobs.change_control_setting s;
        v_setting.require_second_operator := false;
        PERFORM durable_jobs.check_change_record(v_setting, NEW.change_reason, NEW.change_ticket, NEW.change_approver);
    END IF;
    NEW.previous_record_hash := COALESCE(v_last_hash, pg_catalog.decode(pg_catalog.repeat('00', 32), 'hex'));
    NEW.record_hash := pg_catalog.sha256(NEW.previous_record_hash || durable_jobs.evidence_content_digest(
        NEW.evidence_record_id, NEW.evidence_kind, NEW.queue_name, NEW.previous_values, NEW.new_values,
        NEW.change_reason, NEW.changed_by_role, NEW.recorded_at, NEW.change_ticket, NEW.change_approver));
    RETURN NEW;
END;
$function$;

REVOKE ALL ON FUNCTION durable_jobs.chain_evidence_record() FROM PUBLIC;

-- refuse_evidence_change: trigger that keeps control_evidence_record
-- append-only. Fires before UPDATE, DELETE (per row) and TRUNCATE (per
-- statement) for every role, the table owner included.
-- Raises LF004 (evidence is append-only). Takes no lock of its own.
CREATE OR REPLACE FUNCTION durable_jobs.refuse_evidence_change()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $function$
BEGIN
    RAISE EXCEPTION USING
        ERRCODE = 'LF004',
        MESSAGE = 'control evidence is append-only',
        DETAIL = pg_catalog.format('%s on %s is refused', TG_OP, TG_TABLE_NAME),
        HINT = 'Append a new evidence record instead.';
END;
$function$;

ALTER FUNCTION durable_jobs.refuse_evidence_change() OWNER TO durable_job_evidence_owner;
REVOKE ALL ON FUNCTION durable_jobs.refuse_evidence_change() FROM PUBLIC;

-- screening_form: free text as looks_personal_or_secret reads it, so each
-- of its ASCII rules also catches the other forms of the same data
-- (migration 024): Unicode NFKC normalization (full-width digits and
-- letters, '＠', '．' and other compatibility forms become ASCII; only in
-- a UTF8 database, the others hold no such characters), invisible
-- characters removed (soft hyphen, zero-width and word-joiner characters,
-- Hangul fillers, variation selectors, tag characters, the byte order
-- mark), every Unicode hyphen and dash written '-', the ideographic full
-- stop written '.', and the decimal digits of the Arabic-Indic, Extended
-- Arabic-Indic, Devanagari, Bengali, Thai, Myanmar and Khmer scripts
-- written as ASCII digits. Only for screening: the text recorded is the
-- text given. NULL in, NULL out. Takes no lock.
CREATE OR REPLACE FUNCTION durable_jobs.screening_form(p_text text)
RETURNS text
LANGUAGE sql
IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
BEGIN ATOMIC
    SELECT CASE WHEN s.t ~ '[\u0660-\u0669\u06f0-\u06f9\u0966-\u096f\u09e6-\u09ef\u0e50-\u0e59\u1040-\u1049\u17e0-\u17e9]'
           THEN (SELECT pg_catalog.string_agg(CASE
                     WHEN c.ch ~ '[\u0660-\u0669]' THEN pg_catalog.chr(pg_catalog.ascii(c.ch) - 1584)
                     WHEN c.ch ~ '[\u06f0-\u06f9]' THEN pg_catalog.chr(pg_catalog.ascii(c.ch) - 1728)
                     WHEN c.ch ~ '[\u0966-\u096f]' THEN pg_catalog.chr(pg_catalog.ascii(c.ch) - 2358)
                     WHEN c.ch ~ '[\u09e6-\u09ef]' THEN pg_catalog.chr(pg_catalog.ascii(c.ch) - 2486)
                     WHEN c.ch ~ '[\u0e50-\u0e59]' THEN pg_catalog.chr(pg_catalog.ascii(c.ch) - 3616)
                     WHEN c.ch ~ '[\u1040-\u1049]' THEN pg_catalog.chr(pg_catalog.ascii(c.ch) - 4112)
                     WHEN c.ch ~ '[\u17e0-\u17e9]' THEN pg_catalog.chr(pg_catalog.ascii(c.ch) - 6064)
                     ELSE c.ch END, '' ORDER BY c.n)
                 FROM pg_catalog.regexp_split_to_table(s.t, '') WITH ORDINALITY AS c(ch, n))
           ELSE s.t END
    FROM (SELECT pg_catalog.regexp_replace(pg_catalog.regexp_replace(pg_catalog.regexp_replace(
              CASE WHEN pg_catalog.getdatabaseencoding() = 'UTF8' THEN normalize(p_text, NFKC) ELSE p_text END,
              '[\u00ad\u034f\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff0-\ufff8\U000e0000-\U000e007f]', '', 'g'),
              '[\u2010-\u2015\u2212\ufe58\ufe63\uff0d]', '-', 'g'),
              '[\u3002\uff61]', '.', 'g') AS t) s;
END;

REVOKE ALL ON FUNCTION durable_jobs.screening_form(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.screening_form(text) TO durable_job_policy_owner, durable_job_retention_owner;

-- looks_personal_or_secret: true when free text given for append-only
-- evidence looks like personal data or a secret, read in its screening
-- form (screening_form, since migration 024: full-width, other-script and
-- dotted forms are caught as the ASCII ones): a Korean resident
-- registration number (6 digits, up to three spaces, dots, underscores or
-- hyphens, then [1-4] and 6 digits), a run of 13 to 19 digits (a space,
-- dot, underscore or hyphen between any two allowed) that passes the Luhn
-- check, an e-mail address, a phone number (0 followed by 9 to 10 more
-- digits in the usual groups, the area code in parentheses or not, up to
-- three separators between groups; or + and 8 or more digits), or a
-- credential (password=, passwd=, pass=, pwd=, pw=, secret=, token=,
-- api_key=, also with ':'; "password is ..."). NULL in, NULL out. A
-- heuristic: it refuses what looks like such data and cannot prove its
-- absence; change control's reason pattern (set_change_control) can forbid
-- free text altogether. Takes no lock.
CREATE OR REPLACE FUNCTION durable_jobs.looks_personal_or_secret(p_text text)
RETURNS boolean
LANGUAGE sql
IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
BEGIN ATOMIC
    SELECT s.n ~ '(^|[^0-9])[0-9]{6}[[:space:]._-]{0,3}[1-4][0-9]{6}([^0-9]|$)'
        OR s.n ~ '[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}'
        OR s.n ~ '(^|[^0-9])[(]?0[0-9]{1,2}[)]?[[:space:]._-]{0,3}[0-9]{3,4}[[:space:]._-]{0,3}[0-9]{4}([^0-9]|$)'
        OR s.n ~ '\+[0-9][0-9[:space:]()._-]{7,}[0-9]'
        OR s.n ~* '(password|passwd|pwd|pw|secret|token|api[_-]?key)[[:space:]]*[=:]'
        OR s.n ~* '\mpass[[:space:]]*[=:]'
        OR s.n ~* '\m(password|passwd|passphrase)[[:space:]]+is[[:space:]]+[^[:space:]]'
        OR EXISTS (SELECT 1
                   FROM pg_catalog.regexp_matches(s.n, '[0-9](?:[[:space:]._-]?[0-9]){12,18}', 'g') AS m(candidate)
                   WHERE durable_jobs.passes_luhn(pg_catalog.regexp_replace(m.candidate[1], '[^0-9]', '', 'g')))
    FROM (SELECT durable_jobs.screening_form(p_text) AS n) s;
END;

REVOKE ALL ON FUNCTION durable_jobs.looks_personal_or_secret(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.looks_personal_or_secret(text) TO durable_job_policy_owner, durable_job_retention_owner;

-- passes_luhn: true when a string of 13 to 19 decimal digits passes the
-- Luhn check that payment card numbers carry. NULL in, NULL out.
CREATE OR REPLACE FUNCTION durable_jobs.passes_luhn(p_digits text)
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

REVOKE ALL ON FUNCTION durable_jobs.passes_luhn(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.passes_luhn(text) TO durable_job_policy_owner, durable_job_retention_owner;

-- is_plain_change_reason: true when an operator's change reason is 1 to 500
-- characters, not blank, and has no control character (C0, DEL, C1: ESC,
-- newlines and tabs included) and no bidirectional-control or line/paragraph
-- separator character (U+061C, U+200E, U+200F, U+2028 to U+202E, U+2066 to
-- U+2069) that could make evidence read differently from what it holds,
-- and (since migration 024) no invisible character: soft hyphen (U+00AD),
-- combining grapheme joiner, Hangul fillers (U+115F, U+1160, U+3164,
-- U+FFA0), Khmer and Mongolian invisible signs, zero-width and
-- word-joiner characters (U+200B to U+200F, U+2060 to U+206F), variation
-- selectors, the byte order mark (U+FEFF), U+FFF0 to U+FFF8 and tag
-- characters (U+E0000 to U+E007F). NULL in, NULL out. Takes no lock.
CREATE OR REPLACE FUNCTION durable_jobs.is_plain_change_reason(p_change_reason text)
RETURNS boolean
LANGUAGE sql
IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
RETURN p_change_reason ~ '[^[:space:]]'
   AND pg_catalog.length(p_change_reason) <= 500
   AND p_change_reason !~ '[\x01-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069\u00ad\u034f\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff0-\ufff8\U000e0000-\U000e007f]';

REVOKE ALL ON FUNCTION durable_jobs.is_plain_change_reason(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.is_plain_change_reason(text) TO durable_job_policy_owner, durable_job_retention_owner;

-- require_valid_change_reason: private helper that refuses (p_sqlstate) a
-- change reason that is NULL, blank, over 500 characters or holds a control
-- character (newline, tab, escape...), so evidence stays one printable line.
-- The message never repeats the reason. Takes no lock.
CREATE OR REPLACE FUNCTION durable_jobs.require_valid_change_reason(p_change_reason text, p_sqlstate text)
RETURNS void
LANGUAGE plpgsql
IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $function$
BEGIN
    IF p_change_reason IS NULL OR p_change_reason !~ '[^[:space:]]' OR pg_catalog.length(p_change_reason) > 500
       OR p_change_reason ~ '[[:cntrl:]]' THEN
        RAISE EXCEPTION USING
            ERRCODE = p_sqlstate,
            MESSAGE = 'invalid change reason',
            DETAIL = 'A change reason is 1 to 500 characters, not blank, without control characters (newlines, tabs).';
    END IF;
END;
$function$;

ALTER FUNCTION durable_jobs.require_valid_change_reason(text, text) OWNER TO durable_job_retention_owner;
REVOKE ALL ON FUNCTION durable_jobs.require_valid_change_reason(text, text) FROM PUBLIC;

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
-- The durations are written as IntervalStyle postgres gives them
-- ('00:00:10'), whatever the session's IntervalStyle, DateStyle, TimeZone
-- or extra_float_digits (since migration 024; before, a change made under
-- IntervalStyle postgres_verbose recorded '@ 10 secs').
CREATE OR REPLACE FUNCTION durable_jobs.record_policy_change()
RETURNS trigger
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET lock_timeout = '10s'
SET IntervalStyle = 'postgres'
SET DateStyle = 'ISO, MDY'
SET TimeZone = 'UTC'
SET extra_float_digits = '1'
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

ALTER FUNCTION durable_jobs.record_policy_change() OWNER TO durable_job_policy_owner;
REVOKE ALL ON FUNCTION durable_jobs.record_policy_change() FROM PUBLIC;

-- stamp_policy_change: BEFORE INSERT OR UPDATE trigger on
-- queue_lease_policy. Sets changed_by_role to session_user and changed_at to
-- the database time whatever the statement wrote, so the row cannot name
-- someone else. Raises LF002 when an UPDATE renames a queue's row (delete
-- it and insert the new one instead). Takes no lock.
CREATE OR REPLACE FUNCTION durable_jobs.stamp_policy_change()
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

REVOKE ALL ON FUNCTION durable_jobs.stamp_policy_change() FROM PUBLIC;

-- refuse_policy_truncate: BEFORE TRUNCATE trigger on queue_lease_policy.
-- TRUNCATE fires no row trigger, so it would remove policies without
-- evidence: refused for every role with LF002. Takes no lock.
CREATE OR REPLACE FUNCTION durable_jobs.refuse_policy_truncate()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $function$
BEGIN
    RAISE EXCEPTION 'TRUNCATE of queue_lease_policy is refused' USING ERRCODE = 'LF002',
        HINT = 'Delete the rows instead, so that each removal is recorded as evidence.';
END;
$function$;

REVOKE ALL ON FUNCTION durable_jobs.refuse_policy_truncate() FROM PUBLIC;

-- continue_evidence_chain: appends an evidence_chain_continued record that
-- names the head of an earlier chain, as an export kept outside the
-- database holds it (since migration 026): after a restore of an older
-- backup (the records after the restored head are gone, and their ids
-- would be used again) or after the bundle was removed and installed again
-- (a new chain from id 1), so that `leasectl evidence verify --anchor`
-- can follow the chain across: the records between this record's
-- predecessor and the named head live in that export. Its new_values are
-- {"previous_head_id": id, "previous_head_hash": lowercase hex of the
-- head's record_hash}; no job id, no payload. Returns the new record's id.
-- Raises LF003 for a NULL or non-positive head id or a hash that is not 32
-- bytes, LF002 (require_structured_change) when the change record is not
-- structured: nothing is written then. Takes the evidence-order lock
-- (lock_timeout 10 s, then 55P03).
CREATE OR REPLACE FUNCTION durable_jobs.continue_evidence_chain(p_previous_head_id bigint,
    p_previous_head_hash bytea, p_change_reason text, p_change_ticket text DEFAULT NULL,
    p_change_approver text DEFAULT NULL)
RETURNS bigint
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET lock_timeout = '10s'
AS $function$
DECLARE
    v_record_id bigint;
BEGIN
    IF p_previous_head_id IS NULL OR p_previous_head_id < 1
       OR p_previous_head_hash IS NULL OR pg_catalog.length(p_previous_head_hash) <> 32 THEN
        RAISE EXCEPTION 'invalid chain head' USING ERRCODE = 'LF003',
            DETAIL = 'Need the id (1 or more) and the 32-byte record hash of the head an export ends with.';
    END IF;
    PERFORM durable_jobs.require_structured_change(p_change_reason, p_change_ticket, p_change_approver);
    INSERT INTO durable_jobs.control_evidence_record
        (evidence_kind, queue_name, previous_values, new_values, change_reason, change_ticket, change_approver)
    VALUES ('evidence_chain_continued', NULL, NULL,
            pg_catalog.jsonb_build_object('previous_head_id', p_previous_head_id,
                'previous_head_hash', pg_catalog.encode(p_previous_head_hash, 'hex')),
            p_change_reason, p_change_ticket, p_change_approver)
    RETURNING evidence_record_id INTO v_record_id;
    RETURN v_record_id;
END;
$function$;

ALTER FUNCTION durable_jobs.continue_evidence_chain(bigint, bytea, text, text, text) OWNER TO durable_job_policy_owner;
REVOKE ALL ON FUNCTION durable_jobs.continue_evidence_chain(bigint, bytea, text, text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.continue_evidence_chain(bigint, bytea, text, text, text) TO durable_job_operator;

-- stamp_control_change: BEFORE INSERT OR UPDATE trigger on
-- queue_retention_policy and change_control_setting (since migration 026,
-- as stamp_policy_change does for the lease policy). Sets changed_by_role
-- to session_user and changed_at to the database time whatever the
-- statement wrote, so a row changed outside the functions (a superuser's
-- UPDATE) names who changed it. Raises LF002 when an UPDATE renames a
-- queue's retention row (delete it and insert the new one instead). Takes
-- no lock.
CREATE OR REPLACE FUNCTION durable_jobs.stamp_control_change()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $function$
BEGIN
    IF TG_OP = 'UPDATE' AND (pg_catalog.to_jsonb(NEW) -> 'queue_name') IS DISTINCT FROM (pg_catalog.to_jsonb(OLD) -> 'queue_name') THEN
        RAISE EXCEPTION 'a queue''s retention policy row cannot be renamed' USING ERRCODE = 'LF002',
            HINT = 'Delete the row and insert one for the new queue name.';
    END IF;
    NEW.changed_by_role := SESSION_USER::text;
    NEW.changed_at := pg_catalog.clock_timestamp();
    RETURN NEW;
END;
$function$;

REVOKE ALL ON FUNCTION durable_jobs.stamp_control_change() FROM PUBLIC;

-- refuse_control_removal: BEFORE TRUNCATE trigger on queue_retention_policy
-- and BEFORE DELETE OR TRUNCATE trigger on change_control_setting (since
-- migration 026). TRUNCATE fires no row trigger, so it would change a
-- control without evidence, and the change-control row is the one every
-- change record is checked against: refused for every role with LF002.
-- Takes no lock.
CREATE OR REPLACE FUNCTION durable_jobs.refuse_control_removal()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $function$
BEGIN
    RAISE EXCEPTION USING
        ERRCODE = 'LF002',
        MESSAGE = pg_catalog.format('%s of %s is refused', TG_OP, TG_TABLE_NAME),
        HINT = 'Change a control through its function (or row by row), so that each change is recorded as evidence.';
END;
$function$;

REVOKE ALL ON FUNCTION durable_jobs.refuse_control_removal() FROM PUBLIC;

-- record_retention_policy_change: AFTER INSERT OR UPDATE OR DELETE row
-- trigger on queue_retention_policy, SECURITY DEFINER (owned by
-- durable_job_retention_owner), so every change of the table is recorded,
-- however it was made (since migration 026; before, only
-- set_queue_retention_policy wrote evidence and a superuser's UPDATE left
-- none). Appends a retention_policy_changed record with the queue's
-- effective retention before and after (its own row, else the default '*';
-- policy_queue_name says which; {"policy_queue_name": null} when none is
-- left). changed_by_role is session_user. The reason, ticket and approver
-- come from the transaction-local settings leasefence.change_reason,
-- leasefence.change_ticket and leasefence.change_approver, which
-- set_queue_retention_policy sets; a change without a reason is recorded as
-- 'direct table change without a reason'. Raises LF002
-- (require_structured_change) when the change record is not acceptable, so
-- the change is refused. Durations are written as IntervalStyle postgres
-- gives them, whatever the session's settings. Takes the evidence-order
-- lock (lock_timeout 10 s).
CREATE OR REPLACE FUNCTION durable_jobs.record_retention_policy_change()
RETURNS trigger
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET lock_timeout = '10s'
SET IntervalStyle = 'postgres'
SET DateStyle = 'ISO, MDY'
SET TimeZone = 'UTC'
SET extra_float_digits = '1'
AS $function$
DECLARE
    v_reason text := COALESCE(NULLIF(pg_catalog.current_setting('leasefence.change_reason', true), ''),
                              'direct table change without a reason');
    v_ticket text := NULLIF(pg_catalog.current_setting('leasefence.change_ticket', true), '');
    v_approver text := NULLIF(pg_catalog.current_setting('leasefence.change_approver', true), '');
    v_queue text;
    v_previous jsonb;
    v_new jsonb;
BEGIN
    PERFORM durable_jobs.require_structured_change(v_reason, v_ticket, v_approver);
    IF TG_OP = 'INSERT' THEN
        v_queue := NEW.queue_name;
        SELECT pg_catalog.jsonb_build_object('policy_queue_name', p.queue_name,
                   'payload_retention', p.payload_retention, 'record_retention', p.record_retention)
        INTO v_previous
        FROM durable_jobs.queue_retention_policy p
        WHERE p.queue_name = '*' AND v_queue <> '*';
    ELSE
        v_queue := OLD.queue_name;
        v_previous := pg_catalog.jsonb_build_object('policy_queue_name', OLD.queue_name,
            'payload_retention', OLD.payload_retention, 'record_retention', OLD.record_retention);
    END IF;
    IF TG_OP = 'DELETE' THEN
        SELECT pg_catalog.jsonb_build_object('policy_queue_name', p.queue_name,
                   'payload_retention', p.payload_retention, 'record_retention', p.record_retention)
        INTO v_new
        FROM durable_jobs.queue_retention_policy p
        WHERE p.queue_name = '*' AND v_queue <> '*';
        v_new := COALESCE(v_new, pg_catalog.jsonb_build_object('policy_queue_name', NULL));
    ELSE
        v_new := pg_catalog.jsonb_build_object('policy_queue_name', NEW.queue_name,
            'payload_retention', NEW.payload_retention, 'record_retention', NEW.record_retention);
    END IF;
    INSERT INTO durable_jobs.control_evidence_record
        (evidence_kind, queue_name, previous_values, new_values, change_reason, change_ticket, change_approver)
    VALUES ('retention_policy_changed', v_queue, v_previous, v_new, v_reason, v_ticket, v_approver);
    RETURN NULL;
END;
$function$;

ALTER FUNCTION durable_jobs.record_retention_policy_change() OWNER TO durable_job_retention_owner;
REVOKE ALL ON FUNCTION durable_jobs.record_retention_policy_change() FROM PUBLIC;

-- record_change_control_change: AFTER UPDATE row trigger on
-- change_control_setting, SECURITY DEFINER (owned by
-- durable_job_policy_owner), so every change of the change control is
-- recorded, however it was made (since migration 026; before, a
-- superuser's UPDATE left no evidence and change-control show still named
-- the last operator). Appends a change_control_changed record with every
-- setting before and after (ticket_pattern, require_approver,
-- approver_must_differ, reason_pattern, require_second_operator,
-- proposal_lifetime). The reason, ticket and approver
-- come from the transaction-local settings that set_change_control and
-- set_change_reason_pattern set, else 'direct table change without a
-- reason'; they are checked (require_structured_change) against the
-- setting in force before this change. Raises LF002 when they are not
-- acceptable, so the change is refused. Takes the evidence-order lock
-- (lock_timeout 10 s).
CREATE OR REPLACE FUNCTION durable_jobs.record_change_control_change()
RETURNS trigger
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET lock_timeout = '10s'
SET IntervalStyle = 'postgres'
AS $function$
DECLARE
    v_reason text := COALESCE(NULLIF(pg_catalog.current_setting('leasefence.change_reason', true), ''),
                              'direct table change without a reason');
    v_ticket text := NULLIF(pg_catalog.current_setting('leasefence.change_ticket', true), '');
    v_approver text := NULLIF(pg_catalog.current_setting('leasefence.change_approver', true), '');
BEGIN
    PERFORM durable_jobs.lock_evidence_order();
    PERFORM durable_jobs.check_change_record(OLD, v_reason, v_ticket, v_approver);
    INSERT INTO durable_jobs.control_evidence_record
        (evidence_kind, queue_name, previous_values, new_values, change_reason, change_ticket, change_approver)
    VALUES ('change_control_changed', NULL,
            pg_catalog.jsonb_build_object('ticket_pattern', OLD.ticket_pattern, 'require_approver', OLD.require_approver,
                'approver_must_differ', OLD.approver_must_differ, 'reason_pattern', OLD.reason_pattern,
                'require_second_operator', OLD.require_second_operator, 'proposal_lifetime', OLD.proposal_lifetime),
            pg_catalog.jsonb_build_object('ticket_pattern', NEW.ticket_pattern, 'require_approver', NEW.require_approver,
                'approver_must_differ', NEW.approver_must_differ, 'reason_pattern', NEW.reason_pattern,
                'require_second_operator', NEW.require_second_operator, 'proposal_lifetime', NEW.proposal_lifetime),
            v_reason, v_ticket, v_approver);
    RETURN NULL;
END;
$function$;

ALTER FUNCTION durable_jobs.record_change_control_change() OWNER TO durable_job_policy_owner;
REVOKE ALL ON FUNCTION durable_jobs.record_change_control_change() FROM PUBLIC;

-- set_change_record: sets the transaction-local settings
-- leasefence.change_reason, leasefence.change_ticket and
-- leasefence.change_approver, which the control tables' evidence triggers
-- record (NULL is written as '', which they read as none); a function that
-- changes a control table sets them before its write and clears them with
-- ('', '', '') after it, so a later statement of the transaction is not
-- recorded under its reason. Takes no lock.
CREATE OR REPLACE FUNCTION durable_jobs.set_change_record(p_change_reason text, p_change_ticket text, p_change_approver text)
RETURNS void
LANGUAGE sql
VOLATILE
SET search_path = pg_catalog, pg_temp
BEGIN ATOMIC
    SELECT pg_catalog.set_config('leasefence.change_reason', COALESCE(p_change_reason, ''), true),
           pg_catalog.set_config('leasefence.change_ticket', COALESCE(p_change_ticket, ''), true),
           pg_catalog.set_config('leasefence.change_approver', COALESCE(p_change_approver, ''), true);
END;

REVOKE ALL ON FUNCTION durable_jobs.set_change_record(text, text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.set_change_record(text, text, text) TO durable_job_policy_owner, durable_job_retention_owner;


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
IMMUTABLE
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

-- approved_proposer: the login that proposed the change approve_change is
-- applying, while it applies it (the transaction-local setting
-- leasefence.change_proposal names the proposal, and its row holds this
-- transaction's id from the approval until approve_change has applied the
-- change, written by nothing else); NULL otherwise: a forged setting, or
-- one naming a proposal this transaction approved earlier, included.
-- Takes no lock.
CREATE OR REPLACE FUNCTION durable_jobs.approved_proposer()
RETURNS text
LANGUAGE plpgsql
STABLE
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
    -- The approval vouches for this change only: a setting forged after
    -- this call names no proposal being applied.
    UPDATE durable_jobs.pending_change c SET decided_in_transaction = NULL WHERE c.change_id = v_change.change_id;
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


-- Retention and erasure (operators).
--
-- The current definition of each function of this family, edited in place.
-- A change reaches databases through a new migration that includes this
-- file; released migrations hold their own frozen copy (see sql/doc.go).
--
-- Below, the notes written with the versions the current definitions come
-- from, newest first. They name the files as they were then; each
-- migration's frozen SQL under sql/migrations holds the whole text.

-- Notes of migration 019 (retention_v3.sql in its frozen SQL):
--
-- Retention, version 3 (migration 019): only purge_expired_job_data
-- changes. Migration 019 drops the foreign keys of job_payload_record and
-- job_outcome_ledger to job_record (each INSERT of a payload or an outcome
-- ran the key's check, a query and a row lock per row, on every enqueue and
-- completion), so their ON DELETE CASCADE is gone too: the purge deletes a
-- purged job's payload and outcome ledger rows itself, in the statement that
-- deletes the job. Everything else stays as retention.sql and
-- retention_v2.sql install it.

-- Notes of migration 014 (retention_v2.sql in its frozen SQL):
--
-- The retention and erasure family, version 2 (migration 014; 005 installs
-- retention.sql): only set_queue_retention_policy and erase_job_payload
-- change, so only they are here. Version 1 refused a reason that was blank,
-- too long or held a control character, and nothing else: a reason naming a
-- person, a card or a password went into append-only evidence that can never
-- be erased. Version 2 also passes every reason through
-- require_structured_change (the evidence-chain migration's check of policy
-- change reasons: LF002 for what looks like personal data or a secret), as
-- set_queue_lease_policy does. Owner, settings and grants are unchanged; the
-- owner, durable_job_retention_owner, is granted EXECUTE on that check and
-- the helpers it calls by the migration.

-- Notes of migration 005 (retention.sql in its frozen SQL):
--
-- The retention and erasure family (first version, installed by the
-- retention migration). Owned by durable_job_retention_owner, which may
-- delete finished jobs, delete payload rows and clear result documents,
-- but holds no SELECT on job_payload_record.job_payload or on
-- job_outcome_ledger.result_document: it removes personal data without
-- being able to read it. Executable by durable_job_operator only.

-- set_queue_retention_policy: sets how long one queue's finished jobs
-- (SUCCEEDED, FAILED, CANCELLED, aged by status_changed_at) keep their
-- payload and result documents, and how long their row and outcome ledger
-- are kept ('*' is the default for queues without their own). Valid only
-- when every value is non-NULL and a plain duration (absolute_duration: no
-- month or year part, day and time parts of one sign; since migration 024,
-- so that no interval whose parts cancel out passes a bound it does not
-- meet), 1 hour <= payload_retention <= record_retention <= 3650 days, the
-- reason is valid (see require_valid_change_reason), does not look like
-- personal data or a secret (require_structured_change) and the queue name
-- is '*' or well-formed. Otherwise LF002 and nothing changes. The policy
-- stores the durations as absolute_duration gives them ('30 days' is kept
-- as '720:00:00'), as the lease policy does. The ticket and approver are
-- checked as every change record's are (require_structured_change; since
-- migration 026, so retention can be changed where change control asks for
-- them). The table's trigger (record_retention_policy_change) appends
-- retention_policy_changed control evidence (old and new values, reason,
-- ticket, approver, session_user, database time), written the same
-- whatever the session's IntervalStyle, DateStyle, TimeZone or
-- extra_float_digits. Takes the evidence-order lock (lock_evidence_order),
-- then locks the queue's policy row.
CREATE OR REPLACE FUNCTION durable_jobs.set_queue_retention_policy(p_queue_name text, p_payload_retention interval,
    p_record_retention interval, p_change_reason text, p_change_ticket text, p_change_approver text DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET IntervalStyle = 'postgres'
SET DateStyle = 'ISO, MDY'
SET TimeZone = 'UTC'
SET extra_float_digits = '1'
AS $function$
DECLARE
    v_payload_retention interval := durable_jobs.absolute_duration(p_payload_retention);
    v_record_retention interval := durable_jobs.absolute_duration(p_record_retention);
BEGIN
    IF p_queue_name IS DISTINCT FROM '*' THEN
        PERFORM durable_jobs.require_well_formed('queue_name', p_queue_name, 'LF002');
    END IF;
    IF v_payload_retention IS NULL OR v_record_retention IS NULL
       OR v_payload_retention < interval '1 hour' OR v_record_retention < v_payload_retention
       OR v_record_retention > interval '3650 days' THEN
        RAISE EXCEPTION 'invalid retention policy' USING
            ERRCODE = 'LF002',
            DETAIL = 'Need plain durations (no month or year part, day and time parts of one sign) with '
                  || '1 hour <= payload_retention <= record_retention <= 3650 days.';
    END IF;
    PERFORM durable_jobs.require_valid_change_reason(p_change_reason, 'LF002');
    -- Takes the evidence-order lock first and checks the record against the
    -- change control in force once it holds it.
    PERFORM durable_jobs.require_structured_change(p_change_reason, p_change_ticket, p_change_approver);

    -- What the table's trigger (record_retention_policy_change) records.
    PERFORM durable_jobs.set_change_record(p_change_reason, p_change_ticket, p_change_approver);
    INSERT INTO durable_jobs.queue_retention_policy AS p
        (queue_name, payload_retention, record_retention, changed_at, changed_by_role)
    VALUES (p_queue_name, v_payload_retention, v_record_retention, pg_catalog.clock_timestamp(), SESSION_USER)
    ON CONFLICT (queue_name) DO UPDATE
    SET payload_retention = EXCLUDED.payload_retention, record_retention = EXCLUDED.record_retention;
    PERFORM durable_jobs.set_change_record('', '', '');
END;
$function$;

ALTER FUNCTION durable_jobs.set_queue_retention_policy(text, interval, interval, text, text, text) OWNER TO durable_job_retention_owner;
REVOKE ALL ON FUNCTION durable_jobs.set_queue_retention_policy(text, interval, interval, text, text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.set_queue_retention_policy(text, interval, interval, text, text, text) TO durable_job_operator;
-- approve_change (maker-checker, migration 026) applies an approved retention proposal.
GRANT EXECUTE ON FUNCTION durable_jobs.set_queue_retention_policy(text, interval, interval, text, text, text) TO durable_job_policy_owner;

-- set_queue_retention_policy (without ticket or approver): the same as the
-- overload above with no ticket and no approver, so it is refused (LF002)
-- when change control requires an approver.
CREATE OR REPLACE FUNCTION durable_jobs.set_queue_retention_policy(p_queue_name text, p_payload_retention interval,
    p_record_retention interval, p_change_reason text)
RETURNS void
LANGUAGE sql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
BEGIN ATOMIC
    SELECT durable_jobs.set_queue_retention_policy(p_queue_name, p_payload_retention, p_record_retention,
        p_change_reason, NULL, NULL);
END;

ALTER FUNCTION durable_jobs.set_queue_retention_policy(text, interval, interval, text) OWNER TO durable_job_retention_owner;
REVOKE ALL ON FUNCTION durable_jobs.set_queue_retention_policy(text, interval, interval, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.set_queue_retention_policy(text, interval, interval, text) TO durable_job_operator;

-- queue_retention_policies: every queue's retention policy, the default '*'
-- included, ordered by queue name. Takes no lock.
CREATE OR REPLACE FUNCTION durable_jobs.queue_retention_policies()
RETURNS TABLE (queue_name text, payload_retention interval, record_retention interval,
               changed_at timestamptz, changed_by_role text)
LANGUAGE sql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
BEGIN ATOMIC
    SELECT p.queue_name, p.payload_retention, p.record_retention, p.changed_at, p.changed_by_role
    FROM durable_jobs.queue_retention_policy p
    ORDER BY p.queue_name;
END;

ALTER FUNCTION durable_jobs.queue_retention_policies() OWNER TO durable_job_retention_owner;
REVOKE ALL ON FUNCTION durable_jobs.queue_retention_policies() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.queue_retention_policies() TO durable_job_operator;

-- purge_expired_job_data: applies the retention policies to at most
-- p_batch_size finished jobs (1 to 10,000, else LF003) and returns what it
-- removed, one row per queue and kind:
--   job_record  jobs past their record retention: the row is deleted with
--               its payload and outcome ledger (in the same statement; no
--               foreign key cascades since migration 019);
--   payload     jobs past their payload retention that still had a payload:
--               the payload is deleted and every result document of the job
--               in the outcome ledger is set to NULL; the row stays.
-- Only SUCCEEDED, FAILED and CANCELLED rows are ever touched, each locked
-- FOR UPDATE SKIP LOCKED and re-checked when locked (a concurrent replay
-- wins and the job is left alone), so it never waits on or changes a live
-- claim and may run from several places at once. Call it until it returns
-- no row. When it removed anything, it appends one job_data_purged control
-- evidence record with the counts per queue and kind (never a job id),
-- under the evidence-order lock. Control evidence itself is never purged.
-- A job is never removed less than 1 hour after it finished, whatever a
-- policy row holds (since migration 024: a row written before it could
-- hold an interval whose parts cancel out, such as '-1 year 361 days',
-- which made the cutoff lie in the future).
CREATE OR REPLACE FUNCTION durable_jobs.purge_expired_job_data(p_batch_size integer)
RETURNS TABLE (queue_name text, purge_kind text, purged_count bigint)
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $function$
DECLARE
    v_now timestamptz := pg_catalog.clock_timestamp();
    v_counts jsonb;
    v_left integer;
    v_rows jsonb := '[]'::jsonb;
BEGIN
    IF p_batch_size IS NULL OR p_batch_size NOT BETWEEN 1 AND 10000 THEN
        RAISE EXCEPTION 'batch size must be 1 to 10000' USING ERRCODE = 'LF003';
    END IF;

    WITH doomed AS (
        SELECT j.job_record_id
        FROM durable_jobs.job_record j
        LEFT JOIN durable_jobs.queue_retention_policy q ON q.queue_name = j.queue_name
        LEFT JOIN durable_jobs.queue_retention_policy d ON d.queue_name = '*'
        WHERE j.job_status IN ('SUCCEEDED', 'FAILED', 'CANCELLED')
          AND j.status_changed_at < LEAST(v_now - COALESCE(q.record_retention, d.record_retention),
                                          v_now - interval '1 hour')
        ORDER BY j.status_changed_at
        LIMIT p_batch_size
        FOR UPDATE OF j SKIP LOCKED
    ), gone AS (
        DELETE FROM durable_jobs.job_record j
        USING doomed
        WHERE j.job_record_id = doomed.job_record_id
        RETURNING j.queue_name
    ), gone_payloads AS (
        -- Since migration 019 no foreign key deletes these with the job:
        -- its payload and outcome ledger rows go in the same statement.
        DELETE FROM durable_jobs.job_payload_record pr
        USING doomed
        WHERE pr.job_record_id = doomed.job_record_id
    ), gone_outcomes AS (
        DELETE FROM durable_jobs.job_outcome_ledger l
        USING doomed
        WHERE l.job_record_id = doomed.job_record_id
    )
    SELECT COALESCE(pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object('queue_name', c.queue_name,
               'purge_kind', 'job_record', 'purged_count', c.n) ORDER BY c.queue_name), '[]')
    INTO v_counts
    FROM (SELECT gone.queue_name, pg_catalog.count(*) AS n FROM gone GROUP BY gone.queue_name) c;
    v_rows := v_rows || v_counts;
    v_left := p_batch_size - (SELECT COALESCE(pg_catalog.sum((e ->> 'purged_count')::bigint), 0)
                              FROM pg_catalog.jsonb_array_elements(v_counts) e)::integer;

    IF v_left > 0 THEN
        WITH doomed AS (
            SELECT j.job_record_id, j.queue_name
            FROM durable_jobs.job_record j
            LEFT JOIN durable_jobs.queue_retention_policy q ON q.queue_name = j.queue_name
            LEFT JOIN durable_jobs.queue_retention_policy d ON d.queue_name = '*'
            WHERE j.job_status IN ('SUCCEEDED', 'FAILED', 'CANCELLED')
              AND j.status_changed_at < LEAST(v_now - COALESCE(q.payload_retention, d.payload_retention),
                                              v_now - interval '1 hour')
              AND EXISTS (SELECT 1 FROM durable_jobs.job_payload_record pr WHERE pr.job_record_id = j.job_record_id)
            ORDER BY j.status_changed_at
            LIMIT v_left
            FOR UPDATE OF j SKIP LOCKED
        ), gone_payload AS (
            DELETE FROM durable_jobs.job_payload_record pr
            USING doomed
            WHERE pr.job_record_id = doomed.job_record_id
            RETURNING pr.job_record_id
        ), cleared AS (
            UPDATE durable_jobs.job_outcome_ledger l
            SET result_document = NULL
            FROM doomed
            WHERE l.job_record_id = doomed.job_record_id
            RETURNING l.job_record_id
        )
        SELECT COALESCE(pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object('queue_name', c.queue_name,
                   'purge_kind', 'payload', 'purged_count', c.n) ORDER BY c.queue_name), '[]')
        INTO v_counts
        FROM (SELECT doomed.queue_name, pg_catalog.count(*) AS n
              FROM doomed JOIN gone_payload ON gone_payload.job_record_id = doomed.job_record_id
              GROUP BY doomed.queue_name) c;
        v_rows := v_rows || v_counts;
    END IF;

    IF pg_catalog.jsonb_array_length(v_rows) > 0 THEN
        PERFORM durable_jobs.lock_evidence_order();
        INSERT INTO durable_jobs.control_evidence_record (evidence_kind, queue_name, previous_values, new_values, change_reason)
        VALUES ('job_data_purged', NULL, NULL,
                pg_catalog.jsonb_build_object('batch_size', p_batch_size, 'purged', v_rows),
                'retention policy applied by purge_expired_job_data');
    END IF;

    RETURN QUERY
    SELECT e ->> 'queue_name', e ->> 'purge_kind', (e ->> 'purged_count')::bigint
    FROM pg_catalog.jsonb_array_elements(v_rows) e;
END;
$function$;

ALTER FUNCTION durable_jobs.purge_expired_job_data(integer) OWNER TO durable_job_retention_owner;
REVOKE ALL ON FUNCTION durable_jobs.purge_expired_job_data(integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.purge_expired_job_data(integer) TO durable_job_operator;

-- erase_job_payload: erases one finished job's payload and every result
-- document of it in the outcome ledger, for a data-subject request, and
-- keeps its lifecycle row (status, attempts, failure reason code). true when
-- a payload was erased; false for an unknown job or one already erased
-- (its result documents are cleared again either way). Refuses a job that
-- is QUEUED, RUNNING or RETRY_SCHEDULED with LF003: cancel it first. An
-- erasure appends a payload_erased row to the job's action trail
-- (job_action_record: who, when, why, ticket, approver; since migration
-- 026) and job_payload_erased control evidence with the queue, the
-- job's status, the reason, ticket, approver, session_user and database
-- time; never the job
-- id (auditors read evidence, and auditor output carries no job ids) or
-- anything of the payload. Locks the job row (waits for a terminal write
-- or cancel in progress). Raises LF003 for a NULL id or an invalid reason
-- (blank, over 500 characters, a control character), and LF002
-- (require_structured_change) for a reason that looks like personal data
-- or a secret or holds a bidirectional-control character: nothing is
-- erased then.
CREATE OR REPLACE FUNCTION durable_jobs.erase_job_payload(p_job_record_id bigint, p_change_reason text,
    p_change_ticket text, p_change_approver text DEFAULT NULL)
RETURNS boolean
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $function$
DECLARE
    v_status durable_jobs.job_status_kind;
    v_queue text;
BEGIN
    IF p_job_record_id IS NULL THEN
        RAISE EXCEPTION 'job id is required' USING ERRCODE = 'LF003';
    END IF;
    PERFORM durable_jobs.require_valid_change_reason(p_change_reason, 'LF003');

    SELECT j.job_status, j.queue_name INTO v_status, v_queue
    FROM durable_jobs.job_record j
    WHERE j.job_record_id = p_job_record_id
    FOR UPDATE;
    -- Then the evidence-order lock (taken by require_structured_change), so
    -- the record is checked against the change control in force once no
    -- other change can commit first; the job row is locked before it, as
    -- before migration 024, so an erasure that waits for a worker's
    -- terminal write holds no evidence writer up meanwhile.
    PERFORM durable_jobs.require_structured_change(p_change_reason, p_change_ticket, p_change_approver);
    IF v_status IS NULL THEN
        RETURN false;
    END IF;
    IF v_status NOT IN ('SUCCEEDED', 'FAILED', 'CANCELLED') THEN
        RAISE EXCEPTION 'job is not finished: its payload cannot be erased' USING
            ERRCODE = 'LF003',
            DETAIL = pg_catalog.format('The job is %s.', v_status),
            HINT = 'Cancel it first (cancel_job), then erase it.';
    END IF;

    UPDATE durable_jobs.job_outcome_ledger l SET result_document = NULL
    WHERE l.job_record_id = p_job_record_id;
    DELETE FROM durable_jobs.job_payload_record pr WHERE pr.job_record_id = p_job_record_id;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    INSERT INTO durable_jobs.job_action_record (job_record_id, action_kind, change_reason, change_ticket, change_approver)
    VALUES (p_job_record_id, 'payload_erased', p_change_reason, p_change_ticket, p_change_approver);
    INSERT INTO durable_jobs.control_evidence_record
        (evidence_kind, queue_name, previous_values, new_values, change_reason, change_ticket, change_approver)
    VALUES ('job_payload_erased', v_queue, NULL,
            pg_catalog.jsonb_build_object('job_status', v_status::text, 'payload_erased', true,
                                          'result_documents_cleared', true),
            p_change_reason, p_change_ticket, p_change_approver);
    RETURN true;
END;
$function$;

ALTER FUNCTION durable_jobs.erase_job_payload(bigint, text, text, text) OWNER TO durable_job_retention_owner;
REVOKE ALL ON FUNCTION durable_jobs.erase_job_payload(bigint, text, text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.erase_job_payload(bigint, text, text, text) TO durable_job_operator;

-- erase_job_payload (without ticket or approver): the same as the overload
-- above with no ticket and no approver, so it is refused (LF002) when change
-- control requires an approver.
CREATE OR REPLACE FUNCTION durable_jobs.erase_job_payload(p_job_record_id bigint, p_change_reason text)
RETURNS boolean
LANGUAGE sql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
BEGIN ATOMIC
    SELECT durable_jobs.erase_job_payload(p_job_record_id, p_change_reason, NULL, NULL);
END;

ALTER FUNCTION durable_jobs.erase_job_payload(bigint, text) OWNER TO durable_job_retention_owner;
REVOKE ALL ON FUNCTION durable_jobs.erase_job_payload(bigint, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.erase_job_payload(bigint, text) TO durable_job_operator;


-- Operator job views: list and inspect jobs without their payloads.
--
-- The current definition of each function of this family, edited in place.
-- A change reaches databases through a new migration that includes this
-- file; released migrations hold their own frozen copy (see sql/doc.go).
--
-- Below, the notes written with the versions the current definitions come
-- from, newest first. They name the files as they were then; each
-- migration's frozen SQL under sql/migrations holds the whole text.

-- Notes of migration 007 (job_admin.sql in its frozen SQL):
--
-- Operator job views: payload-blind reads of individual jobs for the
-- operator (leasectl jobs list / show). They return lifecycle columns only:
-- never the payload, the claim token, its digest, the owner id, the login
-- role that claimed it or the idempotency key. Owned by the audit owner,
-- which cannot read the payload table, the claim digest, the owner id or
-- the idempotency key digest at all. They take no locks. Cancel and replay are the producer family's cancel_job and
-- replay_job, which operators already hold.

-- operator_list_jobs: up to p_max_jobs jobs, newest first (job_record_id
-- descending), of one queue and one status when given (NULL: any), with
-- ids below p_after_job_record_id when given (keyset pagination: pass the
-- last id of the previous page). Raises LF003 for a malformed queue name,
-- a status that is not a job_status_kind, or p_max_jobs NULL or outside 1
-- to 1000.
CREATE OR REPLACE FUNCTION durable_jobs.operator_list_jobs(
    p_queue_name text DEFAULT NULL, p_job_status text DEFAULT NULL,
    p_after_job_record_id bigint DEFAULT NULL, p_max_jobs integer DEFAULT 50)
RETURNS TABLE (job_record_id bigint, queue_name text, job_status text, attempt_number integer,
               max_attempts integer, lease_fencing_generation bigint, lease_expires_at timestamptz,
               lease_renewal_count bigint, failure_reason_code text, run_after timestamptz,
               created_at timestamptz, status_changed_at timestamptz)
LANGUAGE plpgsql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $function$
BEGIN
    IF p_queue_name IS NOT NULL THEN
        PERFORM durable_jobs.require_well_formed('queue_name', p_queue_name);
    END IF;
    IF p_job_status IS NOT NULL
       AND p_job_status <> ALL (pg_catalog.enum_range(NULL::durable_jobs.job_status_kind)::text[]) THEN
        RAISE EXCEPTION 'unknown job status' USING ERRCODE = 'LF003',
            HINT = 'job status must be one of QUEUED, RUNNING, RETRY_SCHEDULED, SUCCEEDED, FAILED, CANCELLED';
    END IF;
    IF p_max_jobs IS NULL OR p_max_jobs NOT BETWEEN 1 AND 1000 THEN
        RAISE EXCEPTION 'max jobs must be 1 to 1000' USING ERRCODE = 'LF003';
    END IF;
    RETURN QUERY
    SELECT j.job_record_id, j.queue_name, j.job_status::text, j.attempt_number, j.max_attempts,
           j.lease_fencing_generation, j.lease_expires_at, j.lease_renewal_count, j.failure_reason_code,
           j.run_after, j.created_at, j.status_changed_at
    FROM durable_jobs.job_record j
    WHERE (p_queue_name IS NULL OR j.queue_name = p_queue_name)
      AND (p_job_status IS NULL OR j.job_status::text = p_job_status)
      AND (p_after_job_record_id IS NULL OR j.job_record_id < p_after_job_record_id)
    ORDER BY j.job_record_id DESC
    LIMIT p_max_jobs;
END;
$function$;

ALTER FUNCTION durable_jobs.operator_list_jobs(text, text, bigint, integer) OWNER TO durable_job_audit_owner;
REVOKE ALL ON FUNCTION durable_jobs.operator_list_jobs(text, text, bigint, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.operator_list_jobs(text, text, bigint, integer) TO durable_job_operator;

-- operator_job_detail: the same columns for one job. Zero rows for an
-- unknown id. Raises LF003 for a NULL id.
CREATE OR REPLACE FUNCTION durable_jobs.operator_job_detail(p_job_record_id bigint)
RETURNS TABLE (job_record_id bigint, queue_name text, job_status text, attempt_number integer,
               max_attempts integer, lease_fencing_generation bigint, lease_expires_at timestamptz,
               lease_renewal_count bigint, failure_reason_code text, run_after timestamptz,
               created_at timestamptz, status_changed_at timestamptz)
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
    SELECT j.job_record_id, j.queue_name, j.job_status::text, j.attempt_number, j.max_attempts,
           j.lease_fencing_generation, j.lease_expires_at, j.lease_renewal_count, j.failure_reason_code,
           j.run_after, j.created_at, j.status_changed_at
    FROM durable_jobs.job_record j
    WHERE j.job_record_id = p_job_record_id;
END;
$function$;

ALTER FUNCTION durable_jobs.operator_job_detail(bigint) OWNER TO durable_job_audit_owner;
REVOKE ALL ON FUNCTION durable_jobs.operator_job_detail(bigint) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.operator_job_detail(bigint) TO durable_job_operator;

-- record_job_action: private helper of cancel_job, replay_job and their
-- reasoned overloads (since migration 026): appends one row to the job's
-- action trail (job_action_record: the action, session_user, database
-- time, reason, ticket, approver). With a reason it first checks the change
-- record (require_structured_change, under the evidence-order lock: LF002
-- and nothing changed when it is not structured) and appends a chained
-- job_cancelled or job_replayed control evidence record with the queue and
-- the status before and after: never the job id or anything of the payload
-- (auditors read evidence). Without a reason (a producer's own cancel) it
-- writes the trail row only and takes no lock.
CREATE OR REPLACE FUNCTION durable_jobs.record_job_action(p_job_record_id bigint, p_queue_name text,
    p_action_kind text, p_previous_status text, p_new_status text, p_change_reason text, p_change_ticket text,
    p_change_approver text)
RETURNS void
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $function$
BEGIN
    IF p_change_reason IS NOT NULL THEN
        PERFORM durable_jobs.require_structured_change(p_change_reason, p_change_ticket, p_change_approver);
        INSERT INTO durable_jobs.control_evidence_record
            (evidence_kind, queue_name, previous_values, new_values, change_reason, change_ticket, change_approver)
        VALUES ('job_' || p_action_kind, p_queue_name, pg_catalog.jsonb_build_object('job_status', p_previous_status),
                pg_catalog.jsonb_build_object('job_status', p_new_status), p_change_reason, p_change_ticket,
                p_change_approver);
    END IF;
    INSERT INTO durable_jobs.job_action_record (job_record_id, action_kind, change_reason, change_ticket, change_approver)
    VALUES (p_job_record_id, p_action_kind, p_change_reason, p_change_ticket, p_change_approver);
END;
$function$;

ALTER FUNCTION durable_jobs.record_job_action(bigint, text, text, text, text, text, text, text) OWNER TO durable_job_retention_owner;
REVOKE ALL ON FUNCTION durable_jobs.record_job_action(bigint, text, text, text, text, text, text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.record_job_action(bigint, text, text, text, text, text, text, text) TO durable_job_producer_owner;

-- operator_job_actions: one job's action trail (cancel, replay, payload
-- erasure since migration 026), oldest first: the action, when, the login
-- that acted, its reason, ticket and approver. Zero rows for an unknown job
-- or one nobody acted on. Never the payload. Raises LF003 for a NULL id.
-- Takes no lock.
CREATE OR REPLACE FUNCTION durable_jobs.operator_job_actions(p_job_record_id bigint)
RETURNS TABLE (action_kind text, acted_at timestamptz, acted_by_role text, change_reason text,
               change_ticket text, change_approver text)
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
    SELECT a.action_kind, a.acted_at, a.acted_by_role, a.change_reason, a.change_ticket, a.change_approver
    FROM durable_jobs.job_action_record a
    WHERE a.job_record_id = p_job_record_id
    ORDER BY a.job_action_record_id;
END;
$function$;

ALTER FUNCTION durable_jobs.operator_job_actions(bigint) OWNER TO durable_job_audit_owner;
REVOKE ALL ON FUNCTION durable_jobs.operator_job_actions(bigint) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.operator_job_actions(bigint) TO durable_job_operator;


-- Producers: enqueue (one job or many), cancel, replay and read a job's state.
--
-- The current definition of each function of this family, edited in place.
-- A change reaches databases through a new migration that includes this
-- file; released migrations hold their own frozen copy (see sql/doc.go).
--
-- Below, the notes written with the versions the current definitions come
-- from, newest first. They name the files as they were then; each
-- migration's frozen SQL under sql/migrations holds the whole text.

-- Notes of migration 016 (producer_v3.sql in its frozen SQL):
--
-- producer v3 (migration 016; 004 installs producer_v2.sql): only
-- replay_job changes, so only it is here. Version 2 found the job's row with
-- `job_status IN ('FAILED', 'CANCELLED')` beside its primary key, which
-- implies the predicate of job_record_finished_by_age: with statistics taken
-- before the jobs finished that index looks empty and a replay read every
-- finished job through it (TestCallsOnOneJobUseThePrimaryKeyUnderStaleStatistics).
-- Owner and grants stay as version 2 set them.

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

ALTER FUNCTION durable_jobs.enqueue_job(text, jsonb, text, timestamp with time zone, integer) OWNER TO durable_job_producer_owner;
REVOKE ALL ON FUNCTION durable_jobs.enqueue_job(text, jsonb, text, timestamp with time zone, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.enqueue_job(text, jsonb, text, timestamp with time zone, integer) TO durable_job_producer;

-- enqueue_jobs (version 3, set-based): enqueue_job for many jobs of one
-- queue in one call. Element i of each array describes job i; the result
-- holds one id per job, in input order. p_idempotency_keys, p_run_afters and
-- p_max_attempts are each NULL (no key, now, 5 attempts for every job) or
-- have exactly one element per payload; a NULL key or run-after element means
-- no key or now for that job. Every element gets enqueue_job's checks and
-- its idempotency: a key already on the queue, or repeated within the batch,
-- returns the first job's id and creates nothing. All or nothing: a bad
-- element raises LF003 naming its position (never its content) and no job of
-- the batch is written.
-- Writes what calling enqueue_job per element in input order writes, in a
-- few statements instead of one call per element: one pass checks every
-- element and reports the first bad one with enqueue_job's message; one
-- INSERT ... SELECT of the job rows reads the elements sorted by position
-- (so ids are drawn in input order, one per element as enqueue_job draws
-- one per call, a repeated key included): a batch without keys by a plain
-- INSERT, since nothing in it can conflict, a batch with keys skipping a key
-- already taken, on the queue or by an earlier element, with ON CONFLICT DO
-- NOTHING. Only when that left an element without a new job does a query
-- give every keyed element the id its key now holds (so it sees a
-- concurrent insert of the key that committed while this one waited, as
-- enqueue_job does), raising P0002 as enqueue_job's STRICT lookup would if
-- that job has meanwhile been deleted; otherwise each key holds its
-- element's new job already. One last INSERT writes the new jobs' payloads.
-- The job and lookup statements are planned for each call's arrays
-- (plan_cache_mode force_custom_plan): from the sixth call of a session
-- PL/pgSQL would otherwise use a generic plan, which guesses 100 elements
-- per array and joins 10,000 of them by nested loops (seconds instead of
-- milliseconds). The payload INSERT joins nothing and runs with
-- plan_cache_mode auto, because its foreign key checks each row with a
-- cached plan that force_custom_plan would plan again for every row.
-- Version 2 (migration 010) wrote the payloads in the job statement, under
-- force_custom_plan, made every row a speculative insertion (ON CONFLICT)
-- even without keys, and always ran the lookup, which PostgreSQL
-- JIT-compiled on every call: together about half its time for 10,000 jobs
-- (bench/notes.md).
-- Locks: the new rows; a concurrent insert of the same key is waited for, so
-- two concurrent batches that share keys in different orders can deadlock
-- (40P01, nothing written by the one refused); sort keys to avoid it.
-- Raises LF003 for a NULL queue or payload array, an array that is not
-- one-dimensional, fewer than 1 or more than 10,000 payloads, an optional
-- array whose length differs from the payloads', and any element enqueue_job
-- refuses.
CREATE OR REPLACE FUNCTION durable_jobs.enqueue_jobs(
    p_queue_name text, p_job_payloads jsonb[], p_idempotency_keys text[] DEFAULT NULL,
    p_run_afters timestamptz[] DEFAULT NULL, p_max_attempts integer[] DEFAULT NULL)
RETURNS bigint[]
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET plan_cache_mode = force_custom_plan
AS $function$
DECLARE
    v_job_count integer := pg_catalog.cardinality(p_job_payloads);
    v_position bigint;
    v_message text;
    v_new_job_record_ids bigint[];
    v_job_record_ids bigint[];
BEGIN
    PERFORM durable_jobs.require_well_formed('queue_name', p_queue_name);
    IF p_job_payloads IS NULL OR pg_catalog.array_ndims(p_job_payloads) IS DISTINCT FROM 1
            OR v_job_count > 10000 THEN
        RAISE EXCEPTION 'job payloads must be a one-dimensional array of 1 to 10000 payloads' USING ERRCODE = 'LF003';
    END IF;
    IF (p_idempotency_keys IS NOT NULL AND (pg_catalog.array_ndims(p_idempotency_keys) IS DISTINCT FROM 1
                                            OR pg_catalog.cardinality(p_idempotency_keys) <> v_job_count))
            OR (p_run_afters IS NOT NULL AND (pg_catalog.array_ndims(p_run_afters) IS DISTINCT FROM 1
                                              OR pg_catalog.cardinality(p_run_afters) <> v_job_count))
            OR (p_max_attempts IS NOT NULL AND (pg_catalog.array_ndims(p_max_attempts) IS DISTINCT FROM 1
                                                OR pg_catalog.cardinality(p_max_attempts) <> v_job_count)) THEN
        RAISE EXCEPTION 'idempotency keys, run-afters and max attempts must each be NULL or hold one element per payload'
            USING ERRCODE = 'LF003';
    END IF;

    -- enqueue_job's checks, in its order, on every element; its messages
    -- name the rule, never the value.
    SELECT u.job_position, u.refusal INTO v_position, v_message
    FROM (SELECT e.job_position,
                 CASE
                     WHEN e.job_payload IS NULL THEN 'job payload is required'
                     WHEN pg_catalog.pg_column_size(e.job_payload) > 1048576 THEN 'job payload must be at most 1 MiB'
                     WHEN e.run_after IS NOT NULL AND (NOT pg_catalog.isfinite(e.run_after)
                             OR e.run_after < timestamptz '2000-01-01 00:00:00+00'
                             OR e.run_after >= timestamptz '2100-01-01 00:00:00+00')
                         THEN 'run-after must be a finite time from 2000-01-01 to before 2100-01-01 UTC'
                     WHEN e.idempotency_key IS NOT NULL AND pg_catalog.length(e.idempotency_key) NOT BETWEEN 1 AND 200
                         THEN 'idempotency key must be 1 to 200 characters'
                     WHEN p_max_attempts IS NOT NULL AND (e.max_attempts IS NULL OR e.max_attempts NOT BETWEEN 1 AND 1000)
                         THEN 'max attempts must be 1 to 1000'
                 END AS refusal
          FROM ROWS FROM (pg_catalog.unnest(p_job_payloads), pg_catalog.unnest(p_idempotency_keys),
                          pg_catalog.unnest(p_run_afters), pg_catalog.unnest(p_max_attempts))
               WITH ORDINALITY AS e(job_payload, idempotency_key, run_after, max_attempts, job_position)) u
    WHERE u.refusal IS NOT NULL
    ORDER BY u.job_position
    LIMIT 1;
    IF v_message IS NOT NULL THEN
        RAISE EXCEPTION 'job % of the batch: %', v_position, v_message USING ERRCODE = 'LF003';
    END IF;

    -- No keys: the new jobs, the k-th by id order element k's, as ids are
    -- drawn in the order the sorted rows are inserted.
    IF p_idempotency_keys IS NULL OR pg_catalog.cardinality(pg_catalog.array_remove(p_idempotency_keys, NULL)) = 0 THEN
        WITH new_job AS (
            INSERT INTO durable_jobs.job_record AS j (queue_name, run_after, max_attempts)
            SELECT p_queue_name, COALESCE(e.run_after, pg_catalog.clock_timestamp()),
                   CASE WHEN p_max_attempts IS NULL THEN 5 ELSE e.max_attempts END
            FROM ROWS FROM (pg_catalog.unnest(p_job_payloads), pg_catalog.unnest(p_run_afters),
                            pg_catalog.unnest(p_max_attempts))
                 WITH ORDINALITY AS e(job_payload, run_after, max_attempts, job_position)
            ORDER BY e.job_position
            RETURNING j.job_record_id
        )
        SELECT pg_catalog.array_agg(n.job_record_id ORDER BY n.job_record_id) INTO v_new_job_record_ids FROM new_job n;
    ELSE
        -- Keys: the new jobs, NULL for an element whose key is already taken.
        -- A keyed job is matched to its element by the key's digest (unique
        -- among the new jobs); the k-th new keyless job by id order is the k-th
        -- keyless element, as ids are drawn in the order the sorted rows are
        -- inserted.
        WITH element AS (
            SELECT e.job_position,
                   pg_catalog.sha256(pg_catalog.convert_to(e.idempotency_key, 'UTF8')) AS key_digest,
                   e.run_after, CASE WHEN p_max_attempts IS NULL THEN 5 ELSE e.max_attempts END AS max_attempts
            FROM ROWS FROM (pg_catalog.unnest(p_job_payloads), pg_catalog.unnest(p_idempotency_keys),
                            pg_catalog.unnest(p_run_afters), pg_catalog.unnest(p_max_attempts))
                 WITH ORDINALITY AS e(job_payload, idempotency_key, run_after, max_attempts, job_position)
        ), new_job AS (
            INSERT INTO durable_jobs.job_record AS j (queue_name, idempotency_key_digest, run_after, max_attempts)
            SELECT p_queue_name, s.key_digest, COALESCE(s.run_after, pg_catalog.clock_timestamp()), s.max_attempts
            FROM (SELECT e.job_position, e.key_digest, e.run_after, e.max_attempts FROM element e
                  ORDER BY e.job_position) s
            ON CONFLICT (queue_name, idempotency_key_digest) WHERE idempotency_key_digest IS NOT NULL DO NOTHING
            RETURNING j.job_record_id, j.idempotency_key_digest
        ), placed AS (
            SELECT k.job_position, n.job_record_id
            FROM (SELECT DISTINCT ON (e.key_digest) e.key_digest, e.job_position
                  FROM element e WHERE e.key_digest IS NOT NULL
                  ORDER BY e.key_digest, e.job_position) k
            JOIN new_job n ON n.idempotency_key_digest = k.key_digest
            UNION ALL
            SELECT k.job_position, n.job_record_id
            FROM (SELECT e.job_position, pg_catalog.row_number() OVER (ORDER BY e.job_position) AS keyless_rank
                  FROM element e WHERE e.key_digest IS NULL) k
            JOIN (SELECT n.job_record_id, pg_catalog.row_number() OVER (ORDER BY n.job_record_id) AS keyless_rank
                  FROM new_job n WHERE n.idempotency_key_digest IS NULL) n ON n.keyless_rank = k.keyless_rank
        )
        SELECT pg_catalog.array_agg(p.job_record_id ORDER BY e.job_position) INTO v_new_job_record_ids
        FROM element e LEFT JOIN placed p ON p.job_position = e.job_position;
    END IF;

    IF pg_catalog.array_position(v_new_job_record_ids, NULL) IS NULL THEN
        -- Every element has a new job, and its key, if any, holds it.
        v_job_record_ids := v_new_job_record_ids;
    ELSE
        -- One id per element: its new job's, or (a key already taken) the id
        -- its key holds, looked up in a snapshot taken after the insert, so it
        -- also sees a concurrent insert of the key that this one waited for.
        SELECT pg_catalog.array_agg(r.job_record_id ORDER BY r.job_position) INTO STRICT v_job_record_ids
        FROM (SELECT u.job_position,
                     COALESCE(u.job_record_id,
                              (SELECT j.job_record_id FROM durable_jobs.job_record j
                               WHERE j.queue_name = p_queue_name
                                 AND j.idempotency_key_digest
                                     = pg_catalog.sha256(pg_catalog.convert_to(u.idempotency_key, 'UTF8')))) AS job_record_id
              FROM ROWS FROM (pg_catalog.unnest(v_new_job_record_ids), pg_catalog.unnest(p_idempotency_keys))
                   WITH ORDINALITY AS u(job_record_id, idempotency_key, job_position)) r
        HAVING pg_catalog.count(*) = pg_catalog.count(r.job_record_id); -- else P0002, as enqueue_job's STRICT lookup
    END IF;

    -- The new jobs' payloads, each element's with its new job, planned and
    -- run with plan_cache_mode auto (see above; the function's SET clause
    -- puts the caller's own value back when it returns).
    PERFORM pg_catalog.set_config('plan_cache_mode', 'auto', true);
    INSERT INTO durable_jobs.job_payload_record (job_record_id, job_payload)
    SELECT u.job_record_id, u.job_payload
    FROM ROWS FROM (pg_catalog.unnest(v_new_job_record_ids), pg_catalog.unnest(p_job_payloads))
         AS u(job_record_id, job_payload)
    WHERE u.job_record_id IS NOT NULL;
    RETURN v_job_record_ids;
END;
$function$;

ALTER FUNCTION durable_jobs.enqueue_jobs(text, jsonb[], text[], timestamp with time zone[], integer[]) OWNER TO durable_job_producer_owner;
REVOKE ALL ON FUNCTION durable_jobs.enqueue_jobs(text, jsonb[], text[], timestamp with time zone[], integer[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.enqueue_jobs(text, jsonb[], text[], timestamp with time zone[], integer[]) TO durable_job_producer;

-- cancel_job_recorded: private body of both cancel_job overloads (a NULL
-- reason: the producer's, recorded in the trail only).
CREATE OR REPLACE FUNCTION durable_jobs.cancel_job_recorded(p_job_record_id bigint, p_change_reason text,
    p_change_ticket text, p_change_approver text)
RETURNS boolean
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, pg_temp
AS $function$
DECLARE
    v_queue text;
    v_previous text;
BEGIN
    IF p_job_record_id IS NULL THEN
        RAISE EXCEPTION 'job id is required' USING ERRCODE = 'LF003';
    END IF;
    SELECT j.queue_name, j.job_status::text INTO v_queue, v_previous
    FROM durable_jobs.job_record j
    WHERE j.job_record_id = p_job_record_id AND j.job_status IN ('QUEUED', 'RETRY_SCHEDULED', 'RUNNING')
    FOR NO KEY UPDATE;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    UPDATE durable_jobs.job_record j
    SET job_status = 'CANCELLED', status_changed_at = pg_catalog.clock_timestamp(), lease_expires_at = NULL
    WHERE j.job_record_id = p_job_record_id;
    PERFORM durable_jobs.record_job_action(p_job_record_id, v_queue, 'cancelled', v_previous, 'CANCELLED',
        p_change_reason, p_change_ticket, p_change_approver);
    RETURN true;
END;
$function$;

ALTER FUNCTION durable_jobs.cancel_job_recorded(bigint, text, text, text) OWNER TO durable_job_producer_owner;
REVOKE ALL ON FUNCTION durable_jobs.cancel_job_recorded(bigint, text, text, text) FROM PUBLIC;

-- replay_job_recorded: private body of both replay_job overloads.
CREATE OR REPLACE FUNCTION durable_jobs.replay_job_recorded(p_job_record_id bigint, p_change_reason text,
    p_change_ticket text, p_change_approver text)
RETURNS boolean
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, pg_temp
AS $function$
DECLARE
    v_queue text;
    v_previous text;
BEGIN
    IF p_job_record_id IS NULL THEN
        RAISE EXCEPTION 'job id is required' USING ERRCODE = 'LF003';
    END IF;
    -- compared as text: statistics taken before the jobs finished must not
    -- make the partial index of finished jobs look cheaper than the key
    SELECT j.queue_name, j.job_status::text INTO v_queue, v_previous
    FROM durable_jobs.job_record j
    WHERE j.job_record_id = p_job_record_id AND j.job_status::text IN ('FAILED', 'CANCELLED')
    FOR NO KEY UPDATE;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    UPDATE durable_jobs.job_record j
    SET job_status = 'QUEUED', status_changed_at = pg_catalog.clock_timestamp(),
        run_after = pg_catalog.clock_timestamp(), attempt_number = 0, failure_reason_code = NULL
    WHERE j.job_record_id = p_job_record_id;
    PERFORM durable_jobs.record_job_action(p_job_record_id, v_queue, 'replayed', v_previous, 'QUEUED',
        p_change_reason, p_change_ticket, p_change_approver);
    RETURN true;
END;
$function$;

ALTER FUNCTION durable_jobs.replay_job_recorded(bigint, text, text, text) OWNER TO durable_job_producer_owner;
REVOKE ALL ON FUNCTION durable_jobs.replay_job_recorded(bigint, text, text, text) FROM PUBLIC;

-- cancel_job: QUEUED, RETRY_SCHEDULED or RUNNING to CANCELLED; a running
-- job's claim becomes stale at once (status is part of the fence). false when
-- the job is already terminal or unknown. A cancel appends a 'cancelled' row
-- to the job's action trail (record_job_action: session_user and database
-- time, no reason; since migration 026). Locks the job row (waits for a
-- worker's open terminal transaction). Raises LF003 for a NULL id.
CREATE OR REPLACE FUNCTION durable_jobs.cancel_job(p_job_record_id bigint)
RETURNS boolean
LANGUAGE sql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
BEGIN ATOMIC
    SELECT durable_jobs.cancel_job_recorded(p_job_record_id, NULL, NULL, NULL);
END;

ALTER FUNCTION durable_jobs.cancel_job(bigint) OWNER TO durable_job_producer_owner;
REVOKE ALL ON FUNCTION durable_jobs.cancel_job(bigint) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.cancel_job(bigint) TO durable_job_producer;

-- cancel_job (an operator's, with a reason): the same, and the change
-- record (reason, ticket when change control asks for one, approver) is
-- checked (LF002 and nothing changed when it is not structured), kept in
-- the job's action trail and appended as job_cancelled control evidence
-- (queue and status before; never the job id). Locks the job row, then the
-- evidence-order lock (lock_timeout 10 s, then 55P03).
CREATE OR REPLACE FUNCTION durable_jobs.cancel_job(p_job_record_id bigint, p_change_reason text,
    p_change_ticket text DEFAULT NULL, p_change_approver text DEFAULT NULL)
RETURNS boolean
LANGUAGE sql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET lock_timeout = '10s'
BEGIN ATOMIC
    SELECT durable_jobs.cancel_job_recorded(p_job_record_id, COALESCE(p_change_reason, ''), p_change_ticket,
        p_change_approver);
END;

ALTER FUNCTION durable_jobs.cancel_job(bigint, text, text, text) OWNER TO durable_job_producer_owner;
REVOKE ALL ON FUNCTION durable_jobs.cancel_job(bigint, text, text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.cancel_job(bigint, text, text, text) TO durable_job_operator;

-- replay_job: one FAILED or CANCELLED job back to QUEUED with its attempts
-- starting again (operators only). false for any other status or an unknown
-- id. Since migration 026 a replay is an operator action on record: this
-- overload, which takes no reason, records 'replayed without a reason' in
-- the job's action trail and as job_replayed control evidence, so it is
-- refused (LF002) where change control requires an approver or a reason
-- pattern. Locks the job row, then the evidence-order lock (lock_timeout
-- 10 s, then 55P03). Raises LF003 for a NULL id.
CREATE OR REPLACE FUNCTION durable_jobs.replay_job(p_job_record_id bigint)
RETURNS boolean
LANGUAGE sql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET lock_timeout = '10s'
BEGIN ATOMIC
    SELECT durable_jobs.replay_job_recorded(p_job_record_id, 'replayed without a reason', NULL, NULL);
END;

ALTER FUNCTION durable_jobs.replay_job(bigint) OWNER TO durable_job_producer_owner;
REVOKE ALL ON FUNCTION durable_jobs.replay_job(bigint) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.replay_job(bigint) TO durable_job_operator;

-- replay_job (with a reason): the same with the operator's reason, ticket
-- and approver, checked (LF002 and nothing changed when the change record
-- is not structured), kept in the job's action trail and appended as
-- job_replayed control evidence (queue and status before; never the job
-- id).
CREATE OR REPLACE FUNCTION durable_jobs.replay_job(p_job_record_id bigint, p_change_reason text,
    p_change_ticket text DEFAULT NULL, p_change_approver text DEFAULT NULL)
RETURNS boolean
LANGUAGE sql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET lock_timeout = '10s'
BEGIN ATOMIC
    SELECT durable_jobs.replay_job_recorded(p_job_record_id, COALESCE(p_change_reason, ''), p_change_ticket,
        p_change_approver);
END;

ALTER FUNCTION durable_jobs.replay_job(bigint, text, text, text) OWNER TO durable_job_producer_owner;
REVOKE ALL ON FUNCTION durable_jobs.replay_job(bigint, text, text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.replay_job(bigint, text, text, text) TO durable_job_operator;

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

ALTER FUNCTION durable_jobs.job_lifecycle_state(bigint) OWNER TO durable_job_producer_owner;
REVOKE ALL ON FUNCTION durable_jobs.job_lifecycle_state(bigint) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.job_lifecycle_state(bigint) TO durable_job_producer;


-- Auditor functions: read-only views of policy, health, outcomes and evidence.
--
-- The current definition of each function of this family, edited in place.
-- A change reaches databases through a new migration that includes this
-- file; released migrations hold their own frozen copy (see sql/doc.go).
--
-- Below, the notes written with the versions the current definitions come
-- from, newest first. They name the files as they were then; each
-- migration's frozen SQL under sql/migrations holds the whole text.

-- Notes of migration 016 (audit_v5.sql in its frozen SQL):
--
-- audit v5 (migration 016; 012 installs audit_v4.sql): only
-- lease_health_by_queue changes, and only in where the queue's policy (its
-- own, else '*') comes from: the rule function effective_lease_policy_queue
-- (rules.sql) instead of a lookup of its own. Same result, no locks.

-- Notes of migration 012 (audit_v4.sql in its frozen SQL):
--
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

-- Notes of migration 006 (audit_v3.sql in its frozen SQL):
--
-- Auditor functions, version 3 (the evidence-chain migration, *_evidence_chain.sql): what the auditor needs to
-- rely on the evidence. The functions of audit_v2.sql are unchanged and
-- stay in force. Payload-blind like them: no payload, token, digest of a
-- token, owner id or job id is returned. They take no locks.

-- Notes of migration 004 (audit_v2.sql in its frozen SQL):
--
-- Auditor functions: payload-blind, finite-cardinality reads for health and
-- evidence. None returns a payload, token, digest, owner id, idempotency key
-- or job id list. They take no locks and raise nothing of their own.

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

ALTER FUNCTION durable_jobs.bundle_migration_version() OWNER TO durable_job_audit_owner;
REVOKE ALL ON FUNCTION durable_jobs.bundle_migration_version() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.bundle_migration_version() TO durable_job_auditor;

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

ALTER FUNCTION durable_jobs.queue_lease_policies() OWNER TO durable_job_audit_owner;
REVOKE ALL ON FUNCTION durable_jobs.queue_lease_policies() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.queue_lease_policies() TO durable_job_auditor;

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

ALTER FUNCTION durable_jobs.job_status_totals() OWNER TO durable_job_audit_owner;
REVOKE ALL ON FUNCTION durable_jobs.job_status_totals() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.job_status_totals() TO durable_job_auditor;

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

ALTER FUNCTION durable_jobs.lease_outcome_totals(timestamp with time zone) OWNER TO durable_job_audit_owner;
REVOKE ALL ON FUNCTION durable_jobs.lease_outcome_totals(timestamp with time zone) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.lease_outcome_totals(timestamp with time zone) TO durable_job_auditor;

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

ALTER FUNCTION durable_jobs.control_evidence_history(timestamp with time zone) OWNER TO durable_job_audit_owner;
REVOKE ALL ON FUNCTION durable_jobs.control_evidence_history(timestamp with time zone) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.control_evidence_history(timestamp with time zone) TO durable_job_auditor;

-- control_evidence_records: the control evidence recorded in [p_since,
-- p_until) (either bound NULL for open), oldest first, with the structured
-- fields (ticket, approver) and each record's chain hash.
CREATE OR REPLACE FUNCTION durable_jobs.control_evidence_records(p_since timestamptz, p_until timestamptz)
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

ALTER FUNCTION durable_jobs.control_evidence_records(timestamp with time zone, timestamp with time zone) OWNER TO durable_job_audit_owner;
REVOKE ALL ON FUNCTION durable_jobs.control_evidence_records(timestamp with time zone, timestamp with time zone) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.control_evidence_records(timestamp with time zone, timestamp with time zone) TO durable_job_auditor;

-- control_evidence_chain: the hash chain of the control evidence, oldest
-- first: each record's id, kind and time, the digest of its content as
-- stored now (evidence_content_digest), and the previous_record_hash and
-- record_hash it was written with. A record is intact when record_hash =
-- sha256(previous_record_hash || content_digest) and previous_record_hash is
-- the record_hash of the record before it (32 zero bytes for the first):
-- `leasectl audit` (AUDIT-EVIDENCE-CHAIN) checks both. No reason or value
-- is returned.
CREATE OR REPLACE FUNCTION durable_jobs.control_evidence_chain()
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

ALTER FUNCTION durable_jobs.control_evidence_chain() OWNER TO durable_job_audit_owner;
REVOKE ALL ON FUNCTION durable_jobs.control_evidence_chain() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.control_evidence_chain() TO durable_job_auditor;

-- policy_evidence_mismatches: one row per queue whose live policy row is not
-- what its last lease_policy_changed record says it became (values compared
-- as durations, so '1 day' equals '24:00:00'), and per queue whose last
-- record says it has a row of its own that is now missing (or the reverse).
-- Empty when the policy table and the evidence agree.
CREATE OR REPLACE FUNCTION durable_jobs.policy_evidence_mismatches()
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

ALTER FUNCTION durable_jobs.policy_evidence_mismatches() OWNER TO durable_job_audit_owner;
REVOKE ALL ON FUNCTION durable_jobs.policy_evidence_mismatches() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.policy_evidence_mismatches() TO durable_job_auditor;

-- control_evidence_mismatches: one row per control-table row that is not
-- what its last evidence record says it became (since migration 026): each
-- queue's retention policy against its last retention_policy_changed record
-- (durations compared as durations; a row without a record, or a record
-- that says a row exists that is missing, or the reverse) and the
-- change-control setting against its last change_control_changed record
-- that holds every setting; the newest baseline (in migration 026's
-- migration_applied record) counts as a record of every row it holds, and
-- retention records before it are not compared (a row removed without
-- evidence before 026 is not in the baseline and stays unreported, as
-- nothing could clear it). A control changed with its evidence trigger
-- disabled shows here. Empty when the tables and the evidence agree.
CREATE OR REPLACE FUNCTION durable_jobs.control_evidence_mismatches()
RETURNS TABLE (control_table text, queue_name text, mismatch text)
LANGUAGE sql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
BEGIN ATOMIC
    WITH baseline AS (
        SELECT e.evidence_record_id, e.new_values
        FROM durable_jobs.control_evidence_record e
        WHERE e.evidence_kind = 'migration_applied' AND e.new_values ? 'retention_baseline'
        ORDER BY e.evidence_record_id DESC
        LIMIT 1
    ),
    retention_records AS (
        SELECT e.evidence_record_id, e.queue_name, e.new_values
        FROM durable_jobs.control_evidence_record e
        WHERE e.evidence_kind = 'retention_policy_changed' AND e.queue_name IS NOT NULL
          AND e.evidence_record_id > COALESCE((SELECT b.evidence_record_id FROM baseline b), 0)
        UNION ALL
        SELECT b.evidence_record_id, r.row_values ->> 'policy_queue_name', r.row_values
        FROM baseline b, LATERAL pg_catalog.jsonb_array_elements(b.new_values -> 'retention_baseline') AS r(row_values)
    ),
    last_retention AS (
        SELECT DISTINCT ON (r.queue_name) r.queue_name, r.new_values,
               COALESCE(r.new_values ->> 'policy_queue_name', '') = r.queue_name AS has_row
        FROM retention_records r
        ORDER BY r.queue_name, r.evidence_record_id DESC
    ),
    last_change_control AS (
        SELECT c.new_values
        FROM (SELECT e.evidence_record_id, e.new_values
              FROM durable_jobs.control_evidence_record e
              WHERE e.evidence_kind = 'change_control_changed'
                AND e.new_values ?& ARRAY['ticket_pattern', 'require_approver', 'approver_must_differ', 'reason_pattern']
              UNION ALL
              SELECT e.evidence_record_id, e.new_values -> 'change_control_baseline'
              FROM durable_jobs.control_evidence_record e
              WHERE e.evidence_kind = 'migration_applied' AND e.new_values ? 'change_control_baseline') c
        ORDER BY c.evidence_record_id DESC
        LIMIT 1
    )
    SELECT 'queue_retention_policy', COALESCE(p.queue_name, v.queue_name),
           CASE WHEN v.queue_name IS NULL THEN 'retention row has no evidence record'
                WHEN p.queue_name IS NULL THEN 'retention row in the evidence is missing from the table'
                WHEN NOT v.has_row THEN 'retention row exists but the evidence says it was removed'
                ELSE 'retention differs from what its last evidence record says' END
    FROM durable_jobs.queue_retention_policy p
    FULL JOIN last_retention v ON v.queue_name = p.queue_name
    WHERE v.queue_name IS NULL
       OR (p.queue_name IS NULL AND v.has_row)
       OR (p.queue_name IS NOT NULL AND NOT v.has_row)
       OR (p.queue_name IS NOT NULL AND (
              (v.new_values ->> 'payload_retention')::interval IS DISTINCT FROM p.payload_retention
           OR (v.new_values ->> 'record_retention')::interval IS DISTINCT FROM p.record_retention))
    UNION ALL
    SELECT 'change_control_setting', NULL, 'change control differs from what its last evidence record says'
    FROM durable_jobs.change_control_setting s
    JOIN last_change_control c ON true
    WHERE (c.new_values ->> 'ticket_pattern') IS DISTINCT FROM s.ticket_pattern
       OR (c.new_values ->> 'require_approver')::boolean IS DISTINCT FROM s.require_approver
       OR (c.new_values ->> 'approver_must_differ')::boolean IS DISTINCT FROM s.approver_must_differ
       OR (c.new_values ->> 'reason_pattern') IS DISTINCT FROM s.reason_pattern
       OR (c.new_values ? 'require_second_operator'
           AND (c.new_values ->> 'require_second_operator')::boolean IS DISTINCT FROM s.require_second_operator)
       OR (c.new_values ? 'proposal_lifetime'
           AND (c.new_values ->> 'proposal_lifetime')::interval IS DISTINCT FROM s.proposal_lifetime)
    ORDER BY 1, 2;
END;

ALTER FUNCTION durable_jobs.control_evidence_mismatches() OWNER TO durable_job_audit_owner;
REVOKE ALL ON FUNCTION durable_jobs.control_evidence_mismatches() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.control_evidence_mismatches() TO durable_job_auditor;

-- job_status_mismatches: per queue and status, how many finished jobs hold
-- a status that no fenced write or recorded action explains (since
-- migration 026): a SUCCEEDED job without a SUCCEEDED outcome at its
-- current fencing generation, a FAILED job without a FAILED outcome at it
-- and with attempts left (a claim fails a job whose attempts are used up
-- without an outcome). A superuser's UPDATE of job statuses shows here.
-- Counts only; never a job id. Empty when every status is explained.
-- Reads every finished job (one pass, no lock).
CREATE OR REPLACE FUNCTION durable_jobs.job_status_mismatches()
RETURNS TABLE (queue_name text, job_status text, job_count bigint)
LANGUAGE sql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
BEGIN ATOMIC
    SELECT j.queue_name, j.job_status::text, pg_catalog.count(*)
    FROM durable_jobs.job_record j
    WHERE j.job_status::text IN ('SUCCEEDED', 'FAILED')
      AND NOT (j.job_status::text = 'FAILED' AND j.attempt_number >= j.max_attempts)
      AND NOT EXISTS (
          SELECT 1 FROM durable_jobs.job_outcome_ledger l
          WHERE l.job_record_id = j.job_record_id
            AND l.lease_fencing_generation = j.lease_fencing_generation
            AND l.outcome_status = j.job_status)
    GROUP BY j.queue_name, j.job_status
    ORDER BY j.queue_name, j.job_status;
END;

ALTER FUNCTION durable_jobs.job_status_mismatches() OWNER TO durable_job_audit_owner;
REVOKE ALL ON FUNCTION durable_jobs.job_status_mismatches() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.job_status_mismatches() TO durable_job_auditor;

-- processing_counts: per queue, what was processed in [p_since, p_until)
-- (since migration 026; NULL: open): jobs enqueued (created then), outcomes
-- the workers recorded (succeeded, retried, failed: the outcome ledger's
-- rows recorded then) and the operators' cancels and replays (the action
-- trail, since 026). Each figure is counted where it happened, so a
-- period's figures do not change once it has passed, until the retention
-- purge removes its jobs (the purge's own counts are in its evidence). A
-- job failed by a claim because its attempts were used up writes no
-- outcome and is not counted as failed. Counts only. Reads the job, ledger
-- and action tables in one pass each; takes no lock.
CREATE OR REPLACE FUNCTION durable_jobs.processing_counts(p_since timestamptz, p_until timestamptz)
RETURNS TABLE (queue_name text, enqueued bigint, succeeded bigint, retried bigint, failed bigint,
               cancelled bigint, replayed bigint)
LANGUAGE sql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
BEGIN ATOMIC
    WITH events AS (
        SELECT j.queue_name, 'enqueued' AS event
        FROM durable_jobs.job_record j
        WHERE (p_since IS NULL OR j.created_at >= p_since) AND (p_until IS NULL OR j.created_at < p_until)
        UNION ALL
        SELECT j.queue_name, l.outcome_status::text
        FROM durable_jobs.job_outcome_ledger l
        JOIN durable_jobs.job_record j ON j.job_record_id = l.job_record_id
        WHERE (p_since IS NULL OR l.recorded_at >= p_since) AND (p_until IS NULL OR l.recorded_at < p_until)
        UNION ALL
        SELECT j.queue_name, a.action_kind
        FROM durable_jobs.job_action_record a
        JOIN durable_jobs.job_record j ON j.job_record_id = a.job_record_id
        WHERE a.action_kind IN ('cancelled', 'replayed')
          AND (p_since IS NULL OR a.acted_at >= p_since) AND (p_until IS NULL OR a.acted_at < p_until)
    )
    SELECT e.queue_name,
           pg_catalog.count(*) FILTER (WHERE e.event = 'enqueued'),
           pg_catalog.count(*) FILTER (WHERE e.event = 'SUCCEEDED'),
           pg_catalog.count(*) FILTER (WHERE e.event = 'RETRY_SCHEDULED'),
           pg_catalog.count(*) FILTER (WHERE e.event = 'FAILED'),
           pg_catalog.count(*) FILTER (WHERE e.event = 'cancelled'),
           pg_catalog.count(*) FILTER (WHERE e.event = 'replayed')
    FROM events e
    GROUP BY e.queue_name
    ORDER BY e.queue_name;
END;

ALTER FUNCTION durable_jobs.processing_counts(timestamptz, timestamptz) OWNER TO durable_job_audit_owner;
REVOKE ALL ON FUNCTION durable_jobs.processing_counts(timestamptz, timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.processing_counts(timestamptz, timestamptz) TO durable_job_auditor;


CREATE TRIGGER queue_retention_policy_stamp BEFORE INSERT OR UPDATE ON durable_jobs.queue_retention_policy
    FOR EACH ROW EXECUTE FUNCTION durable_jobs.stamp_control_change();
CREATE TRIGGER queue_retention_policy_no_truncate BEFORE TRUNCATE ON durable_jobs.queue_retention_policy
    FOR EACH STATEMENT EXECUTE FUNCTION durable_jobs.refuse_control_removal();
CREATE TRIGGER change_control_setting_stamp BEFORE UPDATE ON durable_jobs.change_control_setting
    FOR EACH ROW EXECUTE FUNCTION durable_jobs.stamp_control_change();
CREATE TRIGGER change_control_setting_no_delete BEFORE DELETE ON durable_jobs.change_control_setting
    FOR EACH ROW EXECUTE FUNCTION durable_jobs.refuse_control_removal();
CREATE TRIGGER change_control_setting_no_truncate BEFORE TRUNCATE ON durable_jobs.change_control_setting
    FOR EACH STATEMENT EXECUTE FUNCTION durable_jobs.refuse_control_removal();

CREATE TRIGGER queue_retention_policy_evidence AFTER INSERT OR UPDATE OR DELETE ON durable_jobs.queue_retention_policy
    FOR EACH ROW EXECUTE FUNCTION durable_jobs.record_retention_policy_change();
CREATE TRIGGER change_control_setting_evidence AFTER UPDATE ON durable_jobs.change_control_setting
    FOR EACH ROW EXECUTE FUNCTION durable_jobs.record_change_control_change();

SET LOCAL IntervalStyle = 'postgres';
SELECT durable_jobs.lock_evidence_order();
INSERT INTO durable_jobs.control_evidence_record (evidence_kind, queue_name, previous_values, new_values, change_reason)
SELECT 'migration_applied', NULL, NULL,
       '{"migration_version": 26, "migration_name": "026_evidence_an_auditor_accepts"}'::jsonb
       -- The baseline: every control row as it stands, so that the audit
       -- (control_evidence_mismatches) compares each table with its last
       -- record from here on (in this record, of a kind every version
       -- knows, so a later down keeps the kinds of 025 valid).
       || pg_catalog.jsonb_build_object(
              'retention_baseline', (SELECT COALESCE(pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object(
                      'policy_queue_name', p.queue_name, 'payload_retention', p.payload_retention,
                      'record_retention', p.record_retention) ORDER BY p.queue_name), '[]')
                  FROM durable_jobs.queue_retention_policy p),
              'change_control_baseline', (SELECT pg_catalog.jsonb_build_object('ticket_pattern', s.ticket_pattern,
                      'require_approver', s.require_approver, 'approver_must_differ', s.approver_must_differ,
                      'reason_pattern', s.reason_pattern, 'require_second_operator', s.require_second_operator,
                      'proposal_lifetime', s.proposal_lifetime)
                  FROM durable_jobs.change_control_setting s)),
       COALESCE(NULLIF(pg_catalog.current_setting('leasefence.migration_reason', true), ''), 'leasefence bundle migration');

---- create above / drop below ----

DROP TRIGGER change_control_setting_evidence ON durable_jobs.change_control_setting;
DROP TRIGGER change_control_setting_no_truncate ON durable_jobs.change_control_setting;
DROP TRIGGER change_control_setting_no_delete ON durable_jobs.change_control_setting;
DROP TRIGGER change_control_setting_stamp ON durable_jobs.change_control_setting;
DROP TRIGGER queue_retention_policy_evidence ON durable_jobs.queue_retention_policy;
DROP TRIGGER queue_retention_policy_no_truncate ON durable_jobs.queue_retention_policy;
DROP TRIGGER queue_retention_policy_stamp ON durable_jobs.queue_retention_policy;
DROP FUNCTION durable_jobs.record_change_control_change();
DROP FUNCTION durable_jobs.record_retention_policy_change();
DROP FUNCTION durable_jobs.refuse_control_removal();
DROP FUNCTION durable_jobs.stamp_control_change();
DROP FUNCTION durable_jobs.continue_evidence_chain(bigint, bytea, text, text, text);
DROP FUNCTION durable_jobs.control_evidence_mismatches();
DROP FUNCTION durable_jobs.job_status_mismatches();
DROP FUNCTION durable_jobs.processing_counts(timestamp with time zone, timestamp with time zone);
DROP FUNCTION durable_jobs.operator_job_actions(bigint);
DROP FUNCTION durable_jobs.cancel_job(bigint, text, text, text);
DROP FUNCTION durable_jobs.replay_job(bigint, text, text, text);
DROP FUNCTION durable_jobs.set_queue_retention_policy(text, interval, interval, text, text, text) CASCADE;
DROP FUNCTION durable_jobs.erase_job_payload(bigint, text, text, text) CASCADE;
-- cancel_job(bigint) and replay_job(bigint) are SQL functions that depend on
-- these bodies: dropped with them and created again below.
DROP FUNCTION durable_jobs.cancel_job_recorded(bigint, text, text, text) CASCADE;
DROP FUNCTION durable_jobs.replay_job_recorded(bigint, text, text, text) CASCADE;
DROP FUNCTION durable_jobs.record_job_action(bigint, text, text, text, text, text, text, text);
DROP FUNCTION durable_jobs.check_change_record(durable_jobs.change_control_setting, text, text, text) CASCADE;
DROP FUNCTION durable_jobs.set_change_record(text, text, text);
DROP FUNCTION durable_jobs.pending_changes(boolean);
DROP FUNCTION durable_jobs.reject_change(bigint, text);
DROP FUNCTION durable_jobs.approve_change(bigint);
DROP FUNCTION durable_jobs.decide_change(bigint, text, text);
DROP FUNCTION durable_jobs.propose_change(text, text, jsonb, text, text);
DROP FUNCTION durable_jobs.approved_proposer();
DROP FUNCTION durable_jobs.set_maker_checker(boolean, interval, text, text, text);
DROP FUNCTION durable_jobs.require_valid_change_control(text, boolean, boolean, text, boolean, interval);
DROP FUNCTION durable_jobs.change_control();
DROP TABLE durable_jobs.pending_change;
ALTER TABLE durable_jobs.change_control_setting DROP COLUMN require_second_operator, DROP COLUMN proposal_lifetime;
DROP TABLE durable_jobs.job_action_record;
REVOKE SELECT (job_record_id, lease_fencing_generation, outcome_status, recorded_at) ON durable_jobs.job_outcome_ledger
    FROM durable_job_audit_owner;
REVOKE INSERT (change_ticket, change_approver) ON durable_jobs.control_evidence_record FROM durable_job_retention_owner;
REVOKE SELECT (queue_name, payload_retention, record_retention) ON durable_jobs.queue_retention_policy FROM durable_job_audit_owner;
REVOKE SELECT (ticket_pattern, require_approver, approver_must_differ, reason_pattern) ON durable_jobs.change_control_setting
    FROM durable_job_audit_owner;

-- The six families as migration 025 left them.

-- Control evidence: the order lock, the hash chain, the append-only guard, the reason checks and the policy-table trigger.
--
-- The current definition of each function of this family, edited in place.
-- A change reaches databases through a new migration that includes this
-- file; released migrations hold their own frozen copy (see sql/doc.go).
--
-- Below, the notes written with the versions the current definitions come
-- from, newest first. They name the files as they were then; each
-- migration's frozen SQL under sql/migrations holds the whole text.

-- Notes of migration 006 (evidence_guard_v2.sql in its frozen SQL):
--
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

-- Notes of migration 005 (retention.sql in its frozen SQL):
--
-- The retention and erasure family (first version, installed by the
-- retention migration). Owned by durable_job_retention_owner, which may
-- delete finished jobs, delete payload rows and clear result documents,
-- but holds no SELECT on job_payload_record.job_payload or on
-- job_outcome_ledger.result_document: it removes personal data without
-- being able to read it. Executable by durable_job_operator only.

-- lock_evidence_order: every writer of control evidence calls this before
-- it reads what it records and before it inserts, so evidence writers run
-- one at a time and each record's id and recorded_at come after those of
-- every record committed before it: an export by id never skips a record
-- that commits later. Since migration 024 the lock is the row of
-- durable_jobs.evidence_order_lock, locked FOR UPDATE until commit or
-- rollback: a private table whose row only durable_job_policy_owner (a
-- NOLOGIN role without members, which owns this function) may lock, so no
-- login but a superuser can hold every evidence writer up (before 024 it was a transaction-level advisory
-- lock on a key the docs printed, which any login could take and keep).
-- Every writer waits for it at most 10 s (lock_timeout, then 55P03 and
-- nothing changed), and a transaction that holds it may then sit idle for
-- at most 60 s (idle_in_transaction_session_timeout, set for the rest of
-- the transaction unless the session's own bound is shorter) before the
-- server ends it. Waits for another evidence writer's open transaction.
CREATE OR REPLACE FUNCTION durable_jobs.lock_evidence_order()
RETURNS void
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET lock_timeout = '10s'
AS $function$
DECLARE
    v_idle_timeout_ms bigint;
BEGIN
    PERFORM 1 FROM durable_jobs.evidence_order_lock l FOR UPDATE;
    SELECT s.setting::bigint INTO STRICT v_idle_timeout_ms
    FROM pg_catalog.pg_settings s WHERE s.name = 'idle_in_transaction_session_timeout';
    IF v_idle_timeout_ms = 0 OR v_idle_timeout_ms > 60000 THEN
        PERFORM pg_catalog.set_config('idle_in_transaction_session_timeout', '60s', true);
    END IF;
END;
$function$;

ALTER FUNCTION durable_jobs.lock_evidence_order() OWNER TO durable_job_policy_owner;
REVOKE ALL ON FUNCTION durable_jobs.lock_evidence_order() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.lock_evidence_order() TO durable_job_retention_owner;

-- evidence_content_digest: sha256 over one evidence record's content (its
-- id, kind, queue, previous and new values, reason, changed-by role,
-- recorded time as epoch seconds, ticket and approver), serialised as a
-- jsonb array's text, which is the same for the same values on every
-- server. NULL fields are part of the content. Takes no lock.
CREATE OR REPLACE FUNCTION durable_jobs.evidence_content_digest(p_evidence_record_id bigint, p_evidence_kind text,
    p_queue_name text, p_previous_values jsonb, p_new_values jsonb, p_change_reason text, p_changed_by_role text,
    p_recorded_at timestamptz, p_change_ticket text, p_change_approver text)
RETURNS bytea
LANGUAGE sql
IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
RETURN pg_catalog.sha256(pg_catalog.convert_to(pg_catalog.jsonb_build_array(
    p_evidence_record_id, p_evidence_kind, p_queue_name, p_previous_values, p_new_values, p_change_reason,
    p_changed_by_role, (EXTRACT(epoch FROM p_recorded_at))::text, p_change_ticket, p_change_approver)::text, 'UTF8'));

REVOKE ALL ON FUNCTION durable_jobs.evidence_content_digest(bigint, text, text, jsonb, jsonb, text, text, timestamp with time zone, text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.evidence_content_digest(bigint, text, text, jsonb, jsonb, text, text, timestamp with time zone, text, text) TO durable_job_policy_owner, durable_job_audit_owner, durable_job_retention_owner;

-- chain_evidence_record: BEFORE INSERT trigger on control_evidence_record.
-- Under the evidence-order lock (lock_evidence_order) it sets the new
-- record's previous_record_hash to the record_hash of the record with the
-- highest id (32 zero bytes for the first) and its record_hash to
-- sha256(previous_record_hash || evidence_content_digest(...)), so chain
-- order is id order is commit order. Raises LF003 when the transaction is
-- not READ COMMITTED (an older snapshot could miss the last record) or when
-- the new id is not above every committed id (the writer drew its id before
-- taking the lock); nothing is written then.
CREATE OR REPLACE FUNCTION durable_jobs.chain_evidence_record()
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

REVOKE ALL ON FUNCTION durable_jobs.chain_evidence_record() FROM PUBLIC;

-- refuse_evidence_change: trigger that keeps control_evidence_record
-- append-only. Fires before UPDATE, DELETE (per row) and TRUNCATE (per
-- statement) for every role, the table owner included.
-- Raises LF004 (evidence is append-only). Takes no lock of its own.
CREATE OR REPLACE FUNCTION durable_jobs.refuse_evidence_change()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $function$
BEGIN
    RAISE EXCEPTION USING
        ERRCODE = 'LF004',
        MESSAGE = 'control evidence is append-only',
        DETAIL = pg_catalog.format('%s on %s is refused', TG_OP, TG_TABLE_NAME),
        HINT = 'Append a new evidence record instead.';
END;
$function$;

ALTER FUNCTION durable_jobs.refuse_evidence_change() OWNER TO durable_job_evidence_owner;
REVOKE ALL ON FUNCTION durable_jobs.refuse_evidence_change() FROM PUBLIC;

-- screening_form: free text as looks_personal_or_secret reads it, so each
-- of its ASCII rules also catches the other forms of the same data
-- (migration 024): Unicode NFKC normalization (full-width digits and
-- letters, '＠', '．' and other compatibility forms become ASCII; only in
-- a UTF8 database, the others hold no such characters), invisible
-- characters removed (soft hyphen, zero-width and word-joiner characters,
-- Hangul fillers, variation selectors, tag characters, the byte order
-- mark), every Unicode hyphen and dash written '-', the ideographic full
-- stop written '.', and the decimal digits of the Arabic-Indic, Extended
-- Arabic-Indic, Devanagari, Bengali, Thai, Myanmar and Khmer scripts
-- written as ASCII digits. Only for screening: the text recorded is the
-- text given. NULL in, NULL out. Takes no lock.
CREATE OR REPLACE FUNCTION durable_jobs.screening_form(p_text text)
RETURNS text
LANGUAGE sql
IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
BEGIN ATOMIC
    SELECT CASE WHEN s.t ~ '[\u0660-\u0669\u06f0-\u06f9\u0966-\u096f\u09e6-\u09ef\u0e50-\u0e59\u1040-\u1049\u17e0-\u17e9]'
           THEN (SELECT pg_catalog.string_agg(CASE
                     WHEN c.ch ~ '[\u0660-\u0669]' THEN pg_catalog.chr(pg_catalog.ascii(c.ch) - 1584)
                     WHEN c.ch ~ '[\u06f0-\u06f9]' THEN pg_catalog.chr(pg_catalog.ascii(c.ch) - 1728)
                     WHEN c.ch ~ '[\u0966-\u096f]' THEN pg_catalog.chr(pg_catalog.ascii(c.ch) - 2358)
                     WHEN c.ch ~ '[\u09e6-\u09ef]' THEN pg_catalog.chr(pg_catalog.ascii(c.ch) - 2486)
                     WHEN c.ch ~ '[\u0e50-\u0e59]' THEN pg_catalog.chr(pg_catalog.ascii(c.ch) - 3616)
                     WHEN c.ch ~ '[\u1040-\u1049]' THEN pg_catalog.chr(pg_catalog.ascii(c.ch) - 4112)
                     WHEN c.ch ~ '[\u17e0-\u17e9]' THEN pg_catalog.chr(pg_catalog.ascii(c.ch) - 6064)
                     ELSE c.ch END, '' ORDER BY c.n)
                 FROM pg_catalog.regexp_split_to_table(s.t, '') WITH ORDINALITY AS c(ch, n))
           ELSE s.t END
    FROM (SELECT pg_catalog.regexp_replace(pg_catalog.regexp_replace(pg_catalog.regexp_replace(
              CASE WHEN pg_catalog.getdatabaseencoding() = 'UTF8' THEN normalize(p_text, NFKC) ELSE p_text END,
              '[\u00ad\u034f\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff0-\ufff8\U000e0000-\U000e007f]', '', 'g'),
              '[\u2010-\u2015\u2212\ufe58\ufe63\uff0d]', '-', 'g'),
              '[\u3002\uff61]', '.', 'g') AS t) s;
END;

REVOKE ALL ON FUNCTION durable_jobs.screening_form(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.screening_form(text) TO durable_job_policy_owner, durable_job_retention_owner;

-- looks_personal_or_secret: true when free text given for append-only
-- evidence looks like personal data or a secret, read in its screening
-- form (screening_form, since migration 024: full-width, other-script and
-- dotted forms are caught as the ASCII ones): a Korean resident
-- registration number (6 digits, up to three spaces, dots, underscores or
-- hyphens, then [1-4] and 6 digits), a run of 13 to 19 digits (a space,
-- dot, underscore or hyphen between any two allowed) that passes the Luhn
-- check, an e-mail address, a phone number (0 followed by 9 to 10 more
-- digits in the usual groups, the area code in parentheses or not, up to
-- three separators between groups; or + and 8 or more digits), or a
-- credential (password=, passwd=, pass=, pwd=, pw=, secret=, token=,
-- api_key=, also with ':'; "password is ..."). NULL in, NULL out. A
-- heuristic: it refuses what looks like such data and cannot prove its
-- absence; change control's reason pattern (set_change_control) can forbid
-- free text altogether. Takes no lock.
CREATE OR REPLACE FUNCTION durable_jobs.looks_personal_or_secret(p_text text)
RETURNS boolean
LANGUAGE sql
IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
BEGIN ATOMIC
    SELECT s.n ~ '(^|[^0-9])[0-9]{6}[[:space:]._-]{0,3}[1-4][0-9]{6}([^0-9]|$)'
        OR s.n ~ '[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}'
        OR s.n ~ '(^|[^0-9])[(]?0[0-9]{1,2}[)]?[[:space:]._-]{0,3}[0-9]{3,4}[[:space:]._-]{0,3}[0-9]{4}([^0-9]|$)'
        OR s.n ~ '\+[0-9][0-9[:space:]()._-]{7,}[0-9]'
        OR s.n ~* '(password|passwd|pwd|pw|secret|token|api[_-]?key)[[:space:]]*[=:]'
        OR s.n ~* '\mpass[[:space:]]*[=:]'
        OR s.n ~* '\m(password|passwd|passphrase)[[:space:]]+is[[:space:]]+[^[:space:]]'
        OR EXISTS (SELECT 1
                   FROM pg_catalog.regexp_matches(s.n, '[0-9](?:[[:space:]._-]?[0-9]){12,18}', 'g') AS m(candidate)
                   WHERE durable_jobs.passes_luhn(pg_catalog.regexp_replace(m.candidate[1], '[^0-9]', '', 'g')))
    FROM (SELECT durable_jobs.screening_form(p_text) AS n) s;
END;

REVOKE ALL ON FUNCTION durable_jobs.looks_personal_or_secret(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.looks_personal_or_secret(text) TO durable_job_policy_owner, durable_job_retention_owner;

-- passes_luhn: true when a string of 13 to 19 decimal digits passes the
-- Luhn check that payment card numbers carry. NULL in, NULL out.
CREATE OR REPLACE FUNCTION durable_jobs.passes_luhn(p_digits text)
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

REVOKE ALL ON FUNCTION durable_jobs.passes_luhn(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.passes_luhn(text) TO durable_job_policy_owner, durable_job_retention_owner;

-- is_plain_change_reason: true when an operator's change reason is 1 to 500
-- characters, not blank, and has no control character (C0, DEL, C1: ESC,
-- newlines and tabs included) and no bidirectional-control or line/paragraph
-- separator character (U+061C, U+200E, U+200F, U+2028 to U+202E, U+2066 to
-- U+2069) that could make evidence read differently from what it holds,
-- and (since migration 024) no invisible character: soft hyphen (U+00AD),
-- combining grapheme joiner, Hangul fillers (U+115F, U+1160, U+3164,
-- U+FFA0), Khmer and Mongolian invisible signs, zero-width and
-- word-joiner characters (U+200B to U+200F, U+2060 to U+206F), variation
-- selectors, the byte order mark (U+FEFF), U+FFF0 to U+FFF8 and tag
-- characters (U+E0000 to U+E007F). NULL in, NULL out. Takes no lock.
CREATE OR REPLACE FUNCTION durable_jobs.is_plain_change_reason(p_change_reason text)
RETURNS boolean
LANGUAGE sql
IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
RETURN p_change_reason ~ '[^[:space:]]'
   AND pg_catalog.length(p_change_reason) <= 500
   AND p_change_reason !~ '[\x01-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069\u00ad\u034f\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff0-\ufff8\U000e0000-\U000e007f]';

REVOKE ALL ON FUNCTION durable_jobs.is_plain_change_reason(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.is_plain_change_reason(text) TO durable_job_policy_owner, durable_job_retention_owner;

-- require_valid_change_reason: private helper that refuses (p_sqlstate) a
-- change reason that is NULL, blank, over 500 characters or holds a control
-- character (newline, tab, escape...), so evidence stays one printable line.
-- The message never repeats the reason. Takes no lock.
CREATE OR REPLACE FUNCTION durable_jobs.require_valid_change_reason(p_change_reason text, p_sqlstate text)
RETURNS void
LANGUAGE plpgsql
IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $function$
BEGIN
    IF p_change_reason IS NULL OR p_change_reason !~ '[^[:space:]]' OR pg_catalog.length(p_change_reason) > 500
       OR p_change_reason ~ '[[:cntrl:]]' THEN
        RAISE EXCEPTION USING
            ERRCODE = p_sqlstate,
            MESSAGE = 'invalid change reason',
            DETAIL = 'A change reason is 1 to 500 characters, not blank, without control characters (newlines, tabs).';
    END IF;
END;
$function$;

ALTER FUNCTION durable_jobs.require_valid_change_reason(text, text) OWNER TO durable_job_retention_owner;
REVOKE ALL ON FUNCTION durable_jobs.require_valid_change_reason(text, text) FROM PUBLIC;

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
-- The durations are written as IntervalStyle postgres gives them
-- ('00:00:10'), whatever the session's IntervalStyle, DateStyle, TimeZone
-- or extra_float_digits (since migration 024; before, a change made under
-- IntervalStyle postgres_verbose recorded '@ 10 secs').
CREATE OR REPLACE FUNCTION durable_jobs.record_policy_change()
RETURNS trigger
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET lock_timeout = '10s'
SET IntervalStyle = 'postgres'
SET DateStyle = 'ISO, MDY'
SET TimeZone = 'UTC'
SET extra_float_digits = '1'
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

ALTER FUNCTION durable_jobs.record_policy_change() OWNER TO durable_job_policy_owner;
REVOKE ALL ON FUNCTION durable_jobs.record_policy_change() FROM PUBLIC;

-- stamp_policy_change: BEFORE INSERT OR UPDATE trigger on
-- queue_lease_policy. Sets changed_by_role to session_user and changed_at to
-- the database time whatever the statement wrote, so the row cannot name
-- someone else. Raises LF002 when an UPDATE renames a queue's row (delete
-- it and insert the new one instead). Takes no lock.
CREATE OR REPLACE FUNCTION durable_jobs.stamp_policy_change()
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

REVOKE ALL ON FUNCTION durable_jobs.stamp_policy_change() FROM PUBLIC;

-- refuse_policy_truncate: BEFORE TRUNCATE trigger on queue_lease_policy.
-- TRUNCATE fires no row trigger, so it would remove policies without
-- evidence: refused for every role with LF002. Takes no lock.
CREATE OR REPLACE FUNCTION durable_jobs.refuse_policy_truncate()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $function$
BEGIN
    RAISE EXCEPTION 'TRUNCATE of queue_lease_policy is refused' USING ERRCODE = 'LF002',
        HINT = 'Delete the rows instead, so that each removal is recorded as evidence.';
END;
$function$;

REVOKE ALL ON FUNCTION durable_jobs.refuse_policy_truncate() FROM PUBLIC;

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
-- it waited applies to it) when the change record is not structured. Appends a
-- change_control_changed evidence record with the previous and new values,
-- reason, ticket, approver and session_user. Locks: the evidence-order lock
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
    -- Takes the evidence-order lock, then checks against what is in force.
    PERFORM durable_jobs.require_structured_change(p_change_reason, p_change_ticket, p_change_approver);
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
-- change record is not structured. Appends a change_control_changed
-- evidence record with the pattern before and after. Locks: the
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
    v_previous text;
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
    SELECT s.reason_pattern INTO STRICT v_previous FROM durable_jobs.change_control_setting s FOR UPDATE;
    UPDATE durable_jobs.change_control_setting
    SET reason_pattern = v_pattern, changed_at = pg_catalog.clock_timestamp(), changed_by_role = SESSION_USER;
    INSERT INTO durable_jobs.control_evidence_record
        (evidence_kind, queue_name, previous_values, new_values, change_reason, change_ticket, change_approver)
    VALUES ('change_control_changed', NULL, pg_catalog.jsonb_build_object('reason_pattern', v_previous),
            pg_catalog.jsonb_build_object('reason_pattern', v_pattern), p_change_reason, p_change_ticket, p_change_approver);
END;
$function$;

ALTER FUNCTION durable_jobs.set_change_reason_pattern(text, text, text, text) OWNER TO durable_job_policy_owner;
REVOKE ALL ON FUNCTION durable_jobs.set_change_reason_pattern(text, text, text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.set_change_reason_pattern(text, text, text, text) TO durable_job_operator;

-- require_structured_change: raises LF002, naming the rule and never the
-- value, unless a change record is structured: a reason that is plain text
-- (is_plain_change_reason), matches the reason pattern when change control
-- sets one (since migration 024) and does not look like personal data or a
-- secret (looks_personal_or_secret); a ticket, when given, of plain text of at
-- most 100 characters matching the setting's ticket_pattern (default
-- ^[A-Z][A-Z0-9]+-[0-9]+$); an approver, when given,
-- that is an existing login role; an approver at all when require_approver
-- is set; and an approver other than session_user when
-- approver_must_differ is set (the default, as before version 3). Takes the
-- evidence-order lock (lock_evidence_order) first and reads the setting
-- after it (VOLATILE: the read takes a snapshot of its own), so every
-- writer is checked against the change control in force when no other
-- change can commit before it (since migration 024; before, a loosening
-- that waited for a tightening's lock committed against the old rules).
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
    IF p_change_reason IS NULL OR NOT durable_jobs.is_plain_change_reason(p_change_reason) THEN
        RAISE EXCEPTION 'invalid change record' USING ERRCODE = 'LF002',
            DETAIL = 'The change reason must be 1 to 500 characters, not blank, without control or bidirectional-control characters.';
    END IF;
    IF v_setting.reason_pattern IS NOT NULL AND p_change_reason !~ v_setting.reason_pattern THEN
        RAISE EXCEPTION 'invalid change record' USING ERRCODE = 'LF002',
            DETAIL = 'The change reason must match the change-control reason pattern (durable_jobs.change_control()).';
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

REVOKE ALL ON FUNCTION durable_jobs.require_structured_change(text, text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.require_structured_change(text, text, text) TO durable_job_policy_owner, durable_job_retention_owner;

-- Retention and erasure (operators).
--
-- The current definition of each function of this family, edited in place.
-- A change reaches databases through a new migration that includes this
-- file; released migrations hold their own frozen copy (see sql/doc.go).
--
-- Below, the notes written with the versions the current definitions come
-- from, newest first. They name the files as they were then; each
-- migration's frozen SQL under sql/migrations holds the whole text.

-- Notes of migration 019 (retention_v3.sql in its frozen SQL):
--
-- Retention, version 3 (migration 019): only purge_expired_job_data
-- changes. Migration 019 drops the foreign keys of job_payload_record and
-- job_outcome_ledger to job_record (each INSERT of a payload or an outcome
-- ran the key's check, a query and a row lock per row, on every enqueue and
-- completion), so their ON DELETE CASCADE is gone too: the purge deletes a
-- purged job's payload and outcome ledger rows itself, in the statement that
-- deletes the job. Everything else stays as retention.sql and
-- retention_v2.sql install it.

-- Notes of migration 014 (retention_v2.sql in its frozen SQL):
--
-- The retention and erasure family, version 2 (migration 014; 005 installs
-- retention.sql): only set_queue_retention_policy and erase_job_payload
-- change, so only they are here. Version 1 refused a reason that was blank,
-- too long or held a control character, and nothing else: a reason naming a
-- person, a card or a password went into append-only evidence that can never
-- be erased. Version 2 also passes every reason through
-- require_structured_change (the evidence-chain migration's check of policy
-- change reasons: LF002 for what looks like personal data or a secret), as
-- set_queue_lease_policy does. Owner, settings and grants are unchanged; the
-- owner, durable_job_retention_owner, is granted EXECUTE on that check and
-- the helpers it calls by the migration.

-- Notes of migration 005 (retention.sql in its frozen SQL):
--
-- The retention and erasure family (first version, installed by the
-- retention migration). Owned by durable_job_retention_owner, which may
-- delete finished jobs, delete payload rows and clear result documents,
-- but holds no SELECT on job_payload_record.job_payload or on
-- job_outcome_ledger.result_document: it removes personal data without
-- being able to read it. Executable by durable_job_operator only.

-- set_queue_retention_policy: sets how long one queue's finished jobs
-- (SUCCEEDED, FAILED, CANCELLED, aged by status_changed_at) keep their
-- payload and result documents, and how long their row and outcome ledger
-- are kept ('*' is the default for queues without their own). Valid only
-- when every value is non-NULL and a plain duration (absolute_duration: no
-- month or year part, day and time parts of one sign; since migration 024,
-- so that no interval whose parts cancel out passes a bound it does not
-- meet), 1 hour <= payload_retention <= record_retention <= 3650 days, the
-- reason is valid (see require_valid_change_reason), does not look like
-- personal data or a secret (require_structured_change) and the queue name
-- is '*' or well-formed. Otherwise LF002 and nothing changes. The policy
-- stores the durations as absolute_duration gives them ('30 days' is kept
-- as '720:00:00'), as the lease policy does. Appends
-- retention_policy_changed control evidence (old and new values, reason,
-- session_user, database time), written the same whatever the session's
-- IntervalStyle, DateStyle, TimeZone or extra_float_digits. Takes the
-- evidence-order lock (lock_evidence_order), then locks the queue's policy
-- row (and the default's).
CREATE OR REPLACE FUNCTION durable_jobs.set_queue_retention_policy(p_queue_name text, p_payload_retention interval,
    p_record_retention interval, p_change_reason text)
RETURNS void
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET IntervalStyle = 'postgres'
SET DateStyle = 'ISO, MDY'
SET TimeZone = 'UTC'
SET extra_float_digits = '1'
AS $function$
DECLARE
    v_previous jsonb;
    v_payload_retention interval := durable_jobs.absolute_duration(p_payload_retention);
    v_record_retention interval := durable_jobs.absolute_duration(p_record_retention);
BEGIN
    IF p_queue_name IS DISTINCT FROM '*' THEN
        PERFORM durable_jobs.require_well_formed('queue_name', p_queue_name, 'LF002');
    END IF;
    IF v_payload_retention IS NULL OR v_record_retention IS NULL
       OR v_payload_retention < interval '1 hour' OR v_record_retention < v_payload_retention
       OR v_record_retention > interval '3650 days' THEN
        RAISE EXCEPTION 'invalid retention policy' USING
            ERRCODE = 'LF002',
            DETAIL = 'Need plain durations (no month or year part, day and time parts of one sign) with '
                  || '1 hour <= payload_retention <= record_retention <= 3650 days.';
    END IF;
    PERFORM durable_jobs.require_valid_change_reason(p_change_reason, 'LF002');
    -- Takes the evidence-order lock first and checks the record against the
    -- change control in force once it holds it.
    PERFORM durable_jobs.require_structured_change(p_change_reason, NULL, NULL);

    SELECT pg_catalog.jsonb_build_object('policy_queue_name', p.queue_name,
               'payload_retention', p.payload_retention, 'record_retention', p.record_retention)
    INTO v_previous
    FROM durable_jobs.queue_retention_policy p
    WHERE p.queue_name IN (p_queue_name, '*')
    ORDER BY p.queue_name = '*'
    LIMIT 1
    FOR UPDATE;

    INSERT INTO durable_jobs.queue_retention_policy AS p
        (queue_name, payload_retention, record_retention, changed_at, changed_by_role)
    VALUES (p_queue_name, v_payload_retention, v_record_retention, pg_catalog.clock_timestamp(), SESSION_USER)
    ON CONFLICT (queue_name) DO UPDATE
    SET payload_retention = EXCLUDED.payload_retention, record_retention = EXCLUDED.record_retention,
        changed_at = EXCLUDED.changed_at, changed_by_role = EXCLUDED.changed_by_role;

    INSERT INTO durable_jobs.control_evidence_record (evidence_kind, queue_name, previous_values, new_values, change_reason)
    VALUES ('retention_policy_changed', p_queue_name, v_previous,
            pg_catalog.jsonb_build_object('policy_queue_name', p_queue_name,
                'payload_retention', v_payload_retention, 'record_retention', v_record_retention),
            p_change_reason);
END;
$function$;

ALTER FUNCTION durable_jobs.set_queue_retention_policy(text, interval, interval, text) OWNER TO durable_job_retention_owner;
REVOKE ALL ON FUNCTION durable_jobs.set_queue_retention_policy(text, interval, interval, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.set_queue_retention_policy(text, interval, interval, text) TO durable_job_operator;

-- queue_retention_policies: every queue's retention policy, the default '*'
-- included, ordered by queue name. Takes no lock.
CREATE OR REPLACE FUNCTION durable_jobs.queue_retention_policies()
RETURNS TABLE (queue_name text, payload_retention interval, record_retention interval,
               changed_at timestamptz, changed_by_role text)
LANGUAGE sql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
BEGIN ATOMIC
    SELECT p.queue_name, p.payload_retention, p.record_retention, p.changed_at, p.changed_by_role
    FROM durable_jobs.queue_retention_policy p
    ORDER BY p.queue_name;
END;

ALTER FUNCTION durable_jobs.queue_retention_policies() OWNER TO durable_job_retention_owner;
REVOKE ALL ON FUNCTION durable_jobs.queue_retention_policies() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.queue_retention_policies() TO durable_job_operator;

-- purge_expired_job_data: applies the retention policies to at most
-- p_batch_size finished jobs (1 to 10,000, else LF003) and returns what it
-- removed, one row per queue and kind:
--   job_record  jobs past their record retention: the row is deleted with
--               its payload and outcome ledger (in the same statement; no
--               foreign key cascades since migration 019);
--   payload     jobs past their payload retention that still had a payload:
--               the payload is deleted and every result document of the job
--               in the outcome ledger is set to NULL; the row stays.
-- Only SUCCEEDED, FAILED and CANCELLED rows are ever touched, each locked
-- FOR UPDATE SKIP LOCKED and re-checked when locked (a concurrent replay
-- wins and the job is left alone), so it never waits on or changes a live
-- claim and may run from several places at once. Call it until it returns
-- no row. When it removed anything, it appends one job_data_purged control
-- evidence record with the counts per queue and kind (never a job id),
-- under the evidence-order lock. Control evidence itself is never purged.
-- A job is never removed less than 1 hour after it finished, whatever a
-- policy row holds (since migration 024: a row written before it could
-- hold an interval whose parts cancel out, such as '-1 year 361 days',
-- which made the cutoff lie in the future).
CREATE OR REPLACE FUNCTION durable_jobs.purge_expired_job_data(p_batch_size integer)
RETURNS TABLE (queue_name text, purge_kind text, purged_count bigint)
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $function$
DECLARE
    v_now timestamptz := pg_catalog.clock_timestamp();
    v_counts jsonb;
    v_left integer;
    v_rows jsonb := '[]'::jsonb;
BEGIN
    IF p_batch_size IS NULL OR p_batch_size NOT BETWEEN 1 AND 10000 THEN
        RAISE EXCEPTION 'batch size must be 1 to 10000' USING ERRCODE = 'LF003';
    END IF;

    WITH doomed AS (
        SELECT j.job_record_id
        FROM durable_jobs.job_record j
        LEFT JOIN durable_jobs.queue_retention_policy q ON q.queue_name = j.queue_name
        LEFT JOIN durable_jobs.queue_retention_policy d ON d.queue_name = '*'
        WHERE j.job_status IN ('SUCCEEDED', 'FAILED', 'CANCELLED')
          AND j.status_changed_at < LEAST(v_now - COALESCE(q.record_retention, d.record_retention),
                                          v_now - interval '1 hour')
        ORDER BY j.status_changed_at
        LIMIT p_batch_size
        FOR UPDATE OF j SKIP LOCKED
    ), gone AS (
        DELETE FROM durable_jobs.job_record j
        USING doomed
        WHERE j.job_record_id = doomed.job_record_id
        RETURNING j.queue_name
    ), gone_payloads AS (
        -- Since migration 019 no foreign key deletes these with the job:
        -- its payload and outcome ledger rows go in the same statement.
        DELETE FROM durable_jobs.job_payload_record pr
        USING doomed
        WHERE pr.job_record_id = doomed.job_record_id
    ), gone_outcomes AS (
        DELETE FROM durable_jobs.job_outcome_ledger l
        USING doomed
        WHERE l.job_record_id = doomed.job_record_id
    )
    SELECT COALESCE(pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object('queue_name', c.queue_name,
               'purge_kind', 'job_record', 'purged_count', c.n) ORDER BY c.queue_name), '[]')
    INTO v_counts
    FROM (SELECT gone.queue_name, pg_catalog.count(*) AS n FROM gone GROUP BY gone.queue_name) c;
    v_rows := v_rows || v_counts;
    v_left := p_batch_size - (SELECT COALESCE(pg_catalog.sum((e ->> 'purged_count')::bigint), 0)
                              FROM pg_catalog.jsonb_array_elements(v_counts) e)::integer;

    IF v_left > 0 THEN
        WITH doomed AS (
            SELECT j.job_record_id, j.queue_name
            FROM durable_jobs.job_record j
            LEFT JOIN durable_jobs.queue_retention_policy q ON q.queue_name = j.queue_name
            LEFT JOIN durable_jobs.queue_retention_policy d ON d.queue_name = '*'
            WHERE j.job_status IN ('SUCCEEDED', 'FAILED', 'CANCELLED')
              AND j.status_changed_at < LEAST(v_now - COALESCE(q.payload_retention, d.payload_retention),
                                              v_now - interval '1 hour')
              AND EXISTS (SELECT 1 FROM durable_jobs.job_payload_record pr WHERE pr.job_record_id = j.job_record_id)
            ORDER BY j.status_changed_at
            LIMIT v_left
            FOR UPDATE OF j SKIP LOCKED
        ), gone_payload AS (
            DELETE FROM durable_jobs.job_payload_record pr
            USING doomed
            WHERE pr.job_record_id = doomed.job_record_id
            RETURNING pr.job_record_id
        ), cleared AS (
            UPDATE durable_jobs.job_outcome_ledger l
            SET result_document = NULL
            FROM doomed
            WHERE l.job_record_id = doomed.job_record_id
            RETURNING l.job_record_id
        )
        SELECT COALESCE(pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object('queue_name', c.queue_name,
                   'purge_kind', 'payload', 'purged_count', c.n) ORDER BY c.queue_name), '[]')
        INTO v_counts
        FROM (SELECT doomed.queue_name, pg_catalog.count(*) AS n
              FROM doomed JOIN gone_payload ON gone_payload.job_record_id = doomed.job_record_id
              GROUP BY doomed.queue_name) c;
        v_rows := v_rows || v_counts;
    END IF;

    IF pg_catalog.jsonb_array_length(v_rows) > 0 THEN
        PERFORM durable_jobs.lock_evidence_order();
        INSERT INTO durable_jobs.control_evidence_record (evidence_kind, queue_name, previous_values, new_values, change_reason)
        VALUES ('job_data_purged', NULL, NULL,
                pg_catalog.jsonb_build_object('batch_size', p_batch_size, 'purged', v_rows),
                'retention policy applied by purge_expired_job_data');
    END IF;

    RETURN QUERY
    SELECT e ->> 'queue_name', e ->> 'purge_kind', (e ->> 'purged_count')::bigint
    FROM pg_catalog.jsonb_array_elements(v_rows) e;
END;
$function$;

ALTER FUNCTION durable_jobs.purge_expired_job_data(integer) OWNER TO durable_job_retention_owner;
REVOKE ALL ON FUNCTION durable_jobs.purge_expired_job_data(integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.purge_expired_job_data(integer) TO durable_job_operator;

-- erase_job_payload: erases one finished job's payload and every result
-- document of it in the outcome ledger, for a data-subject request, and
-- keeps its lifecycle row (status, attempts, failure reason code). true when
-- a payload was erased; false for an unknown job or one already erased
-- (its result documents are cleared again either way). Refuses a job that
-- is QUEUED, RUNNING or RETRY_SCHEDULED with LF003: cancel it first. An
-- erasure appends job_payload_erased control evidence with the queue, the
-- job's status, the reason, session_user and database time; never the job
-- id (auditors read evidence, and auditor output carries no job ids) or
-- anything of the payload. Locks the job row (waits for a terminal write
-- or cancel in progress). Raises LF003 for a NULL id or an invalid reason
-- (blank, over 500 characters, a control character), and LF002
-- (require_structured_change) for a reason that looks like personal data
-- or a secret or holds a bidirectional-control character: nothing is
-- erased then.
CREATE OR REPLACE FUNCTION durable_jobs.erase_job_payload(p_job_record_id bigint, p_change_reason text)
RETURNS boolean
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $function$
DECLARE
    v_status durable_jobs.job_status_kind;
    v_queue text;
BEGIN
    IF p_job_record_id IS NULL THEN
        RAISE EXCEPTION 'job id is required' USING ERRCODE = 'LF003';
    END IF;
    PERFORM durable_jobs.require_valid_change_reason(p_change_reason, 'LF003');

    SELECT j.job_status, j.queue_name INTO v_status, v_queue
    FROM durable_jobs.job_record j
    WHERE j.job_record_id = p_job_record_id
    FOR UPDATE;
    -- Then the evidence-order lock (taken by require_structured_change), so
    -- the record is checked against the change control in force once no
    -- other change can commit first; the job row is locked before it, as
    -- before migration 024, so an erasure that waits for a worker's
    -- terminal write holds no evidence writer up meanwhile.
    PERFORM durable_jobs.require_structured_change(p_change_reason, NULL, NULL);
    IF v_status IS NULL THEN
        RETURN false;
    END IF;
    IF v_status NOT IN ('SUCCEEDED', 'FAILED', 'CANCELLED') THEN
        RAISE EXCEPTION 'job is not finished: its payload cannot be erased' USING
            ERRCODE = 'LF003',
            DETAIL = pg_catalog.format('The job is %s.', v_status),
            HINT = 'Cancel it first (cancel_job), then erase it.';
    END IF;

    UPDATE durable_jobs.job_outcome_ledger l SET result_document = NULL
    WHERE l.job_record_id = p_job_record_id;
    DELETE FROM durable_jobs.job_payload_record pr WHERE pr.job_record_id = p_job_record_id;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    INSERT INTO durable_jobs.control_evidence_record (evidence_kind, queue_name, previous_values, new_values, change_reason)
    VALUES ('job_payload_erased', v_queue, NULL,
            pg_catalog.jsonb_build_object('job_status', v_status::text, 'payload_erased', true,
                                          'result_documents_cleared', true),
            p_change_reason);
    RETURN true;
END;
$function$;

ALTER FUNCTION durable_jobs.erase_job_payload(bigint, text) OWNER TO durable_job_retention_owner;
REVOKE ALL ON FUNCTION durable_jobs.erase_job_payload(bigint, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.erase_job_payload(bigint, text) TO durable_job_operator;

-- Operator job views: list and inspect jobs without their payloads.
--
-- The current definition of each function of this family, edited in place.
-- A change reaches databases through a new migration that includes this
-- file; released migrations hold their own frozen copy (see sql/doc.go).
--
-- Below, the notes written with the versions the current definitions come
-- from, newest first. They name the files as they were then; each
-- migration's frozen SQL under sql/migrations holds the whole text.

-- Notes of migration 007 (job_admin.sql in its frozen SQL):
--
-- Operator job views: payload-blind reads of individual jobs for the
-- operator (leasectl jobs list / show). They return lifecycle columns only:
-- never the payload, the claim token, its digest, the owner id, the login
-- role that claimed it or the idempotency key. Owned by the audit owner,
-- which cannot read the payload table, the claim digest, the owner id or
-- the idempotency key digest at all. They take no locks. Cancel and replay are the producer family's cancel_job and
-- replay_job, which operators already hold.

-- operator_list_jobs: up to p_max_jobs jobs, newest first (job_record_id
-- descending), of one queue and one status when given (NULL: any), with
-- ids below p_after_job_record_id when given (keyset pagination: pass the
-- last id of the previous page). Raises LF003 for a malformed queue name,
-- a status that is not a job_status_kind, or p_max_jobs NULL or outside 1
-- to 1000.
CREATE OR REPLACE FUNCTION durable_jobs.operator_list_jobs(
    p_queue_name text DEFAULT NULL, p_job_status text DEFAULT NULL,
    p_after_job_record_id bigint DEFAULT NULL, p_max_jobs integer DEFAULT 50)
RETURNS TABLE (job_record_id bigint, queue_name text, job_status text, attempt_number integer,
               max_attempts integer, lease_fencing_generation bigint, lease_expires_at timestamptz,
               lease_renewal_count bigint, failure_reason_code text, run_after timestamptz,
               created_at timestamptz, status_changed_at timestamptz)
LANGUAGE plpgsql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $function$
BEGIN
    IF p_queue_name IS NOT NULL THEN
        PERFORM durable_jobs.require_well_formed('queue_name', p_queue_name);
    END IF;
    IF p_job_status IS NOT NULL
       AND p_job_status <> ALL (pg_catalog.enum_range(NULL::durable_jobs.job_status_kind)::text[]) THEN
        RAISE EXCEPTION 'unknown job status' USING ERRCODE = 'LF003',
            HINT = 'job status must be one of QUEUED, RUNNING, RETRY_SCHEDULED, SUCCEEDED, FAILED, CANCELLED';
    END IF;
    IF p_max_jobs IS NULL OR p_max_jobs NOT BETWEEN 1 AND 1000 THEN
        RAISE EXCEPTION 'max jobs must be 1 to 1000' USING ERRCODE = 'LF003';
    END IF;
    RETURN QUERY
    SELECT j.job_record_id, j.queue_name, j.job_status::text, j.attempt_number, j.max_attempts,
           j.lease_fencing_generation, j.lease_expires_at, j.lease_renewal_count, j.failure_reason_code,
           j.run_after, j.created_at, j.status_changed_at
    FROM durable_jobs.job_record j
    WHERE (p_queue_name IS NULL OR j.queue_name = p_queue_name)
      AND (p_job_status IS NULL OR j.job_status::text = p_job_status)
      AND (p_after_job_record_id IS NULL OR j.job_record_id < p_after_job_record_id)
    ORDER BY j.job_record_id DESC
    LIMIT p_max_jobs;
END;
$function$;

ALTER FUNCTION durable_jobs.operator_list_jobs(text, text, bigint, integer) OWNER TO durable_job_audit_owner;
REVOKE ALL ON FUNCTION durable_jobs.operator_list_jobs(text, text, bigint, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.operator_list_jobs(text, text, bigint, integer) TO durable_job_operator;

-- operator_job_detail: the same columns for one job. Zero rows for an
-- unknown id. Raises LF003 for a NULL id.
CREATE OR REPLACE FUNCTION durable_jobs.operator_job_detail(p_job_record_id bigint)
RETURNS TABLE (job_record_id bigint, queue_name text, job_status text, attempt_number integer,
               max_attempts integer, lease_fencing_generation bigint, lease_expires_at timestamptz,
               lease_renewal_count bigint, failure_reason_code text, run_after timestamptz,
               created_at timestamptz, status_changed_at timestamptz)
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
    SELECT j.job_record_id, j.queue_name, j.job_status::text, j.attempt_number, j.max_attempts,
           j.lease_fencing_generation, j.lease_expires_at, j.lease_renewal_count, j.failure_reason_code,
           j.run_after, j.created_at, j.status_changed_at
    FROM durable_jobs.job_record j
    WHERE j.job_record_id = p_job_record_id;
END;
$function$;

ALTER FUNCTION durable_jobs.operator_job_detail(bigint) OWNER TO durable_job_audit_owner;
REVOKE ALL ON FUNCTION durable_jobs.operator_job_detail(bigint) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.operator_job_detail(bigint) TO durable_job_operator;

-- Producers: enqueue (one job or many), cancel, replay and read a job's state.
--
-- The current definition of each function of this family, edited in place.
-- A change reaches databases through a new migration that includes this
-- file; released migrations hold their own frozen copy (see sql/doc.go).
--
-- Below, the notes written with the versions the current definitions come
-- from, newest first. They name the files as they were then; each
-- migration's frozen SQL under sql/migrations holds the whole text.

-- Notes of migration 016 (producer_v3.sql in its frozen SQL):
--
-- producer v3 (migration 016; 004 installs producer_v2.sql): only
-- replay_job changes, so only it is here. Version 2 found the job's row with
-- `job_status IN ('FAILED', 'CANCELLED')` beside its primary key, which
-- implies the predicate of job_record_finished_by_age: with statistics taken
-- before the jobs finished that index looks empty and a replay read every
-- finished job through it (TestCallsOnOneJobUseThePrimaryKeyUnderStaleStatistics).
-- Owner and grants stay as version 2 set them.

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

ALTER FUNCTION durable_jobs.enqueue_job(text, jsonb, text, timestamp with time zone, integer) OWNER TO durable_job_producer_owner;
REVOKE ALL ON FUNCTION durable_jobs.enqueue_job(text, jsonb, text, timestamp with time zone, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.enqueue_job(text, jsonb, text, timestamp with time zone, integer) TO durable_job_producer;

-- enqueue_jobs (version 3, set-based): enqueue_job for many jobs of one
-- queue in one call. Element i of each array describes job i; the result
-- holds one id per job, in input order. p_idempotency_keys, p_run_afters and
-- p_max_attempts are each NULL (no key, now, 5 attempts for every job) or
-- have exactly one element per payload; a NULL key or run-after element means
-- no key or now for that job. Every element gets enqueue_job's checks and
-- its idempotency: a key already on the queue, or repeated within the batch,
-- returns the first job's id and creates nothing. All or nothing: a bad
-- element raises LF003 naming its position (never its content) and no job of
-- the batch is written.
-- Writes what calling enqueue_job per element in input order writes, in a
-- few statements instead of one call per element: one pass checks every
-- element and reports the first bad one with enqueue_job's message; one
-- INSERT ... SELECT of the job rows reads the elements sorted by position
-- (so ids are drawn in input order, one per element as enqueue_job draws
-- one per call, a repeated key included): a batch without keys by a plain
-- INSERT, since nothing in it can conflict, a batch with keys skipping a key
-- already taken, on the queue or by an earlier element, with ON CONFLICT DO
-- NOTHING. Only when that left an element without a new job does a query
-- give every keyed element the id its key now holds (so it sees a
-- concurrent insert of the key that committed while this one waited, as
-- enqueue_job does), raising P0002 as enqueue_job's STRICT lookup would if
-- that job has meanwhile been deleted; otherwise each key holds its
-- element's new job already. One last INSERT writes the new jobs' payloads.
-- The job and lookup statements are planned for each call's arrays
-- (plan_cache_mode force_custom_plan): from the sixth call of a session
-- PL/pgSQL would otherwise use a generic plan, which guesses 100 elements
-- per array and joins 10,000 of them by nested loops (seconds instead of
-- milliseconds). The payload INSERT joins nothing and runs with
-- plan_cache_mode auto, because its foreign key checks each row with a
-- cached plan that force_custom_plan would plan again for every row.
-- Version 2 (migration 010) wrote the payloads in the job statement, under
-- force_custom_plan, made every row a speculative insertion (ON CONFLICT)
-- even without keys, and always ran the lookup, which PostgreSQL
-- JIT-compiled on every call: together about half its time for 10,000 jobs
-- (bench/notes.md).
-- Locks: the new rows; a concurrent insert of the same key is waited for, so
-- two concurrent batches that share keys in different orders can deadlock
-- (40P01, nothing written by the one refused); sort keys to avoid it.
-- Raises LF003 for a NULL queue or payload array, an array that is not
-- one-dimensional, fewer than 1 or more than 10,000 payloads, an optional
-- array whose length differs from the payloads', and any element enqueue_job
-- refuses.
CREATE OR REPLACE FUNCTION durable_jobs.enqueue_jobs(
    p_queue_name text, p_job_payloads jsonb[], p_idempotency_keys text[] DEFAULT NULL,
    p_run_afters timestamptz[] DEFAULT NULL, p_max_attempts integer[] DEFAULT NULL)
RETURNS bigint[]
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET plan_cache_mode = force_custom_plan
AS $function$
DECLARE
    v_job_count integer := pg_catalog.cardinality(p_job_payloads);
    v_position bigint;
    v_message text;
    v_new_job_record_ids bigint[];
    v_job_record_ids bigint[];
BEGIN
    PERFORM durable_jobs.require_well_formed('queue_name', p_queue_name);
    IF p_job_payloads IS NULL OR pg_catalog.array_ndims(p_job_payloads) IS DISTINCT FROM 1
            OR v_job_count > 10000 THEN
        RAISE EXCEPTION 'job payloads must be a one-dimensional array of 1 to 10000 payloads' USING ERRCODE = 'LF003';
    END IF;
    IF (p_idempotency_keys IS NOT NULL AND (pg_catalog.array_ndims(p_idempotency_keys) IS DISTINCT FROM 1
                                            OR pg_catalog.cardinality(p_idempotency_keys) <> v_job_count))
            OR (p_run_afters IS NOT NULL AND (pg_catalog.array_ndims(p_run_afters) IS DISTINCT FROM 1
                                              OR pg_catalog.cardinality(p_run_afters) <> v_job_count))
            OR (p_max_attempts IS NOT NULL AND (pg_catalog.array_ndims(p_max_attempts) IS DISTINCT FROM 1
                                                OR pg_catalog.cardinality(p_max_attempts) <> v_job_count)) THEN
        RAISE EXCEPTION 'idempotency keys, run-afters and max attempts must each be NULL or hold one element per payload'
            USING ERRCODE = 'LF003';
    END IF;

    -- enqueue_job's checks, in its order, on every element; its messages
    -- name the rule, never the value.
    SELECT u.job_position, u.refusal INTO v_position, v_message
    FROM (SELECT e.job_position,
                 CASE
                     WHEN e.job_payload IS NULL THEN 'job payload is required'
                     WHEN pg_catalog.pg_column_size(e.job_payload) > 1048576 THEN 'job payload must be at most 1 MiB'
                     WHEN e.run_after IS NOT NULL AND (NOT pg_catalog.isfinite(e.run_after)
                             OR e.run_after < timestamptz '2000-01-01 00:00:00+00'
                             OR e.run_after >= timestamptz '2100-01-01 00:00:00+00')
                         THEN 'run-after must be a finite time from 2000-01-01 to before 2100-01-01 UTC'
                     WHEN e.idempotency_key IS NOT NULL AND pg_catalog.length(e.idempotency_key) NOT BETWEEN 1 AND 200
                         THEN 'idempotency key must be 1 to 200 characters'
                     WHEN p_max_attempts IS NOT NULL AND (e.max_attempts IS NULL OR e.max_attempts NOT BETWEEN 1 AND 1000)
                         THEN 'max attempts must be 1 to 1000'
                 END AS refusal
          FROM ROWS FROM (pg_catalog.unnest(p_job_payloads), pg_catalog.unnest(p_idempotency_keys),
                          pg_catalog.unnest(p_run_afters), pg_catalog.unnest(p_max_attempts))
               WITH ORDINALITY AS e(job_payload, idempotency_key, run_after, max_attempts, job_position)) u
    WHERE u.refusal IS NOT NULL
    ORDER BY u.job_position
    LIMIT 1;
    IF v_message IS NOT NULL THEN
        RAISE EXCEPTION 'job % of the batch: %', v_position, v_message USING ERRCODE = 'LF003';
    END IF;

    -- No keys: the new jobs, the k-th by id order element k's, as ids are
    -- drawn in the order the sorted rows are inserted.
    IF p_idempotency_keys IS NULL OR pg_catalog.cardinality(pg_catalog.array_remove(p_idempotency_keys, NULL)) = 0 THEN
        WITH new_job AS (
            INSERT INTO durable_jobs.job_record AS j (queue_name, run_after, max_attempts)
            SELECT p_queue_name, COALESCE(e.run_after, pg_catalog.clock_timestamp()),
                   CASE WHEN p_max_attempts IS NULL THEN 5 ELSE e.max_attempts END
            FROM ROWS FROM (pg_catalog.unnest(p_job_payloads), pg_catalog.unnest(p_run_afters),
                            pg_catalog.unnest(p_max_attempts))
                 WITH ORDINALITY AS e(job_payload, run_after, max_attempts, job_position)
            ORDER BY e.job_position
            RETURNING j.job_record_id
        )
        SELECT pg_catalog.array_agg(n.job_record_id ORDER BY n.job_record_id) INTO v_new_job_record_ids FROM new_job n;
    ELSE
        -- Keys: the new jobs, NULL for an element whose key is already taken.
        -- A keyed job is matched to its element by the key's digest (unique
        -- among the new jobs); the k-th new keyless job by id order is the k-th
        -- keyless element, as ids are drawn in the order the sorted rows are
        -- inserted.
        WITH element AS (
            SELECT e.job_position,
                   pg_catalog.sha256(pg_catalog.convert_to(e.idempotency_key, 'UTF8')) AS key_digest,
                   e.run_after, CASE WHEN p_max_attempts IS NULL THEN 5 ELSE e.max_attempts END AS max_attempts
            FROM ROWS FROM (pg_catalog.unnest(p_job_payloads), pg_catalog.unnest(p_idempotency_keys),
                            pg_catalog.unnest(p_run_afters), pg_catalog.unnest(p_max_attempts))
                 WITH ORDINALITY AS e(job_payload, idempotency_key, run_after, max_attempts, job_position)
        ), new_job AS (
            INSERT INTO durable_jobs.job_record AS j (queue_name, idempotency_key_digest, run_after, max_attempts)
            SELECT p_queue_name, s.key_digest, COALESCE(s.run_after, pg_catalog.clock_timestamp()), s.max_attempts
            FROM (SELECT e.job_position, e.key_digest, e.run_after, e.max_attempts FROM element e
                  ORDER BY e.job_position) s
            ON CONFLICT (queue_name, idempotency_key_digest) WHERE idempotency_key_digest IS NOT NULL DO NOTHING
            RETURNING j.job_record_id, j.idempotency_key_digest
        ), placed AS (
            SELECT k.job_position, n.job_record_id
            FROM (SELECT DISTINCT ON (e.key_digest) e.key_digest, e.job_position
                  FROM element e WHERE e.key_digest IS NOT NULL
                  ORDER BY e.key_digest, e.job_position) k
            JOIN new_job n ON n.idempotency_key_digest = k.key_digest
            UNION ALL
            SELECT k.job_position, n.job_record_id
            FROM (SELECT e.job_position, pg_catalog.row_number() OVER (ORDER BY e.job_position) AS keyless_rank
                  FROM element e WHERE e.key_digest IS NULL) k
            JOIN (SELECT n.job_record_id, pg_catalog.row_number() OVER (ORDER BY n.job_record_id) AS keyless_rank
                  FROM new_job n WHERE n.idempotency_key_digest IS NULL) n ON n.keyless_rank = k.keyless_rank
        )
        SELECT pg_catalog.array_agg(p.job_record_id ORDER BY e.job_position) INTO v_new_job_record_ids
        FROM element e LEFT JOIN placed p ON p.job_position = e.job_position;
    END IF;

    IF pg_catalog.array_position(v_new_job_record_ids, NULL) IS NULL THEN
        -- Every element has a new job, and its key, if any, holds it.
        v_job_record_ids := v_new_job_record_ids;
    ELSE
        -- One id per element: its new job's, or (a key already taken) the id
        -- its key holds, looked up in a snapshot taken after the insert, so it
        -- also sees a concurrent insert of the key that this one waited for.
        SELECT pg_catalog.array_agg(r.job_record_id ORDER BY r.job_position) INTO STRICT v_job_record_ids
        FROM (SELECT u.job_position,
                     COALESCE(u.job_record_id,
                              (SELECT j.job_record_id FROM durable_jobs.job_record j
                               WHERE j.queue_name = p_queue_name
                                 AND j.idempotency_key_digest
                                     = pg_catalog.sha256(pg_catalog.convert_to(u.idempotency_key, 'UTF8')))) AS job_record_id
              FROM ROWS FROM (pg_catalog.unnest(v_new_job_record_ids), pg_catalog.unnest(p_idempotency_keys))
                   WITH ORDINALITY AS u(job_record_id, idempotency_key, job_position)) r
        HAVING pg_catalog.count(*) = pg_catalog.count(r.job_record_id); -- else P0002, as enqueue_job's STRICT lookup
    END IF;

    -- The new jobs' payloads, each element's with its new job, planned and
    -- run with plan_cache_mode auto (see above; the function's SET clause
    -- puts the caller's own value back when it returns).
    PERFORM pg_catalog.set_config('plan_cache_mode', 'auto', true);
    INSERT INTO durable_jobs.job_payload_record (job_record_id, job_payload)
    SELECT u.job_record_id, u.job_payload
    FROM ROWS FROM (pg_catalog.unnest(v_new_job_record_ids), pg_catalog.unnest(p_job_payloads))
         AS u(job_record_id, job_payload)
    WHERE u.job_record_id IS NOT NULL;
    RETURN v_job_record_ids;
END;
$function$;

ALTER FUNCTION durable_jobs.enqueue_jobs(text, jsonb[], text[], timestamp with time zone[], integer[]) OWNER TO durable_job_producer_owner;
REVOKE ALL ON FUNCTION durable_jobs.enqueue_jobs(text, jsonb[], text[], timestamp with time zone[], integer[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.enqueue_jobs(text, jsonb[], text[], timestamp with time zone[], integer[]) TO durable_job_producer;

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

ALTER FUNCTION durable_jobs.cancel_job(bigint) OWNER TO durable_job_producer_owner;
REVOKE ALL ON FUNCTION durable_jobs.cancel_job(bigint) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.cancel_job(bigint) TO durable_job_producer;

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

ALTER FUNCTION durable_jobs.replay_job(bigint) OWNER TO durable_job_producer_owner;
REVOKE ALL ON FUNCTION durable_jobs.replay_job(bigint) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.replay_job(bigint) TO durable_job_operator;

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

ALTER FUNCTION durable_jobs.job_lifecycle_state(bigint) OWNER TO durable_job_producer_owner;
REVOKE ALL ON FUNCTION durable_jobs.job_lifecycle_state(bigint) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.job_lifecycle_state(bigint) TO durable_job_producer;

-- Auditor functions: read-only views of policy, health, outcomes and evidence.
--
-- The current definition of each function of this family, edited in place.
-- A change reaches databases through a new migration that includes this
-- file; released migrations hold their own frozen copy (see sql/doc.go).
--
-- Below, the notes written with the versions the current definitions come
-- from, newest first. They name the files as they were then; each
-- migration's frozen SQL under sql/migrations holds the whole text.

-- Notes of migration 016 (audit_v5.sql in its frozen SQL):
--
-- audit v5 (migration 016; 012 installs audit_v4.sql): only
-- lease_health_by_queue changes, and only in where the queue's policy (its
-- own, else '*') comes from: the rule function effective_lease_policy_queue
-- (rules.sql) instead of a lookup of its own. Same result, no locks.

-- Notes of migration 012 (audit_v4.sql in its frozen SQL):
--
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

-- Notes of migration 006 (audit_v3.sql in its frozen SQL):
--
-- Auditor functions, version 3 (the evidence-chain migration, *_evidence_chain.sql): what the auditor needs to
-- rely on the evidence. The functions of audit_v2.sql are unchanged and
-- stay in force. Payload-blind like them: no payload, token, digest of a
-- token, owner id or job id is returned. They take no locks.

-- Notes of migration 004 (audit_v2.sql in its frozen SQL):
--
-- Auditor functions: payload-blind, finite-cardinality reads for health and
-- evidence. None returns a payload, token, digest, owner id, idempotency key
-- or job id list. They take no locks and raise nothing of their own.

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

ALTER FUNCTION durable_jobs.bundle_migration_version() OWNER TO durable_job_audit_owner;
REVOKE ALL ON FUNCTION durable_jobs.bundle_migration_version() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.bundle_migration_version() TO durable_job_auditor;

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

ALTER FUNCTION durable_jobs.queue_lease_policies() OWNER TO durable_job_audit_owner;
REVOKE ALL ON FUNCTION durable_jobs.queue_lease_policies() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.queue_lease_policies() TO durable_job_auditor;

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

ALTER FUNCTION durable_jobs.job_status_totals() OWNER TO durable_job_audit_owner;
REVOKE ALL ON FUNCTION durable_jobs.job_status_totals() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.job_status_totals() TO durable_job_auditor;

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

ALTER FUNCTION durable_jobs.lease_outcome_totals(timestamp with time zone) OWNER TO durable_job_audit_owner;
REVOKE ALL ON FUNCTION durable_jobs.lease_outcome_totals(timestamp with time zone) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.lease_outcome_totals(timestamp with time zone) TO durable_job_auditor;

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

ALTER FUNCTION durable_jobs.control_evidence_history(timestamp with time zone) OWNER TO durable_job_audit_owner;
REVOKE ALL ON FUNCTION durable_jobs.control_evidence_history(timestamp with time zone) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.control_evidence_history(timestamp with time zone) TO durable_job_auditor;

-- control_evidence_records: the control evidence recorded in [p_since,
-- p_until) (either bound NULL for open), oldest first, with the structured
-- fields (ticket, approver) and each record's chain hash.
CREATE OR REPLACE FUNCTION durable_jobs.control_evidence_records(p_since timestamptz, p_until timestamptz)
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

ALTER FUNCTION durable_jobs.control_evidence_records(timestamp with time zone, timestamp with time zone) OWNER TO durable_job_audit_owner;
REVOKE ALL ON FUNCTION durable_jobs.control_evidence_records(timestamp with time zone, timestamp with time zone) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.control_evidence_records(timestamp with time zone, timestamp with time zone) TO durable_job_auditor;

-- control_evidence_chain: the hash chain of the control evidence, oldest
-- first: each record's id, kind and time, the digest of its content as
-- stored now (evidence_content_digest), and the previous_record_hash and
-- record_hash it was written with. A record is intact when record_hash =
-- sha256(previous_record_hash || content_digest) and previous_record_hash is
-- the record_hash of the record before it (32 zero bytes for the first):
-- `leasectl audit` (AUDIT-EVIDENCE-CHAIN) checks both. No reason or value
-- is returned.
CREATE OR REPLACE FUNCTION durable_jobs.control_evidence_chain()
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

ALTER FUNCTION durable_jobs.control_evidence_chain() OWNER TO durable_job_audit_owner;
REVOKE ALL ON FUNCTION durable_jobs.control_evidence_chain() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.control_evidence_chain() TO durable_job_auditor;

-- policy_evidence_mismatches: one row per queue whose live policy row is not
-- what its last lease_policy_changed record says it became (values compared
-- as durations, so '1 day' equals '24:00:00'), and per queue whose last
-- record says it has a row of its own that is now missing (or the reverse).
-- Empty when the policy table and the evidence agree.
CREATE OR REPLACE FUNCTION durable_jobs.policy_evidence_mismatches()
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

ALTER FUNCTION durable_jobs.policy_evidence_mismatches() OWNER TO durable_job_audit_owner;
REVOKE ALL ON FUNCTION durable_jobs.policy_evidence_mismatches() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.policy_evidence_mismatches() TO durable_job_auditor;

DO $kinds$
BEGIN
    ALTER TABLE durable_jobs.control_evidence_record DROP CONSTRAINT control_evidence_record_kind;
    EXECUTE 'ALTER TABLE durable_jobs.control_evidence_record ADD CONSTRAINT control_evidence_record_kind CHECK (evidence_kind IN ('
        || '''migration_applied'', ''migration_reverted'', ''lease_policy_changed'', ''renewal_enablement_changed'', '
        || '''deployment_recorded'', ''retention_policy_changed'', ''job_data_purged'', ''job_payload_erased'', '
        || '''change_control_changed''))'
        || CASE WHEN EXISTS (SELECT 1 FROM durable_jobs.control_evidence_record e
                             WHERE e.evidence_kind IN ('evidence_chain_continued', 'job_cancelled', 'job_replayed',
                                                       'change_proposed', 'change_approved', 'change_rejected'))
                THEN ' NOT VALID' ELSE '' END;
END
$kinds$;

SELECT durable_jobs.lock_evidence_order();
INSERT INTO durable_jobs.control_evidence_record (evidence_kind, queue_name, previous_values, new_values, change_reason)
VALUES ('migration_reverted', NULL, NULL, '{"migration_version": 26, "migration_name": "026_evidence_an_auditor_accepts"}',
        COALESCE(NULLIF(pg_catalog.current_setting('leasefence.migration_reason', true), ''),
                 'leasefence bundle migration rolled back'));
