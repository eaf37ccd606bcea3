-- leasefence 024: evidence writers no login can hold up, retention that
-- cannot cancel out, personal data in its other forms (issue 34).
--
-- * The evidence-order lock is the row of a private table,
--   durable_jobs.evidence_order_lock, locked FOR UPDATE by
--   lock_evidence_order (SECURITY DEFINER, owned by
--   durable_job_policy_owner, the one role granted the row), no longer the advisory key (1279655936, 1)
--   that any login could take and keep, stalling every evidence writer.
--   Every writer now waits for it at most 10 s and may then stay idle for
--   at most 60 s (both set by lock_evidence_order, as only lease-policy
--   changes had them before); retention, erasure and purge take it through
--   lock_evidence_order instead of the advisory key.
-- * require_structured_change takes that lock before it reads the change
--   control, so every writer is checked against the rules in force once no
--   other change can commit before it (a loosening that waited for a
--   tightening was checked against the old rules).
-- * Retention durations go through absolute_duration, as lease durations
--   do (no month or year part, day and time parts of one sign: '-1 year 361
--   days' passed the 1-hour minimum and made the purge's cutoff lie in the
--   future), are stored as it gives them, and the purge never removes a job
--   less than an hour after it finished, whatever a row written before
--   holds.
-- * Change reasons and tickets are screened in their screening_form (NFKC,
--   other scripts' digits, every dash, the ideographic full stop, invisible
--   characters removed), with wider separators, so each rule catches the
--   other forms of the same data; invisible characters are refused like
--   control characters.
-- * Change control may limit every reason to a pattern
--   (set_change_reason_pattern; change_control() shows it), so a strict
--   organization can forbid free text in evidence altogether.
-- * The lease-policy trigger and set_queue_retention_policy write their
--   durations the same whatever the session's IntervalStyle, DateStyle,
--   TimeZone or extra_float_digits.
-- The down part puts the four families back as migration 023 left them.

CREATE TABLE durable_jobs.evidence_order_lock (
    lock_slot smallint CONSTRAINT evidence_order_lock_pkey PRIMARY KEY
        CONSTRAINT evidence_order_lock_single CHECK (lock_slot = 1)
);
COMMENT ON TABLE durable_jobs.evidence_order_lock IS
    'leasefence: the evidence-order lock, one row locked FOR UPDATE by lock_evidence_order; private to its owner.';
INSERT INTO durable_jobs.evidence_order_lock (lock_slot) VALUES (1);
REVOKE ALL ON durable_jobs.evidence_order_lock FROM PUBLIC;
-- Locking the row FOR UPDATE needs SELECT and UPDATE on a column of it.
GRANT SELECT (lock_slot), UPDATE (lock_slot) ON durable_jobs.evidence_order_lock TO durable_job_policy_owner;

-- Change control may limit reasons to a pattern (NULL: free text).
ALTER TABLE durable_jobs.change_control_setting ADD COLUMN reason_pattern text
    CONSTRAINT change_control_setting_reason_pattern CHECK (reason_pattern IS NULL OR pg_catalog.length(reason_pattern) BETWEEN 1 AND 200);
GRANT SELECT (reason_pattern), UPDATE (reason_pattern) ON durable_jobs.change_control_setting TO durable_job_policy_owner;
GRANT SELECT (reason_pattern) ON durable_jobs.change_control_setting TO durable_job_retention_owner;
-- change_control() gains the column in its result.
DROP FUNCTION durable_jobs.change_control();

-- Input checks shared by the definer functions: names, claim tokens, durations.
--
-- The current definition of each function of this family, edited in place.
-- A change reaches databases through a new migration that includes this
-- file; released migrations hold their own frozen copy (see sql/doc.go).
--
-- Below, the notes written with the versions the current definitions come
-- from, newest first. They name the files as they were then; each
-- migration's frozen SQL under sql/migrations holds the whole text.

-- Notes of migration 021 (input_checks_v5.sql in its frozen SQL):
--
-- Input checks, version 5 (migration 021): exactly version 4, except that
-- a failure reason code is tested and named by its rule functions
-- (rules_v3.sql) as the queue name and owner id are, not by a test and a
-- pattern written here. Every other function of the family stays as
-- input_checks_v2.sql installs it.

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
    v_well_formed boolean;
