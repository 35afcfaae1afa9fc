package scenario

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/rmqtorture/rmqtorture/metrics"
)

// The field-report settings: broker configuration, dead-letter queue
// arguments, single active consumer, an unlimited delivery limit with the
// application's own bound, a held delivery, a confirm timeout that
// republishes. Each wrong setting is reported with file:line:col and path.
func TestParseConfigErrors(t *testing.T) {
	tests := []struct {
		name, yaml string
		want       []string
	}{
		{"broker.config key syntax, keys rmqtorture needs, values",
			head + "    load: {messages: 10}\n    broker:\n      config:\n        Consumer Timeout: 5\n        listeners.tcp.default: 5673\n        loopback_users.guest: true\n        default_user: admin\n        log.console.level: debug\n        cluster_name: \"\"\n",
			[]string{
				"s.yaml:7:27: scenarios[0].broker.config.Consumer Timeout: \"Consumer Timeout\" is not a rabbitmq.conf key (dot-separated names such as consumer_timeout or disk_free_limit.absolute)",
				"s.yaml:8:32: scenarios[0].broker.config.listeners.tcp.default: rmqtorture's own broker setup needs listeners.tcp.default (AMQP on 5672 on every interface, guest from the host, the console log): a scenario cannot change it",
				"s.yaml:9:31: scenarios[0].broker.config.loopback_users.guest: rmqtorture's own broker setup needs loopback_users.guest (AMQP on 5672 on every interface, guest from the host, the console log): a scenario cannot change it",
				"s.yaml:10:23: scenarios[0].broker.config.default_user: rmqtorture's own broker setup needs default_user (AMQP on 5672 on every interface, guest from the host, the console log): a scenario cannot change it",
				"s.yaml:11:28: scenarios[0].broker.config.log.console.level: rmqtorture's own broker setup needs log.console.level (AMQP on 5672 on every interface, guest from the host, the console log): a scenario cannot change it",
				"s.yaml:12:23: scenarios[0].broker.config.cluster_name: needs a value",
			}},
		{"broker.config values are scalars, advanced_config whole numbers",
			head + "    load: {messages: 10}\n    broker:\n      config: {consumer_timeout: [1]}\n      advanced_config: {channel_tick_interval: fast, Tick: 1, tcp_listeners: 1}\n",
			[]string{
				"s.yaml:6:34: scenarios[0].broker.config.consumer_timeout: must be a rabbitmq.conf value, got a list",
				"s.yaml:7:48: scenarios[0].broker.advanced_config.channel_tick_interval: must be a whole number, got \"fast\"",
				"s.yaml:7:60: scenarios[0].broker.advanced_config.Tick: \"Tick\" is not a key of the rabbit application (a lower-case name such as channel_tick_interval)",
				"s.yaml:7:78: scenarios[0].broker.advanced_config.tcp_listeners: rmqtorture's own broker setup needs tcp_listeners: a scenario cannot change it",
			}},
		{"dead_letter_arguments need a dead-letter queue and keep what it holds",
			head + "    load: {messages: 10}\n    queue:\n      dead_letter_arguments: {x-max-length: 10}\n  - name: b\n    load: {messages: 10}\n    queue:\n      dead_letter_queue: true\n      dead_letter_arguments: {x-max-length: -1, x-dead-letter-exchange: other}\n",
			[]string{
				"s.yaml:6:30: scenarios[0].queue.dead_letter_arguments: there is no dead-letter queue to declare with them: set queue.dead_letter_queue: true",
				"s.yaml:11:45: scenarios[1].queue.dead_letter_arguments.x-max-length: must not be negative, got -1",
				"s.yaml:11:73: scenarios[1].queue.dead_letter_arguments.x-dead-letter-exchange: would move messages out of the dead-letter queue, where nobody counts them",
			}},
		{"x-delivery-limit -1 with nack-requeue needs the application's bound",
			head + "    load: {messages: 10}\n    queue: {arguments: {x-delivery-limit: -1, x-single-active-consumer: yes}}\n    consumers: {count: 1, on_delivery: nack-requeue}\n  - name: b\n    load: {messages: 10}\n    queue: {arguments: {x-delivery-limit: -2}}\n",
			[]string{
				"s.yaml:5:73: scenarios[0].queue.arguments.x-single-active-consumer: must be true or false, got \"yes\"",
				"s.yaml:6:40: scenarios[0].consumers.on_delivery: x-delivery-limit -1 lifts the broker's limit: nack-requeue then cycles until drain.timeout; set consumers.max_deliveries",
				"s.yaml:9:43: scenarios[1].queue.arguments.x-delivery-limit: must be at least -1, got -2",
			}},
		{"hold and max_deliveries need consumers, and max_deliveries nack-requeue",
			head + "    load: {messages: 10}\n    consumers: {hold: 8s, max_deliveries: 3}\n  - name: b\n    load: {messages: 10}\n    consumers: {count: 1, hold: -1s, max_deliveries: 3}\n",
			[]string{
				"s.yaml:5:23: scenarios[0].consumers.hold: has no effect without live consumers: set consumers.count",
				"s.yaml:5:43: scenarios[0].consumers.max_deliveries: has no effect without live consumers: set consumers.count",
				"s.yaml:8:33: scenarios[1].consumers.hold: must not be negative",
				"s.yaml:8:54: scenarios[1].consumers.max_deliveries: only on_delivery: nack-requeue requeues, so only it needs a bound",
			}},
		{"on_confirm_timeout: an action, on confirm modes, and late confirms need republish",
			head + "    load: {messages: 10, modes: [fire-and-forget], on_confirm_timeout: republish}\n  - name: b\n    load: {messages: 10, on_confirm_timeout: retry, modes: [confirm-each]}\n  - name: c\n    load: {messages: 10, modes: [confirm-each]}\n    expect: {modes: {confirm-each: {late_confirms: 1, consumer_changes: 1}}}\n",
			[]string{
				"s.yaml:4:72: scenarios[0].load.on_confirm_timeout: republish acts on confirms, and load.modes has no confirm mode (confirm-each, confirm-window)",
				"s.yaml:6:46: scenarios[1].load.on_confirm_timeout: \"retry\" is not a confirm timeout action (close, republish)",
				"s.yaml:9:52: scenarios[2].expect.modes.confirm-each.late_confirms: only load.on_confirm_timeout: republish keeps an original's delivery tag tracked after its confirm timed out",
				"s.yaml:9:73: scenarios[2].expect.modes.confirm-each.consumer_changes: is measured by live consumers: set consumers.count",
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := Parse("s.yaml", []byte(tt.yaml))
			var errs Errors
			if !errors.As(err, &errs) {
				t.Fatalf("accepted or not Errors: %v %+v", err, f)
			}
			if got := strings.Split(err.Error(), "\n"); !slices.Equal(got, tt.want) {
				t.Errorf("errors\n got: %q\nwant: %q", got, tt.want)
			}
		})
	}
}

