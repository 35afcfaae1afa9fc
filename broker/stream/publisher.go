package stream

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	streamamqp "github.com/rabbitmq/rabbitmq-stream-go-client/pkg/amqp"
	"github.com/rabbitmq/rabbitmq-stream-go-client/pkg/stream"

	"github.com/rmqtorture/rmqtorture/broker/amqp"
	"github.com/rmqtorture/rmqtorture/broker/internal/traffic"
	"github.com/rmqtorture/rmqtorture/engine"
	"github.com/rmqtorture/rmqtorture/metrics"
)

// StreamProducerName names the stream producer under queue.deduplication:
// the broker keeps, per stream and producer name, the highest publishing id
// it stored, and drops a message whose publishing id is not above it
// (https://www.rabbitmq.com/blog/2021/07/28/rabbitmq-streams-message-deduplication).
const StreamProducerName = "rmqtorture-publisher"

// streamFFBuffer bounds, in fire-and-forget, the messages handed to the
// stream client and not yet written and settled by the broker: the client
// queues them in memory, and a Send blocked on a full client queue while
// the client closes it can panic (see streamEpoch.send). A socket buffer
// plays that part over AMQP.
const streamFFBuffer = 4096

// streamPublisher publishes one burst to a stream over the stream protocol,
// as one producer that reconnects (a new environment: a new connection)
// after every loss. Each connection is an epoch. A message's publishing id
// is its sequence number + 1, and the confirm tracker keys it by (epoch,
// publishing id), as it keys AMQP's by (epoch, delivery tag):
//   - a confirmed publishing id is a basic.ack; a publish error the broker
//     sends for it is a basic.nack;
//   - when the connection closes, the client reports what is still
//     unconfirmed as timed out and closes its confirmation channel: all of
//     it is in doubt, never nacked, and under republish: in-doubt it is
//     republished on the next connection with the same publishing id;
//   - a confirmation the client times out (load.confirm_timeout) ends the
//     epoch, as a confirm timeout ends an AMQP channel;
//   - republished ids go out in ascending order before fresh ones: the
//     broker's deduplication drops a publishing id that is not above the
//     highest it stored, so an id published after a higher one would be
//     dropped although never stored.
//
// Without queue.deduplication the producer has no name and the broker
// stores every copy: a republished id that had been stored is a duplicate.
type streamPublisher struct {
	s       *Traffic
	p       engine.PublishPlan
	tracker *metrics.ConfirmTracker
	statsMu sync.Mutex
	stats   engine.PublishStats

	mu    sync.Mutex
	next  int   // next fresh sequence number
	retry []int // ids to publish again first, ascending

	settled traffic.Signal // signalled on every settlement
	epochs  int

	// sched is the rate schedule (plan.Rate > 0), as the AMQP publisher's:
	// publish k is due k/Rate after the first; nil without a rate.
	sched *traffic.Pacer
}

// Publish publishes plan.Messages orders to the stream plan.Queue in
// plan.Mode. It returns nil once every order is published and, in confirm
// modes, settled (or left in doubt under republish: none); an error when it
// could not reconnect within plan.ReconnectTimeout; ctx's error when
// cancelled.
func (s *Traffic) Publish(ctx context.Context, plan engine.PublishPlan) (engine.PublishStats, error) {
	p := &streamPublisher{s: s, p: plan, tracker: metrics.NewConfirmTracker().ReportTo(plan.Ledger)}
	if plan.Rate > 0 {
		p.sched = traffic.NewPacer(plan.Messages, func(k int64) time.Duration {
			return time.Duration(float64(k) * float64(time.Second) / plan.Rate)
		})
	}
	err := p.run(ctx)
	return p.stats, err
}

func (p *streamPublisher) run(ctx context.Context) error {
	for conn := 1; !p.finished(); conn++ {
		ep, err := p.open(ctx, conn)
		if err != nil {
			return err
		}
		if p.p.Mode.ConfirmMode() {
			err = p.confirmLoop(ctx, ep)
		} else {
			err = p.fireAndForgetLoop(ctx, ep)
		}
		ep.close()
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil && !errors.Is(err, traffic.ErrEpochOver) {
			return err
		}
	}
	return nil
}

// finished: every id published, nothing waiting for a republish, nothing in flight.
func (p *streamPublisher) finished() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.next >= p.p.Messages && len(p.retry) == 0 && p.tracker.InFlight() == 0
}

// take returns the next id to publish: the lowest republish first, then
// the next fresh id.
func (p *streamPublisher) take() (seq int, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	seq, _, ok = traffic.TakeNext(&p.retry, &p.next, p.p.Messages)
	return seq, ok
}

// putBack returns an id taken but not published.
func (p *streamPublisher) putBack(seq int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.retry = traffic.QueueOldestFirst(p.retry, seq)
}

