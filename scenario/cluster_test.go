package scenario

import (
	"testing"
	"time"
)

// cluster is the head of a scenario on three nodes.
const cluster = head + "    broker: {nodes: 3}\n"

// The cluster language: broker.nodes, fault targets, partition shapes,
// cluster-only actions and where clients connect. Every refused input with
// its exact file:line:column error.
func TestParseClusterErrors(t *testing.T) {
	tests := []struct {
		name, yaml string
		want       []string
	}{
		{"an even cluster size",
			head + "    broker: {nodes: 4}\n    load: {messages: 10}\n  - name: b\n    broker: {nodes: 2}\n    load: {messages: 10}\n",
			[]string{
				"s.yaml:4:21: scenarios[0].broker.nodes: must be 1, 3 or 5, got 4: a quorum queue needs a majority of its members up, and 4 nodes lose it with 2 down, as 3 nodes do: the extra node adds no tolerance",
				"s.yaml:7:21: scenarios[1].broker.nodes: must be 1, 3 or 5, got 2: a quorum queue needs a majority of its members up, and 2 nodes lose it with 1 down, as a single broker does: the extra node adds no tolerance",
			}},
		{"a cluster size out of range, written or not in decimal",
			head + "    broker: {nodes: 7}\n    load: {messages: 10}\n  - name: b\n    broker: {nodes: 0}\n    load: {messages: 10}\n  - name: c\n    broker: {nodes: three}\n    load: {messages: 10}\n",
			[]string{
				"s.yaml:4:21: scenarios[0].broker.nodes: must be 1, 3 or 5, got 7: a single broker, or a cluster of an odd size (a quorum queue keeps its majority with 1 of 3 or 2 of 5 nodes down)",
				"s.yaml:7:21: scenarios[1].broker.nodes: must be 1, 3 or 5, got 0: a single broker, or a cluster of an odd size (a quorum queue keeps its majority with 1 of 3 or 2 of 5 nodes down)",
				"s.yaml:10:21: scenarios[2].broker.nodes: must be a whole number, got \"three\"",
			}},
		{"a stream on a cluster: its clients go where its metadata says, not where connect_to says",
			cluster + "    queue: {type: stream}\n    load: {messages: 10, modes: [confirm-window], connect_to: node, connect_node: 2}\n" +
				"    faults:\n      - {action: kill, after: 1s}\n      - {action: stop, after: 9s, target: follower}\n",
			[]string{
				"s.yaml:6:63: scenarios[0].load.connect_to: queue.type is stream: a stream client connects to the node the stream's metadata names (its leader to publish, a replica to read), not to the node connect_to: node picks; leave it out",
			}},
		{"cluster settings on a single broker",
			head + "    load: {messages: 10, connect_to: leader, connect_node: 1}\n    faults:\n      - {action: partition, after: 1s}\n" +
				"      - {action: kill, after: 10s, target: leader, node: 2}\n      - {action: stop, after: 20s, target: all, shape: halves}\n" +
				"      - {action: rolling-restart, after: 30s}\n      - {action: quorum-loss, after: 40s, grace: 1s}\n",
			[]string{
				"s.yaml:4:38: scenarios[0].load.connect_to: needs broker.nodes 3 or 5: a single broker is the only node clients can connect to",
				"s.yaml:4:60: scenarios[0].load.connect_node: needs broker.nodes 3 or 5: a single broker is the only node clients can connect to",
				"s.yaml:6:18: scenarios[0].faults[0].action: partition needs broker.nodes 3 or 5: it acts on the nodes of a cluster, and this scenario runs a single broker",
				"s.yaml:7:44: scenarios[0].faults[1].target: leader needs broker.nodes 3 or 5: on a single broker every step acts on the broker (leave target out, or write all)",
				"s.yaml:7:58: scenarios[0].faults[1].node: needs broker.nodes 3 or 5: a single broker has no nodes to choose from",
				"s.yaml:8:56: scenarios[0].faults[2].shape: only partition takes a shape, not stop",
				"s.yaml:9:18: scenarios[0].faults[3].action: rolling-restart needs broker.nodes 3 or 5: it acts on the nodes of a cluster, and this scenario runs a single broker",
				"s.yaml:10:18: scenarios[0].faults[4].action: quorum-loss needs broker.nodes 3 or 5: it acts on the nodes of a cluster, and this scenario runs a single broker",
			}},
		{"targets: a classic queue has no leader (kill and disconnect default to it), node with another target, node missing or out of range, actions without a target",
			cluster + "    queue: {type: classic}\n    load: {messages: 10, connect_to: round-robin}\n    faults:\n" +
				"      - {action: kill, after: 1s}\n      - {action: kill, after: 10s, target: follower}\n" +
				"      - {action: stop, after: 20s, target: leader, node: 2}\n      - {action: pause, after: 30s, target: node}\n" +
				"      - {action: pause, after: 40s, node: 4}\n      - {action: publish-to-missing-exchange, after: 50s, node: 1}\n" +
				"      - {action: purge-queue, after: 60s, target: all}\n      - {action: disconnect, after: 70s, manual_recovery: true}\n" +
				"      - {action: reconnect, after: 80s, target: node, node: 2}\n",
			[]string{
				"s.yaml:8:9: scenarios[0].faults[0].target: kill acts on the queue's leader unless told otherwise, and queue.type is classic: a classic queue has no leader; set target (node, random, minority, majority or all)",
				"s.yaml:9:44: scenarios[0].faults[1].target: follower needs a quorum queue or a stream, and queue.type is classic: a classic queue has no leader or followers; use node, random, minority, majority or all",
				"s.yaml:10:44: scenarios[0].faults[2].target: leader needs a quorum queue or a stream, and queue.type is classic: a classic queue has no leader or followers; use node, random, minority, majority or all",
				"s.yaml:10:58: scenarios[0].faults[2].node: only target: node (or node alone) acts on a numbered node; this step's target is leader",
				"s.yaml:11:9: scenarios[0].faults[3].node: missing: target: node needs the node's number (1–3)",
				"s.yaml:12:43: scenarios[0].faults[4].node: must be within 1–3 (broker.nodes), got 4",
				"s.yaml:13:65: scenarios[0].faults[5].node: publish-to-missing-exchange is played by rmqtorture's own clients, not on a node: it takes no node",
				"s.yaml:14:51: scenarios[0].faults[6].target: purge-queue acts on the queue, wherever it lives: it takes no target",
				"s.yaml:15:9: scenarios[0].faults[7].target: disconnect acts on the queue's leader unless told otherwise, and queue.type is classic: a classic queue has no leader; set target (node, random, minority, majority or all)",
				"s.yaml:16:49: scenarios[0].faults[8].target: reconnect recovers the nodes the step with manual_recovery acted on: it takes no target",
				"s.yaml:16:61: scenarios[0].faults[8].node: reconnect recovers the nodes the step with manual_recovery acted on: it takes no node",
			}},
		{"quorum-loss and partition targets and shapes",
			cluster + "    load: {messages: 10}\n    faults:\n" +
				"      - {action: quorum-loss, after: 1s, target: minority}\n      - {action: partition, after: 10s, shape: majorities-ring}\n" +
				"      - {action: partition, after: 20s, target: all}\n      - {action: partition, after: 30s, shape: halves, target: majority}\n" +
				"      - {action: quorum-loss, after: 40s, node: 2}\n      - {action: kill, after: 50s, shape: isolate, grace: 1s}\n" +
				"      - {action: partition, after: 60s, target: nobody, shape: square}\n      - {action: partition, after: 70s, shape: halves, target: all}\n",
			[]string{
				"s.yaml:7:50: scenarios[0].faults[0].target: quorum-loss stops a majority of the nodes: its target is majority (the default) or all, not minority",
				"s.yaml:8:48: scenarios[0].faults[1].shape: majorities-ring needs broker.nodes 5: on 3 nodes each node's two ring neighbours are all the others, so nothing would be cut",
				"s.yaml:9:49: scenarios[0].faults[2].target: partition isolate cuts the target's nodes off from the others, and all leaves no others: nothing would be cut (use leader, the default, follower, node, random or minority)",
				"s.yaml:10:64: scenarios[0].faults[3].target: partition halves puts the target on the smaller side, and a majority is not: use minority, or shape isolate to cut a majority off from the rest",
				"s.yaml:11:49: scenarios[0].faults[4].node: quorum-loss stops a majority of the nodes: its target is majority (the default) or all, not node",
				"s.yaml:12:43: scenarios[0].faults[5].shape: only partition takes a shape, not kill",
				"s.yaml:12:59: scenarios[0].faults[5].grace: only stop, restart, rolling-restart and quorum-loss take a grace period, not kill",
				"s.yaml:13:49: scenarios[0].faults[6].target: \"nobody\" is not a fault target (node, leader, follower, random, minority, majority, all)",
				"s.yaml:13:64: scenarios[0].faults[6].shape: \"square\" is not a partition shape (isolate, halves, majorities-ring, bridge)",
				"s.yaml:14:64: scenarios[0].faults[7].target: partition halves cuts the target's nodes off from the others, and all leaves no others: nothing would be cut (use leader, the default, follower, node, random or minority)",
			}},
		{"where clients connect",
			cluster + "    load: {messages: 10, connect_to: round-robin, connect_node: 2}\n" +
				"  - name: b\n    broker: {nodes: 5}\n    load: {messages: 10, connect_to: node, connect_node: 6}\n" +
				"  - name: c\n    broker: {nodes: 3}\n    queue: {type: classic}\n    load: {messages: 10}\n" +
				"  - name: d\n    broker: {nodes: 3}\n    load: {messages: 10, connect_to: follower}\n    matrix: {queue_types: [quorum, classic]}\n" +
				"  - name: e\n    broker: {nodes: 3}\n    load: {messages: 10, connect_to: nearest}\n" +
				"  - name: f\n    broker: {nodes: 3}\n    load: {messages: 10, connect_to: node}\n",
			[]string{
				"s.yaml:5:65: scenarios[0].load.connect_node: only connect_to: node names a node; connect_to is round-robin",
				"s.yaml:8:58: scenarios[1].load.connect_node: must be within 1–5 (broker.nodes), got 6",
				"s.yaml:15:38: scenarios[3].load.connect_to: follower needs a quorum queue, and matrix.queue_types runs classic: a classic queue has no leader or followers; use round-robin or node",
				"s.yaml:19:38: scenarios[4].load.connect_to: \"nearest\" is not a connection target (leader, follower, round-robin, node)",
				"s.yaml:22:11: scenarios[5].load.connect_node: missing: connect_to: node needs the node's number (1–3)",
			}},
		{"manual recovery on a cluster: the nodes a step left down, and the actions listed are a cluster's",
			cluster + "    load: {messages: 100}\n    faults:\n" +
				"      - {action: kill, after: 1s, manual_recovery: true}\n      - {action: pause, after: 2s}\n" +
				"      - {action: unpause, published: 20}\n      - {action: partition, after: 30s, manual_recovery: true}\n" +
				"      - {action: close-connections, after: 40s, down: 1s}\n      - {published: 1}\n",
			[]string{
				"s.yaml:7:7: scenarios[0].faults: mixes trigger kinds (after, published): use either published/published_percent or after for every fault step",
				"s.yaml:8:18: scenarios[0].faults[1].action: pause needs every node running, but nodes are stopped here (recover them with start first)",
				"s.yaml:9:9: scenarios[0].faults[2]: unpause must be triggered by after, as the step it recovers is, so it cannot come due before that step",
				"s.yaml:9:18: scenarios[0].faults[2].action: unpause needs nodes left paused by an earlier step with manual_recovery, but nodes are stopped here",
				"s.yaml:10:18: scenarios[0].faults[3].action: partition needs every node running, but nodes are stopped here (recover them with start first)",
				"s.yaml:10:58: scenarios[0].faults[3].manual_recovery: only kill, power-loss, stop, pause, disconnect, quorum-loss can be recovered by a later step",
				"s.yaml:11:18: scenarios[0].faults[4].action: close-connections needs every node running, but nodes are stopped here (recover them with start first)",
				"s.yaml:11:55: scenarios[0].faults[4].down: close-connections has nothing to recover; down applies to " + downActions(3),
				"s.yaml:12:9: scenarios[0].faults[5].action: missing; every step names its action (" + allActions + ")",
				"s.yaml:12:9: scenarios[0].faults[5]: nodes would stay stopped at the end: add a start step",
			}},
		{"a recovery step with nothing to recover on a cluster",
			cluster + "    load: {messages: 100}\n    faults: [{action: start, after: 1s}]\n",
			[]string{"s.yaml:6:23: scenarios[0].faults[0].action: start needs nodes left stopped by an earlier step with manual_recovery, but every node is up here"}},
	}
	expectParseErrors(t, tests)
}

