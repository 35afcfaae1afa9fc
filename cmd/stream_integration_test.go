package cmd

// Streams over the stream protocol: the shipped stream scenarios (whose
// verdicts already check exact per-mode expectations) against the real
// broker, and what the ids say beyond them: loss and duplicates with and
// without deduplication (rabbitmq-server#9457).

import (
	"slices"
	"testing"

	"github.com/rmqtorture/rmqtorture/metrics"
	"github.com/rmqtorture/rmqtorture/scenario"
)

const streamOrders = 10000

// checkStreamRun checks what every stream run must show: a stream, the one
// fault at 30% of the orders, a reconnect, every order sent once, classes
// adding up, deliveries = distinct ids + duplicates, nothing nacked,
// returned or unexpected.
func checkStreamRun(t *testing.T, r *scenario.Result, dedup bool) {
	t.Helper()
	wantTopology := "stream over the stream protocol; unnamed producer (no deduplication)"
	if dedup {
		wantTopology = "stream over the stream protocol; named producer (deduplication by publishing id)"
	}
	if r.QueueType != scenario.Stream || r.Topology != wantTopology {
		t.Fatalf("queue type %q, topology %q", r.QueueType, r.Topology)
	}
	for _, m := range r.Modes {
		if m.Sent != streamOrders || m.ClassSum() != streamOrders {
			t.Fatalf("%s: sent %d, classes %d, want %d", m.Mode, m.Sent, m.ClassSum(), streamOrders)
		}
		if len(m.Faults) != 1 || m.Faults[0].AtPublished != 3*streamOrders/10 || m.Faults[0].Error != "" {
			t.Fatalf("%s: faults %+v, want one at %d published", m.Mode, m.Faults, 3*streamOrders/10)
		}
		if m.Reconnects < 1 || m.Nacked != 0 || m.Returned != 0 || m.Unexpected != 0 {
			t.Fatalf("%s: reconnects %d nacked %d returned %d unexpected %d", m.Mode, m.Reconnects, m.Nacked, m.Returned, m.Unexpected)
		}
		if m.Deliveries != m.Delivered+m.Duplicates || len(ids(m.IDs.Duplicated)) > m.Duplicates {
			t.Fatalf("%s: deliveries %d != delivered %d + duplicates %d (duplicated ids %v)", m.Mode, m.Deliveries, m.Delivered, m.Duplicates, m.IDs.Duplicated)
		}
		connected := 0
		for _, e := range m.Events {
			if e.Kind == metrics.EvConnected {
				connected++
			}
		}
		if connected != m.Reconnects+1 {
			t.Fatalf("%s: %d connections on the timeline, %d reconnects", m.Mode, connected, m.Reconnects)
		}
	}
}

// Without deduplication a SIGKILL loses no confirmed publishing id; every
// in-doubt id is republished once, so duplicates (possible) are at most
// the in-doubt ids and all come from a republish. Fire-and-forget loses
// what the kill caught, silently, listed by id.
func TestStreamKillMidBurst(t *testing.T) {
	r := runScenario(t, "stream-kill-mid-burst")
	checkStreamRun(t, r, false)
	cw := mode(t, r, scenario.ConfirmWindow)
	checkRepublishExact(t, cw)
	if cw.Confirmed != streamOrders || cw.Lost != 0 || cw.Duplicates > cw.WentInDoubt || cw.ConfirmLatency.Count != streamOrders {
		t.Fatalf("confirm-window: confirmed %d lost %d duplicates %d went in doubt %d, %d confirm latencies",
			cw.Confirmed, cw.Lost, cw.Duplicates, cw.WentInDoubt, cw.ConfirmLatency.Count)
	}
	ff := mode(t, r, scenario.FireAndForget)
	if ff.Confirmed != 0 || ff.InDoubt != 0 || ff.Republished != 0 || ff.Duplicates != 0 || ff.ConfirmLatency.Count != 0 {
		t.Fatalf("fire-and-forget awaits no confirmation: %+v", ff.Counts)
	}
	if ff.UnconfirmedDelivered+ff.UnconfirmedMissing != streamOrders || ff.Delivered != ff.UnconfirmedDelivered {
		t.Fatalf("fire-and-forget: delivered %d + missing %d != %d", ff.UnconfirmedDelivered, ff.UnconfirmedMissing, streamOrders)
	}
	// The kill cut one run of sends the client had not written or the
	// broker not stored: the missing ids are one range (or none).
	if len(ids(ff.IDs.UnconfirmedMissing)) != ff.UnconfirmedMissing || len(ff.IDs.UnconfirmedMissing) > 1 {
		t.Fatalf("fire-and-forget: missing ids %v, %d counted", ff.IDs.UnconfirmedMissing, ff.UnconfirmedMissing)
	}
}

