-- 22_retention_reasons: migration 014 (functions/retention.sql). A retention policy
-- change or a payload erasure whose reason looks like personal data or a
-- secret is refused with LF002 (require_structured_change, as for a lease
-- policy change), naming the rule and never the reason, and changes
-- nothing: no policy row, no evidence, no erased payload. A plain reason
-- with a ticket reference is still accepted.
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
SELECT plan(17);
\ir fixture/fixture.sql

CREATE TEMP TABLE t22_job (job_id bigint NOT NULL);
GRANT ALL ON t22_job TO PUBLIC;
DO $$
DECLARE
    v_id bigint := pg_temp.enqueue_and_claim('erase', 't22.erase', 'worker-t22', 5, '{"subject": "t22"}'::jsonb);
    v_token uuid;
BEGIN
    SELECT c.lease_claim_token INTO STRICT v_token FROM claims c WHERE c.label = 'erase';
    PERFORM durable_jobs.complete_job(v_id, v_token, 'worker-t22', '{"result": "t22"}'::jsonb);
    INSERT INTO t22_job VALUES (v_id);
END $$;

CREATE FUNCTION pg_temp.t22_state()
RETURNS text LANGUAGE sql AS $$
    SELECT coalesce(string_agg(row(p.*)::text, ';' ORDER BY p.queue_name), '')
        || ' evidence=' || (SELECT count(*) FROM durable_jobs.control_evidence_record)
        || ' payloads=' || (SELECT count(*) FROM durable_jobs.job_payload_record pr JOIN t22_job t ON t.job_id = pr.job_record_id)
    FROM durable_jobs.queue_retention_policy p;
$$;
CREATE TEMP TABLE t22_mark (mark_value text NOT NULL);
GRANT ALL ON t22_mark TO PUBLIC;
INSERT INTO t22_mark VALUES (pg_temp.t22_state());

CREATE TEMP TABLE t22_reason (reason text NOT NULL, what text NOT NULL);
GRANT ALL ON t22_reason TO PUBLIC;
INSERT INTO t22_reason VALUES
    ('INC-77 customer RRN 900101-1234567', 'a resident registration number'),
    ('INC-77 card 4111 1111 1111 1111', 'a card number that passes the Luhn check'),
    ('INC-77 ask kim@example.com', 'an e-mail address'),
    ('INC-77 call 010-1234-5678', 'a phone number'),
    ('INC-77 pw=hunter2', 'a credential'),
    ('INC-77 secret: s3cr3t', 'a secret'),
    (E'INC-77 \u202Ereversed', 'a bidirectional-control character');

SET LOCAL ROLE durable_job_operator;
SELECT throws_ok(format('SELECT durable_jobs.set_queue_retention_policy(%L, %L::interval, %L::interval, %L)',
                        't22.policy', '2 days', '10 days', r.reason),
                 'LF002', 'invalid change record', 'set_queue_retention_policy refuses a reason with ' || r.what || ' with LF002')
FROM t22_reason r ORDER BY r.what;
SELECT throws_ok(format('SELECT durable_jobs.erase_job_payload(%s, %L)', t.job_id, r.reason),
                 'LF002', 'invalid change record', 'erase_job_payload refuses a reason with ' || r.what || ' with LF002')
FROM t22_job t, t22_reason r ORDER BY r.what;
RESET ROLE;
SELECT is(pg_temp.t22_state(), (SELECT mark_value FROM t22_mark),
          'the refused changes left the retention policies, the evidence and the payload as they were');

SET LOCAL ROLE durable_job_operator;
SELECT lives_ok($$SELECT durable_jobs.set_queue_retention_policy('t22.policy', '2 days', '10 days', 'CHG-22 shorter retention')$$,
                'a plain reason with a ticket reference is still accepted for a retention change');
SELECT is(durable_jobs.erase_job_payload(t.job_id, 'DSR-22 erasure request'), true,
          'a plain reason with a ticket reference is still accepted for an erasure')
FROM t22_job t;
RESET ROLE;

SELECT * FROM finish();
ROLLBACK;
