package scenario

// PublishToMissingExchange makes the publisher send its next message to an
// exchange that does not exist: the broker closes the channel with 404
// NOT_FOUND (rabbitmq/amqp091-go#14). A client-side fault.
const PublishToMissingExchange Action = "publish-to-missing-exchange"

// publishToMissingExchangeSpec takes no parameter: one message, once.
var publishToMissingExchangeSpec = ActionSpec{
	Name:   PublishToMissingExchange,
	Leaves: "up", ClientSide: true, AMQPOnly: true,
	Once:  "one misrouted message per scenario",
	While: "after a publish to a missing exchange",
}
