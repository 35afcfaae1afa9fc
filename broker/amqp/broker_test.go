package amqp

import (
	"testing"

	"github.com/docker/docker/client"

	"github.com/rmqtorture/rmqtorture/broker/docker"
	"github.com/rmqtorture/rmqtorture/broker/internal/brokertest"
)

// The integration tests' broker and logger (broker/internal/brokertest),
// under the names the tests use.
var quiet = brokertest.Quiet

func testImage() string { return brokertest.Image() }

func startBroker(t *testing.T) (*client.Client, *docker.Container) { return brokertest.StartBroker(t) }
