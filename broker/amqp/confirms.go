package amqp

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/rmqtorture/rmqtorture/broker/internal/traffic"
	"github.com/rmqtorture/rmqtorture/metrics"
	"github.com/rmqtorture/rmqtorture/scenario"
)

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
	s     traffic.Session
	slots chan struct{} // the window: one slot per tracked message, released when it settles
	// trackMu orders Track+Published against CloseEpoch: a message is in
	// the tracker and the ledger, or in neither.
	trackMu     sync.Mutex
	closing     atomic.Bool   // the epoch is ending by rmqtorture's choice
	lastConfirm atomic.Int64  // unix ns of the latest confirm, read by the watcher
	done        chan struct{} // closed once run has turned what was pending into in-doubt
	confirmed   bool          // a confirm settled a message on this epoch
	// timeouts is the epoch's state under load.on_confirm_timeout:
	// republish; nil under close. onTick republishes what timed out (set
	// by the publish loop, which owns the channel).
	timeouts *confirmTimeouts
	onTick   func() error
	// msgs builds the messages the publish loop sends on the epoch.
	msgs messageBuilder
}

func newConfirmReader(p *publisher, s traffic.Session, window int) *confirmReader {
	r := &confirmReader{p: p, s: s, slots: make(chan struct{}, window), done: make(chan struct{})}
	if p.p.OnConfirmTimeout == scenario.OnTimeoutRepublish {
		r.timeouts = newConfirmTimeouts(p.p.ConfirmTimeout)
	}
	return r
}

// run reads the epoch's confirms and returns until the confirm listener is
// closed, then declares what is pending in doubt and closes r.done. Confirms
// already queued are read together (amqp091-go expands a multiple ack into
// one Confirmation per tag) and settled as one batch: each frees its window
// slot as soon as the ledger has it, and the statistics, the watcher's
// clock and the settlement broadcast are updated once per batch.
func (r *confirmReader) run(confirms <-chan amqp.Confirmation, returns <-chan amqp.Return) {
	defer close(r.done)
	batch := make([]amqp.Confirmation, 0, confirmBatch)
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
			batch = append(batch[:0], c)
			open := true
		more:
			for len(batch) < confirmBatch {
				select {
				case c, ok := <-confirms:
					if !ok {
						open = false
						break more
					}
					batch = append(batch, c)
				default:
					break more
				}
			}
			// Every return sent before a confirm of the batch is queued by
			// now: amqp091-go hands it over before that confirm.
			returns = r.drainReturns(returns)
			r.confirmAll(batch)
			if !open {
				r.channelClosed()
				return
			}
		}
	}
}

// confirmBatch is the most confirms run settles as one batch.
const confirmBatch = 1024

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
	tracked, err = r.p.tracker.Track(r.s.Epoch, tag, seq, at)
	if tracked {
		attempt = r.p.p.Ledger.Published(seq, true)
		if r.timeouts != nil {
			r.p.tracker.SetAttempt(r.s.Epoch, tag, attempt)
			r.timeouts.original(seq, at)
		}
	}
	return attempt, tracked, err
}

// publishFailed settles a tracked message whose publish call failed: in
// doubt (an application sees the error but not whether the frame left),
// queued again under republish: in-doubt, and its slot released. Nothing
// happens when the reader already settled it.
func (r *confirmReader) publishFailed(tag uint64, seq int) {
	if _, still := r.p.tracker.Settle(r.s.Epoch, tag); !still {
		return
	}
	r.p.p.Ledger.PublishFailed(seq, true)
	r.p.requeue(seq)
	<-r.slots
}

// confirm settles the message of one basic.ack or basic.nack (a batch of
// one).
func (r *confirmReader) confirm(c amqp.Confirmation) { r.confirmAll([]amqp.Confirmation{c}) }

// confirmAll settles the messages of confirms read together, at one time.
func (r *confirmReader) confirmAll(cs []amqp.Confirmation) {
	p := r.p
	now := time.Now()
	matched, acked := 0, 0
	for _, c := range cs {
		ok, ack := r.settle(c, now)
		if ok {
			matched++
			if ack {
				acked++
			}
		}
	}
	if matched == 0 {
		return
	}
	p.statsMu.Lock()
	p.stats.Acked += acked
	for range acked {
		p.stats.AckedOn(r.s.Node)
	}
	p.stats.LastConfirm = now
	p.statsMu.Unlock()
	p.signalSettled()
	r.lastConfirm.Store(now.UnixNano())
	r.s.FirstConfirm(p.p.Timeline, &r.confirmed)
}

