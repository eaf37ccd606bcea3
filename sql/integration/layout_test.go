package sqlintegration

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/mightyetl/leasefence/internal/pglocal"
	"github.com/mightyetl/leasefence/internal/testdb"
	sqlbundle "github.com/mightyetl/leasefence/sql"
)

// updateSchema rewrites sql/schema.sql from a fresh install.
var updateSchema = flag.Bool("update-schema", false, "rewrite sql/schema.sql from pg_dump of a fresh install")

// schemaPath is sql/schema.sql, seen from this package's folder.
const schemaPath = "../schema.sql"

// createdFunction finds the name of each function a file under sql/functions
// creates.
var createdFunction = regexp.MustCompile(`(?m)^CREATE OR REPLACE FUNCTION durable_jobs\.([a-z_]+)\(`)

// familyFiles returns the current definitions as the bundle embeds them:
// file name under sql/functions to its text.
func familyFiles(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	entries, err := fs.ReadDir(sqlbundle.Migrations(), "functions")
	require.NoError(t, err)
	for _, e := range entries {
		body, err := fs.ReadFile(sqlbundle.Migrations(), path.Join("functions", e.Name()))
		require.NoError(t, err)
		out[e.Name()] = string(body)
	}
	require.NotEmpty(t, out, "sql/functions holds the current definitions")
	return out
}

// The files under sql/functions hold exactly what a fresh install runs, and
// nothing else: every installed function is created by exactly one file
// (once for each of its signatures), no file creates a function the bundle
// does not install, and running every file over a fresh install changes no
// function's definition, owner or grants. The grants are checked from
// nothing: inside the test's transaction every function is first given
// back to the installer with the ACL of a function just created (EXECUTE
// to PUBLIC), so a file that forgets its ALTER ... OWNER, its REVOKE from
// PUBLIC or one GRANT leaves a digest that differs. This is what lets a
// reader trust that the body in sql/functions is the live one.
func TestFunctionFilesHoldTheInstalledDefinitions(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	db := testdb.New(t)
	conn := db.Conn(t)

	installed, err := sqlbundle.FunctionDigests(ctx, conn)
	require.NoError(t, err)
	overloads := map[string]int{}
	for signature := range installed {
		name, _, _ := strings.Cut(strings.TrimPrefix(signature, "durable_jobs."), "(")
		overloads[name]++
	}

	files := familyFiles(t)
	definedIn := map[string][]string{}
	// The text rules (names, no template, CREATE OR REPLACE, one file per
	// function) are sql's TestFunctionFilesAreOneFilePerFamily; this test
	// checks the files against a database.
	for name, body := range files {
		for _, m := range createdFunction.FindAllStringSubmatch(body, -1) {
			definedIn[m[1]] = append(definedIn[m[1]], name)
		}
	}
	for name, n := range overloads {
		require.Len(t, definedIn[name], n,
			"function durable_jobs.%s (%d signature(s)) is created once per signature, in one file of sql/functions: %v",
			name, n, definedIn[name])
	}
	for name, in := range definedIn {
		require.Contains(t, overloads, name, "%v creates durable_jobs.%s, which a fresh install does not have: superseded code", in, name)
	}

	tx, err := conn.Begin(ctx)
	require.NoError(t, err)
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // the test changes nothing it keeps
	_, err = tx.Exec(ctx, `
DO $reset$
DECLARE
    v_function regprocedure;
BEGIN
    FOR v_function IN
        SELECT p.oid::regprocedure FROM pg_catalog.pg_proc p
        WHERE p.pronamespace = 'durable_jobs'::pg_catalog.regnamespace
    LOOP
        EXECUTE pg_catalog.format('ALTER FUNCTION %s OWNER TO %I', v_function,
            (SELECT n.nspowner::regrole::text FROM pg_catalog.pg_namespace n WHERE n.nspname = 'durable_jobs'));
    END LOOP;
    UPDATE pg_catalog.pg_proc SET proacl = NULL WHERE pronamespace = 'durable_jobs'::pg_catalog.regnamespace;
END
$reset$`)
	require.NoError(t, err, "give every function back to the installer with a new function's ACL")
	reset, err := sqlbundle.FunctionDigests(ctx, tx)
	require.NoError(t, err)
	for signature, digest := range installed {
		require.NotEqual(t, digest, reset[signature], "the reset changed %s's owner or grants (else this test checks nothing)", signature)
	}
	for _, name := range slices.Sorted(maps.Keys(files)) {
		_, err := tx.Exec(ctx, files[name])
		require.NoError(t, err, "run sql/functions/%s over a fresh install", name)
	}
	after, err := sqlbundle.FunctionDigests(ctx, tx)
	require.NoError(t, err)
	for signature, digest := range installed {
		require.Equal(t, digest, after[signature],
			"%s: the file under sql/functions that defines it differs from what a fresh install has "+
				"(body, settings, owner or grants); the files hold the current definitions", signature)
	}
	require.Len(t, after, len(installed), "the files create no function a fresh install lacks")
}

// roleListPattern finds the role names in the ARRAY of sql/roles/bundle_roles.sql.
var roleListPattern = regexp.MustCompile(`'(durable_job_[a-z_]+)'`)

