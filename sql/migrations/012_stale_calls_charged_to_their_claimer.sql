-- leasefence 012: stale calls counted on every path that commits, and
-- charged to a queue only by the login that claimed the job there.
--
-- * A stale release_job_claim (it answers false) is counted, as its own
--   outcome kind stale_release (functions/terminal_v3.sql); the tally's
--   CHECK allows it, and durable_job_terminal_owner, release_job_claim's
--   definer, may now write the tally and read a job's queue.
-- * Who a stale renewal or release is charged to is decided when it is
--   counted, per job (functions/stale_tally.sql, record_stale_call): the
--   job's queue only when the calling login made the job's last claim,
--   else '*'. Until now every stale renewal was counted under the job's
--   queue and the auditor functions moved it to '*' at every read unless
--   the counting login was the last claimer of any job of that queue: a
--   login that had claimed one job of a queue charged its guesses of that
--   queue's other job ids to the queue. renew_job_lease(s)
--   (functions/renewal_v4.sql) count through it; lease_health_by_queue
--   gains stale_releases_last_hour and both auditor readers sum the tally
--   as counted (functions/audit_v4.sql).
-- * Counts made before this migration keep what the old readers showed at
--   the moment of the upgrade: the stale renewals they would have shown
--   under '*' are moved there now, once.
-- * The schema's comment names docs/sql-api.md (001's named a CONTRACT.md
--   that the repository does not hold).
-- Stale terminal writes (complete_job, complete_jobs, retry_job, fail_job)
-- raise LF001 and abort their transaction, so the database cannot count
-- them; goclient does (threat model T4).
--
-- The down part puts back the renewal, release and auditor functions of
-- version 11, the CHECK, grants and comments; the stale_release counts are
-- deleted (version 11 has no such kind) and the stale renewals moved to
-- '*' stay there, which version 11's readers also show under '*' or under
-- the queue of a login that claimed there.
-- This migration's version number appears only in its two evidence
-- records below (migration_version 12).

COMMENT ON SCHEMA durable_jobs IS 'leasefence: database-authoritative, fenced durable-job leases. Tables are private; the functions documented in docs/sql-api.md are the interface.';

ALTER TABLE durable_jobs.lease_outcome_tally
    DROP CONSTRAINT lease_outcome_tally_kind,
    ADD CONSTRAINT lease_outcome_tally_kind CHECK (outcome_kind IN ('stale_renewal', 'reclaim', 'stale_release'));
