// Package scenario holds rmqtorture's scenario language (the schema of
// scenarios.yaml, strict loading and validation with file:line errors), the
// Runner that drives one scenario through a broker and its traffic, and the
// pure Judge that turns a reconciled ledger into a verdict. It imports neither
// AMQP nor Docker: the broker packages implement the interfaces it consumes.
package scenario

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/rmqtorture/rmqtorture/metrics"
)

// Mode is a way of publishing. The value is the YAML/JSON/report spelling.
type Mode string

const (
	// FireAndForget publishes without confirm mode: a publish that returned no
	// error only reached a local buffer.
	FireAndForget Mode = "fire-and-forget"
	// ConfirmEach publishes one message and awaits its publisher confirm
	// (with a timeout) before the next: a window of 1.
	ConfirmEach Mode = "confirm-each"
	// ConfirmWindow keeps at most Window unconfirmed messages in flight and
	// matches confirms as they arrive.
	ConfirmWindow Mode = "confirm-window"
	// Transactional publishes in AMQP transactions (tx.select once, then
	// load.tx_size basic.publish and a tx.commit): a tx.commit-ok means the
	// broker took responsibility for the transaction's messages, as a
	// basic.ack does; the messages of a transaction whose tx.commit did not
	// return before the connection died are in doubt; a tx.commit the broker
	// refuses (a channel error) is a nack (rabbitmq-server#8966).
	Transactional Mode = "transactional"
)

// Modes lists every mode in report order.
var Modes = []Mode{FireAndForget, ConfirmEach, ConfirmWindow, Transactional}

// DefaultModes are the modes a scenario without load.modes runs: the three
// ways of publishing most applications use.
var DefaultModes = []Mode{FireAndForget, ConfirmEach, ConfirmWindow}

// ConfirmMode reports whether the broker settles each message for the
// publisher: a publisher confirm (confirm-each, confirm-window) or a
// tx.commit-ok (transactional). The ledger then follows each message from
// in flight to confirmed, nacked or in doubt; in fire-and-forget it can only
// learn from the drain.
func (m Mode) ConfirmMode() bool { return m == ConfirmEach || m == ConfirmWindow || m == Transactional }

// QueueType is the x-queue-type of the durable queue under test.
type QueueType string

const (
	Quorum  QueueType = "quorum"  // replicated Raft log; basic.ack means on a majority
	Classic QueueType = "classic" // single node; persistent messages written to the OS, not fsynced, before basic.ack (docs/power-loss.md)
	// Stream is an append-only log read from an offset and never emptied
	// by acks; rmqtorture publishes to it and drains it over the stream
	// protocol (port 5552), where a publish confirmation for a publishing id
	// plays basic.ack's part (https://www.rabbitmq.com/docs/streams).
	Stream QueueType = "stream"
)

// ConsumerAction is what a live consumer does with each delivery.
type ConsumerAction string

const (
	// ConsumerAck processes the delivery and acknowledges it (basic.ack,
	// multiple=true every consumers.ack_every deliveries).
	ConsumerAck ConsumerAction = "ack"
	// ConsumerNackRequeue always fails: basic.nack with requeue=true, so the
	// broker hands the message out again (a poison-message loop a quorum
	// queue's x-delivery-limit is meant to end; rabbitmq-server PR #11937).
	ConsumerNackRequeue ConsumerAction = "nack-requeue"
	// ConsumerReject always fails: basic.nack with requeue=false, so the broker
	// dead-letters the message (or drops it without a dead-letter exchange).
	ConsumerReject ConsumerAction = "reject"
	// ConsumerRetry always fails and retries through a retry queue: the
	// consumer republishes the message (headers copied, its own retry count
	// header incremented) to "<queue>.retry", whose x-message-ttl sends it
	// back to the work queue through the default exchange (dead-lettering),
	// and acks the original; after consumers.max_retries it parks the
	// message in the dead-letter queue instead. RabbitMQ 4.x does not carry
	// a client-republished x-death over, so an x-death-based count never
	// reaches the limit: the report shows both counts.
	ConsumerRetry ConsumerAction = "retry"
)

// ConsumerActions lists every consumer action.
var ConsumerActions = []ConsumerAction{ConsumerAck, ConsumerNackRequeue, ConsumerReject, ConsumerRetry}

// The counts consumers.retry_count_from names.
const (
	RetryFromHeader = "header"
	RetryFromXDeath = "x-death"
)

// RetryLoopBound is the retries (by the consumer's own header) at which a
// retry loop counted by x-death is cut and its message parked: 10 times
// max_retries, at least 10.
func RetryLoopBound(maxRetries int) int { return max(10, 10*maxRetries) }

// RetryHeader is the application's own retry count header set by
// on_delivery: retry (the count to trust on RabbitMQ 4.x, not x-death).
const RetryHeader = "x-rmqtorture-retries"

// ConfirmTimeoutAction is what the publisher does with a message whose
// confirm has not come within load.confirm_timeout.
type ConfirmTimeoutAction string

const (
	// OnTimeoutClose closes the connection: every message pending on it goes
	// in doubt and, under republish: in-doubt, is republished on the next.
	OnTimeoutClose ConfirmTimeoutAction = "close"
	// OnTimeoutRepublish publishes the message again on the same channel,
	// once, and keeps its original delivery tag tracked: a late basic.ack of
	// the original still settles the id, and the copy it caused is a
	// duplicate of it (rabbitmq/amqp091-go#122). A copy left unconfirmed for
	// confirm_timeout closes the connection as under close.
	OnTimeoutRepublish ConfirmTimeoutAction = "republish"
)

// ConfirmTimeoutActions lists every confirm timeout action.
var ConfirmTimeoutActions = []ConfirmTimeoutAction{OnTimeoutClose, OnTimeoutRepublish}

// Republish is the policy for messages whose confirm never came, or came
// as a basic.nack.
type Republish string

