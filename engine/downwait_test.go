package engine

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/rmqtorture/rmqtorture/scenario"
)

// A fault's down wait ends when the burst gives up: a 10-minute kill whose
// publisher gives up (as at load.reconnect_timeout) is recovered then, and
// the result says the downtime was cut short (before, the run waited the
// whole down after its publisher had returned).
func TestDownCutShortWhenTheBurstGivesUp(t *testing.T) {
	f := mustParse(t, `version: 1
scenarios:
  - name: t
    queue: {settle_before_burst: 0s}
    load: {messages: 50, window: 5, modes: [confirm-window]}
    faults: [{action: kill, published: 10, down: 10m}]
`)
	b := &fakeBroker{}
	start := time.Now()
	res, _ := newRunner(b, &fakeTraffic{b: b, holdAt: 10, giveUpAfter: 200 * time.Millisecond}).RunMode(context.Background(), &f.Scenarios[0], scenario.ConfirmWindow)
	if took := time.Since(start); took > 10*time.Second {
		t.Fatalf("the burst took %s: the down wait outlived it", took)
	}
	if ops := strings.Join(b.ops, " "); ops != "kill start" {
		t.Fatalf("ops %q, want the kill recovered", ops)
	}
	if len(res.Faults) != 1 || res.Faults[0].DownMS != 600000 || res.Faults[0].Error != "" {
		t.Fatalf("faults %+v", res.Faults)
	}
	note := regexp.MustCompile(`^kill: down cut short at the end of the burst after \d+\.\d s \(10m0s planned\); the broker was recovered then$`)
	n := 0
	for _, s := range res.Notes {
		if note.MatchString(s) {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("notes %q: want one saying the down was cut short", res.Notes)
	}
}

// A burst that published everything leaves a planned down whole: the
// broker stays down as the scenario says (bounded by validation).
func TestDownKeptWhenTheBurstFinished(t *testing.T) {
	start := time.Now()
	res, ops := runTimeline(t, "      - {action: kill, published: 5, down: 300ms}\n", scenario.FireAndForget)
	if took := time.Since(start); took < 300*time.Millisecond || ops != "kill start" {
		t.Fatalf("took %s, ops %q: want the whole 300ms down, then the start", took, ops)
	}
	for _, s := range res.Notes {
		if regexp.MustCompile(`cut short`).MatchString(s) {
			t.Fatalf("note %q for a down the burst did not cut", s)
		}
	}
}

// A down that ends before the burst does leaves no note.
func TestDownWaitedInFullLeavesNoNote(t *testing.T) {
	res, ops := runTimeline(t, "      - {action: kill, published: 5, down: 1ms}\n", scenario.FireAndForget)
	if ops != "kill start" {
		t.Fatalf("ops %q", ops)
	}
	for _, s := range res.Notes {
		if regexp.MustCompile(`cut short`).MatchString(s) {
			t.Fatalf("note %q for a down that ended in time", s)
		}
	}
}
