package engine

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/rmqtorture/rmqtorture/metrics"
	"github.com/rmqtorture/rmqtorture/scenario"
)

// fakeCluster is a 3-node cluster over fakeBroker: the queue's leader is
// rmq1 until a fault takes it down; the next poll then finds the lowest
// surviving node leading and the downed nodes' members timing out, and a
// start brings them back as followers.
type fakeCluster struct {
	*fakeBroker
	cmu    sync.Mutex
	leader int
	down   map[int]bool
	polls  int
	// partitions is what Partitions reports (nil: none).
	partitions map[string][]string
}

func newFakeCluster() *fakeCluster {
	return &fakeCluster{fakeBroker: &fakeBroker{}, leader: 1, down: map[int]bool{}}
}

func (c *fakeCluster) Size() int { return 3 }

func (c *fakeCluster) Resolve(_ context.Context, t scenario.Target, pick func(int) int) (scenario.Target, error) {
	m, _ := c.Members(context.Background(), t.Queue)
	return t.Resolve(3, m, pick)
}

func (c *fakeCluster) Members(context.Context, string) (map[int]string, error) {
	c.cmu.Lock()
	defer c.cmu.Unlock()
	c.polls++
	if c.down[c.leader] {
		c.leader = 0
		for n := 1; n <= 3 && c.leader == 0; n++ {
			if !c.down[n] {
				c.leader = n
			}
		}
	}
	m := map[int]string{}
	for n := 1; n <= 3; n++ {
		switch {
		case c.down[n]:
			m[n] = "timeout"
		case n == c.leader:
			m[n] = scenario.MemberLeader
		default:
			m[n] = scenario.MemberFollower
		}
	}
	return m, nil
}

func (c *fakeCluster) Partition(context.Context, scenario.Target, scenario.PartitionShape) (string, error) {
	return "", nil
}
func (c *fakeCluster) Heal(context.Context) (string, error) { return "", nil }

func (c *fakeCluster) Partitions(context.Context) (map[string][]string, error) {
	c.cmu.Lock()
	defer c.cmu.Unlock()
	return c.partitions, nil
}

// WaitWhole is whole at once, or a partition at once when partitions is
// set (the fake does not wait out the timeout).
func (c *fakeCluster) WaitWhole(ctx context.Context, _ time.Duration) error {
	c.noteDeadline(ctx, &c.callLeft)
	c.cmu.Lock()
	defer c.cmu.Unlock()
	if len(c.partitions) > 0 {
		return &PartitionError{Seen: c.partitions}
	}
	return nil
}

func (c *fakeCluster) mark(t scenario.Target, down bool) {
	c.cmu.Lock()
	defer c.cmu.Unlock()
	for _, n := range t.Nodes {
		c.down[n] = down
	}
}

func (c *fakeCluster) Kill(ctx context.Context, t scenario.Target, sig string) error {
	c.mark(t, true)
	return c.fakeBroker.Kill(ctx, t, sig)
}

func (c *fakeCluster) Start(ctx context.Context, t scenario.Target) error {
	c.mark(t, false)
	return c.fakeBroker.Start(ctx, t)
}

func (c *fakeCluster) Stop(ctx context.Context, t scenario.Target, grace time.Duration) error {
	c.mark(t, true)
	return c.fakeBroker.Stop(ctx, t, grace)
}

var _ Cluster = (*fakeCluster)(nil)

func clusterScenario(action scenario.Action, down time.Duration) *scenario.Scenario {
	s := testScenario(300, 50)
	s.Broker.Nodes = 3
	s.Faults[0].Action = action
	s.Faults[0].Down = scenario.Duration(down)
	return s
}

// A kill with no target on a cluster kills the queue's leader as the view
// saw it when the step fired, and starts that same node again, though
// another leads by then; the timeline says who led when.
func TestClusterKillTargetsTheLeaderAndRecoversTheSameNode(t *testing.T) {
	c := newFakeCluster()
	r := &Runner{Ports: PortsOf(c), Traffic: &fakeTraffic{b: c.fakeBroker, holdAt: 150}, Log: newRunner(nil, nil).Log, RunID: "t1"}
	res, down := r.RunMode(context.Background(), clusterScenario(scenario.Kill, 300*time.Millisecond), scenario.ConfirmWindow)
	if down || res.Verdict.Status != scenario.Pass {
		t.Fatalf("verdict %+v down=%v", res.Verdict, down)
	}
	wantTargets := []string{"leader of rmqt.t1.confirm-window (rmq1)", "leader of rmqt.t1.confirm-window (rmq1)"}
	if !slices.Equal(c.targets, wantTargets) || !slices.Equal(c.ops, []string{"kill", "start"}) {
		t.Fatalf("ops %v on %v, want kill and start on %v", c.ops, c.targets, wantTargets)
	}
	f := res.Faults[0]
	if f.Target != wantTargets[0] || !slices.Equal(f.Nodes, []string{"rmq1"}) || f.LeaderBefore != "rmq1" || f.LeaderAfter != "rmq2" {
		t.Fatalf("fault record %+v", f)
	}
	if f.Recovery == nil || f.Recovery.LeaderElectedMS == nil || f.Recovery.ReplicatedMS == nil {
		t.Fatalf("recovery %+v: want the election and replication timed", f.Recovery)
	}
	// Elected before the node came back (down 300 ms), replicated after.
	if *f.Recovery.LeaderElectedMS >= 300 || *f.Recovery.ReplicatedMS < 300 {
		t.Fatalf("elected at %.1f ms, replicated at %.1f ms", *f.Recovery.LeaderElectedMS, *f.Recovery.ReplicatedMS)
	}
	var leaders []int
	for _, e := range res.Events {
		if e.Kind == metrics.EvLeader {
			leaders = append(leaders, e.Node)
		}
	}
	if !slices.Equal(leaders, []int{1, 2}) {
		t.Fatalf("leader events %v, want rmq1 at the start, then rmq2", leaders)
	}
}