// requeue queues an in-doubt id for a republish under republish: in-doubt.
func (p *streamPublisher) requeue(seq int) {
	if p.p.Republish.RepublishesInDoubt() {
		p.putBack(seq)
	}
}

func (p *streamPublisher) signalSettled() { p.settled.Signal() }

// settledC returns the channel the next settlement closes; take it before
// checking the state it guards.
func (p *streamPublisher) settledC() <-chan struct{} { return p.settled.Wait() }

// pace waits for seq's slot of the rate schedule (see publisher.pace): a
// publisher behind schedule catches up without waiting, and the confirm
// latency from the intended time keeps the delay it suffered.
func (p *streamPublisher) pace(ctx context.Context, seq int) error { return p.sched.Pace(ctx, seq) }

func (p *streamPublisher) published() {
	p.statsMu.Lock()
	p.stats.Publishes++
	p.stats.LastPublish = time.Now()
	p.statsMu.Unlock()
	if p.p.OnPublished != nil {
		p.p.OnPublished(p.p.Ledger.Sent(), p.tracker.InFlight())
	}
}

// open connects a producer, with exponential backoff (50 ms doubling to
// 1 s) until it succeeds or plan.ReconnectTimeout passes: after a restart
// the stream port may open, and the stream get its leader, after AMQP.
func (p *streamPublisher) open(ctx context.Context, conn int) (*streamEpoch, error) {
	var ep *streamEpoch
	err := traffic.Redial(ctx, p.p.ReconnectTimeout, func() (err error) {
		ep, err = p.dial(conn)
		return err
	}, noPort, func(err error) {
		p.s.Log.Debug("stream producer not ready", "err", err)
	})
	if err != nil {
		return nil, err
	}
	return ep, nil
}

// dial opens one epoch: an environment, a producer on the stream and the
// reader of its confirmations.
func (p *streamPublisher) dial(conn int) (*streamEpoch, error) {
	env, err := p.s.environment()
	if err != nil {
		return nil, err
	}
	opts := stream.NewProducerOptions().SetClientProvidedName("rmqtorture-publisher").
		SetQueueSize(max(2*p.p.Window, 2*streamFFBuffer)).SetConfirmationTimeOut(p.p.ConfirmTimeout)
	if p.p.Deduplication {
		opts.SetProducerName(StreamProducerName)
	}
	prod, err := env.NewProducer(p.p.Queue, opts)
	if err != nil {
		closeEnv(env)
		return nil, fmt.Errorf("stream producer on %q: %w", p.p.Queue, err)
	}
	p.epochs++
	ep := &streamEpoch{p: p, s: traffic.Session{Epoch: metrics.Epoch(p.epochs), Publisher: 1, Connection: conn},
		env: env, prod: prod, done: make(chan struct{})}
	if p.p.Mode.ConfirmMode() {
		ep.slots = make(chan struct{}, max(1, p.p.Window))
	}
	if conn > 1 {
		p.statsMu.Lock()
		p.stats.Reconnects++
		p.statsMu.Unlock()
	}
	p.p.Timeline.Record(ep.s.Event(metrics.EvConnected, fmt.Sprintf("epoch %d: stream producer, connection %d", ep.s.Epoch, conn)))
	go ep.read(prod.NotifyPublishConfirmation())
	return ep, nil
}

// message builds order seq's stream message: the order id as AMQP 1.0
// message-id, the publish attempt (confirm modes) as an application
// property, and seq+1 as its publishing id.
func (p *streamPublisher) message(seq, attempt int) *streamamqp.AMQP10 {
	id := p.p.Ledger.MessageID(seq)
	body, isJSON := amqp.OrderBody(id, seq, p.p.MessageSizeBytes, p.p.MessageSizeSet || p.p.MessageSizeBytes > 0)
	contentType := "application/json"
	if !isJSON {
		contentType = "application/octet-stream" // cut below the order's JSON
	}
	m := streamamqp.NewMessage(body)
	m.Properties = &streamamqp.MessageProperties{MessageID: id, ContentType: contentType, CreationTime: time.Now()}
	if attempt > 0 {
		m.ApplicationProperties = map[string]any{amqp.AttemptHeader: int32(attempt)}
	}
	m.SetPublishingId(int64(seq) + 1)
	return m
}

// confirmLoop publishes in confirm mode with at most plan.Window messages
// unconfirmed until the burst is done or the epoch ends.
func (p *streamPublisher) confirmLoop(ctx context.Context, ep *streamEpoch) error {
	for {
		wake := p.settledC()
		seq, ok := p.take()
		if !ok {
			if p.tracker.InFlight() == 0 {
				return nil
			}
			if err := traffic.Await(ctx, wake, ep.done); err != nil {
				return err
			}
			continue
		}
		if err := p.pace(ctx, seq); err != nil {
			p.putBack(seq)
			return err
		}
		select {
		case ep.slots <- struct{}{}:
		case <-ep.done:
			p.putBack(seq)
			return traffic.ErrEpochOver
		case <-ctx.Done():
			p.putBack(seq)
			return ctx.Err()
		}
		if err := ep.publishTracked(seq); err != nil {
			return err
		}
	}
}

