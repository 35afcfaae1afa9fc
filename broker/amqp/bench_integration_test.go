package amqp

// TestPublisherVersusBareClient measures what rmqtorture's own publishing
// and draining cost against a minimal amqp091-go client doing the same work
// on the same broker, in one process: interleaved rounds (rmqtorture
// first in even rounds, the bare client first in odd ones, each on a fresh
// durable quorum queue deleted after it),
// and the ratio rmqtorture ÷ bare per round. It asserts only correctness
// (every message arrived, counts exact, the two clients sent the same
// messages), never a speed: timings on a shared host are noisy, and the
// ratios are printed for a reader (docs/reliability.md: Performance). It means nothing
// under the race detector and skips itself there (race_on_test.go);
// .ci/run runs it without -race.
//
//	go test -count=1 -run '^TestPublisherVersusBareClient$' -v ./broker
//	RMQT_BENCH_LONG=1 go test -count=1 -timeout 30m -run '^TestPublisherVersusBareClient$' -v ./broker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/rmqtorture/rmqtorture/broker/docker"
	"github.com/rmqtorture/rmqtorture/engine"
	"github.com/rmqtorture/rmqtorture/metrics"
	"github.com/rmqtorture/rmqtorture/scenario"
)

// benchSizes is how many interleaved rounds run and how many messages each
// side publishes or drains per round, per mode.
type benchSizes struct {
	rounds                       int
	window, each, ff, drainCount int
}

// benchLoad is the short form by default (about a minute with the
// broker's start), the long form with RMQT_BENCH_LONG=1. The number of
// rounds is even so that each side goes first in as many rounds as the
// other (alternate).
func benchLoad() benchSizes {
	if os.Getenv("RMQT_BENCH_LONG") == "1" {
		return benchSizes{rounds: 6, window: 100_000, each: 3_000, ff: 100_000, drainCount: 100_000}
	}
	return benchSizes{rounds: 2, window: 20_000, each: 2_000, ff: 20_000, drainCount: 20_000}
}

// benchPrefix is the message_id prefix of both clients' orders, so that
// order seq has the same id, and so the same body, on either side.
const benchPrefix = "bench-"

// benchWindow is confirm-window's window (scenario baseline's load.window).
const benchWindow = 1000

// benchDepthPoll is the interval of the queue-depth polls that time
// fire-and-forget (how fast the queue took the messages in).
const benchDepthPoll = 5 * time.Millisecond

// benchDrainIdle is the drain's idle wait (drain.idle, 2 s by default):
// shorter than the default to keep the benchmark short; it ends the drain
// after the last delivery, outside the time measured.
const benchDrainIdle = 300 * time.Millisecond

// benchRow is one mode's measured samples, per round.
type benchRow struct {
	what       string
	ours, bare []benchSample
}

// benchSample is one side's measure in one round: its rate in msg/s and
// the CPU time the whole test process used meanwhile, in seconds per
// 100,000 messages (getrusage user + system; the only other work in the
// process then is the depth poll in fire-and-forget, which both sides
// run).
type benchSample struct {
	rate, cpu float64
}

// sample is n messages' benchSample over took, with CPU used since cpu0.
func sample(t *testing.T, n int, took time.Duration, cpu0 time.Duration) benchSample {
	return benchSample{rate: metrics.Rate(n, took), cpu: (cpuNow(t) - cpu0).Seconds() / float64(n) * 100_000}
}

