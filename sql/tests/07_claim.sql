-- 07_claim: claim_next_job / claim_next_jobs create ownership only of due
-- jobs, return a fresh token once and store only its digest, take the lease
-- from the queue's policy (else '*'), reclaim expired RUNNING jobs with a new
-- token, attempt and generation, and move jobs whose attempts are used up to
-- FAILED without counting them. Claims run as durable_job_worker; one
-- 1.1 s sleep lets the 1 s leases of two queues expire.
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
SELECT plan(57);
\ir fixture/fixture.sql

CREATE TEMP TABLE jobs (label text PRIMARY KEY, job_record_id bigint) ON COMMIT DROP;
GRANT ALL ON jobs TO PUBLIC;

DO $setup$
BEGIN
    PERFORM durable_jobs.set_queue_lease_policy('claim_check_policy', interval '7 seconds', interval '2 seconds',
                                                interval '1 hour', true, 'pgTAP 07: a queue with its own policy');
    PERFORM durable_jobs.set_queue_lease_policy('claim_check_expiry', interval '1 second', interval '200 milliseconds',
                                                interval '1 hour', true, 'pgTAP 07: 1 s leases for reclaim');
    PERFORM durable_jobs.set_queue_lease_policy('claim_check_exhaust', interval '1 second', interval '200 milliseconds',
                                                interval '1 hour', true, 'pgTAP 07: 1 s leases for attempts used up');
END
$setup$;

INSERT INTO jobs VALUES
    ('default', durable_jobs.enqueue_job('claim_check_default', '{"claim": "default", "n": 1}'::jsonb)),
    ('future', durable_jobs.enqueue_job('claim_check_future', '{"claim": "future"}'::jsonb, NULL,
                                        clock_timestamp() + interval '1 hour')),
    ('policy', durable_jobs.enqueue_job('claim_check_policy', '{"claim": "policy"}'::jsonb)),
    ('batch_1', durable_jobs.enqueue_job('claim_check_batch', '{"batch": 1}'::jsonb)),
    ('batch_2', durable_jobs.enqueue_job('claim_check_batch', '{"batch": 2}'::jsonb)),
    ('batch_3', durable_jobs.enqueue_job('claim_check_batch', '{"batch": 3}'::jsonb)),
    ('expiry', durable_jobs.enqueue_job('claim_check_expiry', '{"claim": "expiry"}'::jsonb)),
    ('exhaust', durable_jobs.enqueue_job('claim_check_exhaust', '{"claim": "exhaust"}'::jsonb, NULL, NULL, 1)),
    ('exhaust_alone', durable_jobs.enqueue_job('claim_check_exhaust_alone', '{"claim": "alone"}'::jsonb, NULL, NULL, 1));
DO $setup$
BEGIN
    PERFORM durable_jobs.set_queue_lease_policy('claim_check_exhaust_alone', interval '1 second',
                                                interval '200 milliseconds', interval '1 hour', true,
                                                'pgTAP 07: 1 s leases, nothing else claimable');
END
$setup$;

SET LOCAL ROLE durable_job_worker;
SELECT pg_temp.claim_job('default', 'claim_check_default', 'worker-a');
SELECT pg_temp.claim_job('default_again', 'claim_check_default', 'worker-b');
SELECT pg_temp.claim_job('empty', 'claim_check_empty', 'worker-a');
SELECT pg_temp.claim_job('future', 'claim_check_future', 'worker-a');
SELECT pg_temp.claim_job('policy', 'claim_check_policy', 'worker-a');
SELECT pg_temp.claim_jobs('batch_of_2', 'claim_check_batch', 'worker-b', 2);
SELECT pg_temp.claim_jobs('batch_of_5', 'claim_check_batch', 'worker-b', 5);
SELECT pg_temp.claim_jobs('batch_drained', 'claim_check_batch', 'worker-b', 5);
SELECT pg_temp.claim_job('expiry_first', 'claim_check_expiry', 'worker-a');
SELECT pg_temp.claim_job('expiry_too_early', 'claim_check_expiry', 'worker-c');
SELECT pg_temp.claim_job('exhaust_first', 'claim_check_exhaust', 'worker-a');
SELECT pg_temp.claim_job('exhaust_alone_first', 'claim_check_exhaust_alone', 'worker-a');
RESET ROLE;

