package scenario

// Reconnect is the explicit recovery of a disconnect step with
// manual_recovery (see Start): it puts the broker back on its network.
const Reconnect Action = "reconnect"

// reconnectSpec takes no parameter: it acts on what its fault acted on.
var reconnectSpec = ActionSpec{
	Name:       Reconnect,
	IsRecovery: true, Leaves: "up",
	While: "while the broker was being reconnected to its network",
}
