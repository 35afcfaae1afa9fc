package scenario

import "github.com/rmqtorture/rmqtorture/metrics"

// Stop stops the broker gracefully (SIGTERM, SIGKILL after Grace; the
// node closes connections with 320 CONNECTION_FORCED), then starts it
// again after Down.
const Stop Action = "stop"

// stopSpec: grace (a duration, default 10s) before SIGKILL, and down (a
// duration, default 5s) before start.
var stopSpec = ActionSpec{
	Name:        Stop,
	Params:      []Param{ParamGrace, ParamDown},
	RecoveredBy: Start, Recovers: true, Leaves: "stopped", State: metrics.StateDown, FromTrigger: true,
	Repeatable: true, DefaultTarget: TargetLeader, OnPublishing: true, BrokerDown: true,
	While: "while the broker was being stopped",
}
