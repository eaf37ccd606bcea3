package campaign

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// Violation kinds the checker reports.
const (
	VDuplicateGeneration   = "duplicate_generation"
	VStaleWriteAccepted    = "stale_write_accepted"   // superseded claim's terminal write committed
	VExpiredWriteAccepted  = "expired_write_accepted" // expired claim's terminal write committed
	VTargetMismatch        = "target_mismatch"        // target rows are not exactly the final claimant's generation
	VTerminalLeft          = "terminal_left"
	VNotOneState           = "not_exactly_one_state"
	VJobLost               = "job_lost"
	VOverlappingClaims     = "overlapping_claims"
	VFalseExpiry           = "false_expiry"
	VFailedRenewalCounted  = "failed_renewal_counted"
	VForgedRenewalAccepted = "forged_renewal_accepted"
	VStaleRenewalAccepted  = "stale_renewal_accepted"
	VClaimWaitedOnLock     = "claim_waited_on_lock"
	VRenewalWaitedOnLock   = "renewal_waited_on_lock"
	VGenerationNotRaised   = "generation_not_raised_by_promotion" // a claim after a promotion at or below an earlier generation
	VAcknowledgedLost      = "acknowledged_renewal_lost"          // a synchronous promotion lost a claim whose renewal had been acknowledged
)

// promotion is one KindPromotion of a history with the state the standby
// held when it was promoted.
type promotion struct {
	ev    Event           // the KindPromotion note (DBTime: the standby's clock)
	state map[int64]int64 // job -> generation the standby held (absent: 0)
}

// promotions collects the promotions of h, each with the KindPromotedState
// notes that follow it.
func promotions(h []Event) []*promotion {
	var ps []*promotion
	for _, e := range h {
		switch {
		case e.Kind == KindPromotion:
			ps = append(ps, &promotion{ev: e, state: map[int64]int64{}})
		case e.Kind == KindPromotedState && len(ps) > 0:
			ps[len(ps)-1].state[e.Job] = e.Gen
		}
	}
	return ps
}

// before says the claim event c was decided by the primary that p
// replaced: its database time is before the standby's at promotion and its
// answer was recorded before the promotion began (the second condition
// holds even when the database clock was stepped back after the
// promotion; a claim recorded late only loses the excuse below).
func (p *promotion) before(c Event) bool {
	return c.DBTime.Before(p.ev.DBTime) && c.At < p.ev.At
}

// after says the claim event c was decided by the promoted primary.
func (p *promotion) after(c Event) bool {
	return !c.DBTime.Before(p.ev.DBTime) && c.At > p.ev.At
}

// JobRow is the checker's view of one job in the database at the end.
type JobRow struct {
	ID         int64     // job_record_id
	Queue      string    // queue_name
	Status     string    // job_status
	Generation int64     // lease_fencing_generation (0 when never claimed)
	Expires    time.Time // lease_expires_at, zero when NULL
}

// TargetRow is one row of the campaign's target table: the effect a
// worker wrote in the transaction of its complete_job.
type TargetRow struct {
	Job        int64 // the job whose completion wrote it
	Generation int64 // the fencing generation of the claim that wrote it
}

// Snapshot is the database state the checker reads after the run.
type Snapshot struct {
	Jobs    []JobRow      // every job of the campaign database
	Targets []TargetRow   // every target row
	Now     time.Time     // database clock_timestamp() at the snapshot
	Lease   time.Duration // the lease duration of the campaign's policy
	// ClockJumps says the database clock was moved during the run. A
	// renewal's database_time is read just after its fence was decided,
	// so a jump between the two makes "renewed after its expiry"
	// undecidable from the history; that one check is then left out.
	ClockJumps bool
}

// Violation is one broken property, with the smallest sub-history that
// shows it (the events of the offending job, or of the offending process).
type Violation struct {
	Kind    string  // one of the V constants
	Job     int64   // the offending job (0 when it is a process's)
	Message string  // what is wrong, in one sentence
	Events  []Event // the sub-history that shows it
}

