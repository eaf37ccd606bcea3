-- leasefence 004 (assigned number 005; renumber when the reserved migration
-- lands, and the migration_version below with it): counting that never makes a session wait,
-- time computed in UTC, absolute policy durations, policy changes and
-- evidence serialised in commit order, bounded inputs.
--
-- lease_outcome_tally is rebuilt insert-only per backend: a row per
-- (UTC minute, queue, kind, pg_backend_pid()), so two live sessions never
-- write one row; readers sum. Existing rows keep their counts, their shard n
-- becoming tally_backend_pid -1 - n (never a live backend's pid).

-- Every function that reads the tally table depends on it: drop them first.
DROP FUNCTION durable_jobs.lease_health_by_queue();
DROP FUNCTION durable_jobs.lease_outcome_totals(timestamptz);
DROP FUNCTION durable_jobs.record_lease_outcome(text, text, bigint);

CREATE TABLE durable_jobs.lease_outcome_tally_next (
    tally_minute      timestamptz NOT NULL,
    queue_name        text NOT NULL,
    outcome_kind      text NOT NULL CONSTRAINT lease_outcome_tally_kind CHECK (outcome_kind IN ('stale_renewal', 'reclaim')),
    tally_backend_pid integer NOT NULL,
    counted_by_role   text NOT NULL,
    outcome_count     bigint NOT NULL CONSTRAINT lease_outcome_tally_count_positive CHECK (outcome_count > 0),
    CONSTRAINT lease_outcome_tally_next_pkey
        PRIMARY KEY (tally_minute, queue_name, outcome_kind, tally_backend_pid, counted_by_role)
);
INSERT INTO durable_jobs.lease_outcome_tally_next
    (tally_minute, queue_name, outcome_kind, tally_backend_pid, counted_by_role, outcome_count)
SELECT t.tally_minute, t.queue_name, t.outcome_kind, -1 - t.tally_shard, '', t.outcome_count
FROM durable_jobs.lease_outcome_tally t;
DROP TABLE durable_jobs.lease_outcome_tally;
ALTER TABLE durable_jobs.lease_outcome_tally_next RENAME TO lease_outcome_tally;
ALTER TABLE durable_jobs.lease_outcome_tally RENAME CONSTRAINT lease_outcome_tally_next_pkey TO lease_outcome_tally_pkey;
CREATE INDEX lease_outcome_tally_recent ON durable_jobs.lease_outcome_tally (tally_minute);
COMMENT ON TABLE durable_jobs.lease_outcome_tally IS 'Per-minute (UTC) tallies of committed rare outcomes. Each backend counts in rows of its own, so counting never waits on another session; readers sum. Rows older than 30 days are deleted by the writers (SKIP LOCKED).';
COMMENT ON COLUMN durable_jobs.lease_outcome_tally.tally_minute IS 'The UTC minute the outcomes were counted in, whatever the session''s TimeZone.';
COMMENT ON COLUMN durable_jobs.lease_outcome_tally.queue_name IS 'Queue of the job; ''*'' when the renewal named a job that does not exist.';
COMMENT ON COLUMN durable_jobs.lease_outcome_tally.counted_by_role IS 'session_user that counted the outcome ('''' for rows carried over from version 2). Never returned: the auditor functions charge a stale renewal to its queue only when this login is the last claimer of a job there, else to ''*''.';
COMMENT ON COLUMN durable_jobs.lease_outcome_tally.tally_backend_pid IS 'pg_backend_pid() of the counting session: no two live sessions share a row. Negative for rows carried over from the 16 shards of version 2.';
REVOKE ALL ON durable_jobs.lease_outcome_tally FROM PUBLIC;
GRANT SELECT (tally_minute, queue_name, outcome_kind, tally_backend_pid, counted_by_role, outcome_count),
      INSERT (tally_minute, queue_name, outcome_kind, tally_backend_pid, counted_by_role, outcome_count),
      UPDATE (outcome_count), DELETE
    ON durable_jobs.lease_outcome_tally TO durable_job_claim_owner, durable_job_renewal_owner;
GRANT SELECT (tally_minute, queue_name, outcome_kind, counted_by_role, outcome_count)
    ON durable_jobs.lease_outcome_tally TO durable_job_audit_owner;
-- The auditor functions attribute stale renewals by the job's last claimer.
GRANT SELECT (lease_claimed_by_role) ON durable_jobs.job_record TO durable_job_audit_owner;

-- Policy intervals become absolute durations: no month or day part, so
-- adding one to a time gives the same instant under every TimeZone.
UPDATE durable_jobs.queue_lease_policy p
SET lease_duration = pg_catalog.make_interval(secs => EXTRACT(epoch FROM p.lease_duration)::double precision),
    renewal_interval = pg_catalog.make_interval(secs => EXTRACT(epoch FROM p.renewal_interval)::double precision),
    max_claim_lifetime = pg_catalog.make_interval(secs => EXTRACT(epoch FROM p.max_claim_lifetime)::double precision);
ALTER TABLE durable_jobs.queue_lease_policy ADD CONSTRAINT queue_lease_policy_absolute_durations CHECK (
    EXTRACT(year FROM lease_duration) = 0 AND EXTRACT(month FROM lease_duration) = 0 AND EXTRACT(day FROM lease_duration) = 0
    AND EXTRACT(year FROM renewal_interval) = 0 AND EXTRACT(month FROM renewal_interval) = 0
    AND EXTRACT(day FROM renewal_interval) = 0
    AND EXTRACT(year FROM max_claim_lifetime) = 0 AND EXTRACT(month FROM max_claim_lifetime) = 0
    AND EXTRACT(day FROM max_claim_lifetime) = 0);

{{ template "functions/input_checks_v2.sql" . }}
{{ template "functions/producer_v2.sql" . }}
{{ template "functions/terminal_v2.sql" . }}
{{ template "functions/policy_v2.sql" . }}
{{ template "functions/audit_v2.sql" . }}

SELECT pg_catalog.pg_advisory_xact_lock(1279655936, 1);
INSERT INTO durable_jobs.control_evidence_record (evidence_kind, queue_name, previous_values, new_values, change_reason)
VALUES ('migration_applied', NULL, NULL, '{"migration_version": 4, "migration_name": "004_counting_time_and_policy"}',
        'leasefence bundle migration');

---- create above / drop below ----

DROP FUNCTION durable_jobs.bundle_migration_version();
DROP FUNCTION durable_jobs.job_status_totals();
DROP FUNCTION durable_jobs.lease_outcome_totals(timestamptz);
DROP FUNCTION durable_jobs.control_evidence_history(timestamptz);
DROP FUNCTION durable_jobs.queue_lease_policies();
DROP FUNCTION durable_jobs.lease_health_by_queue();
DROP FUNCTION durable_jobs.record_deployment_version(text, text);
DROP FUNCTION durable_jobs.set_queue_lease_policy(text, interval, interval, interval, boolean, text);
DROP FUNCTION durable_jobs.release_job_claim(bigint, uuid, text);
DROP FUNCTION durable_jobs.fail_job(bigint, uuid, text, text);
DROP FUNCTION durable_jobs.retry_job(bigint, uuid, text, interval, text);
DROP FUNCTION durable_jobs.complete_job(bigint, uuid, text, jsonb);
DROP FUNCTION durable_jobs.raise_stale_claim();
DROP FUNCTION durable_jobs.lock_fenced_claim(bigint, uuid, text);
DROP FUNCTION durable_jobs.job_lifecycle_state(bigint);
DROP FUNCTION durable_jobs.replay_job(bigint);
DROP FUNCTION durable_jobs.cancel_job(bigint);
DROP FUNCTION durable_jobs.enqueue_job(text, jsonb, text, timestamptz, integer);
DROP FUNCTION durable_jobs.record_lease_outcome(text, text, bigint);
DROP FUNCTION durable_jobs.lock_evidence_order();
DROP FUNCTION durable_jobs.is_plain_change_reason(text);
DROP FUNCTION durable_jobs.absolute_duration(interval);
DROP FUNCTION durable_jobs.claim_token_digest(uuid);
DROP FUNCTION durable_jobs.require_well_formed(text, text, text);

REVOKE SELECT (lease_claimed_by_role) ON durable_jobs.job_record FROM durable_job_audit_owner;

-- Durations stay as stored ('24:00:00' is also valid for version 2).
ALTER TABLE durable_jobs.queue_lease_policy DROP CONSTRAINT queue_lease_policy_absolute_durations;

-- The tally table of version 2, exactly as 001 made it; each row goes to
-- its minute's slot and its backend's shard (a carried-over row to the
-- shard it came from), newest minute per slot, counts summed over logins.
CREATE TABLE durable_jobs.lease_outcome_tally_prev (
    tally_slot    integer NOT NULL CONSTRAINT lease_outcome_tally_slot_range CHECK (tally_slot BETWEEN 0 AND 43199),
    tally_minute  timestamptz NOT NULL,
    queue_name    text NOT NULL,
    outcome_kind  text NOT NULL CONSTRAINT lease_outcome_tally_kind CHECK (outcome_kind IN ('stale_renewal', 'reclaim')),
    tally_shard   smallint NOT NULL CONSTRAINT lease_outcome_tally_shard_range CHECK (tally_shard BETWEEN 0 AND 15),
    outcome_count bigint NOT NULL CONSTRAINT lease_outcome_tally_count_positive CHECK (outcome_count > 0),
    CONSTRAINT lease_outcome_tally_prev_pkey PRIMARY KEY (tally_slot, queue_name, outcome_kind, tally_shard)
);
INSERT INTO durable_jobs.lease_outcome_tally_prev (tally_slot, tally_minute, queue_name, outcome_kind, tally_shard, outcome_count)
SELECT k.slot, k.tally_minute, k.queue_name, k.outcome_kind, k.shard, pg_catalog.sum(k.outcome_count)
FROM (SELECT s.*, pg_catalog.max(s.tally_minute) OVER (PARTITION BY s.slot, s.queue_name, s.outcome_kind, s.shard) AS newest
      FROM (SELECT (pg_catalog.floor(EXTRACT(epoch FROM t.tally_minute) / 60)::bigint % 43200)::integer AS slot,
                   t.tally_minute, t.queue_name, t.outcome_kind,
                   (CASE WHEN t.tally_backend_pid < 0 THEN -1 - t.tally_backend_pid ELSE t.tally_backend_pid % 16 END)::smallint AS shard,
                   t.outcome_count
            FROM durable_jobs.lease_outcome_tally t) s) k
WHERE k.tally_minute = k.newest
GROUP BY k.slot, k.tally_minute, k.queue_name, k.outcome_kind, k.shard;
DROP TABLE durable_jobs.lease_outcome_tally;
ALTER TABLE durable_jobs.lease_outcome_tally_prev RENAME TO lease_outcome_tally;
ALTER TABLE durable_jobs.lease_outcome_tally RENAME CONSTRAINT lease_outcome_tally_prev_pkey TO lease_outcome_tally_pkey;
COMMENT ON TABLE durable_jobs.lease_outcome_tally IS 'Bounded per-minute tallies of committed rare outcomes over the last 30 days. Sharded by backend so no single row is hot.';
COMMENT ON COLUMN durable_jobs.lease_outcome_tally.tally_slot IS 'Minute since the epoch modulo 43200 (30 days): a slot is reused, and its old tally overwritten, when its minute comes round again.';
CREATE INDEX lease_outcome_tally_recent ON durable_jobs.lease_outcome_tally (tally_minute);
COMMENT ON COLUMN durable_jobs.lease_outcome_tally.queue_name IS 'Queue of the job; ''*'' when the renewal named a job that does not exist.';
COMMENT ON COLUMN durable_jobs.lease_outcome_tally.tally_shard IS 'pg_backend_pid() % 16: concurrent sessions add to different rows.';
REVOKE ALL ON durable_jobs.lease_outcome_tally FROM PUBLIC;
GRANT SELECT (tally_slot, tally_minute, queue_name, outcome_kind, tally_shard, outcome_count),
      INSERT (tally_slot, tally_minute, queue_name, outcome_kind, tally_shard, outcome_count),
      UPDATE (tally_minute, outcome_count)
    ON durable_jobs.lease_outcome_tally TO durable_job_claim_owner;
GRANT SELECT (tally_slot, tally_minute, queue_name, outcome_kind, tally_shard, outcome_count),
      INSERT (tally_slot, tally_minute, queue_name, outcome_kind, tally_shard, outcome_count),
      UPDATE (tally_minute, outcome_count)
    ON durable_jobs.lease_outcome_tally TO durable_job_renewal_owner;
GRANT SELECT (tally_minute, queue_name, outcome_kind, outcome_count)
    ON durable_jobs.lease_outcome_tally TO durable_job_audit_owner;

{{ template "functions/input_checks.sql" . }}
{{ template "functions/producer.sql" . }}
{{ template "functions/terminal.sql" . }}
{{ template "functions/policy.sql" . }}
{{ template "functions/audit.sql" . }}

SELECT pg_catalog.pg_advisory_xact_lock(1279655936, 1);
INSERT INTO durable_jobs.control_evidence_record (evidence_kind, queue_name, previous_values, new_values, change_reason)
VALUES ('migration_reverted', NULL, NULL, '{"migration_version": 4, "migration_name": "004_counting_time_and_policy"}',
        'leasefence bundle migration rolled back');
