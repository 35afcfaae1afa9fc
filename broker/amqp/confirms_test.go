package amqp

import (
	"context"
	"errors"
	"reflect"
	"sync/atomic"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/rmqtorture/rmqtorture/broker/internal/traffic"
	"github.com/rmqtorture/rmqtorture/engine"
	"github.com/rmqtorture/rmqtorture/metrics"
	"github.com/rmqtorture/rmqtorture/scenario"
)

// testPublisher is a publisher of n orders ("t-0"…) with no connection:
// enough for its bookkeeping and its confirm reader.
func testPublisher(n int, republish scenario.Republish) *publisher {
	return &publisher{
		a: &Traffic{Log: quiet},
		p: engine.PublishPlan{Queue: "q", Messages: n, Window: n, Republish: republish,
			Ledger: metrics.NewLedger("t-", n), Latency: metrics.NewLatency(), Timeline: metrics.NewTimeline(time.Now())},
		tracker:  metrics.NewConfirmTracker(),
		firstTry: make([]atomic.Int64, n),
	}
}

// readerHarness drives one confirm reader through Go channels, as
// amqp091-go's NotifyPublish and NotifyReturn listeners would.
type readerHarness struct {
	t        *testing.T
	p        *publisher
	r        *confirmReader
	confirms chan amqp.Confirmation
	returns  chan amqp.Return
}

var testSession = traffic.Session{Epoch: 7, Publisher: 2, Connection: 3}

func newHarness(t *testing.T, n, window int, republish scenario.Republish) *readerHarness {
	p := testPublisher(n, republish)
	return &readerHarness{t: t, p: p, r: newConfirmReader(p, testSession, window),
		confirms: make(chan amqp.Confirmation, 64), returns: make(chan amqp.Return, 64)}
}

// publish tracks seq under tag holding a window slot, as the publish loop does.
func (h *readerHarness) publish(tag uint64, seq int) {
	h.t.Helper()
	h.r.slots <- struct{}{}
	attempt, tracked, err := h.r.track(tag, seq, time.Now())
	if err != nil || !tracked || attempt < 1 {
		h.t.Fatalf("track tag %d seq %d: attempt %d tracked %v err %v", tag, seq, attempt, tracked, err)
	}
}

func (h *readerHarness) ack(ack bool, tags ...uint64) {
	for _, tag := range tags {
		h.confirms <- amqp.Confirmation{DeliveryTag: tag, Ack: ack}
	}
}

func (h *readerHarness) ret(seq int) {
	h.returns <- amqp.Return{MessageId: h.p.p.Ledger.MessageID(seq), ReplyCode: amqp.NoRoute}
}

// finish closes the confirm listener (the channel closed) after what was
// queued, runs the reader to its end and checks that every slot is free.
func (h *readerHarness) finish(closing bool) {
	h.t.Helper()
	h.r.closing.Store(closing)
	close(h.confirms)
	h.r.run(h.confirms, h.returns)
	if n := len(h.r.slots); n != 0 {
		h.t.Errorf("%d window slots still held after the reader ended, want 0", n)
	}
	if n := h.p.tracker.InFlight(); n != 0 {
		h.t.Errorf("%d messages still tracked, want 0", n)
	}
}

func (h *readerHarness) outcomes() []metrics.Outcome {
	out := make([]metrics.Outcome, h.p.p.Messages)
	for seq := range out {
		out[seq] = h.p.p.Ledger.Outcome(seq)
	}
	return out
}

func (h *readerHarness) wantOutcomes(want ...metrics.Outcome) {
	h.t.Helper()
	if got := h.outcomes(); !reflect.DeepEqual(got, want) {
		h.t.Errorf("outcomes %v, want %v", got, want)
	}
}

func (h *readerHarness) events(kind metrics.EventKind) []metrics.Event {
	var out []metrics.Event
	for _, e := range h.p.p.Timeline.Events() {
		if e.Kind == kind {
			e.At, e.AtMS = time.Time{}, 0
			out = append(out, e)
		}
	}
	return out
}

