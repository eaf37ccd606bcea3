package main

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/mightyetl/leasefence/controls"
	"github.com/mightyetl/leasefence/evidence"
	"github.com/mightyetl/leasefence/internal/testdb"
)

// evidenceReportJSON is the part of `leasectl evidence --format json` these
// tests read.
type evidenceReportJSON struct {
	SchemaVersion int               `json:"schema_version"`
	Database      evidence.Database `json:"database"`
	Chain         evidence.Chain    `json:"evidence_chain"`
	BodyDigest    string            `json:"body_digest"`
	Sections      []struct {
		ID   string          `json:"id"`
		Data json.RawMessage `json:"data"`
	} `json:"sections"`
}

// evidenceJSON runs `leasectl evidence --format json` with args and decodes
// it; the body digest must be the one its own JSON gives. It starts once
// the database shows no login session left (see waitForNoLoginSessions),
// so the report's audit section is the same for the same state.
func evidenceJSON(t *testing.T, admin *pgxpool.Pool, url string, args ...string) (evidenceReportJSON, string) {
	t.Helper()
	waitForNoLoginSessions(t, admin)
	r := leasectl(t, append(append([]string{"evidence", "--format", "json"}, args...), "--database-url", url)...)
	requireCode(t, exitOK, r, args)
	var report evidenceReportJSON
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &report), r.stdout)
	digest, err := evidence.BodyDigest([]byte(r.stdout))
	require.NoError(t, err)
	require.Equal(t, digest, report.BodyDigest)
	return report, r.stdout
}

// sectionsOf returns the sections of a JSON report, as JSON.
func sectionsOf(t *testing.T, report string) string {
	t.Helper()
	var r struct {
		Sections json.RawMessage `json:"sections"`
	}
	require.NoError(t, json.Unmarshal([]byte(report), &r))
	return string(r.Sections)
}

// databaseClock reads the database's clock as an RFC 3339 time.
func databaseClock(t *testing.T, pool *pgxpool.Pool) string {
	t.Helper()
	var at time.Time
	require.NoError(t, pool.QueryRow(context.Background(), `SELECT pg_catalog.clock_timestamp()`).Scan(&at))
	return at.UTC().Format(time.RFC3339Nano)
}

// rewriteEvidence is what the table's owner can do: with the triggers off,
// change the reason of record id and recompute the hash of it and of every
// later record, so the chain is whole again.
func rewriteEvidence(t *testing.T, pool *pgxpool.Pool, id int64, reason string) {
	t.Helper()
	execSQL(t, pool, `ALTER TABLE durable_jobs.control_evidence_record DISABLE TRIGGER USER`)
	execSQL(t, pool, `UPDATE durable_jobs.control_evidence_record SET change_reason = $2 WHERE evidence_record_id = $1`, id, reason)
	execSQL(t, pool, fmt.Sprintf(`DO $$
		DECLARE
			v_previous bytea;
			r record;
		BEGIN
			SELECT e.previous_record_hash INTO v_previous FROM durable_jobs.control_evidence_record e WHERE e.evidence_record_id = %d;
			FOR r IN SELECT e.* FROM durable_jobs.control_evidence_record e WHERE e.evidence_record_id >= %d ORDER BY 1 LOOP
				UPDATE durable_jobs.control_evidence_record e
				SET previous_record_hash = v_previous,
				    record_hash = sha256(v_previous || durable_jobs.evidence_content_digest(r.evidence_record_id, r.evidence_kind,
				        r.queue_name, r.previous_values, r.new_values, r.change_reason, r.changed_by_role, r.recorded_at,
				        r.change_ticket, r.change_approver))
				WHERE e.evidence_record_id = r.evidence_record_id
				RETURNING e.record_hash INTO v_previous;
			END LOOP;
		END $$`, id, id))
	execSQL(t, pool, `ALTER TABLE durable_jobs.control_evidence_record ENABLE TRIGGER USER`)
}

