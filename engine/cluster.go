package engine

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/rmqtorture/rmqtorture/metrics"
	"github.com/rmqtorture/rmqtorture/scenario"
)

// clusterView follows the quorum queue or stream under test on a cluster:
// which node leads it (a stream: its writer) and whether every node holds
// a member. It polls the Cluster
// port's Members (an exec of rabbitmq-queues, 1–2 s each) back to back
// while a fault is in effect and until the queue is fully replicated
// again after one, and stays idle otherwise, so a burst without faults
// pays nothing for it. Leader changes and the return to full replication
// go on the burst's timeline (EvLeader, EvReplicated): the report's
// "which node led when".
type clusterView struct {
	port  Cluster
	queue string
	log   *slog.Logger
	// quorum: the queue under test is a quorum queue or a stream, whose
	// members the Cluster port reads. A classic queue has no leader to
	// follow: the view only resolves node, random and all.
	quorum bool

	mu         sync.Mutex
	tl         *metrics.Timeline
	members    map[int]string
	leader     int
	replicated bool
	active     int // faults in effect
	// healing: a partition's links are being restored and the nodes made
	// one cluster again (Cluster.Heal): members all back in quorum_status
	// is not yet the cluster whole, since nodes may still report the
	// partition until Heal has restarted them.
	healing bool
	wake    chan struct{}
}

func newClusterView(port Cluster, queue string, quorum bool, log *slog.Logger) *clusterView {
	return &clusterView{port: port, queue: queue, quorum: quorum, log: log, wake: make(chan struct{}, 1), replicated: true}
}

// picker draws node indexes in [0, n) from the run's seed (target
// random): the same seed draws the same nodes.
func picker(seed uint64) func(n int) int {
	rng := rand.New(rand.NewPCG(seed, 0x6e6f6465)) // "node"
	return func(n int) int { return rng.IntN(n) }
}

// size is the cluster's node count.
func (v *clusterView) size() int { return v.port.Size() }

// settle (on the timeline, once the burst has begun) waits (polling) until the queue is fully replicated, one leader
// and every other node a follower, or timeout passes: a burst that starts
// on a queue still forming its members measures the formation, not the
// fault.
func (v *clusterView) settle(ctx context.Context, timeout time.Duration) error {
	if !v.quorum {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last map[int]string
	var lastErr error
	for {
		m, err := v.port.Members(ctx, v.queue)
		if err == nil {
			v.observe(time.Now(), m)
			if scenario.Replicated(m) {
				return nil
			}
			last = m
		} else if ctx.Err() == nil {
			lastErr = err
		}
		if Sleep(ctx, 250*time.Millisecond) != nil {
			if last == nil && lastErr != nil {
				return fmt.Errorf("%s: members not read within %s: %w", v.queue, timeout, lastErr)
			}
			return fmt.Errorf("%s not fully replicated within %s (members: %s)", v.queue, timeout, scenario.MemberStates(last))
		}
	}
}

// begin attaches the burst's timeline and records who leads at its start.
func (v *clusterView) begin(tl *metrics.Timeline) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.tl = tl
	if !v.quorum {
		return
	}
	tl.Record(metrics.Event{At: tl.Start(), Kind: metrics.EvLeader, Node: v.leader, Target: v.queue,
		Detail: fmt.Sprintf("%s leads %s at the start of the burst (%s)", nodeName(v.leader), v.queue, scenario.MemberStates(v.members))})
}

// snapshot is the members and leader seen last.
func (v *clusterView) snapshot() (map[int]string, int) {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.members, v.leader
}

// faultBegins makes the view poll until faultEnds and the queue is
// replicated again.
func (v *clusterView) faultBegins() {
	v.mu.Lock()
	v.active++
	v.mu.Unlock()
	select {
	case v.wake <- struct{}{}:
	default:
	}
}

// faultEnds undoes one faultBegins; the view goes on polling until it has
// seen the queue fully replicated.
func (v *clusterView) faultEnds() {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.active > 0 {
		v.active--
	}
}