BEGIN
    IF p_value_kind IS NULL OR p_value_kind NOT IN ('queue_name', 'worker_owner_id', 'failure_reason_code') THEN
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
    v_well_formed := CASE p_value_kind
        WHEN 'queue_name' THEN durable_jobs.queue_name_is_well_formed(p_value)
        WHEN 'worker_owner_id' THEN durable_jobs.worker_owner_id_is_well_formed(p_value)
        ELSE durable_jobs.failure_reason_code_is_well_formed(p_value)
    END;
    IF v_well_formed IS NOT TRUE THEN
        RAISE EXCEPTION USING
            ERRCODE = p_sqlstate,
            MESSAGE = pg_catalog.format('malformed %s', p_value_kind),
            HINT = pg_catalog.format('%s must match %s', p_value_kind, CASE p_value_kind
                WHEN 'queue_name' THEN durable_jobs.queue_name_pattern()
                WHEN 'worker_owner_id' THEN durable_jobs.worker_owner_id_pattern()
                ELSE durable_jobs.failure_reason_code_pattern() END);
    END IF;
END;
$function$;

REVOKE ALL ON FUNCTION durable_jobs.require_well_formed(text, text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.require_well_formed(text, text, text) TO durable_job_producer_owner, durable_job_claim_owner, durable_job_renewal_owner, durable_job_terminal_owner, durable_job_policy_owner, durable_job_retention_owner, durable_job_audit_owner;

-- claim_token_digest: the stored form of a claim token, sha256 of its 16
-- bytes (uuid_send). The token itself is never stored. NULL in, NULL out.
CREATE OR REPLACE FUNCTION durable_jobs.claim_token_digest(p_lease_claim_token uuid)
RETURNS bytea
LANGUAGE sql
IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
RETURN pg_catalog.sha256(pg_catalog.uuid_send(p_lease_claim_token));

REVOKE ALL ON FUNCTION durable_jobs.claim_token_digest(uuid) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.claim_token_digest(uuid) TO durable_job_claim_owner, durable_job_renewal_owner, durable_job_terminal_owner;

-- absolute_duration, version 2 (migration 009): the body of migration 004's
-- version with every operator written OPERATOR(pg_catalog.x). The body is
-- an SQL-standard RETURN expression, parsed when the function is created:
-- its operators on numeric and integer have no exact match in pg_catalog,
-- so a database installed without the migrator's pinned search_path (plain
-- tern, see sql/doc.go) could have bound them to operators planted in
-- public. Qualified, they bind to pg_catalog under any search_path.
-- OPERATOR(...) has one precedence for every operator, so every operand
-- is parenthesised: the expression tree is exactly version 1's.
--
-- absolute_duration: an interval as a plain duration in seconds, without a
-- month or day part ('1 day' -> '24:00:00'), so that adding it to a
-- timestamptz gives the same instant under every TimeZone. NULL (refused by
-- the callers) when the interval has a month or year part (a month has no
-- fixed length) or day and time parts of opposite signs ('1 day -1 second').
-- NULL in, NULL out. Takes no lock.
CREATE OR REPLACE FUNCTION durable_jobs.absolute_duration(p_value interval)
RETURNS interval
LANGUAGE sql
IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
RETURN CASE
    WHEN (EXTRACT(year FROM p_value) OPERATOR(pg_catalog.<>) 0)
        OR (EXTRACT(month FROM p_value) OPERATOR(pg_catalog.<>) 0) THEN NULL
    WHEN (EXTRACT(day FROM p_value) OPERATOR(pg_catalog.*)
          (EXTRACT(epoch FROM p_value) OPERATOR(pg_catalog.-) (EXTRACT(day FROM p_value) OPERATOR(pg_catalog.*) 86400)))
        OPERATOR(pg_catalog.<) 0 THEN NULL
    ELSE pg_catalog.make_interval(secs => EXTRACT(epoch FROM p_value)::double precision)
END;

REVOKE ALL ON FUNCTION durable_jobs.absolute_duration(interval) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.absolute_duration(interval) TO durable_job_terminal_owner, durable_job_policy_owner, durable_job_retention_owner;


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


SELECT durable_jobs.lock_evidence_order();
INSERT INTO durable_jobs.control_evidence_record (evidence_kind, queue_name, previous_values, new_values, change_reason)
VALUES ('migration_applied', NULL, NULL, '{"migration_version": 24, "migration_name": "024_evidence_writers_nobody_can_stall"}',
        COALESCE(NULLIF(pg_catalog.current_setting('leasefence.migration_reason', true), ''), 'leasefence bundle migration'));

