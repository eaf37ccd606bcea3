package goclient

import "time"

// RenewalOutcome is the result of one renewal attempt for one claim. Its
// values are the only values of the "outcome" metric label.
type RenewalOutcome string

// The renewal outcomes.
const (
	// RenewalRenewed: the database extended the lease.
	RenewalRenewed RenewalOutcome = "renewed"
	// RenewalStale: the database says the claim is no longer live.
	RenewalStale RenewalOutcome = "stale"
	// RenewalDisabled: the claim is live but its queue's policy has renewal
	// switched off; the claim runs out at its granted expiry.
	RenewalDisabled RenewalOutcome = "renewal_disabled"
	// RenewalDatabaseFailure: the attempt failed (timeout, network error,
	// failover, refused connection); never counted as a success.
	RenewalDatabaseFailure RenewalOutcome = "database_failure"
)

// LossCause says why the client stopped trusting a claim it held.
type LossCause string

// The causes of ownership loss.
const (
	// LossStale: a renewal, terminal write or release came back stale.
	LossStale LossCause = "stale"
	// LossTrustDeadlinePassed: no renewal was confirmed before the local
	// trust deadline (fail closed).
	LossTrustDeadlinePassed LossCause = "trust_deadline_passed"
	// LossReleased: the claim was given up (shutdown or an explicit release).
	LossReleased LossCause = "released"
)

// Observer receives the client's finite-cardinality signals. Every argument
// is bounded: a queue name, one of the enumerated kinds above, a duration or
// a count; never a job id, token, owner, payload, SQL or error text.
// Methods are called from the heartbeat's and the worker's goroutines, must
// be safe for concurrent use and must return quickly. Embed NopObserver to
// implement only some of them.
type Observer interface {
	// Renewal is called once per claim per renewal attempt with its outcome.
	Renewal(queue string, outcome RenewalOutcome)
	// ConfigurationRejected is called when a claim is refused because the
	// queue's database policy is one the client cannot keep safe.
	ConfigurationRejected(queue string)
	// SchedulerLag is called for every claim in a renewal attempt with how
	// late the attempt started against the claim's schedule (0 when on time
	// or early).
	SchedulerLag(queue string, lag time.Duration)
	// SafetyMarginRemaining is called at every confirmed renewal with the
	// previous trust deadline minus the time the confirmation arrived: how
	// close the claim came to being given up.
	SafetyMarginRemaining(queue string, remaining time.Duration)
	// Claimed is called for every claim the client makes. It does not say
	// whether the claim took a waiting job or reclaimed an expired lease:
	// claim_next_job's answer does not tell, so the client does not guess.
	// The database counts reclaims itself (lease_health_by_queue; see
	// prommetrics.NewDatabaseCollector).
	Claimed(queue string)
	// OwnershipLost is called once when a held claim stops being trusted
	// (a Lease ends by a stale renewal, its trust deadline or a release),
	// and, with LossStale, for every terminal write made with the Client's
	// Complete, Retry or Fail (or their Tx forms) that the database refused
	// as stale and every Client.Release that answered false: the database
	// cannot count a stale terminal write, whose transaction aborts.
	OwnershipLost(queue string, cause LossCause)
	// DatabaseClockOffset is called after every answered renewal attempt with
	// the database's time minus the application wall clock at
	// the middle of the round trip.
	DatabaseClockOffset(offset time.Duration)
	// RenewalsInFlight is called whenever the number of open renewal calls changes.
	RenewalsInFlight(n int)
}

// NopObserver ignores every signal. It is the default Observer, and a base
// to embed in an Observer that wants only some signals.
type NopObserver struct{}

// Renewal does nothing.
func (NopObserver) Renewal(string, RenewalOutcome) {}

// ConfigurationRejected does nothing.
func (NopObserver) ConfigurationRejected(string) {}

// SchedulerLag does nothing.
func (NopObserver) SchedulerLag(string, time.Duration) {}

// SafetyMarginRemaining does nothing.
func (NopObserver) SafetyMarginRemaining(string, time.Duration) {}

// Claimed does nothing.
func (NopObserver) Claimed(string) {}

// OwnershipLost does nothing.
func (NopObserver) OwnershipLost(string, LossCause) {}

// DatabaseClockOffset does nothing.
func (NopObserver) DatabaseClockOffset(time.Duration) {}

// RenewalsInFlight does nothing.
func (NopObserver) RenewalsInFlight(int) {}

// UnavailableReason says why a worker stopped claiming: its commits do not
// come back. Its values are the only values of the "reason" metric label.
type UnavailableReason string

// The reasons a worker finds the database unavailable.
const (
	// UnavailableCommitTimeout: a COMMIT did not answer within
	// Config.CommitTimeout (a stalled synchronous standby, a hung server),
	// or its wait for a synchronous standby was cancelled; its outcome is
	// unknown (ErrCommitTimeout).
	UnavailableCommitTimeout UnavailableReason = "commit_timeout"
	// UnavailableConnectionLost: a claim or a job's transaction failed on a
	// lost or refused connection (a failover, a network cut).
	UnavailableConnectionLost UnavailableReason = "connection_lost"
	// UnavailableTimeout: a claim or a terminal write ran out of time
	// before its COMMIT (a network that black-holes traffic).
	UnavailableTimeout UnavailableReason = "timeout"
)

// UnavailableReasons lists every UnavailableReason.
var UnavailableReasons = []UnavailableReason{UnavailableCommitTimeout, UnavailableConnectionLost, UnavailableTimeout}

// AvailabilityObserver is an Observer that also wants the workers'
// "database unavailable" signal, to tell a failover or a stalled
// synchronous standby from lost workers. It is optional: a Worker checks
// with a type assertion whether Config.Observer implements it, so Observers
// written before it keep working. NopObserver implements it.
type AvailabilityObserver interface {
	Observer
	// DatabaseUnavailable is called when a worker stops claiming because
	// its commits do not come back, once per outage, with the first reason.
	DatabaseUnavailable(reason UnavailableReason)
	// DatabaseAvailable is called when a worker's probe transaction
	// commits after an outage and it claims again.
	DatabaseAvailable()
}

// DatabaseUnavailable does nothing.
func (NopObserver) DatabaseUnavailable(UnavailableReason) {}

// DatabaseAvailable does nothing.
func (NopObserver) DatabaseAvailable() {}
