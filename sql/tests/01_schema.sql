-- 01_schema: the objects of the bundle exist with the names, shapes,
-- constraints, comments, signatures, owners and hardening that
-- docs/sql-api.md and sql/doc.go promise. Catalog checks only; nothing here
-- writes a job.
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
SELECT plan(220);

-- Schema, type, tables -------------------------------------------------------

SELECT has_schema('durable_jobs', 'the bundle lives in the schema durable_jobs');
SELECT is(obj_description('durable_jobs'::regnamespace, 'pg_namespace'),
          'leasefence: database-authoritative, fenced durable-job leases. Tables are private; the functions documented in docs/sql-api.md are the interface.',
          'the schema carries a comment that says what it is and names docs/sql-api.md, a file the repository holds (migration 012; 001 named a CONTRACT.md it never had)');

SELECT has_enum('durable_jobs', 'job_status_kind', 'job status is the enum durable_jobs.job_status_kind');
SELECT enum_has_labels('durable_jobs', 'job_status_kind',
    ARRAY['QUEUED', 'RUNNING', 'RETRY_SCHEDULED', 'SUCCEEDED', 'FAILED', 'CANCELLED'],
    'job_status_kind has exactly the six contract statuses, in lifecycle order');
SELECT types_are('durable_jobs', ARRAY['job_status_kind'],
    'the schema defines no type besides job_status_kind');

SELECT tables_are('durable_jobs',
    ARRAY['job_record', 'job_payload_record', 'job_outcome_ledger', 'queue_lease_policy',
          'control_evidence_record', 'lease_outcome_tally', 'queue_retention_policy', 'change_control_setting',
          'evidence_order_lock', 'job_action_record', 'pending_change', 'server_timeline_state'],
    'the schema holds exactly the twelve private tables of the bundle (change_control_setting from migration 015, evidence_order_lock from 024, job_action_record and pending_change from 026, server_timeline_state from 031)');
SELECT views_are('durable_jobs', ARRAY[]::name[], 'the schema has no views');
SELECT sequences_are('durable_jobs',
    ARRAY['job_record_job_record_id_seq', 'job_outcome_ledger_job_outcome_record_id_seq',
          'control_evidence_record_evidence_record_id_seq', 'job_action_record_job_action_record_id_seq',
          'pending_change_change_id_seq'],
    'the only sequences are the identity sequences of the five id columns (job_action_record''s and pending_change''s from migration 026)');
-- Migration 014: the evidence table and its sequence have an owner of their
-- own; every other table and sequence is the installer's (the schema's owner).
SELECT is_empty(
    $$SELECT c.oid::regclass::text, c.relowner::regrole::text FROM pg_class c
      WHERE c.relnamespace = 'durable_jobs'::regnamespace AND c.relkind IN ('r', 'S')
        AND c.relowner <> CASE WHEN c.relname IN ('control_evidence_record', 'control_evidence_record_evidence_record_id_seq')
                               THEN 'durable_job_evidence_owner'::regrole::oid
                               ELSE (SELECT n.nspowner FROM pg_namespace n WHERE n.nspname = 'durable_jobs') END$$,
    'control evidence and its sequence are owned by durable_job_evidence_owner, every other table and sequence by the installer');

SELECT columns_are('durable_jobs', 'job_record',
    ARRAY['job_record_id', 'queue_name', 'job_status', 'idempotency_key_digest', 'run_after', 'max_attempts',
          'attempt_number', 'lease_claim_digest', 'lease_owner_id', 'lease_claimed_by_role', 'lease_claimed_at',
          'lease_expires_at', 'lease_claim_deadline', 'lease_fencing_generation', 'lease_renewal_count',
          'failure_reason_code', 'created_at', 'status_changed_at', 'lease_expiry_floor', 'failover_reclaims'],
    'job_record has exactly its lease-state columns (lease_expiry_floor from migration 008, failover_reclaims from 029) and no payload, token or key column');
SELECT columns_are('durable_jobs', 'job_payload_record', ARRAY['job_record_id', 'job_payload'],
    'job_payload_record holds only the job id and its payload');
SELECT columns_are('durable_jobs', 'job_outcome_ledger',
    ARRAY['job_outcome_record_id', 'job_record_id', 'lease_fencing_generation', 'outcome_status',
          'failure_reason_code', 'result_document', 'recorded_at'],
    'job_outcome_ledger has exactly its outcome columns');
SELECT columns_are('durable_jobs', 'queue_lease_policy',
    ARRAY['queue_name', 'lease_duration', 'renewal_interval', 'max_claim_lifetime', 'renewal_enabled',
          'changed_at', 'changed_by_role'],
    'queue_lease_policy has exactly its policy columns');
SELECT columns_are('durable_jobs', 'control_evidence_record',
    ARRAY['evidence_record_id', 'evidence_kind', 'queue_name', 'previous_values', 'new_values', 'change_reason',
          'changed_by_role', 'recorded_at', 'change_ticket', 'change_approver', 'previous_record_hash', 'record_hash'],
    'control_evidence_record has exactly its evidence columns');
SELECT columns_are('durable_jobs', 'lease_outcome_tally',
    ARRAY['tally_minute', 'queue_name', 'outcome_kind', 'tally_backend_pid', 'counted_by_role', 'outcome_count'],
    'lease_outcome_tally has exactly its per-backend tally columns (migration 004)');
SELECT columns_are('durable_jobs', 'job_action_record',
    ARRAY['job_action_record_id', 'job_record_id', 'action_kind', 'acted_by_role', 'acted_at', 'change_reason',
          'change_ticket', 'change_approver'],
    'job_action_record (migration 026) has exactly the columns of a job''s action trail: which job, what, who, when, why, ticket, approver');
SELECT columns_are('durable_jobs', 'change_control_setting',
    ARRAY['change_control_row', 'ticket_pattern', 'require_approver', 'approver_must_differ', 'changed_at', 'changed_by_role',
          'reason_pattern', 'require_second_operator', 'proposal_lifetime'],
    'change_control_setting has exactly its settings (reason_pattern from migration 024, require_second_operator and proposal_lifetime from 026)');
SELECT columns_are('durable_jobs', 'pending_change',
    ARRAY['change_id', 'change_kind', 'queue_name', 'proposed_values', 'change_reason', 'change_ticket',
          'proposed_by_role', 'proposed_at', 'expires_at', 'change_decision', 'decided_by_role', 'decided_at',
          'decided_in_transaction'],
    'pending_change (migration 026) has exactly the columns of a maker-checker proposal: what, why, who proposed it and when, until when, and who decided it, when and in which transaction');

SELECT col_type_is('durable_jobs', 'job_record', 'lease_claim_digest', 'bytea',
    'the claim token is stored as a bytea digest');
