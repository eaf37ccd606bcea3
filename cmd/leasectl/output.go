package main

import (
	"encoding/json"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/mightyetl/leasefence/internal/textfmt"
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

// markdownEscaper backslash-escapes the ASCII punctuation that Markdown
// (CommonMark and GitHub's tables, strikethrough and autolinks) reads as
// markup, and writes HTML's special characters as entities, so that no
// operator text becomes a link, an image, emphasis, a table column or HTML.
var markdownEscaper = strings.NewReplacer(
	"\\", "\\\\", "`", "\\`", "*", "\\*", "_", "\\_", "[", "\\[", "]", "\\]", "(", "\\(", ")", "\\)",
	"!", "\\!", "|", "\\|", "~", "\\~", "#", "\\#", "{", "\\{", "}", "\\}",
	"<", "&lt;", ">", "&gt;", "&", "&amp;", "\"", "&quot;", "'", "&#39;",
)

// markdownCell makes operator text safe inside a Markdown table cell: its
// control and bidirectional characters become visible escapes, its markup
// and HTML are escaped, and runs of spaces become one.
func markdownCell(s string) string {
	s = markdownEscaper.Replace(textfmt.Visible(s))
	s = strings.Join(strings.Fields(s), " ")
	if s == "" {
		return "-"
	}
	return s
}

// markdownCode puts JSON text in a Markdown code span inside a table cell:
// nothing in it is read as markup or HTML. Its control and bidirectional
// characters become visible escapes, its pipes are escaped for the table,
// and the span's fence is a run of backticks the text does not hold. (JSON
// text neither starts nor ends with a backtick, so the fence needs no
// padding.)
func markdownCode(s string) string {
	s = strings.ReplaceAll(strings.Join(strings.Fields(textfmt.Visible(s)), " "), "|", "\\|")
	fence := "`"
	for strings.Contains(s, fence) {
		fence += "`"
	}
	return fence + s + fence
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
