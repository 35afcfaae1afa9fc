package scenario

import "fmt"

// TargetKind says what a fault acts on.
type TargetKind string

const (
	// TargetBroker is the single broker of a run: today the only kind a run
	// can act on.
	TargetBroker TargetKind = "broker"
	// TargetNode is one named node of a cluster (Target.Node). Clusters
	// come in a later issue; a single broker refuses this kind.
	TargetNode TargetKind = "node"
	// TargetLeader is the node leading a quorum queue (Target.Queue), as the
	// cluster reports it when the fault fires.
	TargetLeader TargetKind = "leader"
	// TargetFollower is a node holding a replica of a quorum queue
	// (Target.Queue) without leading it.
	TargetFollower TargetKind = "follower"
	// TargetMinority is the largest set of nodes whose loss keeps a majority
	// of a cluster (or of Target.Queue's members) up; Target.Count, when
	// set, asks for that many nodes.
	TargetMinority TargetKind = "minority"
	// TargetMajority is the smallest set of nodes whose loss leaves no
	// majority: a quorum queue stops accepting messages.
	TargetMajority TargetKind = "majority"
	// TargetAll is every node (the single broker, for a run without a
	// cluster).
	TargetAll TargetKind = "all"
)

// Target is what a fault step acts on. A cluster (a later issue) resolves
// node, leader, follower, minority and majority into nodes when the fault
// fires; a single broker accepts only broker and all.
type Target struct {
	Kind  TargetKind
	Node  string // TargetNode: the node's name (e.g. "rmq2")
	Queue string // TargetLeader, TargetFollower (and optionally minority/majority): the quorum queue
	Count int    // TargetMinority, TargetMajority: how many nodes (0: as the kind says)
}

// BrokerTarget is the target of every fault today: the single broker.
func BrokerTarget() Target { return Target{Kind: TargetBroker} }

// String is the target as events and records spell it: "broker", "node
// rmq2", "leader of q", "follower of q", "minority", "2 of majority", "all".
func (t Target) String() string {
	switch t.Kind {
	case "", TargetBroker:
		return string(TargetBroker)
	case TargetNode:
		return "node " + t.Node
	case TargetLeader, TargetFollower:
		return fmt.Sprintf("%s of %s", t.Kind, t.Queue)
	case TargetMinority, TargetMajority:
		out := string(t.Kind)
		if t.Queue != "" {
			out += " of " + t.Queue
		}
		if t.Count > 0 {
			out = fmt.Sprintf("%d nodes (%s)", t.Count, out)
		}
		return out
	}
	return string(t.Kind)
}

// Single reports whether a single broker (no cluster) can act on t: the
// broker itself, or all of it.
func (t Target) Single() bool { return t.Kind == "" || t.Kind == TargetBroker || t.Kind == TargetAll }