SELECT col_type_is('durable_jobs', 'job_record', 'idempotency_key_digest', 'bytea',
    'the idempotency key is stored as a bytea digest');
SELECT col_type_is('durable_jobs', 'job_record', 'job_status', 'durable_jobs.job_status_kind',
    'job_record.job_status is a job_status_kind');
SELECT col_type_is('durable_jobs', 'job_record', 'lease_fencing_generation', 'bigint',
    'the fencing generation is a bigint');
SELECT col_type_is('durable_jobs', 'job_payload_record', 'job_payload', 'jsonb', 'payloads are jsonb');
SELECT col_not_null('durable_jobs', 'job_payload_record', 'job_payload', 'a stored payload is never NULL');
SELECT col_default_is('durable_jobs', 'job_record', 'job_status', 'QUEUED'::durable_jobs.job_status_kind,
    'a new job_record row starts QUEUED');
SELECT col_default_is('durable_jobs', 'job_record', 'lease_fencing_generation', 0,
    'a new job starts at fencing generation 0, so its first claim is generation 1');

-- Indexes ----------------------------------------------------------------------

SELECT indexes_are('durable_jobs', 'job_record',
    ARRAY['job_record_pkey', 'job_record_idempotency_key_unique', 'job_record_claimable_queue_order',
          'job_record_finished_by_age', 'job_record_reclaim_order'],
    'job_record has exactly its primary key, the idempotency index, the two claim-path indexes and the purge index (migration 025 dropped job_record_running_by_queue, which stale statistics made every claim read whole)');
SELECT indexes_are('durable_jobs', 'job_payload_record', ARRAY['job_payload_record_pkey'],
    'job_payload_record has only its primary key');
SELECT indexes_are('durable_jobs', 'job_outcome_ledger', ARRAY['job_outcome_ledger_pkey', 'job_outcome_ledger_job_lookup'],
    'job_outcome_ledger has its primary key and a lookup by job');
SELECT indexes_are('durable_jobs', 'queue_lease_policy', ARRAY['queue_lease_policy_pkey'],
    'queue_lease_policy has only its primary key');
SELECT indexes_are('durable_jobs', 'control_evidence_record', ARRAY['control_evidence_record_pkey'],
    'control_evidence_record has only its primary key');
SELECT indexes_are('durable_jobs', 'lease_outcome_tally', ARRAY['lease_outcome_tally_pkey', 'lease_outcome_tally_recent'],
    'lease_outcome_tally has its primary key and an index on the tally minute for recent-window reads');
SELECT indexes_are('durable_jobs', 'job_action_record', ARRAY['job_action_record_pkey', 'job_action_record_job_lookup'],
    'job_action_record has its primary key and a lookup by job (the trail of one job, and the cascade when a job is purged)');
SELECT indexes_are('durable_jobs', 'pending_change', ARRAY['pending_change_pkey'],
    'pending_change (migration 026) has only its primary key');

SELECT has_index('durable_jobs', 'job_record', 'job_record_idempotency_key_unique',
    ARRAY['queue_name', 'idempotency_key_digest'],
    'idempotency is indexed on (queue_name, idempotency_key_digest)');
SELECT index_is_unique('durable_jobs', 'job_record', 'job_record_idempotency_key_unique',
    'a (queue, idempotency key digest) pair can exist only once');
SELECT is((SELECT pg_get_expr(i.indpred, i.indrelid) FROM pg_index i
           WHERE i.indexrelid = 'durable_jobs.job_record_idempotency_key_unique'::regclass),
          '(idempotency_key_digest IS NOT NULL)',
          'the idempotency index only covers jobs that have a key');
SELECT has_index('durable_jobs', 'job_record', 'job_record_claimable_queue_order',
    ARRAY['queue_name', 'run_after', 'job_record_id'],
    'claimable jobs are indexed in queue and run-after order');
SELECT ok((SELECT pg_get_expr(i.indpred, i.indrelid) FROM pg_index i
           WHERE i.indexrelid = 'durable_jobs.job_record_claimable_queue_order'::regclass)
          ~ 'QUEUED' AND (SELECT pg_get_expr(i.indpred, i.indrelid) FROM pg_index i
           WHERE i.indexrelid = 'durable_jobs.job_record_claimable_queue_order'::regclass) ~ 'RETRY_SCHEDULED',
          'the claimable-order index is partial on QUEUED and RETRY_SCHEDULED jobs');
SELECT hasnt_index('durable_jobs', 'job_record', 'job_record_running_by_queue',
    'no index of running jobs by queue alone (migration 025): under statistics taken before a burst of claims the planner read it whole for every claim');
SELECT ok(NOT EXISTS (SELECT 1 FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY (i.indkey)
                      WHERE i.indrelid = 'durable_jobs.job_record'::regclass AND a.attname = 'lease_expires_at'),
          'no index holds lease_expires_at, so a renewal changes no indexed column and can be a HOT update');
SELECT has_index('durable_jobs', 'job_record', 'job_record_reclaim_order',
    ARRAY['queue_name', 'lease_expiry_floor', 'job_record_id'],
    'running jobs are indexed by queue and expiry floor for the bounded reclaim probe (migration 008), without lease_expires_at');
SELECT is((SELECT pg_get_expr(i.indpred, i.indrelid) FROM pg_index i
           WHERE i.indexrelid = 'durable_jobs.job_record_reclaim_order'::regclass),
          '(job_status = ''RUNNING''::durable_jobs.job_status_kind)',
          'the reclaim-order index is partial on RUNNING jobs');

-- Named constraints ---------------------------------------------------------------

