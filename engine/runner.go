package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/rmqtorture/rmqtorture/metrics"
	"github.com/rmqtorture/rmqtorture/scenario"
	"github.com/rmqtorture/rmqtorture/verdict"
)

// Runner runs a scenario's modes one after the other against one broker.
type Runner struct {
	// Ports are the fault ports the steps act through.
	Ports   Ports
	Traffic Traffic
	Log     *slog.Logger
	RunID   string // prefix of every message id and queue name of this run
	// DeleteQueues removes each mode's queue after its drain: always but on
	// a container kept for inspection (--keep). Each mode then starts on a
	// broker that holds no queue of an earlier mode, whatever the order of
	// the modes: every kill recovers the same queues, so restart times and
	// the broker's recovery log lines compare across modes, and a run on a
	// broker it did not create leaves it as it was.
	DeleteQueues bool
	// Cell labels the results of one matrix cell (nil outside a matrix).
	Cell *scenario.Cell
	// Seed drives fault jitter: every mode draws the same delays from it.
	Seed uint64
	// Bucket is the width of ModeResult.Series' buckets (0: metrics.DefaultBucket).
	Bucket time.Duration
	// OnBurst, when set, is called as each burst starts with its live series
	// and timeline (for a progress line); it must not block.
	OnBurst func(m scenario.Mode, s *metrics.Series, tl *metrics.Timeline)
	// History, when set, receives each burst's recorded history (see
	// engine/history.go).
	History   HistorySink
	histories int // bursts given a history index so far
	// OnModeDone, when set, is called with each result RunModes returns, as
	// soon as it has it (run or not run), so a second Ctrl-C can still
	// report the modes that finished.
	OnModeDone func(scenario.ModeResult)
	// BrokerVersion is the broker's version as it reports it ("RabbitMQ
	// 4.0.5"; "" unknown): what some queue settings do depends on it
	// (scenario.SettingRules).
	BrokerVersion string

	// Part, when set, makes each burst one share of a run split across
	// processes (run --load-only, --drain-only; see parts.go): RunID is
	// then the run id every part shares.
	Part *metrics.Part

	// StreamTraffic is the traffic of a scenario whose queue.type is
	// stream (the stream protocol); nil refuses such a scenario.
	StreamTraffic Traffic
}

// RunModes runs each mode in turn and returns one result per mode. After a
// Ctrl-C or a broker that could not be restored, the remaining modes are
// returned as NotRun (inconclusive) rather than run against nothing.
func (r *Runner) RunModes(ctx context.Context, s *scenario.Scenario, modes []scenario.Mode) []scenario.ModeResult {
	var out []scenario.ModeResult
	skip := ""
	for _, m := range modes {
		if skip == "" && ctx.Err() != nil {
			skip = "not run: interrupted"
		}
		if skip != "" {
			// A mode that did not run is listed as such, never left out.
			out = append(out, scenario.ModeResult{Mode: m, Cell: r.Cell, NotRun: true, Verdict: scenario.Verdict{Status: scenario.Inconclusive, Reasons: []string{skip}}})
			r.modeDone(out[len(out)-1])
			continue
		}
		res, brokerDown := r.RunMode(ctx, s, m)
		// Read across repeats, shows whether the tool leaks (the soak test).
		res.Process = ProcessSnapshot()
		out = append(out, res)
		r.modeDone(res)
		if brokerDown {
			skip = fmt.Sprintf("not run: the broker was not available after %s", m)
		}
	}
	return out
}

func (r *Runner) modeDone(res scenario.ModeResult) {
	if r.OnModeDone != nil {
		r.OnModeDone(res)
	}
}

// RunMode runs one burst in mode m as the scenario reads: declare a fresh
// queue, start the live consumers, arm the fault schedule, publish while it
// fires, wait for it, drain, then reconcile and judge. brokerDown is true
// when the broker could not be brought back.
func (r *Runner) RunMode(ctx context.Context, s *scenario.Scenario, m scenario.Mode) (res scenario.ModeResult, brokerDown bool) {
	if r.Part != nil {
		return r.runPart(ctx, s, m), false
	}
	b := r.newBurst(s, m)
	if !b.declare(ctx) || !b.startConsumers(ctx) {
		b.ev.Interrupted = ctx.Err() != nil
		return b.conclude(ctx), false
	}
	b.armFaults(ctx)
	defer b.stopView()
	defer b.cancelPub()
	defer b.cancelGaveUp()
	burstCPU := markCPU()
	b.publish(ctx)
	b.awaitFaults(ctx)
	// Interrupted means cut short before the burst and its faults ended; a
	// Ctrl-C from here on leaves the counts whole, since the drain goes on.
	b.ev.Interrupted = ctx.Err() != nil
	drainCPU := markCPU()
	b.drain(ctx)
	endCPU := markCPU()
	res = b.conclude(ctx)
	res.Resources = resourceUse(burstCPU, drainCPU, endCPU, res.Sent, b.ledger)
	return res, b.brokerErr != nil
}

