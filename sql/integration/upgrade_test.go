package sqlintegration

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/mightyetl/leasefence/internal/testdb"
	sqlbundle "github.com/mightyetl/leasefence/sql"
)

// updateManifest rewrites sql/manifest.json from what each version installs.
var updateManifest = flag.Bool("update-manifest", false, "rewrite sql/manifest.json from a fresh install of every version")

// manifestPath is sql/manifest.json, seen from this package's folder.
const manifestPath = "../manifest.json"

// catalogSnapshotSQL lists, one text line per fact, everything the bundle
// puts in a database: functions (whole definitions), relations, columns,
// defaults, constraints, indexes, triggers and whether they are enabled,
// rules, row-level policies, types, privileges, comments, the bundle's
// roles, their attributes, settings and memberships. Object ids are left
// out, so two databases with the same bundle give the same lines whatever
// order their objects were made in; the installing role (the schema's
// owner) is written <installer>.
const catalogSnapshotSQL = `
WITH s AS (SELECT oid, nspowner FROM pg_namespace WHERE nspname = 'durable_jobs'),
who(oid, name) AS (
    SELECT r.oid, CASE WHEN r.oid = (SELECT nspowner FROM s) THEN '<installer>' ELSE r.rolname END FROM pg_roles r
    UNION ALL SELECT 0, 'PUBLIC'),
acl(kind, obj, acl) AS (
    SELECT 'relation', c.relname, c.relacl FROM pg_class c WHERE c.relnamespace = (SELECT oid FROM s)
    UNION ALL SELECT 'function', p.oid::regprocedure::text, p.proacl FROM pg_proc p WHERE p.pronamespace = (SELECT oid FROM s)
    UNION ALL SELECT 'type', t.typname, t.typacl FROM pg_type t WHERE t.typnamespace = (SELECT oid FROM s)
    UNION ALL SELECT 'schema', 'durable_jobs', n.nspacl FROM pg_namespace n WHERE n.oid = (SELECT oid FROM s)
    UNION ALL SELECT 'column', c.relname || '.' || a.attname, a.attacl
      FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
      WHERE c.relnamespace = (SELECT oid FROM s) AND a.attnum > 0 AND NOT a.attisdropped),
bundle_roles AS (SELECT oid, rolname FROM pg_roles WHERE rolname = ANY ($1::text[])),
facts(line) AS (
    SELECT 'function ' || p.oid::regprocedure::text || ' owner ' || (SELECT name FROM who WHERE who.oid = p.proowner)
           || E'\n' || pg_get_functiondef(p.oid)
    FROM pg_proc p WHERE p.pronamespace = (SELECT oid FROM s)
    UNION ALL
    SELECT 'relation ' || c.relname || ' kind ' || c.relkind::text || ' owner ' || (SELECT name FROM who WHERE who.oid = c.relowner)
           || ' options ' || COALESCE(c.reloptions::text, '') || ' rls ' || c.relrowsecurity || '/' || c.relforcerowsecurity
           || ' comment ' || COALESCE(obj_description(c.oid, 'pg_class'), '')
    FROM pg_class c WHERE c.relnamespace = (SELECT oid FROM s)
    UNION ALL
    SELECT 'columns ' || c.relname || ': ' || string_agg(a.attname || ' ' || format_type(a.atttypid, a.atttypmod)
               || CASE WHEN a.attnotnull THEN ' not null' ELSE '' END
               || COALESCE(' default ' || pg_get_expr(d.adbin, d.adrelid), '')
               || CASE WHEN a.attidentity::text <> '' THEN ' identity ' || a.attidentity::text ELSE '' END
               || CASE WHEN a.attgenerated::text <> '' THEN ' generated ' || a.attgenerated::text ELSE '' END
               || COALESCE(' comment ' || col_description(c.oid, a.attnum), ''), ', ' ORDER BY a.attnum)
    FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
    LEFT JOIN pg_attrdef d ON d.adrelid = c.oid AND d.adnum = a.attnum
    WHERE c.relnamespace = (SELECT oid FROM s) GROUP BY c.relname
    UNION ALL
    SELECT 'constraint ' || c.relname || '.' || k.conname || ' ' || pg_get_constraintdef(k.oid)
    FROM pg_constraint k JOIN pg_class c ON c.oid = k.conrelid WHERE c.relnamespace = (SELECT oid FROM s)
    UNION ALL
    SELECT 'index ' || pg_get_indexdef(i.indexrelid)
    FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid WHERE c.relnamespace = (SELECT oid FROM s)
    UNION ALL
    SELECT 'trigger ' || pg_get_triggerdef(t.oid) || ' enabled ' || t.tgenabled::text
    FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
    WHERE c.relnamespace = (SELECT oid FROM s) AND NOT t.tgisinternal
    UNION ALL
    SELECT 'rule ' || r.rulename || ' ' || pg_get_ruledef(r.oid)
    FROM pg_rewrite r JOIN pg_class c ON c.oid = r.ev_class WHERE c.relnamespace = (SELECT oid FROM s)
    UNION ALL
    SELECT 'policy ' || p.tablename || '.' || p.policyname || ' ' || p.cmd || ' ' || p.roles::text
           || ' ' || COALESCE(p.qual, '') || ' ' || COALESCE(p.with_check, '')
    FROM pg_policies p WHERE p.schemaname = 'durable_jobs'
    UNION ALL
    SELECT 'type ' || t.typname || ' ' || t.typtype::text || ' owner ' || (SELECT name FROM who WHERE who.oid = t.typowner)
           || COALESCE(' labels ' || (SELECT string_agg(e.enumlabel, ',' ORDER BY e.enumsortorder)
                                      FROM pg_enum e WHERE e.enumtypid = t.oid), '')
    FROM pg_type t WHERE t.typnamespace = (SELECT oid FROM s) AND t.typrelid = 0 AND t.typelem = 0
    UNION ALL
    SELECT 'grant ' || a.kind || ' ' || a.obj || ' to ' || (SELECT name FROM who WHERE who.oid = x.grantee)
           || ' ' || x.privilege_type || CASE WHEN x.is_grantable THEN ' grantable' ELSE '' END
    FROM acl a CROSS JOIN LATERAL aclexplode(a.acl) x WHERE a.acl IS NOT NULL
    UNION ALL
    SELECT 'schema owner ' || (SELECT name FROM who WHERE who.oid = n.nspowner) || ' comment '
           || COALESCE(obj_description(n.oid, 'pg_namespace'), '')
    FROM pg_namespace n WHERE n.oid = (SELECT oid FROM s)
    UNION ALL
    SELECT 'role ' || r.rolname || ' super ' || r.rolsuper || ' inherit ' || r.rolinherit || ' createrole '
           || r.rolcreaterole || ' createdb ' || r.rolcreatedb || ' login ' || r.rolcanlogin || ' replication '
           || r.rolreplication || ' bypassrls ' || r.rolbypassrls || ' settings '
           || COALESCE((SELECT string_agg(cfg, ',' ORDER BY cfg) FROM pg_db_role_setting st, unnest(st.setconfig) cfg
                        WHERE st.setrole = r.oid), '')
    FROM pg_roles r WHERE r.rolname = ANY ($1::text[])
    UNION ALL
    SELECT 'membership ' || (SELECT name FROM who WHERE who.oid = m.member) || ' in ' || (SELECT name FROM who WHERE who.oid = m.roleid)
           || ' admin ' || m.admin_option
    FROM pg_auth_members m
    WHERE m.roleid IN (SELECT oid FROM bundle_roles) AND m.member IN (SELECT oid FROM bundle_roles)
)
SELECT line FROM facts ORDER BY line`

