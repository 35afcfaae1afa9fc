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

func TestTransientMessagesMayBeLostWithoutFailing(t *testing.T) {
	r := runScenario(t, "transient-messages")
	m := mode(t, r, scenario.ConfirmWindow)
	// Transient messages in a classic queue die with the node: every one the
	// broker had acked before the kill is gone, and that is allowed.
	if !m.LostAllowed || m.Lost == 0 || len(m.IDs.Lost) == 0 || len(m.Notes) == 0 || m.Faults[0].Trigger != "500 in flight" {
		t.Fatalf("lost %d (allowed %v) ids %v notes %q fault %+v", m.Lost, m.LostAllowed, m.IDs.Lost, m.Notes, m.Faults)
	}
	checkRepublishExact(t, m)
}

// A matrix run: 2 modes × 2 queue types × 2 persistence settings on one
// broker, each cell on its own queue, summarised in one table.
func TestClassicVsQuorumMatrix(t *testing.T) {
	r := runScenario(t, "classic-vs-quorum")
	if len(r.Modes) != 8 {
		t.Fatalf("%d results, want 8 cells", len(r.Modes))
	}
	for _, m := range r.Modes {
		if m.Cell == nil || m.Cell.Repeat != 1 || m.NotRun {
			t.Fatalf("%s: cell %+v not run %v", m.Mode, m.Cell, m.NotRun)
		}
		persistent := m.Cell.Persistent
		// Only a classic queue's transient messages may be lost once acked.
		if want := !persistent && m.Cell.QueueType == scenario.Classic; m.LostAllowed != want {
			t.Fatalf("%s %+v: lost allowed %v, want %v", m.Mode, *m.Cell, m.LostAllowed, want)
		}
		if m.Mode == scenario.ConfirmWindow && persistent && m.Lost != 0 {
			t.Fatalf("%+v: %d persistent confirmed messages lost", *m.Cell, m.Lost)
		}
		// Transient messages in a classic queue die with the node: the acked
		// ones the kill found in the queue are gone.
		if m.Mode == scenario.ConfirmWindow && !persistent && m.Cell.QueueType == scenario.Classic && m.Lost == 0 {
			t.Fatalf("%+v: no transient message lost in a classic queue across a SIGKILL", *m.Cell)
		}
		// A quorum queue persists every message, delivery mode or not.
		if m.Mode == scenario.ConfirmWindow && m.Cell.QueueType == scenario.Quorum && m.Lost != 0 {
			t.Fatalf("%+v: quorum queue lost %d confirmed", *m.Cell, m.Lost)
		}
	}
}