const (
	// RepublishInDoubt republishes every in-doubt message (same message id) on
	// the next connection until it is confirmed or the run ends.
	RepublishInDoubt Republish = "in-doubt"
	// RepublishNackedAndInDoubt republishes in-doubt messages as in-doubt
	// does, and every basic.nack'd message too (same message id, next
	// attempt), at most NackRepublishLimit times, as an application that
	// resends refused messages does (oslo.messaging does,
	// rabbitmq-server PR #4888). A message routed to several queues is
	// nacked when one of them is down although another took it: its
	// republished copies are duplicates there, counted by id.
	RepublishNackedAndInDoubt Republish = "nacked-and-in-doubt"
	// RepublishNone leaves in-doubt messages in doubt.
	RepublishNone Republish = "none"
)

// NackRepublishLimit bounds the publish attempts of an id that was
// basic.nack'd under republish: nacked-and-in-doubt: a nacked id is
// published again only while it has had fewer attempts, so a queue that
// refuses every publish (full, with x-overflow reject-publish) cannot
// keep the burst going forever. An id nacked on its last attempt stays
// nacked.
const NackRepublishLimit = 10

// RepublishesInDoubt reports whether the policy publishes in-doubt
// messages again.
func (r Republish) RepublishesInDoubt() bool {
	return r == RepublishInDoubt || r == RepublishNackedAndInDoubt
}

// RepublishesNacked reports whether a message basic.nack'd on its
// attempt-th publish attempt (1-based) is published again.
func (r Republish) RepublishesNacked(attempt int) bool {
	return r == RepublishNackedAndInDoubt && attempt < NackRepublishLimit
}

// Duration is a time.Duration written in YAML as a Go duration string ("5s",
// "250ms").
type Duration time.Duration

// UnmarshalYAML parses a Go duration string.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	var s string
	if err := n.Decode(&s); err != nil {
		return err
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		// A TypeError lets yaml.v3 go on decoding the rest of the file.
		return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: %q is not a duration (use e.g. 5s, 250ms)", n.Line, s)}}
	}
	*d = Duration(v)
	return nil
}

// MarshalYAML writes the duration string.
func (d Duration) MarshalYAML() (any, error) { return time.Duration(d).String(), nil }

// D returns the time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// File is the top level of scenarios.yaml.
type File struct {
	Version   int        `yaml:"version"`
	Scenarios []Scenario `yaml:"scenarios"`
}

// Scenario is one named experiment.
type Scenario struct {
	Name        string  `yaml:"name"`
	Description string  `yaml:"description"`
	Broker      Broker  `yaml:"broker"`
	Queue       Queue   `yaml:"queue"`
	Load        Load    `yaml:"load"`
	Faults      []Fault `yaml:"faults"`
	// Consumers, when count > 0, consume the queue during the burst; the
	// drain afterwards only collects what they left.
	Consumers Consumers `yaml:"consumers,omitempty"`
	Drain     Drain     `yaml:"drain"`
	Expect    Expect    `yaml:"expect"`
	Matrix    Matrix    `yaml:"matrix,omitempty"`
	// Seed drives every random choice of the run (fault jitter); --seed
	// overrides it. Unset: a seed is drawn and printed in the report, so any
	// run can be replayed.
	Seed *uint64 `yaml:"seed,omitempty"`
	// Space is the search space `rmqtorture explore` draws trials from
	// around this scenario (docs/explore.md); run ignores it.
	Space *SearchSpace `yaml:"space,omitempty"`
	// Runs makes this entry a group: it names other scenarios of the file,
	// run in order (with its broker.images, if set) and reported together,
	// e.g. upgrade-check. A group has no queue, load, faults or expect of
	// its own.
	Runs []string `yaml:"runs,omitempty"`
}

// Consumers are live consumers that consume the queue while the burst is
// published, one connection and channel each, with manual acknowledgements.
// They reconnect after a broker fault like the publisher does.
type Consumers struct {
	Count int `yaml:"count"` // live consumers (0: none; the queue is drained after the burst)
	// Prefetch is each consumer's basic.qos prefetch count (default 100):
	// how many unacknowledged deliveries the broker hands it at once.
	Prefetch int `yaml:"prefetch,omitempty"`
	// ProcessingDelay is spent on every delivery before it is settled: a
	// slow consumer (0: none).
	ProcessingDelay Duration `yaml:"processing_delay,omitempty"`
	// AckEvery settles processed deliveries with one basic.ack multiple=true
	// every N deliveries (default 1): a crash between two acks leaves up to
	// N-1 processed deliveries unacknowledged.
	AckEvery int `yaml:"ack_every,omitempty"`
	// OnDelivery is ack (default), nack-requeue, reject or retry.
	OnDelivery ConsumerAction `yaml:"on_delivery,omitempty"`
	// MaxRetries (retry) is how many retries a message gets before the
	// consumer parks it in the dead-letter queue (default 3).
	MaxRetries int `yaml:"max_retries,omitempty"`
	// RetryCountFrom (retry) is the count the consumer holds against
	// MaxRetries: RetryFromHeader (default), its own header; RetryFromXDeath,
	// the broker's x-death count, as many applications do. From RabbitMQ 4.0
	// the broker does not interpret an x-death header a client republishes
	// (rabbitmq-server#11331, PR #11339), so that count stays 1 and the loop
	// never reaches its limit: rmqtorture cuts it at RetryLoopBound retries
	// by its own header and counts it (ConsumerStats.RetryLoopsCut).
	RetryCountFrom string `yaml:"retry_count_from,omitempty"`
	// RetryDelay (retry) is the retry queue's x-message-ttl (default 200ms).
	RetryDelay Duration `yaml:"retry_delay,omitempty"`
	// Hold is how long each live consumer keeps its first delivery before
	// settling it (0: not at all). Past the broker's consumer_timeout the
	// broker closes the consumer's channel with 406 PRECONDITION_FAILED
	// and hands the delivery out again: a redelivery, never a loss
	// (rabbitmq-server#9046).
	Hold Duration `yaml:"hold,omitempty"`
	// MaxDeliveries (nack-requeue) is the application's own bound: a
	// message delivered this many times to live consumers is rejected
	// (basic.nack requeue=false) instead of requeued, so a queue without a
	// delivery limit (x-delivery-limit: -1) stops cycling (0: no bound).
	MaxDeliveries int `yaml:"max_deliveries,omitempty"`
}

