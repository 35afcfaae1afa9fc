package scenario

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

const head = "version: 1\nscenarios:\n  - name: a\n"

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name, yaml string
		want       []string // every error line, in order
	}{
		{"unknown key names line, column, path and the known keys",
			head + "    load:\n      messages: 10\n      windw: 5\n",
			[]string{"s.yaml:6:7: scenarios[0].load.windw: unknown field (known: messages, modes, window, confirm_timeout, republish, reconnect_timeout, unroutable_every, stall_timeout, heartbeat, burst_timeout, message_deadline, persistent, rate, connect_to, connect_node, message_size_bytes, confirm_listener_buffer, publishers, channels_per_connection, tx_size, on_confirm_timeout, burst)"}},
		{"window zero and kill point outside 0-100, both at once",
			head + "    load:\n      messages: 10\n      window: 0\n    faults:\n      - action: kill\n        published_percent: 150\n",
			[]string{
				"s.yaml:6:15: scenarios[0].load.window: must be within 1–65535, got 0",
				"s.yaml:9:28: scenarios[0].faults[0].published_percent: must be within 0–100, got 150",
			}},
		{"negative window",
			head + "    load:\n      messages: 10\n      window: -3\n",
			[]string{"s.yaml:6:15: scenarios[0].load.window: must be within 1–65535, got -3"}},
		{"malformed YAML",
			head + "    load: {messages: 10\n",
			// yaml.v3 reports the line where the enclosing block starts.
			[]string{"s.yaml:3: did not find expected ',' or '}'"}},
		{"wrong type",
			head + "    load:\n      messages: ten\n",
			[]string{"s.yaml:5:17: scenarios[0].load.messages: must be a whole number, got \"ten\""}},
		{"every problem reported, in file order",
			head + "    load:\n      messages: 10\n      modes: [fire-and-forget, confirm-al]\n    faults:\n      - action: kill\n        signal: SIGKIL\n        published_percent: 10\n        after: 1s\n    drain:\n      idle: soon\n",
			[]string{
				"s.yaml:6:32: scenarios[0].load.modes[1]: \"confirm-al\" is not a mode (fire-and-forget, confirm-each, confirm-window, transactional)",
				"s.yaml:8:9: scenarios[0].faults[0]: needs exactly one trigger (published_percent, published, in_flight, after, after_burst or after_start), got 2",
				"s.yaml:9:17: scenarios[0].faults[0].signal: \"SIGKIL\" is not a signal (SIGKILL, SIGTERM, SIGINT, SIGQUIT, SIGHUP, SIGUSR1, SIGUSR2, SIGABRT); did you mean SIGKILL?",
				"s.yaml:13:13: scenarios[0].drain.idle: \"soon\" is not a duration (use e.g. 5s, 250ms)",
			}},
		{"missing messages",
			head + "    queue:\n      type: lazy\n",
			[]string{
				"s.yaml:3:5: scenarios[0].load.messages: missing; write how many orders the burst publishes (1–10000000), e.g. messages: 1000",
				"s.yaml:5:13: scenarios[0].queue.type: \"lazy\" is not a queue type (quorum, classic, stream)",
			}},
		{"duplicate scenario names",
			head + "    load: {messages: 1}\n  - name: a\n    load: {messages: 1}\n",
			[]string{"s.yaml:5:11: scenarios[1].name: \"a\" already names scenarios[0]"}},
		{"published count beyond the burst",
			head + "    load: {messages: 10}\n    faults: [{action: kill, published: 11}]\n",
			[]string{"s.yaml:5:40: scenarios[0].faults[0].published: must be within 0–10 (load.messages), got 11"}},
		{"unknown action",
			head + "    load: {messages: 10}\n    faults: [{action: explode, after: 1s}]\n",
			[]string{"s.yaml:5:23: scenarios[0].faults[0].action: \"explode\" is not a fault action (" + allActions + ")"}},
		{"signal and down where they make no sense",
			head + "    load: {messages: 10}\n    faults: [{action: close-connections, signal: SIGKILL, down: 1s, after: 1s}]\n",
			[]string{
				"s.yaml:5:50: scenarios[0].faults[0].signal: only kill takes a signal, not close-connections",
				"s.yaml:5:65: scenarios[0].faults[0].down: close-connections has nothing to recover; down applies to " + downActions(1),
			}},
		{"queue arguments are typed",
			head + "    load: {messages: 10}\n    queue:\n      arguments: {x-max-length: many, x-overflow: reject, x-colour: red, x-dead-letter-exchange: 5}\n",
			[]string{
				"s.yaml:6:33: scenarios[0].queue.arguments.x-max-length: must be a whole number, got \"many\"",
				"s.yaml:6:51: scenarios[0].queue.arguments.x-overflow: \"reject\" is not an overflow behaviour (drop-head, reject-publish, reject-publish-dlx)",
				"s.yaml:6:59: scenarios[0].queue.arguments.x-colour: unknown queue argument (known: x-dead-letter-exchange, x-dead-letter-routing-key, x-dead-letter-strategy, x-delivery-limit, x-max-length, x-max-length-bytes, x-stream-max-segment-size-bytes, x-message-ttl, x-overflow, x-single-active-consumer, x-quorum-initial-group-size)",
				"s.yaml:6:98: scenarios[0].queue.arguments.x-dead-letter-exchange: must be text, got \"5\"",
			}},
		{"exact expectations name modes the scenario runs",
			head + "    load: {messages: 10, modes: [confirm-each], unroutable_every: -1}\n    expect:\n      modes:\n        confirm-window: {nacked: 1}\n        confirm-each: {confirmed: -1, colour: 1}\n",
			[]string{
				"s.yaml:4:67: scenarios[0].load.unroutable_every: must not be negative, got -1",
				"s.yaml:7:25: scenarios[0].expect.modes.confirm-window: \"confirm-window\" is not one of this scenario's load.modes",
				"s.yaml:8:35: scenarios[0].expect.modes.confirm-each.confirmed: must not be negative, got -1",
				"s.yaml:8:39: scenarios[0].expect.modes.confirm-each.colour: unknown field (known: sent, confirmed, lost, nacked, returned, in_doubt, delivered, unconfirmed_delivered, unconfirmed_missing, duplicates, min_went_in_doubt, min_blocked_ms, not_published, pending_at_deadline, min_unconfirmed_missing, channel_closed_with, dead_lettered, min_redeliveries, deliveries_per_message, retries, x_death_count_at_park, max_went_in_doubt, redeliveries, republished, late_confirms, consumer_changes, lost_dead_letter_path, dead_letter_reason)",
			}},
		{"a confirm listener smaller than the window is refused (streadway/amqp#254)",
			head + "    load: {messages: 10, window: 64, confirm_listener_buffer: 1, message_size_bytes: -1}\n",
			[]string{
				"s.yaml:4:63: scenarios[0].load.confirm_listener_buffer: 1 is below the window 64: a full confirm listener stalls amqp091-go's reader (streadway/amqp#254) and, since v1.13, makes it drop confirms; leave it unset to size it for the window",
				"s.yaml:4:86: scenarios[0].load.message_size_bytes: must be within 0–1048576 (1 MiB), got -1",
			}},
		{"timelines: impossible orders, overlaps and a broker left down",
			head + `    load: {messages: 100}
    faults:
      - {action: kill, published_percent: 30, manual_recovery: true}
      - {action: pause, published_percent: 40, down: 1s}
      - {action: start, published_percent: 20}
      - {action: stop, after: 10s, down: 5s, grace: 2s}
      - {action: disconnect, after: 12s, manual_recovery: true}
      - {action: unpause, after: 30s, grace: 1s}
`,
			[]string{
				"s.yaml:6:7: scenarios[0].faults: mixes trigger kinds (after, published): use either published/published_percent or after for every fault step",
				"s.yaml:6:64: scenarios[0].faults[0].manual_recovery: a step recovered by a later one must be triggered by after (or after_burst), so its recovery cannot come due before it",
				"s.yaml:7:18: scenarios[0].faults[1].action: pause needs a running broker, but it is stopped here (recover it with start first)",
				"s.yaml:8:9: scenarios[0].faults[2]: start must be triggered by after: nothing is published while the broker is stopped",
				"s.yaml:10:37: scenarios[0].faults[4].after: 12s overlaps the previous step, which lasts until 15s after burst start",
				"s.yaml:11:9: scenarios[0].faults[5]: the broker would stay disconnected at the end: add a reconnect step",
				"s.yaml:11:18: scenarios[0].faults[5].action: unpause needs a broker left paused by an earlier step with manual_recovery, but it is disconnected here",
				"s.yaml:11:46: scenarios[0].faults[5].grace: only stop and restart take a grace period, not unpause",
			}},
		{"misroute twice, in_flight beside other steps and in confirm-each, duplicate matrix cells",
			head + `    load: {messages: 100, modes: [confirm-each]}
    faults:
      - {action: publish-to-missing-exchange, in_flight: 2}
      - {action: publish-to-missing-exchange, published: 50}
    matrix: {queue_types: [classic, classic], persistent: [true, true]}
`,
			[]string{
				"s.yaml:6:7: scenarios[0].faults: mixes trigger kinds (in_flight, published): use either published/published_percent or after for every fault step",
				"s.yaml:6:58: scenarios[0].faults[0].in_flight: confirm-each never has more than 1 in flight, got 2",
				"s.yaml:7:18: scenarios[0].faults[1].action: only one publish-to-missing-exchange step per scenario",
				"s.yaml:8:37: scenarios[0].matrix.queue_types[1]: \"classic\" listed twice",
				"s.yaml:8:66: scenarios[0].matrix.persistent[1]: true listed twice",
			}},
		{"steps run in trigger order",
			head + "    load: {messages: 100}\n    faults: [{action: kill, published_percent: 50}, {action: pause, published: 20}]\n",
			[]string{"s.yaml:5:53: scenarios[0].faults[1]: triggers at 20 published, before faults[0] (50): steps run in order"}},
		{"transient settings and in_flight triggers that cannot work",
			head + "    queue: {type: quorum, durable: false}\n    load: {messages: 10, window: 8, rate: -1}\n    faults: [{action: kill, in_flight: 9}]\n",
			[]string{
				"s.yaml:4:36: scenarios[0].queue.durable: quorum queues are always durable; use type: classic for a non-durable queue",
				"s.yaml:5:43: scenarios[0].load.rate: must be a finite number ≥ 0 (msg/s; 0: as fast as possible), got -1",
				"s.yaml:6:40: scenarios[0].faults[0].in_flight: must be within 1–8 (load.window), got 9",
			}},
		{"consumer settings and consumer faults that cannot work",
			head + `    queue: {arguments: {x-dead-letter-exchange: x}, dead_letter_queue: true}
    load: {messages: 100, publishers: 0}
    consumers: {count: 2, prefetch: 10, ack_every: 11, on_delivery: reject, retry_delay: 1s}
    faults: [{action: crash-consumer, published: 5, down: 1s, signal: SIGKILL}]
`,
			[]string{
				"s.yaml:4:49: scenarios[0].queue.arguments.x-dead-letter-exchange: queue.dead_letter_queue sets x-dead-letter-exchange itself; remove one of the two",
				"s.yaml:5:39: scenarios[0].load.publishers: must be within 1–64, got 0",
				"s.yaml:6:52: scenarios[0].consumers.ack_every: must be within 1–10 (the prefetch: a consumer never holds more unacknowledged deliveries), got 11",
				"s.yaml:6:90: scenarios[0].consumers.retry_delay: only on_delivery: retry uses retry_delay",
				"s.yaml:7:23: scenarios[0].faults[0].action: crash-consumer crashes before an ack: it needs consumers.on_delivery: ack",
				"s.yaml:7:71: scenarios[0].faults[0].signal: only kill takes a signal, not crash-consumer",
			}},
		{"retry without a dead-letter queue, consumer settings without consumers",
			head + `    load: {messages: 100}
    consumers: {count: 1, on_delivery: retry}
  - name: b
    load: {messages: 100}
    consumers: {prefetch: 5}
    faults: [{action: crash-consumer, published: 5}]
`,
			[]string{
				"s.yaml:5:40: scenarios[0].consumers.on_delivery: retry parks messages in the dead-letter queue after max_retries: set queue.dead_letter_queue: true",
				"s.yaml:8:27: scenarios[1].consumers.prefetch: has no effect without live consumers: set consumers.count",
				"s.yaml:9:23: scenarios[1].faults[0].action: crash-consumer needs live consumers: set consumers.count",
			}},
		{"repeating steps that cannot repeat",
			head + `    load: {messages: 100}
    faults:
      - {action: kill, after: 1s, every: 2s, count: 3, down: 2s}
      - {action: pause, after: 20s, count: 2, jitter: -1s}
      - {action: stop, after: 30s, every: 5s, manual_recovery: true}
      - {action: start, after: 40s}
      - {action: kill, after: 50s, every: 10s, count: 3, down: 1s, jitter: 2s}
      - {action: kill, after: 70s}
`,
			[]string{
				"s.yaml:7:44: scenarios[0].faults[1].count: count repeats a step and needs every",
				"s.yaml:7:55: scenarios[0].faults[1].jitter: must not be negative",
				"s.yaml:8:43: scenarios[0].faults[2].every: every needs count (how many times the step fires, at least 2)",
				"s.yaml:11:31: scenarios[0].faults[5].after: 1m10s overlaps the previous step, which lasts until 1m19s after burst start",
			}},
		{"NaN rate and percent, expectations nothing can meet, a drain that gives up before idle",
			head + `    queue: {type: classic}
    load: {messages: 100, rate: .nan}
    consumers: {count: two, prefetch: 5}
    faults: [{action: kill, published_percent: .nan}]
    drain: {idle: 5s, lost_wait: 2s}
    expect:
      modes:
        confirm-window: {dead_lettered: 3, deliveries_per_message: 2, retries: 1}
  - name: b
    queue: {type: classic}
    load: {messages: 10}
    consumers: {count: 1, on_delivery: nack-requeue}
`,
			[]string{
				"s.yaml:5:33: scenarios[0].load.rate: must be a number, got \".nan\"",
				"s.yaml:6:24: scenarios[0].consumers.count: must be a whole number, got \"two\"",
				"s.yaml:7:48: scenarios[0].faults[0].published_percent: must be a number, got \".nan\"",
				"s.yaml:8:34: scenarios[0].drain.lost_wait: 2s is shorter than drain.idle 5s: the drain would give up on confirmed ids before it ever counts as idle",
				"s.yaml:11:41: scenarios[0].expect.modes.confirm-window.dead_lettered: nothing is dead-lettered without queue.dead_letter_queue: true",
				"s.yaml:11:68: scenarios[0].expect.modes.confirm-window.deliveries_per_message: is measured by live consumers: set consumers.count",
				"s.yaml:11:80: scenarios[0].expect.modes.confirm-window.retries: is measured by consumers with on_delivery: retry",
				"s.yaml:15:40: scenarios[1].consumers.on_delivery: nack-requeue on a classic queue cycles until drain.timeout: classic queues have no delivery limit (use a quorum queue, or reject)",
			}},
		{"dead-letter path expectations need a dead-letter queue",
			head + `    queue: {type: quorum, arguments: {x-message-ttl: 100, x-dead-letter-strategy: at-least-once}}
    load: {messages: 10}
    expect:
      allow_dead_letter_path_loss: false
      modes:
        confirm-window: {lost_dead_letter_path: 1}
`,
			[]string{
				"s.yaml:7:36: scenarios[0].expect.allow_dead_letter_path_loss: has no effect without queue.dead_letter_queue: true",
				"s.yaml:9:49: scenarios[0].expect.modes.confirm-window.lost_dead_letter_path: nothing is lost on the dead-letter path without queue.dead_letter_queue: true",
			}},
		{"empty file", "", []string{"s.yaml: empty file; it needs version: 1 and a list of scenarios"}},
		{"wrong version and no scenarios",
			"version: 2\nscenarios: []\n",
			[]string{
				"s.yaml:1:10: version: unsupported version 2 (this rmqtorture reads version 1)",
				"s.yaml:2:12: scenarios: no scenarios",
			}},
		{"scenarios not a list",
			"version: 1\nscenarios: {name: a}\n",
			[]string{"s.yaml:2:12: scenarios: must be a list, got a mapping"}},
		{"more channels per connection than publishers",
			head + "    load: {messages: 10, publishers: 2, channels_per_connection: 4}\n",
			[]string{"s.yaml:4:66: scenarios[0].load.channels_per_connection: 4 channels per connection but only 2 publishers: raise load.publishers (each channel is one publisher)"}},
		{"shared connections with fire-and-forget",
			head + "    load: {messages: 10, publishers: 2, channels_per_connection: 2}\n",
			[]string{"s.yaml:4:66: scenarios[0].load.channels_per_connection: shared connections are for the confirm modes and transactional: fire-and-forget publishers close their connection when done, so each needs its own (drop fire-and-forget from load.modes)"}},
		{"tx_size out of range",
			head + "    load: {messages: 10, modes: [transactional], tx_size: 0}\n",
			[]string{"s.yaml:4:59: scenarios[0].load.tx_size: must be within 1–65535, got 0"}},
		{"in_flight beyond one transaction",
			head + "    load: {messages: 10, modes: [transactional], tx_size: 5}\n    faults: [{action: kill, in_flight: 6}]\n",
			[]string{"s.yaml:5:40: scenarios[0].faults[0].in_flight: transactional never has more than load.tx_size (5) in flight, got 6"}},
		{"went-in-doubt bounds that cannot both hold",
			head + "    load: {messages: 10, modes: [transactional]}\n    expect:\n      modes:\n        transactional: {min_went_in_doubt: 5, max_went_in_doubt: 4}\n",
			[]string{"s.yaml:7:66: scenarios[0].expect.modes.transactional.max_went_in_doubt: 4 is below min_went_in_doubt 5: no run can meet both"}},
		{"two documents",
			head + "    load: {messages: 1}\n---\nversion: 1\n",
			[]string{"s.yaml:5:1: more than one YAML document; put all scenarios in one"}},
		{"a key given twice is the only error, naming both lines (not a misleading one about modes)",
			head + "    load:\n      modes: [confirm-each]\n      messages: 10\n      window: 5\n      messages: 20\n",
			[]string{`s.yaml:8:7: scenarios[0].load.messages: "messages" given twice, at lines 6 and 8: keep one`}},
		{"a section given twice",
			head + "    load: {messages: 10}\n    load: {messages: 20}\n",
			[]string{`s.yaml:5:5: scenarios[0].load: "load" given twice, at lines 4 and 5: keep one`}},
		{"numbers not written in decimal; a text field given one wants text",
			head + "    queue: {arguments: {x-dead-letter-routing-key: 0x10}}\n    load: {messages: 1e3, window: 0x10, publishers: 010, unroutable_every: 1_000, rate: 2.5e2, message_size_bytes: 0b11}\n    seed: 0o17\n",
			[]string{
				`s.yaml:4:52: scenarios[0].queue.arguments.x-dead-letter-routing-key: must be text, got "0x10"`,
				`s.yaml:5:22: scenarios[0].load.messages: "1e3" is not written in decimal (YAML reads it as 1000): write 1000`,
				`s.yaml:5:35: scenarios[0].load.window: "0x10" is not written in decimal (YAML reads it as 16): write 16`,
				`s.yaml:5:53: scenarios[0].load.publishers: "010" is not written in decimal (YAML reads it as 8): write 8`,
				`s.yaml:5:76: scenarios[0].load.unroutable_every: "1_000" is not written in decimal (YAML reads it as 1000): write 1000`,
				`s.yaml:5:89: scenarios[0].load.rate: "2.5e2" is not written in decimal (YAML reads it as 250): write 250`,
				`s.yaml:5:116: scenarios[0].load.message_size_bytes: "0b11" is not written in decimal (YAML reads it as 3): write 3`,
				`s.yaml:6:11: scenarios[0].seed: "0o17" is not written in decimal (YAML reads it as 15): write 15`,
			}},
		{"every duration has an upper bound",
			head + `    broker: {ready_timeout: 1000h}
    queue: {settle_before_burst: 11m}
    load: {messages: 400, confirm_timeout: 10m1s, reconnect_timeout: 61m, stall_timeout: 1h, burst_timeout: 2h, message_deadline: 90m}
    consumers: {count: 1, processing_delay: 11m}
    faults:
      - {action: kill, after: 1s, down: 1000000h}
      - {action: pause, after: 2h, down: 10m, every: 70m, count: 2, jitter: 20m}
      - {action: stop, after: 5h, grace: 1h}
    drain: {idle: 15m, lost_wait: 2h, timeout: 3h}
`,
			[]string{
				"s.yaml:4:29: scenarios[0].broker.ready_timeout: must be at most 10m, got 1000h",
				"s.yaml:5:34: scenarios[0].queue.settle_before_burst: must be at most 10m, got 11m",
				"s.yaml:6:44: scenarios[0].load.confirm_timeout: must be at most 10m, got 10m1s",
				"s.yaml:6:70: scenarios[0].load.reconnect_timeout: must be at most 1h, got 61m",
				"s.yaml:6:90: scenarios[0].load.stall_timeout: must be at most 10m, got 1h",
				"s.yaml:6:109: scenarios[0].load.burst_timeout: must be at most 1h, got 2h",
				"s.yaml:6:131: scenarios[0].load.message_deadline: must be at most 1h, got 90m",
				"s.yaml:7:45: scenarios[0].consumers.processing_delay: must be at most 10m, got 11m",
				"s.yaml:9:41: scenarios[0].faults[0].down: must be at most 10m, got 1000000h",
				"s.yaml:10:32: scenarios[0].faults[1].after: must be at most 1h, got 2h",
				"s.yaml:10:54: scenarios[0].faults[1].every: must be at most 1h, got 70m",
				"s.yaml:10:77: scenarios[0].faults[1].jitter: must be at most 10m, got 20m",
				"s.yaml:11:31: scenarios[0].faults[2].after: must be at most 1h, got 5h",
				"s.yaml:11:42: scenarios[0].faults[2].grace: must be at most 10m, got 1h",
				"s.yaml:12:19: scenarios[0].drain.idle: must be at most 10m, got 15m",
				"s.yaml:12:35: scenarios[0].drain.lost_wait: must be at most 1h, got 2h",
				"s.yaml:12:48: scenarios[0].drain.timeout: must be at most 1h, got 3h",
			}},
		{"text fields have a length limit",
			"version: 1\nscenarios:\n  - name: " + strings.Repeat("a", 65) + "\n    description: " + strings.Repeat("é", 4097) + "\n    broker: {image: " + strings.Repeat("i", 513) + "}\n    load: {messages: 10}\n",
			[]string{
				"s.yaml:3:11: scenarios[0].name: must be at most 64 characters, got 65",
				"s.yaml:4:18: scenarios[0].description: must be at most 4,096 characters, got 4,097",
				"s.yaml:5:21: scenarios[0].broker.image: must be at most 512 characters, got 513",
			}},
	}
	expectParseErrors(t, tests)
}

