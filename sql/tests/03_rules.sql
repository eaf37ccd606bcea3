-- 03_rules: migration 016 (rules.sql). Each rule several functions apply is
-- one SQL function: queue_name_pattern / queue_name_is_well_formed,
-- worker_owner_id_pattern / worker_owner_id_is_well_formed,
-- effective_lease_policy_queue and, since migration 021,
-- failure_reason_code_pattern / failure_reason_code_is_well_formed. They are LANGUAGE sql with a body bound at
-- creation, not SECURITY DEFINER, without SET and not STRICT, so PostgreSQL
-- inlines them: EXPLAIN shows no call, and a claim, renewals and a batch
-- completion with track_functions = 'all' count no call of any of them.
-- PostgreSQL inlines only for a role that may execute the function: the
-- definer roles that use them may, PUBLIC and the runtime roles may not
-- (EXPLAIN as a worker shows the call). The policy tables' CHECKs that
-- repeat the queue-name pattern hold exactly queue_name_pattern's text;
-- since migration 018 the two tests, require_well_formed and job_record's
-- CHECKs match without a bounded repeat (functions/rules.sql says why), and each
-- of them answers every edge case as the contract's pattern does.
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
SELECT plan(34);

CREATE TEMP TABLE rule_function (signature text PRIMARY KEY, volatility "char" NOT NULL) ON COMMIT DROP;
INSERT INTO rule_function VALUES
 ('durable_jobs.queue_name_pattern()', 'i'),
 ('durable_jobs.queue_name_is_well_formed(text)', 'i'),
 ('durable_jobs.worker_owner_id_pattern()', 'i'),
 ('durable_jobs.worker_owner_id_is_well_formed(text)', 'i'),
 ('durable_jobs.effective_lease_policy_queue(text)', 's'),
 ('durable_jobs.failure_reason_code_pattern()', 'i'),
 ('durable_jobs.failure_reason_code_is_well_formed(text)', 'i');
GRANT SELECT ON rule_function TO PUBLIC;

-- explain_text: the EXPLAIN (VERBOSE, COSTS OFF) output of p_query, one text.
CREATE FUNCTION pg_temp.explain_text(p_query text)
RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    v_line text;
    v_out text := '';
BEGIN
    FOR v_line IN EXECUTE 'EXPLAIN (VERBOSE, COSTS OFF) ' || p_query LOOP
        v_out := v_out || v_line || E'\n';
    END LOOP;
    RETURN v_out;
END;
$$;
GRANT EXECUTE ON FUNCTION pg_temp.explain_text(text) TO PUBLIC;

-- What makes them inlinable ---------------------------------------------------------

SELECT is((SELECT count(*)::integer FROM rule_function r JOIN pg_proc p ON p.oid = r.signature::regprocedure
           WHERE p.prolang = (SELECT oid FROM pg_language WHERE lanname = 'sql')
             AND NOT p.prosecdef AND p.proconfig IS NULL AND NOT p.proisstrict
             AND p.provolatile = r.volatility AND p.prosqlbody IS NOT NULL),
    7, 'the seven rule functions are LANGUAGE sql bodies bound at creation, not SECURITY DEFINER, without SET, not STRICT, IMMUTABLE (the patterns) or STABLE (the policy)');
SELECT is((SELECT count(DISTINCT p.proowner)::integer FROM rule_function r JOIN pg_proc p ON p.oid = r.signature::regprocedure
           WHERE p.proowner = (SELECT h.proowner FROM pg_proc h WHERE h.oid = 'durable_jobs.require_well_formed(text,text,text)'::regprocedure)),
    1, 'they are owned by the role that owns the other private helpers');
SELECT is_empty($$SELECT r.signature FROM rule_function r
                  WHERE has_function_privilege('public', r.signature, 'EXECUTE')
                     OR has_function_privilege('durable_job_worker', r.signature, 'EXECUTE')
                     OR has_function_privilege('durable_job_producer', r.signature, 'EXECUTE')
                     OR has_function_privilege('durable_job_operator', r.signature, 'EXECUTE')
                     OR has_function_privilege('durable_job_auditor', r.signature, 'EXECUTE')$$,
    'neither PUBLIC nor a runtime role may execute a rule function');
