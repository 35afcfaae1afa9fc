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
		seen := ""
		if r := f.Recovery; r != nil && r.LeaderElectedMS != nil {
			seen = fmt.Sprintf(" (seen %s ms after the fault)", ms(*r.LeaderElectedMS))
		}
		switch f.LeaderAfter {
		case "":
		case f.LeaderBefore:
			// After a quorum loss the old leader may lead again once a
			// majority is back: no other node was elected.
			led += ", and led it again once a majority was back" + seen
		default:
			led += "; " + f.LeaderAfter + " was elected" + seen
		}
		parts = append(parts, led)
	}
	if q := f.QuorumLoss; q != nil {
		parts = append(parts, quorumLossText(q))
	}
	if len(f.ConfirmsThroughNodes) > 0 {
		parts = append(parts, confirmsText(f.ConfirmsThroughNodes))
	}
	return strings.Join(parts, "; ")
}

// confirmsText says when, after a partition healed, a probe's confirm came
// through each node: "after the heal a confirm came through rmq1 at
// 31,204 ms, rmq2 at 31,260 ms, rmq3: none (basic.nack for the probe)".
func confirmsText(cs []scenario.NodeConfirm) string {
	out := make([]string, len(cs))
	for i, c := range cs {
		if c.ConfirmMS != nil {
			out[i] = fmt.Sprintf("%s at %s ms", c.Node, ms(*c.ConfirmMS))
		} else {
			out[i] = fmt.Sprintf("%s: none (%s)", c.Node, c.Error)
		}
	}
	return "after the heal a confirm came through " + strings.Join(out, ", ")
}

// nodeRecoveryLine times each node a rolling restart restarted: "rmq1
// restarted at 0, running at 3,012, accepting logins at 7,340, caught up
// at 9,100; rmq2 …" ("" for none).
func nodeRecoveryLine(nodes []scenario.NodeRecovery) string {
	out := make([]string, len(nodes))
	for i, n := range nodes {
		out[i] = fmt.Sprintf("%s restarted at %s, running at %s, accepting logins at %s", n.Node, ms(n.RestartMS), ms(n.RunningMS), ms(n.AcceptingMS))
		if n.CaughtUpMS != nil {
			out[i] += ", caught up at " + ms(*n.CaughtUpMS)
		}
	}
	return strings.Join(out, "; ")
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

// clusterTable writes, for a run on a cluster, one row per fault of each
// mode: what it acted on, who led the queue before and after, and the
// times that matter on a cluster (first confirm after the fault, new
// leader seen, queue fully replicated again), then a line per quorum-loss
// step saying what the broker did meanwhile. Nothing on a single broker.
func clusterTable(w io.Writer, r *scenario.Result) error {
	var rows [][]string
	var lines []string
	for _, m := range r.Modes {
		for _, f := range m.Faults {
			if f.Target == "" {
				continue
			}
			opt := func(v *float64) string {
				if v == nil {
					return "-"
				}
				return ms(*v)
			}
			leader := f.LeaderBefore
			if f.LeaderAfter != "" {
				leader += " → " + f.LeaderAfter
			}
			row := []string{label(m), string(f.Action), strings.Join(f.Nodes, ", "), leader, "-", "-", "-"}
			if rc := f.Recovery; rc != nil {
				row[4], row[5], row[6] = opt(rc.FirstConfirmMS), opt(rc.LeaderElectedMS), opt(rc.ReplicatedMS)
			}
			rows = append(rows, row)
			if q := f.QuorumLoss; q != nil {
				lines = append(lines, fmt.Sprintf("%s, %s: %s", label(m), f.Action, quorumLossText(q)))
			}
		}
	}
	if rows == nil {
		return nil
	}
	if err := table(w, false, []string{"mode", "fault", "on", "leader", "first confirm ms", "new leader seen ms", "replicated ms"}, rows); err != nil {
		return err
	}
	for _, l := range lines {
		fmt.Fprintln(w, l)
	}
	return nil
}

// quorumLossText says what the broker did while a majority was down.
func quorumLossText(q *scenario.QuorumLossOutcome) string {
	out := fmt.Sprintf("%s ms without a majority, %s publishes awaiting a confirm as it went: %s publishes, %s basic.ack, %s basic.nack meanwhile",
		ms(q.DownMS), num(q.Unconfirmed), num(q.Published), num(q.Acked), num(q.Nacked))
	if q.FirstAckAfterMS != nil {
		out += fmt.Sprintf("; the first basic.ack came %s ms after the nodes were started", ms(*q.FirstAckAfterMS))
	}
	return out
}
