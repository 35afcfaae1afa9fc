package cmd

import (
	"fmt"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/rmqtorture/rmqtorture/metrics"
	"github.com/rmqtorture/rmqtorture/scenario"
)

// Phases of a burst as the progress line names them.
const (
	phasePublishing = "publishing" // burst start → every order published and settled (or given up)
	phaseRecovery   = "recovery"   // the burst ended while a fault still holds the broker
	phaseFinishing  = "finishing"  // the burst ended; waiting for the fault steps or live consumers
	phaseDraining   = "draining"   // the queue is being drained and reconciled
)

// statusLine is what the progress line shows at one moment; render draws it.
type statusLine struct {
	// Waiting, when set, is shown alone with Elapsed: no burst is running
	// ("starting the broker").
	Waiting string
	Elapsed time.Duration

	Mode  scenario.Mode
	K, N  int    // mode k of n in this scenario (every matrix cell counted)
	Phase string // phasePublishing…phaseDraining
	// Done of Total: while publishing, distinct ids published of the
	// orders in the burst; while draining, distinct ids delivered of those
	// published.
	Done, Total int
	Republished int // publish attempts beyond the first of each id
	InFlight    int // published in confirm mode, no confirm yet
	InDoubt     int // in doubt, or republished after being in doubt and not yet confirmed
	// Rate is ids published (draining: delivered) per second lately;
	// negative when not known yet.
	Rate float64
	// ETA is the time left at Rate; negative when unknown.
	ETA    time.Duration
	Broker metrics.BrokerState
	// BrokerFor is how long the broker has been in Broker, when not up
	// (0: not shown).
	BrokerFor time.Duration
}

// segment is one field of the progress line; when the line is too wide
// the segments of highest keep are shown first (the earlier one on a tie)
// and each other one only if it still fits.
type segment struct {
	text string
	keep int
	// glue joins the segment to the one before with one space, and shows
	// it only with that one ("broker down" "4s").
	glue bool
}

// segments are the line's fields in display order.
func (l statusLine) segments() []segment {
	if l.Waiting != "" {
		return []segment{{text: l.Waiting, keep: 100}, {text: fmt.Sprintf("%.0fs", l.Elapsed.Seconds()), keep: 90}}
	}
	segs := []segment{{text: fmt.Sprintf("mode %d/%d %s %s", l.K, l.N, l.Mode, l.Phase), keep: 100}}
	count := fmt.Sprintf("%s/%s", num(l.Done), num(l.Total))
	if l.Total > 0 {
		count += fmt.Sprintf(" %d%%", l.Done*100/l.Total) // floored: 100% only when complete
	}
	if l.Phase == phaseDraining {
		count = "delivered " + count
	}
	segs = append(segs, segment{text: count, keep: 98})
	if l.Republished > 0 {
		segs = append(segs, segment{text: "+" + num(l.Republished) + " republished", keep: 60})
	}
	if l.Mode.ConfirmMode() {
		segs = append(segs, segment{text: "in flight " + num(l.InFlight), keep: 40})
		doubt := segment{text: "in doubt " + num(l.InDoubt), keep: 45}
		if l.InDoubt > 0 {
			doubt.keep = 70
		}
		segs = append(segs, doubt)
	}
	if (l.Phase == phasePublishing || l.Phase == phaseDraining) && l.Rate >= 0 {
		segs = append(segs, segment{text: num(int(l.Rate+0.5)) + " msg/s", keep: 65})
		if l.ETA >= 0 {
			segs = append(segs, segment{text: "ETA " + shortDuration(l.ETA), keep: 50})
		}
	}
	if l.Broker == metrics.StateUp {
		return append(segs, segment{text: "broker up", keep: 30})
	}
	segs = append(segs, segment{text: "broker " + string(l.Broker), keep: 80})
	if l.BrokerFor > 0 {
		segs = append(segs, segment{text: shortDuration(l.BrokerFor), keep: 35, glue: true})
	}
	return segs
}

// render draws the line in fewer than width columns (the last column is
// left free, so a terminal never wraps it): fields are dropped, least
// useful first, and what still does not fit is cut with "…". A width
// below 10 is taken as 10.
func (l statusLine) render(width int) string {
	return fit(l.segments(), width)
}

// fit joins segs in a line narrower than width: segments are taken in
// order of keep, each one only if the line still fits with it, so a short
// field can show where a longer, more useful one did not fit. The first
// segment is always shown, cut if need be.
func fit(segs []segment, width int) string {
	limit := max(width, 10) - 1
	order := make([]int, len(segs))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return segs[order[a]].keep > segs[order[b]].keep })
	shown := make([]bool, len(segs))
	join := func() string {
		var b strings.Builder
		for i, s := range segs {
			if !shown[i] {
				continue
			}
			if b.Len() > 0 {
				b.WriteString(map[bool]string{true: " ", false: "  "}[s.glue])
			}
			b.WriteString(s.text)
		}
		return b.String()
	}
	for n, i := range order {
		if segs[i].glue && (i == 0 || !shown[i-1]) {
			continue
		}
		shown[i] = true
		if n > 0 && utf8.RuneCountInString(join()) > limit {
			shown[i] = false
		}
	}
	return cut(join(), limit)
}

