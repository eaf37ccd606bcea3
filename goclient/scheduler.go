package goclient

// Scheduler runs the heartbeat's renewal attempts. The heartbeat decides
// when an attempt is due on its own goroutine and timer, bounds the attempts
// in flight itself (Config.MaxInFlightRenewals, up to Config.RenewalPoolSize
// when the database is slow), and hands each attempt to Submit. An
// embedding application can supply its own bounded executor; it must never
// run the attempt on a goroutine that also runs job handlers, or a busy
// handler could delay the renewal.
type Scheduler interface {
	// Submit runs task once, soon, and returns without waiting for it. It
	// returns an error when it cannot accept the task; the heartbeat then
	// counts the attempt as a failed renewal and retries within the trust
	// deadline.
	Submit(task func()) error
}

// GoroutineScheduler is the default Scheduler: every attempt gets a new
// goroutine, so the heartbeat never waits for a handler's goroutine.
type GoroutineScheduler struct{}

// Submit starts task on a new goroutine.
func (GoroutineScheduler) Submit(task func()) error {
	go task()
	return nil
}
