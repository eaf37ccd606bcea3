package main

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/mightyetl/leasefence/audit"
	"github.com/mightyetl/leasefence/controls"
	"github.com/mightyetl/leasefence/evidence"
	"github.com/mightyetl/leasefence/internal/testdb"
)

// personalPayload is a realistic payload full of personal data: none of it
// may ever reach leasectl's output.
const personalPayload = `{"customer": {"name_ko": "김민준", "name_en": "Kim Minjun",
	"resident_registration_number": "900101-1234567", "email": "minjun.kim@example.co.kr",
	"phone": "010-1234-5678", "address": "서울특별시 강남구 테헤란로 152"}, "order": "ORD-2026-000123"}`

// secretValues are the strings that must not appear in any output.
var personalValues = []string{"김민준", "Kim Minjun", "900101-1234567", "9001011234567", "minjun.kim@example.co.kr",
	"010-1234-5678", "01012345678", "테헤란로", "ORD-2026-000123"}

const (
	idempotencyKey = "idem-order-2026-000123-kim"
	ownerSeoul     = "worker-seoul-01.prod:4242"
	ownerBusan     = "worker-busan-02.prod:77"
)

// claim claims the next job of queue as owner through pool (a worker login)
// and returns the job id and the claim token.
func claim(t *testing.T, pool *pgxpool.Pool, queue, owner string) (int64, string) {
	t.Helper()
	var id int64
	var token string
	require.NoError(t, pool.QueryRow(context.Background(),
		`SELECT job_record_id, lease_claim_token::text FROM durable_jobs.claim_next_job($1, $2)`, queue, owner).
		Scan(&id, &token))
	return id, token
}

// renew renews a claim and returns the outcome.
func renew(t *testing.T, pool *pgxpool.Pool, id int64, token, owner string) string {
	t.Helper()
	var outcome string
	require.NoError(t, pool.QueryRow(context.Background(),
		`SELECT renewal_outcome FROM durable_jobs.renew_job_lease($1, $2::uuid, $3)`, id, token, owner).Scan(&outcome))
	return outcome
}

// tokenForms are the ways a token could leak: as written, without dashes,
// upper case, and its stored digest in hex and base64.
func tokenForms(t *testing.T, token string) []string {
	t.Helper()
	u, err := uuid.Parse(token)
	require.NoError(t, err)
	digest := sha256.Sum256(u[:])
	plain := strings.ReplaceAll(token, "-", "")
	return []string{token, strings.ToUpper(token), plain, strings.ToUpper(plain),
		hex.EncodeToString(digest[:]), base64.StdEncoding.EncodeToString(digest[:])}
}

