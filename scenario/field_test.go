package scenario

import (
	"testing"
)

// The settings of the cluster field cases: where the queues live
// (queue.node, queue.also_bind_node), republishing nacked messages, and a
// delete-queue between a stopped node and its start, all after the burst.
// Every refused input with its exact file:line:column error.
func TestParseFieldCaseErrors(t *testing.T) {
	tests := []struct {
		name, yaml string
		want       []string
	}{
		{"queue nodes on a single broker, out of range, and a second queue's node without a second queue",
			head + "    queue: {type: classic, node: 2, also_bind_type: classic, also_bind_node: 1}\n    load: {messages: 10}\n" +
				"  - name: b\n    broker: {nodes: 3}\n    queue: {type: classic, node: 4, also_bind_type: classic, also_bind_node: 0}\n    load: {messages: 10, connect_to: round-robin}\n" +
				"  - name: c\n    broker: {nodes: 5}\n    queue: {node: 5, also_bind_node: 2}\n    load: {messages: 10}\n",
			[]string{
				"s.yaml:4:34: scenarios[0].queue.node: needs broker.nodes 3 or 5: a single broker holds every queue",
				"s.yaml:4:78: scenarios[0].queue.also_bind_node: needs broker.nodes 3 or 5: a single broker holds every queue",
				"s.yaml:8:34: scenarios[1].queue.node: must be within 1–3 (broker.nodes), got 4",
				"s.yaml:8:78: scenarios[1].queue.also_bind_node: must be within 1–3 (broker.nodes), got 0",
				"s.yaml:12:38: scenarios[2].queue.also_bind_node: places the second queue queue.also_bind_type declares, and there is none: set also_bind_type (quorum or classic)",
			}},
		{"the dead-letter queue's type and node without a dead-letter queue, on a single broker, out of range, of a type that cannot be one",
			head + "    queue: {dead_letter_type: classic, dead_letter_node: 1}\n    load: {messages: 10}\n" +
				"  - name: b\n    broker: {nodes: 3}\n    queue: {dead_letter_queue: true, dead_letter_node: 4}\n    load: {messages: 10}\n" +
				"  - name: c\n    queue: {dead_letter_queue: true, dead_letter_type: stream}\n    load: {messages: 10}\n" +
				"  - name: d\n    queue: {dead_letter_queue: true, dead_letter_node: 2}\n    load: {messages: 10}\n",
			[]string{
				"s.yaml:4:31: scenarios[0].queue.dead_letter_type: there is no dead-letter queue to declare: set queue.dead_letter_queue: true",
				"s.yaml:4:58: scenarios[0].queue.dead_letter_node: there is no dead-letter queue to declare: set queue.dead_letter_queue: true",
				"s.yaml:8:56: scenarios[1].queue.dead_letter_node: must be within 1–3 (broker.nodes), got 4",
				"s.yaml:11:56: scenarios[2].queue.dead_letter_type: \"stream\" is not a queue type (quorum, classic)",
				"s.yaml:14:56: scenarios[3].queue.dead_letter_node: needs broker.nodes 3 or 5: a single broker holds every queue",
			}},
		{"republishing nacked messages on a stream",
			head + "    queue: {type: stream}\n    load: {messages: 10, modes: [confirm-window], republish: nacked-and-in-doubt}\n",
			[]string{"s.yaml:5:62: scenarios[0].load.republish: not supported with queue.type: stream: the stream publisher publishes in-doubt messages again, not refused ones (use in-doubt or none)"}},
		{"after the burst: a recovery timed otherwise than its step, and delete-queue with a majority down",
			head + "    broker: {nodes: 3}\n    load: {messages: 10}\n    faults:\n" +
				"      - {action: stop, node: 3, after_burst: 1s, manual_recovery: true}\n      - {action: start, after: 5s}\n" +
				"  - name: b\n    broker: {nodes: 3}\n    load: {messages: 10}\n    faults:\n" +
				"      - {action: quorum-loss, after_burst: 1s, manual_recovery: true}\n      - {action: delete-queue, after_burst: 2s, down: 1s}\n      - {action: start, after_burst: 5s}\n" +
				"  - name: c\n    load: {messages: 10}\n    faults:\n" +
				"      - {action: stop, after_burst: 1s, manual_recovery: true}\n      - {action: delete-queue, after_burst: 2s, down: 1s}\n      - {action: start, after_burst: 5s}\n",
			[]string{
				"s.yaml:8:9: scenarios[0].faults[1]: start must be triggered by after_burst, as the step it recovers is: both count from the last publish, so it cannot come due before that step",
				"s.yaml:14:18: scenarios[1].faults[1].action: delete-queue needs every node running, but nodes are stopped here (recover them with start first)",
				"s.yaml:20:18: scenarios[2].faults[1].action: delete-queue needs a running broker, but it is stopped here (recover it with start first)",
			}},
	}
	expectParseErrors(t, tests)
}

