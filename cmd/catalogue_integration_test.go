package cmd

// Issue #4's fault catalogue, each a shipped scenario run against the real
// broker through the Docker API; the verdict checks the scenario's exact
// expectations, these tests what the timeline and the ids say beyond them.

import (
	"strings"
	"testing"
	"time"

	"github.com/rmqtorture/rmqtorture/engine"
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

// One mode in the gate: the stop and what the client is told are the point,
// and each mode costs a graceful stop and a broker start
// (TestGracefulRestartAllModes, in the full tier, runs all three).
func TestGracefulRestart(t *testing.T) {
	checkGracefulRestart(t, runScenario(t, "graceful-restart", "--mode", "confirm-window"))
}

// TestGracefulRestartAllModes is TestGracefulRestart on the scenario's three
// modes (the full tier).
func TestGracefulRestartAllModes(t *testing.T) {
	checkGracefulRestart(t, runScenario(t, "graceful-restart"))
}

func checkGracefulRestart(t *testing.T, r *scenario.Result) {
	t.Helper()
	for _, m := range r.Modes {
		if len(m.Faults) != 1 || m.Faults[0].Action != scenario.Stop || m.BrokerDowntimeMS == nil || *m.BrokerDowntimeMS < 5000 {
			t.Fatalf("%s: faults %+v downtime %v", m.Mode, m.Faults, m.BrokerDowntimeMS)
		}
	}
	for _, m := range r.Modes {
		if !m.Mode.ConfirmMode() {
			continue
		}
		md := m.Mode
		// A graceful stop tells the client why (320 CONNECTION_FORCED) and
		// then closes the socket; a publish write under way can fail on
		// that socket before amqp091-go's reader has taken the close frame,
		// and whichever comes first is the close amqp091-go reports. Both
		// are what the protocol allows: each close is the broker's 320 or
		// the lost socket, and is put down to the stop.
		if len(m.ChannelCloses) == 0 || m.Reconnects != 1 {
			t.Fatalf("%s: closes %q reconnects %d", md, m.ChannelCloses, m.Reconnects)
		}
		for _, c := range m.ChannelCloses {
			forced := strings.Contains(c, "closed by broker: 320 CONNECTION_FORCED")
			if !forced && !strings.HasPrefix(c, "connection lost: ") || !strings.HasSuffix(c, scenario.Stop.While()) {
				t.Fatalf("%s: close %q is neither the broker's 320 nor a lost socket put down to the stop", md, c)
			}
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

func TestTransientMessagesMayBeLostWithoutFailing(t *testing.T) {
	r := runScenario(t, "transient-messages")
	m := mode(t, r, scenario.ConfirmWindow)
	// Transient messages in a classic queue die with the node: every one the
	// broker had acked before the kill is gone, and that is allowed. The
	// kill fires once 3,000 are published with a window of 1,000, so at
	// least 2,000 basic.acks had come back (an in_flight trigger once fired
	// before the first one had, and then nothing acked could be lost).
	f := m.Faults[0]
	if f.Trigger != "3000 published" || f.AckedAtInject == nil || *f.AckedAtInject < 2000 {
		t.Fatalf("fault %+v: want the kill at 3000 published with at least 2000 acked", f)
	}
	if !m.LostAllowed || m.Lost < *f.AckedAtInject || len(m.IDs.Lost) == 0 || len(m.Notes) == 0 {
		t.Fatalf("lost %d (allowed %v), %d acked at the kill, ids %v notes %q", m.Lost, m.LostAllowed, *f.AckedAtInject, m.IDs.Lost, m.Notes)
	}
	checkRepublishExact(t, m)
}

// An in_flight trigger fires on what the publisher observed: once the
// unconfirmed publishes reach the threshold, never before that many were
// published. Persistent orders to a durable classic queue: a basic.ack
// meant the order was on disk, so nothing confirmed is lost. 30,000
// unpaced orders: the kill lands in the first few hundred ms, long before
// a fast host's burst ends.
func TestInFlightTriggerFiresOnUnconfirmed(t *testing.T) {
	r := runScenarioFile(t, `version: 1
scenarios:
  - name: in-flight
    queue: {type: classic}
    load: {messages: 30000, modes: [confirm-window], window: 1000}
    faults:
      - {action: kill, in_flight: 200, down: 1s}
    expect:
      modes:
        confirm-window: {lost: 0, nacked: 0, in_doubt: 0}
`, "in-flight")
	m := mode(t, r, scenario.ConfirmWindow)
	f := m.Faults[0]
	if len(m.Faults) != 1 || f.Trigger != "200 in flight" || f.AtPublished < 200 || f.PublishedAtInject < f.AtPublished {
		t.Fatalf("faults %+v: want one kill fired with at least 200 published", m.Faults)
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

// A consumer crash before its ack: exactly the processed deliveries it left
// unacknowledged come back as redeliveries (flagged redelivered, already
// processed once), never as publisher duplicates.
func TestConsumerCrashRedeliversExactlyTheUnacked(t *testing.T) {
	r := runScenario(t, "consumer-crash")
	m := mode(t, r, scenario.ConfirmWindow)
	c := m.Consumers
	if c == nil || len(m.Faults) != 1 || m.Faults[0].Action != scenario.CrashConsumer {
		t.Fatalf("consumers %+v faults %+v", c, m.Faults)
	}
	unacked := m.Faults[0].UnackedAtCrash
	if unacked < 1 || c.Crashes != 1 || c.UnackedAtCrash != unacked || m.Redeliveries != unacked || m.Duplicates != 0 {
		t.Fatalf("unacked at crash %d (stats %d, crashes %d), redeliveries %d, duplicates %d", unacked, c.UnackedAtCrash, c.Crashes, m.Redeliveries, m.Duplicates)
	}
	// Every delivery is one first delivery per id or one redelivery; the
	// broker flagged at least the processed ones (and whatever else the
	// crashed consumer held in its prefetch).
	if c.Deliveries != m.Delivered+m.Redeliveries || c.RedeliveredFlagged < unacked || c.RedeliveredFlagged > unacked+c.Prefetch {
		t.Fatalf("deliveries %d = delivered %d + redeliveries %d? flagged %d", c.Deliveries, m.Delivered, m.Redeliveries, c.RedeliveredFlagged)
	}
	if c.DeliveriesPerMessage["2"] != unacked || c.DeliveriesPerMessage["1"] != m.Sent-unacked || c.Reconnects != 1 {
		t.Fatalf("deliveries per message %v, reconnects %d", c.DeliveriesPerMessage, c.Reconnects)
	}
	// Every delivery carried its publish time: end-to-end latency has them all.
	if c.EndToEndLatency.Count != int64(c.Deliveries) || c.EndToEndLatency.Max <= 0 {
		t.Fatalf("end-to-end latency %+v over %d deliveries", c.EndToEndLatency, c.Deliveries)
	}
	if !hasEvent(m, metrics.EvConsumerCrashed, "consumer 0") {
		t.Fatalf("no consumer-crashed event: %+v", m.Events)
	}
}

// The retry loop through a retry queue ends in the dead-letter queue after
// exactly max_retries by the application's own header. The x-death count on
// the parked copies is measured, not assumed: on RabbitMQ 4.0.5 it is 1 for
// every message (the broker's own dead-lettering from the retry queue; the
// x-death the consumer copied into its republish is not carried over), so a
// loop that counted x-death would never reach 3.
func TestRetryToDLQCountsOwnHeaderNotXDeath(t *testing.T) {
	r := runScenario(t, "retry-to-dlq")
	m := mode(t, r, scenario.ConfirmWindow)
	c := m.Consumers
	if c == nil || c.Parked != 1000 || c.Retried != 3000 || c.Deliveries != 4000 || m.RetryDeliveries != 3000 || m.DeadLettered != 1000 {
		t.Fatalf("consumers %+v retry deliveries %d dead-lettered %d", c, m.RetryDeliveries, m.DeadLettered)
	}
	if len(c.XDeathCountAtPark) != 1 || c.XDeathCountAtPark["1"] != 1000 {
		t.Fatalf("x-death count at park %v; RabbitMQ 4.0.5 measured {1: 1000}", c.XDeathCountAtPark)
	}
}

// Deliveries per message before the broker dead-letters a poison
// message, with x-delivery-limit 3 and with the 4.0 default (20): measured
// on RabbitMQ 4.0.5 as limit + 1 deliveries, nack with requeue counting.
func TestDeliveryLimitDeadLettersAfterLimitPlusOne(t *testing.T) {
	for name, want := range map[string]int{"delivery-limit": 4, "delivery-limit-default": 21} {
		r := runScenario(t, name)
		m := mode(t, r, scenario.ConfirmWindow)
		c := m.Consumers
		if c == nil || c.NackedRequeue != 100*want || c.Deliveries != 100*want || m.Redeliveries != 100*(want-1) || m.DeadLettered != 100 || m.Duplicates != 0 {
			t.Fatalf("%s: consumers %+v redeliveries %d dead-lettered %d", name, c, m.Redeliveries, m.DeadLettered)
		}
	}
}

// Two jittered kills from seed 7, four publishers: each firing's jitter is
// the one the seed draws, and every confirmed order survives both.
func TestRepeatedKillsReplayTheirJitter(t *testing.T) {
	r := runScenario(t, "repeated-kills")
	if r.Seed != 7 {
		t.Fatalf("seed %d", r.Seed)
	}
	m := mode(t, r, scenario.ConfirmWindow)
	rng := engine.JitterSource(7)
	if len(m.Faults) != 2 {
		t.Fatalf("faults %+v", m.Faults)
	}
	for i, f := range m.Faults {
		want := metrics.Millis(time.Duration(rng.Int64N(int64(500 * time.Millisecond))))
		if f.Action != scenario.Kill || f.Firing != i+1 || f.JitterMS != want || f.Error != "" {
			t.Fatalf("firing %d: %+v, want jitter %.3f ms", i+1, f, want)
		}
	}
	// Each publisher reconnects at least once; a second kill that lands
	// before they are back (a slow restart) costs no second reconnect. An id
	// republished after the first kill can go in doubt again at the second,
	// so republish attempts are at least the ids that went in doubt, and
	// none is left in doubt.
	if m.Reconnects < 4 || m.Republished < m.WentInDoubt || m.InDoubt != 0 || m.Duplicates != m.DuplicatesFromRepublish {
		t.Fatalf("reconnects %d (4 publishers), republished %d went in doubt %d, duplicates %d (%d from republish)", m.Reconnects, m.Republished, m.WentInDoubt, m.Duplicates, m.DuplicatesFromRepublish)
	}
	if n := strings.Count(strings.Join(eventKinds(m), " "), string(metrics.EvFault)); n != 2 {
		t.Fatalf("%d fault events, want 2", n)
	}
	// load.rate: confirm latency is also measured from each order's intended
	// send time, which is never later than its publish call, so every
	// quantile is at least the publish-call one.
	in := m.ConfirmLatencyIntended
	if in == nil || in.Count != m.ConfirmLatency.Count || in.P50 < m.ConfirmLatency.P50 || in.P99 < m.ConfirmLatency.P99 || in.Max < m.ConfirmLatency.Max {
		t.Fatalf("intended-time latency %+v vs publish-call latency %+v", in, m.ConfirmLatency)
	}
}

func eventKinds(m scenario.ModeResult) []string {
	out := make([]string, len(m.Events))
	for i, e := range m.Events {
		out[i] = string(e.Kind)
	}
	return out
}

// manualRecoveries: each recovery step a scenario can name (unpause,
// reconnect) brings back what an earlier manual_recovery step left, paced
// at 500 msg/s so that every step lands inside the 6 s burst on any host.
const manualRecoveries = `version: 1
scenarios:
  - name: manual-recoveries
    load: {messages: 3000, modes: [confirm-window], rate: 500}
    faults:
      - {action: pause, after: 1s, manual_recovery: true}
      - {action: unpause, after: 2s}
      - {action: disconnect, after: 3s, manual_recovery: true}
      - {action: reconnect, after: 4s}
`

// TestManualRecoveries: the four steps run in order at their times; the
// 1 s pause (shorter than 1.5 heartbeats) keeps the connection, the
// disconnect costs it exactly once, the reconnect step brings the link
// back, the ids in doubt at the disconnect are republished exactly, and
// nothing is lost.
func TestManualRecoveries(t *testing.T) {
	r := runScenarioFile(t, manualRecoveries, "manual-recoveries")
	m := mode(t, r, scenario.ConfirmWindow)
	want := []scenario.Action{scenario.Pause, scenario.Unpause, scenario.Disconnect, scenario.Reconnect}
	if len(m.Faults) != len(want) {
		t.Fatalf("faults %+v: want %v", m.Faults, want)
	}
	for i, f := range m.Faults {
		if f.Action != want[i] || f.Error != "" || f.AtMS < float64(i+1)*1000 {
			t.Fatalf("fault %d %+v: want %s at %d s without error", i, f, want[i], i+1)
		}
	}
	if m.Reconnects != 1 || !hasEvent(m, metrics.EvBrokerStarted, "unpause") || !hasEvent(m, metrics.EvBrokerStarted, "reconnect") {
		t.Fatalf("reconnects %d (want 1: the disconnect's), events %v", m.Reconnects, eventKinds(m))
	}
	for _, e := range m.Events {
		if e.Kind == metrics.EvConnectionLost && strings.Contains(e.Detail, scenario.Pause.While()) {
			t.Fatalf("connection lost %q: the 1 s pause must not cost the connection", e.Detail)
		}
	}
	if m.Confirmed != r.Messages || m.Lost != 0 || m.InDoubt != 0 || m.Republished != m.WentInDoubt || m.Duplicates != m.DuplicatesFromRepublish {
		t.Fatalf("confirmed %d of %d, lost %d, in doubt %d, republished %d, went in doubt %d, duplicates %d (%d from republish)",
			m.Confirmed, r.Messages, m.Lost, m.InDoubt, m.Republished, m.WentInDoubt, m.Duplicates, m.DuplicatesFromRepublish)
	}
}