func TestPublisherVersusBareClient(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: needs Docker and the broker image")
	}
	if raceDetector {
		t.Skip("timings under the race detector mean nothing: run it without -race (.ci/run does)")
	}
	_, c := startBroker(t)
	b := &bench{t: t, c: c, a: &Traffic{URL: c.URL, Log: quiet}, ctx: context.Background()}
	sz := benchLoad()
	t.Logf("%s, %s; quorum queue, persistent, mandatory, one connection and one publisher each side; %d interleaved rounds",
		c.ServerVersion(), testImage(), sz.rounds)

	var rows []benchRow
	for _, m := range []struct {
		mode scenario.Mode
		n    int
	}{{scenario.ConfirmWindow, sz.window}, {scenario.ConfirmEach, sz.each}, {scenario.FireAndForget, sz.ff}} {
		row := benchRow{what: fmt.Sprintf("%s, %d msgs", m.mode, m.n)}
		if m.mode == scenario.ConfirmWindow {
			row.what = fmt.Sprintf("%s(%d), %d msgs", m.mode, benchWindow, m.n)
		}
		if m.mode == scenario.FireAndForget {
			row.what += " (rate into the queue)"
		}
		for r := range sz.rounds {
			ours, bare := b.queue(m.mode, r, "rmqt"), b.queue(m.mode, r, "bare")
			alternate(r, func() { row.ours = append(row.ours, b.oursPublish(m.mode, m.n, ours)) },
				func() { row.bare = append(row.bare, b.barePublish(m.mode, m.n, bare)) })
			b.sameMessages(ours, bare)
			b.t.Logf("%s: round %d: rmqtorture %.0f msg/s (CPU %.2f s/100k), bare %.0f msg/s (%.2f s/100k)", row.what, r+1, row.ours[r].rate, row.ours[r].cpu, row.bare[r].rate, row.bare[r].cpu)
			b.delete(ours)
			b.delete(bare)
		}
		rows = append(rows, row)
	}
	row := benchRow{what: fmt.Sprintf("drain, %d msgs, prefetch %d", sz.drainCount, 2*drainAckEvery)}
	for r := range sz.rounds {
		ours, bare := b.queue("drain", r, "rmqt"), b.queue("drain", r, "bare")
		alternate(r, func() { row.ours = append(row.ours, b.oursDrain(sz.drainCount, ours)) },
			func() { row.bare = append(row.bare, b.bareDrain(sz.drainCount, bare)) })
		b.t.Logf("%s: round %d: rmqtorture %.0f msg/s (CPU %.2f s/100k), bare %.0f msg/s (%.2f s/100k)", row.what, r+1, row.ours[r].rate, row.ours[r].cpu, row.bare[r].rate, row.bare[r].cpu)
		b.delete(ours)
		b.delete(bare)
	}
	rows = append(rows, row)
	t.Log("\n" + benchTable(rows))
}

// alternate runs round r's two sides, rmqtorture first in even rounds and
// the bare client first in odd ones, each after benchSettle: the side that
// goes first meets the broker just after the previous side's load (its
// queue still being written out and deleted), which measured up to 19%
// slower in fire-and-forget; settling and an even number of rounds give
// neither side that handicap more often.
func alternate(r int, ours, bare func()) {
	first, second := ours, bare
	if r%2 == 1 {
		first, second = bare, ours
	}
	time.Sleep(benchSettle)
	first()
	time.Sleep(benchSettle)
	second()
}

// benchSettle is the pause before each side's measure.
const benchSettle = time.Second

// bench holds the broker both clients use.
type bench struct {
	t   *testing.T
	c   *docker.Container
	a   *Traffic
	ctx context.Context
}

// queue names round r's queue for one side (who: rmqt or bare).
func (b *bench) queue(what scenario.Mode, r int, who string) string {
	return fmt.Sprintf("rmqt.bench.%s.%d.%s", what, r, who)
}

// declare declares queue as a run does: a durable quorum queue bound to
// Exchange with its own name.
func (b *bench) declare(queue string) {
	b.t.Helper()
	if err := b.a.Declare(b.ctx, engine.QueueSpec{Name: queue, Type: scenario.Quorum, Durable: true}); err != nil {
		b.t.Fatal(err)
	}
}

func (b *bench) delete(queue string) {
	b.t.Helper()
	if err := b.a.Delete(b.ctx, queue); err != nil {
		b.t.Fatal(err)
	}
}

// benchScenario is the baseline scenario's settings (quorum, persistent,
// window 1000, every other setting its default) for n messages.
func benchScenario(t *testing.T, n int) *scenario.Scenario {
	t.Helper()
	y := fmt.Sprintf("version: 1\nscenarios:\n  - name: bench\n    queue: {type: quorum}\n    load: {messages: %d, window: %d}\n", n, benchWindow)
	f, err := scenario.Parse("bench.yaml", []byte(y))
	if err != nil {
		t.Fatal(err)
	}
	return &f.Scenarios[0]
}