// lifecycle runs a full job lifecycle on queue billing with the personal
// payload and returns every value that must stay secret.
func lifecycle(t *testing.T, db *testdb.DB) []string {
	t.Helper()
	ctx := context.Background()
	producer := db.LoginPool(t, "durable_job_producer")
	seoul := db.LoginPool(t, "durable_job_worker")
	busan := db.LoginPool(t, "durable_job_worker")
	operator := db.LoginURL(t, "durable_job_operator")
	secrets := append([]string{idempotencyKey, ownerSeoul, ownerBusan}, personalValues...)

	r := leasectl(t, "policy", "set", "--queue", "billing", "--lease-duration", "1s", "--renewal-interval", "300ms",
		"--max-claim-lifetime", "1h", "--renewal-enabled=true", "--reason", "CHG-2001 short leases for the evidence test",
		"--database-url", operator)
	requireCode(t, exitOK, r)

	var first, second, third int64
	require.NoError(t, producer.QueryRow(ctx, `SELECT durable_jobs.enqueue_job('billing', $1::jsonb, $2)`,
		personalPayload, idempotencyKey).Scan(&first))
	require.NoError(t, producer.QueryRow(ctx, `SELECT durable_jobs.enqueue_job('billing', $1::jsonb)`,
		personalPayload).Scan(&second))
	require.NoError(t, producer.QueryRow(ctx, `SELECT durable_jobs.enqueue_job('billing', $1::jsonb, NULL, now() + interval '1 hour')`,
		personalPayload).Scan(&third))

	// First job: claimed, renewed, completed.
	id, token := claim(t, seoul, "billing", ownerSeoul)
	require.Equal(t, first, id)
	secrets = append(secrets, tokenForms(t, token)...)
	require.Equal(t, "renewed", renew(t, seoul, id, token, ownerSeoul))
	_, err := seoul.Exec(ctx, `SELECT durable_jobs.complete_job($1, $2::uuid, $3, '{"rows_loaded": 3}')`, id, token, ownerSeoul)
	require.NoError(t, err)

	// Second job: its lease runs out, another worker reclaims it, the old
	// token's renewal is stale, then a retry, a failure and a replay.
	id, staleToken := claim(t, seoul, "billing", ownerSeoul)
	require.Equal(t, second, id)
	secrets = append(secrets, tokenForms(t, staleToken)...)
	time.Sleep(1200 * time.Millisecond) // real database time: the 1 s lease expires
	id, token = claim(t, busan, "billing", ownerBusan)
	require.Equal(t, second, id)
	secrets = append(secrets, tokenForms(t, token)...)
	require.Equal(t, "stale", renew(t, seoul, second, staleToken, ownerSeoul))
	var status string
	require.NoError(t, busan.QueryRow(ctx, `SELECT durable_jobs.retry_job($1, $2::uuid, $3, interval '0 seconds', 'upstream_timeout')`,
		second, token, ownerBusan).Scan(&status))
	require.Equal(t, "RETRY_SCHEDULED", status)
	id, token = claim(t, busan, "billing", ownerBusan)
	require.Equal(t, second, id)
	secrets = append(secrets, tokenForms(t, token)...)
	_, err = busan.Exec(ctx, `SELECT durable_jobs.fail_job($1, $2::uuid, $3, 'schema_mismatch')`, second, token, ownerBusan)
	require.NoError(t, err)
	opPool := db.LoginPool(t, "durable_job_operator")
	var replayed bool
	require.NoError(t, opPool.QueryRow(ctx, `SELECT durable_jobs.replay_job($1)`, second).Scan(&replayed))
	require.True(t, replayed)

	// Third job: cancelled before it ran.
	var cancelled bool
	require.NoError(t, producer.QueryRow(ctx, `SELECT durable_jobs.cancel_job($1)`, third).Scan(&cancelled))
	require.True(t, cancelled)

	// The replayed job is running now, with a live claim.
	id, token = claim(t, seoul, "billing", ownerSeoul)
	require.Equal(t, second, id)
	secrets = append(secrets, tokenForms(t, token)...)

	r = leasectl(t, "deployment", "record", "--version", "2026.12.02+build.7", "--source", "0123456789abcdef0123456789abcdef01234567", "--deployed-by", "ops.alice", "--ticket", "REL-42", "--reason", "REL-19 roll out renewals",
		"--database-url", db.URL)
	requireCode(t, exitOK, r)
	require.Equal(t, "recorded deployment version 2026.12.02+build.7\n", r.stdout)
	return secrets
}

