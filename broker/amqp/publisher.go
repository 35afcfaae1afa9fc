package amqp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	"golang.org/x/sync/errgroup"

	"github.com/rmqtorture/rmqtorture/broker/internal/amqpx"
	"github.com/rmqtorture/rmqtorture/broker/internal/traffic"
	"github.com/rmqtorture/rmqtorture/engine"
	"github.com/rmqtorture/rmqtorture/metrics"
	"github.com/rmqtorture/rmqtorture/scenario"
)

// Order is the JSON body of every message: a small, realistic order. Its
// OrderID is also the AMQP message_id.
type Order struct {
	OrderID    string `json:"order_id"`
	SKU        string `json:"sku"`
	Quantity   int    `json:"quantity"`
	TotalCents int64  `json:"total_cents"`
	Padding    string `json:"padding,omitempty"` // fills the body up to load.message_size_bytes
}

// padField is the JSON a non-empty Padding adds besides its value.
const padField = len(`,"padding":""`)

// OrderBody returns the body of order seq: its JSON, deterministic, ~90
// bytes; or, when exact, exactly size bytes (ruby-amqp/bunny#615): padded
// with the Padding field (trailing JSON whitespace when not even one
// character of it would fit), or the JSON cut to size below its own length,
// 0 included. isJSON is false for a cut body. Nothing reads the id from the
// body: it travels as message_id.
func OrderBody(id string, seq, size int, exact bool) (body []byte, isJSON bool) {
	return appendOrderBody(nil, id, seq, size, exact)
}

// marshalOrder is o's JSON; an Order of strings and numbers always encodes.
func marshalOrder(o Order) []byte {
	b, _ := json.Marshal(o)
	return b
}

// publisher publishes one burst, reconnecting after every connection loss.
// Bookkeeping rules (each one a public bug in some client):
//   - confirms are keyed by (epoch, delivery tag): tags restart at 1 on every
//     channel (metrics.ConfirmTracker);
//   - amqp091-go closes the NotifyPublish listener when the channel closes and
//     resolves nothing further: everything still pending then is in doubt,
//     never nacked (rabbitmq/amqp091-go#46);
//   - the listener is sized for the window and drained on its own goroutine,
//     with basic.return read first, since RabbitMQ sends a mandatory message's
//     basic.return before its basic.ack (streadway/amqp#254);
//   - every wait has its own deadline: the library checks contexts only
//     before a write.
type publisher struct {
	a       *Traffic
	p       engine.PublishPlan
	tracker *metrics.ConfirmTracker
	stats   engine.PublishStats
	statsMu sync.Mutex

	mu    sync.Mutex
	next  int   // next fresh sequence number
	retry []int // ids to publish again first (in doubt, or failed publish in fire-and-forget)
	// held counts ids taken but not yet tracked, handed off, put back or
	// dropped: a channel that finds nothing to take must not end a shared
	// connection while a sibling is about to publish on it.
	held atomic.Int64
	// settled is signalled whenever a confirm or an in-doubt settles
	// something: a broadcast that wakes every publisher waiting for the
	// last confirms or for in-doubt ids to republish.
	settled traffic.Signal
	// epochs numbers connections across all publishers: confirms are keyed
	// by (epoch, delivery tag), so epochs never repeat.
	epochs atomic.Int64
	// misroute is the plan's Misroute until it has been used once.
	misroute <-chan struct{}
	// firstTry is when the publisher first took each order (unix ns; 0 not
	// yet): the start of its message deadline. Nil without a deadline
	// (8 bytes an id: 80 MB at 10M ids).
	firstTry []atomic.Int64
	// sched is the rate or burst schedule (plan.Scheduled): publish call k
	// is due plan.DueAfter(k) after the first; nil without one.
	sched        *traffic.Pacer
	deliveryMode uint8
}

