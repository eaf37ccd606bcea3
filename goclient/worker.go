package goclient

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Handler runs one job. It must return when ctx is cancelled: that is the
// client telling it the claim is no longer trusted. Its result decides the
// job's terminal transition: nil completes the job, a *RetryError (Retry)
// retries it after its delay, a *PermanentError (Fail) fails it, and any
// other error (or a panic) retries it after WorkerConfig.RetryDelay with
// reason code "handler_error" ("handler_panic").
type Handler func(ctx context.Context, job Job) error

// TxHandler is a Handler that writes its target rows in tx, the transaction
// in which the worker then calls complete_job: the target writes and the
// SUCCEEDED transition commit together, or neither does (a stale claim rolls
// both back). tx is only for the handler's writes; do not commit it.
type TxHandler func(ctx context.Context, tx pgx.Tx, job Job) error

// Reason codes the worker records for handler errors that carry none.
const (
	// ReasonHandlerError is recorded when a handler returns a plain error.
	ReasonHandlerError = "handler_error"
	// ReasonHandlerPanic is recorded when a handler panics.
	ReasonHandlerPanic = "handler_panic"
)

// Worker defaults.
const (
	// DefaultPollInterval is the longest an idle worker waits between
	// claims (a notification or a job falling due wakes it sooner).
	DefaultPollInterval = time.Second
	// DefaultShutdownTimeout is how long Run waits for in-flight handlers
	// after its context is cancelled, before it cancels them.
	DefaultShutdownTimeout = 10 * time.Second
)

// msgPoolTooSmallForTxHandler is the format of the ConfigError message of
// NewWorker for a TxHandler worker whose pool cannot hold one transaction
// per running job and one claim at the same time: the pool's MaxConns, the
// Concurrency, the size needed (twice) and the fix.
const msgPoolTooSmallForTxHandler = "pool MaxConns is %d, and a TxHandler with Concurrency %d needs at least %d " +
	"(one connection per running job's transaction and one to claim with): set pool_max_conns=%d or more " +
	"in the connection string (or MaxConns in the pool's config), or lower Concurrency"

// WorkerConfig configures a Worker. Queue and exactly one of Handler and
// TxHandler are required.
type WorkerConfig struct {
	// Queue is the queue the worker claims from.
	Queue string
	// Handler runs each job (set this or TxHandler).
	Handler Handler
	// TxHandler runs each job inside the completing transaction (set this or Handler).
	TxHandler TxHandler
	// Concurrency is how many handlers run at once. Default: 1.
	//
	// A Handler's job frees its slot when the handler returns nil: its
	// completion is then made by the worker's completer (with the jobs that
	// finish close together, one complete_jobs transaction), and the claim
	// stays held, renewed by the heartbeat and fenced as before, until that
	// completion commits or finds the claim stale. At most Concurrency
	// completions are pending at once (a handler that returns while
	// Concurrency are keeps its slot until one ends), so a worker holds at
	// most 2 x Concurrency claims: Concurrency running and Concurrency
	// awaiting their completion. A handler's error (a retry or a failure,
	// each written in a transaction of its own) and a TxHandler (completed
	// in its own transaction) keep the slot until the write ends.
	//
	// A TxHandler holds one connection of the client's pool for as long as
	// it runs (its transaction), so with a TxHandler the pool's MaxConns
	// must be at least Concurrency + 1, the extra one for claiming; NewWorker
	// refuses a smaller pool, and its error gives the pool's size and the
	// size needed. A pool made by NewPool without pool_max_conns holds
	// DefaultPoolMaxConns (10), enough up to Concurrency 9. The worker also claims no more jobs than the
	// pool has connections free at that moment (others may use the pool
	// too), so it never holds a claim it cannot start. For example, with
	// Concurrency 8 and a TxHandler, give the pool MaxConns 9 (or more, if
	// the program uses it for other work); the heartbeat adds its own pool
	// of Config.RenewalPoolSize connections (default 16), so one such
	// process opens at most 9 + 16 = 25 connections as its login role.
	Concurrency int
	// PollInterval is the longest the worker waits after a claim found
	// less work than it had room for: it claims sooner when its wake-up
	// listener hears that the queue has work, or when the queue's next job
	// falls due (see Wake-ups in the package documentation). It is also
	// how often the worker polls when notifications cannot reach it.
	// Default: DefaultPollInterval.
	PollInterval time.Duration
	// ShutdownTimeout is how long Run lets in-flight handlers finish after
	// its context is cancelled. Default: DefaultShutdownTimeout.
	ShutdownTimeout time.Duration
	// RetryDelay gives the retry delay for a handler error that is not a
	// *RetryError. Default: 1 s doubled per attempt, at most 1 h.
	RetryDelay func(attempt int) time.Duration
}

