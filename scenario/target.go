package scenario

import (
	"fmt"
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

// ConnectTos lists every ConnectTo, for messages and the schema's enum.
var ConnectTos = []ConnectTo{ConnectLeader, ConnectFollower, ConnectRoundRobin, ConnectNode}