// Enabled reports whether live consumers run during the burst.
func (c Consumers) Enabled() bool { return c.Count > 0 }

// Matrix runs the scenario's modes once per cell of queue types ×
// persistence, Repeat times each, on one broker, and summarises each cell
// with min/median/max across repeats. Empty lists keep the scenario's own
// setting.
type Matrix struct {
	QueueTypes []QueueType `yaml:"queue_types,omitempty"`
	Persistent []bool      `yaml:"persistent,omitempty"`
	Repeat     int         `yaml:"repeat,omitempty"` // default 1
}

// Cell is one point of a matrix run.
type Cell struct {
	QueueType  QueueType `json:"queue_type"`
	Persistent bool      `json:"persistent"`
	Repeat     int       `json:"repeat"` // 1-based
}

// Cells expands the matrix over the scenario's own settings, in a stable
// order: queue type, then persistence, then repeat.
func (s *Scenario) Cells() []Cell {
	types := s.Matrix.QueueTypes
	if len(types) == 0 {
		types = []QueueType{s.Queue.Type}
	}
	pers := s.Matrix.Persistent
	if len(pers) == 0 {
		pers = []bool{s.Load.IsPersistent()}
	}
	var out []Cell
	for _, t := range types {
		for _, p := range pers {
			for r := 1; r <= max(1, s.Matrix.Repeat); r++ {
				out = append(out, Cell{QueueType: t, Persistent: p, Repeat: r})
			}
		}
	}
	return out
}

// Topology describes the queue and message settings (or the matrix) in words.
func (s *Scenario) Topology() string {
	if s.IsMatrix() {
		var types, pers []string
		for _, c := range s.Cells() {
			if !slices.Contains(types, string(c.QueueType)) {
				types = append(types, string(c.QueueType))
			}
			if p := Persistence(c.Persistent); !slices.Contains(pers, p) {
				pers = append(pers, p)
			}
		}
		repeats := "1 run each"
		if n := max(1, s.Matrix.Repeat); n > 1 {
			repeats = fmt.Sprintf("%d runs each", n)
		}
		return fmt.Sprintf("matrix: %s queues × %s messages, %s, durable, mandatory",
			strings.Join(types, " and "), strings.Join(pers, " and "), repeats) + s.traffic()
	}
	if s.Queue.Type == Stream {
		return s.streamTopology() + s.traffic()
	}
	d := "durable"
	if !s.Queue.IsDurable() {
		d = "non-durable"
	}
	out := fmt.Sprintf("%s, %s; %s messages, mandatory", s.Queue.Type, d, Persistence(s.Load.IsPersistent()))
	if s.Queue.DeadLetterQueue {
		out += "; dead-letter queue"
	}
	return out + s.traffic()
}

// traffic describes publishers and live consumers beyond the default one
// publisher and a drain afterwards.
func (s *Scenario) traffic() string {
	out := ""
	if s.Load.Publishers > 1 {
		out += fmt.Sprintf("; %d publishers", s.Load.Publishers)
		if n := s.Load.ChannelsPerConnection; n > 1 {
			conns := "connections"
			if s.Load.Connections() == 1 {
				conns = "connection"
			}
			out += fmt.Sprintf(" on %d %s (up to %d channels each)", s.Load.Connections(), conns, n)
		}
	}
	if c := s.Consumers; c.Enabled() {
		out += fmt.Sprintf("; %d live consumers (prefetch %d, ack every %d, %s", c.Count, c.Prefetch, c.AckEvery, c.OnDelivery)
		if c.OnDelivery == ConsumerRetry {
			out += fmt.Sprintf(" up to %d times after %s", c.MaxRetries, c.RetryDelay.D())
			if c.RetryCountFrom == RetryFromXDeath {
				out += " counted by x-death"
			}
		}
		if c.ProcessingDelay > 0 {
			out += fmt.Sprintf(", %s per message", c.ProcessingDelay.D())
		}
		if c.MaxDeliveries > 0 {
			out += fmt.Sprintf(", giving up after %d deliveries", c.MaxDeliveries)
		}
		if c.Hold > 0 {
			out += fmt.Sprintf(", first delivery held %s", c.Hold.D())
		}
		out += ")"
	}
	return out
}

// IsMatrix reports whether the scenario runs more than one cell.
func (s *Scenario) IsMatrix() bool { return len(s.Cells()) > 1 }

// ForCell returns a copy of the scenario set up for cell c.
func (s *Scenario) ForCell(c Cell) *Scenario {
	cp := *s
	cp.Queue.Type = c.QueueType
	p := c.Persistent
	cp.Load.Persistent = &p
	return &cp
}