// Publish publishes orders plan.First … plan.Messages-1 in plan.Mode and returns what it
// measured; the ledger, latency histogram and timeline in the plan are
// filled as it goes. It returns nil once every order is published and, in
// confirm modes, settled (or left in doubt under republish: none); an error
// when it could not reconnect within plan.ReconnectTimeout; ctx's error when
// cancelled.
func (a *Traffic) Publish(ctx context.Context, plan engine.PublishPlan) (engine.PublishStats, error) {
	pub := &publisher{a: a, p: plan, tracker: metrics.NewConfirmTracker().ReportTo(plan.Ledger), misroute: plan.Misroute,
		deliveryMode: amqp.Persistent, next: plan.First}
	if plan.MessageDeadline > 0 {
		pub.firstTry = make([]atomic.Int64, plan.Messages)
	}
	if plan.Transient {
		pub.deliveryMode = amqp.Transient
	}
	if plan.Scheduled() {
		pub.sched = traffic.NewPacer(plan.Messages, plan.DueAfter)
	}
	var monitor *depthMonitor
	if plan.Mode == scenario.FireAndForget {
		monitor = startDepthMonitor(ctx, a, plan.Queue)
	}
	err := pub.run(ctx)
	if plan.MessageDeadline > 0 {
		now := time.Now()
		for seq := plan.First; seq < plan.Messages; seq++ {
			pub.markPastDeadline(now, seq)
		}
	}
	if monitor != nil {
		pub.stats.Absorbed, pub.stats.AbsorbedSpan = monitor.wait(plan.Timeline)
		pub.stats.AbsorbedRate = metrics.Rate(pub.stats.Absorbed, pub.stats.AbsorbedSpan)
	}
	return pub.stats, err
}

// run runs plan.Publishers publishers that share the burst: they take ids
// from one queue, republishes first. Publishers share connections
// plan.ChannelsPerConnection at a time (one connection each by default),
// each on its own channel. The first that cannot reconnect in time ends
// them all.
func (p *publisher) run(ctx context.Context) error {
	g, gctx := errgroup.WithContext(ctx)
	per, n := max(1, p.p.ChannelsPerConnection), max(1, p.p.Publishers)
	for first := 0; first < n; first += per {
		g.Go(func() error { return p.runOne(gctx, first, min(per, n-first)) })
	}
	err := g.Wait()
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}

// runOne is one connection's loop, for publishers first … first+channels-1,
// one channel each.
func (p *publisher) runOne(ctx context.Context, first, channels int) error {
	sessions := 0
	for !p.finished() {
		conn, node, err := p.connect(ctx, first)
		if err != nil {
			return err
		}
		sessions++
		if sessions > 1 {
			p.statsMu.Lock()
			p.stats.Reconnects++
			p.statsMu.Unlock()
		}
		err = p.channels(ctx, conn, first, channels, sessions, node)
		amqpx.CloseConn(conn)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil && !errors.Is(err, traffic.ErrEpochOver) {
			return err
		}
	}
	return nil
}

// channels runs one epoch per publisher on conn, each on its own channel,
// until every one has ended. A channel's epoch ends by closing the
// connection, so one that dies ends its siblings and every channel's
// pending confirms go in doubt together (rabbitmq/amqp091-go#182). It
// returns the first error other than traffic.ErrEpochOver, else traffic.ErrEpochOver if any
// epoch ended that way.
func (p *publisher) channels(ctx context.Context, conn *amqp.Connection, first, n, connection, node int) error {
	errs := make([]error, n)
	var wg sync.WaitGroup
	for k := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := traffic.Session{Epoch: metrics.Epoch(p.epochs.Add(1)), Publisher: first + k + 1, Connection: connection, Node: node}
			detail := fmt.Sprintf("epoch %d: publisher %d, connection %d", s.Epoch, s.Publisher, connection)
			if node > 0 {
				detail += " to " + scenario.NodeName(node)
			}
			if n > 1 {
				detail += fmt.Sprintf(" (channel %d of %d on a connection shared by publishers %d–%d)", k+1, n, first+1, first+n)
			}
			p.p.Timeline.Record(s.Event(metrics.EvConnected, detail))
			errs[k] = p.epoch(ctx, conn, s)
		}()
	}
	wg.Wait()
	var over error
	for _, err := range errs {
		switch {
		case err == nil:
		case errors.Is(err, traffic.ErrEpochOver):
			over = err
		default:
			return err
		}
	}
	return over
}

