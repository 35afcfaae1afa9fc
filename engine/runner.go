package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rmqtorture/rmqtorture/metrics"
	"github.com/rmqtorture/rmqtorture/scenario"
)

// FaultInjector injects faults into the broker and brings it back.
// Implementations act only on a container rmqtorture created or one the user
// named.
type FaultInjector interface {
	// Kill delivers signal (e.g. "SIGKILL") to the broker's container.
	Kill(ctx context.Context, signal string) error
	// Start starts the broker's container again after a kill.
	Start(ctx context.Context) error
	// WaitReady returns once an AMQP connection with login succeeds, or an
	// error once timeout has passed.
	WaitReady(ctx context.Context, timeout time.Duration) error
	// MemoryAlarm raises (on) or clears (off) a memory alarm on the broker;
	// clearing restores the watermark it had before.
	MemoryAlarm(ctx context.Context, on bool) error
	// CloseConnections makes the broker close every client connection.
	CloseConnections(ctx context.Context) error
	// Stop stops the broker gracefully, SIGKILL after grace.
	Stop(ctx context.Context, grace time.Duration) error
	// Restart stops the broker gracefully and starts it again.
	Restart(ctx context.Context, grace time.Duration) error
	// Pause freezes the broker; Unpause thaws it.
	Pause(ctx context.Context) error
	Unpause(ctx context.Context) error
	// Disconnect cuts the broker from its network; Reconnect restores it.
	Disconnect(ctx context.Context) error
	Reconnect(ctx context.Context) error
}

// QueueSpec is the durable queue one burst publishes to.
type QueueSpec struct {
	Name      string
	Type      scenario.QueueType
	Durable   bool
	Arguments map[string]any
	// AlsoBindType, when set, binds a second queue of this type (named
	// Name+".also") with the same routing key.
	AlsoBindType scenario.QueueType
	// DeadLetterQueue, when set, is declared as a durable queue of the same
	// type bound to the dead-letter exchange, and the queue dead-letters to it.
	DeadLetterQueue string
	// RetryQueue, when set, is declared with x-message-ttl RetryDelay and
	// dead-letters expired messages back to Name through the default exchange.
	RetryQueue string
	RetryDelay time.Duration
}

// PublishPlan is everything a publisher needs for one burst. The publisher
// records what it learns in Ledger, Latency and Timeline.
type PublishPlan struct {
	Queue            string
	Mode             scenario.Mode
	Messages         int
	Window           int // unconfirmed messages in flight (1 for confirm-each)
	ConfirmTimeout   time.Duration
	Republish        scenario.Republish
	ReconnectTimeout time.Duration // give up after this long without a connection

	Ledger   *metrics.Ledger
	Latency  *metrics.Latency // publish → basic.ack/nack
	Timeline *metrics.Timeline
	// OnPublished is called after every publish attempt with the number of
	// distinct ids published so far and of messages awaiting a confirm. It
	// must be cheap.
	OnPublished func(sent, inFlight int)
	// Misroute, when closed, makes the publisher send its next message to an
	// exchange that does not exist (fault publish-to-missing-exchange).
	Misroute <-chan struct{}
	// UnroutableEvery > 0 publishes every Nth order with a routing key
	// nothing is bound to.
	UnroutableEvery int
	// StallTimeout: connected, nothing published or confirmed for this long
	// is recorded as a client stall.
	StallTimeout time.Duration
	// MessageDeadline (0: none) is each order's deadline from its first try.
	MessageDeadline time.Duration
	// MessageSizeBytes pads bodies to this size (0: bare order).
	MessageSizeBytes int
	// ListenerBuffer is the confirm listener's capacity (0: the window).
	ListenerBuffer int
	// Transient publishes with delivery mode 1 instead of persistent.
	Transient bool
	// Rate schedules publish calls at this many per second (0: no limit):
	// call k is due k/Rate s after the first, and a publisher held up
	// (outage, full window) catches up as fast as it can, as an application
	// whose orders keep arriving would.
	Rate float64
	// IntendedLatency (set when Rate > 0) records, for each confirm, the time
	// since the order's intended send time on the Rate schedule.
	IntendedLatency *metrics.Latency
	// Publishers is how many publishers share the burst, one connection
	// each (0 or 1: one); they share the Rate schedule.
	Publishers int
	// StampSentTime adds each publish's time to the message headers, for
	// live consumers' end-to-end latency.
	StampSentTime bool
}