SELECT set_eq(
    $$SELECT conrelid::regclass::text, conname::text, contype::text FROM pg_constraint
      WHERE connamespace = 'durable_jobs'::regnamespace$$,
    $$VALUES ('durable_jobs.job_record', 'job_record_pkey', 'p'),
             ('durable_jobs.job_record', 'job_record_queue_name_format', 'c'),
             ('durable_jobs.job_record', 'job_record_max_attempts_range', 'c'),
             ('durable_jobs.job_record', 'job_record_failover_reclaims_range', 'c'),
             ('durable_jobs.job_record', 'job_record_attempt_number_range', 'c'),
             ('durable_jobs.job_record', 'job_record_failure_reason_code_format', 'c'),
             ('durable_jobs.job_record', 'job_record_running_has_lease', 'c'),
             ('durable_jobs.job_record', 'job_record_running_floor_bounds_expiry', 'c'),
             ('durable_jobs.job_payload_record', 'job_payload_record_pkey', 'p'),
             ('durable_jobs.job_outcome_ledger', 'job_outcome_ledger_pkey', 'p'),
             ('durable_jobs.queue_lease_policy', 'queue_lease_policy_pkey', 'p'),
             ('durable_jobs.queue_lease_policy', 'queue_lease_policy_queue_name_format', 'c'),
             ('durable_jobs.queue_lease_policy', 'queue_lease_policy_bounds', 'c'),
             ('durable_jobs.queue_lease_policy', 'queue_lease_policy_absolute_durations', 'c'),
             ('durable_jobs.control_evidence_record', 'control_evidence_record_pkey', 'p'),
             ('durable_jobs.control_evidence_record', 'control_evidence_record_kind', 'c'),
             ('durable_jobs.control_evidence_record', 'control_evidence_record_ticket_format', 'c'),
             ('durable_jobs.lease_outcome_tally', 'lease_outcome_tally_pkey', 'p'),
             ('durable_jobs.lease_outcome_tally', 'lease_outcome_tally_kind', 'c'),
             ('durable_jobs.lease_outcome_tally', 'lease_outcome_tally_count_positive', 'c'),
             ('durable_jobs.queue_retention_policy', 'queue_retention_policy_pkey', 'p'),
             ('durable_jobs.queue_retention_policy', 'queue_retention_policy_queue_name_format', 'c'),
             ('durable_jobs.queue_retention_policy', 'queue_retention_policy_bounds', 'c'),
             ('durable_jobs.change_control_setting', 'change_control_setting_pkey', 'p'),
             ('durable_jobs.change_control_setting', 'change_control_setting_single', 'c'),
             ('durable_jobs.change_control_setting', 'change_control_setting_pattern', 'c'),
             ('durable_jobs.change_control_setting', 'change_control_setting_reason_pattern', 'c'),
             ('durable_jobs.change_control_setting', 'change_control_setting_proposal_lifetime', 'c'),
             ('durable_jobs.evidence_order_lock', 'evidence_order_lock_pkey', 'p'),
             ('durable_jobs.evidence_order_lock', 'evidence_order_lock_single', 'c'),
             ('durable_jobs.server_timeline_state', 'server_timeline_state_pkey', 'p'),
             ('durable_jobs.server_timeline_state', 'server_timeline_state_single', 'c'),
             ('durable_jobs.server_timeline_state', 'server_timeline_state_timeline', 'c'),
             ('durable_jobs.job_action_record', 'job_action_record_pkey', 'p'),
             ('durable_jobs.job_action_record', 'job_action_record_kind', 'c'),
             ('durable_jobs.job_action_record', 'job_action_record_job', 'f'),
             ('durable_jobs.pending_change', 'pending_change_pkey', 'p'),
             ('durable_jobs.pending_change', 'pending_change_kind', 'c'),
             ('durable_jobs.pending_change', 'pending_change_decision', 'c')$$,
    'every constraint of the bundle has its chosen name, and there are no unnamed extras');
SELECT col_is_pk('durable_jobs', 'lease_outcome_tally', ARRAY['tally_minute', 'queue_name', 'outcome_kind', 'tally_backend_pid', 'counted_by_role'],
    'a tally row is one UTC minute, queue, outcome kind and backend: no two live sessions share a row');
-- Since migration 019 neither references job_record with a foreign key:
-- its check ran a query and took a row lock for every payload enqueued and
-- every outcome recorded, though only the bundle's functions write them, in
-- the call that writes the job row; purge_expired_job_data deletes them
-- with their job (17_retention.sql).
SELECT hasnt_fk('durable_jobs', 'job_payload_record', 'no foreign key checks each payload written (migration 019)');
SELECT hasnt_fk('durable_jobs', 'job_outcome_ledger', 'no foreign key checks each outcome recorded (migration 019)');
SELECT throws_ok(
    $$INSERT INTO durable_jobs.job_record (queue_name, job_status, run_after, max_attempts)
      VALUES ('schema_check_queue', 'RUNNING', clock_timestamp(), 5)$$,
    '23514', NULL,
    'a RUNNING job without a claim digest, owner, role, expiry and deadline is refused by the table itself');
SELECT throws_ok(
    $$INSERT INTO durable_jobs.lease_outcome_tally (tally_minute, queue_name, outcome_kind, tally_backend_pid, counted_by_role, outcome_count)
      VALUES (date_trunc('minute', now(), 'UTC'), 'q', 'reclaim', 1, 'r', 0)$$,
    '23514', NULL, 'a tally count of zero is refused');
SELECT throws_ok(
    $$INSERT INTO durable_jobs.queue_lease_policy (queue_name, lease_duration, renewal_interval, max_claim_lifetime, renewal_enabled)
      VALUES ('schema_check_days', interval '1 day', interval '1 hour', interval '2 days', true)$$,
    '23514', NULL, 'a policy interval with a day part is refused by the table itself (absolute durations only)');

SELECT triggers_are('durable_jobs', 'control_evidence_record',
    ARRAY['control_evidence_record_append_only', 'control_evidence_record_no_truncate', 'control_evidence_record_chain'],
    'control evidence is guarded by the append-only and no-truncate triggers and chained by the chain trigger');
SELECT triggers_are('durable_jobs', 'queue_retention_policy',
    ARRAY['queue_retention_policy_stamp', 'queue_retention_policy_no_truncate', 'queue_retention_policy_evidence'],
    'the retention policy table stamps who changed a row, refuses TRUNCATE and records every row change as evidence (migration 026)');
SELECT triggers_are('durable_jobs', 'change_control_setting',
    ARRAY['change_control_setting_stamp', 'change_control_setting_no_delete', 'change_control_setting_no_truncate',
          'change_control_setting_evidence'],
    'the change-control setting stamps who changed it, refuses DELETE and TRUNCATE and records every change as evidence (migration 026)');
SELECT triggers_are('durable_jobs', 'job_record', ARRAY['job_record_wake_workers', 'job_record_wake_workers_after_insert'],
    'job_record has only the two AFTER wake-up triggers of migration 027 (no BEFORE ROW UPDATE trigger: migration 017 moved the generation floor of 011 into claim_next_jobs, because one locks the old row before every UPDATE of job_record)');

-- Comments where promised ----------------------------------------------------------

SELECT ok(obj_description(('durable_jobs.' || t)::regclass, 'pg_class') IS NOT NULL,
          'table durable_jobs.' || t || ' carries a comment')
FROM unnest(ARRAY['job_record', 'job_payload_record', 'job_outcome_ledger', 'queue_lease_policy',
                  'control_evidence_record', 'lease_outcome_tally', 'pending_change']) AS t;

