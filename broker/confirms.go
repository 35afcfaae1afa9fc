package broker

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/rmqtorture/rmqtorture/metrics"
)

// session identifies one publisher connection on the timeline: its epoch
// (the key of its delivery tags), the publisher (index+1) and which of that
// publisher's connections it is (1 for the first).
type session struct {
	epoch      metrics.Epoch
	publisher  int
	connection int
}

// event returns a timeline event of kind for this session, with a human
// detail; code reads the typed fields only.
func (s session) event(kind metrics.EventKind, detail string) metrics.Event {
	return metrics.Event{Kind: kind, Epoch: s.epoch, Publisher: s.publisher, Connection: s.connection, Detail: detail}
}

// confirmReader is the only place one confirm-mode epoch's publisher
// confirms are matched to messages. The publish loop tracks each message
// (track) after taking a window slot; the reader settles it from the
// confirms and basic.returns amqp091-go delivers, releasing its slot:
//   - a basic.return precedes its basic.ack on the wire and amqp091-go
//     hands it over first, so every queued return is read before a confirm
//     (streadway/amqp#254): the message is returned, not confirmed;
//   - amqp091-go expands a multiple ack or nack into one Confirmation per
//     delivery tag, in tag order; tags are matched one by one, in any order;
//   - a confirm for a tag that is not pending (a bogus tag 0 as
//     streadway/amqp#199 produced, or one already settled) is ignored;
//   - a closed listener means the channel closed: amqp091-go resolves
//     nothing further (rabbitmq/amqp091-go#46), so everything still pending
//     is in doubt, never nacked.
type confirmReader struct {
	p     *publisher
	s     session
	slots chan struct{} // the window: one slot per tracked message, released when it settles
	// trackMu orders Track+Published against CloseEpoch: a message is in
	// the tracker and the ledger, or in neither.
	trackMu     sync.Mutex
	closing     atomic.Bool   // the epoch is ending by rmqtorture's choice
	lastConfirm atomic.Int64  // unix ns of the latest confirm, read by the watcher
	done        chan struct{} // closed once run has turned what was pending into in-doubt
	confirmed   bool          // a confirm settled a message on this epoch
}

func newConfirmReader(p *publisher, s session, window int) *confirmReader {
	return &confirmReader{p: p, s: s, slots: make(chan struct{}, window), done: make(chan struct{})}
}

// run reads the epoch's confirms and returns until the confirm listener is
// closed, then declares what is pending in doubt and closes r.done.
func (r *confirmReader) run(confirms <-chan amqp.Confirmation, returns <-chan amqp.Return) {
	defer close(r.done)
	for {
		select {
		case ret, ok := <-returns:
			if !ok {
				returns = nil
				continue
			}
			r.returned(ret)
		case c, ok := <-confirms:
			if !ok {
				r.channelClosed()
				return
			}
			returns = r.drainReturns(returns)
			r.confirm(c)
		}
	}
}

// drainReturns takes every basic.return already queued; it returns nil once
// the returns listener is closed.
func (r *confirmReader) drainReturns(returns <-chan amqp.Return) <-chan amqp.Return {
	for {
		select {
		case ret, ok := <-returns:
			if !ok {
				return nil
			}
			r.returned(ret)
		default:
			return returns
		}
	}
}

func (r *confirmReader) returned(ret amqp.Return) { recordReturn(r.p.p.Ledger, ret) }

// track records seq as published with delivery tag tag, in the tracker and
// the ledger, and returns the ledger's attempt number. tracked is false
// when the epoch is already closed: nothing was recorded and the caller
// still holds its slot. err is a bookkeeping bug (a tag tracked twice).
func (r *confirmReader) track(tag uint64, seq int, at time.Time) (attempt int, tracked bool, err error) {
	r.trackMu.Lock()
	defer r.trackMu.Unlock()
	tracked, err = r.p.tracker.Track(r.s.epoch, tag, seq, at)
	if tracked {
		attempt = r.p.p.Ledger.Published(seq, true)
	}
	return attempt, tracked, err
}

// publishFailed settles a tracked message whose publish call failed: in
// doubt (an application sees the error but not whether the frame left),
// queued again under republish: in-doubt, and its slot released. Nothing
// happens when the reader already settled it.
func (r *confirmReader) publishFailed(tag uint64, seq int) {
	if _, still := r.p.tracker.Settle(r.s.epoch, tag); !still {
		return
	}
	r.p.p.Ledger.PublishFailed(seq, true)
	r.p.requeue(seq)
	<-r.slots
}

// confirm settles the message of one basic.ack or basic.nack.
func (r *confirmReader) confirm(c amqp.Confirmation) {
	p := r.p
	pend, ok := p.tracker.Settle(r.s.epoch, c.DeliveryTag)
	if !ok {
		p.a.Log.Warn("confirm for an unknown delivery tag ignored", "epoch", r.s.epoch, "tag", c.DeliveryTag)
		return
	}
	now := time.Now()
	p.p.Latency.Record(now.Sub(pend.PublishedAt))
	if p.p.IntendedLatency != nil && p.intended != nil {
		if due := p.intended[pend.Seq].Load(); due != 0 {
			p.p.IntendedLatency.Record(now.Sub(time.Unix(0, due)))
		}
	}
	p.markPastDeadline(now, pend.Seq)
	if err := p.p.Ledger.Settle(pend.Seq, c.Ack); err != nil {
		p.a.Log.Error("ledger", "err", err)
	}
	p.statsMu.Lock()
	if c.Ack {
		p.stats.Acked++
	}
	p.stats.LastConfirm = now
	p.statsMu.Unlock()
	<-r.slots
	p.signalSettled()
	r.lastConfirm.Store(now.UnixNano())
	if !r.confirmed {
		r.confirmed = true
		e := r.s.event(metrics.EvFirstProgress, fmt.Sprintf("epoch %d: first confirm", r.s.epoch))
		e.Progress = metrics.ProgressConfirm
		p.p.Timeline.Record(e)
	}
}

// channelClosed declares every message still pending on the epoch in doubt
// (a closed listener is not a nack) and releases their slots.
func (r *confirmReader) channelClosed() {
	p := r.p
	r.trackMu.Lock()
	pending := p.tracker.CloseEpoch(r.s.epoch)
	r.trackMu.Unlock()
	now := time.Now()
	for _, pend := range pending {
		p.inDoubt(pend.Seq)
		p.markPastDeadline(now, pend.Seq)
		<-r.slots
	}
	if !r.closing.Load() || len(pending) > 0 {
		p.p.Timeline.Record(r.s.event(metrics.EvConnectionLost, fmt.Sprintf("epoch %d: channel closed, %d in doubt", r.s.epoch, len(pending))))
	}
	p.signalSettled()
}
