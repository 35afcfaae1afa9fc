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
    load: {messages: 10, window: 7}
    consumers: {count: 1, on_delivery: retry, retry_delay: 300ms}
`)
	s := &f.Scenarios[0]
	if got := queueName("r1", scenario.ConfirmEach, nil); got != "rmqt.r1.confirm-each" {
		t.Fatal(got)
	}
	if got := queueName("r1", scenario.ConfirmEach, &scenario.Cell{QueueType: scenario.Classic, Persistent: false, Repeat: 2}); got != "rmqt.r1.confirm-each.classic.transient.2" {
		t.Fatal(got)
	}
	if window(s, scenario.FireAndForget) != 0 || window(s, scenario.ConfirmEach) != 1 || window(s, scenario.ConfirmWindow) != 7 {
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
