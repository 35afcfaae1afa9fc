package amqp

import (
	"context"
	"testing"

	"github.com/rmqtorture/rmqtorture/broker/docker"
	"github.com/rmqtorture/rmqtorture/broker/internal/brokertest"
)

// The integration tests' broker and logger (broker/internal/brokertest),
// under the names the tests use.
var quiet = brokertest.Quiet

func testImage() string { return brokertest.Image() }

// startBroker creates a labelled broker container for one test and removes
// it when the test ends.
func startBroker(t *testing.T) (*docker.Engine, *docker.Container) {
	t.Helper()
	cli := brokertest.Connect(t, docker.Connect)
	c := brokertest.Start(t, func(ctx context.Context, runID string) (*docker.Container, error) {
		return docker.Create(ctx, cli, quiet, docker.CreateOptions{Image: testImage(), RunID: runID})
	})
	return cli, c
}
