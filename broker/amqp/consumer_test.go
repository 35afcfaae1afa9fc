package amqp

import (
	"reflect"
	"testing"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/rmqtorture/rmqtorture/engine"
	"github.com/rmqtorture/rmqtorture/metrics"
	"github.com/rmqtorture/rmqtorture/scenario"
)

// nacks records basic.nack calls made through amqp.Delivery.
type nacks struct{ requeue []bool }

func (n *nacks) Ack(uint64, bool) error          { return nil }
func (n *nacks) Reject(uint64, bool) error       { return nil }
func (n *nacks) Nack(_ uint64, _, rq bool) error { n.requeue = append(n.requeue, rq); return nil }

// on_delivery nack-requeue and reject settle each delivery with
// basic.nack (requeue true, false) and count it; process records it in the
// ledger and the consumer stats.
func TestConsumerSettleNackAndReject(t *testing.T) {
	ledger := metrics.NewLedger("c-", 1)
	ledger.Published(0, false)
	for _, c := range []struct {
		on   scenario.ConsumerAction
		want []bool
	}{{scenario.ConsumerNackRequeue, []bool{true}}, {scenario.ConsumerReject, []bool{false}}} {
		set := &consumerSet{a: &Traffic{Log: quiet}, perMessage: map[string]int{}, endToEnd: metrics.NewLatency(),
			plan: engine.ConsumePlan{Ledger: ledger, Consumers: scenario.Consumers{OnDelivery: c.on}}}
		con := &consumer{set: set}
		ack := &nacks{}
		d := amqp.Delivery{Acknowledger: ack, MessageId: "c-0", DeliveryTag: 1, Redelivered: true}
		con.process(d, d.Timestamp)
		if err := con.settle(&consumerSession{c: con}, d); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(ack.requeue, c.want) {
			t.Errorf("%s: nack requeue %v, want %v", c.on, ack.requeue, c.want)
		}
		st := set.stats
		if st.Deliveries != 1 || st.RedeliveredFlagged != 1 || st.NackedRequeue+st.Rejected != 1 || set.perMessage["c-0"] != 1 {
			t.Errorf("%s: stats %+v", c.on, st)
		}
	}
	if got := histogram(countValues(map[string]int{"a": 1, "b": 2, "c": 1})); !reflect.DeepEqual(got, map[string]int{"1": 2, "2": 1}) {
		t.Errorf("histogram %v", got)
	}
	if histogram(nil) != nil {
		t.Error("empty histogram not nil")
	}
	set := &consumerSet{a: &Traffic{Log: quiet}}
	for range 25 {
		set.errorf("e %d", 1)
	}
	if len(set.stats.Errors) != 20 {
		t.Errorf("%d errors kept, want 20", len(set.stats.Errors))
	}
}

// nack-requeue with consumers.max_deliveries: requeued until the message's
// max_deliveries-th delivery, which the consumer rejects (the application's
// own bound); deliveries are counted per consumer, and a delivery to another
// consumer than the one before is a consumer change.
func TestConsumerMaxDeliveriesAndConsumerChanges(t *testing.T) {
	ledger := metrics.NewLedger("c-", 1)
	ledger.Published(0, false)
	set := &consumerSet{a: &Traffic{Log: quiet}, perMessage: map[string]int{}, endToEnd: metrics.NewLatency(),
		perConsumer: make([]int, 2), lastConsumer: -1,
		plan: engine.ConsumePlan{Ledger: ledger, Consumers: scenario.Consumers{OnDelivery: scenario.ConsumerNackRequeue, MaxDeliveries: 3}}}
	cons := []*consumer{{set: set, index: 0}, {set: set, index: 1}}
	ack := &nacks{}
	for i, by := range []int{0, 0, 1} {
		d := amqp.Delivery{Acknowledger: ack, MessageId: "c-0", DeliveryTag: uint64(i + 1)}
		cons[by].process(d, d.Timestamp)
		if err := cons[by].settle(&consumerSession{c: cons[by]}, d); err != nil {
			t.Fatal(err)
		}
	}
	st := set.stats
	if !reflect.DeepEqual(ack.requeue, []bool{true, true, false}) || st.NackedRequeue != 2 || st.Rejected != 1 || st.GaveUp != 1 {
		t.Fatalf("requeue %v, stats %+v", ack.requeue, st)
	}
	if !reflect.DeepEqual(set.perConsumer, []int{2, 1}) || st.ConsumerChanges != 1 {
		t.Fatalf("per consumer %v, changes %d; want [2 1], 1", set.perConsumer, st.ConsumerChanges)
	}
}
