package cmd

// The power-loss fault (issue 26): a broker whose data directory is a
// lazy filesystem (broker.filesystem: lazy) loses what it never fsynced.

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rmqtorture/rmqtorture/broker/docker"
	"github.com/rmqtorture/rmqtorture/broker/lazyfs"
	"github.com/rmqtorture/rmqtorture/scenario"
)

// needFUSE skips, saying why, where a lazy filesystem cannot be mounted.
func needFUSE(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test: needs Docker, FUSE and the broker image")
	}
	if _, err := os.Stat("/dev/fuse"); err != nil {
		t.Skipf("no /dev/fuse (%v): broker.filesystem: lazy cannot be mounted here", err)
	}
	if os.Getuid() != 0 {
		t.Skip("broker.filesystem: lazy is mounted as root")
	}
}

// checkNoLazyLeft fails when a lazy filesystem of run's containers is still
// mounted (/proc/mounts) or its folder is still there.
func checkNoLazyLeft(t *testing.T, run string) {
	t.Helper()
	mounts, err := lazyfs.Mounts()
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range mounts {
		if strings.Contains(m, "rmqt-"+run) {
			t.Errorf("run %s left a lazy filesystem mounted on %s", run, m)
		}
	}
	left, err := docker.LazyLeftovers()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range left {
		if strings.HasPrefix(l.Container, "rmqt-"+run) {
			t.Errorf("run %s left its lazy filesystem's folder %s (mounted: %v)", run, l.Dir, l.Mounted)
		}
	}
}

// checkPowerCuts checks that every mode's power-loss step cut one node and
// that its control files prove it: the synced one kept, the unsynced one's
// 27 bytes ("rmqtorture-control-unsynced") among those dropped.
func checkPowerCuts(t *testing.T, r *scenario.Result) {
	t.Helper()
	for _, m := range r.Modes {
		if len(m.Faults) != 1 || len(m.Faults[0].PowerLoss) != 1 {
			t.Fatalf("%s: faults %+v, want one power-loss step cutting one node", m.Mode, m.Faults)
		}
		c := m.Faults[0].PowerLoss[0]
		if !c.Proven() || c.Node != r.Container || c.DroppedFiles < 1 || c.DroppedBytes < int64(len("rmqtorture-control-unsynced")) {
			t.Errorf("%s: power cut %+v: want it proven on %s, the unsynced control file's 27 bytes among those dropped", m.Mode, c, r.Container)
		}
	}
}

// TestPowerLossDropsUnsyncedWrites: a power cut mid-burst on a quorum
// queue, one node. The control files prove the cut dropped what was not
// synced, and the quorum queue, which fsyncs its log before it confirms,
// lost none of the 4,000 confirmed orders (the scenario's expectations).
func TestPowerLossDropsUnsyncedWrites(t *testing.T) {
	needFUSE(t)
	r := runScenario(t, "power-loss-quorum", "--mode", "confirm-window")
	checkPowerCuts(t, r)
	m := r.Modes[0]
	if m.Lost != 0 || m.Confirmed != 4000 || m.LostAllowed {
		t.Errorf("confirm-window: lost %d, confirmed %d, loss allowed %v: want 0, 4000, false", m.Lost, m.Confirmed, m.LostAllowed)
	}
	checkNoLazyLeft(t, r.RunID)
}

// TestPowerLossClassicAndStream: the same cut on a classic queue and on a
// stream loses confirmed orders (neither fsyncs before it confirms), and
// the run passes because the loss is the queue's design, named in the
// result; every cut is proven.
func TestPowerLossClassicAndStream(t *testing.T) {
	needFUSE(t)
	for name, label := range map[string]string{
		"power-loss-classic": "power loss on a classic queue",
		"power-loss-stream":  "power loss on a stream",
	} {
		t.Run(name, func(t *testing.T) {
			r := runScenario(t, name)
			checkPowerCuts(t, r)
			for _, m := range r.Modes {
				acked := *m.Faults[0].AckedAtInject
				if m.Lost < 1 || !m.LostAllowed || !strings.Contains(m.LostAllowedReason, label) {
					t.Errorf("%s: lost %d (allowed %v, %q), want a loss allowed as %q", m.Mode, m.Lost, m.LostAllowed, m.LostAllowedReason, label)
				}
				t.Logf("%s: %d confirmed before the cut, %d confirmed orders lost", m.Mode, acked, m.Lost)
			}
			checkNoLazyLeft(t, r.RunID)
		})
	}
}