// Worker claims jobs of one queue and runs them with bounded concurrency,
// each under a Lease that the client's heartbeat keeps alive.
type Worker struct {
	c   *Client
	cfg WorkerConfig

	mu     sync.Mutex
	leases map[*Lease]struct{} // every claim the worker holds: running or awaiting its completion
	wake   chan struct{}
	// awaiting counts the claims in leases whose handler returned and whose
	// completion the completer admitted and has not ended yet (guarded by
	// mu): they hold no worker slot. The completer admits at most
	// Concurrency at once: a handler that returns while Concurrency
	// completions are pending keeps its slot until a completion
	// transaction ends (completionsMoved).
	awaiting int
	// txConns counts the TxHandler transactions that hold a pool connection
	// now (room subtracts the jobs still waiting for one).
	txConns atomic.Int64

	// completions batches the completions of Handler jobs that finish
	// close together (batch_completion.go).
	completions *completer

	// arrived wakes the claim loop when the wake-up listener heard that
	// the queue has work (wakeup.go).
	arrived chan struct{}
	// connectListener opens the wake-up listener's connection
	// (pgx.ConnectConfig; tests replace it), and listenProbeTimeout bounds
	// the wait for its probe notification.
	connectListener    func(context.Context, *pgx.ConnConfig) (*pgx.Conn, error)
	listenProbeTimeout time.Duration

	// avail is Config.Observer when it is an AvailabilityObserver.
	avail AvailabilityObserver
	// down is why the worker stopped claiming ("" while it claims), and
	// said the reason it last logged during that outage; guarded by mu.
	down, said UnavailableReason
}

// NewWorker returns a worker of c, or a *ConfigError with one of these
// messages:
//
//	exactly one of Handler and TxHandler must be set
//	concurrency must not be negative          (zero means 1)
//	poll interval must not be negative
//	shutdown timeout must not be negative
//	pool MaxConns is M, and a TxHandler with Concurrency C needs at least C+1 (...): set pool_max_conns=C+1 or more ...
//
// NewPool's pools hold at least DefaultPoolMaxConns connections unless
// the connection string sets pool_max_conns, so a TxHandler worker of
// Concurrency up to 9 needs no sizing of its own.
func (c *Client) NewWorker(cfg WorkerConfig) (*Worker, error) {
	switch {
	case (cfg.Handler == nil) == (cfg.TxHandler == nil):
		return nil, &ConfigError{Field: "Handler", Message: msgNoHandler}
	case cfg.Concurrency < 0:
		return nil, &ConfigError{Field: "Concurrency", Message: msgConcurrencyNegative}
	case cfg.PollInterval < 0:
		return nil, &ConfigError{Field: "PollInterval", Message: msgPollIntervalNegative}
	case cfg.ShutdownTimeout < 0:
		return nil, &ConfigError{Field: "ShutdownTimeout", Message: msgShutdownTimeoutNegative}
	}
	if cfg.Concurrency == 0 {
		cfg.Concurrency = 1
	}
	if size := int(c.pool.Config().MaxConns); cfg.TxHandler != nil && size < cfg.Concurrency+1 {
		return nil, &ConfigError{Field: "Concurrency", Message: fmt.Sprintf(msgPoolTooSmallForTxHandler,
			size, cfg.Concurrency, cfg.Concurrency+1, cfg.Concurrency+1)}
	}
	if cfg.PollInterval == 0 {
		cfg.PollInterval = DefaultPollInterval
	}
	if cfg.ShutdownTimeout == 0 {
		cfg.ShutdownTimeout = DefaultShutdownTimeout
	}
	if cfg.RetryDelay == nil {
		cfg.RetryDelay = defaultRetryDelay
	}
	avail, ok := c.cfg.Observer.(AvailabilityObserver)
	if !ok {
		avail = NopObserver{}
	}
	w := &Worker{c: c, cfg: cfg, leases: make(map[*Lease]struct{}), wake: make(chan struct{}, 1),
		arrived: make(chan struct{}, 1), connectListener: pgx.ConnectConfig, listenProbeTimeout: listenProbeTimeout,
		completions: newCompleter(c), avail: avail}
	w.completions.limit, w.completions.moved = cfg.Concurrency, w.completionsMoved
	return w, nil
}

