package demo

import (
	"io"
	"time"

	"github.com/mightyetl/leasefence/textfmt"
)

// statementTimeout bounds every statement of the demo's admin connections,
// as leasectl's commands do.
const statementTimeout = 30 * time.Second

// applicationName is the application_name of the demo's admin connections.
const applicationName = "leasectl"

// printf writes to w through textfmt.Fprintf, as leasectl's commands do:
// every string argument (a role name, a reason, a queue read back from the
// database) is shown through textfmt.Visible and so reads as one value;
// the format is the demo's own text. Output errors on the narration are
// not actionable.
func printf(w io.Writer, format string, args ...any) {
	_, _ = textfmt.Fprintf(w, format, args...)
}
