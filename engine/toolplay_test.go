package engine

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/rmqtorture/rmqtorture/metrics"
	"github.com/rmqtorture/rmqtorture/scenario"
)

// An action made of the broker's tools (stop-app) is played from its spec
// alone: its Inject on the target, its Recover after down, then a wait for
// an AMQP login; the timeline's fault and fault-cleared events carry the
// spec's details, and the broker-ready event follows the recovery.
func TestToolActionPlayedFromItsSpec(t *testing.T) {
	f := mustParse(t, `version: 1
scenarios:
  - name: t
    queue: {settle_before_burst: 0s}
    load: {messages: 50}
    faults: [{action: stop-app, published: 10, down: 1ms}]
`)
	b := &fakeBroker{}
	res, down := newRunner(b, &fakeTraffic{b: b, holdAt: 10}).RunMode(context.Background(), &f.Scenarios[0], scenario.ConfirmWindow)
	tool := scenario.StopApp.Tool()
	want := "tool " + strings.Join(tool.Inject, " ") + " tool " + strings.Join(tool.Recover, " ")
	if got := strings.Join(b.ops, " "); got != want || down || res.Verdict.Status != scenario.Pass {
		t.Fatalf("ops %q (want %q) down %v verdict %+v", got, want, down, res.Verdict)
	}
	if b.targets[0] != "broker" || b.readies < 1 {
		t.Fatalf("targets %v readies %d", b.targets, b.readies)
	}
	// The recovery has a deadline of its own, counted from its start
	// (cleanupTimeout plus the ready timeout), not what the fault call's
	// left after the down; a second covers the calls between.
	if want := cleanupTimeout + f.Scenarios[0].Broker.ReadyTimeout.D() - time.Second; len(b.recoverLeft) != 1 || b.recoverLeft[0] < want {
		t.Fatalf("the recovery's context had %v left, want at least %v", b.recoverLeft, want)
	}
	var kinds []string
	for _, e := range res.Events {
		switch {
		case e.Kind == metrics.EvFault && e.Detail == tool.Applied,
			e.Kind == metrics.EvFaultCleared && e.Detail == tool.Recovered,
			e.Kind == metrics.EvBrokerReady && e.Action == string(scenario.StopApp):
			kinds = append(kinds, string(e.Kind))
		}
	}
	if got := strings.Join(kinds, " "); got != "fault fault-cleared broker-ready" {
		t.Fatalf("events %q: %+v", got, res.Events)
	}
}

// A tool action whose command fails is recovered all the same (it may
// have landed), and the step's error is the command's.
func TestFailedToolActionIsRecovered(t *testing.T) {
	f := mustParse(t, `version: 1
scenarios:
  - name: t
    queue: {settle_before_burst: 0s}
    load: {messages: 50}
    faults: [{action: stop-app, published: 10}]
`)
	b := &fakeBroker{toolErr: errors.New("rabbitmqctl exited 69")}
	res, _ := newRunner(b, &fakeTraffic{}).RunMode(context.Background(), &f.Scenarios[0], scenario.ConfirmWindow)
	tool := scenario.StopApp.Tool()
	want := "tool " + strings.Join(tool.Inject, " ") + " tool " + strings.Join(tool.Recover, " ")
	if got := strings.Join(b.ops, " "); got != want || res.Faults[0].Error != "rabbitmqctl exited 69" || len(res.Notes) != 0 {
		t.Fatalf("ops %q (want %q) faults %+v notes %q", got, want, res.Faults, res.Notes)
	}
}

// A step's call has the deadline its own bounds need, never just the 90 s
// of cleanupTimeout: assert-whole waits up to its timeout (here 5m), and
// each node of a rolling restart gets its restart, its login and the
// queue's members (grace plus twice the ready timeout) anew (a classic
// queue here: the fake cluster models no quorum members). A second
// covers the calls between.
func TestStepDeadlinesFollowTheirBounds(t *testing.T) {
	for _, tc := range []struct {
		step  string
		calls int
		want  time.Duration
	}{
		{"{action: assert-whole, published: 10, timeout: 5m}", 1, cleanupTimeout + 5*time.Minute},
		{"{action: rolling-restart, published: 10, grace: 10s}", 3, cleanupTimeout + 10*time.Second + 2*2*time.Minute},
	} {
		f := mustParse(t, `version: 1
scenarios:
  - name: t
    broker: {nodes: 3}
    queue: {type: classic, settle_before_burst: 0s}
    load: {messages: 50, modes: [confirm-window]}
    faults: [`+tc.step+`]
`)
		c := newFakeCluster()
		r := &Runner{Ports: PortsOf(c), Traffic: &fakeTraffic{b: c.fakeBroker}, Log: newRunner(nil, nil).Log, RunID: "t1"}
		res, _ := r.RunMode(context.Background(), &f.Scenarios[0], scenario.ConfirmWindow)
		if len(c.callLeft) != tc.calls {
			t.Fatalf("%s: %d calls %v; faults %+v", tc.step, len(c.callLeft), c.callLeft, res.Faults)
		}
		for _, left := range c.callLeft {
			if left < tc.want-time.Second {
				t.Errorf("%s: a call's context had %v left, want at least %v", tc.step, left, tc.want-time.Second)
			}
		}
	}
}
