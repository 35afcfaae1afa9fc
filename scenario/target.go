package scenario

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// TargetKind says what a fault acts on.
type TargetKind string

const (
	// TargetBroker is the single broker of a run without a cluster, and the
	// default target of every fault (on a cluster: the node the fault's
	// default for its action names, see Fault.TargetOf).
	TargetBroker TargetKind = "broker"
	// TargetNode is one node of a cluster (Target.Node, 1-based: node 2 is
	// rmq2).
	TargetNode TargetKind = "node"
	// TargetLeader is the node leading the quorum queue under test
	// (Target.Queue), as `rabbitmq-queues quorum_status` reports it when the
	// fault fires.
	TargetLeader TargetKind = "leader"
	// TargetFollower is a node holding a replica of the quorum queue under
	// test without leading it (the first such node, in node order).
	TargetFollower TargetKind = "follower"
	// TargetRandom is one node drawn from the run's seed when the fault
	// fires: the same seed draws the same node.
	TargetRandom TargetKind = "random"
	// TargetMinority is the largest set of nodes whose loss keeps a majority
	// up (1 of 3, 2 of 5), followers first; Target.Count, when set, asks for
	// that many nodes.
	TargetMinority TargetKind = "minority"
	// TargetMajority is the smallest set of nodes whose loss leaves no
	// majority (2 of 3, 3 of 5), the queue's leader first: a quorum queue
	// stops confirming.
	TargetMajority TargetKind = "majority"
	// TargetAll is every node (the single broker, for a run without a
	// cluster).
	TargetAll TargetKind = "all"
)

// TargetKinds lists the kinds a scenario may name, for messages.
var TargetKinds = []TargetKind{TargetNode, TargetLeader, TargetFollower, TargetRandom, TargetMinority, TargetMajority, TargetAll}

// Target is what a fault step acts on. On a cluster, node, leader,
// follower, random, minority and majority are resolved into nodes when
// the fault fires (Nodes); its recovery acts on those same nodes, whoever
// leads by then. A single broker accepts only broker and all.
type Target struct {
	Kind  TargetKind
	Node  int    // TargetNode: the node's number, 1-based
	Queue string // TargetLeader, TargetFollower, minority, majority: the quorum queue
	Count int    // TargetMinority, TargetMajority: how many nodes (0: as the kind says)
	// Nodes are the node numbers (1-based, ascending) the target resolved
	// to when the fault fired; empty before resolution.
	Nodes []int
}

// BrokerTarget is the target of every fault on a single broker.
func BrokerTarget() Target { return Target{Kind: TargetBroker} }

// NodeName is the name of cluster node i (1-based): its container's
// hostname and Erlang node host, "rmq2" for rabbit@rmq2.
func NodeName(i int) string { return fmt.Sprintf("rmq%d", i) }

// NodeNames names nodes (1-based numbers) as "rmq1, rmq3".
func NodeNames(nodes []int) string {
	names := make([]string, len(nodes))
	for i, n := range nodes {
		names[i] = NodeName(n)
	}
	return strings.Join(names, ", ")
}

// String is the target as events and records spell it: "broker", "node
// rmq2", "leader of q", "follower of q", "random node", "minority",
// "2 nodes (majority of q)", "all"; a resolved target adds its nodes:
// "leader of q (rmq1)".
func (t Target) String() string {
	out := string(t.Kind)
	switch t.Kind {
	case "", TargetBroker:
		out = string(TargetBroker)
	case TargetNode:
		out = "node " + NodeName(t.Node)
	case TargetLeader, TargetFollower:
		out = fmt.Sprintf("%s of %s", t.Kind, t.Queue)
	case TargetRandom:
		out = "random node"
	case TargetMinority, TargetMajority:
		if t.Queue != "" {
			out += " of " + t.Queue
		}
		if t.Count > 0 {
			out = fmt.Sprintf("%d nodes (%s)", t.Count, out)
		}
	}
	if len(t.Nodes) > 0 && t.Kind != TargetNode {
		out += " (" + NodeNames(t.Nodes) + ")"
	}
	return out
}

