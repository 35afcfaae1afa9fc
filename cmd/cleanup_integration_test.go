package cmd

// What a run leaves behind when rmqtorture itself dies, and who cleans it
// up: real broker containers, an rmqtorture binary run as a subprocess and
// killed (SIGKILL) or interrupted twice. -short skips them.

import (
	"bufio"
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/api/types/volume"
	"github.com/docker/docker/client"
	"github.com/docker/go-connections/nat"

	"github.com/rmqtorture/rmqtorture/broker/docker"
	"github.com/rmqtorture/rmqtorture/scenario"
)

// brokerImage is the image the integration tests run.
func brokerImage() string {
	if img := os.Getenv("RMQT_IMAGE"); img != "" {
		return img
	}
	return scenario.DefaultImage
}

// buildBinary builds rmqtorture into a temporary folder.
func buildBinary(t *testing.T) string {
	t.Helper()
	return buildBinaryWith(t)
}

// buildBinaryWith is buildBinary with env added to go build's environment
// (CGO_ENABLED=0: a static binary).
func buildBinaryWith(t *testing.T, env ...string) string {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test: needs Docker and the broker image")
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		gobin = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	bin := filepath.Join(t.TempDir(), "rmqtorture")
	gobuild := exec.Command(gobin, "build", "-o", bin, "..")
	gobuild.Env = append(os.Environ(), env...)
	if out, err := gobuild.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// textLogs makes a subprocess log as slog key=value lines at INFO
// (--log-format text): these tests wait for and read its log lines.
const textLogs = "RMQTORTURE_LOG_FORMAT=text"

// proc is an rmqtorture subprocess whose stderr is read as it comes.
type proc struct {
	cmd    *exec.Cmd
	mu     sync.Mutex
	stderr strings.Builder
	done   chan struct{}
	code   int
}

// startProc starts bin with args and env added to the environment.
func startProc(t *testing.T, bin string, env []string, args ...string) *proc {
	t.Helper()
	p := &proc{cmd: exec.Command(bin, args...), done: make(chan struct{})}
	p.cmd.Env = append(append(os.Environ(), textLogs), env...)
	pipe, err := p.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			p.mu.Lock()
			p.stderr.WriteString(sc.Text() + "\n")
			p.mu.Unlock()
		}
		err := p.cmd.Wait()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			p.code = ee.ExitCode()
		}
		close(p.done)
	}()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.done
	})
	return p
}

func (p *proc) text() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stderr.String()
}

// waitFor waits until stderr matches re and returns the first submatch
// (or the match).
func (p *proc) waitFor(t *testing.T, re string, timeout time.Duration) string {
	t.Helper()
	rx := regexp.MustCompile(re)
	deadline := time.Now().Add(timeout)
	for {
		if m := rx.FindStringSubmatch(p.text()); m != nil {
			return m[len(m)-1]
		}
		select {
		case <-p.done:
			if m := rx.FindStringSubmatch(p.text()); m != nil {
				return m[len(m)-1]
			}
			t.Fatalf("rmqtorture exited %d before %q:\n%s", p.code, re, p.text())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %q within %s:\n%s", re, timeout, p.text())
		}
	}
}

// wait waits for the process to exit and returns its exit code.
func (p *proc) wait(t *testing.T, timeout time.Duration) int {
	t.Helper()
	select {
	case <-p.done:
		return p.code
	case <-time.After(timeout):
		t.Fatalf("rmqtorture still running after %s:\n%s", timeout, p.text())
	}
	return -1
}

