-- 30_migration_records (migration 026): a migration's own evidence record
-- (migration_applied, migration_reverted, which its frozen SQL writes
-- without ticket or approver) takes the ticket and approver that leasectl
-- migrate --ticket/--approver set (leasefence.migration_ticket,
-- leasefence.migration_approver) and is checked against the change control
-- in force; other records are not touched. The CLI path is in
-- cmd/leasectl (TestMigrateRecordsTicketAndApproverChangeControlAsksFor).
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
SELECT plan(6);
\ir fixture/fixture.sql

CREATE ROLE t30_approver LOGIN IN ROLE durable_job_operator;

CREATE FUNCTION pg_temp.record_migration(p_version integer) RETURNS bigint LANGUAGE sql AS $$
    SELECT durable_jobs.lock_evidence_order();
    INSERT INTO durable_jobs.control_evidence_record (evidence_kind, new_values, change_reason)
    VALUES ('migration_applied', pg_catalog.jsonb_build_object('migration_version', p_version), 'pgTAP 30: a migration')
    RETURNING evidence_record_id;
$$;

SELECT lives_ok($$SELECT pg_temp.record_migration(900)$$, 'a migration without ticket or approver is recorded as before');
SELECT results_eq($$SELECT change_ticket, change_approver FROM durable_jobs.control_evidence_record
                    ORDER BY evidence_record_id DESC LIMIT 1$$,
    $$VALUES (NULL::text, NULL::text)$$, 'with neither');

SELECT set_config('leasefence.migration_ticket', 'REL-30', true);
SELECT set_config('leasefence.migration_approver', 't30_approver', true);
SELECT lives_ok($$SELECT pg_temp.record_migration(901)$$, 'a migration with the ticket and approver leasectl set');
SELECT results_eq($$SELECT change_ticket, change_approver FROM durable_jobs.control_evidence_record
                    ORDER BY evidence_record_id DESC LIMIT 1$$,
    $$VALUES ('REL-30'::text, 't30_approver'::text)$$, 'records them');

SELECT set_config('leasefence.migration_ticket', 'not a ticket', true);
SELECT throws_ok($$SELECT pg_temp.record_migration(902)$$, 'LF002', NULL,
    'a ticket that does not match the change control refuses the migration');
SELECT set_config('leasefence.migration_ticket', '', true);
SELECT set_config('leasefence.migration_approver', '', true);
UPDATE durable_jobs.change_control_setting SET require_approver = true;
SELECT throws_ok($$SELECT pg_temp.record_migration(903)$$, 'LF002', NULL,
    'where change control requires an approver, a migration without one is refused');

SELECT * FROM finish();
ROLLBACK;
