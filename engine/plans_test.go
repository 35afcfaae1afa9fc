package engine

import (
	"testing"
	"time"

	"github.com/rmqtorture/rmqtorture/scenario"
)

func TestPlansFromTheScenario(t *testing.T) {
	f := mustParse(t, `version: 1
scenarios:
  - name: t
    queue: {dead_letter_queue: true}
    load: {messages: 10, modes: [confirm-window, transactional], window: 7, tx_size: 3, publishers: 4, channels_per_connection: 2}
    consumers: {count: 1, on_delivery: retry, retry_delay: 300ms}
`)
	s := &f.Scenarios[0]
	if got := queueName("r1", scenario.ConfirmEach, nil); got != "rmqt.r1.confirm-each" {
		t.Fatal(got)
	}
	if got := queueName("r1", scenario.ConfirmEach, &scenario.Cell{QueueType: scenario.Classic, Persistent: false, Repeat: 2}); got != "rmqt.r1.confirm-each.classic.transient.2" {
		t.Fatal(got)
	}
	if window(s, scenario.FireAndForget) != 0 || window(s, scenario.ConfirmEach) != 1 || window(s, scenario.ConfirmWindow) != 7 || window(s, scenario.Transactional) != 3 {
		t.Fatal("window")
	}
	spec := queueSpec(s, "q")
	if spec.DeadLetterQueue != "q.dlq" || spec.RetryQueue != "q.retry" || spec.RetryDelay != 300*time.Millisecond || !spec.Durable || spec.Type != scenario.Quorum {
		t.Fatalf("spec %+v", spec)
	}
	p := publishPlan(s, scenario.ConfirmWindow, "q")
	if p.Messages != 10 || p.Window != 7 || !p.StampSentTime || p.Transient || p.ConfirmTimeout != 30*time.Second {
		t.Fatalf("plan %+v", p)
	}
	if p := publishPlan(s, scenario.Transactional, "q"); p.Window != 3 || p.TxSize != 3 || p.Publishers != 4 || p.ChannelsPerConnection != 2 {
		t.Fatalf("transactional plan %+v", p)
	}
}

// load.message_size_bytes set to 0 asks for empty bodies, unset for the bare
// order (ruby-amqp/bunny#615); the drain's body sizes come back as a range.
func TestBodySizePlanAndRange(t *testing.T) {
	for _, c := range []struct {
		load  string
		size  int
		exact bool
	}{{"{messages: 10}", 0, false}, {"{messages: 10, message_size_bytes: 0}", 0, true}, {"{messages: 10, message_size_bytes: 16}", 16, true}} {
		f := mustParse(t, "version: 1\nscenarios:\n  - name: t\n    load: "+c.load+"\n")
		if p := publishPlan(&f.Scenarios[0], scenario.ConfirmEach, "q"); p.MessageSizeBytes != c.size || p.MessageSizeSet != c.exact {
			t.Errorf("%s: size %d set %v", c.load, p.MessageSizeBytes, p.MessageSizeSet)
		}
	}
	var b bodySizes
	if b.result() != nil {
		t.Fatal("a range with no body")
	}
	for _, n := range []int{16, 0, 4096, 16} {
		b.add(n)
	}
	if r := b.result(); *r != (scenario.ByteRange{Min: 0, Max: 4096}) {
		t.Fatalf("range %+v", *r)
	}
}

// The dead-letter queue's own arguments and the confirm timeout action reach
// the queue spec and the publish plan.
func TestPlansCarryDeadLetterArgumentsAndConfirmTimeoutAction(t *testing.T) {
	f := mustParse(t, `version: 1
scenarios:
  - name: t
    queue: {dead_letter_queue: true, dead_letter_arguments: {x-max-length: 10, x-overflow: reject-publish}}
    load: {messages: 10, on_confirm_timeout: republish}
  - name: u
    load: {messages: 10}
`)
	spec := queueSpec(&f.Scenarios[0], "q")
	if spec.DeadLetterArguments["x-max-length"] != 10 || spec.DeadLetterArguments["x-overflow"] != "reject-publish" {
		t.Fatalf("spec %+v", spec)
	}
	if p := publishPlan(&f.Scenarios[0], scenario.ConfirmEach, "q"); p.OnConfirmTimeout != scenario.OnTimeoutRepublish {
		t.Fatalf("plan %+v", p)
	}
	if p := publishPlan(&f.Scenarios[1], scenario.ConfirmEach, "q"); p.OnConfirmTimeout != scenario.OnTimeoutClose || queueSpec(&f.Scenarios[1], "q").DeadLetterArguments != nil {
		t.Fatalf("defaults: plan %+v", p)
	}
}

// queue.node and queue.also_bind_node reach the queue spec, and the
// republish policy the publish plan.
func TestPlansCarryQueueNodesAndRepublish(t *testing.T) {
	f := mustParse(t, `version: 1
scenarios:
  - name: t
    broker: {nodes: 3}
    queue: {type: classic, node: 2, also_bind_type: classic, also_bind_node: 1}
    load: {messages: 10, republish: nacked-and-in-doubt, connect_to: node, connect_node: 2}
`)
	spec := queueSpec(&f.Scenarios[0], "q")
	if spec.Node != 2 || spec.AlsoBindNode != 1 || spec.AlsoBindType != scenario.Classic || spec.Type != scenario.Classic {
		t.Fatalf("spec %+v", spec)
	}
	if p := publishPlan(&f.Scenarios[0], scenario.ConfirmWindow, "q"); p.Republish != scenario.RepublishNackedAndInDoubt {
		t.Fatalf("plan %+v", p)
	}
}
