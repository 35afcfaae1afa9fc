package engine

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rmqtorture/rmqtorture/metrics"
	"github.com/rmqtorture/rmqtorture/scenario"
)

// callWatcher wraps the fake broker: each call takes callTime, during which
// 50 more ids are published, and it notes whether a broker fault was in
// effect as the call started ("restart:restart", "start:-").
type callWatcher struct {
	*fakeBroker
	fault    *FaultState
	sent     atomic.Int64
	callTime time.Duration
	seen     []string
}

func (c *callWatcher) call(op string) {
	a, ok, _ := c.fault.InEffect()
	if !ok {
		a = "-"
	}
	c.seen = append(c.seen, fmt.Sprintf("%s:%s", op, a))
	time.Sleep(c.callTime)
	c.sent.Add(50)
}

func (c *callWatcher) Kill(ctx context.Context, t scenario.Target, sig string) error {
	c.call("kill")
	return c.fakeBroker.Kill(ctx, t, sig)
}
func (c *callWatcher) Restart(ctx context.Context, t scenario.Target, g time.Duration) error {
	c.call("restart")
	return c.fakeBroker.Restart(ctx, t, g)
}
func (c *callWatcher) Pause(ctx context.Context, t scenario.Target) error {
	c.call("pause")
	return c.fakeBroker.Pause(ctx, t)
}
func (c *callWatcher) Start(ctx context.Context, t scenario.Target) error {
	c.call("start")
	return c.fakeBroker.Start(ctx, t)
}
func (c *callWatcher) CloseConnections(ctx context.Context, t scenario.Target) error {
	c.call("close")
	return c.fakeBroker.CloseConnections(ctx, t)
}
func (c *callWatcher) WaitReady(ctx context.Context, t scenario.Target, d time.Duration) error {
	c.call("ready")
	return c.fakeBroker.WaitReady(ctx, t, d)
}

func testInjector(t *testing.T, callTime time.Duration) (*injector, *callWatcher) {
	t.Helper()
	f := mustParse(t, "version: 1\nscenarios:\n  - name: t\n    load: {messages: 10}\n")
	c := &callWatcher{fakeBroker: &fakeBroker{}, fault: &FaultState{}, callTime: callTime}
	c.sent.Store(100)
	start := time.Now()
	in := &injector{ports: PortsOf(c), log: slog.New(slog.NewTextHandler(io.Discard, nil)), s: &f.Scenarios[0],
		tl: metrics.NewTimeline(start), start: start, sent: func() int { return int(c.sent.Load()) },
		target: scenario.BrokerTarget(), misroute: make(chan struct{}), fault: c.fault}
	return in, c
}

func eventAt(t *testing.T, tl *metrics.Timeline, kind metrics.EventKind) metrics.Event {
	t.Helper()
	for _, e := range tl.Events() {
		if e.Kind == kind {
			return e
		}
	}
	t.Fatalf("no %s event in %+v", kind, tl.Events())
	return metrics.Event{}
}

// A restart takes effect as its call starts (the broker closes connections
// during the call: streadway/amqp#421): the fault event sits at the
// trigger, with the ids published then, and the container is running when
// the call returns; the fault is in effect until the broker is ready.
func TestRestartTimedFromCallStart(t *testing.T) {
	in, c := testInjector(t, 30*time.Millisecond)
	rec, err := in.inject(context.Background(), &scenario.Fault{Action: scenario.Restart}, "25% published")
	if err != nil {
		t.Fatal(err)
	}
	if rec.InjectMS != 0 || rec.PublishedAtInject != 100 || rec.CallMS < 30 {
		t.Fatalf("record %+v: want effect 0 ms after the trigger with 100 published, call >= 30 ms", rec)
	}
	trigger, fault, started, ready := eventAt(t, in.tl, metrics.EvTrigger), eventAt(t, in.tl, metrics.EvFault), eventAt(t, in.tl, metrics.EvBrokerStarted), eventAt(t, in.tl, metrics.EvBrokerReady)
	if !fault.At.Equal(trigger.At) || started.At.Sub(fault.At) < 30*time.Millisecond || ready.At.Before(started.At) ||
		!strings.Contains(fault.Detail, "took effect as the call started; it returned after") {
		t.Fatalf("trigger %v fault %v (%q) started %v ready %v", trigger.AtMS, fault.AtMS, fault.Detail, started.AtMS, ready.AtMS)
	}
	if got := strings.Join(c.seen, " "); got != "restart:restart ready:restart" {
		t.Fatalf("fault in effect at each call: %q", got)
	}
	if _, ok, ended := c.fault.InEffect(); ok || ended.IsZero() {
		t.Fatal("restart still in effect after broker-ready")
	}
	recs := []scenario.FaultRecord{rec}
	recoveries(recs, in.tl.Events(), nil, true)
	r := recs[0].Recovery
	if r == nil || r.ContainerRunningMS == nil || r.AMQPAcceptingMS == nil ||
		*r.ContainerRunningMS != metrics.Millis(started.At.Sub(fault.At)) || *r.AMQPAcceptingMS != metrics.Millis(ready.At.Sub(fault.At)) {
		t.Fatalf("recovery %s: container running when the call returned, AMQP when ready", show(r))
	}
}

