package reports

import (
	"time"

	"github.com/rmqtorture/rmqtorture/metrics"
	"github.com/rmqtorture/rmqtorture/scenario"
)

func ptr(v float64) *float64 { return &v }

// everyOther returns n single-id ranges 0, 2, 4, …: more ranges than a
// report lists.
func everyOther(n int) []metrics.Range {
	out := make([]metrics.Range, n)
	for i := range out {
		out[i] = metrics.Range{First: 2 * i, Last: 2 * i}
	}
	return out
}

// lostRanges is 60 ids in 56 ranges: more than a report lists.
func lostRanges() []metrics.Range {
	return append(everyOther(50), metrics.Range{First: 100, Last: 104}, metrics.Range{First: 106, Last: 106}, metrics.Range{First: 108, Last: 108},
		metrics.Range{First: 110, Last: 110}, metrics.Range{First: 112, Last: 112}, metrics.Range{First: 114, Last: 114})
}

// fullResult sets every optional field the renderers know: a failed run
// with lost ids (more ranges than listed), a fault that errored, channel
// closes, notes, and text that needs escaping in markdown.
func fullResult() *scenario.Result {
	return &scenario.Result{
		SchemaVersion: scenario.SchemaVersion, Tool: "v0.3.0", Client: "amqp091-go v1.16.0",
		Scenario: "kill-classic", Description: "A classic queue | killed at 40%.", File: "scenarios.yaml",
		Command: "rmqtorture run kill-classic --messages 200", RunID: "0badc0de",
		Image: "rmqtorture/rabbitmq:4.0-trixie", BrokerVersion: "4.0.5", Container: "rmqt-0badc0de",
		QueueType: scenario.Classic, Topology: "classic, durable; persistent messages, mandatory", Messages: 200,
		StartedAt:  time.Date(2026, 11, 29, 20, 19, 15, 123456789, time.UTC),
		DurationMS: 31234,
		Modes: []scenario.ModeResult{
			{
				Mode: scenario.FireAndForget, Queue: "rmqt.0badc0de.fire-and-forget",
				Counts:      metrics.Counts{Sent: 200, UnconfirmedDelivered: 80, UnconfirmedMissing: 120, Delivered: 80, Deliveries: 80},
				PublishRate: 1543.6, PreFaultPublishRate: 59360.4, AbsorbedRate: 2245.49,
				BrokerDowntimeMS: ptr(12448.2), ClientRecoveryMS: ptr(12444.9), BurstMS: 13268.4, Reconnects: 1,
				Faults: []scenario.FaultRecord{{Action: scenario.Kill, Signal: "SIGKILL", Trigger: "40% published", AtMS: 168.25, AtPublished: 80, InjectMS: 317.4, PublishedAtInject: 186, DownMS: 5000}},
				IDs:    metrics.IDSets{UnconfirmedMissing: []metrics.Range{{First: 80, Last: 199}}},
				Events: []metrics.Event{
					{AtMS: 0, Kind: metrics.EvBurstStart},
					{AtMS: 168.25, Kind: metrics.EvTrigger, Detail: "kill (40% published)"},
					{AtMS: 295.0, Kind: metrics.EvConnectionLost, Detail: "publish: write tcp 127.0.0.1:54320->127.0.0.1:41317: write: broken pipe"},
					{AtMS: 13268.4, Kind: metrics.EvBurstEnd},
				},
				Verdict:   scenario.Verdict{Status: scenario.Pass},
				Resources: &scenario.ResourceUse{BurstCPUS: 0.42, DrainCPUS: 0.13, CPUPer100kS: 275, PeakRSSBytes: 41_943_040, LedgerBytesPerID: 8},
			},
			{
				Mode: scenario.ConfirmWindow, Queue: "rmqt.0badc0de.confirm-window", Window: 1000,
				Counts: metrics.Counts{Sent: 200, Confirmed: 100, Lost: 60, Unverified: 0, Nacked: 10, Returned: 10, InDoubt: 20, InDoubtDelivered: 5,
					WentInDoubt: 40, Republished: 40, PublishErrors: 2, Delivered: 125, Deliveries: 130, Duplicates: 5, DuplicatesFromRepublish: 3, Unexpected: 1, Redeliveries: 2},
				PublishRate: 424.4, PreFaultPublishRate: 600.5, ConfirmRate: 410.2,
				ConfirmLatency:   metrics.LatencySummary{Count: 160, P50: 1.634, P90: 2.9, P99: 3.84, Max: 14952.1, OutOfRange: 1},
				BrokerDowntimeMS: ptr(13539), ClientRecoveryMS: nil, BurstMS: 20500, Reconnects: 2, BlockedMS: 812.5, Stalls: 1,
				ChannelCloses: []string{"channel closed by broker: 404 NOT_FOUND - no exchange 'missing' in vhost '/'"},
				Faults: []scenario.FaultRecord{
					{Action: scenario.Kill, Signal: "SIGKILL", Trigger: "40% published", AtMS: 301.5, AtPublished: 80, InjectMS: 250, PublishedAtInject: 81, DownMS: 5000},
					{Action: scenario.MemoryAlarm, Trigger: "after 10s", AtMS: 10000, AtPublished: 150, InjectMS: 2100.7, PublishedAtInject: 150, DownMS: 8000, Error: "exec rabbitmqctl: exit 69"},
				},
				IDs: metrics.IDSets{Lost: lostRanges(), InDoubt: []metrics.Range{{First: 120, Last: 139}}, Nacked: []metrics.Range{{First: 150, Last: 159}},
					Returned: []metrics.Range{{First: 160, Last: 169}}, Duplicated: []metrics.Range{{First: 121, Last: 121}, {First: 125, Last: 128}}},
				Events: []metrics.Event{
					{AtMS: 0, Kind: metrics.EvBurstStart},
					{AtMS: 0.04, Kind: metrics.EvConnected, Detail: "epoch 1 | heartbeat 10s"},
					{AtMS: 20500, Kind: metrics.EvBurstEnd},
				},
				Notes:     []string{"every order had been published before the kill call returned (250 ms after its trigger): the fault hit the broker's backlog, not the burst"},
				Verdict:   scenario.Verdict{Status: scenario.Fail, Reasons: []string{"60 confirmed messages lost", "1 unexpected delivery"}},
				Error:     "drain: connection reset",
				Resources: &scenario.ResourceUse{BurstCPUS: 0.61, DrainCPUS: 0.2, CPUPer100kS: 405, PeakRSSBytes: 52_428_800, LedgerBytesPerID: 12},
			},
		},
		Verdict: scenario.Verdict{Status: scenario.Fail, Reasons: []string{"confirm-window: 60 confirmed messages lost", "confirm-window: 1 unexpected delivery"}},
		Error:   "",
	}
}

