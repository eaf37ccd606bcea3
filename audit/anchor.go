package audit

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
)

// The evidence anchor (issue 39): a head of the evidence chain kept outside
// the database, in an earlier export, against which the live chain is
// compared. AUDIT-EVIDENCE-CHAIN alone cannot see a chain that its owner
// rewrote and recomputed, whose newest records were deleted, or that was
// restored from an older backup or begun anew; an anchor can.

// ContinuationKind is the evidence kind of the record that
// durable_jobs.continue_evidence_chain writes when a chain is begun anew
// (after `leasectl migrate down --to 0` and up) or resumed after a restore
// that lost its newest records: its new values name the head of the chain
// before (previous_head_id, previous_head_hash), which an export keeps.
const ContinuationKind = "evidence_chain_continued"

// AnchorLink is one record of an anchor: its id and record_hash.
type AnchorLink struct {
	// ID is the record's evidence_record_id.
	ID int64
	// Hash is its record_hash.
	Hash []byte
}

// Anchor is the end of the evidence chain as an earlier export holds it.
type Anchor struct {
	// Format says which export it was read from: "evidence report" (the
	// JSON of `leasectl evidence`) or "evidence export" (the file of
	// `leasectl migrate down --evidence-export`).
	Format string
	// Database is the database the export names (a migrate down export
	// names only the database's name).
	Database Database
	// ExportedAt is when the export was made, as it says.
	ExportedAt string
	// Links are the records the export holds with their hashes, oldest
	// first. An evidence report of schema version 2 holds only the last.
	Links []AnchorLink
	// HeadOnly is true when Links is only the chain head (an evidence
	// report of schema version 2), so the first record that differs
	// cannot be named.
	HeadOnly bool
}

// Last is the anchor's last record: the chain head it keeps.
func (a Anchor) Last() AnchorLink { return a.Links[len(a.Links)-1] }

// AnchorHead is what an anchor says of itself and of the chain head it
// keeps, as `leasectl evidence verify --output json` shows it.
type AnchorHead struct {
	// Format is the anchor's Format.
	Format string `json:"format"`
	// Database is the database the export names.
	Database Database `json:"database"`
	// ExportedAt is when the export was made, as it says.
	ExportedAt string `json:"exported_at"`
	// LastID is the id of the anchor's last record.
	LastID int64 `json:"last_id"`
	// ChainHead is the last record's record_hash in hex.
	ChainHead string `json:"chain_head"`
	// HeadOnly is the anchor's HeadOnly.
	HeadOnly bool `json:"head_only"`
}

// Head is the anchor's AnchorHead.
func (a Anchor) Head() AnchorHead {
	last := a.Last()
	return AnchorHead{Format: a.Format, Database: a.Database, ExportedAt: a.ExportedAt, LastID: last.ID,
		ChainHead: hex.EncodeToString(last.Hash), HeadOnly: a.HeadOnly}
}

// ErrNotAnAnchor is returned (wrapped) by ParseAnchor for a file that is
// not an evidence export, holds no evidence record, or was changed since it
// was written.
var ErrNotAnAnchor = errors.New("not an evidence anchor")

// anchorError wraps ErrNotAnAnchor with why.
func anchorError(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrNotAnAnchor, fmt.Sprintf(format, args...))
}

// ParseAnchor reads an anchor from an export: the JSON of `leasectl
// evidence --format json` (its evidence_chain, whose body_digest must still
// match the file) or the file `leasectl migrate down --evidence-export`
// writes (every record with its hash). Anything else, an export whose
// period holds no record, or a report whose body no longer matches its
// digest, is an error wrapping ErrNotAnAnchor.
func ParseAnchor(data []byte) (Anchor, error) {
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(data, &probe); err != nil {
		return Anchor{}, anchorError("%v", err)
	}
	switch {
	case probe["evidence_chain"] != nil:
		return parseReportAnchor(data)
	case probe["records"] != nil && probe["chain_head"] != nil:
		return parseExportAnchor(data)
	}
	return Anchor{}, anchorError("neither the JSON of leasectl evidence nor a leasectl migrate down --evidence-export file")
}

