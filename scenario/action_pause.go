package scenario

import "github.com/rmqtorture/rmqtorture/metrics"

// Pause freezes the broker (cgroup freezer): connections hang rather than
// fail; unpaused after Down.
const Pause Action = "pause"

// pauseSpec: down (a duration, default 5s) before unpause.
var pauseSpec = ActionSpec{
	Name:        Pause,
	Params:      []Param{ParamDown},
	RecoveredBy: Unpause, Recovers: true, Leaves: "paused", State: metrics.StatePaused,
	Repeatable: true, DefaultTarget: TargetLeader, OnPublishing: true, BrokerDown: true,
	While: "while the broker was paused",
}
