package goclient

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"math"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// ApplicationName is the application_name every connection made by
// leasefence reports to PostgreSQL (pg_stat_activity shows it).
const ApplicationName = "leasefence"

// DefaultStatementTimeout is the statement_timeout ParsePoolConfig puts on
// connections when the caller passes zero.
const DefaultStatementTimeout = 30 * time.Second

// DefaultCommitTimeout is Config.CommitTimeout when it is zero.
const DefaultCommitTimeout = 5 * time.Second

// ownerPattern is the database's rule for worker_owner_id: the text of
// durable_jobs.worker_owner_id_pattern() (sql/functions/rules.sql;
// docs/sql-api.md). TestGoCopiesOfTheRulesEqualTheDatabaseRules keeps the two equal.
var ownerPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$`)

// DefaultSafetyMargin is Config.SafetyMargin when it is zero.
const DefaultSafetyMargin = 5 * time.Second

// DefaultMaxInFlightRenewals is Config.MaxInFlightRenewals when it is zero.
const DefaultMaxInFlightRenewals = 4

// renewalPoolFactor: Config.RenewalPoolSize defaults to this many times
// MaxInFlightRenewals.
const renewalPoolFactor = 4

// Config holds the settings of a Client. The zero value of every field
// means its default, so NewClient(pool, Config{}) is a working client: a
// 5 s safety margin and no lease bounds. The lease duration and renewal
// interval come from the database: each claim returns its queue's policy
// (set with `leasectl policy set`; the bundle's default policy '*' is a
// 30 s lease renewed every 10 s), and the client follows it, claim by
// claim, within the optional bounds LeaseDuration and RenewalInterval.
// NewClient checks the values with Validate and refuses an unsafe
// configuration; each claim's lease is checked with the same rules (see
// Validate).
type Config struct {
	// OwnerID is the worker's bounded identity, sent with every claim,
	// renewal and terminal write (^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$).
	// Defaults to "leasefence-" and 16 random hex digits, new per client.
	OwnerID string

	// LeaseDuration, when set, is the shortest lease the client accepts: a
	// claim whose queue policy grants a shorter lease is refused (released,
	// *ConfigurationRejectedError). Defaults to no bound: any lease the
	// policy grants that the safety rules allow.
	LeaseDuration time.Duration

	// RenewalInterval, when set, is the longest time the heartbeat waits
	// between renewals of a claim: each claim is renewed every
	// min(policy renewal interval, RenewalInterval). Defaults to no bound:
	// the policy's renewal interval, which each claim returns.
	RenewalInterval time.Duration

	// SafetyMargin is subtracted from every granted lease to get the local
	// trust deadline, to absorb scheduler jitter, clock-rate drift and the
	// time a handler needs to notice cancellation. It must fit inside the
	// policy's lease (see Validate). Defaults to DefaultSafetyMargin (5 s).
	SafetyMargin time.Duration

	// AttemptTimeout bounds the transaction of one renewal attempt: it is
	// the attempt's statement_timeout and its context deadline. (Getting a
	// connection for the attempt may take up to one renewal interval, never
	// past the trust deadline.) Defaults to half of each claim's renewal
	// interval.
	AttemptTimeout time.Duration

	// CommitTimeout bounds every COMMIT the client sends for a job: the
	// terminal transactions (Complete, Retry, Fail, a Worker's completion
	// and handler-error writes, a TxHandler's transaction), the release of
	// claims at shutdown and Close, and a Worker's probe. PostgreSQL's
	// statement_timeout does not cover a COMMIT's wait for a synchronous
	// standby, so without it a stalled standby holds a commit for ever. A
	// COMMIT that does not answer in time, or (on a pool made by
	// ParsePoolConfig or NewPool) answers with a WARNING, returns
	// ErrCommitTimeout: its outcome is unknown (see "Commit deadline" in
	// the package documentation). Defaults to DefaultCommitTimeout (5 s).
	CommitTimeout time.Duration

	// MaxInFlightRenewals is how many renewal calls the client has open at
	// once while they carry the renewals due in time: each answered within
	// its attempt timeout of when it fell due, at the measured call latency.
	// When they cannot (a slow or loaded database, many leases), the
	// heartbeat opens more, up to RenewalPoolSize, and comes back to this
	// many once they can. Defaults to DefaultMaxInFlightRenewals (4).
	MaxInFlightRenewals int

	// RenewalPoolSize is the size of the heartbeat's own connection pool
	// and the most renewal calls the client ever has open at once (see
	// MaxInFlightRenewals). It must not be smaller than
	// MaxInFlightRenewals; equal to it, the heartbeat never opens more
	// than MaxInFlightRenewals calls. Defaults to four times
	// MaxInFlightRenewals (16).
	RenewalPoolSize int

	// Observer receives the client's finite-cardinality signals.
	// Defaults to NopObserver.
	Observer Observer

	// Scheduler runs renewal attempts (tests set a controllable one).
	// Defaults to GoroutineScheduler.
	Scheduler Scheduler

	// Logger receives the client's and its workers' log records (what is
	// logged is listed under Logging in the package documentation; never
	// a token, payload or idempotency key). Defaults to a logger that
	// discards everything.
	Logger *slog.Logger

	// renewalPort is where renewal attempts go; the module's tests and
	// fault campaigns set one that wraps or replaces the database
	// (internal/leaseport). Defaults to newPgRenewalPort over the client's
	// own heartbeat pool (same connection settings as the pool given to
	// NewClient, RenewalPoolSize connections).
	renewalPort renewalPort

	// clock is the application wall clock, used only to compute the
	// database clock offset signal (the module's tests and fault campaign
	// set a skewed one through internal/leaseport). Defaults to
	// systemClock.
	clock clock
}

// The exact messages of ConfigError, one per rule.
const (
	msgNilPool                 = "pool must not be nil"
	msgOwnerIDFormat           = "owner id must match ^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$"
	msgLeaseNotPositive        = "lease duration must be greater than zero"
	msgIntervalNotPositive     = "renewal interval must be greater than zero"
	msgIntervalNotShorter      = "renewal interval must be shorter than the lease duration"
	msgMarginNotPositive       = "safety margin must be greater than zero"
	msgAttemptTimeoutNegative  = "attempt timeout must not be negative"
	msgCommitTimeoutNegative   = "commit timeout must not be negative"
	msgAttemptTimeoutTooLong   = "attempt timeout must be shorter than the renewal interval"
	msgInsufficientMargin      = "renewal interval plus attempt timeout plus safety margin must not exceed the lease duration"
	msgMaxInFlightNegative     = "max in-flight renewals must not be negative"
	msgRenewalPoolTooSmall     = "renewal pool size must not be smaller than max in-flight renewals"
	msgConcurrencyNegative     = "concurrency must not be negative"
	msgNoHandler               = "exactly one of Handler and TxHandler must be set"
	msgPollIntervalNegative    = "poll interval must not be negative"
	msgShutdownTimeoutNegative = "shutdown timeout must not be negative"
	msgLeaseBelowBound         = "lease duration must not be shorter than the client's LeaseDuration"
)

// withDefaults fills the fields whose zero value means "use the default".
func (c Config) withDefaults() Config {
	if c.OwnerID == "" {
		var b [8]byte
		_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on supported platforms
		c.OwnerID = "leasefence-" + hex.EncodeToString(b[:])
	}
	if c.SafetyMargin == 0 {
		c.SafetyMargin = DefaultSafetyMargin
	}
	if c.MaxInFlightRenewals == 0 {
		c.MaxInFlightRenewals = DefaultMaxInFlightRenewals
	}
	if c.RenewalPoolSize == 0 {
		c.RenewalPoolSize = c.MaxInFlightRenewals
		if c.MaxInFlightRenewals <= math.MaxInt32/renewalPoolFactor { // else it is the pool's size already
			c.RenewalPoolSize *= renewalPoolFactor
		}
	}
	if c.CommitTimeout == 0 {
		c.CommitTimeout = DefaultCommitTimeout
	}
	if c.clock == nil {
		c.clock = systemClock{}
	}
	if c.Observer == nil {
		c.Observer = NopObserver{}
	}
	if c.Scheduler == nil {
		c.Scheduler = GoroutineScheduler{}
	}
	if c.Logger == nil {
		c.Logger = discardLogger
	}
	return c
}

// Validate checks the configuration after defaults are applied and returns
// a *ConfigError (errors.Is ErrInvalidConfig) with one of these messages:
//
//	owner id must match ^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$
//	lease duration must be greater than zero               (negative)
//	renewal interval must be greater than zero             (negative)
//	safety margin must be greater than zero
//	attempt timeout must not be negative
//	commit timeout must not be negative
//	max in-flight renewals must not be negative
//	renewal pool size must not be smaller than max in-flight renewals (negative too)
//	renewal interval must be shorter than the lease duration (equal or longer)
//	attempt timeout must be shorter than the renewal interval
//	renewal interval plus attempt timeout plus safety margin must not exceed the lease duration
//
// A zero LeaseDuration or RenewalInterval is no bound: the claim's policy
// decides. The last three rules apply to the bounds that are set, and, at
// every claim, to the lease that claim got: its granted lease
// (lease_expires_at - database_time), its renewal interval (the policy's,
// or the RenewalInterval bound when shorter) and its attempt timeout
// (AttemptTimeout, or half that interval). A claim that breaks one of them,
// or whose lease is shorter than the LeaseDuration bound (lease duration
// must not be shorter than the client's LeaseDuration), is released and
// refused with a *ConfigurationRejectedError carrying the same message.
//
// The last rule is the safety-margin rule: the first renewal is sent one
// interval after the claim, may take up to one attempt timeout, and must be
// confirmed before the trust deadline, which is the lease minus the margin.
func (c Config) Validate() error {
	c = c.withDefaults()
	switch {
	case !ownerPattern.MatchString(c.OwnerID):
		return &ConfigError{Field: "OwnerID", Message: msgOwnerIDFormat}
	case c.LeaseDuration < 0:
		return &ConfigError{Field: "LeaseDuration", Message: msgLeaseNotPositive}
	case c.RenewalInterval < 0:
		return &ConfigError{Field: "RenewalInterval", Message: msgIntervalNotPositive}
	case c.SafetyMargin <= 0:
		return &ConfigError{Field: "SafetyMargin", Message: msgMarginNotPositive}
	case c.AttemptTimeout < 0:
		return &ConfigError{Field: "AttemptTimeout", Message: msgAttemptTimeoutNegative}
	case c.CommitTimeout < 0:
		return &ConfigError{Field: "CommitTimeout", Message: msgCommitTimeoutNegative}
	case c.MaxInFlightRenewals < 0:
		return &ConfigError{Field: "MaxInFlightRenewals", Message: msgMaxInFlightNegative}
	case c.RenewalPoolSize < c.MaxInFlightRenewals:
		return &ConfigError{Field: "RenewalPoolSize", Message: msgRenewalPoolTooSmall}
	case c.RenewalInterval == 0:
		return nil
	case c.LeaseDuration == 0:
		if c.AttemptTimeout >= c.RenewalInterval {
			return &ConfigError{Field: "AttemptTimeout", Message: msgAttemptTimeoutTooLong}
		}
		return nil
	}
	if field, msg := leaseRule(c.LeaseDuration, c.RenewalInterval, c.attemptTimeout(c.RenewalInterval), c.SafetyMargin); msg != "" {
		return &ConfigError{Field: field, Message: msg}
	}
	return nil
}

// attemptTimeout is the attempt timeout for a claim renewed every interval.
func (c Config) attemptTimeout(interval time.Duration) time.Duration {
	if c.AttemptTimeout > 0 {
		return c.AttemptTimeout
	}
	return interval / 2
}

// leaseRule checks one lease (a configured one, or a claim's) against the
// duration rules of Validate and returns the field and message of the first
// rule it breaks, or two empty strings. margin is positive and attempt not
// negative (Validate checks them first).
func leaseRule(lease, interval, attempt, margin time.Duration) (field, msg string) {
	switch {
	case lease <= 0:
		return "LeaseDuration", msgLeaseNotPositive
	case interval <= 0:
		return "RenewalInterval", msgIntervalNotPositive
	case interval >= lease:
		return "RenewalInterval", msgIntervalNotShorter
	case attempt >= interval:
		return "AttemptTimeout", msgAttemptTimeoutTooLong
	// interval + attempt + margin > lease, written so that nothing
	// overflows: the cases above make the lease minus the interval positive
	// and the attempt timeout smaller than the interval, so the difference
	// below lies within (-MaxInt64, MaxInt64), while the sum of three
	// durations can wrap to a small or negative one.
	case margin > lease-interval-attempt:
		return "RenewalInterval", msgInsufficientMargin
	}
	return "", ""
}

// leaseTerms are the lease settings of one claim: its queue's policy within
// the client's bounds.
type leaseTerms struct {
	// lease is the granted lease, lease_expires_at - database_time.
	lease time.Duration
	// interval is how often the heartbeat renews the claim.
	interval time.Duration
	// attemptTimeout bounds each renewal attempt's transaction.
	attemptTimeout time.Duration
}

// terms returns the lease settings of job, or the refusal of a policy the
// client cannot keep safe.
func (c Config) terms(job Job) (leaseTerms, *ConfigurationRejectedError) {
	t := leaseTerms{lease: job.leaseExpiresAt.Sub(job.databaseTime), interval: job.renewalInterval}
	if c.RenewalInterval > 0 && c.RenewalInterval < t.interval {
		t.interval = c.RenewalInterval
	}
	t.attemptTimeout = c.attemptTimeout(t.interval)
	rejected := func(setting string, database time.Duration, clientSetting string, client time.Duration, msg string) *ConfigurationRejectedError {
		return &ConfigurationRejectedError{Queue: job.claim.queue, Setting: setting, Database: database,
			ClientSetting: clientSetting, Client: client, Message: msg}
	}
	switch _, msg := leaseRule(t.lease, t.interval, t.attemptTimeout, c.SafetyMargin); msg {
	case "":
	case msgLeaseNotPositive, msgInsufficientMargin:
		return t, rejected("lease duration", t.lease, "safety margin", c.SafetyMargin, msg)
	case msgIntervalNotShorter:
		return t, rejected("lease duration", t.lease, "renewal interval", t.interval, msg)
	default: // msgIntervalNotPositive, msgAttemptTimeoutTooLong
		return t, rejected("renewal interval", t.interval, "attempt timeout", t.attemptTimeout, msg)
	}
	if t.lease < c.LeaseDuration {
		return t, rejected("lease duration", t.lease, "lease duration", c.LeaseDuration, msgLeaseBelowBound)
	}
	return t, nil
}

// Client is a fenced leasefence client over a pgx pool: it enqueues, claims,
// renews and finishes jobs through the SQL contract, and keeps claims alive
// with its heartbeat. A Client is safe for concurrent use. Close it when done.
type Client struct {
	// pool is the caller's pool; every call except renewals uses it.
	pool *pgxpool.Pool
	cfg  Config
	// heartbeatPool is the client's own pool for renewals, never shared
	// with handlers, sized RenewalPoolSize.
	heartbeatPool *pgxpool.Pool
	hb            *heartbeat
	// server is the address (host:port, or a socket path) of the server
	// the last claim or probe ran on, a string (noteServer; nil before the
	// first).
	server atomic.Value

	closeOnce sync.Once
	closed    chan struct{}
}

// NewClient returns a client over pool with cfg (Config{} for every
// default), or a *ConfigError when cfg is unsafe. It opens no connection yet; the heartbeat gets its own pool with
// the same connection settings (and so the same login role) as pool.
func NewClient(pool *pgxpool.Pool, cfg Config) (*Client, error) {
	if pool == nil {
		return nil, &ConfigError{Field: "pool", Message: msgNilPool}
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	hcfg := pool.Config()
	hcfg.MaxConns = int32(cfg.RenewalPoolSize)
	hcfg.MinConns, hcfg.MinIdleConns = 0, 0
	hcfg.ConnConfig.RuntimeParams["application_name"] = ApplicationName
	if cfg.AttemptTimeout > 0 {
		hcfg.ConnConfig.RuntimeParams["statement_timeout"] = millis(cfg.AttemptTimeout)
	}
	// NewWithConfig fails only for MaxConns < 1, which Validate rules out.
	heartbeatPool, _ := pgxpool.NewWithConfig(context.Background(), hcfg)
	port := cfg.renewalPort
	if port == nil {
		port = newPgRenewalPort(heartbeatPool, cfg.AttemptTimeout)
	}
	c := &Client{pool: pool, cfg: cfg, heartbeatPool: heartbeatPool, closed: make(chan struct{})}
	c.hb = newHeartbeat(heartbeatConfig{
		port:          port,
		observer:      cfg.Observer,
		clock:         cfg.clock,
		scheduler:     cfg.Scheduler,
		margin:        cfg.SafetyMargin,
		baseInFlight:  cfg.MaxInFlightRenewals,
		maxInFlight:   cfg.RenewalPoolSize,
		commitTimeout: cfg.CommitTimeout,
		releasePool:   pool,
		closePool:     heartbeatPool,
	})
	return c, nil
}

// Config returns the client's settings, defaults filled in: its OwnerID
// (the worker owner id sent with its claims) and its Logger (one that drops
// everything when Config.Logger was nil) among them.
func (c *Client) Config() Config { return c.cfg }

// Close stops the heartbeat, releases every claim it still keeps (their
// contexts are cancelled with cause ErrClosed), waits for every goroutine the
// client started and closes the heartbeat's pool. It does not close the pool
// given to NewClient. Calls after Close return ErrClosed. Close is idempotent.
func (c *Client) Close() error {
	c.closeOnce.Do(func() {
		close(c.closed)
		c.hb.close()
		c.heartbeatPool.Close()
	})
	return nil
}

// isClosed reports whether Close has begun.
func (c *Client) isClosed() bool {
	select {
	case <-c.closed:
		return true
	default:
		return false
	}
}

// defaultClaimTimeout bounds a worker's claim call when the client has no
// RenewalInterval bound: the bundle's default policy's renewal interval.
const defaultClaimTimeout = 10 * time.Second

// claimTimeout bounds one claim call of a worker: the RenewalInterval bound
// when set, else defaultClaimTimeout (the policy is not known before the
// claim returns it).
func (c *Client) claimTimeout() time.Duration {
	if c.cfg.RenewalInterval > 0 {
		return c.cfg.RenewalInterval
	}
	return defaultClaimTimeout
}

// DefaultPoolMaxConns is the least MaxConns of a pool made by
// ParsePoolConfig or NewPool from a connection string that sets no
// pool_max_conns: pgx alone would give the larger of 4 and the number of
// CPUs, too few on a small machine for a worker with a TxHandler and
// Concurrency 4 or more (it needs Concurrency + 1). A pool opens its
// connections only as it uses them, so the higher bound costs nothing
// unused.
const DefaultPoolMaxConns = 10

// ParsePoolConfig parses a PostgreSQL URL or keyword/value string into a pool
// configuration whose connections report application_name "leasefence" and
// carry statement_timeout (DefaultStatementTimeout when zero). Its
// OnNotice handler lets the client see a COMMIT that answers with a
// WARNING (a cancelled wait for a synchronous standby) and report it as
// ErrCommitTimeout; a pool made otherwise reads such a COMMIT as
// confirmed. Without pool_max_conns in connString, its MaxConns is at
// least DefaultPoolMaxConns; with it, exactly what it says.
func ParsePoolConfig(connString string, statementTimeout time.Duration) (*pgxpool.Config, error) {
	cfg, err := pgxpool.ParseConfig(connString)
	if err != nil {
		return nil, err
	}
	if !strings.Contains(connString, "pool_max_conns") {
		cfg.MaxConns = max(cfg.MaxConns, DefaultPoolMaxConns)
	}
	if statementTimeout <= 0 {
		statementTimeout = DefaultStatementTimeout
	}
	cfg.ConnConfig.RuntimeParams["application_name"] = ApplicationName
	cfg.ConnConfig.RuntimeParams["statement_timeout"] = millis(statementTimeout)
	cfg.ConnConfig.OnNotice = noteWarning
	return cfg, nil
}

// NewPool opens a pool from connString with ParsePoolConfig's settings.
func NewPool(ctx context.Context, connString string, statementTimeout time.Duration) (*pgxpool.Pool, error) {
	cfg, err := ParsePoolConfig(connString, statementTimeout)
	if err != nil {
		return nil, err
	}
	return pgxpool.NewWithConfig(ctx, cfg)
}

// millis formats d as a PostgreSQL duration in whole milliseconds (at least 1).
func millis(d time.Duration) string {
	ms := d.Milliseconds()
	if ms < 1 {
		ms = 1
	}
	return strconv.FormatInt(ms, 10) + "ms"
}
