-- 31_failover_reclaim (migration 029): an expired claim lost with the
-- database (the server started after the claim, or its generation is of an
-- earlier WAL timeline) is reclaimed without costing an attempt, at most
-- three times a job, and counted as a failover_reclaim, not a reclaim. The
-- restart is played by moving the claim's time before the server's start;
-- a real promotion is internal/hatest's, the Go side
-- TestAClaimLostWithTheDatabaseCostsNoAttempt.
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
SELECT plan(6);
\ir fixture/fixture.sql

DO $setup$
BEGIN
    PERFORM durable_jobs.set_queue_lease_policy('t31.failover', interval '1 hour', interval '10 minutes',
                                                interval '2 hours', true, 'pgTAP 31: failover reclaims');
END
$setup$;
SELECT durable_jobs.enqueue_job('t31.failover', '{}'::jsonb, NULL, NULL, 1);

CREATE FUNCTION pg_temp.t31_claim() RETURNS integer LANGUAGE sql AS $$
    SELECT attempt_number FROM durable_jobs.claim_next_job('t31.failover', 'worker-a');
$$;
CREATE FUNCTION pg_temp.t31_lose() RETURNS void LANGUAGE sql AS $$
    UPDATE durable_jobs.job_record
    SET lease_claimed_at = pg_catalog.pg_postmaster_start_time() - interval '1 second',
        lease_expires_at = pg_catalog.statement_timestamp() - interval '1 second',
        lease_expiry_floor = pg_catalog.statement_timestamp() - interval '1 second'
    WHERE queue_name = 't31.failover';
$$;
CREATE FUNCTION pg_temp.t31_tally(p_kind text) RETURNS bigint LANGUAGE sql AS $$
    SELECT COALESCE(sum(t.outcome_count), 0)::bigint FROM durable_jobs.lease_outcome_tally t
    WHERE t.queue_name = 't31.failover' AND t.outcome_kind = p_kind;
$$;
GRANT EXECUTE ON FUNCTION pg_temp.t31_claim() TO durable_job_worker;

SET LOCAL ROLE durable_job_worker;
SELECT is(pg_temp.t31_claim(), 1, 'the first claim is attempt 1 of 1');
RESET ROLE;
SELECT pg_temp.t31_lose();
SET LOCAL ROLE durable_job_worker;
SELECT is(pg_temp.t31_claim(), 1, 'a claim lost with the database is reclaimed at the same attempt, though its attempts are used up');
RESET ROLE;
SELECT is(pg_temp.t31_tally('failover_reclaim'), 1::bigint, 'counted as a failover_reclaim');
SELECT is(pg_temp.t31_tally('reclaim'), 0::bigint, 'not as a reclaim');
SELECT is((SELECT failover_reclaims FROM durable_jobs.job_record WHERE queue_name = 't31.failover'), 1::smallint,
    'the job counts its failover reclaims');
SELECT pg_temp.t31_lose();
UPDATE durable_jobs.job_record SET failover_reclaims = 3 WHERE queue_name = 't31.failover';
SET LOCAL ROLE durable_job_worker;
SELECT pg_temp.t31_claim();
RESET ROLE;
SELECT is((SELECT job_status::text FROM durable_jobs.job_record WHERE queue_name = 't31.failover'), 'FAILED',
    'after three, a claim lost with the database costs an attempt like any reclaim: the job is failed');

SELECT * FROM finish();
ROLLBACK;