---- create above / drop below ----

-- lock_evidence_order back to the installer first, so that the grants below
-- name its grantees as version 23 has them.
DO $owner$
BEGIN
    EXECUTE pg_catalog.format('ALTER FUNCTION durable_jobs.lock_evidence_order() OWNER TO %I',
        (SELECT n.nspowner::regrole::text FROM pg_catalog.pg_namespace n WHERE n.nspname = 'durable_jobs'));
END
$owner$;
DROP FUNCTION durable_jobs.set_change_reason_pattern(text, text, text, text);
DROP FUNCTION durable_jobs.change_control();
-- The five families as migration 023 left them.
-- Input checks shared by the definer functions: names, claim tokens, durations.
--
-- The current definition of each function of this family, edited in place.
-- A change reaches databases through a new migration that includes this
-- file; released migrations hold their own frozen copy (see sql/doc.go).
--
-- Below, the notes written with the versions the current definitions come
-- from, newest first. They name the files as they were then; each
-- migration's frozen SQL under sql/migrations holds the whole text.

-- Notes of migration 021 (input_checks_v5.sql in its frozen SQL):
--
-- Input checks, version 5 (migration 021): exactly version 4, except that
-- a failure reason code is tested and named by its rule functions
-- (rules_v3.sql) as the queue name and owner id are, not by a test and a
-- pattern written here. Every other function of the family stays as
-- input_checks_v2.sql installs it.

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
    v_well_formed boolean;
BEGIN
    IF p_value_kind IS NULL OR p_value_kind NOT IN ('queue_name', 'worker_owner_id', 'failure_reason_code') THEN
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
    v_well_formed := CASE p_value_kind
        WHEN 'queue_name' THEN durable_jobs.queue_name_is_well_formed(p_value)
        WHEN 'worker_owner_id' THEN durable_jobs.worker_owner_id_is_well_formed(p_value)
        ELSE durable_jobs.failure_reason_code_is_well_formed(p_value)
    END;
    IF v_well_formed IS NOT TRUE THEN
        RAISE EXCEPTION USING
            ERRCODE = p_sqlstate,
            MESSAGE = pg_catalog.format('malformed %s', p_value_kind),
            HINT = pg_catalog.format('%s must match %s', p_value_kind, CASE p_value_kind
                WHEN 'queue_name' THEN durable_jobs.queue_name_pattern()
                WHEN 'worker_owner_id' THEN durable_jobs.worker_owner_id_pattern()
                ELSE durable_jobs.failure_reason_code_pattern() END);
    END IF;
END;
$function$;

REVOKE ALL ON FUNCTION durable_jobs.require_well_formed(text, text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.require_well_formed(text, text, text) TO durable_job_producer_owner, durable_job_claim_owner, durable_job_renewal_owner, durable_job_terminal_owner, durable_job_policy_owner, durable_job_retention_owner, durable_job_audit_owner;

-- claim_token_digest: the stored form of a claim token, sha256 of its 16
-- bytes (uuid_send). The token itself is never stored. NULL in, NULL out.
CREATE OR REPLACE FUNCTION durable_jobs.claim_token_digest(p_lease_claim_token uuid)
RETURNS bytea
LANGUAGE sql
IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
RETURN pg_catalog.sha256(pg_catalog.uuid_send(p_lease_claim_token));

REVOKE ALL ON FUNCTION durable_jobs.claim_token_digest(uuid) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.claim_token_digest(uuid) TO durable_job_claim_owner, durable_job_renewal_owner, durable_job_terminal_owner;

-- absolute_duration, version 2 (migration 009): the body of migration 004's
-- version with every operator written OPERATOR(pg_catalog.x). The body is
-- an SQL-standard RETURN expression, parsed when the function is created:
-- its operators on numeric and integer have no exact match in pg_catalog,
-- so a database installed without the migrator's pinned search_path (plain
-- tern, see sql/doc.go) could have bound them to operators planted in
-- public. Qualified, they bind to pg_catalog under any search_path.
-- OPERATOR(...) has one precedence for every operator, so every operand
-- is parenthesised: the expression tree is exactly version 1's.
--
-- absolute_duration: an interval as a plain duration in seconds, without a
-- month or day part ('1 day' -> '24:00:00'), so that adding it to a
-- timestamptz gives the same instant under every TimeZone. NULL (refused by
-- the callers) when the interval has a month or year part (a month has no
-- fixed length) or day and time parts of opposite signs ('1 day -1 second').
-- NULL in, NULL out. Takes no lock.
CREATE OR REPLACE FUNCTION durable_jobs.absolute_duration(p_value interval)
RETURNS interval
LANGUAGE sql
IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
RETURN CASE
    WHEN (EXTRACT(year FROM p_value) OPERATOR(pg_catalog.<>) 0)
        OR (EXTRACT(month FROM p_value) OPERATOR(pg_catalog.<>) 0) THEN NULL
    WHEN (EXTRACT(day FROM p_value) OPERATOR(pg_catalog.*)
          (EXTRACT(epoch FROM p_value) OPERATOR(pg_catalog.-) (EXTRACT(day FROM p_value) OPERATOR(pg_catalog.*) 86400)))
        OPERATOR(pg_catalog.<) 0 THEN NULL
    ELSE pg_catalog.make_interval(secs => EXTRACT(epoch FROM p_value)::double precision)
