package textfmt

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Duration prints a duration the way operators write it: "30s", "1m30s",
// "24h", "1.5s", with zero units left out.
func Duration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// Time prints a database time in UTC with milliseconds.
func Time(t time.Time) string {
	return t.UTC().Format("2006-01-02T15:04:05.000Z")
}

// Visible replaces every character that could change how the rest of a
// line reads on a terminal or in a rendered page with a visible escape:
// control characters (ESC, newline, C1 controls and the rest of Cc), format
// characters (the bidirectional overrides and isolates such as U+202E,
// zero-width characters, Cf), line and paragraph separators become \u202e
// style escapes, and bytes that are not UTF-8 become \xff style escapes.
// Operator-supplied text (reasons, role and queue names, finding texts)
// goes through it before it is printed.
func Visible(s string) string {
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

// OneLine joins a multi-line text into one line, with its control and
// bidirectional characters shown as escapes (see Visible).
func OneLine(s string) string {
	return Visible(strings.Join(strings.Fields(s), " "))
}

// CompactJSON prints a JSON value on one line; text that is not JSON is
// returned as it is.
func CompactJSON(raw json.RawMessage) string {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return string(raw)
	}
	out, _ := json.Marshal(v)
	return string(out)
}
