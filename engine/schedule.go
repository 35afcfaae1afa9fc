package engine

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
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
// fires on its timer, counted from the burst's start. An after_burst step
// is counted from the burst's last publish, an after_start step from the
// previous step's container start.
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
	// ended is closed when the publisher is done (burstEnded), with
	// lastPublish its last publish call: the origin of after_burst steps.
	ended       chan struct{}
	endOnce     sync.Once
	lastPublish time.Time
	// started returns when the previous step last started the broker's
	// container: the origin of after_start steps (nil: never).
	started func() time.Time
}

// firing is one firing of a step, as run hands it to its apply function.
type firing struct {
	step        int
	fault       *scenario.Fault
	k           int // 1-based firing number
	trigger     string
	jitter      time.Duration // delay actually waited before the firing
	atPublished int           // ids published when the trigger fired
	// nextOnStart: the next step fires after this one starts the broker's
	// container (after_start), so this one must not wait for AMQP logins.
	nextOnStart bool
}

// newSchedule arms s's fault steps for a burst of messages starting at
// start; sent reports the distinct ids published so far.
func newSchedule(s *scenario.Scenario, seed uint64, start time.Time, sent func() int) *schedule {
	n := len(s.Faults)
	sc := &schedule{faults: s.Faults, start: start, sent: sent, rng: JitterSource(seed),
		triggers: make([]chan struct{}, n), fired: make([]atomic.Bool, n), atPublished: make([]atomic.Int64, n),
		thresholds: make([]int, n), inFlightAt: make([]int, n), injected: make([]int, n), ended: make(chan struct{})}
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
		if !sc.awaitTrigger(ctx, pubCtx, i) {
			return
		}
		stepCtx := sc.waitCtx(ctx, pubCtx, f)
		var recovered time.Time
		for k := 1; k <= f.Firings(); k++ {
			fr := firing{step: i, fault: f, k: k, trigger: f.Trigger(),
				nextOnStart: k == f.Firings() && i+1 < len(sc.faults) && sc.faults[i+1].AfterStart != nil}
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
			if fr.jitter, ok = sc.jitter(ctx, stepCtx, f); !ok || ctx.Err() != nil {
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
// first (or, for a step timed after the burst or a container start, on
// Ctrl-C). A trigger that fired on the last publish still applies.
func (sc *schedule) awaitTrigger(ctx, pubCtx context.Context, i int) bool {
	switch f := sc.faults[i]; {
	case f.AfterBurst != nil:
		return sc.awaitFrom(ctx, i, sc.burstEnd, f.AfterBurst.D())
	case f.AfterStart != nil:
		return sc.awaitFrom(ctx, i, sc.containerStarted, f.AfterStart.D())
	}
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

// waitCtx is what cuts step f's waits short: the burst's end for steps
// timed within the burst, only Ctrl-C for steps timed after the burst or
// from a container start (the burst may be over, or stuck reconnecting to
// the broker the previous step took down, and they must still run).
func (sc *schedule) waitCtx(ctx, pubCtx context.Context, f *scenario.Fault) context.Context {
	if f.AfterBurst != nil || f.AfterStart != nil {
		return ctx
	}
	return pubCtx
}

// burstEnded records that the publisher is done, lastPublish being its
// last publish call (zero: none), and releases the after_burst steps.
// Call it once the burst's Publish returned; later calls do nothing.
func (sc *schedule) burstEnded(lastPublish time.Time) {
	sc.endOnce.Do(func() {
		sc.lastPublish = lastPublish
		if lastPublish.IsZero() {
			sc.lastPublish = time.Now()
		}
		close(sc.ended)
	})
}

// burstEnd waits for the end of the burst and returns its last publish;
// false on Ctrl-C.
func (sc *schedule) burstEnd(ctx context.Context) (time.Time, bool) {
	select {
	case <-sc.ended:
		return sc.lastPublish, true
	case <-ctx.Done():
		return time.Time{}, false
	}
}

// containerStarted returns when the previous step started the broker's
// container (validation puts after_start only after such a step).
func (sc *schedule) containerStarted(context.Context) (time.Time, bool) {
	if sc.started == nil {
		return time.Now(), true
	}
	if t := sc.started(); !t.IsZero() {
		return t, true
	}
	return time.Now(), true
}

// awaitFrom fires step i d after the origin returns, waiting under ctx
// only; false on Ctrl-C.
func (sc *schedule) awaitFrom(ctx context.Context, i int, origin func(context.Context) (time.Time, bool), d time.Duration) bool {
	at, ok := origin(ctx)
	if !ok || Sleep(ctx, time.Until(at.Add(d))) != nil {
		return false
	}
	sc.fire(i, sc.sent())
	return true
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
		case !sc.fired[i].Load() && (f.AfterBurst != nil || f.AfterStart != nil):
			return fmt.Errorf("fault %s (%s) never fired: interrupted, or an earlier step did not run", f.Action, f.Trigger())
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