// epoch publishes on one channel of conn in the plan's mode until the burst
// is done or the channel dies.
func (p *publisher) epoch(ctx context.Context, conn *amqp.Connection, s traffic.Session) error {
	switch {
	case p.p.Mode == scenario.Transactional:
		return p.txEpoch(ctx, conn, s)
	case p.p.Mode.ConfirmMode():
		return p.confirmEpoch(ctx, conn, s)
	}
	return p.fireAndForgetEpoch(ctx, conn, s)
}

// finished: every id published, nothing waiting for a republish, nothing in flight.
func (p *publisher) finished() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.next >= p.p.Messages && len(p.retry) == 0 && p.idle()
}

// idle: nothing in flight on any channel and no id taken but not yet
// tracked, so no channel is about to publish.
func (p *publisher) idle() bool { return p.tracker.InFlight() == 0 && p.held.Load() == 0 }

// take returns the next id to publish: republishes first, then fresh ids.
// The caller holds the id until it tracks, hands off, puts back or drops
// it (release).
func (p *publisher) take() (seq int, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	seq, fresh, ok := traffic.TakeNext(&p.retry, &p.next, p.p.Messages)
	if !ok {
		return 0, false
	}
	if fresh && p.firstTry != nil {
		p.firstTry[seq].Store(time.Now().UnixNano())
	}
	p.held.Add(1)
	return seq, true
}

// release ends the hold take gave on an id; the last one wakes the
// channels waiting for the burst to go idle.
func (p *publisher) release() {
	if p.held.Add(-1) == 0 {
		p.signalSettled()
	}
}

// pace waits for the next slot of the rate schedule, if any (bounded by
// ctx), and records it as seq's intended send time unless seq had one. A
// publisher behind schedule does not wait: it catches up, and confirm
// latency from the intended time keeps the delay it suffered (no
// coordinated omission).
func (p *publisher) pace(ctx context.Context, seq int) error {
	if !p.p.Scheduled() {
		return nil
	}
	return p.sched.Pace(ctx, seq)
}

// deadline returns seq's message deadline, and false when none is set.
func (p *publisher) deadline(seq int) (time.Time, bool) {
	if p.p.MessageDeadline <= 0 || p.firstTry == nil {
		return time.Time{}, false
	}
	return time.Unix(0, p.firstTry[seq].Load()).Add(p.p.MessageDeadline), true
}

// expiredUnpublished marks seq not published when its deadline has passed
// before any attempt, and reports whether it did (then seq is dropped).
func (p *publisher) expiredUnpublished(seq int) bool {
	d, ok := p.deadline(seq)
	if ok && time.Now().After(d) && p.p.Ledger.MarkNotPublished(seq) {
		p.release()
		return true
	}
	return false
}

// markPastDeadline marks seq pending at its deadline when it was written,
// is still unconfirmed and its deadline has passed by now.
func (p *publisher) markPastDeadline(now time.Time, seq int) {
	if d, ok := p.deadline(seq); ok && now.After(d) {
		switch p.p.Ledger.Outcome(seq) {
		case metrics.InFlight, metrics.InDoubt:
			p.p.Ledger.MarkPastDeadline(seq)
		}
	}
}

// putBack returns an id that was taken but not published.
func (p *publisher) putBack(seq int) {
	p.mu.Lock()
	p.retry = traffic.QueueOldestFirst(p.retry, seq)
	p.mu.Unlock()
	p.release()
}

// inDoubt records that an attempt of seq will never be confirmed and, when
// that put the id in doubt (it was in flight), queues it for the next
// connection under republish: in-doubt. It reports whether the id went in
// doubt.
func (p *publisher) inDoubt(seq int) bool {
	if !p.p.Ledger.MarkInDoubt(seq) {
		return false
	}
	p.requeue(seq)
	return true
}

