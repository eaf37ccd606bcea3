-- leasefence 009: re-create, with every operator qualified as
-- OPERATOR(pg_catalog.x), the expressions of the bundle that PostgreSQL
-- binds when they are created and whose operators have no exact match in
-- pg_catalog, so that whatever search_path they were first created under
-- they now call pg_catalog's operators:
--
-- * queue_lease_policy_bounds (001): renewal_interval <= lease_duration / 3
--   is interval / integer. The first release's migrator (versions 1 and 2)
--   ran 001 under the installer's search_path ("$user", public), so in a
--   database installed then where others could create in public, the CHECK
--   may call an operator public./(interval, integer) that anybody could have
--   planted: it runs, as the definer owner or the operator, on every policy
--   change. `leasectl audit` (AUDIT-OBJECT-DEPENDENCIES) reports it.
-- * queue_lease_policy_absolute_durations (004): EXTRACT(...) = 0 is
--   numeric = integer, and absolute_duration()'s RETURN body (004) uses
--   numeric <> / * / < integer. 004 has only ever been applied by the
--   pinned migrator, but a database migrated with the plain tern command
--   line (sql/doc.go) bound them by the path too.
--
-- Nothing else in 001-008 binds by path: every other expression created
-- at install time (CHECKs, defaults, index predicates, SQL-standard
-- bodies) has exact argument types, and PL/pgSQL and string SQL bodies are
-- planned at run time under their own SET search_path
-- (TestPlainTernInstallBindsOnlyWhatMigrationNineRebinds lists it).
-- The two CHECKs are on queue_lease_policy (one row per queue): re-adding
-- them validates its rows under an ACCESS EXCLUSIVE lock held for the
-- migration's transaction, which policy changes and claims wait for.
-- The down part puts the two CHECKs back as 001 and 004 wrote them (the
-- migrator runs it with search_path pinned, so they bind to pg_catalog
-- again); absolute_duration stays qualified, as its qualified body prints
-- exactly as version 8's and binds what a pinned install of it binds, and
-- going down must not re-open the hole. This migration's version
-- number appears only in its two evidence records below (migration_version 9).

ALTER TABLE durable_jobs.queue_lease_policy
    DROP CONSTRAINT queue_lease_policy_bounds,
    ADD CONSTRAINT queue_lease_policy_bounds CHECK (
        (lease_duration OPERATOR(pg_catalog.>=) interval '1 second')
        AND (lease_duration OPERATOR(pg_catalog.<=) interval '24 hours')
        AND (renewal_interval OPERATOR(pg_catalog.>=) interval '100 milliseconds')
        AND (renewal_interval OPERATOR(pg_catalog.<=) (lease_duration OPERATOR(pg_catalog./) 3))
        AND (max_claim_lifetime OPERATOR(pg_catalog.>=) lease_duration)
        AND (max_claim_lifetime OPERATOR(pg_catalog.<=) interval '7 days')),
    DROP CONSTRAINT queue_lease_policy_absolute_durations,
    ADD CONSTRAINT queue_lease_policy_absolute_durations CHECK (
        (EXTRACT(year FROM lease_duration) OPERATOR(pg_catalog.=) 0)
        AND (EXTRACT(month FROM lease_duration) OPERATOR(pg_catalog.=) 0)
        AND (EXTRACT(day FROM lease_duration) OPERATOR(pg_catalog.=) 0)
        AND (EXTRACT(year FROM renewal_interval) OPERATOR(pg_catalog.=) 0)
        AND (EXTRACT(month FROM renewal_interval) OPERATOR(pg_catalog.=) 0)
        AND (EXTRACT(day FROM renewal_interval) OPERATOR(pg_catalog.=) 0)
        AND (EXTRACT(year FROM max_claim_lifetime) OPERATOR(pg_catalog.=) 0)
        AND (EXTRACT(month FROM max_claim_lifetime) OPERATOR(pg_catalog.=) 0)
        AND (EXTRACT(day FROM max_claim_lifetime) OPERATOR(pg_catalog.=) 0));
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


SELECT pg_catalog.pg_advisory_xact_lock(1279655936, 1);
INSERT INTO durable_jobs.control_evidence_record (evidence_kind, queue_name, previous_values, new_values, change_reason)
VALUES ('migration_applied', NULL, NULL, '{"migration_version": 9, "migration_name": "009_rebind_install_time_operators"}',
        COALESCE(NULLIF(pg_catalog.current_setting('leasefence.migration_reason', true), ''), 'leasefence bundle migration'));

---- create above / drop below ----

ALTER TABLE durable_jobs.queue_lease_policy
    DROP CONSTRAINT queue_lease_policy_bounds,
    ADD CONSTRAINT queue_lease_policy_bounds CHECK (
        lease_duration BETWEEN interval '1 second' AND interval '24 hours'
        AND renewal_interval >= interval '100 milliseconds' AND renewal_interval <= lease_duration / 3
        AND max_claim_lifetime >= lease_duration AND max_claim_lifetime <= interval '7 days'),
    DROP CONSTRAINT queue_lease_policy_absolute_durations,
    ADD CONSTRAINT queue_lease_policy_absolute_durations CHECK (
        EXTRACT(year FROM lease_duration) = 0 AND EXTRACT(month FROM lease_duration) = 0 AND EXTRACT(day FROM lease_duration) = 0
        AND EXTRACT(year FROM renewal_interval) = 0 AND EXTRACT(month FROM renewal_interval) = 0
        AND EXTRACT(day FROM renewal_interval) = 0
        AND EXTRACT(year FROM max_claim_lifetime) = 0 AND EXTRACT(month FROM max_claim_lifetime) = 0
        AND EXTRACT(day FROM max_claim_lifetime) = 0);

SELECT pg_catalog.pg_advisory_xact_lock(1279655936, 1);
INSERT INTO durable_jobs.control_evidence_record (evidence_kind, queue_name, previous_values, new_values, change_reason)
VALUES ('migration_reverted', NULL, NULL, '{"migration_version": 9, "migration_name": "009_rebind_install_time_operators"}',
        COALESCE(NULLIF(pg_catalog.current_setting('leasefence.migration_reason', true), ''),
                 'leasefence bundle migration rolled back'));
