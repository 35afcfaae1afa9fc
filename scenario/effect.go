package scenario

// EffectDuringCall reports whether the action's effect begins during its
// call, before the call returns: kill (the signal lands during the Docker
// API call), stop and restart (the broker shuts down during it). Such a
// fault is timed from the start of its call (streadway/amqp#421;
// rabbitmq-dotnet-client#1928). The action table says it (FromTrigger).
func (a Action) EffectDuringCall() bool { return actionTable[a].FromTrigger }

// While names the broker's state while a fault with this action is in
// effect, for close reasons and timeline details: "while the broker was
// being killed".
func (a Action) While() string {
	switch a {
	case Kill:
		return "while the broker was being killed"
	case Stop:
		return "while the broker was being stopped"
	case Restart:
		return "while the broker was being restarted"
	case Pause:
		return "while the broker was paused"
	case Disconnect:
		return "while the broker was cut from its network"
	case MemoryAlarm:
		return "while the broker was under a memory alarm"
	case CloseConnections:
		return "while the broker was closing every client connection"
	}
	return "while a " + string(a) + " fault was in effect"
}
