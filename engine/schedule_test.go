package engine

import (
	"testing"
	"time"

	"github.com/rmqtorture/rmqtorture/scenario"
)

// Count, percent and in_flight thresholds fire on the first report at or
// past them, once, recording the ids published then; missed names the
// first step that did not run.
func TestScheduleThresholdsAndMissed(t *testing.T) {
	f := mustParse(t, `version: 1
scenarios:
  - name: t
    queue: {settle_before_burst: 0s}
    load: {messages: 200, modes: [confirm-window]}
    faults: [{action: kill, published_percent: 10, down: 1ms}]
`)
	s := f.Scenarios[0]
	five, three := 5, 3
	s.Faults = append(s.Faults, scenario.Fault{Action: scenario.Pause, Published: &five}, scenario.Fault{Action: scenario.Stop, InFlight: &three})
	sc := newSchedule(&s, 1, time.Now(), func() int { return 0 })
	sc.OnPublished(4, 2)
	if sc.fired[0].Load() || sc.fired[1].Load() || sc.fired[2].Load() {
		t.Fatal("fired below every threshold")
	}
	sc.OnPublished(4, 3)
	sc.OnPublished(6, 0)
	sc.OnPublished(20, 9)
	sc.OnPublished(30, 9)
	if got := [3]int64{sc.atPublished[0].Load(), sc.atPublished[1].Load(), sc.atPublished[2].Load()}; got != [3]int64{20, 6, 4} {
		t.Fatalf("fired at %v, want [20 6 4]", got)
	}
	if err := sc.missed(false, false); err == nil || err.Error() != "fault kill (10% published) fired but never ran: an earlier step was still waiting when the burst ended" {
		t.Fatalf("missed: %v", err)
	}
	if err := sc.missed(false, true); err == nil || err.Error() != "fault kill (10% published) fired but never ran: interrupted before it started" {
		t.Fatalf("missed after Ctrl-C: %v", err)
	}
	if err := sc.missed(true, false); err != nil {
		t.Fatalf("a lost broker explains every step after it: %v", err)
	}
	sc.injected = []int{1, 1, 1}
	if err := sc.missed(false, false); err != nil {
		t.Fatal(err)
	}
}

// A step whose trigger never came says why: the burst ended, or Ctrl-C
// came first (never "the burst ended first" for an interrupted run).
func TestScheduleMissedNeverFired(t *testing.T) {
	f := mustParse(t, `version: 1
scenarios:
  - name: t
    queue: {settle_before_burst: 0s}
    load: {messages: 200, modes: [confirm-window]}
    faults: [{action: kill, published_percent: 50, down: 1ms, every: 1s, count: 3}]
`)
	s := f.Scenarios[0]
	sc := newSchedule(&s, 1, time.Now(), func() int { return 0 })
	for _, tc := range []struct {
		interrupted bool
		want        string
	}{
		{false, "fault kill (50% published) never fired: the burst ended first"},
		{true, "fault kill (50% published) never fired: interrupted before the fault"},
	} {
		if err := sc.missed(false, tc.interrupted); err == nil || err.Error() != tc.want {
			t.Errorf("interrupted %v: %v, want %q", tc.interrupted, err, tc.want)
		}
	}
	sc.OnPublished(100, 0)
	sc.injected[0] = 1
	if err := sc.missed(false, true); err == nil || err.Error() != "fault kill (every 1s, 3 times) fired 1 of 3 times: interrupted before the next firing" {
		t.Errorf("repeating step cut by Ctrl-C: %v", err)
	}
}

// The same seed draws the same jitter sequence.
func TestJitterSourceReplays(t *testing.T) {
	a, b := JitterSource(7), JitterSource(7)
	for range 5 {
		if x, y := a.Int64N(1000), b.Int64N(1000); x != y {
			t.Fatalf("%d != %d", x, y)
		}
	}
}