-- A due job behind the exhausted one: due just after the exhausted job's lease runs out.
INSERT INTO jobs VALUES
    ('exhaust_next', durable_jobs.enqueue_job('claim_check_exhaust', '{"claim": "exhaust next"}'::jsonb, NULL,
        (SELECT lease_expires_at + interval '1 millisecond' FROM claims WHERE label = 'exhaust_first')));

-- A fresh claim ------------------------------------------------------------------

SELECT is((SELECT job_record_id FROM claims WHERE label = 'default'),
          (SELECT job_record_id FROM jobs WHERE label = 'default'),
          'claim_next_job claims the due QUEUED job of the queue');
SELECT is((SELECT job_payload FROM claims WHERE label = 'default'), '{"claim": "default", "n": 1}'::jsonb,
          'the claim returns the job''s payload');
SELECT is((SELECT attempt_number FROM claims WHERE label = 'default'), 1, 'the first claim of a job is attempt 1');
SELECT is((SELECT lease_fencing_generation FROM claims WHERE label = 'default'), 1::bigint,
          'the first claim of a job is fencing generation 1');
SELECT ok((SELECT lease_claim_token IS NOT NULL AND database_time IS NOT NULL FROM claims WHERE label = 'default'),
          'the claim returns a token and the database time of the claim');
SELECT is((SELECT lease_expires_at - database_time FROM claims WHERE label = 'default'), interval '30 seconds',
          'without its own policy the lease is database_time + the ''*'' default of 30 s');
SELECT is((SELECT lease_renewal_interval FROM claims WHERE label = 'default'), interval '10 seconds',
          'without its own policy the renewal interval is the ''*'' default of 10 s');
SELECT ok((SELECT database_time BETWEEN now() AND clock_timestamp() FROM claims WHERE label = 'default'),
          'database_time is the database''s actual clock during this transaction');

SELECT results_eq(
    $$SELECT j.job_status::text, j.lease_owner_id, j.lease_claimed_by_role, j.lease_renewal_count, j.failure_reason_code
      FROM durable_jobs.job_record j WHERE j.job_record_id = (SELECT job_record_id FROM jobs WHERE label = 'default')$$,
    $$VALUES ('RUNNING'::text, 'worker-a'::text, session_user::text COLLATE "default", 0::bigint, NULL::text)$$,
    'the claimed job is RUNNING, owned by the worker id and the claiming login role, with no renewals yet');
SELECT ok((SELECT j.lease_claimed_at = c.database_time AND j.lease_expires_at = c.lease_expires_at
                  AND j.lease_claim_deadline = c.database_time + interval '24 hours'
                  AND j.attempt_number = c.attempt_number AND j.lease_fencing_generation = c.lease_fencing_generation
           FROM durable_jobs.job_record j JOIN claims c USING (job_record_id) WHERE c.label = 'default'),
          'the stored claim time, expiry, deadline (claim + 24 h), attempt and generation match what was returned');

-- The token: returned once, stored only as sha256(uuid_send(token)) --------------------

SELECT is((SELECT j.lease_claim_digest FROM durable_jobs.job_record j JOIN claims c USING (job_record_id)
           WHERE c.label = 'default'),
          (SELECT sha256(uuid_send(lease_claim_token)) FROM claims WHERE label = 'default'),
          'the database stores sha256(uuid_send(token)) as the claim digest');
SELECT is_empty(
    $$SELECT 1 FROM durable_jobs.job_record j, claims c
      WHERE c.label = 'default'
        AND (to_jsonb(j)::text ILIKE '%' || c.lease_claim_token::text || '%'
             OR to_jsonb(j)::text ILIKE '%' || replace(c.lease_claim_token::text, '-', '') || '%')$$,
    'no job_record column holds the token, as text or as its 16 bytes');
SELECT is_empty(
    $$SELECT 1 FROM claims c
      WHERE c.label = 'default'
        AND (EXISTS (SELECT 1 FROM durable_jobs.job_outcome_ledger l WHERE to_jsonb(l)::text ILIKE '%' || c.lease_claim_token::text || '%')
             OR EXISTS (SELECT 1 FROM durable_jobs.control_evidence_record e WHERE to_jsonb(e)::text ILIKE '%' || c.lease_claim_token::text || '%')
             OR EXISTS (SELECT 1 FROM durable_jobs.lease_outcome_tally t WHERE to_jsonb(t)::text ILIKE '%' || c.lease_claim_token::text || '%')
             OR EXISTS (SELECT 1 FROM durable_jobs.job_payload_record p WHERE p.job_payload::text ILIKE '%' || c.lease_claim_token::text || '%'))$$,
    'no other table holds the token either');
