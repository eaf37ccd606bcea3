-- 02_privileges: each runtime role executes exactly the functions listed
-- with it in docs/sql-api.md (Roles) and touches no table, sequence or column; PUBLIC
-- executes nothing; the definer owners hold column privileges only, the
-- renewal owner none on payloads; no bundle role can log in or escalate.
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
SELECT plan(719);

-- Which runtime role may execute which function. record_deployment_version
-- is not a runtime function: only the role that applied the bundle runs it.
CREATE TEMP TABLE expected_execute (
    function_name   name NOT NULL,
    argument_types  name[] NOT NULL,
    runtime_roles   name[] NOT NULL
) ON COMMIT DROP;
INSERT INTO expected_execute VALUES
 ('enqueue_job', '{text,jsonb,text,timestamptz,integer}', '{durable_job_producer,durable_job_operator}'),
 ('enqueue_jobs', '{text,jsonb[],text[],timestamptz[],integer[]}', '{durable_job_producer,durable_job_operator}'),
 ('cancel_job', '{bigint}', '{durable_job_producer,durable_job_operator}'),
 ('job_lifecycle_state', '{bigint}', '{durable_job_producer,durable_job_operator}'),
 ('replay_job', '{bigint}', '{durable_job_operator}'),
 ('claim_next_job', '{text,text}', '{durable_job_worker}'),
 ('claim_next_jobs', '{text,text,integer}', '{durable_job_worker}'),
 ('renew_job_lease', '{bigint,uuid,text}', '{durable_job_worker}'),
 ('renew_job_leases', '{text,bigint[],uuid[]}', '{durable_job_worker}'),
 ('complete_job', '{bigint,uuid,text,jsonb}', '{durable_job_worker}'),
 ('complete_jobs', '{text,bigint[],uuid[],jsonb[]}', '{durable_job_worker}'),
 ('release_job_claims', '{text,bigint[],uuid[]}', '{durable_job_worker}'),
 ('queue_next_due_in', '{text}', '{durable_job_worker}'),
 ('retry_job', '{bigint,uuid,text,interval,text}', '{durable_job_worker}'),
 ('fail_job', '{bigint,uuid,text,text}', '{durable_job_worker}'),
 ('release_job_claim', '{bigint,uuid,text}', '{durable_job_worker}'),
 ('set_queue_lease_policy', '{text,interval,interval,interval,boolean,text}', '{durable_job_operator}'),
 ('record_deployment_version', '{text,text}', '{}'),
 ('lease_health_by_queue', '{}', '{durable_job_auditor,durable_job_operator}'),
 ('queue_backlog', '{}', '{durable_job_auditor,durable_job_operator}'),
 ('server_availability', '{}', '{durable_job_auditor,durable_job_operator}'),
 ('queue_lease_policies', '{}', '{durable_job_auditor,durable_job_operator}'),
 ('control_evidence_history', '{timestamptz}', '{durable_job_auditor,durable_job_operator}'),
 ('lease_outcome_totals', '{timestamptz}', '{durable_job_auditor,durable_job_operator}'),
 ('job_status_totals', '{}', '{durable_job_auditor,durable_job_operator}'),
 ('bundle_migration_version', '{}', '{durable_job_auditor,durable_job_operator}'),
 ('operator_list_jobs', '{text,text,bigint,integer}', '{durable_job_operator}'),
 ('operator_job_detail', '{bigint}', '{durable_job_operator}'),
 ('require_well_formed', '{text,text,text}', '{}'),
 ('claim_token_digest', '{uuid}', '{}'),
 ('record_lease_outcome', '{text,text,bigint}', '{}'),
 ('lock_fenced_claim', '{bigint,uuid,text}', '{}'),
 ('raise_stale_claim', '{}', '{}'),
 ('refuse_evidence_change', '{}', '{}'),
 ('absolute_duration', '{interval}', '{}'),
 ('is_plain_change_reason', '{text}', '{}'),
 ('lock_evidence_order', '{}', '{}'),
 ('record_stale_call', '{bigint,text}', '{}'),
 ('record_stale_calls', '{bigint[],text}', '{}'),
 -- retention and erasure (sql/functions/retention.sql)
 ('set_queue_retention_policy', '{text,interval,interval,text}', '{durable_job_operator}'),
 ('queue_retention_policies', '{}', '{durable_job_operator}'),
 ('purge_expired_job_data', '{integer}', '{durable_job_operator}'),
 ('erase_job_payload', '{bigint,text}', '{durable_job_operator}'),
 ('require_valid_change_reason', '{text,text}', '{}'),
 -- the evidence-chain migration
 ('set_queue_lease_policy', '{text,interval,interval,interval,boolean,text,text,text}', '{durable_job_operator}'),
 ('record_deployment', '{text,text,text,text,text}', '{}'),
 ('control_evidence_chain', '{}', '{durable_job_auditor,durable_job_operator}'),
 ('control_evidence_records', '{timestamptz,timestamptz}', '{durable_job_auditor,durable_job_operator}'),
 ('policy_evidence_mismatches', '{}', '{durable_job_auditor,durable_job_operator}'),
 ('change_queue_lease_policy', '{text,interval,interval,interval,boolean,text,text,text}', '{}'),
 ('passes_luhn', '{text}', '{}'),
 ('looks_personal_or_secret', '{text}', '{}'),
 ('require_structured_change', '{text,text,text}', '{}'),
 ('evidence_content_digest', '{bigint,text,text,jsonb,jsonb,text,text,timestamptz,text,text}', '{}'),
 ('chain_evidence_record', '{}', '{}'),
 ('stamp_policy_change', '{}', '{}'),
 ('record_policy_change', '{}', '{}'),
 ('refuse_policy_truncate', '{}', '{}'),
 -- migration 015: change control
 ('change_control', '{}', '{durable_job_auditor,durable_job_operator}'),
 ('set_change_control', '{text,boolean,boolean,text,text,text}', '{durable_job_operator}'),
 ('set_change_reason_pattern', '{text,text,text,text}', '{durable_job_operator}'),
 -- migration 016: the partial policy change
 ('update_queue_lease_policy', '{text,interval,interval,interval,boolean,text,text,text}', '{durable_job_operator}'),
 -- migration 016: the rule functions, executed only by the definer roles (03_rules.sql)
 ('queue_name_pattern', '{}', '{}'),
 ('queue_name_is_well_formed', '{text}', '{}'),
 ('worker_owner_id_pattern', '{}', '{}'),
 ('worker_owner_id_is_well_formed', '{text}', '{}'),
 ('effective_lease_policy_queue', '{text}', '{}'),
 -- migration 026: operator actions on record, control tables that record
 -- their own changes, the chain continued across a restart, two audit reads
 ('cancel_job', '{bigint,text,text,text}', '{durable_job_operator}'),
 ('replay_job', '{bigint,text,text,text}', '{durable_job_operator}'),
 ('set_queue_retention_policy', '{text,interval,interval,text,text,text}', '{durable_job_operator}'),
 ('erase_job_payload', '{bigint,text,text,text}', '{durable_job_operator}'),
 ('continue_evidence_chain', '{bigint,bytea,text,text,text}', '{durable_job_operator}'),
 ('operator_job_actions', '{bigint}', '{durable_job_operator}'),
 ('control_evidence_mismatches', '{}', '{durable_job_auditor,durable_job_operator}'),
 ('job_status_mismatches', '{}', '{durable_job_auditor,durable_job_operator}'),
 ('processing_counts', '{"timestamp with time zone","timestamp with time zone"}', '{durable_job_auditor,durable_job_operator}'),
 ('cancel_job_recorded', '{bigint,text,text,text}', '{}'),
 ('replay_job_recorded', '{bigint,text,text,text}', '{}'),
 ('record_job_action', '{bigint,text,text,text,text,text,text,text}', '{}'),
 ('check_change_record', '{durable_jobs.change_control_setting,text,text,text}', '{}'),
 ('set_change_record', '{text,text,text}', '{}'),
 ('stamp_control_change', '{}', '{}'),
 ('refuse_control_removal', '{}', '{}'),
 ('record_retention_policy_change', '{}', '{}'),
 ('record_change_control_change', '{}', '{}'),
 -- migration 026: maker-checker (one operator login proposes, another approves)
 ('set_maker_checker', '{boolean,interval,text,text,text}', '{durable_job_operator}'),
 ('propose_change', '{text,text,jsonb,text,text}', '{durable_job_operator}'),
 ('approve_change', '{bigint}', '{durable_job_operator}'),
 ('reject_change', '{bigint,text}', '{durable_job_operator}'),
 ('pending_changes', '{boolean}', '{durable_job_auditor,durable_job_operator}'),
 ('approved_proposer', '{}', '{}'),
 ('decide_change', '{bigint,text,text}', '{}'),
 ('require_valid_change_control', '{text,boolean,boolean,text,boolean,interval}', '{}');

