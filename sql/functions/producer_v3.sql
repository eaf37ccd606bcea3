-- producer v3 (migration 016; 004 installs producer_v2.sql): only
-- replay_job changes, so only it is here. Version 2 found the job's row with
-- `job_status IN ('FAILED', 'CANCELLED')` beside its primary key, which
-- implies the predicate of job_record_finished_by_age: with statistics taken
-- before the jobs finished that index looks empty and a replay read every
-- finished job through it (TestCallsOnOneJobUseThePrimaryKeyUnderStaleStatistics).
-- Owner and grants stay as version 2 set them.

-- replay_job: one FAILED or CANCELLED job back to QUEUED with its attempts
-- starting again (operators only). false for any other status or an unknown
-- id. Locks the job row. Raises LF003 for a NULL id.
CREATE OR REPLACE FUNCTION durable_jobs.replay_job(p_job_record_id bigint)
RETURNS boolean
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $function$
BEGIN
    IF p_job_record_id IS NULL THEN
        RAISE EXCEPTION 'job id is required' USING ERRCODE = 'LF003';
    END IF;
    UPDATE durable_jobs.job_record j
    SET job_status = 'QUEUED', status_changed_at = pg_catalog.clock_timestamp(),
        run_after = pg_catalog.clock_timestamp(), attempt_number = 0, failure_reason_code = NULL
    -- compared as text: statistics taken before the jobs finished must not
    -- make the partial index of finished jobs look cheaper than the key
    WHERE j.job_record_id = p_job_record_id AND j.job_status::text IN ('FAILED', 'CANCELLED');
    RETURN FOUND;
END;
$function$;
