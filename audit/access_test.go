package audit

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/mightyetl/leasefence/internal/testdb"
)

// The access review lists every login with its leasefence roles (direct
// and inherited, with grantor) and the grants outside the bundle's roles,
// as of a database time, with a digest that is the same for the same
// access and changes with a grant.
func TestReadAccessListsRolesAndGrantsWithAStableDigest(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cluster, db := testdb.OwnCluster(t) // roles are cluster-wide
	admin := db.Pool(t)
	execSQL(t, admin, `CREATE ROLE ops_carol LOGIN`)
	execSQL(t, admin, `GRANT durable_job_operator TO ops_carol`)
	execSQL(t, admin, `CREATE ROLE watchers NOLOGIN`)
	execSQL(t, admin, `CREATE ROLE grafana LOGIN IN ROLE watchers`)
	execSQL(t, admin, `GRANT SELECT ON durable_jobs.job_record TO watchers`)
	execSQL(t, admin, `GRANT SELECT (queue_name) ON durable_jobs.job_record TO PUBLIC`)
	read := func() AccessReview {
		review, err := ReviewAccess(ctx, admin)
		require.NoError(t, err)
		return review
	}
	first := read()
	require.NotEmpty(t, first.AsOf)
	logins := map[string]AccessLogin{}
	for _, l := range first.Logins {
		logins[l.Login] = l
	}
	su := cluster.Superuser()
	require.True(t, logins[su].Superuser)
	require.Equal(t, []string{"SUPERUSER", "BYPASSRLS", "CREATEROLE"}, logins[su].Attributes())
	require.Empty(t, logins["ops_carol"].Attributes())
	require.ElementsMatch(t, []AccessRole{
		{Role: "durable_job_operator", GrantedTo: "ops_carol", Direct: true, Grantor: su},
		{Role: "durable_job_producer", GrantedTo: "durable_job_operator", Grantor: su},
		{Role: "durable_job_auditor", GrantedTo: "durable_job_operator", Grantor: su},
	}, logins["ops_carol"].Roles)
	require.Equal(t, []AccessPrivilege{{Privilege: "SELECT", On: "durable_jobs.job_record", GrantedTo: "watchers"}}, logins["grafana"].Privileges)
	require.Equal(t, []AccessPrivilege{{Privilege: "SELECT (queue_name)", On: "durable_jobs.job_record", GrantedTo: "PUBLIC"}}, first.Public)
	require.Regexp(t, `^sha256:[0-9a-f]{64}$`, first.BodyDigest)

	again := read()
	require.Equal(t, first.BodyDigest, again.BodyDigest, "the same access, the same digest")
	execSQL(t, admin, `REVOKE SELECT ON durable_jobs.job_record FROM watchers`)
	require.NotEqual(t, first.BodyDigest, read().BodyDigest)

	canceled, cancel := context.WithCancel(ctx)
	cancel()
	_, err := ReadAccess(canceled, admin)
	require.ErrorIs(t, err, context.Canceled)
	_, err = ReviewAccess(canceled, admin)
	require.ErrorIs(t, err, context.Canceled)
}

// The review's text has a line per login and role, dashes for a login
// without one and for no privilege outside the bundle's roles, and shows
// names through textfmt.Visible.
func TestAccessReviewTextIsTwoTables(t *testing.T) {
	t.Parallel()
	review := AccessReview{AsOf: "2026-05-01T03:04:05.678Z", BodyDigest: "sha256:ab", Logins: []AccessLogin{
		{Login: "alice", Superuser: true, CreateRole: true, Roles: []AccessRole{
			{Role: "durable_job_operator", GrantedTo: "alice", Direct: true, Grantor: "admin"},
			{Role: "durable_job_auditor", GrantedTo: "ops", Grantor: "admin"}}},
		{Login: "bob\n"},
	}}
	require.Equal(t, `access review as of 2026-05-01T03:04:05.678Z (database time), body digest sha256:ab
LOGIN      ATTRIBUTES            LEASEFENCE ROLE       GRANTED TO  GRANTOR
alice      SUPERUSER,CREATEROLE  durable_job_operator  alice       admin
alice      SUPERUSER,CREATEROLE  durable_job_auditor   ops         admin
bob\u000a  -                     -                     -           -

privileges in schema durable_jobs granted outside the bundle's roles:
LOGIN  PRIVILEGE  ON  GRANTED TO
-      -          -   -
`, review.Text())

	review.Public = []AccessPrivilege{{Privilege: "SELECT", On: "durable_jobs.job_record", GrantedTo: "PUBLIC"}}
	review.Logins[1].Privileges = []AccessPrivilege{{Privilege: "UPDATE (run_after)", On: "durable_jobs.job_record", GrantedTo: "bob\n"}}
	require.Contains(t, review.Text(), `
LOGIN      PRIVILEGE           ON                       GRANTED TO
PUBLIC     SELECT              durable_jobs.job_record  PUBLIC
bob\u000a  UPDATE (run_after)  durable_jobs.job_record  bob\u000a
`)
}