COMMENT ON COLUMN durable_jobs.lease_outcome_tally.queue_name IS 'Queue the outcome is charged to: a reclaim''s queue; for a stale renewal or release, the job''s queue when the counting login made the job''s last claim, else ''*'' (unknown job, or a job another login claimed last).';
COMMENT ON COLUMN durable_jobs.lease_outcome_tally.counted_by_role IS 'session_user that counted the outcome ('''' for rows carried over from version 2). Never returned by any function.';

-- Counts made before: each stale renewal the version-11 readers showed
-- under '*' (its login was not the last claimer of any job of its queue)
-- is moved to '*' now, summed into the row of the same minute, backend
-- and login.
WITH moved AS (
    DELETE FROM durable_jobs.lease_outcome_tally t
    WHERE t.outcome_kind = 'stale_renewal' AND t.counted_by_role <> '' AND t.queue_name <> '*'
      AND (t.queue_name, t.counted_by_role) NOT IN (
          SELECT j.queue_name, j.lease_claimed_by_role FROM durable_jobs.job_record j
          WHERE j.lease_claimed_by_role IS NOT NULL)
    RETURNING t.tally_minute, t.outcome_kind, t.tally_backend_pid, t.counted_by_role, t.outcome_count
)
INSERT INTO durable_jobs.lease_outcome_tally AS t
    (tally_minute, queue_name, outcome_kind, tally_backend_pid, counted_by_role, outcome_count)
SELECT m.tally_minute, '*', m.outcome_kind, m.tally_backend_pid, m.counted_by_role, pg_catalog.sum(m.outcome_count)
FROM moved m
GROUP BY m.tally_minute, m.outcome_kind, m.tally_backend_pid, m.counted_by_role
ON CONFLICT (tally_minute, queue_name, outcome_kind, tally_backend_pid, counted_by_role)
DO UPDATE SET outcome_count = t.outcome_count + EXCLUDED.outcome_count;

-- release_job_claim's definer counts a stale release.
GRANT SELECT (tally_minute, queue_name, outcome_kind, tally_backend_pid, counted_by_role, outcome_count),
      INSERT (tally_minute, queue_name, outcome_kind, tally_backend_pid, counted_by_role, outcome_count),
      UPDATE (outcome_count), DELETE
    ON durable_jobs.lease_outcome_tally TO durable_job_terminal_owner;
GRANT SELECT (queue_name) ON durable_jobs.job_record TO durable_job_terminal_owner;
GRANT EXECUTE ON FUNCTION durable_jobs.record_lease_outcome(text, text, bigint) TO durable_job_terminal_owner;

{{ template "functions/stale_tally.sql" . }}
{{ template "functions/renewal_v4.sql" . }}
{{ template "functions/terminal_v3.sql" . }}
DROP FUNCTION durable_jobs.lease_health_by_queue();
{{ template "functions/audit_v4.sql" . }}

SELECT pg_catalog.pg_advisory_xact_lock(1279655936, 1);
INSERT INTO durable_jobs.control_evidence_record (evidence_kind, queue_name, previous_values, new_values, change_reason)
VALUES ('migration_applied', NULL, NULL, '{"migration_version": 12, "migration_name": "012_stale_calls_charged_to_their_claimer"}',
        COALESCE(NULLIF(pg_catalog.current_setting('leasefence.migration_reason', true), ''), 'leasefence bundle migration'));

---- create above / drop below ----

DROP FUNCTION durable_jobs.lease_health_by_queue();
{{ template "functions/audit_v2.sql" . }}
{{ template "functions/terminal_v2.sql" . }}
{{ template "functions/renewal_v3.sql" . }}
DROP FUNCTION durable_jobs.record_stale_call(bigint, text);

REVOKE EXECUTE ON FUNCTION durable_jobs.record_lease_outcome(text, text, bigint) FROM durable_job_terminal_owner;
REVOKE SELECT (queue_name) ON durable_jobs.job_record FROM durable_job_terminal_owner;
REVOKE ALL ON durable_jobs.lease_outcome_tally FROM durable_job_terminal_owner;

DELETE FROM durable_jobs.lease_outcome_tally WHERE outcome_kind = 'stale_release';
ALTER TABLE durable_jobs.lease_outcome_tally
    DROP CONSTRAINT lease_outcome_tally_kind,
    ADD CONSTRAINT lease_outcome_tally_kind CHECK (outcome_kind IN ('stale_renewal', 'reclaim'));
COMMENT ON COLUMN durable_jobs.lease_outcome_tally.queue_name IS 'Queue of the job; ''*'' when the renewal named a job that does not exist.';
COMMENT ON COLUMN durable_jobs.lease_outcome_tally.counted_by_role IS 'session_user that counted the outcome ('''' for rows carried over from version 2). Never returned: the auditor functions charge a stale renewal to its queue only when this login is the last claimer of a job there, else to ''*''.';

COMMENT ON SCHEMA durable_jobs IS 'leasefence: database-authoritative, fenced durable-job leases. Tables are private; the functions in CONTRACT.md are the interface.';

SELECT pg_catalog.pg_advisory_xact_lock(1279655936, 1);
INSERT INTO durable_jobs.control_evidence_record (evidence_kind, queue_name, previous_values, new_values, change_reason)
VALUES ('migration_reverted', NULL, NULL, '{"migration_version": 12, "migration_name": "012_stale_calls_charged_to_their_claimer"}',
        COALESCE(NULLIF(pg_catalog.current_setting('leasefence.migration_reason', true), ''),
                 'leasefence bundle migration rolled back'));
