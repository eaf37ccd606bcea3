package goclient

import "time"

// Clock supplies the application's wall-clock time. leasefence never uses
// it to decide whether a lease is still valid: expiry is the database's
// decision, and the local trust deadline runs on the monotonic clock (the
// monotonic reading time.Now carries and Go's timers use). The wall clock
// only feeds the database clock offset signal, so a skewed Clock changes
// that signal and nothing else.
type Clock interface {
	// Now returns the current wall-clock time.
	Now() time.Time
}

// SystemClock is the Clock of the host: time.Now.
type SystemClock struct{}

// Now returns time.Now().
func (SystemClock) Now() time.Time { return time.Now() }
