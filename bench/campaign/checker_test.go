package campaign

import (
	"testing"
	"time"
)

// t0 is a fixed database instant for synthetic histories.
var t0 = time.Date(2026, 12, 3, 8, 0, 0, 0, time.UTC)

func at(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

// claimEv is a claim whose answer is recorded (At) at its database time.
func claimEv(proc string, job, gen int64, dbMs, expMs int) Event {
	return Event{Proc: proc, Kind: KindClaim, Job: job, Gen: gen, Outcome: OutOK, DBTime: at(dbMs), Expires: at(expMs),
		At: int64(dbMs) * int64(time.Millisecond)}
}

// promotionEvs is a synchronous promotion at dbMs whose standby held
// generation gen of job.
func promotionEvs(dbMs int, job, gen int64) []Event {
	atNs := int64(dbMs) * int64(time.Millisecond)
	return []Event{{Proc: "driver", Kind: KindPromotion, DBTime: at(dbMs), At: atNs, Detail: PromotionSync},
		{Proc: "driver", Kind: KindPromotedState, Job: job, Gen: gen, At: atNs}}
}

// lostAtPromotion is the history of a claim (generation 3) the old primary
// acknowledged at 0 ms and the standby promoted at 300 ms never saw (it
// held generation 2): its renewal on the new primary is stale, its
// completion there is refused, and the job is claimed again at 500 ms at
// generation 2^40+1, long before the lost claim's expiry. extra events are
// added; with gen the successor's generation instead.
func lostAtPromotion(succGen int64, extra ...Event) []Event {
	h := []Event{{Proc: "driver", Kind: KindEnqueue, Job: 1, Outcome: OutOK}, claimEv("w1", 1, 3, 0, 2000)}
	h = append(h, promotionEvs(300, 1, 2)...)
	h = append(h,
		Event{Proc: "w1", Kind: KindRenew, Job: 1, Gen: 3, Outcome: OutStale, DBTime: at(400)},
		claimEv("w2", 1, succGen, 500, 2500),
		Event{Proc: "w1", Kind: KindComplete, Job: 1, Gen: 3, Outcome: OutStale, DBTime: at(600)},
		Event{Proc: "w2", Kind: KindComplete, Job: 1, Gen: succGen, Outcome: OutOK, DBTime: at(700)})
	return append(h, extra...)
}

// kinds returns the violation kinds of Check on h and s.
func kinds(h []Event, s Snapshot) map[string]bool {
	out := map[string]bool{}
	for _, v := range Check(h, s) {
		out[v.Kind] = true
	}
	return out
}

// TestCheckerRules feeds the checker small synthetic histories, each
// breaking one property, and one history that breaks none.
func TestCheckerRules(t *testing.T) {
	succeeded := func(job, gen int64) Snapshot {
		return Snapshot{Jobs: []JobRow{{ID: job, Status: "SUCCEEDED", Generation: gen}},
			Targets: []TargetRow{{Job: job, Generation: gen}}, Now: at(10_000), Lease: 2 * time.Second}
	}
	complete := func(proc string, job, gen int64, dbMs int) Event {
		return Event{Proc: proc, Kind: KindComplete, Job: job, Gen: gen, Outcome: OutOK, DBTime: at(dbMs)}
	}
	cases := []struct {
		name string
		h    []Event
		s    Snapshot
		want string // "" for no violation
	}{
		{"healthy", []Event{
			{Proc: "driver", Kind: KindEnqueue, Job: 1, Outcome: OutOK},
			claimEv("w1", 1, 1, 0, 2000),
			{Proc: "w1", Kind: KindRenew, Job: 1, Gen: 1, Outcome: OutRenewed, DBTime: at(500), Expires: at(2500)},
			{Proc: "w1", Kind: KindObsRenewed},
			{Proc: "w1", Kind: KindRenew, Job: 1, Gen: 1, Outcome: OutUnknown},
			complete("w1", 1, 1, 900),
		}, succeeded(1, 1), ""},
		{"generation issued twice", []Event{claimEv("w1", 1, 1, 0, 2000), claimEv("w2", 1, 1, 3000, 5000), complete("w2", 1, 1, 3100)},
			succeeded(1, 1), VDuplicateGeneration},
		{"overlapping claims", []Event{claimEv("w1", 1, 1, 0, 2000), claimEv("w2", 1, 2, 1000, 3000), complete("w2", 1, 2, 1100)},
			succeeded(1, 2), VOverlappingClaims},
		{"renewal extends into the next claim", []Event{claimEv("w1", 1, 1, 0, 2000),
			{Proc: "w1", Kind: KindRenew, Job: 1, Gen: 1, Outcome: OutRenewed, DBTime: at(1500), Expires: at(3500)},
			claimEv("w2", 1, 2, 3000, 5000), complete("w2", 1, 2, 3100)}, succeeded(1, 2), VOverlappingClaims},
		{"false expiry", []Event{claimEv("w1", 1, 1, 0, 2000),
			{Proc: "w1", Kind: KindRenew, Job: 1, Gen: 1, Outcome: OutStale, DBTime: at(500)},
			complete("w1", 1, 1, 900)}, succeeded(1, 1), VFalseExpiry},
		{"stale after the job's own completion is no false expiry", []Event{claimEv("w1", 1, 1, 0, 2000),
			complete("w1", 1, 1, 400),
			{Proc: "w1", Kind: KindRenew, Job: 1, Gen: 1, Outcome: OutStale, DBTime: at(500)}}, succeeded(1, 1), ""},
		// Seen in make soak OPS=200000 SEED=20261206: the database clock
		// stepped 3 s forward between a renewal's start (its database_time)
		// and its fence, which then found the 2 s lease over.
		{"stale because the database clock stepped forward during the renewal is no false expiry", []Event{
			claimEv("w1", 1, 1, 0, 2000),
			{Proc: "driver", Kind: KindClockStep, Detail: "3s", At: 10_000_000_000},
			{Proc: "w1", Kind: KindRenew, Job: 1, Gen: 1, Outcome: OutStale, DBTime: at(500), At: 10_008_000_000},
			claimEv("w2", 1, 2, 3650, 5650), complete("w2", 1, 2, 3700)}, succeeded(1, 2), ""},
		{"a step back during the renewal explains no early stale", []Event{
			claimEv("w1", 1, 1, 0, 2000),
			{Proc: "driver", Kind: KindClockStep, Detail: "-2s", At: 10_000_000_000},
			{Proc: "w1", Kind: KindRenew, Job: 1, Gen: 1, Outcome: OutStale, DBTime: at(500), At: 10_008_000_000},
			complete("w1", 1, 1, 900)}, succeeded(1, 1), VFalseExpiry},
		{"a forward step too small to reach the expiry explains no early stale", []Event{
			claimEv("w1", 1, 1, 0, 2000),
			{Proc: "driver", Kind: KindClockStep, Detail: "1s", At: 10_000_000_000},
			{Proc: "w1", Kind: KindRenew, Job: 1, Gen: 1, Outcome: OutStale, DBTime: at(500), At: 10_008_000_000},
			complete("w1", 1, 1, 900)}, succeeded(1, 1), VFalseExpiry},
		{"a forward step long before the renewal explains no early stale", []Event{
			claimEv("w1", 1, 1, 0, 2000),
			{Proc: "driver", Kind: KindClockStep, Detail: "3s", At: 1_000_000_000},
			{Proc: "w1", Kind: KindRenew, Job: 1, Gen: 1, Outcome: OutStale, DBTime: at(500), At: 10_008_000_000},
			complete("w1", 1, 1, 900)}, succeeded(1, 1), VFalseExpiry},
		{"a forward step after the renewal's answer explains no early stale", []Event{
			claimEv("w1", 1, 1, 0, 2000),
			{Proc: "w1", Kind: KindRenew, Job: 1, Gen: 1, Outcome: OutStale, DBTime: at(500), At: 10_008_000_000},
			{Proc: "driver", Kind: KindClockStep, Detail: "3s", At: 10_100_000_000},
			complete("w1", 1, 1, 900)}, succeeded(1, 1), VFalseExpiry},
		// Both seen in make soak OPS=200000 SEED=20261203 (9 reports, all of these two kinds).
		{"stale while the claim's own completion commits is no false expiry", []Event{claimEv("w1", 1, 1, 0, 2000),
			{Proc: "w1", Kind: KindRenew, Job: 1, Gen: 1, Outcome: OutStale, DBTime: at(500)},
			complete("w1", 1, 1, 515)}, succeeded(1, 1), ""},
		// Seen in make soak OPS=50000 SEED=20261205 (job 12340, the one
		// report): the renewal's statement began at 457 ms, waited on the
		// row lock of the claim's own completion (its time read at 519 ms,
		// 62 ms later) and found the job SUCCEEDED; the call took 185 ms.
		{"stale after waiting on the claim's own completion is no false expiry", []Event{claimEv("w1", 1, 1, 131, 2131),
			{Proc: "w1", Kind: KindRenew, Job: 1, Gen: 1, Outcome: OutStale, DBTime: at(457), Sent: 400_000_000, At: 585_000_000},
			complete("w1", 1, 1, 519)}, succeeded(1, 1), ""},
		{"a completion begun after a quick stale renewal explains nothing", []Event{claimEv("w1", 1, 1, 131, 2131),
			{Proc: "w1", Kind: KindRenew, Job: 1, Gen: 1, Outcome: OutStale, DBTime: at(457), Sent: 450_000_000, At: 470_000_000},
			complete("w1", 1, 1, 519)}, succeeded(1, 1), VFalseExpiry},
		// Seen in make soak OPS=20000 SEED=20261205 (job 1421, the one
		// report): the claim's completion read its time (8,979 ms) before
		// the database clock was stepped 2 s back; the renewal, sent just
		// before the step, began after it (7,140 ms), waited on the
		// completion's row lock and found the job SUCCEEDED.
		{"stale after its own completion across a clock stepped back is no false expiry", []Event{
			claimEv("w2", 1, 2, 8697, 10697),
			{Proc: "w2", Kind: KindComplete, Job: 1, Gen: 2, Outcome: OutOK, DBTime: at(8979), Sent: 166_977_000_000, At: 167_166_000_000},
			{Proc: "driver", Kind: KindClockStep, Detail: "-2s", At: 167_050_000_000},
			{Proc: "w2", Kind: KindRenew, Job: 1, Gen: 2, Outcome: OutStale, DBTime: at(7140), Sent: 167_013_000_000, At: 167_335_000_000}},
			succeeded(1, 2), ""},
		{"a clock stepped back after the stale renewal answered explains nothing", []Event{
			claimEv("w2", 1, 2, 8697, 10697),
			{Proc: "w2", Kind: KindComplete, Job: 1, Gen: 2, Outcome: OutOK, DBTime: at(8979), Sent: 166_977_000_000, At: 167_166_000_000},
			{Proc: "w2", Kind: KindRenew, Job: 1, Gen: 2, Outcome: OutStale, DBTime: at(7140), Sent: 167_013_000_000, At: 167_335_000_000},
			{Proc: "driver", Kind: KindClockStep, Detail: "-2s", At: 167_400_000_000}},
			succeeded(1, 2), VFalseExpiry},
		{"a claim ended by its retry under a clock stepped back is no overlap", []Event{claimEv("w1", 1, 1, 4000, 6000),
			{Proc: "w1", Kind: KindRetry, Job: 1, Gen: 1, Outcome: OutOK, DBTime: at(2000)},
			claimEv("w2", 1, 2, 5000, 7000), complete("w2", 1, 2, 5100)}, succeeded(1, 2), ""},
		{"overlapping claims ended by a later retry", []Event{claimEv("w1", 1, 1, 0, 2000), claimEv("w2", 1, 2, 1000, 3000),
			{Proc: "w1", Kind: KindRetry, Job: 1, Gen: 1, Outcome: OutOK, DBTime: at(1500)}, complete("w2", 1, 2, 1600)},
			succeeded(1, 2), VOverlappingClaims},
		{"superseded write accepted", []Event{claimEv("w1", 1, 1, 0, 2000), claimEv("w2", 1, 2, 2100, 4100),
			complete("w1", 1, 1, 2200)}, succeeded(1, 1), VStaleWriteAccepted},
		{"expired write accepted", []Event{claimEv("w1", 1, 1, 0, 2000), complete("w1", 1, 1, 2100)},
			succeeded(1, 1), VExpiredWriteAccepted},
		{"terminal state left", []Event{claimEv("w1", 1, 1, 0, 2000), complete("w1", 1, 1, 500), claimEv("w2", 1, 2, 2100, 4100)},
			Snapshot{Jobs: []JobRow{{ID: 1, Status: "RUNNING", Generation: 2, Expires: at(4100)}},
				Targets: []TargetRow{{Job: 1, Generation: 1}}, Now: at(5000), Lease: 2 * time.Second}, VTerminalLeft},
		{"target rows of another generation", []Event{claimEv("w1", 1, 1, 0, 2000), claimEv("w2", 1, 2, 2100, 4100),
			complete("w2", 1, 2, 2200)},
			Snapshot{Jobs: []JobRow{{ID: 1, Status: "SUCCEEDED", Generation: 2}},
				Targets: []TargetRow{{Job: 1, Generation: 1}, {Job: 1, Generation: 2}}, Now: at(5000)}, VTargetMismatch},
		{"job lost", []Event{{Proc: "driver", Kind: KindEnqueue, Job: 9, Outcome: OutOK}}, Snapshot{Now: at(0)}, VJobLost},
		{"failed renewal counted", []Event{claimEv("w1", 1, 1, 0, 2000),
			{Proc: "w1", Kind: KindRenew, Job: 1, Gen: 1, Outcome: OutUnknown},
			{Proc: "w1", Kind: KindObsRenewed}, complete("w1", 1, 1, 900)}, succeeded(1, 1), VFailedRenewalCounted},
		{"forged renewal accepted", []Event{claimEv("zombie", 1, 1, 0, 2000),
			{Proc: "zombie", Kind: KindForgedRenew, Job: 1, Gen: 1, Outcome: OutRenewed, DBTime: at(100), Expires: at(2100)},
			complete("zombie", 1, 1, 200)}, succeeded(1, 1), VForgedRenewalAccepted},
		// Migration 011: a claim's COMMIT does not wait for the standby.
		{"a claim lost in a synchronous promotion overlaps its successor", lostAtPromotion(1<<40 + 1),
			succeeded(1, 1<<40+1), ""},
		{"a lost claim whose completion was accepted is still an overlap", lostAtPromotion(1<<40+1,
			Event{Proc: "w1", Kind: KindComplete, Job: 1, Gen: 3, Outcome: OutOK, DBTime: at(650)}),
			succeeded(1, 1<<40+1), VOverlappingClaims},
		{"a lost claim renewed on the new primary is still an overlap", lostAtPromotion(1<<40+1,
			Event{Proc: "w1", Kind: KindRenew, Job: 1, Gen: 3, Outcome: OutRenewed, DBTime: at(450), Expires: at(2450)}),
			succeeded(1, 1<<40+1), VOverlappingClaims},
		{"a successor at the lost claim's generation", lostAtPromotion(3),
			succeeded(1, 3), VDuplicateGeneration},
		{"a successor below the lost claim's generation overlaps it", lostAtPromotion(2),
			succeeded(1, 2), VOverlappingClaims},
		{"a successor below the lost claim's generation was not raised", lostAtPromotion(2),
			succeeded(1, 2), VGenerationNotRaised},
		{"a claim the standby held is not lost", func() []Event {
			h := lostAtPromotion(1<<40 + 1)
			h[3].Gen = 3 // the standby held generation 3
			return h
		}(), succeeded(1, 1<<40+1), VOverlappingClaims},
		{"a claim made after the promotion is not lost", append(append([]Event{claimEv("w1", 1, 1<<40+1, 350, 2350)},
			promotionEvs(300, 1, 0)...),
			Event{Proc: "w1", Kind: KindRenew, Job: 1, Gen: 1<<40 + 1, Outcome: OutStale, DBTime: at(400)},
			claimEv("w2", 1, 1<<40+2, 500, 2500), complete("w2", 1, 1<<40+2, 700)),
			succeeded(1, 1<<40+2), VOverlappingClaims},
		{"a claim recorded after the promotion began is not lost", func() []Event {
			h := lostAtPromotion(1<<40 + 1)
			h[1].At = h[2].At + 1 // its answer was recorded after the promotion note
			return h
		}(), succeeded(1, 1<<40+1), VOverlappingClaims},
		{"an acknowledged renewal lost in an asynchronous promotion", func() []Event {
			h := lostAtPromotion(1<<40+1,
				Event{Proc: "w1", Kind: KindRenew, Job: 1, Gen: 3, Outcome: OutRenewed, DBTime: at(100), Expires: at(2100)})
			h[2].Detail = PromotionAsync
			return h
		}(), succeeded(1, 1<<40+1), ""},
		{"an acknowledged renewal missing after a synchronous promotion", lostAtPromotion(1<<40+1,
			Event{Proc: "w1", Kind: KindRenew, Job: 1, Gen: 3, Outcome: OutRenewed, DBTime: at(100), Expires: at(2100)}),
			succeeded(1, 1<<40+1), VAcknowledgedLost},
		{"claim waited on a lock", []Event{{Proc: "driver", Kind: KindLockWait, Job: 1, Detail: "claim_next_job"}},
			Snapshot{Jobs: []JobRow{{ID: 1, Status: "QUEUED"}}, Now: at(0)}, VClaimWaitedOnLock},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := kinds(c.h, c.s)
			if c.want == "" {
				if len(got) != 0 {
					t.Fatalf("violations on a correct history: %v", got)
				}
				return
			}
			if !got[c.want] {
				t.Fatalf("want %s, got %v", c.want, got)
			}
		})
	}
}

