package engine

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"time"

	"github.com/rmqtorture/rmqtorture/scenario"
)

// JitterSource returns the random source a burst draws fault jitter from,
// in step order: each firing with jitter J draws rng.Int64N(J) ns. Every
// mode of a run starts from the same seed, so each draws the same delays.
func JitterSource(seed uint64) *rand.Rand {
	return rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
}

// schedule is one burst's fault timeline. Steps run one after the other.
// Every count, percent and in_flight trigger is armed from the start: the
// publisher reports progress after every publish (OnPublished), and the
// first report at or past a step's threshold fires it; an after trigger
// fires on its timer.
type schedule struct {
	faults      []scenario.Fault
	start       time.Time
	sent        func() int // distinct ids published so far
	rng         *rand.Rand
	triggers    []chan struct{}
	fired       []atomic.Bool
	atPublished []atomic.Int64
	thresholds  []int // publish count; MaxInt: none
	inFlightAt  []int // messages awaiting a confirm; MaxInt: none
	// injected[i] is how many firings of step i ran; written by run, read
	// after it returned.
	injected []int
}

// firing is one firing of a step, as run hands it to its apply function.
type firing struct {
	step        int
	fault       *scenario.Fault
	k           int // 1-based firing number
	trigger     string
	jitter      time.Duration // delay actually waited before the firing
	atPublished int           // ids published when the trigger fired
}

// newSchedule arms s's fault steps for a burst of messages starting at
// start; sent reports the distinct ids published so far.
func newSchedule(s *scenario.Scenario, seed uint64, start time.Time, sent func() int) *schedule {
	n := len(s.Faults)
	sc := &schedule{faults: s.Faults, start: start, sent: sent, rng: JitterSource(seed),
		triggers: make([]chan struct{}, n), fired: make([]atomic.Bool, n), atPublished: make([]atomic.Int64, n),
		thresholds: make([]int, n), inFlightAt: make([]int, n), injected: make([]int, n)}
	for i, f := range s.Faults {
		sc.triggers[i] = make(chan struct{})
		sc.thresholds[i], sc.inFlightAt[i] = math.MaxInt, math.MaxInt
		if c, ok := f.CountTrigger(s.Load.Messages); ok {
			sc.thresholds[i] = c
		}
		if f.InFlight != nil {
			sc.inFlightAt[i] = *f.InFlight
		}
	}
	sc.OnPublished(0, 0)
	return sc
}

// OnPublished fires every step whose count or in_flight threshold the
// publisher's progress reached. It is cheap and goroutine-safe.
func (sc *schedule) OnPublished(sent, inFlight int) {
	for i, t := range sc.thresholds {
		if (sent >= t || inFlight >= sc.inFlightAt[i]) && !sc.fired[i].Load() {
			sc.fire(i, sent)
		}
	}
}

func (sc *schedule) fire(i, sent int) {
	if sc.fired[i].CompareAndSwap(false, true) {
		sc.atPublished[i].Store(int64(sent))
		close(sc.triggers[i])
	}
}

// run runs the steps in order until each has fired Firings times, the burst
// ends (pubCtx) or apply returns false. Ctrl-C (ctx) stops it before a
// firing starts, never during one.
func (sc *schedule) run(ctx, pubCtx context.Context, apply func(firing) bool) {
	for i := range sc.faults {
		f := &sc.faults[i]
		if !sc.awaitTrigger(pubCtx, i) {
			return
		}
		var recovered time.Time
		for k := 1; k <= f.Firings(); k++ {
			fr := firing{step: i, fault: f, k: k, trigger: f.Trigger()}
			if k > 1 {
				// A repeating step fires again Every after its previous
				// firing has recovered (the broker accepting AMQP again), so
				// clients get Every of up-time between firings however slow
				// the restart.
				if Sleep(pubCtx, time.Until(recovered.Add(f.Every.D()))) != nil {
					return
				}
				sc.atPublished[i].Store(int64(sc.sent()))
				fr.trigger = fmt.Sprintf("%s after firing %d recovered", f.Every.D(), k-1)
			}
			var ok bool
			if fr.jitter, ok = sc.jitter(ctx, pubCtx, f); !ok || ctx.Err() != nil {
				return // Ctrl-C before the step: do not start it now
			}
			fr.atPublished = int(sc.atPublished[i].Load())
			cont := apply(fr)
			recovered = time.Now()
			sc.injected[i] = k
			if !cont {
				return
			}
		}
	}
}

// awaitTrigger waits for step i's trigger; false when the burst ended
// first. A trigger that fired on the last publish still applies.
func (sc *schedule) awaitTrigger(pubCtx context.Context, i int) bool {
	var timer <-chan time.Time
	if a := sc.faults[i].After; a != nil {
		due := sc.start.Add(a.D())
		if !time.Now().Before(due) {
			sc.fire(i, sc.sent()) // its time passed while an earlier step ran
		}
		t := time.NewTimer(time.Until(due))
		defer t.Stop()
		timer = t.C
	}
	select {
	case <-sc.triggers[i]:
		return true
	case <-timer:
		sc.fire(i, sc.sent())
		return true
	case <-pubCtx.Done():
		select {
		case <-sc.triggers[i]:
			return true
		default:
			return false
		}
	}
}

// jitter draws f's jitter from the seed and waits it. The draw is made
// whatever happens, so later draws stay the seed's; what is returned is the
// delay actually waited (the end of the burst cuts it short). ok is false
// on Ctrl-C.
func (sc *schedule) jitter(ctx, pubCtx context.Context, f *scenario.Fault) (time.Duration, bool) {
	if f.Jitter <= 0 {
		return 0, true
	}
	draw := time.Duration(sc.rng.Int64N(int64(f.Jitter)))
	began := time.Now()
	if Sleep(pubCtx, draw) != nil && ctx.Err() != nil {
		return 0, false
	}
	return min(time.Since(began).Truncate(time.Microsecond), draw), true // timer overshoot is not jitter
}

// missed says why the schedule did not run as planned (nil when it did):
// a step that never fired, fired but never ran, or ran fewer firings than
// planned. A recovery step that did not fire was run at the end instead.
// brokerLost (the broker did not come back) explains the steps after it;
// interrupted (Ctrl-C, which starts no new step) explains what was left.
func (sc *schedule) missed(brokerLost, interrupted bool) error {
	ended := "the burst ended first"
	if interrupted {
		ended = "interrupted before the fault"
	}
	for i, f := range sc.faults {
		switch {
		case f.Action.IsRecovery():
			continue
		case !sc.fired[i].Load():
			return fmt.Errorf("fault %s (%s) never fired: %s", f.Action, f.Trigger(), ended)
		case brokerLost:
		case sc.injected[i] == 0 && interrupted:
			return fmt.Errorf("fault %s (%s) fired but never ran: interrupted before it started", f.Action, f.Trigger())
		case sc.injected[i] == 0:
			return fmt.Errorf("fault %s (%s) fired but never ran: an earlier step was still waiting when the burst ended", f.Action, f.Trigger())
		case sc.injected[i] < f.Firings():
			return fmt.Errorf("fault %s (%s) fired %d of %d times: %s", f.Action, f.Repeats(), sc.injected[i], f.Firings(), strings.Replace(ended, "the fault", "the next firing", 1))
		}
	}
	return nil
}