// PublishStats is what a publisher measured beside the ledger.
type PublishStats struct {
	Publishes   int       // publish calls that returned without error, republishes included
	Acked       int       // basic.acks received
	LastPublish time.Time // last publish call that returned without error
	LastConfirm time.Time // last basic.ack or basic.nack
	Reconnects  int
	// AbsorbedRate is msg/s entering the queue (fire-and-forget only), from
	// queue-depth polls before the first fault; 0 when not measured.
	AbsorbedRate float64
	// BlockedMS is the time the broker held the publisher's connection
	// blocked (connection.blocked → connection.unblocked), in ms.
	BlockedMS float64
	// Stalls counts client stalls (see PublishPlan.StallTimeout).
	Stalls int
	// ChannelCloses lists why the broker closed channels or connections,
	// with reply code and text (e.g. "404 NOT_FOUND - no exchange …").
	ChannelCloses []string
}

// DrainPlan says how to consume the queue after the burst.
type DrainPlan struct {
	Queue    string
	Ledger   *metrics.Ledger
	Idle     time.Duration
	LostWait time.Duration
	Timeout  time.Duration
	// Satisfied reports whether every confirmed id has been delivered; until it
	// does, the drain waits up to LostWait of idleness before giving up on them.
	Satisfied func() bool
	// AllowEmpty accepts a queue that delivered nothing once Satisfied holds
	// (live consumers emptied it, or it is a dead-letter queue); otherwise
	// an empty-looking queue gets the full LostWait (a quorum queue may
	// still be electing a leader after a restart).
	AllowEmpty bool
	// DeadLetter records deliveries as found in the dead-letter queue
	// (Ledger.DeadLettered) instead of as deliveries of the queue under test.
	DeadLetter bool
}

// ConsumePlan starts live consumers on the queue under test.
type ConsumePlan struct {
	Queue     string
	Consumers scenario.Consumers
	// RetryQueue and DeadLetterQueue are the retry queue and the dead-letter
	// queue of on_delivery: retry ("" when absent).
	RetryQueue      string
	DeadLetterQueue string
	Ledger          *metrics.Ledger
	Timeline        *metrics.Timeline
}

// LiveConsumers is a running set of live consumers.
type LiveConsumers interface {
	// Crash makes the first consumer crash before its ack: it stops at once
	// and closes its connection with what it processed unacknowledged, then
	// comes back after down. It returns how many processed deliveries it
	// left unacknowledged.
	Crash(down time.Duration) (unacked int, err error)
	// LastDelivery is when any consumer last received a delivery (the zero
	// time before the first).
	LastDelivery() time.Time
	// Stop ends every consumer gracefully (acknowledging what it processed)
	// and returns what they measured.
	Stop() scenario.ConsumerStats
}

// Traffic publishes, drains and manages the queue under test over AMQP.
type Traffic interface {
	Declare(ctx context.Context, q QueueSpec) error
	Publish(ctx context.Context, p PublishPlan) (PublishStats, error)
	// Drain consumes with manual acks until idle, recording each delivery's
	// message id in the plan's ledger.
	Drain(ctx context.Context, d DrainPlan) error
	Delete(ctx context.Context, queue string) error
	// Consume starts live consumers; they run until Stop or ctx is done.
	Consume(ctx context.Context, c ConsumePlan) (LiveConsumers, error)
}

// Runner runs a scenario's modes one after the other against one broker.
type Runner struct {
	Injector FaultInjector
	Traffic  Traffic
	Log      *slog.Logger
	RunID    string // prefix of every message id and queue name of this run
	// DeleteQueues removes each mode's queue after its drain (set when the
	// broker container is not rmqtorture's own).
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
	// History, when set, receives each burst's recorded history (see engine/history.go).
	History   HistorySink
	histories int // bursts given a history index so far
}

// JitterSource returns the random source a burst draws fault jitter from,
// in step order: each firing with jitter J draws rng.Int64N(J) ns. Every
// mode of a run starts from the same seed, so each draws the same delays.
func JitterSource(seed uint64) *rand.Rand {
	return rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
}

// cleanupTimeout bounds broker restoration and a drain after an interrupt.
const cleanupTimeout = 90 * time.Second

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
			continue
		}
		res, brokerDown := r.RunMode(ctx, s, m)
		out = append(out, res)
		if brokerDown {
			skip = fmt.Sprintf("not run: the broker was not available after %s", m)
		}
	}
	return out
}

