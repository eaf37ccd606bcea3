// Package sqlbundle embeds leasefence's PostgreSQL migration bundle and
// applies it with tern's migrator.
//
// # Overview
//
// The bundle is the authority of leasefence: every table, role and
// SECURITY DEFINER function that fences a job lease. It lives in three
// folders and one generated file:
//
//	sql/migrations/  the numbered tern migrations, 001_..., 002_..., ...,
//	                 each frozen as the SQL it ran when it was released
//	sql/functions/   one file per function family (claim.sql, renewal.sql,
//	                 terminal.sql, ...): the current definition of each
//	                 function, with its comment, owner and grants
//	sql/roles/       the cluster-wide roles as they are now
//	sql/schema.sql   generated: the whole schema of a fresh install as
//	                 pg_dump prints it (tables, indexes, constraints,
//	                 triggers, functions, owners, grants)
//
// To read what a function does now, open its family file (docs/sql-api.md
// links each function of the contract to it); to read the tables, open
// sql/schema.sql. Tests keep both true: sql/integration's
// TestFunctionFilesHoldTheInstalledDefinitions runs every family file over a
// fresh install and fails when any function's definition, owner or grants
// would change, or when a function is defined in no file or in two, and
// TestGeneratedSchemaIsAFreshInstall fails when sql/schema.sql differs from
// pg_dump of a fresh install.
//
// # Released migrations never change
//
// A database that is at version N never runs migrations 1 to N again, so
// a change to what a released migration installs would reach new installs
// and never the databases users already run. Each migration file is
// therefore frozen: it holds its rendered SQL, with no template action left
// (TestMigrationsAreFrozen), so that editing a family file in place cannot
// change it, and sql/released.sha256 holds the digest of each migration as
// tern renders it (its up and down SQL), which
// TestReleasedMigrationsNeverChange checks. sql/manifest.json holds, for
// every version, a digest of each function's definition, owner, settings
// and privileges; `leasectl audit` (AUDIT-FUNCTION-DRIFT) and `leasectl
// migrate status` report a live function that differs from what its
// recorded version installs.
//
// # How to change a function
//
//  1. Edit the function in its family file under sql/functions, in place
//     (CREATE OR REPLACE, its comment above it, its ALTER ... OWNER, REVOKE
//     and GRANT below it). A new function goes into the family it belongs
//     to; a new family is a new file <family>.sql.
//  2. Add the next numbered migration, 0NN_what_changed.sql, as a draft: its
//     up part includes the family with tern's
//     {{ template "functions/claim.sql" . }} (a DROP FUNCTION first when a
//     signature or result type changes); its down part puts the previous
//     definitions back as plain SQL, copied from the family file as it was
//     (git show HEAD:sql/functions/claim.sql), so that `up` then `down`
//     gives exactly the catalog of the version before. Like every migration
//     it records migration_applied and, going down, migration_reverted in
//     the control evidence (copy those statements from the previous
//     migration). Run the tests against the draft as you work: tern renders
//     the template.
//  3. Freeze the migration, add its digest and regenerate the generated
//     files, in the commit that adds it:
//     go test ./sql -run TestMigrationsAreFrozen -freeze (renders the draft
//     into its file), then add the line TestReleasedMigrationsNeverChange
//     prints to sql/released.sha256, then
//     go test ./sql/integration -run 'TestBundleManifest|TestGeneratedSchemaIsAFreshInstall' -update-manifest -update-schema.
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
// The options are the rules leasectl migrate applies: WithLockTimeout
// (take the migration lock, waiting at most that long, and name the
// sessions that hold it), WithChangeRecord (the reason, ticket and
// approver each migration records) and WithEvidenceGuard (refuse a
// downgrade that erases control evidence unless ExportEvidence wrote it
// first). DropRoles drops the bundle's roles after a downgrade to 0;
// ReadStatus reads the version and the function drift, also as an auditor.
//
// With the plain tern command line, point it at sql/migrations (frozen,
// the migrations include nothing from the other folders):
//
//	tern migrate --migrations sql/migrations \
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
