package scenario

// Maintenance puts the target node in maintenance mode and takes it out
// again after Down (rabbitmq-upgrade drain, then revive), the step
// RabbitMQ's upgrade guide gives before a node is stopped
// (https://www.rabbitmq.com/docs/upgrade#maintenance-mode): the node
// suspends its client listeners, closes every client connection it holds
// and hands its quorum queue leaders to other nodes, while it keeps
// running. revive resumes the listeners; leaders are not moved back.
const Maintenance Action = "maintenance"

// maintenanceSpec: down (a duration, default 5s) before revive. The
// downtime is timed from a publisher's lost connection to its next one.
var maintenanceSpec = ActionSpec{
	Name:     Maintenance,
	Params:   []Param{ParamDown},
	Recovers: true, Leaves: "in maintenance", Repeatable: true, DefaultTarget: TargetLeader,
	OnPublishing: true, BrokerDown: true, DowntimeFromConnections: true,
	While: "while the node was in maintenance mode",
	Tool: &ToolPlay{
		Inject:    []string{"rabbitmq-upgrade", "-q", "drain"},
		Recover:   []string{"rabbitmq-upgrade", "-q", "revive"},
		Applied:   "rabbitmq-upgrade drain: the node in maintenance mode, its listeners suspended and its client connections closed",
		Recovered: "rabbitmq-upgrade revive: the node out of maintenance mode, its listeners resumed",
	},
}
