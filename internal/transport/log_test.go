package transport

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/mightyetl/leasefence/goclient"
	"github.com/mightyetl/leasefence/internal/pglocal"
	"github.com/mightyetl/leasefence/internal/testdb"
)

func TestMain(m *testing.M) { os.Exit(testdb.Run(m)) }

// uuidText finds UUIDs in log text.
var uuidText = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)

// logRun is one run of goclient's calls against a cluster and what its
// server log says afterwards.
type logRun struct {
	payloadLeaked bool // the payload's marker text is in the log
	tokenLeaked   bool // a claim token (a UUID whose digest the job row holds) is in the log
	logText       string
}

// runGoclient enqueues (as a producer login), claims, renews and completes
// one job (as a worker login) with goclient, then makes two failing calls
// that carry secrets (an enqueue with a bad queue name and a payload, a
// second completion of the finished claim), and reads the server log
// written meanwhile.
func runGoclient(t *testing.T, cluster *pglocal.Cluster, db *testdb.DB, producerURL, workerURL, marker string) logRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	before, err := os.Stat(cluster.LogPath())
	require.NoError(t, err)
	client := func(u string) *goclient.Client {
		pool, err := pgxpool.New(ctx, u)
		require.NoError(t, err)
		t.Cleanup(pool.Close)
		c, err := goclient.NewClient(pool, goclient.Config{OwnerID: "log-worker"})
		require.NoError(t, err)
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	producer, worker := client(producerURL), client(workerURL)
	payload := []byte(`{"national_id": "` + marker + `"}`)
	id, err := producer.Enqueue(ctx, goclient.EnqueueParams{Queue: "logs", Payload: payload, IdempotencyKey: marker + "-key"})
	require.NoError(t, err)
	job, err := worker.Claim(ctx, "logs")
	require.NoError(t, err)
	require.Equal(t, id, job.ID())
	r, err := worker.Renew(ctx, job.Claim())
	require.NoError(t, err)
	require.Equal(t, goclient.RenewalRenewed, r.Outcome)
	require.NoError(t, worker.Complete(ctx, job.Claim(), []byte(`{"result": "`+marker+`"}`)))
	_, err = producer.Enqueue(ctx, goclient.EnqueueParams{Queue: "Bad Queue", Payload: payload})
	require.Error(t, err)
	require.True(t, errors.Is(worker.Complete(ctx, job.Claim(), nil), goclient.ErrStaleClaim))

	var digest []byte
	require.NoError(t, db.Pool(t).QueryRow(ctx, `SELECT lease_claim_digest FROM durable_jobs.job_record WHERE job_record_id = $1`, id).Scan(&digest))
	// The server writes its log asynchronously to the statement's end.
	time.Sleep(200 * time.Millisecond)
	all, err := os.ReadFile(cluster.LogPath())
	require.NoError(t, err)
	text := string(all[before.Size():])
	run := logRun{payloadLeaked: strings.Contains(text, marker), logText: text}
	for _, s := range uuidText.FindAllString(text, -1) {
		u := uuid.MustParse(s)
		sum := sha256.Sum256(u[:])
		if bytes.Equal(sum[:], digest) {
			run.tokenLeaked = true
		}
	}
	return run
}

// setServer sets server-wide settings with ALTER SYSTEM and reloads.
func setServer(t *testing.T, db *testdb.DB, settings map[string]string) {
	t.Helper()
	ctx := context.Background()
	admin := db.Pool(t)
	_, err := admin.Exec(ctx, `ALTER SYSTEM RESET ALL`)
	require.NoError(t, err)
	for name, value := range settings {
		_, err := admin.Exec(ctx, `ALTER SYSTEM SET `+name+` = '`+value+`'`)
		require.NoError(t, err)
	}
	_, err = admin.Exec(ctx, `SELECT pg_reload_conf()`)
	require.NoError(t, err)
	time.Sleep(300 * time.Millisecond) // the postmaster rereads the file; new sessions then see it
}

// exec runs one statement as superuser.
func exec(t *testing.T, db *testdb.DB, sql string) {
	t.Helper()
	_, err := db.Pool(t).Exec(context.Background(), sql)
	require.NoError(t, err, sql)
}

// loginOf returns the role name of a login URL made by testdb.
func loginOf(t *testing.T, u string) string {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(u)
	require.NoError(t, err)
	return cfg.ConnConfig.User
}

