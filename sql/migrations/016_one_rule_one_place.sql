-- leasefence 016: one rule, one place (issue 18, items 4 and 7).
--
-- * durable_jobs.update_queue_lease_policy(...) (policy_v4.sql) changes only
--   the lease-policy settings given and keeps the others from the queue's
--   effective policy, read inside the function after the evidence-order
--   lock: a partial change (leasectl policy set) can no longer overwrite a
--   change committed between reading the policy and writing it. Granted to
--   durable_job_operator like set_queue_lease_policy.
-- * Rule functions (rules.sql), each rule written once: queue_name_pattern,
--   queue_name_is_well_formed, worker_owner_id_pattern,
--   worker_owner_id_is_well_formed and effective_lease_policy_queue (which
--   policy row applies: the queue's own, else '*'). SQL functions without
--   SECURITY DEFINER or SET, so PostgreSQL inlines them: the claim and
--   renewal paths make no call. EXECUTE only to the definer roles that use
--   them. The table CHECKs keep their literal queue pattern (rules.sql says
--   why; 25_rules.sql checks it is queue_name_pattern()).
-- * The functions that wrote a rule themselves now use the rule function:
--   require_well_formed (input_checks_v3.sql), claim_next_jobs
--   (claim_v4.sql), renew_job_lease and renew_job_leases (renewal_v5.sql),
--   complete_jobs (terminal_batch_v2.sql), lease_health_by_queue
--   (audit_v5.sql) and update_queue_lease_policy.
-- * Every fenced lookup of one claim's row (renewal_v5.sql, the locking
--   probe of terminal_batch_v2.sql, lock_fenced_claim of terminal_v4.sql
--   behind complete_job, retry_job, fail_job and release_job_claim, and
--   replay_job of producer_v3.sql) checks the status as text beside the
--   primary key, so statistics gathered
--   before a burst of claims (the partial indexes of RUNNING rows then look
--   empty) can no longer make each call read every live lease of the
--   queue through job_record_running_by_queue: found by the heartbeat at
--   100,000 leases, where renew_job_leases of 1,000 claims took about 9 s.
-- The down part puts every previous version back (claim_v3.sql,
-- renewal_v4.sql, terminal_batch.sql, terminal_v2.sql and terminal_v3.sql
-- (lock_fenced_claim v2, release_job_claim v3), producer_v2.sql, audit_v4.sql, require_well_formed of
-- input_checks_v2.sql inline) and drops the new functions.

{{ template "functions/rules.sql" . }}
{{ template "functions/input_checks_v3.sql" . }}
{{ template "functions/policy_v4.sql" . }}
{{ template "functions/claim_v4.sql" . }}
{{ template "functions/renewal_v5.sql" . }}
{{ template "functions/terminal_batch_v2.sql" . }}
{{ template "functions/terminal_v4.sql" . }}
{{ template "functions/producer_v3.sql" . }}
{{ template "functions/audit_v5.sql" . }}

SELECT pg_catalog.pg_advisory_xact_lock(1279655936, 1);
INSERT INTO durable_jobs.control_evidence_record (evidence_kind, queue_name, previous_values, new_values, change_reason)
VALUES ('migration_applied', NULL, NULL, '{"migration_version": 16, "migration_name": "016_one_rule_one_place"}',
        COALESCE(NULLIF(pg_catalog.current_setting('leasefence.migration_reason', true), ''), 'leasefence bundle migration'));

---- create above / drop below ----

DROP FUNCTION durable_jobs.update_queue_lease_policy(text, interval, interval, interval, boolean, text, text, text);
{{ template "functions/claim_v3.sql" . }}
{{ template "functions/renewal_v4.sql" . }}
DROP FUNCTION durable_jobs.complete_jobs(text, bigint[], uuid[], jsonb[]);
{{ template "functions/terminal_batch.sql" . }}
{{ template "functions/terminal_v2.sql" . }}
{{ template "functions/terminal_v3.sql" . }}
{{ template "functions/producer_v2.sql" . }}
DROP FUNCTION durable_jobs.lease_health_by_queue();
{{ template "functions/audit_v4.sql" . }}
-- require_well_formed version 2, exactly as input_checks_v2.sql defines it.
CREATE OR REPLACE FUNCTION durable_jobs.require_well_formed(p_value_kind text, p_value text, p_sqlstate text DEFAULT 'LF003')
RETURNS void
LANGUAGE plpgsql
IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $function$
DECLARE
    v_pattern text;
BEGIN
    v_pattern := CASE p_value_kind
        WHEN 'queue_name' THEN '^[a-z][a-z0-9_.:-]{0,62}$'
        WHEN 'worker_owner_id' THEN '^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$'
        WHEN 'failure_reason_code' THEN '^[a-z][a-z0-9_]{0,62}$'
    END;
    IF v_pattern IS NULL THEN
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
    IF p_value IS NULL OR p_value COLLATE "C" !~ v_pattern THEN
        RAISE EXCEPTION USING
            ERRCODE = p_sqlstate,
            MESSAGE = pg_catalog.format('malformed %s', p_value_kind),
            HINT = pg_catalog.format('%s must match %s', p_value_kind, v_pattern);
    END IF;
END;
$function$;
DROP FUNCTION durable_jobs.effective_lease_policy_queue(text);
DROP FUNCTION durable_jobs.worker_owner_id_is_well_formed(text);
DROP FUNCTION durable_jobs.worker_owner_id_pattern();
DROP FUNCTION durable_jobs.queue_name_is_well_formed(text);
DROP FUNCTION durable_jobs.queue_name_pattern();

SELECT pg_catalog.pg_advisory_xact_lock(1279655936, 1);
INSERT INTO durable_jobs.control_evidence_record (evidence_kind, queue_name, previous_values, new_values, change_reason)
VALUES ('migration_reverted', NULL, NULL, '{"migration_version": 16, "migration_name": "016_one_rule_one_place"}',
        COALESCE(NULLIF(pg_catalog.current_setting('leasefence.migration_reason', true), ''),
                 'leasefence bundle migration rolled back'));
