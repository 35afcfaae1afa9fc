package cmd

import (
	"fmt"
	"strings"
	"testing"

	"github.com/rmqtorture/rmqtorture/metrics"
	"github.com/rmqtorture/rmqtorture/scenario"
)

// checkToolActionMidBurst runs action (one made of the broker's own tools,
// scenario.ToolPlay) 1,000 orders into a burst paced at 1,000 msg/s on a
// quorum queue, for 2 s: 12 s of burst, since the broker's CLI takes 2–7 s
// to act, so the fault lands inside the burst on any host. It checks what
// every such action that closes client connections must show against a
// real broker: the publisher's connection closed and put down to the
// action (it reconnects at least down after the fault took effect), no
// confirmed order lost, every id that went in doubt republished once and
// confirmed; the timeline holds the spec's fault and fault-cleared
// details, then a login, and no container start (the node kept running).
func checkToolActionMidBurst(t *testing.T, action scenario.Action) scenario.ModeResult {
	t.Helper()
	yaml := fmt.Sprintf(`version: 1
scenarios:
  - name: %[1]s
    queue: {type: quorum}
    load: {messages: 12000, modes: [confirm-window], window: 256, rate: 1000}
    faults: [{action: %[1]s, published: 1000, down: 2s}]
`, action)
	r := runScenarioFile(t, yaml, string(action))
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
	tool := action.Tool()
	var seen []string
	for _, e := range m.Events {
		switch {
		case e.Kind == metrics.EvBrokerStarted:
			t.Fatalf("a container was started: %+v", e)
		case e.Kind == metrics.EvFault && e.Detail == tool.Applied,
			e.Kind == metrics.EvFaultCleared && e.Detail == tool.Recovered,
			e.Kind == metrics.EvBrokerReady && e.Action == string(action):
			seen = append(seen, string(e.Kind))
		}
	}
	if got := strings.Join(seen, " "); got != "fault fault-cleared broker-ready" {
		t.Fatalf("timeline %q, want fault fault-cleared broker-ready", got)
	}
	if len(m.ChannelCloses) == 0 || !strings.HasSuffix(m.ChannelCloses[0], action.While()) {
		t.Fatalf("close reasons %q, want the first put down to %s (%q)", m.ChannelCloses, action, action.While())
	}
	return m
}
