// Package amqp is the broker layer's AMQP 0.9.1 traffic (amqp091-go):
// topology, publishers, confirms, consumers and the drain, against one
// broker or a cluster's nodes. It knows nothing of containers: the engine
// gives it the brokers' URLs.
package amqp

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/rmqtorture/rmqtorture/broker/internal/amqpx"
	"github.com/rmqtorture/rmqtorture/broker/internal/traffic"
	"github.com/rmqtorture/rmqtorture/engine"
	"github.com/rmqtorture/rmqtorture/scenario"
)

// Exchange is the durable direct exchange every burst publishes to; each
// burst's queue is bound to it with its own name as routing key.
const Exchange = "rmqtorture.orders"

// AMQP implements engine.Traffic against one broker, or a cluster's
// nodes, over AMQP 0.9.1.
type Traffic struct {
	// URL returns the broker's current AMQP URL (it can change when an
	// attached container starts again).
	URL func() string
	// URLs, set for a cluster, returns each node's AMQP URL in node order
	// (index 0 is node 1). Every connection then fails over from its
	// preferred node to the next ones in node order, as client libraries
	// do with a list of URIs.
	URLs func() []string
	Log  *slog.Logger
}

func (a *Traffic) dial(name string) (*amqp.Connection, error) {
	conn, _, err := a.dialFrom(name, 1, 0)
	return conn, err
}

// dialFrom connects to node prefer (1-based) of a cluster, else to the
// next nodes in node order, wrapping around; it returns the node it
// reached. On a single broker it dials URL and returns node 0. Each try is
// bounded by amqpx.DialTimeout; the error names every node tried. heartbeat > 0
// replaces dialConfig's 10 s heartbeat.
func (a *Traffic) dialFrom(name string, prefer int, heartbeat time.Duration) (*amqp.Connection, int, error) {
	cfg := dialConfig(name)
	if heartbeat > 0 {
		cfg.Heartbeat = heartbeat
	}
	if a.URLs == nil {
		conn, err := amqp.DialConfig(a.URL(), cfg)
		return conn, 0, err
	}
	urls := a.URLs()
	var errs []error
	for k := range urls {
		i := (max(prefer, 1) - 1 + k) % len(urls)
		conn, err := amqp.DialConfig(urls[i], cfg)
		if err == nil {
			return conn, i + 1, nil
		}
		errs = append(errs, fmt.Errorf("%s: %w", scenario.NodeName(i+1), err))
	}
	return nil, 0, errors.Join(errs...)
}

// dialConfig is every client connection's configuration: bounded dial,
// 10 s heartbeat, named rmqtorture-<name>.
func dialConfig(name string) amqp.Config {
	return amqp.Config{
		Dial:       amqp.DefaultDial(amqpx.DialTimeout),
		Heartbeat:  10 * time.Second,
		Properties: amqp.Table{"connection_name": "rmqtorture-" + name},
	}
}

// dialNode connects to node (1-based) of a cluster and to no other: what
// is declared through the connection must land on that node. Node 0, or a
// single broker, dials as dial does.
func (a *Traffic) dialNode(name string, node int) (*amqp.Connection, error) {
	if node <= 0 || a.URLs == nil {
		return a.dial(name)
	}
	urls := a.URLs()
	if node > len(urls) {
		return nil, fmt.Errorf("no node %d: the cluster has %d", node, len(urls))
	}
	conn, err := amqp.DialConfig(urls[node-1], dialConfig(name))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", scenario.NodeName(node), err)
	}
	return conn, nil
}

// withChannel runs fn on a fresh connection and channel, closed afterwards.
func (a *Traffic) withChannel(ctx context.Context, name string, fn func(*amqp.Channel) error) error {
	return a.withChannelOn(ctx, name, 0, fn)
}

// withChannelOn is withChannel on a connection to node (dialNode).
func (a *Traffic) withChannelOn(ctx context.Context, name string, node int, fn func(*amqp.Channel) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	conn, err := a.dialNode(name, node)
	if err != nil {
		return fmt.Errorf("connect to broker: %w", err)
	}
	defer amqpx.CloseConn(conn)
	ch, err := conn.Channel()
	if err != nil {
		return fmt.Errorf("open channel: %w", err)
	}
	done := make(chan error, 1)
	go func() { done <- fn(ch) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		amqpx.CloseConn(conn) // unblocks fn
		return ctx.Err()
	}
}

