package amqp

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/rmqtorture/rmqtorture/broker/internal/amqpx"
	"github.com/rmqtorture/rmqtorture/engine"
	"github.com/rmqtorture/rmqtorture/metrics"
	"github.com/rmqtorture/rmqtorture/scenario"
)

// DeadLetterExchange is the durable direct exchange a queue with
// queue.dead_letter_queue dead-letters to; each dead-letter queue is bound to
// it with its own name as routing key.
const DeadLetterExchange = "rmqtorture.dlx"

// consumerSet runs the live consumers of one burst.
type consumerSet struct {
	a      *Traffic
	plan   engine.ConsumePlan
	cancel context.CancelFunc
	wg     sync.WaitGroup
	cons   []*consumer

	lastDelivery atomic.Int64 // unix ns

	mu            sync.Mutex
	stats         scenario.ConsumerStats
	perMessage    map[string]int // deliveries to live consumers per message id
	retriesAtPark map[int]int
	xDeathAtPark  map[int]int
	endToEnd      *metrics.Latency // publish → delivery
	perConsumer   []int            // deliveries to each consumer
	lastConsumer  int              // index of the consumer of the latest delivery (-1: none yet)
}

// consumer is one live consumer: one connection, one channel, its own loop.
type consumer struct {
	set   *consumerSet
	index int
	// crash carries a crash request; the loop answers on the reply channel
	// with the processed deliveries it left unacknowledged.
	crash chan crashRequest
	stop  chan struct{}
	// ready is closed once the consumer first consumes: the next consumer
	// subscribes only after it, so consumer 0 is the first registered (the
	// single active consumer, with x-single-active-consumer).
	ready chan struct{}
	held  bool // consumers.hold was spent on the first delivery
}

type crashRequest struct {
	down  time.Duration
	reply chan int
}

// Consume starts c.Consumers.Count live consumers on c.Queue, each with its
// own connection and channel, basic.qos prefetch, manual acknowledgements and
// the configured on_delivery behaviour. Every delivery is recorded in the
// ledger (Ledger.Delivered with its redelivered flag). Consumers reconnect
// with backoff after a broker fault until Stop or ctx is done.
func (a *Traffic) Consume(ctx context.Context, c engine.ConsumePlan) (engine.LiveConsumers, error) {
	ctx, cancel := context.WithCancel(ctx)
	set := &consumerSet{a: a, plan: c, cancel: cancel, perMessage: map[string]int{},
		retriesAtPark: map[int]int{}, xDeathAtPark: map[int]int{}, endToEnd: metrics.NewLatency(),
		perConsumer: make([]int, c.Consumers.Count), lastConsumer: -1}
	cs := c.Consumers
	set.stats = scenario.ConsumerStats{Count: cs.Count, Prefetch: cs.Prefetch, AckEvery: cs.AckEvery,
		OnDelivery: cs.OnDelivery, ProcessingDelayMS: metrics.Millis(cs.ProcessingDelay.D())}
	for i := range cs.Count {
		con := &consumer{set: set, index: i, crash: make(chan crashRequest), stop: make(chan struct{}), ready: make(chan struct{})}
		var prev *consumer
		if i > 0 {
			prev = set.cons[i-1]
		}
		set.cons = append(set.cons, con)
		set.wg.Add(1)
		go func() {
			defer set.wg.Done()
			if prev != nil && !con.awaitTurn(ctx, prev) {
				return
			}
			con.run(ctx)
		}()
	}
	return set, nil
}

// Crash implements engine.LiveConsumers: the first consumer crashes on its
// next delivery, after processing it and before acknowledging it, so at
// least one processed delivery is left unacknowledged. It waits at most 10 s
// for the consumer to take the request and 30 s for that delivery.
func (s *consumerSet) Crash(down time.Duration) (int, error) {
	if len(s.cons) == 0 {
		return 0, errors.New("no live consumers to crash")
	}
	req := crashRequest{down: down, reply: make(chan int, 1)}
	select {
	case s.cons[0].crash <- req:
	case <-time.After(10 * time.Second):
		return 0, errors.New("consumer 0 did not take the crash request within 10s")
	}
	select {
	case n := <-req.reply:
		return n, nil
	case <-time.After(30 * time.Second):
		return 0, errors.New("consumer 0 received no delivery to crash on within 30s")
	}
}

