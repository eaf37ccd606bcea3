package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestConnectionStringsThatDoNotParseShowNoneOfTheirText(t *testing.T) {
	t.Parallel()
	// Each string holds a secret (S3CRET, or parts of it) that must never be
	// shown, and is wrong in one place, which the message names.
	// goclient's TestConnStringErrorNamesTheParameterAndShowsNoneOfTheText
	// holds every form; here each kind reaches every command's stderr.
	cases := []struct {
		conn, want string
	}{
		{`host=127.0.0.1 password = 'S3CRET pw' dbname=x connect_timeout=abc`, "(parameter connect_timeout)"},
		{`host=h password=S3CRET pw connect_timeout=5`, `(a word without "=" after the value of parameter password; quote a value that holds spaces)`},
		{`postgres://u:S3CRET%20pw@127.0.0.1/db?connect_timeout=abc`, "(parameter connect_timeout)"},
		{`postgres://u:S3CRET@h/db?S3CRET`, `(parameter (unknown keyword): needs exactly one "=" in the URL's query)`},
	}
	for _, c := range cases {
		for _, args := range [][]string{{"health"}, {"migrate", "status"}, {"demo"}} {
			prefix := "error: connect to database: "
			if args[0] == "demo" {
				prefix = "error: demo: connect to database: "
			}
			r := leasectl(t, append(args, "--database-url", c.conn)...)
			requireCode(t, exitError, r, args, c.conn)
			require.Equal(t, prefix+"cannot parse the connection string "+c.want+"\n", r.stderr, "%v %s", args, c.conn)
			for _, secret := range []string{"S3CRET", "S3", "CRET", "pw"} {
				require.NotContains(t, r.stderr, secret, "%v %s", args, c.conn)
			}
			if args[0] != "demo" {
				require.Empty(t, r.stdout)
			}
		}
	}
	// A pool setting only the commands with a pool read.
	r := leasectl(t, "health", "--database-url", "host=h password=S3CRET pool_max_conns=many")
	requireCode(t, exitError, r)
	require.Equal(t, "error: connect to database: cannot parse the connection string (parameter pool_max_conns)\n", r.stderr)

	// Settings from the environment that do not parse are not the string's
	// fault, and are not shown either.
	for _, args := range [][]string{{"health"}, {"migrate", "up"}, {"health", "--database-url", "host=h password=S3CRET"}} {
		r := leasectlEnv(t, []string{"PGCONNECT_TIMEOUT=S3CRET", "PGPASSWORD=S3CRET"}, args...)
		requireCode(t, exitError, r, args)
		require.Equal(t, "error: connect to database: cannot parse the connection settings of the PG* environment variables\n",
			r.stderr, args)
		require.False(t, strings.Contains(r.output(), "S3CRET"))
	}
}