func TestParseDefaults(t *testing.T) {
	f, err := Parse("s.yaml", []byte(head+"    load: {messages: 7}\n    faults: [{action: kill, published_percent: 50}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	s := f.Scenarios[0]
	if s.Broker.Image != DefaultImage || s.Broker.ReadyTimeout.D() != time.Minute || s.Queue.Type != Quorum ||
		s.Queue.SettleBeforeBurst.D() != 2*time.Second || s.Load.Window != 1000 || len(s.Load.Modes) != 3 ||
		s.Load.Republish != RepublishInDoubt || s.Faults[0].Signal != "SIGKILL" || s.Faults[0].Down.D() != 5*time.Second ||
		s.Drain.Idle.D() != 2*time.Second || s.Load.TxSize != 1 || s.Load.ChannelsPerConnection != 1 || s.Load.Connections() != 1 {
		t.Errorf("defaults not applied: %+v", s)
	}
}

func TestShippedScenariosValidate(t *testing.T) {
	f, err := LoadFile("../scenarios.yaml")
	if err != nil {
		t.Fatal(err)
	}
	s, err := f.Find("scenarios.yaml", "kill-mid-burst")
	if err != nil {
		t.Fatal(err)
	}
	if s.Load.Messages != 20000 || s.Queue.Type != Quorum || len(s.Faults) != 1 || *s.Faults[0].PublishedPercent != 50 ||
		s.Faults[0].Signal != "SIGKILL" || s.Faults[0].Down.D() != 5*time.Second || s.Queue.SettleBeforeBurst.D() < 2*time.Second ||
		strings.Join(modeStrings(s.Load.Modes), ",") != "fire-and-forget,confirm-each,confirm-window" || s.Load.Window != 1000 {
		t.Errorf("kill-mid-burst is not as issue #2 specifies: %+v", s)
	}
	if _, err := f.Find("scenarios.yaml", "nope"); err == nil || !strings.Contains(err.Error(), `no scenario named "nope" (have: kill-mid-burst`) {
		t.Errorf("unknown scenario error: %v", err)
	}
}

func modeStrings(ms []Mode) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = string(m)
	}
	return out
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(head + "    load: {messages: 10, window: 0}\n"))
	f.Add([]byte("version: 1\nscenarios: [{name: x, faults: [{action: kill, after: 1s}]}]\n"))
	f.Add([]byte("&a [*a]"))
	f.Add([]byte(cluster + "    load: {messages: 10, connect_to: node, connect_node: 2}\n    faults: [{action: partition, after: 1s, shape: halves, target: minority}, {action: kill, after: 9s, node: 3}]\n"))
	f.Add([]byte(cluster + "    queue: {type: classic, node: 2, also_bind_type: classic, also_bind_node: 1}\n    load: {messages: 10, republish: nacked-and-in-doubt, connect_to: node, connect_node: 2}\n" +
		"    faults: [{action: stop, node: 3, after_burst: 1s, manual_recovery: true}, {action: delete-queue, after_burst: 2s, down: 1s}, {action: start, after_burst: 4s}]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := Parse("fuzz.yaml", data)
		if err == nil && len(file.Scenarios) == 0 {
			t.Fatal("valid file without scenarios")
		}
	})
}

