-- refuse_evidence_change: trigger that keeps control_evidence_record
-- append-only. Fires before UPDATE, DELETE (per row) and TRUNCATE (per
-- statement) for every role, the table owner included.
-- Raises LF004 (evidence is append-only). Takes no lock of its own.
CREATE FUNCTION durable_jobs.refuse_evidence_change()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $function$
BEGIN
    RAISE EXCEPTION USING
        ERRCODE = 'LF004',
        MESSAGE = 'control evidence is append-only',
        DETAIL = pg_catalog.format('%s on %s is refused', TG_OP, TG_TABLE_NAME),
        HINT = 'Append a new evidence record instead.';
END;
$function$;
REVOKE ALL ON FUNCTION durable_jobs.refuse_evidence_change() FROM PUBLIC;