// benchPlan is the publish plan the engine builds for mode m of s
// (engine/plans.go publishPlan, engine/runner.go newBurst and publish):
// a ledger, latency histogram, timeline and series, on a fresh queue.
func benchPlan(s *scenario.Scenario, m scenario.Mode, queue string, start time.Time) engine.PublishPlan {
	window := 0
	switch m {
	case scenario.ConfirmEach:
		window = 1
	case scenario.ConfirmWindow:
		window = s.Load.Window
	}
	ledger := metrics.NewLedger(benchPrefix, s.Load.Messages)
	ledger.Attach(metrics.NewSeries(start, metrics.DefaultBucket))
	return engine.PublishPlan{
		Queue: queue, Mode: m, Messages: s.Load.Messages, Window: window,
		ConfirmTimeout: s.Load.ConfirmTimeout.D(), Republish: s.Load.Republish,
		ReconnectTimeout: s.Load.ReconnectTimeout.D(),
		StallTimeout:     s.Load.StallTimeout.D(), Heartbeat: s.Load.Heartbeat.D(),
		ListenerBuffer: s.Load.ConfirmListenerBuffer, Transient: !s.Load.IsPersistent(), Publishers: s.Load.Publishers,
		ChannelsPerConnection: s.Load.ChannelsPerConnection, OnConfirmTimeout: s.Load.OnConfirmTimeout,
		Ledger: ledger, Latency: metrics.NewLatency(), Timeline: metrics.NewTimeline(start),
		OnPublished: func(int, int) {},
	}
}

// oursPublish publishes n orders in mode m to a fresh queue through
// AMQP.Publish, checks that all n are in the queue, and returns the rate in
// msg/s: from the call to its return in the confirm modes (every message
// confirmed), from the call to the queue holding all n in fire-and-forget.
func (b *bench) oursPublish(m scenario.Mode, n int, queue string) benchSample {
	b.t.Helper()
	s := benchScenario(b.t, n)
	b.declare(queue)
	var in <-chan depthReached
	if m == scenario.FireAndForget {
		in = b.watchDepth(queue, n)
	}
	plan := benchPlan(s, m, queue, time.Now()) // the engine builds it before the burst
	cpu0, start := cpuNow(b.t), time.Now()
	st, err := b.a.Publish(b.ctx, plan)
	took := time.Since(start)
	if err != nil {
		b.t.Fatalf("rmqtorture %s: %v", m, err)
	}
	if st.Publishes != n || st.Reconnects != 0 || (m.ConfirmMode() && st.Acked != n) {
		b.t.Fatalf("rmqtorture %s: %d publishes, %d basic.acks, %d reconnects; want %d, %d, 0", m, st.Publishes, st.Acked, st.Reconnects, n, n)
	}
	if in != nil {
		took = b.reached(in).Sub(start)
	}
	got := sample(b.t, n, took, cpu0)
	b.waitDepth(queue, n)
	return got
}

// barePublish is oursPublish for the bare client (barePublish).
func (b *bench) barePublish(m scenario.Mode, n int, queue string) benchSample {
	b.t.Helper()
	b.declare(queue)
	var in <-chan depthReached
	if m == scenario.FireAndForget {
		in = b.watchDepth(queue, n)
	}
	cpu0, start := cpuNow(b.t), time.Now()
	acked, err := barePublish(b.ctx, b.c.URL(), queue, m, n)
	took := time.Since(start)
	if err != nil {
		b.t.Fatalf("bare %s: %v", m, err)
	}
	if m.ConfirmMode() && acked != n {
		b.t.Fatalf("bare %s: %d basic.acks, want %d", m, acked, n)
	}
	if in != nil {
		took = b.reached(in).Sub(start)
	}
	got := sample(b.t, n, took, cpu0)
	b.waitDepth(queue, n)
	return got
}

// barePublish is a minimal amqp091-go publisher: one connection, one
// channel, orders 0…n-1 to Exchange with routing key queue, mandatory,
// persistent, with the same body and properties as rmqtorture's publisher
// (publishing: application/json, message_id, timestamp, and in the confirm
// modes the attempt header, 1). In the confirm modes it keeps up to the
// window (1 for confirm-each) unconfirmed and waits for each basic.ack in
// order; it returns the basic.acks received.
func barePublish(ctx context.Context, url, queue string, m scenario.Mode, n int) (acked int, err error) {
	conn, err := amqp.DialConfig(url, dialConfig("bench-bare"))
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		return 0, err
	}
	window := map[scenario.Mode]int{scenario.ConfirmEach: 1, scenario.ConfirmWindow: benchWindow}[m]
	var confirms chan amqp.Confirmation
	if window > 0 {
		if err := ch.Confirm(false); err != nil {
			return 0, err
		}
		confirms = ch.NotifyPublish(make(chan amqp.Confirmation, window))
	}
	inFlight := 0
	await := func() error {
		c, ok := <-confirms
		if !ok {
			return errors.New("channel closed with confirms pending")
		}
		if !c.Ack {
			return fmt.Errorf("basic.nack of delivery tag %d", c.DeliveryTag)
		}
		acked++
		inFlight--
		return nil
	}
	for seq := range n {
		if window > 0 && inFlight == window {
			if err := await(); err != nil {
				return acked, err
			}
		}
		id := benchPrefix + strconv.Itoa(seq)
		// No headers: rmqtorture sends its attempt header on republishes only.
		msg := amqp.Publishing{ContentType: "application/json", DeliveryMode: amqp.Persistent, MessageId: id, Timestamp: time.Now(), Body: bareBody(id, seq)}
		if err := ch.PublishWithContext(ctx, Exchange, queue, true, false, msg); err != nil {
			return acked, err
		}
		if window > 0 {
			inFlight++
		}
	}
	for inFlight > 0 {
		if err := await(); err != nil {
			return acked, err
		}
	}
	return acked, nil
}

