package docker

import (
	"context"
	"fmt"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/rmqtorture/rmqtorture/broker/internal/amqpx"
	"github.com/rmqtorture/rmqtorture/scenario"
)

// DeleteQueue deletes queue with every message in it (queue.delete, as an
// operator or a clean-up job would) and returns the message count the
// broker reported in queue.delete-ok. Over AMQP rather than rabbitmqctl:
// it lands within milliseconds, inside the burst, and the count comes with
// the reply. Bounded by ctx and amqpx.RPCTimeout.
func (c *Container) DeleteQueue(ctx context.Context, target scenario.Target, queue string) (int, error) {
	if err := single(target); err != nil {
		return 0, err
	}
	return c.operate(ctx, "delete queue "+queue, func(ch *amqp.Channel) (int, error) {
		return ch.QueueDelete(queue, false, false, false)
	})
}

// PurgeQueue removes every ready message of queue (queue.purge) and
// returns the count the broker reported in queue.purge-ok.
func (c *Container) PurgeQueue(ctx context.Context, target scenario.Target, queue string) (int, error) {
	if err := single(target); err != nil {
		return 0, err
	}
	return c.operate(ctx, "purge queue "+queue, func(ch *amqp.Channel) (int, error) {
		return ch.QueuePurge(queue, false)
	})
}

// operate runs one operator call on a fresh connection of its own (named
// rmqtorture-operator, so it is never mistaken for the publisher's),
// within amqpx.RPCTimeout and ctx.
func (c *Container) operate(ctx context.Context, what string, call func(*amqp.Channel) (int, error)) (int, error) {
	conn, err := amqp.DialConfig(c.URL(), amqp.Config{Dial: amqp.DefaultDial(amqpx.DialTimeout), Properties: amqp.Table{"connection_name": "rmqtorture-operator"}})
	if err != nil {
		return 0, fmt.Errorf("%s: connect to broker: %w", what, err)
	}
	defer amqpx.CloseConn(conn)
	var n int
	err = amqpx.Bounded(ctx, amqpx.RPCTimeout, func() { amqpx.CloseConn(conn) }, func() error {
		ch, err := conn.Channel()
		if err != nil {
			return err
		}
		n, err = call(ch)
		return err
	})
	if err != nil {
		return n, fmt.Errorf("%s: %w", what, err)
	}
	return n, nil
}
