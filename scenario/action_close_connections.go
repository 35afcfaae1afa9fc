package scenario

// CloseConnections makes the target node close every client connection
// it holds (rabbitmqctl close_all_connections --global), as an operator
// would; on a cluster, the other nodes' connections stay open.
const CloseConnections Action = "close-connections"

// closeConnectionsSpec takes no parameter: it is over when the call
// returns.
var closeConnectionsSpec = ActionSpec{
	Name:   CloseConnections,
	Leaves: "up", Repeatable: true, OnPublishing: true, AMQPOnly: true,
	While: "while the broker was closing every client connection",
}
