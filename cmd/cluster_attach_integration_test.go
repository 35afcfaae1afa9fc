package cmd

// `run --containers a,b,c`: a cluster of running containers the user named,
// which rmqtorture acts on but did not create and never removes. The
// cluster is made here with docker.CreateCluster under a run id of the
// test's own, so the run under test finds it as someone else's. -short
// skips it.

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/rmqtorture/rmqtorture/broker/docker"
	"github.com/rmqtorture/rmqtorture/scenario"
)

// attachedScenario kills a follower of a quorum queue on the named
// cluster: the leader keeps its majority, so nothing goes in doubt. After
// the burst, assert-whole finds the cluster whole again (every node
// running, none partitioned) once the follower is back.
const attachedScenario = `version: 1
scenarios:
  - name: attached-follower-kill
    description: SIGKILL a follower of the quorum queue, on a 3-node cluster named with --containers, once half of 1,000 orders are published; start it 2 s later; 1 s after the burst, wait up to 60 s for the cluster to be whole.
    broker: {nodes: 3}
    queue:
      type: quorum
      settle_before_burst: 2s
    load:
      messages: 1000
      modes: [confirm-window]
      window: 100
    faults:
      - action: kill
        target: follower
        published_percent: 50
        down: 2s
      - action: assert-whole
        after_burst: 1s
        timeout: 60s
    expect:
      modes:
        confirm-window: {sent: 1000, confirmed: 1000, lost: 0, nacked: 0, in_doubt: 0, max_went_in_doubt: 0, duplicates: 0}
`