// requeue queues seq, in doubt, for a republish under republish: in-doubt
// (or nacked-and-in-doubt).
func (p *publisher) requeue(seq int) {
	if p.p.Republish.RepublishesInDoubt() {
		p.retry1(seq)
	}
}

// nacked queues seq, which a basic.nack settled, for a republish (same
// message id, next attempt) under republish: nacked-and-in-doubt, as an
// application that resends refused messages does (rabbitmq-server PR
// #4888), while it has had fewer than scenario.NackRepublishLimit
// attempts.
func (p *publisher) nacked(seq int) {
	if p.p.Republish.RepublishesNacked(p.p.Ledger.Attempts(seq)) {
		p.retry1(seq)
	}
}

// retry1 queues seq to be published again, oldest id first.
func (p *publisher) retry1(seq int) {
	p.mu.Lock()
	p.retry = traffic.QueueOldestFirst(p.retry, seq)
	p.mu.Unlock()
}

func (p *publisher) signalSettled() { p.settled.Signal() }

// settledC returns the channel the next settlement closes; take it before
// checking the state it guards.
func (p *publisher) settledC() <-chan struct{} { return p.settled.Wait() }

// connect dials with exponential backoff (50 ms doubling to 1 s) until it
// succeeds or plan.ReconnectTimeout passes.
func (p *publisher) connect(ctx context.Context, index int) (*amqp.Connection, int, error) {
	prefer := 1
	if p.p.PreferNode != nil {
		prefer = p.p.PreferNode(index)
	}
	var conn *amqp.Connection
	var node int
	err := traffic.Redial(ctx, p.p.ReconnectTimeout, func() (err error) {
		conn, node, err = p.a.dialFrom(fmt.Sprintf("publisher-%d", index), prefer, p.p.Heartbeat)
		return err
	}, nil, nil)
	if err != nil {
		return nil, 0, err
	}
	p.statsMu.Lock()
	p.stats.ConnectedTo(node)
	p.statsMu.Unlock()
	return conn, node, nil
}

// publishing builds order seq's message in m (see messageBuilder); attempt
// > 0 (confirm modes) is the publish attempt Ledger.Published returned,
// carried in AttemptHeader when above 1.
func (p *publisher) publishing(m *messageBuilder, seq, attempt int) amqp.Publishing {
	return m.build(p, seq, attempt, time.Now())
}

// SentAtHeader carries the publish time (unix ns) when live consumers
// measure end-to-end latency.
const SentAtHeader = "x-rmqtorture-sent-at-ns"

// AttemptHeader carries the publish attempt (2 first republish, 3…) of
// each republished copy in the confirm and transactional modes; a copy
// without it is attempt 1 (deliveryAttempt).
const AttemptHeader = "x-rmqtorture-attempt"

// MissingExchange is where fault publish-to-missing-exchange sends one
// message; it is never declared.
const MissingExchange = "rmqtorture.missing"

// route returns the exchange and routing key for seq: normally the burst's
// queue; every UnroutableEvery-th order a key nothing is bound to; and once
// after a publish-to-missing-exchange fault, an exchange that does not exist
// (recorded as a misrouted event of session s).
func (p *publisher) route(s traffic.Session, seq int) (exchange, key string) {
	exchange, key = Exchange, p.p.Queue
	if n := p.p.UnroutableEvery; n > 0 && (seq+1)%n == 0 {
		key = p.p.Queue + ".unroutable"
	}
	if p.p.Misroute == nil {
		return exchange, key // no such fault: no lock on the hot path
	}
	p.mu.Lock() // publishers share the one misroute
	defer p.mu.Unlock()
	if p.misroute != nil {
		select {
		case <-p.misroute:
			p.misroute = nil
			exchange = MissingExchange
			p.p.Timeline.Record(s.Event(metrics.EvMisrouted, strconv.Itoa(seq)))
		default:
		}
	}
	return exchange, key
}

