package scenario

// StopApp stops the RabbitMQ application on the target node and starts it
// again after Down (rabbitmqctl stop_app, then start_app), as operators do
// before maintenance: the Erlang node keeps running, but its listeners
// close, every client connection on the node is closed and its queues stop;
// start_app recovers them from disk (https://www.rabbitmq.com/docs/man/rabbitmqctl.8#stop_app).
// No container is stopped, so the way back is the application's boot
// only: a cheaper outage than stop or kill, which restart the node.
const StopApp Action = "stop-app"

// stopAppSpec: down (a duration, default 5s) before start_app. The
// downtime is timed from a publisher's lost connection to its next one.
var stopAppSpec = ActionSpec{
	Name:     StopApp,
	Params:   []Param{ParamDown},
	Recovers: true, Leaves: "app stopped", Repeatable: true, DefaultTarget: TargetLeader,
	OnPublishing: true, BrokerDown: true, DowntimeFromConnections: true,
	While: "while the broker's application was stopped",
	Tool: &ToolPlay{
		Inject:    []string{"rabbitmqctl", "-q", "stop_app"},
		Recover:   []string{"rabbitmqctl", "-q", "start_app"},
		Applied:   "rabbitmqctl stop_app: the RabbitMQ application stopped, its node still running",
		Recovered: "rabbitmqctl start_app: the RabbitMQ application started again",
	},
}
