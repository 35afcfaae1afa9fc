package docker

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/docker/docker/api/types/container"

	"github.com/rmqtorture/rmqtorture/scenario"
)

// testCluster is an owned n-node cluster value with no Docker behind it,
// for the logic that needs none.
func testCluster(n int) *Cluster {
	c := &Cluster{owned: true, runID: "r", log: quiet, state: make([]nodeState, n), links: map[link]string{}, clientNet: "rmqt-r-client"}
	for i := 1; i <= n; i++ {
		c.nodes = append(c.nodes, &Container{Name: "rmqt-r-" + scenario.NodeName(i)[3:]})
		c.erlang = append(c.erlang, erlangNode(i))
	}
	for _, l := range allLinks(n) {
		c.links[l] = "rmqt-r-link-" + l.String()
	}
	return c
}

// The ports act on resolved nodes, one node, or all; anything unresolved
// is refused, as is a node out of range.
func TestClusterNodesOf(t *testing.T) {
	c := testCluster(3)
	for _, tc := range []struct {
		t    scenario.Target
		want []int
		err  string
	}{
		{scenario.Target{Kind: scenario.TargetAll}, []int{1, 2, 3}, ""},
		{scenario.BrokerTarget(), []int{1, 2, 3}, ""},
		{scenario.Target{Kind: scenario.TargetNode, Node: 2}, []int{2}, ""},
		{scenario.Target{Kind: scenario.TargetLeader, Queue: "q", Nodes: []int{3}}, []int{3}, ""},
		{scenario.Target{Kind: scenario.TargetMajority, Nodes: []int{2, 1}}, []int{1, 2}, ""},
		{scenario.Target{Kind: scenario.TargetNode, Node: 4}, nil, "target node rmq4: the cluster has nodes 1 to 3"},
		{scenario.Target{Kind: scenario.TargetMinority, Nodes: []int{0}}, nil, "target minority (rmq0): node 0 is not a node of this 3-node cluster"},
		{scenario.Target{Kind: scenario.TargetFollower, Queue: "q"}, nil, "target follower of q is not resolved to nodes: resolve it (Cluster.Resolve) when the fault fires"},
		{scenario.Target{Kind: scenario.TargetRandom}, nil, "target random node is not resolved to nodes: resolve it (Cluster.Resolve) when the fault fires"},
	} {
		got, err := c.nodesOf(tc.t)
		if tc.err != "" {
			if err == nil || err.Error() != tc.err {
				t.Errorf("%s: %v %v, want error %q", tc.t, got, err, tc.err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %v %v, want %v", tc.t, got, err, tc.want)
		}
	}
}

// Resolve without a queue needs no broker: node, all, random from the
// pick, and minority / majority by node number.
func TestClusterResolveWithoutQueue(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		n    int
		t    scenario.Target
		pick int
		want []int
	}{
		{3, scenario.Target{Kind: scenario.TargetNode, Node: 3}, 0, []int{3}},
		{3, scenario.Target{Kind: scenario.TargetAll}, 0, []int{1, 2, 3}},
		{3, scenario.Target{Kind: scenario.TargetRandom}, 1, []int{2}},
		{5, scenario.Target{Kind: scenario.TargetRandom}, 4, []int{5}},
		{3, scenario.Target{Kind: scenario.TargetMinority}, 0, []int{3}},
		{5, scenario.Target{Kind: scenario.TargetMinority}, 0, []int{4, 5}},
		{3, scenario.Target{Kind: scenario.TargetMajority}, 0, []int{1, 2}},
		{5, scenario.Target{Kind: scenario.TargetMajority}, 0, []int{1, 2, 3}},
		{5, scenario.Target{Kind: scenario.TargetMajority, Count: 4}, 0, []int{1, 2, 3, 4}},
		{3, scenario.Target{Kind: scenario.TargetLeader, Queue: "q", Nodes: []int{2}}, 0, []int{2}},
	} {
		got, err := testCluster(tc.n).Resolve(ctx, tc.t, func(int) int { return tc.pick })
		if err != nil || !reflect.DeepEqual(got.Nodes, tc.want) {
			t.Errorf("%s on %d: %v %v, want %v", tc.t, tc.n, got.Nodes, err, tc.want)
		}
	}
	c := testCluster(3)
	if _, err := c.Resolve(ctx, scenario.Target{Kind: scenario.TargetRandom}, func(int) int { return 3 }); err == nil || err.Error() != "target random node: pick(3) gave 3, not in [0, 3)" {
		t.Errorf("pick out of range: %v", err)
	}
	if _, err := c.Resolve(ctx, scenario.Target{Kind: scenario.TargetMinority, Count: 4}, nil); err == nil || err.Error() != "4 nodes (minority): 4 nodes is not within 1..3" {
		t.Errorf("count above size: %v", err)
	}
	if _, err := c.Resolve(ctx, scenario.Target{Kind: scenario.TargetLeader}, nil); err == nil || err.Error() != "target leader names no queue" {
		t.Errorf("leader of no queue: %v", err)
	}
}

// Raft State is a string, or an Erlang error term rendered as an array.
func TestQuorumMemberState(t *testing.T) {
	var rows []quorumMember
	out := `[{"Node Name":"rabbit@rmq1","Raft State":["nodedown","rabbit@rmq1"],"Term":""},
	{"Node Name":"rabbit@rmq2","Raft State":"leader","Term":3},
	{"Node Name":"rabbit@rmq3","Raft State":"timeout"},
	{"Node Name":"rabbit@rmq4","Raft State":{"odd":1}}]`
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range rows {
		got = append(got, r.Node+" "+r.state())
	}
	want := []string{"rabbit@rmq1 nodedown", "rabbit@rmq2 leader", "rabbit@rmq3 timeout", "rabbit@rmq4 unknown"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("states %v, want %v", got, want)
	}
}

// A stream's writer leads it and its replicas follow; a member whose node
// is down reports its numbers as "undefined" (stream_status on RabbitMQ
// 4.0.5, node 1 killed).
func TestStreamMemberState(t *testing.T) {
	var rows []streamMember
	out := `[{"role":"writer","node":"rabbit@rmq1","epoch":"undefined","offset":"undefined"},
	{"role":"replica","node":"rabbit@rmq2","epoch":1,"offset":99,"committed_offset":42},
	{"role":"writer","node":"rabbit@rmq3","epoch":2,"offset":99},
	{"role":"other","node":"rabbit@rmq4","epoch":2}]`
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range rows {
		got = append(got, r.Node+" "+r.state())
	}
	want := []string{"rabbit@rmq1 down", "rabbit@rmq2 follower", "rabbit@rmq3 leader", "rabbit@rmq4 unknown"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("states %v, want %v", got, want)
	}
}

// An attached node's Erlang name: RABBITMQ_NODENAME (with the short
// hostname when it has no host part), else rabbit@ and the short hostname.
func TestNodeNameOf(t *testing.T) {
	for _, tc := range []struct {
		env  []string
		host string
		want string
	}{
		{nil, "rabbit-1.example", "rabbit@rabbit-1"},
		{[]string{"PATH=/bin", "RABBITMQ_NODENAME=hare@box"}, "x", "hare@box"},
		{[]string{"RABBITMQ_NODENAME=hare"}, "box.lan", "hare@box"},
		{[]string{"RABBITMQ_NODENAME="}, "box", "rabbit@box"},
	} {
		info := container.InspectResponse{Config: &container.Config{Env: tc.env, Hostname: tc.host}}
		if got := nodeNameOf(info); got != tc.want {
			t.Errorf("env %v host %q: %q, want %q", tc.env, tc.host, got, tc.want)
		}
	}
}

// The node to ask is an up one that sees most others: after the leader's
// isolation, one of the majority; nodes taken down are never asked.
func TestAskOrder(t *testing.T) {
	c := testCluster(3)
	if got := c.askOrder(); !reflect.DeepEqual(got, []int{1, 2, 3}) {
		t.Errorf("all up: %v", got)
	}
	c.cut = []link{{1, 2}, {1, 3}}
	if got := c.askOrder(); !reflect.DeepEqual(got, []int{2, 3, 1}) {
		t.Errorf("rmq1 isolated: %v", got)
	}
	c.state[1].down = true
	c.state[2].paused = true
	if got := c.askOrder(); !reflect.DeepEqual(got, []int{1}) {
		t.Errorf("rmq2 down, rmq3 paused: %v", got)
	}
	c.state[0].disconnected = true
	if got := c.askOrder(); len(got) != 0 {
		t.Errorf("nothing up: %v", got)
	}
	if _, err := c.ask(context.Background(), "true"); err == nil || err.Error() != "true: no node of the cluster is up and connected to ask" {
		t.Errorf("ask with nothing up: %v", err)
	}
}

// A node wants the client network and its pair networks, minus the links
// a partition cut at its end (the lower-numbered one), and nothing while
// disconnected.
func TestWantNets(t *testing.T) {
	c := testCluster(3)
	c.cut = []link{{1, 3}}
	want1 := map[string][]string{"rmqt-r-client": nil, "rmqt-r-link-rmq1-rmq2": {"rmq1"}}
	if got := c.wantNets(1); !reflect.DeepEqual(got, want1) {
		t.Errorf("rmq1 %v, want %v", got, want1)
	}
	want3 := map[string][]string{"rmqt-r-client": nil, "rmqt-r-link-rmq1-rmq3": {"rmq3"}, "rmqt-r-link-rmq2-rmq3": {"rmq3"}}
	if got := c.wantNets(3); !reflect.DeepEqual(got, want3) {
		t.Errorf("rmq3 %v, want %v", got, want3)
	}
	c.state[1].disconnected = true
	if got := c.wantNets(2); len(got) != 0 {
		t.Errorf("disconnected rmq2 wants %v", got)
	}
	if !c.ours("rmqt-r-link-rmq2-rmq3") || !c.ours("rmqt-r-client") || c.ours("bridge") {
		t.Error("ours")
	}
}

// An attached cluster is never partitioned: its links are not rmqtorture's.
func TestAttachedClusterRefusesPartition(t *testing.T) {
	c := testCluster(3)
	c.owned = false
	_, err := c.Partition(context.Background(), scenario.Target{Kind: scenario.TargetNode, Node: 1}, scenario.PartitionIsolate)
	want := "cannot partition rmqt-r-1, rmqt-r-2, rmqt-r-3 (3 nodes): rmqtorture partitions only a cluster it created (it cuts the one Docker network each pair of nodes shares); run without naming the containers"
	if err == nil || err.Error() != want {
		t.Errorf("%v, want %q", err, want)
	}
	if _, err := c.Heal(context.Background()); err != nil {
		t.Errorf("heal of an attached cluster: %v", err)
	}
}

// Findings merge by signature over the nodes, in the scanner's order,
// the first line from the first node that has one.
func TestMergeFindings(t *testing.T) {
	var got []scenario.BrokerLogFinding
	got = mergeFindings(got, []scenario.BrokerLogFinding{{Signature: "process-crashed", Count: 2, FirstLine: "a"}}, "rmq1")
	got = mergeFindings(got, []scenario.BrokerLogFinding{
		{Signature: "dropped-after-unclean-shutdown", Count: 1, Messages: 5, FirstLine: "b"},
		{Signature: "process-crashed", Count: 1, FirstLine: "c"},
	}, "rmq2")
	got = mergeFindings(got, []scenario.BrokerLogFinding{{Signature: "dropped-after-unclean-shutdown", Count: 2, Messages: 7, FirstLine: "d"}}, "rmq3")
	want := []scenario.BrokerLogFinding{
		{Signature: "dropped-after-unclean-shutdown", Count: 3, Messages: 12, FirstLine: "rmq2: b"},
		{Signature: "process-crashed", Count: 3, FirstLine: "rmq1: a"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%+v, want %+v", got, want)
	}
}