CREATE TEMP TABLE runtime_role (role_name name PRIMARY KEY) ON COMMIT DROP;
INSERT INTO runtime_role VALUES
 ('durable_job_producer'), ('durable_job_worker'), ('durable_job_operator'), ('durable_job_auditor');
CREATE TEMP TABLE definer_role (role_name name PRIMARY KEY) ON COMMIT DROP;
INSERT INTO definer_role VALUES
 ('durable_job_producer_owner'), ('durable_job_claim_owner'), ('durable_job_renewal_owner'),
 ('durable_job_terminal_owner'), ('durable_job_policy_owner'), ('durable_job_audit_owner');
CREATE TEMP TABLE private_table (table_name name PRIMARY KEY) ON COMMIT DROP;
INSERT INTO private_table VALUES
 ('job_record'), ('job_payload_record'), ('job_outcome_ledger'), ('queue_lease_policy'),
 ('control_evidence_record'), ('lease_outcome_tally'), ('queue_retention_policy'), ('job_action_record'),
 ('pending_change');
GRANT SELECT ON expected_execute, runtime_role, definer_role, private_table TO PUBLIC;

-- EXECUTE, function by function and role by role (one row per function: 4 roles + PUBLIC) ------------

SELECT function_privs_are('durable_jobs', e.function_name, e.argument_types, r.role_name,
    CASE WHEN r.role_name = ANY (e.runtime_roles) THEN ARRAY['EXECUTE'] ELSE ARRAY[]::name[] END,
    r.role_name || CASE WHEN r.role_name = ANY (e.runtime_roles) THEN ' executes ' ELSE ' cannot execute ' END
        || 'durable_jobs.' || e.function_name)