// matrixResult is a classic-vs-quorum style matrix: two cells, two repeats
// of one, a transient cell whose loss is allowed, and a cell not run.
func matrixResult() *scenario.Result {
	mode := func(qt scenario.QueueType, persistent bool, repeat, lost, doubt int, p99, rate float64) scenario.ModeResult {
		return scenario.ModeResult{
			Mode: scenario.ConfirmWindow, Cell: &scenario.Cell{QueueType: qt, Persistent: persistent, Repeat: repeat},
			Queue: "rmqt.feedf00d.q", Window: 1000, LostAllowed: !persistent, LostAllowedReason: map[bool]string{true: "transient messages"}[!persistent],
			Counts:         metrics.Counts{Sent: 1000, Confirmed: 1000 - lost - doubt, Lost: lost, InDoubt: doubt, WentInDoubt: doubt, Delivered: 1000 - lost, Deliveries: 1000 - lost},
			PublishRate:    rate / 2,
			ConfirmLatency: metrics.LatencySummary{Count: 1000, P50: p99 / 2, P90: p99 * 0.9, P99: p99, Max: p99 * 1.5},
			BurstMS:        2000, Events: []metrics.Event{{AtMS: 0, Kind: metrics.EvBurstStart}},
			PreFaultPublishRate: rate, Verdict: scenario.Verdict{Status: scenario.Pass},
		}
	}
	return &scenario.Result{
		SchemaVersion: scenario.SchemaVersion, Tool: "dev", Client: "amqp091-go v1.16.0", Scenario: "classic-vs-quorum", File: "scenarios.yaml",
		Command: "rmqtorture run classic-vs-quorum --repeat 2", RunID: "feedf00d", Image: "rabbitmq:4", BrokerVersion: "4.0.5", Container: "rmqt-feedf00d",
		QueueType: scenario.Quorum, Topology: "matrix: quorum, classic × persistent, transient", Messages: 1000,
		StartedAt: time.Date(2026, 11, 30, 8, 0, 0, 0, time.FixedZone("CET", 3600)), DurationMS: 120000,
		Modes: []scenario.ModeResult{
			mode(scenario.Quorum, true, 1, 0, 3, 70.04, 12430.4),
			mode(scenario.Quorum, true, 2, 0, 1, 115.4, 11000),
			mode(scenario.Classic, false, 1, 250, 0, 20.5, 20000),
			{Mode: scenario.ConfirmWindow, Cell: &scenario.Cell{QueueType: scenario.Classic, Persistent: false, Repeat: 2}, NotRun: true,
				Verdict: scenario.Verdict{Status: scenario.Inconclusive, Reasons: []string{"not run: an earlier cell was interrupted or lost the broker"}}},
		},
		Verdict:     scenario.Verdict{Status: scenario.Inconclusive, Reasons: []string{"confirm-window: not run: an earlier cell was interrupted or lost the broker"}},
		Interrupted: true,
	}
}