// Single reports whether a single broker (no cluster) can act on t: the
// broker itself, or all of it.
func (t Target) Single() bool { return t.Kind == "" || t.Kind == TargetBroker || t.Kind == TargetAll }

// Minority reports whether t acts on fewer than half the nodes of a
// cluster, whichever they resolve to: one node (node, leader, follower,
// random) or a minority. A quorum queue keeps a majority of its members
// with them down (https://www.rabbitmq.com/docs/quorum-queues#quorum-requirements).
func (t Target) Minority() bool {
	switch t.Kind {
	case TargetNode, TargetLeader, TargetFollower, TargetRandom, TargetMinority:
		return true
	}
	return false
}

// Resolved reports whether t names its nodes (Nodes set).
func (t Target) Resolved() bool { return len(t.Nodes) > 0 }

// PartitionShape is how a partition fault splits a cluster's nodes, after
// the nemeses of RabbitMQ's Jepsen suite
// (https://github.com/rabbitmq/rabbitmq-server/tree/main/deps/rabbit/test,
// jepsen/rabbitmq): every shape keeps each node's client port reachable.
type PartitionShape string

const (
	// PartitionIsolate cuts the target's nodes (default: the leader) off
	// from every other node.
	PartitionIsolate PartitionShape = "isolate"
	// PartitionHalves splits the nodes into two sides, the smaller one
	// holding the queue's leader (2|3 on 5 nodes, 1|2 on 3).
	PartitionHalves PartitionShape = "halves"
	// PartitionMajoritiesRing gives every node a view of a majority, but no
	// two nodes the same majority (5 nodes: each node sees its two
	// neighbours on a ring).
	PartitionMajoritiesRing PartitionShape = "majorities-ring"
	// PartitionBridge splits the nodes into two sides joined by one node
	// that sees both (3 nodes: rmq1 | rmq2 | rmq3 with rmq2 the bridge).
	PartitionBridge PartitionShape = "bridge"
)

// PartitionShapes lists every shape, for messages.
var PartitionShapes = []PartitionShape{PartitionIsolate, PartitionHalves, PartitionMajoritiesRing, PartitionBridge}

// ConnectTo is which node a client connects to first on a cluster; it fails
// over to the other nodes, in node order after it, when that one is down.
type ConnectTo string

const (
	ConnectLeader     ConnectTo = "leader"      // the quorum queue's leader when the burst starts
	ConnectFollower   ConnectTo = "follower"    // a follower of the queue when the burst starts
	ConnectRoundRobin ConnectTo = "round-robin" // publisher i (and consumer i) to node i mod N
	ConnectNode       ConnectTo = "node"        // load.connect_node
)

// Healthy member states of a quorum queue's Raft members
// (`rabbitmq-queues quorum_status`, "Raft State").
const (
	MemberLeader   = "leader"
	MemberFollower = "follower"
)

