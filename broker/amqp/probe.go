package amqp

import (
	"context"
	"errors"
	"fmt"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/rmqtorture/rmqtorture/engine"
)

// ConfirmThrough publishes one persistent probe message, message id id,
// through a connection to node (1-based; the run's broker when 0) to the
// queue under test (the durable exchange, routing key queue), mandatory,
// on a channel in confirm mode, and waits within ctx for its publisher
// confirm. A basic.return (nothing routed it) or a basic.nack is an error;
// so is a connection or channel that closes first. The drain and live
// consumers take the probe and count nothing of it (metrics.IsProbeID).
func (a *Traffic) ConfirmThrough(ctx context.Context, node int, queue, id string) error {
	return a.withChannelOn(ctx, "probe", node, func(ch *amqp.Channel) error {
		if err := ch.Confirm(false); err != nil {
			return fmt.Errorf("confirm mode: %w", err)
		}
		confirms := ch.NotifyPublish(make(chan amqp.Confirmation, 1))
		returns := ch.NotifyReturn(make(chan amqp.Return, 1))
		msg := amqp.Publishing{DeliveryMode: amqp.Persistent, MessageId: id, ContentType: "application/json", Body: []byte(`{"probe":true}`)}
		if err := ch.PublishWithContext(ctx, Exchange, queue, true, false, msg); err != nil {
			return fmt.Errorf("publish the probe: %w", err)
		}
		returned := false
		for {
			select {
			case _, ok := <-returns:
				if !ok {
					returns = nil // closed with the channel: the confirms say so
					continue
				}
				returned = true
			case c, ok := <-confirms:
				switch {
				case !ok:
					return errors.New("the channel closed before the probe's confirm")
				case !c.Ack:
					return errors.New("basic.nack for the probe")
				case returned:
					return fmt.Errorf("basic.return for the probe: nothing routed it to %s", queue)
				}
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	})
}

var _ engine.Prober = (*Traffic)(nil)