// cut shortens s to at most n runes, ending it with "…" when cut.
func cut(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// shortDuration is d rounded to whole seconds: "7s", "1m05s", "1h02m".
func shortDuration(d time.Duration) string {
	s := int(d.Round(time.Second).Seconds())
	switch {
	case d < 500*time.Millisecond:
		return "<1s"
	case s < 60:
		return fmt.Sprintf("%ds", s)
	case s < 3600:
		return fmt.Sprintf("%dm%02ds", s/60, s%60)
	}
	return fmt.Sprintf("%dh%02dm", s/3600, s%3600/60)
}

// Phase lines: one short line per step of a run, printed above the
// progress line on a terminal. Each starts with a label of phaseLabel
// columns.
const phaseLabel = 10

func phaseLine(label, format string, args ...any) string {
	return fmt.Sprintf("%-*s %s", phaseLabel-1, label, fmt.Sprintf(format, args...))
}

// phaseBrokerStarting: the broker is being created (image) or attached
// to (named: "--container NAME", "--containers A,B,C" or "--uri URL",
// its password redacted).
func phaseBrokerStarting(image, named string, nodes int) string {
	switch {
	case strings.HasPrefix(named, "--uri "):
		return phaseLine("broker", "using %s (not started by rmqtorture)", strings.TrimPrefix(named, "--uri "))
	case named != "":
		return phaseLine("broker", "using %s", strings.TrimPrefix(strings.TrimPrefix(named, "--containers "), "--container "))
	case nodes > 1:
		return phaseLine("broker", "starting a %d-node cluster of %s", nodes, image)
	}
	return phaseLine("broker", "starting %s", image)
}

// phaseBrokerReady: the broker accepted an AMQP login took after starting.
func phaseBrokerReady(took time.Duration, version string) string {
	if version == "" {
		return phaseLine("broker", "ready in %.1fs", took.Seconds())
	}
	return phaseLine("broker", "ready in %.1fs (%s)", took.Seconds(), version)
}

// phaseKept: --keep left the broker (container or cluster name) running
// at url (without credentials).
func phaseKept(name, url string) string {
	return phaseLine("broker", "kept running: %s, %s", name, url)
}

// phaseBurst: mode k of n starts its burst of messages orders.
func phaseBurst(k, n int, m scenario.Mode, messages int) string {
	return phaseLine(fmt.Sprintf("mode %d/%d", k, n), "%s: burst of %s orders", m, num(messages))
}

// phaseFault: a fault step took effect on target, sent of total orders
// published (when its trigger fired), at since the burst start.
func phaseFault(action, target string, sent, total int, at time.Duration) string {
	return phaseLine("fault", "%s %s at %s/%s published (%.1fs into the burst)", action, target, num(sent), num(total), at.Seconds())
}

// phaseRecovered: target accepts AMQP logins again, after the fault that
// took it down (after: since that fault took effect; 0 when unknown).
func phaseRecovered(target string, after time.Duration, action string) string {
	if after <= 0 || action == "" {
		return phaseLine("recovery", "%s back", target)
	}
	return phaseLine("recovery", "%s back %.1fs after the %s", target, after.Seconds(), action)
}

// phaseNotRecovered: target did not come back after action.
func phaseNotRecovered(target, action string) string {
	return phaseLine("recovery", "%s not back after %s: the remaining modes will not run", target, action)
}

// phaseCleared: a fault without a broker restart was cleared (memory
// alarm, unpause, reconnect).
func phaseCleared(action, target string) string {
	return phaseLine("recovery", "%s on %s cleared", action, target)
}

// phaseDrain: the drain delivered received of the sent ids in took.
func phaseDrain(received, sent int, took time.Duration) string {
	return phaseLine("drain", "%s/%s delivered in %.1fs", num(received), num(sent), took.Seconds())
}

// phaseModeDone: mode k of n finished with result r.
func phaseModeDone(k, n int, r scenario.ModeResult) string {
	label := fmt.Sprintf("mode %d/%d", k, n)
	if r.NotRun {
		return phaseLine(label, "%s: %s", r.Mode, strings.Join(r.Verdict.Reasons, "; "))
	}
	mode := string(r.Mode)
	if c := r.Cell; c != nil {
		mode += fmt.Sprintf(" (%s, %s, #%d)", c.QueueType, scenario.Persistence(c.Persistent), c.Repeat)
	}
	parts := []string{fmt.Sprintf("%s: %s", mode, r.Verdict.Status)}
	if r.Mode.ConfirmMode() {
		parts = append(parts, fmt.Sprintf("%s of %s lost", num(r.Lost), num(r.Sent)))
	} else {
		parts = append(parts, fmt.Sprintf("%s of %s missing", num(r.UnconfirmedMissing), num(r.Sent)))
	}
	if r.InDoubt > 0 {
		parts = append(parts, num(r.InDoubt)+" in doubt")
	}
	if r.Duplicates > 0 {
		parts = append(parts, plural(r.Duplicates, "duplicate"))
	}
	return phaseLine(label, "%s", strings.Join(parts, ", "))
}

// phaseVerdict: the scenario's verdict over its modes, after took.
func phaseVerdict(v scenario.Verdict, modes int, took time.Duration) string {
	return phaseLine("verdict", "%s (%s in %s)", v.Status, plural(modes, "mode"), shortDuration(took))
}

// modesToRun is how many bursts s runs: its modes in every matrix cell.
func modesToRun(s *scenario.Scenario) int { return len(s.Cells()) * len(s.Load.Modes) }

// plural is n and the noun, with an s unless n is 1: "3 modes", "1 mode".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return num(n) + " " + noun + "s"
}