func TestNoCommandEverPrintsPayloadTokenOwnerOrKey(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	secrets := lifecycle(t, db)
	auditor := db.LoginURL(t, "durable_job_auditor")
	operator := db.LoginURL(t, "durable_job_operator")

	var outputs []result
	runs := [][]string{
		{"policy", "show"}, {"policy", "show", "--output", "json"},
		{"health"}, {"health", "--output", "json"},
		{"audit"}, {"audit", "--output", "json"},
		{"evidence"}, {"evidence", "--format", "json"}, {"evidence", "--output", "json"},
		{"evidence", "--output", "text", "--since", "1h"},
		{"migrate", "status"}, {"migrate", "status", "--output", "json"},
	}
	for _, args := range runs {
		url := auditor
		if args[0] == "migrate" {
			url = db.URL // runtime roles cannot read the version table
		}
		r := leasectl(t, append(args, "--database-url", url)...)
		requireCode(t, exitOK, r, args)
		outputs = append(outputs, r)
	}
	// The superuser's audit also runs the trial UPDATE and DELETE.
	outputs = append(outputs, leasectl(t, "audit", "--database-url", db.URL),
		leasectl(t, "evidence", "--format", "json", "--database-url", db.URL))
	for _, args := range [][]string{
		{"policy", "set", "--queue", "billing", "--renewal-enabled=false", "--reason", "INC-5 stop", "--database-url", operator},
		{"policy", "set", "--queue", "billing", "--renewal-enabled=true", "--reason", "INC-5 resume", "--output", "json", "--database-url", operator},
		{"deployment", "record", "--version", "2026.12.03", "--source", "0123456789abcdef0123456789abcdef01234567", "--deployed-by", "ops.alice", "--ticket", "REL-42", "--reason", "REL-20", "--output", "json", "--database-url", db.URL},
		{"deployment", "record", "--version", "not a version!", "--source", "0123456789abcdef0123456789abcdef01234567", "--deployed-by", "ops.alice", "--ticket", "REL-42", "--reason", "REL-21", "--database-url", db.URL},
		{"migrate", "up", "--database-url", db.URL},
	} {
		outputs = append(outputs, leasectl(t, args...))
	}
	for _, r := range outputs {
		for _, secret := range secrets {
			require.NotContains(t, r.output(), secret)
		}
	}
}

