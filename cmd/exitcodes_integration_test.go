package cmd

// The exit causes that need Docker or a real broker, each triggered through
// the command line (the rest: exitcodes_test.go). -short skips them.

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/client"
	"github.com/docker/go-connections/nat"

	"github.com/rmqtorture/rmqtorture/broker/docker"
	"github.com/rmqtorture/rmqtorture/scenario"
)

// exitScenarios are small scenarios for the real-broker causes: the same
// 200 orders awaiting each confirm with no fault, judged against the right
// and a wrong exact count; a fault timed after the burst ends; a settle
// long enough to interrupt; and a broker deadline of 2 s.
const exitScenarios = `version: 1
scenarios:
  - name: exact
    queue: {settle_before_burst: 0s}
    load: {messages: 200, modes: [confirm-each]}
    expect: {modes: {confirm-each: {sent: 200, confirmed: 200, lost: 0}}}
  - name: exact-wrong
    queue: {settle_before_burst: 0s}
    load: {messages: 200, modes: [confirm-each]}
    expect: {modes: {confirm-each: {confirmed: 201}}}
  - name: never-fires
    queue: {settle_before_burst: 0s}
    load: {messages: 200, modes: [confirm-each]}
    faults: [{action: kill, after: 60s, down: 1s}]
  - name: settle
    queue: {settle_before_burst: 30s}
    load: {messages: 200, modes: [confirm-each]}
  - name: not-ready
    broker: {ready_timeout: 2s}
    load: {messages: 10, modes: [confirm-each]}
`

// exitEnv is what the Docker triggers share: the scenario file, a real
// broker and three containers that cannot be one, made once by
// TestExitCausesDocker.
var exitEnv struct {
	file, broker, stopped, noPort, notReady string
}

func testImage() string {
	if img := os.Getenv("RMQT_IMAGE"); img != "" {
		return img
	}
	return scenario.DefaultImage
}

// runAgainst runs a scenario of exitScenarios against the shared broker.
func runAgainst(name string) func(t *testing.T) (error, string) {
	return func(t *testing.T) (error, string) {
		return cliErr(context.Background(), nil, "run", name, "-f", exitEnv.file, "--container", exitEnv.broker, "--out", t.TempDir())
	}
}

// cancelOn is a log writer that cancels once a line containing needle is
// written: an interrupt at a known moment.
type cancelOn struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	needle string
	cancel context.CancelFunc
}

func (w *cancelOn) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if strings.Contains(w.buf.String(), w.needle) {
		w.cancel()
	}
	return len(p), nil
}

var dockerExitTriggers = []exitTrigger{
	{CausePass, "run with its exact counts met", runAgainst("exact"), ""},
	{CauseVerdictFail, "run with an exact count not met", runAgainst("exact-wrong"), "verdict: fail"},
	{CauseInconclusive, "run whose fault never fired", runAgainst("never-fires"), "verdict: inconclusive"},
	{CauseInterrupted, "Ctrl-C while the queue settles", func(t *testing.T) (error, string) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		w := &cancelOn{needle: "settling before the burst", cancel: cancel}
		root := NewRoot(&bytes.Buffer{}, w)
		// The text format: the needle is a log line, not a step line.
		root.SetArgs([]string{"run", "settle", "-f", exitEnv.file, "--container", exitEnv.broker, "--out", t.TempDir(), "--log-format", "text"})
		err := root.ExecuteContext(ctx)
		if err == nil {
			return nil, w.buf.String() // the cause check says what it wanted
		}
		return err, w.buf.String() + "rmqtorture: " + err.Error()
	}, "interrupted: partial report written"},
	{CauseBrokerNotReady, "--container that never accepts AMQP", func(t *testing.T) (error, string) {
		return cliErr(context.Background(), nil, "run", "not-ready", "-f", exitEnv.file, "--container", exitEnv.notReady, "--out", t.TempDir())
	}, "did not accept an AMQP login"},
	{CauseNoSuchContainer, "--container naming nothing", func(t *testing.T) (error, string) {
		return cliErr(context.Background(), nil, "run", "exact", "-f", exitEnv.file, "--container", "rmqt-exit-nosuch", "--out", t.TempDir())
	}, `--container rmqt-exit-nosuch: no container named "rmqt-exit-nosuch"`},
	{CauseContainerStopped, "--container not running", func(t *testing.T) (error, string) {
		return cliErr(context.Background(), nil, "run", "exact", "-f", exitEnv.file, "--container", exitEnv.stopped, "--out", t.TempDir())
	}, "is not running"},
	{CauseNoAMQPPort, "--container without a published AMQP port", func(t *testing.T) (error, string) {
		return cliErr(context.Background(), nil, "run", "exact", "-f", exitEnv.file, "--container", exitEnv.noPort, "--out", t.TempDir())
	}, "does not publish 5672/tcp"},
	{CauseImageMissing, "--image not in the engine", func(t *testing.T) (error, string) {
		return cliErr(context.Background(), nil, "run", "exact", "-f", exitEnv.file, "--image", "rmqtorture/absent:0", "--out", t.TempDir())
	}, `"rmqtorture/absent:0" is not in the local Docker Engine`},
}