SELECT is_empty($$SELECT * FROM claims WHERE label = 'default_again'$$,
    'a RUNNING job whose lease has not expired is not claimable, so its token is returned only once');

-- Nothing claimable ---------------------------------------------------------------------

SELECT is_empty($$SELECT * FROM claims WHERE label = 'empty'$$, 'an empty queue gives zero rows');
SELECT is_empty($$SELECT * FROM claims WHERE label = 'future'$$,
    'a job is not claimed before its run_after time');
SELECT results_eq(
    $$SELECT j.job_status::text, j.attempt_number, j.lease_fencing_generation FROM durable_jobs.job_record j
      WHERE j.job_record_id = (SELECT job_record_id FROM jobs WHERE label = 'future')$$,
    $$VALUES ('QUEUED'::text, 0, 0::bigint)$$,
    'a claim attempt before run_after leaves the job QUEUED with no attempt used');
INSERT INTO jobs VALUES ('future_due', durable_jobs.enqueue_job('claim_check_future', '{"claim": "due"}'::jsonb));
SET LOCAL ROLE durable_job_worker;
SELECT is((SELECT c.job_record_id FROM durable_jobs.claim_next_job('claim_check_future', 'worker-a') c),
          (SELECT job_record_id FROM jobs WHERE label = 'future_due'),
          'a due job is claimed while a job of the same queue that is not yet due is passed over');
RESET ROLE;

-- The queue's own policy ---------------------------------------------------------------

SELECT is((SELECT lease_expires_at - database_time FROM claims WHERE label = 'policy'), interval '7 seconds',
          'a queue with its own policy gets lease_expires_at = database_time + its 7 s lease');
SELECT is((SELECT lease_renewal_interval FROM claims WHERE label = 'policy'), interval '2 seconds',
          'a queue with its own policy gets its own 2 s renewal interval');
SELECT is((SELECT j.lease_claim_deadline - c.database_time FROM durable_jobs.job_record j JOIN claims c USING (job_record_id)
           WHERE c.label = 'policy'),
          interval '1 hour', 'the claim deadline is the claim time plus the queue''s max_claim_lifetime');

-- claim_next_jobs ---------------------------------------------------------------------------

SELECT is((SELECT count(*)::integer FROM claims WHERE label = 'batch_of_2'), 2,
          'claim_next_jobs with p_max_jobs 2 claims 2 of the 3 due jobs');
SELECT is((SELECT count(*)::integer FROM claims WHERE label = 'batch_of_5'), 1,
          'claim_next_jobs with p_max_jobs 5 returns the 1 job left, not more');
SELECT is_empty($$SELECT * FROM claims WHERE label = 'batch_drained'$$,
    'claim_next_jobs on a drained queue gives zero rows');
SELECT set_eq($$SELECT job_record_id FROM claims WHERE label IN ('batch_of_2', 'batch_of_5')$$,
              $$SELECT job_record_id FROM jobs WHERE label LIKE 'batch\_%'$$,
              'the batch claims together cover each job of the queue exactly once');
SELECT is((SELECT count(DISTINCT lease_claim_token)::integer FROM claims WHERE label IN ('batch_of_2', 'batch_of_5')), 3,
          'each job claimed by claim_next_jobs gets its own token');
SELECT is_empty(
    $$SELECT c.job_record_id FROM claims c JOIN durable_jobs.job_record j USING (job_record_id)
      WHERE c.label IN ('batch_of_2', 'batch_of_5')
        AND (j.lease_claim_digest IS DISTINCT FROM sha256(uuid_send(c.lease_claim_token))
             OR j.job_status <> 'RUNNING' OR j.lease_owner_id <> 'worker-b'
             OR c.attempt_number <> 1 OR c.lease_fencing_generation <> 1
             OR c.lease_expires_at <> c.database_time + interval '30 seconds'
             OR c.lease_renewal_interval <> interval '10 seconds')$$,
    'every batch claim is its own RUNNING claim: own digest, attempt 1, generation 1, policy lease and interval');
SELECT set_eq($$SELECT job_payload FROM claims WHERE label IN ('batch_of_2', 'batch_of_5')$$,
              $$VALUES ('{"batch": 1}'::jsonb), ('{"batch": 2}'::jsonb), ('{"batch": 3}'::jsonb)$$,
              'claim_next_jobs returns each claimed job''s own payload');