func TestEvidenceReportMapsEverySectionToControls(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	lifecycle(t, db)
	auditor := db.LoginURL(t, "durable_job_auditor")

	r := leasectl(t, "evidence", "--format", "json", "--database-url", auditor)
	requireCode(t, exitOK, r)
	var report struct {
		GeneratedAt string  `json:"generated_at"`
		Since       *string `json:"since"`
		Sections    []struct {
			ID       string             `json:"id"`
			Controls []evidence.Control `json:"controls"`
			Data     json.RawMessage    `json:"data"`
		} `json:"sections"`
		ControlIndex []controls.Control `json:"control_index"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &report), r.stdout)
	require.Nil(t, report.Since)
	require.Equal(t, controls.Controls(), report.ControlIndex)
	sections := map[string]json.RawMessage{}
	for i, s := range report.Sections {
		want := controls.EvidenceSections()[i]
		require.Equal(t, want.ID, s.ID)
		require.Len(t, s.Controls, len(want.Controls))
		for j, c := range s.Controls {
			require.Equal(t, want.Controls[j], c.ID)
			require.NotEmpty(t, c.Title)
		}
		sections[s.ID] = s.Data
	}
	require.Len(t, report.Sections, len(controls.EvidenceSections()))

	var migration evidence.Migration
	require.NoError(t, json.Unmarshal(sections[controls.SectionMigration], &migration))
	require.True(t, migration.UpToDate)
	require.NotNil(t, migration.AppliedAt)

	var deployments, policyHistory, enablement []evidence.Record
	require.NoError(t, json.Unmarshal(sections[controls.SectionDeployments], &deployments))
	require.Len(t, deployments, 1)
	require.JSONEq(t, `{"deployment_version": "2026.12.02+build.7", "source_digest": "0123456789abcdef0123456789abcdef01234567",
		"deployed_by": "ops.alice"}`, string(deployments[0].NewValues))
	require.Equal(t, "REL-19 roll out renewals", deployments[0].Reason)
	require.NoError(t, json.Unmarshal(sections[controls.SectionPolicy], &policyHistory))
	require.Len(t, policyHistory, 2) // the bundle's default, then CHG-2001
	require.Equal(t, "CHG-2001 short leases for the evidence test", policyHistory[1].Reason)
	require.Equal(t, "billing", *policyHistory[1].Queue)
	require.True(t, strings.HasPrefix(policyHistory[1].ChangedByRole, "lf_"))
	require.NoError(t, json.Unmarshal(sections[controls.SectionEnablement], &enablement))
	require.Empty(t, enablement)

	var outcomes []evidence.Outcome
	require.NoError(t, json.Unmarshal(sections[controls.SectionOutcomes], &outcomes))
	require.Contains(t, outcomes, evidence.Outcome{Queue: "billing", Outcome: "reclaim", Count: 1})
	// seoul's stale renewal came after busan, another login, reclaimed the
	// job: since migration 012 it is charged to '*', as any stale call on a
	// job the calling login did not claim last is; the reclaim is billing's.
	require.Contains(t, outcomes, evidence.Outcome{Queue: "*", Outcome: "stale_renewal", Count: 1})
	var statuses []evidence.Status
	require.NoError(t, json.Unmarshal(sections[controls.SectionJobStatus], &statuses))
	require.ElementsMatch(t, []evidence.Status{{Queue: "billing", Status: "RUNNING", Count: 1}, {Queue: "billing", Status: "SUCCEEDED", Count: 1},
		{Queue: "billing", Status: "CANCELLED", Count: 1}}, statuses)
	var auditData audit.Report
	require.NoError(t, json.Unmarshal(sections[controls.SectionAudit], &auditData))
	require.True(t, auditData.Passed, "%+v", auditData)

	// The Markdown report carries the same facts and every identifier.
	r = leasectl(t, "evidence", "--database-url", auditor)
	requireCode(t, exitOK, r)
	md := r.stdout
	require.True(t, strings.HasPrefix(md, "# leasefence control evidence\n"))
	for _, s := range controls.EvidenceSections() {
		require.Contains(t, md, "## "+s.Title+" ("+s.ID+")")
	}
	for _, c := range controls.Controls() {
		require.Contains(t, md, "| "+c.ID+" | "+c.Title+" |")
	}
	for _, a := range controls.AuditChecks() {
		require.Contains(t, md, "| "+a.ID+" | pass |")
	}
	require.Contains(t, md, "REL-19 roll out renewals")
	require.Contains(t, md, "`{\"deployed_by\":\"ops.alice\",\"deployment_version\":\"2026.12.02+build.7\","+
		"\"source_digest\":\"0123456789abcdef0123456789abcdef01234567\"}`")
	require.Contains(t, md, "| billing | reclaim | 1 |")
	require.Contains(t, md, "| \\* | stale_renewal | 1 |") // charged to '*' since migration 012 (above)
	require.Contains(t, md, "| billing | SUCCEEDED | 1 |")
	require.Contains(t, md, "**Passed**")
	require.Contains(t, md, "No records.") // no enablement change yet
	require.Regexp(t, `\| billing \| 1s \| 300ms \| 1h \| yes \|`, md)
}

func TestEvidenceSinceLimitsTheHistories(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	admin := db.Pool(t)
	// Make the bundle's own records look a day old (the guard refuses
	// updates, so the superuser lifts it for this setup step only).
	execSQL(t, admin, `ALTER TABLE durable_jobs.control_evidence_record DISABLE TRIGGER USER`)
	execSQL(t, admin, `UPDATE durable_jobs.control_evidence_record SET recorded_at = recorded_at - interval '1 day'`)
	execSQL(t, admin, `ALTER TABLE durable_jobs.control_evidence_record ENABLE TRIGGER USER`)
	r := leasectl(t, "deployment", "record", "--version", "7.0.1", "--source", "0123456789abcdef0123456789abcdef01234567", "--deployed-by", "ops.alice", "--ticket", "REL-42", "--reason", "REL-7", "--database-url", db.URL)
	requireCode(t, exitOK, r)
	auditor := db.LoginURL(t, "durable_job_auditor")

	for _, since := range []string{"1h", time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)} {
		r = leasectl(t, "evidence", "--since", since, "--database-url", auditor)
		requireCode(t, exitOK, r)
		require.Contains(t, r.stdout, "Histories and outcome totals cover records from ")
		require.Contains(t, r.stdout, "REL-7")
		require.NotContains(t, r.stdout, "bundle default policy installed by migration 001")
		require.Contains(t, r.stdout, "No stale renewals or reclaims.")
		require.Contains(t, r.stdout, "No jobs.")
	}
	r = leasectl(t, "evidence", "--database-url", auditor)
	requireCode(t, exitOK, r)
	require.Contains(t, r.stdout, "bundle default policy installed by migration 001")
	require.Contains(t, r.stdout, "cover everything the database keeps")

	// A database without migration evidence says so rather than guessing.
	execSQL(t, admin, `ALTER TABLE durable_jobs.control_evidence_record DISABLE TRIGGER USER`)
	execSQL(t, admin, `DELETE FROM durable_jobs.control_evidence_record WHERE evidence_kind LIKE 'migration%'`)
	execSQL(t, admin, `ALTER TABLE durable_jobs.control_evidence_record ENABLE TRIGGER USER`)
	r = leasectl(t, "evidence", "--output", "json", "--database-url", auditor)
	requireCode(t, exitOK, r)
	require.Contains(t, r.stdout, `"migration_version": 0`)
	require.Contains(t, r.stdout, `"applied_at": null`)
	r = leasectl(t, "evidence", "--database-url", auditor)
	requireCode(t, exitOK, r)
	require.Regexp(t, `\| 0 \| - \| \d+ \| no \|`, r.stdout)
	require.Contains(t, r.stdout, "**Failed**") // the audit sees the version as behind
	require.Contains(t, r.stdout, "| AUDIT-MIGRATION-VERSION | FAIL |")
}

