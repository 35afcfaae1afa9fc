package scenario

import "github.com/rmqtorture/rmqtorture/metrics"

// Kill sends a signal (default SIGKILL) to the broker container, then
// starts it again after Down.
const Kill Action = "kill"

// killSpec: signal (a name of Signals, default SIGKILL) and down (a
// duration, default 5s), the time the broker stays stopped before start.
var killSpec = ActionSpec{
	Name:        Kill,
	Params:      []Param{ParamSignal, ParamDown},
	RecoveredBy: Start, Recovers: true, Leaves: "stopped", State: metrics.StateDown, FromTrigger: true,
	Repeatable: true, DefaultTarget: TargetLeader, OnPublishing: true, BrokerDown: true,
	While: "while the broker was being killed",
	defaults: func(d defaulter, fp string, f *Fault) {
		if !d.at(fp + "signal") {
			f.Signal = "SIGKILL"
		}
	},
}

// FirstKill is the index of the scenario's first kill step, or -1.
func (s *Scenario) FirstKill() int {
	for i, f := range s.Faults {
		if f.Action == Kill {
			return i
		}
	}
	return -1
}