// TestRunOnNamedCluster: a run on a 3-node cluster named with --containers
// passes, names the three containers in its result, warns before it kills
// the follower (a container it did not create), leaves all three running
// (the two it did not touch never restarted) and records nothing left to
// restore, and deletes the queue it declared once drained. Then `cleanup
// --run --dry-run` lists the cluster's containers and networks, skipped
// while the process that labelled them (this test) runs. The cluster is
// the test process's shared one, which the other cluster tests that keep
// their cluster use after it; TestCleanupRemovesNamedCluster (full tier)
// forms one of its own and removes it with `cleanup --run --force`.
func TestRunOnNamedCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: needs Docker and the broker image")
	}
	ctx := context.Background()
	cli := dockerClient(t)
	state := t.TempDir()
	t.Setenv("XDG_STATE_HOME", state)
	file := filepath.Join(t.TempDir(), "attached.yaml")
	if err := os.WriteFile(file, []byte(attachedScenario), 0o644); err != nil {
		t.Fatal(err)
	}
	var names []string
	var ownRun, url string
	if shareable(t, file, "attached-follower-kill", nil) == shared3Nodes {
		names, ownRun, url = sharedClusterRun(t)
		t.Cleanup(func() { resetSharedCluster(t) })
	} else {
		ownRun = "testattach" + strconv.Itoa(os.Getpid())
		c := namedCluster(t, ownRun)
		names, url = nodeNames(c), c.URL()
	}
	ids := make([]string, len(names))
	started := map[string]string{}
	for i, name := range names {
		info, err := cli.ContainerInspect(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		ids[i], started[name] = info.ID, info.State.StartedAt
	}

	began := time.Now()
	code, stdout, stderr := runCLI(t, "run", "attached-follower-kill", "-f", file, "--out", t.TempDir(), "--containers", strings.Join(names, ","), "--log-format", "text")
	t.Logf("measured: the run took %s\n%s", time.Since(began).Round(100*time.Millisecond), stdout)
	if code != ExitPass {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	r := readResult(t, stdout)
	checkNoContainerLeft(t, r.RunID) // the run created nothing of its own
	if r.Verdict.Status != scenario.Pass {
		t.Fatalf("verdict %+v", r.Verdict)
	}
	if r.Nodes != 3 || !slices.Equal(r.NodeContainers, names) || r.Container != strings.Join(names, ", ")+" (3 nodes)" || r.BrokerConfig != nil {
		t.Fatalf("nodes %d, containers %q, container %q, broker config %v; want the 3 named", r.Nodes, r.NodeContainers, r.Container, r.BrokerConfig)
	}
	m := r.Modes[0]
	if len(m.Faults) != 2 || len(m.Faults[0].Nodes) != 1 || m.Faults[0].Nodes[0] == m.Faults[0].LeaderBefore || m.Faults[0].Error != "" {
		t.Fatalf("faults %+v: want one follower killed, then assert-whole", m.Faults)
	}
	if a := m.Faults[1]; a.Action != scenario.AssertWhole || a.Error != "" || a.CallMS <= 0 || a.CallMS > 60000 {
		t.Fatalf("assert-whole %+v: want the cluster seen whole within its 60 s", a)
	}
	killed, err := strconv.Atoi(strings.TrimPrefix(m.Faults[0].Nodes[0], "rmq"))
	if err != nil || killed < 1 || killed > 3 {
		t.Fatalf("killed node %q", m.Faults[0].Nodes[0])
	}
	victim := names[killed-1]

	// Warned once, for the one container acted on, before the kill.
	warning := fmt.Sprintf("acting on container %s, which rmqtorture did not create: it will be killed (SIGKILL) and started again", victim)
	w, k := strings.Index(stderr, warning), strings.Index(stderr, "broker killed")
	if n := strings.Count(stderr, "which rmqtorture did not create"); n != 1 || w < 0 || k < 0 || w > k {
		t.Fatalf("%d warnings; want one, %q, before the kill:\n%s", n, warning, stderr)
	}
	if files, _ := filepath.Glob(filepath.Join(state, "rmqtorture", "*.json")); len(files) != 0 {
		t.Errorf("restore records left: %v", files)
	}

	// The three containers are still there, running; only the killed one
	// started again.
	for i, name := range names {
		info, err := cli.ContainerInspect(ctx, name)
		if err != nil || info.ID != ids[i] || !info.State.Running {
			t.Fatalf("container %s after the run: %v %v", name, info.State, err)
		}
		if again := info.State.StartedAt != started[name]; again != (name == victim) {
			t.Errorf("container %s started at %s, before the run at %s: want a new start for %s only", name, info.State.StartedAt, started[name], victim)
		}
	}

	// The queue the run declared was deleted after the drain.
	conn, err := amqp.DialConfig(url, amqp.Config{Dial: amqp.DefaultDial(5 * time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ch.QueueDeclarePassive(m.Queue, true, false, false, false, nil); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("queue %s after the run: %v, want 404 NOT_FOUND (deleted)", m.Queue, err)
	}

	cleanupDryRun(t, ownRun, names)
}

// TestCleanupRemovesNamedCluster: `cleanup --run` of a 3-node cluster that
// a live process (this test) labelled lists its containers and networks as
// skipped, and with --force removes them all, containers first.
func TestCleanupRemovesNamedCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: needs Docker and the broker image")
	}
	run := "testcleanup" + strconv.Itoa(os.Getpid())
	names := nodeNames(namedCluster(t, run))
	began := time.Now()
	cleanupNamedCluster(t, run, names)
	t.Logf("measured: cleanup --dry-run and cleanup --force took %s", time.Since(began).Round(100*time.Millisecond))
}

// namedCluster forms a 3-node cluster under run id run, as a user would
// with a run of their own, removed when the test ends if still there.
func namedCluster(t *testing.T, run string) *docker.Cluster {
	t.Helper()
	ctx := context.Background()
	formed := time.Now()
	c, err := docker.CreateCluster(ctx, dockerClient(t), slog.New(slog.DiscardHandler), docker.ClusterOptions{Image: brokerImage(), RunID: run, Nodes: 3})
	if c != nil {
		t.Cleanup(func() {
			if err := c.Remove(context.Background()); err != nil {
				t.Errorf("remove the cluster: %v", err)
			}
		})
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := c.WaitFormed(ctx, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	t.Logf("measured: the cluster formed %s after its creation began", time.Since(formed).Round(100*time.Millisecond))
	return c
}

// cleanupDryRun: `cleanup --run run --dry-run` lists a cluster's 3
// containers and 4 networks (clients, and one per pair of nodes), skipped
// while the process that labelled them (this test) runs, and removes
// nothing.
func cleanupDryRun(t *testing.T, run string, names []string) {
	t.Helper()
	code, stdout, stderr := runCLI(t, "cleanup", "--run", run, "--dry-run")
	alive := fmt.Sprintf("its rmqtorture process %d is still running (--force removes it anyway)", os.Getpid())
	var want []string
	for _, n := range names {
		want = append(want, "skipping container "+n+" (run "+run+", running): "+alive)
	}
	for _, n := range clusterNetworks(run) {
		want = append(want, "skipping network "+n+" (run "+run+"): "+alive)
	}
	if got := strings.Split(strings.TrimSpace(stdout), "\n"); code != ExitPass || !slices.Equal(got, want) {
		t.Fatalf("cleanup --run %s --dry-run: exit %d\n%s\nwant:\n%s\n%s", run, code, stdout, strings.Join(want, "\n"), stderr)
	}
	for _, n := range names {
		if _, err := dockerClient(t).ContainerInspect(context.Background(), n); err != nil {
			t.Fatalf("container %s after cleanup --dry-run: %v", n, err)
		}
	}
}

// clusterNetworks are the networks of a 3-node cluster of run run.
func clusterNetworks(run string) []string {
	var nets []string
	for _, n := range []string{"client", "link-1-2", "link-1-3", "link-2-3"} {
		nets = append(nets, "rmqt-"+run+"-"+n)
	}
	return nets
}

// cleanupNamedCluster: cleanupDryRun, then `cleanup --run run --force`
// removes the cluster's containers and networks, containers first.
func cleanupNamedCluster(t *testing.T, run string, names []string) {
	t.Helper()
	cleanupDryRun(t, run, names)
	code, stdout, stderr := runCLI(t, "cleanup", "--run", run, "--force")
	var want []string
	for _, n := range names {
		want = append(want, "removed container "+n+" (run "+run+", running)")
	}
	for _, n := range clusterNetworks(run) {
		want = append(want, "removed network "+n+" (run "+run+")")
	}
	if got := strings.Split(strings.TrimSpace(stdout), "\n"); code != ExitPass || !slices.Equal(got, want) {
		t.Fatalf("cleanup --run %s --force: exit %d\n%s\nwant:\n%s\n%s", run, code, stdout, strings.Join(want, "\n"), stderr)
	}
	noLeftovers(t, run)
}
