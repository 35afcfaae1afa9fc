package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/rmqtorture/rmqtorture/metrics"
	"github.com/rmqtorture/rmqtorture/scenario"
)

// cleanupTimeout bounds broker restoration and a drain after an interrupt.
const cleanupTimeout = 90 * time.Second

// injector applies one burst's fault steps through the Runner's ports and
// records them on the burst's timeline. What an action is (its recovery, the
// state it leaves, whether it is client-side) comes from the action table
// (scenario.ActionSpec); how to play it on a port comes from playbook.
type injector struct {
	ports        Ports
	log          *slog.Logger
	s            *scenario.Scenario
	tl           *metrics.Timeline
	start        time.Time
	sent         func() int // distinct ids published so far
	target       scenario.Target
	consumers    LiveConsumers // nil without live consumers
	misroute     chan struct{}
	misrouteOnce sync.Once
	pending      scenario.Action // recovery a manual_recovery step left for a later step
	// notes are errors nobody could act on (a recovery after a failed fault
	// that failed too): they go to the result's notes. altered is set when
	// the broker may be left altered by one of them.
	notes   []string
	altered error
	// burst is done when the burst ends: the publisher finished or gave
	// up, load.burst_timeout passed, or Ctrl-C. A fault's down wait ends
	// with it (nil: with Ctrl-C only).
	burst context.Context
}

// play is how one action is applied: it returns the fault event's detail.
type play func(in *injector, ctx context.Context, f *scenario.Fault, rec *scenario.FaultRecord) (string, error)

var errNoPort = errors.New("the runner has no port for this action")

// playbook plays each fault action that is not a recovery step on its port;
// unplay undoes in place the actions recovered without a recovery step
// (memory-alarm), and recoverWith plays the recovery steps.
var (
	playbook = map[scenario.Action]play{
		scenario.Kill: func(in *injector, ctx context.Context, f *scenario.Fault, _ *scenario.FaultRecord) (string, error) {
			return fmt.Sprintf("kill %s (Docker API call returned; the signal lands during the call)", f.Signal), withPort(in.ports.Lifecycle, func() error { return in.ports.Lifecycle.Kill(ctx, in.target, f.Signal) })
		},
		scenario.Stop: func(in *injector, ctx context.Context, f *scenario.Fault, _ *scenario.FaultRecord) (string, error) {
			return fmt.Sprintf("stop (SIGTERM, SIGKILL after %s): the broker exited", f.Grace.D()), withPort(in.ports.Lifecycle, func() error { return in.ports.Lifecycle.Stop(ctx, in.target, f.Grace.D()) })
		},
		scenario.Restart: func(in *injector, ctx context.Context, f *scenario.Fault, _ *scenario.FaultRecord) (string, error) {
			return fmt.Sprintf("restart (graceful, %s grace)", f.Grace.D()), withPort(in.ports.Lifecycle, func() error { return in.ports.Lifecycle.Restart(ctx, in.target, f.Grace.D()) })
		},
		scenario.Pause: func(in *injector, ctx context.Context, _ *scenario.Fault, _ *scenario.FaultRecord) (string, error) {
			return "pause: broker frozen, connections hang", withPort(in.ports.Freezer, func() error { return in.ports.Freezer.Pause(ctx, in.target) })
		},
		scenario.Disconnect: func(in *injector, ctx context.Context, _ *scenario.Fault, _ *scenario.FaultRecord) (string, error) {
			return "disconnect: broker removed from its network, client links fail", withPort(in.ports.Network, func() error { return in.ports.Network.Disconnect(ctx, in.target) })
		},
		scenario.MemoryAlarm: func(in *injector, ctx context.Context, _ *scenario.Fault, _ *scenario.FaultRecord) (string, error) {
			return "memory alarm raised (vm_memory_high_watermark set below use)", withPort(in.ports.Operator, func() error { return in.ports.Operator.MemoryAlarm(ctx, in.target, true) })
		},
		scenario.CloseConnections: func(in *injector, ctx context.Context, _ *scenario.Fault, _ *scenario.FaultRecord) (string, error) {
			return "broker closed every client connection (rabbitmqctl close_all_connections)", withPort(in.ports.Operator, func() error { return in.ports.Operator.CloseConnections(ctx, in.target) })
		},
		scenario.PublishToMissingExchange: func(in *injector, _ context.Context, _ *scenario.Fault, _ *scenario.FaultRecord) (string, error) {
			in.misrouteOnce.Do(func() { close(in.misroute) })
			return "next publish goes to a missing exchange", nil
		},
		scenario.CrashConsumer: func(in *injector, _ context.Context, f *scenario.Fault, rec *scenario.FaultRecord) (string, error) {
			if in.consumers == nil {
				return string(f.Action), errors.New("no live consumers to crash")
			}
			var err error
			rec.UnackedAtCrash, err = in.consumers.Crash(f.Down.D())
			return fmt.Sprintf("crash-consumer: consumer 0 crashed before its ack with %d processed deliveries unacknowledged; back after %s", rec.UnackedAtCrash, f.Down.D()), err
		},
	}
	unplay = map[scenario.Action]func(in *injector, ctx context.Context) (string, error){
		scenario.MemoryAlarm: func(in *injector, ctx context.Context) (string, error) {
			return "memory alarm cleared (watermark restored)", withPort(in.ports.Operator, func() error { return in.ports.Operator.MemoryAlarm(ctx, in.target, false) })
		},
	}
	recoverWith = map[scenario.Action]func(in *injector, ctx context.Context) error{
		scenario.Start: func(in *injector, ctx context.Context) error {
			return withPort(in.ports.Lifecycle, func() error { return in.ports.Lifecycle.Start(ctx, in.target) })
		},
		scenario.Unpause: func(in *injector, ctx context.Context) error {
			return withPort(in.ports.Freezer, func() error { return in.ports.Freezer.Unpause(ctx, in.target) })
		},
		scenario.Reconnect: func(in *injector, ctx context.Context) error {
			return withPort(in.ports.Network, func() error { return in.ports.Network.Reconnect(ctx, in.target) })
		},
	}
)

