package goclient_test

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/mightyetl/leasefence/goclient"
)

// parsePool and parseConn are the parsers ConnStringError replays: the
// pool's (which also reads the pool_* settings) and one connection's.
func parsePool(s string) error { _, err := goclient.ParsePoolConfig(s, 0); return err }
func parseConn(s string) error { _, err := pgx.ParseConfig(s); return err }

func TestConnStringErrorNamesTheParameterAndShowsNoneOfTheText(t *testing.T) {
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
		{`postgres://u:S3CRET@h:99999`, "(parameter port)"},
		{`postgres://u:S3CRET pw@h/db`, "(parameter password: bad percent-encoding or spaces)"},
	}
	for _, c := range cases {
		for _, parse := range []func(string) error{parsePool, parseConn} {
			require.Error(t, parse(c.conn), c.conn)
			err := goclient.ConnStringError(c.conn, parse)
			require.EqualError(t, err, "cannot parse the connection string "+c.want, c.conn)
			for _, secret := range []string{"S3CRET", "S3", "CRET", "pw"} {
				require.NotContains(t, err.Error(), secret, c.conn)
			}
		}
	}
	// A pool setting only the pool's parser reads.
	require.EqualError(t, goclient.ConnStringError("host=h password=S3CRET pool_max_conns=many", parsePool),
		"cannot parse the connection string (parameter pool_max_conns)")
	// An empty string, or settings from the environment that do not parse,
	// are not the string's fault.
	for _, s := range []string{"", "host=h password=S3CRET"} {
		require.EqualError(t, goclient.ConnStringError(s, func(string) error { return errors.New("S3CRET") }),
			"cannot parse the connection settings of the PG* environment variables")
	}
	// A parser that refuses every parameter alone and none together.
	require.EqualError(t, goclient.ConnStringError("host=h port=1 dbname=d", func(s string) error {
		if strings.Count(s, "=") <= 1 {
			return nil
		}
		return errors.New("no")
	}), "cannot parse the connection string (parameter unknown: no single one is at fault)")
}

func TestConnectErrorNamesNeitherLoginNorDatabase(t *testing.T) {
	t.Parallel()
	wrap := func(err error) error {
		return fmt.Errorf("failed to connect to `user=S3CRET database=S3CRET`: %w", err)
	}
	require.EqualError(t, goclient.ConnectError(wrap(&pgconn.PgError{Code: "28P01", Message: "S3CRET"})),
		"the server refused the connection (SQLSTATE 28P01: password authentication failed)")
	require.EqualError(t, goclient.ConnectError(wrap(&pgconn.PgError{Code: "XX000", Message: "S3CRET"})),
		"the server refused the connection (SQLSTATE XX000)")
	dial := &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}
	require.EqualError(t, goclient.ConnectError(wrap(dial)), "dial tcp: connection refused")
	require.EqualError(t, goclient.ConnectError(wrap(fmt.Errorf("tls: %w", errors.New("x509: unknown authority")))),
		"x509: unknown authority")
}
