package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/client"
	"github.com/docker/go-connections/nat"

	"github.com/rmqtorture/rmqtorture/broker"
	"github.com/rmqtorture/rmqtorture/broker/docker"
	"github.com/rmqtorture/rmqtorture/scenario"
)

// uriPassword is alice's password: distinctive, so that any trace of it in
// an output is found.
const uriPassword = "Zq7-uri-Secret-91x"

// TestRunAgainstURI: a broker rmqtorture did not start (created here,
// through the Docker API, with a user alice and a vhost vh), named with
// --uri. The run contacts no Docker Engine, creates no container, passes
// with exact counts, deletes its queues, and the password is in no output
// and no file. A kill scenario run the same way injects nothing (the
// broker keeps running, never restarted) and says so.
func TestRunAgainstURI(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: needs Docker and the broker image")
	}
	cli := dockerClient(t)
	ctx := context.Background()
	ctr, uri := startUserBrokerAs(t, cli, "alice", uriPassword)
	info, err := cli.ContainerInspect(ctx, ctr.ID)
	if err != nil {
		t.Fatal(err)
	}
	mine := ownContainers(t, cli)

	// From here on the Docker Engine is a listener that only counts.
	docker := dockerCounter(t)
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	dir := t.TempDir()
	const n = 2000
	res, outputs := runURI(t, dir, uri, "run", "baseline", "-f", "../scenarios.yaml", "--messages", strconv.Itoa(n))
	shown := strings.Replace(uri, uriPassword, "xxxxx", 1)
	if res.URI != shown || res.FaultsInjected == nil || *res.FaultsInjected || res.Verdict.Status != scenario.Pass {
		t.Errorf("uri %q, faults_injected %v, verdict %+v; want %q, false, pass", res.URI, res.FaultsInjected, res.Verdict, shown)
	}
	if !strings.HasPrefix(res.BrokerVersion, "RabbitMQ 4.") {
		t.Errorf("broker version %q, want it from the server properties", res.BrokerVersion)
	}
	if len(res.Modes) != 3 {
		t.Fatalf("%d modes, want baseline's 3", len(res.Modes))
	}
	for _, m := range res.Modes {
		confirmed := m.Confirmed
		if m.Mode == scenario.FireAndForget {
			confirmed = m.UnconfirmedDelivered // no confirms: delivered is all it can know
		}
		if m.Sent != n || confirmed != n || m.Delivered != n || m.Lost != 0 || m.InDoubt != 0 || m.UnconfirmedMissing != 0 || m.Duplicates != 0 || m.Unexpected != 0 || len(m.Faults) != 0 {
			t.Errorf("%s: sent %d, confirmed %d, delivered %d, lost %d, in doubt %d, missing %d, duplicates %d, unexpected %d, faults %d; want %d sent, confirmed and delivered, the rest 0",
				m.Mode, m.Sent, confirmed, m.Delivered, m.Lost, m.InDoubt, m.UnconfirmedMissing, m.Duplicates, m.Unexpected, len(m.Faults), n)
		}
	}
	checkNoPassword(t, outputs)

	// A kill scenario: nothing is injected, and every output says so.
	writeFiles(t, dir, map[string]string{"k.yaml": scenarioHead + "    load: {messages: 2000, modes: [confirm-window]}\n    faults: [{action: kill, published_percent: 50, down: 3s}]\n    expect:\n      modes:\n        confirm-window: {min_went_in_doubt: 1}\n"})
	res, outputs = runURI(t, dir, uri, "run", "s", "-f", filepath.Join(dir, "k.yaml"))
	m := res.Modes[0]
	if res.Verdict.Status != scenario.Pass || m.Sent != 2000 || m.Confirmed != 2000 || m.WentInDoubt != 0 || len(m.Faults) != 0 {
		t.Errorf("kill scenario: verdict %+v, sent %d, confirmed %d, went in doubt %d, faults %d; want pass, 2000, 2000, 0, 0", res.Verdict, m.Sent, m.Confirmed, m.WentInDoubt, len(m.Faults))
	}
	for _, name := range []string{"stdout", "report.md", "result.json", "summary"} {
		// The headline wraps its warnings at 100 columns: compare words.
		if !strings.Contains(strings.Join(strings.Fields(outputs[name]), " "), "fault steps were not run (kill at 50% published, down 3s)") {
			t.Errorf("%s does not say the kill was not injected", name)
		}
	}
	checkNoPassword(t, outputs)

	if c := docker.Load(); c != 0 {
		t.Errorf("the runs contacted the Docker Engine %d times", c)
	}
	after, err := cli.ContainerInspect(ctx, ctr.ID)
	if err != nil || !after.State.Running || after.State.StartedAt != info.State.StartedAt {
		t.Errorf("broker after the runs: %+v, %v; want it running since %s, never restarted", after.State, err, info.State.StartedAt)
	}
	if now := ownContainers(t, cli); now != mine {
		t.Errorf("%d containers labelled by this process after the runs, %d before: a run created one", now, mine)
	}
	if out, err := ctr.Exec(ctx, "rabbitmqctl", "-q", "list_queues", "-p", "vh", "name"); err != nil || strings.Contains(out, "rmqt") {
		t.Errorf("queues left in vh: %q, %v", out, err)
	}
}

