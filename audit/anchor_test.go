package audit

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/mightyetl/leasefence/controls"
	"github.com/mightyetl/leasefence/internal/testdb"
)

// hashOf is a made-up record hash.
func hashOf(s string) []byte {
	sum := sha256.Sum256([]byte(s))
	return sum[:]
}

// reportJSON is an evidence report's JSON with the given chain member and
// its body digest.
func reportJSON(t *testing.T, chain string) []byte {
	t.Helper()
	body := `{"schema_version":3,"generated_at":"2026-12-06T03:00:00.000Z","database":{"system_identifier":"7","name":"jobs"},` +
		`"evidence_chain":` + chain + `,"body_digest":""}`
	digest, err := BodyDigest([]byte(body))
	require.NoError(t, err)
	return []byte(strings.Replace(body, `"body_digest":""`, `"body_digest":"`+digest+`"`, 1))
}

// An anchor is read from the JSON of leasectl evidence (with its links, or
// only its head at schema version 2) and from a migrate down export;
// anything else, an empty period or a changed file is not an anchor.
func TestParseAnchorReadsBothExportsAndRefusesOthers(t *testing.T) {
	t.Parallel()
	h1, h2 := hex.EncodeToString(hashOf("1")), hex.EncodeToString(hashOf("2"))
	a, err := ParseAnchor(reportJSON(t, fmt.Sprintf(`{"record_count":2,"first_id":1,"last_id":2,"chain_head":%q,
		"links":[{"id":1,"record_hash":%q},{"id":2,"record_hash":%q}]}`, h2, h1, h2)))
	require.NoError(t, err)
	require.Equal(t, Anchor{Format: "evidence report", Database: Database{SystemIdentifier: "7", Name: "jobs"},
		ExportedAt: "2026-12-06T03:00:00.000Z", Links: []AnchorLink{{1, hashOf("1")}, {2, hashOf("2")}}}, a)
	require.Equal(t, AnchorLink{2, hashOf("2")}, a.Last())

	a, err = ParseAnchor(reportJSON(t, fmt.Sprintf(`{"record_count":2,"first_id":1,"last_id":2,"chain_head":%q}`, h2)))
	require.NoError(t, err)
	require.True(t, a.HeadOnly, "schema version 2 keeps the head only")
	require.Equal(t, []AnchorLink{{2, hashOf("2")}}, a.Links)
	require.Equal(t, AnchorHead{Format: "evidence report", Database: Database{SystemIdentifier: "7", Name: "jobs"},
		ExportedAt: "2026-12-06T03:00:00.000Z", LastID: 2, ChainHead: h2, HeadOnly: true}, a.Head())

	a, err = ParseAnchor([]byte(fmt.Sprintf(`{"schema_version":1,"exported_at":"2026-12-06T03:00:00.000Z","database":"jobs",
		"migration_version":25,"record_count":2,"chain_head":"\\x%s","records":[
		{"evidence_record_id":1,"record_hash":"\\x%s"},{"evidence_record_id":2,"record_hash":"\\x%s"}]}`, h2, h1, h2)))
	require.NoError(t, err)
	require.Equal(t, Anchor{Format: "evidence export", Database: Database{Name: "jobs"}, ExportedAt: "2026-12-06T03:00:00.000Z",
		Links: []AnchorLink{{1, hashOf("1")}, {2, hashOf("2")}}}, a)

	changed := strings.Replace(string(reportJSON(t, fmt.Sprintf(`{"record_count":1,"first_id":2,"last_id":2,"chain_head":%q,
		"links":[{"id":2,"record_hash":%q}]}`, h2, h2))), `"name":"jobs"`, `"name":"jobz"`, 1)
	for name, tc := range map[string]struct{ data, want string }{
		"not JSON":     {`{`, "unexpected end of JSON input"},
		"not a report": {`{"checks":[]}`, "neither the JSON of leasectl evidence nor a leasectl migrate down --evidence-export file"},
		"wrong types":  {string(reportJSON(t, `{"last_id":"two"}`)), "cannot unmarshal"},
		"changed":      {changed, "is not the digest of its content"},
		"empty period": {string(reportJSON(t, `{"record_count":0,"first_id":null,"last_id":null,"chain_head":null,"links":[]}`)), "its period holds no evidence record"},
		"bad link":     {string(reportJSON(t, `{"last_id":2,"chain_head":"00","links":[{"id":2,"record_hash":"zz"}]}`)), "record 2: record_hash: "},
		"bad head":     {string(reportJSON(t, `{"last_id":2,"chain_head":"zz"}`)), "chain_head: "},
		"head is not the last link": {string(reportJSON(t, fmt.Sprintf(`{"last_id":3,"chain_head":%q,"links":[{"id":2,"record_hash":%q}]}`, h2, h2))),
			"its last link (record 2) is not its last_id and chain_head (record 3)"},
		"empty export":      {`{"chain_head":null,"records":[]}`, "it holds no evidence record"},
		"export wrong type": {`{"chain_head":null,"records":{}}`, "cannot unmarshal"},
		"export bad hash":   {`{"chain_head":"\\x00","records":[{"evidence_record_id":4,"record_hash":"\\xzz"}]}`, "record 4: record_hash: "},
	} {
		_, err := ParseAnchor([]byte(tc.data))
		require.ErrorIs(t, err, ErrNotAnAnchor, name)
		require.ErrorContains(t, err, tc.want, name)
	}
}

