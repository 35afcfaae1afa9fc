package reports

import (
	"bytes"
	"strings"
	"testing"

	"github.com/rmqtorture/rmqtorture/scenario"
)

func clusterResult() *scenario.Result {
	f := func(v float64) *float64 { return &v }
	return &scenario.Result{Modes: []scenario.ModeResult{
		{Mode: scenario.ConfirmEach, Faults: []scenario.FaultRecord{{Action: scenario.Kill, Target: "leader of q (rmq1)", Nodes: []string{"rmq1"},
			LeaderBefore: "rmq1", LeaderAfter: "rmq2", Recovery: &scenario.Recovery{FirstConfirmMS: f(226.7), LeaderElectedMS: f(1726.7), ReplicatedMS: f(18142.9)}}},
			ByNode: []scenario.NodeCount{{Node: "rmq1", Connections: 1, Publishes: 10012, Acked: 10011}, {Node: "rmq2", Connections: 1, Publishes: 9989, Acked: 9989}}},
		{Mode: scenario.ConfirmWindow, Faults: []scenario.FaultRecord{{Action: scenario.QuorumLoss, Target: "majority of q (rmq1, rmq2)", Nodes: []string{"rmq1", "rmq2"},
			LeaderBefore: "rmq1", QuorumLoss: &scenario.QuorumLossOutcome{DownMS: 20250, Published: 3, Acked: 0, Nacked: 0, Unconfirmed: 200, FirstAckAfterMS: f(8750)}}}},
		{Mode: scenario.FireAndForget},
	}}
}

func TestClusterTable(t *testing.T) {
	var b bytes.Buffer
	if err := clusterTable(&b, clusterResult()); err != nil {
		t.Fatal(err)
	}
	want := `┌────────────────┬─────────────┬────────────┬─────────────┬──────────────────┬────────────────────┬───────────────┐
│      mode      │    fault    │     on     │   leader    │ first confirm ms │ new leader seen ms │ replicated ms │
├────────────────┼─────────────┼────────────┼─────────────┼──────────────────┼────────────────────┼───────────────┤
│ confirm-each   │        kill │       rmq1 │ rmq1 → rmq2 │              227 │              1,727 │        18,143 │
│ confirm-window │ quorum-loss │ rmq1, rmq2 │        rmq1 │                - │                  - │             - │
└────────────────┴─────────────┴────────────┴─────────────┴──────────────────┴────────────────────┴───────────────┘
confirm-window, quorum-loss: 20,250 ms without a majority, 200 publishes awaiting a confirm as it went: 3 publishes, 0 basic.ack, 0 basic.nack meanwhile; the first basic.ack came 8,750 ms after the nodes were started
`
	if b.String() != want {
		t.Fatalf("got\n%s\nwant\n%s", b.String(), want)
	}
	b.Reset()
	if err := clusterTable(&b, &scenario.Result{Modes: []scenario.ModeResult{{Mode: scenario.ConfirmEach, Faults: []scenario.FaultRecord{{Action: scenario.Kill}}}}}); err != nil || b.Len() != 0 {
		t.Fatalf("a single broker's run printed %q", b.String())
	}
}

func TestClusterMarkdown(t *testing.T) {
	var b bytes.Buffer
	if err := Markdown(&b, clusterResult()); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"On the cluster: target leader of q (rmq1); rmq1 led the queue; rmq2 was elected (seen 1,727 ms after the fault).",
		"On the cluster: target majority of q (rmq1, rmq2); rmq1 led the queue; 20,250 ms without a majority, 200 publishes awaiting a confirm as it went: 3 publishes, 0 basic.ack, 0 basic.nack meanwhile; the first basic.ack came 8,750 ms after the nodes were started.",
		"| rmq1 |           1 |    10,012 |     10,011 |",
		"| kill  |                 - |              - |                     - |           227 |               - |           1,727 |           18,143 |",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
}

// The leader line says "elected" only for another node: after a quorum
// loss the old leader may lead again once a majority is back.
func TestLeaderAfterWording(t *testing.T) {
	ms := 1234.0
	f := scenario.FaultRecord{Target: "majority", LeaderBefore: "rmq1", LeaderAfter: "rmq1", Recovery: &scenario.Recovery{LeaderElectedMS: &ms}}
	if got, want := clusterFaultLine(f), "target majority; rmq1 led the queue, and led it again once a majority was back (seen 1,234 ms after the fault)"; got != want {
		t.Errorf("same leader:\n%q\nwant\n%q", got, want)
	}
	f.LeaderAfter = "rmq2"
	if got, want := clusterFaultLine(f), "target majority; rmq1 led the queue; rmq2 was elected (seen 1,234 ms after the fault)"; got != want {
		t.Errorf("other leader:\n%q\nwant\n%q", got, want)
	}
}

// A rolling restart's report times each node it restarted.
func TestNodeRecoveryLine(t *testing.T) {
	c := 9100.0
	got := nodeRecoveryLine([]scenario.NodeRecovery{{Node: "rmq1", RestartMS: 0, RunningMS: 3012, AcceptingMS: 7340, CaughtUpMS: &c}, {Node: "rmq2", RestartMS: 9101, RunningMS: 12000, AcceptingMS: 15000}})
	want := "rmq1 restarted at 0.0, running at 3,012, accepting logins at 7,340, caught up at 9,100; rmq2 restarted at 9,101, running at 12,000, accepting logins at 15,000"
	if got != want {
		t.Errorf("%q\nwant %q", got, want)
	}
}

// A healed partition's probes: each node's confirm time, or why none came.
func TestConfirmsText(t *testing.T) {
	v1, v2 := 31204.4, 31260.0
	got := confirmsText([]scenario.NodeConfirm{{Node: "rmq1", ConfirmMS: &v1}, {Node: "rmq2", ConfirmMS: &v2}, {Node: "rmq3", Error: "basic.nack for the probe"}})
	if want := "after the heal a confirm came through rmq1 at 31,204 ms, rmq2 at 31,260 ms, rmq3: none (basic.nack for the probe)"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}