// runBin runs bin to completion and returns its exit code, stdout and stderr.
func runBin(t *testing.T, bin string, env []string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(append(os.Environ(), textLogs), env...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	return cmd.ProcessState.ExitCode(), stdout.String(), stderr.String()
}

func dockerClient(t *testing.T) *client.Client {
	t.Helper()
	cli, err := docker.Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

// runContainers lists the containers labelled with runID.
func runContainers(t *testing.T, cli *client.Client, runID string) []container.Summary {
	t.Helper()
	list, err := cli.ContainerList(context.Background(), container.ListOptions{All: true,
		Filters: filters.NewArgs(filters.Arg("label", docker.LabelRun+"="+runID))})
	if err != nil {
		t.Fatal(err)
	}
	return list
}

// removeAtEnd removes, when the test ends, a container the test made.
func removeAtEnd(t *testing.T, cli *client.Client, id string) {
	t.Cleanup(func() {
		_ = cli.ContainerRemove(context.Background(), id, container.RemoveOptions{Force: true, RemoveVolumes: true})
	})
}

// removeRunAtEnd removes, when the test ends, whatever is left of a run the
// test started.
func removeRunAtEnd(t *testing.T, cli *client.Client, runID string) {
	t.Cleanup(func() {
		for _, c := range runContainers(t, cli, runID) {
			_ = cli.ContainerRemove(context.Background(), c.ID, container.RemoveOptions{Force: true, RemoveVolumes: true})
		}
	})
}

var runIDre = `run=([0-9a-f]{8})`

// wouldRemove runs `cleanup --dry-run` and fails the test, before anything
// is removed, if the default cleanup would take more than want (the
// containers, networks and volumes this test left as leftovers): this user
// may have other leftovers on the engine that are not the test's to remove.
func wouldRemove(t *testing.T, bin string, env []string, want ...string) {
	t.Helper()
	code, stdout, stderr := runBin(t, bin, env, "cleanup", "--dry-run")
	if code != ExitPass {
		t.Fatalf("cleanup --dry-run: exit %d\n%s", code, stderr)
	}
	var got []string
	for _, line := range strings.Split(stdout, "\n") {
		if rest, ok := strings.CutPrefix(line, "would "); ok {
			got = append(got, rest)
		}
	}
	if len(got) != len(want) {
		t.Fatalf("cleanup would do %d things, want %d (%v); not cleaning up what this test did not create:\n%s", len(got), len(want), want, stdout)
	}
	for _, w := range want {
		if !strings.Contains(stdout, w) {
			t.Fatalf("cleanup --dry-run does not say %q:\n%s", w, stdout)
		}
	}
}

// keptRun runs a small --keep run to completion and returns its run id: its
// container stays, labelled kept, and the log line that says so carries no
// password.
func keptRun(t *testing.T, bin string, env, base []string, cli *client.Client) string {
	t.Helper()
	code, _, stderr := runBin(t, bin, env, append([]string{"run", "baseline", "--mode", "confirm-window", "--messages", "500", "--keep"}, base...)...)
	m := regexp.MustCompile(runIDre).FindStringSubmatch(stderr)
	if code != ExitPass || m == nil {
		t.Fatalf("--keep run: exit %d\n%s", code, stderr)
	}
	removeRunAtEnd(t, cli, m[1])
	if !strings.Contains(stderr, "keeping broker container") || !strings.Contains(stderr, "amqp://guest:xxxxx@127.0.0.1:") || strings.Contains(stderr, "guest:guest") {
		t.Fatalf("keep line missing or not redacted:\n%s", stderr)
	}
	return m[1]
}

// killRun starts a run, SIGKILLs it once stderr matches at (and after
// pause), and returns its run id and the labels of the container it left.
func killRun(t *testing.T, bin string, env, args []string, cli *client.Client, at string, pause time.Duration) (string, map[string]string) {
	t.Helper()
	p := startProc(t, bin, env, args...)
	runID := p.waitFor(t, runIDre, time.Minute)
	removeRunAtEnd(t, cli, runID)
	p.waitFor(t, at, 2*time.Minute)
	time.Sleep(pause)
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	p.wait(t, 10*time.Second)
	left := runContainers(t, cli, runID)
	if len(left) != 1 || left[0].State != "running" {
		t.Fatalf("run %s killed left %+v, want its running container", runID, left)
	}
	return runID, left[0].Labels
}

// TestSigkillThenCleanup: a run killed with SIGKILL mid-burst leaves its
// running broker container; `cleanup` removes exactly that (with a network
// and a volume carrying the run's labels), not the container of a live
// rmqtorture process nor one kept with --keep; a run killed just after
// creating its container has it removed by the next `run`, which says so;
// and a run after that finds nothing to remove.
func TestSigkillThenCleanup(t *testing.T) {
	bin := buildBinary(t)
	cli := dockerClient(t)
	ctx := context.Background()
	out := t.TempDir()
	env := []string{"XDG_STATE_HOME=" + t.TempDir()}
	base := []string{"-f", "../scenarios.yaml", "--out", out, "--image", brokerImage()}
	keep := keptRun(t, bin, env, base, cli)

	// The container of a live rmqtorture process (this test's, created but
	// not started).
	liveRun := "live" + strconv.Itoa(os.Getpid())
	live, err := cli.ContainerCreate(ctx, &container.Config{Image: brokerImage(), Labels: docker.Labels(liveRun, false)}, nil, nil, nil, "rmqt-"+liveRun)
	if err != nil {
		t.Fatal(err)
	}
	removeAtEnd(t, cli, live.ID)

	// A run killed mid-burst (past the 2 s settle), and a network and a
	// volume labelled as its container is.
	killed, labels := killRun(t, bin, env, append([]string{"run", "baseline", "--mode", "confirm-each", "--messages", "100000"}, base...), cli, "queue declared", 3*time.Second)
	name := "rmqt-" + killed
	netw, err := cli.NetworkCreate(ctx, name, network.CreateOptions{Labels: labels})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cli.NetworkRemove(ctx, netw.ID) })
	vol, err := cli.VolumeCreate(ctx, volume.CreateOptions{Name: name, Labels: labels})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cli.VolumeRemove(ctx, vol.Name, true) })

	wouldRemove(t, bin, env, "remove container "+name, "remove network "+name, "remove volume "+name)
	code, stdout, stderr := runBin(t, bin, env, "cleanup")
	t.Log("\n" + stdout)
	pid := labels[docker.LabelPID]
	for _, want := range []string{
		"removed container " + name + " (run " + killed + ", running): its rmqtorture process " + pid + " is gone",
		"removed network " + name + " (run " + killed + "): its rmqtorture process " + pid + " is gone",
		"removed volume " + name + " (run " + killed + "): its rmqtorture process " + pid + " is gone",
		"skipping container rmqt-" + keep + " (run " + keep + ", running): kept with --keep (--run " + keep + " removes it)",
		"skipping container rmqt-" + liveRun + " (run " + liveRun + ", created): its rmqtorture process " + strconv.Itoa(os.Getpid()) + " is still running (--force removes it anyway)",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("cleanup does not say %q", want)
		}
	}
	if code != ExitPass {
		t.Fatalf("cleanup: exit %d\n%s", code, stderr)
	}
	if n := len(runContainers(t, cli, killed)); n != 0 {
		t.Fatalf("run %s: %d containers left after cleanup", killed, n)
	}
	if _, err := cli.NetworkInspect(ctx, netw.ID, network.InspectOptions{}); !client.IsErrNotFound(err) {
		t.Errorf("network of run %s still there (%v)", killed, err)
	}
	if _, err := cli.VolumeInspect(ctx, vol.Name); !client.IsErrNotFound(err) {
		t.Errorf("volume of run %s still there (%v)", killed, err)
	}
	if len(runContainers(t, cli, keep)) != 1 || len(runContainers(t, cli, liveRun)) != 1 {
		t.Fatal("cleanup removed the --keep container or the live process's")
	}
	nextRunSweeps(t, bin, env, base, out, cli)

	// --run names the kept container: it goes.
	code, stdout, _ = runBin(t, bin, env, "cleanup", "--run", keep)
	if code != ExitPass || !strings.Contains(stdout, "removed container rmqt-"+keep) || len(runContainers(t, cli, keep)) != 0 {
		t.Fatalf("cleanup --run %s: exit %d\n%s", keep, code, stdout)
	}
}

