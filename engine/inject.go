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
	ports Ports
	log   *slog.Logger
	s     *scenario.Scenario
	tl    *metrics.Timeline
	start time.Time
	sent  func() int // distinct ids published so far
	// acked counts the basic.acks (or committed transactions' messages)
	// received so far; nil where nothing counts them (unit tests).
	acked func() int
	// pending counts the ids awaiting their confirm now, and those plus
	// the ids in doubt (Ledger.Pending)
	pendingIDs func() (inFlight, unsettled int)
	mode       scenario.Mode
	// afterBurst lists, for the verdict, the steps that took effect when
	// every order had been published and settled: they tested nothing of
	// this mode's publishing (scenario.FaultAfterBurst).
	afterBurst   []string
	target       scenario.Target
	consumers    LiveConsumers // nil without live consumers
	misroute     chan struct{}
	misrouteOnce sync.Once
	pending      scenario.Action // recovery a manual_recovery step left for a later step
	// fault is whether a broker fault is in effect, for the publishers.
	fault *FaultState
	// notes are errors nobody could act on (a recovery after a failed fault
	// that failed too): they go to the result's notes. altered is set when
	// the broker may be left altered by one of them.
	notes   []string
	altered error
	// queue is the queue under test (delete-queue, purge-queue), ledger the
	// burst's (which ids were published before such a step returned), and
	// redeclare declares the queue again after a delete-queue's down.
	queue     string
	ledger    *metrics.Ledger
	redeclare func(ctx context.Context) error
	// probe publishes one probe message (id) to the queue through node
	// and awaits its confirm (nil: the traffic cannot; see Prober); heals
	// counts the partitions healed, for the probes' ids.
	probe func(ctx context.Context, node int, id string) error
	heals int
	// nextOnStart: the next step fires after_start, so a container start
	// does not wait for AMQP logins; startedAt is when it last started.
	nextOnStart bool
	startedAt   time.Time
	// cluster follows the queue's leader and members on a cluster (nil on
	// a single broker); pick draws a node for target random from the
	// run's seed; pendingTarget is the resolved target a manual_recovery
	// step left for its recovery step.
	cluster       *clusterView
	pick          func(n int) int
	pendingTarget scenario.Target
	// burst is done when the burst gives up: the publisher stopped on an
	// error (e.g. reconnect_timeout), load.burst_timeout passed, or Ctrl-C.
	// A fault's down wait ends with it (nil: with Ctrl-C only). A burst
	// that published everything does not cut a planned down.
	burst context.Context
}

// play is how one action is applied: it returns the fault event's detail.
type play func(in *injector, ctx context.Context, f *scenario.Fault, rec *scenario.FaultRecord) (string, error)

// undo undoes in place an action recovered without a recovery step: it
// returns the fault-cleared event's detail.
type undo func(in *injector, ctx context.Context, f *scenario.Fault, rec *scenario.FaultRecord) (string, error)

var errNoPort = errors.New("the runner has no port for this action")