// Broker says which broker image to run and how long it may take to accept
// AMQP connections.
type Broker struct {
	Image        string   `yaml:"image"`         // default DefaultImage
	ReadyTimeout Duration `yaml:"ready_timeout"` // first boot and every restart; default DefaultReadyTimeout(Nodes)
	// readyTimeoutDefault is set when the file left ready_timeout out, so
	// that SetNodes (--nodes, --containers) rescales it with the node count.
	readyTimeoutDefault bool `yaml:"-"`
	// Config holds rabbitmq.conf keys and values (consumer_timeout,
	// disk_free_limit.absolute, vm_memory_high_watermark.relative…) written
	// into the container rmqtorture creates, before its first start, as
	// /etc/rabbitmq/conf.d/90-rmqtorture.conf: read after the image's own
	// rabbitmq.conf. Keys rmqtorture's own setup needs (listeners,
	// loopback_users, default_user…) are refused; a container named with
	// --container keeps its own configuration.
	Config map[string]string `yaml:"config,omitempty"`
	// AdvancedConfig holds keys of the rabbit application's environment
	// that rabbitmq.conf cannot set, whole numbers only, written as
	// /etc/rabbitmq/advanced.config: e.g. channel_tick_interval (ms,
	// default 60000), how often a channel checks its consumers against
	// consumer_timeout, so a timeout of seconds fires within seconds.
	AdvancedConfig map[string]int `yaml:"advanced_config,omitempty"`
	// Nodes is how many RabbitMQ nodes the run forms into one cluster
	// (1, the default: a single broker; 3 or 5).
	Nodes int `yaml:"nodes,omitempty"`
	// Images, when set, runs the scenario once on each image, in order,
	// and reports the versions side by side (--images overrides it).
	Images []string `yaml:"images,omitempty"`
	// Filesystem is what holds each node's data directory
	// (/var/lib/rabbitmq): "" for the container's own, LazyFilesystem for
	// a filesystem that forgets what was not fsynced when the power-loss
	// fault cuts it (docs/power-loss.md). Only on containers rmqtorture
	// creates, on an engine on this host.
	Filesystem string `yaml:"filesystem,omitempty"`
}

// LazyFilesystem is broker.filesystem's value for a data directory that a
// power-loss fault can make forget its unsynced writes.
const LazyFilesystem = "lazy"

// HasConfig reports whether the scenario writes configuration into the
// broker container.
func (b Broker) HasConfig() bool { return len(b.Config) > 0 || len(b.AdvancedConfig) > 0 }

// Queue is the durable queue under test. Each mode runs on a fresh queue.
type Queue struct {
	Type QueueType `yaml:"type"` // quorum (default) or classic
	// Arguments are optional x-arguments of the queue, typed and checked:
	// x-max-length, x-max-length-bytes, x-overflow, x-message-ttl,
	// x-dead-letter-exchange, x-dead-letter-routing-key, x-delivery-limit,
	// x-dead-letter-strategy. What some of them do depends on the queue type
	// and broker version: see the settings table in discards.go.
	Arguments map[string]any `yaml:"arguments,omitempty"`
	// AlsoBindType, when set, binds a second durable queue of this type with
	// the same routing key: a message is confirmed only once both queues have
	// it, so basic.acks arrive out of publish order (streadway/amqp#396).
	// Only the main queue is drained.
	AlsoBindType QueueType `yaml:"also_bind_type,omitempty"`
	// Node (a cluster only; 1-based, 0: unset) is the node the queue
	// under test is declared through. A classic queue lives on the node
	// it was declared through: queue_leader_locator defaults to
	// client-local, "the node the client is connected to"
	// (https://www.rabbitmq.com/docs/4.0/clustering#replica-placement). For
	// a quorum queue that node is only the suggested leader: Raft may
	// elect another member. Unset, the queue is declared through node 1.
	Node int `yaml:"node,omitempty"`
	// AlsoBindNode (a cluster only; 1-based, with AlsoBindType) is the node
	// the second queue is declared through, hence lives on when classic:
	// with Node, a fanout to two classic queues on different nodes
	// (rabbitmq-server PR #4888). Unset: node 1.
	AlsoBindNode int `yaml:"also_bind_node,omitempty"`
	// Durable (default true) declares the queue durable. A non-durable
	// classic queue is gone after a broker restart, with everything in it.
	Durable *bool `yaml:"durable,omitempty"`
	// DeadLetterQueue declares a dead-letter exchange (rmqtorture.dlx) and a
	// durable queue "<queue>.dlq" bound to it, and points the queue's
	// x-dead-letter-exchange and x-dead-letter-routing-key at it. After the
	// burst the dead-letter queue is drained too; what it holds counts as
	// dead-lettered, not lost.
	DeadLetterQueue bool `yaml:"dead_letter_queue,omitempty"`
	// DeadLetterType (with DeadLetterQueue) is the dead-letter queue's own
	// type, quorum or classic; unset, the type of the queue under test. A
	// classic dead-letter queue behind a quorum queue is a common shape,
	// and where a quorum one lives matters when its node goes down
	// (rabbitmq-server#12625).
	DeadLetterType QueueType `yaml:"dead_letter_type,omitempty"`
	// DeadLetterNode (a cluster only; 1-based, with DeadLetterQueue) is the
	// node the dead-letter queue is declared through: a classic one lives
	// there, a quorum one gets it as its suggested leader. Unset: the node
	// the queue under test is declared through.
	DeadLetterNode int `yaml:"dead_letter_node,omitempty"`
	// SettleBeforeBurst is the pause between declaring the queue and the first
	// publish (default 2s). On RabbitMQ 4.0.5 a kill within ~0.5 s of declaring a
	// quorum queue loses its confirmed messages (rabbitmq-server#15725).
	SettleBeforeBurst Duration `yaml:"settle_before_burst"`
	// Deduplication (stream only) names the stream producer, so the broker
	// drops a message whose publishing id it already stored from that
	// producer: a republished in-doubt message then lands once
	// (https://www.rabbitmq.com/blog/2021/07/28/rabbitmq-streams-message-deduplication).
	// Each id's publishing id is its sequence number + 1, so a republish
	// carries the same publishing id.
	Deduplication bool `yaml:"deduplication,omitempty"`
	// DeadLetterArguments are x-arguments of the dead-letter queue
	// (dead_letter_queue: true), typed and checked like arguments: e.g.
	// x-max-length with x-overflow reject-publish, which a quorum
	// dead-letter queue does not apply to dead-lettered messages
	// (rabbitmq-server#8495).
	DeadLetterArguments map[string]any `yaml:"dead_letter_arguments,omitempty"`
}

// SingleActiveConsumer reports whether the queue is declared with
// x-single-active-consumer: only one consumer receives at a time, the next
// takes over when it goes away.
func (q Queue) SingleActiveConsumer() bool {
	on, _ := q.Arguments["x-single-active-consumer"].(bool)
	return on
}