// Declare declares the durable exchange and a durable queue of the given
// type bound to it, and refuses a queue that already holds messages: a stale
// queue makes every count a lie. On a cluster the queue is declared through
// a connection to q.Node and its ".also" companion through one to
// q.AlsoBindNode (node 1 when unset), and its dead-letter queue through
// one to q.DeadLetterNode (q.Node when unset), to those nodes only: a classic
// queue lives on the node it was declared through, as queue_leader_locator
// defaults to client-local, "the node the client is connected to"
// (https://www.rabbitmq.com/docs/4.0/clustering#replica-placement).
func (a *Traffic) Declare(ctx context.Context, q engine.QueueSpec) error {
	alsoApart := q.AlsoBindType != "" && max(q.AlsoBindNode, 1) != max(q.Node, 1)
	// The dead-letter queue first, through its own node when it has one:
	// the queue under test points at it.
	dlqApart := q.DeadLetterQueue != "" && q.DeadLetterNode != 0 && q.DeadLetterNode != max(q.Node, 1)
	if dlqApart {
		if err := a.withChannelOn(ctx, "setup", q.DeadLetterNode, func(ch *amqp.Channel) error { return declareDeadLetter(ch, q) }); err != nil {
			return err
		}
	}
	err := a.withChannelOn(ctx, "setup", q.Node, func(ch *amqp.Channel) error {
		if err := ch.ExchangeDeclare(Exchange, amqp.ExchangeDirect, true, false, false, false, nil); err != nil {
			return fmt.Errorf("declare exchange %q: %w", Exchange, err)
		}
		args := setArguments(amqp.Table{"x-queue-type": string(q.Type)}, q.Arguments)
		if q.DeadLetterQueue != "" {
			if !dlqApart {
				if err := declareDeadLetter(ch, q); err != nil {
					return err
				}
			}
			args["x-dead-letter-exchange"] = DeadLetterExchange
			args["x-dead-letter-routing-key"] = q.DeadLetterQueue
		}
		if q.RetryQueue != "" {
			// Expired retries go back to the work queue through the default
			// exchange (dead-lettering on x-message-ttl).
			retry := amqp.Table{"x-queue-type": string(q.Type), "x-message-ttl": q.RetryDelay.Milliseconds(),
				"x-dead-letter-exchange": "", "x-dead-letter-routing-key": q.Name}
			if err := declareEmpty(ch, q.RetryQueue, true, retry, q.Shared); err != nil {
				return err
			}
		}
		if err := declareBound(ch, q.Name, q.Name, q.Durable, args, q.Shared); err != nil {
			return err
		}
		if q.AlsoBindType != "" && !alsoApart {
			return declareAlso(ch, q)
		}
		return nil
	})
	if err != nil || !alsoApart {
		return err
	}
	return a.withChannelOn(ctx, "setup", q.AlsoBindNode, func(ch *amqp.Channel) error { return declareAlso(ch, q) })
}

// declareDeadLetter declares the dead-letter exchange and q's dead-letter
// queue bound to it, of q.DeadLetterType (q.Type when unset).
func declareDeadLetter(ch *amqp.Channel, q engine.QueueSpec) error {
	if err := ch.ExchangeDeclare(DeadLetterExchange, amqp.ExchangeDirect, true, false, false, false, nil); err != nil {
		return fmt.Errorf("declare exchange %q: %w", DeadLetterExchange, err)
	}
	t := cmp.Or(q.DeadLetterType, q.Type)
	dlq := setArguments(amqp.Table{"x-queue-type": string(t)}, q.DeadLetterArguments)
	return declareBoundTo(ch, DeadLetterExchange, q.DeadLetterQueue, q.DeadLetterQueue, true, dlq, q.Shared)
}

// declareAlso declares q's ".also" companion, bound with q's routing key.
func declareAlso(ch *amqp.Channel, q engine.QueueSpec) error {
	return declareBound(ch, q.Name+".also", q.Name, true, amqp.Table{"x-queue-type": string(q.AlsoBindType)}, q.Shared)
}

