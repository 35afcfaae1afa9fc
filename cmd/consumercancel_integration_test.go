package cmd

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/rmqtorture/rmqtorture/scenario"
)

// consumerCancel kills the node of a classic queue while its live
// consumer is connected to another node: the broker sends the consumer
// basic.cancel (its consumer cancel notification, rabbitmq-server#4613).
const consumerCancel = `version: 1
scenarios:
  - name: consumer-cancel
    description: Kill the node of a classic queue under a live consumer connected to another node, once 300 of 1,000 orders are published; start it 3 s later.
    broker: {nodes: 3}
    queue: {type: classic}
    load: {messages: 1000, modes: [confirm-window], rate: 500, connect_to: node, connect_node: 2}
    consumers: {count: 1}
    faults:
      - {action: kill, target: node, node: 1, published: 300, down: 3s}
`

// A basic.cancel from the broker is named as such and counted, not worded
// as a lost connection (rabbitmq-server#4613): exactly one, for the one
// kill of the queue's node, and the report says so. On the shared 3-node
// cluster (the queue is declared through node 1, so it lives there).
func TestBrokerCancelIsNamed(t *testing.T) {
	out := t.TempDir()
	r := runScenarioFile(t, consumerCancel, "consumer-cancel", "--out", out)
	m := mode(t, r, scenario.ConfirmWindow)
	if m.Consumers == nil || m.Consumers.BrokerCancels != 1 || m.Consumers.Reconnects < 1 {
		t.Fatalf("consumers %+v: want one basic.cancel from the broker, and a reconnect", m.Consumers)
	}
	dirs, err := filepath.Glob(filepath.Join(out, "consumer-cancel-*"))
	if err != nil || len(dirs) != 1 {
		t.Fatalf("run folders %v (%v)", dirs, err)
	}
	report := readFile(t, filepath.Join(dirs[0], "report.md"))
	if !strings.Contains(report, "The broker cancelled live consumers 1 times (basic.cancel") {
		t.Errorf("report.md does not name the cancel:\n%s", report)
	}
}
