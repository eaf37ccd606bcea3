package bench

import (
	"strings"
	"testing"
	"time"
)

// TestDefaultConfigFullFormUnchanged: make bench (a case time of 10 s, or
// more) warms up, runs the ladders, their WAL passes, the HOT share, the
// enqueue rounds and the heartbeat holds as it did before the short form
// was cut (a sixth of a case time up to a second; 60 rounds of a sixtieth
// of a case time; passes of renewClaims units; three case times; 9
// rounds; a minute); the short form (3 s) runs them shorter but for the
// HOT share (9 s), the hold no shorter than a lease of the default policy
// (30 s).
func TestDefaultConfigFullFormUnchanged(t *testing.T) {
	for _, caseTime := range []time.Duration{FullCaseTime, 20 * time.Second} {
		c := DefaultConfig(caseTime)
		if c.Warmup != min(caseTime/6, time.Second) || c.LadderRounds != ladderSlices || c.LadderWarmup != c.Warmup ||
			c.WALPassUnits != renewClaims || c.EnqueueRounds != 9 || c.HeartbeatHold != time.Minute ||
			c.HOTTime != max(3*caseTime, 9*time.Second) {
			t.Errorf("case time %s: warm-up %s, ladder rounds %d, ladder warm-up %s, WAL pass %d, enqueue rounds %d, "+
				"hold %s, HOT share %s", caseTime, c.Warmup, c.LadderRounds, c.LadderWarmup, c.WALPassUnits, c.EnqueueRounds,
				c.HeartbeatHold, c.HOTTime)
		}
	}
	c := DefaultConfig(3 * time.Second)
	if c.Warmup != 125*time.Millisecond || c.LadderRounds != 20 || c.LadderWarmup != 125*time.Millisecond ||
		c.WALPassUnits != 200 || c.EnqueueRounds != 5 || c.HeartbeatHold != 30*time.Second || c.HOTTime != 9*time.Second {
		t.Errorf("short form: warm-up %s, ladder rounds %d, ladder warm-up %s, WAL pass %d, enqueue rounds %d, hold %s, "+
			"HOT share %s", c.Warmup, c.LadderRounds, c.LadderWarmup, c.WALPassUnits, c.EnqueueRounds, c.HeartbeatHold,
			c.HOTTime)
	}
	for _, caseTime := range []time.Duration{100 * time.Millisecond, time.Second, 3 * time.Second, 7 * time.Second,
		FullCaseTime, time.Minute} {
		c := DefaultConfig(caseTime)
		if c.WALPassUnits < batchSize || c.WALPassUnits%batchSize != 0 || c.WALPassUnits > renewClaims {
			t.Errorf("case time %s: WAL pass of %d units, not a multiple of %d up to %d", caseTime, c.WALPassUnits,
				batchSize, renewClaims)
		}
		if c.HeartbeatHold < 30*time.Second || c.HeartbeatHold > time.Minute || c.LadderRounds < 20 ||
			c.LadderRounds > ladderSlices {
			t.Errorf("case time %s: hold %s, ladder rounds %d", caseTime, c.HeartbeatHold, c.LadderRounds)
		}
	}
}

// TestReportSaysShortHold: RESULTS.md says when the heartbeat held its
// leases for less than the minute issue 11 asks (the short form), and
// not otherwise.
func TestReportSaysShortHold(t *testing.T) {
	for _, c := range []struct {
		hold string
		says bool
	}{{"30s", true}, {"1m0s", false}} {
		rep := &Report{Config: ConfigFacts{CaseTime: "3s", HeartbeatHold: c.hold},
			Heartbeat: []HeartbeatResult{{Database: "as it is", Leases: heartbeatLeases, Held: c.hold}}}
		var b strings.Builder
		if err := rep.WriteMarkdown(&b, "test"); err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(b.String(), "less than the minute issue 11 asks"); got != c.says {
			t.Errorf("hold %s: RESULTS.md says the hold was short: %v, want %v", c.hold, got, c.says)
		}
	}
	if got := thousands(2000) + " " + thousands(200) + " " + thousands(1234567); got != "2,000 200 1,234,567" {
		t.Errorf("thousands: %s", got)
	}
}
