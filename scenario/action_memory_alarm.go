package scenario

// MemoryAlarm sets the broker's memory high watermark far below its use
// (rabbitmqctl set_vm_memory_high_watermark through the Docker exec API),
// which blocks every publishing connection (connection.blocked), and
// restores the previous watermark after Down.
const MemoryAlarm Action = "memory-alarm"

// memoryAlarmSpec: down (a duration, default 5s) before the watermark is
// restored in place.
var memoryAlarmSpec = ActionSpec{
	Name:     MemoryAlarm,
	Params:   []Param{ParamDown},
	Recovers: true, Leaves: "alarmed", Repeatable: true, OnPublishing: true, BrokerDown: true,
	While: "while the broker was under a memory alarm",
}