// defaultRetryDelay is 1 s doubled per attempt, at most 1 h.
func defaultRetryDelay(attempt int) time.Duration {
	return min(time.Second<<min(max(attempt-1, 0), 12), time.Hour)
}

// Run claims and runs jobs until ctx is cancelled, then shuts down
// gracefully: it stops claiming, waits up to ShutdownTimeout for in-flight
// handlers and the completions still pending (see WorkerConfig.Concurrency),
// then releases the claims of those not done (their contexts are cancelled
// with ErrLeaseReleased; a pending completion then writes nothing) and waits
// for them to return. Every heartbeat of the worker's leases has stopped
// when Run returns.
//
// Run returns nil after a shutdown by ctx. It stops early, with the same
// shutdown, and returns the error when claiming fails for a reason that
// retrying cannot fix: a configuration rejection, a database error with a
// project or privilege SQLSTATE (a malformed queue name, a missing role), or
// ErrClosed. Other claim errors (a lost connection) open the worker's
// breaker, as failed commits do (see "Database unavailable" in the package
// documentation): the worker stops claiming and probes every PollInterval
// until a probe commits. Run keeps running through such an outage; when
// ctx ends while it lasts, Run returns an error matching
// ErrDatabaseUnavailable, never nil.
func (w *Worker) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	base := context.WithoutCancel(ctx)
	lctx, stopListening := context.WithCancel(ctx)
	listening := make(chan struct{})
	go func() {
		defer close(listening)
		w.listen(lctx)
	}()
	err := w.claimLoop(ctx, base, &wg)
	stopListening()
	<-listening
	queue := slog.String("queue_name", w.cfg.Queue)
	if err != nil {
		w.log(slog.LevelInfo, "leasefence: worker stopping", queue, slog.String("error", err.Error()))
	} else {
		w.log(slog.LevelInfo, "leasefence: worker stopping", queue)
	}
	w.shutdown(base, &wg)
	if reason := w.unavailable(); err == nil && reason != "" {
		err = fmt.Errorf("%w (%s)", ErrDatabaseUnavailable, reason)
	}
	w.log(slog.LevelInfo, "leasefence: worker stopped", queue)
	return err
}

// log writes one record to the worker's logger.
func (w *Worker) log(level slog.Level, msg string, attrs ...slog.Attr) {
	w.c.cfg.Logger.LogAttrs(context.Background(), level, msg, attrs...)
}

// logClaim writes one record about claim at level, its attributes made
// only when the logger takes the record (two of these go with every job).
func (w *Worker) logClaim(level slog.Level, msg string, claim Claim) {
	if w.c.cfg.Logger.Enabled(context.Background(), level) {
		w.log(level, msg, claimAttr(claim))
	}
}

// claimBatchDivisor: woken by a finished job, the worker claims only once
// at least Concurrency/claimBatchDivisor slots are free (or when its poll
// interval passes without a wake), so that a busy worker claims for many
// slots in one claim_next_jobs call instead of one call per finished job.
const claimBatchDivisor = 10