func TestEvidenceSaysWhichReadFailed(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	admin := db.Pool(t)
	auditor := db.LoginURL(t, "durable_job_auditor")
	// Take the auditor's functions away one by one, last read first, and see
	// each failure named.
	for _, step := range []struct{ function, doing string }{
		{"job_status_totals()", "read job status totals"},
		{"lease_outcome_totals(timestamptz)", "read lease outcome totals"},
		{"queue_lease_policies()", "read lease policies"},
		{"control_evidence_records(timestamptz, timestamptz)", "read control evidence"},
		{"bundle_migration_version()", "read migration version"},
	} {
		execSQL(t, admin, `REVOKE EXECUTE ON FUNCTION durable_jobs.`+step.function+` FROM durable_job_auditor`)
		r := leasectl(t, "evidence", "--database-url", auditor)
		requireCode(t, exitError, r, step.function)
		require.True(t, strings.HasPrefix(r.stderr, "error: "+step.doing+": permission denied for function "), r.stderr)
		require.Contains(t, r.stderr, "(SQLSTATE 42501)")
		require.Empty(t, r.stdout)
	}
}

func TestHealthCountsRunningExpiringAndExpiredLeases(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	producer := db.LoginPool(t, "durable_job_producer")
	worker := db.LoginPool(t, "durable_job_worker")
	auditor := db.LoginURL(t, "durable_job_auditor")
	operator := db.LoginURL(t, "durable_job_operator")
	r := leasectl(t, "policy", "set", "--queue", "billing", "--lease-duration", "1s", "--renewal-interval", "300ms",
		"--max-claim-lifetime", "1h", "--reason", "short leases", "--database-url", operator)
	requireCode(t, exitOK, r)
	r = leasectl(t, "policy", "set", "--queue", "ingest", "--lease-duration", "3s", "--renewal-interval", "1s",
		"--max-claim-lifetime", "1h", "--reason", "three second leases", "--database-url", operator)
	requireCode(t, exitOK, r)
	for _, q := range []string{"billing", "ingest"} {
		_, err := producer.Exec(ctx, `SELECT durable_jobs.enqueue_job($1, '{"k": "v"}'::jsonb)`, q)
		require.NoError(t, err)
	}

	r = leasectl(t, "health", "--database-url", auditor)
	requireCode(t, exitOK, r)
	require.Regexp(t, `(?m)^QUEUE\s+RUNNING\s+EXPIRING SOON\s+AWAITING RECLAIM\s+RECLAIMS 1H\s+FAILOVER 1H\s+STALE 1H\s+STALE RELEASES 1H\s+OLDEST LEASE$`, r.stdout)
	require.Regexp(t, `(?m)^billing\s+0\s+0\s+0\s+0\s+0\s+0\s+0\s+-$`, r.stdout)
	require.Regexp(t, `(?m)^read at \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z \(database time\)$`, r.stdout)

	claim(t, worker, "billing", "w1")
	var ingestClaimedAt time.Time
	require.NoError(t, worker.QueryRow(ctx, `SELECT database_time FROM durable_jobs.claim_next_job('ingest', 'w1')`).
		Scan(&ingestClaimedAt))
	time.Sleep(1200 * time.Millisecond) // the billing lease expires by database time

	read := func() map[string]healthJSON {
		r := leasectl(t, "health", "--output", "json", "--database-url", auditor)
		requireCode(t, exitOK, r)
		var health []healthJSON
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &health), r.stdout)
		byQueue := map[string]healthJSON{}
		for _, h := range health {
			byQueue[h.Queue] = h
		}
		return byQueue
	}
	byQueue := read()
	require.Contains(t, byQueue, "*")
	require.Nil(t, byQueue["*"].OldestLeaseAgeSeconds)
	billing := byQueue["billing"]
	require.Equal(t, int64(1), billing.RunningJobs)
	require.Equal(t, int64(1), billing.ExpiredAwaitingReclaim)
	require.Equal(t, int64(0), billing.ExpiringWithinInterval)
	require.NotNil(t, billing.OldestLeaseAgeSeconds)
	require.GreaterOrEqual(t, *billing.OldestLeaseAgeSeconds, 1.2)
	require.Equal(t, int64(1), byQueue["ingest"].RunningJobs)
	var released bool
	require.NoError(t, worker.QueryRow(ctx, `SELECT durable_jobs.release_job_claim(-1, gen_random_uuid(), 'w1')`).Scan(&released))
	require.False(t, released)
	require.Equal(t, int64(1), read()["*"].StaleReleasesLastHour, "a release of an unknown job is a stale release under '*'")

	// The ingest lease (3 s) is "expiring soon" once it is within one
	// renewal interval (1 s) of its expiry, and "awaiting reclaim" after it.
	time.Sleep(1000 * time.Millisecond)
	ingest := read()["ingest"]
	readAt, err := time.Parse("2006-01-02T15:04:05.000Z", ingest.DatabaseTime)
	require.NoError(t, err)
	age := readAt.Sub(ingestClaimedAt)
	require.GreaterOrEqual(t, age, 2*time.Second)
	if age < 3*time.Second-time.Millisecond {
		require.Equal(t, int64(1), ingest.ExpiringWithinInterval, "read %s after the claim", age)
		require.Equal(t, int64(0), ingest.ExpiredAwaitingReclaim)
	} else {
		require.Equal(t, int64(1), ingest.ExpiredAwaitingReclaim, "read %s after the claim", age)
	}

	// A worker login may not read health.
	r = leasectl(t, "health", "--database-url", db.LoginURL(t, "durable_job_worker"))
	requireCode(t, exitError, r)
	require.Equal(t, "error: read lease health: permission denied for function lease_health_by_queue (SQLSTATE 42501)\n", r.stderr)
}

