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
