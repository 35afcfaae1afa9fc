package scenario

import "time"

// CrashConsumer makes the first live consumer crash before its ack: it
// stops processing and closes its connection with the deliveries it
// processed still unacknowledged, so the broker requeues them and hands
// them out again flagged redelivered. It comes back after Down. A
// client-side fault; needs consumers.
const CrashConsumer Action = "crash-consumer"

// crashConsumerSpec: down (a duration, default 2s), how long the crashed
// consumer stays away.
var crashConsumerSpec = ActionSpec{
	Name:   CrashConsumer,
	Params: []Param{ParamDown},
	Leaves: "up", ClientSide: true, Repeatable: true, CrashesConsumer: true,
	While: "while a consumer had crashed",
	defaults: func(d defaulter, fp string, f *Fault) {
		d.dur(fp+"down", &f.Down, 2*time.Second)
	},
}