// TestLoadHistoryUnknown checks that an invocation without an answer (a
// process killed mid-call) comes back as unknown, and that a torn last
// line is ignored.
func TestLoadHistoryUnknown(t *testing.T) {
	dir := t.TempDir()
	r, err := NewRecorder(dir+"/w1.jsonl", "w1", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	op := r.Invoke(KindClaim, 0, 0)
	time.Sleep(2 * time.Millisecond)
	r.Done(op, Event{Kind: KindClaim, Job: 5, Gen: 1, Outcome: OutOK})
	r.Invoke(KindComplete, 5, 1)
	_, _ = r.f.Write([]byte(`{"proc":"w1","op":`))
	_ = r.Close()
	h, err := LoadHistory(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(h) != 2 || h[0].Outcome != OutOK || h[0].Job != 5 || h[1].Kind != KindComplete || h[1].Outcome != OutUnknown {
		t.Fatalf("history: %v", h)
	}
	// The answer carries when its invocation was recorded (2 ms or more
	// before it); an invocation without an answer has no other to carry.
	if h[0].Sent == 0 || h[0].At-h[0].Sent < int64(2*time.Millisecond) || h[1].Sent != 0 {
		t.Fatalf("invocation times: answer at %d sent %d, unanswered sent %d", h[0].At, h[0].Sent, h[1].Sent)
	}
	if CountOps(h) != 2 {
		t.Fatalf("CountOps = %d", CountOps(h))
	}
}