// setArguments adds a scenario's x-arguments to t and returns it.
func setArguments(t amqp.Table, args map[string]any) amqp.Table {
	for k, v := range args {
		if n, ok := v.(int); ok {
			t[k] = int64(n) // AMQP tables carry long longs; int is not a table type
		} else {
			t[k] = v
		}
	}
	return t
}

// declareEmpty declares a queue and refuses one that already holds messages:
// a stale queue makes every count a lie. A shared queue (the parts of a
// split run publish into it in turn) may hold the other parts' messages:
// there a stale queue shows as unexpected deliveries when check merges
// the parts.
func declareEmpty(ch *amqp.Channel, name string, durable bool, args amqp.Table, shared bool) error {
	decl, err := ch.QueueDeclare(name, durable, false, false, false, args)
	if err != nil {
		return fmt.Errorf("declare queue %q (%v): %w", name, args, err)
	}
	if decl.Messages > 0 && !shared {
		return fmt.Errorf("queue %q already holds %d messages; rmqtorture needs an empty queue", name, decl.Messages)
	}
	return nil
}

func declareBound(ch *amqp.Channel, name, key string, durable bool, args amqp.Table, shared bool) error {
	return declareBoundTo(ch, Exchange, name, key, durable, args, shared)
}

func declareBoundTo(ch *amqp.Channel, exchange, name, key string, durable bool, args amqp.Table, shared bool) error {
	if err := declareEmpty(ch, name, durable, args, shared); err != nil {
		return err
	}
	if err := ch.QueueBind(name, key, exchange, false, nil); err != nil {
		return fmt.Errorf("bind queue %q to %q: %w", name, exchange, err)
	}
	return nil
}

// Delete deletes a queue and its companions (".also", ".dlq", ".retry"), if
// any.
func (a *Traffic) Delete(ctx context.Context, queue string) error {
	return a.withChannel(ctx, "setup", func(ch *amqp.Channel) error {
		for _, q := range []string{queue, queue + ".also", queue + ".dlq", queue + ".retry"} {
			if _, err := ch.QueueDelete(q, false, false, false); err != nil { // absent is fine: delete is idempotent
				return err
			}
		}
		return nil
	})
}

// drainAckEvery is how many deliveries the drainer acknowledges at once
// (basic.ack with multiple); prefetch is twice that.
const drainAckEvery = 250

// Drain consumes the queue with manual acks, recording every delivery's
// message_id (and redelivered flag) in the ledger. It stops when nothing
// arrived for d.Idle, every confirmed id has been seen and at least one
// message arrived, or when nothing arrived for d.LostWait (the missing
// confirmed ids are then lost). Consume failures (a quorum queue
// without a leader right after a restart) are retried until ctx's deadline,
// which is returned as an error: the drain is then incomplete.
func (a *Traffic) Drain(ctx context.Context, d engine.DrainPlan) error {
	return traffic.RetryDrain(ctx, strconv.Quote(d.Queue), func() (bool, error) { return a.drainOnce(ctx, d) }, nil, func(err error) {
		a.Log.Debug("drain retry", "queue", d.Queue, "err", err)
	})
}

// drainOnce makes one attempt at draining d.Queue on a fresh connection. It
// returns true when the drain is complete (or the queue is gone), false and
// the error otherwise, for Drain to retry.
func (a *Traffic) drainOnce(ctx context.Context, d engine.DrainPlan) (bool, error) {
	conn, err := a.dial("drain")
	if err != nil {
		return false, err
	}
	defer amqpx.CloseConn(conn)
	// Cancelling ctx closes the connection: no basic.ack or other call
	// outlives the drain's deadline.
	defer context.AfterFunc(ctx, func() { amqpx.CloseConn(conn) })()
	ch, deliveries, err := openDrain(ctx, conn, d.Queue)
	var ae *amqp.Error
	if errors.As(err, &ae) && ae.Code == amqp.NotFound {
		// The queue itself is gone (a non-durable queue after a restart):
		// that is a complete answer: nothing in it survived.
		a.Log.Info("queue gone after the fault: nothing to drain", "queue", d.Queue, "reason", ae.Reason)
		return true, nil
	}
	if err != nil {
		return false, err
	}
	return consumeDrain(ctx, ch, deliveries, d, func() (int, error) { return readyMessages(ctx, conn, d.Queue) })
}