// Quorum loss stops a majority (the leader first) and starts the same
// nodes again.
func TestClusterQuorumLossStopsAMajority(t *testing.T) {
	c := newFakeCluster()
	r := &Runner{Ports: PortsOf(c), Traffic: &fakeTraffic{b: c.fakeBroker}, Log: newRunner(nil, nil).Log, RunID: "t1"}
	res, _ := r.RunMode(context.Background(), clusterScenario(scenario.QuorumLoss, 200*time.Millisecond), scenario.ConfirmEach)
	want := "majority of rmqt.t1.confirm-each (rmq1, rmq2)"
	if !slices.Equal(c.ops, []string{"stop", "start"}) || c.targets[0] != want || c.targets[1] != want {
		t.Fatalf("ops %v on %v, want stop and start on %s", c.ops, c.targets, want)
	}
	if q := res.Faults[0].QuorumLoss; q == nil || q.Acked != 0 {
		t.Fatalf("quorum loss outcome %+v", q)
	}
}

func TestQuorumLossOutcomeCountsWholeBucketsOnly(t *testing.T) {
	// Buckets of 100 ms; the stop call returned at 150 ms (trigger 100 +
	// call 50), the start at 520 ms: buckets [200,300), [300,400),
	// [400,500) lie wholly inside.
	d := &metrics.SeriesData{BucketMS: 100,
		Published: []int{9, 9, 1, 2, 3, 9, 9}, Acked: []int{9, 9, 0, 1, 0, 9, 9}, Nacked: []int{0, 0, 0, 0, 2, 0, 0},
		InFlight: []int{3, 40, 41, 42, 43, 20, 0}}
	faults := []scenario.FaultRecord{{Action: scenario.QuorumLoss, AtMS: 100, CallMS: 50}, {Action: scenario.Kill, AtMS: 100}}
	events := []metrics.Event{{Kind: metrics.EvBrokerStarted, AtMS: 120}, {Kind: metrics.EvBrokerStarted, AtMS: 520}}
	quorumLossOutcomes(faults, events, d)
	// 40 awaited a confirm in the bucket the stop returned in; the first
	// acks after the start at 520 ms are in the bucket from 600 ms.
	after := 80.0
	want := scenario.QuorumLossOutcome{DownMS: 370, Published: 6, Acked: 1, Nacked: 2, Unconfirmed: 40, FirstAckAfterMS: &after}
	got := faults[0].QuorumLoss
	if got == nil || got.FirstAckAfterMS == nil || *got.FirstAckAfterMS != after || faults[1].QuorumLoss != nil {
		t.Fatalf("outcome %+v, want %+v", got, want)
	}
	got.FirstAckAfterMS, want.FirstAckAfterMS = nil, nil
	if *got != want {
		t.Fatalf("outcome %+v, want %+v", faults[0].QuorumLoss, want)
	}
	if falseAcks(faults) != 1 {
		t.Fatalf("false acks %d", falseAcks(faults))
	}
}

// While a partition is being healed, every member back in quorum_status is
// not the cluster whole again: the nodes may still report the partition
// until Heal has restarted them. Full replication counts from the first
// poll after the heal.
func TestReplicatedOnlyAfterTheHeal(t *testing.T) {
	t0 := time.Now()
	tl := metrics.NewTimeline(t0)
	v := newClusterView(nil, "q", true, nil)
	v.begin(tl)
	all := map[int]string{1: scenario.MemberLeader, 2: scenario.MemberFollower, 3: scenario.MemberFollower}
	v.observe(t0, all) // replicated before the fault: nothing to record
	v.healBegins()
	if !v.polling() {
		t.Fatal("not polling during the heal")
	}
	v.observe(t0.Add(time.Second), all)
	v.healEnds()
	v.observe(t0.Add(2*time.Second), all)
	var at []time.Duration
	for _, e := range tl.Events() {
		if e.Kind == metrics.EvReplicated {
			at = append(at, e.At.Sub(t0))
		}
	}
	if len(at) != 1 || at[0] != 2*time.Second || v.polling() {
		t.Fatalf("replicated at %v (polling %v), want once, at 2s, after the heal", at, v.polling())
	}
}
