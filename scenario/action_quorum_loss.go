package scenario

import "github.com/rmqtorture/rmqtorture/metrics"

// QuorumLoss stops a majority of the nodes (the queue's leader first)
// for Down, then starts them again: a quorum queue can confirm nothing
// meanwhile. Cluster only.
const QuorumLoss Action = "quorum-loss"

// quorumLossSpec: grace (a duration, default 10s) before each node's
// SIGKILL, and down (a duration, default 5s) before start.
var quorumLossSpec = ActionSpec{
	Name:        QuorumLoss,
	Params:      []Param{ParamGrace, ParamDown},
	RecoveredBy: Start, Recovers: true, Leaves: "stopped", State: metrics.StateDown, FromTrigger: true,
	Repeatable: true, ClusterOnly: true, DefaultTarget: TargetMajority, OnPublishing: true, BrokerDown: true,
	StopsMajority: true,
	While:         "while a majority of the nodes was stopped",
	validateTarget: func(p *parser, _, tp string, _ int, _ Fault, t Target) {
		if t.Kind != TargetMajority && t.Kind != TargetAll {
			p.fail(tp, "quorum-loss stops a majority of the nodes: its target is majority (the default) or all, not %s", t.Kind)
		}
	},
}
