package docker

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/client"
	"github.com/docker/go-connections/nat"

	"github.com/rmqtorture/rmqtorture/scenario"
)

// The broker's AMQP port is read from the container's published ports:
// IPv4 loopback or any address, never an IPv6-only binding.
func TestReadPort(t *testing.T) {
	c := &Container{Name: "b"}
	info := container.InspectResponse{NetworkSettings: &container.NetworkSettings{}}
	info.NetworkSettings.Ports = nat.PortMap{amqpPort: {{HostIP: "::1", HostPort: "1"}, {HostIP: "127.0.0.1", HostPort: "5999"}}}
	if err := c.readPort(info); err != nil || c.URL() != "amqp://guest:guest@127.0.0.1:5999/" {
		t.Errorf("%v %s", err, c.URL())
	}
	info.NetworkSettings.Ports = nat.PortMap{amqpPort: {{HostIP: "::1", HostPort: "1"}}}
	if err := c.readPort(info); err == nil || !strings.Contains(err.Error(), "-p 127.0.0.1:5672:5672") {
		t.Errorf("IPv6 only: %v", err)
	}
	if err := c.readPort(container.InspectResponse{}); err == nil {
		t.Error("no network settings accepted")
	}
	if p, err := freePort(""); err != nil || p <= 0 {
		t.Errorf("free port %d %v", p, err)
	}
}

// Without a Docker Engine every container call fails with an error that
// names the container, and none hangs.
func TestContainerCallsWithoutDocker(t *testing.T) {
	cli, err := client.NewClientWithOpts(client.WithHost("tcp://"+strings.TrimSuffix(strings.TrimPrefix(closedPort(t), "amqp://guest:guest@"), "/")), client.WithAPIVersionNegotiation())
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	c := &Container{cli: cli, log: quiet, ID: "x", Name: "rmqt-x", Owned: true}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	bt := scenario.BrokerTarget()
	for name, call := range map[string]func() error{
		"kill": func() error { return c.Kill(ctx, bt, "SIGKILL") }, "stop": func() error { return c.Stop(ctx, bt, time.Second) },
		"restart": func() error { return c.Restart(ctx, bt, time.Second) }, "pause": func() error { return c.Pause(ctx, bt) },
		"unpause": func() error { return c.Unpause(ctx, bt) }, "disconnect": func() error { return c.Disconnect(ctx, bt) },
		"remove": func() error { return c.Remove(ctx) },
	} {
		if err := call(); err == nil || !strings.Contains(err.Error(), "rmqt-x") {
			t.Errorf("%s: %v, want an error naming the container", name, err)
		}
	}
	if _, err := Leftovers(ctx, cli); err == nil {
		t.Error("leftovers without Docker")
	}
	if err := RemoveLeftover(ctx, cli, "x"); err == nil {
		t.Error("remove leftover without Docker")
	}
}