// burst is one RunMode's state, step by step.
type burst struct {
	r        *Runner
	s        *scenario.Scenario
	log      *slog.Logger
	res      scenario.ModeResult
	spec     QueueSpec
	tr       Traffic // the queue type's traffic (see Runner.trafficFor)
	ledger   *metrics.Ledger
	latency  *metrics.Latency
	intended *metrics.Latency // from the rate schedule's send times (nil without a rate)
	// ev is the evidence the burst is judged on: its conditions as they
	// arise, its observations at conclude (observed).
	ev verdict.Evidence

	start     time.Time
	timeline  *metrics.Timeline
	series    *metrics.Series
	consumers LiveConsumers // nil without live consumers

	sched     *schedule
	in        *injector
	pubCtx    context.Context
	cancelPub context.CancelFunc
	// gaveUpCtx is done when the burst gave up (see armFaults).
	gaveUpCtx    context.Context
	cancelGaveUp context.CancelFunc
	faults       sync.WaitGroup
	// brokerErr: the broker did not come back (set by the fault goroutine,
	// read after faults.Wait); clientFaultErr: a client-side fault failed.
	brokerErr, clientFaultErr error
	stats                     PublishStats
	hist                      *burstHistory // nil when the run records no history
	// view follows the queue's leader and members on a cluster (nil on a
	// single broker); stopView ends its polling after the faults.
	view     *clusterView
	stopView context.CancelFunc
}

func (r *Runner) newBurst(s *scenario.Scenario, m scenario.Mode) *burst {
	queue := queueName(r.RunID, m, r.Cell)
	b := &burst{r: r, s: s, log: r.Log.With("mode", m), spec: queueSpec(s, queue), tr: r.trafficFor(s.Queue.Type),
		res:    scenario.ModeResult{Mode: m, Queue: queue, Cell: r.Cell, Window: window(s, m)},
		ledger: metrics.NewLedger(queue+"-", s.Load.Messages), latency: metrics.NewLatency(),
		ev: verdict.Evidence{Header: verdict.Header{Mode: m, Expect: s.Expect}}}
	if s.Load.Rate > 0 || s.Load.Burst != nil { // a schedule gives each order an intended send time
		b.intended = metrics.NewLatency()
	}
	if _, ok := s.DeadLetterPath(r.BrokerVersion); ok {
		// Loss on the dead-letter path is told from plain loss by publish
		// times (metrics.DeadLetterRule).
		b.ledger.KeepPublishTimes()
	}
	b.res.DeadLetterQueue = b.spec.DeadLetterQueue
	b.hist = r.openHistory(s, b.ev.Header, &b.res, b.ledger)
	if r.Ports.Cluster != nil {
		b.view = newClusterView(r.Ports.Cluster, queue, s.Queue.Type == scenario.Quorum || s.Queue.Type == scenario.Stream, b.log)
	}
	b.stopView = func() {}
	return b
}

// declare declares the queue and settles before the burst; false when the
// burst cannot go on.
func (b *burst) declare(ctx context.Context) bool {
	if err := b.tr.Declare(ctx, b.spec); err != nil {
		b.res.Error = err.Error()
		b.ev.PublishErr = scenario.Failure{Err: fmt.Errorf("declare queue %q: %w", b.spec.Name, err)}
		return false
	}
	if b.view != nil {
		// A burst on a queue still forming its members would measure the
		// formation, not the fault.
		if err := b.view.settle(ctx, b.s.Broker.ReadyTimeout.D()); err != nil {
			b.res.Error = err.Error()
			b.ev.PublishErr = scenario.Failure{Err: err}
			return false
		}
	}
	b.log.Info("queue declared; settling before the burst", "queue", b.spec.Name, "settle", b.s.Queue.SettleBeforeBurst.D())
	if Sleep(ctx, b.s.Queue.SettleBeforeBurst.D()) != nil {
		return false
	}
	if p := b.r.Ports.Power; p != nil && b.s.CutsPower() {
		// What the node wrote before the burst (its boot, the queue's
		// declaration) is on disk, as on a node that has run for a while;
		// a power cut drops what the burst wrote unsynced.
		if err := p.WriteBack(ctx); err != nil {
			b.res.Error = err.Error()
			b.ev.PublishErr = scenario.Failure{Err: err}
			return false
		}
	}
	return true
}