// LastDelivery implements engine.LiveConsumers.
func (s *consumerSet) LastDelivery() time.Time {
	if ns := s.lastDelivery.Load(); ns != 0 {
		return time.Unix(0, ns)
	}
	return time.Time{}
}

// Stop implements engine.LiveConsumers: every consumer acknowledges what it
// processed and closes; deliveries it held unprocessed go back to the queue
// for the drain.
func (s *consumerSet) Stop() scenario.ConsumerStats {
	for _, c := range s.cons {
		close(c.stop)
	}
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		s.cancel() // a consumer stuck on a dead broker: cut it
		<-done
	}
	s.cancel()
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.stats
	st.DeliveriesPerMessage = histogram(countValues(s.perMessage))
	st.RetriesAtPark = histogram(s.retriesAtPark)
	st.XDeathCountAtPark = histogram(s.xDeathAtPark)
	st.EndToEndLatency = s.endToEnd.Summary()
	st.DeliveriesPerConsumer = slices.Clone(s.perConsumer)
	return st
}

// awaitTurn waits until prev consumes (at most amqpx.RPCTimeout: a consumer that
// cannot connect does not hold the others back) and reports false when Stop
// or ctx ended the consumer meanwhile.
func (c *consumer) awaitTurn(ctx context.Context, prev *consumer) bool {
	select {
	case <-prev.ready:
	case <-time.After(amqpx.RPCTimeout):
	case <-c.stop:
		return false
	case <-ctx.Done():
		return false
	}
	return true
}

func countValues(m map[string]int) map[int]int {
	out := map[int]int{}
	for _, n := range m {
		out[n]++
	}
	return out
}

func histogram(m map[int]int) map[string]int {
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]int, len(m))
	for k, v := range m {
		out[strconv.Itoa(k)] = v
	}
	return out
}

func (s *consumerSet) update(fn func(*scenario.ConsumerStats)) {
	s.mu.Lock()
	fn(&s.stats)
	s.mu.Unlock()
}

func (s *consumerSet) errorf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	s.a.Log.Debug("consumer", "msg", msg)
	s.mu.Lock()
	if len(s.stats.Errors) < 20 {
		s.stats.Errors = append(s.stats.Errors, msg)
	}
	s.mu.Unlock()
}

// errStopped ends a consumer session because Stop was called.
var errStopped = errors.New("consumer stopped")

// run connects, consumes until the connection dies, and reconnects with
// backoff (50 ms doubling to 1 s) until stopped.
func (c *consumer) run(ctx context.Context) {
	backoff := 50 * time.Millisecond
	sessions := 0
	var downUntil time.Time
	for {
		if !c.wait(ctx, time.Until(downUntil)) {
			return
		}
		err := c.session(ctx, &sessions, &downUntil)
		if errors.Is(err, errStopped) || ctx.Err() != nil {
			return
		}
		if err != nil {
			c.set.errorf("consumer %d: %v", c.index, err)
			if !c.wait(ctx, backoff) {
				return
			}
			backoff = min(2*backoff, time.Second)
			continue
		}
		backoff = 50 * time.Millisecond
	}
}

// wait waits d (none when d <= 0) and reports false when Stop or ctx ended
// the consumer meanwhile.
func (c *consumer) wait(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	select {
	case <-time.After(d):
		return true
	case <-c.stop:
		return false
	case <-ctx.Done():
		return false
	}
}

// consumerSession is one live consumer connection: its consuming channel
// and, for on_delivery: retry, a confirm-mode channel to republish on.
type consumerSession struct {
	c          *consumer
	conn       *amqp.Connection
	ch         *amqp.Channel
	pub        *amqp.Channel // nil unless on_delivery: retry
	confirms   chan amqp.Confirmation
	deliveries <-chan amqp.Delivery
	// cancels gets the consumer tag of a basic.cancel from the broker,
	// before amqp091-go closes deliveries (channel.go dispatch).
	cancels        <-chan string
	lastUnackedTag uint64 // delivery tag of the latest processed, unacknowledged delivery
	pending        int    // processed deliveries not yet acknowledged
}

