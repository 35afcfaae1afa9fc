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