// healBegins marks a heal under way: until healEnds, no poll counts as
// the queue fully replicated, and the view polls until one after it does.
func (v *clusterView) healBegins() {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.healing, v.replicated = true, false
}

// healEnds marks the heal done: Heal returned once no node reported the
// partition (or it gave up, and said so).
func (v *clusterView) healEnds() {
	v.mu.Lock()
	v.healing = false
	v.mu.Unlock()
	select {
	case v.wake <- struct{}{}:
	default:
	}
}

// polling reports whether the view has a reason to poll.
func (v *clusterView) polling() bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.quorum && (v.active > 0 || !v.replicated)
}

// run polls while polling() holds, until ctx ends.
func (v *clusterView) run(ctx context.Context) {
	for ctx.Err() == nil {
		if !v.polling() {
			select {
			case <-ctx.Done():
				return
			case <-v.wake:
			}
			continue
		}
		pctx, cancel := context.WithTimeout(ctx, pollTimeout)
		m, err := v.port.Members(pctx, v.queue)
		cancel()
		if err != nil {
			v.log.Debug("cluster poll", "queue", v.queue, "err", err)
			_ = Sleep(ctx, 250*time.Millisecond)
			continue
		}
		v.observe(time.Now(), m)
		_ = Sleep(ctx, pollGap)
	}
}

// pollTimeout bounds one poll: a quorum_status call takes 1–2 s, but about
// 7 s while a member is unreachable and not yet declared down (measured
// on RabbitMQ 4.0.5, 3 nodes), and the CLI may have to try a second node.
const pollTimeout = 30 * time.Second

// pollGap separates polls: a real poll (an exec of rabbitmq-queues) takes
// 1–2 s by itself.
const pollGap = 100 * time.Millisecond

// observe records a poll's members seen at: a new leader (or none) as
// EvLeader, a return to full replication as EvReplicated.
func (v *clusterView) observe(at time.Time, m map[int]string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	// Whole again: every member back, and no heal under way (a node may
	// still report the partition until Heal is done).
	leader, replicated := leaderOf(m), scenario.Replicated(m) && !v.healing
	states := scenario.MemberStates(m)
	if leader != v.leader && v.tl != nil {
		detail := fmt.Sprintf("%s leads %s (%s)", nodeName(leader), v.queue, states)
		if leader == 0 {
			detail = fmt.Sprintf("%s has no leader (%s)", v.queue, states)
		}
		v.tl.Record(metrics.Event{At: at, Kind: metrics.EvLeader, Node: leader, Target: v.queue, Detail: detail})
	}
	if replicated && !v.replicated && v.tl != nil {
		v.tl.Record(metrics.Event{At: at, Kind: metrics.EvReplicated, Node: leader, Target: v.queue,
			Detail: fmt.Sprintf("%s fully replicated again (%s)", v.queue, states)})
	}
	v.members, v.leader, v.replicated = m, leader, replicated
}

// leaderOf is the node whose member leads (0: none).
func leaderOf(m map[int]string) int {
	for n, st := range m {
		if st == scenario.MemberLeader {
			return n
		}
	}
	return 0
}

// nodeName is scenario.NodeName, "no node" for 0.
func nodeName(n int) string {
	if n == 0 {
		return "no node"
	}
	return scenario.NodeName(n)
}

// clusterTimings fills a cluster fault's leader and replication timings
// from the events after it (window: up to the next fault): when the step
// acted on the queue's leader, the first leader seen after it (on the
// survivors; after a quorum loss, whoever leads once a majority is back),
// and the first return to full replication.
func clusterTimings(rec *scenario.FaultRecord, r *scenario.Recovery, fault time.Time, window []metrics.Event) {
	since := func(t time.Time) *float64 { v := metrics.Millis(t.Sub(fault)); return &v }
	for _, e := range window {
		switch {
		case e.Kind == metrics.EvLeader && e.Node > 0 && rec.LeaderAfter == "" && slices.Contains(rec.Nodes, rec.LeaderBefore):
			r.LeaderElectedMS, rec.LeaderAfter = since(e.At), scenario.NodeName(e.Node)
		case e.Kind == metrics.EvReplicated && r.ReplicatedMS == nil:
			r.ReplicatedMS = since(e.At)
		}
	}
}

