package amqp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/rmqtorture/rmqtorture/broker/internal/amqpx"
	"github.com/rmqtorture/rmqtorture/broker/internal/traffic"
	"github.com/rmqtorture/rmqtorture/metrics"
	"github.com/rmqtorture/rmqtorture/scenario"
)

// watcher keeps one publisher connection honest and bounded. It records why
// the broker closed the channel or connection (reply code and text), the
// time the connection spent blocked (connection.blocked / unblocked, e.g. a
// memory alarm), client stalls (connected, no publish call running,
// nothing published and nothing confirmed for StallTimeout, and not
// blocked), and it ends the connection
// when a confirm is older than ConfirmTimeout or a publish call has been
// stuck that long: amqp091-go does not honour contexts mid-write, so
// without this a blocked or paused broker would hang the publisher forever.
type watcher struct {
	p           *publisher
	conn        *amqp.Connection
	s           traffic.Session
	oldest      func() (time.Time, bool) // oldest pending confirm; nil in fire-and-forget
	lastConfirm *atomic.Int64            // unix ns of the latest confirm; nil in fire-and-forget

	lastCall atomic.Int64 // unix ns when the latest publish call returned
	inCall   atomic.Int64 // unix ns when the running publish call started; 0 when none
	blocked  atomic.Bool
	// blockedAt is when the current blocked spell began (unix ns).
	blockedAt atomic.Int64
	// callErr is the socket error a publish call on this connection
	// returned (see callFailed), nil when none did.
	callErr atomic.Pointer[error]

	closed   chan struct{} // closed once the channel or connection has closed
	done     chan struct{} // closed to end the deadline and stall checks
	doneOnce sync.Once
	wg       sync.WaitGroup
}

// watch starts a watcher for one epoch; stop ends it.
// oldest and lastConfirm are nil in fire-and-forget.
func (p *publisher) watch(conn *amqp.Connection, ch *amqp.Channel, s traffic.Session, oldest func() (time.Time, bool), lastConfirm *atomic.Int64) *watcher {
	w := &watcher{p: p, conn: conn, s: s, oldest: oldest, lastConfirm: lastConfirm, closed: make(chan struct{}), done: make(chan struct{})}
	w.lastCall.Store(time.Now().UnixNano())
	chClose := ch.NotifyClose(make(chan *amqp.Error, 1))
	connClose := conn.NotifyClose(make(chan *amqp.Error, 1))
	blocks := conn.NotifyBlocked(make(chan amqp.Blocking, 8))
	w.wg.Add(3)
	go w.closes(chClose, connClose)
	go w.blocks(blocks)
	go w.deadlines()
	return w
}

// callStarted marks the start of a publish call; progress its end.
func (w *watcher) callStarted() { w.callStartedAt(time.Now()) }
func (w *watcher) progress()    { w.progressAt(time.Now()) }

// callStartedAt is callStarted at a time the caller read already (one
// clock read a message on the publish path); progressAt is progress.
func (w *watcher) callStartedAt(now time.Time) { w.inCall.Store(now.UnixNano()) }
func (w *watcher) progressAt(now time.Time) {
	w.inCall.Store(0)
	w.lastCall.Store(now.UnixNano())
}

// callFailed keeps err, the error a publish call on this connection
// returned, when it is the socket's (a write that failed), for closes to
// word the close by: amqp091-go ends the connection on a failed write from
// a goroutine of its own (connection.go, send: go c.shutdown(&Error{Code:
// FrameError, Reason: err.Error()})), and rmqtorture's own close of the
// connection right after the failed call can win that race, so that the
// close listeners are closed without an error. amqp091-go's own errors
// (*amqp.Error: the connection was closed already, with its reason) and
// context errors are not kept.
func (w *watcher) callFailed(err error) {
	var ae *amqp.Error
	if err == nil || errors.As(err, &ae) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return
	}
	w.callErr.CompareAndSwap(nil, &err)
}

// stop closes the connection (bounded) and waits for the watcher's
// goroutines, so every close reason and blocked interval is recorded.
func (w *watcher) stop() {
	w.stopDeadlines()
	amqpx.CloseConn(w.conn)
	w.wg.Wait()
}