// RunMode runs one burst in mode m: declare a fresh queue, publish while the
// fault timeline fires, restore the broker, drain, reconcile and judge.
// brokerDown is true when the broker could not be brought back.
func (r *Runner) RunMode(ctx context.Context, s *scenario.Scenario, m scenario.Mode) (res scenario.ModeResult, brokerDown bool) {
	log := r.Log.With("mode", m)
	queue := fmt.Sprintf("rmqt.%s.%s", r.RunID, m)
	if r.Cell != nil {
		queue = fmt.Sprintf("rmqt.%s.%s.%s.%s.%d", r.RunID, m, r.Cell.QueueType, scenario.Persistence(r.Cell.Persistent), r.Cell.Repeat)
	}
	res = scenario.ModeResult{Mode: m, Queue: queue, Cell: r.Cell}
	window := 0
	switch m {
	case scenario.ConfirmEach:
		window = 1
	case scenario.ConfirmWindow:
		window = s.Load.Window
	}
	res.Window = window

	ledger := metrics.NewLedger(queue+"-", s.Load.Messages)
	hist := r.openHistory(s, m, &res, ledger)
	latency := metrics.NewLatency()
	var intended *metrics.Latency // from the rate schedule's send times
	if s.Load.Rate > 0 {
		intended = metrics.NewLatency()
	}
	var cond scenario.Conditions
	drained := false
	finish := func() {
		counts, ids, err := ledger.Reconcile(drained)
		cond.ReconcileErr = err
		cond.Unsent = s.Load.Messages - counts.Sent - counts.NotPublished // not published by deadline is an outcome, not a gap
		cond.Interrupted = ctx.Err() != nil
		res.Counts, res.IDs = counts, ids
		res.ConfirmLatency = latency.Summary()
		if intended != nil {
			sum := intended.Summary()
			res.ConfirmLatencyIntended = &sum
		}
		discards := s.Queue.Discards()
		res.LostAllowed = !s.Durability() || discards != ""
		res.Verdict = scenario.Judge(m, counts, scenario.Observed{BlockedMS: res.BlockedMS, ChannelCloses: res.ChannelCloses, Transient: res.LostAllowed, Consumers: res.Consumers}, s.Expect, cond)
		switch {
		case counts.Lost == 0:
		case discards != "":
			res.Notes = append(res.Notes, fmt.Sprintf("%d confirmed messages are gone, as allowed: the queue discards messages by design (%s) and has no dead-letter queue", counts.Lost, discards))
		case res.LostAllowed:
			res.Notes = append(res.Notes, fmt.Sprintf("%d confirmed messages are gone, as allowed: transient messages or a non-durable queue (a basic.ack promised no disk)", counts.Lost))
		}
		hist.finish(&res, cond, drained)
	}

	spec := QueueSpec{Name: queue, Type: s.Queue.Type, Durable: s.Queue.IsDurable(), Arguments: s.Queue.Arguments, AlsoBindType: s.Queue.AlsoBindType}
	if s.Queue.DeadLetterQueue {
		spec.DeadLetterQueue = queue + ".dlq"
	}
	if s.Consumers.Enabled() && s.Consumers.OnDelivery == scenario.ConsumerRetry {
		spec.RetryQueue, spec.RetryDelay = queue+".retry", s.Consumers.RetryDelay.D()
	}
	if err := r.Traffic.Declare(ctx, spec); err != nil {
		res.Error = err.Error()
		cond.PublishErr = fmt.Errorf("declare queue %q: %w", queue, err)
		finish()
		return res, false
	}
	log.Info("queue declared; settling before the burst", "queue", queue, "settle", s.Queue.SettleBeforeBurst.D())
	if err := Sleep(ctx, s.Queue.SettleBeforeBurst.D()); err != nil {
		finish()
		return res, false
	}

	start := time.Now()
	timeline := metrics.NewTimeline(start)
	var consumers LiveConsumers
	if s.Consumers.Enabled() {
		var err error
		consumers, err = r.Traffic.Consume(ctx, ConsumePlan{Queue: queue, Consumers: s.Consumers,
			RetryQueue: spec.RetryQueue, DeadLetterQueue: spec.DeadLetterQueue, Ledger: ledger, Timeline: timeline})
		if err != nil {
			res.Error = err.Error()
			cond.PublishErr = fmt.Errorf("start consumers: %w", err)
			finish()
			return res, false
		}
	}
	timeline.AddAt(start, metrics.EvBurstStart, "")
	series := metrics.NewSeries(start, r.Bucket)
	ledger.Attach(series)
	if r.OnBurst != nil {
		r.OnBurst(m, series, timeline)
	}

	// Fault steps run one after the other. Every count or percent trigger is
	// armed from the start: the publisher reports progress after every
	// publish, and the first report at or past a step's threshold fires it.
	nSteps := len(s.Faults)
	triggers := make([]chan struct{}, nSteps)
	fired := make([]atomic.Bool, nSteps)
	injected := make([]int, nSteps) // firings run; written by the fault goroutine, read after wg.Wait
	rng := JitterSource(r.Seed)
	atPublished := make([]atomic.Int64, nSteps)
	thresholds := make([]int, nSteps)
	inFlightAt := make([]int, nSteps)
	for i := range s.Faults {
		triggers[i] = make(chan struct{})
		thresholds[i], inFlightAt[i] = math.MaxInt, math.MaxInt
		if n, ok := s.Faults[i].CountTrigger(s.Load.Messages); ok {
			thresholds[i] = n
		}
		if s.Faults[i].InFlight != nil {
			inFlightAt[i] = *s.Faults[i].InFlight
		}
	}
	fire := func(i, sent int) {
		if fired[i].CompareAndSwap(false, true) {
			atPublished[i].Store(int64(sent))
			close(triggers[i])
		}
	}
	onPublished := func(sent, inFlight int) {
		for i, t := range thresholds {
			if (sent >= t || inFlight >= inFlightAt[i]) && !fired[i].Load() {
				fire(i, sent)
			}
		}
	}
	onPublished(0, 0)
	misroute := make(chan struct{})

	pubCtx, cancelPub := context.WithTimeoutCause(ctx, s.Load.BurstTimeout.D(),
		fmt.Errorf("burst not finished within load.burst_timeout %s", s.Load.BurstTimeout.D()))
	defer cancelPub()
	var wg sync.WaitGroup
	var brokerErr, clientFaultErr error
	if nSteps > 0 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() {
				// A bug in a fault step must not kill the process before the
				// broker is restored and the container removed.
				if p := recover(); p != nil {
					brokerErr = fmt.Errorf("rmqtorture bug in a fault step: %v", p)
					cancelPub()
				}
			}()
			st := &faultState{misroute: misroute, consumers: consumers}
			// Whatever happens, a broker left down by a manual_recovery step is
			// brought back before the drain.
			defer func() {
				if st.pending == "" || brokerErr != nil {
					return
				}
				rec, err := r.recoverBroker(ctx, log, s, st.pending, timeline)
				rec.Trigger = "restore at the end of the burst"
				rec.AtMS = metrics.Millis(time.Since(start))
				res.Faults = append(res.Faults, rec)
				res.Notes = append(res.Notes, fmt.Sprintf("the broker was still down when the burst ended; rmqtorture ran %s itself", st.pending))
				if err != nil {
					brokerErr = fmt.Errorf("broker not back after %s: %w", st.pending, err)
				}
			}()
			for i := range s.Faults {
				f := &s.Faults[i]
				var timer <-chan time.Time
				if f.After != nil {
					due := start.Add(f.After.D())
					if !time.Now().Before(due) {
						fire(i, ledger.Sent()) // its time passed while an earlier step ran
					}
					timer = time.After(time.Until(due))
				}
				select {
				case <-triggers[i]:
				case <-timer:
					fire(i, ledger.Sent())
				case <-pubCtx.Done():
					// A trigger that fired on the last publish still applies.
					select {
					case <-triggers[i]:
					default:
						return
					}
				}
				var recovered time.Time
				for k := 1; k <= f.Firings(); k++ {
					trigger := f.Trigger()
					if k > 1 {
						// A repeating step fires again Every after its previous
						// firing has recovered (the broker accepting AMQP
						// again), so clients get Every of up-time between
						// firings however slow the restart.
						select {
						case <-time.After(time.Until(recovered.Add(f.Every.D()))):
						case <-pubCtx.Done():
							return
						}
						atPublished[i].Store(int64(ledger.Sent()))
						trigger = fmt.Sprintf("%s after firing %d recovered", f.Every.D(), k-1)
					}
					var jitter time.Duration
					if f.Jitter > 0 {
						// The draw is made whatever happens, so later draws
						// stay the seed's; what is recorded is the delay
						// actually waited (the end of the burst cuts it short).
						draw := time.Duration(rng.Int64N(int64(f.Jitter)))
						began := time.Now()
						if Sleep(pubCtx, draw) != nil && ctx.Err() != nil {
							return
						}
						jitter = time.Since(began).Truncate(time.Microsecond)
						if jitter > draw {
							jitter = draw // timer overshoot is not jitter
						}
					}
					if ctx.Err() != nil {
						return // Ctrl-C before the step: do not start it now
					}
					rec, err := r.inject(ctx, log, s, f, trigger, timeline, start, st, ledger)
					recovered = time.Now()
					injected[i] = k
					rec.AtPublished = int(atPublished[i].Load())
					rec.JitterMS = metrics.Millis(jitter)
					if f.Every != nil {
						rec.Firing = k
					}
					res.Faults = append(res.Faults, rec)
					if err != nil && f.Action.ClientSide() {
						// The broker is fine: the burst and the drain go on,
						// and the run is inconclusive, not a lost broker.
						clientFaultErr = err
						return
					}
					if err != nil {
						brokerErr = err
						cancelPub() // nothing more can be measured without a broker
						return
					}
				}
			}
		}()
	}

	stats, pubErr := r.Traffic.Publish(pubCtx, PublishPlan{
		Queue: queue, Mode: m, Messages: s.Load.Messages, Window: window,
		ConfirmTimeout: s.Load.ConfirmTimeout.D(), Republish: s.Load.Republish,
		ReconnectTimeout: s.Load.ReconnectTimeout.D(),
		Ledger:           ledger, Latency: latency, IntendedLatency: intended, Timeline: timeline,
		OnPublished: onPublished, Misroute: misroute,
		UnroutableEvery: s.Load.UnroutableEvery, StallTimeout: s.Load.StallTimeout.D(),
		MessageDeadline: s.Load.MessageDeadline.D(), MessageSizeBytes: s.Load.MessageSizeBytes,
		ListenerBuffer: s.Load.ConfirmListenerBuffer,
		Transient:      !s.Load.IsPersistent(), Rate: s.Load.Rate, Publishers: s.Load.Publishers,
		StampSentTime: s.Consumers.Enabled(),
	})
	timeline.Add(metrics.EvBurstEnd, "")
	if cause := context.Cause(pubCtx); errors.Is(pubErr, context.DeadlineExceeded) && cause != nil {
		pubErr = cause
	}
	if pubErr != nil && !errors.Is(pubErr, context.Canceled) {
		cond.PublishErr = fmt.Errorf("publisher: %w", pubErr)
		log.Warn("publisher stopped", "err", pubErr)
	}
	cancelPub() // a fault that never fired will not fire now
	wg.Wait()
	if brokerErr != nil {
		cond.BrokerNotBack = brokerErr
	}
	if clientFaultErr != nil {
		cond.FaultMissed = clientFaultErr
	}
	for i := range s.Faults {
		switch s.Faults[i].Action {
		case scenario.Start, scenario.Unpause, scenario.Reconnect:
			continue // a recovery that did not fire was run at the end instead (see Notes)
		}
		if !fired[i].Load() {
			cond.FaultMissed = fmt.Errorf("fault %s (%s) never fired: the burst ended first", s.Faults[i].Action, s.Faults[i].Trigger())
			break
		}
		if injected[i] == 0 && brokerErr == nil {
			cond.FaultMissed = fmt.Errorf("fault %s (%s) fired but never ran: an earlier step was still waiting when the burst ended", s.Faults[i].Action, s.Faults[i].Trigger())
			break
		}
		if n := s.Faults[i].Firings(); injected[i] < n && brokerErr == nil {
			cond.FaultMissed = fmt.Errorf("fault %s (%s) fired %d of %d times: the burst ended first", s.Faults[i].Action, s.Faults[i].Repeats(), injected[i], n)
			break
		}
	}

	r.measure(&res, stats, timeline, start)
	for _, f := range res.Faults {
		if f.Error == "" && f.PublishedAtInject >= s.Load.Messages && f.AtPublished < s.Load.Messages {
			res.Notes = append(res.Notes, fmt.Sprintf("every order had been published before the %s call returned (%.0f ms after its trigger): the fault hit the broker's backlog, not the burst", f.Action, f.InjectMS))
		}
	}

	// Drain even when interrupted: what was published so far is still worth
	// reconciling. Cleanup ignores cancellation but has its own deadline.
	if consumers != nil {
		if err := r.awaitConsumers(ctx, s, consumers, ledger); err != nil {
			cond.DrainIncomplete = err
		}
		stats := consumers.Stop()
		res.Consumers = &stats
		timeline.Add(metrics.EvConsumersStopped, fmt.Sprintf("%d deliveries", stats.Deliveries))
	}
	if brokerErr == nil {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.Drain.Timeout.D())
		if ctx.Err() != nil {
			dctx, cancel = context.WithTimeout(context.WithoutCancel(ctx), 20*time.Second)
		}
		timeline.Add(metrics.EvDrainStart, "")
		// The dead-letter queue first (until idle: nobody knows how many it
		// should hold): what it holds satisfies the work queue's wait for
		// confirmed ids.
		var err error
		if spec.DeadLetterQueue != "" {
			err = r.Traffic.Drain(dctx, DrainPlan{
				Queue: spec.DeadLetterQueue, Ledger: ledger, Idle: s.Drain.Idle.D(), LostWait: s.Drain.LostWait.D(),
				Timeout: s.Drain.Timeout.D(), Satisfied: func() bool { return true }, AllowEmpty: true, DeadLetter: true,
			})
		}
		if err == nil {
			err = r.Traffic.Drain(dctx, DrainPlan{
				Queue: queue, Ledger: ledger, Idle: s.Drain.Idle.D(), LostWait: s.Drain.LostWait.D(),
				Timeout: s.Drain.Timeout.D(), Satisfied: ledger.AllConfirmedDelivered, AllowEmpty: consumers != nil,
			})
		}
		cancel()
		// An incomplete drain proves nothing about what it did not reach:
		// those ids are unverified, not lost.
		drained = err == nil && cond.DrainIncomplete == nil
		timeline.Add(metrics.EvDrainEnd, "")
		if err != nil && cond.DrainIncomplete == nil {
			cond.DrainIncomplete = fmt.Errorf("drain: %w", err)
		}
		if r.DeleteQueues {
			dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			if err := r.Traffic.Delete(dctx, queue); err != nil {
				log.Warn("delete queue", "queue", queue, "err", err)
			}
			cancel()
		}
	} else {
		cond.DrainIncomplete = errors.New("drain skipped: broker not available")
	}
	res.Events = timeline.Events()
	res.Series = seriesOf(series, res.Faults, res.Events, time.Now())
	recoveries(res.Faults, res.Events, series, m.ConfirmMode())
	finish()
	log.Info("mode done", "verdict", res.Verdict.Status, "sent", res.Sent, "lost", res.Lost,
		"unconfirmed_missing", res.UnconfirmedMissing, "in_doubt", res.InDoubt, "duplicates", res.Duplicates)
	return res, brokerErr != nil
}

