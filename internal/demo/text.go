package demo

import (
	"fmt"
	"io"
	"time"
)

// statementTimeout bounds every statement of the demo's admin connections,
// as leasectl's commands do.
const statementTimeout = 30 * time.Second

// applicationName is the application_name of the demo's admin connections.
const applicationName = "leasectl"

// printf writes to w; output errors on the narration are not actionable.
func printf(w io.Writer, format string, args ...any) {
	_, _ = fmt.Fprintf(w, format, args...)
}