// stopDeadlines ends the deadline and stall checks while close reasons and
// blocked time are still recorded: for rmqtorture's own final wait on a
// connection, which is neither a stuck call nor a client stall.
func (w *watcher) stopDeadlines() { w.doneOnce.Do(func() { close(w.done) }) }

func (w *watcher) closes(chClose, connClose chan *amqp.Error) {
	defer w.wg.Done()
	defer close(w.closed)
	var e *amqp.Error
	var what string
	select {
	case e = <-chClose:
		what = "channel"
	case e = <-connClose:
		what = "connection"
	}
	if e == nil {
		cause := w.callErr.Load()
		if cause == nil {
			return // closed by rmqtorture itself
		}
		// A failed write whose shutdown lost the race to rmqtorture's
		// close (callFailed): the error amqp091-go would have given.
		e, what = &amqp.Error{Code: amqp.FrameError, Reason: (*cause).Error()}, "connection"
	}
	a, inEffect, _ := w.p.p.Faults.InEffect()
	reason := closeReason(what, e, a, inEffect)
	if w.blocked.Load() {
		if r, ok := blockedTimeoutReason(e, time.Since(time.Unix(0, w.blockedAt.Load())), w.p.p.Heartbeat, a, inEffect); ok {
			reason = r
		}
	}
	w.p.statsMu.Lock()
	w.p.stats.ChannelCloses = append(w.p.stats.ChannelCloses, reason)
	w.p.statsMu.Unlock()
	w.p.p.Timeline.Record(w.s.Event(metrics.EvConnectionLost, fmt.Sprintf("epoch %d: %s", w.s.Epoch, reason)))
}

// closeReason words why a channel or connection closed, as observed: the
// broker's reply code and text; or, for a socket amqp091-go lost (which it
// reports as the client's own 501 FRAME_ERROR with the socket error as its
// text), "connection lost" and what the socket error means. When a broker
// fault was in effect (fault, inEffect) it says so: "connection lost: EOF
// (socket closed by the peer) while the broker was being killed".
func closeReason(what string, e *amqp.Error, fault scenario.Action, inEffect bool) string {
	under := ""
	if inEffect {
		under = " " + fault.While()
	}
	switch {
	case e.Server:
		return fmt.Sprintf("%s closed by broker: %d %s%s", what, e.Code, e.Reason, under)
	case e.Code == amqp.FrameError:
		return fmt.Sprintf("connection lost: %s (%s)%s", e.Reason, socketCause(e.Reason), under)
	}
	return fmt.Sprintf("%s closed by client: %d %s%s", what, e.Code, e.Reason, under)
}

// blockedTimeoutReason words a socket read timeout on a connection the
// broker held blocked for blockedFor: amqp091-go's heartbeat goroutine
// waits for the send lock that the blocked publish write holds, so it stops
// renewing the read deadline (three intervals of half the heartbeat: 1.5
// heartbeats, connection.go's heartbeater started with Heartbeat/2) and the client
// ends the connection itself, though the broker's heartbeats still arrive
// (measured with amqp091-go 1.16.0 and RabbitMQ 4.0.5; its connection.go,
// heartbeater and send). ok is false for any other close.
func blockedTimeoutReason(e *amqp.Error, blockedFor, heartbeat time.Duration, fault scenario.Action, inEffect bool) (reason string, ok bool) {
	if e.Server || e.Code != amqp.FrameError || !strings.Contains(e.Reason, "i/o timeout") {
		return "", false
	}
	if heartbeat <= 0 {
		heartbeat = 10 * time.Second
	}
	under := ""
	if inEffect {
		under = " " + fault.While()
	}
	return fmt.Sprintf("connection ended by the client after %s blocked by the broker: %s (amqp091-go's heartbeat waits behind the blocked publish write, so its read deadline, 1.5 × load.heartbeat %s, expired; what the socket still held is lost)%s",
		blockedFor.Round(100*time.Millisecond), e.Reason, heartbeat, under), true
}

// socketCause says what a socket error read from amqp091-go means.
func socketCause(reason string) string {
	switch {
	case reason == io.EOF.Error():
		return "socket closed by the peer"
	case strings.Contains(reason, "connection reset"):
		return "socket reset by the peer"
	case strings.Contains(reason, "broken pipe"):
		return "socket closed by the peer during a write"
	case strings.Contains(reason, "i/o timeout"):
		return "nothing heard from the broker for 1.5 heartbeats"
	}
	return "socket error"
}