END;

REVOKE ALL ON FUNCTION durable_jobs.absolute_duration(interval) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.absolute_duration(interval) TO durable_job_terminal_owner, durable_job_policy_owner;

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
-- that commits later. A transaction-level advisory lock on the bundle's key
-- (1279655936 = 'LF' << 16, 1); released at commit or rollback. Waits for
-- another evidence writer's open transaction.
CREATE OR REPLACE FUNCTION durable_jobs.lock_evidence_order()
RETURNS void
LANGUAGE sql
VOLATILE
SET search_path = pg_catalog, pg_temp
RETURN pg_catalog.pg_advisory_xact_lock(1279655936, 1);

REVOKE ALL ON FUNCTION durable_jobs.lock_evidence_order() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.lock_evidence_order() TO durable_job_policy_owner, durable_job_retention_owner;

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

-- looks_personal_or_secret: true when free text given for append-only
-- evidence looks like personal data or a secret: a Korean resident
-- registration number (\d{6}-?[1-4]\d{6}), a run of 13 to 19 digits (spaces
-- or hyphens between them allowed) that passes the Luhn check, an e-mail
-- address, a phone number (0 followed by 9 to 10 more digits in the usual
-- groups, or + and 8 or more digits), or a credential assignment
-- (password=, passwd=, pwd=, pw=, secret=, token=, api_key=, also with ':').
-- NULL in, NULL out. A heuristic: it refuses what looks like such data and
-- cannot prove its absence. Takes no lock.
CREATE OR REPLACE FUNCTION durable_jobs.looks_personal_or_secret(p_text text)
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
-- U+2069) that could make evidence read differently from what it holds.
-- NULL in, NULL out. Takes no lock.
CREATE OR REPLACE FUNCTION durable_jobs.is_plain_change_reason(p_change_reason text)
RETURNS boolean
LANGUAGE sql
IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
RETURN p_change_reason ~ '[^[:space:]]'
   AND pg_catalog.length(p_change_reason) <= 500
   AND p_change_reason !~ '[\x01-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]';

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
CREATE OR REPLACE FUNCTION durable_jobs.record_policy_change()
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

-- change_control: the one row of durable_jobs.change_control_setting.
-- Takes no lock.
CREATE OR REPLACE FUNCTION durable_jobs.change_control()
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

ALTER FUNCTION durable_jobs.change_control() OWNER TO durable_job_policy_owner;
REVOKE ALL ON FUNCTION durable_jobs.change_control() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.change_control() TO durable_job_auditor, durable_job_operator;

-- set_change_control: sets the change-control setting. Raises LF003 and
-- changes nothing when a value is NULL or the ticket pattern is not 1 to 200
-- characters or not a valid regular expression; LF002
-- (require_structured_change, checked against the setting in force before
-- this change) when the change record is not structured. Appends a
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