SELECT ok(col_description('durable_jobs.job_record'::regclass,
              (SELECT attnum FROM pg_attribute WHERE attrelid = 'durable_jobs.job_record'::regclass AND attname = c))
          IS NOT NULL,
          'job_record.' || c || ' carries a comment that says what it means')
FROM unnest(ARRAY['idempotency_key_digest', 'lease_claim_digest', 'lease_owner_id', 'lease_claimed_by_role',
                  'lease_claim_deadline', 'lease_fencing_generation', 'lease_renewal_count', 'attempt_number']) AS c;
SELECT matches(col_description('durable_jobs.job_record'::regclass,
                   (SELECT attnum FROM pg_attribute WHERE attrelid = 'durable_jobs.job_record'::regclass
                    AND attname = 'lease_claim_digest')),
               'sha256\(uuid_send\(token\)\)',
               'the claim digest column says it holds sha256(uuid_send(token)), never the token');
SELECT ok(col_description('durable_jobs.lease_outcome_tally'::regclass,
              (SELECT attnum FROM pg_attribute WHERE attrelid = 'durable_jobs.lease_outcome_tally'::regclass
               AND attname = c)) IS NOT NULL,
          'lease_outcome_tally.' || c || ' carries a comment that says what it means')
FROM unnest(ARRAY['tally_minute', 'queue_name', 'tally_backend_pid', 'counted_by_role']) AS c;

-- The default policy row -------------------------------------------------------------

SELECT results_eq(
    $$SELECT lease_duration, renewal_interval, max_claim_lifetime, renewal_enabled
      FROM durable_jobs.queue_lease_policy WHERE queue_name = '*'$$,
    $$VALUES (interval '30 seconds', interval '10 seconds', interval '24 hours', true)$$,
    'the bundle installs the ''*'' default policy: 30 s lease, 10 s renewal, 24 h claim lifetime, renewal on');

-- Functions: the exact set, signatures and result columns -----------------------------

SELECT functions_are('durable_jobs',
    ARRAY['enqueue_job', 'cancel_job', 'job_lifecycle_state', 'claim_next_job', 'claim_next_jobs',
          'renew_job_lease', 'renew_job_leases', 'complete_job', 'complete_jobs', 'retry_job', 'fail_job', 'release_job_claims',
          'release_job_claim', 'replay_job', 'set_queue_lease_policy', 'record_deployment_version',
          'lease_health_by_queue', 'queue_lease_policies', 'control_evidence_history', 'lease_outcome_totals',
          'job_status_totals', 'bundle_migration_version', 'operator_list_jobs', 'operator_job_detail', 'enqueue_jobs',
          'require_well_formed', 'claim_token_digest', 'record_lease_outcome', 'lock_fenced_claim',
          'raise_stale_claim', 'refuse_evidence_change', 'absolute_duration',
          'is_plain_change_reason', 'lock_evidence_order',
          'set_queue_retention_policy', 'queue_retention_policies', 'purge_expired_job_data', 'erase_job_payload',
          'require_valid_change_reason',
          'record_deployment', 'control_evidence_chain', 'control_evidence_records', 'policy_evidence_mismatches',
          'change_queue_lease_policy', 'passes_luhn', 'looks_personal_or_secret', 'screening_form', 'require_structured_change',
          'evidence_content_digest', 'chain_evidence_record', 'stamp_policy_change', 'record_policy_change',
          'refuse_policy_truncate', 'record_stale_call', 'record_stale_calls',
          'change_control', 'set_change_control', 'set_change_reason_pattern', 'update_queue_lease_policy',
          'queue_name_pattern', 'queue_name_is_well_formed', 'worker_owner_id_pattern',
          'worker_owner_id_is_well_formed', 'effective_lease_policy_queue',
          'failure_reason_code_pattern', 'failure_reason_code_is_well_formed',
          'continue_evidence_chain', 'stamp_control_change', 'refuse_control_removal', 'record_retention_policy_change',
          'record_change_control_change', 'set_change_record', 'check_change_record', 'cancel_job_recorded',
          'replay_job_recorded', 'record_job_action', 'operator_job_actions', 'control_evidence_mismatches',
          'job_status_mismatches', 'processing_counts', 'require_valid_change_control', 'set_maker_checker', 'approved_proposer',
          'propose_change', 'decide_change', 'approve_change', 'reject_change', 'pending_changes',
          'wake_queue_workers', 'wake_queue_workers_after_insert', 'queue_next_due_in', 'queue_backlog',
          'server_availability'],
    'the schema holds exactly the contract functions, the wake-ups (027), the backlog (028), server_availability (031), the audit, deployment and retention functions, the evidence functions of the evidence-chain migration, the operator views, batch enqueue, change control (015), the partial policy change and the rule functions (016), the control-table evidence, operator action trail, audit and maker-checker functions (026) and the private helpers');

