// Package brokertest holds what the broker layer's integration tests share:
// the image they run, a silent logger, the run id of a test's containers,
// and the start of a labelled broker that is removed when the test ends.
// It imports no broker package, so broker/docker's own tests use it as
// well as broker/amqp's; each passes in how it creates and readies a
// broker.
package brokertest

import (
	"context"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/rmqtorture/rmqtorture/scenario"
)

// Image is the broker image the tests run: RMQT_IMAGE, else the default.
func Image() string {
	if img := os.Getenv("RMQT_IMAGE"); img != "" {
		return img
	}
	return scenario.DefaultImage
}

// Quiet is a logger that writes nothing.
var Quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// Connect skips an integration test under -short and returns the engine
// connect opened, closed when the test ends.
func Connect[E io.Closer](t *testing.T, connect func(context.Context) (E, error)) E {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test: needs Docker and the broker image")
	}
	e, err := connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// RunID is the run id of the test's containers: "test", the test's name
// (at most 40 characters) and the time of day to the millisecond.
func RunID(t *testing.T) string {
	id := "test" + strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-"))
	id = id[:min(len(id), 40)] + "-" + time.Now().Format("150405.000")
	return strings.ReplaceAll(id, ".", "")
}

// Broker is what Start needs of a created broker: that it can be removed
// and tell when it accepts AMQP logins.
type Broker interface {
	Remove(ctx context.Context) error
	WaitReady(ctx context.Context, target scenario.Target, timeout time.Duration) error
}

// Start creates a broker for one test with create (given the test's run
// id), removes it when the test ends (also when create failed half way and
// returned one), and waits up to 90 s for it to accept AMQP logins.
func Start[C any, B interface {
	*C
	Broker
}](t *testing.T, create func(ctx context.Context, runID string) (B, error)) B {
	t.Helper()
	ctx := context.Background()
	b, err := create(ctx, RunID(t))
	if b != nil {
		t.Cleanup(func() {
			if err := b.Remove(context.Background()); err != nil {
				t.Errorf("remove: %v", err)
			}
		})
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := b.WaitReady(ctx, scenario.BrokerTarget(), 90*time.Second); err != nil {
		t.Fatal(err)
	}
	return b
}

// ClosedPort returns an AMQP URL on 127.0.0.1 that nothing listens on: a
// port the kernel handed out and that was closed again at once.
func ClosedPort(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "amqp://guest:guest@" + addr + "/"
}
