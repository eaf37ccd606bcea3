// Package goclient is the Go driver of leasefence: a thin, fenced client over
// the PostgreSQL functions of the leasefence bundle, a heartbeat that keeps
// healthy claims alive and gives them up the moment they are no longer
// safe, and a worker loop that runs your handlers under that guarantee.
//
// # Overview
//
// PostgreSQL is the only authority. A job is claimed by claim_next_job, which
// returns a secret claim token once; every renewal and every terminal write
// presents the job id, the token and the worker's owner id together, and the
// database refuses any of them whose claim is no longer the live one. The
// client never decides on its own that a lease is valid: it only decides,
// conservatively, when to stop trusting one.
//
// A worker needs three things: a pool whose login role is a member of
// durable_job_worker, a client, and a handler. The lease settings live in one
// place, the queue's policy in the database (`leasectl policy set`); each
// claim returns them and the client follows them:
//
//	pool, err := goclient.NewPool(ctx, workerURL, 0) // application_name "leasefence", statement_timeout 30 s
//	client, err := goclient.NewClient(pool, goclient.Config{}) // 5 s safety margin; lease and interval from each claim
//	defer client.Close()
//
//	worker, err := client.NewWorker(goclient.WorkerConfig{
//		Queue:       "etl.orders",
//		Concurrency: 4,
//		Handler: func(ctx context.Context, job goclient.Job) error {
//			return load(ctx, job.Payload()) // stop when ctx is cancelled
//		},
//	})
//	err = worker.Run(ctx) // until ctx is cancelled, then a graceful shutdown
//
// Producers (role durable_job_producer) call Enqueue (or EnqueueMany for up
// to MaxBatchJobs jobs of one queue in one call, or EnqueueTx inside their
// own transaction) on a client of their own. Everything else that claims
// nothing is an Admin's: Cancel, State and Replay of one job, the policy
// and evidence calls and the health, backlog (QueueBacklog) and totals
// reads, with no heartbeat, no goroutine and no pool of its own. A Client
// has none of them; make an Admin over the same pool, or over a pool of an
// operator or auditor login:
//
//	pool, err := goclient.NewPool(ctx, auditorURL, 0)
//	admin, err := goclient.NewAdmin(pool) // nothing to Close but the pool
//	health, err := admin.LeaseHealth(ctx) // one statement on pool
//
// prommetrics' DatabaseCollector takes an Admin.
//
// # State Model
//
// A job moves through these states; only the database moves it:
//
//	          Enqueue
//	             |
//	             v
//	+-----> QUEUED / RETRY_SCHEDULED ----Cancel----> CANCELLED
//	|            |  Claim (run-after reached)           ^
//	|            |   \--policy the client cannot keep: released at once --> QUEUED
//	|            v                                      |
//	|         RUNNING ----Complete---> SUCCEEDED        |
//	| Release    |  \----Fail-------> FAILED           |
//	+------------+   \---Retry------> RETRY_SCHEDULED   |
//	             |        (FAILED when attempts are used up)
//	             +--lease expires, another Claim reclaims--> RUNNING (new token, attempt + 1)
//	             +--Cancel-------------------------------------+
//
//	Replay: FAILED / CANCELLED --> QUEUED
//
// On the client side, each claim you Keep is a Lease with three states,
// renewed on its own claim's schedule (the policy's renewal interval at
// claim time, or the client's bound when shorter):
//
//	renewing --renewal_disabled--> disabled (no more renewals)
//	   |                              |
//	   +------------+-----------------+
//	                v
//	             ended: stale | trust deadline passed | released | closed |
//	                    stopped after the terminal write | parent context done
//
// The lease's Context is cancelled when it ends; context.Cause says why.
//
// # Fencing
//
// Every write the database owns is fenced: it succeeds only if, inside the
// same statement, the job is RUNNING, the token's digest, the owner id and
// the claiming login role match, and the lease has not expired by the
// database's clock_timestamp(). A terminal write whose claim is stale raises
// SQLSTATE LF001 (ErrStaleClaim) and aborts its transaction, so with
// CompleteTx (or a Worker with a TxHandler) your target writes and the
// SUCCEEDED transition commit together or not at all:
//
//	tx, _ := pool.Begin(ctx)
//	tx.Exec(ctx, `INSERT INTO target ...`)
//	err := client.CompleteTx(ctx, tx, job.Claim(), nil) // ErrStaleClaim: roll back
//	tx.Commit(ctx)
//
// For effects outside this database (a warehouse, a file, an API) the
// database cannot roll back, pass Job.FencingGeneration along: it strictly
// increases with every claim of the job, so the sink can refuse a write that
// carries an older generation than one it has already seen.
//
// The claim token is a secret. Claim and Job keep it (and the owner id, and
// the payload) out of String, GoString, every fmt verb, JSON and slog; they
// print "[REDACTED]" instead.
//
// # Heartbeat and the trust formula
//
// Keep (and the Worker, for every job it runs) hands the claim to the
// client's heartbeat. The heartbeat runs on its own goroutine and timers and
// its own connection pool, never on a handler's, so a handler that hogs its
// goroutine or holds every connection of your pool cannot delay a renewal.
// Each claim is renewed on its own schedule: every renewal interval of its
// claim (Job.RenewalInterval: the queue policy's at claim time, or
// Config.RenewalInterval when that bound is shorter), so claims of queues
// with different policies, or claimed before and after a policy change, are
// each kept by their own terms. Each renewal attempt is one short
// transaction: SET LOCAL statement_timeout to the claim's attempt timeout
// (Config.AttemptTimeout, default half the claim's interval; the shortest
// of a batch), one renew_job_leases call, COMMIT, all under a context with
// the same deadline (getting its connection first may take up to one
// interval, never past the trust deadline); the BEGIN, the SET LOCAL and
// the call go out together, so an attempt is two round trips, as a
// completion is (see Commit deadline).
// Renewals that fall due within a tenth of the interval of each other go out
// in one call (at most 1,000 claims); none is sent later than its own
// schedule. Config.MaxInFlightRenewals calls are open at once while they
// carry the renewals due in time: each answered within its attempt timeout
// of when it fell due, at the measured call latency (a longer call raises
// the measure at once, a shorter one lowers it gradually). When they cannot
// (a slow or loaded database, many leases), the heartbeat opens more calls,
// as many as the due claims need, never more than Config.RenewalPoolSize
// (the size of its pool), and comes back to MaxInFlightRenewals once the
// calls are fast again. This changes only how many calls are open, never
// the trust deadline.
//
// The database answers with lease_expires_at and database_time, both on its
// own clock. The client turns them into a local deadline on the monotonic
// clock, measured from the moment the attempt was sent:
//
//	granted      = lease_expires_at - database_time
//	trustedUntil = attemptSentAt + granted - safetyMargin
//
// The database decided at or after attemptSentAt, so attemptSentAt + granted
// is never later than the real expiry; the margin absorbs clock-rate drift,
// scheduler jitter and the time your handler needs to notice cancellation.
// The application's wall clock plays no part: skew it by hours
// and nothing changes except the database clock offset signal.
//
// # Failure Handling
//
//	database answer / event         what the client does
//	------------------------------  ---------------------------------------------------
//	claim of a policy the client    release the claim at once, run no handler, return a
//	cannot keep safe                *ConfigurationRejectedError (queue, rule, both values)
//	renewed                         move trustedUntil forward, renew again in one interval
//	stale                           stop at once, cancel the lease context (ErrStaleClaim)
//	renewal_disabled                stop renewing; the claim runs to its granted expiry,
//	                                then the trust deadline cancels it
//	error, timeout, failover        a failed attempt, never a success: retry with backoff
//	                                (interval/10, doubling, at most half the time left)
//	no confirmation by trustedUntil fail closed: cancel the context (ErrTrustDeadlinePassed)
//	an answer after trustedUntil    too late, whatever it says: fail closed
//	terminal write refused (LF001)  the transaction, target writes included, rolls back
//	Close / worker shutdown         cancel the context (ErrClosed / ErrLeaseReleased) and
//	                                release the claim so another worker can take it at once
//	COMMIT not answered within      ErrCommitTimeout: outcome unknown, assumed neither way;
//	CommitTimeout, or answered      the server is asked to stop waiting; a Worker stops
//	with a WARNING                  claiming (commit_timeout) until a probe commits
//	claim or transaction fails on   a Worker stops claiming (connection_lost, timeout) and
//	a lost connection or timeout    probes every PollInterval; claims resume when one commits
//	TxHandler transaction lost its  wait for the heartbeat's next renewal: renewed, run the
//	connection (not RetryAfter or   job again under the same claim (at most 3 times); the
//	FailPermanently)                lease ends first: nothing is written
//
// A Worker maps its handler's result to the terminal transition: nil
// completes the job; RetryAfter(delay, reason, err) retries it;
// FailPermanently(reason, err) fails it (both only build the result: the
// worker writes it); any other error or a panic retries it after
// WorkerConfig.RetryDelay with reason "handler_error" or "handler_panic".
// Once the lease has ended the worker writes nothing. A terminal write that fails for another reason
// stops the heartbeat, and the claim lapses at its expiry.
//
// # Commit deadline
//
// Every COMMIT the client sends for a job has a client-side deadline,
// Config.CommitTimeout (default 5 s): Complete, Retry and Fail, a Worker's
// completions (complete_job, or complete_jobs for a batch) and handler-error
// writes, a TxHandler's transaction, a renewal attempt (within its attempt
// timeout), the release of claims at shutdown and Close, and a Worker's
// probe. PostgreSQL's statement_timeout does not cover a COMMIT's wait for
// a synchronous standby, so a stalled standby would otherwise hold the
// commit, and the worker, for ever. When the deadline passes, the call
// returns ErrCommitTimeout and the client asks the server to stop waiting
// (a cancel request), so the backend and its row locks are freed.
//
// Each of these transactions that makes one function call (all but a
// TxHandler's, whose BEGIN goes first and alone, and the release, one
// implicit transaction of one round trip: release_job_claims calls of up
// to 1,000 claims each, since migration 023) takes two round trips: its BEGIN
// goes out in one batch with the call (pgx's Batch.BeginTx), and the
// COMMIT is sent alone once the call has answered, so the deadline bounds
// the COMMIT and nothing else. A call that fails (LF001 and the other
// SQLSTATEs, each its typed error as always) is rolled back, as on any
// other error; a terminal write whose lease has already ended sends
// nothing at all.
//
// The outcome of such a COMMIT is unknown: it may have committed on this
// primary ("already committed locally" is what PostgreSQL says when the
// wait is cancelled, and a COMMIT that answers with that WARNING is treated
// the same way), not at all, or on a primary a failover then lost. The
// client assumes neither success nor failure. The lease's heartbeat has
// stopped (the terminal write was made), so the claim is either finished in
// the database (a renewal would come back stale) or lapses at its expiry
// and is claimed again, its target writes gone with it; a job whose
// completion's outcome is unknown may so run again, which the fencing
// generation makes safe for external sinks. The same holds after a lost
// connection during COMMIT.
//
// # Database unavailable
//
// A Worker stops claiming while its commits do not come back: when a
// terminal write's COMMIT passes its deadline (commit_timeout), or a claim
// or a job's transaction fails on a lost connection (connection_lost) or
// runs out of time (timeout). A claim made then would wait unstarted, and
// one whose answer is lost uses an attempt for nothing (until the first
// deadline passes, the bound on pending completions, below, bounds the
// claims a stall lets through). Instead it sends a
// probe every PollInterval: a transaction that writes WAL (a transactional
// logical decoding message) and so waits for a synchronous standby as a
// completion does, with the commit deadline. When a probe commits, the
// worker claims again. The worker says so in its log, and to
// Config.Observer when that implements AvailabilityObserver
// (DatabaseUnavailable(reason) once per outage, DatabaseAvailable when it
// ends; prommetrics exports leasefence_database_unavailable{reason}), so an
// operator can tell a failover or a stalled standby from lost workers. A
// database that answers with an ERROR is there: such a failure opens no
// breaker. Run keeps running through an outage; stopped during one, it
// returns an error matching ErrDatabaseUnavailable.
//
// A TxHandler's transaction that fails because its connection was lost (a
// failover, a cut network; not a RetryAfter or FailPermanently the handler returned, not a
// deadline, not an ERROR on a live connection) is no handler error: the
// worker waits for the heartbeat's next confirmed renewal of the claim and,
// when the database answers renewed (after a synchronous failover, the new
// primary), runs the handler again under the same claim, at most three
// times; when the lease ends first (stale, trust deadline), nothing is
// written, as for any lost lease. No attempt is used for the failover.
//
// Handler jobs that finish close together are completed together: the first
// to finish completes its job at once (yielding once first, so that
// handlers already runnable, such as the others of its claim when they
// are quick, join it), and the jobs that finish while that
// transaction runs go in the next one, a single complete_jobs call
// (migration 008), like a database's group commit. Each job's answer is the
// one a completion of its own would get: when one claim of such a batch is
// stale (complete_jobs then completes none), each is completed alone with
// complete_job. TxHandler jobs are completed in their own transaction, as
// always.
//
// A Handler's job frees its worker slot (WorkerConfig.Concurrency) when the
// handler returns nil, as River's executor does, not when its completion
// commits: the claim stays held, renewed by the heartbeat and fenced as
// before, until the completion commits or finds it stale, and the worker
// meanwhile runs the next job. Completions pending are bounded by
// Concurrency too (a handler that returns while Concurrency are pending
// keeps its slot until a completion transaction ends; those that waited
// are then admitted together, as many as the transaction freed, their
// slots freed at once, and they make the next transaction), so a worker
// holds at most 2 x Concurrency claims, and during a commit stall it claims at most that many before its
// first completion's deadline opens the breaker. A retry or failure the
// handler returned, and a TxHandler job, keep the slot until their own
// transaction ends. Run's shutdown waits for pending completions as for
// running handlers.
//
// # Configuration
//
// The lease settings are set in one place: the queue's policy in the
// database (set_queue_lease_policy, `leasectl policy set`). Every claim
// returns its granted lease (lease_expires_at - database_time) and the
// policy's renewal interval, and the client keeps that claim by them. The
// client's own settings are its SafetyMargin, AttemptTimeout and two
// optional bounds: RenewalInterval (renew at least this often: each claim
// is renewed every min(policy interval, bound)) and LeaseDuration (accept no
// shorter lease); most programs need neither. There is one constructor,
// NewClient(pool, Config), and the zero value of every Config field means
// its default (each field's documentation names it), so
// NewClient(pool, Config{}) is a working client with a 5 s safety margin.
//
// Config.Validate refuses unsafe settings with exact messages (listed in
// its documentation; ConfigError.Field names the setting): a negative
// lease or interval bound, a negative margin, a negative attempt timeout,
// and, for the bounds that are set, an
// interval not shorter than the lease, an attempt timeout not shorter than
// the interval, and an interval that leaves no room for one attempt and
// the margin (interval + attempt timeout + margin > lease). At every claim
// the client checks the claim's lease by the same rules and messages (a zero
// lease or interval included) and by its LeaseDuration bound: a policy the
// client cannot keep safe is a configuration rejection (a
// *ConfigurationRejectedError, errors.Is ErrConfigurationRejected, that
// names the queue, the rule and both values, for example the policy's lease
// and the client's safety margin), counted and returned; the claim is
// released at once, not left to expire, and a Worker runs no handler for it
// and stops with that error. A policy that differs from the bounds but is
// safe is simply followed.
//
// # Pool sizing
//
// A TxHandler holds one connection of the client's pool for as long as it
// runs, so a TxHandler worker needs a pool of at least Concurrency + 1
// connections (the extra one claims). A pool from NewPool or
// ParsePoolConfig whose connection string sets no pool_max_conns holds
// DefaultPoolMaxConns (10) whatever the number of CPUs, enough up to
// Concurrency 9. NewWorker refuses a smaller pool with the sizes and the
// fix ("pool MaxConns is 4, and a TxHandler with Concurrency 4 needs at
// least 5 (...): set pool_max_conns=5 or more in the connection string (or
// MaxConns in the pool's config), or lower Concurrency", ConfigError.Field
// "Concurrency"), and the worker never claims more jobs than
// the pool has connections free, so no claim waits unstarted while its
// lease runs. A worked example: Concurrency 8 with a TxHandler needs
// MaxConns 9; the heartbeat opens its own pool of RenewalPoolSize
// connections (default 16, four times MaxInFlightRenewals; 4 of them while
// the database keeps up) as the same login, so each such process uses at
// most 25 connections, and three replicas 75 of the server's
// max_connections:
//
//	cfg, err := goclient.ParsePoolConfig(workerURL, 0)
//	cfg.MaxConns = 8 + 1
//	pool, err := pgxpool.NewWithConfig(ctx, cfg)
//	client, err := goclient.NewClient(pool, goclient.Config{})
//	worker, err := client.NewWorker(goclient.WorkerConfig{Queue: "etl.orders", Concurrency: 8, TxHandler: load})
//
// A Handler holds no connection while it runs (each terminal write takes
// one briefly), so any pool size works, and waiting for a connection only
// delays the write within its lease.
//
// # Observability
//
// An Observer receives finite-cardinality signals: renewal outcomes, claims,
// ownership losses with their cause, configuration rejections, scheduler
// lag, safety margin remaining, the database clock offset and renewals in
// flight; an Observer that also implements AvailabilityObserver receives
// the workers' "database unavailable" signal. Their only labels are the
// queue name and enumerated values.
// Package goclient/prommetrics exports them to Prometheus.
//
// # Logging
//
// A Client and its Workers write to an optional *slog.Logger
// (Config.Logger). By default they log nothing. Every message starts with "leasefence: " and
// carries the job's public fields as the group "claim" (job_record_id,
// queue_name, lease_fencing_generation, attempt_number, and
// lease_claim_token "[REDACTED]"). No record ever carries a claim token, a
// payload, an idempotency key or a token digest. The error text a handler
// returns is logged (attribute "error"; for RetryAfter and FailPermanently,
// the error they wrap), so keep payload values and secrets out of your handlers' errors.
//
//	level  message                                             attributes besides "claim"
//	INFO   leasefence: job claimed
//	INFO   leasefence: job completed
//	WARN   leasefence: handler returned an error               error
//	WARN   leasefence: handler cancelled: the lease ended      cause (why the lease ended, see below)
//	ERROR  leasefence: handler panicked                        panic (the recovered value)
//	WARN   leasefence: job retry scheduled                     reason_code, retry_delay, job_status
//	WARN   leasefence: job failed                              reason_code
//	WARN   leasefence: terminal write refused: stale claim     error (LF001; the transaction rolled back)
//	WARN   leasefence: lease ended before the terminal write   cause (nothing was written)
//	WARN   leasefence: lease lost                              cause (the heartbeat stopped trusting the claim)
//	ERROR  leasefence: terminal write failed                   error (the claim lapses at its expiry)
//	WARN   leasefence: transaction lost its connection,        error
//	       waiting for the next renewal
//	INFO   leasefence: claim still live, running the job       rerun (1 to 3)
//	       again under the same claim
//	WARN   leasefence: claim failed, retrying                  queue_name, error (no "claim")
//	WARN   leasefence: database unavailable: claims paused     queue_name, reason (no "claim")
//	WARN   leasefence: database still unavailable              queue_name, reason (no "claim"; a new reason while paused)
//	WARN   leasefence: failover: the database is on a new      queue_name, timeline, previous_timeline, server
//	       timeline                                            (no "claim"; once per promotion the worker sees)
//	WARN   leasefence: reconnected to another server           queue_name, server, previous_server (no "claim")
//	INFO   leasefence: database available: claims resumed      queue_name (no "claim")
//	DEBUG  leasefence: listening for new jobs                  queue_name (no "claim")
//	WARN   leasefence: wake-up listener lost, polling until    queue_name, error (no "claim"; once per outage)
//	       it is back
//	INFO   leasefence: wake-up listener back                   queue_name (no "claim")
//	WARN   leasefence: LISTEN gets no notifications on this    queue_name, poll_interval (no "claim"; once)
//	       connection (a pooler in transaction mode?): the
//	       worker polls every PollInterval
//	INFO   leasefence: worker stopping                         queue_name, error when claiming failed for good
//	WARN   leasefence: releasing claims at shutdown            queue_name, abandoned_jobs
//	INFO   leasefence: worker stopped                          queue_name
//
// A lease that ends before the job's terminal write is logged with a
// bounded "cause", never an error text: "stale" (the database answered that
// the claim is no longer live: an operator cancelled the running job, with
// leasectl jobs cancel, or another worker took the expired claim over),
// "failover" (the database answered stale for a claim made on an earlier
// WAL timeline than one the client's workers have seen since: the claim
// was made before a promotion, and a failover lost it or it ended after
// one), "database_unavailable" (the trust deadline passed while renewal
// attempts failed), "trust_deadline" (it passed although no attempt
// failed: none answered in time), "released" (given up at shutdown),
// "closed" (Client.Close) and "cancelled" (the context the lease was kept
// under ended). The heartbeat
// logs "lease lost" once when it stops trusting a claim itself (a stale
// renewal, the trust deadline; causes "stale", "failover",
// "database_unavailable", "trust_deadline"), to the worker's logger for a
// worker's claims. A handler that returns an error matching
// context.Canceled after its lease ended is logged as cancelled, not as an
// error, with the same cause, in one line (no terminal write follows, and
// no "lease ended before the terminal write" line); a TxHandler job whose
// transaction lost its connection and whose lease then ended before a
// renewal was confirmed is logged as "lease ended before the terminal
// write" with the cause: neither is a handler error.
//
// While a worker has stopped claiming, a failure for another reason than
// the one it last logged (a connection lost while paused for a commit
// timeout, a probe that times out) is logged once as "database still
// unavailable"; the Observer is told of the outage once. A worker knows
// the database's WAL timeline without a query of its own: every claim's
// fencing generation is at least its timeline's floor (claim_next_jobs),
// and the probe that ends an outage reads it from the position of the WAL
// it writes. When the timeline rises the worker logs the failover once,
// with the new and previous timeline and the address of the server it now
// uses ("server": host:port or a socket path). When the probe that ends
// an outage commits on another server than the worker's last claim but on
// the same timeline (a multi-host URL whose first host was unreachable),
// it logs the reconnect and both addresses.
//
// # Wake-ups
//
// An idle Worker does not wait out its PollInterval for new work: the
// bundle (migration 027) NOTIFYs a queue's wake-up channel when one of its
// jobs becomes claimable, and each Worker LISTENs there on a connection of
// its own, opened with the pool's settings but outside the pool (one more
// connection per worker), so a job on an idle queue starts a few
// milliseconds after its enqueue commits. Each claim of a worker also reads
// how long until the queue's next job falls due (queue_next_due_in, in the
// same round trip and transaction), and a worker that found less work than
// it had room for sleeps that long when it is shorter than PollInterval
// (at least 20 ms): a job with a run_after or a retry delay starts when it
// falls due. A notification carries nothing but its channel, which is
// derived from a hash of the queue's name (see the threat model, T18).
//
// Polling stays: whatever happens to the listener, the worker claims every
// PollInterval. A listener whose connection drops connects again after
// 100 ms, doubling up to 10 s, and wakes the worker when it is back (work
// may have come meanwhile). Before it listens, it sends itself a
// notification from the pool; when that does not arrive within 5 s (behind
// PgBouncer in transaction pooling LISTEN cannot work) the worker logs so
// once and only polls. A claim woken by a notification that found nothing
// makes the next one so woken wait 50 ms (any login may NOTIFY the
// channel), and a claim that got jobs is followed by another at once for
// the room left.
//
// # Typed payloads
//
// JSONHandler and JSONTxHandler decode each job's payload into a Go type
// before your function runs. A payload that does not decode fails the job
// (FAILED, reason code "payload_decode_failed", ReasonPayloadDecodeFailed)
// without calling your function, and the worker logs the decode error,
// which names the Go type, the field and the offset but never a value from
// the payload:
//
//	type order struct {
//		OrderID int64   `json:"order_id"`
//		Total   float64 `json:"total"`
//	}
//	worker, err := client.NewWorker(goclient.WorkerConfig{
//		Queue: "etl.orders",
//		TxHandler: goclient.JSONTxHandler(func(ctx context.Context, tx pgx.Tx, job goclient.Job, o order) error {
//			_, err := tx.Exec(ctx, `INSERT INTO order_totals VALUES ($1, $2)`, o.OrderID, o.Total)
//			return err
//		}),
//	})
//
// The SQL functions the client calls, with their arguments, SQLSTATEs,
// locks and roles, are documented in docs/sql-api.md of the repository.
//
// # Ports and adapters
//
// Renewals go through a narrow port (input: the exact claims; output:
// renewed / stale / renewal_disabled with the database's expiry and time, no
// payload) whose only public adapter is PostgreSQL; the module's own tests,
// benchmarks and fault campaign wrap it to inject faults, through a hook
// that is not part of the public API.
// Renewal attempts run on a Scheduler; GoroutineScheduler is the default and
// an embedding application can supply its own bounded executor.
//
// All SQL text lives in three port files: port_pg.go (producer, claim,
// renewal and terminal calls), port_admin.go (operator and auditor calls:
// policy, deployment evidence, lease health, control evidence) and
// port_operator.go (the operator's job views and recorded changes:
// retention, change control, proposals, erasure). Each statement calls one
// function of the leasefence bundle and is written once, as a constant
// directly above the one helper or method that runs it; no other file of
// this package holds SQL.
package goclient
