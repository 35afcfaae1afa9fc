package cmd

// A stream on a 3-node cluster: each node's stream port advertised as its
// own, the writer followed through rabbitmq-streams stream_status.

import (
	"slices"
	"testing"
)

// TestStreamClusterKillLeader kills the node that leads a stream (its
// writer, read from stream_status) halfway through 2,000 orders. The
// step names the leader it killed and the replica that took over, and
// nothing confirmed is lost: a SIGKILL keeps the page cache, and the
// survivors hold every confirmed message (a stream confirms once a
// majority of its members have written it).
func TestStreamClusterKillLeader(t *testing.T) {
	const file = `version: 1
scenarios:
  - name: stream-cluster-kill-leader
    broker: {nodes: 3}
    queue: {type: stream}
    load: {messages: 2000, rate: 2000, modes: [confirm-window]}
    faults:
      - {action: kill, target: leader, published_percent: 50, down: 1s}
    expect:
      modes:
        confirm-window: {sent: 2000, lost: 0, nacked: 0}
`
	r := runScenarioFile(t, file, "stream-cluster-kill-leader")
	m := r.Modes[0]
	if len(m.Faults) != 1 {
		t.Fatalf("faults %+v, want one kill", m.Faults)
	}
	f := m.Faults[0]
	nodes := []string{"rmq1", "rmq2", "rmq3"}
	if !slices.Contains(nodes, f.LeaderBefore) || !slices.Equal(f.Nodes, []string{f.LeaderBefore}) {
		t.Errorf("kill of the leader: leader before %q, nodes %v: want the stream's writer killed", f.LeaderBefore, f.Nodes)
	}
	if !slices.Contains(nodes, f.LeaderAfter) || f.LeaderAfter == f.LeaderBefore {
		t.Errorf("leader after %q (before %q): want a replica elected writer", f.LeaderAfter, f.LeaderBefore)
	}
	if m.Lost != 0 || m.Confirmed != 2000 {
		t.Errorf("lost %d, confirmed %d: want 0, 2000", m.Lost, m.Confirmed)
	}
}
