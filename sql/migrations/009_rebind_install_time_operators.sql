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
{{ template "functions/absolute_duration_v2.sql" . }}

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
