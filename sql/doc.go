// Package sqlbundle embeds leasefence's PostgreSQL migration bundle and
// applies it with tern's migrator.
//
// # Overview
//
// The bundle is the authority of leasefence: every table, role and
// SECURITY DEFINER function that fences a job lease lives in the files
// under sql/migrations/. Function bodies are written once, one file per
// family, in sql/migrations/functions/ (sql/functions is a link to it), and
// each migration pulls them in with tern's {{ template }} so that the
// plain tern command line and this package apply exactly the same SQL:
//
//	tern migrate --migrations sql/migrations \
//	  --version-table public.leasefence_schema_version --conn-string "$DATABASE_URL"
//
// # Use
//
//	conn, _ := pgx.Connect(ctx, url)
//	m, err := sqlbundle.NewMigrator(ctx, conn)
//	if err != nil { ... }
//	err = m.Migrate(ctx) // up to the newest version
//
// The connecting role must be allowed to create roles (the bundle creates
// cluster-wide NOLOGIN roles the first time it is applied) and to own the
// objects it creates; a superuser or the database owner with CREATEROLE.
package sqlbundle