ALTER FUNCTION durable_jobs.set_change_control(text, boolean, boolean, text, text, text) OWNER TO durable_job_policy_owner;
REVOKE ALL ON FUNCTION durable_jobs.set_change_control(text, boolean, boolean, text, text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.set_change_control(text, boolean, boolean, text, text, text) TO durable_job_operator;

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

REVOKE ALL ON FUNCTION durable_jobs.require_structured_change(text, text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.require_structured_change(text, text, text) TO durable_job_policy_owner, durable_job_retention_owner;

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
-- when every value is non-NULL, 1 hour <= payload_retention <=
-- record_retention <= 3650 days, the reason is valid (see
-- require_valid_change_reason), does not look like personal data or a
-- secret (require_structured_change) and the queue name is '*' or
-- well-formed. Otherwise LF002 and nothing changes. Appends retention_policy_changed
-- control evidence (old and new values, reason, session_user, database
-- time). Locks the queue's policy row (and the default's) and takes the
-- evidence-order advisory lock.
CREATE OR REPLACE FUNCTION durable_jobs.set_queue_retention_policy(p_queue_name text, p_payload_retention interval,
    p_record_retention interval, p_change_reason text)
RETURNS void
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $function$
DECLARE
    v_previous jsonb;
BEGIN
    IF p_queue_name IS DISTINCT FROM '*' THEN
        PERFORM durable_jobs.require_well_formed('queue_name', p_queue_name, 'LF002');
    END IF;
    IF p_payload_retention IS NULL OR p_record_retention IS NULL
       OR p_payload_retention < interval '1 hour' OR p_record_retention < p_payload_retention
       OR p_record_retention > interval '3650 days' THEN
        RAISE EXCEPTION 'invalid retention policy' USING
            ERRCODE = 'LF002',
            DETAIL = 'Need 1 hour <= payload_retention <= record_retention <= 3650 days.';
    END IF;
    PERFORM durable_jobs.require_valid_change_reason(p_change_reason, 'LF002');
    PERFORM durable_jobs.require_structured_change(p_change_reason, NULL, NULL);
    -- Evidence writers run one at a time, in commit order (the bundle's
    -- evidence-order advisory key, taken inline so this family needs no
    -- other migration's helper).
    PERFORM pg_catalog.pg_advisory_xact_lock(1279655936, 1);

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
    VALUES (p_queue_name, p_payload_retention, p_record_retention, pg_catalog.clock_timestamp(), SESSION_USER)
    ON CONFLICT (queue_name) DO UPDATE
    SET payload_retention = EXCLUDED.payload_retention, record_retention = EXCLUDED.record_retention,
        changed_at = EXCLUDED.changed_at, changed_by_role = EXCLUDED.changed_by_role;

    INSERT INTO durable_jobs.control_evidence_record (evidence_kind, queue_name, previous_values, new_values, change_reason)
    VALUES ('retention_policy_changed', p_queue_name, v_previous,
            pg_catalog.jsonb_build_object('policy_queue_name', p_queue_name,
                'payload_retention', p_payload_retention, 'record_retention', p_record_retention),
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
-- evidence record with the counts per queue and kind (never a job id).
-- Control evidence itself is never purged.
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
          AND j.status_changed_at < v_now - COALESCE(q.record_retention, d.record_retention)
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
              AND j.status_changed_at < v_now - COALESCE(q.payload_retention, d.payload_retention)
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
        PERFORM pg_catalog.pg_advisory_xact_lock(1279655936, 1);
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
    PERFORM durable_jobs.require_structured_change(p_change_reason, NULL, NULL);

    SELECT j.job_status, j.queue_name INTO v_status, v_queue
    FROM durable_jobs.job_record j
    WHERE j.job_record_id = p_job_record_id
    FOR UPDATE;
    IF NOT FOUND THEN
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
    PERFORM pg_catalog.pg_advisory_xact_lock(1279655936, 1);
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

DROP FUNCTION durable_jobs.screening_form(text);
ALTER TABLE durable_jobs.change_control_setting DROP COLUMN reason_pattern;
REVOKE EXECUTE ON FUNCTION durable_jobs.absolute_duration(interval) FROM durable_job_retention_owner;
DROP TABLE durable_jobs.evidence_order_lock;

SELECT durable_jobs.lock_evidence_order();
INSERT INTO durable_jobs.control_evidence_record (evidence_kind, queue_name, previous_values, new_values, change_reason)
VALUES ('migration_reverted', NULL, NULL, '{"migration_version": 24, "migration_name": "024_evidence_writers_nobody_can_stall"}',
        COALESCE(NULLIF(pg_catalog.current_setting('leasefence.migration_reason', true), ''),
                 'leasefence bundle migration rolled back'));
