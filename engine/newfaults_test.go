package engine

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/rmqtorture/rmqtorture/metrics"
	"github.com/rmqtorture/rmqtorture/scenario"
)

// A purge mid-burst removes exactly the confirmed ids published before it
// returned: they are counted as lost and allowed, with the broker's count,
// and the verdict passes.
func TestPurgeQueueRemovalIsNotDurabilityLoss(t *testing.T) {
	f := mustParse(t, `version: 1
scenarios:
  - name: t
    queue: {settle_before_burst: 0s}
    load: {messages: 100, window: 10}
    faults: [{action: purge-queue, published: 50}]
`)
	b := &fakeBroker{}
	res, _ := newRunner(b, &fakeTraffic{b: b, perPublish: time.Millisecond}).RunMode(context.Background(), &f.Scenarios[0], scenario.ConfirmWindow)
	if got := strings.Join(b.ops, " "); got != "purge rmqt.t1.confirm-window" {
		t.Fatalf("ops %q", got)
	}
	// The fake stores an id when it acks it, the oldest once 10 are in
	// flight: the purge removes the acked ones, and the ids in flight then
	// are acked (and stored) after it.
	rec := res.Faults[0]
	if rec.RemovedMessages == nil || *rec.RemovedMessages < 40 || len(rec.PublishedBefore) != 1 || rec.PublishedBefore[0].First != 0 ||
		rec.PublishedBefore[0].Last+1 != rec.PublishedAtInject || rec.PublishedAtInject == 100 {
		t.Fatalf("record %+v", rec)
	}
	n := *rec.RemovedMessages
	if res.Lost != n || res.RemovedByScenario != n || !res.LostAllowed || res.Verdict.Status != scenario.Pass || res.Confirmed != 100-n ||
		len(res.IDs.Lost) != 1 || res.IDs.Lost[0] != (metrics.Range{First: 0, Last: n - 1}) {
		t.Fatalf("removed %d: lost %d %v, by the scenario %d, allowed %v, confirmed %d, verdict %+v", n, res.Lost, res.IDs.Lost, res.RemovedByScenario, res.LostAllowed, res.Confirmed, res.Verdict)
	}
	want := fmt.Sprintf("%d confirmed messages were removed by the scenario's own purge-queue (the broker reported %d messages removed): published before it returned and never delivered; counted as lost, allowed: not durability loss", n, n)
	if len(res.Notes) != 1 || res.Notes[0] != want {
		t.Fatalf("notes %q", res.Notes)
	}
}

// A loss the scenario did not cause still fails: an id published after the
// purge returned and never delivered is durability loss.
func TestLossAfterThePurgeStillFails(t *testing.T) {
	f := mustParse(t, `version: 1
scenarios:
  - name: t
    queue: {settle_before_burst: 0s}
    load: {messages: 100, window: 10}
    faults: [{action: purge-queue, published: 20}]
`)
	b := &fakeBroker{}
	res, _ := newRunner(b, &fakeTraffic{b: b, perPublish: time.Millisecond, lose: map[int]bool{95: true}}).RunMode(context.Background(), &f.Scenarios[0], scenario.ConfirmWindow)
	n := *res.Faults[0].RemovedMessages
	if res.Lost != n+1 || res.RemovedByScenario != n || res.LostAllowed || res.Verdict.Status != scenario.Fail {
		t.Fatalf("removed %d: lost %d, by the scenario %d, allowed %v, verdict %+v", n, res.Lost, res.RemovedByScenario, res.LostAllowed, res.Verdict)
	}
	want := fmt.Sprintf("%d of the %d lost confirmed messages were removed by the scenario's own purge-queue (the broker reported %d messages removed); the other 1 were published after it returned: durability loss", n, n+1, n)
	if len(res.Notes) != 1 || res.Notes[0] != want {
		t.Fatalf("notes %q", res.Notes)
	}
}