// chainOf builds a live chain of records whose contents are the given
// names; a name "continue:<id>:<hash hex>" is a continuation.
func liveChain(names ...string) []liveLink {
	var out []liveLink
	previous := genesisHash
	for i, name := range names {
		sum := sha256.Sum256(append(append([]byte{}, previous...), hashOf(name)...))
		l := liveLink{ID: int64(i + 1), Kind: "deployment_recorded", StoredPrevious: previous, Stored: sum[:], Computed: sum[:]}
		if rest, ok := strings.CutPrefix(name, "continue:"); ok {
			id, hash, _ := strings.Cut(rest, ":")
			l.Kind, l.continuation = ContinuationKind, true
			fmt.Sscan(id, &l.ContinuesID)
			l.ContinuesHash, _ = hex.DecodeString(hash)
		}
		out = append(out, l)
		previous = sum[:]
	}
	return out
}

// anchorOf is the anchor of a live chain's first n records.
func anchorOf(live []liveLink, n int) Anchor {
	a := Anchor{Format: "evidence report"}
	for _, l := range live[:n] {
		a.Links = append(a.Links, AnchorLink{l.ID, l.Stored})
	}
	return a
}

func TestCompareAnchorFollowsTheChainAndNamesTheFirstDifference(t *testing.T) {
	t.Parallel()
	names := []string{"a", "b", "c", "d", "e"}
	live := liveChain(names...)
	anchor := anchorOf(live, 4)
	head := hex.EncodeToString(anchor.Last().Hash)

	r := compareAnchor(live, anchor)
	require.True(t, r.Held)
	require.Equal(t, AnchorResult{Held: true, AnchorLastID: 4, AgreedThrough: 4, Between: []int64{},
		Summary: "the live chain holds every record of the anchor up to record 4 with the same hashes and continues from it"}, r)
	require.True(t, compareAnchor(live[:4], anchor).Held, "a chain that ends at the anchor holds it")

	// A record after the anchor that does not link to it.
	broken := liveChain(names...)
	broken[4].StoredPrevious = hashOf("elsewhere")
	r = compareAnchor(broken, anchor)
	require.False(t, r.Held)
	require.Equal(t, int64(5), r.FirstDiffering)
	require.Equal(t, "record 5 does not link to record 4, the anchor's last: the chain does not continue from the anchor", r.Finding)

	// Record 3 rewritten and every later hash recomputed: 3 differs.
	rewritten := liveChain("a", "b", "C", "d", "e")
	r = compareAnchor(rewritten, anchor)
	require.Equal(t, AnchorResult{AnchorLastID: 4, AgreedThrough: 2, FirstDiffering: 3, Between: []int64{},
		Finding: "record 3 differs from the anchor: it, or a record before it, was altered, removed or inserted, and no evidence_chain_continued record naming record 4 follows the records that agree",
		Summary: "record 3 differs from the anchor: it, or a record before it, was altered, removed or inserted, and no evidence_chain_continued record naming record 4 follows the records that agree"}, r)

	// Record 2 altered with its stored hash left as it was.
	altered := liveChain(names...)
	altered[1].Computed = hashOf("recomputed")
	r = compareAnchor(altered, anchor)
	require.Equal(t, int64(2), r.FirstDiffering)
	require.False(t, r.Missing)

	// The newest records deleted: 3 is missing.
	r = compareAnchor(live[:2], anchor)
	require.True(t, r.Missing)
	require.Equal(t, int64(3), r.FirstDiffering)
	require.Equal(t, "record 3 of the anchor is missing from the live chain, and no evidence_chain_continued record naming record 4 follows the records that agree", r.Finding)
	r = compareAnchor(nil, anchor)
	require.Equal(t, int64(1), r.FirstDiffering, "an empty chain lacks the first record")

	// A restore that lost 3 and 4: the continuation becomes 3.
	restored := liveChain("a", "b", "continue:4:"+head, "f")
	r = compareAnchor(restored, anchor)
	require.True(t, r.Held, r.Finding)
	require.Equal(t, int64(2), r.AgreedThrough)
	require.Equal(t, int64(3), r.ContinuedAt)
	require.Equal(t, "record 3 (evidence_chain_continued) continues the live chain from record 4, the anchor's last, after the anchor's records up to 2 that the live chain holds with the same hashes: the anchor's records after 2 up to 4 are kept outside the database, in the export", r.Summary)

	// A chain begun anew with the continuation first.
	anew := liveChain("continue:4:"+head, "x", "y")
	r = compareAnchor(anew, anchor)
	require.True(t, r.Held, r.Finding)
	require.Equal(t, int64(0), r.AgreedThrough)
	require.Equal(t, int64(1), r.ContinuedAt)
	require.Contains(t, r.Summary, "the anchor's records up to 4 are kept outside the database")

	// A chain begun anew whose continuation comes after other records (the
	// migrations of a reinstall): held, with those records named.
	late := liveChain("x", "y", "continue:4:"+head)
	r = compareAnchor(late, anchor)
	require.True(t, r.Held, r.Finding)
	require.Equal(t, int64(3), r.ContinuedAt)
	require.Equal(t, []int64{1, 2}, r.Between)
	require.True(t, strings.HasSuffix(r.Summary, "; live records 1 to 2 (2) come between, written after the chain broke and before the continuation"), r.Summary)
	// An anchor of a later period: the records before it are not between.
	period := Anchor{Links: anchor.Links[2:]}
	r = compareAnchor(liveChain("a", "b", "continue:4:"+head), period)
	require.True(t, r.Held, r.Finding)
	require.Empty(t, r.Between)
	require.Zero(t, r.AgreedThrough)
	r = compareAnchor(liveChain("continue:4:"+head, "b", "c"), period)
	require.False(t, r.Held, "a continuation before the anchor's period carries nothing")
	require.Equal(t, int64(3), r.FirstDiffering)

	// A restore whose next change came before the continuation.
	r = compareAnchor(liveChain("a", "b", "z", "continue:4:"+head), anchor)
	require.True(t, r.Held, r.Finding)
	require.Equal(t, int64(2), r.AgreedThrough)
	require.Equal(t, []int64{3}, r.Between)

	// A continuation naming another head, or another id, carries nothing.
	for _, name := range []string{"continue:3:" + head, "continue:4:" + hex.EncodeToString(hashOf("other"))} {
		r = compareAnchor(liveChain("a", "b", name), anchor)
		require.False(t, r.Held, name)
		require.Equal(t, int64(3), r.FirstDiffering, name)
	}

	// Head only: the difference is found, not where it is.
	headOnly := Anchor{Links: []AnchorLink{anchor.Last()}, HeadOnly: true}
	require.True(t, compareAnchor(live, headOnly).Held)
	r = compareAnchor(rewritten, headOnly)
	require.False(t, r.Held)
	require.Equal(t, int64(4), r.FirstDiffering)
	require.True(t, strings.HasSuffix(r.Finding, " (the anchor holds only its chain head, so the first record that differs cannot be named)"))
}