// awaitSettled waits until the view has no reason left to poll (the
// queue seen fully replicated after the last fault), or timeout passes or
// ctx ends: the last fault's replication time is measured even when the
// burst ended first.
func (v *clusterView) awaitSettled(ctx context.Context, timeout time.Duration) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for v.polling() && Sleep(ctx, 100*time.Millisecond) == nil {
	}
}

// quorumLossOutcomes fills each applied quorum-loss step's QuorumLoss from
// the series: publishes, basic.acks and basic.nacks in the buckets lying
// wholly between the return of its stop call and the start of the
// recovery that started the nodes again (its broker-started event).
func quorumLossOutcomes(faults []scenario.FaultRecord, events []metrics.Event, d *metrics.SeriesData) {
	if d == nil || d.BucketMS <= 0 {
		return
	}
	for i := range faults {
		f := &faults[i]
		if spec, _ := f.Action.Spec(); !spec.StopsMajority || f.Error != "" {
			continue
		}
		from := f.AtMS + f.CallMS
		to := -1.0
		for _, e := range events {
			if e.Kind == metrics.EvBrokerStarted && e.AtMS > from {
				to = e.AtMS
				break
			}
		}
		if to < 0 {
			continue
		}
		out := &scenario.QuorumLossOutcome{DownMS: round1(to - from)}
		for b := range d.Len() {
			lo, hi := float64(b)*d.BucketMS, float64(b+1)*d.BucketMS
			switch {
			case lo <= from && from < hi && b < len(d.InFlight):
				out.Unconfirmed = d.InFlight[b]
			case lo >= from && hi <= to:
				out.Published += d.Published[b]
				out.Acked += d.Acked[b]
				out.Nacked += d.Nacked[b]
			case lo >= to && out.FirstAckAfterMS == nil && d.Acked[b] > 0:
				v := round1(lo - to)
				out.FirstAckAfterMS = &v
			}
		}
		f.QuorumLoss = out
	}
}

// falseAcks sums the basic.acks received while a majority was down over
// the quorum-loss steps of a burst.
func falseAcks(faults []scenario.FaultRecord) int {
	n := 0
	for _, f := range faults {
		if f.QuorumLoss != nil {
			n += f.QuorumLoss.Acked
		}
	}
	return n
}

// preferNode is the node (1-based) publisher i connects to first, as
// load.connect_to says, from the members seen when the burst started:
// the leader (the default), the first follower, node i mod N + 1
// (round-robin) or load.connect_node. Without a known leader or follower
// (not a quorum queue) it falls back to round-robin.
func (v *clusterView) preferNode(l scenario.Load) func(i int) int {
	members, leader := v.snapshot()
	size := v.size()
	roundRobin := func(i int) int { return i%size + 1 }
	fixed := func(n int) func(int) int { return func(int) int { return n } }
	switch l.ConnectTo {
	case scenario.ConnectRoundRobin:
		return roundRobin
	case scenario.ConnectNode:
		return fixed(l.ConnectNode)
	case scenario.ConnectFollower:
		for n := 1; n <= size; n++ {
			if members[n] == scenario.MemberFollower {
				return fixed(n)
			}
		}
		return roundRobin
	}
	if leader > 0 {
		return fixed(leader)
	}
	return roundRobin
}

// byNode lists per-node publisher counts in node order (nil on a single
// broker).
func byNode(m map[int]*NodeStats) []scenario.NodeCount {
	var out []scenario.NodeCount
	for _, n := range slices.Sorted(maps.Keys(m)) {
		st := m[n]
		out = append(out, scenario.NodeCount{Node: scenario.NodeName(n), Connections: st.Connections, Publishes: st.Publishes, Acked: st.Acked})
	}
	return out
}