// delete-queue deletes the queue, then declares it again after down, as
// the application would: the declare runs twice, and the clear is an event.
func TestDeleteQueueDeclaresItAgainAfterDown(t *testing.T) {
	f := mustParse(t, `version: 1
scenarios:
  - name: t
    queue: {settle_before_burst: 0s}
    load: {messages: 100, window: 10}
    faults: [{action: delete-queue, published: 50, down: 1ms}]
`)
	b := &fakeBroker{}
	tr := &fakeTraffic{b: b, perPublish: time.Millisecond}
	res, _ := newRunner(b, tr).RunMode(context.Background(), &f.Scenarios[0], scenario.ConfirmWindow)
	if got := strings.Join(tr.declared, " "); got != "rmqt.t1.confirm-window rmqt.t1.confirm-window" {
		t.Fatalf("declared %q", got)
	}
	n := *res.Faults[0].RemovedMessages
	if res.Verdict.Status != scenario.Pass || res.RemovedByScenario != n || res.Lost != n || n < 40 {
		t.Fatalf("verdict %+v lost %d removed %d of %d", res.Verdict, res.Lost, res.RemovedByScenario, n)
	}
	var fault, cleared string
	for _, e := range res.Events {
		switch e.Kind {
		case metrics.EvFault:
			fault = e.Detail
		case metrics.EvFaultCleared:
			cleared = e.Detail
		}
	}
	if fault != fmt.Sprintf("queue rmqt.t1.confirm-window deleted with %d messages (queue.delete-ok); declared again after 1ms", n) ||
		cleared != "queue rmqt.t1.confirm-window declared again, as the application would" {
		t.Fatalf("fault %q cleared %q", fault, cleared)
	}
}

// A disk alarm is raised and cleared in place, like the memory alarm.
func TestDiskAlarmClearedInPlace(t *testing.T) {
	f := mustParse(t, `version: 1
scenarios:
  - name: t
    queue: {settle_before_burst: 0s}
    load: {messages: 50}
    faults: [{action: disk-alarm, published: 10, down: 1ms}]
`)
	b := &fakeBroker{}
	res, _ := newRunner(b, &fakeTraffic{b: b, holdAt: 10}).RunMode(context.Background(), &f.Scenarios[0], scenario.ConfirmWindow)
	if got := strings.Join(b.ops, " "); got != "disk-alarm-true disk-alarm-false" || res.Verdict.Status != scenario.Pass {
		t.Fatalf("ops %q verdict %+v", got, res.Verdict)
	}
}

// An after_burst step fires that long after the last publish, and the
// drain waits for it: a purge then removes every confirmed id, all of them
// the scenario's doing.
func TestAfterBurstFiresAfterTheLastPublish(t *testing.T) {
	f := mustParse(t, `version: 1
scenarios:
  - name: t
    queue: {settle_before_burst: 0s}
    load: {messages: 100, window: 10}
    faults: [{action: purge-queue, after_burst: 80ms}]
`)
	b := &fakeBroker{}
	res, _ := newRunner(b, &fakeTraffic{b: b}).RunMode(context.Background(), &f.Scenarios[0], scenario.ConfirmWindow)
	if res.Verdict.Status != scenario.Pass || res.Lost != 100 || res.RemovedByScenario != 100 || len(res.Faults) != 1 {
		t.Fatalf("verdict %+v lost %d removed %d faults %+v", res.Verdict, res.Lost, res.RemovedByScenario, res.Faults)
	}
	// The step counts from the last publish call, which comes before the
	// burst's end (the window's last confirms follow it): the publish
	// rate over the burst's start to that call gives its time.
	var start, end, trigger, drain float64
	for _, e := range res.Events {
		switch e.Kind {
		case metrics.EvBurstStart:
			start = e.AtMS
		case metrics.EvBurstEnd:
			end = e.AtMS
		case metrics.EvTrigger:
			trigger = e.AtMS
		case metrics.EvDrainStart:
			drain = e.AtMS
		}
	}
	lastPublish := start + float64(res.Sent)/res.PublishRate*1000
	if res.Faults[0].Trigger != "80ms after the last publish" || lastPublish > end || trigger < lastPublish+79.9 || drain < trigger || res.Faults[0].AtPublished != 100 {
		t.Fatalf("last publish %.1f ms, burst end %.1f ms, trigger %.1f ms (%q, at %d published), drain %.1f ms", lastPublish, end, trigger, res.Faults[0].Trigger, res.Faults[0].AtPublished, drain)
	}
}

