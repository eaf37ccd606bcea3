package audit

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	sqlbundle "github.com/mightyetl/leasefence/sql"
	"github.com/mightyetl/leasefence/textfmt"
)

// What makes a leasectl report (the audit's JSON, the evidence report)
// evidence an auditor can keep: when it was made, of which database, and a
// digest of its body. The evidence package uses the same code.

// Database identifies the database a report is of.
type Database struct {
	// SystemIdentifier is the cluster's system identifier
	// (pg_control_system()), in decimal; a restored copy keeps it, a new
	// cluster has another.
	SystemIdentifier string `json:"system_identifier"`
	// Name is the database's name.
	Name string `json:"name"`
}

// Identity is when a report was made (database time) and of which
// database.
type Identity struct {
	// GeneratedAt is the database's clock when the identity was read.
	GeneratedAt time.Time
	// Database is the database's name and system identifier.
	Database Database
}

// ReadIdentity reads the database's clock (clock_timestamp()), its name
// and the cluster's system identifier, which every login may read.
func ReadIdentity(ctx context.Context, db DB) (Identity, error) {
	var id Identity
	err := db.QueryRow(ctx, `SELECT pg_catalog.clock_timestamp(), pg_catalog.current_database(),
		(SELECT s.system_identifier::text FROM pg_catalog.pg_control_system() s)`).
		Scan(&id.GeneratedAt, &id.Database.Name, &id.Database.SystemIdentifier)
	return id, err
}

// FormatTime prints a time as UTC with milliseconds, as every leasefence
// report does (2026-05-01T00:00:00.000Z): textfmt.Time.
func FormatTime(t time.Time) string { return textfmt.Time(t) }

// BodyDigest returns "sha256:" and the hex SHA-256 of a report's JSON
// (`leasectl audit --output json` or `leasectl evidence --format json`)
// without its generated_at and body_digest members, in canonical form:
// object members sorted by name, no white space, strings escaped as Go's
// encoding/json does without HTML escaping, numbers as written. For a
// report whose strings hold no U+2028 or U+2029 this is the SHA-256 of
// `jq -S -c 'del(.generated_at, .body_digest)'` without its final newline.
func BodyDigest(reportJSON []byte) (string, error) {
	dec := json.NewDecoder(bytes.NewReader(reportJSON))
	dec.UseNumber()
	var body map[string]any
	if err := dec.Decode(&body); err != nil {
		return "", err
	}
	delete(body, "generated_at")
	delete(body, "body_digest")
	var canonical bytes.Buffer
	enc := json.NewEncoder(&canonical)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(body); err != nil {
		return "", err
	}
	sum := sha256.Sum256(bytes.TrimSuffix(canonical.Bytes(), []byte("\n")))
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}

// ReportSchemaVersion is the version of the shape of StampedReport's JSON
// (`leasectl audit --output json`), in its schema_version. Version 1 was
// the unversioned shape before it (passed, finding_count, warning_count,
// checks); version 2 added schema_version, generated_at, database,
// migration_version, bundle_version and body_digest.
const ReportSchemaVersion = 2

// StampedReport is a Report with what makes it evidence: when it was made,
// of which database, at which bundle version, and the digest of its body.
// Its JSON is what `leasectl audit --output json` prints: the Report's
// members and these.
type StampedReport struct {
	// SchemaVersion is ReportSchemaVersion.
	SchemaVersion int `json:"schema_version"`
	// GeneratedAt is the database time just before the checks ran, UTC
	// with milliseconds.
	GeneratedAt string `json:"generated_at"`
	// Database says which database was audited.
	Database Database `json:"database"`
	// MigrationVersion is the bundle version the database records (0 when
	// there is none or the login cannot read it: AUDIT-MIGRATION-VERSION
	// says which).
	MigrationVersion int32 `json:"migration_version"`
	// BundleVersion is the newest bundle version this build carries, the
	// one the checks compare with.
	BundleVersion int32 `json:"bundle_version"`
	// BodyDigest is "sha256:" and the hex SHA-256 of the JSON without
	// generated_at and body_digest (see BodyDigest): two audits of the
	// same state have the same digest.
	BodyDigest string `json:"body_digest"`
	Report
}

// RunStamped reads the database's identity, runs every check as Run does,
// reads the recorded bundle version, and returns the stamped report. An
// error reading the identity or the version is returned as it is; a check
// that cannot run is a *CheckError, as from Run.
func RunStamped(ctx context.Context, db DB, opts ...Option) (StampedReport, error) {
	id, err := ReadIdentity(ctx, db)
	if err != nil {
		return StampedReport{}, fmt.Errorf("read the database's identity: %w", err)
	}
	report, err := Run(ctx, db, opts...)
	if err != nil {
		return StampedReport{}, err
	}
	version, _, err := recordedVersion(ctx, db)
	if err != nil {
		return StampedReport{}, fmt.Errorf("read the bundle version: %w", err)
	}
	return stamp(id, version, report), nil
}

// stamp puts the identity and version on report and digests its body.
// Both steps are of values this package made (strings and numbers), which
// always encode and decode.
func stamp(id Identity, version int32, report Report) StampedReport {
	out := StampedReport{SchemaVersion: ReportSchemaVersion, GeneratedAt: FormatTime(id.GeneratedAt), Database: id.Database,
		MigrationVersion: version, BundleVersion: sqlbundle.NewestVersion(), Report: report}
	encoded, _ := json.Marshal(out)
	out.BodyDigest, _ = BodyDigest(encoded)
	return out
}