// claimLoop claims while there is room, until ctx ends or claiming fails
// for good. Every claim is for all the free slots (room), never more.
func (w *Worker) claimLoop(ctx, base context.Context, wg *sync.WaitGroup) error {
	poll := time.NewTimer(0)
	defer poll.Stop()
	woken := false
	// notified: the loop was woken by the wake-up listener; quietUntil: a
	// claim so woken found nothing, so the next one so woken waits until
	// then (any login may NOTIFY the channel: this bounds the claims a
	// stranger's notifications cause to one per wakeCooldown).
	notified := false
	var quietUntil time.Time
	// stuck is the wait after a claim that got nothing although a job is
	// due now (another session holds its row): minDueWait at first,
	// doubled each time in a row, at most PollInterval.
	stuck := minDueWait
	for {
		if w.unavailable() != "" {
			w.probe(base)
		}
		wait := w.cfg.PollInterval
		if free := w.room(); free > 0 && w.unavailable() == "" && (!woken || free >= w.cfg.Concurrency/claimBatchDivisor) {
			if quiet := time.Until(quietUntil); notified && quiet > 0 {
				time.Sleep(quiet)
			}
			// The claim itself is not cut short by ctx: a claim that commits
			// after its caller gave up would leave a job nobody runs.
			cctx, cancel := context.WithTimeout(base, w.c.claimTimeout())
			jobs, due, known, err := w.c.claimForWorker(cctx, w.cfg.Queue, free)
			cancel()
			if notified && len(jobs) == 0 {
				quietUntil = time.Now().Add(wakeCooldown)
			}
			notified = false
			if len(jobs) > 0 || !known || due > 0 {
				stuck = minDueWait
			}
			if known && due < wait {
				// The next job falls due before the poll: wake then (never
				// later than the poll, even when the poll is under
				// minDueWait).
				wait = min(wait, max(due, stuck))
			}
			if len(jobs) == 0 && known && due == 0 {
				stuck = min(2*stuck, w.cfg.PollInterval)
			}
			var dbErr *DatabaseError
			if errors.As(err, &dbErr) || errors.Is(err, ErrConfigurationRejected) || errors.Is(err, ErrClosed) {
				return err
			}
			if err != nil {
				w.log(slog.LevelWarn, "leasefence: claim failed, retrying",
					slog.String("queue_name", w.cfg.Queue), slog.String("error", err.Error()))
				w.setUnavailable(unavailableReason(err))
			}
			for _, job := range jobs {
				w.seeTimeline(job.claim.timeline(), w.c.lastServer())
				w.start(base, job, wg)
			}
			if len(jobs) > 0 {
				// Let the jobs just started run before counting the free
				// slots again: handlers that return at once free theirs
				// first, and the next claim asks for them too instead of
				// leaving them to a claim of their own. A yield, no wait.
				runtime.Gosched()
			}
			// A claim that got jobs is followed by another at once, for the
			// room left: jobs that committed during the claim (an enqueue
			// that did not notify because another transaction of the queue
			// was notifying, migration 027) start now, not at the next poll.
			if len(jobs) > 0 && ctx.Err() == nil {
				continue
			}
		}
		poll.Reset(wait)
		woken = false
		select {
		case <-ctx.Done():
			return nil
		case <-poll.C:
		case <-w.arrived:
			notified = true
		case <-w.wake:
			woken = true
		}
	}
}

// probe sends one transaction that writes WAL (sqlProbe; its COMMIT
// bounded by the commit timeout), so it waits for a synchronous standby as
// a terminal write does; when it commits, the worker claims again.
//
// A probe that fails for another reason than the one the worker last
// logged says so once; a probe that commits on another server than the
// worker's last claim ran on (a multi-host URL after a failover) logs the
// server it reconnected to.
func (w *Worker) probe(base context.Context) {
	ctx, cancel := context.WithTimeout(base, w.c.claimTimeout())
	defer cancel()
	var server, previous string
	var timeline int64
	err := withConn(ctx, w.c.pool, func(conn *pgxpool.Conn) error {
		server, previous = w.c.noteServer(conn)
		return inConnTx(ctx, conn, pgx.TxOptions{}, w.c.cfg.CommitTimeout, probeCall(&timeline).queue, nil)
	})
	if err != nil {
		w.setUnavailable(unavailableReason(err))
		return
	}
	w.mu.Lock()
	w.down, w.said = "", ""
	w.mu.Unlock()
	queue := slog.String("queue_name", w.cfg.Queue)
	if !w.seeTimeline(timeline, server) && previous != "" && previous != server {
		w.log(slog.LevelWarn, "leasefence: reconnected to another server", queue,
			slog.String("server", server), slog.String("previous_server", previous))
	}
	w.log(slog.LevelInfo, "leasefence: database available: claims resumed", queue)
	w.avail.DatabaseAvailable()
}

