package goclient

import (
	"container/heap"
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

const (
	// coalesceFraction: renewals due within interval/coalesceFraction of the
	// earliest due one (interval: that claim's renewal interval) go out in
	// the same renew_job_leases call.
	coalesceFraction = 10
	// maxRenewalBatch is renew_job_leases' limit of claims per call.
	maxRenewalBatch = 1000
	// retryFraction: the first retry after a failed attempt waits the
	// claim's renewal interval/retryFraction; each further one doubles, up
	// to one interval, and never past half the time left before the trust
	// deadline.
	retryFraction = 10
)

// RenewalLocked is the answer of renew_job_leases for a claim whose job row
// another transaction holds locked (a completion in progress, a cancel):
// nothing was renewed and nothing is known about ownership. The heartbeat
// never reads it as lost: it renews that claim again at once, alone, with
// renew_job_lease, which waits for the lock within the attempt timeout,
// while the rest of the batch keeps its own answers. It is not reported to
// the Observer: the claim's next attempt reports its outcome.
const RenewalLocked RenewalOutcome = "locked"

// errRenewalResultCount is a failed attempt whose port answered with a
// different number of results than claims it was given.
var errRenewalResultCount = errors.New("leasefence: renewal port returned a result count that does not match its input")

// leaseState is where a Lease is in its life.
type leaseState int

const (
	// leaseRenewing: the heartbeat renews the claim on schedule.
	leaseRenewing leaseState = iota
	// leaseDisabled: the database answered renewal_disabled; no more
	// renewals, the claim is trusted until its trust deadline.
	leaseDisabled
	// leaseEnded: stopped, lost or released; its context is cancelled.
	leaseEnded
)

// Lease is a claim the client's heartbeat keeps alive. Its Context is the
// context to run the job's work under: it is cancelled the moment the client
// stops trusting the claim (context.Cause says why: ErrStaleClaim,
// ErrTrustDeadlinePassed, ErrLeaseReleased, ErrClosed), when the parent
// context given to Keep is cancelled, and by Stop. Call Stop once the job's
// terminal write is done, or Release to give the claim up.
type Lease struct {
	hb     *heartbeat
	claim  Claim
	ctx    context.Context
	cancel context.CancelCauseFunc
	// terms are the claim's lease, renewal interval and attempt timeout:
	// each lease is renewed on its own claim's schedule.
	terms leaseTerms

	// Guarded by hb.mu.
	state        leaseState
	cause        error
	trustedUntil time.Time // monotonic: sentAt + granted - SafetyMargin
	nextDue      time.Time // monotonic: last confirmed attempt's sentAt + terms.interval
	failures     int
	solo         bool          // renewed alone (renew_job_lease) until renewed again: its row was locked
	renewed      chan struct{} // closed by the first renewal sent after renewedSince (awaitRenewal)
	renewedSince time.Time
	index        int // position in hb.queue, -1 when not queued
	trustTimer   *time.Timer
	stopWatch    func() bool // stops the watch of the parent context (add); nil when there is none
	// why is the bounded cause the heartbeat logged when it lost the
	// claim ("" when the lease ended otherwise); guarded by hb.mu.
	why string
	// logger receives the heartbeat's "lease lost" record of this lease:
	// the client's logger, or the worker's that keeps it.
	logger *slog.Logger
}

// Keep starts renewing job's claim on the heartbeat and returns its Lease.
// The first trust deadline counts from the moment the claim call was sent:
// sentAt + (lease_expires_at - database_time) - SafetyMargin. After Close,
// Keep returns a lease that has already ended with ErrClosed.
func (c *Client) Keep(parent context.Context, job Job) *Lease {
	return c.hb.add(parent, job, c.cfg.Logger)
}

// Context returns the context that is cancelled when the lease ends.
func (l *Lease) Context() context.Context { return l.ctx }

// endCause is why the lease ended, as one bounded log cause (see Logging
// in the package documentation): the cause the heartbeat logged when it
// lost the claim, else stale, released, closed or stopped by its error,
// and cancelled when its parent context was cancelled; "" while it is held.
func (l *Lease) endCause() string {
	l.hb.mu.Lock()
	defer l.hb.mu.Unlock()
	switch {
	case l.why != "":
		return l.why
	case l.cause == nil:
		return ""
	case errors.Is(l.cause, ErrStaleClaim):
		return causeStale
	case errors.Is(l.cause, ErrTrustDeadlinePassed):
		return causeTrustDeadline
	case errors.Is(l.cause, ErrLeaseReleased):
		return causeReleased
	case errors.Is(l.cause, ErrClosed):
		return causeClosed
	case errors.Is(l.cause, ErrLeaseStopped):
		return causeStopped
	}
	return causeCancelled
}

// Err returns nil while the lease is held, and then why it ended.
func (l *Lease) Err() error {
	l.hb.mu.Lock()
	defer l.hb.mu.Unlock()
	return l.cause
}

// TrustedFor returns how long the client still trusts the claim without a
// further confirmed renewal (negative once the trust deadline has passed).
func (l *Lease) TrustedFor() time.Duration {
	l.hb.mu.Lock()
	defer l.hb.mu.Unlock()
	return time.Until(l.trustedUntil)
}

// RenewalDisabled reports whether the database answered renewal_disabled:
// the heartbeat has stopped renewing and the claim runs out at its expiry.
func (l *Lease) RenewalDisabled() bool {
	l.hb.mu.Lock()
	defer l.hb.mu.Unlock()
	return l.state == leaseDisabled
}

// lose ends the lease as an ownership loss with cause (counted once).
func (l *Lease) lose(cause LossCause, err error) {
	l.hb.mu.Lock()
	defer l.hb.mu.Unlock()
	l.hb.loseLocked(l, cause, err)
}

// awaitRenewal waits for the heartbeat's next confirmed renewal of l sent
// from now on (the claim is still live in the database) and reports true,
// or false when the lease ends first.
func (l *Lease) awaitRenewal() bool {
	l.hb.mu.Lock()
	ch := make(chan struct{})
	l.renewed, l.renewedSince = ch, time.Now()
	l.hb.mu.Unlock()
	select {
	case <-ch:
		return true
	case <-l.ctx.Done():
		return false
	}
}

// Stop stops renewing and cancels the lease's context with ErrLeaseStopped.
// Call it once the job's terminal write (Complete, Retry, Fail) is done. The
// claim itself is left as it is. Stop is idempotent.
func (l *Lease) Stop() {
	l.hb.mu.Lock()
	defer l.hb.mu.Unlock()
	l.hb.endLocked(l, ErrLeaseStopped)
}

// Release stops renewing, cancels the lease's context with ErrLeaseReleased
// and gives the claim up (release_job_claim), so another worker can claim
// the job at once. It returns false when the claim was already stale. A
// lease that was still live counts one OwnershipLost: LossStale when the
// database answered false (the claim had been lost unnoticed), else
// LossReleased.
func (l *Lease) Release(ctx context.Context) (bool, error) {
	live := l.end(ErrLeaseReleased)
	released, err := releaseClaim(ctx, l.hb.releasePool, l.claim)
	if live {
		l.hb.obs.OwnershipLost(l.claim.queue, releaseCause(err == nil && !released))
	}
	return released, err
}

// end ends the lease with cause without counting a loss (a release counts
// it once the database has answered) and reports whether it was still live.
func (l *Lease) end(cause error) bool {
	l.hb.mu.Lock()
	defer l.hb.mu.Unlock()
	return l.hb.endLocked(l, cause)
}

// releaseCause is the loss a release of a live lease counts: LossStale when
// the database answered that the claim was already stale, else LossReleased
// (given up, or a failed release that leaves the claim to lapse).
func releaseCause(stale bool) LossCause {
	if stale {
		return LossStale
	}
	return LossReleased
}

// heartbeatConfig is everything a heartbeat needs, given when it is made:
// the heartbeat holds no reference to the Client that made it.
type heartbeatConfig struct {
	// port renews the claims.
	port renewalPort
	// observer is told about renewals, losses and the scheduler.
	observer Observer
	// clock is the application's wall clock, for the clock offset signal.
	clock clock
	// scheduler runs each renewal attempt.
	scheduler Scheduler
	// margin is the safety margin taken off every granted lease.
	margin time.Duration
	// baseInFlight is how many renewal calls are open at once while
	// they carry the renewals due within their attempt timeout.
	baseInFlight int
	// maxInFlight bounds the renewal calls open at once when they do not
	// (the heartbeat pool's size).
	maxInFlight int
	// commitTimeout bounds the commit of the releases at close.
	commitTimeout time.Duration
	// releasePool is the caller's pool, on which a Lease's Release runs.
	releasePool *pgxpool.Pool
	// closePool is the heartbeat's own pool, on which close releases the
	// claims it still keeps.
	closePool *pgxpool.Pool
}

// heartbeat schedules the renewals of one client on its own goroutine and
// timers, never on a handler's.
type heartbeat struct {
	port          renewalPort
	obs           Observer
	clock         clock
	sched         Scheduler
	margin        time.Duration
	baseInFlight  int
	maxInFlight   int
	commitTimeout time.Duration
	releasePool   *pgxpool.Pool
	closePool     *pgxpool.Pool

	// timeline is the highest WAL timeline a worker of the client has
	// seen, in its claims' generations and its probes (raiseTimeline); 0
	// before the first.
	timeline atomic.Int64

	// attempts is cancelled by close, so an open attempt ends at once.
	attempts       context.Context
	cancelAttempts context.CancelFunc

	mu       sync.Mutex
	queue    leaseHeap
	live     map[*Lease]struct{}
	inFlight int
	closing  bool
	// latency is the measured renewal call latency: a longer call raises
	// it at once, a shorter one brings it down by latencyDecay of the
	// difference. Zero until the first call has been timed.
	latency time.Duration

	wake     chan struct{}
	loopDone chan struct{}
	tasks    sync.WaitGroup
}

// newHeartbeat starts the heartbeat's scheduling goroutine.
func newHeartbeat(cfg heartbeatConfig) *heartbeat {
	h := &heartbeat{
		port:          cfg.port,
		obs:           cfg.observer,
		clock:         cfg.clock,
		sched:         cfg.scheduler,
		margin:        cfg.margin,
		baseInFlight:  cfg.baseInFlight,
		maxInFlight:   cfg.maxInFlight,
		commitTimeout: cfg.commitTimeout,
		releasePool:   cfg.releasePool,
		closePool:     cfg.closePool,
		live:          make(map[*Lease]struct{}),
		wake:          make(chan struct{}, 1),
		loopDone:      make(chan struct{}),
	}
	h.attempts, h.cancelAttempts = context.WithCancel(context.Background())
	go h.run()
	return h
}

// add registers a new lease for job.
func (h *heartbeat) add(parent context.Context, job Job, logger *slog.Logger) *Lease {
	ctx, cancel := context.WithCancelCause(parent)
	l := &Lease{
		hb:           h,
		logger:       logger,
		claim:        job.claim,
		ctx:          ctx,
		cancel:       cancel,
		terms:        job.terms,
		index:        -1,
		trustedUntil: job.sentAt.Add(job.leaseExpiresAt.Sub(job.databaseTime) - h.margin),
		nextDue:      job.sentAt.Add(job.terms.interval),
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	// The timer is made under the lock: when the trust deadline has already
	// passed it fires at once, and trustExpired must not see the lease
	// before its timer is stored (it stops it).
	l.trustTimer = time.AfterFunc(time.Until(l.trustedUntil), func() { h.trustExpired(l) })
	if h.closing {
		h.endLocked(l, ErrClosed)
		return l
	}
	h.live[l] = struct{}{}
	heap.Push(&h.queue, l)
	// Whatever ends the context ends the lease. Only endLocked cancels it
	// itself, so the watch is for the parent: none when the parent can
	// never be cancelled (a Worker's leases), and endLocked stops it, so a
	// lease ending on its own starts no goroutine.
	if parent.Done() != nil {
		l.stopWatch = context.AfterFunc(ctx, func() {
			h.mu.Lock()
			defer h.mu.Unlock()
			h.endLocked(l, context.Cause(ctx))
		})
	}
	// The scheduling goroutine sleeps until the earliest renewal is due: a
	// lease due later changes nothing for it.
	if l.index == 0 {
		h.signal()
	}
	return l
}

// signal wakes the scheduling goroutine.
func (h *heartbeat) signal() {
	select {
	case h.wake <- struct{}{}:
	default:
	}
}

// run is the scheduling goroutine: it sleeps until the earliest renewal is
// due (or something changes), then hands due renewals to the Scheduler.
func (h *heartbeat) run() {
	defer close(h.loopDone)
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		h.mu.Lock()
		if h.closing {
			h.mu.Unlock()
			return
		}
		batches, wait := h.dueLocked(time.Now())
		h.mu.Unlock()
		for _, b := range batches {
			h.submit(b)
		}
		timer.Reset(wait)
		select {
		case <-timer.C:
		case <-h.wake:
		}
	}
}

// dueLocked takes the due renewals off the queue, as batches of claims due
// within the coalescing window, while in-flight slots are free; a solo
// lease (its row was locked) goes out in a batch of its own. It returns how
// long to sleep before the next check.
func (h *heartbeat) dueLocked(now time.Time) ([][]*Lease, time.Duration) {
	var batches [][]*Lease
	limit, raised := h.baseInFlight, false
	for h.queue.Len() > 0 {
		if wait := h.queue[0].nextDue.Sub(now); wait > 0 {
			return batches, wait
		}
		if h.inFlight >= limit && !raised {
			limit, raised = h.neededLocked(now), true
		}
		if h.inFlight >= limit {
			break
		}
		horizon := now.Add(h.queue[0].terms.interval / coalesceFraction)
		var batch []*Lease
		for h.queue.Len() > 0 && len(batch) < maxRenewalBatch && !h.queue[0].nextDue.After(horizon) &&
			(len(batch) == 0 || !h.queue[0].solo) {
			l := heap.Pop(&h.queue).(*Lease)
			h.obs.SchedulerLag(l.claim.queue, max(now.Sub(l.nextDue), 0))
			batch = append(batch, l)
			if l.solo {
				break
			}
		}
		h.inFlight++
		h.obs.RenewalsInFlight(h.inFlight)
		h.tasks.Add(1)
		batches = append(batches, batch)
	}
	// Nothing queued, or every slot busy: a finished attempt or a new lease
	// signals the loop.
	return batches, time.Hour
}

// neededLocked is how many renewal calls the heartbeat may have open now
// that baseInFlight are: baseInFlight while they carry the renewals due in
// time, more (up to maxInFlight) when they cannot. In time is before the
// earliest answer deadline of the due claims: a claim's next due time plus
// its attempt timeout (the schedule the safety-margin rule allows for), or
// its trust deadline when that is earlier. A slot first finishes the call
// it has open, then makes one call after another, each taking the measured
// latency (the attempt timeout before any call has been timed); the due
// claims go out maxRenewalBatch a call.
func (h *heartbeat) neededLocked(now time.Time) int {
	if h.maxInFlight <= h.baseInFlight {
		return h.baseInFlight
	}
	due, answerBy := h.queue.backlog(0, now, 0, h.queue[0].trustedUntil)
	latency := h.latency
	if latency <= 0 {
		latency = h.queue[0].terms.attemptTimeout
	}
	calls := (due + maxRenewalBatch - 1) / maxRenewalBatch
	perSlot := int(answerBy.Sub(now)/latency) - 1
	if perSlot < 1 {
		return h.maxInFlight
	}
	return min(max((calls+perSlot-1)/perSlot, h.baseInFlight), h.maxInFlight)
}

// submit hands one attempt to the Scheduler.
func (h *heartbeat) submit(batch []*Lease) {
	err := h.sched.Submit(func() {
		defer h.tasks.Done()
		h.attempt(batch)
	})
	if err != nil {
		h.tasks.Done()
		h.finish(batch, time.Now(), nil, err)
	}
}

// attempt makes one renewal call for batch and applies the answer.
func (h *heartbeat) attempt(batch []*Lease) {
	claims := make([]Claim, len(batch))
	for i, l := range batch {
		claims[i] = l.claim
	}
	wallSent := h.clock.Now()
	sentAt := time.Now()
	// The call may take one interval (the shortest of the batch), and never
	// past the earliest trust deadline of the batch (an answer after it
	// could not be used): room for a new connection, whose authentication
	// can be slow. The transaction itself is bounded by the attempt timeout
	// (the shortest of the batch) in the port.
	interval, attemptTimeout := batch[0].terms.interval, batch[0].terms.attemptTimeout
	for _, l := range batch {
		interval, attemptTimeout = min(interval, l.terms.interval), min(attemptTimeout, l.terms.attemptTimeout)
	}
	deadline := sentAt.Add(interval)
	h.mu.Lock()
	for _, l := range batch {
		if l.trustedUntil.Before(deadline) {
			deadline = l.trustedUntil
		}
	}
	h.mu.Unlock()
	ctx, cancel := context.WithDeadline(withAttemptTimeout(h.attempts, attemptTimeout), deadline)
	results, err := h.port.RenewClaims(ctx, claims)
	cancel()
	if err == nil && len(results) != len(claims) {
		err = errRenewalResultCount
	}
	if err == nil {
		wallRecv := h.clock.Now()
		h.obs.DatabaseClockOffset(results[0].DatabaseTime.Sub(wallSent.Add(wallRecv.Sub(wallSent) / 2)))
	}
	h.finish(batch, sentAt, results, err)
}

// finish applies one attempt's answer (results, or err for the whole call)
// to every lease of batch that is still renewing.
func (h *heartbeat) finish(batch []*Lease, sentAt time.Time, results []RenewalResult, err error) {
	recvAt := time.Now()
	h.mu.Lock()
	defer h.mu.Unlock()
	h.timeLocked(recvAt.Sub(sentAt))
	h.inFlight--
	h.obs.RenewalsInFlight(h.inFlight)
	h.signal()
	for i, l := range batch {
		if l.state != leaseRenewing {
			continue // ended while the attempt was open: the answer is ignored
		}
		queue := l.claim.queue
		if !recvAt.Before(l.trustedUntil) {
			// Fail closed: an answer after the trust deadline is too late,
			// whatever it says.
			h.dropLocked(l, LossTrustDeadlinePassed, ErrTrustDeadlinePassed)
			continue
		}
		if err != nil {
			h.obs.Renewal(queue, RenewalDatabaseFailure)
			h.retryLocked(l, recvAt)
			continue
		}
		switch r := results[i]; r.Outcome {
		case RenewalRenewed:
			h.obs.Renewal(queue, RenewalRenewed)
			h.obs.SafetyMarginRemaining(queue, l.trustedUntil.Sub(recvAt))
			h.extendLocked(l, sentAt, r)
			if l.renewed != nil && sentAt.After(l.renewedSince) {
				close(l.renewed)
				l.renewed = nil
			}
			l.failures, l.solo = 0, false
			l.nextDue = sentAt.Add(l.terms.interval)
			heap.Push(&h.queue, l)
		case RenewalLocked:
			// Not an answer about ownership: renew the claim alone, at
			// once the first time; a port that answers locked even then
			// has failed the attempt, and it is retried with backoff.
			if l.solo {
				h.retryLocked(l, recvAt)
				continue
			}
			l.solo = true
			l.nextDue = recvAt
			heap.Push(&h.queue, l)
		case RenewalDisabled:
			h.obs.Renewal(queue, RenewalDisabled)
			h.extendLocked(l, sentAt, r)
			l.state = leaseDisabled
		default: // stale, or anything the port does not promise: fail closed
			h.obs.Renewal(queue, RenewalStale)
			h.dropLocked(l, LossStale, ErrStaleClaim)
		}
	}
}

// latencyDecay: a renewal call shorter than the measured latency brings
// it down by 1/latencyDecay of the difference.
const latencyDecay = 4

// timeLocked takes one renewal call's latency d into the measured latency:
// the first call sets it, a longer call raises it at once, a shorter one
// lowers it gradually, so one fast call does not hide a slow database.
func (h *heartbeat) timeLocked(d time.Duration) {
	if d > h.latency {
		h.latency = d
		return
	}
	h.latency -= (h.latency - d) / latencyDecay
}

// extendLocked moves the trust deadline to sentAt + granted - margin when
// that is later than the current one.
func (h *heartbeat) extendLocked(l *Lease, sentAt time.Time, r RenewalResult) {
	if trust := sentAt.Add(r.Granted() - h.margin); trust.After(l.trustedUntil) {
		l.trustedUntil = trust
		l.trustTimer.Reset(time.Until(trust))
	}
}

// retryLocked schedules the next attempt after a failed one: exponential
// backoff from a tenth of the claim's interval up to one interval, never
// later than half the time left before the trust deadline.
func (h *heartbeat) retryLocked(l *Lease, now time.Time) {
	l.failures++
	delay := min(l.terms.interval/retryFraction<<min(l.failures-1, 16), l.terms.interval, l.trustedUntil.Sub(now)/2)
	l.nextDue = now.Add(delay)
	heap.Push(&h.queue, l)
}

// trustExpired runs on the lease's trust timer.
func (h *heartbeat) trustExpired(l *Lease) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if l.state != leaseEnded && !time.Now().Before(l.trustedUntil) {
		h.dropLocked(l, LossTrustDeadlinePassed, ErrTrustDeadlinePassed)
	}
}

