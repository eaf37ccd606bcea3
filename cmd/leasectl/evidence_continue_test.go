package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/mightyetl/leasefence/audit"
	"github.com/mightyetl/leasefence/controls"
	"github.com/mightyetl/leasefence/internal/testdb"
	sqlbundle "github.com/mightyetl/leasefence/sql"
)

// continueChain runs leasectl evidence continue as an operator and returns
// the new record's id.
func continueChain(t *testing.T, operator, anchor, reason string, extra ...string) int64 {
	t.Helper()
	r := leasectl(t, append([]string{"evidence", "continue", "--anchor", anchor, "--reason", reason, "--database-url", operator}, extra...)...)
	requireCode(t, exitOK, r)
	var id int64
	_, err := fmt.Sscanf(r.stdout, "recorded evidence record %d (evidence_chain_continued): the chain continues from record ", &id)
	require.NoError(t, err, r.stdout)
	return id
}

// lastEvidenceID is the newest evidence record's id.
func lastEvidenceID(t *testing.T, admin *pgxpool.Pool) int64 {
	t.Helper()
	var id int64
	require.NoError(t, admin.QueryRow(context.Background(), `SELECT max(evidence_record_id) FROM durable_jobs.control_evidence_record`).Scan(&id))
	return id
}

// Issue 39, item 1: migrate down --to 0 and up again begin a new chain from
// id 1 with nothing pointing to the old one; the audit passed. Against the
// export kept outside, verify finds record 1 different (exit 2) until an
// operator records the continuation with the export's head; then the chain
// is followed across, the reinstall's own migration records named, and an
// anchor taken after it holds as the chain goes on.
func TestEvidenceChainBegunAnewIsAFindingUntilContinuedFromTheExport(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	admin := db.Pool(t)
	auditor := db.LoginURL(t, "durable_job_auditor")
	operator := db.LoginURL(t, "durable_job_operator")
	deployVersion(t, db.URL, "2.0.0")
	anchor, last := exportAnchor(t, admin, auditor)

	export := filepath.Join(t.TempDir(), "before-reinstall.json")
	r := leasectl(t, "migrate", "down", "--to", "0", "--discard-evidence", "--evidence-export", export, "--reason", "CHG-90 reinstall",
		"--database-url", db.URL)
	requireCode(t, exitOK, r)
	r = leasectl(t, "migrate", "up", "--reason", "CHG-90 reinstall", "--database-url", db.URL)
	requireCode(t, exitOK, r)
	waitForNoLoginSessions(t, admin)
	requireCode(t, exitOK, leasectl(t, "audit", "--database-url", db.URL), "a new chain is whole")

	for _, a := range []string{anchor, export} {
		r = leasectl(t, "evidence", "verify", "--anchor", a, "--database-url", auditor)
		requireCode(t, exitFindings, r)
		require.Contains(t, r.stdout, "AUDIT-EVIDENCE-ANCHOR: record 1 differs from the anchor: ", a)
	}
	waitForNoLoginSessions(t, admin)
	r = leasectl(t, "audit", "--evidence-anchor", anchor, "--database-url", db.URL)
	requireCode(t, exitFindings, r)
	require.Equal(t, []string{controls.CheckEvidenceAnchor}, findingIDs(r.stdout), r.stdout)

	reinstalled := lastEvidenceID(t, admin)
	id := continueChain(t, operator, anchor, "CHG-90 chain continues from the export before the reinstall", "--ticket", "CHG-90")
	require.Equal(t, reinstalled+1, id, "after the reinstall's own migration records")
	var values, ticket string
	require.NoError(t, admin.QueryRow(context.Background(), `SELECT new_values::text, change_ticket FROM durable_jobs.control_evidence_record
		WHERE evidence_record_id = $1 AND evidence_kind = 'evidence_chain_continued'`, id).Scan(&values, &ticket))
	require.Contains(t, values, fmt.Sprintf(`"previous_head_id": %d`, last))
	require.Equal(t, "CHG-90", ticket)

	for _, a := range []string{anchor, export} {
		text, res := verifyAnchor(t, a, auditor)
		requireCode(t, exitOK, text, a)
		require.True(t, res.Held)
		require.Equal(t, id, res.ContinuedAt)
		require.Zero(t, res.AgreedThrough)
		require.Len(t, res.Between, int(reinstalled))
		require.Contains(t, text.stdout, fmt.Sprintf("evidence chain holds the anchor: record %d (evidence_chain_continued) continues the live chain from record %d, the anchor's last", id, last))
		require.Contains(t, text.stdout, fmt.Sprintf("live records 1 to %d (%d) come between", reinstalled, reinstalled))
	}
	waitForNoLoginSessions(t, admin)
	requireCode(t, exitOK, leasectl(t, "audit", "--evidence-anchor", anchor, "--database-url", db.URL))

	// The new chain, anchored in its turn, holds as it goes on.
	next, _ := exportAnchor(t, admin, auditor)
	deployVersion(t, db.URL, "2.0.1")
	text, res := verifyAnchor(t, next, auditor)
	requireCode(t, exitOK, text)
	require.Zero(t, res.ContinuedAt)
}

