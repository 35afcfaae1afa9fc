package engine

import (
	"testing"
	"time"

	"github.com/rmqtorture/rmqtorture/metrics"
	"github.com/rmqtorture/rmqtorture/scenario"
)

func TestMeasureRatesAndDowntime(t *testing.T) {
	start := time.Now()
	tl := metrics.NewTimeline(start)
	tl.AddAt(start.Add(100*time.Millisecond), metrics.EvFault, "kill")
	tl.AddAt(start.Add(400*time.Millisecond), metrics.EvBrokerReady, "")
	tl.AddAt(start.Add(1000*time.Millisecond), metrics.EvBurstEnd, "")
	res := &scenario.ModeResult{Faults: []scenario.FaultRecord{{AtMS: 100, AtPublished: 50}}}
	measure(res, PublishStats{Publishes: 1000, LastPublish: start.Add(500 * time.Millisecond), Acked: 900, LastConfirm: start.Add(900 * time.Millisecond), Reconnects: 2}, tl, start)
	if res.BurstMS != 1000 || res.PublishRate != 2000 || res.PreFaultPublishRate != 500 || res.ConfirmRate != 1000 || res.Reconnects != 2 ||
		res.BrokerDowntimeMS == nil || *res.BrokerDowntimeMS != 300 || res.ClientRecoveryMS != nil {
		t.Fatalf("%+v", res)
	}
	notes := backlogNotes([]scenario.FaultRecord{{Action: scenario.Kill, PublishedAtInject: 100, AtPublished: 90, InjectMS: 12}, {Action: scenario.Kill, PublishedAtInject: 100, AtPublished: 100}}, 100)
	if len(notes) != 1 || notes[0] != "every order had been published before the kill call returned (12 ms after its trigger): the fault hit the broker's backlog, not the burst" {
		t.Fatalf("notes %q", notes)
	}
}

// The broker may have run until the first connection loss a client saw
// after a kill's fault event (the start of its Docker call), so that is the
// down moment the dead-letter-path rule uses; without one, the fault event.
func TestDownMomentsLastAlive(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	events := []metrics.Event{
		{At: at(100), Kind: metrics.EvFault, Action: string(scenario.Kill)},
		{At: at(290), Kind: metrics.EvConnectionLost},
		{At: at(400), Kind: metrics.EvBrokerStarted},
		{At: at(900), Kind: metrics.EvFault, Action: string(scenario.Pause)}, // leaves the broker up: no down moment
		{At: at(1000), Kind: metrics.EvFault, Action: string(scenario.Stop)},
		{At: at(1200), Kind: metrics.EvBrokerStarted},
		{At: at(1300), Kind: metrics.EvConnectionLost},
	}
	got := downMoments(events)
	if len(got) != 2 || !got[0].Equal(at(290)) || !got[1].Equal(at(1000)) {
		t.Fatalf("down moments %v, want [+290ms +1000ms]", got)
	}
}