// published counts one publish call that returned at at on session s,
// and reports it to plan.OnPublished with the ledger's sent count.
func (p *publisher) published(s traffic.Session, at time.Time) {
	p.statsMu.Lock()
	p.stats.Publishes++
	p.stats.PublishedOn(s.Node)
	p.stats.LastPublish = at
	p.statsMu.Unlock()
	if p.p.OnPublished != nil {
		p.p.OnPublished(p.p.Ledger.Sent(), p.tracker.InFlight())
	}
}

// openChannel opens a channel, in confirm mode when confirm is set, each
// call bounded by amqpx.RPCTimeout. Errors wrap traffic.ErrEpochOver.
func openChannel(ctx context.Context, conn *amqp.Connection, confirm bool) (*amqp.Channel, error) {
	var ch *amqp.Channel
	abort := func() { amqpx.CloseConn(conn) }
	if err := amqpx.Bounded(ctx, amqpx.RPCTimeout, abort, func() (err error) { ch, err = conn.Channel(); return err }); err != nil {
		return nil, fmt.Errorf("%w: open channel: %v", traffic.ErrEpochOver, err)
	}
	if !confirm {
		return ch, nil
	}
	if err := amqpx.Bounded(ctx, amqpx.RPCTimeout, abort, func() error { return ch.Confirm(false) }); err != nil {
		return nil, fmt.Errorf("%w: confirm.select: %v", traffic.ErrEpochOver, err)
	}
	return ch, nil
}

// recordReturn records a basic.return of one of the burst's messages.
func recordReturn(l *metrics.Ledger, ret amqp.Return) {
	if seq, ok := l.ParseID(ret.MessageId); ok {
		l.Returned(seq)
	}
}

// fireAndForgetEpoch publishes without confirm mode. A publish that returned
// no error only reached a local buffer; the ledger can only later learn
// whether it was delivered. A publish call that fails is retried on the next
// connection (an application sees that error), and is not counted as sent.
func (p *publisher) fireAndForgetEpoch(ctx context.Context, conn *amqp.Connection, s traffic.Session) error {
	ch, err := openChannel(ctx, conn, false)
	if err != nil {
		return err
	}
	returns := ch.NotifyReturn(make(chan amqp.Return, 1024))
	returnsDone := make(chan struct{})
	go func() {
		defer close(returnsDone)
		for r := range returns {
			recordReturn(p.p.Ledger, r)
		}
	}()
	// Returns can trail the last publish: closing the connection (its
	// close handshake comes after every earlier frame) ends the listener, and
	// the ledger is complete once the reader has seen them all.
	defer func() {
		amqpx.CloseConn(conn)
		<-returnsDone
	}()
	w := p.watch(conn, ch, s, nil, nil)
	defer w.stop()
	var msgs messageBuilder
	first := true
	for {
		seq, ok := p.take()
		if !ok {
			w.stopDeadlines()
			p.finalClose(conn, s)
			return nil
		}
		if err := ctx.Err(); err != nil {
			p.putBack(seq)
			return err
		}
		if p.expiredUnpublished(seq) {
			continue
		}
		if err := p.pace(ctx, seq); err != nil {
			p.putBack(seq)
			return err
		}
		if err := p.handOff(ctx, ch, w, &msgs, s, seq); err != nil {
			return err
		}
		if first {
			e := s.Event(metrics.EvFirstProgress, fmt.Sprintf("epoch %d: first publish", s.Epoch))
			e.Progress = metrics.ProgressPublish
			p.p.Timeline.Record(e)
			first = false
		}
		select {
		case <-w.closed:
			return traffic.ErrEpochOver
		default:
		}
	}
}