// awaitConsumers waits, after the burst, until the live consumers go quiet:
// nothing delivered for drain.idle and every confirmed id delivered (or, for
// consumers that never ack, simply quiet), or nothing delivered for
// drain.lost_wait. A queue still delivering after drain.timeout (a poison
// message nobody ends) makes the drain incomplete.
func (r *Runner) awaitConsumers(ctx context.Context, s *scenario.Scenario, c LiveConsumers, ledger *metrics.Ledger) error {
	began := time.Now()
	deadline := began.Add(s.Drain.Timeout.D())
	if ctx.Err() != nil {
		deadline = began.Add(5 * time.Second)
	}
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for range tick.C {
		last := c.LastDelivery()
		if last.Before(began) {
			last = began
		}
		idle := time.Since(last)
		quiet := idle >= s.Drain.Idle.D() && (s.Consumers.OnDelivery != scenario.ConsumerAck || ledger.AllConfirmedDelivered())
		if quiet || idle >= s.Drain.LostWait.D() {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("live consumers still receiving deliveries %s after the burst (drain.timeout): messages are cycling", s.Drain.Timeout.D())
		}
	}
	return nil
}

// faultState carries what one burst's fault steps share.
type faultState struct {
	consumers    LiveConsumers // nil without live consumers
	misroute     chan struct{}
	misrouteOnce sync.Once
	pending      scenario.Action // recovery a manual_recovery step left for a later step
}