// catalogSnapshot returns the catalog facts of the database behind conn,
// one per line, read with search_path pinned (printed bodies qualify names
// by the reader's path).
func catalogSnapshot(t *testing.T, ctx context.Context, conn *pgx.Conn) string {
	t.Helper()
	tx, err := conn.Begin(ctx)
	require.NoError(t, err)
	defer tx.Rollback(context.Background()) //nolint:errcheck // read only
	return catalogSnapshotIn(t, ctx, tx)
}

// catalogSnapshotIn is catalogSnapshot inside the open transaction tx.
func catalogSnapshotIn(t *testing.T, ctx context.Context, tx pgx.Tx) string {
	t.Helper()
	_, err := tx.Exec(ctx, "SET LOCAL search_path = pg_catalog, pg_temp")
	require.NoError(t, err)
	rows, _ := tx.Query(ctx, catalogSnapshotSQL, bundleRoles)
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err, "read the catalog snapshot")
	return strings.Join(lines, "\n")
}

// installedVersion is a fresh database migrated to one version: its
// catalog snapshot and function digests.
type installedVersion struct {
	catalog   string
	functions map[string]string
}

var (
	versionsOnce sync.Once
	versions     []installedVersion
	versionsErr  error
)

// freshVersions installs every version 0..newest on a fresh database each
// (once per test binary) and returns what each holds.
func freshVersions(t *testing.T) []installedVersion {
	t.Helper()
	versionsOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 4*testTimeout)
		defer cancel()
		for v := int32(0); v <= sqlbundle.NewestVersion(); v++ {
			db, err := testdb.Open(ctx)
			if err != nil {
				versionsErr = err
				return
			}
			conn, err := pgx.Connect(ctx, db.URL)
			if err != nil {
				versionsErr = err
				return
			}
			m := migrator(t, ctx, conn)
			if err := m.MigrateTo(ctx, v); err != nil {
				versionsErr = fmt.Errorf("up --to %d: %w", v, err)
				return
			}
			functions, err := sqlbundle.FunctionDigests(ctx, conn)
			if err != nil {
				versionsErr = err
				return
			}
			versions = append(versions, installedVersion{catalog: catalogSnapshot(t, ctx, conn), functions: functions})
			_ = conn.Close(ctx)
			if err := db.Drop(ctx); err != nil {
				versionsErr = err
				return
			}
		}
	})
	require.NoError(t, versionsErr, "install every version on a fresh database")
	return versions
}