// Report renders v with its sub-history and the seed that replays the run.
func (v Violation) Report(seed uint64) string {
	var b strings.Builder
	fmt.Fprintf(&b, "VIOLATION %s job=%d: %s (seed %d)\n", v.Kind, v.Job, v.Message, seed)
	for _, e := range v.Events {
		fmt.Fprintf(&b, "    %s\n", e)
	}
	return b.String()
}

// claimView is what the history says about one claim (job, generation).
type claimView struct {
	claim      Event
	knownUntil time.Time // the latest expiry a known answer granted
	unknownRen bool      // a renewal of it has no known answer
	endedAt    time.Time // the database time read before its earliest accepted terminal write; zero when none
}

// renewalTimeSlack allows for a renewal's database_time being read a
// moment after its fence was decided.
const renewalTimeSlack = 50 * time.Millisecond

// renewalSpan is how long after its database_time (its statement's start)
// a renewal's fence can have been decided: at most as long as the call
// took from its invocation to its answer (a renewal that waited on a row
// lock decides when the lock is released), and never less than
// renewalTimeSlack (a history without invocation times).
func renewalSpan(e Event) time.Duration {
	if d := time.Duration(e.At - e.Sent); e.Sent != 0 && d > renewalTimeSlack {
		return d
	}
	return renewalTimeSlack
}

// clockStepWindow is how long before a renewal's answer a forward step of
// the database clock can still have fallen inside that renewal: the
// client's attempt timeout bounds a renewal call.
const clockStepWindow = 5 * time.Second

// clockStep is one step of the database clock (KindClockStep).
type clockStep struct {
	at   int64 // the driver's Event.At just before the step
	step time.Duration
}

// clockSteps returns the steps of the database clock in h, forward
// (positive) and back (negative).
func clockSteps(h []Event) []clockStep {
	var out []clockStep
	for _, e := range h {
		if e.Kind != KindClockStep {
			continue
		}
		if d, err := time.ParseDuration(e.Detail); err == nil && d != 0 {
			out = append(out, clockStep{at: e.At, step: d})
		}
	}
	return out
}

// steppedBack is how far the database clock was stepped back between from
// and to (Event.At times): a database time read after those steps reads
// that much earlier than one read before them.
func steppedBack(steps []clockStep, from, to int64) time.Duration {
	var back time.Duration
	for _, c := range steps {
		if c.step < 0 && c.at >= from && c.at <= to {
			back -= c.step
		}
	}
	return back
}

// steppedDuring says whether a forward step of the database clock can
// explain a renewal answered stale at database time dbTime (its
// statement's start) for a claim granted until until: the step took
// effect while the renewal ran (between clockStepWindow before its answer
// and the answer) and was large enough to carry the clock past until, so
// the fence, decided on the stepped clock, rightly found the lease over.
func steppedDuring(steps []clockStep, answered int64, dbTime, until time.Time) bool {
	for _, c := range steps {
		if c.step > 0 && c.at <= answered && answered-c.at <= int64(clockStepWindow) && !dbTime.Add(c.step).Before(until) {
			return true
		}
	}
	return false
}

// Check verifies history h against the database snapshot s and returns
// every violation found (nil when there is none).
func Check(h []Event, s Snapshot) []Violation {
	vs, _ := check(h, s)
	return vs
}