// inject applies one fault step and, unless the step says manual_recovery,
// runs its recovery after Down. Once a step has started it is applied and
// recovered under a context that ignores Ctrl-C (half a fault, a kill whose
// restart was skipped, is the worst outcome), with its own deadline.
func (r *Runner) inject(ctx context.Context, log *slog.Logger, s *scenario.Scenario, f *scenario.Fault, trigger string, tl *metrics.Timeline, start time.Time, st *faultState, ledger *metrics.Ledger) (scenario.FaultRecord, error) {
	rec := scenario.FaultRecord{Action: f.Action, Signal: f.Signal, Trigger: trigger, DownMS: metrics.Millis(f.Down.D())}
	at := time.Now()
	rec.AtMS = metrics.Millis(at.Sub(start))
	tl.AddAt(at, metrics.EvTrigger, fmt.Sprintf("%s (%s)", f.Action, rec.Trigger))
	switch f.Action {
	case scenario.Start, scenario.Unpause, scenario.Reconnect:
		st.pending = ""
		out, err := r.recoverBroker(ctx, log, s, f.Action, tl)
		out.Trigger, out.AtMS = rec.Trigger, rec.AtMS
		if err != nil {
			return out, fmt.Errorf("broker not back after %s: %w", f.Action, err)
		}
		return out, nil
	}
	fctx, fcancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer fcancel()
	var err error
	detail := string(f.Action)
	switch f.Action {
	case scenario.Kill:
		err = r.Injector.Kill(fctx, f.Signal)
		detail = fmt.Sprintf("kill %s (Docker API call returned; the signal lands during the call)", f.Signal)
	case scenario.Stop:
		err = r.Injector.Stop(fctx, f.Grace.D())
		detail = fmt.Sprintf("stop (SIGTERM, SIGKILL after %s): the broker exited", f.Grace.D())
	case scenario.Restart:
		err = r.Injector.Restart(fctx, f.Grace.D())
		detail = fmt.Sprintf("restart (graceful, %s grace)", f.Grace.D())
	case scenario.Pause:
		err = r.Injector.Pause(fctx)
		detail = "pause: broker frozen, connections hang"
	case scenario.Disconnect:
		err = r.Injector.Disconnect(fctx)
		detail = "disconnect: broker removed from its network, client links fail"
	case scenario.MemoryAlarm:
		err = r.Injector.MemoryAlarm(fctx, true)
		detail = "memory alarm raised (vm_memory_high_watermark set below use)"
	case scenario.CloseConnections:
		err = r.Injector.CloseConnections(fctx)
		detail = "broker closed every client connection (rabbitmqctl close_all_connections)"
	case scenario.PublishToMissingExchange:
		st.misrouteOnce.Do(func() { close(st.misroute) })
		detail = "next publish goes to a missing exchange"
	case scenario.CrashConsumer:
		if st.consumers == nil {
			err = errors.New("no live consumers to crash")
			break
		}
		rec.UnackedAtCrash, err = st.consumers.Crash(f.Down.D())
		detail = fmt.Sprintf("crash-consumer: consumer 0 crashed before its ack with %d processed deliveries unacknowledged; back after %s", rec.UnackedAtCrash, f.Down.D())
	}
	if err != nil {
		rec.Error = err.Error()
		// The call may have failed after the action landed (a timeout): try
		// the recovery anyway, so the broker is not left down.
		if recovery, _ := f.Action.Recovery(); recovery != "" {
			if _, rerr := r.recoverBroker(ctx, log, s, recovery, tl); rerr != nil {
				log.Warn("recovery after a failed fault", "action", recovery, "err", rerr)
			}
		} else if f.Action == scenario.MemoryAlarm {
			_ = r.Injector.MemoryAlarm(fctx, false)
		}
		return rec, fmt.Errorf("fault %s: %w", f.Action, err)
	}
	applied := time.Now()
	rec.InjectMS = metrics.Millis(applied.Sub(at))
	rec.PublishedAtInject = ledger.Sent()
	tl.AddAt(applied, metrics.EvFault, detail)
	log.Info("fault applied", "action", f.Action, "trigger", rec.Trigger, "inject", applied.Sub(at).Round(time.Millisecond), "published", rec.PublishedAtInject)
	if f.Action == scenario.Restart {
		if err := r.Injector.WaitReady(fctx, s.Broker.ReadyTimeout.D()); err != nil {
			rec.Error = err.Error()
			tl.Add(metrics.EvBrokerNotReady, err.Error())
			return rec, fmt.Errorf("broker not back after restart: %w", err)
		}
		tl.Add(metrics.EvBrokerReady, "")
		return rec, nil
	}
	recovery, _ := f.Action.Recovery()
	if !f.Action.Recovers() {
		return rec, nil
	}
	if f.ManualRecovery {
		st.pending = recovery
		return rec, nil
	}
	// The planned downtime is cut short by Ctrl-C; the recovery is not.
	_ = Sleep(ctx, f.Down.D())
	if f.Action == scenario.MemoryAlarm {
		if err := r.Injector.MemoryAlarm(fctx, false); err != nil {
			rec.Error = err.Error()
			return rec, fmt.Errorf("clear memory alarm: %w", err)
		}
		tl.Add(metrics.EvFaultCleared, "memory alarm cleared (watermark restored)")
		return rec, nil
	}
	out, err := r.recoverBroker(ctx, log, s, recovery, tl)
	if err != nil {
		rec.Error = out.Error
		return rec, fmt.Errorf("broker not back after %s: %w", f.Action, err)
	}
	log.Info("broker ready again", "downtime_since_fault", time.Since(applied).Round(time.Millisecond))
	return rec, nil
}