SELECT is(pg_get_function_result('durable_jobs.claim_next_jobs(text,text,integer)'::regprocedure),
          pg_get_function_result('durable_jobs.claim_next_job(text,text)'::regprocedure),
          'claim_next_jobs has the same column names, types and order as claim_next_job');

-- A 1 s lease that has not expired yet --------------------------------------------------------

SELECT is_empty($$SELECT * FROM claims WHERE label = 'expiry_too_early'$$,
    'a RUNNING job whose 1 s lease has not yet expired is not reclaimable');
SELECT is((SELECT lease_expires_at - database_time FROM claims WHERE label = 'expiry_first'), interval '1 second',
          'the 1 s policy gives a 1 s lease');

DO $wait$ BEGIN PERFORM pg_sleep(1.1); END $wait$;

SELECT ok((SELECT lease_expires_at < clock_timestamp() FROM claims WHERE label = 'expiry_first'),
          'after 1.1 s the first claim''s lease has expired by database time');
SELECT is((SELECT j.job_status::text FROM durable_jobs.job_record j
           WHERE j.job_record_id = (SELECT job_record_id FROM jobs WHERE label = 'expiry')),
          'RUNNING', 'an expired claim that nobody has reclaimed still shows RUNNING');

SET LOCAL ROLE durable_job_worker;
SELECT pg_temp.claim_job('expiry_reclaim', 'claim_check_expiry', 'worker-c');
SELECT pg_temp.claim_jobs('exhaust_reclaim', 'claim_check_exhaust', 'worker-c', 1);
SELECT pg_temp.claim_job('exhaust_alone_reclaim', 'claim_check_exhaust_alone', 'worker-c');
RESET ROLE;

-- Reclaim of an expired RUNNING job ---------------------------------------------------------------

SELECT is((SELECT job_record_id FROM claims WHERE label = 'expiry_reclaim'),
          (SELECT job_record_id FROM jobs WHERE label = 'expiry'),
          'a RUNNING job whose lease expired is reclaimed by the next claim');
SELECT isnt((SELECT lease_claim_token FROM claims WHERE label = 'expiry_reclaim'),
            (SELECT lease_claim_token FROM claims WHERE label = 'expiry_first'),
            'the reclaim returns a new token');
SELECT is((SELECT attempt_number FROM claims WHERE label = 'expiry_reclaim'), 2, 'the reclaim uses attempt 2');
SELECT is((SELECT lease_fencing_generation FROM claims WHERE label = 'expiry_reclaim'), 2::bigint,
          'the reclaim raises the fencing generation to 2');
SELECT is((SELECT lease_expires_at - database_time FROM claims WHERE label = 'expiry_reclaim'), interval '1 second',
          'the reclaim gets a fresh lease of the policy''s length from its own database time');
SELECT ok((SELECT r.database_time > f.lease_expires_at FROM claims r, claims f
           WHERE r.label = 'expiry_reclaim' AND f.label = 'expiry_first'),
          'the reclaim happened after the first lease expired');
SELECT results_eq(
    $$SELECT j.lease_claim_digest, j.lease_owner_id, j.lease_renewal_count
      FROM durable_jobs.job_record j WHERE j.job_record_id = (SELECT job_record_id FROM jobs WHERE label = 'expiry')$$,
    $$SELECT sha256(uuid_send(lease_claim_token)), 'worker-c'::text, 0::bigint FROM claims WHERE label = 'expiry_reclaim'$$,
    'after the reclaim the job stores the new token''s digest and the new owner, with its renewal count at 0');
SELECT isnt((SELECT j.lease_claim_digest FROM durable_jobs.job_record j
             WHERE j.job_record_id = (SELECT job_record_id FROM jobs WHERE label = 'expiry')),
            (SELECT sha256(uuid_send(lease_claim_token)) FROM claims WHERE label = 'expiry_first'),
            'the first token''s digest is no longer stored after the reclaim');
SELECT is(pg_temp.tally('claim_check_expiry', 'reclaim'),
          1::bigint, 'the reclaim is tallied once as a reclaim of its queue');
SELECT is((SELECT COALESCE(sum(t.outcome_count), 0)::integer FROM durable_jobs.lease_outcome_tally t
           WHERE t.queue_name IN ('claim_check_default', 'claim_check_batch', 'claim_check_policy')
             AND t.outcome_kind = 'reclaim'),
          0, 'fresh claims are not tallied as reclaims');