// restoreTo simulates restoring a backup taken when record keep was the
// newest: the later records are gone and their ids are used again.
func restoreTo(t *testing.T, admin *pgxpool.Pool, keep int64) {
	t.Helper()
	execSQL(t, admin, `ALTER TABLE durable_jobs.control_evidence_record DISABLE TRIGGER USER`)
	execSQL(t, admin, `DELETE FROM durable_jobs.control_evidence_record WHERE evidence_record_id > $1`, keep)
	execSQL(t, admin, `ALTER TABLE durable_jobs.control_evidence_record ENABLE TRIGGER USER`)
	execSQL(t, admin, fmt.Sprintf(`ALTER TABLE durable_jobs.control_evidence_record ALTER COLUMN evidence_record_id RESTART WITH %d`, keep+1))
}

// Issue 39, item 1: a backup older than the newest records restored (they
// are gone and the next change takes the first lost id) passed the audit.
// Against the export: exit 2, naming the first lost record, missing and
// then different; a continuation naming the export's head carries the
// chain across; one naming another head does not.
func TestEvidenceChainAfterARestoreIsAFindingUntilContinued(t *testing.T) {
	t.Parallel()
	for _, changeFirst := range []bool{false, true} {
		t.Run(fmt.Sprintf("a change before the continuation: %v", changeFirst), func(t *testing.T) {
			t.Parallel()
			db := testdb.New(t)
			admin := db.Pool(t)
			auditor := db.LoginURL(t, "durable_job_auditor")
			operator := db.LoginURL(t, "durable_job_operator")
			deployVersion(t, db.URL, "3.0.0")
			restored := lastEvidenceID(t, admin)
			for _, v := range []string{"3.0.1", "3.0.2", "3.0.3"} {
				deployVersion(t, db.URL, v)
			}
			anchor, last := exportAnchor(t, admin, auditor)

			restoreTo(t, admin, restored)
			waitForNoLoginSessions(t, admin)
			requireCode(t, exitOK, leasectl(t, "audit", "--database-url", db.URL), "a restored chain is whole")

			text, res := verifyAnchor(t, anchor, auditor)
			requireCode(t, exitFindings, text)
			require.True(t, res.Missing)
			require.Equal(t, restored+1, res.FirstDiffering)
			require.Contains(t, text.stdout, fmt.Sprintf("AUDIT-EVIDENCE-ANCHOR: record %d of the anchor is missing from the live chain", restored+1))

			var between []int64
			if changeFirst {
				deployVersion(t, db.URL, "3.0.4") // takes the first lost id
				text, res = verifyAnchor(t, anchor, auditor)
				requireCode(t, exitFindings, text)
				require.False(t, res.Missing)
				require.Equal(t, restored+1, res.FirstDiffering)
				require.Contains(t, text.stdout, fmt.Sprintf("AUDIT-EVIDENCE-ANCHOR: record %d differs from the anchor: ", restored+1))
				between = []int64{restored + 1}
			}
			id := continueChain(t, operator, anchor, "CHG-91 restored the backup of 02:00")
			require.Equal(t, restored+1+int64(len(between)), id)
			text, res = verifyAnchor(t, anchor, auditor)
			requireCode(t, exitOK, text)
			require.Equal(t, audit.AnchorResult{Held: true, AnchorLastID: last, AgreedThrough: restored, ContinuedAt: id,
				Between: append([]int64{}, between...), Summary: res.Summary}, res)
			require.Contains(t, res.Summary, fmt.Sprintf("the anchor's records after %d up to %d are kept outside the database, in the export", restored, last))
		})
	}
}

// A continuation must name the anchor's head exactly: one naming another
// export's head carries nothing, and the continue command refuses what the
// database refuses.
func TestEvidenceContinuationNamingAnotherHeadCarriesNothing(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	admin := db.Pool(t)
	auditor := db.LoginURL(t, "durable_job_auditor")
	operator := db.LoginURL(t, "durable_job_operator")
	deployVersion(t, db.URL, "4.0.0")
	restored := lastEvidenceID(t, admin)
	early, _ := exportAnchor(t, admin, auditor)
	deployVersion(t, db.URL, "4.0.1")
	late, _ := exportAnchor(t, admin, auditor)
	restoreTo(t, admin, restored)
	continueChain(t, operator, early, "CHG-92 continues from the wrong export")
	text, res := verifyAnchor(t, late, auditor)
	requireCode(t, exitFindings, text)
	require.Equal(t, restored+1, res.FirstDiffering)
	require.Contains(t, text.stdout, fmt.Sprintf("no evidence_chain_continued record naming record %d follows the records that agree", restored+1))

	// Only an operator may continue the chain, with a structured reason.
	r := leasectl(t, "evidence", "continue", "--anchor", late, "--reason", "CHG-93 restore", "--database-url", auditor)
	requireCode(t, exitError, r)
	require.Contains(t, r.stderr, "error: continue the evidence chain: permission denied")
	r = leasectl(t, "evidence", "continue", "--anchor", late, "--reason", "CHG-93 restore", "--ticket", "not a ticket", "--database-url", operator)
	requireCode(t, exitError, r)
	require.Contains(t, r.stderr, "error: continue the evidence chain: ")
	require.Contains(t, r.stderr, "SQLSTATE LF002")
	r = leasectl(t, "evidence", "continue", "--anchor", late, "--reason", "CHG-93 restore", "--database-url", closedPortURL(t))
	requireCode(t, exitError, r)
	require.True(t, strings.HasPrefix(r.stderr, "error: connect to database: "), r.stderr)
	require.Equal(t, sqlbundle.NewestVersion(), versionOf(t, admin))
}
