package scenario

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// This file holds what only a cluster has (broker.nodes 3 or 5): the
// node-count override and the rules on fault targets, partition shapes,
// cluster-only actions and where clients connect.

// ClusterSizes are the node counts broker.nodes takes: a single broker, or
// a cluster of an odd size. A quorum queue needs a majority of its members
// up (https://www.rabbitmq.com/docs/quorum-queues#quorum-requirements), and
// an even size tolerates no more lost nodes than the odd size below it.
var ClusterSizes = []int{1, 3, 5}

// SetNodes makes s run on n nodes, as broker.nodes: n written in the file
// would (the --nodes override; call Validate after it): on a cluster an
// unset load.connect_to becomes leader, the loader's default; on a single
// broker a connect_to of leader is dropped, since the one broker leads
// every queue, so a cluster scenario that relied on the default runs on one
// broker unchanged. Any other connect_to stays, for Validate to refuse. A
// broker.ready_timeout the file left out becomes DefaultReadyTimeout(n).
func (s *Scenario) SetNodes(n int) {
	s.Broker.Nodes = n
	if s.Broker.readyTimeoutDefault {
		s.Broker.ReadyTimeout = Duration(DefaultReadyTimeout(n))
	}
	switch {
	case n > 1 && s.Load.ConnectTo == "":
		s.Load.ConnectTo = s.defaultConnectTo()
	case n <= 1 && s.Load.ConnectTo == ConnectLeader:
		s.Load.ConnectTo = ""
	}
}

// defaultConnectTo is where clients connect on a cluster unless told:
// the quorum queue's leader; round-robin for other queues, which have no
// leader.
func (s *Scenario) defaultConnectTo() ConnectTo {
	if s.Queue.Type == Quorum {
		return ConnectLeader
	}
	return ConnectRoundRobin
}

// needsCluster ends every message refusing a cluster setting on a single
// broker.
const needsCluster = "needs broker.nodes 3 or 5"

// validateCluster checks broker.nodes and every setting that depends on it.
func (p *parser) validateCluster(sp string, s *Scenario) {
	p.validateNodes(sp, s)
	p.validateConnect(sp, s)
	p.validateQueueNodes(sp, s)
	p.validateGroupSize(sp, s)
	for j := range s.Faults {
		p.validateTarget(fmt.Sprintf("%s.faults[%d]", sp, j), s, s.Faults[j])
	}
}

// validateGroupSize checks x-quorum-initial-group-size, the number of
// members a quorum queue is declared with
// (https://www.rabbitmq.com/docs/quorum-queues#replication-factor): a
// quorum queue argument, at most the cluster's nodes.
func (p *parser) validateGroupSize(sp string, s *Scenario) {
	const k = "x-quorum-initial-group-size"
	v, ok := s.Queue.Arguments[k]
	if !ok {
		return
	}
	ap := sp + ".queue.arguments." + k
	n, isInt := v.(int)
	switch {
	case s.Queue.Type != Quorum:
		p.fail(ap, "sets a quorum queue's member count, and queue.type is %s", s.Queue.Type)
	case !isInt:
	case n < 1 || n > max(s.Broker.Nodes, 1):
		p.fail(ap, "must be within 1–%d (broker.nodes), got %d: a quorum queue has at most one member per node", max(s.Broker.Nodes, 1), n)
	}
}

// validateNodes checks the cluster size, and what a cluster cannot run yet.
func (p *parser) validateNodes(sp string, s *Scenario) {
	n := s.Broker.Nodes
	np := sp + ".broker.nodes"
	switch {
	case !p.has(np) || slices.Contains(ClusterSizes, n):
	case n == 2 || n == 4:
		below := fmt.Sprintf("%d nodes do", n-1)
		if n == 2 {
			below = "a single broker does"
		}
		p.fail(np, "must be 1, 3 or 5, got %d: a quorum queue needs a majority of its members up, and %d nodes lose it with %d down, as %s: the extra node adds no tolerance",
			n, n, n/2, below)
	default:
		p.fail(np, "must be 1, 3 or 5, got %d: a single broker, or a cluster of an odd size (a quorum queue keeps its majority with 1 of 3 or 2 of 5 nodes down)", n)
	}
}

