package sqlbundle

import (
	"bufio"
	"flag"
	"os"
	"path"
	"strings"
	"testing"

	"github.com/jackc/tern/v2/migrate"
	"github.com/stretchr/testify/require"
)

// freeze rewrites every migration file that is not yet frozen as its
// rendered SQL (see sql/doc.go, "How to change a function").
var freeze = flag.Bool("freeze", false, "rewrite each migration under sql/migrations as its rendered SQL, templates expanded")

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
	for _, m := range migrations {
		want, ok := released[m.Name]
		got := RenderedDigest(m)
		require.True(t, ok, "migration %s has no line in sql/released.sha256; add:\n%s  %s", m.Name, got, m.Name)
		require.Equal(t, want, got,
			"migration %s is released and what it installs must never change: a database already at its version "+
				"would never receive the change. Undo the edit of its frozen file and make the change in the family file "+
				"under sql/functions and a new migration that includes it; see sql/doc.go", m.Name)
	}
	require.Len(t, released, len(migrations), "released.sha256 names every migration of the bundle, and no other")
}

// The released migrations still render to exactly what 1cc8d2a, the first
// release, installed: 001 and 002 are those digests, so a database
// installed from it and a fresh one at version 2 hold the same SQL.
func TestFirstReleaseDigests(t *testing.T) {
	released := readReleased(t)
	require.Equal(t, "d5f1faa1d1360e01da2d755db8cbc4e2de589833e9c9ded8ec30955a0571ce1b", released["001_schema_and_roles.sql"])
	require.Equal(t, "27a028410291a97a11b5f08c0a3095950aeccb4a3d819d627f6e90e7c6300f97", released["002_lifecycle_functions.sql"])
}

// Every migration file is frozen: it holds its rendered SQL, with no
// template action left, so that editing a file under sql/functions or
// sql/roles (which hold the current definitions, edited in place) can never
// change what a released migration installs. A new migration may be written
// with {{ template "functions/<family>.sql" . }} while it is a draft; -freeze
// renders it into its file before it is committed:
//
//	go test ./sql -run TestMigrationsAreFrozen -freeze
func TestMigrationsAreFrozen(t *testing.T) {
	migrations, err := Rendered()
	require.NoError(t, err)
	for _, m := range migrations {
		file := path.Join("migrations", m.Name)
		body, err := os.ReadFile(file)
		require.NoError(t, err)
		want := frozenText(m)
		if string(body) == want {
			continue
		}
		if *freeze {
			require.NoError(t, os.WriteFile(file, []byte(want), 0o644))
			t.Logf("froze %s", file)
			continue
		}
		t.Errorf("%s is not frozen (it still holds a template action, or text that tern does not keep as it is); "+
			"render it into its file with: go test ./sql -run TestMigrationsAreFrozen -freeze", file)
	}
}

// frozenText is a migration as its frozen file holds it: the rendered up
// SQL, tern's separator line, the rendered down SQL. tern reads it back to
// the same up and down SQL, so freezing leaves RenderedDigest unchanged.
func frozenText(m *migrate.Migration) string {
	return m.UpSQL + "\n\n---- create above / drop below ----\n\n" + m.DownSQL + "\n"
}
