package goclient

import (
	"cmp"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
)

// Password-safe messages for connection strings and connections. pgx's
// error about a connection string it cannot parse quotes the string with
// its password masked only on a best-effort basis (a password with a space
// or an escaped quote in it, or in a keyword pgx does not expect, shows
// through), and its connect errors name the login and the database.
// ConnStringError finds out by itself which parameter is wrong and says
// only that, in words of its own: "cannot parse the connection string
// (parameter connect_timeout)"; ConnectError tells a failed connection
// without the login or the database.

// connParam is one parameter of a connection string: its keyword (as pgx
// names it: dbname is database) and its value.
type connParam struct {
	key   string
	value string
}

// connKeywords are the keywords libpq and pgx give a meaning to. Only these
// are ever named in a message; any other keyword is sent to the server as a
// setting and never makes a connection string fail to parse.
var connKeywords = []string{
	"host", "hostaddr", "port", "database", "user", "password", "passfile", "connect_timeout",
	"sslmode", "sslkey", "sslcert", "sslcertmode", "sslrootcert", "sslnegotiation", "sslpassword", "sslsni", "ssl",
	"krbspn", "krbsrvname", "gssencmode", "target_session_attrs", "service", "servicefile",
	"min_protocol_version", "max_protocol_version", "channel_binding", "require_auth",
	"application_name", "fallback_application_name", "options", "client_encoding", "timezone", "search_path",
	"statement_cache_capacity", "description_cache_capacity", "default_query_exec_mode",
	"pool_max_conns", "pool_min_conns", "pool_min_idle_conns", "pool_max_conn_lifetime",
	"pool_max_conn_idle_time", "pool_health_check_period", "pool_max_conn_lifetime_jitter", "pool_ping_timeout",
}

// connKeyName is how a message names keyword key: itself when it is one of
// connKeywords (database as dbname, the keyword libpq documents), else words
// that say nothing of its text.
func connKeyName(key string) string {
	switch {
	case key == "database":
		return "dbname"
	case slices.Contains(connKeywords, key):
		return key
	}
	return "(unknown keyword)"
}

// ConnStringError returns the error to show for connString, which parse
// (the parser the caller uses, such as ParsePoolConfig or pgx.ParseConfig,
// wrapped to return its error only) refused, in place of parse's own
// error. It names the parameters at fault and holds no part of connString
// that is not a known keyword. When connString is empty it blames the PG*
// environment variables.
func ConnStringError(connString string, parse func(string) error) error {
	if connString == "" || parse("") != nil {
		// The environment alone does not parse: the string is not to blame.
		return errors.New("cannot parse the connection settings of the PG* environment variables")
	}
	var params []connParam
	var err error
	if strings.HasPrefix(connString, "postgres://") || strings.HasPrefix(connString, "postgresql://") {
		params, err = splitConnURL(connString)
	} else {
		params, err = splitConnKeywords(connString)
	}
	if err != nil {
		return fmt.Errorf("cannot parse the connection string (%w)", err)
	}
	params = lastOfEachKey(params)
	// The parameters without which the rest parses are at fault; failing
	// that (two of them are wrong), those that do not parse on their own.
	var blamed []string
	for i, p := range params {
		if parse(joinConnParams(slices.Delete(slices.Clone(params), i, i+1))) == nil {
			blamed = append(blamed, connKeyName(p.key))
		}
	}
	// A host never fails to parse by itself, but without one pgx assumes a
	// Unix socket and checks no TLS setting: it is blamed only alone.
	if len(blamed) > 1 {
		blamed = slices.DeleteFunc(blamed, func(name string) bool { return name == "host" })
	}
	if len(blamed) == 0 {
		for _, p := range params {
			if parse(joinConnParams([]connParam{p})) != nil {
				blamed = append(blamed, connKeyName(p.key))
			}
		}
	}
	return fmt.Errorf("cannot parse the connection string (parameter %s)",
		cmp.Or(strings.Join(blamed, ", "), "unknown: no single one is at fault"))
}

// lastOfEachKey keeps the last parameter of each keyword, the one that
// counts, in the order of their first appearance.
func lastOfEachKey(params []connParam) []connParam {
	var out []connParam
	for _, p := range params {
		if i := slices.IndexFunc(out, func(o connParam) bool { return o.key == p.key }); i >= 0 {
			out[i] = p
			continue
		}
		out = append(out, p)
	}
	return out
}