// parseReportAnchor reads the anchor of an evidence report.
func parseReportAnchor(data []byte) (Anchor, error) {
	var report struct {
		GeneratedAt string   `json:"generated_at"`
		Database    Database `json:"database"`
		BodyDigest  string   `json:"body_digest"`
		Chain       struct {
			LastID *int64  `json:"last_id"`
			Head   *string `json:"chain_head"`
			Links  []struct {
				ID   int64  `json:"id"`
				Hash string `json:"record_hash"`
			} `json:"links"`
		} `json:"evidence_chain"`
	}
	if err := json.Unmarshal(data, &report); err != nil {
		return Anchor{}, anchorError("%v", err)
	}
	if digest, _ := BodyDigest(data); report.BodyDigest != digest {
		return Anchor{}, anchorError("its body_digest %q is not the digest of its content (%s): the file was changed", report.BodyDigest, digest)
	}
	if report.Chain.LastID == nil || report.Chain.Head == nil {
		return Anchor{}, anchorError("its period holds no evidence record")
	}
	a := Anchor{Format: "evidence report", Database: report.Database, ExportedAt: report.GeneratedAt}
	for _, l := range report.Chain.Links {
		hash, err := hex.DecodeString(l.Hash)
		if err != nil {
			return Anchor{}, anchorError("record %d: record_hash: %v", l.ID, err)
		}
		a.Links = append(a.Links, AnchorLink{ID: l.ID, Hash: hash})
	}
	head, err := hex.DecodeString(*report.Chain.Head)
	if err != nil {
		return Anchor{}, anchorError("chain_head: %v", err)
	}
	if len(a.Links) == 0 { // schema version 2: the head only
		a.Links, a.HeadOnly = []AnchorLink{{ID: *report.Chain.LastID, Hash: head}}, true
	}
	if last := a.Last(); last.ID != *report.Chain.LastID || !bytes.Equal(last.Hash, head) {
		return Anchor{}, anchorError("its last link (record %d) is not its last_id and chain_head (record %d)", last.ID, *report.Chain.LastID)
	}
	return a, nil
}

// parseExportAnchor reads the anchor of a migrate down export, whose
// records are rows as to_jsonb gives them (bytea as "\x..." text).
func parseExportAnchor(data []byte) (Anchor, error) {
	var export struct {
		ExportedAt string `json:"exported_at"`
		Database   string `json:"database"`
		Records    []struct {
			ID   int64  `json:"evidence_record_id"`
			Hash string `json:"record_hash"`
		} `json:"records"`
	}
	if err := json.Unmarshal(data, &export); err != nil {
		return Anchor{}, anchorError("%v", err)
	}
	if len(export.Records) == 0 {
		return Anchor{}, anchorError("it holds no evidence record")
	}
	a := Anchor{Format: "evidence export", Database: Database{Name: export.Database}, ExportedAt: export.ExportedAt}
	for _, r := range export.Records {
		hash, err := hex.DecodeString(strings.TrimPrefix(r.Hash, `\x`))
		if err != nil {
			return Anchor{}, anchorError("record %d: record_hash: %v", r.ID, err)
		}
		a.Links = append(a.Links, AnchorLink{ID: r.ID, Hash: hash})
	}
	return a, nil
}

// AnchorResult is how the live evidence chain stands against an anchor.
type AnchorResult struct {
	// Held is true when the live chain holds every record of the anchor
	// with its hash and continues from the last one, or holds them up to
	// some record (perhaps none) and a continuation record after it names
	// the anchor's last record and hash.
	Held bool `json:"held"`
	// AnchorLastID is the anchor's last record, its chain head.
	AnchorLastID int64 `json:"anchor_last_id"`
	// AgreedThrough is the last record of the anchor the live chain holds
	// with the same hash (0 when none).
	AgreedThrough int64 `json:"agreed_through"`
	// ContinuedAt is the evidence_chain_continued record the chain is
	// followed across (0 when none): the anchor's records after
	// AgreedThrough are kept outside the database, in the export.
	ContinuedAt int64 `json:"continued_at"`
	// Between are the live records between the last that agrees and the
	// continuation (empty when none): written after the chain broke and
	// before the continuation, such as the migrations of a reinstall.
	Between []int64 `json:"between"`
	// FirstDiffering is the first record of the anchor that the live chain
	// lacks or holds with another hash (0 when none).
	FirstDiffering int64 `json:"first_differing"`
	// Missing is true when FirstDiffering is missing from the live chain.
	Missing bool `json:"missing"`
	// Finding says, when not Held, what differs (empty when Held).
	Finding string `json:"finding"`
	// Summary says in one sentence how the chain stands.
	Summary string `json:"summary"`
}