// startConsumers starts the timeline, the live consumers (if any) and the
// series; false when the consumers could not start.
func (b *burst) startConsumers(ctx context.Context) bool {
	b.start = time.Now()
	b.timeline = metrics.NewTimeline(b.start)
	if b.s.Consumers.Enabled() {
		plan := ConsumePlan{Queue: b.spec.Name, Consumers: b.s.Consumers,
			RetryQueue: b.spec.RetryQueue, DeadLetterQueue: b.spec.DeadLetterQueue, Ledger: b.ledger, Timeline: b.timeline}
		if b.view != nil {
			plan.PreferNode = b.view.preferNode(b.s.Load)
		}
		c, err := b.tr.Consume(ctx, plan)
		if err != nil {
			b.res.Error = err.Error()
			b.ev.PublishErr = scenario.Failure{Err: fmt.Errorf("start consumers: %w", err)}
			return false
		}
		b.consumers = c
	}
	b.timeline.AddAt(b.start, metrics.EvBurstStart, "")
	if b.view != nil {
		b.view.begin(b.timeline)
		vctx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		b.stopView = func() { cancel(); <-done }
		go func() { defer close(done); b.view.run(vctx) }()
	}
	b.log.Info("burst started", "messages", b.s.Load.Messages)
	b.series = metrics.NewSeries(b.start, b.r.Bucket)
	b.ledger.Attach(b.series)
	if b.r.OnBurst != nil {
		b.r.OnBurst(b.res.Mode, b.series, b.timeline)
	}
	return true
}

// armFaults arms the fault schedule and runs its steps in a goroutine
// until the burst ends (see schedule.run).
func (b *burst) armFaults(ctx context.Context) {
	b.pubCtx, b.cancelPub = context.WithTimeoutCause(ctx, b.s.Load.BurstTimeout.D(),
		fmt.Errorf("burst not finished within load.burst_timeout %s", b.s.Load.BurstTimeout.D()))
	// gaveUpCtx ends a fault's down wait early: at burst_timeout, on
	// Ctrl-C, or when the publisher gave up (publish); a burst that
	// published everything leaves the planned down whole (it is bounded by
	// validation: at most 10m).
	deadline, _ := b.pubCtx.Deadline()
	b.gaveUpCtx, b.cancelGaveUp = context.WithDeadline(ctx, deadline)
	b.sched = newSchedule(b.s, b.r.Seed, b.start, b.ledger.Sent)
	b.in = &injector{ports: b.r.Ports, log: b.log, s: b.s, tl: b.timeline, start: b.start, sent: b.ledger.Sent, acked: func() int { return b.series.Totals().Acked }, pendingIDs: b.ledger.Pending, mode: b.res.Mode,
		target: scenario.BrokerTarget(), consumers: b.consumers, misroute: make(chan struct{}), fault: &FaultState{},
		queue: b.spec.Name, ledger: b.ledger, redeclare: func(ctx context.Context) error { return b.r.Traffic.Declare(ctx, b.spec) },
		burst: b.gaveUpCtx, cluster: b.view, pick: picker(b.r.Seed)}
	if p, ok := b.r.Traffic.(Prober); ok && b.view != nil {
		b.in.probe = func(ctx context.Context, node int, id string) error {
			return p.ConfirmThrough(ctx, node, b.spec.Name, id)
		}
	}
	b.sched.started = func() time.Time { return b.in.startedAt } // read on the fault goroutine, which sets it
	if len(b.s.Faults) == 0 {
		return
	}
	b.faults.Add(1)
	go func() {
		defer b.faults.Done()
		defer func() {
			// A bug in a fault step must not kill the process before the
			// broker is restored and the container removed.
			if p := recover(); p != nil {
				b.brokerErr = fmt.Errorf("rmqtorture bug in a fault step: %v", p)
				b.cancelPub()
			}
		}()
		// Whatever happens, a broker left down by a manual_recovery step is
		// brought back before the drain.
		defer b.restorePending(ctx)
		b.sched.run(ctx, b.pubCtx, func(fr firing) bool { return b.fire(ctx, fr) })
	}()
}

