package cmd

import (
	"strings"
	"testing"

	"github.com/rmqtorture/rmqtorture/metrics"
	"github.com/rmqtorture/rmqtorture/scenario"
)

// stopAppScenario stops the broker's application 1,000 orders into a
// burst paced at 1,000 msg/s (12 s: rabbitmqctl takes 2–7 s to act, so
// the fault lands inside the burst on any host), for 2 s.
const stopAppScenario = `version: 1
scenarios:
  - name: stop-app
    queue: {type: quorum}
    load: {messages: 12000, modes: [confirm-window], window: 256, rate: 1000}
    faults: [{action: stop-app, published: 1000, down: 2s}]
`

// stop-app against a real broker: the stopping application closes the
// publisher's connection (so it reconnects, after start_app, at least
// down after the fault took effect), no confirmed order is lost and every
// id that went in doubt is republished once and confirmed; the timeline
// holds the spec's fault and fault-cleared details, then a login, and no
// container start: the node kept running.
func TestStopAppMidBurst(t *testing.T) {
	r := runScenarioFile(t, stopAppScenario, "stop-app")
	m := mode(t, r, scenario.ConfirmWindow)
	if m.Lost != 0 || m.InDoubt != 0 || m.Confirmed != r.Messages || m.Republished != m.WentInDoubt || m.Duplicates != m.DuplicatesFromRepublish || m.Reconnects < 1 {
		t.Fatalf("lost %d, in doubt %d, confirmed %d of %d, republished %d of %d in doubt, duplicates %d (%d from republish), reconnects %d",
			m.Lost, m.InDoubt, m.Confirmed, r.Messages, m.Republished, m.WentInDoubt, m.Duplicates, m.DuplicatesFromRepublish, m.Reconnects)
	}
	if len(m.Faults) != 1 || m.Faults[0].Error != "" || m.Faults[0].Recovery == nil {
		t.Fatalf("faults %+v", m.Faults)
	}
	f := m.Faults[0]
	if rc := f.Recovery.PublisherReconnectedMS; rc == nil || *rc < f.DownMS {
		t.Fatalf("publisher reconnected %v ms after the fault took effect, before its down of %.0f ms", rc, f.DownMS)
	}
	tool := scenario.StopApp.Tool()
	var seen []string
	for _, e := range m.Events {
		switch {
		case e.Kind == metrics.EvBrokerStarted:
			t.Fatalf("a container was started: %+v", e)
		case e.Kind == metrics.EvFault && e.Detail == tool.Applied,
			e.Kind == metrics.EvFaultCleared && e.Detail == tool.Recovered,
			e.Kind == metrics.EvBrokerReady && e.Action == string(scenario.StopApp):
			seen = append(seen, string(e.Kind))
		}
	}
	if got := strings.Join(seen, " "); got != "fault fault-cleared broker-ready" {
		t.Fatalf("timeline %q, want fault fault-cleared broker-ready", got)
	}
	if len(m.ChannelCloses) == 0 || !strings.HasSuffix(m.ChannelCloses[0], scenario.StopApp.While()) {
		t.Fatalf("close reasons %q, want the first put down to the stopped application", m.ChannelCloses)
	}
}
