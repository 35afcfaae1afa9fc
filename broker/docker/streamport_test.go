package docker

import (
	"fmt"
	"reflect"
	"strconv"
	"testing"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/go-connections/nat"
)

// A container created with streams enables the plugin at start, publishes
// 5552 on 127.0.0.1 and advertises that very port; without streams nothing
// changes.
func TestEnableStreams(t *testing.T) {
	newCfg := func() (*container.Config, *container.HostConfig) {
		return &container.Config{ExposedPorts: nat.PortSet{amqpPort: {}}},
			&container.HostConfig{PortBindings: nat.PortMap{amqpPort: {{HostIP: "127.0.0.1", HostPort: "1"}}}}
	}
	cfg, host := newCfg()
	if p, err := enableStreams(false, "", cfg, host); p != 0 || err != nil || len(cfg.ExposedPorts) != 1 || len(host.PortBindings) != 1 || cfg.Env != nil {
		t.Fatalf("streams off changed the container: port %d err %v %+v %+v", p, err, cfg, host)
	}
	cfg, host = newCfg()
	p, err := enableStreams(true, "", cfg, host)
	if err != nil || p <= 0 {
		t.Fatalf("port %d err %v", p, err)
	}
	if _, ok := cfg.ExposedPorts[streamPort]; !ok {
		t.Errorf("5552 not exposed: %v", cfg.ExposedPorts)
	}
	if got, want := host.PortBindings[streamPort], []nat.PortBinding{{HostIP: "127.0.0.1", HostPort: strconv.Itoa(p)}}; !reflect.DeepEqual(got, want) {
		t.Errorf("binding %v, want %v", got, want)
	}
	want := []string{"RABBITMQ_ENABLED_PLUGINS=rabbitmq_stream",
		fmt.Sprintf(`RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS=-rabbitmq_stream advertised_host "127.0.0.1" -rabbitmq_stream advertised_port %d`, p)}
	if !reflect.DeepEqual(cfg.Env, want) {
		t.Errorf("env %q, want %q", cfg.Env, want)
	}
}

// An attached container's stream port is read like its AMQP port; none
// published leaves StreamAddr empty (TestStreamWithoutAPort: the stream
// traffic then fails with a hint).
func TestReadStreamPort(t *testing.T) {
	c := &Container{Name: "b"}
	info := container.InspectResponse{NetworkSettings: &container.NetworkSettings{}}
	info.NetworkSettings.Ports = nat.PortMap{amqpPort: {{HostIP: "127.0.0.1", HostPort: "5999"}},
		streamPort: {{HostIP: "::1", HostPort: "2"}, {HostIP: "0.0.0.0", HostPort: "6001"}}}
	if err := c.readPort(info); err != nil || c.StreamAddr() != "127.0.0.1:6001" {
		t.Fatalf("%v %q", err, c.StreamAddr())
	}
	delete(info.NetworkSettings.Ports, streamPort)
	if err := c.readPort(info); err != nil || c.StreamAddr() != "" {
		t.Fatalf("no stream port: %v %q", err, c.StreamAddr())
	}
}
