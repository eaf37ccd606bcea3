package campaign

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"
)

// Event kinds of a history.
const (
	KindEnqueue     = "enqueue"      // driver: a job was enqueued
	KindClaim       = "claim"        // claim_next_job
	KindRenew       = "renew"        // one claim of one renewal call
	KindForgedRenew = "forged_renew" // zombie: a live owner's job with a random token
	KindComplete    = "complete"     // complete_job with the target write, one transaction
	KindRetry       = "retry"        // retry_job
	KindFail        = "fail"         // fail_job
	KindObsRenewed  = "obs_renewed"  // the client's observer counted a renewal as renewed
	KindLost        = "lost"         // the client stopped trusting a claim
	KindFault       = "fault"        // an injected fault (Detail: its kind)
	KindLockWait    = "lock_wait"    // a worker session waited on a row locked by an injector
	// KindClockStep: driver, the database clock is about to be stepped by
	// Detail (a Go duration: "3s", "-2s"); At is just before the offset
	// file is written, so the step takes effect after At.
	KindClockStep = "clock_step"
	// KindPromotion: driver, a standby is about to be promoted (the old
	// primary already stopped). DBTime is the standby's clock_timestamp()
	// read once it had replayed everything it received: every claim the
	// old primary acknowledged was decided before it, every claim of the
	// new primary after it.
	KindPromotion = "promotion"
	// KindPromotedState: driver, one per job the standby held at that
	// moment, Gen its lease_fencing_generation (0 when never claimed):
	// exactly what the new primary starts from.
	KindPromotedState = "promoted_state"
)

// Promotion details (the Detail of a KindPromotion).
const (
	PromotionSync  = "sync"  // the standby was synchronous up to the primary's stop
	PromotionAsync = "async" // the standby's stream was cut before the primary's stop
)

// Outcomes of an operation.
const (
	OutOK      = "ok"      // claim returned a job, terminal write committed
	OutNone    = "none"    // claim: nothing claimable
	OutRenewed = "renewed" // renewal outcomes as the database answered them
	OutStale   = "stale"   // renewal stale, or terminal write refused with LF001
	OutDisable = "renewal_disabled"
	OutAborted = "aborted" // failed before the call was sent: known not to have happened
	OutUnknown = "unknown" // no answer: it may or may not have taken effect
)

// Event is one line of a history. Times from the database (DBTime,
// Expires) are its clock_timestamp(); At is the recording process's
// monotonic clock, in nanoseconds since the campaign began.
type Event struct {
	Proc    string    `json:"proc"`              // the recording process (w1, zombie, driver)
	Op      int64     `json:"op"`                // operation id, unique within Proc
	Invoke  bool      `json:"invoke,omitempty"`  // the line written before the call was sent
	Kind    string    `json:"kind"`              // one of the Kind constants
	Job     int64     `json:"job,omitempty"`     // job_record_id
	Gen     int64     `json:"gen,omitempty"`     // fencing generation of the claim
	Outcome string    `json:"outcome,omitempty"` // one of the Out constants, or the database's renewal outcome
	DBTime  time.Time `json:"db_time,omitzero"`  // database time of the decision (claims, renewals) or before it (terminals)
	Expires time.Time `json:"expires,omitzero"`  // lease_expires_at granted
	At      int64     `json:"at"`                // client monotonic nanoseconds since the campaign began
	Sent    int64     `json:"sent,omitempty"`    // At of the operation's invocation line (set by LoadHistory; zero when it has none)
	Detail  string    `json:"detail,omitempty"`  // fault kind, loss cause or function name; never a secret
}

// String is a one-line rendering for violation reports (no secrets: a
// history never holds a token, payload or error text).
func (e Event) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%9.3fs %-8s #%-5d %-12s", float64(e.At)/1e9, e.Proc, e.Op, e.Kind)
	if e.Job != 0 {
		fmt.Fprintf(&b, " job=%d", e.Job)
	}
	if e.Gen != 0 {
		fmt.Fprintf(&b, " gen=%d", e.Gen)
	}
	if e.Outcome != "" {
		fmt.Fprintf(&b, " -> %s", e.Outcome)
	}
	if !e.DBTime.IsZero() {
		fmt.Fprintf(&b, " db=%s", e.DBTime.UTC().Format("15:04:05.000000"))
	}
	if !e.Expires.IsZero() {
		fmt.Fprintf(&b, " expires=%s", e.Expires.UTC().Format("15:04:05.000000"))
	}
	if e.Detail != "" {
		fmt.Fprintf(&b, " (%s)", e.Detail)
	}
	return b.String()
}

