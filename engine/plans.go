package engine

import (
	"fmt"
	"time"

	"github.com/rmqtorture/rmqtorture/metrics"
	"github.com/rmqtorture/rmqtorture/scenario"
)

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
	// Deduplication (streams) publishes through a named stream producer,
	// each id with its own publishing id, so the broker drops a republished
	// copy it already stored (queue.deduplication).
	Deduplication bool
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

// queueName is the queue a burst in mode m publishes to: "rmqt.<run>.<mode>",
// with the matrix cell appended in a matrix run.
func queueName(runID string, m scenario.Mode, cell *scenario.Cell) string {
	if cell != nil {
		return fmt.Sprintf("rmqt.%s.%s.%s.%s.%d", runID, m, cell.QueueType, scenario.Persistence(cell.Persistent), cell.Repeat)
	}
	return fmt.Sprintf("rmqt.%s.%s", runID, m)
}

// window is the number of unconfirmed messages mode m keeps in flight (0:
// fire-and-forget, no confirms).
func window(s *scenario.Scenario, m scenario.Mode) int {
	switch m {
	case scenario.ConfirmEach:
		return 1
	case scenario.ConfirmWindow:
		return s.Load.Window
	}
	return 0
}

// queueSpec is the queue under test, with its dead-letter and retry queues
// when the scenario asks for them.
func queueSpec(s *scenario.Scenario, queue string) QueueSpec {
	spec := QueueSpec{Name: queue, Type: s.Queue.Type, Durable: s.Queue.IsDurable(), Arguments: s.Queue.Arguments, AlsoBindType: s.Queue.AlsoBindType}
	if s.Queue.DeadLetterQueue {
		spec.DeadLetterQueue = queue + ".dlq"
	}
	if s.Consumers.Enabled() && s.Consumers.OnDelivery == scenario.ConsumerRetry {
		spec.RetryQueue, spec.RetryDelay = queue+".retry", s.Consumers.RetryDelay.D()
	}
	return spec
}

// publishPlan is the burst's publish plan from the scenario's load section;
// the caller sets the ledger, latencies, timeline and callbacks.
func publishPlan(s *scenario.Scenario, m scenario.Mode, queue string) PublishPlan {
	return PublishPlan{
		Queue: queue, Mode: m, Messages: s.Load.Messages, Window: window(s, m),
		ConfirmTimeout: s.Load.ConfirmTimeout.D(), Republish: s.Load.Republish,
		ReconnectTimeout: s.Load.ReconnectTimeout.D(),
		UnroutableEvery:  s.Load.UnroutableEvery, StallTimeout: s.Load.StallTimeout.D(),
		MessageDeadline: s.Load.MessageDeadline.D(), MessageSizeBytes: s.Load.MessageSizeBytes,
		ListenerBuffer: s.Load.ConfirmListenerBuffer,
		Transient:      !s.Load.IsPersistent(), Rate: s.Load.Rate, Publishers: s.Load.Publishers,
		StampSentTime: s.Consumers.Enabled(),
		Deduplication: s.Queue.Deduplication,
	}
}

// drainPlan drains queue after the burst with the scenario's drain settings.
func drainPlan(s *scenario.Scenario, queue string, ledger *metrics.Ledger) DrainPlan {
	return DrainPlan{Queue: queue, Ledger: ledger, Idle: s.Drain.Idle.D(), LostWait: s.Drain.LostWait.D(), Timeout: s.Drain.Timeout.D()}
}