// bareBody is order seq's JSON body as an application would build it,
// with encoding/json: byte for byte rmqtorture's (orderBody without a set
// size; TestBareBodyIsOrderBody, and sameMessages on the wire).
func bareBody(id string, seq int) []byte {
	b, _ := json.Marshal(Order{OrderID: id, SKU: fmt.Sprintf("SKU-%04d", seq%997), Quantity: 1 + seq%5, TotalCents: int64(499 + (seq%50)*100)})
	return b
}

// oursDrain fills a fresh queue with n orders (rmqtorture, confirm-window),
// drains it with AMQP.Drain as a run does (drain.lost_wait and
// drain.timeout defaults; stop once every confirmed id is delivered and the
// queue was idle for benchDrainIdle), checks the ledger's counts, and
// returns the rate in msg/s from the call to the last delivery: the idle
// wait that ends a drain is left out.
func (b *bench) oursDrain(n int, queue string) benchSample {
	b.t.Helper()
	s := benchScenario(b.t, n)
	ledger := b.fill(s, queue)
	var last time.Time
	d := engine.DrainPlan{Queue: queue, Ledger: ledger, Idle: benchDrainIdle, LostWait: s.Drain.LostWait.D(), Timeout: s.Drain.Timeout.D(),
		Satisfied: ledger.AllConfirmedDelivered, OnBody: func(int) { last = time.Now() }}
	ctx, cancel := context.WithTimeout(b.ctx, s.Drain.Timeout.D())
	defer cancel()
	cpu0, start := cpuNow(b.t), time.Now()
	if err := b.a.Drain(ctx, d); err != nil {
		b.t.Fatalf("rmqtorture drain: %v", err)
	}
	got := sample(b.t, n, last.Sub(start), cpu0)
	counts, _, err := ledger.Reconcile(true)
	if err != nil {
		b.t.Fatal(err)
	}
	if want := (metrics.Counts{Sent: n, Confirmed: n, Delivered: n, Deliveries: n}); counts != want {
		b.t.Fatalf("rmqtorture drain: counts %+v\nwant %+v", counts, want)
	}
	b.waitDepth(queue, 0)
	return got
}

// bareDrain is oursDrain for the bare consumer (bareConsume).
func (b *bench) bareDrain(n int, queue string) benchSample {
	b.t.Helper()
	b.fill(benchScenario(b.t, n), queue)
	ctx, cancel := context.WithTimeout(b.ctx, 2*time.Minute)
	defer cancel()
	cpu0, start := cpuNow(b.t), time.Now()
	last, deliveries, distinct, err := bareConsume(ctx, b.c.URL(), queue, n)
	if err != nil {
		b.t.Fatalf("bare drain: %v", err)
	}
	got := sample(b.t, n, last.Sub(start), cpu0)
	if deliveries != n || distinct != n {
		b.t.Fatalf("bare drain: %d deliveries of %d ids, want %d of %d", deliveries, distinct, n, n)
	}
	b.waitDepth(queue, 0)
	return got
}

// fill declares queue and publishes s's orders to it with rmqtorture's
// publisher in confirm-window; the ledger returned knows them all
// confirmed.
func (b *bench) fill(s *scenario.Scenario, queue string) *metrics.Ledger {
	b.t.Helper()
	b.declare(queue)
	plan := benchPlan(s, scenario.ConfirmWindow, queue, time.Now())
	if st, err := b.a.Publish(b.ctx, plan); err != nil || st.Acked != s.Load.Messages {
		b.t.Fatalf("fill %s: %d basic.acks of %d: %v", queue, st.Acked, s.Load.Messages, err)
	}
	b.waitDepth(queue, s.Load.Messages)
	return plan.Ledger
}