// handOff publishes seq without confirm mode. A failed call puts seq back
// for the next connection and ends the epoch (traffic.ErrEpochOver).
func (p *publisher) handOff(ctx context.Context, ch *amqp.Channel, w *watcher, msgs *messageBuilder, s traffic.Session, seq int) error {
	exchange, key := p.route(s, seq)
	now := time.Now()
	w.callStartedAt(now)
	err := ch.PublishWithContext(ctx, exchange, key, true, false, msgs.build(p, seq, 0, now))
	now = time.Now()
	w.progressAt(now)
	if err != nil {
		w.callFailed(err)
		p.p.Ledger.PublishFailed(seq, false)
		p.putBack(seq)
		p.p.Timeline.Record(s.Event(metrics.EvConnectionLost, "publish: "+err.Error()))
		return fmt.Errorf("%w: %v", traffic.ErrEpochOver, err)
	}
	p.p.Ledger.Published(seq, false)
	p.release()
	p.published(s, now)
	return nil
}

// finalClose ends a fire-and-forget connection whose publishes all
// returned: a publish that returned may still sit in socket buffers (after
// a pause, seconds of them), and the broker sends connection.close-ok only
// after every earlier frame, so waiting for it (up to the confirm timeout,
// at least 10 s) lets them land. Abandoning the socket sooner can reset it
// and discard them: a loss the tool, not the broker, would have caused.
func (p *publisher) finalClose(conn *amqp.Connection, s traffic.Session) {
	wait := max(p.p.ConfirmTimeout, 10*time.Second)
	began := time.Now()
	if err := conn.CloseDeadline(began.Add(wait)); err != nil {
		p.p.Timeline.Record(s.Event(metrics.EvConnectionLost, finalCloseText(s.Epoch, time.Since(began), wait, err)))
	}
}

// finalCloseText says how a final close ended without its close-ok:
// after how long (a connection already gone fails at once, a silent
// broker at the deadline), not only what the deadline was.
func finalCloseText(epoch metrics.Epoch, waited, deadline time.Duration, err error) string {
	return fmt.Sprintf("epoch %d: final close not acknowledged (%v) after %s of its %s deadline: publishes still buffered may be lost", epoch, err, waited.Round(time.Millisecond), deadline)
}

// confirmEpoch publishes in confirm mode with at most plan.Window messages
// unconfirmed (1 for confirm-each) until the burst is done or the channel
// dies; its confirmReader settles what it publishes.
func (p *publisher) confirmEpoch(ctx context.Context, conn *amqp.Connection, s traffic.Session) error {
	ch, err := openChannel(ctx, conn, true)
	if err != nil {
		return err
	}
	window := p.p.Window
	// The listener never has less capacity than the window: a full listener
	// stalls the connection's reader (streadway/amqp#254) and, since
	// amqp091-go 1.13, drops confirms after ~5 s.
	confirms := ch.NotifyPublish(make(chan amqp.Confirmation, max(window, p.p.ListenerBuffer)))
	returns := ch.NotifyReturn(make(chan amqp.Return, window))
	r := newConfirmReader(p, s, window)
	go r.run(confirms, returns)
	oldest := func() (time.Time, bool) { return p.tracker.Oldest(s.Epoch) }
	if r.timeouts != nil {
		// on_confirm_timeout: republish: an original past its timeout is
		// published again, and only a copy past its own closes the link.
		oldest = r.timeouts.oldestCopy
	}
	w := p.watch(conn, ch, s, oldest, &r.lastConfirm)
	defer w.stop()
	r.onTick = func() error { return r.republishTimedOut(ctx, ch, w) }

	end := func(err error) error {
		// Closing the connection (bounded) closes the listener; wait for the
		// reader to turn what is pending into in-doubt before the next
		// epoch starts.
		r.stopTimeouts()
		r.closing.Store(true)
		amqpx.CloseConn(conn)
		<-r.done
		return err
	}
	for {
		if r.timeouts != nil {
			if err := r.onTick(); err != nil {
				return end(err)
			}
		}
		seq, ok := p.take()
		var wake <-chan struct{}
		if !ok {
			// Registered before taking again, so no settlement between
			// the check and the wait goes unseen.
			wake = p.settledC()
			seq, ok = p.take()
		}
		if !ok {
			// Nothing left to publish: wait for the last confirms (any
			// publisher's: their in-doubt ids may come back to republish).
			// Each publisher's watcher bounds its own confirms.
			if p.idle() {
				return end(nil)
			}
			select {
			case <-wake:
				continue
			case <-r.tickC():
				continue // the loop's head republishes what timed out
			case <-r.done:
				return end(traffic.ErrEpochOver)
			case <-ctx.Done():
				return end(ctx.Err())
			}
		}
		if p.expiredUnpublished(seq) {
			continue
		}
		if err := p.pace(ctx, seq); err != nil {
			p.putBack(seq)
			return end(err)
		}
		got, err := p.acquire(ctx, r, seq)
		if err == nil && got {
			err = p.publishTracked(ctx, ch, w, r, seq)
		}
		if err != nil {
			return end(err)
		}
	}
}