// Valid settings decode as written: a rabbitmq.conf number as its text, the
// default confirm timeout action spelled out, and Validate (flag overrides)
// agrees with the loader.
func TestParseConfigAccepted(t *testing.T) {
	f, err := Parse("s.yaml", []byte(head+`    broker:
      config: {consumer_timeout: 5000, disk_free_limit.absolute: 1GB, vm_memory_high_watermark.relative: 0.6, cluster_formation.randomized_startup_delay_range.min: 0}
      advanced_config: {channel_tick_interval: 1000}
    queue:
      arguments: {x-delivery-limit: -1, x-single-active-consumer: true}
      dead_letter_queue: true
      dead_letter_arguments: {x-max-length: 10, x-overflow: reject-publish}
    load: {messages: 10, modes: [confirm-each], on_confirm_timeout: republish}
    consumers: {count: 2, hold: 8s, on_delivery: nack-requeue, max_deliveries: 30}
    expect: {modes: {confirm-each: {redeliveries: 1, republished: 1, late_confirms: 1, consumer_changes: 1}}}
  - name: b
    load: {messages: 10}
`))
	if err != nil {
		t.Fatal(err)
	}
	s := f.Scenarios[0]
	if s.Broker.Config["consumer_timeout"] != "5000" || s.Broker.Config["vm_memory_high_watermark.relative"] != "0.6" ||
		s.Broker.AdvancedConfig["channel_tick_interval"] != 1000 || !s.Broker.HasConfig() {
		t.Errorf("broker config %+v %+v", s.Broker.Config, s.Broker.AdvancedConfig)
	}
	if !s.Queue.SingleActiveConsumer() || s.Queue.DeadLetterArguments["x-overflow"] != "reject-publish" || s.Consumers.Hold.D().Seconds() != 8 || s.Consumers.MaxDeliveries != 30 {
		t.Errorf("queue %+v consumers %+v", s.Queue, s.Consumers)
	}
	if s.Load.OnConfirmTimeout != OnTimeoutRepublish || f.Scenarios[1].Load.OnConfirmTimeout != OnTimeoutClose || f.Scenarios[1].Broker.HasConfig() {
		t.Errorf("on_confirm_timeout %q / default %q", s.Load.OnConfirmTimeout, f.Scenarios[1].Load.OnConfirmTimeout)
	}
	if top := s.Topology(); !strings.Contains(top, "2 live consumers (prefetch 100, ack every 1, nack-requeue, giving up after 30 deliveries, first delivery held 8s)") {
		t.Errorf("topology %q", top)
	}
	if errs := Validate("s.yaml", &s); errs != nil {
		t.Fatalf("Validate refuses what the loader accepted: %v", errs)
	}
	s.Broker.Config["listeners.tcp.default"] = "1"
	if errs := Validate("s.yaml", &s); len(errs) != 1 || errs[0].Path != "broker.config.listeners.tcp.default" {
		t.Fatalf("Validate of a reserved key: %v", errs)
	}
}