// TestPowerLossInterruptAndKill: Ctrl-C during a power-loss run leaves no
// container and no mount; SIGKILL of rmqtorture leaves both (the dead
// process's mount stays in /proc/mounts), and `cleanup` removes both.
func TestPowerLossInterruptAndKill(t *testing.T) {
	needFUSE(t)
	bin := buildBinary(t)
	cli := dockerClient(t)
	env := []string{"XDG_STATE_HOME=" + t.TempDir()}
	args := []string{"run", "power-loss-quorum", "--mode", "confirm-each", "-f", "../scenarios.yaml", "--out", t.TempDir()}
	if img := os.Getenv("RMQT_IMAGE"); img != "" {
		args = append(args, "--image", img)
	}

	p := startProc(t, bin, env, args...)
	runID := p.waitFor(t, runIDre, time.Minute)
	removeRunAtEnd(t, cli, runID)
	p.waitFor(t, "burst started", 2*time.Minute)
	if err := p.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if code := p.wait(t, 3*time.Minute); code != ExitInterrupted {
		t.Fatalf("interrupted run: exit %d, want %d\n%s", code, ExitInterrupted, p.text())
	}
	if n := len(runContainers(t, cli, runID)); n != 0 {
		t.Errorf("interrupted run %s left %d containers", runID, n)
	}
	checkNoLazyLeft(t, runID)

	killed, _ := killRun(t, bin, env, args, cli, "burst started", 0)
	mounted := false
	left, _ := docker.LazyLeftovers()
	for _, l := range left {
		mounted = mounted || (l.Container == "rmqt-"+killed && l.Mounted)
	}
	if !mounted {
		t.Fatalf("run %s killed with SIGKILL: its lazy filesystem is not in /proc/mounts (%+v)", killed, left)
	}
	code, stdout, stderr := runBin(t, bin, env, "cleanup", "--run", killed)
	t.Log("\n" + stdout)
	if code != ExitPass || !strings.Contains(stdout, "unmounted and removed lazy filesystem "+filepath.Join(docker.LazyRoot(), "rmqt-"+killed)) {
		t.Fatalf("cleanup --run %s: exit %d\n%s%s", killed, code, stdout, stderr)
	}
	if n := len(runContainers(t, cli, killed)); n != 0 {
		t.Errorf("run %s: %d containers left after cleanup", killed, n)
	}
	checkNoLazyLeft(t, killed)
}

// TestPowerLossCluster: every node of a 3-node cluster loses power at
// once; each node's cut is proven. The quorum queue loses none of the
// 4,000 confirmed orders (the scenario's expectations); the stream, which
// never fsyncs, loses at least every order confirmed before the cut's
// trigger, and the run passes naming that loss as the stream's design.
func TestPowerLossCluster(t *testing.T) {
	needFUSE(t)
	for _, name := range []string{"power-loss-cluster-quorum", "power-loss-cluster-stream"} {
		t.Run(name, func(t *testing.T) {
			r := runScenario(t, name)
			m := r.Modes[0]
			if len(m.Faults) != 1 || len(m.Faults[0].PowerLoss) != 3 {
				t.Fatalf("faults %+v, want one power-loss step cutting 3 nodes", m.Faults)
			}
			for i, c := range m.Faults[0].PowerLoss {
				if want := r.NodeContainers[i]; !c.Proven() || c.Node != want || c.DroppedBytes < int64(len("rmqtorture-control-unsynced")) {
					t.Errorf("node %d: power cut %+v: want it proven on %s, the unsynced control file among what was dropped", i+1, c, want)
				}
			}
			switch acked := *m.Faults[0].AckedAtInject; name {
			case "power-loss-cluster-quorum":
				if m.Lost != 0 || m.Confirmed != 4000 {
					t.Errorf("lost %d, confirmed %d: want 0, 4000", m.Lost, m.Confirmed)
				}
			default:
				if acked < 1 || m.Lost < acked || !m.LostAllowed || m.LostAllowedReason != "power loss on a stream" {
					t.Errorf("lost %d of %d confirmed before the cut (allowed %v, %q): want every one lost, allowed as power loss on a stream", m.Lost, acked, m.LostAllowed, m.LostAllowedReason)
				}
				t.Logf("%d confirmed before the cut's trigger, %d confirmed orders lost", acked, m.Lost)
			}
			checkNoLazyLeft(t, r.RunID)
		})
	}
}

// TestPowerLossClusterPart cuts part of a 3-node cluster: the leader (of a
// quorum queue, of a stream) or a majority. Only the stream's majority may
// lose confirmed orders, and then only as the stream's design; every cut
// is proven on the nodes the step named.
func TestPowerLossClusterPart(t *testing.T) {
	needFUSE(t)
	for _, tc := range []struct {
		name  string
		cut   int  // nodes cut
		lossy bool // a loss is allowed (and named)
	}{
		{"power-loss-cluster-quorum-leader", 1, false},
		{"power-loss-cluster-quorum-majority", 2, false},
		{"power-loss-cluster-stream-leader", 1, false},
		{"power-loss-cluster-stream-majority", 2, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := runScenario(t, tc.name)
			m := r.Modes[0]
			if len(m.Faults) != 1 || len(m.Faults[0].PowerLoss) != tc.cut || len(m.Faults[0].Nodes) != tc.cut {
				t.Fatalf("faults %+v, want one power-loss step cutting %d nodes", m.Faults, tc.cut)
			}
			f := m.Faults[0]
			for i, c := range f.PowerLoss {
				if want := "rmqt-" + r.RunID + "-" + strings.TrimPrefix(f.Nodes[i], "rmq"); !c.Proven() || c.Node != want {
					t.Errorf("power cut %+v: want it proven on %s", c, want)
				}
			}
			if tc.cut == 1 && (f.LeaderBefore != f.Nodes[0] || f.LeaderAfter == "" || f.LeaderAfter == f.LeaderBefore) {
				t.Errorf("leader before %q, after %q, cut %v: want the leader cut and another node leading after", f.LeaderBefore, f.LeaderAfter, f.Nodes)
			}
			switch {
			case !tc.lossy && (m.Lost != 0 || m.Confirmed != 4000):
				t.Errorf("lost %d, confirmed %d: want 0, 4000", m.Lost, m.Confirmed)
			case tc.lossy && m.Lost > 0 && (!m.LostAllowed || m.LostAllowedReason != "power loss on a stream"):
				t.Errorf("lost %d (allowed %v, %q): want it allowed as power loss on a stream", m.Lost, m.LostAllowed, m.LostAllowedReason)
			}
			t.Logf("cut %v, leader before %s, after %s: %d lost, %d duplicates", f.Nodes, f.LeaderBefore, f.LeaderAfter, m.Lost, m.Duplicates)
			checkNoLazyLeft(t, r.RunID)
		})
	}
}
