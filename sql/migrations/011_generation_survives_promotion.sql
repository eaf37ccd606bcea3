-- leasefence 011: the fencing generation survives promotion
-- (functions/generation_floor.sql). A BEFORE UPDATE trigger on job_record
-- raises every claim's generation to at least ((timeline - 1) << 40) + 1,
-- timeline being the WAL timeline the server writes on, so a generation
-- issued after a promotion is above every generation an earlier primary
-- issued, even when the promotion lost the claims the old primary
-- acknowledged; and it sets synchronous_commit = local for the claiming
-- transaction only, so a claim's COMMIT never waits for a synchronous
-- standby (terminal writes and renewals still do). Function owned by
-- durable_job_claim_owner, EXECUTE for nobody: only the trigger calls it.
-- No function family changes. The down part drops the trigger and its
-- function.
-- Generation floor (migration 011): the fencing generation strictly
-- increases across promotions, and a claim's own COMMIT does not wait for a
-- synchronous standby. Done by a trigger on job_record, so the claim,
-- renewal, terminal and audit function families stay as they are.
--
--   raise_generation_to_floor  BEFORE UPDATE OF lease_fencing_generation,
--                              only when the generation increases (a claim)
--
-- The floor of WAL timeline t is ((t - 1) << 40) + 1. Every promotion
-- (pg_ctl promote, pg_promote) starts a new timeline, higher than the
-- timeline of every primary before it, so a claim on the promoted primary
-- gets a generation at least the new floor, and every generation an earlier
-- primary issued (on a lower timeline, at most 2^40 claims of one job above
-- its own floor) is below it. A primary that crashed and was started again
-- without a rewind stays on its old timeline and keeps issuing generations
-- below the new primary's; it must still be fenced (see the threat model).
-- Timeline 1 has floor 1: a fresh install issues 1, 2, 3, ... as before.

-- raise_generation_to_floor: on a claim (the UPDATE raises
-- lease_fencing_generation; the trigger's WHEN clause fires it only then)
-- raises NEW.lease_fencing_generation to the current timeline's floor when
-- it is below it, and, unless synchronous_commit is already off or local,
-- sets it to local for the rest of the claiming transaction
-- (set_config(..., true)): a claim's COMMIT then never
-- waits for a synchronous standby, so a stalled standby cannot turn claims
-- into orphans that burn attempts. A claim lost in a failover is harmless:
-- its token is unknown on the new primary and its generation is below every
-- generation issued there. Renewals and terminal writes do not raise the
-- generation and still wait. The timeline is the one the server writes WAL
-- on now (the first 8 hex digits of the current WAL file's name), which
-- changes the moment a promotion ends. Takes no lock beyond the row's.
CREATE FUNCTION durable_jobs.raise_generation_to_floor()
RETURNS trigger
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $function$
DECLARE
    v_floor bigint := ((('x' || pg_catalog.substr(pg_catalog.pg_walfile_name(pg_catalog.pg_current_wal_lsn()), 1, 8))::bit(32)::bigint - 1) << 40) + 1;
BEGIN
    IF NEW.lease_fencing_generation < v_floor THEN
        NEW.lease_fencing_generation := v_floor;
    END IF;
    IF pg_catalog.current_setting('synchronous_commit') NOT IN ('off', 'local') THEN
        PERFORM pg_catalog.set_config('synchronous_commit', 'local', true);
    END IF;
    RETURN NEW;
END;
$function$;

ALTER FUNCTION durable_jobs.raise_generation_to_floor() OWNER TO durable_job_claim_owner;
REVOKE ALL ON FUNCTION durable_jobs.raise_generation_to_floor() FROM PUBLIC;

CREATE TRIGGER job_record_generation_floor
    BEFORE UPDATE OF lease_fencing_generation ON durable_jobs.job_record
    FOR EACH ROW
    WHEN (NEW.lease_fencing_generation > OLD.lease_fencing_generation)
    EXECUTE FUNCTION durable_jobs.raise_generation_to_floor();
COMMENT ON TRIGGER job_record_generation_floor ON durable_jobs.job_record IS
    'Raises a claim''s fencing generation to the WAL timeline''s floor, ((timeline - 1) << 40) + 1, so it strictly increases across promotions; the claim''s COMMIT does not wait for a synchronous standby.';


SELECT pg_catalog.pg_advisory_xact_lock(1279655936, 1);
INSERT INTO durable_jobs.control_evidence_record (evidence_kind, queue_name, previous_values, new_values, change_reason)
VALUES ('migration_applied', NULL, NULL, '{"migration_version": 11, "migration_name": "011_generation_survives_promotion"}',
        COALESCE(NULLIF(pg_catalog.current_setting('leasefence.migration_reason', true), ''), 'leasefence bundle migration'));

---- create above / drop below ----

DROP TRIGGER job_record_generation_floor ON durable_jobs.job_record;
DROP FUNCTION durable_jobs.raise_generation_to_floor();

SELECT pg_catalog.pg_advisory_xact_lock(1279655936, 1);
INSERT INTO durable_jobs.control_evidence_record (evidence_kind, queue_name, previous_values, new_values, change_reason)
VALUES ('migration_reverted', NULL, NULL, '{"migration_version": 11, "migration_name": "011_generation_survives_promotion"}',
        COALESCE(NULLIF(pg_catalog.current_setting('leasefence.migration_reason', true), ''),
                 'leasefence bundle migration rolled back'));
