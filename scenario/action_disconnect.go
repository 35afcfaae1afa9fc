package scenario

import "github.com/rmqtorture/rmqtorture/metrics"

// Disconnect removes the broker from its Docker network: every client
// link fails at once while the node keeps running; reconnected after Down.
const Disconnect Action = "disconnect"

// disconnectSpec: down (a duration, default 5s) before reconnect.
var disconnectSpec = ActionSpec{
	Name:        Disconnect,
	Params:      []Param{ParamDown},
	RecoveredBy: Reconnect, Recovers: true, Leaves: "disconnected", State: metrics.StateDisconnected,
	Repeatable: true, DefaultTarget: TargetLeader, OnPublishing: true, BrokerDown: true,
	While: "while the broker was cut from its network",
}
