package amqp

import (
	"context"
	"errors"
	"net"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/rmqtorture/rmqtorture/broker/docker"
	"github.com/rmqtorture/rmqtorture/broker/internal/amqpx"
	"github.com/rmqtorture/rmqtorture/engine"
	"github.com/rmqtorture/rmqtorture/metrics"
	"github.com/rmqtorture/rmqtorture/scenario"
)

// A queue full with x-overflow reject-publish basic.nacks every further
// publish (https://www.rabbitmq.com/docs/maxlength#overflow-behaviour).
// Under republish: nacked-and-in-doubt each nacked id is published again
// until it has had scenario.NackRepublishLimit attempts, then stays
// nacked: of 300 orders to a queue of at most 100, ids 0–99 are confirmed
// (nothing is nacked before the queue is full, and a republish goes out
// before any fresh id), ids 100–299 nacked ten times each.
func TestNackedRepublishedUntilTheLimit(t *testing.T) {
	_, c := startBroker(t)
	ctx := context.Background()
	a := &Traffic{URL: c.URL, Log: quiet}
	const n, limit, republished = 300, 100, 200 * (scenario.NackRepublishLimit - 1)
	for _, tc := range []struct {
		mode   scenario.Mode
		window int
	}{{scenario.ConfirmWindow, 50}, {scenario.ConfirmEach, 1}} {
		t.Run(string(tc.mode), func(t *testing.T) {
			name := "rmqt.it.nacked." + string(tc.mode)
			if err := a.Declare(ctx, engine.QueueSpec{Name: name, Type: scenario.Classic, Durable: true,
				Arguments: map[string]any{"x-max-length": limit, "x-overflow": "reject-publish"}}); err != nil {
				t.Fatal(err)
			}
			l := metrics.NewLedger("nk-", n)
			tl := metrics.NewTimeline(time.Now())
			st, err := a.Publish(ctx, engine.PublishPlan{
				Queue: name, Mode: tc.mode, Messages: n, Window: tc.window, ConfirmTimeout: 10 * time.Second,
				Republish: scenario.RepublishNackedAndInDoubt, ReconnectTimeout: 10 * time.Second,
				Ledger: l, Latency: metrics.NewLatency(), Timeline: tl, OnPublished: func(int, int) {},
			})
			if err != nil {
				t.Fatal(err)
			}
			if st.Publishes != n+republished || st.Acked != limit || st.Reconnects != 0 {
				t.Fatalf("stats: %d publishes, %d basic.acks, %d reconnects; want %d, %d, 0\ntimeline: %+v", st.Publishes, st.Acked, st.Reconnects, n+republished, limit, tl.Events())
			}
			dctx, cancel := context.WithTimeout(ctx, 60*time.Second)
			defer cancel()
			if err := a.Drain(dctx, engine.DrainPlan{Queue: name, Ledger: l, Idle: 500 * time.Millisecond, LostWait: 5 * time.Second, Satisfied: l.AllConfirmedDelivered}); err != nil {
				t.Fatal(err)
			}
			got, ids, err := l.Reconcile(true)
			if err != nil {
				t.Fatal(err)
			}
			want := metrics.Counts{Sent: n, Confirmed: limit, Nacked: n - limit, WentNacked: n - limit, Republished: republished,
				Delivered: limit, Deliveries: limit}
			if got != want || !reflect.DeepEqual(ids.Nacked, []metrics.Range{{First: limit, Last: n - 1}}) {
				t.Fatalf("got  %+v\nwant %+v\nnacked ids %v", got, want, ids.Nacked)
			}
		})
	}
}

// Declare goes through the node the spec names, and only that one: with
// node 2 unreachable, a queue placed there is not declared anywhere else,
// and its companion placed there fails after the queue itself was
// declared through node 1. With both "nodes" reachable (the one broker
// twice), the queue and its companion are declared apart and both bound:
// a publish lands in each.
func TestDeclareThroughTheQueuesNodes(t *testing.T) {
	_, c := startBroker(t)
	ctx := context.Background()
	closed := closedPortURL(t, c.URL())
	down := &Traffic{URL: c.URL, Log: quiet, URLs: func() []string { return []string{c.URL(), closed} }}
	spec := engine.QueueSpec{Name: "rmqt.it.node2", Type: scenario.Classic, Durable: true, Node: 2}
	if err := down.Declare(ctx, spec); err == nil || !strings.Contains(err.Error(), "rmq2: ") {
		t.Fatalf("declare through an unreachable rmq2: %v", err)
	}
	if n, err := queueDepth(c, spec.Name); !isNotFound(err) {
		t.Fatalf("queue %s: %d messages, %v; want it never declared", spec.Name, n, err)
	}
	spec = engine.QueueSpec{Name: "rmqt.it.also2", Type: scenario.Classic, Durable: true, Node: 1, AlsoBindType: scenario.Classic, AlsoBindNode: 2}
	if err := down.Declare(ctx, spec); err == nil || !strings.Contains(err.Error(), "rmq2: ") {
		t.Fatalf("companion through an unreachable rmq2: %v", err)
	}
	if _, err := queueDepth(c, spec.Name); err != nil {
		t.Fatalf("queue %s declared through rmq1: %v", spec.Name, err)
	}

	up := &Traffic{URL: c.URL, Log: quiet, URLs: func() []string { return []string{c.URL(), c.URL()} }}
	spec = engine.QueueSpec{Name: "rmqt.it.apart", Type: scenario.Classic, Durable: true, Node: 2, AlsoBindType: scenario.Classic, AlsoBindNode: 1}
	if err := up.Declare(ctx, spec); err != nil {
		t.Fatal(err)
	}
	if err := up.withChannel(ctx, "it", func(ch *amqp.Channel) error {
		return ch.PublishWithContext(ctx, Exchange, spec.Name, true, false, amqp.Publishing{Body: []byte("x")})
	}); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{spec.Name, spec.Name + ".also"} {
		deadline := time.Now().Add(5 * time.Second)
		for {
			n, err := queueDepth(c, q)
			if err == nil && n == 1 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("queue %s: %d messages (%v), want 1", q, n, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}

// closedPortURL is u with its port replaced by one nothing listens on.
func closedPortURL(t *testing.T, u string) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	p, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	p.Host = addr
	return p.String()
}

// queueDepth is queue's message count (a passive declare).
func queueDepth(c *docker.Container, queue string) (int, error) {
	conn, err := amqp.DialConfig(c.URL(), dialConfig("it-depth"))
	if err != nil {
		return 0, err
	}
	defer amqpx.CloseConn(conn)
	ch, err := conn.Channel()
	if err != nil {
		return 0, err
	}
	q, err := ch.QueueDeclarePassive(queue, true, false, false, false, nil)
	return q.Messages, err
}

func isNotFound(err error) bool {
	var ae *amqp.Error
	return errors.As(err, &ae) && ae.Code == amqp.NotFound
}
