package goclient

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/mightyetl/leasefence/internal/testdb"
)

// Claims given up at shutdown go out as release_job_claims calls (migration
// 023), one per 1,000 claims and with a job id at most once a call, as the
// function requires: four claims of which one is given twice make two
// calls (the repeat starts the second), all in one pipelined batch. Each
// claim gets its own answer: the repeat is stale, since the first call
// released its job. Counted on the wire: the Bind messages of the one
// prepared statement that calls release_job_claims.
func TestReleaseClaimsCallsTheBatchFunctionOnceAThousand(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	pool, wire := tracedPool(t, db.LoginURL(t, "durable_job_worker"))
	c, err := NewClient(pool, Config{OwnerID: "release-batch"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	admin, ctx := db.Pool(t), context.Background()
	reqs := completions(t, admin, c, "release.batch", 3)
	for _, r := range reqs {
		r.lease.Stop() // no renewal on the wire while the release goes out
	}

	mark := len(wire.String())
	stale := releaseClaims(ctx, pool, []Claim{reqs[0].claim, reqs[1].claim, reqs[0].claim, reqs[2].claim})
	require.Equal(t, []bool{false, false, true, false}, stale,
		"each claim answered: released, released, the repeat stale, released")
	var queued int
	require.NoError(t, admin.QueryRow(ctx, `SELECT count(*) FROM durable_jobs.job_record
		WHERE queue_name = 'release.batch' AND job_status = 'QUEUED'`).Scan(&queued))
	require.Equal(t, 3, queued)

	trace := wire.String()[mark:]
	parse := regexp.MustCompile(`Parse\t\d+\t "(\w+)" "SELECT job_record_id, released FROM durable_jobs.release_job_claims`).FindStringSubmatch(trace)
	require.NotNil(t, parse, "the release statement is prepared on the connection:\n%s", trace)
	var binds, releaseBinds int
	for _, line := range strings.Split(trace, "\n") {
		if strings.HasPrefix(line, "F\tBind\t") {
			binds++
			if strings.Contains(line, `"`+parse[1]+`"`) {
				releaseBinds++
			}
		}
	}
	require.Equal(t, 2, binds, "two calls:\n%s", trace)
	require.Equal(t, 2, releaseBinds, "both of release_job_claims:\n%s", trace)
	require.Equal(t, 1, strings.Count(trace, "F\tSync")-strings.Count(trace, "F\tDescribe"),
		"one pipelined batch (one Sync besides the statement's preparation):\n%s", trace)
}