FROM expected_execute e CROSS JOIN runtime_role r
ORDER BY r.role_name, e.function_name;

SELECT function_privs_are('durable_jobs', e.function_name, e.argument_types, 'public', ARRAY[]::name[],
    'PUBLIC cannot execute durable_jobs.' || e.function_name)
FROM expected_execute e ORDER BY e.function_name;

-- Exactness over the whole schema, so a function added later without a row above fails here.
SELECT set_eq(
    format($$SELECT p.proname::text FROM pg_proc p WHERE p.pronamespace = 'durable_jobs'::regnamespace
             AND has_function_privilege(%L, p.oid, 'EXECUTE')$$, r.role_name),
    format($$SELECT e.function_name::text FROM expected_execute e WHERE %L = ANY (e.runtime_roles)$$, r.role_name),
    r.role_name || ' executes exactly the functions docs/sql-api.md lists for it and nothing else in the schema')
FROM runtime_role r ORDER BY r.role_name;
SELECT is_empty(
    $$SELECT p.oid::regprocedure::text FROM pg_proc p
      WHERE p.pronamespace = 'durable_jobs'::regnamespace
        AND (has_function_privilege('public', p.oid, 'EXECUTE')
             OR EXISTS (SELECT 1 FROM aclexplode(COALESCE(p.proacl, acldefault('f', p.proowner))) a
                        WHERE a.grantee = 0))$$,
    'no function in the schema, private helpers included, carries an EXECUTE grant to PUBLIC');
SELECT is_empty(
    $$SELECT p.oid::regprocedure::text FROM pg_proc p
      WHERE p.pronamespace = 'durable_jobs'::regnamespace AND p.prosecdef
        AND NOT EXISTS (SELECT 1 FROM expected_execute e WHERE e.function_name = p.proname)$$,
    'every SECURITY DEFINER function in the schema is in the expected privilege table');

-- EXECUTE refused in practice: 42501 when a role calls another role's function -------

SET LOCAL ROLE durable_job_producer;
SELECT lives_ok($$SELECT durable_jobs.enqueue_job('privilege_check_queue', '{}'::jsonb)$$,
    'a producer can enqueue a job');
SELECT throws_ok($$SELECT * FROM durable_jobs.claim_next_job('privilege_check_queue', 'w1')$$, '42501', NULL,
    'a producer cannot claim a job');
SELECT throws_ok($$SELECT durable_jobs.replay_job(0)$$, '42501', NULL, 'a producer cannot replay a job');
SELECT throws_ok($$SELECT durable_jobs.cancel_job(0, 'CHG-1: a producer''s reason')$$, '42501', NULL,
    'a producer cannot cancel with a reason: the cancel on record is an operator''s (migration 026)');
