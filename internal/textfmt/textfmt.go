package textfmt

import (
	"encoding/json"
	"io"
	"time"

	"github.com/mightyetl/leasefence/textfmt"
)

// Duration is textfmt.Duration.
func Duration(d time.Duration) string { return textfmt.Duration(d) }

// Time is textfmt.Time.
func Time(t time.Time) string { return textfmt.Time(t) }

// Visible is textfmt.Visible.
func Visible(s string) string { return textfmt.Visible(s) }

// Fprintf is textfmt.Fprintf.
func Fprintf(w io.Writer, format string, args ...any) (int, error) {
	return textfmt.Fprintf(w, format, args...)
}

// OneLine is textfmt.OneLine.
func OneLine(s string) string { return textfmt.OneLine(s) }

// CompactJSON is textfmt.CompactJSON.
func CompactJSON(raw json.RawMessage) string { return textfmt.CompactJSON(raw) }