// Resolve returns t with Nodes set to the node numbers (1..size,
// ascending) it names on a cluster of size nodes whose queue members are
// in the given Raft states (node → state, as Cluster.Members reports
// them): all, node, random (pick(size)+1, pick drawing from the run's
// seed in [0, n)), leader, follower (the first follower in node order),
// minority (Count, or (m-1)/2 nodes of the m members, or of the size
// nodes without members: followers first, then nodes holding no member,
// the leader last) and majority (Count, or m/2+1 nodes: the leader
// first, then followers); without members, minority takes the last nodes
// and majority the first. It fails for leader and
// follower when no member has that state (quorum lost, or not a quorum
// queue), and for a count out of 1..size.
func (t Target) Resolve(size int, members map[int]string, pick func(n int) int) (Target, error) {
	leader := 0
	for n, st := range members {
		if st == MemberLeader {
			leader = n
		}
	}
	var nodes []int
	switch t.Kind {
	case "", TargetBroker, TargetAll:
		for n := 1; n <= size; n++ {
			nodes = append(nodes, n)
		}
	case TargetNode:
		if t.Node < 1 || t.Node > size {
			return t, fmt.Errorf("node %d is not one of the cluster's %d nodes", t.Node, size)
		}
		nodes = []int{t.Node}
	case TargetRandom:
		k := pick(size)
		if k < 0 || k >= size {
			return t, fmt.Errorf("target random node: pick(%d) gave %d, not in [0, %d)", size, k, size)
		}
		nodes = []int{k + 1}
	case TargetLeader, TargetFollower:
		if t.Queue == "" {
			return t, fmt.Errorf("target %s names no queue", t.Kind)
		}
	}
	switch t.Kind {
	case "", TargetBroker, TargetAll, TargetNode, TargetRandom: // named above
	case TargetLeader:
		if leader == 0 {
			return t, fmt.Errorf("quorum queue %s has no leader (members: %s)", t.Queue, MemberStates(members))
		}
		nodes = []int{leader}
	case TargetFollower:
		for n := 1; n <= size; n++ {
			if members[n] == MemberFollower {
				nodes = []int{n}
				break
			}
		}
		if nodes == nil {
			return t, fmt.Errorf("quorum queue %s has no follower (members: %s)", t.Queue, MemberStates(members))
		}
	case TargetMinority, TargetMajority:
		// Of the queue's members when known (a queue may have fewer
		// members than the cluster has nodes), else of the cluster.
		of := size
		if len(members) > 0 {
			of = len(members)
		}
		count := (of - 1) / 2
		if t.Kind == TargetMajority {
			count = of/2 + 1
		}
		if t.Count > 0 {
			count = t.Count
		}
		if count < 1 || count > size {
			return t, fmt.Errorf("%s: %d nodes is not within 1..%d", t, count, size)
		}
		nodes = rankNodes(size, members, leader, t.Kind == TargetMajority)[:count]
	default:
		return t, fmt.Errorf("unknown target %q", t.Kind)
	}
	slices.Sort(nodes)
	t.Nodes = nodes
	return t, nil
}

// rankNodes orders nodes 1..size for minority (followers, then nodes with
// no member or an unhealthy one, the leader last) or, leaderFirst, for
// majority (the leader, then followers, then the rest). Without members
// (no quorum queue) minority counts down from the last node and majority
// up from node 1, where the run declares its queues.
func rankNodes(size int, members map[int]string, leader int, leaderFirst bool) []int {
	if len(members) == 0 {
		out := make([]int, 0, size)
		for n := 1; n <= size; n++ {
			out = append(out, n)
		}
		if !leaderFirst {
			slices.Reverse(out)
		}
		return out
	}
	rank := func(n int) int {
		switch {
		case n == leader && leaderFirst:
			return 0
		case n == leader:
			return 3
		case members[n] == MemberFollower:
			return 1
		}
		return 2
	}
	out := make([]int, 0, size)
	for n := 1; n <= size; n++ {
		out = append(out, n)
	}
	slices.SortStableFunc(out, func(a, b int) int { return rank(a) - rank(b) })
	return out
}

// MemberStates spells members as "rmq1 leader, rmq2 follower, rmq3
// timeout" in node order ("none" when empty).
func MemberStates(members map[int]string) string {
	nodes := slices.Sorted(maps.Keys(members))
	if len(nodes) == 0 {
		return "none"
	}
	parts := make([]string, len(nodes))
	for i, n := range nodes {
		parts[i] = NodeName(n) + " " + members[n]
	}
	return strings.Join(parts, ", ")
}

// Replicated reports whether the queue's members (quorum_status lists
// every member the queue has, up or not) are one leader and followers:
// the queue is fully replicated. A quorum queue need not have a member on
// every node (the broker picks the count unless x-quorum-initial-group-size
// sets it: https://www.rabbitmq.com/docs/quorum-queues), so only the
// members it has count.
func Replicated(members map[int]string) bool {
	leaders := 0
	for _, st := range members {
		switch st {
		case MemberLeader:
			leaders++
		case MemberFollower:
		default:
			return false
		}
	}
	return leaders == 1
}

// ConnectTos lists every ConnectTo, for messages and the schema's enum.
var ConnectTos = []ConnectTo{ConnectLeader, ConnectFollower, ConnectRoundRobin, ConnectNode}