// readyMessages is the queue's count of ready messages, as a passive
// queue.declare's declare-ok gives it, on a channel of its own within
// amqpx.RPCTimeout (conn is closed if the broker does not answer).
func readyMessages(ctx context.Context, conn *amqp.Connection, queue string) (n int, err error) {
	err = amqpx.Bounded(ctx, amqpx.RPCTimeout, func() { amqpx.CloseConn(conn) }, func() error {
		ch, err := conn.Channel()
		if err != nil {
			return err
		}
		defer ch.Close()
		q, err := ch.QueueDeclarePassive(queue, true, false, false, false, nil)
		n = q.Messages
		return err
	})
	return n, err
}

// openDrain opens a channel on conn with a prefetch of 2×drainAckEvery and
// starts consuming queue with manual acks, within amqpx.RPCTimeout (conn is closed
// if the broker does not answer in time).
func openDrain(ctx context.Context, conn *amqp.Connection, queue string) (ch *amqp.Channel, deliveries <-chan amqp.Delivery, err error) {
	err = amqpx.Bounded(ctx, amqpx.RPCTimeout, func() { amqpx.CloseConn(conn) }, func() (err error) {
		if ch, err = conn.Channel(); err != nil {
			return err
		}
		if err := ch.Qos(2*drainAckEvery, 0, false); err != nil {
			return err
		}
		deliveries, err = ch.Consume(queue, "rmqtorture-drain", false, false, false, false, nil)
		return err
	})
	return ch, deliveries, err
}

// consumeDrain records every delivery in d.Ledger, acking every
// drainAckEvery delivery tags (multiple) and whenever the queue has been idle
// for d.Idle. It returns true once the queue has been idle for d.Idle and d
// is satisfied, or idle for d.LostWait and empty by ready's count.
//
// A queue idle for d.LostWait that still holds ready messages is not
// serving them (a quorum queue whose leader cannot deliver after a
// partition or a restart): what it holds is not lost, so consumeDrain
// returns an error, and Drain retries on a fresh connection until the
// drain's deadline; past it the drain is incomplete and the missing ids
// are unverified, never lost. So is a count that cannot be read.
func consumeDrain(ctx context.Context, ch *amqp.Channel, deliveries <-chan amqp.Delivery, d engine.DrainPlan, ready func() (int, error)) (bool, error) {
	lastSeen := time.Now()
	gotAny := false
	var unacked uint64
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	ack := func() error {
		if unacked == 0 {
			return nil
		}
		err := ch.Ack(unacked, true)
		unacked = 0
		return err
	}
	for {
		select {
		case m, ok := <-deliveries:
			if !ok {
				return false, errors.New("drain channel closed")
			}
			if d.DeadLetter {
				d.Ledger.DeadLettered(m.MessageId)
				if d.OnDeadLetter != nil {
					reason, count := latestDeath(m.Headers)
					d.OnDeadLetter(m.MessageId, reason, count)
				}
			} else {
				d.Ledger.DeliveredAttempt(m.MessageId, m.Redelivered, deliveryAttempt(m.Headers))
				if d.OnBody != nil {
					d.OnBody(len(m.Body))
				}
			}
			gotAny = true
			lastSeen = time.Now()
			unacked = m.DeliveryTag
			if m.DeliveryTag%drainAckEvery == 0 {
				if err := ack(); err != nil {
					return false, err
				}
			}
		case <-tick.C:
			idle := time.Since(lastSeen)
			if idle < d.Idle {
				continue
			}
			if err := ack(); err != nil {
				return false, err
			}
			// Nothing delivered yet although something was sent: a quorum
			// queue may still be electing its leader after a restart, so an
			// empty-looking queue gets the full LostWait before it is believed.
			if d.Satisfied() && (gotAny || d.AllowEmpty || d.Ledger.Sent() == 0) {
				return true, nil
			}
			if idle >= d.LostWait {
				n, err := ready()
				switch {
				case err != nil:
					return false, fmt.Errorf("nothing delivered for %s, and the queue's message count could not be read: %w", idle.Round(time.Second), err)
				case n > 0:
					return false, fmt.Errorf("nothing delivered for %s, yet the queue holds %d ready messages: it is not serving them", idle.Round(time.Second), n)
				}
				return true, nil
			}
		case <-ctx.Done():
			_ = ack()
			return false, ctx.Err()
		}
	}
}
