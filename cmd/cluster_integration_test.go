package cmd

// Issue #11's cluster scenarios, each a shipped scenario run on a real
// cluster of RabbitMQ containers through the Docker API: the verdict checks
// the scenario's exact expectations, these tests what the cluster did
// beyond them (which node led when, where the publisher failed over to,
// what a quorum loss held back). runScenario also checks that no container
// or network of the run is left.

import (
	"slices"
	"testing"

	"github.com/rmqtorture/rmqtorture/metrics"
	"github.com/rmqtorture/rmqtorture/scenario"
)

// checkCluster checks what every cluster run records: the node containers,
// and per mode a leader event at the start of the burst naming the leader
// the first fault saw.
func checkCluster(t *testing.T, r *scenario.Result, nodes int) {
	t.Helper()
	if r.Nodes != nodes || len(r.NodeContainers) != nodes {
		t.Fatalf("nodes %d, containers %v; want %d", r.Nodes, r.NodeContainers, nodes)
	}
	for _, m := range r.Modes {
		i := slices.IndexFunc(m.Events, func(e metrics.Event) bool { return e.Kind == metrics.EvLeader })
		if i < 0 || m.Events[i].AtMS != 0 || len(m.Faults) == 0 || scenario.NodeName(m.Events[i].Node) != m.Faults[0].LeaderBefore {
			t.Fatalf("%s: first leader event %+v, first fault %+v", m.Mode, m.Events[max(i, 0)], m.Faults)
		}
	}
}

// nodeCounts sums the per-node publisher counts.
func nodeCounts(m scenario.ModeResult) (conns, publishes, acked int) {
	for _, n := range m.ByNode {
		conns, publishes, acked = conns+n.Connections, publishes+n.Publishes, acked+n.Acked
	}
	return
}

// The leader is killed: the publisher, connected to it, fails over to the
// next node in node order; the survivors elect a new leader before the
// killed node is back; in doubt is at most the window and every in-doubt
// id was published again.
func TestLeaderKillMidBurst(t *testing.T) {
	r := runScenario(t, "leader-kill-mid-burst")
	checkCluster(t, r, 3)
	for _, m := range r.Modes {
		f := m.Faults[0]
		next := scenario.NodeName(int(f.LeaderBefore[3]-'0')%3 + 1)
		if !slices.Equal(f.Nodes, []string{f.LeaderBefore}) || f.LeaderAfter == "" || f.LeaderAfter == f.LeaderBefore {
			t.Fatalf("%s: fault %+v: want the leader killed and another elected", m.Mode, f)
		}
		rc := f.Recovery
		if rc == nil || rc.LeaderElectedMS == nil || rc.ReplicatedMS == nil || rc.AMQPAcceptingMS == nil || *rc.LeaderElectedMS >= *rc.AMQPAcceptingMS || *rc.ReplicatedMS < *rc.AMQPAcceptingMS {
			t.Fatalf("%s: recovery %+v: want a leader elected before the killed node is back, replicated after", m.Mode, rc)
		}
		if len(m.ByNode) != 2 || m.ByNode[0].Node != f.LeaderBefore || m.ByNode[1].Node != next || m.ByNode[0].Connections != 1 || m.ByNode[1].Connections != 1 {
			t.Fatalf("%s: by node %+v: want one connection to %s, then one to %s", m.Mode, m.ByNode, f.LeaderBefore, next)
		}
		if conns, pubs, _ := nodeCounts(m); conns != m.Reconnects+1 || pubs < m.Sent {
			t.Fatalf("%s: %d connections and %d publishes over the nodes; %d reconnects, %d sent", m.Mode, conns, pubs, m.Reconnects, m.Sent)
		}
		if m.Mode.ConfirmMode() {
			checkRepublishExact(t, m)
			if m.WentInDoubt > max(m.Window, 1) {
				t.Fatalf("%s: %d went in doubt, window %d", m.Mode, m.WentInDoubt, m.Window)
			}
		}
	}
}

// A follower is killed: the leader keeps its majority, so the publisher's
// connection to it never breaks and nothing goes in doubt; the follower
// catches up once back. The leader does not change.
func TestFollowerKillMidBurst(t *testing.T) {
	r := runScenario(t, "follower-kill-mid-burst")
	checkCluster(t, r, 3)
	for _, m := range r.Modes {
		f := m.Faults[0]
		if len(f.Nodes) != 1 || f.Nodes[0] == f.LeaderBefore || f.LeaderAfter != "" {
			t.Fatalf("%s: fault %+v: want a follower killed and no new leader", m.Mode, f)
		}
		if f.Recovery == nil || f.Recovery.ReplicatedMS == nil || f.Recovery.LeaderElectedMS != nil {
			t.Fatalf("%s: recovery %+v", m.Mode, f.Recovery)
		}
		if len(m.ByNode) != 1 || m.ByNode[0].Node != f.LeaderBefore || m.ByNode[0].Connections != 1 || m.ByNode[0].Publishes != m.Sent || m.Reconnects != 0 {
			t.Fatalf("%s: by node %+v reconnects %d", m.Mode, m.ByNode, m.Reconnects)
		}
	}
}

// A majority is stopped while the publisher is connected to the third
// node: no basic.ack (no false ack) and no basic.nack while it is down;
// what awaited a confirm is confirmed once the majority is back, within
// the 60 s confirm timeout, so nothing goes in doubt.
func TestQuorumLoss(t *testing.T) {
	r := runScenario(t, "quorum-loss")
	checkCluster(t, r, 3)
	for _, m := range r.Modes {
		f := m.Faults[0]
		q := f.QuorumLoss
		if len(f.Nodes) != 2 || !slices.Contains(f.Nodes, f.LeaderBefore) || q == nil {
			t.Fatalf("%s: fault %+v: want the leader and a follower stopped", m.Mode, f)
		}
		if q.Acked != 0 || q.Nacked != 0 || q.Unconfirmed < 1 || q.Unconfirmed > max(m.Window, 1) || q.FirstAckAfterMS == nil || q.DownMS < 18000 {
			t.Fatalf("%s: quorum loss %+v", m.Mode, *q)
		}
		if len(m.ByNode) != 1 || m.ByNode[0].Node != "rmq3" || m.ByNode[0].Connections != 1 || m.Reconnects != 0 || m.WentInDoubt != 0 || m.Duplicates != 0 {
			t.Fatalf("%s: by node %+v reconnects %d went in doubt %d duplicates %d", m.Mode, m.ByNode, m.Reconnects, m.WentInDoubt, m.Duplicates)
		}
		if f.LeaderAfter == "" || f.Recovery.ReplicatedMS == nil {
			t.Fatalf("%s: no leader or replication seen after the majority came back: %+v %+v", m.Mode, f, f.Recovery)
		}
	}
}