// A pause takes effect when its call returns, with what was published by
// then; it is in effect from the call's start through the unpause until
// the broker is ready.
func TestPauseTimedFromCallReturn(t *testing.T) {
	in, c := testInjector(t, 10*time.Millisecond)
	rec, err := in.inject(context.Background(), &scenario.Fault{Action: scenario.Pause, Down: scenario.Duration(time.Millisecond)}, "after 1s")
	if err != nil {
		t.Fatal(err)
	}
	if rec.InjectMS < 10 || rec.InjectMS != rec.CallMS || rec.PublishedAtInject != 150 {
		t.Fatalf("record %+v: want effect at the call's return with 150 published", rec)
	}
	if got := strings.Join(c.seen, " "); got != "pause:pause ready:pause" {
		t.Fatalf("fault in effect at each call: %q", got)
	}
	if _, ok, _ := c.fault.InEffect(); ok {
		t.Fatal("pause still in effect after broker-ready")
	}
}

// A kill left down (manual_recovery) stays in effect until the start step's
// broker is ready; the start step's record carries what was published when
// it took effect (not 0), and a restore at the end of the burst what was
// published when it ran.
func TestRecoveryStepRecords(t *testing.T) {
	in, c := testInjector(t, time.Millisecond)
	kill, err := in.inject(context.Background(), &scenario.Fault{Action: scenario.Kill, Signal: "SIGKILL", ManualRecovery: true}, "20% published")
	if err != nil || kill.InjectMS != 0 || kill.PublishedAtInject != 100 || kill.Signal != "SIGKILL" {
		t.Fatalf("kill %+v %v", kill, err)
	}
	if a, ok, _ := c.fault.InEffect(); !ok || a != scenario.Kill {
		t.Fatal("a kill left down is not in effect")
	}
	start, err := in.inject(context.Background(), &scenario.Fault{Action: scenario.Start}, "after 3s")
	if err != nil || start.PublishedAtInject != 200 || start.InjectMS <= 0 || start.CallMS != start.InjectMS || start.Trigger != "after 3s" {
		t.Fatalf("start %+v %v: want 200 published when it took effect", start, err)
	}
	if got := strings.Join(c.seen, " "); got != "kill:kill start:kill ready:kill" {
		t.Fatalf("fault in effect at each call: %q", got)
	}
	if _, ok, _ := c.fault.InEffect(); ok {
		t.Fatal("kill still in effect after the start step's broker-ready")
	}

	in.pending = scenario.Start
	rec, ok, err := in.restorePending(context.Background())
	if !ok || err != nil || rec.AtPublished != 250 || rec.PublishedAtInject != 300 {
		t.Fatalf("restore %+v %v %v: want 250 published at its start, 300 when it took effect", rec, ok, err)
	}
}

// A fault that leaves the broker up is in effect during its call only; a
// client-side fault never is.
func TestFaultInEffectOnlyForBrokerFaults(t *testing.T) {
	in, c := testInjector(t, time.Millisecond)
	if _, err := in.inject(context.Background(), &scenario.Fault{Action: scenario.CloseConnections}, "30% published"); err != nil {
		t.Fatal(err)
	}
	if _, ok, ended := c.fault.InEffect(); ok || ended.IsZero() || strings.Join(c.seen, " ") != "close:close-connections" {
		t.Fatalf("close-connections: in effect %v after its call; seen %q", ok, c.seen)
	}
	ended := func() time.Time { _, _, e := c.fault.InEffect(); return e }()
	if _, err := in.inject(context.Background(), &scenario.Fault{Action: scenario.PublishToMissingExchange}, "50% published"); err != nil {
		t.Fatal(err)
	}
	if _, ok, e := c.fault.InEffect(); ok || !e.Equal(ended) {
		t.Fatal("a client-side fault set the broker fault state")
	}
}

// TestPlaybookCoversTheTable: the engine plays every action of the
// scenario's table: each fault step has a play (the playbook's, or the
// one play of the actions made of the broker's tools), each action
// recovered in place (no recovery step) an unplay, each recovery step its
// recoverWith, none holds an action the table does not know, and no
// action made of the broker's tools is in the playbook (its file alone
// says how it is played).
func TestPlaybookCoversTheTable(t *testing.T) {
	for _, a := range scenario.Actions {
		rec, _ := a.Recovery()
		_, plays := playOf(a)
		_, undoes := unplayOf(a)
		if _, ok := playbook[a]; ok && a.Tool() != nil {
			t.Errorf("%s is made of the broker's tools (its ToolPlay), yet has a playbook entry", a)
		}
		_, recovers := recoverWith[a]
		want := [3]bool{!a.IsRecovery(), a.Recovers() && rec == "", a.IsRecovery()}
		if got := [3]bool{plays, undoes, recovers}; got != want {
			t.Errorf("%s: in playbook, unplay, recoverWith %v, want %v", a, got, want)
		}
	}
	for _, keys := range [][]scenario.Action{slices.Collect(maps.Keys(playbook)), slices.Collect(maps.Keys(unplay)), slices.Collect(maps.Keys(recoverWith))} {
		for _, a := range keys {
			if !a.Known() {
				t.Errorf("the engine plays %s, which the action table does not know", a)
			}
		}
	}
}