// Load is the burst of persistent JSON orders.
type Load struct {
	Messages         int       `yaml:"messages"`          // orders in the burst (> 0)
	Modes            []Mode    `yaml:"modes"`             // run in this order; default all three
	Window           int       `yaml:"window"`            // confirm-window: unconfirmed in flight (> 0, default 1000)
	ConfirmTimeout   Duration  `yaml:"confirm_timeout"`   // a confirm not received in this time makes the channel's pending messages in doubt (default 30s)
	Republish        Republish `yaml:"republish"`         // in-doubt (default), nacked-and-in-doubt or none
	ReconnectTimeout Duration  `yaml:"reconnect_timeout"` // give up reconnecting after this (default 90s)
	// UnroutableEvery, when N > 0, publishes every Nth order (seq N-1, 2N-1,
	// …) with a routing key nothing is bound to: with mandatory set it comes
	// back as basic.return.
	UnroutableEvery int `yaml:"unroutable_every,omitempty"`
	// StallTimeout reports a client stall when a connected publisher neither
	// publishes nor receives a confirm for this long (default 10s). A stall
	// is reported as a stall, never as loss.
	StallTimeout Duration `yaml:"stall_timeout"`
	// Heartbeat is the AMQP heartbeat timeout the publisher's connections
	// ask for (default 10s, amqp091-go's default). amqp091-go drops a
	// connection it heard nothing on for 1.5 heartbeats (three intervals of
	// half the heartbeat, its connection.go), and a connection the broker
	// holds blocked (memory or disk alarm) counts: its heartbeat goroutine
	// waits behind the blocked publish write, so the read deadline is not
	// renewed. Measured with RabbitMQ 4.0.5 and amqp091-go 1.16.0: a 40 s
	// memory alarm at the default 10s dropped the connection and lost 509
	// of 100,000 fire-and-forget orders from its socket buffers; at 3s the
	// drop came 4.5 s into the block.
	Heartbeat Duration `yaml:"heartbeat"`
	// BurstTimeout bounds the whole burst, reconnects and republishes
	// included (default 15m); reaching it makes the run inconclusive.
	BurstTimeout Duration `yaml:"burst_timeout"`
	// MessageDeadline, when set, gives each order this long from the moment
	// the publisher first tries to send it: one that never left the process
	// by then is not published (safe to report as failed); one written but
	// unconfirmed by then is pending (it may exist; it keeps being
	// republished until confirmed or the run ends). Both are counted.
	MessageDeadline Duration `yaml:"message_deadline,omitempty"`
	// Persistent (default true) publishes with delivery mode 2. A basic.ack
	// for a transient message promises nothing about disk: its loss in a
	// crash is counted but fails nothing.
	Persistent *bool `yaml:"persistent,omitempty"`
	// Rate limits publishing to this many msg/s (0: as fast as possible).
	Rate float64 `yaml:"rate,omitempty"`
	// ConnectTo is the node each client connects to first on a cluster
	// (default leader); ConnectNode is the node (1-based) for connect_to
	// node. Clients fail over to the other nodes when theirs is down.
	ConnectTo   ConnectTo `yaml:"connect_to,omitempty"`
	ConnectNode int       `yaml:"connect_node,omitempty"`
	// MessageSizeBytes, when set, makes every body exactly this many bytes
	// (0 to 1 MiB): the JSON order padded, or cut below its own size (the
	// id travels in message_id and headers, never read from the body;
	// ruby-amqp/bunny#615). Unset: the bare order, ~90 bytes.
	MessageSizeBytes *int `yaml:"message_size_bytes,omitempty"`
	// ConfirmListenerBuffer is the capacity of the publisher-confirm listener
	// (default: the window). Below the window it is refused: a full listener
	// stalls amqp091-go's reader (streadway/amqp#254) and, since v1.13, makes
	// it drop confirms after ~5 s.
	ConfirmListenerBuffer int `yaml:"confirm_listener_buffer,omitempty"`
	// Publishers is how many publishers share the burst, one connection and
	// channel each (default 1). Confirm-window applies per publisher.
	Publishers int `yaml:"publishers,omitempty"`
	// ChannelsPerConnection puts this many publishers on each connection,
	// each on its own channel with its own epoch and window (default 1: one
	// connection per publisher): ceil(publishers / channels_per_connection)
	// connections. A connection that dies takes every channel's pending
	// confirms into doubt at once (rabbitmq/amqp091-go#182).
	ChannelsPerConnection int `yaml:"channels_per_connection,omitempty"`
	// TxSize (transactional) is how many messages each tx.commit commits
	// (default 1).
	TxSize int `yaml:"tx_size,omitempty"`
	// OnConfirmTimeout is what a confirm older than confirm_timeout does:
	// close (default) or republish on the same channel (see
	// ConfirmTimeoutAction).
	OnConfirmTimeout ConfirmTimeoutAction `yaml:"on_confirm_timeout,omitempty"`
	// Burst, when set, publishes load.messages in bursts: Burst.Messages
	// orders as fast as possible every Burst.Every (rabbitmq-dotnet-client#1928),
	// instead of one steady stream. Exclusive with Rate.
	Burst *Burst `yaml:"burst,omitempty"`
}

// Burst is a burst shape: Messages publish calls due at once every Every,
// from the first publish; load.messages in all, so the last burst holds
// what is left. A publisher held up (outage, full window) catches up as
// fast as it can, as with load.rate.
type Burst struct {
	Messages int      `yaml:"messages"` // publish calls per burst (≥ 1)
	Every    Duration `yaml:"every"`    // from one burst's start to the next's (≥ 1ms)
}

// Bursts is how many bursts the load is published in (0 without a burst
// shape).
func (l Load) Bursts() int {
	if l.Burst == nil || l.Burst.Messages <= 0 {
		return 0
	}
	return (l.Messages + l.Burst.Messages - 1) / l.Burst.Messages
}

// BurstSpan is the time from the first burst's start to the last one's
// (0 without a burst shape).
func (l Load) BurstSpan() time.Duration {
	if n := l.Bursts(); n > 1 {
		return time.Duration(n-1) * l.Burst.Every.D()
	}
	return 0
}

