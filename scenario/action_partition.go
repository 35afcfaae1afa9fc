package scenario

// Partition cuts inter-node links of a cluster in the step's shape
// (isolate, halves, majorities-ring, bridge) while every node keeps
// its client port, and heals them after Down. Cluster only.
const Partition Action = "partition"

// partitionSpec: shape (one of PartitionShapes, default isolate) and down
// (a duration, default 5s) before the links are healed.
var partitionSpec = ActionSpec{
	Name:     Partition,
	Params:   []Param{ParamShape, ParamDown},
	Recovers: true, Leaves: "partitioned", Repeatable: true, ClusterOnly: true, DefaultTarget: TargetLeader,
	OnPublishing: true, BrokerDown: true, DowntimeFromConnections: true,
	While: "while the cluster was partitioned",
	defaults: func(d defaulter, fp string, f *Fault) {
		if !d.at(fp + "shape") {
			f.Shape = PartitionIsolate
		}
	},
	validateTarget: validatePartition,
	validateQueue:  validatePartitionQueue,
}

// validatePartitionQueue refuses a partition of a stream's cluster: a
// stream replicates over TCP connections to each replica's own addresses
// (osiris), its client-network address among them, which a partition
// leaves up, so the cut would not reach the stream's replication.
func validatePartitionQueue(p *parser, fp string, s *Scenario) {
	if s.Queue.Type == Stream && s.Broker.Nodes > 1 {
		p.fail(fp, "partition cuts the links between nodes, and a stream replicates over connections to each replica's own addresses, its client-network address among them, which a partition leaves up: the cut would not reach the stream (use disconnect, kill, stop, pause or power-loss)")
	}
}

// validatePartition checks a partition's shape against the cluster size
// and its target (at path tp): isolate and halves cut the target's nodes
// off from the others, so the target must leave nodes on both sides and,
// for halves, be the smaller side.
func validatePartition(p *parser, fp, tp string, n int, f Fault, t Target) {
	if f.Shape == PartitionMajoritiesRing && n < 5 {
		p.fail(fp+".shape", "majorities-ring needs broker.nodes 5: on %d nodes each node's two ring neighbours are all the others, so nothing would be cut", n)
	}
	if f.Shape != PartitionIsolate && f.Shape != PartitionHalves {
		return
	}
	switch t.Kind {
	case TargetAll:
		p.fail(tp, "partition %s cuts the target's nodes off from the others, and all leaves no others: nothing would be cut (use leader, the default, follower, node, random or minority)", f.Shape)
	case TargetMajority:
		if f.Shape == PartitionHalves {
			p.fail(tp, "partition halves puts the target on the smaller side, and a majority is not: use minority, or shape isolate to cut a majority off from the rest")
		}
	}
}