// fireAndForgetLoop hands every order to the client without awaiting its
// confirmation: a Send that returned only reached the client's queue. A
// Send that fails is retried on the next connection and not counted as
// sent, as over AMQP.
func (p *streamPublisher) fireAndForgetLoop(ctx context.Context, ep *streamEpoch) error {
	for {
		seq, ok := p.take()
		if !ok {
			ep.flush()
			return nil
		}
		if err := p.pace(ctx, seq); err != nil {
			p.putBack(seq)
			return err
		}
		if err := ep.room(ctx); err != nil {
			p.putBack(seq)
			return err
		}
		if err := ep.send(seq, 0); err != nil {
			p.p.Ledger.PublishFailed(seq, false)
			p.putBack(seq)
			p.p.Timeline.Record(ep.s.Event(metrics.EvConnectionLost, "publish: "+err.Error()))
			return traffic.ErrEpochOver
		}
		p.p.Ledger.Published(seq, false)
		if ep.sent.Add(1) == 1 {
			e := ep.s.Event(metrics.EvFirstProgress, fmt.Sprintf("epoch %d: first publish", ep.s.Epoch))
			e.Progress = metrics.ProgressPublish
			p.p.Timeline.Record(e)
		}
		p.published()
		select {
		case <-ep.done:
			return traffic.ErrEpochOver
		default:
		}
	}
}

// streamEpoch is one producer connection.
type streamEpoch struct {
	p    *streamPublisher
	s    traffic.Session
	env  *stream.Environment
	prod *stream.Producer
	// slots is the window in confirm modes: one per tracked message,
	// released when it settles (nil in fire-and-forget).
	slots chan struct{}
	// trackMu orders Track+Published against CloseEpoch: a message is in
	// the tracker and the ledger, or in neither.
	trackMu   sync.Mutex
	closing   atomic.Bool   // the epoch is ending by rmqtorture's choice
	endOnce   sync.Once     // ends the epoch once
	done      chan struct{} // closed once read has turned what was pending into in-doubt
	sent      atomic.Int64  // fire-and-forget: messages handed to the client
	resolved  atomic.Int64  // fire-and-forget: their confirmations and failures seen
	confirmed bool          // a confirmation settled a message (read's goroutine only)
}

// publishTracked publishes seq holding a window slot, tracked under its
// publishing id before the call so a confirmation always finds it.
func (ep *streamEpoch) publishTracked(seq int) error {
	p := ep.p
	tag := uint64(seq) + 1
	ep.trackMu.Lock()
	tracked, err := p.tracker.Track(ep.s.Epoch, tag, seq, time.Now())
	attempt := 0
	if tracked {
		attempt = p.p.Ledger.Published(seq, true)
	}
	ep.trackMu.Unlock()
	if err := traffic.Tracked(tracked, err, ep.slots, p.putBack, seq); err != nil {
		return err // the epoch closed meanwhile, or a bookkeeping bug
	}
	if err := ep.send(seq, attempt); err != nil {
		// The client refused it (its producer closed): in doubt, as a
		// failed AMQP publish call, and republished under in-doubt.
		if _, still := p.tracker.Settle(ep.s.Epoch, tag); still {
			p.p.Ledger.PublishFailed(seq, true)
			p.requeue(seq)
			<-ep.slots
		}
		p.p.Timeline.Record(ep.s.Event(metrics.EvConnectionLost, "publish: "+err.Error()))
		return traffic.ErrEpochOver
	}
	p.published()
	return nil
}

// send hands seq to the client. The client's queue can be closed under a
// blocked Send when its connection dies (a send on a closed channel): that
// panic is a failed publish, not rmqtorture's end.
func (ep *streamEpoch) send(seq, attempt int) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("stream client: %v", r)
		}
	}()
	return ep.prod.Send(ep.p.message(seq, attempt))
}

// room waits, in fire-and-forget, until fewer than streamFFBuffer messages
// are unsettled in the client.
func (ep *streamEpoch) room(ctx context.Context) error {
	for {
		wake := ep.p.settledC()
		if ep.sent.Load()-ep.resolved.Load() < streamFFBuffer {
			return nil
		}
		if err := traffic.Await(ctx, wake, ep.done); err != nil {
			return err
		}
	}
}

