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

// A kill with the window full: the in_flight trigger fires at exactly 10
// unconfirmed, the publisher holds until the broker is down, its 10
// unconfirmed ids go in doubt (the broker had stored them), the next id
// fails in doubt while the broker is down, and after the start all 11 are
// republished: 10 come back twice from the queue, none is lost.
func TestKillWithMessagesInFlightIsRepublished(t *testing.T) {
	f := mustParse(t, `version: 1
scenarios:
  - name: t
    queue: {settle_before_burst: 0s}
    load: {messages: 50, window: 10, modes: [confirm-window]}
    faults: [{action: kill, in_flight: 10, down: 50ms}]
`)
	b := &fakeBroker{}
	tr := &fakeTraffic{b: b, holdAt: 10}
	res, down := newRunner(b, tr).RunMode(context.Background(), &f.Scenarios[0], scenario.ConfirmWindow)
	c := res.Counts
	if down || res.Verdict.Status != scenario.Pass || c.Sent != 50 || c.Confirmed != 50 || c.WentInDoubt != 11 || c.Republished != 11 ||
		c.InDoubt != 0 || c.Duplicates != 10 || c.Lost != 0 || c.PublishErrors != 1 || res.Reconnects != 1 {
		t.Fatalf("down %v verdict %+v counts %+v reconnects %d", down, res.Verdict, c, res.Reconnects)
	}
	if len(res.Faults) != 1 || res.Faults[0].AtPublished != 10 || res.Faults[0].Trigger != "10 in flight" {
		t.Fatalf("faults %+v", res.Faults)
	}
	if got := strings.Join(b.ops, " ") + " / " + strings.Join(b.targets, ","); got != "kill start / broker,broker" {
		t.Fatalf("ops %q", got)
	}
	// The engine's events say what acted on what.
	want := map[metrics.EventKind]string{metrics.EvTrigger: "kill", metrics.EvFault: "kill", metrics.EvBrokerStarted: "start", metrics.EvBrokerReady: "start"}
	for _, e := range res.Events {
		if a, ok := want[e.Kind]; ok {
			if e.Action != a || e.Target != "broker" || (e.Kind != metrics.EvBrokerReady && e.Detail == "") {
				t.Errorf("%s event: action %q target %q detail %q", e.Kind, e.Action, e.Target, e.Detail)
			}
			delete(want, e.Kind)
		}
	}
	if len(want) != 0 {
		t.Errorf("events missing: %v", want)
	}
	if rec := res.Faults[0].Recovery; rec == nil || rec.PublisherReconnectedMS == nil || rec.FirstConfirmMS != nil {
		t.Errorf("recovery %s", show(rec))
	}
}

// With republish: none, the in-doubt ids stay in doubt: the 10 the broker
// stored are delivered unconfirmed, the one that failed is missing.
func TestKillWithoutRepublishLeavesInDoubt(t *testing.T) {
	f := mustParse(t, `version: 1
scenarios:
  - name: t
    queue: {settle_before_burst: 0s}
    load: {messages: 50, window: 10, republish: none, modes: [confirm-window]}
    faults: [{action: kill, in_flight: 10, down: 50ms}]
`)
	b := &fakeBroker{}
	res, _ := newRunner(b, &fakeTraffic{b: b, holdAt: 10}).RunMode(context.Background(), &f.Scenarios[0], scenario.ConfirmWindow)
	c := res.Counts
	if c.Sent != 50 || c.Confirmed != 39 || c.InDoubt != 11 || c.Republished != 0 || c.Duplicates != 0 || c.Lost != 0 {
		t.Fatalf("counts %+v", c)
	}
}

