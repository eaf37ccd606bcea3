package cli

import (
	"encoding/json"
	"io"
	"strings"
	"text/tabwriter"

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

// table prints items as a tab-aligned table: the header (leasectl's own
// text, its columns split by tabs) and a line for each item with the
// columns row returns.
func table[T any](w io.Writer, header string, items []T, row func(T) []any) {
	tw := newTable(w)
	printf(tw, header+"\n")
	for _, item := range items {
		cells := row(item)
		printf(tw, strings.Repeat("%v\t", len(cells)-1)+"%v\n", cells...)
	}
	_ = tw.Flush()
}

// formatBool prints "yes" or "no".
func formatBool(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// printf writes to w through textfmt.Fprintf, the one place that escapes
// values from the database or an operator: every string argument (a role
// or queue name, a finding, a reason) is shown through textfmt.Visible, so
// it can neither start a line of its own nor move the cursor. The format
// is leasectl's own text. Every text output of leasectl is written through
// printf; output errors on stdout are not actionable for a CLI.
func printf(w io.Writer, format string, args ...any) {
	_, _ = textfmt.Fprintf(w, format, args...)
}