SELECT throws_ok($$SELECT * FROM durable_jobs.operator_job_actions(0)$$, '42501', NULL,
    'a producer cannot read a job''s action trail');
SELECT throws_ok($$SELECT durable_jobs.set_queue_lease_policy('privilege_check_queue', '10 s', '1 s', '1 h', true, 'r')$$,
    '42501', NULL, 'a producer cannot change a lease policy');
SELECT throws_ok($$SELECT * FROM durable_jobs.lease_health_by_queue()$$, '42501', NULL,
    'a producer cannot read audit functions');
RESET ROLE;

SET LOCAL ROLE durable_job_worker;
SELECT lives_ok($$SELECT * FROM durable_jobs.claim_next_job('privilege_check_empty', 'w1')$$,
    'a worker can call claim_next_job');
SELECT throws_ok($$SELECT durable_jobs.enqueue_job('privilege_check_queue', '{}'::jsonb)$$, '42501', NULL,
    'a worker cannot enqueue a job');
SELECT throws_ok($$SELECT durable_jobs.cancel_job(0)$$, '42501', NULL, 'a worker cannot cancel a job');
SELECT throws_ok($$SELECT * FROM durable_jobs.job_lifecycle_state(0)$$, '42501', NULL,
    'a worker cannot call the producer''s job_lifecycle_state');
SELECT throws_ok($$SELECT * FROM durable_jobs.job_status_totals()$$, '42501', NULL,
    'a worker cannot read audit functions');
SELECT throws_ok($$SELECT durable_jobs.record_lease_outcome('privilege_check_queue', 'reclaim', 1)$$, '42501', NULL,
    'a worker cannot write outcome tallies through the private helper');
SELECT throws_ok($$SELECT durable_jobs.record_stale_call(0, 'stale_renewal')$$, '42501', NULL,
    'a worker cannot count a stale call through the private record_stale_call helper');
SELECT throws_ok($$SELECT durable_jobs.record_stale_calls(ARRAY[0::bigint], 'stale_renewal')$$, '42501', NULL,
    'a worker cannot count stale calls through the private record_stale_calls helper');
SELECT throws_ok($$SELECT durable_jobs.claim_token_digest(gen_random_uuid())$$, '42501', NULL,
    'a worker cannot call the private claim_token_digest helper');
SELECT throws_ok($$SELECT * FROM durable_jobs.lock_fenced_claim(0, gen_random_uuid(), 'w1')$$, '42501', NULL,
    'a worker cannot call the private lock_fenced_claim helper');
SELECT throws_ok($$SELECT durable_jobs.raise_stale_claim()$$, '42501', NULL,
    'a worker cannot call the private raise_stale_claim helper');
RESET ROLE;

SET LOCAL ROLE durable_job_auditor;
SELECT lives_ok($$SELECT * FROM durable_jobs.job_status_totals()$$, 'an auditor can read job_status_totals');
SELECT throws_ok($$SELECT durable_jobs.enqueue_job('privilege_check_queue', '{}'::jsonb)$$, '42501', NULL,
    'an auditor cannot enqueue a job');
SELECT throws_ok($$SELECT * FROM durable_jobs.claim_next_job('privilege_check_queue', 'w1')$$, '42501', NULL,
    'an auditor cannot claim a job');
SELECT throws_ok($$SELECT * FROM durable_jobs.operator_job_actions(0)$$, '42501', NULL,
    'an auditor cannot read a job''s action trail (it names logins and holds job ids)');
SELECT lives_ok($$SELECT * FROM durable_jobs.job_status_mismatches()$$, 'an auditor can read job_status_mismatches');
SELECT throws_ok($$SELECT durable_jobs.set_queue_lease_policy('privilege_check_queue', '10 s', '1 s', '1 h', true, 'r')$$,
    '42501', NULL, 'an auditor cannot change a lease policy');
RESET ROLE;

SET LOCAL ROLE durable_job_operator;
SELECT lives_ok($$SELECT durable_jobs.enqueue_job('privilege_check_queue', '{}'::jsonb)$$,
    'an operator holds the producer functions: it can enqueue');
SELECT lives_ok($$SELECT * FROM durable_jobs.lease_health_by_queue()$$,
    'an operator holds the auditor functions: it can read lease health');