// RabbitMQ sends a mandatory message's basic.return before its basic.ack;
// the reader takes every queued return first, so the message is returned,
// not confirmed, and its neighbour is plainly acked.
func TestConfirmReaderReturnBeforeAck(t *testing.T) {
	h := newHarness(t, 2, 2, scenario.RepublishNone)
	h.publish(1, 0)
	h.publish(2, 1)
	h.ret(0)
	h.ack(true, 1, 2)
	h.finish(true)
	h.wantOutcomes(metrics.ReturnedAcked, metrics.Acked)
	if h.p.stats.Acked != 2 {
		t.Errorf("%d acks counted, want 2", h.p.stats.Acked)
	}
	if got := h.p.p.Latency.Summary().Count; got != 2 {
		t.Errorf("%d confirm latencies recorded, want 2", got)
	}
	// Closed by rmqtorture with nothing pending: not a connection loss.
	if lost := h.events(metrics.EvConnectionLost); len(lost) != 0 {
		t.Errorf("connection-lost events %v, want none", lost)
	}
	want := []metrics.Event{{Kind: metrics.EvFirstProgress, Epoch: 7, Publisher: 2, Connection: 3, Progress: metrics.ProgressConfirm, Detail: "epoch 7: first confirm"}}
	if got := h.events(metrics.EvFirstProgress); !reflect.DeepEqual(got, want) {
		t.Errorf("first-progress events %+v, want %+v", got, want)
	}
}

// A closed listener with confirms pending: amqp091-go resolves nothing
// further (rabbitmq/amqp091-go#46), so they are in doubt, never nacked, and
// under republish: in-doubt queued again in tag order; a real basic.nack
// before the close stays a nack.
func TestConfirmReaderCloseLeavesPendingInDoubt(t *testing.T) {
	h := newHarness(t, 4, 4, scenario.RepublishInDoubt)
	for seq := range 4 {
		h.publish(uint64(seq+1), seq)
	}
	h.ack(true, 2)
	h.ack(false, 4)
	h.finish(false)
	h.wantOutcomes(metrics.InDoubt, metrics.Acked, metrics.InDoubt, metrics.Nacked)
	if !reflect.DeepEqual(h.p.retry, []int{0, 2}) {
		t.Errorf("queued for republish %v, want [0 2]", h.p.retry)
	}
	if h.p.stats.Acked != 1 {
		t.Errorf("%d acks counted, want 1", h.p.stats.Acked)
	}
	want := []metrics.Event{{Kind: metrics.EvConnectionLost, Epoch: 7, Publisher: 2, Connection: 3, Detail: "epoch 7: channel closed, 2 in doubt"}}
	if got := h.events(metrics.EvConnectionLost); !reflect.DeepEqual(got, want) {
		t.Errorf("connection-lost events %+v, want %+v", got, want)
	}
	// The epoch is closed: a publish racing the close is not tracked.
	if _, tracked, err := h.r.track(5, 1, time.Now()); tracked || err != nil {
		t.Errorf("track after close: tracked %v err %v, want false nil", tracked, err)
	}
}

// Without republish, in-doubt ids are not queued again.
func TestConfirmReaderCloseWithoutRepublish(t *testing.T) {
	h := newHarness(t, 2, 2, scenario.RepublishNone)
	h.publish(1, 0)
	h.publish(2, 1)
	h.finish(true)
	h.wantOutcomes(metrics.InDoubt, metrics.InDoubt)
	if len(h.p.retry) != 0 {
		t.Errorf("queued for republish %v, want none", h.p.retry)
	}
	// Closed by rmqtorture, but with messages pending: still recorded.
	if got := h.events(metrics.EvConnectionLost); len(got) != 1 || got[0].Detail != "epoch 7: channel closed, 2 in doubt" {
		t.Errorf("connection-lost events %+v, want one with 2 in doubt", got)
	}
}

// Confirms match by delivery tag in any order; a multiple ack or nack
// reaches the listener as one Confirmation per tag (amqp091-go's
// confirms.Multiple), each settling its own message.
func TestConfirmReaderOutOfOrderAndMultiple(t *testing.T) {
	h := newHarness(t, 6, 6, scenario.RepublishNone)
	for seq := range 6 {
		h.publish(uint64(seq+1), seq)
	}
	h.ack(true, 3, 1, 2) // out of order
	h.ack(false, 4, 5)   // basic.nack multiple=true, delivery-tag 5, as delivered
	h.ack(true, 6)
	h.finish(true)
	h.wantOutcomes(metrics.Acked, metrics.Acked, metrics.Acked, metrics.Nacked, metrics.Nacked, metrics.Acked)
	if h.p.stats.Acked != 4 {
		t.Errorf("%d acks counted, want 4", h.p.stats.Acked)
	}
	if got := h.p.p.Latency.Summary().Count; got != 6 {
		t.Errorf("%d confirm latencies recorded, want 6", got)
	}
	if got := len(h.events(metrics.EvFirstProgress)); got != 1 {
		t.Errorf("%d first-progress events, want 1", got)
	}
}

