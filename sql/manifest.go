package sqlbundle

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/jackc/pgx/v5"
)

// manifestJSON is sql/manifest.json: for every version of the bundle, the
// digest of each function that version installs.
//
//go:embed manifest.json
var manifestJSON []byte

// Manifest is what each version of the bundle installs, function by
// function: for version V, the digest (FunctionDigests) of every function
// in schema durable_jobs of a database migrated to V. Version 0 has none.
type Manifest map[int32]map[string]string

// BundleManifest returns the manifest this build carries (sql/manifest.json).
func BundleManifest() Manifest {
	var raw struct {
		Versions map[string]map[string]string `json:"versions"`
	}
	if err := json.Unmarshal(manifestJSON, &raw); err != nil {
		panic(fmt.Sprintf("sql/manifest.json: %v", err)) // embedded at build time; TestBundleManifest checks it
	}
	out := Manifest{}
	for v, functions := range raw.Versions {
		n, err := strconv.ParseInt(v, 10, 32)
		if err != nil {
			panic(fmt.Sprintf("sql/manifest.json: version %q: %v", v, err))
		}
		out[int32(n)] = functions
	}
	return out
}

// MarshalJSON writes the manifest as sql/manifest.json holds it: versions
// as keys, each function's signature with its digest, sorted.
func (m Manifest) MarshalJSON() ([]byte, error) {
	versions := map[string]map[string]string{}
	for v, functions := range m {
		versions[strconv.Itoa(int(v))] = functions
	}
	return json.Marshal(struct {
		About    string                       `json:"about"`
		Versions map[string]map[string]string `json:"versions"`
	}{
		About: "sha256 of each durable_jobs function per bundle version: pg_get_functiondef, owner and " +
			"EXECUTE grants. Regenerate with: go test ./sql/integration -run TestBundleManifest -update-manifest",
		Versions: versions,
	})
}

// Beginner is what FunctionDigests reads through: a *pgx.Conn, a
// *pgxpool.Pool or a pgx.Tx.
type Beginner interface {
	// Begin starts a transaction, as pgx's Begin does.
	Begin(ctx context.Context) (pgx.Tx, error)
}

// functionDigestSQL digests each function of the schema: its whole
// definition as PostgreSQL prints it (arguments, result, language,
// volatility, SECURITY DEFINER, SET settings and body), its owner and who
// may execute it. The installing role, which owns the schema, is written
// as <installer> so that databases installed by different superusers
// compare equal. It runs with search_path pinned, since the printed body
// of a BEGIN ATOMIC function qualifies names by the reader's path.
const functionDigestSQL = `
SELECT p.oid::pg_catalog.regprocedure::text,
       pg_catalog.encode(pg_catalog.sha256(pg_catalog.convert_to(pg_catalog.concat_ws(E'\n',
           pg_catalog.pg_get_functiondef(p.oid),
           CASE WHEN p.proowner = n.nspowner THEN '<installer>' ELSE pg_catalog.pg_get_userbyid(p.proowner) END,
           (SELECT pg_catalog.string_agg(g.who || ':' || g.privilege_type, ',' ORDER BY g.who, g.privilege_type)
            FROM (SELECT CASE WHEN a.grantee = 0 THEN 'PUBLIC'
                              WHEN a.grantee = n.nspowner THEN '<installer>'
                              ELSE pg_catalog.pg_get_userbyid(a.grantee) END AS who, a.privilege_type
                  FROM pg_catalog.aclexplode(COALESCE(p.proacl, pg_catalog.acldefault('f', p.proowner))) a) g)),
           'UTF8')), 'hex')
FROM pg_catalog.pg_proc p
JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace
WHERE n.nspname = 'durable_jobs'`

// FunctionDigests returns the digest of every function in schema
// durable_jobs of the database behind db, by signature (for example
// "durable_jobs.cancel_job(bigint)"). It reads only the system catalogs,
// in a read-only transaction, so any login may run it.
func FunctionDigests(ctx context.Context, db Beginner) (map[string]string, error) {
	tx, err := db.Begin(ctx)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // read-only; nothing to keep
	if _, err := tx.Exec(ctx, "SET TRANSACTION READ ONLY"); err != nil {
		return nil, err
	}
	if _, err := tx.Exec(ctx, "SET LOCAL search_path = pg_catalog, pg_temp"); err != nil {
		return nil, err
	}
	rows, _ := tx.Query(ctx, functionDigestSQL)
	out := map[string]string{}
	var signature, digest string
	_, err = pgx.ForEachRow(rows, []any{&signature, &digest}, func() error {
		out[signature] = digest
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Drift compares the functions of a live database (FunctionDigests) with
// what version installs according to the manifest and returns one line per
// difference, sorted: a function that is missing, one that the version
// does not install, and one whose definition, owner or grants differ (a
// body replaced by hand, or a migration skipped). It names functions only,
// never their text. A version the manifest does not know is one line too.
func (m Manifest) Drift(version int32, live map[string]string) []string {
	want, ok := m[version]
	if !ok {
		return []string{fmt.Sprintf("version %d is not in this build's manifest: the database was migrated by another leasectl", version)}
	}
	var out []string
	for _, signature := range slices.Sorted(maps.Keys(want)) {
		got, ok := live[signature]
		switch {
		case !ok:
			out = append(out, fmt.Sprintf("function %s is missing (version %d installs it)", signature, version))
		case got != want[signature]:
			out = append(out, fmt.Sprintf("function %s differs from what version %d installs (definition, owner or grants)", signature, version))
		}
	}
	for _, signature := range slices.Sorted(maps.Keys(live)) {
		if _, ok := want[signature]; !ok {
			out = append(out, fmt.Sprintf("function %s is not installed by version %d", signature, version))
		}
	}
	return out
}