SELECT lives_ok($$SELECT durable_jobs.replay_job(0)$$, 'an operator can call replay_job');
SELECT throws_ok($$SELECT * FROM durable_jobs.claim_next_job('privilege_check_queue', 'w1')$$, '42501', NULL,
    'an operator is not a worker: it cannot claim a job');
SELECT throws_ok($$SELECT * FROM durable_jobs.renew_job_lease(1, gen_random_uuid(), 'w1')$$, '42501', NULL,
    'an operator cannot renew a lease');
SELECT throws_ok($$SELECT durable_jobs.record_deployment_version('1.0.0', 'r')$$, '42501', NULL,
    'an operator cannot write deployment evidence: only the role that applied the bundle can');
SELECT throws_ok($$SELECT durable_jobs.require_well_formed('queue_name', 'q')$$, '42501', NULL,
    'an operator cannot call the private require_well_formed helper');
RESET ROLE;

-- Tables, columns and sequences: runtime roles and PUBLIC hold nothing ---------------

SELECT table_privs_are('durable_jobs', t.table_name, r.role_name, ARRAY[]::name[],
    r.role_name || ' holds no table privilege on durable_jobs.' || t.table_name)
FROM private_table t CROSS JOIN runtime_role r ORDER BY r.role_name, t.table_name;
SELECT any_column_privs_are('durable_jobs', t.table_name, r.role_name, ARRAY[]::name[],
    r.role_name || ' holds no column privilege on durable_jobs.' || t.table_name)
FROM private_table t CROSS JOIN runtime_role r ORDER BY r.role_name, t.table_name;
SELECT sequence_privs_are('durable_jobs', s.sequence_name, r.role_name, ARRAY[]::name[],
    r.role_name || ' holds no privilege on sequence durable_jobs.' || s.sequence_name)
FROM (VALUES ('job_record_job_record_id_seq'::name), ('job_outcome_ledger_job_outcome_record_id_seq'),
             ('control_evidence_record_evidence_record_id_seq')) AS s(sequence_name)
CROSS JOIN runtime_role r ORDER BY r.role_name, s.sequence_name;
SELECT is_empty(
    $$SELECT g.grantee, c.relname, g.privilege
      FROM pg_class c
      CROSS JOIN (SELECT role_name::text AS grantee FROM runtime_role UNION ALL SELECT 'public') AS gr
      CROSS JOIN LATERAL (
          SELECT gr.grantee, p.privilege FROM unnest(CASE WHEN c.relkind = 'S'
                   THEN ARRAY['SELECT', 'UPDATE', 'USAGE']
                   ELSE ARRAY['SELECT', 'INSERT', 'UPDATE', 'DELETE', 'TRUNCATE', 'REFERENCES', 'TRIGGER'] END) AS p(privilege)
          WHERE CASE WHEN c.relkind = 'S' THEN has_sequence_privilege(gr.grantee, c.oid, p.privilege)
                     WHEN p.privilege IN ('SELECT', 'INSERT', 'UPDATE', 'REFERENCES')
                     THEN has_table_privilege(gr.grantee, c.oid, p.privilege)
                          OR has_any_column_privilege(gr.grantee, c.oid, p.privilege)
                     ELSE has_table_privilege(gr.grantee, c.oid, p.privilege) END) AS g
      WHERE c.relnamespace = 'durable_jobs'::regnamespace AND c.relkind IN ('r', 'p', 'v', 'm', 'f', 'S')$$,
    'no runtime role and not PUBLIC holds any privilege on any table, view or sequence of the schema');

SET LOCAL ROLE durable_job_producer;
SELECT throws_ok(format('SELECT 1 FROM durable_jobs.%I LIMIT 1', t.table_name), '42501', NULL,
    'a producer cannot SELECT durable_jobs.' || t.table_name || ' directly')
FROM private_table t ORDER BY t.table_name;
SELECT throws_ok(format('UPDATE durable_jobs.%I SET queue_name = queue_name WHERE false', t.table_name), '42501', NULL,
    'a producer cannot UPDATE durable_jobs.' || t.table_name || ' directly')
FROM private_table t WHERE t.table_name NOT IN ('job_payload_record', 'job_outcome_ledger', 'job_action_record')
ORDER BY t.table_name;
SELECT throws_ok($$UPDATE durable_jobs.job_payload_record SET job_payload = job_payload WHERE false$$, '42501', NULL,
    'a producer cannot UPDATE durable_jobs.job_payload_record directly');