// A confirm for delivery tag 0 (never a real tag: streadway/amqp#199) or
// for a tag already settled is ignored: it settles nothing and frees no
// window slot.
func TestConfirmReaderIgnoresUnknownTags(t *testing.T) {
	h := newHarness(t, 2, 2, scenario.RepublishInDoubt)
	h.publish(1, 0)
	h.publish(2, 1)
	h.ack(true, 0, 1, 1, 9)
	close(h.confirms)
	done := make(chan struct{})
	go func() { h.r.run(h.confirms, h.returns); close(done) }()
	<-done
	h.wantOutcomes(metrics.Acked, metrics.InDoubt)
	if h.p.stats.Acked != 1 {
		t.Errorf("%d acks counted, want 1", h.p.stats.Acked)
	}
	if len(h.r.slots) != 0 {
		t.Errorf("%d slots held, want 0", len(h.r.slots))
	}
}

// The window: a full window blocks the next publish until a confirm frees
// a slot; a closed listener ends the wait with traffic.ErrEpochOver and puts the id
// back.
func TestConfirmReaderReleasesWindowSlots(t *testing.T) {
	h := newHarness(t, 3, 2, scenario.RepublishNone)
	h.p.next = 3 // ids 0-2 taken
	h.publish(1, 0)
	h.publish(2, 1)
	go h.r.run(h.confirms, h.returns)
	ctx := context.Background()
	type result struct {
		got bool
		err error
	}
	acquired := make(chan result, 1)
	go func() { got, err := h.p.acquire(ctx, h.r, 2); acquired <- result{got, err} }()
	select {
	case r := <-acquired:
		t.Fatalf("acquire with a full window returned %+v, want it to wait", r)
	case <-time.After(50 * time.Millisecond):
	}
	h.ack(true, 1)
	select {
	case r := <-acquired:
		if !r.got || r.err != nil {
			t.Fatalf("acquire after an ack: %+v, want got", r)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("an ack did not free a window slot")
	}
	if _, tracked, err := h.r.track(3, 2, time.Now()); !tracked || err != nil {
		t.Fatal(tracked, err)
	}
	go func() { got, err := h.p.acquire(ctx, h.r, 0); acquired <- result{got, err} }()
	close(h.confirms)
	// The close frees the slots as it ends the epoch: acquire either sees
	// the end, or wins a slot and then finds the epoch closed to tracking.
	switch r := <-acquired; {
	case r.got:
		if _, tracked, err := h.r.track(4, 0, time.Now()); tracked || err != nil {
			t.Errorf("track on a closed epoch: %v %v, want not tracked", tracked, err)
		}
		<-h.r.slots
	case !errors.Is(r.err, traffic.ErrEpochOver):
		t.Errorf("acquire across a channel close: %+v, want traffic.ErrEpochOver", r)
	default:
		if !reflect.DeepEqual(h.p.retry, []int{0}) {
			t.Errorf("retry %v, want [0] (the id acquire put back)", h.p.retry)
		}
	}
	<-h.r.done
	h.wantOutcomes(metrics.Acked, metrics.InDoubt, metrics.InDoubt)
	if len(h.r.slots) != 0 {
		t.Errorf("%d slots held, want 0", len(h.r.slots))
	}
}

// A publish call that fails after its message was tracked leaves it in
// doubt (queued again under republish: in-doubt) and frees its slot; a
// late confirm for its tag is then ignored.
func TestConfirmReaderPublishFailed(t *testing.T) {
	h := newHarness(t, 1, 1, scenario.RepublishInDoubt)
	h.publish(1, 0)
	h.r.publishFailed(1, 0)
	if len(h.r.slots) != 0 {
		t.Errorf("%d slots held after a failed publish, want 0", len(h.r.slots))
	}
	h.r.publishFailed(1, 0) // settled already: nothing more
	h.ack(true, 1)
	h.finish(true)
	h.wantOutcomes(metrics.InDoubt)
	if !reflect.DeepEqual(h.p.retry, []int{0}) {
		t.Errorf("retry %v, want [0]", h.p.retry)
	}
}

// Deadlines: a never-published order whose deadline passed while it waited
// for a slot is not published; a context cancelled while a slot was free
// leaves the order unsent and its slot free.
func TestAcquireDeadlineAndCancel(t *testing.T) {
	h := newHarness(t, 2, 1, scenario.RepublishNone)
	h.p.p.MessageDeadline = 20 * time.Millisecond
	h.p.firstTry[1].Store(time.Now().UnixNano())
	h.publish(1, 0) // the window is full
	got, err := h.p.acquire(context.Background(), h.r, 1)
	if got || err != nil {
		t.Fatalf("acquire past the deadline: %v %v, want false nil", got, err)
	}
	if o := h.p.p.Ledger.Outcome(1); o != metrics.NotPublished {
		t.Errorf("order 1 %s, want not-published", o)
	}
	<-h.r.slots // free the window
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	got, err = h.p.acquire(ctx, h.r, 1)
	if got || !errors.Is(err, context.Canceled) || len(h.r.slots) != 0 {
		t.Errorf("acquire under a cancelled context: %v %v (%d slots), want false, canceled, 0", got, err, len(h.r.slots))
	}
}

// newTimeoutHarness is a reader under on_confirm_timeout: republish.
func newTimeoutHarness(t *testing.T, n, window int) *readerHarness {
	p := testPublisher(n, scenario.RepublishInDoubt)
	p.p.OnConfirmTimeout, p.p.ConfirmTimeout = scenario.OnTimeoutRepublish, time.Second
	h := &readerHarness{t: t, p: p, r: newConfirmReader(p, testSession, window),
		confirms: make(chan amqp.Confirmation, 64), returns: make(chan amqp.Return, 64)}
	t.Cleanup(h.r.stopTimeouts)
	return h
}

// on_confirm_timeout: republish (rabbitmq/amqp091-go#122): ids whose
// confirm timed out are copied once on the same channel, their originals
// still tracked. A late ack of an original settles its id and frees its
// slot; the copy's ack then only closes the copy. An id settled before its
// copy was tracked gets none. The ledger counts the copy as a republish and
// the original's ack as a late confirm.
func TestConfirmTimeoutCopiesMatchLateAcks(t *testing.T) {
	h := newTimeoutHarness(t, 3, 3)
	h.p.next = 3
	h.publish(1, 0)
	h.publish(2, 1)
	if due := h.r.dueCopies(time.Now()); len(due) != 0 {
		t.Fatalf("due before the timeout: %v", due)
	}
	due := h.r.dueCopies(time.Now().Add(time.Second))
	if !reflect.DeepEqual(due, []int{0, 1}) {
		t.Fatalf("due %v, want [0 1]", due)
	}
	if again := h.r.dueCopies(time.Now().Add(time.Hour)); len(again) != 0 {
		t.Fatalf("an id copied twice: %v", again)
	}
	go h.r.run(h.confirms, h.returns)
	h.ack(true, 2) // id 1 settles before its copy is made
	waitFor(t, func() bool { return h.p.p.Ledger.Outcome(1) == metrics.Acked })
	if attempt, ok, err := h.r.trackCopy(3, 0); !ok || err != nil || attempt != 2 {
		t.Fatalf("copy of 0: attempt %d ok %v err %v", attempt, ok, err)
	}
	if _, ok, err := h.r.trackCopy(4, 1); ok || err != nil {
		t.Fatalf("copy of a settled id: ok %v err %v", ok, err)
	}
	if _, ok := h.r.timeouts.oldestCopy(); !ok {
		t.Fatal("the copy bounds the connection")
	}
	h.ack(true, 1, 3) // the late original first, then the copy
	waitFor(t, func() bool { return h.p.tracker.InFlight() == 0 })
	if _, ok := h.r.timeouts.oldestCopy(); ok {
		t.Fatal("a confirmed copy still bounds the connection")
	}
	close(h.confirms)
	<-h.r.done
	if len(h.r.slots) != 0 {
		t.Fatalf("%d slots held, want 0", len(h.r.slots))
	}
	c, _, err := h.p.p.Ledger.Reconcile(false)
	if err != nil || c.Republished != 1 || c.LateConfirms != 1 || c.WentInDoubt != 0 || h.p.stats.Acked != 3 {
		t.Fatalf("%v: republished %d late %d went in doubt %d acks %d; want 1 1 0 3", err, c.Republished, c.LateConfirms, c.WentInDoubt, h.p.stats.Acked)
	}
	h.wantOutcomes(metrics.Acked, metrics.Acked, metrics.NotSent)
}

// A channel that closes with an id's original and copy both pending puts
// the id in doubt once: one requeue, one slot freed.
func TestConfirmTimeoutCloseWithCopyPending(t *testing.T) {
	h := newTimeoutHarness(t, 2, 2)
	h.publish(1, 0)
	h.publish(2, 1)
	if _, ok, err := h.r.trackCopy(3, 0); !ok || err != nil {
		t.Fatal(ok, err)
	}
	h.ack(true, 2)
	h.finish(false)
	h.wantOutcomes(metrics.InDoubt, metrics.Acked)
	if !reflect.DeepEqual(h.p.retry, []int{0}) {
		t.Fatalf("retry %v, want [0] once", h.p.retry)
	}
	if c, _, _ := h.p.p.Ledger.Reconcile(false); c.WentInDoubt != 1 || c.Republished != 1 {
		t.Fatalf("went in doubt %d republished %d, want 1 1", c.WentInDoubt, c.Republished)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 5s")
		}
		time.Sleep(time.Millisecond)
	}
}