// check is Check that also returns how many acknowledged claims the
// checker accepted as lost in a promotion (lostInPromotion), by the
// promotion's detail (PromotionSync, PromotionAsync).
func check(h []Event, s Snapshot) (vs []Violation, lostClaims map[string]int) {
	lostClaims = map[string]int{}
	steps := clockSteps(h)
	byJob := map[int64][]Event{}
	for _, e := range h {
		if e.Job != 0 {
			byJob[e.Job] = append(byJob[e.Job], e)
		}
	}
	var promNotes []Event
	for _, e := range h {
		if e.Kind == KindPromotion {
			promNotes = append(promNotes, e)
		}
	}
	// sub is the job's events with the promotions, in history order.
	sub := func(job int64) []Event {
		if len(promNotes) == 0 {
			return byJob[job]
		}
		out := append(append([]Event(nil), byJob[job]...), promNotes...)
		sort.SliceStable(out, func(i, j int) bool { return out[i].At < out[j].At })
		return out
	}
	add := func(kind string, job int64, format string, args ...any) {
		vs = append(vs, Violation{Kind: kind, Job: job, Message: fmt.Sprintf(format, args...), Events: sub(job)})
	}
	rows := map[int64]JobRow{}
	for _, r := range s.Jobs {
		rows[r.ID] = r
	}
	proms := promotions(h)
	targets := map[int64][]int64{}
	for _, t := range s.Targets {
		targets[t.Job] = append(targets[t.Job], t.Generation)
	}

	// Jobs lost: every enqueued job is in the database.
	for _, e := range h {
		if e.Kind == KindEnqueue && e.Outcome == OutOK {
			if _, ok := rows[e.Job]; !ok {
				add(VJobLost, e.Job, "enqueued job %d is not in the database", e.Job)
			}
		}
	}

	jobs := make([]int64, 0, len(byJob))
	for j := range byJob {
		jobs = append(jobs, j)
	}
	sort.Slice(jobs, func(a, b int) bool { return jobs[a] < jobs[b] })
	for _, job := range jobs {
		events := byJob[job]
		claims := map[int64]*claimView{}
		var gens []int64
		for _, e := range events {
			if e.Kind != KindClaim || e.Outcome != OutOK {
				continue
			}
			if prev, dup := claims[e.Gen]; dup {
				add(VDuplicateGeneration, job, "generation %d was issued twice (to %s and %s)", e.Gen, prev.claim.Proc, e.Proc)
				continue
			}
			claims[e.Gen] = &claimView{claim: e, knownUntil: e.Expires}
			gens = append(gens, e.Gen)
		}
		sort.Slice(gens, func(a, b int) bool { return gens[a] < gens[b] })
		// firstClaimAfter returns the earliest claim of a later generation.
		laterClaim := func(gen int64) (Event, bool) {
			for _, g := range gens {
				if g > gen {
					return claims[g].claim, true
				}
			}
			return Event{}, false
		}
		lostAt := lostInPromotion(job, events, claims, gens, proms, add)
		for _, p := range lostAt {
			lostClaims[p.ev.Detail]++
		}
		// Renewals, in database order.
		var explainedStaleBefore []Event // terminal writes that may have ended a claim
		for _, e := range events {
			switch e.Kind {
			case KindComplete, KindRetry, KindFail:
				if e.Outcome != OutStale && e.Outcome != OutAborted {
					t := e.DBTime
					if t.IsZero() {
						t = time.Time{} // unknown: may have ended it at any time
					}
					explainedStaleBefore = append(explainedStaleBefore, Event{DBTime: t, Sent: e.Sent, At: e.At})
				}
				if cv := claims[e.Gen]; e.Outcome == OutOK && !e.DBTime.IsZero() && cv != nil &&
					(cv.endedAt.IsZero() || e.DBTime.Before(cv.endedAt)) {
					cv.endedAt = e.DBTime
				}
			}
		}
		for _, e := range events {
			if e.Kind != KindRenew {
				continue
			}
			cv := claims[e.Gen]
			if cv == nil {
				continue // its claim's answer was lost: nothing known to compare with
			}
			switch e.Outcome {
			case OutUnknown:
				cv.unknownRen = true
			case OutRenewed, OutDisable:
				if later, ok := laterClaim(e.Gen); ok && !later.DBTime.After(e.DBTime) {
					add(VStaleRenewalAccepted, job, "generation %d was renewed at %s after generation %d was claimed at %s",
						e.Gen, e.DBTime.Format(time.RFC3339Nano), later.Gen, later.DBTime.Format(time.RFC3339Nano))
				} else if !s.ClockJumps && !cv.unknownRen && e.DBTime.Sub(cv.knownUntil) > renewalTimeSlack {
					add(VStaleRenewalAccepted, job, "generation %d was renewed at %s, after its expiry %s",
						e.Gen, e.DBTime.Format(time.RFC3339Nano), cv.knownUntil.Format(time.RFC3339Nano))
				}
				if e.Expires.After(cv.knownUntil) {
					cv.knownUntil = e.Expires
				}
			case OutStale:
				if e.DBTime.Before(cv.knownUntil) {
					if p, lost := lostAt[e.Gen]; lost && !e.DBTime.Before(p.ev.DBTime) {
						continue // asked the promoted primary, which never saw it
					}
					if later, ok := laterClaim(e.Gen); ok && !later.DBTime.After(e.DBTime) {
						continue // overlapping claims, reported below
					}
					explained := false
					// A renewal's database_time is its statement's start; a
					// terminal write that committed while the renewal ran
					// (its time read just before its call) can be later,
					// by as much as the renewal took, and still be what the
					// renewal saw (it may have waited on that write's row
					// lock). A step of the database clock back, after the
					// write's time was read (its invocation known) and
					// before the renewal answered, makes the renewal's
					// time read earlier by that step.
					for _, tw := range explainedStaleBefore {
						allow := renewalSpan(e)
						if tw.Sent != 0 {
							allow += steppedBack(steps, tw.Sent, e.At)
						}
						if tw.DBTime.IsZero() || !tw.DBTime.After(e.DBTime.Add(allow)) {
							explained = true
						}
					}
					// A renewal's database_time is read at its start; a
					// forward step of the database clock while it ran is
					// what its fence saw.
					if !explained && steppedDuring(steps, e.At, e.DBTime, cv.knownUntil) {
						explained = true
					}
					if !explained {
						add(VFalseExpiry, job, "generation %d was answered stale at %s although it had been granted until %s",
							e.Gen, e.DBTime.Format(time.RFC3339Nano), cv.knownUntil.Format(time.RFC3339Nano))
					}
				}
			}
		}
		// At most one live claim at any database instant.
		for i := 0; i+1 < len(gens); i++ {
			// A claim is live until its expiry or its own accepted
			// terminal write, whichever is first: under a database clock
			// stepped back, that write's time can even precede the claim's.
			a, b := claims[gens[i]], claims[gens[i+1]]
			// A claim lost in a promotion (lostInPromotion) is live in
			// no database after the promotion.
			until := a.knownUntil
			if !a.endedAt.IsZero() && a.endedAt.Before(until) {
				until = a.endedAt
			}
			if p, lost := lostAt[a.claim.Gen]; lost && p.ev.DBTime.Before(until) {
				until = p.ev.DBTime
			}
			if b.claim.DBTime.Before(until) {
				add(VOverlappingClaims, job, "generation %d was claimed at %s while generation %d was granted until %s",
					b.claim.Gen, b.claim.DBTime.Format(time.RFC3339Nano), a.claim.Gen, until.Format(time.RFC3339Nano))
			}
		}
		// Terminal writes.
		var committed []Event
		for _, e := range events {
			switch e.Kind {
			case KindComplete, KindRetry, KindFail:
			default:
				continue
			}
			if e.Outcome != OutOK {
				continue
			}
			committed = append(committed, e)
			cv := claims[e.Gen]
			if later, ok := laterClaim(e.Gen); ok {
				if !e.DBTime.IsZero() && later.DBTime.Before(e.DBTime) {
					add(VStaleWriteAccepted, job, "%s of generation %d committed at or after %s, after generation %d was claimed at %s",
						e.Kind, e.Gen, e.DBTime.Format(time.RFC3339Nano), later.Gen, later.DBTime.Format(time.RFC3339Nano))
				} else if e.Kind != KindRetry {
					add(VTerminalLeft, job, "job left %s (generation %d) when generation %d was claimed at %s",
						e.Kind, e.Gen, later.Gen, later.DBTime.Format(time.RFC3339Nano))
				}
			}
			if cv != nil && !cv.unknownRen && !e.DBTime.IsZero() && !e.DBTime.Before(cv.knownUntil) {
				add(VExpiredWriteAccepted, job, "%s of generation %d committed at or after %s, past its expiry %s",
					e.Kind, e.Gen, e.DBTime.Format(time.RFC3339Nano), cv.knownUntil.Format(time.RFC3339Nano))
			}
		}
		final := 0
		for _, e := range committed {
			if e.Kind != KindRetry {
				final++
			}
		}
		if final > 1 {
			add(VNotOneState, job, "%d terminal writes committed for one job", final)
		}
		row, inDB := rows[job]
		if !inDB {
			continue
		}
		for _, e := range committed {
			want := map[string]string{KindComplete: "SUCCEEDED", KindFail: "FAILED"}[e.Kind]
			if want != "" && row.Status != want {
				add(VNotOneState, job, "%s committed but the job ends %s", e.Kind, row.Status)
			}
		}
	}

	// The database's own end state, every job.
	for _, r := range s.Jobs {
		tg := targets[r.ID]
		switch r.Status {
		case "SUCCEEDED":
			if len(tg) != 1 || tg[0] != r.Generation {
				add(VTargetMismatch, r.ID, "job SUCCEEDED with generation %d but its target rows carry generations %v", r.Generation, tg)
			}
		case "QUEUED", "RETRY_SCHEDULED", "FAILED", "CANCELLED":
			if len(tg) != 0 {
				add(VTargetMismatch, r.ID, "job is %s but has target rows %v", r.Status, tg)
			}
		case "RUNNING":
			if len(tg) != 0 {
				add(VTargetMismatch, r.ID, "job is RUNNING but has target rows %v", tg)
			}
			if r.Expires.IsZero() || r.Expires.After(s.Now.Add(s.Lease+time.Second)) {
				add(VNotOneState, r.ID, "job is RUNNING with expiry %v, not claimable within one lease", r.Expires)
			}
		default:
			add(VNotOneState, r.ID, "job has status %q", r.Status)
		}
	}

	// Per process: renewals the client counted as renewed never outnumber
	// the renewed answers its port received.
	type counts struct{ port, observed int }
	perProc := map[string]*counts{}
	procEvents := map[string][]Event{}
	for _, e := range h {
		switch {
		case e.Kind == KindRenew && e.Outcome == OutRenewed:
		case e.Kind == KindObsRenewed:
		default:
			continue
		}
		c := perProc[e.Proc]
		if c == nil {
			c = &counts{}
			perProc[e.Proc] = c
		}
		if e.Kind == KindObsRenewed {
			c.observed++
		} else {
			c.port++
		}
	}
	for _, e := range h {
		if e.Kind == KindRenew || e.Kind == KindObsRenewed {
			procEvents[e.Proc] = append(procEvents[e.Proc], e)
		}
	}
	for proc, c := range perProc {
		if c.observed > c.port {
			vs = append(vs, Violation{Kind: VFailedRenewalCounted, Message: fmt.Sprintf(
				"process %s counted %d renewals as renewed but received only %d renewed answers", proc, c.observed, c.port),
				Events: procEvents[proc]})
		}
	}

	// Forged renewals and lock waits.
	for _, e := range h {
		switch {
		case e.Kind == KindForgedRenew && (e.Outcome == OutRenewed || e.Outcome == OutDisable):
			add(VForgedRenewalAccepted, e.Job, "a renewal with a token never issued was answered %s", e.Outcome)
		case e.Kind == KindLockWait && e.Detail == "claim_next_job":
			vs = append(vs, Violation{Kind: VClaimWaitedOnLock, Job: e.Job,
				Message: "a claim_next_job call waited on a row another session held locked", Events: withEvent(sub(e.Job), e)})
		case e.Kind == KindLockWait && e.Detail == "renew_job_leases":
			vs = append(vs, Violation{Kind: VRenewalWaitedOnLock, Job: e.Job,
				Message: "a renew_job_leases call waited on a row another session held locked", Events: withEvent(sub(e.Job), e)})
		}
	}
	return vs, lostClaims
}