// validateQueueNodes checks queue.node, queue.also_bind_node and
// queue.dead_letter_node: a node of the cluster, and also_bind_node only
// with the queue it places (dead_letter_node: validateDeadLetterArguments).
func (p *parser) validateQueueNodes(sp string, s *Scenario) {
	qp := sp + ".queue"
	n := s.Broker.Nodes
	for _, k := range []struct {
		key  string
		node int
	}{{"node", s.Queue.Node}, {"also_bind_node", s.Queue.AlsoBindNode}, {"dead_letter_node", s.Queue.DeadLetterNode}} {
		path := qp + "." + k.key
		switch {
		case !p.has(path):
		case n <= 1:
			p.fail(path, "%s: a single broker holds every queue", needsCluster)
		case k.node < 1 || k.node > n:
			p.fail(path, "must be within 1–%d (broker.nodes), got %d", n, k.node)
		}
	}
	if p.has(qp+".also_bind_node") && s.Queue.AlsoBindType == "" {
		p.fail(qp+".also_bind_node", "places the second queue queue.also_bind_type declares, and there is none: set also_bind_type (quorum or classic)")
	}
}

// leaderless returns the first queue type the scenario runs that has no
// leader (classic: one node holds it, no Raft group; a stream's writer
// leads it, as a quorum queue's leader does) and where the scenario says
// so; "" when it has none.
func (s *Scenario) leaderless() (QueueType, string) {
	for _, t := range s.queueTypes() {
		if t == Classic {
			if len(s.Matrix.QueueTypes) > 0 {
				return t, "matrix.queue_types runs classic"
			}
			return t, "queue.type is classic"
		}
	}
	return "", ""
}

// validateConnect checks load.connect_to and load.connect_node.
func (p *parser) validateConnect(sp string, s *Scenario) {
	lp := sp + ".load"
	l, n := s.Load, s.Broker.Nodes
	if n <= 1 {
		for _, k := range []string{"connect_to", "connect_node"} {
			if p.has(lp + "." + k) {
				p.fail(lp+"."+k, "%s: a single broker is the only node clients can connect to", needsCluster)
			}
		}
		return
	}
	hasNode := p.has(lp + ".connect_node")
	switch {
	case l.ConnectTo == ConnectNode && !hasNode:
		p.fail(lp+".connect_node", "missing: connect_to: node needs the node's number (1–%d)", n)
	case l.ConnectTo != ConnectNode && hasNode:
		p.fail(lp+".connect_node", "only connect_to: node names a node; connect_to is %s", l.ConnectTo)
	case hasNode && (l.ConnectNode < 1 || l.ConnectNode > n):
		p.fail(lp+".connect_node", "must be within 1–%d (broker.nodes), got %d", n, l.ConnectNode)
	}
	if s.Queue.Type == Stream {
		// The stream protocol's clients go where the stream's metadata
		// says: the leader to publish, a replica to read. Only the AMQP
		// connections that declare and delete it go round-robin.
		// (connect_node without connect_to: node is the switch's above.)
		if l.ConnectTo != ConnectRoundRobin && p.has(lp+".connect_to") {
			p.fail(lp+".connect_to", "queue.type is stream: a stream client connects to the node the stream's metadata names (its leader to publish, a replica to read), not to the node connect_to: %s picks; leave it out", l.ConnectTo)
		}
		return
	}
	if l.ConnectTo != ConnectLeader && l.ConnectTo != ConnectFollower {
		return
	}
	if _, where := s.leaderless(); where != "" {
		if p.has(lp + ".connect_to") {
			p.fail(lp+".connect_to", "%s needs a quorum queue, and %s: a classic queue has no leader or followers; use round-robin or node", l.ConnectTo, where)
		} else {
			p.fail(lp+".connect_to", "clients connect to the queue's leader unless told otherwise, and %s: a classic queue has no leader; set connect_to: round-robin or node", where)
		}
	}
}