// testContainer creates (and, with start, starts) a container of the
// broker image running sleep, optionally with 5672/tcp published on
// hostPort, and removes it when the test ends.
func testContainer(t *testing.T, cli *client.Client, name string, start bool, hostPort int) {
	t.Helper()
	ctx := context.Background()
	cfg := &container.Config{Image: testImage(), Entrypoint: []string{"sleep"}, Cmd: []string{"300"}, Labels: map[string]string{"org.rmqtorture.test": "exit-codes"}}
	host := &container.HostConfig{}
	if hostPort > 0 {
		cfg.ExposedPorts = nat.PortSet{"5672/tcp": {}}
		host.PortBindings = nat.PortMap{"5672/tcp": {{HostIP: "127.0.0.1", HostPort: strconv.Itoa(hostPort)}}}
	}
	c, err := cli.ContainerCreate(ctx, cfg, host, nil, nil, name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cli.ContainerRemove(context.Background(), c.ID, container.RemoveOptions{Force: true}) })
	if start {
		if err := cli.ContainerStart(ctx, c.ID, container.StartOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

func freeTestPort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// TestExitCausesDocker triggers every cause that needs Docker through the
// command line: one real broker for the runs, three containers that cannot
// be one.
func TestExitCausesDocker(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: needs Docker and the broker image")
	}
	ctx := context.Background()
	cli, err := docker.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	id := hex.EncodeToString(b)
	exitEnv.file = filepath.Join(t.TempDir(), "exit.yaml")
	if err := os.WriteFile(exitEnv.file, []byte(exitScenarios), 0o644); err != nil {
		t.Fatal(err)
	}
	exitEnv.stopped, exitEnv.noPort, exitEnv.notReady = "rmqt-exit-stopped-"+id, "rmqt-exit-noport-"+id, "rmqt-exit-notready-"+id
	testContainer(t, cli, exitEnv.stopped, false, 0)
	testContainer(t, cli, exitEnv.noPort, true, 0)
	testContainer(t, cli, exitEnv.notReady, true, freeTestPort(t))

	log := slog.New(slog.DiscardHandler)
	ctr, err := docker.Create(ctx, cli, log, docker.CreateOptions{Image: testImage(), RunID: "exit" + id})
	if ctr != nil {
		t.Cleanup(func() { _ = ctr.Remove(context.Background()) })
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := ctr.WaitReady(ctx, scenario.BrokerTarget(), 90*time.Second); err != nil {
		t.Fatal(err)
	}
	exitEnv.broker = ctr.Name
	for _, tr := range dockerExitTriggers {
		t.Run(string(tr.cause)+"/"+tr.name, func(t *testing.T) { checkTrigger(t, tr) })
	}
}