SELECT ok(has_function_privilege('durable_job_claim_owner', 'durable_jobs.effective_lease_policy_queue(text)', 'EXECUTE')
      AND has_function_privilege('durable_job_renewal_owner', 'durable_jobs.effective_lease_policy_queue(text)', 'EXECUTE')
      AND has_function_privilege('durable_job_audit_owner', 'durable_jobs.effective_lease_policy_queue(text)', 'EXECUTE')
      AND has_function_privilege('durable_job_policy_owner', 'durable_jobs.effective_lease_policy_queue(text)', 'EXECUTE')
      AND has_function_privilege('durable_job_claim_owner', 'durable_jobs.queue_name_is_well_formed(text)', 'EXECUTE')
      AND has_function_privilege('durable_job_renewal_owner', 'durable_jobs.worker_owner_id_is_well_formed(text)', 'EXECUTE')
      AND has_function_privilege('durable_job_terminal_owner', 'durable_jobs.worker_owner_id_is_well_formed(text)', 'EXECUTE')
      AND has_function_privilege('durable_job_terminal_owner', 'durable_jobs.failure_reason_code_is_well_formed(text)', 'EXECUTE'),
    'the definer roles whose functions use a rule may execute it (PostgreSQL inlines only then)');

-- Inlined: EXPLAIN shows no call --------------------------------------------------

CREATE TEMP TABLE t03_plan (label text PRIMARY KEY, plan_text text NOT NULL) ON COMMIT DROP;
GRANT ALL ON t03_plan TO PUBLIC;
SET LOCAL ROLE durable_job_claim_owner;
INSERT INTO t03_plan VALUES
 ('queue', pg_temp.explain_text($$SELECT durable_jobs.queue_name_is_well_formed(r.signature) FROM rule_function r$$)),
 ('owner', pg_temp.explain_text($$SELECT durable_jobs.worker_owner_id_is_well_formed(r.signature) FROM rule_function r$$)),
 ('reason', pg_temp.explain_text($$SELECT durable_jobs.failure_reason_code_is_well_formed(r.signature) FROM rule_function r$$)),
 ('policy', pg_temp.explain_text($$SELECT p.lease_duration FROM durable_jobs.effective_lease_policy_queue('t03_queue') e
                                  JOIN durable_jobs.queue_lease_policy p ON p.queue_name = e.policy_queue_name$$));
RESET ROLE;
SELECT unalike((SELECT plan_text FROM t03_plan WHERE label = 'queue'), '%is_well_formed%',
    'as the claim owner, queue_name_is_well_formed is inlined (no call in the plan)');
SELECT alike((SELECT plan_text FROM t03_plan WHERE label = 'queue'), '%octet_length%<= 63%~%^[a-z][a-z0-9_.:-]*$%',
    'the plan holds the test itself (the length, then the pattern without its bounded repeat)');
SELECT unalike((SELECT plan_text FROM t03_plan WHERE label = 'owner'), '%is_well_formed%',
    'worker_owner_id_is_well_formed is inlined');
SELECT unalike((SELECT plan_text FROM t03_plan WHERE label = 'reason'), '%is_well_formed%',
    'failure_reason_code_is_well_formed is inlined');
SELECT unalike((SELECT plan_text FROM t03_plan WHERE label = 'policy'), '%Function Scan%',
    'effective_lease_policy_queue in FROM is inlined (no Function Scan)');
SET LOCAL ROLE durable_job_worker;
SELECT throws_ok($$SELECT pg_temp.explain_text('SELECT durable_jobs.queue_name_is_well_formed(r.signature) FROM rule_function r')$$,
    '42501', 'permission denied for function queue_name_is_well_formed',
    'for a role that may not execute it, it is not inlined: even planning it checks the privilege (so the grants above matter)');
RESET ROLE;

-- Inlined on the hot paths: no call counted with track_functions = 'all' ------------
-- The first call of a function in a session plans its statements and folds
-- the zero-argument pattern functions to constants then (PostgreSQL runs
-- an IMMUTABLE function of constants once at planning); round 1 is that
-- first call. Round 2, on the cached plans, must count no call at all.

