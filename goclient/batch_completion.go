package goclient

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// maxCompletionBatch is complete_jobs' limit of claims per call.
const maxCompletionBatch = 1000

// completer makes the worker's completions of handlers that finish close
// together in one complete_jobs transaction, as a database's group commit
// does: the first handler to finish completes its own job at once (with
// the handlers already runnable, after one yield), and the
// handlers that finish while that transaction runs are completed together
// in the next one, made by the first of them (each handler's goroutine
// makes at most the one transaction its own job is in). A job completed
// alone goes through complete_job exactly as before. When one claim of a
// batch is stale (LF001 completes none of them) every claim of the batch is
// completed alone, so each gets its own answer.
//
// A worker's completer admits at most limit requests at once (pending or
// in the transaction running); the requests beyond it wait, in order, and
// are admitted together when a transaction ends, as many as it freed, so
// they form the next batch at once. moved tells the worker, in one call,
// which requests a transaction finished and how many it admitted (and, for
// a request admitted when it arrives, that one), in the order they
// happen: the worker frees a request's slot when it is admitted and drops
// its claim when its transaction ended (Worker.completionsMoved).
type completer struct {
	c          *Client
	batchLimit int // most claims per transaction: complete_jobs' limit, maxCompletionBatch
	// limit bounds the requests admitted at once (0: no bound).
	limit int
	// moved is told about finished and admitted requests (nil: nobody).
	moved func(finished []*completion, admitted int)

	mu       sync.Mutex
	pending  []*completion // admitted, not yet in a transaction
	waiting  []*completion // not admitted yet (limit reached), in arrival order
	admitted int           // admitted requests not finished: pending and the running batch
	running  bool          // a caller is completing a batch; the next one is handed to pending[0]
}

// newCompleter is a completer of c without a bound (a Worker sets limit
// and moved).
func newCompleter(c *Client) *completer {
	return &completer{c: c, batchLimit: maxCompletionBatch}
}

// completion is one handler's request to complete its job.
type completion struct {
	lease *Lease
	claim Claim
	// signal carries, in this order, at most one errLead (this caller is to
	// complete the next batch) and then the answer. Capacity 1: the caller
	// takes the first before the second can be sent (the caller sends its
	// own answer, in next, only after taking errLead).
	signal chan error
	// err is the answer run gave, kept for the worker's completionsMoved
	// (written and read by the goroutine completing the batch only).
	err error
}

// answer gives r its answer.
func (r *completion) answer(err error) {
	r.err = err
	r.signal <- err
}

// errLead is the signal that makes a waiting caller complete the next batch.
var errLead = errors.New("leasefence: complete the next batch")

// complete completes claim under lease, alone or with others, and returns
// what a completion of its own would have: nil, errAbandoned when the lease
// ended first, ErrStaleClaim (a *DatabaseError) or another error.
func (c *completer) complete(bg context.Context, lease *Lease, claim Claim) error {
	req := &completion{lease: lease, claim: claim, signal: make(chan error, 1)}
	c.mu.Lock()
	// Nothing waits when fewer than limit are admitted (admission at a
	// transaction's end fills the room), and nothing is admitted when no
	// run is on: so a request that waits never leads.
	if c.limit == 0 || c.admitted < c.limit {
		c.admitted++
		c.pending = append(c.pending, req)
		c.tell(nil, 1)
	} else {
		c.waiting = append(c.waiting, req)
	}
	lead := !c.running
	c.running = true
	c.mu.Unlock()
	if lead {
		// The first to arrive yields once before it takes its batch, so
		// that the handlers already runnable (the others of the claim it
		// came with, when they are quick) join it instead of waiting for
		// its transaction: it waits for no time and no event.
		runtime.Gosched()
	} else if err := <-req.signal; err != errLead { //nolint:errorlint // errLead is a sentinel sent as is
		return err
	}
	c.next(bg)
	return <-req.signal
}

// next completes the pending requests (up to batchLimit; the caller's own
// is the first), admits the waiting ones the batch made room for, then
// hands the next batch to the first request pending, or ends the run when
// none is.
func (c *completer) next(bg context.Context) {
	c.mu.Lock()
	n := min(len(c.pending), c.batchLimit)
	batch := c.pending[:n:n]
	c.pending = c.pending[n:]
	c.mu.Unlock()
	c.run(bg, batch)
	c.mu.Lock()
	c.admitted -= len(batch)
	m := len(c.waiting)
	if c.limit > 0 {
		m = min(m, c.limit-c.admitted)
	}
	c.admitted += m
	c.pending = append(c.pending, c.waiting[:m]...)
	c.waiting = c.waiting[m:]
	c.tell(batch, m)
	if len(c.pending) == 0 {
		c.running = false
	} else {
		c.pending[0].signal <- errLead
	}
	c.mu.Unlock()
}

// tell calls moved, if set, with c.mu held: the worker learns of every
// admission and every end in the order the completer made them.
func (c *completer) tell(finished []*completion, admitted int) {
	if c.moved != nil {
		c.moved(finished, admitted)
	}
}

// run answers every request of batch.
func (c *completer) run(bg context.Context, batch []*completion) {
	var live []*completion
	for _, r := range batch {
		if r.lease.Err() != nil {
			r.answer(errAbandoned)
			continue
		}
		live = append(live, r)
	}
	if len(live) < 2 {
		for _, r := range live {
			r.answer(c.alone(bg, r))
		}
		return
	}
	err := c.together(bg, live)
	for _, r := range live {
		if errors.Is(err, ErrStaleClaim) {
			r.answer(c.alone(bg, r))
			continue
		}
		r.answer(err)
	}
}

// alone completes one request with complete_job in a transaction of its
// own, as the worker always did.
func (c *completer) alone(bg context.Context, r *completion) error {
	return c.c.writeTx(bg, r.lease, completeJobCall(r.claim, nil).queue)
}

// together completes every request of live with one complete_jobs call in
// one transaction; each heartbeat stops after the call succeeded, before
// the commit, as stopAfter does for one.
func (c *completer) together(bg context.Context, live []*completion) error {
	claims := make([]Claim, len(live))
	var timeout time.Duration
	for i, r := range live {
		claims[i] = r.claim
		timeout = max(timeout, r.lease.terms.lease)
	}
	tctx, cancel := context.WithTimeout(bg, timeout)
	defer cancel()
	return c.c.inTx(tctx, completeJobsCall(claims).queue, func(pgx.Tx) error {
		for _, r := range live {
			r.lease.Stop()
		}
		return nil
	})
}
