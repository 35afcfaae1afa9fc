package scenario

// Unpause is the explicit recovery of a pause step with manual_recovery
// (see Start): it thaws the frozen broker.
const Unpause Action = "unpause"

// unpauseSpec takes no parameter: it acts on what its fault acted on.
var unpauseSpec = ActionSpec{
	Name:       Unpause,
	IsRecovery: true, Leaves: "up",
	While: "while the broker was being unpaused",
}
