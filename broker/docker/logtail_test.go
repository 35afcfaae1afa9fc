package docker

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"

	"github.com/rmqtorture/rmqtorture/scenario"
)

// TestNotReadyErrorHasNoTerminalCodes: when the broker does not come up,
// the error quotes its last log lines (they reach report.md, result.json and
// stdout) without the colour codes and carriage returns a console log
// carries, and without a URL's password.
func TestNotReadyErrorHasNoTerminalCodes(t *testing.T) {
	ctx := context.Background()
	cli := testDocker(t)
	script := `printf '\033[38;5;160m[error] boot failed\033[0m\r\n\033]0;title\007connecting to amqp://admin:s3cr3tpass@peer:5672\n'; sleep 60`
	created, err := cli.ContainerCreate(ctx, &container.Config{Image: testImage(), Entrypoint: []string{"sh", "-c", script}, Labels: Labels("logtail-test", false)}, nil, nil, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cli.ContainerRemove(context.Background(), created.ID, container.RemoveOptions{Force: true, RemoveVolumes: true})
	})
	if err := cli.ContainerStart(ctx, created.ID, container.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond) // let it print
	c := &Container{cli: cli, log: quiet, ID: created.ID, Name: "logtail-test"}
	err = c.WaitReady(ctx, scenario.BrokerTarget(), 300*time.Millisecond)
	if err == nil {
		t.Fatal("WaitReady succeeded on a container that serves no AMQP")
	}
	msg := err.Error()
	if !strings.Contains(msg, "its last log lines: [error] boot failed | connecting to amqp://admin:xxxxx@peer:5672") ||
		strings.ContainsAny(msg, "\x1b\r\a") || strings.Contains(msg, "s3cr3tpass") {
		t.Fatalf("error %q", msg)
	}
}