// joinConnParams writes params as a keyword/value string, every value
// quoted.
func joinConnParams(params []connParam) string {
	quote := strings.NewReplacer(`\`, `\\`, `'`, `\'`)
	parts := make([]string, 0, len(params))
	for _, p := range params {
		parts = append(parts, p.key+"='"+quote.Replace(p.value)+"'")
	}
	return strings.Join(parts, " ")
}

// connSpace is the white space of keyword/value strings.
const connSpace = " \t\n\r\v\f"

// splitConnKeywords splits a keyword/value string the way pgx does
// (github.com/jackc/pgx/v5/pgconn parseKeywordValueSettings, after libpq).
// A syntax error names the keyword of the parameter where it happens, or the
// one before it.
func splitConnKeywords(s string) ([]connParam, error) {
	var params []connParam
	after := func(what string) error {
		if len(params) == 0 {
			return errors.New(what + " at its start")
		}
		return errors.New(what + " after the value of parameter " + connKeyName(params[len(params)-1].key) +
			"; quote a value that holds spaces")
	}
	s = strings.TrimLeft(s, connSpace)
	for s != "" {
		eq := strings.IndexByte(s, '=')
		if eq < 0 {
			return nil, after(`text without "="`)
		}
		key := strings.Trim(s[:eq], connSpace)
		if strings.ContainsAny(key, connSpace) {
			return nil, after(`a word without "="`)
		}
		if key == "dbname" {
			key = "database"
		}
		if key == "" {
			return nil, after(`a value without a keyword`)
		}
		s = strings.TrimLeft(s[eq+1:], connSpace)
		var raw string
		if strings.HasPrefix(s, "'") {
			end := quotedEnd(s[1:])
			if end < 0 {
				return nil, errors.New("parameter " + connKeyName(key) + ": its quoted value has no closing quote")
			}
			raw, s = s[1:1+end], s[2+end:]
		} else {
			end := 0
			for end < len(s) && !strings.ContainsRune(connSpace, rune(s[end])) {
				if s[end] == '\\' {
					end++
				}
				end++
			}
			end = min(end, len(s))
			raw, s = s[:end], s[end:]
		}
		s = strings.TrimLeft(s, connSpace)
		params = append(params, connParam{key: key, value: unescapeConnValue(raw)})
	}
	return params, nil
}

// quotedEnd returns the index of the quote that closes s (which follows an
// opening quote), skipping backslash escapes, or -1.
func quotedEnd(s string) int {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '\'':
			return i
		}
	}
	return -1
}