// seeTimeline takes in a WAL timeline the worker saw on server (a claim's,
// a probe's) and logs a failover when it is above the highest the client
// had seen (none is logged for the first). It reports whether it logged.
func (w *Worker) seeTimeline(timeline int64, server string) bool {
	previous, raised := w.c.hb.raiseTimeline(timeline)
	if !raised || previous == 0 {
		return false
	}
	w.log(slog.LevelWarn, "leasefence: failover: the database is on a new timeline",
		slog.String("queue_name", w.cfg.Queue), slog.Int64("timeline", timeline),
		slog.Int64("previous_timeline", previous), slog.String("server", server))
	return true
}

// setUnavailable opens the breaker: the worker stops claiming until a
// probe commits. Only the first reason of an outage is signalled; no
// reason ("") leaves the breaker as it is.
//
// While the breaker is open, a failure for another reason than the one
// last logged (a connection lost while paused for a commit timeout, a
// probe that times out after connections were refused) is logged once
// ("database still unavailable"); the Observer is not told again.
func (w *Worker) setUnavailable(reason UnavailableReason) {
	if reason == "" {
		return
	}
	w.mu.Lock()
	first, changed := w.down == "", reason != w.said
	if first {
		w.down = reason
	}
	w.said = reason
	w.mu.Unlock()
	queue, why := slog.String("queue_name", w.cfg.Queue), slog.String("reason", string(reason))
	switch {
	case first:
		w.log(slog.LevelWarn, "leasefence: database unavailable: claims paused", queue, why)
		w.avail.DatabaseUnavailable(reason)
	case changed:
		w.log(slog.LevelWarn, "leasefence: database still unavailable", queue, why)
	}
}

// terminalUnavailable is the breaker's reason for a terminal write's
// answer err: none for a success, a stale claim or an abandoned lease
// (the database answered), else unavailableReason's.
func terminalUnavailable(err error) UnavailableReason {
	if err == nil || errors.Is(err, ErrStaleClaim) || errors.Is(err, errAbandoned) {
		return ""
	}
	return unavailableReason(err)
}

// unavailable is why the worker stopped claiming, "" while it claims.
func (w *Worker) unavailable() UnavailableReason {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.down
}

// room is how many jobs the worker may claim now: its free concurrency
// slots and, with a TxHandler, no more than the pool's free connections
// (each started job's transaction takes one).
func (w *Worker) room() int {
	free := w.cfg.Concurrency - w.active()
	if w.cfg.TxHandler != nil {
		// Jobs started whose transaction holds no connection yet will take
		// one; every race here counts a connection twice, never not at all.
		stat := w.c.pool.Stat()
		waiting := w.active() - int(w.txConns.Load())
		free = min(free, int(stat.MaxConns()-stat.AcquiredConns())-waiting)
	}
	return free
}

// active returns the number of worker slots taken: the claims held less
// those awaiting their completion.
func (w *Worker) active() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.leases) - w.awaiting
}