func TestParseBoundsAliasExpansionAndErrorCount(t *testing.T) {
	n := 2000
	var b strings.Builder
	b.WriteString("version: 1\nscenarios:\n- &s {name: a, load: {messages: 1, modes: [" + strings.Repeat("x,", n) + "x]}}\n")
	b.WriteString(strings.Repeat("- *s\n", n))
	start := time.Now()
	_, err := Parse("big.yaml", []byte(b.String()))
	if err == nil || err.Error() != "big.yaml:3:3920: scenarios[9].load.modes[1938]: aliases expand the file to more than 20000 values; refusing to read further" {
		t.Fatalf("no expansion limit: %.200v", err)
	}
	t.Logf("rejected in %s", time.Since(start))

	b.Reset()
	b.WriteString("version: 1\nscenarios:\n")
	for range 60 {
		b.WriteString("- {name: BAD, load: {messages: 1}}\n")
	}
	var errs Errors
	if _, err := Parse("many.yaml", []byte(b.String())); !errors.As(err, &errs) || len(errs) != maxErrors+1 || errs[maxErrors].Msg != "… and 10 more problems" {
		t.Fatalf("got %d errors: %v", len(errs), err)
	}
}

func TestTinyDurationsAndHugeBurstsRejected(t *testing.T) {
	_, err := Parse("s.yaml", []byte(head+"    load: {messages: 90000000000, confirm_timeout: 3ns}\n"))
	want := "s.yaml:4:22: scenarios[0].load.messages: must be within 1–10000000, got 90000000000\n" +
		"s.yaml:4:52: scenarios[0].load.confirm_timeout: must be at least 1ms, got 3ns"
	if err == nil || err.Error() != want {
		t.Fatalf("got %v", err)
	}
}