// fire runs one firing of a step and records it; false stops the schedule.
func (b *burst) fire(ctx context.Context, fr firing) bool {
	b.in.nextOnStart = fr.nextOnStart
	rec, err := b.in.inject(ctx, fr.fault, fr.trigger)
	rec.AtPublished = fr.atPublished
	rec.JitterMS = metrics.Millis(fr.jitter)
	if fr.fault.Every != nil {
		rec.Firing = fr.k
	}
	b.res.Faults = append(b.res.Faults, rec)
	if err != nil {
		b.in.log.Warn("fault step failed", "action", fr.fault.Action, "err", err)
	}
	switch {
	case err != nil && fr.fault.Action.Asserts():
		// A finding, judged from the record (AssertionsFailed): the
		// broker is as it was, and the timeline goes on.
		return true
	case err != nil && fr.fault.Action.ClientSide():
		// The broker is fine: the burst and the drain go on, and the run is
		// inconclusive, not a lost broker.
		b.clientFaultErr = err
		return false
	case err != nil:
		b.brokerErr = err
		b.cancelPub() // nothing more can be measured without a broker
		return false
	}
	return true
}

func (b *burst) restorePending(ctx context.Context) {
	if b.brokerErr != nil {
		return
	}
	if rec, ok, err := b.in.restorePending(ctx); ok {
		b.res.Faults = append(b.res.Faults, rec)
		b.brokerErr = err
	}
}

// publish runs the burst's publisher to its end; a fault that never fired
// will not fire after it.
func (b *burst) publish(ctx context.Context) {
	p := publishPlan(b.s, b.res.Mode, b.spec.Name)
	if pt := b.r.Part; pt != nil {
		p.First, p.Messages = pt.First, pt.End
	}
	p.Ledger, p.Latency, p.IntendedLatency, p.Timeline = b.ledger, b.latency, b.intended, b.timeline
	p.OnPublished, p.Misroute, p.Faults = b.sched.OnPublished, b.in.misroute, b.in.fault
	if b.view != nil {
		p.PreferNode = b.view.preferNode(b.s.Load)
	}
	stats, err := b.tr.Publish(b.pubCtx, p)
	b.stats = stats
	b.sched.burstEnded(stats.LastPublish) // after_burst steps count from here
	b.timeline.Add(metrics.EvBurstEnd, "")
	if cause := context.Cause(b.pubCtx); errors.Is(err, context.DeadlineExceeded) && cause != nil {
		err = cause
	}
	if err != nil && !errors.Is(err, context.Canceled) {
		b.ev.PublishErr = scenario.Failure{Err: fmt.Errorf("publisher: %w", err)}
		b.log.Warn("publisher stopped", "err", err)
		b.cancelGaveUp() // a fault still down would hold the run for nothing
	}
	b.cancelPub()
}

// awaitFaults waits for the fault goroutine and records what the schedule
// missed, what the injector noted, and the burst's measurements.
func (b *burst) awaitFaults(ctx context.Context) {
	b.faults.Wait()
	if b.view != nil {
		b.view.awaitSettled(ctx, b.s.Broker.ReadyTimeout.D())
	}
	b.stopView()
	b.stopView = func() {}
	b.ev.BrokerNotBack = scenario.Failure{Err: b.brokerErr}
	if b.brokerErr == nil && b.in.altered != nil {
		b.ev.BrokerNotBack = scenario.Failure{Err: b.in.altered}
	}
	b.ev.FaultMissed = scenario.Failure{Err: b.clientFaultErr}
	if err := b.sched.missed(b.brokerErr != nil, ctx.Err() != nil); err != nil {
		b.ev.FaultMissed = scenario.Failure{Err: err}
	}
	if b.ev.FaultMissed.Err == nil && len(b.in.afterBurst) > 0 {
		b.ev.FaultMissed = scenario.Failure{Err: errors.New(strings.Join(b.in.afterBurst, "; "))}
	}
	b.res.Notes = append(b.res.Notes, b.in.notes...)
	b.partitionedAtDrain(ctx)
	measure(&b.res, b.stats, b.timeline, b.start)
	intake(&b.res, b.stats, b.timeline, b.start, b.consumers != nil)
	b.res.Notes = append(b.res.Notes, backlogNotes(b.res.Faults, b.s.Load.Messages)...)
}