// settle settles the message of one basic.ack or basic.nack received at
// now, freeing its window slot. Under on_confirm_timeout: republish an id
// may have several copies pending on the epoch: the first confirm settles
// it and frees its slot, later ones only close their copy. matched is false
// for a tag not pending; ack says whether a matched confirm was an ack.
func (r *confirmReader) settle(c amqp.Confirmation, now time.Time) (matched, ack bool) {
	p := r.p
	if !c.Ack && p.p.Republish == scenario.RepublishNackedAndInDoubt {
		// Held until the id is queued again (or not): a publisher finding
		// nothing in flight meanwhile must not end the burst without it.
		p.held.Add(1)
		defer p.release()
	}
	if r.timeouts != nil {
		// Serialised with trackCopy: a copy is published only while its id
		// is still in flight.
		r.trackMu.Lock()
	}
	pend, ok := p.tracker.Settle(r.s.Epoch, c.DeliveryTag)
	settled := false
	var err error
	if ok {
		p.markPastDeadline(now, pend.Seq)
		settled, err = p.p.Ledger.SettleAttempt(pend.Seq, pend.Attempt, c.Ack)
	}
	if r.timeouts != nil {
		r.timeouts.confirmed(c.DeliveryTag)
		r.trackMu.Unlock()
	}
	if !ok {
		p.a.Log.Warn("confirm for an unknown delivery tag ignored", "epoch", r.s.Epoch, "tag", c.DeliveryTag)
		return false, false
	}
	if settled || err != nil {
		<-r.slots // a bookkeeping error still frees the slot: never a hang
	}
	if err != nil {
		p.a.Log.Error("ledger", "err", err)
	}
	if settled {
		p.p.Latency.Record(now.Sub(pend.PublishedAt))
		p.sched.RecordIntended(p.p.IntendedLatency, pend.Seq, now)
		if !c.Ack {
			p.nacked(pend.Seq)
		}
	}
	return true, c.Ack
}

// channelClosed declares every message still pending on the epoch in doubt
// (a closed listener is not a nack) and releases their slots.
func (r *confirmReader) channelClosed() {
	p := r.p
	r.trackMu.Lock()
	pending := p.tracker.CloseEpoch(r.s.Epoch)
	r.trackMu.Unlock()
	now := time.Now()
	ids := 0
	for _, pend := range pending {
		// Two tags of one id (a copy under on_confirm_timeout: republish)
		// put it in doubt, requeue it and free its slot once.
		if p.inDoubt(pend.Seq) {
			ids++
			<-r.slots
		}
		p.markPastDeadline(now, pend.Seq)
	}
	if !r.closing.Load() || len(pending) > 0 {
		p.p.Timeline.Record(r.s.Event(metrics.EvConnectionLost, inDoubtText(r.s.Epoch, ids, len(pending))))
	}
	p.signalSettled()
}

// inDoubtText says how many ids a closed channel left in doubt, and how
// many publishes of them were awaiting a confirm when that differs (an
// original and its timeout copy are one id).
func inDoubtText(epoch metrics.Epoch, ids, tags int) string {
	text := fmt.Sprintf("epoch %d: channel closed, %d in doubt", epoch, ids)
	if tags != ids {
		text += fmt.Sprintf(" (%d publishes of them awaited a confirm: originals and their timeout copies)", tags)
	}
	return text
}

// confirmTimeouts is one epoch's state under load.on_confirm_timeout:
// republish. Originals wait, in publish order, for their confirm timeout;
// each one still unconfirmed then is published again on the same channel,
// once, as a copy that takes no window slot (its id holds one already). The
// copies' publish times bound the connection: the watcher closes it when a
// copy has waited confirm_timeout in turn (rabbitmq/amqp091-go#122).
type confirmTimeouts struct {
	timeout time.Duration
	tick    *time.Ticker

	mu        sync.Mutex
	originals []timedOriginal      // publish order, hence publish-time order
	copies    map[uint64]time.Time // delivery tag of a copy → its publish time, until its confirm
}

type timedOriginal struct {
	seq int
	at  time.Time
}

func newConfirmTimeouts(timeout time.Duration) *confirmTimeouts {
	return &confirmTimeouts{timeout: timeout, tick: time.NewTicker(min(timeout/4, 250*time.Millisecond)),
		copies: map[uint64]time.Time{}}
}

