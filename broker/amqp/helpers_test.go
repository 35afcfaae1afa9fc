package amqp

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/rmqtorture/rmqtorture/broker/internal/traffic"
	"github.com/rmqtorture/rmqtorture/metrics"
	"github.com/rmqtorture/rmqtorture/scenario"
)

// Bodies are deterministic orders; an exact size gives exactly that many
// bytes (ruby-amqp/bunny#615): padded JSON above the bare order, JSON with
// trailing whitespace just above it, the JSON cut below it, down to 0.
func TestOrderBody(t *testing.T) {
	bare, isJSON := OrderBody("t-1001", 1001, 0, false)
	want := `{"order_id":"t-1001","sku":"SKU-0004","quantity":2,"total_cents":99}`
	want = want[:len(want)-3] + `599}` // 499 + (1001%50)*100 = 599
	if string(bare) != want || !isJSON {
		t.Errorf("bare body %s (json %v), want %s", bare, isJSON, want)
	}
	if b, _ := OrderBody("t-1001", 1001, 4096, false); len(b) != len(bare) {
		t.Errorf("size without exact: %d bytes, want the bare %d", len(b), len(bare))
	}
	for _, size := range []int{len(bare) + 1, len(bare) + padField, len(bare) + padField + 1, len(bare), 4096} {
		b, isJSON := OrderBody("t-1001", 1001, size, true)
		var o Order
		if len(b) != size || !isJSON {
			t.Errorf("size %d: body of %d bytes (json %v)", size, len(b), isJSON)
		}
		if err := json.Unmarshal(b, &o); err != nil || o.OrderID != "t-1001" || o.Quantity != 2 || o.TotalCents != 599 {
			t.Errorf("size %d: %+v %v", size, o, err)
		}
	}
	for _, size := range []int{0, 1, 16, len(bare) - 1} {
		b, isJSON := OrderBody("t-1001", 1001, size, true)
		if len(b) != size || isJSON || string(b) != want[:size] {
			t.Errorf("size %d: body %q (json %v), want %q cut", size, b, isJSON, want[:size])
		}
	}
}

// Every UnroutableEvery-th order (1-based) gets a key nothing is bound to;
// the misroute fault sends exactly one order to the missing exchange and
// records it with its session.
func TestRoute(t *testing.T) {
	p := testPublisher(10, scenario.RepublishNone)
	p.p.UnroutableEvery = 3
	s := traffic.Session{Epoch: 4, Publisher: 1, Connection: 2}
	var keys []string
	for seq := range 7 {
		ex, key := p.route(s, seq)
		if ex != Exchange {
			t.Errorf("order %d to exchange %q", seq, ex)
		}
		keys = append(keys, key)
	}
	want := []string{"q", "q", "q.unroutable", "q", "q", "q.unroutable", "q"}
	if !reflect.DeepEqual(keys, want) {
		t.Errorf("keys %v, want %v", keys, want)
	}
	mis := make(chan struct{})
	p.p.Misroute, p.misroute = mis, mis // as Publish sets them
	if ex, _ := p.route(s, 7); ex != Exchange {
		t.Errorf("before the fault: %q", ex)
	}
	close(mis)
	if ex, key := p.route(s, 8); ex != MissingExchange || key != "q.unroutable" {
		t.Errorf("after the fault: %q %q, want the missing exchange", ex, key)
	}
	if ex, _ := p.route(s, 9); ex != Exchange {
		t.Errorf("second order after the fault: %q, want the real exchange", ex)
	}
	var got []metrics.Event
	for _, e := range p.p.Timeline.Events() {
		e.At, e.AtMS = time.Time{}, 0
		got = append(got, e)
	}
	wantEv := []metrics.Event{{Kind: metrics.EvMisrouted, Epoch: 4, Publisher: 1, Connection: 2, Detail: "8"}}
	if !reflect.DeepEqual(got, wantEv) {
		t.Errorf("events %+v, want %+v", got, wantEv)
	}
}