CREATE TEMP TABLE expected_signature (
    function_name   name PRIMARY KEY,
    argument_types  name[] NOT NULL,
    arguments       text NOT NULL,
    result          text NOT NULL,
    owner_role      name NOT NULL
) ON COMMIT DROP;
INSERT INTO expected_signature VALUES
 ('enqueue_job', '{text,jsonb,text,"timestamp with time zone",integer}',
  'p_queue_name text, p_job_payload jsonb, p_idempotency_key text DEFAULT NULL::text, p_run_after timestamp with time zone DEFAULT NULL::timestamp with time zone, p_max_attempts integer DEFAULT 5',
  'bigint', 'durable_job_producer_owner'),
 ('enqueue_jobs', '{text,jsonb[],text[],"timestamp with time zone[]",integer[]}',
  'p_queue_name text, p_job_payloads jsonb[], p_idempotency_keys text[] DEFAULT NULL::text[], p_run_afters timestamp with time zone[] DEFAULT NULL::timestamp with time zone[], p_max_attempts integer[] DEFAULT NULL::integer[]',
  'bigint[]', 'durable_job_producer_owner'),
 ('cancel_job', '{bigint}', 'p_job_record_id bigint', 'boolean', 'durable_job_producer_owner'),
 ('job_lifecycle_state', '{bigint}', 'p_job_record_id bigint',
  'TABLE(job_status text, attempt_number integer, max_attempts integer, lease_fencing_generation bigint, lease_expires_at timestamp with time zone, lease_renewal_count bigint, failure_reason_code text)',
  'durable_job_producer_owner'),
 ('replay_job', '{bigint}', 'p_job_record_id bigint', 'boolean', 'durable_job_producer_owner'),
 ('claim_next_job', '{text,text}', 'p_queue_name text, p_worker_owner_id text',
  'TABLE(job_record_id bigint, lease_claim_token uuid, lease_fencing_generation bigint, lease_expires_at timestamp with time zone, lease_renewal_interval interval, attempt_number integer, job_payload jsonb, database_time timestamp with time zone)',
  'durable_job_claim_owner'),
 ('claim_next_jobs', '{text,text,integer}', 'p_queue_name text, p_worker_owner_id text, p_max_jobs integer',
  'TABLE(job_record_id bigint, lease_claim_token uuid, lease_fencing_generation bigint, lease_expires_at timestamp with time zone, lease_renewal_interval interval, attempt_number integer, job_payload jsonb, database_time timestamp with time zone)',
  'durable_job_claim_owner'),
 ('renew_job_lease', '{bigint,uuid,text}', 'p_job_record_id bigint, p_lease_claim_token uuid, p_worker_owner_id text',
  'TABLE(renewal_outcome text, lease_expires_at timestamp with time zone, database_time timestamp with time zone)',
  'durable_job_renewal_owner'),
 ('renew_job_leases', '{text,bigint[],uuid[]}', 'p_worker_owner_id text, p_job_record_ids bigint[], p_lease_claim_tokens uuid[]',
  'TABLE(job_record_id bigint, renewal_outcome text, lease_expires_at timestamp with time zone, database_time timestamp with time zone)',
  'durable_job_renewal_owner'),
 ('complete_job', '{bigint,uuid,text,jsonb}',
  'p_job_record_id bigint, p_lease_claim_token uuid, p_worker_owner_id text, p_result_document jsonb DEFAULT NULL::jsonb',
  'void', 'durable_job_terminal_owner'),
 ('complete_jobs', '{text,bigint[],uuid[],jsonb[]}',
  'p_worker_owner_id text, p_job_record_ids bigint[], p_lease_claim_tokens uuid[], p_result_documents jsonb[] DEFAULT NULL::jsonb[]',
  'TABLE(job_record_id bigint, job_status text, lease_fencing_generation bigint)', 'durable_job_terminal_owner'),
 ('retry_job', '{bigint,uuid,text,interval,text}',
  'p_job_record_id bigint, p_lease_claim_token uuid, p_worker_owner_id text, p_retry_delay interval, p_failure_reason_code text',
  'text', 'durable_job_terminal_owner'),
 ('fail_job', '{bigint,uuid,text,text}',
  'p_job_record_id bigint, p_lease_claim_token uuid, p_worker_owner_id text, p_failure_reason_code text',
  'void', 'durable_job_terminal_owner'),
 ('release_job_claim', '{bigint,uuid,text}', 'p_job_record_id bigint, p_lease_claim_token uuid, p_worker_owner_id text',
  'boolean', 'durable_job_terminal_owner'),
 ('release_job_claims', '{text,bigint[],uuid[]}', 'p_worker_owner_id text, p_job_record_ids bigint[], p_lease_claim_tokens uuid[]',
  'TABLE(job_record_id bigint, released boolean)', 'durable_job_terminal_owner'),
 ('queue_next_due_in', '{text}', 'p_queue_name text', 'interval', 'durable_job_claim_owner'),
 ('set_queue_lease_policy', '{text,interval,interval,interval,boolean,text}',
  'p_queue_name text, p_lease_duration interval, p_renewal_interval interval, p_max_claim_lifetime interval, p_renewal_enabled boolean, p_change_reason text',
  'void', 'durable_job_policy_owner'),
 ('record_deployment_version', '{text,text}', 'p_deployment_version text, p_change_reason text',
  'void', 'durable_job_policy_owner'),
 ('lease_health_by_queue', '{}', '',
  'TABLE(queue_name text, running_jobs bigint, expiring_within_interval bigint, expired_awaiting_reclaim bigint, reclaims_last_hour bigint, failover_reclaims_last_hour bigint, stale_renewals_last_hour bigint, stale_releases_last_hour bigint, oldest_lease_age interval, database_time timestamp with time zone)',
  'durable_job_audit_owner'),
 ('server_availability', '{}', '',
  'TABLE(server_timeline bigint, timeline_seen_at timestamp with time zone, previous_timeline bigint, server_started_at timestamp with time zone, in_recovery boolean, database_time timestamp with time zone)',
  'durable_job_policy_owner'),
 ('queue_backlog', '{}', '',
  'TABLE(queue_name text, queued bigint, running bigint, retry_scheduled bigint, failed_last_hour bigint, oldest_due_age interval, database_time timestamp with time zone)',
  'durable_job_audit_owner'),
 ('queue_lease_policies', '{}', '',
  'TABLE(queue_name text, lease_duration interval, renewal_interval interval, max_claim_lifetime interval, renewal_enabled boolean, changed_at timestamp with time zone, changed_by_role text)',
  'durable_job_audit_owner'),
 ('control_evidence_history', '{"timestamp with time zone"}', 'p_since timestamp with time zone DEFAULT NULL::timestamp with time zone',
  'TABLE(evidence_record_id bigint, evidence_kind text, queue_name text, previous_values jsonb, new_values jsonb, change_reason text, changed_by_role text, recorded_at timestamp with time zone)',
  'durable_job_audit_owner'),
 ('lease_outcome_totals', '{"timestamp with time zone"}', 'p_since timestamp with time zone',
  'TABLE(queue_name text, outcome_kind text, outcome_count bigint)', 'durable_job_audit_owner'),
 ('job_status_totals', '{}', '', 'TABLE(queue_name text, job_status text, job_count bigint)', 'durable_job_audit_owner'),
 ('bundle_migration_version', '{}', '', 'TABLE(migration_version integer, applied_at timestamp with time zone)',
  'durable_job_audit_owner'),
 ('operator_list_jobs', '{text,text,bigint,integer}',
  'p_queue_name text DEFAULT NULL::text, p_job_status text DEFAULT NULL::text, p_after_job_record_id bigint DEFAULT NULL::bigint, p_max_jobs integer DEFAULT 50',
  'TABLE(job_record_id bigint, queue_name text, job_status text, attempt_number integer, max_attempts integer, lease_fencing_generation bigint, lease_expires_at timestamp with time zone, lease_renewal_count bigint, failure_reason_code text, run_after timestamp with time zone, created_at timestamp with time zone, status_changed_at timestamp with time zone)',
  'durable_job_audit_owner'),
 ('operator_job_detail', '{bigint}', 'p_job_record_id bigint',
  'TABLE(job_record_id bigint, queue_name text, job_status text, attempt_number integer, max_attempts integer, lease_fencing_generation bigint, lease_expires_at timestamp with time zone, lease_renewal_count bigint, failure_reason_code text, run_after timestamp with time zone, created_at timestamp with time zone, status_changed_at timestamp with time zone)',
  'durable_job_audit_owner');