// unescapeConnValue drops the backslash of every backslash escape.
func unescapeConnValue(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' {
			i++
			if i == len(s) {
				break
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// splitConnURL splits a postgres:// URL into its parameters the way pgx does
// (pgconn parseURLSettings, after libpq): user and password, host and port
// lists, dbname and the query parameters. A syntax error names the part
// where it happens.
func splitConnURL(s string) ([]connParam, error) {
	p, ok := strings.CutPrefix(s, "postgresql://")
	if !ok {
		p, _ = strings.CutPrefix(s, "postgres://")
	}
	var params []connParam
	// add decodes one part; an empty part of the URL itself (user,
	// password, host, port or dbname) counts as not given, as in pgx, but
	// an empty query value is a value.
	add := func(key, raw string, query bool) error {
		value, ok := uriDecode(raw)
		if !ok {
			return errors.New("parameter " + connKeyName(key) + ": bad percent-encoding or spaces")
		}
		if value != "" || query {
			params = append(params, connParam{key: key, value: value})
		}
		return nil
	}
	if i := strings.IndexAny(p, "@/"); i >= 0 && p[i] == '@' {
		user, password, _ := strings.Cut(p[:i], ":")
		p = p[i+1:]
		if err := cmp.Or(add("user", user, false), add("password", password, false)); err != nil {
			return nil, err
		}
	}
	hostPart := p
	if i := strings.IndexAny(p, "/?"); i >= 0 {
		hostPart, p = p[:i], p[i:]
	} else {
		p = ""
	}
	// Host and port lists, as in host1:port1,host2:port2 (an IPv6 address
	// is in brackets).
	var hosts, ports []string
	for _, spec := range strings.Split(hostPart, ",") {
		host, port := spec, ""
		if strings.HasPrefix(spec, "[") {
			end := strings.IndexByte(spec, ']')
			if end < 0 {
				return nil, errors.New(`parameter host: an IPv6 address without "]"`)
			}
			host, port = spec[1:end], strings.TrimPrefix(spec[end+1:], ":")
		} else if i := strings.IndexByte(spec, ':'); i >= 0 {
			host, port = spec[:i], spec[i+1:]
		}
		hosts, ports = append(hosts, host), append(ports, port)
	}
	if err := cmp.Or(add("host", strings.Join(hosts, ","), false), add("port", strings.Join(ports, ","), false)); err != nil {
		return nil, err
	}
	if rest, ok := strings.CutPrefix(p, "/"); ok {
		dbname, query, _ := strings.Cut(rest, "?")
		if err := add("database", dbname, false); err != nil {
			return nil, err
		}
		p = "?" + query
	}
	query := strings.TrimPrefix(p, "?")
	for pair := range strings.SplitSeq(query, "&") {
		if pair == "" {
			continue
		}
		rawKey, rawValue, found := strings.Cut(pair, "=")
		key, ok := uriDecode(rawKey)
		if !ok {
			return nil, errors.New("a keyword in the URL's query: bad percent-encoding or spaces")
		}
		if key == "dbname" {
			key = "database"
		}
		if !found || strings.Contains(rawValue, "=") {
			return nil, errors.New("parameter " + connKeyName(key) + `: needs exactly one "=" in the URL's query`)
		}
		if err := add(key, rawValue, true); err != nil {
			return nil, err
		}
	}
	return params, nil
}

// uriDecode percent-decodes one part of a URL the way libpq does: spaces
// only at its ends, no %00. It reports false for a part pgx would refuse.
func uriDecode(raw string) (string, bool) {
	raw = strings.Trim(raw, " ")
	if strings.Contains(raw, " ") {
		return "", false
	}
	var b strings.Builder
	for i := 0; i < len(raw); i++ {
		if raw[i] != '%' {
			b.WriteByte(raw[i])
			continue
		}
		if i+2 >= len(raw) || !isHex(raw[i+1]) || !isHex(raw[i+2]) || raw[i+1:i+3] == "00" {
			return "", false
		}
		b.WriteByte(unhex(raw[i+1])<<4 | unhex(raw[i+2]))
		i += 2
	}
	return b.String(), true
}

// isHex reports whether c is a hexadecimal digit.
func isHex(c byte) bool { return strings.IndexByte("0123456789abcdefABCDEF", c) >= 0 }

// unhex is the value of the hexadecimal digit c.
func unhex(c byte) byte {
	switch {
	case c >= 'a':
		return c - 'a' + 10
	case c >= 'A':
		return c - 'A' + 10
	}
	return c - '0'
}

// refusals names the SQLSTATEs a server most often refuses a connection with.
var refusals = map[string]string{
	"28P01": ": password authentication failed",
	"28000": ": the login is not authorized or does not exist",
	"3D000": ": the database does not exist",
	"42501": ": the login may not connect to the database",
	"53300": ": too many connections",
	"57P03": ": the server is starting up or shutting down",
}

// ConnectError returns the error to show for err, a failure to connect
// (of pgx.Connect, pgxpool.New or a pool's Ping), in its place. The
// driver's own text names the login and the database ("failed to connect
// to `user=... database=...`") and a server's refusal usually repeats one
// of them, so neither is shown: a server's refusal is given by its
// SQLSTATE, a network failure by what the last dial reported (an address
// and a system error), anything else by its innermost cause.
func ConnectError(err error) error {
	var pgErr *pgconn.PgError
	var opErr *net.OpError
	switch {
	case errors.As(err, &pgErr):
		return fmt.Errorf("the server refused the connection (SQLSTATE %s%s)", pgErr.Code, refusals[pgErr.Code])
	case errors.As(err, &opErr):
		return errors.New(opErr.Error())
	}
	// The innermost cause: a TLS verification failure ("x509: certificate
	// signed by unknown authority"), a refusal of TLS, a timeout. The
	// driver's wrappers around it are what name the login.
	for next := errors.Unwrap(err); next != nil; next = errors.Unwrap(err) {
		err = next
	}
	return errors.New(err.Error())
}
