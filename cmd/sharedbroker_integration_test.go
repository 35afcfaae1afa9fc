package cmd

// One broker per test process (a shard of scripts/test.sh) for the
// single-node scenario tests that leave their broker as they found it: each
// run attaches to it with --container, as a user's run attaches to a broker
// of their own, instead of creating, booting and removing a container of its
// own (a first boot costs 4-6 s, and the removal more). Between tests the
// broker is reset and checked; one a test left broken is replaced.

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/pkg/stdcopy"

	"github.com/rmqtorture/rmqtorture/broker/docker"
	"github.com/rmqtorture/rmqtorture/scenario"
)

// shared is the test process's broker; nil until a test asks for it, and
// again after a test left it unfit. sharedCl is its 3-node cluster, the
// same way.
var (
	shared struct {
		mu  sync.Mutex
		ctr *docker.Container
	}
	sharedCl struct {
		mu  sync.Mutex
		c   *docker.Cluster
		run string // the run id its containers and networks are labelled with
	}
)

// TestMain removes the shared broker when the process's tests are done.
func TestMain(m *testing.M) {
	// The tests' output is the same wherever they run: under GitHub
	// Actions a run would add its annotations to stdout
	// (TestJUnitAndAnnotations sets the variable itself).
	os.Unsetenv(githubActions)
	code := m.Run()
	shared.mu.Lock()
	if shared.ctr != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		_ = shared.ctr.Remove(ctx)
		cancel()
	}
	shared.mu.Unlock()
	sharedCl.mu.Lock()
	if sharedCl.c != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		_ = sharedCl.c.Remove(ctx)
		cancel()
	}
	sharedCl.mu.Unlock()
	os.Exit(code)
}

// sharing is what a scenario can run on: its own broker (0), the shared
// broker (1) or the shared 3-node cluster (3).
type sharing int

const (
	ownBroker    sharing = 0
	sharedNode   sharing = 1
	shared3Nodes sharing = 3
)

// shareable says where scenario name of file can run: on the shared broker
// when it needs one node of the test image, with no configuration written
// into the container before its first start, no stream plugin, and no flag
// that provisions a broker of its own; on the shared cluster when it needs
// three such nodes and cuts no link between them (a cluster attached with
// --containers cannot be partitioned: its links are not the run's).
func shareable(t *testing.T, file, name string, extra []string) sharing {
	t.Helper()
	if os.Getenv("RMQT_TEST_NO_SHARED_BROKER") != "" {
		return ownBroker
	}
	for _, a := range extra {
		switch strings.SplitN(a, "=", 2)[0] {
		case "--image", "--images", "--nodes", "--container", "--containers", "--uri":
			return ownBroker
		}
	}
	f, err := scenario.LoadFile(file)
	if err != nil {
		return ownBroker // the run itself reports it
	}
	for _, s := range f.Scenarios {
		if s.Name != name {
			continue
		}
		b := s.Broker
		stream := s.Queue.Type == scenario.Stream
		// After a disconnect and its reconnect, rabbitmqctl once found no
		// node on the shared broker ("unable to connect to epmd", under
		// load; not reproduced by hand), so such a run's broker is its own.
		moved := slices.ContainsFunc(s.Faults, func(f scenario.Fault) bool {
			return f.Action == scenario.Disconnect || f.Action == scenario.Partition
		})
		plain := len(b.Config) == 0 && len(b.AdvancedConfig) == 0 && len(b.Images) == 0 && b.Filesystem == "" &&
			(b.Image == "" || b.Image == testImage()) && !stream && !moved
		switch {
		case !plain:
		case b.Nodes <= 1:
			return sharedNode
		case b.Nodes == 3:
			return shared3Nodes
		}
		return ownBroker
	}
	return ownBroker
}