// chainAnchor reads the live chain of db as an anchor, as an export would
// hold it.
func chainAnchor(t *testing.T, pool *pgxpool.Pool) Anchor {
	t.Helper()
	rows, err := pool.Query(context.Background(), `SELECT evidence_record_id, record_hash FROM durable_jobs.control_evidence_record ORDER BY 1`)
	require.NoError(t, err)
	a := Anchor{Format: "evidence export"}
	for rows.Next() {
		var l AnchorLink
		require.NoError(t, rows.Scan(&l.ID, &l.Hash))
		a.Links = append(a.Links, l)
	}
	require.NoError(t, rows.Err())
	return a
}

// rewriteRecord is what the table's owner can do with the triggers off:
// change record id's reason and recompute its hash and every later one.
func rewriteRecord(t *testing.T, pool *pgxpool.Pool, id int64) {
	t.Helper()
	tamperPool(t, pool, fmt.Sprintf(`DO $$
		DECLARE
			v_previous bytea;
			r record;
		BEGIN
			UPDATE durable_jobs.control_evidence_record SET change_reason = 'nothing happened' WHERE evidence_record_id = %d;
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
		END $$`, id, id, id))
}

// Attack (issue 39, item 1): the table's owner rewrote a record and
// recomputed the chain after it, or deleted the newest records; the chain
// is whole and AUDIT-EVIDENCE-CHAIN passes. Against an anchor kept
// outside, each is an AUDIT-EVIDENCE-ANCHOR finding naming the record; the
// chain that merely went on holds it.
func TestEvidenceAnchorFindsARewrittenOrTruncatedChainThatAuditEvidenceChainPasses(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		change  func(t *testing.T, pool *pgxpool.Pool, anchor Anchor)
		finding string
	}{
		{"went on", func(t *testing.T, pool *pgxpool.Pool, _ Anchor) {
			execSQL(t, pool, `SELECT durable_jobs.record_deployment_version('9.9.10', 'after the anchor')`)
		}, ""},
		{"rewritten and recomputed", func(t *testing.T, pool *pgxpool.Pool, anchor Anchor) {
			rewriteRecord(t, pool, anchor.Links[2].ID)
		}, "record %d differs from the anchor"},
		{"newest deleted", func(t *testing.T, pool *pgxpool.Pool, anchor Anchor) {
			tamperPool(t, pool, fmt.Sprintf(`DELETE FROM durable_jobs.control_evidence_record WHERE evidence_record_id >= %d`, anchor.Last().ID))
		}, "record %d of the anchor is missing from the live chain"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			db := testdb.New(t)
			pool := db.Pool(t)
			execSQL(t, pool, `SELECT durable_jobs.record_deployment_version('9.9.9', 'anchor test')`)
			anchor := chainAnchor(t, pool)
			tc.change(t, pool, anchor)
			auditor := db.LoginConn(t, "durable_job_auditor")
			result, err := VerifyAnchor(ctx, auditor, anchor)
			require.NoError(t, err)
			report, err := Run(ctx, auditor, WithEvidenceAnchor(anchor))
			require.NoError(t, err)
			require.True(t, resultOf(t, report, controls.CheckEvidenceChain).Passed, "the chain is whole again")
			check := resultOf(t, report, controls.CheckEvidenceAnchor)
			if tc.finding == "" {
				require.True(t, result.Held, result.Finding)
				require.True(t, check.Passed)
				return
			}
			want := anchor.Links[2].ID
			if tc.name == "newest deleted" {
				want = anchor.Last().ID
			}
			require.False(t, result.Held)
			require.Equal(t, want, result.FirstDiffering)
			require.Contains(t, result.Finding, fmt.Sprintf(tc.finding, want))
			require.Equal(t, []string{result.Finding}, check.Findings)
			require.False(t, report.Passed)
		})
	}
}

