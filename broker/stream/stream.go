// Package stream is the traffic of streams (queue.type: stream) over the
// stream protocol, with RabbitMQ's own client
// github.com/rabbitmq/rabbitmq-stream-go-client: over AMQP 0.9.1 a
// stream is read from an offset and never emptied by acks, so its traffic
// here speaks the stream protocol (https://www.rabbitmq.com/docs/streams).
// The stream is declared and deleted over AMQP like any queue.
package stream

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/rabbitmq/rabbitmq-stream-go-client/pkg/logs"
	"github.com/rabbitmq/rabbitmq-stream-go-client/pkg/stream"

	brokeramqp "github.com/rmqtorture/rmqtorture/broker/amqp"
	"github.com/rmqtorture/rmqtorture/engine"
)

// Traffic implements engine.Traffic for a stream: Declare, Delete and
// Consume are AMQP's (a stream is declared as x-queue-type stream); Publish
// and Drain speak the stream protocol.
type Traffic struct {
	*brokeramqp.Traffic
	// Addr returns the broker's stream protocol address ("" when it
	// publishes none).
	Addr func() string
	// Addrs, set for a cluster instead of Addr, returns every node's
	// stream protocol address in node order (empty when they publish
	// none). Each node advertises its own address, so the client reaches
	// the node that leads a stream (to publish) or holds a replica (to
	// read) as the stream's metadata names it.
	Addrs func() []string
}

// errNoStreamPort: the broker publishes no stream port.
var errNoStreamPort = errors.New("the broker publishes no stream port (5552/tcp): create it with streams enabled, or publish 5552 and enable rabbitmq_stream on the container you attach to")

// Consume refuses live consumers: the validator keeps them off streams.
func (s *Traffic) Consume(context.Context, engine.ConsumePlan) (engine.LiveConsumers, error) {
	return nil, errors.New("live consumers of a stream are not supported")
}

var streamLogOnce sync.Once

// streamRPCTimeout bounds every stream protocol request that waits for the
// broker, the connection handshake first: Docker's proxy accepts a
// connection while the restarted node is not listening yet, and the
// client's default (10 s) then holds a reconnect for as long.
const streamRPCTimeout = 5 * time.Second

// environment connects to the broker's stream port with the AMQP URL's
// credentials and vhost. On a single broker the address resolver pins
// every connection to its address whatever the broker advertises (an
// attached container may advertise its own hostname); on a cluster the
// locator connection tries the nodes in order and every producer and
// consumer goes where the stream's metadata says, as each node advertises
// its own published address (enableStreams in broker/docker). The
// heartbeat is 10 s, as AMQP's. Socket buffers are left to the kernel, as
// amqp091-go leaves them: the client's default 8 KiB receive buffer held a
// stream read through Docker's userland proxy to ~2,000 msg/s with pauses
// of seconds (the kernel's: 20,000 orders in well under a second).
//
// A cluster's nodes are tried one environment each, in order, not as one
// environment's list: the client's own fallback to the next address
// writes the locator's broker while the failed connection's reader still
// reads it (a data race in rabbitmq-stream-go-client v1.8.3,
// environment.go NewEnvironment against client.go Close, seen by the race
// detector after a power cut of all nodes).
func (s *Traffic) environment() (*stream.Environment, error) {
	addrs := s.addrs()
	if len(addrs) <= 1 {
		return s.environmentOn(addrs)
	}
	var errs []error
	for _, a := range addrs {
		env, err := s.environmentOn([]string{a})
		if err == nil {
			return env, nil
		}
		errs = append(errs, err)
	}
	return nil, errors.Join(errs...)
}

// addrs are the stream protocol addresses to connect to: every node's on
// a cluster, the broker's otherwise (none when it publishes no port).
func (s *Traffic) addrs() []string {
	switch {
	case s.Addrs != nil:
		return s.Addrs()
	case s.Addr != nil:
		if a := s.Addr(); a != "" {
			return []string{a}
		}
	}
	return nil
}

// environmentOn is environment with its locator on addrs, tried in order.
func (s *Traffic) environmentOn(addrs []string) (*stream.Environment, error) {
	streamLogOnce.Do(func() { logs.SetLogger(clientLog{s.Log}) })
	if len(addrs) == 0 {
		return nil, errNoStreamPort
	}
	uri, err := amqp.ParseURI(s.URL())
	if err != nil {
		return nil, err
	}
	vhost := uri.Vhost
	if vhost == "" {
		vhost = "/"
	}
	opts := stream.NewEnvironmentOptions().
		SetRPCTimeout(streamRPCTimeout).SetRequestedHeartbeat(10 * time.Second).
		SetReadBuffer(0).SetWriteBuffer(0)
	for _, a := range addrs {
		h, ps, err := net.SplitHostPort(a)
		if err != nil {
			return nil, err
		}
		opts.ConnectionParameters = append(opts.ConnectionParameters, &stream.Broker{Scheme: "rabbitmq-stream",
			Host: h, Port: ps, User: uri.Username, Password: uri.Password, Vhost: vhost})
	}
	if s.Addrs == nil {
		h, ps, _ := net.SplitHostPort(addrs[0])
		port, err := strconv.Atoi(ps)
		if err != nil {
			return nil, err
		}
		opts.SetAddressResolver(stream.AddressResolver{Host: h, Port: port})
	}
	return stream.NewEnvironment(opts)
}

// closeEnv closes an environment without waiting on a broker that does not
// answer: the client closes producers and consumers (their channels) before
// its last requests, which are bounded by streamRPCTimeout anyway.
func closeEnv(env *stream.Environment) {
	go func() { _ = env.Close() }()
}

// clientLog sends the stream client's own log lines to rmqtorture's log at
// debug level: it reports every broken socket of a kill as an error.
type clientLog struct{ l *slog.Logger }

func (c clientLog) Info(m string, v ...any)  { c.l.Debug("stream client: " + fmt.Sprintf(m, v...)) }
func (c clientLog) Error(m string, v ...any) { c.l.Debug("stream client: " + fmt.Sprintf(m, v...)) }
func (c clientLog) Debug(m string, v ...any) { c.l.Debug("stream client: " + fmt.Sprintf(m, v...)) }
func (c clientLog) Warn(m string, v ...any)  { c.l.Debug("stream client: " + fmt.Sprintf(m, v...)) }
