package goclient

import (
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// Project SQLSTATEs raised by the leasefence bundle (docs/sql-api.md, SQLSTATEs).
const (
	// SQLStateStaleClaim is raised by a terminal write whose claim is not fenced.
	SQLStateStaleClaim = "LF001"
	// SQLStateInvalidPolicy is raised by set_queue_lease_policy for an invalid policy.
	SQLStateInvalidPolicy = "LF002"
	// SQLStateInvalidArgument is raised for malformed input (bad pattern, NULL, out of range).
	SQLStateInvalidArgument = "LF003"
	// SQLStatePermissionDenied is PostgreSQL's insufficient_privilege.
	SQLStatePermissionDenied = "42501"
)

// Sentinel errors. Compare with errors.Is; the error a call returns usually
// wraps one of these together with more detail.
var (
	// ErrStaleClaim is returned when the database says a claim is no longer
	// the live owner of its job (SQLSTATE LF001, or a "stale" renewal): it
	// expired, was cancelled, finished, was released or was superseded. The
	// transaction that carried the write has been rolled back.
	ErrStaleClaim = errors.New("leasefence: claim is stale")

	// ErrInvalidPolicy is returned when the database refuses a lease policy
	// (SQLSTATE LF002).
	ErrInvalidPolicy = errors.New("leasefence: invalid lease policy")

	// ErrInvalidArgument is returned when the database refuses malformed
	// input (SQLSTATE LF003), or when the client refuses it before sending.
	ErrInvalidArgument = errors.New("leasefence: invalid argument")

	// ErrPermissionDenied is returned when the login role may not call the
	// function (SQLSTATE 42501): it lacks the runtime role the call needs.
	ErrPermissionDenied = errors.New("leasefence: permission denied")

	// ErrBundleMismatch is returned when the database lacks a function (or
	// the durable_jobs schema) that this client calls (SQLSTATE 42883 or
	// 3F000): its leasefence migrations are older than this client's, or
	// were never applied. Migrate the database to the bundle version this
	// client ships (sqlbundle.NewestVersion, "leasectl migrate up") before
	// the workers that need it start; Worker.Run returns it instead of
	// retrying a call that cannot succeed.
	ErrBundleMismatch = errors.New("leasefence: the database lacks a leasefence function this client calls (migrate it to this client's bundle version)")

	// ErrClosed is returned when a call is made on a client after Close, and
	// is the cause of a lease context cancelled by Close.
	ErrClosed = errors.New("leasefence: client is closed")

	// ErrNoJob is returned by Claim when no job of the queue is claimable now.
	ErrNoJob = errors.New("leasefence: no claimable job")

	// ErrJobNotFound is returned by State for a job id the database does not know.
	ErrJobNotFound = errors.New("leasefence: job not found")

	// ErrInvalidConfig is returned by NewClient (and NewAdmin, NewWorker)
	// when a configuration is unsafe; the *ConfigError says which setting
	// and why.
	ErrInvalidConfig = errors.New("leasefence: invalid client configuration")

	// ErrConfigurationRejected is returned by a claim when the queue's lease
	// policy in the database is one the client cannot keep safe with its
	// safety margin, attempt timeout and bounds. The claim has been
	// released, not silently clamped, and no handler runs for it.
	ErrConfigurationRejected = errors.New("leasefence: the client cannot keep the queue's lease policy safe")

	// ErrTrustDeadlinePassed is the cause of a lease context cancelled
	// because no renewal was confirmed before the local trust deadline
	// (fail closed).
	ErrTrustDeadlinePassed = errors.New("leasefence: lease trust deadline passed without a confirmed renewal")

	// ErrLeaseReleased is the cause of a lease context cancelled because the
	// claim was given up (shutdown, or the caller released it).
	ErrLeaseReleased = errors.New("leasefence: claim was released")

	// ErrLeaseStopped is the cause of a lease context cancelled by Stop after
	// the job's terminal write: the work is over, not lost.
	ErrLeaseStopped = errors.New("leasefence: lease stopped after the job finished")

	// ErrCommitTimeout is returned when a COMMIT the client sent did not
	// answer within Config.CommitTimeout, or answered with a WARNING (its
	// wait for a synchronous standby was cancelled: "already committed
	// locally"). The transaction's outcome is unknown: it may have
	// committed, or not, or committed on a primary that a failover then
	// lost. The client assumes neither; see "Commit deadline" in the
	// package documentation.
	ErrCommitTimeout = errors.New("leasefence: commit outcome unknown: no confirmation within the commit timeout")

	// ErrDatabaseUnavailable is what Worker.Run returns when its context
	// ends while the worker has stopped claiming because its commits do not
	// come back (the error names the UnavailableReason).
	ErrDatabaseUnavailable = errors.New("leasefence: database unavailable")
)

// DatabaseError is a PostgreSQL error with a project or privilege SQLSTATE,
// or one saying the bundle is missing, translated to one of the sentinel
// errors. errors.Is matches the sentinel;
// errors.As to *pgconn.PgError gives PostgreSQL's message, DETAIL and HINT.
type DatabaseError struct {
	// Sentinel is ErrStaleClaim, ErrInvalidPolicy, ErrInvalidArgument,
	// ErrPermissionDenied or ErrBundleMismatch.
	Sentinel error
	// PgError is the error as PostgreSQL sent it.
	PgError *pgconn.PgError
}

// Error returns the sentinel's text, PostgreSQL's message and the SQLSTATE.
func (e *DatabaseError) Error() string {
	return fmt.Sprintf("%s: %s (SQLSTATE %s)", e.Sentinel, e.PgError.Message, e.PgError.Code)
}

// Unwrap returns both the sentinel and the PostgreSQL error, so errors.Is and
// errors.As see either.
func (e *DatabaseError) Unwrap() []error { return []error{e.Sentinel, e.PgError} }

// ConfigError is a refused client setting. Message is one of the exact texts
// documented on Config.Validate.
type ConfigError struct {
	// Field is the Config field that is wrong, for example "RenewalInterval".
	Field string
	// Message says what rule the value broke.
	Message string
}

// Error returns "leasefence: invalid client configuration: <Message>".
func (e *ConfigError) Error() string { return ErrInvalidConfig.Error() + ": " + e.Message }

// Unwrap returns ErrInvalidConfig.
func (e *ConfigError) Unwrap() error { return ErrInvalidConfig }

// ConfigurationRejectedError is a claim refused because its queue's lease
// policy in the database is one the client cannot keep safe: it breaks one
// of the rules of Config.Validate (Message says which) or a bound the client
// was given. It carries only bounded values: the queue name, the two
// settings and their durations, and the rule.
type ConfigurationRejectedError struct {
	// Queue is the queue whose policy was checked.
	Queue string
	// Setting is the policy's side, "lease duration" or "renewal interval".
	Setting string
	// Database is the value the claim got from the database's policy.
	Database time.Duration
	// ClientSetting is the client's side: "safety margin", "attempt
	// timeout", "renewal interval" or "lease duration" (the bound).
	ClientSetting string
	// Client is the client's value of ClientSetting.
	Client time.Duration
	// Message is the rule the pair breaks, one of the texts documented on
	// Config.Validate.
	Message string
}

// Error returns a one-line description with the queue, the rule and both
// values.
func (e *ConfigurationRejectedError) Error() string {
	return fmt.Sprintf("%s: queue %q: %s (%s %s in the database, %s %s in the client)",
		ErrConfigurationRejected, e.Queue, e.Message, e.Setting, e.Database, e.ClientSetting, e.Client)
}

// Unwrap returns ErrConfigurationRejected.
func (e *ConfigurationRejectedError) Unwrap() error { return ErrConfigurationRejected }

// RetryError is what a handler returns to have its job retried after Delay
// with a bounded ReasonCode (^[a-z][a-z0-9_]{0,62}$). Build it with RetryAfter.
type RetryError struct {
	// Delay is how long the job waits before it is claimable again (0 to 30 days).
	Delay time.Duration
	// ReasonCode is the bounded failure reason recorded on the job.
	ReasonCode string
	// Err is the handler's own error, if any. Error never includes its
	// text; a Worker logs it (see Logging in the package documentation).
	Err error
}

// RetryAfter returns a *RetryError: the worker loop calls retry_job with delay and
// reasonCode. err may be nil.
func RetryAfter(delay time.Duration, reasonCode string, err error) error {
	return &RetryError{Delay: delay, ReasonCode: reasonCode, Err: err}
}

// Error returns the reason code and delay (never the wrapped error's text).
func (e *RetryError) Error() string {
	return fmt.Sprintf("leasefence: retry job after %s (reason %s)", e.Delay, e.ReasonCode)
}

// Unwrap returns the handler's own error.
func (e *RetryError) Unwrap() error { return e.Err }

// PermanentError is what a handler returns to fail its job for good with a
// bounded ReasonCode. Build it with FailPermanently.
type PermanentError struct {
	// ReasonCode is the bounded failure reason recorded on the job.
	ReasonCode string
	// Err is the handler's own error, if any. Error never includes its
	// text; a Worker logs it (see Logging in the package documentation).
	Err error
}

// FailPermanently returns a *PermanentError: the worker loop calls fail_job with
// reasonCode. err may be nil.
func FailPermanently(reasonCode string, err error) error {
	return &PermanentError{ReasonCode: reasonCode, Err: err}
}

// Error returns the reason code (never the wrapped error's text).
func (e *PermanentError) Error() string {
	return "leasefence: fail job (reason " + e.ReasonCode + ")"
}

// Unwrap returns the handler's own error.
func (e *PermanentError) Unwrap() error { return e.Err }

// translateError is the one place a PostgreSQL SQLSTATE becomes a leasefence
// error. Errors without a project SQLSTATE come back unchanged.
func translateError(err error) error {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return err
	}
	var sentinel error
	switch pgErr.Code {
	case SQLStateStaleClaim:
		sentinel = ErrStaleClaim
	case SQLStateInvalidPolicy:
		sentinel = ErrInvalidPolicy
	case SQLStateInvalidArgument:
		sentinel = ErrInvalidArgument
	case SQLStatePermissionDenied:
		sentinel = ErrPermissionDenied
	case "42883", "3F000": // undefined_function, invalid_schema_name
		sentinel = ErrBundleMismatch
	default:
		return err
	}
	return &DatabaseError{Sentinel: sentinel, PgError: pgErr}
}
