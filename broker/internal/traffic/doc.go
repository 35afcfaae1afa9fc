// Package traffic is what the AMQP 0.9.1 publisher and drain
// (broker/amqp) and the stream protocol's (broker/stream) share, so that
// each rule is written once: the session that tags a connection's
// timeline events, the end of an epoch, the queue of ids to publish, the
// rate schedule, the settle signal, the reconnect backoff and the drain's
// retry loop. It talks to no broker itself.
package traffic
