// Package amqpx holds the few AMQP 0.9.1 helpers both sides of the broker
// layer need: the Docker side logs in to read a broker's version and
// deletes or purges a queue for the operator; the traffic side publishes
// and drains. Both bound a call that waits for the broker, and close a
// connection without waiting forever, in the same way.
package amqpx

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// DialTimeout bounds the TCP connect and AMQP handshake of every connection.
const DialTimeout = 3 * time.Second

// CloseConn closes a connection without waiting forever on a broker that
// does not answer (the client library ignores contexts mid-write).
func CloseConn(c *amqp.Connection) {
	if c != nil && !c.IsClosed() {
		_ = c.CloseDeadline(time.Now().Add(2 * time.Second))
	}
}

// RPCTimeout bounds every AMQP call that waits for the broker's reply
// (channel.open, confirm.select, basic.qos, basic.consume): amqp091-go
// checks no context while it waits, and only the heartbeat (10 s, about
// 30 s before the connection is declared dead) would end the wait on a
// paused or partitioned broker.
const RPCTimeout = 10 * time.Second

// ErrNoReply marks a call that Bounded cut short.
var ErrNoReply = errors.New("no reply from the broker")

// Bounded runs fn, a call that waits for the broker, and calls abort (which
// must make fn return, e.g. by closing its connection) when fn has not
// returned within d or ctx ends first. It returns fn's error, wrapped with
// ErrNoReply when abort ran.
func Bounded(ctx context.Context, d time.Duration, abort func(), fn func() error) error {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	stop := context.AfterFunc(ctx, abort)
	err := fn()
	if !stop() { // abort ran (or is running): the connection is gone
		return fmt.Errorf("%w within %s: %w", ErrNoReply, d, errors.Join(err, ctx.Err()))
	}
	return err
}

// ServerVersion logs in at url and returns the broker's product and
// version from its connection.start server properties ("RabbitMQ 4.0.5"),
// "" when it cannot log in within 2 s.
func ServerVersion(url string) string {
	conn, err := amqp.DialConfig(url, amqp.Config{Dial: amqp.DefaultDial(2 * time.Second)})
	if err != nil {
		return ""
	}
	defer conn.CloseDeadline(time.Now().Add(2 * time.Second))
	product, _ := conn.Properties["product"].(string)
	version, _ := conn.Properties["version"].(string)
	return strings.TrimSpace(product + " " + version)
}
