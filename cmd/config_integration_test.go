package cmd

// The field reports' second round: broker configuration written into the
// container, queue arguments on the dead-letter queue, a single active
// consumer, an unlimited delivery limit, a consumer that holds a delivery
// past the consumer timeout, and a confirm timeout that republishes on the
// same connection. Each runs a shipped scenario against the real broker
// (its verdict checks the scenario's exact expectations); these tests check
// what the counts, the consumers and the timeline say beyond them.

import (
	"bytes"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rmqtorture/rmqtorture/metrics"
	"github.com/rmqtorture/rmqtorture/reports"
	"github.com/rmqtorture/rmqtorture/scenario"
)

// rabbitmq-server#9046: with consumer_timeout 5 s (checked every second),
// the consumer holding its first delivery for 8 s loses its channel to 406
// PRECONDITION_FAILED between 5 and 8 s after that delivery; the delivery
// comes back once, a redelivery. Without the configuration written into the
// container the channel would stay open (the default timeout is 30 min) and
// nothing would be redelivered.
func TestConsumerTimeoutRedelivers(t *testing.T) {
	r := runScenario(t, "consumer-timeout")
	if !maps.Equal(r.BrokerConfig, map[string]string{"consumer_timeout": "5000"}) || !maps.Equal(r.BrokerAdvancedConfig, map[string]int{"channel_tick_interval": 1000}) {
		t.Fatalf("broker config recorded %v %v", r.BrokerConfig, r.BrokerAdvancedConfig)
	}
	m := mode(t, r, scenario.ConfirmWindow)
	c := m.Consumers
	if c == nil || m.Redeliveries != 1 || m.Duplicates != 0 || m.Lost != 0 || c.Held != 1 || c.Reconnects != 1 || c.Deliveries != 1001 ||
		!maps.Equal(c.DeliveriesPerMessage, map[string]int{"1": 999, "2": 1}) {
		t.Fatalf("redeliveries %d duplicates %d lost %d consumers %+v", m.Redeliveries, m.Duplicates, m.Lost, c)
	}
	if len(c.ChannelCloses) != 1 || !strings.Contains(c.ChannelCloses[0], "channel closed by broker: 406 PRECONDITION_FAILED - delivery acknowledgement on channel") ||
		!strings.Contains(c.ChannelCloses[0], "Timeout value used: 5000 ms") {
		t.Fatalf("consumer closes %q", c.ChannelCloses)
	}
	connected, closed := events(m, metrics.EvConsumerConnected), events(m, metrics.EvConsumerClosed)
	if len(connected) != 2 || len(closed) != 1 {
		t.Fatalf("consumer connected %d times, closed %d times; want 2 and 1: %+v", len(connected), len(closed), m.Events)
	}
	// The first delivery comes within moments of the first connection.
	if after := closed[0].AtMS - connected[0].AtMS; after < 5000 || after > 8000 {
		t.Fatalf("channel closed %.0f ms after the consumer connected, want within the 5 s timeout and the 8 s hold", after)
	}
}

// A single active consumer (rabbitmq/amqp091-go#106): consumer 0, first to
// subscribe, receives everything until it crashes; consumer 1 then
// receives everything after, including what consumer 0 left unacknowledged,
// and consumer 0, back as a waiting consumer, receives nothing more: one
// change of consumer.
func TestSingleActiveConsumerFailover(t *testing.T) {
	r := runScenario(t, "single-active-consumer-failover")
	m := mode(t, r, scenario.ConfirmWindow)
	c := m.Consumers
	if c == nil || len(c.DeliveriesPerConsumer) != 2 || c.ConsumerChanges != 1 || c.Crashes != 1 || c.Reconnects != 1 {
		t.Fatalf("consumers %+v", c)
	}
	per := c.DeliveriesPerConsumer
	if per[0] == 0 || per[1] == 0 || per[0]+per[1] != c.Deliveries || c.Deliveries != 10000+m.Redeliveries {
		t.Fatalf("deliveries per consumer %v, all %d, redeliveries %d: want both > 0, adding up to 10,000 + redeliveries", per, c.Deliveries, m.Redeliveries)
	}
	if m.Redeliveries != c.UnackedAtCrash || m.Duplicates != 0 {
		t.Fatalf("redeliveries %d, unacked at the crash %d, duplicates %d", m.Redeliveries, c.UnackedAtCrash, m.Duplicates)
	}
	// Consumer 0 received only before its crash: the crash came at ~40%.
	if per[0] > 6000 {
		t.Fatalf("consumer 0 received %d of 10,000 though it crashed at 40%%", per[0])
	}
}

