package engine

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/rmqtorture/rmqtorture/metrics"
	"github.com/rmqtorture/rmqtorture/scenario"
)

// fakeBroker models one broker through the fault ports: its state (up,
// down, paused, disconnected), the ids it stores, and the operations asked
// of it. readyErr makes it never come back; killErr and alarmErr fail those
// calls (alarmErr every memory-alarm call, raise and clear).
type fakeBroker struct {
	mu       sync.Mutex
	state    metrics.BrokerState
	kills    []string
	starts   int
	readyErr error
	killErr  error
	alarmErr error
	toolErr  error // fails every ApplyTool call
	// recoverLeft is the time left to the deadline of each RecoverTool
	// call's context when it was called.
	recoverLeft []time.Duration
	// callLeft is the time left to the deadline of each Restart call's
	// context, and of each WaitWhole's (fakeCluster), when it was called.
	callLeft []time.Duration
	ops      []string
	targets  []string
	stored   map[int]int // seq → copies in the queue
	// lost counts the times the broker dropped its connections (down or
	// disconnected): a publisher that finds it changed saw its connection
	// die even if the broker is back before the publisher looked, as a real
	// client always does.
	lost    int
	readies int // WaitReady calls
}

func (b *fakeBroker) set(op string, t scenario.Target, st metrics.BrokerState) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.ops = append(b.ops, op)
	b.targets = append(b.targets, t.String())
	if st != "" {
		b.state = st
	}
	if st == metrics.StateDown || st == metrics.StateDisconnected {
		b.lost++
	}
}

// connectionsLost is how many times the broker dropped its connections.
func (b *fakeBroker) connectionsLost() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.lost
}

func (b *fakeBroker) Kill(_ context.Context, t scenario.Target, sig string) error {
	b.mu.Lock()
	b.kills = append(b.kills, sig)
	err := b.killErr
	b.mu.Unlock()
	if err != nil {
		b.set("kill", t, "")
		return err
	}
	b.set("kill", t, metrics.StateDown)
	return nil
}
func (b *fakeBroker) Start(_ context.Context, t scenario.Target) error {
	b.mu.Lock()
	b.starts++
	never := b.readyErr != nil
	b.mu.Unlock()
	if never {
		// A broker that never becomes ready takes no connection: a
		// publisher that looks only after this start must still find it
		// away, not republish into it.
		b.set("start", t, "")
		return nil
	}
	b.set("start", t, metrics.StateUp)
	return nil
}
func (b *fakeBroker) WaitReady(context.Context, scenario.Target, time.Duration) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.readies++
	return b.readyErr
}
func (b *fakeBroker) MemoryAlarm(_ context.Context, t scenario.Target, on bool) error {
	b.set(fmt.Sprintf("alarm-%v", on), t, alarmState(on, b.alarmErr))
	return b.alarmErr
}

// alarmState is the state an alarm call leaves: blocked while a raised
// alarm holds publishers (connection.blocked), up once cleared; none when
// the call failed.
func alarmState(on bool, err error) metrics.BrokerState {
	switch {
	case err != nil:
		return ""
	case on:
		return metrics.StateBlocked
	}
	return metrics.StateUp
}

// ApplyTool and RecoverTool model an action made of the broker's tools as
// stop-app is: its connections drop, and it is up again once recovered.
func (b *fakeBroker) ApplyTool(_ context.Context, t scenario.Target, p scenario.ToolPlay) error {
	if b.toolErr != nil {
		b.set("tool "+strings.Join(p.Inject, " "), t, "")
		return b.toolErr
	}
	b.set("tool "+strings.Join(p.Inject, " "), t, metrics.StateDown)
	return nil
}
func (b *fakeBroker) RecoverTool(ctx context.Context, t scenario.Target, p scenario.ToolPlay) error {
	b.noteDeadline(ctx, &b.recoverLeft)
	b.set("tool "+strings.Join(p.Recover, " "), t, metrics.StateUp)
	return nil
}
func (b *fakeBroker) CloseConnections(_ context.Context, t scenario.Target) error {
	b.set("close", t, "")
	return nil
}
func (b *fakeBroker) DiskAlarm(_ context.Context, t scenario.Target, on bool) error {
	b.set(fmt.Sprintf("disk-alarm-%v", on), t, alarmState(on, b.alarmErr))
	return b.alarmErr
}
func (b *fakeBroker) DeleteQueue(_ context.Context, t scenario.Target, q string) (int, error) {
	b.set("delete "+q, t, "")
	return b.removeAll(), nil
}
func (b *fakeBroker) PurgeQueue(_ context.Context, t scenario.Target, q string) (int, error) {
	b.set("purge "+q, t, "")
	return b.removeAll(), nil
}

// removeAll empties the queue and returns how many messages it held.
func (b *fakeBroker) removeAll() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := 0
	for _, c := range b.stored {
		n += c
	}
	b.stored = nil
	return n
}

