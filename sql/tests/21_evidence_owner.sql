-- 21_evidence_owner: migration 014 gives the control evidence an owner of
-- its own. durable_jobs.control_evidence_record, its identity sequence and
-- its append-only guard refuse_evidence_change() are owned by
-- durable_job_evidence_owner: NOLOGIN, nothing elevated, no members, a
-- member of nothing, owning nothing else in the database and holding no
-- privilege of its own (not even USAGE on the schema), so nothing runs as it
-- and no login can act as the table's owner.
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
SELECT plan(9);

SELECT table_owner_is('durable_jobs', 'control_evidence_record', 'durable_job_evidence_owner',
    'the evidence table is owned by durable_job_evidence_owner, not by the role that applied the bundle');
SELECT sequence_owner_is('durable_jobs', 'control_evidence_record_evidence_record_id_seq', 'durable_job_evidence_owner',
    'the evidence table''s identity sequence has the same owner');
SELECT function_owner_is('durable_jobs', 'refuse_evidence_change', ARRAY[]::name[], 'durable_job_evidence_owner',
    'the append-only guard is owned by the table''s owner (AUDIT-EVIDENCE-TRIGGER)');

SELECT results_eq(
    $$SELECT r.rolcanlogin, r.rolsuper, r.rolcreatedb, r.rolcreaterole, r.rolbypassrls, r.rolreplication, r.rolinherit
      FROM pg_roles r WHERE r.rolname = 'durable_job_evidence_owner'$$,
    $$VALUES (false, false, false, false, false, false, true)$$,
    'durable_job_evidence_owner exists, cannot log in and holds no elevated attribute');
SELECT is_empty(
    $$SELECT m.member::regrole::text, m.roleid::regrole::text FROM pg_auth_members m
      WHERE 'durable_job_evidence_owner'::regrole IN (m.member, m.roleid)$$,
    'durable_job_evidence_owner has no members and is a member of no role');
SELECT set_eq(
    $$SELECT c.oid::regclass::text FROM pg_class c WHERE c.relowner = 'durable_job_evidence_owner'::regrole
        AND c.relnamespace <> 'pg_toast'::regnamespace
      UNION ALL
      SELECT p.oid::regprocedure::text FROM pg_proc p WHERE p.proowner = 'durable_job_evidence_owner'::regrole
      UNION ALL
      SELECT n.nspname::text FROM pg_namespace n WHERE n.nspowner = 'durable_job_evidence_owner'::regrole$$,
    $$VALUES ('durable_jobs.control_evidence_record'), ('durable_jobs.control_evidence_record_evidence_record_id_seq'),
             ('durable_jobs.control_evidence_record_pkey'), ('durable_jobs.refuse_evidence_change()')$$,
    'durable_job_evidence_owner owns the evidence table, its sequence and index and its guard, and nothing else (its TOAST table aside)');
SELECT ok(NOT has_schema_privilege('durable_job_evidence_owner', 'durable_jobs', 'USAGE')
          AND NOT has_schema_privilege('durable_job_evidence_owner', 'durable_jobs', 'CREATE'),
    'durable_job_evidence_owner holds no privilege on schema durable_jobs');
SELECT is_empty(
    $$SELECT p.oid::regprocedure::text FROM pg_proc p
      WHERE p.pronamespace = 'durable_jobs'::regnamespace
        AND p.proowner <> 'durable_job_evidence_owner'::regrole
        AND has_function_privilege('durable_job_evidence_owner', p.oid, 'EXECUTE')$$,
    'durable_job_evidence_owner can execute no function of the schema but its own guard');
-- Nothing the bundle runs as this role: no function runs with its rights.
SELECT is_empty(
    $$SELECT p.oid::regprocedure::text FROM pg_proc p
      WHERE p.proowner = 'durable_job_evidence_owner'::regrole AND p.prosecdef$$,
    'no SECURITY DEFINER function runs as durable_job_evidence_owner');

SELECT * FROM finish();
ROLLBACK;
