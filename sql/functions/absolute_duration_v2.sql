-- absolute_duration, version 2 (migration 009): the body of input_checks_v2.sql's
-- version with every operator written OPERATOR(pg_catalog.x). The body is
-- an SQL-standard RETURN expression, parsed when the function is created:
-- its operators on numeric and integer have no exact match in pg_catalog,
-- so a database installed without the migrator's pinned search_path (plain
-- tern, see sql/doc.go) could have bound them to operators planted in
-- public. Qualified, they bind to pg_catalog under any search_path.
-- OPERATOR(...) has one precedence for every operator, so every operand
-- is parenthesised: the expression tree is exactly version 1's.
--
-- absolute_duration: an interval as a plain duration in seconds, without a
-- month or day part ('1 day' -> '24:00:00'), so that adding it to a
-- timestamptz gives the same instant under every TimeZone. NULL (refused by
-- the callers) when the interval has a month or year part (a month has no
-- fixed length) or day and time parts of opposite signs ('1 day -1 second').
-- NULL in, NULL out. Takes no lock.
CREATE OR REPLACE FUNCTION durable_jobs.absolute_duration(p_value interval)
RETURNS interval
LANGUAGE sql
IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
RETURN CASE
    WHEN (EXTRACT(year FROM p_value) OPERATOR(pg_catalog.<>) 0)
        OR (EXTRACT(month FROM p_value) OPERATOR(pg_catalog.<>) 0) THEN NULL
    WHEN (EXTRACT(day FROM p_value) OPERATOR(pg_catalog.*)
          (EXTRACT(epoch FROM p_value) OPERATOR(pg_catalog.-) (EXTRACT(day FROM p_value) OPERATOR(pg_catalog.*) 86400)))
        OPERATOR(pg_catalog.<) 0 THEN NULL
    ELSE pg_catalog.make_interval(secs => EXTRACT(epoch FROM p_value)::double precision)
END;