SELECT throws_ok($$UPDATE durable_jobs.job_outcome_ledger SET result_document = result_document WHERE false$$, '42501', NULL,
    'a producer cannot UPDATE durable_jobs.job_outcome_ledger directly');
RESET ROLE;

SET LOCAL ROLE durable_job_worker;
SELECT throws_ok(format('SELECT 1 FROM durable_jobs.%I LIMIT 1', t.table_name), '42501', NULL,
    'a worker cannot SELECT durable_jobs.' || t.table_name || ' directly')
FROM private_table t ORDER BY t.table_name;
SELECT throws_ok(format('UPDATE durable_jobs.%I SET queue_name = queue_name WHERE false', t.table_name), '42501', NULL,
    'a worker cannot UPDATE durable_jobs.' || t.table_name || ' directly')
FROM private_table t WHERE t.table_name NOT IN ('job_payload_record', 'job_outcome_ledger', 'job_action_record')
ORDER BY t.table_name;
SELECT throws_ok($$UPDATE durable_jobs.job_payload_record SET job_payload = job_payload WHERE false$$, '42501', NULL,
    'a worker cannot UPDATE durable_jobs.job_payload_record directly');
SELECT throws_ok($$UPDATE durable_jobs.job_outcome_ledger SET result_document = result_document WHERE false$$, '42501', NULL,
    'a worker cannot UPDATE durable_jobs.job_outcome_ledger directly');
RESET ROLE;

SET LOCAL ROLE durable_job_operator;
SELECT throws_ok(format('SELECT 1 FROM durable_jobs.%I LIMIT 1', t.table_name), '42501', NULL,
    'an operator cannot SELECT durable_jobs.' || t.table_name || ' directly')
FROM private_table t ORDER BY t.table_name;
SELECT throws_ok(format('UPDATE durable_jobs.%I SET queue_name = queue_name WHERE false', t.table_name), '42501', NULL,
    'an operator cannot UPDATE durable_jobs.' || t.table_name || ' directly')
FROM private_table t WHERE t.table_name NOT IN ('job_payload_record', 'job_outcome_ledger', 'job_action_record')
ORDER BY t.table_name;
SELECT throws_ok($$UPDATE durable_jobs.job_payload_record SET job_payload = job_payload WHERE false$$, '42501', NULL,
    'an operator cannot UPDATE durable_jobs.job_payload_record directly');
SELECT throws_ok($$UPDATE durable_jobs.job_outcome_ledger SET result_document = result_document WHERE false$$, '42501', NULL,
    'an operator cannot UPDATE durable_jobs.job_outcome_ledger directly');
RESET ROLE;

SET LOCAL ROLE durable_job_auditor;
SELECT throws_ok(format('SELECT 1 FROM durable_jobs.%I LIMIT 1', t.table_name), '42501', NULL,
    'an auditor cannot SELECT durable_jobs.' || t.table_name || ' directly')
FROM private_table t ORDER BY t.table_name;
SELECT throws_ok(format('UPDATE durable_jobs.%I SET queue_name = queue_name WHERE false', t.table_name), '42501', NULL,
    'an auditor cannot UPDATE durable_jobs.' || t.table_name || ' directly')
FROM private_table t WHERE t.table_name NOT IN ('job_payload_record', 'job_outcome_ledger', 'job_action_record')
ORDER BY t.table_name;
SELECT throws_ok($$UPDATE durable_jobs.job_payload_record SET job_payload = job_payload WHERE false$$, '42501', NULL,
    'an auditor cannot UPDATE durable_jobs.job_payload_record directly');
SELECT throws_ok($$UPDATE durable_jobs.job_outcome_ledger SET result_document = result_document WHERE false$$, '42501', NULL,
    'an auditor cannot UPDATE durable_jobs.job_outcome_ledger directly');
RESET ROLE;

-- The schema: USAGE, never CREATE ---------------------------------------------------

SELECT schema_privs_are('durable_jobs', r.role_name, ARRAY['USAGE'],
    r.role_name || ' holds USAGE but not CREATE on schema durable_jobs')
FROM runtime_role r ORDER BY r.role_name;
SELECT schema_privs_are('durable_jobs', 'public', ARRAY[]::name[], 'PUBLIC holds no privilege on schema durable_jobs');
SET LOCAL ROLE durable_job_operator;
SELECT throws_ok($$CREATE TABLE durable_jobs.privilege_check_intruder (x integer)$$, '42501', NULL,
    'a runtime role cannot create objects in durable_jobs');
