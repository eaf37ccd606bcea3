package audit

import (
	"context"
	"fmt"
)

// controlTriggers are the triggers of migration 026 that make the retention
// policy and the change-control setting record every change of their own.
var controlTriggers = [][2]string{
	{"queue_retention_policy", "queue_retention_policy_stamp"},
	{"queue_retention_policy", "queue_retention_policy_evidence"},
	{"queue_retention_policy", "queue_retention_policy_no_truncate"},
	{"change_control_setting", "change_control_setting_stamp"},
	{"change_control_setting", "change_control_setting_evidence"},
	{"change_control_setting", "change_control_setting_no_delete"},
	{"change_control_setting", "change_control_setting_no_truncate"},
}

// checkControlEvidence: the control tables other than the lease policy (the
// retention policy and the change-control setting) record their own
// changes (their triggers are in force) and hold what their last evidence
// record says (control_evidence_mismatches), so no control was changed
// without evidence, for example by a superuser with triggers off. Reports
// nothing on a bundle older than 026 (AUDIT-MIGRATION-VERSION does).
func checkControlEvidence(ctx context.Context, pool DB) ([]string, error) {
	callable, finding, err := auditorFunctionFinding(ctx, pool, "control_evidence_mismatches")
	if err != nil || !callable {
		return optionalFinding(finding), err
	}
	findings, err := triggerFindings(ctx, pool, controlTriggers)
	if err != nil {
		return nil, err
	}
	mismatches, err := collectStrings(ctx, pool, `
		SELECT m.control_table || COALESCE(' queue ' || pg_catalog.quote_literal(m.queue_name), '') || ': ' || m.mismatch
		FROM durable_jobs.control_evidence_mismatches() m`)
	return append(findings, mismatches...), err
}

// checkJobStatuses: every finished job's status is explained by a fenced
// write or a recorded action (job_status_mismatches), so no status was set
// by hand, for example FAILED jobs UPDATEd to SUCCEEDED by a superuser.
// Counts per queue and status; never a job id. Reports nothing on a bundle
// older than 026.
func checkJobStatuses(ctx context.Context, pool DB) ([]string, error) {
	callable, finding, err := auditorFunctionFinding(ctx, pool, "job_status_mismatches")
	if err != nil || !callable {
		return optionalFinding(finding), err
	}
	return collectStrings(ctx, pool, `
		SELECT 'queue ' || pg_catalog.quote_literal(m.queue_name) || ': ' || m.job_count || ' ' || m.job_status
		       || ' job(s) whose status no fenced write or recorded action explains'
		FROM durable_jobs.job_status_mismatches() m`)
}

// triggerFindings is a finding for every trigger of triggers (table,
// trigger) that is missing or does not fire in every session.
func triggerFindings(ctx context.Context, pool DB, triggers [][2]string) ([]string, error) {
	var findings []string
	for _, tr := range triggers {
		var enabled string
		err := pool.QueryRow(ctx, `
			SELECT COALESCE((SELECT g.tgenabled::text FROM pg_catalog.pg_trigger g
			                 JOIN pg_catalog.pg_class c ON c.oid = g.tgrelid
			                 JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
			                 WHERE n.nspname = 'durable_jobs' AND c.relname = $1 AND g.tgname = $2), '')`,
			tr[0], tr[1]).Scan(&enabled)
		if err != nil {
			return nil, err
		}
		switch enabled {
		case "O", "A":
		case "":
			findings = append(findings, fmt.Sprintf("trigger %s on durable_jobs.%s is missing", tr[1], tr[0]))
		default:
			findings = append(findings, fmt.Sprintf("trigger %s on durable_jobs.%s does not fire in every session (tgenabled %s)", tr[1], tr[0], enabled))
		}
	}
	return findings, nil
}