func TestDeploymentRecordRefusesMalformedVersionsAndRuntimeRoles(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	deploy := func(url string, version, source, by, ticket, reason string, extra ...string) result {
		return leasectl(t, append([]string{"deployment", "record", "--version", version, "--source", source,
			"--deployed-by", by, "--ticket", ticket, "--reason", reason, "--database-url", url}, extra...)...)
	}
	const commit = "0123456789abcdef0123456789abcdef01234567"
	for _, bad := range [][]string{
		{"-bad version", commit, "ops.alice", "REL-1", "roll out"},
		{"1.2.3", "main", "ops.alice", "REL-1", "roll out"},
		{"1.2.3", commit, "deploy-bot@example.com", "REL-1", "roll out"},
		{"1.2.3", commit, "ops.alice", "see chat", "roll out"},
		{"1.2.3", commit, "ops.alice", "REL-1", " "},
		{"1.2.3", commit, "ops.alice", "REL-1", "customer 김민수 RRN 900101-1234567"},
		{"1.2.3", commit, "ops.alice", "REL-1", "pw=hunter2"},
	} {
		r := deploy(db.URL, bad[0], bad[1], bad[2], bad[3], bad[4])
		requireCode(t, exitError, r, bad)
		require.True(t, strings.HasPrefix(r.stderr, "error: record deployment: invalid "), "%v: %s", bad, r.stderr)
		require.Contains(t, r.stderr, "(SQLSTATE LF002)", bad)
		require.NotContains(t, r.stderr, "900101", bad)
		require.NotContains(t, r.stderr, "hunter2", bad)
	}
	r := deploy(db.LoginURL(t, "durable_job_operator"), "1.2.3", commit, "ops.alice", "REL-2", "roll out")
	requireCode(t, exitError, r)
	require.Contains(t, r.stderr, "permission denied for function record_deployment (SQLSTATE 42501)")
	auditor := db.LoginURL(t, "durable_job_auditor")
	r = leasectl(t, "evidence", "--format", "json", "--database-url", auditor)
	requireCode(t, exitOK, r)
	require.NotContains(t, r.stdout, "deployment_recorded", "nothing refused was recorded")

	r = deploy(db.URL, "1.2.3", "sha256:"+strings.Repeat("ab", 32), "ops.alice", "REL-2", "roll out", "--output", "json")
	requireCode(t, exitOK, r)
	require.JSONEq(t, `{"deployment_version": "1.2.3", "source_digest": "sha256:`+strings.Repeat("ab", 32)+
		`", "deployed_by": "ops.alice", "recorded": true}`, r.stdout)
	r = leasectl(t, "evidence", "--format", "json", "--database-url", auditor)
	requireCode(t, exitOK, r)
	require.Contains(t, r.stdout, `"deployed_by": "ops.alice"`)
}

