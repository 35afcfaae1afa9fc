package cmd

// Issue #4's fault catalogue, each a shipped scenario run against the real
// broker through the Docker API; the verdict checks the scenario's exact
// expectations, these tests what the timeline and the ids say beyond them.

import (
	"strings"
	"testing"

	"github.com/rmqtorture/rmqtorture/metrics"
	"github.com/rmqtorture/rmqtorture/scenario"
)

func hasEvent(m scenario.ModeResult, kind metrics.EventKind, detail string) bool {
	for _, e := range m.Events {
		if e.Kind == kind && strings.Contains(e.Detail, detail) {
			return true
		}
	}
	return false
}

func TestGracefulRestart(t *testing.T) {
	r := runScenario(t, "graceful-restart")
	for _, m := range r.Modes {
		if len(m.Faults) != 1 || m.Faults[0].Action != scenario.Stop || m.BrokerDowntimeMS == nil || *m.BrokerDowntimeMS < 5000 {
			t.Fatalf("%s: faults %+v downtime %v", m.Mode, m.Faults, m.BrokerDowntimeMS)
		}
	}
	for _, md := range []scenario.Mode{scenario.ConfirmEach, scenario.ConfirmWindow} {
		m := mode(t, r, md)
		// A graceful stop tells the client why: 320 CONNECTION_FORCED.
		if !slicesContainsSub(m.ChannelCloses, "320 CONNECTION_FORCED") || m.Reconnects != 1 {
			t.Fatalf("%s: closes %q reconnects %d", md, m.ChannelCloses, m.Reconnects)
		}
		if m.Republished != m.WentInDoubt || m.Duplicates != m.DuplicatesFromRepublish {
			t.Fatalf("%s: republished %d went in doubt %d duplicates %d/%d", md, m.Republished, m.WentInDoubt, m.Duplicates, m.DuplicatesFromRepublish)
		}
	}
}

func TestPauseMidBurstLinksSurvive(t *testing.T) {
	r := runScenario(t, "pause-mid-burst")
	for _, m := range r.Modes {
		if m.Reconnects != 0 || m.WentInDoubt != 0 || m.Duplicates != 0 || !hasEvent(m, metrics.EvFault, "pause") || !hasEvent(m, metrics.EvBrokerStarted, "unpause") {
			t.Fatalf("%s: reconnects %d went in doubt %d duplicates %d events %+v", m.Mode, m.Reconnects, m.WentInDoubt, m.Duplicates, m.Events)
		}
	}
	// The freeze shows in the confirm latency: some confirm waited out most of it.
	if m := mode(t, r, scenario.ConfirmEach); m.ConfirmLatency.Max < 4000 {
		t.Fatalf("confirm-each max latency %.0f ms across a 5 s pause", m.ConfirmLatency.Max)
	}
}

func TestClientLinkCut(t *testing.T) {
	r := runScenario(t, "client-link-cut")
	for _, m := range r.Modes {
		if m.Reconnects < 1 || !hasEvent(m, metrics.EvFault, "disconnect") || !hasEvent(m, metrics.EvBrokerStarted, "reconnect") {
			t.Fatalf("%s: reconnects %d events %+v", m.Mode, m.Reconnects, m.Events)
		}
	}
	checkRepublishExact(t, mode(t, r, scenario.ConfirmWindow))
}

func TestDoubleKill(t *testing.T) {
	r := runScenario(t, "double-kill")
	for _, m := range r.Modes {
		if len(m.Faults) != 2 || m.Faults[0].AtPublished != 3000 || m.Faults[1].AtPublished != 7000 || m.Reconnects != 2 {
			t.Fatalf("%s: faults %+v reconnects %d", m.Mode, m.Faults, m.Reconnects)
		}
		// An id can be in doubt at both kills, so republishes may exceed the ids.
		if m.Republished < m.WentInDoubt || m.Duplicates != m.DuplicatesFromRepublish {
			t.Fatalf("%s: republished %d went in doubt %d duplicates %d/%d", m.Mode, m.Republished, m.WentInDoubt, m.Duplicates, m.DuplicatesFromRepublish)
		}
	}
}

func slicesContainsSub(list []string, sub string) bool {
	for _, s := range list {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}