// endLocked ends l once: it leaves the queue, its trust timer stops and its
// context is cancelled with cause. It reports whether l was still live.
func (h *heartbeat) endLocked(l *Lease, cause error) bool {
	if l.state == leaseEnded {
		return false
	}
	l.state, l.cause = leaseEnded, cause
	if l.index >= 0 {
		heap.Remove(&h.queue, l.index)
	}
	l.trustTimer.Stop()
	delete(h.live, l)
	if l.stopWatch != nil {
		l.stopWatch()
	}
	l.cancel(cause)
	return true
}

// loseLocked ends l as an ownership loss and counts it. The loss is counted
// before the lease's context is cancelled, so whoever wakes on that context
// (the handler, a test, a shutdown) already sees it in the Observer.
func (h *heartbeat) loseLocked(l *Lease, cause LossCause, err error) {
	if l.state != leaseEnded {
		h.obs.OwnershipLost(l.claim.queue, cause)
	}
	h.endLocked(l, err)
}

// dropLocked is loseLocked for a live claim the heartbeat itself stops
// trusting (a stale renewal, the trust deadline passed), and logs it
// with its bounded cause: stale; database_unavailable when the trust
// deadline passed after failed renewal attempts (the database did not
// answer), trust_deadline when no attempt failed (none answered in time).
func (h *heartbeat) dropLocked(l *Lease, cause LossCause, err error) {
	switch {
	case cause == LossStale && l.claim.timeline() < h.timeline.Load():
		l.why = causeFailover
	case cause == LossStale:
		l.why = causeStale
	case l.failures > 0:
		l.why = causeDatabaseUnavailable
	default:
		l.why = causeTrustDeadline
	}
	logLeaseLost(l.logger, l.claim, l.why)
	h.loseLocked(l, cause, err)
}

