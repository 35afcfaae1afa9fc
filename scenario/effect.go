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
	if s := actionTable[a]; s.While != "" {
		return s.While
	}
	return "while a " + string(a) + " fault was in effect"
}