// allocated returns the bytes f allocates (runtime.MemStats.TotalAlloc).
func allocated(f func()) uint64 {
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestBigFilesRefusedUnread: a 30 MB file (a long list of scenarios, or
// one huge description) is refused before it is parsed, naming the file and
// the limit; it took 1,261 MB of allocations and 12 s to reject before the
// limit. Data handed to Parse is bounded the same way.
func TestBigFilesRefusedUnread(t *testing.T) {
	dir := t.TempDir()
	list := filepath.Join(dir, "list.yaml")
	var b strings.Builder
	b.WriteString("version: 1\nscenarios:\n")
	for b.Len() < 30<<20 {
		b.WriteString("  - {name: a, load: {messages: 10, modes: [confirm-each]}}\n")
	}
	if err := os.WriteFile(list, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	var err error
	alloc := allocated(func() { _, err = LoadFile(list) })
	want := fmt.Sprintf("%s: %d bytes: a scenario file may be at most 1048576 bytes (1 MiB); refusing to read it", list, b.Len())
	if err == nil || err.Error() != want {
		t.Fatalf("got %v\nwant %s", err, want)
	}
	t.Logf("30 MB file refused with %d bytes allocated", alloc)
	if alloc > 64<<10 {
		t.Errorf("refusing a 30 MB file allocated %d bytes, want < 64 KiB", alloc)
	}

	_, err = Parse("s.yaml", []byte(head+"    description: "+strings.Repeat("x", MaxFileBytes)+"\n"))
	if want := "s.yaml: more than 1048576 bytes: a scenario file may be at most 1048576 bytes (1 MiB); refusing to read it"; err == nil || err.Error() != want {
		t.Fatalf("got %v\nwant %s", err, want)
	}
}

// TestWorstFileWithinTheLimit: the most values 1 MiB of YAML can hold (a
// flow list of zeros) is refused at the value bound, in bounded memory.
func TestWorstFileWithinTheLimit(t *testing.T) {
	data := []byte("version: 1\nscenarios: [" + strings.Repeat("0,", MaxFileBytes/2-20) + "0]\n")
	var err error
	start := time.Now()
	alloc := allocated(func() { _, err = Parse("s.yaml", data) })
	if want := "s.yaml:2:40007: scenarios[19997]: the file holds more than 20000 values (a scenario holds a few dozen); refusing to read further"; err == nil || err.Error() != want {
		t.Fatalf("got %.300v\nwant %s", err, want)
	}
	t.Logf("%d-byte file of %d values refused in %s with %d MB allocated", len(data), MaxFileBytes/2-19, time.Since(start), alloc>>20)
	if alloc > 400<<20 {
		t.Errorf("allocated %d MB, want < 400 MB", alloc>>20)
	}
}

// TestAliasBombRefusedCheaply: a billion-laughs file (each alias ten of the
// previous, 10^9 values expanded) is refused at the value bound without
// expanding it.
func TestAliasBombRefusedCheaply(t *testing.T) {
	var b strings.Builder
	b.WriteString("version: 1\nx0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n")
	for i := 1; i < 9; i++ {
		fmt.Fprintf(&b, "x%d: &a%d [%s]\n", i, i, strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*a%d, ", i-1), 10), ", "))
	}
	b.WriteString("scenarios: [*a8]\n")
	var err error
	start := time.Now()
	alloc := allocated(func() { _, err = Parse("bomb.yaml", []byte(b.String())) })
	if err == nil || !strings.Contains(err.Error(), ": aliases expand the file to more than 20000 values; refusing to read further") {
		t.Fatalf("got %.300v", err)
	}
	t.Logf("alias bomb refused in %s with %d KB allocated", time.Since(start), alloc>>10)
	if alloc > 64<<20 {
		t.Errorf("allocated %d MB, want < 64 MB", alloc>>20)
	}
}

// TestByteOrderMarkIgnored: a UTF-8 byte-order mark (some Windows editors
// write one) is ignored, and lines and columns still count from the text.
func TestByteOrderMarkIgnored(t *testing.T) {
	f, err := Parse("s.yaml", []byte("\xef\xbb\xbf"+head+"    load: {messages: 10}\n"))
	if err != nil || f.Scenarios[0].Load.Messages != 10 {
		t.Fatalf("got %v", err)
	}
	_, err = Parse("s.yaml", []byte("\xef\xbb\xbf"+head+"    load: {messages: 10, window: 0}\n"))
	if want := "s.yaml:4:34: scenarios[0].load.window: must be within 1–65535, got 0"; err == nil || err.Error() != want {
		t.Fatalf("got %v\nwant %s", err, want)
	}
}

// expectParseErrors parses each case's YAML and checks it is refused with
// exactly the want lines, in order (an Errors).
func expectParseErrors(t *testing.T, tests []struct {
	name, yaml string
	want       []string
}) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := Parse("s.yaml", []byte(tt.yaml))
			if err == nil {
				t.Fatalf("accepted: %+v", f)
			}
			var errs Errors
			if !errors.As(err, &errs) {
				t.Fatalf("error %T %v is not Errors", err, err)
			}
			if got := strings.Split(err.Error(), "\n"); strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("errors\n got: %q\nwant: %q", got, tt.want)
			}
		})
	}
}