func (w *watcher) blocks(blocks chan amqp.Blocking) {
	defer w.wg.Done()
	var since time.Time
	account := func(until time.Time) {
		w.p.statsMu.Lock()
		w.p.stats.BlockedMS += metrics.Millis(until.Sub(since))
		w.p.statsMu.Unlock()
	}
	for b := range blocks {
		switch {
		case b.Active && !w.blocked.Load():
			since = time.Now()
			w.blockedAt.Store(since.UnixNano())
			w.blocked.Store(true)
			w.record(since, metrics.EvBlocked, fmt.Sprintf("epoch %d: %s", w.s.Epoch, b.Reason))
		case !b.Active && w.blocked.Load():
			now := time.Now()
			account(now)
			w.blocked.Store(false)
			w.record(now, metrics.EvUnblocked, fmt.Sprintf("epoch %d", w.s.Epoch))
		}
	}
	if w.blocked.Load() { // the connection closed while blocked
		account(time.Now())
	}
}

// record adds an event of the watched session at at.
func (w *watcher) record(at time.Time, kind metrics.EventKind, detail string) {
	e := w.s.Event(kind, detail)
	e.At = at
	w.p.p.Timeline.Record(e)
}

func (w *watcher) deadlines() {
	defer w.wg.Done()
	timeout := w.p.p.ConfirmTimeout
	tick := time.NewTicker(min(timeout/4, 250*time.Millisecond))
	defer tick.Stop()
	stalled := false
	for {
		select {
		case <-w.done:
			return
		case <-w.closed:
			return
		case <-tick.C:
		}
		now := time.Now()
		if w.oldest != nil {
			if t, ok := w.oldest(); ok && now.Sub(t) > timeout {
				w.record(now, metrics.EvConnectionLost, fmt.Sprintf("epoch %d: no confirm within %s: closing the connection, its pending messages are in doubt", w.s.Epoch, timeout))
				amqpx.CloseConn(w.conn)
				return
			}
		}
		if t := w.inCall.Load(); t != 0 && now.Sub(time.Unix(0, t)) > timeout {
			w.record(now, metrics.EvConnectionLost, fmt.Sprintf("epoch %d: a publish call was stuck for %s: closing the connection", w.s.Epoch, timeout))
			amqpx.CloseConn(w.conn)
			return
		}
		w.checkStall(now, &stalled)
	}
}

// checkStall records a client stall: connected, no publish call running,
// nothing published or confirmed for StallTimeout, not blocked, and no
// broker fault in effect. While a broker fault is in effect, no progress is
// the fault's effect, not a client stall (php-amqplib#787): it is recorded
// once as no-progress and not counted, and after the fault the idle time
// counts from its end. stalled latches one record per idle spell.
func (w *watcher) checkStall(now time.Time, stalled *bool) {
	last := w.lastCall.Load()
	if w.lastConfirm != nil {
		last = max(last, w.lastConfirm.Load())
	}
	a, inEffect, ended := w.p.p.Faults.InEffect()
	if !ended.IsZero() {
		last = max(last, ended.UnixNano())
	}
	idle := now.Sub(time.Unix(0, last))
	switch {
	case idle <= w.p.p.StallTimeout:
		*stalled = false
	// A publish call still running is waiting on the broker (TCP
	// pushback, e.g. the moment after connection.unblocked), not a
	// client stall; the call deadline bounds it.
	case *stalled || w.blocked.Load() || w.inCall.Load() != 0:
	case inEffect:
		*stalled = true
		e := w.s.Event(metrics.EvNoProgress, fmt.Sprintf("epoch %d: no progress for %s %s: the fault's effect, not a client stall", w.s.Epoch, idle.Round(time.Millisecond), a.While()))
		e.At, e.Action = now, string(a)
		w.p.p.Timeline.Record(e)
	default:
		*stalled = true
		w.p.statsMu.Lock()
		w.p.stats.Stalls++
		w.p.statsMu.Unlock()
		w.record(now, metrics.EvStall, fmt.Sprintf("epoch %d: connected, nothing published or confirmed for %s", w.s.Epoch, idle.Round(time.Millisecond)))
	}
}
