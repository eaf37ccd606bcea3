package textfmt

import (
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"strconv"
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

// day is the unit of Days.
const day = 24 * time.Hour

// Days prints a period the way operators write retention: whole days as
// "30d", anything else as Duration does.
func Days(d time.Duration) string {
	if d > 0 && d%day == 0 {
		return strconv.FormatInt(int64(d/day), 10) + "d"
	}
	return Duration(d)
}

// ParseDays reads a period as Days prints it: whole days such as "30d", or
// a Go duration such as "12h" or "90m".
func ParseDays(s string) (time.Duration, error) {
	var d time.Duration
	days, isDays := strings.CutSuffix(s, "d")
	n, err := strconv.ParseInt(days, 10, 32)
	if isDays {
		d = time.Duration(n) * day
	} else {
		d, err = time.ParseDuration(s)
	}
	if err != nil {
		return 0, fmt.Errorf("invalid duration %q (write whole days like 30d, or 12h, 90m)", s)
	}
	return d, nil
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

// Fprintf formats like fmt.Fprintf, but first shows every text argument
// through Visible: a string, a value of a type whose underlying type is
// string (such as a status type) and each element of a []string. The
// format is the caller's own text and is written as it is; numbers, times
// and other arguments are formatted as fmt does. Every text output of
// leasectl and of its demo, and the evidence report's Markdown, is written
// through it: it is the one place
// that escapes values from the database or an operator, so that a role
// name holding a newline, a carriage return or a terminal escape reads as
// one value and never as lines of its own. Visible leaves text it has
// already escaped as it is, so an argument escaped before (a Markdown
// cell) is not changed.
func Fprintf(w io.Writer, format string, args ...any) (int, error) {
	shown := make([]any, len(args))
	for i, arg := range args {
		shown[i] = visibleArg(arg)
	}
	return fmt.Fprintf(w, format, shown...)
}

// visibleArg is arg as Fprintf formats it: text through Visible, anything
// else as it is.
func visibleArg(arg any) any {
	if list, ok := arg.([]string); ok {
		out := make([]string, len(list))
		for i, s := range list {
			out[i] = Visible(s)
		}
		return out
	}
	if v := reflect.ValueOf(arg); v.Kind() == reflect.String {
		return Visible(v.String())
	}
	return arg
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
