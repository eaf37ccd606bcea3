-- 16_evidence_chain: the evidence-chain migration (sql/migrations/*_evidence_chain.sql).
-- Every change of queue_lease_policy is recorded by the table's own
-- triggers, whoever makes it (a direct UPDATE included) and with
-- session_user as the changer; evidence records are hash-chained in id
-- order; change records are structured (ticket, approver) and refuse
-- reasons that look like personal data or a secret (LF002). The
-- two-session races are in sql/integration/evidence_chain_test.go.
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
SELECT plan(60);
COMMIT;

-- Evidence written from an older snapshot could miss the last record: refused.
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT throws_ok(
    $$SELECT durable_jobs.record_deployment_version('1.0.0', 'pgTAP 16: repeatable read')$$,
    'LF003', 'control evidence must be written in a READ COMMITTED transaction',
    'an evidence record written in a REPEATABLE READ transaction is refused with LF003');
COMMIT;

BEGIN;
CREATE TEMP VIEW t16_broken_links AS
    SELECT x.evidence_record_id
    FROM (SELECT c.*, lag(c.record_hash) OVER (ORDER BY c.evidence_record_id) AS prior_hash
          FROM durable_jobs.control_evidence_chain() c) x
    WHERE x.record_hash <> pg_catalog.sha256(x.previous_record_hash || x.content_digest)
       OR x.previous_record_hash <> COALESCE(x.prior_hash, decode(repeat('00', 32), 'hex'));
-- Since migration 026 an approver must hold durable_job_operator: both do,
-- so the one refused below is refused for not being a login.
CREATE ROLE t16_approver LOGIN IN ROLE durable_job_operator;
CREATE ROLE t16_nologin NOLOGIN IN ROLE durable_job_operator;

-- The chain ---------------------------------------------------------------------

SELECT is_empty($$SELECT * FROM t16_broken_links$$,
    'the records that existed before the evidence-chain migration were chained in id order, and every link holds');
SELECT is((SELECT previous_record_hash FROM durable_jobs.control_evidence_chain() ORDER BY evidence_record_id LIMIT 1),
    decode(repeat('00', 32), 'hex'), 'the first record chains to 32 zero bytes');
SELECT throws_ok(
    $$INSERT INTO durable_jobs.control_evidence_record 
          (evidence_record_id, evidence_kind, new_values, change_reason) OVERRIDING SYSTEM VALUE
      VALUES (1, 'deployment_recorded', '{}', 'pgTAP 16: an id below the last one')$$,
    'LF003', 'control evidence record written out of order',
    'a record whose id is not above every committed id is refused, so chain order is id order');
SELECT lives_ok($$SELECT durable_jobs.record_deployment_version('1.2.3', 'pgTAP 16: chained deployment')$$,
    'a new record is accepted');
SELECT is_empty($$SELECT * FROM t16_broken_links$$, 'the new record is linked to the one before it');
SELECT ok((SELECT record_hash IS NOT NULL AND length(record_hash) = 32 FROM durable_jobs.control_evidence_record
           ORDER BY evidence_record_id DESC LIMIT 1), 'every record carries a 32-byte sha256 record_hash');

-- A direct change of the policy table is recorded by the change itself -----------

SELECT lives_ok(
    $$SELECT durable_jobs.set_queue_lease_policy('t16_direct', interval '30 seconds', interval '10 seconds',
          interval '1 hour', true, 'OPS-12: pgTAP 16 baseline')$$,
    'a policy set through the function is accepted');
SELECT results_eq(
    $$SELECT count(*)::integer, min(change_ticket), min(change_reason) FROM durable_jobs.control_evidence_record
      WHERE queue_name = 't16_direct' AND evidence_kind = 'lease_policy_changed'$$,
    $$VALUES (1, 'OPS-12', 'OPS-12: pgTAP 16 baseline')$$,
    'set_queue_lease_policy records one policy record (by the trigger, not twice), its ticket parsed from the reason');

UPDATE durable_jobs.queue_lease_policy
SET lease_duration = interval '60 seconds', renewal_enabled = false, changed_by_role = 'ops_alice'
WHERE queue_name = 't16_direct';
SELECT results_eq(
    $$SELECT evidence_kind, changed_by_role, change_reason, previous_values ->> 'lease_duration',
             new_values ->> 'lease_duration', (new_values ->> 'renewal_enabled')
      FROM durable_jobs.control_evidence_record WHERE queue_name = 't16_direct' AND evidence_kind = 'lease_policy_changed'
      ORDER BY evidence_record_id DESC LIMIT 1$$,
    $$VALUES ('lease_policy_changed', session_user::text COLLATE "default", 'direct table change without a reason', '00:00:30', '00:01:00', 'false')$$,
    'a direct UPDATE of the policy table is recorded with old and new values, session_user as changer (not the forged column) and a reason saying none was given');
SELECT results_eq(
    $$SELECT previous_values ->> 'renewal_enabled', new_values ->> 'renewal_enabled' FROM durable_jobs.control_evidence_record
      WHERE queue_name = 't16_direct' AND evidence_kind = 'renewal_enablement_changed' ORDER BY evidence_record_id DESC LIMIT 1$$,
    $$VALUES ('true', 'false')$$,
    'the direct UPDATE that switched renewal off is also recorded as an enablement change');
SELECT is((SELECT changed_by_role FROM durable_jobs.queue_lease_policy WHERE queue_name = 't16_direct'),
    session_user::text, 'the row''s changed_by_role is stamped with session_user, so it cannot name someone else');
SELECT is_empty($$SELECT * FROM durable_jobs.policy_evidence_mismatches()$$,
    'every queue''s policy equals what its last evidence record says');

SELECT set_config('leasefence.change_reason', 'OPS-13: direct change with a reason', true);
SELECT set_config('leasefence.change_ticket', 'OPS-13', true);
UPDATE durable_jobs.queue_lease_policy SET renewal_enabled = true WHERE queue_name = 't16_direct';
SELECT results_eq(
    $$SELECT change_reason, change_ticket FROM durable_jobs.control_evidence_record
      WHERE queue_name = 't16_direct' ORDER BY evidence_record_id DESC LIMIT 1$$,
    $$VALUES ('OPS-13: direct change with a reason', 'OPS-13')$$,
    'a direct change records the reason and ticket set in leasefence.change_reason and leasefence.change_ticket');
SELECT set_config('leasefence.change_ticket', 'not a ticket', true);
SELECT throws_ok($$UPDATE durable_jobs.queue_lease_policy SET renewal_enabled = false WHERE queue_name = 't16_direct'$$,
    'LF002', 'invalid change record', 'a direct change with a malformed ticket setting is refused (LF002)');
SELECT set_config('leasefence.change_ticket', '', true);
SELECT set_config('leasefence.change_reason', E'bad\u202ereason', true);
SELECT throws_ok($$UPDATE durable_jobs.queue_lease_policy SET renewal_enabled = false WHERE queue_name = 't16_direct'$$,
    'LF002', 'invalid change record', 'a direct change whose reason setting has a bidirectional control is refused (LF002)');
SELECT set_config('leasefence.change_reason', '', true);

SELECT throws_ok($$UPDATE durable_jobs.queue_lease_policy SET queue_name = 't16_renamed' WHERE queue_name = 't16_direct'$$,
    'LF002', 'a queue''s lease policy row cannot be renamed', 'renaming a policy row is refused (LF002)');
SELECT throws_ok($$TRUNCATE durable_jobs.queue_lease_policy$$,
    'LF002', 'TRUNCATE of queue_lease_policy is refused', 'TRUNCATE of the policy table, which fires no row trigger, is refused');

DELETE FROM durable_jobs.queue_lease_policy WHERE queue_name = 't16_direct';
SELECT results_eq(
    $$SELECT previous_values ->> 'policy_queue_name', new_values ->> 'policy_queue_name', new_values ->> 'lease_duration'
      FROM durable_jobs.control_evidence_record WHERE queue_name = 't16_direct' AND evidence_kind = 'lease_policy_changed'
      ORDER BY evidence_record_id DESC LIMIT 1$$,
    $$VALUES ('t16_direct', '*', '00:00:30')$$,
    'deleting a queue''s row is recorded: its effective policy becomes the default');
SELECT is_empty($$SELECT * FROM durable_jobs.policy_evidence_mismatches()$$,
    'after the delete the policy table and the evidence still agree');

CREATE TEMP TABLE t16_default ON COMMIT DROP AS SELECT * FROM durable_jobs.queue_lease_policy WHERE queue_name = '*';
DELETE FROM durable_jobs.queue_lease_policy WHERE queue_name = '*';
SELECT results_eq(
    $$SELECT new_values FROM durable_jobs.control_evidence_record WHERE queue_name = '*' AND evidence_kind = 'lease_policy_changed'
      ORDER BY evidence_record_id DESC LIMIT 1$$,
    $$VALUES ('{"policy_queue_name": null}'::jsonb)$$,
    'deleting the default row is recorded as leaving no policy');
INSERT INTO durable_jobs.queue_lease_policy (queue_name, lease_duration, renewal_interval, max_claim_lifetime, renewal_enabled)
SELECT queue_name, lease_duration, renewal_interval, max_claim_lifetime, renewal_enabled FROM t16_default;
SELECT results_eq(
    $$SELECT previous_values IS NULL, new_values ->> 'policy_queue_name' FROM durable_jobs.control_evidence_record
      WHERE queue_name = '*' AND evidence_kind = 'lease_policy_changed' ORDER BY evidence_record_id DESC LIMIT 1$$,
    $$VALUES (true, '*')$$, 'inserting the default row again is recorded, with no previous policy');

-- The audit's comparison finds changes made around the triggers -------------------

SET LOCAL session_replication_role = replica;
UPDATE durable_jobs.queue_lease_policy SET lease_duration = interval '45 seconds' WHERE queue_name = '*';
INSERT INTO durable_jobs.queue_lease_policy (queue_name, lease_duration, renewal_interval, max_claim_lifetime, renewal_enabled)
VALUES ('t16_silent', interval '30 seconds', interval '10 seconds', interval '1 hour', true);
SET LOCAL session_replication_role = origin;
SELECT results_eq(
    $$SELECT queue_name, mismatch FROM durable_jobs.policy_evidence_mismatches()$$,
    $$VALUES ('*', 'policy differs from what its last evidence record says'),
             ('t16_silent', 'policy row has no evidence record')$$,
    'policy_evidence_mismatches finds a superuser change made with triggers off and a row with no evidence');
SET LOCAL session_replication_role = replica;
DELETE FROM durable_jobs.queue_lease_policy WHERE queue_name = 't16_silent';
UPDATE durable_jobs.queue_lease_policy SET lease_duration = interval '30 seconds' WHERE queue_name = '*';
SET LOCAL session_replication_role = origin;
SELECT lives_ok(
    $$SELECT durable_jobs.set_queue_lease_policy('t16_gone', interval '30 seconds', interval '10 seconds',
          interval '1 hour', true, 'pgTAP 16: soon removed without evidence')$$, 'another queue gets a policy');
SET LOCAL session_replication_role = replica;
DELETE FROM durable_jobs.queue_lease_policy WHERE queue_name = 't16_gone';
SET LOCAL session_replication_role = origin;
SELECT results_eq($$SELECT queue_name, mismatch FROM durable_jobs.policy_evidence_mismatches()$$,
    $$VALUES ('t16_gone', 'policy row in the evidence is missing from the table')$$,
    'a row removed without evidence is found');
SET LOCAL session_replication_role = replica;
INSERT INTO durable_jobs.queue_lease_policy (queue_name, lease_duration, renewal_interval, max_claim_lifetime, renewal_enabled)
VALUES ('t16_direct', interval '30 seconds', interval '10 seconds', interval '1 hour', true),
       ('t16_gone', interval '30 seconds', interval '10 seconds', interval '1 hour', true);
SET LOCAL session_replication_role = origin;
SELECT results_eq($$SELECT queue_name, mismatch FROM durable_jobs.policy_evidence_mismatches()$$,
    $$VALUES ('t16_direct', 'policy row exists but the evidence says it was removed')$$,
    'a row put back without evidence after a recorded removal is found');
SET LOCAL session_replication_role = replica;
DELETE FROM durable_jobs.queue_lease_policy WHERE queue_name = 't16_direct';
SET LOCAL session_replication_role = origin;

-- Structured change records ---------------------------------------------------------

SELECT throws_ok(
    $$SELECT durable_jobs.set_queue_lease_policy('t16_pii', interval '30 seconds', interval '10 seconds', interval '1 hour',
          true, 'INC-77 customer 김민수 RRN 900101-1234567 phone 010-1234-5678 pw=hunter2')$$,
    'LF002', 'invalid change record', 'the reason with a resident registration number, phone and password is refused (LF002)');
SELECT ok(durable_jobs.looks_personal_or_secret(r), 'looks like personal data or a secret: ' || label)
FROM (VALUES ('RRN with hyphen', 'customer 900101-1234567'), ('RRN without hyphen', 'id 9001011234567'),
             ('card number (Luhn) in groups', 'card 4111 1111 1111 1111'), ('card number (Luhn) plain', 'paid with 5500005555555559'),
             ('e-mail address', 'asked by kim.minsu@example.co.kr'), ('Korean mobile number', 'call 010-1234-5678'),
             ('international number', 'call +82 10 1234 5678'), ('password assignment', 'password=hunter2'),
             ('pw assignment', 'pw=hunter2'), ('secret assignment', 'SECRET: abc'), ('token assignment', 'token=abc')) AS v(label, r);
SELECT ok(NOT durable_jobs.looks_personal_or_secret(r), 'plain reason accepted: ' || r)
FROM (VALUES ('OPS-1234: raise lease to 60 s for the nightly batch'), ('INC-77: renewal off during incident 77'),
             ('card 4111 1111 1111 1112 is not a Luhn number')) AS v(r);
SELECT is(durable_jobs.passes_luhn('123'), false, 'passes_luhn refuses fewer than 13 digits');

SELECT throws_ok(
    $$SELECT durable_jobs.set_queue_lease_policy('t16_ticket', interval '30 seconds', interval '10 seconds', interval '1 hour',
          true, 'pgTAP 16: no ticket', NULL, NULL)$$,
    'LF002', 'invalid change record', 'the structured overload needs a ticket');
SELECT throws_ok(
    $$SELECT durable_jobs.set_queue_lease_policy('t16_ticket', interval '30 seconds', interval '10 seconds', interval '1 hour',
          true, 'pgTAP 16: bad ticket', 'ops-1', NULL)$$,
    'LF002', 'invalid change record', 'a ticket not matching ^[A-Z][A-Z0-9]+-[0-9]+$ is refused');
SELECT throws_ok(
    $$SELECT durable_jobs.set_queue_lease_policy('t16_ticket', interval '30 seconds', interval '10 seconds', interval '1 hour',
          true, 'pgTAP 16: self approval', 'OPS-2', session_user)$$,
    'LF002', 'invalid change record', 'an approver who is the changer is refused');
SELECT throws_ok(
    $$SELECT durable_jobs.set_queue_lease_policy('t16_ticket', interval '30 seconds', interval '10 seconds', interval '1 hour',
          true, 'pgTAP 16: approver cannot log in', 'OPS-2', 't16_nologin')$$,
    'LF002', 'invalid change record', 'an approver that is not a login role is refused');
SELECT is_empty($$SELECT 1 FROM durable_jobs.control_evidence_record WHERE queue_name IN ('t16_pii', 't16_ticket')$$,
    'the refused changes wrote no evidence');
SELECT is_empty($$SELECT 1 FROM durable_jobs.queue_lease_policy WHERE queue_name IN ('t16_pii', 't16_ticket')$$,
    'the refused changes wrote no policy');
SELECT lives_ok(
    $$SELECT durable_jobs.set_queue_lease_policy('t16_ticket', interval '30 seconds', interval '10 seconds', interval '1 hour',
          true, 'raise lease for batch', 'OPS-3', 't16_approver')$$,
    'a structured change with ticket and another login as approver is accepted');
SELECT results_eq(
    $$SELECT change_ticket, change_approver, changed_by_role FROM durable_jobs.control_evidence_record
      WHERE queue_name = 't16_ticket' AND evidence_kind = 'lease_policy_changed'$$,
    $$VALUES ('OPS-3', 't16_approver', session_user::text COLLATE "default")$$,
    'the record carries the ticket, the approver and the changer');
SELECT is(current_setting('leasefence.change_reason'), '',
    'set_queue_lease_policy clears the change settings after its change, so a later direct change is not credited with its reason');

-- Deployments -------------------------------------------------------------------

SELECT throws_ok($$SELECT durable_jobs.record_deployment_version('1.2.4', 'deployed by kim@example.com')$$,
    'LF002', 'invalid change record', 'a deployment reason holding an e-mail address is refused (LF002)');
SELECT throws_ok(
    $$SELECT durable_jobs.record_deployment('1.2.4', 'not-a-digest', 'jkim', 'REL-9', 'release 1.2.4')$$,
    'LF002', 'invalid deployment record', 'a deployment record without a commit or artifact digest is refused');
SELECT throws_ok(
    $$SELECT durable_jobs.record_deployment('1.2.4', repeat('a', 40), 'jkim', 'REL-9', 'token=abc')$$,
    'LF002', 'invalid change record', 'a deployment record with a secret in its reason is refused');
SELECT lives_ok(
    $$SELECT durable_jobs.record_deployment('1.2.4', 'sha256:' || repeat('b', 64), 'jkim', 'REL-9', 'release 1.2.4')$$,
    'a deployment record with version, artifact digest, person and ticket is accepted');
SELECT results_eq(
    $$SELECT new_values, change_ticket FROM durable_jobs.control_evidence_record
      WHERE evidence_kind = 'deployment_recorded' ORDER BY evidence_record_id DESC LIMIT 1$$,
    $$VALUES ('{"deployed_by": "jkim", "source_digest": "sha256:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb", "deployment_version": "1.2.4"}'::jsonb, 'REL-9')$$,
    'the deployment record carries version, digest, person and ticket');

-- Tampering is evident --------------------------------------------------------------

SELECT is_empty($$SELECT * FROM t16_broken_links$$, 'before tampering every link holds');
SELECT is(
    (SELECT count(*)::integer FROM durable_jobs.control_evidence_records(NULL, NULL)),
    (SELECT count(*)::integer FROM durable_jobs.control_evidence_record),
    'control_evidence_records with open bounds returns every record');
ALTER TABLE durable_jobs.control_evidence_record DISABLE TRIGGER control_evidence_record_append_only;
UPDATE durable_jobs.control_evidence_record SET change_reason = 'rewritten'
WHERE evidence_record_id = (SELECT min(evidence_record_id) FROM durable_jobs.control_evidence_record WHERE queue_name = 't16_ticket');
SELECT results_eq($$SELECT * FROM t16_broken_links$$,
    $$SELECT min(evidence_record_id) FROM durable_jobs.control_evidence_record WHERE queue_name = 't16_ticket'$$,
    'an altered record no longer matches its hash');
DELETE FROM durable_jobs.control_evidence_record WHERE queue_name = 't16_ticket';
SELECT isnt_empty($$SELECT * FROM t16_broken_links$$, 'a deleted record breaks the link of the record after it');
ALTER TABLE durable_jobs.control_evidence_record ENABLE TRIGGER control_evidence_record_append_only;

SELECT * FROM finish();
ROLLBACK;