// sql/roles/bundle_roles.sql holds every bundle role (sqlbundle.RuntimeRoles
// and DefinerOwnerRoles), runs over an installed cluster without changing
// anything, and refuses a definer owner that can log in.
func TestRoleFileHoldsEveryBundleRole(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	body, err := fs.ReadFile(sqlbundle.Migrations(), "roles/bundle_roles.sql")
	require.NoError(t, err)
	var listed []string
	for _, m := range roleListPattern.FindAllStringSubmatch(string(body), -1) {
		listed = append(listed, m[1])
	}
	want := append(append([]string{}, sqlbundle.RuntimeRoles...), sqlbundle.DefinerOwnerRoles...)
	require.ElementsMatch(t, want, listed, "the role file lists every bundle role once")

	conn := testdb.New(t).Conn(t)
	tx, err := conn.Begin(ctx)
	require.NoError(t, err)
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // the test keeps nothing
	_, err = tx.Exec(ctx, "SET LOCAL lock_timeout = '5s'")
	require.NoError(t, err)
	_, err = tx.Exec(ctx, string(body))
	require.NoError(t, err, "the role file runs over an installed cluster")
	var members int
	require.NoError(t, tx.QueryRow(ctx, `SELECT count(*) FROM pg_catalog.pg_auth_members m
		WHERE m.member = 'durable_job_operator'::regrole
		  AND m.roleid IN ('durable_job_producer'::regrole, 'durable_job_auditor'::regrole)`).Scan(&members))
	require.Equal(t, 2, members, "operators hold the producer and auditor roles")

	_, err = tx.Exec(ctx, "SAVEPOINT before_login")
	require.NoError(t, err)
	_, err = tx.Exec(ctx, "ALTER ROLE durable_job_evidence_owner LOGIN")
	require.NoError(t, err)
	_, err = tx.Exec(ctx, string(body))
	requireSQLState(t, err, "42501", "a definer owner that can log in is refused, never adopted")
	require.Contains(t, err.Error(), "durable_job_evidence_owner")
}

// sql/schema.sql is what a fresh install of the bundle holds in schema
// durable_jobs (tables, indexes, constraints, triggers, functions, owners
// and grants), as pg_dump prints it: the one place a newcomer reads the
// current schema. It is generated; this test fails when it differs from a
// fresh install, and -update-schema rewrites it:
//
//	go test ./sql/integration -run TestGeneratedSchemaIsAFreshInstall -update-schema
func TestGeneratedSchemaIsAFreshInstall(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	db := testdb.New(t)
	var installer string
	require.NoError(t, db.Conn(t).QueryRow(ctx,
		"SELECT nspowner::regrole::text FROM pg_catalog.pg_namespace WHERE nspname = 'durable_jobs'").Scan(&installer))
	got := dumpSchema(t, ctx, db.URL, installer)
	if *updateSchema {
		require.NoError(t, os.WriteFile(schemaPath, []byte(got), 0o644))
		t.Logf("wrote %s", schemaPath)
		return
	}
	want, err := os.ReadFile(schemaPath)
	require.NoError(t, err, "sql/schema.sql is generated: go test ./sql/integration -run TestGeneratedSchemaIsAFreshInstall -update-schema")
	if string(want) != got {
		wantLines, gotLines := strings.Split(string(want), "\n"), strings.Split(got, "\n")
		i := 0
		for i < len(wantLines) && i < len(gotLines) && wantLines[i] == gotLines[i] {
			i++
		}
		line := func(l []string) string {
			if i < len(l) {
				return l[i]
			}
			return "(end of file)"
		}
		t.Fatalf("sql/schema.sql differs from a fresh install from line %d:\n  file:    %s\n  install: %s\n"+
			"regenerate it with: go test ./sql/integration -run TestGeneratedSchemaIsAFreshInstall -update-schema",
			i+1, line(wantLines), line(gotLines))
	}
}

// schemaHeader opens sql/schema.sql.
const schemaHeader = `-- GENERATED: do not edit. The schema durable_jobs of a fresh install of
-- the bundle at version %d, as pg_dump --schema-only prints it: tables,
-- indexes, constraints, triggers, functions, owners and grants. The
-- installing superuser is written postgres. The roles are in
-- sql/roles/bundle_roles.sql, the function bodies with their comments in
-- sql/functions. Regenerate after a new migration with:
--   go test ./sql/integration -run TestGeneratedSchemaIsAFreshInstall -update-schema

`

// dumpSchema runs pg_dump on the database at url and returns its schema
// durable_jobs as sql/schema.sql holds it: without the lines that name
// pg_dump's and the server's versions or carry a random key, and with the
// installer written postgres.
func dumpSchema(t *testing.T, ctx context.Context, url, installer string) string {
	t.Helper()
	binDir, err := pglocal.FindBinDir()
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(binDir, "pg_dump"), "--schema-only", "--schema=durable_jobs",
		"--no-tablespaces", "--restrict-key=leasefence", "--dbname="+url)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "pg_dump: %s", stderr.String())
	var b strings.Builder
	fmt.Fprintf(&b, schemaHeader, sqlbundle.NewestVersion())
	installerName := regexp.MustCompile(`\b` + regexp.QuoteMeta(installer) + `\b`)
	blank := 0
	for _, line := range strings.Split(string(out), "\n") {
		switch {
		case strings.HasPrefix(line, "-- Dumped from database version"), strings.HasPrefix(line, "-- Dumped by pg_dump version"),
			strings.HasPrefix(line, `\restrict`), strings.HasPrefix(line, `\unrestrict`):
			continue
		case installer != "postgres" && (strings.HasPrefix(line, "ALTER ") || strings.HasPrefix(line, "GRANT ") ||
			strings.HasPrefix(line, "REVOKE ") || strings.HasPrefix(line, "-- Name: ")):
			line = installerName.ReplaceAllString(line, "postgres")
		}
		if line == "" {
			blank++
			if blank > 1 {
				continue
			}
		} else {
			blank = 0
		}
		b.WriteString(line)
		b.WriteByte('\n')
	}
	return strings.TrimRight(b.String(), "\n") + "\n"
}