// The new exact expectations and the consumers' channel closes reach the
// judge: a consumer timeout's 406 satisfies channel_closed_with.
func TestJudgeConfigExpectations(t *testing.T) {
	one, two := 1, 2
	e := Expect{Modes: map[Mode]ModeExpectations{ConfirmEach: {Redeliveries: &one, Republished: &one, LateConfirms: &one,
		ConsumerChanges: &one, ChannelClosedWith: "406 PRECONDITION_FAILED"}}}
	c := metrics.Counts{Redeliveries: 1, Republished: 1, LateConfirms: 1}
	obs := Observed{Consumers: &ConsumerStats{ConsumerChanges: 1, ChannelCloses: []string{"channel closed by broker: 406 PRECONDITION_FAILED - delivery acknowledgement on channel 1 timed out"}}}
	if v := Judge(ConfirmEach, c, obs, e, Conditions{}); v.Status != Pass {
		t.Fatalf("%+v", v)
	}
	c.LateConfirms, obs.Consumers.ConsumerChanges, obs.Consumers.ChannelCloses = 2, 2, nil
	e.Modes[ConfirmEach] = ModeExpectations{LateConfirms: &one, ConsumerChanges: &one, Republished: &two, ChannelClosedWith: "406"}
	v := Judge(ConfirmEach, c, obs, e, Conditions{})
	want := []string{"republished 1, expected exactly 2", "late_confirms 2, expected exactly 1", "consumer_changes 2, expected exactly 1",
		`no channel or connection closed with "406" (closes seen: [])`}
	if v.Status != Fail || !slices.Equal(v.Reasons, want) {
		t.Fatalf("%+v\nwant %q", v, want)
	}
}
