package audit

import (
	"context"
	"fmt"
	"slices"
	"strings"
)

// The role-change logging check of issue 39 (item 5):
// AUDIT-ROLE-CHANGE-LOGGING. Who was granted or revoked a bundle role, and
// when, is not kept in the database (pg_auth_members holds only what is
// granted now); pgaudit's role class writes every GRANT, REVOKE, CREATE,
// ALTER and DROP ROLE to the server log.

// RequireRoleChangeLogging makes AUDIT-ROLE-CHANGE-LOGGING report a server
// that does not log role changes through pgaudit as a finding, for
// deployments under audit; without it that is a warning.
func RequireRoleChangeLogging() Option {
	return func(o *options) { o.requireRoleLogging = true }
}

// pgauditLogsRoleChanges reports whether a pgaudit.log value logs the role
// class: role or all among its classes, not taken away again by -role.
func pgauditLogsRoleChanges(value string) bool {
	on := false
	for _, class := range strings.Split(strings.ToLower(value), ",") {
		switch strings.TrimSpace(class) {
		case "role", "all":
			on = true
		case "-role", "-all":
			on = false
		}
	}
	return on
}

// checkRoleChangeLogging: pgaudit is loaded (shared_preload_libraries) and
// pgaudit.log, as in force for the auditing session, logs the role class.
// Otherwise a warning, or with RequireRoleChangeLogging a finding; a login
// that cannot read shared_preload_libraries (superusers and
// pg_read_all_settings can) cannot tell.
func checkRoleChangeLogging(ctx context.Context, pool DB, o *options) ([]string, error) {
	var preload, classes *string
	if err := pool.QueryRow(ctx, `SELECT (SELECT s.setting FROM pg_catalog.pg_settings s WHERE s.name = 'shared_preload_libraries'),
		pg_catalog.current_setting('pgaudit.log', true)`).Scan(&preload, &classes); err != nil {
		return nil, err
	}
	var problem string
	switch {
	case preload == nil:
		problem = "cannot tell whether pgaudit logs role changes: this login cannot read shared_preload_libraries " +
			"(grant it pg_read_all_settings)"
	case !slices.Contains(strings.Split(strings.ReplaceAll(*preload, " ", ""), ","), "pgaudit"):
		problem = "pgaudit is not loaded (shared_preload_libraries): a GRANT, REVOKE or DROP ROLE of a bundle role leaves no trace " +
			"(load it and set pgaudit.log to include role, see the runbook)"
	case classes == nil || !pgauditLogsRoleChanges(*classes):
		value := "unset"
		if classes != nil {
			value = fmt.Sprintf("%q", *classes)
		}
		problem = fmt.Sprintf("pgaudit.log is %s, without the role class: a GRANT, REVOKE or DROP ROLE of a bundle role leaves no trace "+
			"(set pgaudit.log to include role, see the runbook)", value)
	default:
		return nil, nil
	}
	if o.requireRoleLogging {
		return []string{problem}, nil
	}
	o.warn(problem)
	return nil, nil
}
