package cmd

// The field reports' second round, timing and wording: a broker pause
// counted as a client stall (php-amqplib#787), a restart timed from the end
// of its call (streadway/amqp#421), body sizes below the order ignored
// (ruby-amqp/bunny#615), a lost socket worded as the client's own close
// (streadway/amqp#393), recovery steps reporting 0 published. Each runs a
// shipped scenario against the real broker; its verdict checks the counts,
// these tests the timeline and records.

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rmqtorture/rmqtorture/metrics"
	"github.com/rmqtorture/rmqtorture/scenario"
)

// firstEvent returns the first event of kind at or after fromMS.
func firstEvent(t *testing.T, m scenario.ModeResult, kind metrics.EventKind, fromMS float64) metrics.Event {
	t.Helper()
	for _, e := range m.Events {
		if e.Kind == kind && e.AtMS >= fromMS {
			return e
		}
	}
	t.Fatalf("%s: no %s event at or after %.1f ms in %+v", m.Mode, kind, fromMS, eventKinds(m))
	return metrics.Event{}
}

// A pause longer than the stall timeout: no progress during it is the
// pause's effect, recorded once per publisher connection as no-progress
// naming the pause, never counted as a client stall.
func TestPauseIsNotAClientStall(t *testing.T) {
	m := mode(t, runScenario(t, "pause-longer-than-stall-timeout"), scenario.ConfirmWindow)
	if m.Stalls != 0 || hasEvent(m, metrics.EvStall, "") {
		t.Fatalf("stalls %d during the pause; events %v", m.Stalls, eventKinds(m))
	}
	fault := firstEvent(t, m, metrics.EvFault, 0)
	ready := firstEvent(t, m, metrics.EvBrokerReady, fault.AtMS)
	np := firstEvent(t, m, metrics.EvNoProgress, 0)
	// Stalled from the window filling (at most 256 ms of publishing after
	// the freeze) plus the 2 s stall timeout, within the 5 s pause.
	if np.AtMS < fault.AtMS+2000 || np.AtMS > ready.AtMS || np.Action != "pause" ||
		!strings.Contains(np.Detail, "while the broker was paused: the fault's effect, not a client stall") {
		t.Fatalf("no-progress %+v; pause %.0f ms, ready %.0f ms", np, fault.AtMS, ready.AtMS)
	}
	if m.Reconnects != 0 || m.WentInDoubt != 0 {
		t.Fatalf("reconnects %d went in doubt %d across a 5 s pause", m.Reconnects, m.WentInDoubt)
	}
}

// A restart takes effect as its call starts: the broker closes the
// connection long before the call returns. The fault event is the trigger,
// every connection loss comes after it, and the downtime and the client's
// recovery are measured from it; the container runs once the call returns.
func TestRestartTimedFromItsCall(t *testing.T) {
	m := mode(t, runScenario(t, "restart-timed-from-its-call"), scenario.ConfirmWindow)
	if len(m.Faults) != 1 {
		t.Fatalf("faults %+v", m.Faults)
	}
	f := m.Faults[0]
	fault := firstEvent(t, m, metrics.EvFault, 0)
	lost := firstEvent(t, m, metrics.EvConnectionLost, 0)
	started := firstEvent(t, m, metrics.EvBrokerStarted, fault.AtMS)
	ready := firstEvent(t, m, metrics.EvBrokerReady, fault.AtMS)
	progress := firstEvent(t, m, metrics.EvFirstProgress, lost.AtMS)
	if f.InjectMS != 0 || fault.AtMS != f.AtMS || f.PublishedAtInject < f.AtPublished || f.PublishedAtInject >= 8000 {
		t.Fatalf("fault %+v, event at %.3f ms: want the effect at the trigger", f, fault.AtMS)
	}
	// The graceful restart closes connections well before its call returns.
	if lost.AtMS < fault.AtMS || lost.AtMS >= started.AtMS || !near(f.CallMS, started.AtMS-f.AtMS) {
		t.Fatalf("fault %.1f ms, connection lost %.1f ms, call returned %.1f ms (call %.1f ms)", fault.AtMS, lost.AtMS, started.AtMS, f.CallMS)
	}
	if m.BrokerDowntimeMS == nil || !near(*m.BrokerDowntimeMS, ready.AtMS-fault.AtMS) ||
		m.ClientRecoveryMS == nil || *m.ClientRecoveryMS < progress.AtMS-lost.AtMS {
		t.Fatalf("downtime %v (ready at %.1f), recovery %v (first progress at %.1f, connection lost at %.1f)", m.BrokerDowntimeMS, ready.AtMS, m.ClientRecoveryMS, progress.AtMS, lost.AtMS)
	}
	r := f.Recovery
	if r == nil || r.ContainerRunningMS == nil || !near(*r.ContainerRunningMS, started.AtMS-fault.AtMS) || r.AMQPAcceptingMS == nil || *r.AMQPAcceptingMS != *m.BrokerDowntimeMS {
		t.Fatalf("recovery %+v", r)
	}
	// A close reason, when the watcher saw one before the publisher's own
	// close (a race), names the restart in effect.
	for _, c := range m.ChannelCloses {
		if !strings.HasSuffix(c, " while the broker was being restarted") {
			t.Fatalf("closes %q", m.ChannelCloses)
		}
	}
}

