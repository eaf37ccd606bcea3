package main

import (
	"context"
	"encoding/hex"
	"os"

	"github.com/mightyetl/leasefence/audit"
	"github.com/mightyetl/leasefence/controls"
	sqlbundle "github.com/mightyetl/leasefence/sql"
)

var evidenceVerifyUsage = help("evidence-verify")

var evidenceContinueUsage = help("evidence-continue")

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
