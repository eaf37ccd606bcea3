package audit

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
)

// The transport checks of issue 39 (item 6): AUDIT-TLS-CONFIGURATION, and
// the auditing session's own connection in AUDIT-UNENCRYPTED-SESSIONS.

// hbaRulesSQL lists the pg_hba rules, as the file on disk holds them
// (pg_hba_file_rules), that accept a TCP connection without TLS (host,
// hostnossl, hostnogssenc; not reject) for this database, with whether
// they name a login of a runtime role ($1): all, the login itself, or
// +role for a role it is a member of.
const hbaRulesSQL = `
WITH runtime AS (
    SELECT r.oid, r.rolname::text AS rolname FROM pg_catalog.pg_roles r
    WHERE r.rolcanlogin AND EXISTS (SELECT 1 FROM pg_catalog.pg_roles g
                                    WHERE g.rolname = ANY ($1::text[]) AND pg_catalog.pg_has_role(r.oid, g.oid, 'MEMBER'))
)
SELECT h.line_number, h.type, pg_catalog.array_to_string(h.database, ','), pg_catalog.array_to_string(h.user_name, ','),
       COALESCE(h.address, ''), COALESCE(h.netmask, ''), h.auth_method
FROM pg_catalog.pg_hba_file_rules h
WHERE h.error IS NULL AND h.type IN ('host', 'hostnossl', 'hostnogssenc') AND h.auth_method <> 'reject'
  AND h.database && ARRAY['all', 'sameuser', 'samerole', pg_catalog.current_database()::text]
  AND ('all' = ANY (h.user_name)
       OR EXISTS (SELECT 1 FROM runtime l CROSS JOIN pg_catalog.unnest(h.user_name) u
                  WHERE u = l.rolname
                     OR (pg_catalog.left(u, 1) = '+' AND EXISTS (
                            SELECT 1 FROM pg_catalog.pg_roles g
                            WHERE g.rolname = pg_catalog.substr(u, 2) AND pg_catalog.pg_has_role(l.oid, g.oid, 'MEMBER')))))
ORDER BY h.line_number`

// hbaRule is one row of hbaRulesSQL.
type hbaRule struct {
	Line                                  int32
	Type, Databases, Users, Address, Mask string
	Method                                string
}

// checkTLSConfiguration: the server does not listen beyond loopback with
// ssl off, and no pg_hba rule lets a login of a runtime role connect over
// TCP without TLS from beyond loopback. When the login cannot read
// pg_hba_file_rules (superusers can; others need a grant), the rules are
// not checked and a warning says so.
func checkTLSConfiguration(ctx context.Context, pool DB, o *options) ([]string, error) {
	var ssl, listen string
	var readable bool
	if err := pool.QueryRow(ctx, `SELECT pg_catalog.current_setting('ssl'), pg_catalog.current_setting('listen_addresses'),
		pg_catalog.has_table_privilege('pg_catalog.pg_hba_file_rules', 'SELECT')
		AND pg_catalog.has_function_privilege('pg_catalog.pg_hba_file_rules()', 'EXECUTE')`).Scan(&ssl, &listen, &readable); err != nil {
		return nil, err
	}
	var findings []string
	if beyond := addressesBeyondLoopback(listen); ssl == "off" && len(beyond) > 0 {
		findings = append(findings, fmt.Sprintf("ssl is off while the server listens beyond loopback (listen_addresses %s): "+
			"every TCP connection from another host, its password and every value it sends or reads, crosses the network in plain text",
			strings.Join(beyond, ", ")))
	}
	if !readable {
		o.warn("this login cannot read pg_hba_file_rules, so the pg_hba rules were not checked: run the audit as a superuser, " +
			"or GRANT SELECT ON pg_catalog.pg_hba_file_rules and EXECUTE ON FUNCTION pg_catalog.pg_hba_file_rules() to the auditing login")
		return findings, nil
	}
	rows, _ := pool.Query(ctx, hbaRulesSQL, runtimeRoles)
	rules, err := pgx.CollectRows(rows, pgx.RowToStructByPos[hbaRule])
	if err != nil {
		return nil, err
	}
	for _, r := range rules {
		if !hbaBeyondLoopback(r.Address, r.Mask) {
			continue
		}
		from := r.Address
		if mask := net.ParseIP(r.Mask); mask != nil {
			if v4 := mask.To4(); v4 != nil {
				mask = v4
			}
			ones, _ := net.IPMask(mask).Size()
			from += "/" + strconv.Itoa(ones)
		}
		findings = append(findings, fmt.Sprintf("pg_hba.conf line %d (%s %s %s %s %s) lets a login of a runtime role connect over TCP "+
			"without TLS from beyond loopback: use hostssl (and hostnossl ... reject before it)", r.Line, r.Type, r.Databases, r.Users, from, r.Method))
	}
	return findings, nil
}

// addressesBeyondLoopback returns the entries of a listen_addresses value
// that are not loopback (localhost, 127.0.0.0/8, ::1); "*" and the
// unspecified addresses are beyond it. An empty value (sockets only) has
// none.
func addressesBeyondLoopback(listen string) []string {
	var beyond []string
	for _, a := range strings.Split(listen, ",") {
		a = strings.TrimSpace(a)
		if a == "" || a == "localhost" {
			continue
		}
		if ip := net.ParseIP(a); ip != nil && ip.IsLoopback() {
			continue
		}
		beyond = append(beyond, a)
	}
	return beyond
}

// hbaBeyondLoopback reports whether a pg_hba rule's address (and netmask)
// admits clients beyond loopback: all, samenet and any host name but
// localhost do; samehost (the server's own addresses) does not; an IP
// range does unless it lies inside 127.0.0.0/8 or is ::1/128.
func hbaBeyondLoopback(address, netmask string) bool {
	switch address {
	case "samehost", "localhost":
		return false
	}
	ip := net.ParseIP(address)
	if ip == nil {
		return true // all, samenet, a host name
	}
	mask := net.ParseIP(netmask)
	if v4 := ip.To4(); v4 != nil {
		ones, _ := net.IPMask(mask.To4()).Size()
		return ones < 8 || v4[0] != 127
	}
	ones, _ := net.IPMask(mask).Size()
	return ones != 128 || !ip.Equal(net.IPv6loopback)
}

// ownPlaintextSession returns a finding when the auditing session is a
// TCP connection from beyond loopback with neither TLS nor GSSAPI
// encryption, and "" otherwise.
func ownPlaintextSession(ctx context.Context, pool DB) (string, error) {
	var addr *string
	var login string
	var encrypted bool
	err := pool.QueryRow(ctx, `
		SELECT pg_catalog.host(pg_catalog.inet_client_addr()), SESSION_USER::text,
		       COALESCE((SELECT s.ssl FROM pg_catalog.pg_stat_ssl s WHERE s.pid = pg_catalog.pg_backend_pid()), false)
		       OR COALESCE((SELECT g.encrypted FROM pg_catalog.pg_stat_gssapi g WHERE g.pid = pg_catalog.pg_backend_pid()), false)`).
		Scan(&addr, &login, &encrypted)
	if err != nil || addr == nil || encrypted || net.ParseIP(*addr).IsLoopback() {
		return "", err
	}
	return fmt.Sprintf("this audit's own session (login %s) is a TCP connection from %s without TLS: its password and "+
		"everything it reads cross the network in plain text (connect with sslmode=verify-full)", login, *addr), nil
}
