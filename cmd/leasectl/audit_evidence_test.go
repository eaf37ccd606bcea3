package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/mightyetl/leasefence/audit"
	"github.com/mightyetl/leasefence/controls"
	"github.com/mightyetl/leasefence/internal/testdb"
)

// Attack: a payload grant to a monitoring login, a definer owner role held
// by a person and the operator role held by a worker login all passed the
// audit, and monitoring read a payload. Role memberships are cluster-wide,
// so this runs on a cluster of its own.
func TestAccessReviewFindsExcessAccessAndListsEveryLogin(t *testing.T) {
	t.Parallel()
	_, db := testdb.OwnCluster(t)
	pool := db.Pool(t)
	var su string
	require.NoError(t, pool.QueryRow(context.Background(), `SELECT current_user`).Scan(&su))
	execSQL(t, pool, `CREATE ROLE monitoring LOGIN PASSWORD 'mon-pw'`)
	execSQL(t, pool, `CREATE ROLE ops_bob LOGIN`)
	execSQL(t, pool, `CREATE ROLE etl_worker_prod LOGIN IN ROLE durable_job_worker`)
	execSQL(t, pool, `CREATE ROLE etl_group NOLOGIN`)
	execSQL(t, pool, `CREATE ROLE etl_accepted LOGIN IN ROLE durable_job_worker, etl_group`)
	execSQL(t, pool, `GRANT durable_job_operator TO etl_group`)
	for _, login := range []string{"etl_worker_prod", "etl_accepted"} { // AUDIT-RUNTIME-LOGIN-TIMEOUTS is satisfied
		execSQL(t, pool, `ALTER ROLE `+login+` SET statement_timeout = '30s'`)
		execSQL(t, pool, `ALTER ROLE `+login+` SET idle_in_transaction_session_timeout = '60s'`)
	}
	execSQL(t, pool, `COMMENT ON ROLE etl_accepted IS 'leasefence: separation of duties accepted: SEC-42'`)
	execSQL(t, pool, `GRANT USAGE ON SCHEMA durable_jobs TO monitoring`)
	execSQL(t, pool, `GRANT SELECT ON durable_jobs.job_payload_record TO monitoring`)
	execSQL(t, pool, `GRANT SELECT (queue_name) ON durable_jobs.job_record TO PUBLIC`)
	execSQL(t, pool, `GRANT SELECT ON durable_jobs.job_record TO etl_group`)
	execSQL(t, pool, `GRANT durable_job_claim_owner TO ops_bob`)
	execSQL(t, pool, `GRANT durable_job_operator TO etl_worker_prod`)

	text, _ := runAuditBoth(t, db.URL)
	requireCode(t, exitFindings, text)
	require.Equal(t, []string{controls.CheckRuntimePrivileges, controls.CheckDefinerOwners, controls.CheckAccessReview},
		findingIDs(text.stdout), text.stdout)
	for _, line := range []string{
		"AUDIT-ACCESS-REVIEW: login monitoring holds SELECT on durable_jobs.job_payload_record\n",
		"AUDIT-ACCESS-REVIEW: PUBLIC holds SELECT (queue_name) on durable_jobs.job_record\n",
		"AUDIT-ACCESS-REVIEW: role etl_group holds SELECT on durable_jobs.job_record\n",
		"AUDIT-ACCESS-REVIEW: login ops_bob holds definer owner role durable_job_claim_owner",
		"AUDIT-ACCESS-REVIEW: login etl_worker_prod holds both durable_job_worker and durable_job_operator",
	} {
		require.Contains(t, text.stdout, line)
	}
	require.NotContains(t, text.stdout, "etl_accepted", "a role comment with a ticket accepts the combination")

	for _, out := range []string{"text", "json"} {
		r := leasectl(t, "access", "--output", out, "--database-url", db.URL)
		requireCode(t, exitOK, r)
		if out == "text" {
			require.Regexp(t, `^access review as of \S+ \(database time\), body digest sha256:[0-9a-f]{64}\n`, r.stdout)
			require.Regexp(t, `etl_accepted\s+-\s+durable_job_operator\s+etl_group\s+`, r.stdout)
			require.Regexp(t, `ops_bob\s+-\s+durable_job_claim_owner\s+ops_bob\s+`, r.stdout)
			require.Regexp(t, `monitoring\s+-\s+-\s+-\s+-`, r.stdout)
			require.Regexp(t, su+`\s+SUPERUSER,BYPASSRLS,CREATEROLE\s+`, r.stdout)
			require.Contains(t, r.stdout, "\nprivileges in schema durable_jobs granted outside the bundle's roles:\n")
			require.Regexp(t, `(?m)^PUBLIC\s+SELECT \(queue_name\)\s+durable_jobs\.job_record\s+PUBLIC$`, r.stdout)
			require.Regexp(t, `(?m)^monitoring\s+SELECT\s+durable_jobs\.job_payload_record\s+monitoring$`, r.stdout)
			continue
		}
		var report audit.AccessReview
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &report))
		require.NotEmpty(t, report.AsOf)
		require.Regexp(t, `^sha256:[0-9a-f]{64}$`, report.BodyDigest)
		// The evidence report holds the same review, with the same digest.
		ev, _ := evidenceJSON(t, db.Pool(t), db.URL)
		for _, s := range ev.Sections {
			if s.ID == controls.SectionAccess {
				var section audit.AccessReview
				require.NoError(t, json.Unmarshal(s.Data, &section))
				require.Equal(t, report.BodyDigest, section.BodyDigest)
				require.Empty(t, section.AsOf)
			}
		}
		md := leasectl(t, "evidence", "--database-url", db.URL)
		requireCode(t, exitOK, md)
		require.Contains(t, md.stdout, "## Access review (EVIDENCE-ACCESS-REVIEW)")
		require.Contains(t, md.stdout, "body digest "+report.BodyDigest)
		require.Regexp(t, `\| etl\\_worker\\_prod \| - \| durable\\_job\\_operator \| etl\\_worker\\_prod \| `, md.stdout)
		require.Contains(t, md.stdout, "| monitoring | SELECT | durable\\_jobs.job\\_payload\\_record | monitoring |")
		byLogin := map[string]audit.AccessLogin{}
		for _, l := range report.Logins {
			byLogin[l.Login] = l
		}
		require.ElementsMatch(t, []audit.AccessRole{
			{Role: "durable_job_operator", GrantedTo: "etl_worker_prod", Direct: true, Grantor: su},
			{Role: "durable_job_producer", GrantedTo: "durable_job_operator", Direct: false, Grantor: su},
			{Role: "durable_job_auditor", GrantedTo: "durable_job_operator", Direct: false, Grantor: su},
			{Role: "durable_job_worker", GrantedTo: "etl_worker_prod", Direct: true, Grantor: su},
		}, byLogin["etl_worker_prod"].Roles)
		require.True(t, byLogin[su].Superuser)
		require.False(t, byLogin["monitoring"].Superuser)
		require.Empty(t, byLogin["monitoring"].Roles)
		require.Equal(t, []audit.AccessPrivilege{{Privilege: "SELECT", On: "durable_jobs.job_payload_record", GrantedTo: "monitoring"}},
			byLogin["monitoring"].Privileges, "the payload grant is listed")
		require.Equal(t, []audit.AccessPrivilege{{Privilege: "SELECT (queue_name)", On: "durable_jobs.job_record", GrantedTo: "PUBLIC"}},
			report.Public)
		require.Empty(t, byLogin["etl_worker_prod"].Privileges, "the bundle roles' own privileges are not grants to review")
		require.Equal(t, []audit.AccessPrivilege{{Privilege: "SELECT", On: "durable_jobs.job_record", GrantedTo: "etl_group"}},
			byLogin["etl_accepted"].Privileges, "a grant to a role the login holds")
	}
	r := leasectl(t, "access", "--output", "yaml", "--database-url", db.URL)
	requireCode(t, exitUsage, r)
	require.Equal(t, 1, strings.Count(strings.TrimSpace(r.stderr), "\n")+1, r.stderr)
}
