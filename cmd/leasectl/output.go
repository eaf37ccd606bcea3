package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"
	"unicode/utf8"
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

// formatDuration prints a duration the way operators write it: "30s",
// "1m30s", "24h", "1.5s", with zero units left out.
func formatDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// formatTime prints a database time in UTC with milliseconds.
func formatTime(t time.Time) string {
	return t.UTC().Format("2006-01-02T15:04:05.000Z")
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

// visible replaces every character that could change how the rest of a
// line reads on a terminal or in a rendered page with a visible escape:
// control characters (ESC, newline, C1 controls and the rest of Cc), format
// characters (the bidirectional overrides and isolates such as U+202E,
// zero-width characters, Cf), line and paragraph separators become \u202e
// style escapes, and bytes that are not UTF-8 become \xff style escapes.
// Operator-supplied text (reasons, role and queue names, finding texts)
// goes through it before it is printed.
func visible(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			fmt.Fprintf(&b, "\\x%02x", s[i])
		case unicode.IsControl(r) || unicode.In(r, unicode.Cf, unicode.Zl, unicode.Zp):
			fmt.Fprintf(&b, "\\u%04x", r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

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
	s = markdownEscaper.Replace(visible(s))
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
	s = strings.ReplaceAll(strings.Join(strings.Fields(visible(s)), " "), "|", "\\|")
	fence := "`"
	for strings.Contains(s, fence) {
		fence += "`"
	}
	return fence + s + fence
}

// printf writes to w; output errors on stdout are not actionable for a CLI.
func printf(w io.Writer, format string, args ...any) {
	_, _ = fmt.Fprintf(w, format, args...)
}
