package cmd

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/rmqtorture/rmqtorture/metrics"
	"github.com/rmqtorture/rmqtorture/scenario"
)

// deadLetterNodeScenario declares a quorum queue through node 1 and its
// dead-letter queue as a classic queue through node 3, then lists the
// queues from a command step after the burst: the listing (recorded in
// the fault's commands) says where each one lives. Before it, an
// assert-whole step finds the cluster whole.
const deadLetterNodeScenario = `version: 1
scenarios:
  - name: dlq-placed
    broker: {nodes: 3}
    queue:
      type: quorum
      dead_letter_queue: true
      dead_letter_type: classic
      dead_letter_node: 3
    load: {messages: 200, modes: [confirm-each]}
    faults:
      - action: assert-whole
        after_burst: 0s
      - action: command
        after_burst: 0s
        inject: [sh, -c, 'docker exec "${RMQT_CONTAINERS%%,*}" rabbitmqctl -q list_queues name type pid']
        down: 0s
        timeout: 30s
`

// TestDeadLetterQueueTypeAndNode: queue.dead_letter_type and
// queue.dead_letter_node place the dead-letter queue (rabbitmq-server#12625
// needs a quorum queue's dead-letter queue on a node of its own): the
// broker lists it as a classic queue whose process runs on rmq3, while the
// queue under test is a quorum queue.
func TestDeadLetterQueueTypeAndNode(t *testing.T) {
	r := runScenarioFile(t, deadLetterNodeScenario, "dlq-placed", "--allow-commands")
	m := r.Modes[0]
	if len(m.Faults) != 2 || m.Faults[0].Error != "" || len(m.Faults[1].Commands) != 1 {
		t.Fatalf("faults %+v: want assert-whole held, then one command", m.Faults)
	}
	if !slices.ContainsFunc(m.Events, func(e metrics.Event) bool {
		return e.Action == string(scenario.AssertWhole) && strings.HasPrefix(e.Detail, "the cluster is whole (every node running, no partition)")
	}) {
		t.Fatalf("events %+v: want the assertion held", m.Events)
	}
	out := m.Faults[1].Commands[0].Stdout
	q := regexp.QuoteMeta(m.Queue)
	for _, re := range []string{`(?m)^` + q + `\.dlq\tclassic\t<rabbit@rmq3\.`, `(?m)^` + q + `\tquorum\t`} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Fatalf("the queue listing lacks %s:\n%s", re, out)
		}
	}
}