// drain stops the live consumers once quiet and drains the queues, even
// when interrupted: what was published so far is still worth reconciling.
func (b *burst) drain(ctx context.Context) {
	if b.consumers != nil {
		if err := awaitConsumers(ctx, b.s, b.consumers, b.ledger); err != nil {
			b.ev.DrainIncomplete = scenario.Failure{Err: err}
		}
		stats := b.consumers.Stop()
		b.res.Consumers = &stats
		b.timeline.Add(metrics.EvConsumersStopped, fmt.Sprintf("%d deliveries", stats.Deliveries))
	}
	if b.brokerErr != nil {
		b.ev.DrainIncomplete = scenario.Failure{Err: errors.New("drain skipped: broker not available")}
		return
	}
	b.timeline.Add(metrics.EvDrainStart, "")
	b.log.Info("draining", "queue", b.spec.Name)
	var bodies bodySizes
	var deaths deadLetterDeaths
	err := drainQueues(ctx, b.tr, b.s, b.spec, b.ledger, b.consumers != nil, bodies.add, &deaths)
	b.res.DrainedBodyBytes = bodies.result()
	b.res.DeadLetterReasons, b.res.XDeathCounts = deaths.result()
	if b.s.Consumers.OnDelivery == scenario.ConsumerRetry && len(b.res.DeadLetterReasons) > 0 {
		// A retry consumer parks a message by publishing its copy, headers
		// and all, to the dead-letter queue: the x-death it carries is the
		// retry queue's (expired), not why it was parked. Who put it there
		// is the consumer.
		n := 0
		for _, c := range b.res.DeadLetterReasons {
			n += c
		}
		b.res.DeadLetterReasons = map[string]int{"parked": n}
	}
	// An incomplete drain proves nothing about what it did not reach: those
	// ids are unverified, not lost.
	b.ev.Drained = err == nil && b.ev.DrainIncomplete.Err == nil
	b.timeline.Add(metrics.EvDrainEnd, "")
	if err != nil && b.ev.DrainIncomplete.Err == nil {
		b.ev.DrainIncomplete = scenario.Failure{Err: fmt.Errorf("drain: %w", err)}
	}
	if b.r.DeleteQueues {
		if err := deleteQueue(ctx, b.tr, b.spec.Name); err != nil {
			b.log.Warn("delete queue", "queue", b.spec.Name, "err", err)
			b.res.Notes = append(b.res.Notes, fmt.Sprintf("queue %s could not be deleted after the drain (%v): delete it by hand", b.spec.Name, err))
		}
	}
}

// conclude finishes the result: events, series and recoveries when the
// burst ran, then reconciliation and the verdict.
func (b *burst) conclude(ctx context.Context) scenario.ModeResult {
	if b.timeline != nil && b.sched != nil {
		b.res.Events = b.timeline.Events()
		b.res.Series = seriesOf(b.series, b.res.Faults, b.res.Events, time.Now())
		recoveries(b.res.Faults, b.res.Events, b.series, b.res.Mode.ConfirmMode())
		quorumLossOutcomes(b.res.Faults, b.res.Events, b.res.Series)
	}
	conclude(&b.res, b.s, b.ledger, b.latency, b.intended, &b.ev, b.r.BrokerVersion)
	b.hist.finish(&b.res, b.ev.Trailer)
	if b.sched != nil && b.r.Part == nil {
		b.logDone(b.res)
	}
	return b.res
}

// logDone logs a mode's end with its verdict and main counts (a split
// run's part once its own verdict is set: concludePart).
func (b *burst) logDone(res scenario.ModeResult) {
	b.log.Info("mode done", "verdict", res.Verdict.Status, "sent", res.Sent, "lost", res.Lost,
		"unconfirmed_missing", res.UnconfirmedMissing, "in_doubt", res.InDoubt, "duplicates", res.Duplicates)
}

// Sleep waits d or until ctx is done, and returns ctx's error if it was.
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// trafficFor is the traffic that publishes to and drains a queue of type t:
// StreamTraffic for a stream, Traffic otherwise. A stream without stream
// traffic gets one that refuses every call.
func (r *Runner) trafficFor(t scenario.QueueType) Traffic {
	if t != scenario.Stream {
		return r.Traffic
	}
	if r.StreamTraffic == nil {
		return noStreams{}
	}
	return r.StreamTraffic
}

// noStreams refuses a stream scenario on a runner without stream traffic.
type noStreams struct{}

var errNoStreams = errors.New("queue.type stream needs the stream protocol traffic, which this runner was not given")

func (noStreams) Declare(context.Context, QueueSpec) error { return errNoStreams }
func (noStreams) Publish(context.Context, PublishPlan) (PublishStats, error) {
	return PublishStats{}, errNoStreams
}
func (noStreams) Drain(context.Context, DrainPlan) error { return errNoStreams }
func (noStreams) Delete(context.Context, string) error   { return errNoStreams }
func (noStreams) Consume(context.Context, ConsumePlan) (LiveConsumers, error) {
	return nil, errNoStreams
}