RESET ROLE;

-- Definer owners: column privileges only; the renewal owner never sees payloads ------

SELECT table_privs_are('durable_jobs', 'job_payload_record', 'durable_job_renewal_owner', ARRAY[]::name[],
    'the owner of renew_job_lease holds no table privilege on job_payload_record');
SELECT any_column_privs_are('durable_jobs', 'job_payload_record', 'durable_job_renewal_owner', ARRAY[]::name[],
    'the owner of renew_job_lease holds no column privilege on job_payload_record');
SELECT ok(NOT has_column_privilege('durable_job_renewal_owner', 'durable_jobs.job_payload_record', c, p),
          'the renewal owner has no ' || p || ' on job_payload_record.' || c)
FROM unnest(ARRAY['job_record_id', 'job_payload']) AS c CROSS JOIN unnest(ARRAY['SELECT', 'INSERT', 'UPDATE', 'REFERENCES']) AS p;
SELECT any_column_privs_are('durable_jobs', 'job_payload_record', d.role_name, d.privileges,
    d.role_name || CASE WHEN d.privileges = '{}' THEN ' holds no privilege' ELSE ' holds only ' || array_to_string(d.privileges, ', ') END
        || ' on job_payload_record')
FROM (VALUES ('durable_job_producer_owner'::name, ARRAY['INSERT']::name[]), ('durable_job_claim_owner', ARRAY['SELECT']),
             ('durable_job_terminal_owner', ARRAY[]::name[]), ('durable_job_policy_owner', ARRAY[]::name[]),
             ('durable_job_audit_owner', ARRAY[]::name[])) AS d(role_name, privileges);
SELECT is_empty(
    $$SELECT d.role_name, c.relname, p.privilege
      FROM definer_role d
      CROSS JOIN pg_class c
      CROSS JOIN unnest(ARRAY['SELECT', 'INSERT', 'UPDATE', 'DELETE', 'TRUNCATE', 'REFERENCES', 'TRIGGER']) AS p(privilege)
      WHERE c.relnamespace = 'durable_jobs'::regnamespace AND c.relkind = 'r'
        AND has_table_privilege(d.role_name, c.oid, p.privilege)
        AND NOT (c.relname = 'lease_outcome_tally' AND p.privilege = 'DELETE'
                 AND d.role_name IN ('durable_job_claim_owner', 'durable_job_renewal_owner', 'durable_job_terminal_owner'))
        -- Migration 026 grants the policy owner SELECT on pending_change at
        -- table level (it reads every column; a column added later would be
        -- readable too): the one exception, recorded here as it stands.
        AND NOT (c.relname = 'pending_change' AND p.privilege = 'SELECT' AND d.role_name = 'durable_job_policy_owner')$$,
    'no definer owner holds a table-level privilege: each holds only the column privileges its family needs (but DELETE on the tally, below, and since migration 026 the policy owner''s SELECT on pending_change)');
SELECT set_eq(
    $$SELECT d.role_name::text, p.privilege FROM definer_role d
      CROSS JOIN unnest(ARRAY['SELECT', 'INSERT', 'UPDATE', 'REFERENCES']) AS p(privilege)
      WHERE has_any_column_privilege(d.role_name, 'durable_jobs.pending_change', p.privilege)
         OR has_table_privilege(d.role_name, 'durable_jobs.pending_change', p.privilege)$$,
    $$VALUES ('durable_job_policy_owner', 'SELECT'), ('durable_job_policy_owner', 'INSERT'), ('durable_job_policy_owner', 'UPDATE')$$,
    'of the definer owners only the policy owner, whose functions propose and decide changes, touches pending_change (migration 026)');
SELECT ok(has_column_privilege('durable_job_policy_owner', 'durable_jobs.pending_change', c, 'UPDATE')
          = (c IN ('change_decision', 'decided_by_role', 'decided_at', 'decided_in_transaction')),
          'the policy owner ' || CASE WHEN c IN ('change_decision', 'decided_by_role', 'decided_at', 'decided_in_transaction')
              THEN 'may' ELSE 'may not' END || ' UPDATE pending_change.' || c || ' (a proposal is decided, never rewritten)')
