package cmd

// The official rabbitmq image's layout (docker-library/rabbitmq): no
// registry is reachable here, so the tests build a stand-in from the
// project's own image that reproduces it (broker/testdata/official-standin:
// its Dockerfile says what it reproduces and what not) and run on it.
// -short skips them.

import (
	"archive/tar"
	"bytes"
	"context"
	"os"
	"testing"
	"time"

	"github.com/docker/docker/api/types/build"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/client"

	"github.com/rmqtorture/rmqtorture/metrics"
	"github.com/rmqtorture/rmqtorture/scenario"
)

// standInImage is the stand-in's tag, removed when the test ends.
const standInImage = "rmqtorture/official-standin:4.0"

// buildStandIn builds broker/testdata/official-standin through the Docker
// API (its folder as the tar context; FROM the local
// rmqtorture/rabbitmq:4.0-trixie, so nothing is pulled) and removes the
// image and its intermediate layers when the test ends.
func buildStandIn(t *testing.T, cli *client.Client) {
	t.Helper()
	ctx := context.Background()
	var tarball bytes.Buffer
	tw := tar.NewWriter(&tarball)
	if err := tw.AddFS(os.DirFS("../broker/testdata/official-standin")); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	resp, err := cli.ImageBuild(ctx, &tarball, build.ImageBuildOptions{Tags: []string{standInImage}, Remove: true, ForceRemove: true, SuppressOutput: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = cli.ImageRemove(context.Background(), standInImage, image.RemoveOptions{PruneChildren: true})
	})
	if err := drain(resp.Body); err != nil {
		t.Fatalf("build %s: %v", standInImage, err)
	}
	t.Logf("built %s in %.1f s", standInImage, time.Since(start).Seconds())
}

// TestOfficialImageLayout: on the official image's layout (root, then the
// entrypoint stepping down to rabbitmq; config in conf.d only; no cookie
// until the first boot; data on a volume; the CLI run as root), a broker
// is created, configured, killed, started again and reconciled with exact
// counts, and three nodes form a cluster (the cookie file and
// conf.d/90-rmqtorture.conf's peer discovery; formation is read with
// rabbitmqctl run as root through docker exec).
func TestOfficialImageLayout(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: needs Docker")
	}
	cli := dockerClient(t)
	buildStandIn(t, cli)

	t.Run("kill", func(t *testing.T) {
		code, stdout, stderr := runCLI(t, "run", "official-kill", "-f", "testdata/official.yaml", "--image", standInImage, "--out", t.TempDir())
		if code != ExitPass {
			t.Fatalf("exit %d\nstderr:\n%s", code, stderr)
		}
		r := readResult(t, stdout)
		m := mode(t, r, scenario.ConfirmWindow)
		if r.Image != standInImage || r.BrokerVersion != "RabbitMQ 4.0.5" {
			t.Errorf("image %q version %q", r.Image, r.BrokerVersion)
		}
		// Every order confirmed and delivered; what was in doubt at the
		// kill was republished, and every duplicate is one of those.
		if m.Sent != 4000 || m.Confirmed != 4000 || m.Delivered != 4000 || m.Lost != 0 || m.InDoubt != 0 ||
			m.Duplicates != m.DuplicatesFromRepublish || m.Duplicates > m.WentInDoubt {
			t.Errorf("counts %+v", m.Counts)
		}
		if n := len(events(m, metrics.EvFault)); n != 1 {
			t.Errorf("%d faults, want the one kill: %+v", n, m.Events)
		}
		if n := len(events(m, metrics.EvBrokerReady)); n != 1 {
			t.Errorf("broker ready %d times after the kill, want 1: %+v", n, m.Events)
		}
	})

	t.Run("cluster", func(t *testing.T) {
		start := time.Now()
		code, stdout, stderr := runCLI(t, "run", "official-cluster", "-f", "testdata/official.yaml", "--image", standInImage, "--out", t.TempDir())
		if code != ExitPass {
			t.Fatalf("exit %d\nstderr:\n%s", code, stderr)
		}
		r := readResult(t, stdout)
		m := mode(t, r, scenario.ConfirmEach)
		if r.Nodes != 3 || len(r.NodeContainers) != 3 || m.Sent != 500 || m.Confirmed != 500 || m.Delivered != 500 || m.Duplicates != 0 {
			t.Errorf("nodes %d %v, counts %+v", r.Nodes, r.NodeContainers, m.Counts)
		}
		t.Logf("3-node cluster on the stand-in: run took %.0f s", time.Since(start).Seconds())
	})
}