SET LOCAL track_functions = 'all';
CREATE TEMP TABLE t03_claim (round integer, job_record_id bigint, lease_claim_token uuid) ON COMMIT DROP;
CREATE TEMP TABLE t03_calls (round integer, funcid oid, calls bigint) ON COMMIT DROP;
GRANT ALL ON t03_claim, t03_calls TO PUBLIC;
SELECT durable_jobs.set_queue_lease_policy('t03_own', interval '30 seconds', interval '10 seconds', interval '1 hour', true,
    'pgTAP 03: a queue with its own policy');
SELECT durable_jobs.enqueue_job('t03_own', jsonb_build_object('n', n)) FROM generate_series(1, 2) n;
SELECT durable_jobs.enqueue_job('t03_default', jsonb_build_object('n', n)) FROM generate_series(1, 2) n;

CREATE FUNCTION pg_temp.t03_round(p_round integer)
RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    v_ids bigint[];
    v_tokens uuid[];
    v_out text;
BEGIN
    INSERT INTO t03_claim SELECT p_round, c.job_record_id, c.lease_claim_token
    FROM durable_jobs.claim_next_job('t03_own', 'worker-25') c;
    INSERT INTO t03_claim SELECT p_round, c.job_record_id, c.lease_claim_token
    FROM durable_jobs.claim_next_jobs('t03_default', 'worker-25', 1) c;
    SELECT array_agg(job_record_id ORDER BY job_record_id), array_agg(lease_claim_token ORDER BY job_record_id)
    INTO v_ids, v_tokens FROM t03_claim WHERE round = p_round;
    SELECT string_agg(r.renewal_outcome, ',' ORDER BY c.job_record_id) INTO v_out
    FROM t03_claim c CROSS JOIN LATERAL durable_jobs.renew_job_lease(c.job_record_id, c.lease_claim_token, 'worker-25') r
    WHERE c.round = p_round;
    SELECT v_out || ' ' || string_agg(r.renewal_outcome, ',' ORDER BY r.job_record_id) INTO v_out
    FROM durable_jobs.renew_job_leases('worker-25', v_ids, v_tokens) r;
    SELECT v_out || ' ' || count(*) INTO v_out FROM durable_jobs.complete_jobs('worker-25', v_ids, v_tokens);
    INSERT INTO t03_calls SELECT p_round, s.funcid, s.calls FROM pg_stat_xact_user_functions s;
    RETURN v_out;
END;
$$;
GRANT EXECUTE ON FUNCTION pg_temp.t03_round(integer) TO PUBLIC;

SET LOCAL ROLE durable_job_worker;
SELECT is(pg_temp.t03_round(1), 'renewed,renewed renewed,renewed 2',
    'round 1: a claim of a queue with its own policy and one of the default''s, renewed one by one and as a batch, completed');
SELECT is(pg_temp.t03_round(2), 'renewed,renewed renewed,renewed 2', 'round 2: the same again');
RESET ROLE;
SELECT is((SELECT count(*)::integer FROM t03_calls a JOIN t03_calls b ON b.funcid = a.funcid AND b.round = 2
           WHERE a.round = 1 AND b.calls > a.calls
             AND a.funcid IN ('durable_jobs.claim_next_jobs(text,text,integer)'::regprocedure,
                              'durable_jobs.renew_job_lease(bigint,uuid,text)'::regprocedure,
                              'durable_jobs.renew_job_leases(text,bigint[],uuid[])'::regprocedure,
                              'durable_jobs.complete_jobs(text,bigint[],uuid[],jsonb[])'::regprocedure)),
    4, 'track_functions counts round 2''s calls of claim_next_jobs, both renewals and complete_jobs');
SELECT is_empty($$SELECT r.signature FROM rule_function r
                  WHERE (SELECT b.calls FROM t03_calls b WHERE b.round = 2 AND b.funcid = r.signature::regprocedure)
                        IS DISTINCT FROM (SELECT a.calls FROM t03_calls a WHERE a.round = 1 AND a.funcid = r.signature::regprocedure)$$,
    'and round 2 made no call of any rule function: each is inlined into the claim, the renewals and the completion');