// deadlineResult has message deadlines: not published and pending orders.
func deadlineResult() *scenario.Result {
	return &scenario.Result{
		SchemaVersion: scenario.SchemaVersion, Tool: "dev", Client: "amqp091-go v1.16.0", Scenario: "deadline-kill", File: "scenarios.yaml",
		Command: "rmqtorture run deadline-kill", RunID: "00000001", Image: "rmqtorture/rabbitmq:4.0-trixie", Container: "rmqt-00000001",
		QueueType: scenario.Quorum, Topology: "quorum, durable", Messages: 100, StartedAt: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
		Modes: []scenario.ModeResult{{
			Mode: scenario.ConfirmEach, Queue: "rmqt.00000001.confirm-each", Window: 1,
			Counts: metrics.Counts{Sent: 90, Confirmed: 90, NotPublished: 10, PendingAtDeadline: 4, Delivered: 90, Deliveries: 90, WentInDoubt: 4, Republished: 4},
			IDs:    metrics.IDSets{NotPublished: []metrics.Range{{First: 45, Last: 54}}, Unverified: nil},
			Events: []metrics.Event{}, Verdict: scenario.Verdict{Status: scenario.Pass},
		}},
		Verdict: scenario.Verdict{Status: scenario.Pass},
	}
}

// txResult is a transactional burst and a shared-connection confirm-window
// burst after a kill of a classic queue's broker: the ids that went in doubt
// and were republished (one set equal, one not), and broker log findings.
func txResult() *scenario.Result {
	doubt := []metrics.Range{{First: 2000, Last: 2009}}
	return &scenario.Result{
		SchemaVersion: scenario.SchemaVersion, Tool: "dev", Client: "amqp091-go v1.16.0", Scenario: "kill-mid-burst-tx", File: "scenarios.yaml",
		Command: "rmqtorture run kill-mid-burst-tx", RunID: "7a7a7a7a", Image: "rmqtorture/rabbitmq:4.0-trixie", BrokerVersion: "RabbitMQ 4.0.5", Container: "rmqt-7a7a7a7a",
		QueueType: scenario.Classic, Topology: "classic, durable; persistent messages, mandatory; 4 publishers on 1 connection (up to 4 channels each)", Messages: 4000,
		StartedAt: time.Date(2026, 11, 30, 9, 21, 28, 0, time.UTC), DurationMS: 22700,
		Modes: []scenario.ModeResult{
			{
				Mode: scenario.Transactional, Queue: "rmqt.7a7a7a7a.transactional", Window: 10,
				Counts:      metrics.Counts{Sent: 4000, Confirmed: 4000, WentInDoubt: 10, Republished: 10, Delivered: 4000, Deliveries: 4000},
				PublishRate: 360.2, PreFaultPublishRate: 1878.4, ConfirmRate: 359.1,
				ConfirmLatency:   metrics.LatencySummary{Count: 4000, P50: 2.0, P90: 6.1, P99: 19.5, Max: 60.9},
				BrokerDowntimeMS: ptr(8464), ClientRecoveryMS: ptr(9311), BurstMS: 11100, Reconnects: 1,
				IDs:     metrics.IDSets{WentInDoubt: doubt, Republished: doubt},
				Events:  []metrics.Event{{AtMS: 1092.406, Kind: metrics.EvConnectionLost, Epoch: 1, Publisher: 1, Connection: 1, Detail: `epoch 1: tx.commit did not return (Exception (501) Reason: "EOF"): its 10 messages are in doubt`}},
				Verdict: scenario.Verdict{Status: scenario.Pass},
			},
			{
				Mode: scenario.ConfirmWindow, Queue: "rmqt.7a7a7a7a.confirm-window", Window: 100,
				Counts: metrics.Counts{Sent: 4000, Confirmed: 3990, InDoubt: 10, WentInDoubt: 400, Republished: 390, Delivered: 4000, Deliveries: 4000},
				IDs: metrics.IDSets{InDoubt: []metrics.Range{{First: 3990, Last: 3999}}, WentInDoubt: []metrics.Range{{First: 1600, Last: 1989}, {First: 3990, Last: 3999}},
					Republished: []metrics.Range{{First: 1600, Last: 1989}}},
				Events:  []metrics.Event{},
				Verdict: scenario.Verdict{Status: scenario.Pass},
			},
		},
		Verdict: scenario.Verdict{Status: scenario.Pass},
		BrokerLogFindings: []scenario.BrokerLogFinding{
			{Signature: "dropped-after-unclean-shutdown", Meaning: "a durable classic queue recovered after an unclean shutdown", Count: 2, Messages: 3,
				FirstLine: "2026-11-30 09:24:08.646976+00:00 [warning] <0.466.0> Queue rmqt.7a7a7a7a.transactional in vhost / dropped 0/0/0 persistent messages and 0 transient messages after unclean shutdown"},
			{Signature: "restarting-crashed-queue", Meaning: "a classic queue's process crashed and was restarted (rabbitmq-server#13390)", Count: 1,
				FirstLine: "<0.1928067.0> Restarting crashed queue 'a`b' in vhost '/'."},
		},
	}
}