// A cluster scenario using every cluster setting is accepted, with the
// defaults that depend on the action and the size; a single broker keeps
// no connect_to, so its plans and results read as before.
func TestParseClusterDefaults(t *testing.T) {
	f, err := Parse("s.yaml", []byte(cluster+`    load: {messages: 100}
    faults:
      - {action: kill, after: 1s, node: 2}
      - {action: partition, after: 10s}
      - {action: partition, after: 20s, shape: bridge, target: follower, down: 1s}
      - {action: quorum-loss, after: 30s}
      - {action: rolling-restart, after: 40s}
      - {action: stop, after: 50s, target: random, manual_recovery: true}
      - {action: start, after: 60s}
      - {action: memory-alarm, after: 70s, target: minority}
  - name: five
    broker: {nodes: 5}
    load: {messages: 100, connect_to: node, connect_node: 5}
    faults:
      - {action: partition, after: 1s, shape: majorities-ring}
      - {action: partition, after: 10s, shape: halves, target: minority}
      - {action: partition, after: 20s, target: majority}
      - {action: quorum-loss, after: 30s, target: all, grace: 0s}
  - name: single
    load: {messages: 100}
    faults: [{action: kill, after: 1s, target: all}]
`))
	if err != nil {
		t.Fatal(err)
	}
	s, five, single := f.Scenarios[0], f.Scenarios[1], f.Scenarios[2]
	if s.Broker.Nodes != 3 || s.Load.ConnectTo != ConnectLeader || s.Load.ConnectNode != 0 {
		t.Errorf("three nodes: nodes %d connect_to %q %d, want 3, leader", s.Broker.Nodes, s.Load.ConnectTo, s.Load.ConnectNode)
	}
	type want struct {
		down, grace time.Duration
		shape       PartitionShape
		target      string
	}
	for j, w := range []want{
		{5 * time.Second, 0, "", "node rmq2"},
		{5 * time.Second, 0, PartitionIsolate, "leader of q"},
		{time.Second, 0, PartitionBridge, "follower of q"},
		{5 * time.Second, 10 * time.Second, "", "majority of q"},
		{0, 10 * time.Second, "", "all"},
		{0, 10 * time.Second, "", "random node"},
		{0, 0, "", "all"},
		{5 * time.Second, 0, "", "minority of q"},
	} {
		ft := s.Faults[j]
		if ft.Down.D() != w.down || ft.Grace.D() != w.grace || ft.Shape != w.shape || ft.TargetOf(3, "q").String() != w.target {
			t.Errorf("faults[%d] %s: down %s grace %s shape %q target %q, want %+v", j, ft.Action, ft.Down.D(), ft.Grace.D(), ft.Shape, ft.TargetOf(3, "q"), w)
		}
	}
	if five.Load.ConnectTo != ConnectNode || five.Load.ConnectNode != 5 || five.Faults[3].Grace.D() != 0 || five.Faults[3].Down.D() != 5*time.Second {
		t.Errorf("five nodes: %+v", five)
	}
	if single.Broker.Nodes != 1 || single.Load.ConnectTo != "" || single.Faults[0].TargetOf(1, "q").Kind != TargetBroker {
		t.Errorf("single broker: nodes %d connect_to %q target %v", single.Broker.Nodes, single.Load.ConnectTo, single.Faults[0].TargetOf(1, "q"))
	}
}