// emptyDatabase is a new database without the bundle and a superuser
// session on it.
func emptyDatabase(t *testing.T, ctx context.Context) (*testdb.DB, *pgx.Conn) {
	t.Helper()
	db := testdb.NewEmpty(t)
	conn, err := pgx.Connect(ctx, db.URL)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	return db, conn
}

// A database installed at any released version and brought up with "up"
// holds exactly what a fresh install of the newest version holds.
func TestUpgradeFromEveryVersionEqualsFreshInstall(t *testing.T) {
	t.Parallel()
	fresh := freshVersions(t)
	newest := sqlbundle.NewestVersion()
	for v := int32(1); v < newest; v++ {
		t.Run(fmt.Sprintf("from_%d", v), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
			defer cancel()
			_, conn := emptyDatabase(t, ctx)
			m := migrator(t, ctx, conn)
			require.NoError(t, m.MigrateTo(ctx, v), "up --to %d", v)
			require.Equal(t, fresh[v].catalog, catalogSnapshot(t, ctx, conn), "up --to %d is a fresh install of %d", v, v)
			require.NoError(t, m.Migrate(ctx), "up from %d", v)
			require.Equal(t, fresh[newest].catalog, catalogSnapshot(t, ctx, conn),
				"up from version %d gives exactly the catalog of a fresh install of version %d", v, newest)
		})
	}
}

// "up" to the newest version and "down --to V" gives exactly the catalog of
// a fresh "up --to V", for every V (0 included: nothing but the roles and
// the version table).
func TestDownToEveryVersionEqualsThatVersion(t *testing.T) {
	t.Parallel()
	fresh := freshVersions(t)
	for v := int32(0); v < sqlbundle.NewestVersion(); v++ {
		t.Run(fmt.Sprintf("to_%d", v), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
			defer cancel()
			_, conn := emptyDatabase(t, ctx)
			m := migrator(t, ctx, conn)
			require.NoError(t, m.Migrate(ctx), "up")
			require.NoError(t, m.MigrateTo(ctx, v), "down --to %d", v)
			require.Equal(t, fresh[v].catalog, catalogSnapshot(t, ctx, conn),
				"up then down --to %d gives exactly the catalog of up --to %d", v, v)
		})
	}
}