// deadLetterResult has dead-letter queues: a classic queue with a TTL that
// lost confirmed ids on the dead-letter path across a kill (allowed), and
// one whose x-overflow reject-publish-dlx nacked and dead-lettered the
// overflow; a third mode lost messages to a TTL without a dead-letter queue.
func deadLetterResult() *scenario.Result {
	return &scenario.Result{
		SchemaVersion: scenario.SchemaVersion, Tool: "dev", Client: "amqp091-go v1.16.0", Scenario: "dead-letter", File: "scenarios.yaml",
		Command: "rmqtorture run dead-letter", RunID: "0000d1e0", Image: "rmqtorture/rabbitmq:4.0-trixie", BrokerVersion: "RabbitMQ 4.0.5", Container: "rmqt-0000d1e0",
		QueueType: scenario.Classic, Topology: "classic, durable", Messages: 2000, StartedAt: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
		Modes: []scenario.ModeResult{{
			Mode: scenario.ConfirmWindow, Queue: "rmqt.0000d1e0.confirm-window", Window: 1000, DeadLetterQueue: "rmqt.0000d1e0.confirm-window.dlq",
			DeadLetterLossAllowed: true, DeadLetterGuarantee: "classic queues dead-letter at most once (https://www.rabbitmq.com/docs/dlx)",
			Counts: metrics.Counts{Sent: 2000, Confirmed: 1800, LostDeadLetterPath: 200, Delivered: 1800, Deliveries: 1800, DeadLettered: 1800},
			IDs:    metrics.IDSets{LostDeadLetterPath: []metrics.Range{{First: 400, Last: 599}}, DeadLettered: []metrics.Range{{First: 0, Last: 399}, {First: 600, Last: 1999}}},
			Events: []metrics.Event{}, Verdict: scenario.Verdict{Status: scenario.Pass},
			Notes: []string{"dead-letter path (x-message-ttl 2000 ms into rmqt.0000d1e0.confirm-window.dlq): 200 confirmed messages lost on it (allowed: …)"},
		}, {
			Mode: scenario.ConfirmEach, Queue: "rmqt.0000d1e0.confirm-each", Window: 1, DeadLetterQueue: "rmqt.0000d1e0.confirm-each.dlq",
			Counts: metrics.Counts{Sent: 2000, Confirmed: 500, Nacked: 1500, Delivered: 2000, Deliveries: 2000, DeadLettered: 1500, DeadLetteredNacked: 1500},
			IDs:    metrics.IDSets{Nacked: []metrics.Range{{First: 500, Last: 1999}}, DeadLettered: []metrics.Range{{First: 500, Last: 1999}}},
			Events: []metrics.Event{}, Verdict: scenario.Verdict{Status: scenario.Pass},
		}, {
			Mode: scenario.FireAndForget, Queue: "rmqt.0000d1e0.fire-and-forget",
			Counts: metrics.Counts{Sent: 2000, UnconfirmedDelivered: 2000, Delivered: 2000, Deliveries: 2000},
			Events: []metrics.Event{}, Verdict: scenario.Verdict{Status: scenario.Pass},
		}, {
			Mode: scenario.ConfirmWindow, Queue: "rmqt.0000d1e0.ttl", Window: 1000, LostAllowed: true, LostAllowedReason: "TTL",
			Counts: metrics.Counts{Sent: 2000, Confirmed: 366, Lost: 1634, Delivered: 366, Deliveries: 366},
			IDs:    metrics.IDSets{Lost: []metrics.Range{{First: 366, Last: 1999}}},
			Events: []metrics.Event{}, Verdict: scenario.Verdict{Status: scenario.Pass},
		}},
		Verdict: scenario.Verdict{Status: scenario.Pass},
	}
}
