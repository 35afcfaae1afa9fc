package scenario

// Start, Unpause and Reconnect are the explicit recoveries of a step with
// manual_recovery (kill or stop, pause, disconnect). Start starts the
// container a kill or stop left stopped.
const Start Action = "start"

// startSpec takes no parameter: it acts on what its fault acted on.
var startSpec = ActionSpec{
	Name:       Start,
	IsRecovery: true, Leaves: "up", StartsContainer: true,
	While: "while the broker was being started",
}
