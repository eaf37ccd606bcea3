// Package audit checks a live leasefence database against the bundle's
// contract (docs/sql-api.md): roles, privileges, definer functions, guards,
// the migration version and the evidence chain.
//
// # Overview
//
// Run runs every check and returns a Report; `leasectl audit` is a thin
// command over it, and a team can call it from its own Go code or CI:
//
//	pool, err := pgxpool.New(ctx, databaseURL) // or a *pgx.Conn
//	...
//	report, err := audit.Run(ctx, pool)
//	if err != nil {
//		return err // a check could not run: *audit.CheckError names it
//	}
//	if !report.Passed {
//		for _, c := range report.Checks {
//			for _, f := range c.Findings {
//				fmt.Printf("%s: %s\n", c.ID, f)
//			}
//		}
//	}
//
// A finding names roles and objects as the database holds them: a login
// may be named with a newline or a terminal escape. Print findings where
// that matters (a terminal, a report) with such characters escaped, as
// leasectl does (its text shows them as \u000a style escapes; its JSON
// keeps them as they are).
//
// A check may also report warnings (CheckResult.Warnings:
// AUDIT-SYNCHRONOUS-REPLICATION, AUDIT-ROLE-CHANGE-LOGGING, and
// AUDIT-TLS-CONFIGURATION when it cannot read the pg_hba rules): they are
// reported and never fail the check or the audit. WithHosts gives Run the hosts of a multi-host URL
// (HostConfigs splits one), so that AUDIT-SECOND-PRIMARY can report another
// primary of the same cluster:
//
//	cfg := pool.Config().ConnConfig
//	report, err := audit.Run(ctx, pool, audit.WithHosts(audit.HostConfigs(cfg)...))
//
// WithEvidenceAnchor gives Run an earlier export (ParseAnchor) for
// AUDIT-EVIDENCE-ANCHOR, which VerifyAnchor also runs on its own, and
// RequireRoleChangeLogging makes AUDIT-ROLE-CHANGE-LOGGING's warning a
// finding. RunStamped is Run with what makes the result evidence: the
// database time, the database's name and system identifier, the bundle
// versions and a body digest (BodyDigest, which the evidence report uses
// too). ReadAccess reads the access review of `leasectl access`.
//
// Each check has a stable identifier (AUDIT-SEARCH-PATH, ...) that starts
// every finding it reports; Checks lists them with what a passing database
// shows. The identifiers are defined in package controls
// (github.com/mightyetl/leasefence/controls), the one table of leasefence's
// control identifiers, whose constants (controls.CheckSearchPath, ...) a
// caller can name; docs/compliance uses the same ones.
// An identifier, once published, never changes meaning.
//
// # What the login needs
//
// The audit reads the system catalogs and needs no privilege beyond a
// login, except that AUDIT-MIGRATION-VERSION and AUDIT-FUNCTION-DRIFT read
// the version from the version table or, failing that, from
// bundle_migration_version(), and AUDIT-POLICY-MATCHES-EVIDENCE and
// AUDIT-EVIDENCE-CHAIN call auditor functions: grant the login
// durable_job_auditor, or those checks report, as a finding, that they
// cannot tell. The trial UPDATE and DELETE of AUDIT-EVIDENCE-APPEND-ONLY run
// only when the login could otherwise change the evidence (for example the
// table owner), each in a transaction that is always rolled back.
// AUDIT-SECOND-PRIMARY connects to each host given by WithHosts with the
// same login and reads pg_control_system(), pg_is_in_recovery() and
// pg_postmaster_start_time(), which every login may call; a host it cannot
// reach or read is skipped. AUDIT-TLS-CONFIGURATION reads pg_hba_file_rules
// (superusers, or a login granted SELECT on it and EXECUTE on its function)
// and AUDIT-ROLE-CHANGE-LOGGING shared_preload_libraries (superusers and
// pg_read_all_settings); without them they warn that they could not tell.
//
// # What it never reports
//
// Findings name objects, roles and settings, never a job payload, claim
// token, owner id, idempotency key or job id.
package audit