// noteDeadline appends to *left the time left to ctx's deadline, if any.
func (b *fakeBroker) noteDeadline(ctx context.Context, left *[]time.Duration) {
	if d, ok := ctx.Deadline(); ok {
		b.mu.Lock()
		*left = append(*left, time.Until(d))
		b.mu.Unlock()
	}
}

func (b *fakeBroker) Stop(_ context.Context, t scenario.Target, _ time.Duration) error {
	b.set("stop", t, metrics.StateDown)
	return nil
}
func (b *fakeBroker) Restart(ctx context.Context, t scenario.Target, _ time.Duration) error {
	b.noteDeadline(ctx, &b.callLeft)
	b.set("restart", t, "")
	return nil
}
func (b *fakeBroker) Pause(_ context.Context, t scenario.Target) error {
	b.set("pause", t, metrics.StatePaused)
	return nil
}
func (b *fakeBroker) Unpause(_ context.Context, t scenario.Target) error {
	b.set("unpause", t, metrics.StateUp)
	return nil
}
func (b *fakeBroker) Disconnect(_ context.Context, t scenario.Target) error {
	b.set("disconnect", t, metrics.StateDisconnected)
	return nil
}
func (b *fakeBroker) Reconnect(_ context.Context, t scenario.Target) error {
	b.set("reconnect", t, metrics.StateUp)
	return nil
}

// opCount is how many operations the broker recorded.
func (b *fakeBroker) opCount() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.ops)
}

func (b *fakeBroker) current() metrics.BrokerState {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.state == "" {
		return metrics.StateUp
	}
	return b.state
}

func (b *fakeBroker) store(seq int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.stored == nil {
		b.stored = map[int]int{}
	}
	b.stored[seq]++
}

// fakeTraffic publishes synchronously. Without a broker (b nil) every
// message is acked and stored. With one it models a confirm window against
// the broker's state: ids are published until Window are unconfirmed, then
// the oldest is acked (and stored); when the publisher finds the broker
// down or disconnected, its unconfirmed ids go in doubt (the broker had
// written them: they are stored once), the next new id it tries fails in
// doubt, and once the broker is up again it republishes them all (same id)
// before going on. A paused broker, or one with an alarm raised, just holds
// the publisher. holdAt, when
// set, makes the publisher wait after that many ids until the broker
// records its next operation (a kill, an alarm), so a fault lands with
// exactly the window in flight, as a real burst still under way would
// have it (a fake burst is over in microseconds, before any fault). The drain
// delivers each stored copy once, except lose, which it drops.
type fakeTraffic struct {
	b          *fakeBroker
	holdAt     int
	perPublish time.Duration // pace of the fake burst
	lose       map[int]bool
	drained    bool
	declared   []string
	shared     []bool // QueueSpec.Shared of each declare
	consumers  *fakeConsumers
	crashErr   error
	mu         sync.Mutex
	ownStore   map[int]int
	// giveUpAfter > 0: the publisher gives up (an error, as at
	// load.reconnect_timeout) when the broker stays away this long.
	giveUpAfter time.Duration
	// probes are the probe ids published through each node (Prober);
	// probeErr[node] is the error a probe through node gets.
	probes   map[int][]string
	probeErr map[int]error
}

func (f *fakeTraffic) ConfirmThrough(_ context.Context, node int, _, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.probes == nil {
		f.probes = map[int][]string{}
	}
	f.probes[node] = append(f.probes[node], id)
	return f.probeErr[node]
}

func (f *fakeTraffic) Declare(_ context.Context, q QueueSpec) error {
	f.declared = append(f.declared, q.Name)
	f.shared = append(f.shared, q.Shared)
	return nil
}
func (f *fakeTraffic) Delete(context.Context, string) error { return nil }

