package stream

import (
	"context"
	"github.com/rmqtorture/rmqtorture/broker/amqp"
	"io"
	"log/slog"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	streamamqp "github.com/rabbitmq/rabbitmq-stream-go-client/pkg/amqp"
	"github.com/rabbitmq/rabbitmq-stream-go-client/pkg/stream"

	"github.com/rmqtorture/rmqtorture/broker/internal/traffic"
	"github.com/rmqtorture/rmqtorture/engine"
	"github.com/rmqtorture/rmqtorture/metrics"
	"github.com/rmqtorture/rmqtorture/scenario"
)

// With no stream port published (an empty StreamAddr) a stream traffic
// fails with a hint instead of dialling nothing.
func TestStreamWithoutAPort(t *testing.T) {
	s := &Traffic{Traffic: &amqp.Traffic{URL: func() string { return "amqp://guest:guest@127.0.0.1:5999/" }, Log: quiet}, Addr: func() string { return "" }}
	if _, err := s.environment(); err != errNoStreamPort {
		t.Errorf("environment without a stream port: %v", err)
	}
	if _, err := s.Publish(context.Background(), engine.PublishPlan{Queue: "q", Messages: 1, ReconnectTimeout: time.Minute,
		Ledger: metrics.NewLedger("t-", 1), Timeline: metrics.NewTimeline(time.Now())}); err == nil || !strings.Contains(err.Error(), "publishes no stream port") {
		t.Errorf("publish without a stream port: %v", err)
	}
	if err := s.Drain(ctxTimeout(t, time.Minute), engine.DrainPlan{Queue: "q"}); err == nil || !strings.Contains(err.Error(), "publishes no stream port") {
		t.Errorf("drain without a stream port: %v", err)
	}
	if _, err := s.Consume(context.Background(), engine.ConsumePlan{}); err == nil {
		t.Error("live consumers of a stream accepted")
	}
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func ctxTimeout(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// testStreamEpoch is a stream publisher of n orders and one epoch with no
// connection: enough for the bookkeeping of its confirmations.
func testStreamEpoch(n, window int, republish scenario.Republish) *streamEpoch {
	p := &streamPublisher{s: &Traffic{Traffic: &amqp.Traffic{Log: quiet}},
		p: engine.PublishPlan{Queue: "q", Mode: scenario.ConfirmWindow, Messages: n, Window: window, Republish: republish,
			Ledger: metrics.NewLedger("t-", n), Latency: metrics.NewLatency(), Timeline: metrics.NewTimeline(time.Now())},
		tracker: metrics.NewConfirmTracker()}
	return &streamEpoch{p: p, s: traffic.Session{Epoch: 3, Publisher: 1, Connection: 2}, slots: make(chan struct{}, window), done: make(chan struct{})}
}

// track publishes seq under its publishing id holding a slot, as
// publishTracked does before Send.
func trackStream(t *testing.T, ep *streamEpoch, seqs ...int) {
	t.Helper()
	for _, seq := range seqs {
		ep.slots <- struct{}{}
		if tracked, err := ep.p.tracker.Track(ep.s.Epoch, uint64(seq)+1, seq, time.Now()); !tracked || err != nil {
			t.Fatalf("track %d: %v %v", seq, tracked, err)
		}
		ep.p.p.Ledger.Published(seq, true)
	}
}

// A confirmed publishing id is acked, a broker's publish error nacked, and
// what is pending when the producer closes goes in doubt (never nacked),
// queued for a republish in ascending order ahead of fresh ids, every
// window slot released.
func TestStreamEpochSettlesAndClosesInDoubt(t *testing.T) {
	ep := testStreamEpoch(8, 8, scenario.RepublishInDoubt)
	p := ep.p
	p.next = 6 // ids 0-5 taken once, 6 and 7 still fresh
	trackStream(t, ep, 0, 1, 2, 3, 4, 5)
	ep.settle(2, true)  // seq 1
	ep.settle(5, false) // seq 4
	ep.settle(99, true) // unknown: ignored
	ep.closed()
	want := []metrics.Outcome{metrics.InDoubt, metrics.Acked, metrics.InDoubt, metrics.InDoubt, metrics.Nacked, metrics.InDoubt}
	for seq, w := range want {
		if got := p.p.Ledger.Outcome(seq); got != w {
			t.Errorf("seq %d: %v, want %v", seq, got, w)
		}
	}
	if !reflect.DeepEqual(p.retry, []int{0, 2, 3, 5}) || len(ep.slots) != 0 || p.stats.Acked != 1 {
		t.Fatalf("retry %v, slots held %d, acks %d", p.retry, len(ep.slots), p.stats.Acked)
	}
	events := p.p.Timeline.Events()
	if i := slices.IndexFunc(events, func(e metrics.Event) bool { return e.Kind == metrics.EvConnectionLost }); i < 0 || events[i].Detail != "epoch 3: stream producer closed, 4 in doubt" {
		t.Errorf("events %+v", events)
	}
	// A publish failed before the close put 1 back: republishes still go
	// out lowest first, then fresh ids.
	p.putBack(1)
	var order []int
	for range 7 {
		seq, ok := p.take()
		if !ok {
			t.Fatal("ran out of ids")
		}
		order = append(order, seq)
	}
	if _, ok := p.take(); ok || !reflect.DeepEqual(order, []int{0, 1, 2, 3, 5, 6, 7}) {
		t.Errorf("publish order %v, want republishes ascending then fresh", order)
	}
}

// Without republish, in-doubt ids stay in doubt.
func TestStreamEpochCloseWithoutRepublish(t *testing.T) {
	ep := testStreamEpoch(2, 2, scenario.RepublishNone)
	trackStream(t, ep, 0, 1)
	ep.closing.Store(true)
	ep.closed()
	if len(ep.p.retry) != 0 || ep.p.p.Ledger.Outcome(0) != metrics.InDoubt || ep.p.p.Ledger.Outcome(1) != metrics.InDoubt {
		t.Fatalf("retry %v outcomes %v %v", ep.p.retry, ep.p.p.Ledger.Outcome(0), ep.p.p.Ledger.Outcome(1))
	}
}

// The client's own statuses (a confirmation timeout, a message never sent
// because its producer closed, one too large) say nothing about the broker;
// a publish error the broker sent does.
func TestStreamClientSideStatuses(t *testing.T) {
	for err, want := range map[error]bool{stream.ConfirmationTimoutError: true, stream.AlreadyClosed: true, stream.FrameTooLarge: true,
		stream.StreamNotAvailable: false, stream.PublisherDoesNotExist: false, stream.CodeAccessRefused: false} {
		if got := clientSide(err); got != want {
			t.Errorf("%v: client side %v, want %v", err, got, want)
		}
	}
}

// A message's id and attempt come back from the AMQP 1.0 properties the
// publisher set; a message without them is unexpected ("").
func TestStreamMessageID(t *testing.T) {
	p := &streamPublisher{p: engine.PublishPlan{Ledger: metrics.NewLedger("t-", 10)}}
	for _, attempt := range []int{0, 2} {
		m := p.message(7, attempt)
		if m.GetPublishingId() != 8 || !m.HasPublishingId() {
			t.Errorf("publishing id %d, want 8", m.GetPublishingId())
		}
		raw, err := m.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		var back streamamqp.Message
		if err := back.UnmarshalBinary(raw); err != nil {
			t.Fatal(err)
		}
		if id, got := streamMessageID(&back); id != "t-7" || got != attempt {
			t.Errorf("attempt %d: read back %q attempt %d", attempt, id, got)
		}
	}
	if id, a := streamMessageID(&streamamqp.Message{}); id != "" || a != 0 {
		t.Errorf("bare message: %q %d", id, a)
	}
}

// The drain counts each offset once: a consumer opened mid-chunk sees
// offsets already read, and a consumer the drain gave up on counts nothing.
func TestStreamDrainCountsOffsetsOnce(t *testing.T) {
	l := metrics.NewLedger("t-", 3)
	for seq := range 3 {
		l.Published(seq, true)
	}
	st := &streamDrain{d: engine.DrainPlan{Ledger: l}}
	msg := func(seq int) *streamamqp.Message {
		return &streamamqp.Message{Properties: &streamamqp.MessageProperties{MessageID: l.MessageID(seq)}}
	}
	gen, from := st.open()
	if from != (stream.OffsetSpecification{}.First()) {
		t.Errorf("first consumer reads from %+v, want the first offset", from)
	}
	st.record(gen, 0, msg(0))
	st.record(gen, 1, msg(1))
	st.stop()
	st.record(gen, 2, msg(2)) // the old consumer, after the drain gave up on it
	gen, from = st.open()
	if from != (stream.OffsetSpecification{}.Offset(2)) {
		t.Errorf("second consumer reads from %+v, want offset 2", from)
	}
	st.record(gen, 1, msg(1)) // the chunk read again from its start
	st.record(gen, 2, msg(2))
	if _, next := st.progress(); next != 3 {
		t.Errorf("next offset %d, want 3", next)
	}
	c, _, err := l.Reconcile(true)
	if err != nil {
		t.Fatal(err)
	}
	if c.Deliveries != 3 || c.Duplicates != 0 {
		t.Errorf("deliveries %d duplicates %d, want 3 and 0", c.Deliveries, c.Duplicates)
	}
}
