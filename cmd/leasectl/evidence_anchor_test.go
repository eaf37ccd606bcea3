package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/mightyetl/leasefence/audit"
	"github.com/mightyetl/leasefence/controls"
	"github.com/mightyetl/leasefence/evidence"
	"github.com/mightyetl/leasefence/internal/testdb"
	sqlbundle "github.com/mightyetl/leasefence/sql"
)

// exportAnchor writes `leasectl evidence --format json --out` of the whole
// chain to a new file and returns its path and the chain's last id.
func exportAnchor(t *testing.T, admin *pgxpool.Pool, auditor string) (string, int64) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "evidence.json")
	r := leasectl(t, "evidence", "--format", "json", "--out", path, "--database-url", auditor)
	requireCode(t, exitOK, r)
	require.Equal(t, "wrote "+path+"\n", r.stdout)
	var last int64
	require.NoError(t, admin.QueryRow(context.Background(), `SELECT max(evidence_record_id) FROM durable_jobs.control_evidence_record`).Scan(&last))
	return path, last
}

// verifyAnchor runs `leasectl evidence verify --anchor` in text and JSON;
// both must agree on the exit code.
func verifyAnchor(t *testing.T, path, databaseURL string) (result, audit.AnchorResult) {
	t.Helper()
	text := leasectl(t, "evidence", "verify", "--anchor", path, "--database-url", databaseURL)
	js := leasectl(t, "evidence", "verify", "--anchor", path, "--output", "json", "--database-url", databaseURL)
	require.Equal(t, text.code, js.code, "%s\n%s", text.output(), js.output())
	var out struct {
		Anchor struct {
			Format string `json:"format"`
			LastID int64  `json:"last_id"`
		} `json:"anchor"`
		Result audit.AnchorResult `json:"result"`
	}
	require.NoError(t, json.Unmarshal([]byte(js.stdout), &out), js.stdout)
	require.Contains(t, []string{"evidence report", "evidence export"}, out.Anchor.Format)
	return text, out.Result
}

// deployVersion records a deployment, which adds one evidence record.
func deployVersion(t *testing.T, databaseURL, version string) {
	t.Helper()
	r := leasectl(t, "deployment", "record", "--version", version, "--source", strings.Repeat("ab", 20),
		"--deployed-by", "ops.alice", "--ticket", "REL-42", "--reason", "REL-42 roll out "+version, "--database-url", databaseURL)
	requireCode(t, exitOK, r)
}

// Issue 39, item 1: the table's owner rewrote a record and recomputed the
// chain, or deleted the newest records; leasectl audit passed. An earlier
// export is an anchor: evidence verify and audit --evidence-anchor exit 2
// naming the first record that differs or is missing; a chain that only
// went on holds it (exit 0).
func TestEvidenceVerifyAgainstAnAnchorFindsARewrittenOrTruncatedChain(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	admin := db.Pool(t)
	auditor := db.LoginURL(t, "durable_job_auditor")
	deployVersion(t, db.URL, "1.0.0")
	deployVersion(t, db.URL, "1.0.1")
	anchor, last := exportAnchor(t, admin, auditor)

	deployVersion(t, db.URL, "1.0.2")
	text, res := verifyAnchor(t, anchor, auditor)
	requireCode(t, exitOK, text)
	require.True(t, res.Held)
	require.Contains(t, text.stdout, fmt.Sprintf("anchor: evidence report of database %s exported at ", db.Name))
	require.Contains(t, text.stdout, fmt.Sprintf(", last record %d, chain head ", last))
	require.Contains(t, text.stdout, fmt.Sprintf("evidence chain holds the anchor: the live chain holds every record of the anchor up to record %d with the same hashes and continues from it\n", last))
	waitForNoLoginSessions(t, admin)
	r := leasectl(t, "audit", "--evidence-anchor", anchor, "--database-url", db.URL)
	requireCode(t, exitOK, r)

	// The owner rewrites record last-1 and recomputes every later hash.
	rewriteEvidence(t, admin, last-1, "REL-42 nothing was rolled out")
	waitForNoLoginSessions(t, admin)
	requireCode(t, exitOK, leasectl(t, "audit", "--database-url", db.URL), "the chain is whole again")
	text, res = verifyAnchor(t, anchor, auditor)
	requireCode(t, exitFindings, text)
	require.Equal(t, last-1, res.FirstDiffering)
	require.Contains(t, text.stdout, fmt.Sprintf("AUDIT-EVIDENCE-ANCHOR: record %d differs from the anchor: ", last-1))
	waitForNoLoginSessions(t, admin)
	r = leasectl(t, "audit", "--evidence-anchor", anchor, "--database-url", db.URL)
	requireCode(t, exitFindings, r)
	require.Equal(t, []string{controls.CheckEvidenceAnchor}, findingIDs(r.stdout), r.stdout)

	// The owner deletes the newest records: the anchor's last is missing.
	execSQL(t, admin, `ALTER TABLE durable_jobs.control_evidence_record DISABLE TRIGGER USER`)
	execSQL(t, admin, `DELETE FROM durable_jobs.control_evidence_record WHERE evidence_record_id >= $1`, last-1)
	execSQL(t, admin, `ALTER TABLE durable_jobs.control_evidence_record ENABLE TRIGGER USER`)
	text, res = verifyAnchor(t, anchor, auditor)
	requireCode(t, exitFindings, text)
	require.True(t, res.Missing)
	require.Equal(t, last-1, res.FirstDiffering)
	require.Contains(t, text.stdout, fmt.Sprintf("AUDIT-EVIDENCE-ANCHOR: record %d of the anchor is missing from the live chain", last-1))
}

