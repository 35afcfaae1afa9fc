package engine

import (
	"fmt"
	"testing"
	"time"

	"github.com/rmqtorture/rmqtorture/metrics"
	"github.com/rmqtorture/rmqtorture/scenario"
)

func TestMeasureRatesAndDowntime(t *testing.T) {
	start := time.Now()
	tl := metrics.NewTimeline(start)
	tl.Record(metrics.Event{At: start.Add(100 * time.Millisecond), Kind: metrics.EvFault, Action: string(scenario.Kill)})
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

// Downtime is what was observed: a kill's runs from the fault to the first
// login accepted again; a step that does not take the broker down (a
// command clearing a policy, a node drained) has none unless a publisher
// lost its connection, and then it is that publisher's time without one.
func TestBrokerDowntimeObserved(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	ms := func(v *float64) string {
		if v == nil {
			return "none"
		}
		return fmt.Sprint(*v)
	}
	for _, tc := range []struct {
		name   string
		events []metrics.Event
		want   string
	}{
		{"kill: fault to login", []metrics.Event{{At: at(100), Kind: metrics.EvFault, Action: string(scenario.Kill)}, {At: at(150), Kind: metrics.EvConnectionLost},
			{At: at(4100), Kind: metrics.EvBrokerReady}, {At: at(4300), Kind: metrics.EvConnected}}, "4000"},
		{"command, nobody lost a connection", []metrics.Event{{At: at(100), Kind: metrics.EvFault, Action: string(scenario.Command)},
			{At: at(6100), Kind: metrics.EvBrokerReady}}, "none"},
		{"command draining the publisher's node", []metrics.Event{{At: at(100), Kind: metrics.EvFault, Action: string(scenario.Command)}, {At: at(700), Kind: metrics.EvConnectionLost},
			{At: at(1900), Kind: metrics.EvConnected}, {At: at(13600), Kind: metrics.EvBrokerReady}}, "1200"},
		{"a loss before the fault is not its outage", []metrics.Event{{At: at(50), Kind: metrics.EvConnectionLost}, {At: at(60), Kind: metrics.EvConnected},
			{At: at(100), Kind: metrics.EvFault, Action: string(scenario.Partition)}}, "none"},
		{"never reconnected", []metrics.Event{{At: at(100), Kind: metrics.EvFault, Action: string(scenario.Command)}, {At: at(700), Kind: metrics.EvConnectionLost}}, "none"},
		{"the next fault's outage is its own", []metrics.Event{{At: at(100), Kind: metrics.EvFault, Action: string(scenario.Command)},
			{At: at(5000), Kind: metrics.EvFault, Action: string(scenario.Kill)}, {At: at(5100), Kind: metrics.EvConnectionLost}, {At: at(9000), Kind: metrics.EvConnected}}, "none"},
		{"the publisher that lost its connection", []metrics.Event{{At: at(100), Kind: metrics.EvFault, Action: string(scenario.Partition)},
			{At: at(300), Kind: metrics.EvConnectionLost, Publisher: 2}, {At: at(400), Kind: metrics.EvConnected, Publisher: 1}, {At: at(2300), Kind: metrics.EvConnected, Publisher: 2}}, "2000"},
		{"closed connections: the broker stayed up", []metrics.Event{{At: at(100), Kind: metrics.EvFault, Action: string(scenario.CloseConnections)},
			{At: at(110), Kind: metrics.EvConnectionLost}, {At: at(600), Kind: metrics.EvConnected}}, "none"},
	} {
		if got := ms(brokerDowntime(tc.events, at(100))); got != tc.want {
			t.Errorf("%s: downtime %s ms, want %s", tc.name, got, tc.want)
		}
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
