package amqp

import (
	"context"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/rmqtorture/rmqtorture/engine"
	"github.com/rmqtorture/rmqtorture/metrics"
)

// A queue that holds ready messages but delivers none to the drain is not
// serving them, and what it holds is not lost: the drain retries until its
// deadline and ends with an error naming the count (the run's drain is then
// incomplete, its missing ids unverified), and once the queue serves again a
// drain delivers every id. A single-active-consumer queue whose active
// consumer holds one unacked delivery plays the queue that does not serve
// (a quorum queue whose leader could not deliver after a partition did the
// same in a CI run, and its 4,000 confirmed orders were called lost).
func TestDrainNeverCallsUnservedMessagesLost(t *testing.T) {
	_, c := startBroker(t)
	ctx := context.Background()
	const n, queue = 100, "rmqt.it.unserved"
	conn, err := amqp.Dial(c.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ch.QueueDeclare(queue, true, false, false, false, amqp.Table{"x-single-active-consumer": true}); err != nil {
		t.Fatal(err)
	}
	// Published with confirms on this channel (the tool's publisher
	// declares its own queue), each confirm settled in the ledger.
	l := metrics.NewLedger("it-", n)
	if err := ch.Confirm(false); err != nil {
		t.Fatal(err)
	}
	confirms := ch.NotifyPublish(make(chan amqp.Confirmation, n))
	for seq := range n {
		l.Published(seq, true)
		if err := ch.PublishWithContext(ctx, "", queue, false, false, amqp.Publishing{MessageId: l.MessageID(seq), DeliveryMode: amqp.Persistent, Body: []byte("order")}); err != nil {
			t.Fatal(err)
		}
	}
	for seq := range n {
		if c := <-confirms; !c.Ack || l.Settle(seq, true) != nil {
			t.Fatalf("confirm %+v for id %d", c, seq)
		}
	}
	// The active consumer: one delivery, never acked.
	if err := ch.Qos(1, 0, false); err != nil {
		t.Fatal(err)
	}
	held, err := ch.Consume(queue, "holder", false, false, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-held:
	case <-time.After(10 * time.Second):
		t.Fatal("the active consumer got no delivery")
	}
	a := &Traffic{URL: c.URL, Log: quiet}
	plan := engine.DrainPlan{Queue: queue, Ledger: l, Idle: 200 * time.Millisecond, LostWait: time.Second, Satisfied: l.AllConfirmedDelivered}
	dctx, cancel := context.WithTimeout(ctx, 4*time.Second)
	err = a.Drain(dctx, plan)
	cancel()
	if want := "yet the queue holds 99 ready messages: it is not serving them"; err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("drain of a queue that does not serve: %v, want an error with %q", err, want)
	}
	// The active consumer goes: its delivery is ready again and the drain
	// becomes the active consumer.
	if err := ch.Close(); err != nil {
		t.Fatal(err)
	}
	dctx, cancel = context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := a.Drain(dctx, plan); err != nil {
		t.Fatal(err)
	}
	counts, _, err := l.Reconcile(true)
	if err != nil {
		t.Fatal(err)
	}
	if counts.Confirmed != n || counts.Delivered != n || counts.Lost != 0 {
		t.Fatalf("counts %+v: want all %d confirmed and delivered, none lost", counts, n)
	}
}