// Under republish: nacked-and-in-doubt a basic.nack queues its id to be
// published again (same message id, next attempt) until it has had
// scenario.NackRepublishLimit attempts; an id republished after its nack
// and then acked ends confirmed. Under in-doubt a nack stays a nack. The
// hold a nack takes while its id is queued is released every time.
func TestConfirmReaderRepublishesNacked(t *testing.T) {
	h := newHarness(t, 2, 2, scenario.RepublishNackedAndInDoubt)
	take := func() []int {
		h.p.mu.Lock()
		defer h.p.mu.Unlock()
		out := h.p.retry
		h.p.retry = nil
		return out
	}
	var tag uint64
	for k := 1; k <= scenario.NackRepublishLimit; k++ {
		tag++
		h.publish(tag, 0)
		h.r.confirm(amqp.Confirmation{DeliveryTag: tag, Ack: false})
		want := []int{0}
		if k == scenario.NackRepublishLimit {
			want = nil // its last attempt: it stays nacked
		}
		if got := take(); !reflect.DeepEqual(got, want) || h.p.held.Load() != 0 {
			t.Fatalf("attempt %d nacked: queued %v, held %d; want %v, 0", k, got, h.p.held.Load(), want)
		}
	}
	h.publish(tag+1, 1)
	h.r.confirm(amqp.Confirmation{DeliveryTag: tag + 1, Ack: false})
	if got := take(); !reflect.DeepEqual(got, []int{1}) {
		t.Fatalf("queued %v, want [1]", got)
	}
	h.publish(tag+2, 1)
	h.ack(true, tag+2)
	h.finish(true)
	h.wantOutcomes(metrics.Nacked, metrics.Acked)
	h.p.p.Ledger.Delivered("t-1", false)
	h.p.p.Ledger.Delivered("t-1", false)
	c, ids, err := h.p.p.Ledger.Reconcile(true)
	if err != nil {
		t.Fatal(err)
	}
	want := metrics.Counts{Sent: 2, Confirmed: 1, Nacked: 1, WentNacked: 2, Republished: scenario.NackRepublishLimit - 1 + 1,
		Delivered: 1, Deliveries: 2, Duplicates: 1, DuplicatesFromRepublish: 1}
	if c != want || !reflect.DeepEqual(ids.WentNacked, []metrics.Range{{First: 0, Last: 1}}) {
		t.Fatalf("counts\n got %+v\nwant %+v\nids %+v", c, want, ids)
	}
	if h.p.stats.Acked != 1 {
		t.Errorf("%d acks counted, want 1", h.p.stats.Acked)
	}

	h2 := newHarness(t, 1, 1, scenario.RepublishInDoubt)
	h2.publish(1, 0)
	h2.r.confirm(amqp.Confirmation{DeliveryTag: 1, Ack: false})
	if len(h2.p.retry) != 0 {
		t.Fatalf("in-doubt policy queued a nacked id: %v", h2.p.retry)
	}
	h2.finish(true)
	h2.wantOutcomes(metrics.Nacked)
}