// The two field cases as the draft scenarios write them are accepted: a
// fanout to classic queues placed on two nodes, republishing nacked
// messages; a quorum queue deleted and declared again while one node is
// stopped, all after the burst. Each step's target resolves as planned.
func TestParseFieldCases(t *testing.T) {
	f, err := Parse("s.yaml", []byte(`version: 1
scenarios:
  - name: fanout-node-loss
    broker: {nodes: 3}
    queue: {type: classic, node: 2, also_bind_type: classic, also_bind_node: 1}
    load: {messages: 5000, modes: [confirm-each, confirm-window], republish: nacked-and-in-doubt, connect_to: node, connect_node: 2}
    faults:
      - {action: kill, node: 1, published_percent: 30, down: 10s}
  - name: quorum-replica-redeclare
    broker: {nodes: 3}
    queue: {type: quorum}
    load: {messages: 2000, modes: [confirm-window]}
    faults:
      - {action: stop, node: 3, after_burst: 1s, manual_recovery: true}
      - {action: delete-queue, after_burst: 2s, down: 2s}
      - {action: purge-queue, after_burst: 5s}
      - {action: start, after_burst: 6s}
`))
	if err != nil {
		t.Fatal(err)
	}
	a, b := f.Scenarios[0], f.Scenarios[1]
	if a.Queue.Node != 2 || a.Queue.AlsoBindNode != 1 || a.Load.Republish != RepublishNackedAndInDoubt || a.Faults[0].TargetOf(3, "q").String() != "node rmq1" {
		t.Errorf("fanout-node-loss: queue %+v republish %q target %s", a.Queue, a.Load.Republish, a.Faults[0].TargetOf(3, "q"))
	}
	if b.Queue.Node != 0 || b.Load.Republish != RepublishInDoubt || b.Faults[0].TargetOf(3, "q").String() != "node rmq3" || b.Faults[3].Action != Start {
		t.Errorf("quorum-replica-redeclare: queue %+v republish %q faults %+v", b.Queue, b.Load.Republish, b.Faults)
	}
}

// Whether a policy publishes in-doubt and nacked messages again, up to
// the limit of attempts for a nacked one.
func TestRepublishPolicies(t *testing.T) {
	for _, tc := range []struct {
		r               Republish
		inDoubt, nacked bool
	}{
		{RepublishInDoubt, true, false},
		{RepublishNackedAndInDoubt, true, true},
		{RepublishNone, false, false},
	} {
		if tc.r.RepublishesInDoubt() != tc.inDoubt || tc.r.RepublishesNacked(1) != tc.nacked {
			t.Errorf("%s: in doubt %v, nacked %v; want %v %v", tc.r, tc.r.RepublishesInDoubt(), tc.r.RepublishesNacked(1), tc.inDoubt, tc.nacked)
		}
	}
	if !RepublishNackedAndInDoubt.RepublishesNacked(NackRepublishLimit-1) || RepublishNackedAndInDoubt.RepublishesNacked(NackRepublishLimit) {
		t.Errorf("a nacked id is published again only while it had fewer than %d attempts", NackRepublishLimit)
	}
}