// sharedBroker returns the process's broker, creating it when there is
// none: a labelled container kept from cleanup's default sweep (other tests
// run cleanup), removed by TestMain.
func sharedBroker(t *testing.T) *docker.Container {
	t.Helper()
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.ctr != nil {
		return shared.ctr
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cli := dockerClient(t)
	sweepDeadShared(ctx, t, cli)
	id := fmt.Sprintf("shared-%d-%d", os.Getpid(), time.Now().UnixNano()%1e6)
	ctr, err := docker.Create(ctx, cli, slog.New(slog.NewTextHandler(io.Discard, nil)), docker.CreateOptions{Image: testImage(), RunID: id, Keep: true})
	if err != nil {
		if ctr != nil {
			_ = ctr.Remove(context.Background())
		}
		t.Fatalf("shared broker: %v", err)
	}
	if err := ctr.WaitReady(ctx, scenario.Target{}, time.Minute); err != nil {
		_ = ctr.Remove(context.Background())
		t.Fatalf("shared broker: %v", err)
	}
	shared.ctr = ctr
	return ctr
}

// sweepDeadShared removes, once per test process, the shared brokers and
// clusters of test processes that ended without their TestMain: a test
// that panicked ends its process at once, and its kept broker (which
// cleanup's default sweep leaves, as it leaves a user's --keep) would stay
// behind for good.
func sweepDeadShared(ctx context.Context, t *testing.T, cli *docker.Engine) {
	t.Helper()
	sweepOnce.Do(func() {
		all, err := docker.Labelled(ctx, cli)
		if err != nil {
			t.Logf("shared brokers of ended test processes: %v", err)
			return
		}
		for _, r := range all {
			ours := strings.HasPrefix(r.Run, "shared-") || strings.HasPrefix(r.Run, "sharedcl-")
			if !ours || !r.Keep || !r.Mine() || r.Owner.Unseen() || r.Owner.Alive() {
				continue
			}
			t.Logf("removing %s %s: its test process %d ended without removing it", r.Kind, r.Name, r.Owner.PID)
			if err := docker.RemoveResource(ctx, cli, r); err != nil {
				t.Logf("%s %s: %v", r.Kind, r.Name, err)
			}
		}
	})
}

var sweepOnce sync.Once

// resetShared makes the shared broker fit for the next test, or drops it
// (the next test creates another): it must accept an AMQP login, hold no
// queue (every run deletes its own), and raise no alarm (every alarm fault
// restores its limit). A test that failed drops it whatever it looks like.
func resetShared(t *testing.T) {
	t.Helper()
	shared.mu.Lock()
	defer shared.mu.Unlock()
	ctr := shared.ctr
	if ctr == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	why := ""
	if t.Failed() {
		why = "the test failed"
	} else if err := ctr.WaitReady(ctx, scenario.Target{}, 30*time.Second); err != nil {
		why = err.Error()
	} else if out, err := ctr.Exec(ctx, "rabbitmqctl", "-q", "eval",
		`{length(rabbit_amqqueue:list()), rabbit_alarm:get_alarms()}.`); err != nil || strings.TrimSpace(out) != "{0,[]}" {
		why = fmt.Sprintf("queues and alarms left: %q (%v)", out, err)
	}
	if why == "" {
		return
	}
	t.Logf("replacing the shared broker %s: %s; its last log lines:\n%s", ctr.Name, why, logTail(ctx, t, ctr.ID, 80))
	_ = ctr.Remove(context.Background())
	shared.ctr = nil
}

// sharedCluster returns the process's 3-node cluster, forming it when there
// is none (kept from cleanup's default sweep, removed by TestMain), as the
// names of its containers in node order.
func sharedCluster(t *testing.T) []string {
	t.Helper()
	sharedCl.mu.Lock()
	defer sharedCl.mu.Unlock()
	if sharedCl.c == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		cli := dockerClient(t)
		sweepDeadShared(ctx, t, cli)
		id := fmt.Sprintf("sharedcl-%d-%d", os.Getpid(), time.Now().UnixNano()%1e6)
		c, err := docker.CreateCluster(ctx, cli, slog.New(slog.DiscardHandler), docker.ClusterOptions{Image: testImage(), RunID: id, Nodes: 3, Keep: true})
		if err == nil {
			err = c.WaitFormed(ctx, 2*time.Minute)
		}
		if err != nil {
			if c != nil {
				_ = c.Remove(context.Background())
			}
			t.Fatalf("shared cluster: %v", err)
		}
		sharedCl.c, sharedCl.run = c, id
	}
	return nodeNames(sharedCl.c)
}

// nodeNames are the names of c's containers, in node order.
func nodeNames(c *docker.Cluster) []string {
	var names []string
	for _, n := range c.Nodes() {
		names = append(names, n.Name)
	}
	return names
}

// sharedClusterRun is the shared cluster's run id (the label its
// containers and networks carry, as a user's cluster formed by a run with
// --keep would) and its first node's AMQP URL; sharedCluster forms it first
// when there is none.
func sharedClusterRun(t *testing.T) (names []string, run, url string) {
	t.Helper()
	names = sharedCluster(t)
	sharedCl.mu.Lock()
	defer sharedCl.mu.Unlock()
	return names, sharedCl.run, sharedCl.c.URL()
}

// resetSharedCluster makes the shared cluster fit for the next test, or
// drops it: every node must accept an AMQP login, see all three running,
// raise no alarm, and the cluster hold no queue. A test that failed drops
// it whatever it looks like.
func resetSharedCluster(t *testing.T) {
	t.Helper()
	sharedCl.mu.Lock()
	defer sharedCl.mu.Unlock()
	c := sharedCl.c
	if c == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	why := ""
	if t.Failed() {
		why = "the test failed"
	}
	for _, n := range c.Nodes() {
		if why != "" {
			break
		}
		if err := n.WaitReady(ctx, scenario.Target{}, 30*time.Second); err != nil {
			why = err.Error()
		} else if out, err := n.Exec(ctx, "rabbitmqctl", "-q", "eval",
			`{length(rabbit_amqqueue:list()), length(rabbit_mnesia:cluster_nodes(running)), rabbit_alarm:get_alarms()}.`); err != nil || strings.TrimSpace(out) != "{0,3,[]}" {
			why = fmt.Sprintf("%s: queues, running nodes and alarms %q (%v)", n.Name, out, err)
		}
	}
	if why == "" {
		return
	}
	t.Logf("replacing the shared cluster: %s", why)
	_ = c.Remove(context.Background())
	sharedCl.c = nil
}

// logTail is the last n lines of a container's log (stdout and stderr),
// for a test's account of why it dropped a broker: a crash report or a
// stalled queue's recovery is there, and gone once the container is.
func logTail(ctx context.Context, t *testing.T, id string, n int) string {
	rc, err := dockerClient(t).ContainerLogs(ctx, id, container.LogsOptions{ShowStdout: true, ShowStderr: true, Tail: strconv.Itoa(n)})
	if err != nil {
		return fmt.Sprintf("(log not read: %v)", err)
	}
	defer rc.Close()
	var out strings.Builder
	if _, err := stdcopy.StdCopy(&out, &out, io.LimitReader(rc, 1<<20)); err != nil {
		fmt.Fprintf(&out, "(log cut: %v)", err)
	}
	return out.String()
}