// raiseTimeline raises the highest timeline seen to tl and returns the
// one seen before (0 for none) and whether tl raised it.
func (h *heartbeat) raiseTimeline(tl int64) (previous int64, raised bool) {
	for {
		previous = h.timeline.Load()
		if tl <= previous {
			return previous, false
		}
		if h.timeline.CompareAndSwap(previous, tl) {
			return previous, true
		}
	}
}

// close stops the heartbeat: every live lease ends (ErrClosed) and its claim
// is released; the scheduling goroutine and every attempt finish first.
func (h *heartbeat) close() {
	h.mu.Lock()
	h.closing = true
	var abandoned []Claim
	var timeout time.Duration
	for l := range h.live {
		abandoned = append(abandoned, l.claim)
		timeout = max(timeout, l.terms.attemptTimeout)
		h.endLocked(l, ErrClosed)
	}
	h.mu.Unlock()
	h.signal()
	<-h.loopDone
	h.cancelAttempts()
	h.tasks.Wait()
	// The release's implicit transaction commits within the commit timeout.
	ctx, cancel := context.WithTimeout(context.Background(), timeout+h.commitTimeout)
	defer cancel()
	for i, stale := range releaseClaims(ctx, h.closePool, abandoned) {
		h.obs.OwnershipLost(abandoned[i].queue, releaseCause(stale))
	}
}