// recoverBroker starts, unpauses or reconnects the broker and waits until it
// accepts AMQP logins, ignoring Ctrl-C but not its own deadline.
func (r *Runner) recoverBroker(ctx context.Context, log *slog.Logger, s *scenario.Scenario, a scenario.Action, tl *metrics.Timeline) (scenario.FaultRecord, error) {
	rec := scenario.FaultRecord{Action: a}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout+s.Broker.ReadyTimeout.D())
	defer cancel()
	at := time.Now()
	var err error
	switch a {
	case scenario.Start:
		err = r.Injector.Start(rctx)
	case scenario.Unpause:
		err = r.Injector.Unpause(rctx)
	case scenario.Reconnect:
		err = r.Injector.Reconnect(rctx)
	}
	if err != nil {
		rec.Error = err.Error()
		tl.Add(metrics.EvBrokerNotReady, err.Error())
		return rec, fmt.Errorf("%s broker: %w", a, err)
	}
	rec.InjectMS = metrics.Millis(time.Since(at))
	tl.Add(metrics.EvBrokerStarted, string(a))
	if err := r.Injector.WaitReady(rctx, s.Broker.ReadyTimeout.D()); err != nil {
		rec.Error = err.Error()
		tl.Add(metrics.EvBrokerNotReady, err.Error())
		return rec, err
	}
	tl.Add(metrics.EvBrokerReady, "")
	log.Info("broker recovered", "action", a)
	return rec, nil
}

