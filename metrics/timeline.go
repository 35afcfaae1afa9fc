package metrics

import (
	"slices"
	"sync"
	"time"
)

// EventKind names a point on a run's timeline.
type EventKind string

const (
	EvBurstStart     EventKind = "burst-start"      // first publish of the burst
	EvBurstEnd       EventKind = "burst-end"        // every order published and settled (or given up)
	EvConnected      EventKind = "connected"        // publisher connection (re)established
	EvConnectionLost EventKind = "connection-lost"  // publisher saw its connection or channel close
	EvFirstProgress  EventKind = "first-progress"   // first publish (fire-and-forget) or confirm after a (re)connect
	EvTrigger        EventKind = "trigger"          // a fault's trigger fired
	EvFault          EventKind = "fault"            // fault injected (the kill call returned)
	EvFaultCleared   EventKind = "fault-cleared"    // a fault's recovery step ran (e.g. memory alarm cleared)
	EvBlocked        EventKind = "blocked"          // connection.blocked from the broker
	EvUnblocked      EventKind = "unblocked"        // connection.unblocked
	EvStall          EventKind = "stall"            // connected, no publish and no confirm for the stall timeout
	EvNoProgress     EventKind = "no-progress"      // the same while a broker fault was in effect: the fault's effect, not a client stall
	EvMisrouted      EventKind = "misrouted"        // the order (detail: sequence number) sent to a missing exchange
	EvBrokerStarted  EventKind = "broker-started"   // container started again
	EvBrokerReady    EventKind = "broker-ready"     // AMQP login accepted again
	EvBrokerNotReady EventKind = "broker-not-ready" // deadline passed without AMQP login
	EvDrainStart     EventKind = "drain-start"
	EvDrainEnd       EventKind = "drain-end"
	// Live consumers (consumers.count > 0).
	EvConsumerConnected EventKind = "consumer-connected" // a live consumer (re)connected and consumes
	EvConsumerCrashed   EventKind = "consumer-crashed"   // fault crash-consumer: closed with processed deliveries unacknowledged
	EvConsumersStopped  EventKind = "consumers-stopped"  // live consumers stopped after the burst went quiet
	// EvConsumerClosed: the broker (or the link) closed a live consumer's
	// channel or connection; Detail gives the reply code and text (e.g. a
	// consumer timeout's 406 PRECONDITION_FAILED).
	EvConsumerClosed EventKind = "consumer-closed"
	// EvConfirmTimeout: messages unconfirmed for load.confirm_timeout were
	// published again on the same channel (load.on_confirm_timeout:
	// republish); Detail gives how many.
	EvConfirmTimeout EventKind = "confirm-timeout"
	// Clusters: EvLeader, a poll found a new leader of the quorum queue
	// under test (Node; 0: none, quorum lost); EvReplicated, every node
	// holds a member again, one leader and the rest followers.
	EvLeader     EventKind = "leader"
	EvReplicated EventKind = "replicated"
	// EvPartitioned: a node of the cluster reported a network partition
	// (rabbitmqctl cluster_status) while every node took logins: after a
	// step's readiness wait, or as the drain began. Detail names who sees
	// whom partitioned.
	EvPartitioned EventKind = "partitioned"
)

// Progress values of first-progress events (Event.Progress).
const (
	ProgressPublish = "publish" // fire-and-forget: the first publish call returned
	ProgressConfirm = "confirm" // confirm modes: the first basic.ack or basic.nack
)

// Event is one timeline entry. AtMS is milliseconds since the timeline's start.
// Detail is text for people only: code reads the typed fields, never Detail.
// A field that does not apply to the event's kind is left zero (and omitted
// from result.json).
type Event struct {
	At     time.Time `json:"-"`
	AtMS   float64   `json:"at_ms"`
	Kind   EventKind `json:"kind"`
	Detail string    `json:"detail,omitempty"`
	// Action is the fault action (kill, pause, start…) of trigger, fault,
	// fault-cleared, broker-started and no-progress events.
	Action string `json:"action,omitempty"`
	// Target is what a fault or recovery acted on, as the engine's target
	// spells it ("broker" for the single broker).
	Target string `json:"target,omitempty"`
	// Epoch numbers the publisher's channel in confirm mode, or its
	// connection in fire-and-forget (connected, connection-lost,
	// first-progress, stall, blocked events).
	Epoch Epoch `json:"epoch,omitempty"`
	// Publisher is the publisher's index plus one (0: not a publisher event).
	Publisher int `json:"publisher,omitempty"`
	// Connection counts the publisher's (or, on consumer events, the live
	// consumer's) connections, 1 for its first: above 1 the event is a
	// reconnect.
	Connection int `json:"connection,omitempty"`
	// Consumer is the live consumer's index plus one (0: not a consumer
	// event).
	Consumer int `json:"consumer,omitempty"`
	// Progress says what first-progress saw first: ProgressPublish or
	// ProgressConfirm.
	Progress string `json:"progress,omitempty"`
	// Node is the cluster node (1-based) a connected event's connection
	// went to, or the leader a leader event found (0: a single broker, or
	// no leader).
	Node int `json:"node,omitempty"`
}

// Timeline is a goroutine-safe, append-only list of events of one burst.
type Timeline struct {
	mu     sync.Mutex
	start  time.Time
	events []Event
	watch  func(Event) // called with each event recorded after Watch (nil: none)
}

// NewTimeline starts a timeline at start.
func NewTimeline(start time.Time) *Timeline { return &Timeline{start: start} }

// Add appends an event at now.
func (t *Timeline) Add(kind EventKind, detail string) { t.AddAt(time.Now(), kind, detail) }

// AddAt appends an event at a given time.
func (t *Timeline) AddAt(at time.Time, kind EventKind, detail string) {
	t.Record(Event{At: at, Kind: kind, Detail: detail})
}

// Record appends e; a zero e.At means now.
func (t *Timeline) Record(e Event) {
	if e.At.IsZero() {
		e.At = time.Now()
	}
	t.mu.Lock()
	e.AtMS = Millis(e.At.Sub(t.start))
	t.events = append(t.events, e)
	watch := t.watch
	t.mu.Unlock()
	if watch != nil {
		watch(e)
	}
}

// Watch makes the timeline call fn with every event recorded from now on
// (not those before), on the recording goroutine and outside the
// timeline's lock, for a live display; fn must return quickly and not
// block. A later Watch replaces fn; nil stops watching.
func (t *Timeline) Watch(fn func(Event)) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.watch = fn
}

// Events returns a copy of the events in time order (stable for equal times).
func (t *Timeline) Events() []Event {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := append([]Event(nil), t.events...)
	slices.SortStableFunc(out, func(a, b Event) int { return a.At.Compare(b.At) })
	return out
}

// First returns the time of the first event of kind at or after after.
func (t *Timeline) First(kind EventKind, after time.Time) (time.Time, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, e := range t.events {
		if e.Kind == kind && !e.At.Before(after) {
			return e.At, true
		}
	}
	return time.Time{}, false
}

// Millis converts a duration to milliseconds rounded to the microsecond.
func Millis(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// Start is the timeline's origin.
func (t *Timeline) Start() time.Time { return t.start }