// The anchor check needs the auditor functions: a login without them is
// told it cannot tell, and the check cannot read an older bundle either.
func TestEvidenceAnchorCheckSaysWhenItCannotTell(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	anchor := chainAnchor(t, db.Pool(t))
	plain := plainLoginURL(t, db, "anchor_plain_login")
	pool, err := pgxpool.New(ctx, plain)
	require.NoError(t, err)
	defer pool.Close()
	report, err := Run(ctx, pool, WithEvidenceAnchor(anchor))
	require.NoError(t, err)
	require.Equal(t, []string{"cannot tell: this login cannot execute durable_jobs.control_evidence_chain(); grant it durable_job_auditor"},
		resultOf(t, report, controls.CheckEvidenceAnchor).Findings)
	_, err = VerifyAnchor(ctx, pool, anchor)
	require.ErrorContains(t, err, "permission denied")

	old := testdb.New(t)
	migrateTo(t, old, 5) // before the evidence chain
	report, err = Run(ctx, old.Pool(t), WithEvidenceAnchor(anchor))
	require.NoError(t, err)
	require.Equal(t, []string{"cannot tell: the database has no durable_jobs.control_evidence_chain() (see AUDIT-MIGRATION-VERSION)"},
		resultOf(t, report, controls.CheckEvidenceAnchor).Findings)
}

