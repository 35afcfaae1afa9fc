package scenario

import "github.com/rmqtorture/rmqtorture/metrics"

// Restart stops the broker gracefully and starts it at once (docker
// restart); no Down.
const Restart Action = "restart"

// restartSpec: grace (a duration, default 10s) before SIGKILL.
var restartSpec = ActionSpec{
	Name:   Restart,
	Params: []Param{ParamGrace},
	Leaves: "up", State: metrics.StateDown, FromTrigger: true, StartsContainer: true,
	Repeatable: true, DefaultTarget: TargetLeader, OnPublishing: true,
	While: "while the broker was being restarted",
}
