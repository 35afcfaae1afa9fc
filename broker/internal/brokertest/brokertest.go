// Package brokertest starts what the broker layer's integration tests
// outside broker/docker need: a labelled broker container of the
// project's image, removed when the test ends. broker/docker's own tests
// keep their copy: they cannot import this package, which imports theirs.
package brokertest

import (
	"context"
	"io"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/client"

	"github.com/rmqtorture/rmqtorture/broker/docker"
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

// StartBroker creates a labelled broker container for one test and removes
// it when the test ends.
func StartBroker(t *testing.T) (*client.Client, *docker.Container) {
	t.Helper()
	ctx := context.Background()
	cli := Docker(t)
	runID := "test" + strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-"))
	runID = runID[:min(len(runID), 40)] + "-" + time.Now().Format("150405.000")
	runID = strings.ReplaceAll(runID, ".", "")
	c, err := docker.Create(ctx, cli, Quiet, docker.CreateOptions{Image: Image(), RunID: runID})
	if c != nil {
		t.Cleanup(func() {
			if err := c.Remove(context.Background()); err != nil {
				t.Errorf("remove: %v", err)
			}
		})
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := c.WaitReady(ctx, scenario.BrokerTarget(), 90*time.Second); err != nil {
		t.Fatal(err)
	}
	return cli, c
}

// Docker skips an integration test under -short and returns a Docker
// client, closed when the test ends.
func Docker(t *testing.T) *client.Client {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test: needs Docker and the broker image")
	}
	cli, err := docker.Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}