// Recorder appends a process's events to its history file. Each event is
// one write(2), so a process killed with SIGKILL loses no event it had
// already recorded. Safe for concurrent use.
type Recorder struct {
	mu    sync.Mutex
	f     *os.File
	proc  string
	epoch time.Time
	seq   int64
}

// NewRecorder creates (or appends to) the history file path for process
// proc. epoch is when the campaign began; At is the time since then. A
// worker process gets the epoch as wall-clock nanoseconds (the driver's
// clock and the workers' are the machine's one wall clock, which no fault
// moves), so At is comparable across processes: an offset measured by the
// driver when it started the process ran early by the process's start-up
// time, up to a second on a loaded machine, and a renewal answered just
// after a step of the database clock could then look answered before it.
func NewRecorder(path, proc string, epoch time.Time) (*Recorder, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	return &Recorder{f: f, proc: proc, epoch: epoch}, nil
}

// Close closes the history file.
func (r *Recorder) Close() error { return r.f.Close() }

func (r *Recorder) write(e Event) {
	e.Proc = r.proc
	e.At = int64(time.Since(r.epoch))
	b, _ := json.Marshal(e) // an Event always marshals
	b = append(b, '\n')
	r.mu.Lock()
	defer r.mu.Unlock()
	_, _ = r.f.Write(b)
}

// Invoke records that an operation is about to be sent and returns its id.
func (r *Recorder) Invoke(kind string, job, gen int64) int64 {
	r.mu.Lock()
	r.seq++
	op := r.seq
	r.mu.Unlock()
	r.write(Event{Op: op, Invoke: true, Kind: kind, Job: job, Gen: gen})
	return op
}

// Done records the answer of operation op (its Kind, Job and Gen are
// taken from e, so a claim can name the job it got).
func (r *Recorder) Done(op int64, e Event) {
	e.Op = op
	r.write(e)
}

// Note records an event that is not an operation (a fault, an observation).
func (r *Recorder) Note(e Event) {
	r.mu.Lock()
	r.seq++
	e.Op = r.seq
	r.mu.Unlock()
	r.write(e)
}

// LoadHistory reads every *.jsonl file in dir and returns the operations
// merged: one Event per operation (its answer, with Sent the time its
// invocation was recorded, or its invocation with Outcome "unknown" when no
// answer was recorded) and every note, ordered by At. A torn last line (a
// process killed mid-write) is ignored.
func LoadHistory(dir string) ([]Event, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	if err != nil {
		return nil, err
	}
	var out []Event
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			return nil, err
		}
		type key struct {
			proc string
			op   int64
		}
		invokes := map[key]Event{}
		var order []key
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var e Event
			if json.Unmarshal(sc.Bytes(), &e) != nil {
				continue
			}
			k := key{e.Proc, e.Op}
			if e.Invoke {
				invokes[k] = e
				order = append(order, k)
				continue
			}
			if inv, ok := invokes[k]; ok {
				e.Sent = inv.At
				if e.Job == 0 {
					e.Job = inv.Job
				}
				if e.Gen == 0 {
					e.Gen = inv.Gen
				}
				if e.Kind == "" {
					e.Kind = inv.Kind
				}
				delete(invokes, k)
			}
			out = append(out, e)
		}
		_ = f.Close()
		if err := sc.Err(); err != nil {
			return nil, err
		}
		for _, k := range order {
			if inv, ok := invokes[k]; ok {
				inv.Invoke = false
				inv.Outcome = OutUnknown
				inv.Detail = "no answer recorded"
				out = append(out, inv)
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].At < out[j].At })
	return out, nil
}

// CountOps returns how many operations of h are checked: claims that got a
// job or no answer, renewals, forged renewals and terminal writes (empty
// claims are not counted).
func CountOps(h []Event) int {
	n := 0
	for _, e := range h {
		switch e.Kind {
		case KindClaim:
			if e.Outcome != OutNone {
				n++
			}
		case KindRenew, KindForgedRenew, KindComplete, KindRetry, KindFail:
			n++
		}
	}
	return n
}