// liveLink is one record of the live chain, with its hash recomputed from
// the content as stored now and, for a continuation, the head it names.
type liveLink struct {
	ID                     int64
	Kind                   string
	StoredPrevious, Stored []byte
	Computed               []byte
	ContinuesID            int64
	ContinuesHash          []byte
	continuation           bool
}

// VerifyAnchor compares the live evidence chain with an anchor (see
// AnchorResult), reading control_evidence_chain() and the continuation
// records through auditor functions: the login needs durable_job_auditor.
// Each live record's hash is recomputed from its content as stored now,
// so a record altered with its hash left, a record removed, and a chain
// rewritten and recomputed by its owner all differ from the anchor.
func VerifyAnchor(ctx context.Context, db DB, a Anchor) (AnchorResult, error) {
	rows, _ := db.Query(ctx, `
		SELECT evidence_record_id, evidence_kind, content_digest, previous_record_hash, record_hash
		FROM durable_jobs.control_evidence_chain()`)
	chain, err := pgx.CollectRows(rows, pgx.RowToStructByPos[chainLink])
	if err != nil {
		return AnchorResult{}, err
	}
	rows, _ = db.Query(ctx, `SELECT evidence_record_id, new_values::text FROM durable_jobs.control_evidence_history(NULL)
		WHERE evidence_kind = $1`, ContinuationKind)
	type continuation struct {
		ID     int64
		Values string
	}
	continuations, err := pgx.CollectRows(rows, pgx.RowToStructByPos[continuation])
	if err != nil {
		return AnchorResult{}, err
	}
	named := map[int64]continuation{}
	for _, c := range continuations {
		named[c.ID] = c
	}
	live := make([]liveLink, 0, len(chain))
	previous := genesisHash
	for _, l := range chain {
		sum := sha256.Sum256(append(append([]byte{}, previous...), l.ContentDigest...))
		link := liveLink{ID: l.ID, Kind: l.Kind, StoredPrevious: l.PreviousRecordHash, Stored: l.RecordHash, Computed: sum[:]}
		if c, ok := named[l.ID]; ok {
			var values struct {
				ID   int64  `json:"previous_head_id"`
				Hash string `json:"previous_head_hash"`
			}
			if json.Unmarshal([]byte(c.Values), &values) == nil {
				link.ContinuesID = values.ID
				link.ContinuesHash, _ = hex.DecodeString(values.Hash)
				link.continuation = true
			}
		}
		live = append(live, link)
		previous = sum[:]
	}
	return compareAnchor(live, a), nil
}