func (t *confirmTimeouts) original(seq int, at time.Time) {
	t.mu.Lock()
	t.originals = append(t.originals, timedOriginal{seq, at})
	t.mu.Unlock()
}

func (t *confirmTimeouts) confirmed(tag uint64) {
	t.mu.Lock()
	delete(t.copies, tag)
	t.mu.Unlock()
}

// oldestCopy is the publish time of the oldest copy still awaiting its
// confirm, for the watcher's deadline.
func (t *confirmTimeouts) oldestCopy() (time.Time, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	var oldest time.Time
	found := false
	for _, at := range t.copies {
		if !found || at.Before(oldest) {
			oldest, found = at, true
		}
	}
	return oldest, found
}

// tickC is the reader's timeout check tick; nil (never ready) under close.
func (r *confirmReader) tickC() <-chan time.Time {
	if r.timeouts == nil {
		return nil
	}
	return r.timeouts.tick.C
}

// stopTimeouts stops the check tick.
func (r *confirmReader) stopTimeouts() {
	if r.timeouts != nil {
		r.timeouts.tick.Stop()
	}
}

// dueCopies returns, in publish order, the ids whose original has waited
// confirm_timeout by now and is still in flight, and forgets every original
// so old (each id is copied at most once per epoch).
func (r *confirmReader) dueCopies(now time.Time) []int {
	t := r.timeouts
	t.mu.Lock()
	defer t.mu.Unlock()
	var due []int
	i := 0
	for ; i < len(t.originals) && now.Sub(t.originals[i].at) >= t.timeout; i++ {
		if seq := t.originals[i].seq; r.p.p.Ledger.Outcome(seq) == metrics.InFlight {
			due = append(due, seq)
		}
	}
	t.originals = t.originals[i:]
	return due
}

// trackCopy tracks a copy of seq under delivery tag tag, its original
// staying tracked, and returns its attempt. ok is false, nothing tracked,
// when seq was settled meanwhile or the epoch has closed.
func (r *confirmReader) trackCopy(tag uint64, seq int) (attempt int, ok bool, err error) {
	r.trackMu.Lock()
	defer r.trackMu.Unlock()
	if r.p.p.Ledger.Outcome(seq) != metrics.InFlight {
		return 0, false, nil
	}
	now := time.Now()
	if ok, err = r.p.tracker.Track(r.s.Epoch, tag, seq, now); !ok || err != nil {
		return 0, false, err
	}
	attempt = r.p.p.Ledger.Published(seq, true)
	r.p.tracker.SetAttempt(r.s.Epoch, tag, attempt)
	r.timeouts.mu.Lock()
	r.timeouts.copies[tag] = now
	r.timeouts.mu.Unlock()
	return attempt, true, nil
}

// republishTimedOut publishes on ch a copy of every id whose confirm has
// not come within confirm_timeout, keeping the connection. It runs on the
// publish loop's goroutine: delivery tags follow the channel's publish
// order. A failed publish ends the epoch (traffic.ErrEpochOver); the copy's tag
// stays tracked, so the closing channel puts its id in doubt once.
func (r *confirmReader) republishTimedOut(ctx context.Context, ch *amqp.Channel, w *watcher) error {
	p, n := r.p, 0
	for _, seq := range r.dueCopies(time.Now()) {
		tag := ch.GetNextPublishSeqNo()
		attempt, ok, err := r.trackCopy(tag, seq)
		if err != nil {
			return err // a bookkeeping bug: stop rather than miscount
		}
		if !ok {
			continue
		}
		exchange, key := p.route(r.s, seq)
		w.callStarted()
		err = ch.PublishWithContext(ctx, exchange, key, true, false, p.publishing(&r.msgs, seq, attempt))
		w.progress()
		if err != nil {
			w.callFailed(err)
			p.p.Timeline.Record(r.s.Event(metrics.EvConnectionLost, "publish of a copy after a confirm timeout: "+err.Error()))
			return traffic.ErrEpochOver
		}
		p.published(r.s, time.Now())
		n++
	}
	if n > 0 {
		p.p.Timeline.Record(r.s.Event(metrics.EvConfirmTimeout, fmt.Sprintf("epoch %d: %d messages unconfirmed after %s published again on the same channel", r.s.Epoch, n, r.timeouts.timeout)))
	}
	return nil
}