// What evidence verify, evidence continue and audit --evidence-anchor
// refuse before they connect, and what they cannot do.
func TestEvidenceAnchorCommandsRefuseBadInput(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	dir := t.TempDir()
	notAnchor := filepath.Join(dir, "audit.json")
	require.NoError(t, os.WriteFile(notAnchor, []byte(`{"passed":true}`), 0o600))
	missing := filepath.Join(dir, "missing.json")
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"evidence", "verify"}, exitUsage, "error: usage: evidence verify: --anchor FILE is required"},
		{[]string{"evidence", "verify", "--anchor", notAnchor, "--output", "yaml"}, exitUsage, "--output must be text or json"},
		{[]string{"evidence", "verify", "--anchor", notAnchor, "extra"}, exitUsage, `unexpected argument "extra"`},
		{[]string{"evidence", "verify", "--anchor", notAnchor}, exitUsage, "evidence verify: --anchor " + notAnchor + ": not an evidence anchor: neither"},
		{[]string{"evidence", "verify", "--anchor", missing}, exitError, "error: read the anchor: open " + missing},
		{[]string{"evidence", "verify", "--anchor", notAnchor, "--database-url", "postgres://x@127.0.0.1:1/x?connect_timeout=1"}, exitUsage, "not an evidence anchor"},
		{[]string{"audit", "--evidence-anchor", notAnchor}, exitUsage, "audit: --anchor " + notAnchor + ": not an evidence anchor"},
		{[]string{"evidence", "continue", "--anchor", notAnchor}, exitUsage, "evidence continue: --reason is required"},
		{[]string{"evidence", "continue", "--reason", "CHG-1 restored"}, exitUsage, "evidence continue: --anchor FILE is required"},
		{[]string{"evidence", "continue", "--anchor", notAnchor, "--reason", "mail ops@example.com"}, exitUsage, "evidence continue: --reason "},
		{[]string{"evidence", "continue", "--anchor", notAnchor, "--reason", "CHG-1 restored", "--bogus"}, exitUsage, "flag provided but not defined"},
		{[]string{"evidence", "--sign-key", notAnchor}, exitUsage, "evidence: --sign-key needs --out FILE"},
	} {
		r := leasectl(t, tc.args...)
		requireCode(t, tc.code, r, tc.args)
		require.Contains(t, r.stderr, tc.want, tc.args)
		require.Equal(t, 1, strings.Count(r.stderr, "\n"), r.stderr)
	}
	for _, args := range [][]string{{"evidence", "verify", "--help"}, {"evidence", "continue", "--help"}, {"evidence", "--help"}} {
		r := leasectl(t, args...)
		requireCode(t, exitOK, r, args)
		require.Contains(t, r.stdout, "--anchor", args)
	}

	// The comparison needs the auditor's functions.
	anchor, _ := exportAnchor(t, db.Pool(t), db.LoginURL(t, "durable_job_auditor"))
	r := leasectl(t, "evidence", "verify", "--anchor", anchor, "--database-url", db.LoginURL(t, "durable_job_worker"))
	requireCode(t, exitError, r)
	require.Contains(t, r.stderr, "error: read the evidence chain: permission denied")
	r = leasectl(t, "evidence", "verify", "--anchor", anchor, "--database-url", closedPortURL(t))
	requireCode(t, exitError, r)
	require.Contains(t, r.stderr, "error: connect to database: ")
	r = leasectl(t, "audit", "--evidence-anchor", missing)
	requireCode(t, exitError, r)
}

