package cmd

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/docker/docker/api/types/build"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/pkg/stdcopy"

	"github.com/rmqtorture/rmqtorture/broker/docker"
	"github.com/rmqtorture/rmqtorture/scenario"
)

// The tool's own image (the repository's Dockerfile: a static binary on an
// empty image) is built through the Engine API and runs a scenario with
// the Docker socket mounted, on the host's network: the run passes and its
// folder lands in the mounted /work.
func TestToolImageRunsAScenario(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: needs Docker, the go command and the broker image")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	dir := t.TempDir()
	bin := buildBinaryWith(t, "CGO_ENABLED=0") // static: the image has nothing else
	// The build context: the Dockerfile and the binary.
	files := map[string][]byte{}
	for name, path := range map[string]string{"Dockerfile": "../Dockerfile", "rmqtorture": bin} {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		files[name] = data
	}
	ctxTar := buildContext(t, 0o755, files)
	cli := dockerClient(t)
	tag := "rmqtorture/rmqtorture:test-" + newRunID()
	resp, err := cli.ImageBuild(ctx, ctxTar, build.ImageBuildOptions{Tags: []string{tag}, Remove: true, ForceRemove: true})
	if err != nil {
		t.Fatal(err)
	}
	out, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	t.Cleanup(func() {
		_, _ = cli.ImageRemove(context.Background(), tag, image.RemoveOptions{Force: true, PruneChildren: true})
	})
	if !strings.Contains(string(out), "Successfully tagged "+tag) {
		t.Fatalf("image build:\n%s", out)
	}

	work := filepath.Join(dir, "work")
	if err := os.Mkdir(work, 0o777); err != nil {
		t.Fatal(err)
	}
	// As the test's own user, in the socket's group: what it writes in
	// /work is the test's to remove.
	sock, err := os.Stat("/var/run/docker.sock")
	if err != nil {
		t.Fatal(err)
	}
	c, err := cli.ContainerCreate(ctx, &container.Config{Image: tag, User: fmt.Sprintf("%d:%d", os.Getuid(), os.Getgid()),
		Cmd: []string{"run", "kill-mid-burst", "--messages", "500", "--mode", "confirm-window"}},
		&container.HostConfig{NetworkMode: "host", GroupAdd: []string{fmt.Sprint(sock.Sys().(*syscall.Stat_t).Gid)},
			Binds: []string{"/var/run/docker.sock:/var/run/docker.sock", work + ":/work"}}, nil, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	removeAtEnd(t, cli, c.ID)
	// A container of a run of this (live) test process. The run in the
	// tool's container has the host's hostname and this user, but pids of
	// its own: its sweep of leftovers must not take this one for a dead
	// process's (it once removed the brokers of tests running beside it).
	bystander, err := cli.ContainerCreate(ctx, &container.Config{Image: brokerImage(), Labels: docker.Labels("bystander-"+newRunID(), false)}, nil, nil, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	removeAtEnd(t, cli, bystander.ID)
	if err := cli.ContainerStart(ctx, c.ID, container.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	waitC, errC := cli.ContainerWait(ctx, c.ID, container.WaitConditionNotRunning)
	var code int64
	select {
	case w := <-waitC:
		code = w.StatusCode
	case err := <-errC:
		t.Fatal(err)
	}
	logs, err := cli.ContainerLogs(ctx, c.ID, container.LogsOptions{ShowStdout: true, ShowStderr: true})
	if err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	_, _ = stdcopy.StdCopy(&stdout, &stderr, logs)
	logs.Close()
	if code != int64(ExitPass) {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
	// The result path it printed is inside the container, under its
	// working folder /work (absolute, or relative to it).
	var inside string
	for _, line := range strings.Split(stdout.String(), "\n") {
		if p, ok := strings.CutPrefix(line, "result: "); ok {
			inside = p
		}
	}
	rel, ok := strings.CutPrefix(inside, "/work/")
	if !ok && !filepath.IsLocal(inside) {
		t.Fatalf("result path %q is not under /work\n%s", inside, stdout.String())
	} else if !ok {
		rel = inside
	}
	r := readResultFile(t, filepath.Join(work, rel))
	checkNoContainerLeft(t, r.RunID)
	if _, err := cli.ContainerInspect(ctx, bystander.ID); err != nil {
		t.Errorf("the container of a live run beside it: %v (the run in the tool's image swept it)\nstderr:\n%s", err, stderr.String())
	}
	if r.Verdict.Status != scenario.Pass || len(r.Modes) != 1 || r.Modes[0].Sent != 500 || len(r.Modes[0].Faults) != 1 {
		t.Fatalf("verdict %+v, modes %d: want a pass with one kill over 500 orders", r.Verdict, len(r.Modes))
	}
}