// With deduplication the same kill stores every order exactly once.
func TestStreamKillDedup(t *testing.T) {
	r := runScenario(t, "stream-kill-dedup")
	checkStreamRun(t, r, true)
	cw := mode(t, r, scenario.ConfirmWindow)
	checkRepublishExact(t, cw)
	if cw.Confirmed != streamOrders || cw.Lost != 0 || cw.Duplicates != 0 || cw.Deliveries != streamOrders || len(cw.IDs.Duplicated) != 0 {
		t.Fatalf("confirm-window: confirmed %d lost %d duplicates %d deliveries %d", cw.Confirmed, cw.Lost, cw.Duplicates, cw.Deliveries)
	}
}

// checkFullWindowInDoubt: the freeze caught a full window, all of it went
// in doubt once and was republished once.
func checkFullWindowInDoubt(t *testing.T, m scenario.ModeResult) {
	t.Helper()
	if m.Window != 500 || m.WentInDoubt != m.Window || m.Republished != m.Window || m.InDoubt != 0 || m.Lost != 0 || m.Confirmed != streamOrders {
		t.Fatalf("window %d: went in doubt %d, republished %d, in doubt %d, lost %d, confirmed %d",
			m.Window, m.WentInDoubt, m.Republished, m.InDoubt, m.Lost, m.Confirmed)
	}
}

// Without deduplication, the window the client gave up on during the
// freeze was stored from the old connection's buffer once the broker
// thawed, and again when republished: exactly one duplicate per in-doubt
// id, one contiguous run of ids.
func TestStreamPauseDuplicates(t *testing.T) {
	r := runScenario(t, "stream-pause-duplicates")
	checkStreamRun(t, r, false)
	m := mode(t, r, scenario.ConfirmWindow)
	checkFullWindowInDoubt(t, m)
	dup := ids(m.IDs.Duplicated)
	if m.Duplicates != m.Window || m.DuplicatesFromRepublish != m.Window || len(dup) != m.Window || len(m.IDs.Duplicated) != 1 ||
		!slices.IsSorted(dup) || dup[0] < m.Faults[0].AtPublished-m.Window || m.Deliveries != streamOrders+m.Window {
		t.Fatalf("duplicates %d (%d from republish), duplicated ids %v, deliveries %d; fault at %d",
			m.Duplicates, m.DuplicatesFromRepublish, m.IDs.Duplicated, m.Deliveries, m.Faults[0].AtPublished)
	}
}

// With deduplication the same freeze stores each of those ids once: the
// broker drops whichever copy comes second by its publishing id.
func TestStreamPauseDedup(t *testing.T) {
	r := runScenario(t, "stream-pause-dedup")
	checkStreamRun(t, r, true)
	m := mode(t, r, scenario.ConfirmWindow)
	checkFullWindowInDoubt(t, m)
	if m.Duplicates != 0 || len(m.IDs.Duplicated) != 0 || m.Deliveries != streamOrders {
		t.Fatalf("duplicates %d, duplicated ids %v, deliveries %d", m.Duplicates, m.IDs.Duplicated, m.Deliveries)
	}
}
