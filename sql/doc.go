// Package sqlbundle embeds leasefence's PostgreSQL migration bundle and
// applies it with tern's migrator.
//
// # Overview
//
// The bundle is the authority of leasefence: every table, role and
// SECURITY DEFINER function that fences a job lease lives in three folders:
//
//	sql/migrations/  the numbered tern migrations, 001_..., 002_..., ...
//	sql/functions/   one file per function family and version: the source
//	                 of every function body
//	sql/roles/       the cluster-wide roles
//
// A migration pulls a family in with tern's {{ template "functions/claim.sql" . }};
// tern reads shared templates from the folders beside the migrations, and
// this package presents the three folders to it that way (Migrations).
//
// # Released migrations never change
//
// A database that is at version N never runs migrations 1 to N again, so
// a change to what a released migration installs would reach new installs
// and never the databases users already run. What a migration installs is
// therefore frozen from the commit that adds it: sql/released.sha256 holds
// the digest of each migration as tern renders it (its up and down SQL with
// every template expanded), and TestReleasedMigrationsNeverChange fails
// when one differs. sql/manifest.json holds, for every version, a digest of
// each function's definition, owner, settings and privileges; `leasectl
// audit` (AUDIT-FUNCTION-DRIFT) and `leasectl migrate status` report a live
// function that differs from what its recorded version installs.
//
// # How to change a function
//
//  1. Copy the family's newest file to the next version, for example
//     sql/functions/claim.sql (what 002 installs) to claim_v2.sql, or
//     claim_v2.sql to claim_v3.sql, and change the copy. Never edit a file
//     that a released migration includes.
//  2. Add the next numbered migration, 00N_what_changed.sql. Its up part
//     replaces the functions from the new file ({{ template
//     "functions/claim_v2.sql" . }}, written with CREATE OR REPLACE, or a
//     DROP FUNCTION first when a signature or result type changes); its down
//     part puts the previous version back the same way, so that `up` then
//     `down` gives exactly the catalog of the version before. Like every
//     migration it records migration_applied and, going down,
//     migration_reverted in the control evidence.
//  3. Add the migration's line to sql/released.sha256 (the test prints it)
//     and regenerate the manifest:
//     go test ./sql/integration -run TestBundleManifest -update-manifest.
//  4. The upgrade tests (TestUpgradeFromEveryVersionEqualsFreshInstall,
//     TestDownToEveryVersionEqualsThatVersion) then check that every
//     installed version upgrades to exactly a fresh install and back.
//
// # Use
//
//	conn, _ := pgx.Connect(ctx, url)
//	m, err := sqlbundle.NewMigrator(ctx, conn)
//	if err != nil { ... }
//	err = m.Migrate(ctx) // up to the newest version
//
// With the plain tern command line, copy the three folders into one first,
// the migrations at its root:
//
//	mkdir -p /tmp/leasefence && cp sql/migrations/*.sql /tmp/leasefence/ &&
//	  cp -r sql/functions sql/roles /tmp/leasefence/
//	tern migrate --migrations /tmp/leasefence \
//	  --version-table public.leasefence_schema_version --conn-string "$DATABASE_URL"
//
// Superuser only: the connecting role must be a superuser. NewMigrator runs
// Preflight first and refuses, having changed nothing, a non-superuser, a
// version table that is not the plain table tern creates, and pre-existing
// bundle roles that can log in, are elevated or (definer owners) have
// members. Every migration it runs pins search_path to pg_catalog, pg_temp
// for its own transaction and checks the role and the version table again,
// so nothing it creates binds an operator planted in public. The plain tern
// command line above does neither: use it only where nobody but the
// installer can create in public.
package sqlbundle