// Attack: the table's owner turned the triggers off, rewrote a record and
// recomputed every later hash, or deleted the newest records; the chain is
// whole, so AUDIT-EVIDENCE-CHAIN passes. What catches it: the chain head of
// an earlier exported report, compared with the same period reported again.
func TestEvidenceChainHeadOfAnEarlierReportExposesARewrittenChain(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// The report's audit section reads cluster-wide roles, which other tests
	// create and change on a shared cluster: two reports compared by their
	// body digest need a cluster of their own.
	_, db := testdb.OwnCluster(t)
	admin := db.Pool(t)
	auditor := db.LoginURL(t, "durable_job_auditor")
	deploy := func(version string) {
		t.Helper()
		r := leasectl(t, "deployment", "record", "--version", version, "--source", strings.Repeat("ab", 20),
			"--deployed-by", "ops.alice", "--ticket", "REL-42", "--reason", "REL-42 roll out "+version, "--database-url", db.URL)
		requireCode(t, exitOK, r)
	}
	deploy("1.0.0")
	a := databaseClock(t, admin)
	deploy("1.0.1")
	deploy("1.0.2")
	b := databaseClock(t, admin)

	// The earlier, exported report of [a, b).
	earlier, earlierRaw := evidenceJSON(t, admin, auditor, "--since", a, "--until", b)
	var first, last int64
	var head string
	require.NoError(t, admin.QueryRow(ctx, `SELECT min(evidence_record_id), max(evidence_record_id)
		FROM durable_jobs.control_evidence_record WHERE new_values ->> 'deployment_version' IN ('1.0.1', '1.0.2')`).Scan(&first, &last))
	require.NoError(t, admin.QueryRow(ctx, `SELECT encode(record_hash, 'hex') FROM durable_jobs.control_evidence_record
		WHERE evidence_record_id = $1`, last).Scan(&head))
	require.Equal(t, evidence.SchemaVersion, earlier.SchemaVersion)
	var firstHead string
	require.NoError(t, admin.QueryRow(ctx, `SELECT encode(record_hash, 'hex') FROM durable_jobs.control_evidence_record
		WHERE evidence_record_id = $1`, first).Scan(&firstHead))
	require.Equal(t, evidence.Chain{RecordCount: 2, FirstID: &first, LastID: &last, Head: &head,
		Links: []evidence.ChainLink{{ID: first, Hash: firstHead}, {ID: last, Hash: head}}}, earlier.Chain)
	var name, system string
	require.NoError(t, admin.QueryRow(ctx, `SELECT current_database(), (SELECT system_identifier::text FROM pg_control_system())`).
		Scan(&name, &system))
	require.Equal(t, evidence.Database{SystemIdentifier: system, Name: name}, earlier.Database)

	r := leasectl(t, "evidence", "--since", a, "--until", b, "--database-url", auditor)
	requireCode(t, exitOK, r)
	require.Contains(t, r.stdout, fmt.Sprintf("Evidence chain: the period holds 2 evidence records, ids %d to %d; "+
		"chain head (record_hash of record %d) `%s`.\n", first, last, last, head))
	require.Contains(t, r.stdout, fmt.Sprintf("Database %s (system identifier %s).\n", strings.ReplaceAll(name, "_", `\_`), system))
	require.Contains(t, r.stdout, fmt.Sprintf("JSON schema version %d, body digest %s.\n", evidence.SchemaVersion, earlier.BodyDigest))

	// Records after the period change nothing of it: same head, same body.
	deploy("1.0.3")
	again, againRaw := evidenceJSON(t, admin, auditor, "--since", a, "--until", b)
	require.Equal(t, earlier.Chain, again.Chain)
	require.JSONEq(t, sectionsOf(t, earlierRaw), sectionsOf(t, againRaw))
	require.Equal(t, earlier.BodyDigest, again.BodyDigest, "two reports of the same state and period")

	// The owner rewrites the period's first record and recomputes the chain:
	// the audit passes, the chain head of the same period does not match.
	rewriteEvidence(t, admin, first, "REL-42 nothing was rolled out")
	auditPasses := func(msg string) {
		t.Helper()
		waitForNoLoginSessions(t, admin)
		r := leasectl(t, "audit", "--database-url", auditor)
		requireCode(t, exitOK, r, msg)
	}
	auditPasses("an unkeyed chain recomputed by its owner is whole again")
	rewritten, _ := evidenceJSON(t, admin, auditor, "--since", a, "--until", b)
	require.Equal(t, earlier.Chain.RecordCount, rewritten.Chain.RecordCount)
	require.Equal(t, *earlier.Chain.LastID, *rewritten.Chain.LastID)
	require.NotEqual(t, *earlier.Chain.Head, *rewritten.Chain.Head)
	require.NotEqual(t, earlier.BodyDigest, rewritten.BodyDigest)

	// The owner deletes the newest records: the chain is whole, the audit
	// passes, and the period's last id, count and head differ.
	execSQL(t, admin, `ALTER TABLE durable_jobs.control_evidence_record DISABLE TRIGGER USER`)
	execSQL(t, admin, `DELETE FROM durable_jobs.control_evidence_record WHERE evidence_record_id >= $1`, last)
	execSQL(t, admin, `ALTER TABLE durable_jobs.control_evidence_record ENABLE TRIGGER USER`)
	auditPasses("deleting the newest records leaves a whole chain")
	truncated, _ := evidenceJSON(t, admin, auditor, "--since", a, "--until", b)
	require.Equal(t, 1, truncated.Chain.RecordCount)
	require.NotEqual(t, *earlier.Chain.LastID, *truncated.Chain.LastID)
	require.NotEqual(t, *earlier.Chain.Head, *truncated.Chain.Head)

	// A period without records says so.
	empty, _ := evidenceJSON(t, admin, auditor, "--since", databaseClock(t, admin))
	require.Equal(t, evidence.Chain{Links: []evidence.ChainLink{}}, empty.Chain)
	r = leasectl(t, "evidence", "--since", databaseClock(t, admin), "--database-url", auditor)
	requireCode(t, exitOK, r)
	require.Contains(t, r.stdout, "Evidence chain: the period holds no evidence records.\n")
}