FROM unnest(ARRAY['change_id', 'change_kind', 'queue_name', 'proposed_values', 'change_reason', 'change_ticket',
                  'proposed_by_role', 'proposed_at', 'expires_at', 'change_decision', 'decided_by_role', 'decided_at',
                  'decided_in_transaction']) AS c;
-- Migration 004: the tally writers delete tally rows older than 30 days
-- (DELETE has no column form); no other owner may. Migration 012 made the
-- terminal owner one (release_job_claim counts a stale release).
SELECT set_eq(
    $$SELECT d.role_name::text FROM definer_role d
      WHERE has_table_privilege(d.role_name, 'durable_jobs.lease_outcome_tally', 'DELETE')$$,
    $$VALUES ('durable_job_claim_owner'), ('durable_job_renewal_owner'), ('durable_job_terminal_owner')$$,
    'only the claim, renewal and terminal owners, the tally writers, may delete (expired) tally rows');
SELECT is_empty(
    $$SELECT d.role_name, c.relname FROM definer_role d CROSS JOIN pg_class c
      WHERE c.relnamespace = 'durable_jobs'::regnamespace AND c.relkind = 'r'
        AND has_any_column_privilege(d.role_name, c.oid, 'UPDATE')
        AND c.relname = 'control_evidence_record'$$,
    'no definer owner can update control evidence');
-- Migration 014: the evidence table's owner is a role of its own, which
-- holds what an owner holds; no bundle role but it can change the evidence
-- at table level, and no runtime role can act as it.
SELECT set_eq(
    $$SELECT r.rolname::text FROM pg_roles r
      WHERE r.rolname LIKE 'durable\_job\_%'
        AND (has_table_privilege(r.oid, 'durable_jobs.control_evidence_record', 'UPDATE')
             OR has_table_privilege(r.oid, 'durable_jobs.control_evidence_record', 'DELETE')
             OR has_table_privilege(r.oid, 'durable_jobs.control_evidence_record', 'TRUNCATE')
             OR pg_has_role(r.oid, (SELECT c.relowner FROM pg_class c
                                    WHERE c.oid = 'durable_jobs.control_evidence_record'::regclass), 'MEMBER'))$$,
    $$VALUES ('durable_job_evidence_owner')$$,
    'of the bundle''s roles only durable_job_evidence_owner, the evidence table''s owner, holds UPDATE, DELETE or TRUNCATE on it or acts as its owner');
SELECT is_empty(
    $$SELECT r.role_name FROM runtime_role r WHERE pg_has_role(r.role_name, 'durable_job_evidence_owner', 'MEMBER')$$,
    'no runtime role is a member of durable_job_evidence_owner');

-- Roles: NOLOGIN, no superuser or escalation attribute, the intended memberships ------

SELECT ok((SELECT NOT rolsuper AND NOT rolbypassrls AND NOT rolcreaterole AND NOT rolcreatedb
           FROM pg_roles WHERE rolname = r.role_name),
          r.role_name || ' is not a superuser and has no BYPASSRLS, CREATEROLE or CREATEDB')
FROM (SELECT role_name FROM definer_role UNION ALL SELECT role_name FROM runtime_role) r ORDER BY r.role_name;
SELECT ok((SELECT NOT rolcanlogin FROM pg_roles WHERE rolname = r.role_name), r.role_name || ' is NOLOGIN')
FROM (SELECT role_name FROM definer_role UNION ALL SELECT role_name FROM runtime_role) r ORDER BY r.role_name;
SELECT is_member_of('durable_job_producer', ARRAY['durable_job_operator'],
    'operators are members of durable_job_producer');
SELECT is_member_of('durable_job_auditor', ARRAY['durable_job_operator'],
    'operators are members of durable_job_auditor');
SELECT is_empty(
    $$SELECT r.role_name, d.role_name FROM runtime_role r CROSS JOIN definer_role d
      WHERE pg_has_role(r.role_name, d.role_name, 'MEMBER')$$,
    'no runtime role is a member of a definer owner, so none inherits its column privileges');
SELECT is_empty(
    $$SELECT a.role_name, b.role_name FROM runtime_role a CROSS JOIN runtime_role b
      WHERE a.role_name <> b.role_name AND pg_has_role(a.role_name, b.role_name, 'MEMBER')
        AND NOT (a.role_name = 'durable_job_operator' AND b.role_name IN ('durable_job_producer', 'durable_job_auditor'))$$,
    'the only memberships among runtime roles are operator in producer and operator in auditor');

SELECT * FROM finish();
ROLLBACK;
