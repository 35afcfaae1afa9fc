package amqp

import (
	"context"
	"testing"
	"time"

	"github.com/rmqtorture/rmqtorture/broker/docker"
	"github.com/rmqtorture/rmqtorture/engine"
	"github.com/rmqtorture/rmqtorture/metrics"
	"github.com/rmqtorture/rmqtorture/scenario"
)

// publishNoFault runs one burst against a healthy broker and reconciles it.
func publishNoFault(t *testing.T, c *docker.Container, mode scenario.Mode, queue string, n, window int, declare bool) metrics.Counts {
	t.Helper()
	ctx := context.Background()
	a := &Traffic{URL: c.URL, Log: quiet}
	name := "rmqt.it." + string(mode)
	if declare {
		if err := a.Declare(ctx, engine.QueueSpec{Name: name, Type: scenario.Quorum, Durable: true}); err != nil {
			t.Fatal(err)
		}
	}
	if queue == "" {
		queue = name
	}
	l := metrics.NewLedger("it-", n)
	tl := metrics.NewTimeline(time.Now())
	st, err := a.Publish(ctx, engine.PublishPlan{
		Queue: queue, Mode: mode, Messages: n, Window: window, TxSize: window, ConfirmTimeout: 10 * time.Second,
		Republish: scenario.RepublishInDoubt, ReconnectTimeout: 10 * time.Second,
		Ledger: l, Latency: metrics.NewLatency(), Timeline: tl, OnPublished: func(int, int) {},
	})
	if err != nil {
		t.Fatal(err)
	}
	if st.Publishes != n || st.Reconnects != 0 {
		t.Fatalf("stats %+v", st)
	}
	if declare {
		dctx, cancel := context.WithTimeout(ctx, 60*time.Second)
		defer cancel()
		if err := a.Drain(dctx, engine.DrainPlan{Queue: name, Ledger: l, Idle: 500 * time.Millisecond, LostWait: 5 * time.Second, Satisfied: l.AllConfirmedDelivered}); err != nil {
			t.Fatal(err)
		}
	}
	counts, _, err := l.Reconcile(true)
	if err != nil {
		t.Fatal(err)
	}
	return counts
}

func TestPublishModesWithoutFaultsDeliverEverythingOnce(t *testing.T) {
	_, c := startBroker(t)
	const n = 3000
	for _, tc := range []struct {
		mode   scenario.Mode
		window int
		want   metrics.Counts
	}{
		{scenario.FireAndForget, 0, metrics.Counts{Sent: n, UnconfirmedDelivered: n, Delivered: n, Deliveries: n}},
		{scenario.ConfirmEach, 1, metrics.Counts{Sent: n, Confirmed: n, Delivered: n, Deliveries: n}},
		{scenario.ConfirmWindow, 256, metrics.Counts{Sent: n, Confirmed: n, Delivered: n, Deliveries: n}},
		{scenario.Transactional, 50, metrics.Counts{Sent: n, Confirmed: n, Delivered: n, Deliveries: n}},
	} {
		t.Run(string(tc.mode), func(t *testing.T) {
			if got := publishNoFault(t, c, tc.mode, "", n, tc.window, true); got != tc.want {
				t.Fatalf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

// With mandatory set, an unroutable message comes back as basic.return before
// its basic.ack: it must count as returned, never as confirmed (or lost).
func TestUnroutableMandatoryIsReturnedNotConfirmed(t *testing.T) {
	_, c := startBroker(t)
	a := &Traffic{URL: c.URL, Log: quiet}
	// The exchange exists, nothing is bound with this routing key.
	if err := a.Declare(context.Background(), engine.QueueSpec{Name: "rmqt.it.bound", Type: scenario.Classic, Durable: true}); err != nil {
		t.Fatal(err)
	}
	const n = 500
	// Transactional, 64 per commit: RabbitMQ routes at tx.commit and sends
	// each basic.return before the commit-ok.
	for _, mode := range []scenario.Mode{scenario.ConfirmWindow, scenario.ConfirmEach, scenario.FireAndForget, scenario.Transactional} {
		got := publishNoFault(t, c, mode, "rmqt.it.unbound", n, 64, false)
		want := metrics.Counts{Sent: n, Returned: n}
		if got != want {
			t.Errorf("%s: got %+v, want %+v", mode, got, want)
		}
	}
}

// load.rate paces publish calls: 600 orders at 1,500 msg/s cannot take less
// than 0.4 s (the schedule spaces calls 667 µs apart, the first at once).
func TestRateLimitPacesPublishing(t *testing.T) {
	_, c := startBroker(t)
	a := &Traffic{URL: c.URL, Log: quiet}
	ctx := context.Background()
	if err := a.Declare(ctx, engine.QueueSpec{Name: "rmqt.it.rate", Type: scenario.Classic, Durable: true}); err != nil {
		t.Fatal(err)
	}
	l := metrics.NewLedger("rate-", 600)
	start := time.Now()
	st, err := a.Publish(ctx, engine.PublishPlan{
		Queue: "rmqt.it.rate", Mode: scenario.ConfirmWindow, Messages: 600, Window: 100, ConfirmTimeout: 10 * time.Second,
		Republish: scenario.RepublishInDoubt, ReconnectTimeout: 10 * time.Second, Rate: 1500, StallTimeout: 10 * time.Second,
		Ledger: l, Latency: metrics.NewLatency(), Timeline: metrics.NewTimeline(start), OnPublished: func(int, int) {},
	})
	if err != nil {
		t.Fatal(err)
	}
	if took := st.LastPublish.Sub(start); st.Publishes != 600 || took < 399*time.Millisecond {
		t.Fatalf("%d publishes in %s: the limit of 1,500 msg/s was not kept", st.Publishes, took)
	}
}