// signal wakes the claim loop: a worker slot is free.
func (w *Worker) signal() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// completionsMoved is told by the completer, in the order it made them,
// of the completions one transaction finished (their claims leave leases:
// committed, stale or abandoned, each answered) and of how many it
// admitted (their claims count as awaiting their completion, not running:
// their worker slots are free, and the claim loop is woken once for all of
// them). The claims stay in leases, on the heartbeat, until their
// completion ends. The completer calls it with its own lock held, and
// nothing takes the completer's lock with mu held.
//
// A finished completion whose answer says the database is unavailable (a
// COMMIT past its deadline, a lost connection) opens the breaker here,
// before the slots admitted with it are freed: else the claim loop could
// claim into them before the completion's own goroutine opens it.
func (w *Worker) completionsMoved(finished []*completion, admitted int) {
	for _, r := range finished {
		if reason := terminalUnavailable(r.err); reason != "" {
			w.setUnavailable(reason)
		}
	}
	w.mu.Lock()
	for _, r := range finished {
		delete(w.leases, r.lease)
	}
	w.awaiting += admitted - len(finished)
	w.mu.Unlock()
	if admitted > 0 {
		w.signal()
	}
}

// start runs job on a new goroutine under a new lease. A job claimed after
// shutdown began is released by shutdown like any other in-flight job.
func (w *Worker) start(base context.Context, job Job, wg *sync.WaitGroup) {
	lease := w.c.hb.add(base, job, w.c.cfg.Logger)
	w.logClaim(slog.LevelInfo, "leasefence: job claimed", job.claim)
	w.mu.Lock()
	w.leases[lease] = struct{}{}
	w.mu.Unlock()
	wg.Add(1)
	go func() {
		defer wg.Done()
		// A completion made by the completer has left leases already
		// (completionsMoved).
		if completed := w.process(base, lease, job); !completed {
			w.mu.Lock()
			delete(w.leases, lease)
			w.mu.Unlock()
		}
		w.signal()
	}()
}

// shutdown waits for in-flight jobs up to ShutdownTimeout, then releases
// the claims of those still running and waits for their handlers.
func (w *Worker) shutdown(base context.Context, wg *sync.WaitGroup) {
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	timer := time.NewTimer(w.cfg.ShutdownTimeout)
	defer timer.Stop()
	select {
	case <-done:
		return
	case <-timer.C:
	}
	w.mu.Lock()
	abandoned := make([]*Lease, 0, len(w.leases))
	for l := range w.leases {
		abandoned = append(abandoned, l)
	}
	w.mu.Unlock()
	w.log(slog.LevelWarn, "leasefence: releasing claims at shutdown",
		slog.String("queue_name", w.cfg.Queue), slog.Int("abandoned_jobs", len(abandoned)))
	// Every heartbeat stops and every handler's context is cancelled
	// first (as Lease.Release does), then the claims are released in one
	// round trip: release_job_claims (migration 023), one call per 1,000
	// claims, the calls in one pipelined batch on one connection
	// (releaseClaims). A failed release leaves the claims to
	// lapse at their expiry; the heartbeats have stopped either way.
	// Each lease still live counts one loss once the database answered:
	// stale when its release answered false, else released.
	claims := make([]Claim, len(abandoned))
	live := make([]bool, len(abandoned))
	var timeout time.Duration
	for i, l := range abandoned {
		live[i] = l.end(ErrLeaseReleased)
		claims[i] = l.claim
		timeout = max(timeout, l.terms.attemptTimeout)
	}
	// The release's implicit transaction commits within the commit timeout.
	rctx, cancel := context.WithTimeout(base, timeout+w.c.cfg.CommitTimeout)
	defer cancel()
	for i, stale := range releaseClaims(rctx, w.c.pool, claims) {
		if live[i] {
			w.c.cfg.Observer.OwnershipLost(claims[i].queue, releaseCause(stale))
		}
	}
	<-done
}

// handlerError marks an error that came from the handler, not from a
// terminal write.
type handlerError struct{ err error }

// Error returns the handler's own error text (it stays inside the process).
func (e *handlerError) Error() string { return e.err.Error() }

// errAbandoned: the lease ended before the terminal write, so none is made.
var errAbandoned = errors.New("leasefence: lease ended before the terminal write")

