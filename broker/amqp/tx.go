package amqp

import (
	"context"
	"errors"
	"fmt"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/rmqtorture/rmqtorture/broker/internal/amqpx"
	"github.com/rmqtorture/rmqtorture/broker/internal/traffic"
	"github.com/rmqtorture/rmqtorture/metrics"
)

// txn is one transactional epoch: a channel in tx mode (tx.select) that
// publishes up to plan.TxSize messages and commits them, again and again
// (mode transactional; rabbitmq-server#8966). The ledger reads a
// transaction as it reads publisher confirms: each message is tracked in
// flight under a per-channel counter standing in for a delivery tag, and
//   - tx.commit-ok settles every message of the transaction as a basic.ack
//     does: the broker took responsibility for them. RabbitMQ routes a
//     transaction's messages at commit and sends a mandatory message's
//     basic.return before the commit-ok, so the returns are read first
//     and such a message counts as returned, never confirmed;
//   - a tx.commit the broker refuses with a channel error (e.g. 406
//     PRECONDITION_FAILED "partial tx completion", or a 404 that closed the
//     channel mid-transaction) settles them as a basic.nack does: the
//     broker refused them (commitRefused);
//   - a tx.commit that did not return before the connection died (or a
//     transaction whose commit never went out) leaves its messages in
//     doubt: the broker may or may not have committed it. Under republish:
//     in-doubt they are published again on the next channel.
//
// The epoch's confirmReader does the bookkeeping (track, settle, in doubt at
// close) exactly as for publisher confirms, so the recorded history and
// `rmqtorture check` need nothing of their own for transactions.
type txn struct {
	p       *publisher
	ch      txChannel
	r       *confirmReader
	returns <-chan amqp.Return // basic.returns; nil once amqp091-go closed it
	tag     uint64             // the channel's last message number (its stand-in delivery tag)
	open    []uint64           // tags published in the open transaction
}

// txChannel is what a transactional epoch uses of its *amqp.Channel.
type txChannel interface {
	PublishWithContext(ctx context.Context, exchange, key string, mandatory, immediate bool, msg amqp.Publishing) error
	TxCommit() error
}

// txEpoch runs one transactional epoch on a new channel of conn until the
// burst is done or the channel dies.
func (p *publisher) txEpoch(ctx context.Context, conn *amqp.Connection, s traffic.Session) error {
	ch, err := openChannel(ctx, conn, false)
	if err != nil {
		return err
	}
	if err := amqpx.Bounded(ctx, amqpx.RPCTimeout, func() { amqpx.CloseConn(conn) }, ch.Tx); err != nil {
		return fmt.Errorf("%w: tx.select: %v", traffic.ErrEpochOver, err)
	}
	size := max(1, p.p.TxSize)
	// The listener holds a whole transaction's returns: amqp091-go's reader
	// blocks on a full listener, which would hold back the commit-ok.
	t := &txn{p: p, ch: ch, r: newConfirmReader(p, s, size), returns: ch.NotifyReturn(make(chan amqp.Return, size))}
	w := p.watch(conn, ch, s, func() (time.Time, bool) { return p.tracker.Oldest(s.Epoch) }, &t.r.lastConfirm)
	// Deferred calls run last first: the connection is closed (and its
	// watcher done) before what is still pending goes in doubt.
	defer t.r.channelClosed()
	defer w.stop()
	for {
		wake := p.settledC()
		n, err := t.fill(ctx, w, size)
		if err != nil {
			return err
		}
		if n > 0 {
			if err := t.commit(w); err != nil {
				return err
			}
			continue
		}
		// Nothing left to take: wait until no channel has anything in
		// flight (their in-doubt ids may come back to republish).
		if p.idle() {
			t.r.closing.Store(true)
			return nil
		}
		if err := traffic.Await(ctx, wake, w.closed); err != nil {
			return err
		}
	}
}

// fill publishes up to size ids in the open transaction and returns how
// many it published.
func (t *txn) fill(ctx context.Context, w *watcher, size int) (int, error) {
	p := t.p
	n := 0
	for n < size {
		seq, ok := p.take()
		if !ok {
			break
		}
		if p.expiredUnpublished(seq) {
			continue
		}
		if err := p.pace(ctx, seq); err != nil {
			p.putBack(seq)
			return n, err
		}
		if err := t.publish(ctx, w, seq); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// publish tracks seq under the channel's next message number, then
// publishes it inside the open transaction. A failed call leaves seq in
// doubt and ends the epoch (traffic.ErrEpochOver).
func (t *txn) publish(ctx context.Context, w *watcher, seq int) error {
	p, r := t.p, t.r
	r.slots <- struct{}{} // never blocks: a transaction holds at most size messages
	t.tag++
	if err := p.sendTracked(ctx, t.ch, w, r, t.tag, seq); err != nil {
		return err
	}
	t.open = append(t.open, t.tag)
	return nil
}

// commit commits the open transaction and settles its messages: acked on
// tx.commit-ok, nacked when the broker refused the commit, left pending
// (in doubt at the epoch's close) otherwise. The watcher bounds the call:
// a commit older than the confirm timeout closes the connection.
func (t *txn) commit(w *watcher) error {
	r := t.r
	w.callStarted()
	err := t.ch.TxCommit()
	w.progress()
	t.drainReturns()
	tags := t.open
	t.open = nil
	if err == nil {
		for _, tag := range tags {
			r.confirm(amqp.Confirmation{DeliveryTag: tag, Ack: true})
		}
		return nil
	}
	if commitRefused(err) {
		for _, tag := range tags {
			r.confirm(amqp.Confirmation{DeliveryTag: tag, Ack: false})
		}
		t.p.p.Timeline.Record(r.s.Event(metrics.EvConnectionLost, fmt.Sprintf("epoch %d: tx.commit refused (%v): its %d messages count as nacked", r.s.Epoch, err, len(tags))))
		return traffic.ErrEpochOver
	}
	t.p.p.Timeline.Record(r.s.Event(metrics.EvConnectionLost, fmt.Sprintf("epoch %d: tx.commit did not return (%v): its %d messages are in doubt", r.s.Epoch, err, len(tags))))
	return traffic.ErrEpochOver
}

// drainReturns records every basic.return already queued: those of the
// transaction just committed came before its commit-ok.
func (t *txn) drainReturns() {
	for t.returns != nil {
		select {
		case ret, ok := <-t.returns:
			if !ok {
				t.returns = nil
				return
			}
			t.r.returned(ret)
		default:
			return
		}
	}
}

// commitRefused reports whether a tx.commit error is the broker refusing
// the transaction on a live connection: a channel error the broker sent (a
// soft error: 403, 404, 405, 406…), which discards the transaction. A
// connection error (e.g. 320 CONNECTION_FORCED at a shutdown), a closed
// connection or a commit cut short by the confirm timeout is not a refusal:
// the broker may have committed it.
func commitRefused(err error) bool {
	var e *amqp.Error
	return errors.As(err, &e) && e.Server && e.Recover
}
