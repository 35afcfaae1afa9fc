package scenario

// DiskAlarm raises the broker's disk free limit above the free disk
// space (rabbit_disk_monitor:set_disk_free_limit through rabbitmqctl
// eval, read first), which blocks every publishing connection
// (connection.blocked; https://www.rabbitmq.com/docs/disk-alarms,
// rabbitmq-server#880), and restores the limit read after Down.
const DiskAlarm Action = "disk-alarm"

// diskAlarmSpec: down (a duration, default 5s) before the limit is
// restored in place.
var diskAlarmSpec = ActionSpec{
	Name:     DiskAlarm,
	Params:   []Param{ParamDown},
	Recovers: true, Leaves: "alarmed", Repeatable: true, OnPublishing: true, BrokerDown: true,
	While: "while the broker was under a disk alarm",
}
