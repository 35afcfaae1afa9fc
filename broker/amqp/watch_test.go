package amqp

import (
	"context"
	"fmt"
	"net"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/rmqtorture/rmqtorture/broker/internal/brokertest"
	"github.com/rmqtorture/rmqtorture/engine"
	"github.com/rmqtorture/rmqtorture/metrics"
	"github.com/rmqtorture/rmqtorture/scenario"
)

// bareWatcher is a watcher without a connection (amqpx.CloseConn ignores nil).
func bareWatcher(p *publisher) *watcher {
	return &watcher{p: p, s: testSession, closed: make(chan struct{}), done: make(chan struct{})}
}

func kinds(tl *metrics.Timeline) (out []metrics.Event) {
	for _, e := range tl.Events() {
		e.At, e.AtMS = time.Time{}, 0
		out = append(out, e)
	}
	return out
}

// The broker's close reason is recorded, typed with the session; a close
// by rmqtorture itself (nil error) records nothing.
func TestWatcherRecordsCloseReason(t *testing.T) {
	p := testPublisher(1, scenario.RepublishNone)
	w := bareWatcher(p)
	chClose, connClose := make(chan *amqp.Error, 1), make(chan *amqp.Error, 1)
	connClose <- &amqp.Error{Code: amqp.ConnectionForced, Reason: "CONNECTION_FORCED - shutdown", Server: true}
	w.wg.Add(1)
	w.closes(chClose, connClose)
	want := "connection closed by broker: 320 CONNECTION_FORCED - shutdown"
	if !reflect.DeepEqual(p.stats.ChannelCloses, []string{want}) {
		t.Errorf("closes %v", p.stats.ChannelCloses)
	}
	wantEv := []metrics.Event{{Kind: metrics.EvConnectionLost, Epoch: 7, Publisher: 2, Connection: 3, Detail: "epoch 7: " + want}}
	if got := kinds(p.p.Timeline); !reflect.DeepEqual(got, wantEv) {
		t.Errorf("events %+v, want %+v", got, wantEv)
	}
	q := testPublisher(1, scenario.RepublishNone)
	w = bareWatcher(q)
	close(chClose)
	w.wg.Add(1)
	w.closes(chClose, make(chan *amqp.Error))
	if len(q.stats.ChannelCloses) != 0 || len(q.p.Timeline.Events()) != 0 {
		t.Errorf("own close recorded: %v", q.stats.ChannelCloses)
	}
}

// A publish whose write failed (the broker killed under it) ends the epoch,
// and rmqtorture's close of the connection can beat amqp091-go's own
// shutdown, which carries the write error, so the listeners close without
// one: the write error is then the reason, worded as amqp091-go would have
// given it. amqp091-go's own errors and context errors are not kept, so a
// close by rmqtorture after them still records nothing; the first write
// error wins.
func TestWatcherWordsAFailedWriteWhoseCloseLostTheRace(t *testing.T) {
	for _, tc := range []struct {
		errs []error
		want []string
	}{
		{[]error{&net.OpError{Op: "write", Net: "tcp", Err: syscall.EPIPE}, &net.OpError{Op: "write", Net: "tcp", Err: syscall.ECONNRESET}},
			[]string{"connection lost: write tcp: broken pipe (socket closed by the peer during a write)"}},
		{[]error{amqp.ErrClosed, context.Canceled, fmt.Errorf("publish: %w", context.DeadlineExceeded)}, nil},
		{nil, nil},
	} {
		p := testPublisher(1, scenario.RepublishNone)
		w := bareWatcher(p)
		for _, err := range tc.errs {
			w.callFailed(err)
		}
		chClose := make(chan *amqp.Error)
		close(chClose)
		w.wg.Add(1)
		w.closes(chClose, make(chan *amqp.Error))
		if !reflect.DeepEqual(p.stats.ChannelCloses, tc.want) {
			t.Errorf("after %v: closes %q, want %q", tc.errs, p.stats.ChannelCloses, tc.want)
		}
	}
}