// open sets up a session's channels, each broker call bounded by
// amqpx.RPCTimeout (the connection is closed if the broker does not answer).
func (c *consumer) open(ctx context.Context, conn *amqp.Connection) (*consumerSession, error) {
	s := &consumerSession{c: c, conn: conn}
	cs := c.set.plan.Consumers
	call := func(fn func() error) error {
		return amqpx.Bounded(ctx, amqpx.RPCTimeout, func() { amqpx.CloseConn(conn) }, fn)
	}
	err := call(func() (err error) {
		if s.ch, err = conn.Channel(); err != nil {
			return err
		}
		return s.ch.Qos(cs.Prefetch, 0, false)
	})
	if err == nil && cs.OnDelivery == scenario.ConsumerRetry {
		err = call(func() (err error) {
			if s.pub, err = conn.Channel(); err != nil {
				return err
			}
			return s.pub.Confirm(false)
		})
		if err == nil {
			s.confirms = s.pub.NotifyPublish(make(chan amqp.Confirmation, 1))
		}
	}
	if err == nil {
		s.cancels = s.ch.NotifyCancel(make(chan string, 1))
		err = call(func() (err error) {
			s.deliveries, err = s.ch.Consume(c.set.plan.Queue, fmt.Sprintf("rmqtorture-consumer-%d", c.index), false, false, false, false, nil)
			return err
		})
	}
	return s, err
}

// flush acknowledges every processed delivery (basic.ack multiple).
func (s *consumerSession) flush() error {
	if s.pending == 0 {
		return nil
	}
	err := s.ch.Ack(s.lastUnackedTag, true)
	n := s.pending
	s.c.set.update(func(st *scenario.ConsumerStats) { st.Acked += n })
	s.pending = 0
	return err
}

// session is one connection's life. It returns nil after a crash (the
// caller waits until downUntil), errStopped after Stop, or the error that
// ended the connection. Cancelling ctx closes the connection, so no broker
// call outlives it.
func (c *consumer) session(ctx context.Context, sessions *int, downUntil *time.Time) error {
	prefer := 1
	if c.set.plan.PreferNode != nil {
		prefer = c.set.plan.PreferNode(c.index)
	}
	conn, node, err := c.set.a.dialFrom(fmt.Sprintf("consumer-%d", c.index), prefer, 0)
	if err != nil {
		return err
	}
	defer amqpx.CloseConn(conn)
	defer context.AfterFunc(ctx, func() { amqpx.CloseConn(conn) })()
	s, err := c.open(ctx, conn)
	if err != nil {
		return err
	}
	*sessions++
	if *sessions > 1 {
		c.set.update(func(st *scenario.ConsumerStats) { st.Reconnects++ })
	} else {
		close(c.ready)
	}
	c.watchCloses(s, *sessions)
	c.set.plan.Timeline.Record(metrics.Event{Kind: metrics.EvConsumerConnected, Consumer: c.index + 1, Connection: *sessions, Node: node,
		Detail: fmt.Sprintf("consumer %d", c.index)})
	idle := time.NewTicker(200 * time.Millisecond)
	defer idle.Stop()
	lastDelivery := time.Now()
	var crash *crashRequest // a crash waiting for the next delivery
	for {
		select {
		case <-c.stop:
			_ = s.flush()
			return errStopped
		case <-ctx.Done():
			return ctx.Err()
		case req := <-c.crash:
			// The crash comes with the next delivery, once it is processed
			// and before its ack.
			crash = &req
		case <-idle.C:
			// A consumer that went quiet settles what it processed, as a
			// batching application does on a timer.
			if time.Since(lastDelivery) >= 200*time.Millisecond {
				if err := s.flush(); err != nil {
					return err
				}
			}
		case d, ok := <-s.deliveries:
			if !ok {
				return c.deliveriesEnded(s)
			}
			lastDelivery = time.Now()
			c.process(d, lastDelivery)
			if crash != nil {
				c.crashNow(s, crash, *sessions, downUntil)
				return nil
			}
			if !c.hold(ctx) {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				_ = s.flush()
				return errStopped
			}
			if err := c.settle(s, d); err != nil {
				return err
			}
		}
	}
}

// deliveriesEnded says why a session's deliveries stopped: a basic.cancel
// from the broker (counted), or its channel or connection lost.
func (c *consumer) deliveriesEnded(s *consumerSession) error {
	select {
	case tag := <-s.cancels:
		c.set.update(func(st *scenario.ConsumerStats) { st.BrokerCancels++ })
		return fmt.Errorf("the broker cancelled consumer %s (basic.cancel: its queue was deleted or the node holding it went down; rabbitmq-server#4613)", tag)
	default:
		return errors.New("delivery channel closed (connection or channel lost)")
	}
}