// leaseHeap orders queued leases by their next due time.
type leaseHeap []*Lease

// backlog counts the leases of the subtree at i that are due at now
// (nextDue not after it) and returns their number and the earliest answer
// deadline among them and answerBy: nextDue plus the attempt timeout, or
// the trust deadline when earlier. A lease that is not due has no due
// lease below it, so only the due part of the heap is visited.
func (q leaseHeap) backlog(i int, now time.Time, due int, answerBy time.Time) (int, time.Time) {
	if i >= len(q) || q[i].nextDue.After(now) {
		return due, answerBy
	}
	l := q[i]
	answerBy = earliest(answerBy, l.trustedUntil, l.nextDue.Add(l.terms.attemptTimeout))
	due, answerBy = q.backlog(2*i+1, now, due+1, answerBy)
	return q.backlog(2*i+2, now, due, answerBy)
}

// earliest returns the earliest of times.
func earliest(t time.Time, times ...time.Time) time.Time {
	for _, u := range times {
		if u.Before(t) {
			t = u
		}
	}
	return t
}

// Len is the number of leases waiting for their next renewal (heap.Interface).
func (q leaseHeap) Len() int { return len(q) }

// Less orders leases by when their next renewal is due, earliest first.
func (q leaseHeap) Less(i, j int) bool { return q[i].nextDue.Before(q[j].nextDue) }

// Swap exchanges two leases and keeps their heap positions current.
func (q leaseHeap) Swap(i, j int) {
	q[i], q[j] = q[j], q[i]
	q[i].index, q[j].index = i, j
}

// Push adds a lease to the heap; call heap.Push, not this method.
func (q *leaseHeap) Push(x any) {
	l := x.(*Lease)
	l.index = len(*q)
	*q = append(*q, l)
}

// Pop removes the last lease of the heap; call heap.Pop, not this method.
func (q *leaseHeap) Pop() any {
	old := *q
	l := old[len(old)-1]
	old[len(old)-1] = nil
	*q = old[:len(old)-1]
	l.index = -1
	return l
}
