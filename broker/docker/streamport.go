package docker

// The container side of streams (broker/stream speaks their protocol):
// the stream plugin enabled and its port published.

import (
	"fmt"
	"net"
	"strconv"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/go-connections/nat"
)

// streamPort is the stream protocol's listener inside the container.
const streamPort = nat.Port("5552/tcp")

// enableStreams sets up a container about to be created (a broker, or one
// node of a cluster) for streams when on is set: the rabbitmq_stream plugin
// enabled at start (RABBITMQ_ENABLED_PLUGINS, so the image needs no
// change), 5552 published on a free port of address (127.0.0.1 unless
// named), and that address advertised to clients (rabbitmq_stream's
// advertised_host and advertised_port, the stream.advertised_* keys of
// rabbitmq.conf): a stream client connects to the host and port the
// broker advertises for a stream's leader or replica
// (https://www.rabbitmq.com/docs/stream-connections), and the container's
// own hostname and port are unreachable from the host. Each node of a
// cluster advertises its own port, so a client reaches whichever node the
// stream's metadata names. It returns the host port (0 when streams are
// off).
func enableStreams(on bool, address string, cfg *container.Config, host *container.HostConfig) (int, error) {
	if !on {
		return 0, nil
	}
	port, err := freePort(address)
	if err != nil {
		return 0, err
	}
	ip := hostIP(address) // an IP literal (CheckAddress): safe in an Erlang string
	cfg.ExposedPorts[streamPort] = struct{}{}
	host.PortBindings[streamPort] = []nat.PortBinding{{HostIP: ip, HostPort: strconv.Itoa(port)}}
	cfg.Env = append(cfg.Env, "RABBITMQ_ENABLED_PLUGINS=rabbitmq_stream",
		fmt.Sprintf(`RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS=-rabbitmq_stream advertised_host "%s" -rabbitmq_stream advertised_port %d`, ip, port))
	return port, nil
}

// readStreamPort reads the published stream port of an attached container
// (0 when it publishes none).
func (c *Container) readStreamPort(info container.InspectResponse) {
	c.streamHostPort.Store(0)
	for _, b := range info.NetworkSettings.Ports[streamPort] {
		if p, err := strconv.Atoi(b.HostPort); err == nil && reachableOn(b.HostIP, c.address) {
			c.streamHostPort.Store(int64(p))
			return
		}
	}
}

// StreamAddr is the broker's stream protocol address (on its host
// address, 127.0.0.1 unless the user named another), or "" when the container publishes no stream port.
func (c *Container) StreamAddr() string {
	p := c.streamHostPort.Load()
	if p == 0 {
		return ""
	}
	return net.JoinHostPort(hostIP(c.address), strconv.FormatInt(p, 10))
}

// StreamAddrs are the stream protocol addresses of the cluster's nodes, in
// node order, or nil when its nodes publish no stream port.
func (c *Cluster) StreamAddrs() []string {
	var out []string
	for _, n := range c.nodes {
		if a := n.StreamAddr(); a != "" {
			out = append(out, a)
		}
	}
	return out
}
