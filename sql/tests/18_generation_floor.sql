-- 18_generation_floor: the trigger of migration 011
-- (functions/generation_floor.sql). A claim's fencing generation is at
-- least the WAL timeline's floor, ((timeline - 1) << 40) + 1, and a claim
-- sets synchronous_commit to local for its own transaction unless it is
-- already off or local; a renewal (the generation unchanged) and a lowered
-- generation do not fire it. The throwaway cluster runs on timeline 1
-- (floor 1); a generation below the floor is made by the superuser with
-- negative values, which no claim can produce. The promoted-timeline case
-- runs against a real standby in sql/integration/failover_test.go.
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
SELECT plan(14);

CREATE TEMP TABLE t18_job (label text PRIMARY KEY, job_record_id bigint) ON COMMIT DROP;
CREATE TEMP TABLE t18_claim (label text PRIMARY KEY, job_record_id bigint, lease_claim_token uuid,
                             lease_fencing_generation bigint, sync_after text) ON COMMIT DROP;
GRANT ALL ON t18_job, t18_claim TO PUBLIC;
CREATE FUNCTION pg_temp.t18_floor() RETURNS bigint LANGUAGE sql VOLATILE AS $$
    SELECT ((('x' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))::bit(32)::bigint - 1) << 40) + 1;
$$;
-- Claims the job of queue t18.<label> as durable_job_worker with
-- synchronous_commit set to p_sync first, and records the claim with the
-- setting in force right after it.
CREATE FUNCTION pg_temp.t18_claim_with(p_label text, p_sync text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    PERFORM set_config('synchronous_commit', p_sync, true);
    SET LOCAL ROLE durable_job_worker;
    INSERT INTO t18_claim SELECT p_label, c.job_record_id, c.lease_claim_token, c.lease_fencing_generation,
                                 current_setting('synchronous_commit')
    FROM durable_jobs.claim_next_job('t18.' || p_label, 'worker-18') c;
    RESET ROLE;
END;
$$;

INSERT INTO t18_job VALUES
    ('plain', durable_jobs.enqueue_job('t18.plain', '{"n": 1}'::jsonb)),
    ('sync', durable_jobs.enqueue_job('t18.sync', '{"n": 2}'::jsonb)),
    ('below', durable_jobs.enqueue_job('t18.below', '{"n": 3}'::jsonb));

-- A claim with synchronous_commit off (the test clusters' setting): the
-- generation is raised from 0 past the floor, the setting stays off.
SELECT pg_temp.t18_claim_with('plain', 'off');
SELECT is((SELECT lease_fencing_generation FROM t18_claim WHERE label = 'plain'), greatest(1, pg_temp.t18_floor()),
          'a first claim gets generation 1 on timeline 1, the floor on a later timeline');
SELECT is((SELECT sync_after FROM t18_claim WHERE label = 'plain'), 'off',
          'a claim leaves synchronous_commit off when it was off');

-- A claim with synchronous_commit on: set to local for the transaction.
SELECT pg_temp.t18_claim_with('sync', 'on');
SELECT is((SELECT sync_after FROM t18_claim WHERE label = 'sync'), 'local',
          'a claim sets synchronous_commit to local, so its COMMIT does not wait for a synchronous standby');
SELECT is(current_setting('synchronous_commit'), 'local',
          'the setting outlives the definer function (its SET clause restores only search_path) for the rest of the transaction');

-- A renewal does not change the generation and does not fire the trigger.
SET LOCAL synchronous_commit = remote_apply;
SET LOCAL ROLE durable_job_worker;
SELECT ok((SELECT durable_jobs.renew_job_lease(c.job_record_id, c.lease_claim_token, 'worker-18') IS NOT NULL
           FROM t18_claim c WHERE c.label = 'sync'), 'the claim renews');
RESET ROLE;
SELECT is(current_setting('synchronous_commit'), 'remote_apply',
          'a renewal leaves synchronous_commit as it was: renewals and terminal writes still wait for the standby');
SELECT is((SELECT j.lease_fencing_generation FROM durable_jobs.job_record j JOIN t18_claim c USING (job_record_id)
           WHERE c.label = 'sync'),
          (SELECT lease_fencing_generation FROM t18_claim WHERE label = 'sync'),
          'a renewal keeps the generation');

-- A generation below the floor (only the superuser can write one): a
-- lowered value is left alone, a raised one is lifted to the floor.
UPDATE durable_jobs.job_record SET lease_fencing_generation = -10
WHERE job_record_id = (SELECT job_record_id FROM t18_job WHERE label = 'below');
SELECT is((SELECT lease_fencing_generation FROM durable_jobs.job_record
           WHERE job_record_id = (SELECT job_record_id FROM t18_job WHERE label = 'below')),
          -10::bigint, 'lowering the generation does not fire the trigger');
SET LOCAL synchronous_commit = local;
UPDATE durable_jobs.job_record SET lease_fencing_generation = -9
WHERE job_record_id = (SELECT job_record_id FROM t18_job WHERE label = 'below');
SELECT is((SELECT lease_fencing_generation FROM durable_jobs.job_record
           WHERE job_record_id = (SELECT job_record_id FROM t18_job WHERE label = 'below')),
          pg_temp.t18_floor(), 'a raised generation below the floor is lifted to the floor');
SELECT is(current_setting('synchronous_commit'), 'local', 'synchronous_commit already local stays local');

-- The function: definer, owned by the claim owner, pinned search_path, no EXECUTE for anyone.
SELECT is_definer('durable_jobs', 'raise_generation_to_floor', ARRAY[]::name[],
                  'raise_generation_to_floor is SECURITY DEFINER');
SELECT function_owner_is('durable_jobs', 'raise_generation_to_floor', ARRAY[]::name[], 'durable_job_claim_owner',
                         'raise_generation_to_floor is owned by durable_job_claim_owner, like the claim functions');
SELECT is((SELECT proconfig FROM pg_proc WHERE oid = 'durable_jobs.raise_generation_to_floor()'::regprocedure),
          ARRAY['search_path=pg_catalog, pg_temp'], 'raise_generation_to_floor pins search_path');
SELECT is((SELECT tgenabled::text FROM pg_trigger
           WHERE tgrelid = 'durable_jobs.job_record'::regclass AND tgname = 'job_record_generation_floor'),
          'O', 'the generation-floor trigger fires in every session');

SELECT * FROM finish();
ROLLBACK;