// Fault is one planned fault. Exactly one trigger is set.
type Fault struct {
	Action Action `yaml:"action"`
	Signal string `yaml:"signal,omitempty"` // kill: default SIGKILL
	// PublishedPercent fires once this share of the burst (0–100) has been
	// published (publish calls made).
	PublishedPercent *float64 `yaml:"published_percent,omitempty"`
	// Published fires once this many messages have been published.
	Published *int `yaml:"published,omitempty"`
	// After fires this long after the burst starts.
	After *Duration `yaml:"after,omitempty"`
	// InFlight fires once at least this many published messages are
	// unconfirmed (confirm modes).
	InFlight *int `yaml:"in_flight,omitempty"`
	// Down is how long the fault lasts before its recovery runs (default 5s;
	// kill, stop, pause, disconnect and memory-alarm only).
	Down Duration `yaml:"down,omitempty"`
	// ManualRecovery leaves the broker down after the fault: a later step
	// (start, unpause, reconnect) brings it back.
	ManualRecovery bool `yaml:"manual_recovery,omitempty"`
	// Grace is how long stop and restart wait for a graceful shutdown
	// before SIGKILL (default 10s).
	Grace Duration `yaml:"grace,omitempty"`
	// Every repeats the step: after it first fires, it fires again this long
	// after the previous firing has recovered (its down time over and the
	// broker accepting AMQP again), Count times in all.
	Every *Duration `yaml:"every,omitempty"`
	// Count is how many times a repeating step fires (with every; >= 2).
	Count int `yaml:"count,omitempty"`
	// Jitter delays each firing by a random time in [0, jitter), drawn from
	// the run's seed: the same seed replays the same delays.
	Jitter Duration `yaml:"jitter,omitempty"`
	// AfterBurst fires this long after the burst's last publish (the
	// publisher done: every order published and settled), for a fault on
	// the backlog a fast burst leaves, which a ~2 s rabbitmqctl call would
	// otherwise miss. The drain waits for the step.
	AfterBurst *Duration `yaml:"after_burst,omitempty"`
	// AfterStart fires this long after the previous step started the
	// broker's container (its start call returned), without waiting for
	// AMQP logins: a fault on a node still booting, e.g. SIGTERM during
	// recovery (rabbitmq-server PR #3099).
	AfterStart *Duration `yaml:"after_start,omitempty"`
	// Target is what the step acts on in a cluster (broker.nodes > 1):
	// node (with Node), leader, follower, random, minority, majority or
	// all. Unset: the action's default (TargetOf). A single broker accepts
	// only all.
	Target TargetKind `yaml:"target,omitempty"`
	// Node is the node (1-based) a step with target node acts on; setting
	// it alone means target node.
	Node int `yaml:"node,omitempty"`
	// Shape is how a partition step splits the nodes (default isolate).
	Shape PartitionShape `yaml:"shape,omitempty"`
	// Inject (command) is the command that injects the fault: a program
	// (looked up in PATH) and its arguments, run without a shell (write
	// ["sh", "-c", "…"] for one).
	Inject []string `yaml:"inject,omitempty"`
	// Recover (command) is the command run after Down to undo the fault;
	// none: the broker is only awaited (Ready).
	Recover []string `yaml:"recover,omitempty"`
	// Timeout (command) bounds each of the step's commands (default 60s):
	// at the timeout its process group is killed and the step fails.
	Timeout Duration `yaml:"timeout,omitempty"`
	// Ready (command) are AMQP URIs (amqp://user:password@host:port/vhost)
	// that must each accept a login after the recovery; none: the run's
	// own broker. They carry passwords: never printed.
	Ready []string `yaml:"ready,omitempty"`
	// State (command) is the broker state the series marks from the step
	// until AMQP logins succeed again: down, paused or disconnected, as
	// the command leaves the broker; "" (default): none.
	State metrics.BrokerState `yaml:"state,omitempty"`
	// Line is the line of the step's action in its scenario file (0: not
	// read from a file), for messages about the step before a run.
	Line int `yaml:"-" json:"-"`
}

// RunsCommands reports whether the scenario has a command step: one that
// runs programs of the scenario's choosing (--allow-commands).
func (s *Scenario) RunsCommands() bool {
	for _, f := range s.Faults {
		if actionTable[f.Action].UserCommand {
			return true
		}
	}
	return false
}

// Firings is how many times the step fires (1 unless it repeats).
func (f Fault) Firings() int { return max(1, f.Count) }

// Drain is how the queue is consumed after the burst.
type Drain struct {
	Idle     Duration `yaml:"idle"`      // stop once nothing arrived for this long and nothing confirmed is missing (default 2s)
	LostWait Duration `yaml:"lost_wait"` // stop after this long idle even if confirmed ids are missing: they are lost (default 15s)
	Timeout  Duration `yaml:"timeout"`   // hard deadline; reaching it makes the verdict inconclusive (default 120s)
}

// Expect holds the scenario's expectations; unset fields expect nothing. A
// lost confirmed message and an unexpected delivery always fail a run.
type Expect struct {
	// Modes holds exact expectations per publishing mode.
	Modes                 map[Mode]ModeExpectations `yaml:"modes,omitempty"`
	MaxUnconfirmedMissing *int                      `yaml:"max_unconfirmed_missing,omitempty"` // fire-and-forget silent loss allowed
	MaxInDoubt            *int                      `yaml:"max_in_doubt,omitempty"`            // in doubt at the end of the run
	MaxDuplicates         *int                      `yaml:"max_duplicates,omitempty"`
	MaxNacked             *int                      `yaml:"max_nacked,omitempty"`
	MaxReturned           *int                      `yaml:"max_returned,omitempty"`
	// AllowDeadLetterPathLoss says whether confirmed messages lost on the
	// dead-letter path (see metrics.DeadLetterRule) fail the run. Unset:
	// allowed where the queue dead-letters at most once (classic queues,
	// https://www.rabbitmq.com/docs/dlx; quorum queues without
	// x-dead-letter-strategy at-least-once,
	// https://www.rabbitmq.com/docs/quorum-queues#dead-lettering).
	AllowDeadLetterPathLoss *bool `yaml:"allow_dead_letter_path_loss,omitempty"`
	// Versions are expectations scoped to broker version ranges (see
	// VersionScope): the first whose range holds the running broker's
	// version is laid over Modes.
	Versions []VersionScope `yaml:"versions,omitempty"`
	// Scope is set by ForBrokerVersion on the scenario it returns: the
	// version scope laid over Modes, so the judge names the broker
	// version, range and source of each scoped expectation it finds
	// broken (never in a scenario file).
	Scope *AppliedVersionScope `yaml:"-"`
}

