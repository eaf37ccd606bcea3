-- Lease outcome tallies: the per-minute counts behind health, metrics and evidence.
--
-- The current definition of each function of this family, edited in place.
-- A change reaches databases through a new migration that includes this
-- file; released migrations hold their own frozen copy (see sql/doc.go).
--
-- Below, the notes written with the versions the current definitions come
-- from, newest first. They name the files as they were then; each
-- migration's frozen SQL under sql/migrations holds the whole text.

-- Notes of migration 022 (stale_tally_v2.sql in its frozen SQL):
--
-- stale tally v2 (migration 022; 012 installs stale_tally.sql). The rule of
-- 012 (a stale call is charged to the job's queue only when the calling
-- login made the job's last claim, else to '*') now lives in
-- record_stale_calls, which counts many stale calls of one kind at once:
-- one record_lease_outcome call per queue charged, whatever the number of
-- calls. record_stale_call counts one through it.
--
-- Why: renew_job_leases counted each stale claim of a batch with its own
-- record_lease_outcome call, and every one of them updated the same tally
-- row (this minute, queue, kind, backend, login) in the same transaction:
-- each update adds a version to that row's chain, which no pruning can
-- shorten before the transaction ends, and each ON CONFLICT walks it, so a
-- batch's counting grew with the square of its stale claims (1,000
-- counts in one transaction 56 ms, 3,000 438 ms; a heartbeat call of 1,000
-- claims that had all gone stale, as after a partition longer than the
-- lease, 60 to 86 ms against 19 for 1,000 renewed).

-- record_lease_outcome: adds p_outcome_count to this minute's (UTC) tally
-- of a rare committed outcome (stale_renewal, reclaim) under p_queue_name.
-- Each backend counts in rows of its own, keyed by (minute, queue, kind,
-- pg_backend_pid(), session_user): no two live sessions ever write the same
-- row, so counting never makes a session wait on another. The row records
-- the counting login (counted_by_role, never returned by any function) so
-- that the auditor functions can charge a stale renewal to its queue only
-- when that login has claimed a job there, and to '*' otherwise.
-- Retention: each call deletes up to 16 rows older than 30 days that no one
-- else has locked (SKIP LOCKED), so the table stays bounded without anyone
-- waiting. Locks its own tally row and the expired rows it deletes.
CREATE OR REPLACE FUNCTION durable_jobs.record_lease_outcome(p_queue_name text, p_outcome_kind text, p_outcome_count bigint)
RETURNS void
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, pg_temp
SET TimeZone = 'UTC'
AS $function$
DECLARE
    v_minute timestamptz := pg_catalog.date_trunc('minute', pg_catalog.clock_timestamp(), 'UTC');
BEGIN
    INSERT INTO durable_jobs.lease_outcome_tally AS t
        (tally_minute, queue_name, outcome_kind, tally_backend_pid, counted_by_role, outcome_count)
    VALUES (v_minute, p_queue_name, p_outcome_kind, pg_catalog.pg_backend_pid(), SESSION_USER, p_outcome_count)
    ON CONFLICT (tally_minute, queue_name, outcome_kind, tally_backend_pid, counted_by_role)
    DO UPDATE SET outcome_count = t.outcome_count + EXCLUDED.outcome_count;

    DELETE FROM durable_jobs.lease_outcome_tally t
    WHERE (t.tally_minute, t.queue_name, t.outcome_kind, t.tally_backend_pid, t.counted_by_role) IN (
        SELECT o.tally_minute, o.queue_name, o.outcome_kind, o.tally_backend_pid, o.counted_by_role
        FROM durable_jobs.lease_outcome_tally o
        WHERE o.tally_minute < v_minute - interval '30 days'
        ORDER BY o.tally_minute
        LIMIT 16
        FOR UPDATE SKIP LOCKED);
END;
$function$;

REVOKE ALL ON FUNCTION durable_jobs.record_lease_outcome(text, text, bigint) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.record_lease_outcome(text, text, bigint) TO durable_job_claim_owner, durable_job_renewal_owner, durable_job_terminal_owner;

-- record_stale_call: one stale call, counted by record_stale_calls (the
-- rule in one place).
CREATE OR REPLACE FUNCTION durable_jobs.record_stale_call(p_job_record_id bigint, p_outcome_kind text)
RETURNS void
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, pg_temp
AS $function$
BEGIN
    PERFORM durable_jobs.record_stale_calls(ARRAY[p_job_record_id], p_outcome_kind);
END;
$function$;

REVOKE ALL ON FUNCTION durable_jobs.record_stale_call(bigint, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.record_stale_call(bigint, text) TO durable_job_renewal_owner, durable_job_terminal_owner;

-- record_stale_calls: private helper of the renewal and terminal families.
-- Counts one stale call (p_outcome_kind: stale_renewal, stale_release) per
-- element of p_job_record_ids (no NULL, no repeated id: its callers pass
-- checked input) with record_lease_outcome: under the job's queue when the
-- calling login (session_user) made the job's last claim (its own claim
-- went stale: expired, reclaimed under its own login, cancelled, finished,
-- released), else under '*' (a job id that does not exist, a job never
-- claimed or one another login claimed last): a login guessing another
-- team's job ids cannot raise that team's tally, even after claiming a job
-- of that queue itself. Decided when counted, per job, so a later claim or
-- a purge never moves a count. Reads the jobs' queues and last claimers (no
-- lock); locks the counter's own tally rows as record_lease_outcome does,
-- one call per queue charged, in queue name order.
CREATE OR REPLACE FUNCTION durable_jobs.record_stale_calls(p_job_record_ids bigint[], p_outcome_kind text)
RETURNS void
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, pg_temp
AS $function$
DECLARE
    v_charge record;
BEGIN
    FOR v_charge IN
        SELECT COALESCE(j.queue_name, '*') AS charged_queue, pg_catalog.count(*) AS charged_calls
        FROM pg_catalog.unnest(p_job_record_ids) AS s(stale_job_id)
        LEFT JOIN durable_jobs.job_record j
               ON j.job_record_id = s.stale_job_id AND j.lease_claimed_by_role = SESSION_USER
        GROUP BY 1
        ORDER BY 1
    LOOP
        PERFORM durable_jobs.record_lease_outcome(v_charge.charged_queue, p_outcome_kind, v_charge.charged_calls);
    END LOOP;
END;
$function$;

REVOKE ALL ON FUNCTION durable_jobs.record_stale_calls(bigint[], text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.record_stale_calls(bigint[], text) TO durable_job_renewal_owner, durable_job_terminal_owner;