// acquire takes a window slot for seq. A never-attempted order waits only
// until its deadline: got is false, err nil, and seq is marked not
// published. When the epoch or ctx ends first, seq is put back and err is
// traffic.ErrEpochOver or ctx's error.
func (p *publisher) acquire(ctx context.Context, r *confirmReader, seq int) (got bool, err error) {
	var expire <-chan time.Time
	if d, ok := p.deadline(seq); ok && p.p.Ledger.Outcome(seq) == metrics.NotSent {
		timer := time.NewTimer(time.Until(d))
		defer timer.Stop()
		expire = timer.C
	}
wait:
	for {
		select {
		case r.slots <- struct{}{}:
			if err := ctx.Err(); err != nil {
				// Both were ready: an order that was not written stays unsent.
				<-r.slots
				p.putBack(seq)
				return false, err
			}
			return true, nil
		case <-expire:
			p.p.Ledger.MarkNotPublished(seq)
			p.release()
			return false, nil
		case <-r.tickC():
			// A full window under on_confirm_timeout: republish: what timed
			// out is published again while seq waits.
			if err := r.onTick(); err != nil {
				p.putBack(seq)
				return false, err
			}
		case <-r.done:
			break wait
		case <-ctx.Done():
			break wait
		}
	}
	p.putBack(seq)
	if err := ctx.Err(); err != nil {
		return false, err
	}
	return false, traffic.ErrEpochOver
}

// publishTracked publishes seq, holding a window slot, in confirm mode:
// tracked under the channel's next delivery tag before the call, so the
// reader can match its confirm however fast it comes.
func (p *publisher) publishTracked(ctx context.Context, ch *amqp.Channel, w *watcher, r *confirmReader, seq int) error {
	return p.sendTracked(ctx, ch, w, r, ch.GetNextPublishSeqNo(), seq)
}

// amqpPublisher is the one call sendTracked needs of a channel (a fake in
// the transactional mode's unit tests).
type amqpPublisher interface {
	PublishWithContext(ctx context.Context, exchange, key string, mandatory, immediate bool, msg amqp.Publishing) error
}

// sendTracked tracks seq under tag, then publishes it on ch: the one path
// of a confirm-mode and a transactional publish. seq holds a window slot;
// a channel that closed meanwhile puts it back, a failed call leaves it in
// doubt; either ends the epoch (traffic.ErrEpochOver).
func (p *publisher) sendTracked(ctx context.Context, ch amqpPublisher, w *watcher, r *confirmReader, tag uint64, seq int) error {
	now := time.Now() // the publish time of the ledger, the message and the watcher
	attempt, tracked, err := r.track(tag, seq, now)
	if err := traffic.Tracked(tracked, err, r.slots, p.putBack, seq); err != nil {
		return err
	}
	p.release() // tracked: in flight now
	exchange, key := p.route(r.s, seq)
	w.callStartedAt(now)
	err = ch.PublishWithContext(ctx, exchange, key, true, false, r.msgs.build(p, seq, attempt, now))
	now = time.Now()
	w.progressAt(now)
	if err != nil {
		w.callFailed(err)
		r.publishFailed(tag, seq)
		p.p.Timeline.Record(r.s.Event(metrics.EvConnectionLost, "publish: "+err.Error()))
		return traffic.ErrEpochOver
	}
	p.published(r.s, now)
	return nil
}