// A kill repeating every 100 ms (room for the publisher to reconnect between
// firings on a busy machine), 3 times, within a 1,000-message burst of about
// half a second, with messages always in flight:
// each outage puts the window in doubt and one more id fails while the
// broker is down; every in-doubt id is republished, and every republish of
// a stored id (all but the 3 failed publishes) is a duplicate. An id
// republished after one outage can still be in flight at the next and go in
// doubt again, so republishes can exceed the ids that went in doubt.
func TestRepeatingKillRepublishesEachOutage(t *testing.T) {
	f := mustParse(t, `version: 1
scenarios:
  - name: t
    queue: {settle_before_burst: 0s}
    load: {messages: 1000, window: 5}
    faults: [{action: kill, after: 1ms, every: 100ms, count: 3, down: 5ms}]
`)
	b := &fakeBroker{}
	res, _ := newRunner(b, &fakeTraffic{b: b, perPublish: 200 * time.Microsecond}).RunMode(context.Background(), &f.Scenarios[0], scenario.ConfirmWindow)
	c := res.Counts
	if got := strings.Join(b.ops, " "); got != "kill start kill start kill start" {
		t.Fatalf("ops %q", got)
	}
	if res.Verdict.Status != scenario.Pass || res.Reconnects != 3 || c.Sent != 1000 || c.Confirmed != 1000 || c.InDoubt != 0 || c.Lost != 0 {
		t.Fatalf("verdict %+v reconnects %d counts %+v faults %+v burst %v ms", res.Verdict, res.Reconnects, c, res.Faults, res.BurstMS)
	}
	if c.WentInDoubt < 3*2 || c.Republished < c.WentInDoubt || c.Duplicates != c.Republished-3 || c.PublishErrors != 3 {
		t.Fatalf("went in doubt %d republished %d duplicates %d publish errors %d", c.WentInDoubt, c.Republished, c.Duplicates, c.PublishErrors)
	}
	for i, r := range res.Faults {
		if r.Firing != i+1 {
			t.Fatalf("record %d: firing %d", i, r.Firing)
		}
	}
}

// A memory alarm that cannot be raised is tried back off; when that fails
// too the broker may be left altered: noted, and the run is inconclusive.
func TestFailedAlarmWhoseClearFailsIsNoted(t *testing.T) {
	f := mustParse(t, `version: 1
scenarios:
  - name: t
    queue: {settle_before_burst: 0s}
    load: {messages: 50}
    faults: [{action: memory-alarm, published: 10}]
`)
	b := &fakeBroker{alarmErr: errors.New("rabbitmqctl exited 69")}
	res, down := newRunner(b, &fakeTraffic{}).RunMode(context.Background(), &f.Scenarios[0], scenario.ConfirmWindow)
	if got := strings.Join(b.ops, " "); got != "alarm-true alarm-false" {
		t.Fatalf("ops %q", got)
	}
	want := "memory-alarm failed, and undoing it failed too (rabbitmqctl exited 69): the broker may be left altered"
	if !down || res.Verdict.Status != scenario.Inconclusive || len(res.Notes) != 1 || res.Notes[0] != want || res.Faults[0].Error != "rabbitmqctl exited 69" {
		t.Fatalf("down %v verdict %+v notes %q faults %+v", down, res.Verdict, res.Notes, res.Faults)
	}
}

// A memory alarm raised and cleared after down: fault and fault-cleared
// events carry the action and target.
func TestMemoryAlarmClearedInPlace(t *testing.T) {
	f := mustParse(t, `version: 1
scenarios:
  - name: t
    queue: {settle_before_burst: 0s}
    load: {messages: 50}
    faults: [{action: memory-alarm, published: 10, down: 1ms}]
`)
	b := &fakeBroker{}
	res, _ := newRunner(b, &fakeTraffic{b: b, holdAt: 10}).RunMode(context.Background(), &f.Scenarios[0], scenario.ConfirmWindow)
	if got := strings.Join(b.ops, " "); got != "alarm-true alarm-false" || res.Verdict.Status != scenario.Pass {
		t.Fatalf("ops %q verdict %+v", got, res.Verdict)
	}
	n := 0
	for _, e := range res.Events {
		if e.Kind == metrics.EvFaultCleared && e.Action == "memory-alarm" && e.Target == "broker" && e.Detail == "memory alarm cleared (watermark restored)" {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("events %+v", res.Events)
	}
}
