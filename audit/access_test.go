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