// flush ends a fire-and-forget connection whose sends all returned: it
// waits until the client has written them and the broker confirmed each
// (up to the confirm timeout, at least 10 s), as closing an AMQP
// connection waits for connection.close-ok. Closing the producer sooner
// drops what the client still queues: a loss rmqtorture, not the broker,
// would have caused.
func (ep *streamEpoch) flush() {
	wait := max(ep.p.p.ConfirmTimeout, 10*time.Second)
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		wake := ep.p.settledC()
		if ep.resolved.Load() >= ep.sent.Load() {
			return
		}
		select {
		case <-wake:
		case <-ep.done:
			return
		case <-timer.C:
			ep.p.p.Timeline.Record(ep.s.Event(metrics.EvConnectionLost, fmt.Sprintf("epoch %d: %d sends not settled within %s: they may be lost", ep.s.Epoch, ep.sent.Load()-ep.resolved.Load(), wait)))
			return
		}
	}
}

// end ends the epoch: closing the environment closes the producer, which
// reports what is unconfirmed and closes its confirmation channel.
func (ep *streamEpoch) end() {
	ep.endOnce.Do(func() { closeEnv(ep.env) })
}

// close ends the epoch by rmqtorture's choice and waits until read has
// settled everything it tracked.
func (ep *streamEpoch) close() {
	ep.closing.Store(true)
	ep.end()
	<-ep.done
}

// read settles the epoch's confirmations until the client closes the
// channel (the producer closed), then declares what is pending in doubt.
func (ep *streamEpoch) read(confirms stream.ChannelPublishConfirm) {
	defer close(ep.done)
	for batch := range confirms {
		for _, cs := range batch {
			ep.status(cs)
		}
	}
	ep.closed()
}

// clientSide reports a confirmation status the client made up itself: a
// confirmation timeout (also how it reports what was unconfirmed when its
// connection closed), a message it never sent because its producer closed,
// or one too large to send. None says whether the broker stored it.
func clientSide(err error) bool {
	return errors.Is(err, stream.ConfirmationTimoutError) || errors.Is(err, stream.AlreadyClosed) || errors.Is(err, stream.FrameTooLarge)
}

// status settles one confirmation status.
func (ep *streamEpoch) status(cs *stream.ConfirmationStatus) {
	p := ep.p
	if !p.p.Mode.ConfirmMode() {
		ep.resolved.Add(1)
		p.signalSettled()
		return
	}
	switch {
	case cs.IsConfirmed():
		ep.settle(uint64(cs.GetPublishingId()), true)
	case clientSide(cs.GetError()):
		// Left pending: closing the epoch declares it in doubt (and
		// records the loss once).
		ep.end()
	default:
		p.s.Log.Warn("stream publish error", "publishing_id", cs.GetPublishingId(), "err", cs.GetError())
		ep.settle(uint64(cs.GetPublishingId()), false)
	}
}

// settle settles the message of one confirmation (ack) or publish error.
func (ep *streamEpoch) settle(tag uint64, ack bool) {
	p := ep.p
	pend, ok := p.tracker.Settle(ep.s.Epoch, tag)
	if !ok {
		p.s.Log.Warn("confirmation for an unknown publishing id ignored", "epoch", ep.s.Epoch, "publishing_id", tag)
		return
	}
	now := time.Now()
	p.p.Latency.Record(now.Sub(pend.PublishedAt))
	p.sched.RecordIntended(p.p.IntendedLatency, pend.Seq, now)
	if err := p.p.Ledger.Settle(pend.Seq, ack); err != nil {
		p.s.Log.Error("ledger", "err", err)
	}
	p.statsMu.Lock()
	if ack {
		p.stats.Acked++
	}
	p.stats.LastConfirm = now
	p.statsMu.Unlock()
	<-ep.slots
	p.signalSettled()
	ep.s.FirstConfirm(p.p.Timeline, &ep.confirmed)
}

// closed declares every message still pending on the epoch in doubt (a
// closed producer is not a publish error) and releases their slots.
func (ep *streamEpoch) closed() {
	p := ep.p
	if !p.p.Mode.ConfirmMode() {
		if !ep.closing.Load() {
			p.p.Timeline.Record(ep.s.Event(metrics.EvConnectionLost, fmt.Sprintf("epoch %d: stream producer closed", ep.s.Epoch)))
		}
		p.signalSettled()
		return
	}
	ep.trackMu.Lock()
	pending := p.tracker.CloseEpoch(ep.s.Epoch)
	ep.trackMu.Unlock()
	for _, pend := range pending {
		p.p.Ledger.MarkInDoubt(pend.Seq)
		p.requeue(pend.Seq)
		<-ep.slots
	}
	if !ep.closing.Load() || len(pending) > 0 {
		p.p.Timeline.Record(ep.s.Event(metrics.EvConnectionLost, fmt.Sprintf("epoch %d: stream producer closed, %d in doubt", ep.s.Epoch, len(pending))))
	}
	p.signalSettled()
}