// nextRunSweeps: a run killed once its container exists has it removed by
// the next run, which says so; the run after that finds nothing.
func nextRunSweeps(t *testing.T, bin string, env, base []string, out string, cli *client.Client) {
	t.Helper()
	killed, _ := killRun(t, bin, env, append([]string{"run", "baseline", "--mode", "confirm-each"}, base...), cli, "broker container started", 0)
	wouldRemove(t, bin, env, "remove container rmqt-"+killed)
	// A missing image ends the run right after its sweep.
	absent := []string{"run", "baseline", "-f", "../scenarios.yaml", "--out", out, "--image", "rmqtorture/absent:0"}
	code, _, stderr := runBin(t, bin, env, absent...)
	// Every run sweeps what dead runs of this user left, so a run of
	// another test in the other shard may get there first: its removal is
	// waited for (reported as removed here), or it is over before this
	// run looks (not reported). Never a warning.
	want := "leftover of an earlier run: removed container rmqt-" + killed + " (run " + killed
	if code != ExitError || strings.Contains(stderr, "clean up leftovers of earlier runs") {
		t.Fatalf("next run: exit %d, stderr:\n%s", code, stderr)
	}
	if !strings.Contains(stderr, want) {
		t.Logf("another process swept rmqt-%s before the next run looked", killed)
	}
	if n := len(runContainers(t, cli, killed)); n != 0 {
		t.Fatalf("run %s: %d containers left after the next run", killed, n)
	}
	code, _, stderr = runBin(t, bin, env, absent...)
	if code != ExitError || strings.Contains(stderr, "leftover") {
		t.Fatalf("a second run found leftovers (exit %d):\n%s", code, stderr)
	}
}

