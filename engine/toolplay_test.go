package engine

import (
	"context"
	"errors"
	"strings"
	"testing"

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
