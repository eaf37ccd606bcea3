package cli

import (
	"flag"
	"os"

	"github.com/mightyetl/leasefence/audit"
	"github.com/mightyetl/leasefence/controls"
	sqlbundle "github.com/mightyetl/leasefence/sql"
)

// readAnchor reads and parses the anchor file of --anchor. A file that
// cannot be read is a failure (exit 1), one that is no anchor a usage
// error (exit 64).
func readAnchor(path string) (audit.Anchor, error) {
	if path == "" {
		return audit.Anchor{}, usagef("--anchor FILE is required")
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return audit.Anchor{}, failed("read the anchor", err)
	}
	anchor, err := audit.ParseAnchor(data)
	if err != nil {
		return audit.Anchor{}, usagef("--anchor %s: %s", path, err)
	}
	return anchor, nil
}

// evidenceVerify is "leasectl evidence verify".
var evidenceVerify = &action{name: "evidence verify", usage: help("evidence-verify"), output: true, flags: func(fs *flag.FlagSet) runFunc {
	path := fs.String("anchor", "", "an earlier export (`file`): leasectl evidence JSON or a migrate down --evidence-export file")
	return func(c *call) error {
		anchor, err := readAnchor(*path)
		if err != nil {
			return err
		}
		pool, err := c.openPool()
		if err != nil {
			return err
		}
		result, err := audit.VerifyAnchor(c.ctx, pool, anchor)
		if err != nil {
			return failed("read the evidence chain", err)
		}
		head := anchor.Head()
		_ = c.print(map[string]any{"anchor": head, "result": result}, func() {
			c.printf("anchor: %s of database %s exported at %s, last record %d, chain head %s\n", head.Format,
				head.Database.Name, head.ExportedAt, head.LastID, head.ChainHead)
			if result.Held {
				c.printf("evidence chain holds the anchor: %s\n", result.Summary)
			} else {
				c.printf("%s: %s\n", controls.CheckEvidenceAnchor, result.Finding)
			}
		})
		if !result.Held {
			return errFindings
		}
		return nil
	}
}}

// evidenceContinue is "leasectl evidence continue".
var evidenceContinue = &action{name: "evidence continue", usage: help("evidence-continue"),
	flags: func(fs *flag.FlagSet) runFunc {
		path := fs.String("anchor", "", "the export (`file`) that keeps the chain before: leasectl evidence JSON or a migrate down --evidence-export file")
		change := addChangeFlags(fs, "why the chain continues from the export (required), e.g. CHG-7 restored the 03:00 backup")
		return func(c *call) error {
			if err := change.requireReason(); err != nil {
				return err
			}
			if err := sqlbundle.CheckChangeReason(change.reason); err != nil {
				return usagef("--reason %s", err)
			}
			anchor, err := readAnchor(*path)
			if err != nil {
				return err
			}
			pool, err := c.openPool()
			if err != nil {
				return err
			}
			id, err := audit.ContinueChain(c.ctx, pool, anchor, change.reason, change.ticket, change.approver)
			if err != nil {
				return failed("continue the evidence chain", err)
			}
			c.printf("recorded evidence record %d (%s): the chain continues from record %d of the export, chain head %s\n",
				id, audit.ContinuationKind, anchor.Head().LastID, anchor.Head().ChainHead)
			return nil
		}
	}}