// TestDoubleInterruptRemovesContainer: a second Ctrl-C writes what was
// measured, removes the container the run created and exits, within ~5 s
// here (cmd/interrupt.go; the forced removal of cmd/cleanup.go's Abort is the
// last resort when that takes too long).
func TestDoubleInterruptRemovesContainer(t *testing.T) {
	bin := buildBinary(t)
	cli := dockerClient(t)
	p := startProc(t, bin, []string{"XDG_STATE_HOME=" + t.TempDir()}, "run", "baseline", "--mode", "confirm-each", "--messages", "100000",
		"-f", "../scenarios.yaml", "--out", t.TempDir(), "--image", brokerImage())
	runID := p.waitFor(t, runIDre, time.Minute)
	removeRunAtEnd(t, cli, runID)
	p.waitFor(t, "queue declared", 2*time.Minute)
	time.Sleep(3 * time.Second) // past the 2 s settle, into the burst
	if err := p.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	second := time.Now()
	if err := p.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatalf("rmqtorture exited before the second Ctrl-C: %v\n%s", err, p.text())
	}
	code := p.wait(t, 10*time.Second)
	took := time.Since(second)
	t.Logf("exit %d %s after the second Ctrl-C:\n%s", code, took.Round(time.Millisecond), p.text())
	if code != ExitInterrupted || took > 6*time.Second {
		t.Fatalf("exit %d after %s, want %d within ~5 s", code, took, ExitInterrupted)
	}
	if !strings.Contains(p.text(), "broker container removed") || !strings.Contains(p.text(), "name=rmqt-"+runID) {
		t.Errorf("the second Ctrl-C does not say it removed rmqt-%s", runID)
	}
	if n := len(runContainers(t, cli, runID)); n != 0 {
		t.Fatalf("run %s left %d containers after a double Ctrl-C", runID, n)
	}
}

// freeLocalPort asks the kernel for a free port on 127.0.0.1.
func freeLocalPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// TestKilledRunRestoresForeignContainer: a run on a container rmqtorture
// did not create (--container) warns before its first fault; killed while
// that fault (pause) holds, it leaves the container paused and a state
// file; `cleanup --dry-run` says what it would restore, and the next run
// restores it, says so, and runs on it.
func TestKilledRunRestoresForeignContainer(t *testing.T) {
	bin := buildBinary(t)
	cli := dockerClient(t)
	ctx := context.Background()
	state := t.TempDir()
	env := []string{"XDG_STATE_HOME=" + state}
	name := "user-rabbit-" + strconv.Itoa(os.Getpid())
	port := freeLocalPort(t)
	amqpPort := nat.Port("5672/tcp")
	created, err := cli.ContainerCreate(ctx, &container.Config{Image: brokerImage(), Hostname: name, ExposedPorts: nat.PortSet{amqpPort: {}}},
		&container.HostConfig{PortBindings: nat.PortMap{amqpPort: {{HostIP: "127.0.0.1", HostPort: strconv.Itoa(port)}}}}, nil, nil, name)
	if err != nil {
		t.Fatal(err)
	}
	removeAtEnd(t, cli, created.ID)
	if err := cli.ContainerStart(ctx, created.ID, container.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	base := []string{"-f", "../scenarios.yaml", "--out", t.TempDir(), "--container", name}

	p := startProc(t, bin, env, append([]string{"run", "pause-mid-burst", "--mode", "confirm-window"}, base...)...)
	warning := "acting on container " + name + ", which rmqtorture did not create: it will be paused and unpaused"
	p.waitFor(t, regexp.QuoteMeta(warning), 3*time.Minute)
	p.waitFor(t, "fault applied", time.Minute)
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	p.wait(t, 10*time.Second)
	if w, f := strings.Index(p.text(), warning), strings.Index(p.text(), "fault applied"); w > f {
		t.Fatalf("the warning came after the fault:\n%s", p.text())
	}
	info, err := cli.ContainerInspect(ctx, created.ID)
	if err != nil || !info.State.Paused {
		t.Fatalf("container after the kill: %+v, %v; want it left paused", info.State, err)
	}
	files, _ := filepath.Glob(filepath.Join(state, "rmqtorture", "*.json"))
	if len(files) != 1 {
		t.Fatalf("state files %v, want one", files)
	}
	what := "container " + name + ", which rmqtorture did not create, left changed by rmqtorture process " + strconv.Itoa(p.cmd.Process.Pid)
	wouldRemove(t, bin, env, "restore "+what+": unpause")

	code, stdout, stderr := runBin(t, bin, env, append([]string{"run", "baseline", "--mode", "confirm-each", "--messages", "200"}, base...)...)
	t.Log("\n" + stderr + stdout)
	if code != ExitPass || !strings.Contains(stderr, "leftover of an earlier run: restored "+what+": unpaused") {
		t.Fatalf("next run: exit %d, no word of the restore:\n%s", code, stderr)
	}
	info, err = cli.ContainerInspect(ctx, created.ID)
	if err != nil || info.State.Paused || !info.State.Running {
		t.Fatalf("container after the next run: %+v, %v", info.State, err)
	}
	if files, _ := filepath.Glob(filepath.Join(state, "rmqtorture", "*.json")); len(files) != 0 {
		t.Fatalf("state files left: %v", files)
	}
}
