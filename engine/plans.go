package engine

import (
	"fmt"
	"sync"
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
	// Node and AlsoBindNode (a cluster; 1-based, 0: node 1) are the nodes
	// the queue and its ".also" companion are declared through: a classic
	// queue lives on the node it was declared through (queue.node,
	// queue.also_bind_node).
	Node, AlsoBindNode int
	// DeadLetterQueue, when set, is declared as a durable queue of the same
	// type bound to the dead-letter exchange, and the queue dead-letters to it.
	DeadLetterQueue string
	// RetryQueue, when set, is declared with x-message-ttl RetryDelay and
	// dead-letters expired messages back to Name through the default exchange.
	RetryQueue string
	RetryDelay time.Duration
	// DeadLetterArguments are the dead-letter queue's own x-arguments.
	DeadLetterArguments map[string]any
	// DeadLetterType is the dead-letter queue's type ("": Type);
	// DeadLetterNode (a cluster; 1-based, 0: Node) the node it is declared
	// through (queue.dead_letter_type, queue.dead_letter_node).
	DeadLetterType scenario.QueueType
	DeadLetterNode int
	// Shared: the parts of a split run declare the queue each in turn, so
	// it may already hold the messages of other parts (Runner.Part).
	Shared bool
}

// PublishPlan is everything a publisher needs for one burst. The publisher
// records what it learns in Ledger, Latency and Timeline.
type PublishPlan struct {
	// PreferNode, set on a cluster, is the node (1-based) publisher index
	// (0-based) connects to first (load.connect_to); it fails over to the
	// next nodes when that one is down.
	PreferNode func(publisher int) int
	Queue      string
	Mode       scenario.Mode
	// First and Messages bound the sequence numbers published:
	// [First, Messages). First is 0 except in a load part of a split run
	// (Runner.Part), which publishes its share only.
	First            int
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
	// Heartbeat is the AMQP heartbeat timeout each publisher connection
	// asks for (scenario load.heartbeat).
	Heartbeat time.Duration
	// MessageDeadline (0: none) is each order's deadline from its first try.
	MessageDeadline time.Duration
	// MessageSizeBytes is each body's size in bytes when MessageSizeSet or
	// above 0 (otherwise the bare order, ~90 bytes).
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
	// BurstMessages and BurstEvery (load.burst; 0: none) schedule publish
	// calls in bursts instead of at Rate: call k is due
	// floor(k/BurstMessages)·BurstEvery after the first. As with Rate, a
	// publisher held up catches up as fast as it can.
	BurstMessages int
	BurstEvery    time.Duration
	// OnConfirmTimeout is what a confirm older than ConfirmTimeout does
	// (scenario.OnTimeoutClose when empty).
	OnConfirmTimeout scenario.ConfirmTimeoutAction
	// ChannelsPerConnection puts this many publishers on each connection,
	// one channel each (0 or 1: a connection per publisher).
	ChannelsPerConnection int
	// TxSize (transactional) is the number of messages per tx.commit (0 or
	// 1: one).
	TxSize int
	// Faults says whether a broker fault is in effect (nil: none ever is):
	// a publisher making no progress then is showing the fault's effect,
	// not a client stall (php-amqplib#787), and a socket it loses then was
	// lost to the fault.
	Faults *FaultState
	// MessageSizeSet makes every body exactly MessageSizeBytes long, 0
	// included: cut below the order's JSON, padded above it
	// (ruby-amqp/bunny#615).
	MessageSizeSet bool
}

// FaultState is whether a broker fault is in effect: from the start of the
// fault's call until the broker accepts AMQP logins again (or the fault is
// cleared in place, or, for a fault that leaves the broker up, its call
// returns). The injector sets it; publishers read it. Client-side faults
// (crash-consumer, publish-to-missing-exchange) never set it. Its methods
// are goroutine-safe and accept a nil receiver (no fault ever in effect).
type FaultState struct {
	mu     sync.Mutex
	action scenario.Action
	on     bool
	ended  time.Time
}

