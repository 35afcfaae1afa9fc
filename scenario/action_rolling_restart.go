package scenario

// RollingRestart stops and starts each node in turn (graceful, Grace),
// waiting after each until it accepts AMQP and the queue under test has
// all its members again (https://www.rabbitmq.com/docs/upgrade#rolling-upgrade).
// Cluster only; no Down.
const RollingRestart Action = "rolling-restart"

// rollingRestartSpec: grace (a duration, default 10s) before each node's
// SIGKILL.
var rollingRestartSpec = ActionSpec{
	Name:   RollingRestart,
	Params: []Param{ParamGrace},
	Leaves: "up", FromTrigger: true, Repeatable: true, ClusterOnly: true, DefaultTarget: TargetAll,
	OnPublishing: true, DowntimeFromConnections: true,
	While: "while the nodes were being restarted one by one",
}