// ModeExpectations holds exact expected counts of one mode's ledger; unset fields are
// not checked.
type ModeExpectations struct {
	Sent                 *int `yaml:"sent,omitempty"`
	Confirmed            *int `yaml:"confirmed,omitempty"`
	Lost                 *int `yaml:"lost,omitempty"`
	Nacked               *int `yaml:"nacked,omitempty"`
	Returned             *int `yaml:"returned,omitempty"`
	InDoubt              *int `yaml:"in_doubt,omitempty"`
	Delivered            *int `yaml:"delivered,omitempty"`
	UnconfirmedDelivered *int `yaml:"unconfirmed_delivered,omitempty"`
	UnconfirmedMissing   *int `yaml:"unconfirmed_missing,omitempty"`
	Duplicates           *int `yaml:"duplicates,omitempty"`
	// MinWentInDoubt checks that the fault really left messages in doubt.
	MinWentInDoubt *int `yaml:"min_went_in_doubt,omitempty"`
	// MinBlockedMS checks that connection.blocked was observed for this long.
	MinBlockedMS      *int `yaml:"min_blocked_ms,omitempty"`
	NotPublished      *int `yaml:"not_published,omitempty"`
	PendingAtDeadline *int `yaml:"pending_at_deadline,omitempty"`
	// MinUnconfirmedMissing checks that fire-and-forget lost at least this
	// many silently (a fault that must cost it something).
	MinUnconfirmedMissing *int `yaml:"min_unconfirmed_missing,omitempty"`
	// ChannelClosedWith checks that the broker closed a channel or
	// connection with a reason containing this text (e.g. "404 NOT_FOUND").
	ChannelClosedWith string `yaml:"channel_closed_with,omitempty"`
	// DeadLettered is the exact number of ids found in the dead-letter queue.
	DeadLettered *int `yaml:"dead_lettered,omitempty"`
	// MinRedeliveries checks that consumers saw at least this many
	// redeliveries of ids they had processed (e.g. after a consumer crash).
	MinRedeliveries *int `yaml:"min_redeliveries,omitempty"`
	// DeliveriesPerMessage checks that every dead-lettered message was
	// delivered to live consumers exactly this many times.
	DeliveriesPerMessage *int `yaml:"deliveries_per_message,omitempty"`
	// Retries checks that every parked message carried exactly this many
	// retries in the application's own retry header.
	Retries *int `yaml:"retries,omitempty"`
	// XDeathCountAtPark checks that every parked message's x-death count
	// (for its own queue, reason rejected) was exactly this many: RabbitMQ
	// before 3.13 and from 3.13.3 counts the deaths of a copy the client
	// republished with its headers, 3.13.0–3.13.2 and 4.x do not
	// (rabbitmq-server#11331, PR #11339), so a retry loop that trusts
	// x-death never reaches its limit there.
	XDeathCountAtPark *int `yaml:"x_death_count_at_park,omitempty"`
	// MaxWentInDoubt bounds the ids the faults left in doubt (e.g. a
	// window's worth per connection killed, or one transaction).
	MaxWentInDoubt *int `yaml:"max_went_in_doubt,omitempty"`
	// Redeliveries is the exact number of redeliveries of copies already
	// delivered (a consumer timeout, a crashed consumer): never loss, never
	// duplicates.
	Redeliveries *int `yaml:"redeliveries,omitempty"`
	// Republished is the exact number of publish attempts beyond each id's
	// first (after in doubt, or after a confirm timeout).
	Republished *int `yaml:"republished,omitempty"`
	// LateConfirms is the exact number of confirms of an attempt older than
	// its id's latest (load.on_confirm_timeout: republish).
	LateConfirms *int `yaml:"late_confirms,omitempty"`
	// ConsumerChanges is the exact number of deliveries that went to a
	// different live consumer than the delivery before: 1 per failover of a
	// single active consumer.
	ConsumerChanges *int `yaml:"consumer_changes,omitempty"`
	// LostDeadLetterPath is the exact number of confirmed ids lost on the
	// dead-letter path (see metrics.DeadLetterRule).
	LostDeadLetterPath *int `yaml:"lost_dead_letter_path,omitempty"`
	// DeadLetterReason checks that every message taken from the
	// dead-letter queue carried this reason in its latest x-death entry
	// (delivery_limit: the broker's delivery limit; rejected: a consumer
	// rejected it; https://www.rabbitmq.com/docs/dlx), which tells who
	// dead-lettered it.
	DeadLetterReason string `yaml:"dead_letter_reason,omitempty"`
}

type namedInt struct {
	name string
	v    *int
}