-- Attempts used up on reclaim --------------------------------------------------------------------

SELECT is((SELECT count(*)::integer FROM claims WHERE label = 'exhaust_reclaim'), 1,
          'claim_next_jobs(1) still returns one job when the first candidate had its attempts used up');
SELECT is((SELECT job_record_id FROM claims WHERE label = 'exhaust_reclaim'),
          (SELECT job_record_id FROM jobs WHERE label = 'exhaust_next'),
          'the job moved to FAILED does not count toward p_max_jobs: the next due job is claimed instead');
SELECT results_eq(
    $$SELECT j.job_status::text, j.failure_reason_code, j.lease_expires_at, j.attempt_number, j.lease_fencing_generation
      FROM durable_jobs.job_record j WHERE j.job_record_id = (SELECT job_record_id FROM jobs WHERE label = 'exhaust')$$,
    $$VALUES ('FAILED'::text, 'attempts_exhausted'::text, NULL::timestamptz, 1, 1::bigint)$$,
    'an expired job with its attempts used up is FAILED with attempts_exhausted, no lease, no new attempt or generation');
SELECT is_empty($$SELECT * FROM claims WHERE label = 'exhaust_alone_reclaim'$$,
    'when the only candidate has its attempts used up, the claim gives zero rows');
SELECT results_eq(
    $$SELECT j.job_status::text, j.failure_reason_code FROM durable_jobs.job_record j
      WHERE j.job_record_id = (SELECT job_record_id FROM jobs WHERE label = 'exhaust_alone')$$,
    $$VALUES ('FAILED'::text, 'attempts_exhausted'::text)$$,
    'claim_next_job also moves an exhausted expired job to FAILED with attempts_exhausted');
SET LOCAL ROLE durable_job_worker;
SELECT is_empty($$SELECT * FROM durable_jobs.claim_next_job('claim_check_exhaust_alone', 'worker-c')$$,
    'a job FAILED for attempts_exhausted is never claimed again');
RESET ROLE;

-- Ownership is bound to the claiming login role -------------------------------------------------

CREATE ROLE t_claim_other_login LOGIN IN ROLE durable_job_worker;
INSERT INTO jobs VALUES ('other_login', durable_jobs.enqueue_job('claim_check_login', '{}'::jsonb));
SET SESSION AUTHORIZATION t_claim_other_login;
SELECT pg_temp.claim_job('other_login', 'claim_check_login', 'worker-d');
RESET SESSION AUTHORIZATION;
SELECT is((SELECT j.lease_claimed_by_role FROM durable_jobs.job_record j
           WHERE j.job_record_id = (SELECT job_record_id FROM jobs WHERE label = 'other_login')),
          't_claim_other_login', 'the claim records the login role (session_user) that made it');

-- Malformed input is refused with LF003 -------------------------------------------------------------

SET LOCAL ROLE durable_job_worker;
SELECT throws_ok($$SELECT * FROM durable_jobs.claim_next_jobs('claim_check_batch', 'worker-a', 0)$$, 'LF003', NULL,
    'p_max_jobs 0 is refused with LF003');
SELECT throws_ok($$SELECT * FROM durable_jobs.claim_next_jobs('claim_check_batch', 'worker-a', 1001)$$, 'LF003', NULL,
    'p_max_jobs 1001 is refused with LF003');
SELECT throws_ok($$SELECT * FROM durable_jobs.claim_next_jobs('claim_check_batch', 'worker-a', NULL)$$, 'LF003', NULL,
    'a NULL p_max_jobs is refused with LF003');
SELECT lives_ok($$SELECT * FROM durable_jobs.claim_next_jobs('claim_check_batch', 'worker-a', 1000)$$,
    'p_max_jobs 1000 is accepted');
SELECT throws_ok($$SELECT * FROM durable_jobs.claim_next_job('Claim Check', 'worker-a')$$, 'LF003', NULL,
    'a malformed queue name is refused with LF003');
SELECT throws_ok($$SELECT * FROM durable_jobs.claim_next_job('claim_check_default', '-worker')$$, 'LF003', NULL,
    'a malformed worker owner id is refused with LF003');
SELECT throws_ok($$SELECT * FROM durable_jobs.claim_next_job('claim_check_default', NULL)$$, 'LF003', NULL,
    'a NULL worker owner id is refused with LF003');
RESET ROLE;

SELECT * FROM finish();
ROLLBACK;