// process records one delivery (ledger, stats, end-to-end latency) and
// spends the configured processing delay on it.
func (c *consumer) process(d amqp.Delivery, at time.Time) {
	c.set.lastDelivery.Store(at.UnixNano())
	if sent, ok := d.Headers[SentAtHeader].(int64); ok {
		c.set.endToEnd.Record(at.Sub(time.Unix(0, sent)))
	}
	c.set.plan.Ledger.DeliveredAttempt(d.MessageId, d.Redelivered, deliveryAttempt(d.Headers))
	c.set.mu.Lock()
	c.set.perMessage[d.MessageId]++
	c.set.stats.Deliveries++
	if c.index < len(c.set.perConsumer) {
		c.set.perConsumer[c.index]++
	}
	if c.set.lastConsumer >= 0 && c.set.lastConsumer != c.index {
		c.set.stats.ConsumerChanges++
	}
	c.set.lastConsumer = c.index
	if d.Redelivered {
		c.set.stats.RedeliveredFlagged++
	}
	c.set.mu.Unlock()
	if delay := c.set.plan.Consumers.ProcessingDelay.D(); delay > 0 {
		time.Sleep(delay)
	}
}

// crashNow crashes the consumer after a processed delivery and before its
// ack: nothing more is processed or acknowledged; the broker requeues what
// it had delivered.
func (c *consumer) crashNow(s *consumerSession, crash *crashRequest, connection int, downUntil *time.Time) {
	unackedNow := s.pending + 1
	crash.reply <- unackedNow
	c.set.update(func(st *scenario.ConsumerStats) {
		st.Crashes++
		st.UnackedAtCrash += unackedNow
	})
	c.set.plan.Timeline.Record(metrics.Event{Kind: metrics.EvConsumerCrashed, Consumer: c.index + 1, Connection: connection,
		Detail: fmt.Sprintf("consumer %d: %d processed deliveries unacknowledged", c.index, unackedNow)})
	*downUntil = time.Now().Add(crash.down)
	amqpx.CloseConn(s.conn)
}

// settle applies on_delivery to one processed delivery.
func (c *consumer) settle(s *consumerSession, d amqp.Delivery) error {
	cs := c.set.plan.Consumers
	switch cs.OnDelivery {
	case scenario.ConsumerNackRequeue:
		if n := cs.MaxDeliveries; n > 0 && c.set.deliveriesOf(d.MessageId) >= n {
			// The application's own bound: it gives up on the message.
			c.set.update(func(st *scenario.ConsumerStats) { st.Rejected++; st.GaveUp++ })
			return d.Nack(false, false)
		}
		c.set.update(func(st *scenario.ConsumerStats) { st.NackedRequeue++ })
		return d.Nack(false, true)
	case scenario.ConsumerReject:
		c.set.update(func(st *scenario.ConsumerStats) { st.Rejected++ })
		return d.Nack(false, false)
	case scenario.ConsumerRetry:
		retries := headerInt(d.Headers, scenario.RetryHeader)
		headers := amqp.Table{}
		for k, v := range d.Headers {
			headers[k] = v // x-death included: what an application copying headers sends
		}
		exchange, key := "", c.set.plan.RetryQueue
		park, cut := retries >= cs.MaxRetries, false
		if cs.RetryCountFrom == scenario.RetryFromXDeath {
			// The application's count is the broker's; its own header
			// still counts every retry, and bounds a loop x-death never ends.
			park = xDeathCount(d.Headers) >= cs.MaxRetries
			cut = !park && retries >= scenario.RetryLoopBound(cs.MaxRetries)
			park = park || cut
		}
		if park {
			exchange, key = DeadLetterExchange, c.set.plan.DeadLetterQueue
		} else {
			headers[scenario.RetryHeader] = int64(retries + 1)
		}
		msg := amqp.Publishing{Headers: headers, ContentType: d.ContentType, DeliveryMode: d.DeliveryMode,
			MessageId: d.MessageId, Timestamp: d.Timestamp, Body: d.Body}
		if err := publishConfirmed(s.pub, s.confirms, exchange, key, msg); err != nil {
			// Not acknowledged: the broker will hand it out again.
			_ = d.Nack(false, true)
			return fmt.Errorf("republish for retry: %w", err)
		}
		if park {
			c.set.plan.Ledger.Parked(d.MessageId)
		} else {
			c.set.plan.Ledger.Retried(d.MessageId)
		}
		c.set.mu.Lock()
		if park {
			c.set.stats.Parked++
			if cut {
				c.set.stats.RetryLoopsCut++
			}
			c.set.retriesAtPark[retries]++
			c.set.xDeathAtPark[xDeathCount(d.Headers)]++
		} else {
			c.set.stats.Retried++
		}
		c.set.mu.Unlock()
	}
	s.lastUnackedTag = d.DeliveryTag
	s.pending++
	if s.pending >= max(1, cs.AckEvery) {
		return s.flush()
	}
	return nil
}