func TestEvidenceShowsOperatorTextAsTextNotMarkup(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	admin := db.Pool(t)

	// An operator login whose role name is markup with an escape sequence
	// and a right-to-left override in it, and a reason full of the same.
	role := "op<b>|[x](y)\x1b[2J\u202e" + uuid.NewString()[:4]
	password := strings.ReplaceAll(uuid.NewString(), "-", "")
	// Roles are cluster-wide: the login and its bounds commit together, so
	// another test's audit never sees it unbounded.
	quoted := pgx.Identifier{role}.Sanitize()
	_, err := admin.Exec(ctx, "BEGIN; CREATE ROLE "+quoted+" LOGIN PASSWORD '"+password+"' IN ROLE durable_job_operator; "+
		"ALTER ROLE "+quoted+" SET statement_timeout = '5min'; "+
		"ALTER ROLE "+quoted+" SET idle_in_transaction_session_timeout = '5min'; COMMIT")
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = admin.Exec(context.Background(), "DROP ROLE "+pgx.Identifier{role}.Sanitize()) })
	u, err := url.Parse(db.URL)
	require.NoError(t, err)
	u.User = url.UserPassword(role, password)
	operatorURL := u.String()
	reason := "<img src=x onerror=alert(1)> [approved](https://evil.example/approve) \x1b[31mred\u202eevil\nline2 " +
		"`tick` | pipe *em* _u_ ~~s~~ &amp; zero\u200bwidth <script>x</script>"
	// The database refuses control and bidi characters in a reason (LF002),
	// so that reason never reaches the evidence through the function.
	r := leasectl(t, "policy", "set", "--queue", "billing", "--reason", reason, "--database-url", operatorURL)
	requireCode(t, exitError, r)
	require.Contains(t, r.stderr, "LF002")
	require.NotContains(t, r.output(), "\x1b", "the refusal does not echo the reason's controls")
	// Markup alone is accepted: it is the report's to escape.
	r = leasectl(t, "policy", "set", "--queue", "billing", "--reason", "markup <b>only</b> [ok](https://evil.example/ok)",
		"--database-url", operatorURL)
	requireCode(t, exitOK, r)
	// Older records, or ones written around the function, can still hold
	// controls: the report must show those as text too. The table's owner
	// plants one in the operator's name.
	_, err = admin.Exec(ctx, `INSERT INTO durable_jobs.control_evidence_record
		(evidence_kind, queue_name, previous_values, new_values, change_reason, changed_by_role)
		VALUES ('lease_policy_changed', 'billing', NULL, '{"renewal_enabled": true}', $1, $2)`, reason, role)
	require.NoError(t, err)

	// A record whose JSON holds backticks, planted by the table's owner
	// (the evidence table refuses changes, not new rows from its owner).
	_, err = admin.Exec(ctx, `INSERT INTO durable_jobs.control_evidence_record (evidence_kind, new_values, change_reason)
		VALUES ('deployment_recorded', '{"deployment_version": "`+"``"+`</code><img src=x onerror=alert(2)>|"}', 'planted')`)
	require.NoError(t, err)

	r = leasectl(t, "evidence", "--format", "markdown", "--database-url", db.LoginURL(t, "durable_job_auditor"))
	requireCode(t, exitOK, r)
	md := r.stdout
	require.Contains(t, md, "| ```"+`{"deployment_version":"`+"``"+`\u003c/code\u003e\u003cimg src=x onerror=alert(2)\u003e\|"}`+"``` |",
		"the JSON stays inside its code span")
	for _, raw := range []string{"<img", "<b>", "<script", "](https://", "\x1b", "\u202e", "\u200b", "*em*", "~~s~~", "`tick`"} {
		require.NotContains(t, md, raw)
	}
	escapedRole := `op&lt;b&gt;\|\[x\]\(y\)\\u001b\[2J\\u202e`
	var row string
	for line := range strings.SplitSeq(md, "\n") {
		if strings.Contains(line, "evil.example") {
			row = line
		}
	}
	require.NotEmpty(t, row, md)
	for _, escaped := range []string{
		`| &lt;img src=x onerror=alert\(1\)&gt; \[approved\]\(https://evil.example/approve\) ` +
			`\\u001b\[31mred\\u202eevil\\u000aline2 \` + "`" + `tick\` + "`" + ` \| pipe \*em\* \_u\_ \~\~s\~\~ &amp;amp; ` +
			`zero\\u200bwidth &lt;script&gt;x&lt;/script&gt; | - | - | ` + escapedRole,
	} {
		require.Contains(t, row, escaped)
	}
	unescapedPipes := regexp.MustCompile(`(^|[^\\])\|`).FindAllString(row, -1)
	require.Len(t, unescapedPipes, 11, "the row keeps its 10 columns: %s", row)
	require.Regexp(t, `\| billing \| .* \| `+regexp.QuoteMeta(escapedRole)+`[0-9a-f]{4} \|`, md)

	// JSON keeps the reason as it was written.
	r = leasectl(t, "evidence", "--format", "json", "--database-url", db.LoginURL(t, "durable_job_auditor"))
	requireCode(t, exitOK, r)
	require.Contains(t, r.stdout, `"reason": "\u003cimg src=x onerror=alert(1)\u003e [approved](https://evil.example/approve) \u001b[31mred`+
		"\u202e"+`evil\nline2`)

	// The text table of policy show shows the role's controls as escapes.
	r = leasectl(t, "policy", "show", "--database-url", operatorURL)
	requireCode(t, exitOK, r)
	require.NotContains(t, r.stdout, "\x1b")
	require.NotContains(t, r.stdout, "\u202e")
	require.Contains(t, r.stdout, `op<b>|[x](y)\u001b[2J\u202e`)
}