// withPort runs call, or fails when port is nil.
func withPort[P any](port P, call func() error) error {
	if any(port) == nil {
		return errNoPort
	}
	return call()
}

// event records an event of kind about action on the injector's target.
func (in *injector) event(at time.Time, kind metrics.EventKind, a scenario.Action, detail string) {
	in.tl.Record(metrics.Event{At: at, Kind: kind, Action: string(a), Target: in.target.String(), Detail: detail})
}

// inject applies one fault step and, unless the step says manual_recovery,
// runs its recovery after Down. Once a step has started it is applied and
// recovered under a context that ignores Ctrl-C (half a fault, a kill whose
// restart was skipped, is the worst outcome), with its own deadline.
func (in *injector) inject(ctx context.Context, f *scenario.Fault, trigger string) (scenario.FaultRecord, error) {
	rec := scenario.FaultRecord{Action: f.Action, Signal: f.Signal, Trigger: trigger, DownMS: metrics.Millis(f.Down.D())}
	at := time.Now()
	rec.AtMS = metrics.Millis(at.Sub(in.start))
	in.event(at, metrics.EvTrigger, f.Action, fmt.Sprintf("%s (%s)", f.Action, rec.Trigger))
	if f.Action.IsRecovery() {
		in.pending = ""
		out, err := in.recoverBroker(ctx, f.Action)
		out.Trigger, out.AtMS = rec.Trigger, rec.AtMS
		if err != nil {
			return out, fmt.Errorf("broker not back after %s: %w", f.Action, err)
		}
		return out, nil
	}
	fctx, fcancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer fcancel()
	apply, ok := playbook[f.Action]
	if !ok {
		rec.Error = fmt.Sprintf("no way to play fault action %q", f.Action)
		return rec, errors.New(rec.Error)
	}
	detail, err := apply(in, fctx, f, &rec)
	if err != nil {
		rec.Error = err.Error()
		in.undoFailed(ctx, f.Action)
		return rec, fmt.Errorf("fault %s: %w", f.Action, err)
	}
	applied := time.Now()
	rec.InjectMS = metrics.Millis(applied.Sub(at))
	rec.PublishedAtInject = in.sent()
	in.event(applied, metrics.EvFault, f.Action, detail)
	in.log.Info("fault applied", "action", f.Action, "target", in.target, "trigger", rec.Trigger, "inject", applied.Sub(at).Round(time.Millisecond), "published", rec.PublishedAtInject)
	return in.recoverStep(ctx, fctx, f, rec, applied)
}

// recoverStep brings the broker back after an applied step, as the action
// table says: a step that takes the broker down and back by itself
// (restart) is waited for; one with a recovery runs it after Down, or
// leaves it to a later step (manual_recovery).
func (in *injector) recoverStep(ctx, fctx context.Context, f *scenario.Fault, rec scenario.FaultRecord, applied time.Time) (scenario.FaultRecord, error) {
	if _, _, down := f.Action.LeavesState(); down && !f.Action.Recovers() {
		if err := in.waitReady(fctx, f.Action); err != nil {
			rec.Error = err.Error()
			return rec, fmt.Errorf("broker not back after %s: %w", f.Action, err)
		}
		return rec, nil
	}
	if !f.Action.Recovers() {
		return rec, nil
	}
	recovery, _ := f.Action.Recovery()
	if f.ManualRecovery {
		in.pending = recovery
		return rec, nil
	}
	in.waitDown(ctx, f, applied)
	if undo, ok := unplay[f.Action]; ok {
		detail, err := undo(in, fctx)
		if err != nil {
			rec.Error = err.Error()
			return rec, fmt.Errorf("clear %s: %w", f.Action, err)
		}
		in.event(time.Time{}, metrics.EvFaultCleared, f.Action, detail)
		return rec, nil
	}
	out, err := in.recoverBroker(ctx, recovery)
	if err != nil {
		rec.Error = out.Error
		return rec, fmt.Errorf("broker not back after %s: %w", f.Action, err)
	}
	in.log.Info("broker ready again", "downtime_since_fault", time.Since(applied).Round(time.Millisecond))
	return rec, nil
}