// An after_start step fires that long after the previous step started the
// container, which then does not wait for AMQP logins: the second kill hits
// a booting broker, and only its own recovery waits for readiness.
func TestAfterStartHitsTheBootingBroker(t *testing.T) {
	f := mustParse(t, `version: 1
scenarios:
  - name: t
    queue: {settle_before_burst: 0s}
    load: {messages: 100, window: 10}
    faults:
      - {action: kill, published: 30, down: 1ms}
      - {action: kill, signal: SIGTERM, after_start: 40ms, down: 1ms}
`)
	b := &fakeBroker{}
	res, _ := newRunner(b, &fakeTraffic{b: b, holdAt: 30}).RunMode(context.Background(), &f.Scenarios[0], scenario.ConfirmWindow)
	if got := strings.Join(b.ops, " "); got != "kill start kill start" || strings.Join(b.kills, " ") != "SIGKILL SIGTERM" || b.readies != 1 {
		t.Fatalf("ops %q kills %v readies %d", got, b.kills, b.readies)
	}
	if res.Verdict.Status != scenario.Pass || len(res.Faults) != 2 || res.Faults[1].Trigger != "40ms after the container started" {
		t.Fatalf("verdict %+v faults %+v", res.Verdict, res.Faults)
	}
	var started, second float64
	ready := 0
	for _, e := range res.Events {
		switch {
		case e.Kind == metrics.EvBrokerStarted && started == 0:
			started = e.AtMS
		case e.Kind == metrics.EvTrigger && e.Detail == "kill (40ms after the container started)":
			second = e.AtMS
		case e.Kind == metrics.EvBrokerReady:
			ready++
			if second == 0 {
				t.Fatalf("broker ready before the second kill: %+v", res.Events)
			}
		}
	}
	if second < started+39 || ready != 1 {
		t.Fatalf("started %.1f ms, second kill %.1f ms, %d ready events", started, second, ready)
	}
}

// A burst shape makes call k due at its burst's start: floor(k/n)·every.
func TestBurstScheduleDueTimes(t *testing.T) {
	f := mustParse(t, `version: 1
scenarios:
  - name: t
    load: {messages: 10, burst: {messages: 4, every: 250ms}}
`)
	p := publishPlan(&f.Scenarios[0], scenario.ConfirmWindow, "q")
	if !p.Scheduled() || (PublishPlan{}).Scheduled() || !(PublishPlan{Rate: 2}).Scheduled() {
		t.Fatal("Scheduled")
	}
	for k, want := range []time.Duration{0, 0, 0, 0, 250 * time.Millisecond, 250 * time.Millisecond, 250 * time.Millisecond, 250 * time.Millisecond, 500 * time.Millisecond, 500 * time.Millisecond} {
		if got := p.DueAfter(int64(k)); got != want {
			t.Errorf("call %d due at +%s, want +%s", k, got, want)
		}
	}
	if got := (PublishPlan{Rate: 4}).DueAfter(3); got != 750*time.Millisecond {
		t.Errorf("rate 4: call 3 due at +%s", got)
	}
}

// A stop that took its whole grace period ended with Docker's SIGKILL, and
// its detail says so.
func TestStopDetailSaysHowItEnded(t *testing.T) {
	if got := stopDetail(5*time.Second, 1200*time.Millisecond); got != "stop (SIGTERM, SIGKILL after 5s): the broker exited on SIGTERM" {
		t.Error(got)
	}
	if got := stopDetail(5*time.Second, 5100*time.Millisecond); got != "stop (SIGTERM, SIGKILL after 5s): the broker did not exit on SIGTERM within 5s; Docker sent SIGKILL" {
		t.Error(got)
	}
}