// connection.blocked/unblocked: one blocked interval per pair, repeated
// notifications ignored, time accounted also when the connection closes
// while blocked.
func TestWatcherBlockedTime(t *testing.T) {
	p := testPublisher(1, scenario.RepublishNone)
	w := bareWatcher(p)
	blocks := make(chan amqp.Blocking, 8)
	blocks <- amqp.Blocking{Active: true, Reason: "low on memory"}
	blocks <- amqp.Blocking{Active: true, Reason: "low on memory"}
	w.wg.Add(1)
	go w.blocks(blocks)
	// The blocked interval starts when the watcher reads the notification:
	// wait for its event, so the 20 ms below are all blocked time.
	for deadline := time.Now().Add(5 * time.Second); len(p.p.Timeline.Events()) == 0; {
		if time.Now().After(deadline) {
			t.Fatal("no blocked event recorded")
		}
		time.Sleep(time.Millisecond)
	}
	time.Sleep(20 * time.Millisecond)
	blocks <- amqp.Blocking{Active: false}
	blocks <- amqp.Blocking{Active: true, Reason: "low on disk"}
	close(blocks)
	w.wg.Wait()
	if p.stats.BlockedMS < 20 {
		t.Errorf("blocked %.1f ms, want at least 20", p.stats.BlockedMS)
	}
	var got []string
	for _, e := range kinds(p.p.Timeline) {
		if e.Epoch != 7 || e.Publisher != 2 {
			t.Errorf("untyped event %+v", e)
		}
		got = append(got, string(e.Kind)+": "+e.Detail)
	}
	want := []string{"blocked: epoch 7: low on memory", "unblocked: epoch 7", "blocked: epoch 7: low on disk"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("events %q, want %q", got, want)
	}
}

// A confirm older than the confirm timeout ends the connection; so does a
// publish call stuck that long; an idle connection is one client stall.
func TestWatcherDeadlines(t *testing.T) {
	for _, c := range []struct {
		name   string
		setup  func(w *watcher)
		detail string
	}{
		{"confirm", func(w *watcher) {
			w.oldest = func() (time.Time, bool) { return time.Now().Add(-time.Second), true }
		}, "epoch 7: no confirm within 40ms: closing the connection, its pending messages are in doubt"},
		{"call", func(w *watcher) { w.inCall.Store(time.Now().Add(-time.Second).UnixNano()) },
			"epoch 7: a publish call was stuck for 40ms: closing the connection"},
	} {
		p := testPublisher(1, scenario.RepublishNone)
		p.p.ConfirmTimeout, p.p.StallTimeout = 40*time.Millisecond, time.Hour
		w := bareWatcher(p)
		c.setup(w)
		w.wg.Add(1)
		w.deadlines() // returns once it has closed the connection
		if got := kinds(p.p.Timeline); len(got) != 1 || got[0].Kind != metrics.EvConnectionLost || got[0].Detail != c.detail || got[0].Publisher != 2 {
			t.Errorf("%s: events %+v", c.name, got)
		}
	}
	p := testPublisher(1, scenario.RepublishNone)
	p.p.ConfirmTimeout, p.p.StallTimeout = 40*time.Millisecond, 20*time.Millisecond
	w := bareWatcher(p)
	w.lastCall.Store(time.Now().Add(-time.Second).UnixNano())
	w.wg.Add(1)
	go w.deadlines()
	time.Sleep(150 * time.Millisecond)
	w.stopDeadlines()
	w.wg.Wait()
	ev := kinds(p.p.Timeline)
	if p.stats.Stalls != 1 || len(ev) != 1 || ev[0].Kind != metrics.EvStall || ev[0].Epoch != 7 {
		t.Errorf("stalls %d, events %+v: want one stall", p.stats.Stalls, ev)
	}
}

// closedPort returns a URL nothing listens on (brokertest.ClosedPort).
func closedPort(t *testing.T) string { return brokertest.ClosedPort(t) }

