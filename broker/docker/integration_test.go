package docker

// Integration tests: a real RabbitMQ container from the project's image,
// killed through the real Docker Engine API. They need a reachable Docker
// Engine and the image (scripts/build-broker-image.sh); -short skips them.

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/rmqtorture/rmqtorture/broker/internal/brokertest"
	"github.com/rmqtorture/rmqtorture/scenario"
)

func testImage() string { return brokertest.Image() }

var quiet = brokertest.Quiet

// startBroker creates a labelled broker container for one test and removes
// it when the test ends.
func startBroker(t *testing.T) (*Engine, *Container) {
	t.Helper()
	cli := testDocker(t)
	c := brokertest.Start(t, func(ctx context.Context, runID string) (*Container, error) {
		return Create(ctx, cli, quiet, CreateOptions{Image: testImage(), RunID: runID})
	})
	return cli, c
}

func TestContainerLifecycleKillStartSamePort(t *testing.T) {
	cli, c := startBroker(t)
	ctx := context.Background()
	info, err := cli.ContainerInspect(ctx, c.ID)
	if err != nil {
		t.Fatal(err)
	}
	if info.Config.Labels[LabelManaged] != "true" || info.Config.Labels[LabelRun] == "" || info.Config.Hostname != c.Name {
		t.Fatalf("labels %v hostname %q", info.Config.Labels, info.Config.Hostname)
	}
	bindings := info.HostConfig.PortBindings[amqpPort]
	if len(bindings) != 1 || bindings[0].HostIP != "127.0.0.1" {
		t.Fatalf("AMQP must be published on 127.0.0.1 only, got %+v", bindings)
	}
	addr := c.Addr()

	// A connected client sees the SIGKILL promptly.
	conn, err := amqp.Dial(c.URL())
	if err != nil {
		t.Fatal(err)
	}
	closed := conn.NotifyClose(make(chan *amqp.Error, 1))
	if err := c.Kill(ctx, scenario.BrokerTarget(), "SIGKILL"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("client did not notice the kill within 5 s")
	}
	info, _ = cli.ContainerInspect(ctx, c.ID)
	if info.State.Running || info.State.ExitCode != 137 {
		t.Fatalf("after SIGKILL: running=%v exit=%d, want stopped with 137", info.State.Running, info.State.ExitCode)
	}
	if _, err := amqp.DialConfig(c.URL(), amqp.Config{Dial: amqp.DefaultDial(time.Second)}); err == nil {
		t.Fatal("AMQP login succeeded on a killed broker")
	}
	// An exited broker fails the wait at once (ready_integration_test.go).
	if err := c.WaitReady(ctx, scenario.BrokerTarget(), 30*time.Second); err == nil || !strings.HasPrefix(err.Error(), `broker container "`+c.Name+`" exited (exit code 137) after `) {
		t.Fatalf("WaitReady on a dead broker: %v", err)
	}

	start := time.Now()
	if err := c.Start(ctx, scenario.BrokerTarget()); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitReady(ctx, scenario.BrokerTarget(), 90*time.Second); err != nil {
		t.Fatal(err)
	}
	t.Logf("start → AMQP login: %s", time.Since(start).Round(time.Millisecond))
	if c.Addr() != addr {
		t.Fatalf("host port changed across restart: %s → %s", addr, c.Addr())
	}
	if v := c.ServerVersion(); !strings.HasPrefix(v, "RabbitMQ 4.") && testImage() == scenario.DefaultImage {
		t.Fatalf("server version %q, want RabbitMQ 4.x", v)
	}
}

func TestRefusesContainersItDidNotLabel(t *testing.T) {
	cli, c := startBroker(t)
	ctx := context.Background()
	// A container of someone else's: same image, no rmqtorture labels.
	other, err := cli.ContainerCreate(ctx, &container.Config{Image: testImage(), Cmd: []string{"sleep", "60"}}, nil, nil, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	defer cli.ContainerRemove(context.Background(), other.ID, container.RemoveOptions{Force: true})
	impostor := &Container{cli: cli, log: quiet, ID: other.ID, Name: "impostor", Owned: true, runID: c.runID}
	if err := impostor.Remove(ctx); err == nil || !strings.Contains(err.Error(), "refusing to touch container") {
		t.Fatalf("Remove of an unlabelled container: %v", err)
	}
	if err := RemoveLeftover(ctx, cli, other.ID); err == nil || !strings.Contains(err.Error(), "refusing to remove") {
		t.Fatalf("RemoveLeftover of an unlabelled container: %v", err)
	}
	if _, err := cli.ContainerInspect(ctx, other.ID); err != nil {
		t.Fatalf("the unlabelled container is gone: %v", err)
	}
}

func TestMissingImageSaysHowToBuildIt(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test")
	}
	cli, err := Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	_, err = Create(context.Background(), cli, quiet, CreateOptions{Image: "rmqtorture/no-such-image:0", RunID: "missing"})
	if !errors.Is(err, ErrImageMissing) || !strings.Contains(err.Error(), "scripts/build-broker-image.sh") {
		t.Fatalf("got %v", err)
	}
}

func TestUnreachableDockerIsAClearError(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now
	t.Setenv("DOCKER_HOST", "tcp://"+addr)
	_, err = Connect(context.Background())
	if err == nil || !strings.Contains(err.Error(), "cannot reach the Docker Engine at tcp://"+addr) {
		t.Fatalf("got %v", err)
	}
}

// testDocker skips an integration test under -short and returns a Docker
// client, closed when the test ends.
func testDocker(t *testing.T) *Engine { return brokertest.Connect(t, Connect) }

// closedPort returns a URL nothing listens on (brokertest.ClosedPort).
func closedPort(t *testing.T) string { return brokertest.ClosedPort(t) }
