package engine

import (
	"regexp"
	"testing"
	"time"

	"github.com/rmqtorture/rmqtorture/scenario"
)

// A fault's down wait ends with the burst: a 10-minute kill on a 20-order
// burst is recovered as soon as the publisher is done, and the result says
// the downtime was cut short (before, the run waited the whole down after
// its publisher had returned).
func TestDownCutShortAtTheEndOfTheBurst(t *testing.T) {
	start := time.Now()
	res, ops := runTimeline(t, "      - {action: kill, published: 5, down: 10m}\n", scenario.FireAndForget)
	if took := time.Since(start); took > 10*time.Second {
		t.Fatalf("the burst took %s: the down wait outlived it", took)
	}
	if ops != "kill start" {
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