// bareConsume is a minimal amqp091-go consumer with the drain's settings:
// manual acks, prefetch 2×drainAckEvery, basic.ack with multiple every
// drainAckEvery delivery tags. It stops at the n-th delivery (acking what
// is left) and returns when that delivery arrived, how many deliveries
// there were and of how many distinct benchPrefix ids.
func bareConsume(ctx context.Context, url, queue string, n int) (last time.Time, deliveries, distinct int, err error) {
	conn, err := amqp.DialConfig(url, dialConfig("bench-bare-drain"))
	if err != nil {
		return last, 0, 0, err
	}
	defer conn.Close()
	defer context.AfterFunc(ctx, func() { conn.Close() })()
	ch, err := conn.Channel()
	if err != nil {
		return last, 0, 0, err
	}
	if err := ch.Qos(2*drainAckEvery, 0, false); err != nil {
		return last, 0, 0, err
	}
	msgs, err := ch.Consume(queue, "bench-bare-drain", false, false, false, false, nil)
	if err != nil {
		return last, 0, 0, err
	}
	seen := make([]bool, n)
	for deliveries < n {
		m, ok := <-msgs
		if !ok {
			return last, deliveries, distinct, fmt.Errorf("consumer closed after %d deliveries: %w", deliveries, ctx.Err())
		}
		deliveries++
		if seq, err := strconv.Atoi(strings.TrimPrefix(m.MessageId, benchPrefix)); err == nil && seq >= 0 && seq < n && !seen[seq] {
			seen[seq] = true
			distinct++
		}
		if m.DeliveryTag%drainAckEvery == 0 || deliveries == n {
			if err := ch.Ack(m.DeliveryTag, true); err != nil {
				return last, deliveries, distinct, err
			}
		}
	}
	return time.Now(), deliveries, distinct, nil
}

// depthReached is when a queue first held the messages watched for.
type depthReached struct {
	at  time.Time
	err error
}

// watchDepth polls queue's depth every benchDepthPoll on a connection of its
// own, from now until it holds n messages (within a minute), and sends when
// it did.
func (b *bench) watchDepth(queue string, n int) <-chan depthReached {
	out := make(chan depthReached, 1)
	ready := make(chan struct{})
	go func() {
		out <- pollDepth(b.c.URL(), queue, time.Minute, ready, func(got int) bool { return got >= n })
	}()
	<-ready // connected: the first poll is not part of the publisher's time
	return out
}

func (b *bench) reached(in <-chan depthReached) time.Time {
	b.t.Helper()
	r := <-in
	if r.err != nil {
		b.t.Fatal(r.err)
	}
	return r.at
}

// waitDepth waits (up to 30 s) until queue holds exactly n messages.
func (b *bench) waitDepth(queue string, n int) {
	b.t.Helper()
	if r := pollDepth(b.c.URL(), queue, 30*time.Second, nil, func(got int) bool { return got == n }); r.err != nil {
		b.t.Fatalf("want %d messages: %v", n, r.err)
	}
}

// pollDepth polls queue's depth (queue.declare passive) until done accepts
// it or within has passed; ready, when set, is closed once connected.
func pollDepth(url, queue string, within time.Duration, ready chan struct{}, done func(int) bool) depthReached {
	signal := func() {
		if ready != nil {
			close(ready)
			ready = nil
		}
	}
	defer signal()
	conn, err := amqp.DialConfig(url, dialConfig("bench-depth"))
	if err != nil {
		return depthReached{err: err}
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		return depthReached{err: err}
	}
	signal()
	deadline := time.Now().Add(within)
	got := -1
	for time.Now().Before(deadline) {
		q, err := ch.QueueDeclarePassive(queue, true, false, false, false, nil)
		if err != nil {
			return depthReached{err: err}
		}
		if got = q.Messages; done(got) {
			return depthReached{at: time.Now()}
		}
		time.Sleep(benchDepthPoll)
	}
	return depthReached{err: fmt.Errorf("queue %s holds %d messages after %s", queue, got, within)}
}