// process runs one job and makes its terminal write. It reports whether
// the completer made that write (a Handler that returned nil): the
// completer then freed the job's slot when it admitted the completion and
// dropped its claim from leases when the completion ended
// (completionsMoved).
func (w *Worker) process(base context.Context, lease *Lease, job Job) (completed bool) {
	ctx := lease.Context()
	// Terminal writes outlive the lease context (the database fences them
	// anyway): they run under base, the parent of every lease context (Run's
	// context without its cancellation; the same values), each bounded by
	// the claim's lease duration from when it starts.
	bg := base
	var err error
	if w.cfg.TxHandler != nil {
		err = w.runTx(ctx, bg, lease, job)
		// A transaction that lost its connection is run again under the
		// same claim once the heartbeat confirms the claim is still live
		// (after a synchronous failover, on the new primary).
		var lost *lostConnError
		for rerun := 1; errors.As(err, &lost) && rerun <= maxTxReruns; rerun++ {
			w.setUnavailable(UnavailableConnectionLost)
			w.log(slog.LevelWarn, "leasefence: transaction lost its connection, waiting for the next renewal",
				claimAttr(job.claim), slog.String("error", lost.Error()))
			if !lease.awaitRenewal() {
				// No handler error: the lease ended while the database
				// did not answer, and nothing is written.
				err = errAbandoned
				break
			}
			w.log(slog.LevelInfo, "leasefence: claim still live, running the job again under the same claim",
				claimAttr(job.claim), slog.Int("rerun", rerun))
			err = w.runTx(ctx, bg, lease, job)
		}
	} else if herr := w.protect(job, func() error { return w.cfg.Handler(ctx, job) }); herr != nil {
		err = &handlerError{herr}
	} else {
		completed = true
		err = w.completions.complete(bg, lease, job.claim)
	}
	var he *handlerError
	// outcome logs the terminal transition of a handler error once its
	// transaction committed; a completion is logged without it.
	var outcome func()
	cancelled := false
	if errors.As(err, &he) {
		// A handler that stopped because its lease ended (its context was
		// cancelled: the job was cancelled, the claim went stale or its
		// trust deadline passed, the worker is shutting down) did not fail:
		// it was cancelled, for the reason the lease gives, and nothing is
		// written (one line says both).
		if cancelled = lease.Err() != nil && errors.Is(he.err, context.Canceled); cancelled {
			w.log(slog.LevelWarn, "leasefence: handler cancelled: the lease ended", claimAttr(job.claim),
				slog.String("cause", lease.endCause()))
		} else {
			w.log(slog.LevelWarn, "leasefence: handler returned an error", claimAttr(job.claim),
				slog.String("error", handlerErrorText(he.err)))
			err = w.c.writeTx(bg, lease, func(b *pgx.Batch) { outcome = w.failure(b, job.claim, he.err) })
		}
	}
	switch {
	case cancelled:
		// Logged above: nothing was written.
	case err == nil && outcome != nil:
		outcome()
	case err == nil:
		w.logClaim(slog.LevelInfo, "leasefence: job completed", job.claim)
	case errors.Is(err, ErrStaleClaim):
		w.log(slog.LevelWarn, "leasefence: terminal write refused: stale claim", claimAttr(job.claim),
			slog.String("error", err.Error()))
		lease.lose(LossStale, ErrStaleClaim)
	case errors.Is(err, errAbandoned):
		w.log(slog.LevelWarn, "leasefence: lease ended before the terminal write", claimAttr(job.claim),
			slog.String("cause", lease.endCause()))
	default:
		w.log(slog.LevelError, "leasefence: terminal write failed", claimAttr(job.claim),
			slog.String("error", err.Error()))
		w.setUnavailable(terminalUnavailable(err))
	}
	// Any other failed terminal write stops the heartbeat too: the claim then
	// lapses at its expiry and a reclaim uses up an attempt, so a job whose
	// terminal write keeps failing cannot loop forever.
	lease.Stop()
	return completed
}

// maxTxReruns bounds how often a TxHandler job whose transaction lost its
// connection runs again under the same claim.
const maxTxReruns = 3

// lostConnError is a TxHandler transaction that failed because its
// connection was lost: not a Retry or Fail the handler chose, not a
// deadline, not an answer of the database on a live connection.
type lostConnError struct{ err error }

// Error returns the underlying error's text.
func (e *lostConnError) Error() string { return e.err.Error() }

// Unwrap returns the underlying error (a *handlerError, or the terminal
// write's).
func (e *lostConnError) Unwrap() error { return e.err }

