package goclient

import "time"

// clock supplies the application's wall-clock time. leasefence never uses
// it to decide whether a lease is still valid: expiry is the database's
// decision, and the local trust deadline runs on the monotonic clock (the
// monotonic reading time.Now carries and Go's timers use). The wall clock
// only feeds the database clock offset signal, so a skewed clock changes
// that signal and nothing else. It is a test seam, so it is not exported:
// the module's tests and fault campaign skew it through internal/leaseport.
type clock interface {
	// Now returns the current wall-clock time.
	Now() time.Time
}

// systemClock is the clock of the host: time.Now.
type systemClock struct{}

// Now returns time.Now().
func (systemClock) Now() time.Time { return time.Now() }