// near: two ms figures derived from the same instants, each rounded to the
// microsecond, agree.
func near(a, b float64) bool { return max(a-b, b-a) <= 0.002 }

// Bodies are exactly message_size_bytes long in the queue, below the
// order's own size too, down to 0; ids still reconcile (they travel in
// message_id). 16 bytes is the shipped scenario; 0 and 4096 the same
// scenario with the size changed.
func TestBodiesOfExactlyTheSize(t *testing.T) {
	check := func(r *scenario.Result, size int) {
		t.Helper()
		for _, m := range r.Modes {
			if m.DrainedBodyBytes == nil || *m.DrainedBodyBytes != (scenario.ByteRange{Min: size, Max: size}) || m.Delivered != 1000 {
				t.Fatalf("size %d, %s: drained bodies %+v, delivered %d", size, m.Mode, m.DrainedBodyBytes, m.Delivered)
			}
		}
	}
	check(runScenario(t, "small-bodies"), 16)
	data, err := os.ReadFile("../scenarios.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, size := range []string{"0", "4096"} {
		file := filepath.Join(t.TempDir(), "s.yaml")
		if err := os.WriteFile(file, []byte(strings.Replace(string(data), "message_size_bytes: 16", "message_size_bytes: "+size, 1)), 0o644); err != nil {
			t.Fatal(err)
		}
		n := map[string]int{"0": 0, "4096": 4096}[size]
		check(runScenario(t, "small-bodies", "-f", file, "--mode", "confirm-window"), n)
	}
}

// A SIGKILL'd broker loses the publisher its socket: worded as observed,
// under the kill, never as the client closing. The start step that brings
// the broker back reports the orders published when it took effect: the
// publisher could publish nothing while the broker was down.
func TestKilledBrokerWordingAndStartStepRecord(t *testing.T) {
	m := mode(t, runScenario(t, "kill-left-down-then-start"), scenario.ConfirmWindow)
	if len(m.ChannelCloses) == 0 {
		t.Fatal("no close reason recorded")
	}
	for _, c := range m.ChannelCloses {
		if strings.Contains(c, "closed by client") || !strings.HasPrefix(c, "connection lost: ") || !strings.HasSuffix(c, ") while the broker was being killed") {
			t.Fatalf("close reasons %q", m.ChannelCloses)
		}
	}
	if len(m.Faults) != 2 || m.Faults[0].Action != scenario.Kill || m.Faults[1].Action != scenario.Start {
		t.Fatalf("faults %+v", m.Faults)
	}
	kill, start := m.Faults[0], m.Faults[1]
	if kill.InjectMS != 0 || kill.PublishedAtInject < kill.AtPublished || kill.AtPublished == 0 {
		t.Fatalf("kill %+v", kill)
	}
	if start.PublishedAtInject != start.AtPublished || start.AtPublished < kill.PublishedAtInject || start.InjectMS <= 0 || start.CallMS != start.InjectMS {
		t.Fatalf("start %+v after kill %+v: want the ids published when it took effect", start, kill)
	}
}