func (f *fakeTraffic) store(seq int) {
	if f.b != nil {
		f.b.store(seq)
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ownStore == nil {
		f.ownStore = map[int]int{}
	}
	f.ownStore[seq]++
}

// pub is one fake publisher's state.
type pub struct {
	f       *fakeTraffic
	p       PublishPlan
	st      PublishStats
	confirm bool
	window  int
	next    int
	pending []int // published, unconfirmed, oldest first
	redo    []int // in doubt, to republish
	conns   int
	lost    int // the broker's connectionsLost when this connection opened
}

func (f *fakeTraffic) Publish(ctx context.Context, p PublishPlan) (PublishStats, error) {
	u := &pub{f: f, p: p, confirm: p.Mode.ConfirmMode(), window: max(1, p.Window), conns: 1, next: p.First}
	opsAtStart := 0
	if f.b != nil {
		opsAtStart = f.b.opCount()
	}
	for u.next < p.Messages || len(u.pending) > 0 || len(u.redo) > 0 {
		if ctx.Err() != nil {
			return u.st, ctx.Err()
		}
		time.Sleep(f.perPublish)
		if f.b != nil && f.b.current() == metrics.StateBlocked {
			// A raised alarm holds the publisher on its connection
			// (connection.blocked) until it is cleared.
			time.Sleep(100 * time.Microsecond)
			continue
		}
		if f.b != nil && (f.b.current() != metrics.StateUp || f.b.connectionsLost() != u.lost) {
			if err := u.outage(ctx); err != nil {
				return u.st, err
			}
			continue
		}
		if err := u.step(); err != nil {
			return u.st, err
		}
		if f.holdAt > 0 && u.p.Ledger.Sent() == f.holdAt && u.next == f.holdAt {
			f.holdAt = 0
			// Counted from the burst's start: the fault may have come
			// before this loop looks.
			for f.b.opCount() == opsAtStart && ctx.Err() == nil {
				time.Sleep(100 * time.Microsecond)
			}
		}
	}
	return u.st, nil
}

// step makes one move: republish, publish the next id, or take a confirm.
func (u *pub) step() error {
	switch {
	case len(u.redo) > 0:
		u.publish(u.redo[0])
		u.redo = u.redo[1:]
	case u.next < u.p.Messages && (!u.confirm || len(u.pending) < u.window):
		u.publish(u.next)
		u.next++
	default:
		seq := u.pending[0]
		u.pending = u.pending[1:]
		if err := u.p.Ledger.Settle(seq, true); err != nil {
			return err
		}
		u.f.store(seq)
		u.st.Acked++
		u.st.LastConfirm = time.Now()
	}
	u.p.OnPublished(u.p.Ledger.Sent(), len(u.pending))
	return nil
}

func (u *pub) publish(seq int) {
	u.p.Ledger.Published(seq, u.confirm)
	u.st.Publishes++
	u.st.LastPublish = time.Now()
	if u.confirm {
		u.pending = append(u.pending, seq)
	} else {
		u.f.store(seq)
	}
}

// outage plays what the publisher sees of a broker that went away: its
// unconfirmed ids in doubt (stored by the broker before it went), one
// failed attempt of the next id, then a wait for the broker and a
// reconnect.
func (u *pub) outage(ctx context.Context) error {
	b := u.f.b
	if b.current() != metrics.StatePaused {
		for _, seq := range u.pending {
			b.store(seq)
			u.p.Ledger.MarkInDoubt(seq)
		}
		u.redo = append(u.redo, u.pending...)
		u.pending = nil
		if u.confirm && u.next < u.p.Messages {
			u.p.Ledger.Published(u.next, true)
			u.p.Ledger.PublishFailed(u.next, true)
			u.redo = append(u.redo, u.next)
			u.next++
		}
		u.p.Timeline.Record(metrics.Event{Kind: metrics.EvConnectionLost, Publisher: 1, Connection: u.conns})
	}
	began := time.Now()
	for b.current() != metrics.StateUp {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if g := u.f.giveUpAfter; g > 0 && time.Since(began) > g {
			return fmt.Errorf("no connection within load.reconnect_timeout %s", g)
		}
		time.Sleep(100 * time.Microsecond)
	}
	if u.p.Republish == scenario.RepublishNone {
		u.redo = nil
	}
	u.lost = b.connectionsLost()
	u.conns++
	u.st.Reconnects++
	u.p.Timeline.Record(metrics.Event{Kind: metrics.EvConnected, Publisher: 1, Connection: u.conns, Epoch: metrics.Epoch(u.conns),
		Detail: fmt.Sprintf("epoch %d: publisher 0, connection %d", u.conns, u.conns)})
	return nil
}

func (f *fakeTraffic) Drain(_ context.Context, d DrainPlan) error {
	f.drained = true
	stored := f.ownStore
	if f.b != nil {
		stored = f.b.stored
	}
	for seq := range d.Ledger.Size() {
		for range stored[seq] {
			if !f.lose[seq] {
				d.Ledger.Delivered(d.Ledger.MessageID(seq), false)
			}
		}
	}
	return nil
}

// Consume starts fake live consumers that record nothing themselves (the
// fake drain delivers): they count crash requests.
func (f *fakeTraffic) Consume(_ context.Context, c ConsumePlan) (LiveConsumers, error) {
	f.consumers = &fakeConsumers{plan: c, crashErr: f.crashErr}
	return f.consumers, nil
}

type fakeConsumers struct {
	crashErr error
	plan     ConsumePlan
	mu       sync.Mutex
	crashes  []time.Duration
	stopped  bool
	last     time.Time
}

func (c *fakeConsumers) Crash(down time.Duration) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.crashes = append(c.crashes, down)
	return 7, c.crashErr
}
func (c *fakeConsumers) LastDelivery() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.last
}
func (c *fakeConsumers) Stop() scenario.ConsumerStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stopped = true
	return scenario.ConsumerStats{Count: c.plan.Consumers.Count, Crashes: len(c.crashes), UnackedAtCrash: 7 * len(c.crashes)}
}