// x-delivery-limit -1 (rabbitmq-server PR #11937): the broker never
// dead-letters; the consumer's own bound does, at exactly the 30th delivery
// of each message (the default limit would have stopped at 21).
func TestDeliveryLimitUnlimited(t *testing.T) {
	r := runScenario(t, "delivery-limit-unlimited")
	m := mode(t, r, scenario.ConfirmWindow)
	c := m.Consumers
	if c == nil || c.Deliveries != 3000 || c.NackedRequeue != 2900 || c.GaveUp != 100 || c.Rejected != 100 ||
		m.DeadLettered != 100 || m.Redeliveries != 2900 || m.Duplicates != 0 {
		t.Fatalf("dead-lettered %d redeliveries %d duplicates %d consumers %+v", m.DeadLettered, m.Redeliveries, m.Duplicates, c)
	}
}

// rabbitmq-server#8495: the dead-letter queue is declared with its own
// arguments; x-max-length 10 with reject-publish does not hold back
// dead-lettered messages (all 100 land), while the same cap with the
// default drop-head keeps exactly the last 10: the arguments are applied.
func TestDeadLetterQueueCap(t *testing.T) {
	r := runScenario(t, "dead-letter-queue-cap")
	if m := mode(t, r, scenario.ConfirmWindow); m.DeadLettered != 100 || m.Confirmed != 100 || m.Consumers == nil || m.Consumers.Rejected != 100 {
		t.Fatalf("reject-publish: dead-lettered %d confirmed %d consumers %+v", m.DeadLettered, m.Confirmed, m.Consumers)
	}
	file := filepath.Join(t.TempDir(), "drop-head.yaml")
	if err := os.WriteFile(file, []byte(`version: 1
scenarios:
  - name: dead-letter-queue-drop-head
    queue:
      type: quorum
      dead_letter_queue: true
      dead_letter_arguments: {x-max-length: 10}
    load: {messages: 100, modes: [confirm-window]}
    consumers: {count: 1, prefetch: 10, on_delivery: reject}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	r = runScenario(t, "dead-letter-queue-drop-head", "-f", file)
	if m := mode(t, r, scenario.ConfirmWindow); m.DeadLettered != 10 || m.Confirmed != 100 || m.Lost != 0 {
		t.Fatalf("drop-head: dead-lettered %d confirmed %d lost %d, want 10 100 0", m.DeadLettered, m.Confirmed, m.Lost)
	}
}

// rabbitmq/amqp091-go#122: a confirm timeout shorter than a broker pause,
// the pause shorter than the heartbeat. Every id in flight when the broker
// froze (1 in confirm-each, the window of 50) is published again on the
// same channel once; the connection is never closed or reopened; each
// original's late basic.ack settles its id (matched by delivery tag), and
// each copy is a duplicate of its id, explained by the republish.
func TestConfirmTimeoutRepublishKeepsTheConnection(t *testing.T) {
	r := runScenario(t, "confirm-timeout-republish")
	for _, md := range []scenario.Mode{scenario.ConfirmEach, scenario.ConfirmWindow} {
		m := mode(t, r, md)
		n := m.Window
		if m.Reconnects != 0 || m.WentInDoubt != 0 || m.InDoubt != 0 || m.Republished != n || m.LateConfirms != n ||
			m.Duplicates != n || m.DuplicatesFromRepublish != n || m.Redeliveries != 0 || m.Stalls != 0 {
			t.Fatalf("%s (window %d): reconnects %d went in doubt %d in doubt %d republished %d late %d duplicates %d (%d from republish) redeliveries %d stalls %d",
				md, n, m.Reconnects, m.WentInDoubt, m.InDoubt, m.Republished, m.LateConfirms, m.Duplicates, m.DuplicatesFromRepublish, m.Redeliveries, m.Stalls)
		}
		// Ids published just before the freeze and those that refilled the
		// window as the last acks arrived time out 3 s after their own
		// publish: one confirm-timeout event or a few, never a reconnect.
		timeouts := events(m, metrics.EvConfirmTimeout)
		if len(timeouts) == 0 || len(timeouts) > n || len(events(m, metrics.EvConnectionLost)) != 0 || len(events(m, metrics.EvConnected)) != 1 {
			t.Fatalf("%s: confirm timeouts %+v, events %+v", md, timeouts, m.Events)
		}
		// The copies were made while the broker was frozen: after the
		// fault, before it was thawed.
		fault, thawed := events(m, metrics.EvFault), events(m, metrics.EvBrokerStarted)
		if len(fault) != 1 || len(thawed) != 1 {
			t.Fatalf("%s: fault %+v, unpause %+v", md, fault, thawed)
		}
		for _, to := range timeouts {
			if to.AtMS < fault[0].AtMS || to.AtMS > thawed[0].AtMS {
				t.Fatalf("%s: confirm timeout at %.0f ms, outside the freeze (%.0f–%.0f ms)", md, to.AtMS, fault[0].AtMS, thawed[0].AtMS)
			}
		}
		dup := 0
		for _, rg := range m.IDs.Duplicated {
			dup += rg.Len()
		}
		if dup != n || len(m.Faults) != 1 || m.Faults[0].Action != scenario.Pause {
			t.Fatalf("%s: %d duplicated ids, want %d", md, dup, n)
		}
	}
	// The report explains every duplicate by its cause: each was a copy
	// made at a confirm timeout, whose original was acked late.
	var md bytes.Buffer
	if err := reports.Markdown(&md, r); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"\nDuplicates: 1 id delivered more than once (1 extra copy):\n- 1 republished without going in doubt (a confirm timeout under `load.on_confirm_timeout: republish`, or a `basic.nack` republished): the broker had stored the first copy too; 1 late confirm of an earlier copy came after the copy was sent, matched to its id by delivery tag.\n\n",
		"\nDuplicates: 50 ids delivered more than once (50 extra copies):\n- 50 republished without going in doubt (a confirm timeout under `load.on_confirm_timeout: republish`, or a `basic.nack` republished): the broker had stored the first copy too; 50 late confirms of an earlier copy came after the copy was sent, matched to their ids by delivery tag.\n\n",
	} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
}

// A broker.config RabbitMQ refuses at boot (an unknown key, a value of the
// wrong type) is named key by key, as the scenario names it, instead of a
// log tail that ends with the Erlang crash: the run is inconclusive (exit
// 3), nothing is left behind.
func TestBrokerConfigRefusedNamesTheKey(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: needs Docker and the broker image")
	}
	file := filepath.Join(t.TempDir(), "bad-config.yaml")
	if err := os.WriteFile(file, []byte(`version: 1
scenarios:
  - name: bad-config
    broker:
      config: {nosuch.setting: "7", consumer_timeout: banana}
    load: {messages: 10}
    faults: []
`), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runCLI(t, "run", "bad-config", "-f", file, "--out", t.TempDir(), "--image", testImage())
	if code != ExitInconclusive {
		t.Fatalf("exit %d, want %d\n%s\n%s", code, ExitInconclusive, stdout, stderr)
	}
	_, path, _ := strings.Cut(stdout, "result: ")
	r := readResultFile(t, strings.TrimSpace(path)) // no mode ran: nothing for check to re-judge
	checkNoContainerLeft(t, r.RunID)
	want := `RabbitMQ refused the configuration rmqtorture wrote from the scenario's broker.config: broker.config.nosuch.setting: no such setting; broker.config.consumer_timeout: "banana" cannot be converted to a(n) integer`
	if !strings.HasSuffix(r.Error, want) || !strings.Contains(strings.Join(r.Verdict.Reasons, "\n"), want) {
		t.Fatalf("error %q\nreasons %q\nwant both to name the keys: %q", r.Error, r.Verdict.Reasons, want)
	}
}