SELECT is_empty($$SELECT r.signature FROM rule_function r JOIN t03_calls a ON a.funcid = r.signature::regprocedure
                  WHERE r.signature NOT LIKE '%pattern()'$$,
    'not even round 1 called queue_name_is_well_formed, worker_owner_id_is_well_formed or effective_lease_policy_queue');
INSERT INTO t03_calls SELECT 3, s.funcid, s.calls FROM pg_stat_xact_user_functions s;
SELECT is((SELECT count(*)::integer FROM durable_jobs.lease_health_by_queue() h WHERE h.queue_name IN ('t03_own', 't03_default')),
    2, 'lease_health_by_queue reads the effective policy of both queues');
SELECT is_empty($$SELECT s.funcname FROM pg_stat_xact_user_functions s JOIN rule_function r ON s.funcid = r.signature::regprocedure
                  WHERE s.calls IS DISTINCT FROM (SELECT c.calls FROM t03_calls c WHERE c.round = 3 AND c.funcid = s.funcid)$$,
    'lease_health_by_queue calls no rule function either');

-- One pattern: the table CHECKs and the rules agree ---------------------------------

SELECT is((SELECT array_agg(DISTINCT substring(pg_get_constraintdef(c.oid) FROM $re$'(\^[^']*\$)'$re$))
           FROM pg_constraint c
           WHERE c.conname IN ('queue_lease_policy_queue_name_format', 'queue_retention_policy_queue_name_format')),
    ARRAY[durable_jobs.queue_name_pattern()],
    'the two policy tables'' queue-name CHECKs hold exactly queue_name_pattern()');
SELECT is((SELECT count(*)::integer FROM pg_constraint c
           WHERE c.conname IN ('job_record_queue_name_format', 'queue_lease_policy_queue_name_format',
                               'queue_retention_policy_queue_name_format', 'job_record_failure_reason_code_format')),
    4, 'all four CHECKs exist');

-- No bounded repeat on the hot path (migration 018): PostgreSQL's regex
-- engine pays for {0,62} / {0,127} on every match (3 to 7 us a short name
-- against 0.2 to 0.5 without), so neither the two tests inlined into every
-- claim, renewal and completion nor the CHECKs evaluated on every UPDATE
-- of job_record may match with one.
SELECT is_empty($$SELECT p.oid::regprocedure::text FROM pg_proc p
                  WHERE p.oid IN ('durable_jobs.queue_name_is_well_formed(text)'::regprocedure,
                                  'durable_jobs.worker_owner_id_is_well_formed(text)'::regprocedure,
                                  'durable_jobs.failure_reason_code_is_well_formed(text)'::regprocedure,
                                  'durable_jobs.require_well_formed(text,text,text)'::regprocedure)
                    AND regexp_replace(pg_get_functiondef(p.oid), 'HINT.*$', '', 's') ~ '[{][0-9]+,[0-9]+[}]'
                  UNION ALL
                  SELECT c.conname::text FROM pg_constraint c
                  WHERE c.conrelid = 'durable_jobs.job_record'::regclass AND c.contype = 'c'
                    AND pg_get_constraintdef(c.oid) ~ '[{][0-9]+,[0-9]+[}]'$$,
    'no rule test, no require_well_formed match and no CHECK of job_record matches with a bounded repeat');

-- check_accepts: whether CHECK p_conname of job_record lets p_value through
-- as its column p_column (NULL, like true, passes).
CREATE FUNCTION pg_temp.check_accepts(p_conname text, p_column text, p_value text)
RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
    v_expr text;
    v_ok boolean;
BEGIN
    SELECT substring(pg_get_constraintdef(c.oid) FROM 'CHECK (.*)$') INTO STRICT v_expr
    FROM pg_constraint c WHERE c.conrelid = 'durable_jobs.job_record'::regclass AND c.conname = p_conname;
    EXECUTE 'SELECT ' || replace(v_expr, p_column, '($1)') INTO v_ok USING p_value;
    RETURN COALESCE(v_ok, true);
END;
$$;
-- well_formed_reason: whether require_well_formed accepts p_value as a
-- failure reason code.
CREATE FUNCTION pg_temp.well_formed_reason(p_value text)
RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
    PERFORM durable_jobs.require_well_formed('failure_reason_code', p_value);
    RETURN true;
