package sqlbundle

import (
	"bufio"
	"os"
	"path"
	"strings"
	"testing"
	"text/template/parse"

	"github.com/stretchr/testify/require"
)

// readReleased reads released.sha256: migration name to digest.
func readReleased(t *testing.T) map[string]string {
	t.Helper()
	f, err := os.Open("released.sha256")
	require.NoError(t, err)
	defer f.Close()
	out := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		digest, name, ok := strings.Cut(line, "  ")
		require.True(t, ok, "released.sha256: a line is <sha256>, two spaces, <migration file>: %q", line)
		require.Len(t, digest, 64, "released.sha256: %q", line)
		out[name] = digest
	}
	require.NoError(t, sc.Err())
	return out
}

// What a released migration installs never changes: its rendered SQL, the
// shared templates expanded, has the digest recorded when it was released.
// Every migration has a line, so a new one is frozen from the commit that
// adds it.
func TestReleasedMigrationsNeverChange(t *testing.T) {
	released := readReleased(t)
	migrations, err := Rendered()
	require.NoError(t, err)
	require.Len(t, released, len(migrations), "released.sha256 names every migration of the bundle, and no other")
	for _, m := range migrations {
		want, ok := released[m.Name]
		got := RenderedDigest(m)
		require.True(t, ok, "migration %s has no line in sql/released.sha256; add:\n%s  %s", m.Name, got, m.Name)
		require.Equal(t, want, got,
			"migration %s is released and what it installs must never change: a database already at its version "+
				"would never receive the change. Undo the edit (of the migration or of a file under sql/functions or "+
				"sql/roles that it includes) and put the change in a new migration with new versioned files; see sql/doc.go", m.Name)
	}
}

// The released migrations still render to exactly what 1cc8d2a, the first
// release, installed: 001 and 002 are those digests, so a database
// installed from it and a fresh one at version 2 hold the same SQL.
func TestFirstReleaseDigests(t *testing.T) {
	released := readReleased(t)
	require.Equal(t, "d5f1faa1d1360e01da2d755db8cbc4e2de589833e9c9ded8ec30955a0571ce1b", released["001_schema_and_roles.sql"])
	require.Equal(t, "27a028410291a97a11b5f08c0a3095950aeccb4a3d819d627f6e90e7c6300f97", released["002_lifecycle_functions.sql"])
}

// Every file under functions/ and roles/ is included by some migration (a
// body nobody installs is a body nobody tests), and each name says its
// family and version: <family>.sql is the version 002 (or 001) released,
// <family>_vN.sql (N >= 2) each later one.
func TestEveryFunctionFileIsIncluded(t *testing.T) {
	included := map[string]bool{}
	entries, err := os.ReadDir("migrations")
	require.NoError(t, err)
	for _, e := range entries {
		body, err := os.ReadFile(path.Join("migrations", e.Name()))
		require.NoError(t, err)
		trees, err := parse.Parse(e.Name(), string(body), "{{", "}}", map[string]any{})
		require.NoError(t, err)
		for _, tree := range trees {
			collectTemplates(tree.Root, included)
		}
	}
	for _, dir := range []string{"functions", "roles"} {
		files, err := os.ReadDir(dir)
		require.NoError(t, err)
		for _, f := range files {
			name := dir + "/" + f.Name()
			require.True(t, included[name], "%s is included by no migration: install it from a new migration or remove it", name)
			require.Regexp(t, `^[a-z][a-z_]*[a-z](_v([2-9]|[1-9][0-9]+))?\.sql$`, f.Name(), "file names are <family>.sql or <family>_vN.sql")
		}
	}
}

// collectTemplates adds the name of every {{ template "..." }} under n.
func collectTemplates(n parse.Node, into map[string]bool) {
	switch n := n.(type) {
	case *parse.ListNode:
		if n == nil {
			return
		}
		for _, c := range n.Nodes {
			collectTemplates(c, into)
		}
	case *parse.TemplateNode:
		into[n.Name] = true
	}
}
