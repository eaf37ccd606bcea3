-- stale tally (migration 012): who a stale call is charged to.
--
-- record_stale_call: private helper of the renewal and terminal families.
-- Counts one stale call (p_outcome_kind: stale_renewal from renew_job_lease
-- and renew_job_leases, stale_release from release_job_claim) with
-- record_lease_outcome, under the job's queue only when the calling login
-- (session_user) is the login that made the job's last claim: its own
-- claim went stale (expired, reclaimed under its own login, cancelled,
-- finished, released). Anything else, a job id that does not exist, a job
-- never claimed or one another login claimed last, is counted under '*':
-- a login guessing another team's job ids cannot raise that team's tally,
-- even after claiming a job of that queue itself. Decided when counted,
-- per job, so a later claim or a purge never moves a count. Reads the
-- job's queue and last claimer (no lock); locks the counter's own tally
-- row as record_lease_outcome does.
CREATE FUNCTION durable_jobs.record_stale_call(p_job_record_id bigint, p_outcome_kind text)
RETURNS void
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, pg_temp
AS $function$
DECLARE
    v_queue_name text;
BEGIN
    SELECT j.queue_name INTO v_queue_name
    FROM durable_jobs.job_record j
    WHERE j.job_record_id = p_job_record_id
      AND j.lease_claimed_by_role = SESSION_USER;
    PERFORM durable_jobs.record_lease_outcome(COALESCE(v_queue_name, '*'), p_outcome_kind, 1);
END;
$function$;

REVOKE ALL ON FUNCTION durable_jobs.record_stale_call(bigint, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_jobs.record_stale_call(bigint, text) TO
    durable_job_renewal_owner, durable_job_terminal_owner;