EXCEPTION WHEN SQLSTATE 'LF003' THEN
    RETURN false;
END;
$$;

CREATE TEMP TABLE edge_value (v text) ON COMMIT DROP;
INSERT INTO edge_value VALUES
 (''), ('a'), ('A'), ('0'), ('9abc'), ('-a'), ('a-'), ('a.b:c_d-e'), ('a b'), ('a/b'), ('a*'), ('*'), ('é'), ('aé'),
 ('a' || chr(10)), (chr(10) || 'a'), ('a' || chr(9) || 'b'), ('ａ'), ('K'), ('ſ'), ('a_'), ('_a'), ('.a'), (':a'),
 (repeat('a', 63)), (repeat('a', 64)), (repeat('A', 128)), (repeat('A', 129)), ('Worker-1.host:42'), (NULL),
 (repeat('a', 62) || 'é'), (repeat('a', 61) || 'é'), (repeat('a', 127) || 'é'), ('a_b_0'), ('a' || repeat('_', 62)),
 ('a' || repeat('_', 63)), (repeat('a', 100000));
SELECT is_empty($$SELECT e.v FROM edge_value e
                  WHERE durable_jobs.queue_name_is_well_formed(e.v)
                        IS DISTINCT FROM (e.v COLLATE "C" ~ '^[a-z][a-z0-9_.:-]{0,62}$')$$,
    'queue_name_is_well_formed answers each edge case as the contract''s pattern does');
SELECT is_empty($$SELECT e.v FROM edge_value e
                  WHERE durable_jobs.worker_owner_id_is_well_formed(e.v)
                        IS DISTINCT FROM (e.v COLLATE "C" ~ '^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$')$$,
    'worker_owner_id_is_well_formed answers each edge case as the contract''s pattern does');
SELECT is_empty($$SELECT e.v FROM edge_value e
                  WHERE durable_jobs.failure_reason_code_is_well_formed(e.v)
                        IS DISTINCT FROM (e.v COLLATE "C" ~ durable_jobs.failure_reason_code_pattern())
                     OR durable_jobs.failure_reason_code_pattern() IS DISTINCT FROM '^[a-z][a-z0-9_]{0,62}$'$$,
    'failure_reason_code_is_well_formed answers each edge case as the contract''s pattern does');
SELECT is_empty($$SELECT e.v FROM edge_value e
                  WHERE pg_temp.check_accepts('job_record_queue_name_format', 'queue_name', e.v)
                        IS DISTINCT FROM COALESCE(e.v ~ '^[a-z][a-z0-9_.:-]{0,62}$', true)$$,
    'job_record''s queue-name CHECK lets each edge case through exactly when the contract''s pattern does');
SELECT is_empty($$SELECT e.v FROM edge_value e
                  WHERE pg_temp.check_accepts('job_record_failure_reason_code_format', 'failure_reason_code', e.v)
                        IS DISTINCT FROM COALESCE(e.v ~ '^[a-z][a-z0-9_]{0,62}$', true)$$,
    'job_record''s reason-code CHECK lets each edge case through exactly when the contract''s pattern does');
SELECT is_empty($$SELECT e.v FROM edge_value e
                  WHERE pg_temp.well_formed_reason(e.v)
                        IS DISTINCT FROM COALESCE(e.v COLLATE "C" ~ '^[a-z][a-z0-9_]{0,62}$', false)$$,
    'require_well_formed accepts exactly the reason codes the contract''s pattern does');
SELECT throws_ok($$SELECT durable_jobs.require_well_formed('failure_reason_code', 'Bad')$$, 'LF003', 'malformed failure_reason_code',
    'a malformed reason code is refused with LF003');
CREATE FUNCTION pg_temp.reason_hint(p_value text)
RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    v_hint text;
BEGIN
    PERFORM durable_jobs.require_well_formed('failure_reason_code', p_value);
    RETURN NULL;
EXCEPTION WHEN SQLSTATE 'LF003' THEN
    GET STACKED DIAGNOSTICS v_hint = PG_EXCEPTION_HINT;
    RETURN v_hint;