// The id queue: republishes first (a put-back id before queued in-doubt
// ids), then fresh ids in order; in-doubt ids are queued only under
// republish: in-doubt.
func TestIDQueue(t *testing.T) {
	p := testPublisher(3, scenario.RepublishInDoubt)
	var order []int
	take := func() {
		seq, ok := p.take()
		if !ok {
			t.Fatalf("take after %v: nothing", order)
		}
		order = append(order, seq)
	}
	take()
	take() // 0, 1 taken
	if p.firstTry[0].Load() == 0 || p.firstTry[2].Load() != 0 {
		t.Errorf("first try times %d %d: set on the first take only", p.firstTry[0].Load(), p.firstTry[2].Load())
	}
	p.p.Ledger.Published(0, true)
	p.release() // 0 published: no longer held
	p.inDoubt(0)
	p.putBack(1)
	take()
	take()
	take()
	// The oldest waiting id first: 0, in doubt, before 1, put back after.
	if !reflect.DeepEqual(order, []int{0, 1, 0, 1, 2}) {
		t.Errorf("taken %v, want [0 1 0 1 2]", order)
	}
	if seq, ok := p.take(); ok {
		t.Errorf("take on an empty queue: %d", seq)
	}
	if o := p.p.Ledger.Outcome(0); o != metrics.InDoubt {
		t.Errorf("order 0 %s, want in-doubt", o)
	}
	// 1, 0 and 2 are still held: taken, not yet published or put back.
	if p.finished() || p.held.Load() != 3 {
		t.Errorf("finished with %d ids taken but not yet published", p.held.Load())
	}
	for range 3 {
		p.release()
	}
	if !p.finished() {
		t.Error("not finished with every id taken and nothing in flight")
	}
	q := testPublisher(1, scenario.RepublishNone)
	q.take()
	q.p.Ledger.Published(0, true)
	q.inDoubt(0)
	if len(q.retry) != 0 || q.p.Ledger.Outcome(0) != metrics.InDoubt {
		t.Errorf("republish none: retry %v outcome %s", q.retry, q.p.Ledger.Outcome(0))
	}
}

// Message deadlines: an order past its deadline before any attempt is not
// published; one written and unconfirmed at its deadline is marked so.
func TestDeadlines(t *testing.T) {
	p := testPublisher(2, scenario.RepublishNone)
	if _, ok := p.deadline(0); ok {
		t.Error("a deadline without MessageDeadline")
	}
	p.p.MessageDeadline = time.Millisecond
	past := time.Now().Add(-time.Second).UnixNano()
	p.firstTry[0].Store(past)
	p.firstTry[1].Store(past)
	if !p.expiredUnpublished(0) || p.p.Ledger.Outcome(0) != metrics.NotPublished {
		t.Errorf("order 0: %s, want not-published", p.p.Ledger.Outcome(0))
	}
	p.p.Ledger.Published(1, true)
	if p.expiredUnpublished(1) {
		t.Error("an attempted order is pending, not unpublished")
	}
	p.markPastDeadline(time.Now(), 1)
	if o := p.p.Ledger.Outcome(1); o != metrics.InFlight {
		t.Errorf("order 1 %s, want still in flight", o)
	}
}

// Headers: any AMQP integer type reads as an int; others and absence as 0;
// x-death counts are summed over its entries.
func TestHeaderInt(t *testing.T) {
	h := amqp.Table{"a": int64(5), "b": int32(6), "c": int16(7), "d": int8(8), "e": 9, "f": uint8(10), "g": uint16(11), "h": uint32(12), "s": "13", "x": 1.5}
	want := map[string]int{"a": 5, "b": 6, "c": 7, "d": 8, "e": 9, "f": 10, "g": 11, "h": 12, "s": 0, "x": 0, "missing": 0}
	for k, w := range want {
		if got := headerInt(h, k); got != w {
			t.Errorf("headerInt(%q) = %d, want %d", k, got, w)
		}
	}
	xd := amqp.Table{"x-death": []any{
		amqp.Table{"count": int64(3), "reason": "expired"},
		amqp.Table{"count": int32(2), "reason": "rejected"},
		"not a table",
	}}
	if got := xDeathCount(xd); got != 5 {
		t.Errorf("xDeathCount = %d, want 5", got)
	}
	if got := xDeathCount(amqp.Table{}); got != 0 {
		t.Errorf("xDeathCount without x-death = %d", got)
	}
}

// publishing: persistent JSON with the message id, the attempt header only
// in confirm modes, the sent-time header only when asked for.
func TestPublishing(t *testing.T) {
	p := testPublisher(3, scenario.RepublishNone)
	p.deliveryMode = amqp.Persistent
	var mb messageBuilder
	m := p.publishing(&mb, 2, 0)
	if m.MessageId != "t-2" || m.DeliveryMode != amqp.Persistent || m.ContentType != "application/json" || m.Headers != nil {
		t.Errorf("fire-and-forget message %+v", m)
	}
	p.p.StampSentTime = true
	m = p.publishing(&mb, 2, 3)
	if headerInt(m.Headers, AttemptHeader) != 3 || m.Headers[SentAtHeader].(int64) != m.Timestamp.UnixNano() {
		t.Errorf("headers %v", m.Headers)
	}
	// Attempt 1 carries no attempt header (a delivery reads it as 1), and
	// the reused table keeps nothing of the previous message.
	m = p.publishing(&mb, 1, 1)
	if _, ok := m.Headers[AttemptHeader]; ok || len(m.Headers) != 1 || m.MessageId != "t-1" || deliveryAttempt(m.Headers) != 1 {
		t.Errorf("first attempt headers %v id %s", m.Headers, m.MessageId)
	}
	p.p.StampSentTime = false
	if m = p.publishing(&mb, 1, 1); m.Headers != nil {
		t.Errorf("first attempt, no sent time: headers %v", m.Headers)
	}
}
