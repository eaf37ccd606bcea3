package main

import (
	"encoding/json"
	"io"
	"text/tabwriter"
	"time"

	"github.com/mightyetl/leasefence/textfmt"
)

// writeJSON prints v as indented JSON followed by a newline.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// newTable returns a tab-aligned writer for text tables; call Flush.
func newTable(w io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
}

// formatBool prints "yes" or "no".
func formatBool(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// seconds turns a duration into seconds for JSON output.
func seconds(d time.Duration) float64 { return d.Seconds() }

// printf writes to w through textfmt.Fprintf, the one place that escapes
// values from the database or an operator: every string argument (a role
// or queue name, a finding, a reason) is shown through textfmt.Visible, so
// it can neither start a line of its own nor move the cursor. The format
// is leasectl's own text. Every text output of leasectl is written through
// printf; output errors on stdout are not actionable for a CLI.
func printf(w io.Writer, format string, args ...any) {
	_, _ = textfmt.Fprintf(w, format, args...)
}