// compareAnchor is VerifyAnchor's comparison: live is the chain in id
// order, each hash recomputed from the chain's start.
func compareAnchor(live []liveLink, a Anchor) AnchorResult {
	last := a.Last()
	result := AnchorResult{AnchorLastID: last.ID, Between: []int64{}}
	byID := map[int64]int{}
	for i, l := range live {
		byID[l.ID] = i
	}
	// The live position just after the last record that agrees with the
	// anchor: where the chain must go on, directly or by a continuation.
	// Before any agrees, the position of the anchor's first record (an
	// anchor of a period that starts later says nothing of the records
	// before it).
	next := 0
	for next < len(live) && live[next].ID < a.Links[0].ID {
		next++
	}
	for _, want := range a.Links {
		i, ok := byID[want.ID]
		if !ok || !bytes.Equal(live[i].Stored, want.Hash) || !bytes.Equal(live[i].Computed, want.Hash) {
			result.FirstDiffering, result.Missing = want.ID, !ok
			break
		}
		result.AgreedThrough, next = want.ID, i+1
	}
	if result.FirstDiffering == 0 {
		if next < len(live) && !bytes.Equal(live[next].StoredPrevious, last.Hash) {
			result.FirstDiffering = live[next].ID
			result.Finding = fmt.Sprintf("record %d does not link to record %d, the anchor's last: the chain does not continue from the anchor", live[next].ID, last.ID)
			result.Summary = result.Finding
			return result
		}
		result.Held = true
		result.Summary = fmt.Sprintf("the live chain holds every record of the anchor up to record %d with the same hashes and continues from it", last.ID)
		return result
	}
	// A continuation naming the anchor's head, after the records that
	// agree (or anywhere when none does: a chain begun anew), carries the
	// chain across the records the export keeps. Records between them (the
	// migrations of a reinstall, a change made after a restore before the
	// continuation was recorded) are named: like every record after an
	// anchor, nothing anchors them.
	for at := next; at < len(live); at++ {
		l := live[at]
		if !l.continuation || l.ContinuesID != last.ID || !bytes.Equal(l.ContinuesHash, last.Hash) {
			continue
		}
		result.Held, result.ContinuedAt, result.FirstDiffering, result.Missing = true, l.ID, 0, false
		for _, between := range live[next:at] {
			result.Between = append(result.Between, between.ID)
		}
		kept := fmt.Sprintf("records up to %d", last.ID)
		if result.AgreedThrough > 0 {
			kept = fmt.Sprintf("records after %d up to %d", result.AgreedThrough, last.ID)
		}
		result.Summary = fmt.Sprintf("record %d (%s) continues the live chain from record %d, the anchor's last, after the anchor's records up to %d that the live chain holds with the same hashes: the anchor's %s are kept outside the database, in the export",
			l.ID, ContinuationKind, last.ID, result.AgreedThrough, kept)
		if n := len(result.Between); n > 0 {
			result.Summary += fmt.Sprintf("; live records %d to %d (%d) come between, written after the chain broke and before the continuation",
				result.Between[0], result.Between[n-1], n)
		}
		return result
	}
	if result.Missing {
		result.Finding = fmt.Sprintf("record %d of the anchor is missing from the live chain, and no %s record naming record %d follows the records that agree",
			result.FirstDiffering, ContinuationKind, last.ID)
	} else {
		result.Finding = fmt.Sprintf("record %d differs from the anchor: it, or a record before it, was altered, removed or inserted, "+
			"and no %s record naming record %d follows the records that agree", result.FirstDiffering, ContinuationKind, last.ID)
	}
	if a.HeadOnly {
		result.Finding += " (the anchor holds only its chain head, so the first record that differs cannot be named)"
	}
	result.Summary = result.Finding
	return result
}

// WithEvidenceAnchor gives Run an anchor: AUDIT-EVIDENCE-ANCHOR compares
// the live chain with it (VerifyAnchor) and reports a chain that does not
// hold it. Without it, that check has nothing to compare and passes.
func WithEvidenceAnchor(a Anchor) Option {
	return func(o *options) { o.anchor = &a }
}

// checkEvidenceAnchor: the live evidence chain holds the anchor given with
// WithEvidenceAnchor (VerifyAnchor).
func checkEvidenceAnchor(ctx context.Context, pool DB, o *options) ([]string, error) {
	if o.anchor == nil {
		return nil, nil
	}
	for _, name := range []string{"control_evidence_chain", "control_evidence_history"} {
		callable, finding, err := auditorFunctionFinding(ctx, pool, name)
		if err != nil || finding != "" {
			return optionalFinding(finding), err
		}
		if !callable {
			return []string{"cannot tell: the database has no durable_jobs." + name + "() (see AUDIT-MIGRATION-VERSION)"}, nil
		}
	}
	result, err := VerifyAnchor(ctx, pool, *o.anchor)
	if err != nil || result.Held {
		return nil, err
	}
	return []string{result.Finding}, nil
}

// ContinueChain records that the evidence chain continues from the last
// record of anchor, an export kept outside the database (after a
// reinstall or a restore of an older backup): it calls
// durable_jobs.continue_evidence_chain, which appends one ContinuationKind
// record naming that record's id and hash, with the reason, ticket and
// approver the change control asks for (an empty ticket or approver is
// none), and returns the new record's id. VerifyAnchor then follows the
// chain across it. The login needs durable_job_operator.
func ContinueChain(ctx context.Context, db DB, anchor Anchor, reason, ticket, approver string) (int64, error) {
	last := anchor.Last()
	var id int64
	err := db.QueryRow(ctx, `SELECT durable_jobs.continue_evidence_chain($1, $2, $3, NULLIF($4, ''), NULLIF($5, ''))`,
		last.ID, last.Hash, reason, ticket, approver).Scan(&id)
	return id, err
}
