package main

import (
	"context"
	"encoding/hex"
	"os"

	"github.com/mightyetl/leasefence/audit"
	"github.com/mightyetl/leasefence/controls"
	sqlbundle "github.com/mightyetl/leasefence/sql"
)

const evidenceVerifyUsage = `Usage:
  leasectl evidence verify --anchor FILE [--output text|json] [--database-url URL]

Compares the live control-evidence chain with an anchor: FILE is an earlier
export, the JSON of "leasectl evidence --format json" (keep one a day on
write-once storage) or the file of "leasectl migrate down --evidence-export".
Each live record's hash is recomputed from its content as stored now.

Exit 0 when the live chain still holds every record of the anchor, up to its
last one, with the same hashes and continues from it; or holds them up to
some record (or none, after a reinstall) and an evidence_chain_continued
record after it names exactly the anchor's last id and hash (see "leasectl
evidence continue"): the anchor's later records are then kept outside the
database, in the export, and the live records between (written after the
break, before the continuation) are named. Exit 2 (a finding, AUDIT-EVIDENCE-ANCHOR) otherwise,
naming the first record of the anchor that differs or is missing: a record
rewritten with every later hash recomputed, the newest records deleted, an
older backup restored, or a chain begun anew without a continuation.
"leasectl audit --evidence-anchor FILE" runs the same check among its own.

An evidence report of schema version 2 holds only its chain head: a
difference is then found, but the first record that differs cannot be named.
A report whose body no longer matches its body_digest is refused (exit 64).
Needs a login granted durable_job_auditor.
`

const evidenceContinueUsage = `Usage:
  leasectl evidence continue --anchor FILE --reason TEXT [--ticket T] [--approver A] [--database-url URL]

Records that the evidence chain continues from the last record of an export
kept outside the database (FILE, as for "leasectl evidence verify"): after
"leasectl migrate down --to 0 --discard-evidence --evidence-export FILE" and
"migrate up", which begin a new chain, or after restoring a backup older than
the newest records. It calls durable_jobs.continue_evidence_chain, which
appends one evidence_chain_continued record naming the export's last record
id and hash, with the reason, ticket and approver the change control asks
for. "leasectl evidence verify --anchor FILE" then follows the chain across
it. Needs a login granted durable_job_operator.
`

// readAnchor reads and parses the anchor file of --anchor. A file that
// cannot be read is an error (exit 1), one that is no anchor a usage error
// (exit 64); done is true when the caller must return code.
func readAnchor(env *cliEnv, command, path string) (anchor audit.Anchor, done bool, code int) {
	if path == "" {
		return audit.Anchor{}, true, env.usageError("%s: --anchor FILE is required", command)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return audit.Anchor{}, true, env.fail("read the anchor", err)
	}
	anchor, err = audit.ParseAnchor(data)
	if err != nil {
		return audit.Anchor{}, true, env.usageError("%s: --anchor %s: %s", command, path, err)
	}
	return anchor, false, exitOK
}

// anchorJSON is the anchor as "evidence verify --output json" prints it.
type anchorJSON struct {
	Format     string         `json:"format"`
	Database   audit.Database `json:"database"`
	ExportedAt string         `json:"exported_at"`
	LastID     int64          `json:"last_id"`
	ChainHead  string         `json:"chain_head"`
	HeadOnly   bool           `json:"head_only"`
}

// runEvidenceVerify is "leasectl evidence verify".
func runEvidenceVerify(ctx context.Context, env *cliEnv, args []string) int {
	fs := newFlagSet("evidence verify")
	common := addCommonFlags(fs, true)
	path := fs.String("anchor", "", "an earlier export (`file`): leasectl evidence JSON or a migrate down --evidence-export file")
	if done, code := parseFlags(env, fs, evidenceVerifyUsage, args); done {
		return code
	}
	if err := common.checkOutput(); err != nil {
		return env.usageError("evidence verify: %s", err)
	}
	anchor, done, code := readAnchor(env, "evidence verify", *path)
	if done {
		return code
	}
	pool, err := connectPool(ctx, common.databaseURL)
	if err != nil {
		return env.fail("connect to database", err)
	}
	defer pool.Close()
	result, err := audit.VerifyAnchor(ctx, pool, anchor)
	if err != nil {
		return env.fail("read the evidence chain", err)
	}
	code = exitOK
	if !result.Held {
		code = exitFindings
	}
	last := anchor.Last()
	if common.json() {
		_ = writeJSON(env.stdout, map[string]any{"anchor": anchorJSON{Format: anchor.Format, Database: anchor.Database,
			ExportedAt: anchor.ExportedAt, LastID: last.ID, ChainHead: hex.EncodeToString(last.Hash), HeadOnly: anchor.HeadOnly},
			"result": result})
		return code
	}
	printf(env.stdout, "anchor: %s of database %s exported at %s, last record %d, chain head %s\n", anchor.Format,
		anchor.Database.Name, anchor.ExportedAt, last.ID, hex.EncodeToString(last.Hash))
	if result.Held {
		printf(env.stdout, "evidence chain holds the anchor: %s\n", result.Summary)
	} else {
		printf(env.stdout, "%s: %s\n", controls.CheckEvidenceAnchor, result.Finding)
	}
	return code
}

// runEvidenceContinue is "leasectl evidence continue".
func runEvidenceContinue(ctx context.Context, env *cliEnv, args []string) int {
	fs := newFlagSet("evidence continue")
	common := addCommonFlags(fs, false)
	path := fs.String("anchor", "", "the export (`file`) that keeps the chain before: leasectl evidence JSON or a migrate down --evidence-export file")
	reason := fs.String("reason", "", "why the chain continues from the export (required), e.g. CHG-7 restored the 03:00 backup")
	change := addChangeRecordFlags(fs)
	if done, code := parseFlags(env, fs, evidenceContinueUsage, args); done {
		return code
	}
	if *reason == "" {
		return env.usageError("evidence continue: --reason is required")
	}
	if err := sqlbundle.CheckChangeReason(*reason); err != nil {
		return env.usageError("evidence continue: --reason %s", err)
	}
	anchor, done, code := readAnchor(env, "evidence continue", *path)
	if done {
		return code
	}
	pool, err := connectPool(ctx, common.databaseURL)
	if err != nil {
		return env.fail("connect to database", err)
	}
	defer pool.Close()
	id, err := audit.ContinueChain(ctx, pool, anchor, *reason, *change.ticket, *change.approver)
	if err != nil {
		return env.fail("continue the evidence chain", err)
	}
	printf(env.stdout, "recorded evidence record %d (%s): the chain continues from record %d of the export, chain head %s\n",
		id, audit.ContinuationKind, anchor.Last().ID, hex.EncodeToString(anchor.Last().Hash))
	return exitOK
}