// tamperPool runs statements with the evidence table's triggers off, as
// its owner or a superuser can, and turns them on again.
func tamperPool(t *testing.T, pool *pgxpool.Pool, statements ...string) {
	t.Helper()
	execSQL(t, pool, `ALTER TABLE durable_jobs.control_evidence_record DISABLE TRIGGER USER`)
	for _, s := range statements {
		execSQL(t, pool, s)
	}
	execSQL(t, pool, `ALTER TABLE durable_jobs.control_evidence_record ENABLE TRIGGER USER`)
}

// The live chain is followed across a real continuation record
// (durable_jobs.continue_evidence_chain, migration 026) after a restore
// that lost the newest records; a record of that kind whose values are
// not what the function writes carries nothing.
func TestVerifyAnchorFollowsARealContinuation(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	pool := db.Pool(t)
	execSQL(t, pool, `SELECT durable_jobs.record_deployment_version('9.9.9', 'anchor test')`)
	var keep int64
	require.NoError(t, pool.QueryRow(ctx, `SELECT max(evidence_record_id) FROM durable_jobs.control_evidence_record`).Scan(&keep))
	execSQL(t, pool, `SELECT durable_jobs.record_deployment_version('9.9.10', 'lost in the restore')`)
	anchor := chainAnchor(t, pool)
	tamperPool(t, pool, fmt.Sprintf(`DELETE FROM durable_jobs.control_evidence_record WHERE evidence_record_id > %d`, keep),
		fmt.Sprintf(`ALTER TABLE durable_jobs.control_evidence_record ALTER COLUMN evidence_record_id RESTART WITH %d`, keep+1))
	auditor := db.LoginConn(t, "durable_job_auditor")

	// A record of the kind, written around the function, with values it
	// cannot read: no continuation.
	execSQL(t, pool, `INSERT INTO durable_jobs.control_evidence_record (evidence_kind, new_values, change_reason)
		VALUES ('evidence_chain_continued', '{"previous_head_id": "not a number"}', 'forged continuation')`)
	result, err := VerifyAnchor(ctx, auditor, anchor)
	require.NoError(t, err)
	require.False(t, result.Held)
	require.Equal(t, keep+1, result.FirstDiffering)

	canceled, cancel := context.WithCancel(ctx)
	cancel()
	_, err = ContinueChain(canceled, pool, anchor, "CHG-5 restored an older backup", "", "")
	require.ErrorIs(t, err, context.Canceled)
	id, err := ContinueChain(ctx, pool, anchor, "CHG-5 restored an older backup", "", "")
	require.NoError(t, err)
	result, err = VerifyAnchor(ctx, auditor, anchor)
	require.NoError(t, err)
	require.True(t, result.Held, result.Finding)
	require.Equal(t, id, result.ContinuedAt)
	require.Equal(t, keep, result.AgreedThrough)
	require.Equal(t, []int64{keep + 1}, result.Between, "the record written around the function comes between")
}
