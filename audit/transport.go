package audit

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
)

// logSettingsSQL gives, for every login in one of the roles $1 (superusers,
// members of everything, left out), each of the settings $2
// in force when it connects to this database: its own setting for
// this database, else its own for every database, else this database's,
// else the server's (as the auditing session sees it; where the auditing
// session's own connection set the value, as leasectl's statement_timeout,
// the built-in default stands for the server's, which it hides).
const logSettingsSQL = `
WITH groups AS (
    SELECT oid FROM pg_catalog.pg_roles WHERE rolname = ANY ($1::text[])
), logins AS (
    SELECT r.oid, r.rolname FROM pg_catalog.pg_roles r
    WHERE r.rolcanlogin AND NOT r.rolsuper AND EXISTS (SELECT 1 FROM groups g WHERE pg_catalog.pg_has_role(r.oid, g.oid, 'MEMBER'))
), cfg AS (
    SELECT s.setrole, s.setdatabase, pg_catalog.split_part(c, '=', 1) AS name,
           pg_catalog.substr(c, pg_catalog.strpos(c, '=') + 1) AS value
    FROM pg_catalog.pg_db_role_setting s, pg_catalog.unnest(s.setconfig) AS c
    WHERE s.setdatabase IN (0, (SELECT d.oid FROM pg_catalog.pg_database d WHERE d.datname = pg_catalog.current_database()))
), names(name) AS (
    SELECT pg_catalog.unnest($2::text[])
)
SELECT l.rolname::text, n.name,
       COALESCE((SELECT c.value FROM cfg c WHERE c.setrole = l.oid AND c.setdatabase <> 0 AND c.name = n.name),
                (SELECT c.value FROM cfg c WHERE c.setrole = l.oid AND c.setdatabase = 0 AND c.name = n.name),
                (SELECT c.value FROM cfg c WHERE c.setrole = 0 AND c.setdatabase <> 0 AND c.name = n.name),
                (SELECT CASE WHEN g.source IN ('client', 'session') THEN g.boot_val ELSE g.setting END
                 FROM pg_catalog.pg_settings g WHERE g.name = n.name))
FROM logins l CROSS JOIN names n
ORDER BY 1, 2`

// loginSettings returns the logins in any of groups, sorted, and for each
// the given settings as it gets them when it connects (logSettingsSQL).
func loginSettings(ctx context.Context, pool DB, groups []string, names ...string) ([]string, map[string]map[string]string, error) {
	rows, _ := pool.Query(ctx, logSettingsSQL, groups, names)
	type setting struct{ Login, Name, Value string }
	settings, err := pgx.CollectRows(rows, pgx.RowToStructByPos[setting])
	if err != nil {
		return nil, nil, err
	}
	byLogin := map[string]map[string]string{}
	var logins []string
	for _, s := range settings {
		if byLogin[s.Login] == nil {
			byLogin[s.Login] = map[string]string{}
			logins = append(logins, s.Login)
		}
		byLogin[s.Login][s.Name] = s.Value
	}
	return logins, byLogin, nil
}

// isZero reports whether a size setting is 0 ("0", "0B", "0kB").
func isZero(value string) bool {
	return strings.TrimRight(value, "kMGTB") == "0"
}

// checkServerLogSecrets: no login in a runtime role would have its bind
// parameters (claim tokens, payloads, idempotency keys) written to the
// server log, by statement logging, duration logging or error logging.
func checkServerLogSecrets(ctx context.Context, pool DB) ([]string, error) {
	logins, byLogin, err := loginSettings(ctx, pool, runtimeRoles,
		"log_statement", "log_min_duration_statement", "log_parameter_max_length", "log_parameter_max_length_on_error")
	if err != nil {
		return nil, err
	}
	var findings []string
	for _, login := range logins {
		v := byLogin[login]
		binds := !isZero(v["log_parameter_max_length"])
		if binds && (v["log_statement"] == "mod" || v["log_statement"] == "all") {
			findings = append(findings, fmt.Sprintf("login %s: log_statement = %s with log_parameter_max_length = %s writes its bind parameters (claim tokens, payloads) to the server log",
				login, v["log_statement"], v["log_parameter_max_length"]))
		}
		if binds && v["log_min_duration_statement"] != "-1" {
			findings = append(findings, fmt.Sprintf("login %s: log_min_duration_statement = %s with log_parameter_max_length = %s writes its bind parameters (claim tokens, payloads) to the server log",
				login, v["log_min_duration_statement"], v["log_parameter_max_length"]))
		}
		if !isZero(v["log_parameter_max_length_on_error"]) {
			findings = append(findings, fmt.Sprintf("login %s: log_parameter_max_length_on_error = %s writes the bind parameters of its failed statements to the server log",
				login, v["log_parameter_max_length_on_error"]))
		}
	}
	return findings, nil
}

// checkUnencryptedSessions: no session of a login in a runtime role in this
// database is a TCP connection without TLS, and the auditing session itself
// is no TCP connection from beyond loopback without TLS (or GSSAPI
// encryption). Local socket sessions (client_addr NULL) are not counted;
// the auditing login's other sessions are not counted either. Sessions the
// auditing login may not see (it lacks pg_read_all_stats) show no TLS state
// and are not counted.
func checkUnencryptedSessions(ctx context.Context, pool DB) ([]string, error) {
	findings, err := collectStrings(ctx, pool, `
		SELECT 'login ' || a.usename || ' has ' || pg_catalog.count(*) || ' TCP session(s) without TLS'
		FROM pg_catalog.pg_stat_activity a
		JOIN pg_catalog.pg_stat_ssl s ON s.pid = a.pid
		WHERE a.datname = pg_catalog.current_database() AND a.usename <> SESSION_USER
		  AND a.client_addr IS NOT NULL AND s.ssl IS FALSE
		  AND NOT (SELECT r.rolsuper FROM pg_catalog.pg_roles r WHERE r.oid = a.usesysid)
		  AND EXISTS (SELECT 1 FROM pg_catalog.pg_roles g WHERE g.rolname = ANY ($1::text[])
		              AND pg_catalog.pg_has_role(a.usesysid, g.oid, 'MEMBER'))
		GROUP BY a.usename
		ORDER BY 1`, runtimeRoles)
	if err != nil {
		return nil, err
	}
	own, err := ownPlaintextSession(ctx, pool)
	return append(findings, optionalFinding(own)...), err
}