// runTx runs the TxHandler and complete_job in one transaction whose
// COMMIT is bounded by the commit timeout. A failure that closed the
// transaction's connection comes back as a *lostConnError.
func (w *Worker) runTx(ctx, bg context.Context, lease *Lease, job Job) error {
	return w.c.inTx(bg, nil, func(tx pgx.Tx) error {
		w.txConns.Add(1)
		defer w.txConns.Add(-1)
		var err error
		if herr := w.protect(job, func() error { return w.cfg.TxHandler(ctx, tx, job) }); herr != nil {
			err = &handlerError{herr}
		} else {
			tctx, cancel := context.WithTimeout(bg, lease.terms.lease)
			defer cancel()
			err = stopAfter(lease, func() error { return completeJob(tctx, tx, job.claim, nil) })
		}
		var retry *RetryError
		var permanent *PermanentError
		if err != nil && tx.Conn().IsClosed() && !errors.As(err, &retry) && !errors.As(err, &permanent) &&
			!errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
			return &lostConnError{err}
		}
		return err
	})
}

// writeTx makes the terminal write that write queues in a transaction of
// its own, bounded by the claim's lease duration, its COMMIT by the commit
// timeout: nothing, and errAbandoned, once the lease has ended; else the
// write goes out with the BEGIN, and the heartbeat stops after the write
// succeeded, before the commit (as stopAfter does).
func (c *Client) writeTx(bg context.Context, lease *Lease, write func(*pgx.Batch)) error {
	if lease.Err() != nil {
		return errAbandoned
	}
	tctx, cancel := context.WithTimeout(bg, lease.terms.lease)
	defer cancel()
	return c.inTx(tctx, write, func(pgx.Tx) error {
		lease.Stop()
		return nil
	})
}

// stopAfter makes a terminal write while the lease is still trusted and
// stops the heartbeat after it succeeded, before the transaction commits.
func stopAfter(lease *Lease, write func() error) error {
	if lease.Err() != nil {
		return errAbandoned
	}
	if err := write(); err != nil {
		return err
	}
	lease.Stop()
	return nil
}

// protect runs a handler, turning a panic into a retry.
func (w *Worker) protect(job Job, run func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			w.log(slog.LevelError, "leasefence: handler panicked", claimAttr(job.claim), slog.String("panic", panicText(r)))
			err = RetryAfter(w.cfg.RetryDelay(job.Attempt()), ReasonHandlerPanic, nil)
		}
	}()
	return run()
}

// failure queues in b the terminal write for a handler error and returns
// the function that logs it once the transaction has committed.
func (w *Worker) failure(b *pgx.Batch, claim Claim, herr error) func() {
	var permanent *PermanentError
	if errors.As(herr, &permanent) {
		failJobCall(claim, permanent.ReasonCode).queue(b)
		return func() {
			w.log(slog.LevelWarn, "leasefence: job failed", claimAttr(claim), slog.String("reason_code", permanent.ReasonCode))
		}
	}
	retry := &RetryError{Delay: w.cfg.RetryDelay(claim.attempt), ReasonCode: ReasonHandlerError}
	errors.As(herr, &retry)
	var status JobStatus // read when the batch is closed, before the commit
	retryJobCall(claim, retry.Delay, retry.ReasonCode, &status).queue(b)
	return func() {
		w.log(slog.LevelWarn, "leasefence: job retry scheduled", claimAttr(claim), slog.String("reason_code", retry.ReasonCode),
			slog.Duration("retry_delay", retry.Delay), slog.String("job_status", string(status)))
	}
}

// handlerErrorText is what the worker logs for a handler's error: the
// error a Retry or Fail wraps (its own Error hides it), else the error's
// text.
func handlerErrorText(herr error) string {
	var retry *RetryError
	var permanent *PermanentError
	switch {
	case errors.As(herr, &retry) && retry.Err != nil:
		return retry.Err.Error()
	case errors.As(herr, &permanent) && permanent.Err != nil:
		return permanent.Err.Error()
	}
	return herr.Error()
}