// Without a broker: the publisher gives up after its reconnect timeout,
// the drain at its deadline, the live consumers stop when asked, and
// setup calls fail with the dial error.
func TestNoBroker(t *testing.T) {
	url := closedPort(t)
	a := &Traffic{URL: func() string { return url }, Log: quiet}
	ledger := metrics.NewLedger("n-", 2)
	plan := engine.PublishPlan{Queue: "q", Mode: scenario.ConfirmWindow, Messages: 2, Window: 2, ConfirmTimeout: time.Second,
		ReconnectTimeout: 100 * time.Millisecond, Ledger: ledger, Latency: metrics.NewLatency(), Timeline: metrics.NewTimeline(time.Now())}
	if _, err := a.Publish(context.Background(), plan); err == nil || ledger.Sent() != 0 {
		t.Errorf("publish without a broker: %v, %d sent", err, ledger.Sent())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if err := a.Drain(ctx, engine.DrainPlan{Queue: "q", Ledger: ledger}); err == nil {
		t.Error("drain without a broker succeeded")
	}
	if err := a.Declare(context.Background(), engine.QueueSpec{Name: "q"}); err == nil {
		t.Error("declare without a broker succeeded")
	}
	if err := a.Delete(context.Background(), "q"); err == nil {
		t.Error("delete without a broker succeeded")
	}
	lc, err := a.Consume(context.Background(), engine.ConsumePlan{Queue: "q", Ledger: ledger, Timeline: plan.Timeline,
		Consumers: scenario.Consumers{Count: 2, Prefetch: 10}})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	st := lc.Stop()
	if st.Count != 2 || st.Deliveries != 0 || len(st.Errors) == 0 || !lc.LastDelivery().IsZero() {
		t.Errorf("consumer stats %+v", st)
	}
}

// A lost socket is worded as observed, not as the client's act: amqp091-go
// reports it as its own 501 FRAME_ERROR with the socket error as text. A
// broker fault in effect is named in every close reason.
func TestCloseReason(t *testing.T) {
	for _, c := range []struct {
		err      amqp.Error
		fault    scenario.Action
		inEffect bool
		want     string
	}{
		{amqp.Error{Code: amqp.FrameError, Reason: "EOF"}, scenario.Kill, true,
			"connection lost: EOF (socket closed by the peer) while the broker was being killed"},
		{amqp.Error{Code: amqp.FrameError, Reason: "EOF"}, "", false, "connection lost: EOF (socket closed by the peer)"},
		{amqp.Error{Code: amqp.FrameError, Reason: "read tcp 127.0.0.1:1->127.0.0.1:2: read: connection reset by peer"}, scenario.Stop, true,
			"connection lost: read tcp 127.0.0.1:1->127.0.0.1:2: read: connection reset by peer (socket reset by the peer) while the broker was being stopped"},
		{amqp.Error{Code: amqp.FrameError, Reason: "write tcp 127.0.0.1:1->127.0.0.1:2: write: broken pipe"}, "", false,
			"connection lost: write tcp 127.0.0.1:1->127.0.0.1:2: write: broken pipe (socket closed by the peer during a write)"},
		{amqp.Error{Code: amqp.FrameError, Reason: "read tcp 127.0.0.1:1->127.0.0.1:2: i/o timeout"}, scenario.Pause, true,
			"connection lost: read tcp 127.0.0.1:1->127.0.0.1:2: i/o timeout (nothing heard from the broker for 1.5 heartbeats) while the broker was paused"},
		{amqp.Error{Code: amqp.ConnectionForced, Reason: "CONNECTION_FORCED - shutdown", Server: true}, scenario.Restart, true,
			"connection closed by broker: 320 CONNECTION_FORCED - shutdown while the broker was being restarted"},
		{amqp.Error{Code: amqp.ChannelError, Reason: "channel/connection is not open"}, "", false, "connection closed by client: 504 channel/connection is not open"},
	} {
		if got := closeReason("connection", &c.err, c.fault, c.inEffect); got != c.want {
			t.Errorf("%+v: %q, want %q", c.err, got, c.want)
		}
	}
}

// While a broker fault is in effect, a publisher making no progress is the
// fault's effect (php-amqplib#787): one no-progress event naming the fault,
// no client stall. Once the fault is over, idle time counts from its end, and
// only a further stall timeout without progress is a client stall.
func TestWatcherNoStallWhileFaultInEffect(t *testing.T) {
	p := testPublisher(1, scenario.RepublishNone)
	p.p.ConfirmTimeout, p.p.StallTimeout = time.Hour, 60*time.Millisecond
	p.p.Faults = &engine.FaultState{}
	p.p.Faults.Begin(scenario.Pause)
	w := bareWatcher(p)
	w.lastCall.Store(time.Now().Add(-time.Second).UnixNano())
	stalled := false
	w.checkStall(time.Now(), &stalled)
	w.checkStall(time.Now(), &stalled) // recorded once per idle spell
	ev := kinds(p.p.Timeline)
	if p.stats.Stalls != 0 || len(ev) != 1 || ev[0].Kind != metrics.EvNoProgress || ev[0].Epoch != 7 || ev[0].Action != "pause" ||
		!strings.HasPrefix(ev[0].Detail, "epoch 7: no progress for 1") || !strings.HasSuffix(ev[0].Detail, " while the broker was paused: the fault's effect, not a client stall") {
		t.Fatalf("stalls %d, events %+v: want one no-progress event", p.stats.Stalls, ev)
	}
	p.p.Faults.End()
	w.checkStall(time.Now(), &stalled) // idle counts from the fault's end
	if p.stats.Stalls != 0 || stalled {
		t.Fatalf("stall right after the fault ended: stalls %d, stalled %v", p.stats.Stalls, stalled)
	}
	w.checkStall(time.Now().Add(100*time.Millisecond), &stalled)
	ev = kinds(p.p.Timeline)
	if p.stats.Stalls != 1 || len(ev) != 2 || ev[1].Kind != metrics.EvStall {
		t.Fatalf("stalls %d, events %+v: want a client stall a stall timeout after the fault", p.stats.Stalls, ev)
	}
}

// A live consumer's lost socket (the broker died) reads "connection lost",
// never "closed by client: 501"; the broker's own closes keep its code.
func TestConsumerCloseReason(t *testing.T) {
	for _, c := range []struct {
		what string
		err  amqp.Error
		want string
	}{
		{"connection", amqp.Error{Code: amqp.FrameError, Reason: "EOF"}, "consumer 2: connection lost: EOF (socket closed by the peer)"},
		{"channel", amqp.Error{Code: amqp.PreconditionFailed, Reason: "PRECONDITION_FAILED - unknown delivery tag 7", Server: true},
			"consumer 2: channel closed by broker: 406 PRECONDITION_FAILED - unknown delivery tag 7"},
	} {
		if got := consumerCloseReason(2, c.what, &c.err); got != c.want {
			t.Errorf("%+v: %q, want %q", c.err, got, c.want)
		}
	}
}

// A read timeout on a blocked connection is amqp091-go's own doing, and
// the reason says so with the blocked time, the heartbeat and the fault;
// any other close is not reworded.
func TestBlockedTimeoutReason(t *testing.T) {
	timeout := &amqp.Error{Code: amqp.FrameError, Reason: "read tcp 127.0.0.1:1->127.0.0.1:2: i/o timeout"}
	got, ok := blockedTimeoutReason(timeout, 31270*time.Millisecond, 0, scenario.MemoryAlarm, true)
	want := "connection ended by the client after 31.3s blocked by the broker: read tcp 127.0.0.1:1->127.0.0.1:2: i/o timeout (amqp091-go's heartbeat waits behind the blocked publish write, so its read deadline, 1.5 × load.heartbeat 10s, expired; what the socket still held is lost) while the broker was under a memory alarm"
	if !ok || got != want {
		t.Errorf("%q, want %q", got, want)
	}
	if got, _ := blockedTimeoutReason(timeout, time.Minute, 3*time.Second, "", false); !strings.HasPrefix(got, "connection ended by the client after 1m0s blocked") || !strings.Contains(got, "1.5 × load.heartbeat 3s, expired") || strings.Contains(got, " while ") {
		t.Errorf("%q", got)
	}
	for _, e := range []*amqp.Error{
		{Code: amqp.FrameError, Reason: "EOF"},
		{Code: amqp.ConnectionForced, Reason: "CONNECTION_FORCED - shutdown", Server: true},
	} {
		if got, ok := blockedTimeoutReason(e, time.Minute, 0, "", false); ok || got != "" {
			t.Errorf("%+v: %q", e, got)
		}
	}
}