-- 26 x has_function with the exact argument types.
SELECT has_function('durable_jobs', e.function_name, e.argument_types,
    'durable_jobs.' || e.function_name || '(' || array_to_string(e.argument_types, ', ') || ') exists')
FROM expected_signature e ORDER BY e.function_name;

-- 26 x the exact parameter names, defaults and result columns.
SELECT is((SELECT pg_get_function_arguments(p.oid) || ' -> ' || pg_get_function_result(p.oid)
           FROM pg_proc p
           WHERE p.oid = to_regprocedure('durable_jobs.' || e.function_name || '('
                                         || array_to_string(e.argument_types, ',') || ')')),
          e.arguments || ' -> ' || e.result,
          'durable_jobs.' || e.function_name || ' has exactly the contract''s parameters and result columns')
FROM expected_signature e ORDER BY e.function_name;

-- 26 x SECURITY DEFINER.
SELECT is_definer('durable_jobs', e.function_name, e.argument_types,
    'durable_jobs.' || e.function_name || ' is SECURITY DEFINER')
FROM expected_signature e ORDER BY e.function_name;

-- 26 x owned by its family's definer role.
SELECT function_owner_is('durable_jobs', e.function_name, e.argument_types, e.owner_role,
    'durable_jobs.' || e.function_name || ' is owned by its family''s definer role ' || e.owner_role)
FROM expected_signature e ORDER BY e.function_name;

-- Private helpers run with their caller's (the definer function's) rights, never their owner's.
SELECT isnt_definer('durable_jobs', h.function_name, h.argument_types,
    'private helper durable_jobs.' || h.function_name || ' is not SECURITY DEFINER, so it never runs as its installer')
FROM (VALUES ('require_well_formed'::name, '{text,text,text}'::name[]), ('claim_token_digest', '{uuid}'),
             ('record_lease_outcome', '{text,text,bigint}'), ('lock_fenced_claim', '{bigint,uuid,text}'),
             ('raise_stale_claim', '{}'), ('refuse_evidence_change', '{}'),
             ('absolute_duration', '{interval}'),
             ('is_plain_change_reason', '{text}'),
             ('record_stale_call', '{bigint,text}'),
             ('record_stale_calls', '{bigint[],text}'),
             ('queue_name_pattern', '{}'), ('queue_name_is_well_formed', '{text}'),
             ('worker_owner_id_pattern', '{}'), ('worker_owner_id_is_well_formed', '{text}'),
             ('failure_reason_code_pattern', '{}'), ('failure_reason_code_is_well_formed', '{text}'),
             ('effective_lease_policy_queue', '{text}'),
             ('cancel_job_recorded', '{bigint,text,text,text}'), ('replay_job_recorded', '{bigint,text,text,text}'),
             ('check_change_record', '{durable_jobs.change_control_setting,text,text,text}'),
             ('set_change_record', '{text,text,text}'), ('stamp_control_change', '{}'),
             ('refuse_control_removal', '{}'),
             ('require_valid_change_control', '{text,boolean,boolean,text,boolean,interval}'),
             ('decide_change', '{bigint,text,text}')) AS h(function_name, argument_types);