// lostInPromotion returns the claims of job (generation -> the promotion)
// that a promotion lost and the checker therefore treats
// as ended at that promotion. Since a claim's own COMMIT does not wait for
// a synchronous standby (migration 011), a claim acknowledged just before
// the primary died can be missing on the promoted standby; its worker is
// refused there (stale, LF001) but may run until its next renewal or trust
// deadline while the job is claimed again. That is accepted only when all
// of these hold:
//   - the claim was decided by the old primary (promotion.before);
//   - the standby's state at the promotion has a lower generation for the
//     job: the new primary never saw the claim;
//   - no terminal write of the claim was accepted, and no renewal of it was
//     accepted at or after the promotion (the new primary never answered
//     for it).
//
// A renewal of such a claim acknowledged before a synchronous promotion
// is itself a violation (renewals still wait for the standby); before an
// asynchronous one (PromotionAsync: the stream was cut) it may be lost. Every claim
// after a promotion must carry a generation above every generation of the
// job issued before it and above the standby's; the overlap rule then
// still applies to every pair the excuse does not cover.
func lostInPromotion(job int64, events []Event, claims map[int64]*claimView, gens []int64,
	proms []*promotion, add func(kind string, job int64, format string, args ...any)) map[int64]*promotion {
	lost := map[int64]*promotion{}
	for _, p := range proms {
		maxBefore := p.state[job]
		for _, g := range gens {
			if c := claims[g].claim; p.before(c) && g > maxBefore {
				maxBefore = g
			}
		}
		for _, g := range gens {
			if c := claims[g].claim; p.after(c) && g <= maxBefore {
				add(VGenerationNotRaised, job, "generation %d was claimed at %s after the promotion at %s, not above generation %d issued before it",
					g, c.DBTime.Format(time.RFC3339Nano), p.ev.DBTime.Format(time.RFC3339Nano), maxBefore)
			}
		}
	}
	for _, g := range gens {
		c := claims[g].claim
		var p *promotion
		for _, q := range proms {
			if q.before(c) {
				p = q
				break
			}
		}
		if p == nil || p.state[job] >= g {
			continue
		}
		excused := true
		for _, e := range events {
			if e.Gen != g {
				continue
			}
			switch e.Kind {
			case KindComplete, KindRetry, KindFail:
				if e.Outcome == OutOK {
					excused = false
				}
			case KindRenew:
				if e.Outcome != OutRenewed && e.Outcome != OutDisable {
					continue
				}
				switch {
				case !e.DBTime.Before(p.ev.DBTime):
					excused = false // the new primary answered for it
				case p.ev.Detail != PromotionAsync:
					// Renewals still wait for a synchronous standby.
					excused = false
					add(VAcknowledgedLost, job, "generation %d was renewed at %s, acknowledged, and is missing on the standby promoted at %s",
						g, e.DBTime.Format(time.RFC3339Nano), p.ev.DBTime.Format(time.RFC3339Nano))
				}
			}
		}
		if excused {
			lost[g] = p
		}
	}
	return lost
}

// withEvent returns events with e added when it is not already there.
func withEvent(events []Event, e Event) []Event {
	for _, x := range events {
		if x == e {
			return events
		}
	}
	return append(append([]Event(nil), events...), e)
}