// With the extended protocol goclient uses, PostgreSQL writes bind
// parameters, and with them payloads, idempotency keys and claim tokens, to
// the server log under log_statement = all, log_min_duration_statement = 0
// and log_parameter_max_length_on_error <> 0. Setting
// log_parameter_max_length = 0 and log_parameter_max_length_on_error = 0 on
// each application login (ALTER ROLE login SET ...) stops it even when the
// server logs every statement; the same settings on the NOLOGIN group
// (durable_job_worker) do not reach its member logins, and a function-level
// SET on a bundle function cannot be used at all (the parameter is
// superuser-only and the function's owner is not a superuser).
func TestServerLogHoldsBindParametersUnlessEachLoginTurnsThemOff(t *testing.T) {
	t.Parallel()
	cluster, db := testdb.OwnCluster(t)
	exec(t, db, `SELECT durable_jobs.set_queue_lease_policy('logs', '30 seconds', '10 seconds', '1 hour', true, 'log test')`)

	type scenario struct {
		name          string
		server        map[string]string
		loginSettings []string // ALTER ROLE <login> SET ... for both logins
		groupSettings []string // ALTER ROLE <group> SET ... for both groups
		wantPayload   bool
		wantToken     bool
	}
	leaky := map[string]string{"log_statement": "all", "log_min_duration_statement": "0",
		"log_parameter_max_length_on_error": "-1"}
	scenarios := []scenario{
		{name: "defaults", server: nil},
		{name: "log_statement=all", server: map[string]string{"log_statement": "all"}, wantPayload: true, wantToken: true},
		{name: "log_statement=mod", server: map[string]string{"log_statement": "mod"}},
		{name: "log_min_duration_statement=0", server: map[string]string{"log_min_duration_statement": "0"},
			wantPayload: true, wantToken: true},
		{name: "log_parameter_max_length_on_error=-1", server: map[string]string{"log_parameter_max_length_on_error": "-1"},
			wantPayload: true, wantToken: true},
		{name: "everything logged, binds off per login", server: leaky,
			loginSettings: []string{"log_parameter_max_length = 0", "log_parameter_max_length_on_error = 0"}},
		{name: "everything logged, statements off per login", server: leaky,
			loginSettings: []string{"log_statement = 'none'", "log_min_duration_statement = -1", "log_parameter_max_length_on_error = 0"}},
		{name: "log_statement=all, binds off on the group roles only", server: map[string]string{"log_statement": "all"},
			groupSettings: []string{"log_parameter_max_length = 0"}, wantPayload: true, wantToken: true},
	}
	for i, sc := range scenarios {
		producerURL, workerURL := db.LoginURL(t, "durable_job_producer"), db.LoginURL(t, "durable_job_worker")
		setServer(t, db, sc.server)
		for _, s := range sc.loginSettings {
			exec(t, db, `ALTER ROLE `+loginOf(t, producerURL)+` SET `+s)
			exec(t, db, `ALTER ROLE `+loginOf(t, workerURL)+` SET `+s)
		}
		for _, s := range sc.groupSettings {
			exec(t, db, `ALTER ROLE durable_job_producer SET `+s)
			exec(t, db, `ALTER ROLE durable_job_worker SET `+s)
		}
		marker := "SSN-" + strings.Repeat("7", 3) + "-" + string(rune('A'+i)) + "-LEAKCHECK"
		run := runGoclient(t, cluster, db, producerURL, workerURL, marker)
		for range sc.groupSettings {
			exec(t, db, `ALTER ROLE durable_job_producer RESET ALL`)
			exec(t, db, `ALTER ROLE durable_job_worker RESET ALL`)
		}
		require.Equal(t, sc.wantPayload, run.payloadLeaked, "%s: payload in the server log\n%s", sc.name, tailLines(run.logText, 30))
		require.Equal(t, sc.wantToken, run.tokenLeaked, "%s: claim token in the server log\n%s", sc.name, tailLines(run.logText, 30))
		t.Logf("%s: payload leaked %v, token leaked %v", sc.name, run.payloadLeaked, run.tokenLeaked)
	}

	// A function-level SET is no way out: the parameter is superuser-only,
	// and a definer function owned by a NOLOGIN non-superuser role cannot
	// set it, so every call of the function fails.
	exec(t, db, `ALTER FUNCTION durable_jobs.renew_job_lease(bigint, uuid, text) SET log_parameter_max_length = 0`)
	ctx := context.Background()
	worker := db.LoginPool(t, "durable_job_worker")
	_, err := worker.Exec(ctx, `SELECT * FROM durable_jobs.renew_job_lease(1, gen_random_uuid(), 'w')`)
	require.ErrorContains(t, err, `permission denied to set parameter "log_parameter_max_length"`)
}

// tailLines is the last n lines of s.
func tailLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