-- Migration 026: the new functions' parameters, results, owners and
-- SECURITY DEFINER (the private bodies of cancel_job and replay_job run as
-- their definer wrappers' owner, so they are owned by it and not definers).
CREATE TEMP TABLE expected_026 (
    signature   text PRIMARY KEY,
    arguments   text NOT NULL,
    owner_role  name NOT NULL,
    is_definer  boolean NOT NULL
) ON COMMIT DROP;
INSERT INTO expected_026 VALUES
 ('durable_jobs.cancel_job(bigint,text,text,text)',
  'p_job_record_id bigint, p_change_reason text, p_change_ticket text DEFAULT NULL::text, p_change_approver text DEFAULT NULL::text -> boolean',
  'durable_job_producer_owner', true),
 ('durable_jobs.replay_job(bigint,text,text,text)',
  'p_job_record_id bigint, p_change_reason text, p_change_ticket text DEFAULT NULL::text, p_change_approver text DEFAULT NULL::text -> boolean',
  'durable_job_producer_owner', true),
 ('durable_jobs.cancel_job_recorded(bigint,text,text,text)',
  'p_job_record_id bigint, p_change_reason text, p_change_ticket text, p_change_approver text -> boolean',
  'durable_job_producer_owner', false),
 ('durable_jobs.replay_job_recorded(bigint,text,text,text)',
  'p_job_record_id bigint, p_change_reason text, p_change_ticket text, p_change_approver text -> boolean',
  'durable_job_producer_owner', false),
 ('durable_jobs.record_job_action(bigint,text,text,text,text,text,text,text)',
  'p_job_record_id bigint, p_queue_name text, p_action_kind text, p_previous_status text, p_new_status text, p_change_reason text, p_change_ticket text, p_change_approver text -> void',
  'durable_job_retention_owner', true),
 ('durable_jobs.set_queue_retention_policy(text,interval,interval,text,text,text)',
  'p_queue_name text, p_payload_retention interval, p_record_retention interval, p_change_reason text, p_change_ticket text, p_change_approver text DEFAULT NULL::text -> void',
  'durable_job_retention_owner', true),
 ('durable_jobs.erase_job_payload(bigint,text,text,text)',
  'p_job_record_id bigint, p_change_reason text, p_change_ticket text, p_change_approver text DEFAULT NULL::text -> boolean',
  'durable_job_retention_owner', true),
 ('durable_jobs.record_retention_policy_change()', ' -> trigger', 'durable_job_retention_owner', true),
 ('durable_jobs.continue_evidence_chain(bigint,bytea,text,text,text)',
  'p_previous_head_id bigint, p_previous_head_hash bytea, p_change_reason text, p_change_ticket text DEFAULT NULL::text, p_change_approver text DEFAULT NULL::text -> bigint',
  'durable_job_policy_owner', true),
 ('durable_jobs.record_change_control_change()', ' -> trigger', 'durable_job_policy_owner', true),
 ('durable_jobs.operator_job_actions(bigint)',
  'p_job_record_id bigint -> TABLE(action_kind text, acted_at timestamp with time zone, acted_by_role text, change_reason text, change_ticket text, change_approver text)',
  'durable_job_audit_owner', true),
 ('durable_jobs.control_evidence_mismatches()', ' -> TABLE(control_table text, queue_name text, mismatch text)',
  'durable_job_audit_owner', true),
 ('durable_jobs.job_status_mismatches()', ' -> TABLE(queue_name text, job_status text, job_count bigint)',
  'durable_job_audit_owner', true),
 ('durable_jobs.processing_counts(timestamp with time zone,timestamp with time zone)',
  'p_since timestamp with time zone, p_until timestamp with time zone -> TABLE(queue_name text, enqueued bigint, succeeded bigint, retried bigint, failed bigint, cancelled bigint, replayed bigint)',
  'durable_job_audit_owner', true),
 ('durable_jobs.change_control()',
  ' -> TABLE(ticket_pattern text, require_approver boolean, approver_must_differ boolean, changed_at timestamp with time zone, changed_by_role text, reason_pattern text, require_second_operator boolean, proposal_lifetime interval)',
  'durable_job_policy_owner', true),
 ('durable_jobs.require_valid_change_control(text,boolean,boolean,text,boolean,interval)',
  'p_ticket_pattern text, p_require_approver boolean, p_approver_must_differ boolean, p_reason_pattern text, p_require_second_operator boolean, p_proposal_lifetime interval -> void',
  (SELECT n.nspowner::regrole::name FROM pg_namespace n WHERE n.nspname = 'durable_jobs'), false),
 ('durable_jobs.set_maker_checker(boolean,interval,text,text,text)',
  'p_require_second_operator boolean, p_proposal_lifetime interval, p_change_reason text, p_change_ticket text, p_change_approver text DEFAULT NULL::text -> void',
  'durable_job_policy_owner', true),
 ('durable_jobs.approved_proposer()', ' -> text', 'durable_job_policy_owner', true),
 ('durable_jobs.propose_change(text,text,jsonb,text,text)',
  'p_change_kind text, p_queue_name text, p_proposed_values jsonb, p_change_reason text, p_change_ticket text DEFAULT NULL::text -> bigint',
  'durable_job_policy_owner', true),
 ('durable_jobs.decide_change(bigint,text,text)',
  'p_change_id bigint, p_decision text, p_change_reason text -> durable_jobs.pending_change',
  'durable_job_policy_owner', false),
 ('durable_jobs.approve_change(bigint)', 'p_change_id bigint -> void', 'durable_job_policy_owner', true),
 ('durable_jobs.reject_change(bigint,text)', 'p_change_id bigint, p_change_reason text -> void', 'durable_job_policy_owner', true),
 ('durable_jobs.pending_changes(boolean)',
  'p_include_decided boolean DEFAULT false -> TABLE(change_id bigint, change_kind text, queue_name text, proposed_values jsonb, change_reason text, change_ticket text, proposed_by_role text, proposed_at timestamp with time zone, expires_at timestamp with time zone, change_state text, decided_by_role text, decided_at timestamp with time zone)',
  'durable_job_policy_owner', true);
SELECT results_eq(
    $$SELECT e.signature, pg_get_function_arguments(p.oid) || ' -> ' || pg_get_function_result(p.oid),
             p.proowner::regrole::name, p.prosecdef
      FROM expected_026 e LEFT JOIN pg_proc p ON p.oid = to_regprocedure(e.signature) ORDER BY e.signature$$,
    $$SELECT e.signature, e.arguments, e.owner_role, e.is_definer FROM expected_026 e ORDER BY e.signature$$,
    'the functions of migration 026 (change_control() with its two new columns) have exactly their parameters and results, are owned by their family''s definer role and are SECURITY DEFINER but for the private bodies of cancel_job and replay_job and the private maker-checker helpers decide_change (owned by its definer callers'' owner) and require_valid_change_control (the installer''s, like the other private helpers)');

-- Migration 024: lock_evidence_order runs as durable_job_policy_owner, the one
-- role (with superusers) that may lock the evidence-order lock's row.
SELECT is_definer('durable_jobs', 'lock_evidence_order', '{}'::name[],
    'durable_jobs.lock_evidence_order is SECURITY DEFINER (migration 024): it locks a row no caller may lock itself');
SELECT function_owner_is('durable_jobs', 'lock_evidence_order', '{}'::name[], 'durable_job_policy_owner',
    'durable_jobs.lock_evidence_order is owned by durable_job_policy_owner, the one role granted the evidence-order lock''s row');

-- Migration 004: functions that do time arithmetic also pin TimeZone = UTC,
-- and the evidence writers bound their wait for the evidence-order lock.
-- Migration 016: the rule functions (rules.sql; two more since 021) set nothing, so that
-- PostgreSQL inlines them (a SET clause prevents it); the exception holds
-- for exactly those seven, and only while each is a LANGUAGE sql body bound
-- at creation (names resolved then, not by search_path at run time), not
-- SECURITY DEFINER and owned like the other private helpers.
SELECT is_empty(
    $$SELECT p.oid::regprocedure::text, p.proconfig::text FROM pg_proc p
      WHERE p.pronamespace = 'durable_jobs'::regnamespace
        AND NOT (p.oid::regprocedure::text IN ('durable_jobs.queue_name_pattern()',
                     'durable_jobs.queue_name_is_well_formed(text)', 'durable_jobs.worker_owner_id_pattern()',
                     'durable_jobs.worker_owner_id_is_well_formed(text)', 'durable_jobs.effective_lease_policy_queue(text)',
                     'durable_jobs.failure_reason_code_pattern()', 'durable_jobs.failure_reason_code_is_well_formed(text)')
                 AND p.proconfig IS NULL AND NOT p.prosecdef AND p.prosqlbody IS NOT NULL
                 AND p.prolang = (SELECT l.oid FROM pg_language l WHERE l.lanname = 'sql')
                 AND p.proowner = (SELECT h.proowner FROM pg_proc h
                                   WHERE h.oid = 'durable_jobs.require_well_formed(text,text,text)'::regprocedure))
        AND p.proconfig IS DISTINCT FROM CASE p.oid::regprocedure::text
            WHEN 'durable_jobs.record_lease_outcome(text,text,bigint)' THEN ARRAY['search_path=pg_catalog, pg_temp', 'TimeZone=UTC']
            WHEN 'durable_jobs.retry_job(bigint,uuid,text,interval,text)' THEN ARRAY['search_path=pg_catalog, pg_temp', 'TimeZone=UTC']
            WHEN 'durable_jobs.lease_health_by_queue()' THEN ARRAY['search_path=pg_catalog, pg_temp', 'TimeZone=UTC']
            WHEN 'durable_jobs.queue_backlog()' THEN ARRAY['search_path=pg_catalog, pg_temp', 'TimeZone=UTC', 'enable_seqscan=off']
            WHEN 'durable_jobs.lease_outcome_totals(timestamp with time zone)' THEN ARRAY['search_path=pg_catalog, pg_temp', 'TimeZone=UTC']
            WHEN 'durable_jobs.change_queue_lease_policy(text,interval,interval,interval,boolean,text,text,text)'
                THEN ARRAY['search_path=pg_catalog, pg_temp', 'TimeZone=UTC', 'lock_timeout=10s']
            WHEN 'durable_jobs.record_deployment_version(text,text)' THEN ARRAY['search_path=pg_catalog, pg_temp', 'lock_timeout=10s']
            WHEN 'durable_jobs.record_deployment(text,text,text,text,text)' THEN ARRAY['search_path=pg_catalog, pg_temp', 'lock_timeout=10s']
            WHEN 'durable_jobs.record_policy_change()' THEN ARRAY['search_path=pg_catalog, pg_temp', 'lock_timeout=10s',
                'IntervalStyle=postgres', 'DateStyle=ISO, MDY', 'TimeZone=UTC', 'extra_float_digits=1']
            WHEN 'durable_jobs.set_queue_retention_policy(text,interval,interval,text,text,text)' THEN ARRAY['search_path=pg_catalog, pg_temp',
                'IntervalStyle=postgres', 'DateStyle=ISO, MDY', 'TimeZone=UTC', 'extra_float_digits=1']
            WHEN 'durable_jobs.record_retention_policy_change()' THEN ARRAY['search_path=pg_catalog, pg_temp', 'lock_timeout=10s',
                'IntervalStyle=postgres', 'DateStyle=ISO, MDY', 'TimeZone=UTC', 'extra_float_digits=1']
            WHEN 'durable_jobs.record_change_control_change()' THEN ARRAY['search_path=pg_catalog, pg_temp', 'lock_timeout=10s', 'IntervalStyle=postgres']
            WHEN 'durable_jobs.set_maker_checker(boolean,interval,text,text,text)' THEN ARRAY['search_path=pg_catalog, pg_temp', 'lock_timeout=10s', 'IntervalStyle=postgres']
            WHEN 'durable_jobs.propose_change(text,text,jsonb,text,text)' THEN ARRAY['search_path=pg_catalog, pg_temp', 'lock_timeout=10s',
                'IntervalStyle=postgres', 'DateStyle=ISO, MDY', 'TimeZone=UTC']
            WHEN 'durable_jobs.approve_change(bigint)' THEN ARRAY['search_path=pg_catalog, pg_temp', 'lock_timeout=10s']
            WHEN 'durable_jobs.reject_change(bigint,text)' THEN ARRAY['search_path=pg_catalog, pg_temp', 'lock_timeout=10s']
            WHEN 'durable_jobs.continue_evidence_chain(bigint,bytea,text,text,text)' THEN ARRAY['search_path=pg_catalog, pg_temp', 'lock_timeout=10s']
            WHEN 'durable_jobs.cancel_job(bigint,text,text,text)' THEN ARRAY['search_path=pg_catalog, pg_temp', 'lock_timeout=10s']
            WHEN 'durable_jobs.replay_job(bigint)' THEN ARRAY['search_path=pg_catalog, pg_temp', 'lock_timeout=10s']
            WHEN 'durable_jobs.replay_job(bigint,text,text,text)' THEN ARRAY['search_path=pg_catalog, pg_temp', 'lock_timeout=10s']
            WHEN 'durable_jobs.lock_evidence_order()' THEN ARRAY['search_path=pg_catalog, pg_temp', 'lock_timeout=10s']
            WHEN 'durable_jobs.set_change_reason_pattern(text,text,text,text)' THEN ARRAY['search_path=pg_catalog, pg_temp', 'lock_timeout=10s']
            WHEN 'durable_jobs.set_change_control(text,boolean,boolean,text,text,text)' THEN ARRAY['search_path=pg_catalog, pg_temp', 'lock_timeout=10s']
            WHEN 'durable_jobs.update_queue_lease_policy(text,interval,interval,interval,boolean,text,text,text)' THEN ARRAY['search_path=pg_catalog, pg_temp', 'lock_timeout=10s']
            WHEN 'durable_jobs.enqueue_jobs(text,jsonb[],text[],timestamp with time zone[],integer[])' THEN ARRAY['search_path=pg_catalog, pg_temp', 'plan_cache_mode=force_custom_plan']
            WHEN 'durable_jobs.claim_next_jobs(text,text,integer)' THEN ARRAY['search_path=pg_catalog, pg_temp', 'plan_cache_mode=force_generic_plan']
            ELSE ARRAY['search_path=pg_catalog, pg_temp'] END$$,
    'every function in the schema, helpers included, sets exactly search_path = pg_catalog, pg_temp, plus TimeZone = UTC where it does time arithmetic, enable_seqscan = off where it must read only the rows it counts (queue_backlog, 028), lock_timeout where it takes the evidence lock and (migration 024) the four output settings where it renders durations into evidence; only the seven inlined rule functions of migrations 016 and 021 set nothing');
SELECT is((SELECT count(*)::integer FROM pg_proc p WHERE p.pronamespace = 'durable_jobs'::regnamespace AND p.prosecdef),
          61, 'exactly the twenty contract, audit and deployment functions, complete_jobs (migration 008), release_job_claims (migration 023), the four retention functions, the six definer functions of the evidence-chain migration (the structured set_queue_lease_policy overload, record_deployment, record_policy_change, control_evidence_chain, control_evidence_records, policy_evidence_mismatches) the two operator views, enqueue_jobs, change_control and set_change_control (migration 015) and update_queue_lease_policy (migration 016) and lock_evidence_order and set_change_reason_pattern (migration 024) and the twelve of migration 026 (the cancel_job, replay_job, set_queue_retention_policy and erase_job_payload overloads with a change record, continue_evidence_chain, the two control-table evidence triggers, record_job_action, operator_job_actions, control_evidence_mismatches, job_status_mismatches and processing_counts) and the six maker-checker functions of 026 (set_maker_checker, approved_proposer, propose_change, approve_change, reject_change, pending_changes) and queue_next_due_in (migration 027) and queue_backlog (migration 028) and server_availability (migration 031) are SECURITY DEFINER (raise_generation_to_floor of migration 011 was dropped by 017)');
SELECT is_empty(
    $$SELECT p.oid::regprocedure::text FROM pg_proc p
      WHERE p.pronamespace = 'durable_jobs'::regnamespace AND p.prosecdef
        AND pg_get_userbyid(p.proowner) NOT LIKE 'durable\_job\_%\_owner'$$,
    'no SECURITY DEFINER function is owned by a role other than a durable_job_*_owner definer role');
SELECT is(pg_get_function_result('durable_jobs.claim_next_jobs(text,text,integer)'::regprocedure),
          pg_get_function_result('durable_jobs.claim_next_job(text,text)'::regprocedure),
          'claim_next_jobs returns the same column names, types and order as claim_next_job');

SELECT * FROM finish();
ROLLBACK;