// The retention purge and erasure dispose of finished jobs' data; the
// report's disposal section shows what they removed in the period as
// counts per queue and kind, and the retention policy changes, and
// nothing that identifies a job.
func TestEvidenceReportShowsDisposalAsCountsOnly(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	admin := db.Pool(t)
	operator := db.LoginURL(t, "durable_job_operator")
	auditor := db.LoginURL(t, "durable_job_auditor")
	// Job ids that cannot be mistaken for any other number in the report.
	execSQL(t, admin, `SELECT setval(pg_get_serial_sequence('durable_jobs.job_record', 'job_record_id'), 987654300)`)

	r := leasectl(t, "retention", "set", "--queue", "ingest", "--payload-retention", "7d", "--record-retention", "90d",
		"--reason", "CHG-8 ingest keeps less", "--database-url", operator)
	requireCode(t, exitOK, r)
	before := databaseClock(t, admin)
	for range 2 {
		finishedJob(t, admin, "billing", "400 days") // past the default record retention (365 days)
	}
	for range 3 {
		finishedJob(t, admin, "ingest", "10 days") // past ingest's payload retention (7 days)
	}
	erased := finishedJob(t, admin, "billing", "1 minute")
	r = leasectl(t, "erase", "--job", itoa(erased), "--reason", "DSR-2026-002", "--database-url", operator)
	requireCode(t, exitOK, r)
	r = leasectl(t, "retention", "apply", "--database-url", operator)
	requireCode(t, exitOK, r)

	report, raw := evidenceJSON(t, admin, auditor)
	var disposalRaw json.RawMessage
	for _, s := range report.Sections {
		if s.ID == controls.SectionDisposal {
			disposalRaw = s.Data
		}
	}
	require.NotNil(t, disposalRaw)
	var disposal evidence.Disposal
	require.NoError(t, json.Unmarshal(disposalRaw, &disposal))
	require.Equal(t, 1, disposal.PurgeRuns)
	require.Equal(t, []evidence.PurgedCount{{Queue: "billing", Kind: "job_record", Count: 2},
		{Queue: "ingest", Kind: "payload", Count: 3}}, disposal.Purged)
	require.Equal(t, []evidence.ErasureCount{{Queue: "billing", JobStatus: "SUCCEEDED", Count: 1}}, disposal.Erasures)
	require.Len(t, disposal.RetentionPolicyChanges, 1)
	require.Equal(t, "CHG-8 ingest keeps less", disposal.RetentionPolicyChanges[0].Reason)
	// Exactly these members: counts, never a job id or an erasure's reason.
	var members map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(disposalRaw, &members))
	require.Equal(t, []string{"erasures", "purge_runs", "purged", "retention_policy_changes"}, slices.Sorted(maps.Keys(members)))
	var purged, erasures []map[string]any
	require.NoError(t, json.Unmarshal(members["purged"], &purged))
	require.NoError(t, json.Unmarshal(members["erasures"], &erasures))
	require.Equal(t, []string{"count", "kind", "queue"}, slices.Sorted(maps.Keys(purged[0])))
	require.Equal(t, []string{"count", "job_status", "queue"}, slices.Sorted(maps.Keys(erasures[0])))

	md := leasectl(t, "evidence", "--database-url", auditor)
	requireCode(t, exitOK, md)
	for _, want := range []string{"## Disposal (EVIDENCE-DISPOSAL)", "Purge calls that removed something: 1.",
		`| billing | job\_record | 2 |`, "| ingest | payload | 3 |", "| billing | SUCCEEDED | 1 |", "CHG-8 ingest keeps less"} {
		require.Contains(t, md.stdout, want)
	}
	for _, out := range []string{raw, md.stdout} {
		require.NotContains(t, out, "98765430", "no job id")
		require.NotContains(t, out, "DSR-2026-002", "no erasure reason")
		require.NotContains(t, out, "carol", "no payload or result")
	}

	// A period after the disposals shows none.
	r = leasectl(t, "evidence", "--since", databaseClock(t, admin), "--database-url", auditor)
	requireCode(t, exitOK, r)
	require.Contains(t, r.stdout, "Purge calls that removed something: 0.\n\nNo payload erasures.\n\nRetention policy changes:\n\nNo records.\n")
	r = leasectl(t, "evidence", "--since", before, "--database-url", auditor)
	requireCode(t, exitOK, r)
	require.NotContains(t, r.stdout, "CHG-8", "the retention change was before the period")
	require.Contains(t, r.stdout, "| ingest | payload | 3 |")
}
