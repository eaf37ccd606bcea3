package sqlbundle

import (
	"regexp"
	"slices"
	"strings"

	"github.com/jackc/tern/v2/migrate"
)

// Which downgrades erase control evidence is read from the migrations
// themselves: a migration's down part erases evidence when it drops the
// schema durable_jobs or the table durable_jobs.control_evidence_record,
// deletes or truncates its rows, or drops one of its columns (an ALTER
// TABLE of it with a DROP that is not of a constraint, a default, NOT NULL,
// an expression or an identity). The SQL is read lower-cased and without
// double quotes, comments included: a comment that reads like such a
// statement counts too, so the rule errs towards asking for the export.
var (
	// erasesEvidenceRows matches a statement that removes the table, or the
	// schema that holds it, or its rows. Each names its table list right
	// after the keyword, so "BEFORE TRUNCATE ON" or "GRANT DELETE ON" in a
	// trigger or a grant does not match.
	erasesEvidenceRows = regexp.MustCompile(
		`\bdrop\s+schema\s+(if\s+exists\s+)?([a-z_][a-z0-9_]*\s*,\s*)*durable_jobs\b|` +
			`\b(drop\s+table\s+(if\s+exists\s+)?|truncate\s+(table\s+)?(only\s+)?|delete\s+from\s+(only\s+)?)` +
			`([a-z_][a-z0-9_.]*\s*,\s*)*durable_jobs\s*\.\s*control_evidence_record\b`)
	// altersEvidence matches an ALTER TABLE of the evidence table up to the
	// end of its statement.
	altersEvidence = regexp.MustCompile(
		`\balter\s+table\s+(if\s+exists\s+)?(only\s+)?durable_jobs\s*\.\s*control_evidence_record\b[^;]*`)
	// dropClause matches each DROP of an ALTER TABLE and the word after it.
	dropClause = regexp.MustCompile(`\bdrop\s+([a-z_]+)`)
	// keepsColumns are the words after an ALTER TABLE's DROP that drop no
	// column: DROP CONSTRAINT, and ALTER COLUMN's DROP DEFAULT, DROP NOT
	// NULL, DROP EXPRESSION and DROP IDENTITY. Anything else (DROP COLUMN,
	// or DROP and a column name) drops a column.
	keepsColumns = []string{"constraint", "default", "not", "expression", "identity"}
)

// erasesEvidence reports whether the SQL of a migration's down part erases
// control evidence: records, or columns of every record (see
// erasesEvidenceRows and altersEvidence).
func erasesEvidence(downSQL string) bool {
	sql := strings.ReplaceAll(strings.ToLower(downSQL), `"`, "")
	if erasesEvidenceRows.MatchString(sql) {
		return true
	}
	for _, alter := range altersEvidence.FindAllString(sql, -1) {
		for _, drop := range dropClause.FindAllStringSubmatch(alter, -1) {
			if !slices.Contains(keepsColumns, drop[1]) {
				return true
			}
		}
	}
	return false
}

// evidenceErasingMigrations names, in the order a downgrade from version
// from to version to reverts them, the migrations among migrations whose
// down part erases control evidence. It is empty when to >= from.
func evidenceErasingMigrations(migrations []*migrate.Migration, from, to int32) []string {
	var names []string
	for _, m := range slices.Backward(migrations) {
		if m.Sequence > to && m.Sequence <= from && erasesEvidence(m.DownSQL) {
			names = append(names, m.Name)
		}
	}
	return names
}