func (e ModeExpectations) fields() []namedInt {
	return []namedInt{
		{"sent", e.Sent}, {"confirmed", e.Confirmed}, {"lost", e.Lost}, {"nacked", e.Nacked},
		{"returned", e.Returned}, {"in_doubt", e.InDoubt}, {"delivered", e.Delivered},
		{"unconfirmed_delivered", e.UnconfirmedDelivered}, {"unconfirmed_missing", e.UnconfirmedMissing},
		{"duplicates", e.Duplicates}, {"min_went_in_doubt", e.MinWentInDoubt}, {"min_blocked_ms", e.MinBlockedMS},
		{"min_unconfirmed_missing", e.MinUnconfirmedMissing}, {"not_published", e.NotPublished},
		{"pending_at_deadline", e.PendingAtDeadline}, {"dead_lettered", e.DeadLettered},
		{"min_redeliveries", e.MinRedeliveries}, {"deliveries_per_message", e.DeliveriesPerMessage},
		{"retries", e.Retries}, {"x_death_count_at_park", e.XDeathCountAtPark}, {"max_went_in_doubt", e.MaxWentInDoubt},
		{"redeliveries", e.Redeliveries}, {"republished", e.Republished}, {"late_confirms", e.LateConfirms},
		{"consumer_changes", e.ConsumerChanges}, {"lost_dead_letter_path", e.LostDeadLetterPath},
	}
}

// Durability reports whether a basic.ack promises the message is on disk:
// persistent messages in a durable queue, or any message in a quorum queue,
// which writes every message to its Raft log whatever its delivery mode
// (measured here: classic-vs-quorum loses no transient confirmed message in
// a quorum queue). Only then is a confirmed message that was never delivered
// a durability failure.
func (s *Scenario) Durability() bool {
	if s.Queue.Type == Quorum {
		return true
	}
	return s.Queue.IsDurable() && s.Load.IsPersistent()
}

// Discards names the queue arguments that make the broker drop confirmed
// messages by design ("" when none), on any broker version the settings
// table covers (see DiscardsOn and settingRules in discards.go):
// x-message-ttl, or x-max-length / x-max-length-bytes whose effective
// overflow is drop-head, without a dead-letter queue to catch them. A
// confirmed message gone from such a queue is counted as lost but fails
// nothing. See https://www.rabbitmq.com/docs/maxlength and
// https://www.rabbitmq.com/docs/ttl.
func (q Queue) Discards() string { return q.DiscardsOn("") }

// IsDurable reports whether the queue is declared durable (the default).
func (q Queue) IsDurable() bool { return q.Durable == nil || *q.Durable }

// Connections is how many connections the publishers use:
// ceil(publishers / channels_per_connection), at least 1.
func (l Load) Connections() int {
	per := max(1, l.ChannelsPerConnection)
	return max(1, (max(1, l.Publishers)+per-1)/per)
}

// IsPersistent reports whether orders are published persistent (the default).
func (l Load) IsPersistent() bool { return l.Persistent == nil || *l.Persistent }

// Persistence names a persistence setting as reports spell it.
func Persistence(persistent bool) string {
	if persistent {
		return "persistent"
	}
	return "transient"
}

// DefaultImage is the image scripts/build-broker-image.sh builds.
const DefaultImage = "rmqtorture/rabbitmq:4.0-trixie"

// CountTrigger returns the publish count a step fires at, for count and
// percent triggers.
func (f Fault) CountTrigger(messages int) (int, bool) {
	switch {
	case f.PublishedPercent != nil:
		return int(math.Ceil(*f.PublishedPercent / 100 * float64(messages))), true
	case f.Published != nil:
		return *f.Published, true
	}
	return 0, false
}

// Trigger describes when the fault fires, for reports.
func (f Fault) Trigger() string {
	switch {
	case f.PublishedPercent != nil:
		return fmt.Sprintf("%g%% published", *f.PublishedPercent)
	case f.Published != nil:
		return fmt.Sprintf("%d published", *f.Published)
	case f.After != nil:
		return fmt.Sprintf("%s after burst start", f.After.D())
	case f.InFlight != nil:
		return fmt.Sprintf("%d in flight", *f.InFlight)
	case f.AfterBurst != nil:
		return fmt.Sprintf("%s after the last publish", f.AfterBurst.D())
	case f.AfterStart != nil:
		return fmt.Sprintf("%s after the container started", f.AfterStart.D())
	}
	return "never"
}

// Repeats describes a repeating step's schedule and jitter, for reports
// ("" when it fires once without jitter).
func (f Fault) Repeats() string {
	var parts []string
	if f.Every != nil {
		parts = append(parts, fmt.Sprintf("every %s, %d times", f.Every.D(), f.Firings()))
	}
	if f.Jitter > 0 {
		parts = append(parts, fmt.Sprintf("jitter < %s", f.Jitter.D()))
	}
	return strings.Join(parts, ", ")
}

// streamTopology describes a stream under test in words.
func (s *Scenario) streamTopology() string {
	if s.Queue.Deduplication {
		return "stream over the stream protocol; named producer (deduplication by publishing id)"
	}
	return "stream over the stream protocol; unnamed producer (no deduplication)"
}

// SearchSpace is a scenario's `space:` section: what `rmqtorture explore`
// draws each trial's fault steps and load from (docs/explore.md). Ranges
// are [min, max], inclusive; a key left out is drawn as explore's
// defaults say (from the scenario itself).
type SearchSpace struct {
	// Actions are the fault actions a step is drawn from.
	Actions []Action `yaml:"actions,omitempty"`
	// Targets are the targets a step on a cluster is drawn from.
	Targets []TargetKind `yaml:"targets,omitempty"`
	// Steps is the number of fault steps a trial has, [min, max] (1–5).
	Steps []int `yaml:"steps,omitempty"`
	// PublishedPercent is the range of each step's trigger (1–99).
	PublishedPercent []int `yaml:"published_percent,omitempty"`
	// Down is the range of each step's down time (100ms or more).
	Down []Duration `yaml:"down,omitempty"`
	// Messages is the range of a trial's burst size (100 or more).
	Messages []int `yaml:"messages,omitempty"`
	// Modes, Windows, Rates (msg/s; 0: as fast as it can) and Publishers
	// are drawn from.
	Modes      []Mode `yaml:"modes,omitempty"`
	Windows    []int  `yaml:"windows,omitempty"`
	Rates      []int  `yaml:"rates,omitempty"`
	Publishers []int  `yaml:"publishers,omitempty"`
}