// validateTarget checks a fault step's target, node and shape against its
// action and the broker's size.
func (p *parser) validateTarget(fp string, s *Scenario, f Fault) {
	spec, known := f.Action.Spec()
	if !known {
		return
	}
	n := s.Broker.Nodes
	hasTarget, hasNode := p.has(fp+".target"), p.has(fp+".node")
	if p.has(fp+".shape") && !f.Action.Takes(ParamShape) {
		p.fail(fp+".shape", "only %s takes a shape, not %s", andList(taking(ParamShape)), f.Action)
	}
	if why := untargeted(f.Action, spec); why != "" {
		for _, k := range []string{"target", "node"} {
			if p.has(fp + "." + k) {
				p.fail(fp+"."+k, "%s %s: it takes no %s", f.Action, why, k)
			}
		}
		return
	}
	if n <= 1 {
		if spec.ClusterOnly {
			p.fail(fp+".action", "%s %s: it acts on the nodes of a cluster, and this scenario runs a single broker", f.Action, needsCluster)
		}
		if hasTarget && f.Target != TargetAll {
			p.fail(fp+".target", "%s %s: on a single broker every step acts on the broker (leave target out, or write all)", f.Target, needsCluster)
		}
		if hasNode {
			p.fail(fp+".node", "%s: a single broker has no nodes to choose from", needsCluster)
		}
		return
	}
	t := f.TargetOf(n, "")
	// The field that chose the target, for messages about it.
	tp := fp + ".target"
	if !hasTarget && hasNode {
		tp = fp + ".node"
	}
	switch {
	case hasNode && hasTarget && f.Target != TargetNode:
		p.fail(fp+".node", "only target: node (or node alone) acts on a numbered node; this step's target is %s", f.Target)
	case t.Kind == TargetNode && !hasNode:
		p.fail(fp+".node", "missing: target: node needs the node's number (1–%d)", n)
	case hasNode && (f.Node < 1 || f.Node > n):
		p.fail(fp+".node", "must be within 1–%d (broker.nodes), got %d", n, f.Node)
	}
	if t.Kind == TargetLeader || t.Kind == TargetFollower {
		if _, where := s.leaderless(); where != "" {
			if hasTarget {
				p.fail(tp, "%s needs a quorum queue or a stream, and %s: a classic queue has no leader or followers; use node, random, minority, majority or all", t.Kind, where)
			} else {
				p.fail(tp, "%s acts on the queue's leader unless told otherwise, and %s: a classic queue has no leader; set target (node, random, minority, majority or all)", f.Action, where)
			}
		}
	}
	if spec.validateTarget != nil {
		spec.validateTarget(p, fp, tp, n, f, t)
	}
}

// untargeted says why an action takes no target or node ("" when it
// takes one): the recovery steps act on what their fault acted on, the
// client-side faults on rmqtorture's own clients, the queue actions on the
// queue wherever it lives.
func untargeted(a Action, spec ActionSpec) string {
	switch {
	case spec.IsRecovery:
		return "recovers the nodes the step with manual_recovery acted on"
	case spec.ClientSide:
		return "is played by rmqtorture's own clients, not on a node"
	case spec.RemovesMessages:
		return "acts on the queue, wherever it lives"
	}
	return ""
}

// forBroker keeps the actions of names (action names, in table order) that
// a scenario on nodes nodes can run: cluster-only actions only on a
// cluster, so a single broker's messages list what it can use.
func forBroker(names []string, nodes int) []string {
	if nodes > 1 {
		return names
	}
	var out []string
	for _, a := range names {
		if !Action(a).ClusterOnly() {
			out = append(out, a)
		}
	}
	return out
}

// andList joins names as prose: "a", "a and b", "a, b and c".
func andList(names []string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

// PartitionText describes a partition map in node order: "rabbit@rmq1
// sees rabbit@rmq2 partitioned; rabbit@rmq2 sees rabbit@rmq1 partitioned".
func PartitionText(seen map[string][]string) string {
	var parts []string
	for _, node := range slices.Sorted(maps.Keys(seen)) {
		others := slices.Sorted(slices.Values(seen[node]))
		parts = append(parts, fmt.Sprintf("%s sees %s partitioned", node, strings.Join(others, ", ")))
	}
	return strings.Join(parts, "; ")
}