// startUserBroker starts a broker container the way a user would, AMQP on
// a free port of 127.0.0.1, labelled as this process's so that cleanup
// knows it; it is removed when the test ends. It returns it once
// rabbitmqctl answers.
// startUserBrokerAs starts a user's broker (startUserBroker) with user
// user, password password and the vhost vh, and returns it and its URI
// once it accepts that user's login.
func startUserBrokerAs(t *testing.T, cli *client.Client, user, password string) (*docker.Container, string) {
	t.Helper()
	ctx := context.Background()
	ctr, port := startUserBroker(t, cli)
	for _, cmd := range [][]string{
		{"rabbitmqctl", "add_user", user, password},
		{"rabbitmqctl", "add_vhost", "vh"},
		{"rabbitmqctl", "set_permissions", "-p", "vh", user, ".*", ".*", ".*"},
	} {
		if out, err := ctr.Exec(ctx, cmd...); err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(cmd, " "), err, out)
		}
	}
	uri := "amqp://" + user + ":" + password + "@127.0.0.1:" + strconv.Itoa(port) + "/vh"
	ext, err := broker.NewExternal(uri)
	if err != nil {
		t.Fatal(err)
	}
	if err := ext.WaitReady(ctx, 60*time.Second); err != nil {
		t.Fatal(err)
	}
	return ctr, uri
}

func startUserBroker(t *testing.T, cli *client.Client) (*docker.Container, int) {
	ctx := context.Background()
	port := freeLocalPort(t)
	amqpPort := nat.Port("5672/tcp")
	created, err := cli.ContainerCreate(ctx, &container.Config{Image: brokerImage(), ExposedPorts: nat.PortSet{amqpPort: {}}, Labels: docker.Labels("uri-test", false)},
		&container.HostConfig{PortBindings: nat.PortMap{amqpPort: {{HostIP: "127.0.0.1", HostPort: strconv.Itoa(port)}}}}, nil, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	removeAtEnd(t, cli, created.ID)
	if err := cli.ContainerStart(ctx, created.ID, container.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	ctr, err := docker.Attach(ctx, cli, slog.New(slog.DiscardHandler), created.ID, "")
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(3 * time.Minute)
	for {
		out, err := ctr.Exec(ctx, "rabbitmqctl", "await_startup", "--timeout", "60")
		if err == nil {
			return ctr, port
		}
		if time.Now().After(deadline) {
			t.Fatalf("broker not up: %v\n%s", err, out)
		}
		time.Sleep(time.Second)
	}
}

// ownContainers counts the containers labelled as created by this process.
func ownContainers(t *testing.T, cli *client.Client) int {
	t.Helper()
	list, err := cli.ContainerList(context.Background(), container.ListOptions{All: true,
		Filters: filters.NewArgs(filters.Arg("label", docker.LabelPID+"="+strconv.Itoa(os.Getpid())))})
	if err != nil {
		t.Fatal(err)
	}
	return len(list)
}

// runURI runs args with --uri uri, --out and
// --summary-file under dir, and returns the result and every output:
// stdout, stderr, report.md, result.json and the summary file.
func runURI(t *testing.T, dir, uri string, args ...string) (scenario.Result, map[string]string) {
	t.Helper()
	out := t.TempDir()
	summary := filepath.Join(dir, "summary-"+filepath.Base(out)+".md")
	var stdout, stderr bytes.Buffer
	code := Execute(context.Background(), append(args, "--uri", uri, "--out", out, "--summary-file", summary), &stdout, &stderr)
	t.Logf("exit %d\n%s%s", code, stderr.String(), stdout.String())
	runs, _ := filepath.Glob(filepath.Join(out, "*", "result.json"))
	if code != ExitPass || len(runs) != 1 {
		t.Fatalf("exit %d, %d results; want a pass and one", code, len(runs))
	}
	var res scenario.Result
	resultJSON := readFile(t, runs[0])
	if err := json.Unmarshal([]byte(resultJSON), &res); err != nil {
		t.Fatal(err)
	}
	return res, map[string]string{"stdout": stdout.String(), "stderr": stderr.String(), "result.json": resultJSON,
		"report.md": readFile(t, filepath.Join(filepath.Dir(runs[0]), "report.md")), "summary": readFile(t, summary)}
}

func checkNoPassword(t *testing.T, outputs map[string]string) {
	t.Helper()
	for name, text := range outputs {
		if strings.Contains(text, uriPassword) {
			t.Errorf("%s holds the password", name)
		}
	}
}