// waitDown waits out a fault's planned downtime. It is cut short by
// Ctrl-C, and by the end of the burst: once the publisher has finished or
// given up (load.reconnect_timeout, load.burst_timeout) nothing is left to
// measure, and a run must not outlast its burst by a long down. The
// recovery runs either way; a downtime cut by the burst's end is noted.
func (in *injector) waitDown(ctx context.Context, f *scenario.Fault, applied time.Time) {
	wait := ctx
	if in.burst != nil {
		wait = in.burst
	}
	if Sleep(wait, f.Down.D()) == nil || ctx.Err() != nil {
		return
	}
	after := time.Since(applied)
	in.log.Info("down cut short: the burst ended", "action", f.Action, "after", after.Round(time.Millisecond), "planned", f.Down.D())
	in.notes = append(in.notes, fmt.Sprintf("%s: down cut short at the end of the burst after %.1f s (%s planned); the broker was recovered then",
		f.Action, after.Seconds(), f.Down.D()))
}

// undoFailed tries the recovery of an action whose call failed: it may have
// failed after the action landed (a timeout), and the broker must not be
// left down. A failure here is noted and makes the run inconclusive.
func (in *injector) undoFailed(ctx context.Context, a scenario.Action) {
	var err error
	if recovery, _ := a.Recovery(); recovery != "" {
		_, err = in.recoverBroker(ctx, recovery)
	} else if undo, ok := unplay[a]; ok {
		uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
		_, err = undo(in, uctx)
		cancel()
	}
	if err != nil {
		in.log.Warn("undo after a failed fault", "action", a, "err", err)
		in.notes = append(in.notes, fmt.Sprintf("%s failed, and undoing it failed too (%v): the broker may be left altered", a, err))
		if in.altered == nil {
			in.altered = fmt.Errorf("the broker may be left altered: undoing a failed %s failed: %w", a, err)
		}
	}
}

// restorePending runs the recovery a manual_recovery step left for a later
// step that never ran, so the broker is never left down; ok is false when
// nothing was pending.
func (in *injector) restorePending(ctx context.Context) (rec scenario.FaultRecord, ok bool, err error) {
	if in.pending == "" {
		return rec, false, nil
	}
	a := in.pending
	rec, err = in.recoverBroker(ctx, a)
	rec.Trigger = "restore at the end of the burst"
	rec.AtMS = metrics.Millis(time.Since(in.start))
	in.notes = append(in.notes, fmt.Sprintf("the broker was still down when the burst ended; rmqtorture ran %s itself", a))
	if err != nil {
		err = fmt.Errorf("broker not back after %s: %w", a, err)
	}
	return rec, true, err
}

// recoverBroker starts, unpauses or reconnects the broker and waits until it
// accepts AMQP logins, ignoring Ctrl-C but not its own deadline.
func (in *injector) recoverBroker(ctx context.Context, a scenario.Action) (scenario.FaultRecord, error) {
	rec := scenario.FaultRecord{Action: a}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout+in.s.Broker.ReadyTimeout.D())
	defer cancel()
	at := time.Now()
	err := fmt.Errorf("%s is not a recovery step", a)
	if play, ok := recoverWith[a]; ok {
		err = play(in, rctx)
	}
	if err != nil {
		rec.Error = err.Error()
		in.event(time.Time{}, metrics.EvBrokerNotReady, a, err.Error())
		return rec, fmt.Errorf("%s broker: %w", a, err)
	}
	rec.InjectMS = metrics.Millis(time.Since(at))
	in.event(time.Time{}, metrics.EvBrokerStarted, a, string(a))
	if err := in.waitReady(rctx, a); err != nil {
		rec.Error = err.Error()
		return rec, err
	}
	in.log.Info("broker recovered", "action", a, "target", in.target)
	return rec, nil
}

// waitReady waits until the target accepts AMQP logins after a, recording
// broker-ready or broker-not-ready.
func (in *injector) waitReady(ctx context.Context, a scenario.Action) error {
	err := withPort(in.ports.Readiness, func() error { return in.ports.Readiness.WaitReady(ctx, in.target, in.s.Broker.ReadyTimeout.D()) })
	if err != nil {
		in.event(time.Time{}, metrics.EvBrokerNotReady, a, err.Error())
		return err
	}
	in.event(time.Time{}, metrics.EvBrokerReady, a, "")
	return nil
}
