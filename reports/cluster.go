package reports

import (
	"fmt"
	"io"
	"strings"

	"github.com/rmqtorture/rmqtorture/scenario"
)

// clusterFaultLine says, for a fault on a cluster, what it acted on, who
// led the queue before and after, the partition's sides and what the
// broker did while a majority was down ("" on a single broker).
func clusterFaultLine(f scenario.FaultRecord) string {
	if f.Target == "" {
		return ""
	}
	parts := []string{"target " + f.Target}
	if f.Sides != "" {
		parts = append(parts, "sides "+f.Sides)
	}
	if f.LeaderBefore != "" {
		led := f.LeaderBefore + " led the queue"
		if f.LeaderAfter != "" {
			led += "; " + f.LeaderAfter + " was elected"
			if r := f.Recovery; r != nil && r.LeaderElectedMS != nil {
				led += fmt.Sprintf(" (seen %s ms after the fault)", ms(*r.LeaderElectedMS))
			}
		}
		parts = append(parts, led)
	}
	if q := f.QuorumLoss; q != nil {
		parts = append(parts, fmt.Sprintf("while the majority was down (%s ms): %s publishes, %s basic.ack, %s basic.nack",
			ms(q.DownMS), num(q.Published), num(q.Acked), num(q.Nacked)))
	}
	return strings.Join(parts, "; ")
}

// nodeLines writes per-node publisher counts of a cluster run.
func nodeLines(w io.Writer, m scenario.ModeResult) error {
	if len(m.ByNode) == 0 {
		return nil
	}
	rows := make([][]string, len(m.ByNode))
	for i, n := range m.ByNode {
		rows[i] = []string{n.Node, num(n.Connections), num(n.Publishes), num(n.Acked)}
	}
	fmt.Fprintf(w, "\nPublisher connections per node (they fail over to the next node when theirs is down):\n\n")
	return table(w, true, []string{"node", "connections", "publishes", "basic.acks"}, rows)
}

// clusterRecovery is the cluster columns of a fault's recovery row:
// leader elected and queue replicated again, ms after the fault.
func clusterRecovery(r *scenario.Recovery, opt func(*float64) string) []string {
	return []string{opt(r.LeaderElectedMS), opt(r.ReplicatedMS)}
}
