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
	cases := []struct {
		conn, want string
	}{
		// Keyword/value strings: a password quoted with spaces around "=", one
		// with an escaped quote, a bad value elsewhere.
		{`host=127.0.0.1 password = 'S3CRET pw' dbname=x connect_timeout=abc`, "(parameter connect_timeout)"},
		{`host=127.0.0.1 password='S3\'CRET pw' dbname=x connect_timeout=abc`, "(parameter connect_timeout)"},
		{`host=127.0.0.1 password=S3CRET\ pw connect_timeout=abc`, "(parameter connect_timeout)"},
		{`host=127.0.0.1 password=S3CRET sslmode=sometimes`, "(parameter sslmode)"},
		{`password=S3CRET port=99999 dbname=x`, "(parameter port)"},
		{`password=S3CRET min_protocol_version=3.2 max_protocol_version=3.0`, "(parameter min_protocol_version, max_protocol_version)"},
		{`host=h connect_timeout=x password=S3CRET\`, "(parameter connect_timeout)"},
		{`host=h password=S3CRET connect_timeout=abc password=S3CRET2`, "(parameter connect_timeout)"},
		{`host=h password=S3CRET connect_timeout=abc port=x`, "(parameter connect_timeout, port)"},
		// Syntax errors: an unquoted password with a space, an unterminated
		// quote, stray words.
		{`host=h password=S3CRET pw connect_timeout=5`, `(a word without "=" after the value of parameter password; quote a value that holds spaces)`},
		{`host=h password='S3CRET pw connect_timeout=5`, "(parameter password: its quoted value has no closing quote)"},
		{`host=h password='S3CRET\' pw' S3CRET`, `(text without "=" after the value of parameter password; quote a value that holds spaces)`},
		{`S3CRET`, `(text without "=" at its start)`},
		{`=S3CRET`, "(a value without a keyword at its start)"},
		// URLs: a percent-encoded password, a bad encoding in the password,
		// host, port or query, IPv6 hosts, several hosts.
		{`postgres://u:S3CRET%20pw@127.0.0.1/db?connect_timeout=abc`, "(parameter connect_timeout)"},
		{`postgresql://u:S3CRET@127.0.0.1:5432,h2:99999/db`, "(parameter port)"},
		{`postgres://u:S3CRET%zzpw@127.0.0.1/db`, "(parameter password: bad percent-encoding or spaces)"},
		{`postgres://u:S3CRET%00@127.0.0.1/db`, "(parameter password: bad percent-encoding or spaces)"},
		{`postgres://u:S3CRET%2f%2F%41@127.0.0.1/db?connect_timeout=x`, "(parameter connect_timeout)"},
		{`postgres://S3CRET%zz@127.0.0.1/db`, "(parameter user: bad percent-encoding or spaces)"},
		{`postgres://u:S3CRET@%zz/db`, "(parameter host: bad percent-encoding or spaces)"},
		{`postgres://u:S3CRET@h:%zz/db`, "(parameter port: bad percent-encoding or spaces)"},
		{`postgres://u:S3CRET@h/S3CRET%zz`, "(parameter dbname: bad percent-encoding or spaces)"},
		{`postgres://u:S3CRET@[::1/db`, `(parameter host: an IPv6 address without "]")`},
		{`postgres://u:S3CRET@[::1]:5432/db?sslmode=sometimes`, "(parameter sslmode)"},
		{`postgres://u:S3CRET@h/db?dbname=x&&password=S3CRET&connect_timeout=-1s`, "(parameter connect_timeout)"},
		{`postgres://u:S3CRET@h?sslmode=require=S3CRET`, `(parameter sslmode: needs exactly one "=" in the URL's query)`},
		{`postgres://u:S3CRET@h/db?S3CRET`, `(parameter (unknown keyword): needs exactly one "=" in the URL's query)`},
		{`postgres://u:S3CRET@h/db?S3CRET%zz=1`, "(a keyword in the URL's query: bad percent-encoding or spaces)"},
		{`postgres://u@h/db?password=S3CRET%zz`, "(parameter password: bad percent-encoding or spaces)"},
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