// Begin marks a broker fault with action a in effect from now.
func (f *FaultState) Begin(a scenario.Action) {
	if f == nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.action, f.on = a, true
}

// End marks the fault in effect, if any, over at now.
func (f *FaultState) End() {
	if f == nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.on {
		f.on, f.ended = false, time.Now()
	}
}

// InEffect returns the action of the broker fault in effect (ok false when
// none is) and when the latest fault ended (zero when none has).
func (f *FaultState) InEffect() (a scenario.Action, ok bool, ended time.Time) {
	if f == nil {
		return "", false, time.Time{}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.on {
		return "", false, f.ended
	}
	return f.action, true, f.ended
}

// Scheduled reports whether publish calls follow a schedule (Rate or a
// burst shape), so each order has an intended send time.
func (p PublishPlan) Scheduled() bool {
	return p.BurstMessages > 0 || p.Rate > 0 // NaN rate: false
}

// DueAfter is when publish call k (0-based, republishes included) is due,
// after the schedule's first call: k/Rate s, or its burst's start.
func (p PublishPlan) DueAfter(k int64) time.Duration {
	if p.BurstMessages > 0 {
		return time.Duration(k/int64(p.BurstMessages)) * p.BurstEvery
	}
	return time.Duration(float64(k) * float64(time.Second) / p.Rate)
}

// PublishStats is what a publisher measured beside the ledger.
type PublishStats struct {
	Publishes   int       // publish calls that returned without error, republishes included
	Acked       int       // basic.acks received
	LastPublish time.Time // last publish call that returned without error
	LastConfirm time.Time // last basic.ack or basic.nack
	Reconnects  int
	// AbsorbedRate is msg/s entering the queue (fire-and-forget only), from
	// queue-depth polls before the first fault; 0 when not measured. It is
	// Absorbed messages over AbsorbedSpan: the most the polls saw in the
	// queue, and when after the burst's start they saw it.
	AbsorbedRate float64
	Absorbed     int
	AbsorbedSpan time.Duration
	// BlockedMS is the time the broker held the publisher's connection
	// blocked (connection.blocked → connection.unblocked), in ms.
	BlockedMS float64
	// Stalls counts client stalls (see PublishPlan.StallTimeout).
	Stalls int
	// ChannelCloses lists why the broker closed channels or connections,
	// with reply code and text (e.g. "404 NOT_FOUND - no exchange …").
	ChannelCloses []string
	// ByNode counts, per cluster node (1-based), the connections opened to
	// it and the publishes and basic.acks on them (nil on a single broker).
	ByNode map[int]*NodeStats
}

// NodeStats is what went through one cluster node's client port.
type NodeStats struct{ Connections, Publishes, Acked int }

func (s *PublishStats) on(node int) *NodeStats {
	if s.ByNode == nil {
		s.ByNode = map[int]*NodeStats{}
	}
	if s.ByNode[node] == nil {
		s.ByNode[node] = &NodeStats{}
	}
	return s.ByNode[node]
}

// ConnectedTo counts a connection to node (0: a single broker, not counted).
func (s *PublishStats) ConnectedTo(node int) {
	if node > 0 {
		s.on(node).Connections++
	}
}

// PublishedOn counts a publish on a connection to node.
func (s *PublishStats) PublishedOn(node int) {
	if node > 0 {
		s.on(node).Publishes++
	}
}

// AckedOn counts a basic.ack on a connection to node.
func (s *PublishStats) AckedOn(node int) {
	if node > 0 {
		s.on(node).Acked++
	}
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
	// OnDeadLetter, when set on a dead-letter drain, is called with every
	// delivery's id and the reason and count of its latest x-death entry
	// ("none" and 0 without one), from the drain's goroutine.
	OnDeadLetter func(id, reason string, count int)
	// OnBody, when set, is called with the size in bytes of every body
	// drained (from the drain's goroutine).
	OnBody func(bytes int)
}

// bodySizes is the smallest and largest of the body sizes it was given;
// used from the drain's goroutine only.
type bodySizes struct {
	min, max int
	seen     bool
}

func (b *bodySizes) add(n int) {
	if !b.seen || n < b.min {
		b.min = n
	}
	b.max, b.seen = max(b.max, n), true
}

// result is the range seen, nil when no body was.
func (b *bodySizes) result() *scenario.ByteRange {
	if !b.seen {
		return nil
	}
	return &scenario.ByteRange{Min: b.min, Max: b.max}
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
	// PreferNode, set on a cluster, is the node (1-based) consumer index
	// (0-based) connects to first, as for publishers (load.connect_to).
	PreferNode func(consumer int) int
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
// fire-and-forget, no confirms; one transaction in transactional).
func window(s *scenario.Scenario, m scenario.Mode) int {
	switch m {
	case scenario.ConfirmEach:
		return 1
	case scenario.ConfirmWindow:
		return s.Load.Window
	case scenario.Transactional:
		return max(1, s.Load.TxSize)
	}
	return 0
}

// queueSpec is the queue under test, with its dead-letter and retry queues
// when the scenario asks for them.
func queueSpec(s *scenario.Scenario, queue string) QueueSpec {
	spec := QueueSpec{Name: queue, Type: s.Queue.Type, Durable: s.Queue.IsDurable(), Arguments: s.Queue.Arguments, AlsoBindType: s.Queue.AlsoBindType,
		Node: s.Queue.Node, AlsoBindNode: s.Queue.AlsoBindNode}
	if s.Queue.DeadLetterQueue {
		spec.DeadLetterQueue = queue + ".dlq"
		spec.DeadLetterArguments = s.Queue.DeadLetterArguments
		spec.DeadLetterType, spec.DeadLetterNode = s.Queue.DeadLetterType, s.Queue.DeadLetterNode
	}
	if s.Consumers.Enabled() && s.Consumers.OnDelivery == scenario.ConsumerRetry {
		spec.RetryQueue, spec.RetryDelay = queue+".retry", s.Consumers.RetryDelay.D()
	}
	return spec
}

// publishPlan is the burst's publish plan from the scenario's load section;
// the caller sets the ledger, latencies, timeline and callbacks.
func publishPlan(s *scenario.Scenario, m scenario.Mode, queue string) PublishPlan {
	p := PublishPlan{
		Queue: queue, Mode: m, Messages: s.Load.Messages, Window: window(s, m),
		ConfirmTimeout: s.Load.ConfirmTimeout.D(), Republish: s.Load.Republish,
		ReconnectTimeout: s.Load.ReconnectTimeout.D(),
		UnroutableEvery:  s.Load.UnroutableEvery, StallTimeout: s.Load.StallTimeout.D(), Heartbeat: s.Load.Heartbeat.D(),
		MessageDeadline: s.Load.MessageDeadline.D(), MessageSizeBytes: bodySize(s), MessageSizeSet: s.Load.MessageSizeBytes != nil,
		ListenerBuffer: s.Load.ConfirmListenerBuffer,
		Transient:      !s.Load.IsPersistent(), Rate: s.Load.Rate, Publishers: s.Load.Publishers,
		StampSentTime:         s.Consumers.Enabled(),
		ChannelsPerConnection: s.Load.ChannelsPerConnection, TxSize: s.Load.TxSize,
		OnConfirmTimeout: s.Load.OnConfirmTimeout, Deduplication: s.Queue.Deduplication,
	}
	if b := s.Load.Burst; b != nil {
		p.BurstMessages, p.BurstEvery = b.Messages, b.Every.D()
	}
	return p
}

// drainPlan drains queue after the burst with the scenario's drain settings.
func drainPlan(s *scenario.Scenario, queue string, ledger *metrics.Ledger) DrainPlan {
	return DrainPlan{Queue: queue, Ledger: ledger, Idle: s.Drain.Idle.D(), LostWait: s.Drain.LostWait.D(), Timeout: s.Drain.Timeout.D()}
}

// bodySize is load.message_size_bytes, 0 when unset.
func bodySize(s *scenario.Scenario) int {
	if s.Load.MessageSizeBytes == nil {
		return 0
	}
	return *s.Load.MessageSizeBytes
}