// hold keeps the consumer's first delivery for consumers.hold before it is
// settled, as an application stuck on it would (past the broker's
// consumer_timeout the broker closes the channel meanwhile). It reports
// false when Stop or ctx ended the consumer during the hold.
func (c *consumer) hold(ctx context.Context) bool {
	d := c.set.plan.Consumers.Hold.D()
	if d <= 0 || c.held {
		return true
	}
	c.held = true
	c.set.update(func(st *scenario.ConsumerStats) { st.Held++ })
	return c.wait(ctx, d)
}

// deliveriesOf is how many times message id was delivered to live consumers.
func (s *consumerSet) deliveriesOf(id string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.perMessage[id]
}

// watchCloses records why the broker closes the session's channel or
// connection (reply code and text, e.g. a consumer timeout's 406
// PRECONDITION_FAILED), in the consumers' stats and on the timeline. A close
// rmqtorture made itself (Stop, a crash) carries no error and is not
// recorded.
func (c *consumer) watchCloses(s *consumerSession, connection int) {
	chClose := s.ch.NotifyClose(make(chan *amqp.Error, 1))
	connClose := s.conn.NotifyClose(make(chan *amqp.Error, 1))
	go func() {
		var e *amqp.Error
		what := "channel"
		select {
		case e = <-chClose:
		case e = <-connClose:
			what = "connection"
		}
		if e == nil {
			return
		}
		reason := consumerCloseReason(c.index, what, e)
		c.set.mu.Lock()
		if len(c.set.stats.ChannelCloses) < 20 {
			c.set.stats.ChannelCloses = append(c.set.stats.ChannelCloses, reason)
		}
		c.set.mu.Unlock()
		c.set.plan.Timeline.Record(metrics.Event{Kind: metrics.EvConsumerClosed, Consumer: c.index + 1, Connection: connection, Detail: reason})
	}()
}

// consumerCloseReason words why consumer index's channel or connection
// closed as closeReason does for publishers: the broker's reply code and
// text, or "connection lost" for a socket amqp091-go lost (the broker died),
// which it reports as the client's own 501 FRAME_ERROR.
func consumerCloseReason(index int, what string, e *amqp.Error) string {
	return fmt.Sprintf("consumer %d: %s", index, closeReason(what, e, "", false))
}

// publishConfirmed publishes msg and waits (at most 10 s) for its publisher
// confirm.
func publishConfirmed(ch *amqp.Channel, confirms chan amqp.Confirmation, exchange, key string, msg amqp.Publishing) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := ch.PublishWithContext(ctx, exchange, key, false, false, msg); err != nil {
		return err
	}
	select {
	case c, ok := <-confirms:
		if !ok {
			return errors.New("channel closed before the confirm")
		}
		if !c.Ack {
			return errors.New("basic.nack")
		}
		return nil
	case <-ctx.Done():
		return errors.New("no confirm within 10s")
	}
}

// headerInt reads an integer header of any AMQP integer type (0 if absent).
func headerInt(h amqp.Table, key string) int {
	switch v := h[key].(type) {
	case int64:
		return int(v)
	case int32:
		return int(v)
	case int16:
		return int(v)
	case int8:
		return int(v)
	case int:
		return v
	case uint8:
		return int(v)
	case uint16:
		return int(v)
	case uint32:
		return int(v)
	}
	return 0
}

// xDeathCount sums the count fields of a delivery's x-death header (the
// broker's dead-lettering history; absent: 0). See
// https://www.rabbitmq.com/docs/dlx#effects.
func xDeathCount(h amqp.Table) int {
	entries, _ := h["x-death"].([]any)
	total := 0
	for _, e := range entries {
		if t, ok := e.(amqp.Table); ok {
			total += headerInt(t, "count")
		}
	}
	return total
}