// sql/manifest.json holds, for every version, the digest of each function
// a fresh install of that version holds; -update-manifest rewrites it.
func TestBundleManifest(t *testing.T) {
	fresh := freshVersions(t)
	want := sqlbundle.Manifest{}
	for v, installed := range fresh {
		if v > 0 {
			want[int32(v)] = installed.functions
		}
	}
	body, err := json.MarshalIndent(want, "", "  ")
	require.NoError(t, err)
	body = append(body, '\n')
	if *updateManifest {
		require.NoError(t, os.WriteFile(manifestPath, body, 0o644))
	}
	got, err := os.ReadFile(manifestPath)
	require.NoError(t, err)
	require.JSONEq(t, string(body), string(got),
		"sql/manifest.json is not what the bundle installs; after adding a migration run: "+
			"go test ./sql/integration -run TestBundleManifest -update-manifest")
	require.Equal(t, sqlbundle.BundleManifest(), want, "the embedded manifest is the file")
	for v := range fresh {
		if v > 0 {
			require.Empty(t, sqlbundle.BundleManifest().Drift(int32(v), fresh[v].functions), "a fresh install of %d has no drift", v)
		}
	}
}

// The snapshot sees every kind of change an upgrade or a hand could make:
// each change below, made alone in a transaction that is rolled back,
// makes it differ.
func TestCatalogSnapshotSeesEveryKindOfChange(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	db := testdb.New(t)
	conn, err := pgx.Connect(ctx, db.URL)
	require.NoError(t, err)
	defer conn.Close(context.Background())
	before := catalogSnapshot(t, ctx, conn)
	changes := map[string]string{
		"function body": `CREATE OR REPLACE FUNCTION durable_jobs.refuse_evidence_change() RETURNS trigger
			LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$ BEGIN RETURN OLD; END $$`,
		"function owner":     `ALTER FUNCTION durable_jobs.cancel_job(bigint) OWNER TO durable_job_claim_owner`,
		"function grant":     `GRANT EXECUTE ON FUNCTION durable_jobs.cancel_job(bigint) TO durable_job_worker`,
		"trigger disabled":   `ALTER TABLE durable_jobs.control_evidence_record DISABLE TRIGGER control_evidence_record_append_only`,
		"table grant":        `GRANT SELECT ON durable_jobs.job_payload_record TO durable_job_auditor`,
		"column grant":       `GRANT SELECT (job_payload) ON durable_jobs.job_payload_record TO durable_job_renewal_owner`,
		"column default":     `ALTER TABLE durable_jobs.job_record ALTER COLUMN max_attempts SET DEFAULT 3`,
		"column added":       `ALTER TABLE durable_jobs.job_record ADD COLUMN extra_column_added integer`,
		"constraint dropped": `ALTER TABLE durable_jobs.queue_lease_policy DROP CONSTRAINT queue_lease_policy_bounds`,
		"index added":        `CREATE INDEX job_record_extra_index ON durable_jobs.job_record (created_at)`,
		"comment":            `COMMENT ON TABLE durable_jobs.job_record IS 'changed'`,
		"enum label":         `ALTER TYPE durable_jobs.job_status_kind RENAME VALUE 'QUEUED' TO 'WAITING'`,
		"role attribute":     `ALTER ROLE durable_job_claim_owner LOGIN`,
		"role setting":       `ALTER ROLE durable_job_worker SET statement_timeout = '5s'`,
		"membership":         `GRANT durable_job_renewal_owner TO durable_job_worker`,
		"schema grant":       `GRANT CREATE ON SCHEMA durable_jobs TO durable_job_worker`,
		"row security":       `ALTER TABLE durable_jobs.job_record ENABLE ROW LEVEL SECURITY`,
	}
	for what, change := range changes {
		tx, err := conn.Begin(ctx)
		require.NoError(t, err)
		_, err = tx.Exec(ctx, change)
		require.NoError(t, err, what)
		require.NotEqual(t, before, catalogSnapshotIn(t, ctx, tx), "the snapshot sees a changed %s", what)
		require.NoError(t, tx.Rollback(ctx))
	}
	require.Equal(t, before, catalogSnapshot(t, ctx, conn), "every change was rolled back")
}