// playbook plays each fault action that is not a recovery step on its port;
// unplay undoes in place the actions recovered without a recovery step
// (memory-alarm), and recoverWith plays the recovery steps.
var (
	playbook = map[scenario.Action]play{
		scenario.Kill: func(in *injector, ctx context.Context, f *scenario.Fault, _ *scenario.FaultRecord) (string, error) {
			return fmt.Sprintf("kill %s: the signal lands during the Docker API call", f.Signal), withPort(in.ports.Lifecycle, func() error { return in.ports.Lifecycle.Kill(ctx, in.target, f.Signal) })
		},
		scenario.PowerLoss: func(in *injector, ctx context.Context, _ *scenario.Fault, rec *scenario.FaultRecord) (string, error) {
			err := withPort(in.ports.Power, func() error {
				cuts, err := in.ports.Power.PowerLoss(ctx, in.target)
				rec.PowerLoss = cuts
				return err
			})
			return powerLossDetail(rec.PowerLoss), err
		},
		scenario.Stop: func(in *injector, ctx context.Context, f *scenario.Fault, _ *scenario.FaultRecord) (string, error) {
			began := time.Now()
			err := withPort(in.ports.Lifecycle, func() error { return in.ports.Lifecycle.Stop(ctx, in.target, f.Grace.D()) })
			return stopDetail(f.Grace.D(), time.Since(began)), err
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
			return "broker closed every client connection (rabbitmqctl close_all_connections --global)", withPort(in.ports.Operator, func() error { return in.ports.Operator.CloseConnections(ctx, in.target) })
		},
		scenario.PublishToMissingExchange: func(in *injector, _ context.Context, _ *scenario.Fault, _ *scenario.FaultRecord) (string, error) {
			in.misrouteOnce.Do(func() { close(in.misroute) })
			return "next publish goes to a missing exchange", nil
		},
		scenario.DiskAlarm: func(in *injector, ctx context.Context, _ *scenario.Fault, _ *scenario.FaultRecord) (string, error) {
			return "disk alarm raised (disk_free_limit set above the free disk space)", withPort(in.ports.Operator, func() error { return in.ports.Operator.DiskAlarm(ctx, in.target, true) })
		},
		scenario.DeleteQueue: func(in *injector, ctx context.Context, f *scenario.Fault, rec *scenario.FaultRecord) (string, error) {
			n, err := in.removeMessages(ctx, rec, func(o Operator) (int, error) { return o.DeleteQueue(ctx, in.target, in.queue) })
			if err == nil && in.ledger != nil {
				// What the broker had by now went with the queue: a copy
				// delivered later came back from it (rabbitmq-server#12366).
				// An after_burst step fires once the publisher is done.
				in.ledger.QueueDeleted(f.AfterBurst != nil)
			}
			return fmt.Sprintf("queue %s deleted with %d messages (queue.delete-ok); declared again after %s", in.queue, n, f.Down.D()), err
		},
		scenario.PurgeQueue: func(in *injector, ctx context.Context, _ *scenario.Fault, rec *scenario.FaultRecord) (string, error) {
			n, err := in.removeMessages(ctx, rec, func(o Operator) (int, error) { return o.PurgeQueue(ctx, in.target, in.queue) })
			return fmt.Sprintf("queue %s purged of %d messages (queue.purge-ok)", in.queue, n), err
		},
		scenario.Partition: func(in *injector, ctx context.Context, f *scenario.Fault, rec *scenario.FaultRecord) (string, error) {
			if in.ports.Cluster == nil {
				return string(f.Action), errNoPort
			}
			sides, err := in.ports.Cluster.Partition(ctx, in.target, f.Shape)
			rec.Sides = sides
			return fmt.Sprintf("partition (%s): %s cut apart; every node keeps its client port", f.Shape, sides), err
		},
		scenario.QuorumLoss: func(in *injector, ctx context.Context, f *scenario.Fault, _ *scenario.FaultRecord) (string, error) {
			began := time.Now()
			err := withPort(in.ports.Lifecycle, func() error { return in.ports.Lifecycle.Stop(ctx, in.target, f.Grace.D()) })
			return fmt.Sprintf("quorum loss: %s stopped together (%s)", scenario.NodeNames(in.target.Nodes), stopDetail(f.Grace.D(), time.Since(began))), err
		},
		scenario.RollingRestart: func(in *injector, ctx context.Context, f *scenario.Fault, rec *scenario.FaultRecord) (string, error) {
			return in.rollingRestart(ctx, f, rec)
		},
		scenario.Command: func(in *injector, ctx context.Context, f *scenario.Fault, rec *scenario.FaultRecord) (string, error) {
			return in.runCommand(ctx, f, rec, "inject", f.Inject)
		},
		scenario.AssertWhole: assertWhole,
		scenario.CrashConsumer: func(in *injector, _ context.Context, f *scenario.Fault, rec *scenario.FaultRecord) (string, error) {
			if in.consumers == nil {
				return string(f.Action), errors.New("no live consumers to crash")
			}
			var err error
			rec.UnackedAtCrash, err = in.consumers.Crash(f.Down.D())
			return fmt.Sprintf("crash-consumer: consumer 0 crashed before its ack with %d processed deliveries unacknowledged; back after %s", rec.UnackedAtCrash, f.Down.D()), err
		},
	}
	unplay = map[scenario.Action]undo{
		scenario.Partition: func(in *injector, ctx context.Context, _ *scenario.Fault, rec *scenario.FaultRecord) (string, error) {
			if in.ports.Cluster == nil {
				return "", errNoPort
			}
			if in.cluster != nil {
				in.cluster.healBegins()
				defer in.cluster.healEnds()
			}
			more, err := in.ports.Cluster.Heal(ctx)
			if more != "" {
				more = "; " + more
			}
			if err == nil {
				more += in.confirmThroughEach(ctx, rec)
			}
			return "partition healed: every inter-node link restored" + more, err
		},
		scenario.MemoryAlarm: func(in *injector, ctx context.Context, _ *scenario.Fault, _ *scenario.FaultRecord) (string, error) {
			return "memory alarm cleared (watermark restored)", withPort(in.ports.Operator, func() error { return in.ports.Operator.MemoryAlarm(ctx, in.target, false) })
		},
		scenario.DiskAlarm: func(in *injector, ctx context.Context, _ *scenario.Fault, _ *scenario.FaultRecord) (string, error) {
			return "disk alarm cleared (disk_free_limit restored)", withPort(in.ports.Operator, func() error { return in.ports.Operator.DiskAlarm(ctx, in.target, false) })
		},
		scenario.DeleteQueue: func(in *injector, ctx context.Context, _ *scenario.Fault, _ *scenario.FaultRecord) (string, error) {
			if in.redeclare == nil {
				return "", errNoPort
			}
			return fmt.Sprintf("queue %s declared again, as the application would", in.queue), in.redeclare(ctx)
		},
		scenario.Command: func(in *injector, ctx context.Context, f *scenario.Fault, rec *scenario.FaultRecord) (string, error) {
			return in.recoverCommand(ctx, f, rec)
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

// playOf is how action a is played: its playbook entry, or the one play of
// every action made of the broker's own tools (scenario.ToolPlay).
func playOf(a scenario.Action) (play, bool) {
	if p, ok := playbook[a]; ok {
		return p, true
	}
	t := a.Tool()
	if t == nil {
		return nil, false
	}
	return func(in *injector, ctx context.Context, _ *scenario.Fault, _ *scenario.FaultRecord) (string, error) {
		return t.Applied, withPort(in.ports.Tools, func() error { return in.ports.Tools.ApplyTool(ctx, in.target, *t) })
	}, true
}

// unplayOf is how action a is undone in place: its unplay entry, or the
// recovery of an action made of the broker's own tools.
func unplayOf(a scenario.Action) (undo, bool) {
	if u, ok := unplay[a]; ok {
		return u, true
	}
	t := a.Tool()
	if t == nil || t.Recover == nil {
		return nil, false
	}
	return func(in *injector, ctx context.Context, _ *scenario.Fault, _ *scenario.FaultRecord) (string, error) {
		return t.Recovered, withPort(in.ports.Tools, func() error { return in.ports.Tools.RecoverTool(ctx, in.target, *t) })
	}, true
}

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
// restart was skipped, is the worst outcome), with its own deadline. A
// broker fault is in effect (in.fault) from the start of its call until
// the broker is back.
func (in *injector) inject(ctx context.Context, f *scenario.Fault, trigger string) (scenario.FaultRecord, error) {
	rec := scenario.FaultRecord{Action: f.Action, Signal: f.Signal, Trigger: trigger, DownMS: metrics.Millis(f.Down.D()), State: f.State}
	at := time.Now()
	rec.AtMS = metrics.Millis(at.Sub(in.start))
	in.event(at, metrics.EvTrigger, f.Action, fmt.Sprintf("%s (%s)", f.Action, rec.Trigger))
	if f.Action.IsRecovery() {
		in.pending, in.target = "", in.pendingTarget
		out, err := in.recoverBroker(ctx, f.Action)
		out.Trigger, out.AtMS = rec.Trigger, rec.AtMS
		if err != nil {
			return out, fmt.Errorf("broker not back after %s: %w", f.Action, err)
		}
		return out, nil
	}
	// The call's deadline leaves room for the step's own timeout
	// (assert-whole waits up to it; a command step bounds itself).
	fctx, fcancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout+f.Timeout.D())
	defer fcancel()
	apply, ok := playOf(f.Action)
	if !ok {
		rec.Error = fmt.Sprintf("no way to play fault action %q", f.Action)
		return rec, errors.New(rec.Error)
	}
	if err := in.aim(f, &rec); err != nil {
		rec.Error = err.Error()
		return rec, fmt.Errorf("fault %s: %w", f.Action, err)
	}
	if f.Action.Asserts() {
		return in.assert(fctx, f, rec, at)
	}
	if in.cluster != nil && !f.Action.ClientSide() {
		in.cluster.faultBegins()
		defer in.cluster.faultEnds()
	}
	if !f.Action.ClientSide() {
		in.fault.Begin(f.Action)
	}
	atCall := in.underWay()
	detail, err := apply(in, fctx, f, &rec)
	returned := time.Now()
	rec.CallMS = metrics.Millis(returned.Sub(at))
	if err != nil {
		rec.Error = err.Error()
		in.undoFailed(ctx, f, &rec)
		in.fault.End()
		return rec, fmt.Errorf("fault %s: %w", f.Action, err)
	}
	applied := in.applied(f, &rec, at, returned, atCall, detail)
	return in.recoverStep(ctx, f, rec, applied)
}

// underWay is what a burst has under way at one moment: ids published,
// awaiting their confirm, and awaiting it or in doubt. known is false
// without a ledger to ask (unit tests of single steps).
type underWay struct {
	sent, inFlight, unsettled, acked int
	known                            bool
}

func (in *injector) underWay() underWay {
	w := underWay{sent: in.sent()}
	if in.acked != nil {
		w.acked = in.acked()
	}
	if in.pendingIDs != nil {
		w.inFlight, w.unsettled = in.pendingIDs()
		w.known = true
	}
	return w
}

// applied records a fault whose call (started at, returned at returned)
// succeeded: it took effect at the call's start when its effect begins
// during the call (kill, stop, restart: streadway/amqp#421), else when the
// call returned. It records the fault event then (and, for an action that
// brings the broker back by itself, restart, broker-started at the call's
// return), fills rec's effect time and ids published by then, and returns
// when the fault took effect.
func (in *injector) applied(f *scenario.Fault, rec *scenario.FaultRecord, at, returned time.Time, atCall underWay, detail string) time.Time {
	a := f.Action
	effect, w := returned, in.underWay()
	if a.EffectDuringCall() {
		effect, w = at, atCall
		detail += fmt.Sprintf(" (took effect as the call started; it returned after %s)", returned.Sub(at).Round(time.Millisecond))
	}
	rec.InjectMS = metrics.Millis(effect.Sub(at))
	rec.PublishedAtInject, rec.InFlightAtInject = w.sent, &w.inFlight
	if in.mode.ConfirmMode() && in.acked != nil {
		rec.AckedAtInject = &w.acked
	}
	// Nothing under way when it took effect: every order published, none
	// awaiting a confirm or in doubt.
	done := w.known && w.sent >= in.s.Load.Messages && w.unsettled == 0
	if why := scenario.FaultAfterBurst(in.mode, f, *rec, in.s.Load.Messages, done); why != "" {
		in.afterBurst = append(in.afterBurst, why)
	}
	in.event(effect, metrics.EvFault, a, detail)
	if _, _, down := a.LeavesState(); down && !a.Recovers() {
		in.event(returned, metrics.EvBrokerStarted, a, fmt.Sprintf("%s call returned: the container is running", a))
	}
	in.log.Info("fault applied", "action", a, "target", in.target, "trigger", rec.Trigger, "effect", effect.Sub(at).Round(time.Millisecond),
		"call", returned.Sub(at).Round(time.Millisecond), "published", rec.PublishedAtInject, "down", f.Down.D())
	return effect
}

// recoverStep brings the broker back after an applied step, as the action
// table says: a step that takes the broker down and back by itself
// (restart) is waited for; one with a recovery runs it after Down, or
// leaves it to a later step (manual_recovery).
func (in *injector) recoverStep(ctx context.Context, f *scenario.Fault, rec scenario.FaultRecord, applied time.Time) (scenario.FaultRecord, error) {
	if _, _, down := f.Action.LeavesState(); down && !f.Action.Recovers() {
		rctx, cancel := in.recoveryContext(ctx)
		defer cancel()
		if err := in.waitReady(rctx, f.Action); err != nil {
			rec.Error = err.Error()
			return rec, fmt.Errorf("broker not back after %s: %w", f.Action, err)
		}
		return rec, nil
	}
	if !f.Action.Recovers() {
		in.fault.End() // the broker stayed up: the fault was its call
		return rec, nil
	}
	recovery, _ := f.Action.Recovery()
	if f.ManualRecovery {
		in.pending, in.pendingTarget = recovery, in.target
		return rec, nil
	}
	in.waitDown(ctx, f, applied)
	if undo, ok := unplayOf(f.Action); ok {
		uctx, ucancel := in.recoveryContext(ctx)
		defer ucancel()
		detail, err := undo(in, uctx, f, &rec)
		if err != nil {
			rec.Error = err.Error()
			return rec, fmt.Errorf("clear %s: %w", f.Action, err)
		}
		in.event(time.Time{}, metrics.EvFaultCleared, f.Action, detail)
		if f.Action.Tool() != nil {
			// What the broker's tools undid may take logins away until
			// it is done (stop-app): the fault ends at the next login.
			if err := in.waitReady(uctx, f.Action); err != nil {
				rec.Error = err.Error()
				return rec, fmt.Errorf("broker not back after %s: %w", f.Action, err)
			}
			return rec, nil
		}
		in.fault.End()
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

// recoveryContext is the context of a recovery that begins now: not
// cancelled by Ctrl-C (the broker must not be left down), with a deadline
// of its own, counted from now, long enough for its call and a login
// (cleanupTimeout plus broker.ready_timeout). The fault call's context
// (cleanupTimeout from the trigger) may have run out during the down, up
// to 10m, or during a restart's call.
func (in *injector) recoveryContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout+in.s.Broker.ReadyTimeout.D())
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
func (in *injector) undoFailed(ctx context.Context, f *scenario.Fault, rec *scenario.FaultRecord) {
	var err error
	a := f.Action
	if recovery, _ := a.Recovery(); recovery != "" {
		_, err = in.recoverBroker(ctx, recovery)
	} else if undo, ok := unplayOf(a); ok {
		uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
		_, err = undo(in, uctx, f, rec)
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
	at, published := time.Now(), in.sent()
	rec, err = in.recoverBroker(ctx, a)
	rec.Trigger = "restore at the end of the burst"
	rec.AtMS, rec.AtPublished = metrics.Millis(at.Sub(in.start)), published
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
	// The step took effect when its call returned: the container running
	// (or unpaused, reconnected) with what was published by then.
	rec.InjectMS = metrics.Millis(time.Since(at))
	rec.CallMS, rec.PublishedAtInject = rec.InjectMS, in.sent()
	in.event(time.Time{}, metrics.EvBrokerStarted, a, string(a))
	if err := in.waitReady(rctx, a); err != nil {
		rec.Error = err.Error()
		return rec, err
	}
	in.log.Info("broker recovered", "action", a, "target", in.target)
	return rec, nil
}

// waitReady waits until the target accepts AMQP logins after a, recording
// broker-ready or broker-not-ready; when the next step fires on the
// container start (after_start), it only notes the start.
func (in *injector) waitReady(ctx context.Context, a scenario.Action) error {
	if in.nextOnStart {
		in.booting(a)
		return nil
	}
	err := withPort(in.ports.Readiness, func() error { return in.ports.Readiness.WaitReady(ctx, in.target, in.s.Broker.ReadyTimeout.D()) })
	if err != nil {
		in.event(time.Time{}, metrics.EvBrokerNotReady, a, err.Error())
		return err
	}
	in.event(time.Time{}, metrics.EvBrokerReady, a, "")
	in.fault.End()
	return nil
}

// booting notes that the container started after a and that the next step
// (after_start) will hit it while it boots: nobody waits for AMQP logins.
func (in *injector) booting(a scenario.Action) {
	in.startedAt = time.Now()
	in.log.Info("container started; not waiting for AMQP: the next step fires while the broker boots", "after", a, "target", in.target)
}

// removeMessages plays delete-queue or purge-queue through the operator
// port: it records the message count the broker reported and, from the
// ledger, which ids had been published when the call returned: only those
// can have been removed by it (publishedBefore).
func (in *injector) removeMessages(ctx context.Context, rec *scenario.FaultRecord, call func(Operator) (int, error)) (int, error) {
	var n int
	err := withPort(in.ports.Operator, func() (err error) {
		n, err = call(in.ports.Operator)
		return err
	})
	if err != nil {
		return n, err
	}
	rec.RemovedMessages = &n
	if in.ledger != nil {
		rec.PublishedBefore = publishedIDs(in.ledger)
	}
	return n, nil
}

// stopDetail says how a stop ended: the broker exited on SIGTERM, or took
// the whole grace period, so Docker sent SIGKILL (a SIGTERM that reaches
// the start script before it sets its trap is ignored: it runs as PID 1).
func stopDetail(grace, took time.Duration) string {
	if took >= grace {
		return fmt.Sprintf("stop (SIGTERM, SIGKILL after %s): the broker did not exit on SIGTERM within %s; Docker sent SIGKILL", grace, grace)
	}
	return fmt.Sprintf("stop (SIGTERM, SIGKILL after %s): the broker exited on SIGTERM", grace)
}

// aim resolves the step's target for this firing: the broker on a single
// broker; on a cluster, the nodes its target names now (the leader as the
// cluster view last saw it: no exec delays the fault), recorded in rec
// with the leader at that moment. Its recovery acts on the same nodes.
func (in *injector) aim(f *scenario.Fault, rec *scenario.FaultRecord) error {
	t := f.TargetOf(in.s.Broker.Nodes, in.queue)
	if in.cluster == nil || f.Action.ClientSide() {
		in.target = t
		return nil
	}
	members, leader := in.cluster.snapshot()
	r, err := t.Resolve(in.cluster.size(), members, in.pick)
	if err != nil {
		return fmt.Errorf("resolve target %s: %w", t, err)
	}
	in.target = r
	rec.Target = r.String()
	for _, n := range r.Nodes {
		rec.Nodes = append(rec.Nodes, scenario.NodeName(n))
	}
	if leader > 0 {
		rec.LeaderBefore = scenario.NodeName(leader)
	}
	return nil
}

// rollingRestart restarts the target's nodes one at a time, in node order
// (graceful, f.Grace before SIGKILL), as an operator's rolling restart or
// upgrade does (https://www.rabbitmq.com/docs/upgrade#rolling-upgrade):
// after each it waits until the node accepts AMQP logins and, on a quorum
// queue, until every node holds a member of the queue again, one leader
// and the rest followers, before the next. Each node's restart, return
// and the queue's replication go on the timeline.
func (in *injector) rollingRestart(ctx context.Context, f *scenario.Fault, rec *scenario.FaultRecord) (string, error) {
	all := in.target
	defer func() { in.target = all }()
	// The step takes effect as its first restart call starts
	// (EffectDuringCall): each node's times count from there.
	began := time.Now()
	for _, n := range all.Nodes {
		// Each node gets a deadline of its own: restarting it, its login
		// and the queue's members settling; the call's would run out on
		// a busy host after a node or two.
		nctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout+f.Grace.D()+2*in.s.Broker.ReadyTimeout.D())
		err := in.restartNode(nctx, f, rec, n, began)
		cancel()
		if err != nil {
			return "", err
		}
	}
	return fmt.Sprintf("rolling restart of %s, one node at a time (graceful, %s grace), waiting for the queue's members between nodes", scenario.NodeNames(all.Nodes), f.Grace.D()), nil
}

// restartNode is node n's turn of a rolling restart begun at began: it
// restarts the node, waits for its login and, on a quorum queue, for the
// queue's members, and records the times in rec.
func (in *injector) restartNode(ctx context.Context, f *scenario.Fault, rec *scenario.FaultRecord, n int, began time.Time) error {
	since := func() float64 { return metrics.Millis(time.Since(began)) }
	in.target = scenario.Target{Kind: scenario.TargetNode, Node: n, Nodes: []int{n}}
	at := time.Now()
	nr := scenario.NodeRecovery{Node: scenario.NodeName(n), RestartMS: since()}
	if err := withPort(in.ports.Lifecycle, func() error { return in.ports.Lifecycle.Restart(ctx, in.target, f.Grace.D()) }); err != nil {
		return fmt.Errorf("restart %s: %w", scenario.NodeName(n), err)
	}
	nr.RunningMS = since()
	in.event(time.Time{}, metrics.EvBrokerStarted, f.Action, fmt.Sprintf("%s restarted (call took %s)", scenario.NodeName(n), time.Since(at).Round(time.Millisecond)))
	if err := withPort(in.ports.Readiness, func() error { return in.ports.Readiness.WaitReady(ctx, in.target, in.s.Broker.ReadyTimeout.D()) }); err != nil {
		rec.NodeRecoveries = append(rec.NodeRecoveries, nr)
		return fmt.Errorf("%s not back: %w", scenario.NodeName(n), err)
	}
	nr.AcceptingMS = since()
	in.event(time.Time{}, metrics.EvBrokerReady, f.Action, scenario.NodeName(n)+" accepts AMQP logins")
	if in.cluster != nil && in.s.Queue.Type == scenario.Quorum {
		if err := in.cluster.settle(ctx, in.s.Broker.ReadyTimeout.D()); err != nil {
			rec.NodeRecoveries = append(rec.NodeRecoveries, nr)
			return fmt.Errorf("after restarting %s: %w", scenario.NodeName(n), err)
		}
		caught := since()
		nr.CaughtUpMS = &caught
	}
	rec.NodeRecoveries = append(rec.NodeRecoveries, nr)
	return nil
}