// broker.ready_timeout left out grows with the node count (60s, plus 30s a
// node beyond the first), in the file and through SetNodes (--nodes); one
// the file sets stays what it says.
func TestReadyTimeoutDefaultScalesWithNodes(t *testing.T) {
	f, err := Parse("s.yaml", []byte(head+"    load: {messages: 100}\n"+
		"  - name: three\n    broker: {nodes: 3}\n    load: {messages: 100}\n"+
		"  - name: five\n    broker: {nodes: 5}\n    load: {messages: 100}\n"+
		"  - name: set\n    broker: {nodes: 5, ready_timeout: 45s}\n    load: {messages: 100}\n"))
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []time.Duration{time.Minute, 2 * time.Minute, 3 * time.Minute, 45 * time.Second} {
		if got := f.Scenarios[i].Broker.ReadyTimeout.D(); got != want {
			t.Errorf("%s: ready_timeout %s, want %s", f.Scenarios[i].Name, got, want)
		}
	}
	one, set := f.Scenarios[0], f.Scenarios[3]
	one.SetNodes(5)
	set.SetNodes(3)
	if one.Broker.ReadyTimeout.D() != 3*time.Minute || set.Broker.ReadyTimeout.D() != 45*time.Second {
		t.Errorf("after SetNodes: default %s (want 3m0s), set %s (want 45s)", one.Broker.ReadyTimeout.D(), set.Broker.ReadyTimeout.D())
	}
	one.SetNodes(1)
	if one.Broker.ReadyTimeout.D() != time.Minute {
		t.Errorf("back to one broker: ready_timeout %s, want 1m0s", one.Broker.ReadyTimeout.D())
	}
}