// tableRows returns every row of the bundle's tables as JSON objects, by
// table, in key order.
func tableRows(t *testing.T, ctx context.Context, conn *pgx.Conn) map[string][]map[string]any {
	t.Helper()
	out := map[string][]map[string]any{}
	for table, key := range map[string]string{
		"job_record": "job_record_id", "job_payload_record": "job_record_id",
		"job_outcome_ledger": "job_outcome_record_id", "queue_lease_policy": "queue_name",
		"control_evidence_record": "evidence_record_id",
	} {
		rows, _ := conn.Query(ctx, fmt.Sprintf(
			"SELECT to_jsonb(r) FROM durable_jobs.%s r ORDER BY %s", table, key))
		got, err := pgx.CollectRows(rows, pgx.RowTo[map[string]any])
		require.NoError(t, err, "read %s", table)
		out[table] = got
	}
	return out
}

// A database at the first release (version 2) with jobs, a live claim, a
// policy change and evidence keeps all of them through "up": every row is
// there with the values it had (columns a later version adds aside), and
// the claim taken before the upgrade still renews and completes after it.
func TestUpgradeFromFirstReleaseKeepsDataAndLiveClaims(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	db, conn := emptyDatabase(t, ctx)
	m := migrator(t, ctx, conn)
	require.NoError(t, m.MigrateTo(ctx, 2), "install the first release")

	queue := fmt.Sprintf("it_upgrade_%d", queueSequence.Add(1))
	_, err := conn.Exec(ctx, "SELECT durable_jobs.set_queue_lease_policy($1, interval '20 seconds', interval '5 seconds', interval '1 hour', true, 'before the upgrade')", queue)
	require.NoError(t, err)
	_, err = conn.Exec(ctx, "SELECT durable_jobs.record_deployment_version('v1.0.0', 'first release deployed')")
	require.NoError(t, err)
	ids := make([]int64, 3)
	for i := range ids {
		ids[i] = enqueueOn(t, ctx, conn, queue, fmt.Sprintf(`{"batch": %d}`, i))
	}
	worker, err := pgx.Connect(ctx, db.LoginURL(t, "durable_job_worker"))
	require.NoError(t, err)
	defer worker.Close(context.Background())
	owner := "upgrade-worker-1"
	live := mustClaim(t, ctx, worker, queue, owner)
	done := mustClaim(t, ctx, worker, queue, owner)
	require.NoError(t, complete(ctx, worker, done, owner))
	var cancelled bool
	require.NoError(t, conn.QueryRow(ctx, "SELECT durable_jobs.cancel_job($1)", ids[2]).Scan(&cancelled))
	require.True(t, cancelled)
	before := tableRows(t, ctx, conn)

	require.NoError(t, m.Migrate(ctx), "up from the first release")

	after := tableRows(t, ctx, conn)
	for table, rows := range before {
		if table == "control_evidence_record" {
			require.GreaterOrEqual(t, len(after[table]), len(rows), "no evidence is lost")
			after[table] = after[table][:len(rows)]
		}
		require.Len(t, after[table], len(rows), "%s keeps its rows", table)
		for i, row := range rows {
			kept := map[string]any{}
			for column := range row {
				kept[column] = after[table][i][column]
			}
			require.Equal(t, row, kept, "%s row %d keeps its values", table, i)
		}
	}
	mustRenew(t, ctx, worker, live.JobID, live.Token, owner, "renewed", "a claim from before the upgrade renews after it")
	require.NoError(t, complete(ctx, worker, live, owner), "and completes")
	var status string
	require.NoError(t, conn.QueryRow(ctx, "SELECT job_status FROM durable_jobs.job_lifecycle_state($1)", live.JobID).Scan(&status))
	require.Equal(t, "SUCCEEDED", status)
}