// sshKeygen runs ssh-keygen; a missing one fails the test saying how to
// install it.
func sshKeygen(t *testing.T, stdin string, args ...string) (string, error) {
	t.Helper()
	path, err := exec.LookPath("ssh-keygen")
	require.NoError(t, err, "ssh-keygen is missing: run make deps (apt-get install openssh-client)")
	cmd := exec.Command(path, args...)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// Issue 39, item 1: an export signed with --sign-key is verified by an
// auditor with OpenSSH's own tool; a changed export fails that check.
func TestSignedEvidenceExportVerifiesWithSSHKeygenAndTamperingFails(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	auditor := db.LoginURL(t, "durable_job_auditor")
	dir := t.TempDir()
	key := filepath.Join(dir, "evidence_key")
	out, err := sshKeygen(t, "", "-q", "-t", "ed25519", "-N", "", "-C", "evidence-signer", "-f", key)
	require.NoError(t, err, out)
	pub, err := os.ReadFile(key + ".pub")
	require.NoError(t, err)
	fields := strings.Fields(string(pub))
	allowed := filepath.Join(dir, "allowed_signers")
	require.NoError(t, os.WriteFile(allowed, []byte("compliance@leasefence.test "+fields[0]+" "+fields[1]+"\n"), 0o644))
	sshVerify := func(path string) (string, error) {
		body, err := os.ReadFile(path)
		require.NoError(t, err)
		return sshKeygen(t, string(body), "-Y", "verify", "-f", allowed, "-I", "compliance@leasefence.test",
			"-n", "leasefence-evidence", "-s", path+".sig")
	}

	for _, format := range []string{"json", "markdown"} {
		path := filepath.Join(dir, "evidence."+format)
		r := leasectl(t, "evidence", "--format", format, "--out", path, "--sign-key", key, "--database-url", auditor)
		requireCode(t, exitOK, r)
		require.Contains(t, r.stdout, "wrote "+path+"\nwrote "+path+".sig (ssh-ed25519 signature, namespace leasefence-evidence, key SHA256:")
		out, err := sshVerify(path)
		require.NoError(t, err, out)
		require.Contains(t, out, `Good "leasefence-evidence" signature for compliance@leasefence.test`)
		if format == "json" {
			body, err := os.ReadFile(path)
			require.NoError(t, err)
			var report struct {
				SchemaVersion int `json:"schema_version"`
			}
			require.NoError(t, json.Unmarshal(body, &report))
			require.Equal(t, evidence.SchemaVersion, report.SchemaVersion)
			// One changed byte: the signature no longer verifies.
			require.NoError(t, os.WriteFile(path, []byte(strings.Replace(string(body), `"schema_version": 3`, `"schema_version": 2`, 1)), 0o644))
			out, err = sshVerify(path)
			require.Error(t, err, "a tampered export must fail: %s", out)
		}
		// The export and its signature are written once.
		r = leasectl(t, "evidence", "--format", format, "--out", path, "--sign-key", key, "--database-url", auditor)
		requireCode(t, exitError, r)
		require.Contains(t, r.stderr, "error: write --out: open "+path+": file exists")
	}
	// A signature file in the way: the export is written, the signature is not.
	path := filepath.Join(dir, "late.json")
	require.NoError(t, os.WriteFile(path+".sig", []byte("in the way"), 0o644))
	r := leasectl(t, "evidence", "--out", path, "--sign-key", key, "--database-url", auditor)
	requireCode(t, exitError, r)
	require.Contains(t, r.stderr, "error: sign --out: open "+path+".sig: file exists")

	// A key others can read is refused before anything is written.
	require.NoError(t, os.Chmod(key, 0o644))
	r = leasectl(t, "evidence", "--out", filepath.Join(dir, "open.json"), "--sign-key", key, "--database-url", auditor)
	requireCode(t, exitError, r)
	require.Contains(t, r.stderr, "error: read --sign-key: sshsig: the private key file is accessible by others")
	require.NoFileExists(t, filepath.Join(dir, "open.json"))
}

// Issue 39, item 7: the audit's JSON carries generated_at, the database's
// name and system identifier, the bundle versions, schema_version and a
// body digest computed as the evidence report's.
func TestAuditJSONNamesTheDatabaseAndDigestsItsBody(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	r := leasectl(t, "audit", "--output", "json", "--database-url", db.URL)
	requireCode(t, exitOK, r)
	var report audit.StampedReport
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &report))
	require.Equal(t, audit.ReportSchemaVersion, report.SchemaVersion)
	require.Equal(t, db.Name, report.Database.Name)
	require.NotEmpty(t, report.Database.SystemIdentifier)
	require.Equal(t, sqlbundle.NewestVersion(), report.MigrationVersion)
	require.Equal(t, sqlbundle.NewestVersion(), report.BundleVersion)
	require.Regexp(t, `^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`, report.GeneratedAt)
	digest, err := evidence.BodyDigest([]byte(r.stdout))
	require.NoError(t, err)
	require.Equal(t, digest, report.BodyDigest, "the evidence report's digest method")
	require.True(t, report.Passed)
}