// SetNodes (the --nodes override) applies the size's connect_to default
// both ways, and Validate then judges the scenario as the loader would.
func TestSetNodes(t *testing.T) {
	f, err := Parse("s.yaml", []byte(head+"    load: {messages: 100}\n    faults: [{action: kill, published: 50}]\n  - name: c\n    queue: {type: classic}\n    load: {messages: 100}\n"+
		"  - name: rr\n    broker: {nodes: 3}\n    load: {messages: 100, connect_to: round-robin}\n"))
	if err != nil {
		t.Fatal(err)
	}
	s := f.Scenarios[0]
	s.SetNodes(3)
	if s.Broker.Nodes != 3 || s.Load.ConnectTo != ConnectLeader {
		t.Fatalf("--nodes 3: nodes %d connect_to %q", s.Broker.Nodes, s.Load.ConnectTo)
	}
	if errs := Validate("s.yaml", &s); errs != nil {
		t.Fatalf("--nodes 3 refused: %v", errs)
	}
	s.SetNodes(1)
	if s.Load.ConnectTo != "" {
		t.Fatalf("--nodes 1 kept connect_to %q", s.Load.ConnectTo)
	}
	if errs := Validate("s.yaml", &s); errs != nil {
		t.Fatalf("back to one broker refused: %v", errs)
	}
	// A classic queue has no leader: its clients default to round-robin.
	classic := f.Scenarios[1]
	classic.SetNodes(3)
	if errs := Validate("s.yaml", &classic); errs != nil || classic.Load.ConnectTo != ConnectRoundRobin {
		t.Fatalf("classic queue on 3 nodes: connect_to %q, %v", classic.Load.ConnectTo, errs)
	}
	for _, tc := range []struct {
		s     Scenario
		nodes int
		want  string
	}{
		{f.Scenarios[0], 4, "s.yaml: broker.nodes: must be 1, 3 or 5, got 4: a quorum queue needs a majority of its members up, and 4 nodes lose it with 2 down, as 3 nodes do: the extra node adds no tolerance"},
		{f.Scenarios[2], 1, "s.yaml: load.connect_to: needs broker.nodes 3 or 5: a single broker is the only node clients can connect to"},
	} {
		tc.s.SetNodes(tc.nodes)
		if got := Validate("s.yaml", &tc.s).Error(); got != tc.want {
			t.Errorf("%s with %d nodes:\n got %s\nwant %s", tc.s.Name, tc.nodes, got, tc.want)
		}
	}
}
