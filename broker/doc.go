// Package broker is the only layer that talks to Docker and AMQP, split by
// what it talks to: broker/docker (containers, networks, clusters, exec,
// images, engines), broker/amqp (topology, publisher, confirms, consumers,
// drain) and broker/stream. This package keeps what belongs to neither
// side: the operator's commands of a command step (Commands) and a broker
// rmqtorture did not start, reached over AMQP only (External).
package broker