// measure derives rates and recovery timings from the publisher's stats and
// the timeline.
func (r *Runner) measure(res *scenario.ModeResult, st PublishStats, tl *metrics.Timeline, start time.Time) {
	res.Reconnects = st.Reconnects
	res.BlockedMS = round1(st.BlockedMS)
	res.Stalls = st.Stalls
	res.ChannelCloses = st.ChannelCloses
	res.AbsorbedRate = round1(st.AbsorbedRate)
	if end, ok := tl.First(metrics.EvBurstEnd, start); ok {
		res.BurstMS = metrics.Millis(end.Sub(start))
	}
	if !st.LastPublish.IsZero() {
		res.PublishRate = round1(metrics.Rate(st.Publishes, st.LastPublish.Sub(start)))
	}
	// Up to the first fault's trigger, every publish was a first attempt: the
	// ids published then are the publish calls made.
	if len(res.Faults) > 0 && res.Faults[0].AtMS > 0 {
		res.PreFaultPublishRate = round1(metrics.Rate(res.Faults[0].AtPublished, time.Duration(res.Faults[0].AtMS*float64(time.Millisecond))))
	} else {
		res.PreFaultPublishRate = res.PublishRate
	}
	if fault, ok := tl.First(metrics.EvFault, start); ok {
		if ready, ok := tl.First(metrics.EvBrokerReady, fault); ok {
			v := metrics.Millis(ready.Sub(fault))
			res.BrokerDowntimeMS = &v
		}
		if prog, ok := tl.First(metrics.EvFirstProgress, fault); ok {
			v := metrics.Millis(prog.Sub(fault))
			res.ClientRecoveryMS = &v
		}
	}
	if !st.LastConfirm.IsZero() {
		res.ConfirmRate = round1(metrics.Rate(st.Acked, st.LastConfirm.Sub(start)))
	}
}

func round1(v float64) float64 { return math.Round(v*10) / 10 }

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