END;
$$;
SELECT is(pg_temp.reason_hint('Bad'), 'failure_reason_code must match ^[a-z][a-z0-9_]{0,62}$',
    'its HINT names the contract''s pattern');
-- And on 4,000 values drawn at random (seeded): any characters and
-- lengths, and names of the allowed characters around each length bound.
SELECT setseed(0.25);
CREATE TEMP TABLE random_value (v text) ON COMMIT DROP;
INSERT INTO random_value
SELECT (SELECT string_agg(substr(k.alphabet, 1 + floor(random() * length(k.alphabet))::integer + 0 * g, 1), '')
        FROM generate_series(1, k.n) g)
FROM (SELECT 'abzAZ09_.:-/ *é' || chr(10) AS alphabet, floor(random() * 140)::integer AS n FROM generate_series(1, 2000)
      UNION ALL
      SELECT 'abz09_.:-', 58 + floor(random() * 10)::integer FROM generate_series(1, 1000)
      UNION ALL
      SELECT 'aAzZ09._:-', 123 + floor(random() * 10)::integer FROM generate_series(1, 1000)) k;
SELECT is_empty($$SELECT r.v FROM random_value r
                  WHERE durable_jobs.queue_name_is_well_formed(r.v)
                        IS DISTINCT FROM (r.v COLLATE "C" ~ '^[a-z][a-z0-9_.:-]{0,62}$')
                     OR durable_jobs.worker_owner_id_is_well_formed(r.v)
                        IS DISTINCT FROM (r.v COLLATE "C" ~ '^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$')
                     OR pg_temp.check_accepts('job_record_queue_name_format', 'queue_name', r.v)
                        IS DISTINCT FROM COALESCE(r.v ~ '^[a-z][a-z0-9_.:-]{0,62}$', true)
                     OR pg_temp.well_formed_reason(r.v)
                        IS DISTINCT FROM COALESCE(r.v COLLATE "C" ~ '^[a-z][a-z0-9_]{0,62}$', false)
                     OR durable_jobs.failure_reason_code_is_well_formed(r.v)
                        IS DISTINCT FROM (r.v COLLATE "C" ~ '^[a-z][a-z0-9_]{0,62}$')$$,
    'on 4,000 random values every test answers as the contract''s pattern does');
SELECT ok((SELECT count(*) FROM random_value r WHERE durable_jobs.queue_name_is_well_formed(r.v)) > 100
          AND (SELECT count(*) FROM random_value r WHERE NOT durable_jobs.queue_name_is_well_formed(r.v)
               AND r.v ~ '^[a-z][a-z0-9_.:-]*$') > 100
          AND (SELECT count(*) FROM random_value r WHERE durable_jobs.worker_owner_id_is_well_formed(r.v)) > 100
          AND (SELECT count(*) FROM random_value r WHERE NOT durable_jobs.worker_owner_id_is_well_formed(r.v)
               AND r.v ~ '^[A-Za-z0-9][A-Za-z0-9._:-]*$') > 100,
    'the random values hold more than 100 names each side of both length bounds');
SELECT is((SELECT array_agg(e.v ORDER BY e.v COLLATE "C") FROM edge_value e WHERE durable_jobs.queue_name_is_well_formed(e.v)),
    ARRAY['a', 'a-', 'a.b:c_d-e', 'a_', 'a' || repeat('_', 62), 'a_b_0', repeat('a', 63)], 'the queue names accepted are exactly the well-formed ones');

-- effective_lease_policy_queue: own row, else '*' ----------------------------------

SELECT results_eq($$SELECT policy_queue_name FROM durable_jobs.effective_lease_policy_queue('t03_own')$$,
    $$VALUES ('t03_own'::text)$$, 'a queue with its own policy gets its own row');
SELECT results_eq($$SELECT policy_queue_name FROM durable_jobs.effective_lease_policy_queue('t03_none')$$,
    $$VALUES ('*'::text)$$, 'a queue without one gets the default ''*''');
SELECT results_eq($$SELECT policy_queue_name FROM durable_jobs.effective_lease_policy_queue(NULL)$$,
    $$VALUES ('*'::text)$$, 'NULL gets ''*'' (no queue is NULL)');

SELECT * FROM finish();
ROLLBACK;