// sameMessages checks that the two clients sent the same message first:
// byte-identical body, same properties and headers (timestamps aside:
// each is its publish time).
func (b *bench) sameMessages(ours, bare string) {
	b.t.Helper()
	a, c := b.first(ours), b.first(bare)
	if a.Timestamp.IsZero() || c.Timestamp.IsZero() {
		b.t.Errorf("timestamps %v and %v: both must be set", a.Timestamp, c.Timestamp)
	}
	type props struct {
		Body                       string
		ContentType, MessageID     string
		DeliveryMode               uint8
		Headers                    amqp.Table
		Exchange, RoutingKeySuffix string
	}
	pa := props{string(a.Body), a.ContentType, a.MessageId, a.DeliveryMode, a.Headers, a.Exchange, strings.TrimPrefix(a.RoutingKey, ours)}
	pc := props{string(c.Body), c.ContentType, c.MessageId, c.DeliveryMode, c.Headers, c.Exchange, strings.TrimPrefix(c.RoutingKey, bare)}
	if !reflect.DeepEqual(pa, pc) || pa.MessageID != benchPrefix+"0" {
		b.t.Errorf("first messages differ:\nrmqtorture %+v\nbare       %+v", pa, pc)
	}
}

// first is queue's first message (basic.get, left unacknowledged: the
// queue is deleted next).
func (b *bench) first(queue string) amqp.Delivery {
	b.t.Helper()
	var d amqp.Delivery
	err := b.a.withChannel(b.ctx, "bench-get", func(ch *amqp.Channel) error {
		var ok bool
		var err error
		if d, ok, err = ch.Get(queue, false); err == nil && !ok {
			err = errors.New("empty")
		}
		return err
	})
	if err != nil {
		b.t.Fatalf("basic.get %s: %v", queue, err)
	}
	return d
}

// benchTable renders each row's rates and CPU per round and the ratio
// rmqtorture ÷ bare per round, with its min, median and max, and the
// median CPU of either side in s per 100,000 messages.
func benchTable(rows []benchRow) string {
	var sb strings.Builder
	for _, r := range rows {
		fmt.Fprintf(&sb, "%s\n  round  rmqtorture msg/s  bare msg/s  rmqtorture÷bare  CPU s/100k rmqtorture  bare\n", r.what)
		ratios := make([]float64, len(r.ours))
		oursCPU, bareCPU := make([]float64, len(r.ours)), make([]float64, len(r.ours))
		for i := range r.ours {
			ratios[i] = r.ours[i].rate / r.bare[i].rate
			oursCPU[i], bareCPU[i] = r.ours[i].cpu, r.bare[i].cpu
			fmt.Fprintf(&sb, "  %5d  %16.0f  %10.0f  %15.3f  %21.2f  %4.2f\n", i+1, r.ours[i].rate, r.bare[i].rate, ratios[i], oursCPU[i], bareCPU[i])
		}
		lo, mid, hi := ratioSpread(ratios)
		_, oc, _ := ratioSpread(oursCPU)
		_, bc, _ := ratioSpread(bareCPU)
		fmt.Fprintf(&sb, "  ratio min %.3f  median %.3f  max %.3f; CPU median %.2f vs %.2f s/100k\n", lo, mid, hi, oc, bc)
	}
	return sb.String()
}

// ratioSpread is the min, median and max of xs (the mean of the middle two
// for an even count); zeros for none.
func ratioSpread(xs []float64) (lo, mid, hi float64) {
	if len(xs) == 0 {
		return 0, 0, 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	k := len(s) / 2
	mid = s[k]
	if len(s)%2 == 0 {
		mid = (s[k-1] + s[k]) / 2
	}
	return s[0], mid, s[len(s)-1]
}

func TestRatioSpread(t *testing.T) {
	for _, tc := range []struct {
		xs          []float64
		lo, mid, hi float64
	}{
		{nil, 0, 0, 0},
		{[]float64{0.9}, 0.9, 0.9, 0.9},
		{[]float64{1.2, 0.8, 1.0}, 0.8, 1.0, 1.2},
		{[]float64{1.5, 0.5, 1.0, 0.75}, 0.5, 0.875, 1.5},
	} {
		if lo, mid, hi := ratioSpread(tc.xs); lo != tc.lo || mid != tc.mid || hi != tc.hi {
			t.Errorf("ratioSpread(%v) = %v %v %v, want %v %v %v", tc.xs, lo, mid, hi, tc.lo, tc.mid, tc.hi)
		}
	}
}

func TestBareBodyIsOrderBody(t *testing.T) {
	for _, seq := range []int{0, 1, 996, 997, 1001, 99_999} {
		id := benchPrefix + strconv.Itoa(seq)
		if want, _ := OrderBody(id, seq, 0, false); string(bareBody(id, seq)) != string(want) {
			t.Errorf("order %d: bare body %s, rmqtorture's %s", seq, bareBody(id, seq), want)
		}
	}
}
