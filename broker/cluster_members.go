package broker

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/rmqtorture/rmqtorture/scenario"
)

// askTimeout bounds one CLI query on one node: the CLI's own start-up takes
// ~1-2 s here, and quorum_status waits for each member's answer.
const askTimeout = 30 * time.Second

// askOrder lists the nodes to ask about the cluster, best first: those
// this run has not killed, stopped, paused or disconnected, the ones that
// see most other such nodes first (a node a partition cut off would
// answer from its own side only), then by number.
func (c *Cluster) askOrder() []int {
	c.mu.Lock()
	defer c.mu.Unlock()
	up := func(i int) bool {
		s := c.state[i-1]
		return !s.down && !s.paused && !s.disconnected
	}
	sees := map[int]int{}
	var out []int
	for i := 1; i <= len(c.nodes); i++ {
		if !up(i) {
			continue
		}
		out = append(out, i)
		for j := 1; j <= len(c.nodes); j++ {
			if j != i && up(j) && !slices.Contains(c.cut, link{min(i, j), max(i, j)}) {
				sees[i]++
			}
		}
	}
	slices.SortStableFunc(out, func(a, b int) int { return cmp.Compare(sees[b], sees[a]) })
	return out
}

// ask runs a CLI command on the best node to ask that answers (askOrder),
// each try bounded by askTimeout, and returns its stdout.
func (c *Cluster) ask(ctx context.Context, cmd ...string) (string, error) {
	order := c.askOrder()
	if len(order) == 0 {
		return "", fmt.Errorf("%s: no node of the cluster is up and connected to ask", strings.Join(cmd, " "))
	}
	var errs []error
	for _, i := range order {
		xctx, cancel := context.WithTimeout(ctx, askTimeout)
		out, err := c.nodes[i-1].Exec(xctx, cmd...)
		cancel()
		if err == nil {
			return out, nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	return "", errors.Join(errs...)
}

// quorumMember is one row of `rabbitmq-queues quorum_status QUEUE
// --formatter json`. Raft State is a string ("leader", "timeout", …), or,
// for a member the node could not reach, an Erlang error term rendered as
// an array (["nodedown", "rabbit@rmq1"]).
type quorumMember struct {
	Node  string          `json:"Node Name"`
	State json.RawMessage `json:"Raft State"`
}

// state reads Raft State: the string, or an error term's first element
// ("nodedown"); "unknown" for anything else.
func (m quorumMember) state() string {
	var s string
	if json.Unmarshal(m.State, &s) == nil {
		return s
	}
	var term []any
	if json.Unmarshal(m.State, &term) == nil && len(term) > 0 {
		if s, ok := term[0].(string); ok {
			return s
		}
	}
	return "unknown"
}

// Members returns the Raft state of each member of the quorum queue (on
// the default vhost) by node number, as `rabbitmq-queues quorum_status`
// reports it on the best node to ask (askOrder): "leader", "follower",
// "candidate", "timeout" for a member that did not answer, "nodedown"
// for one on a node it cannot reach, "noproc"….
// A node that holds no member is absent. Measured here: one call takes
// 1-2 s, mostly the CLI's start-up, but ~7.3 s while a member is
// unreachable and not yet declared down (the node's wait for its answer),
// so a leader elected during a partition is seen a call or two late.
func (c *Cluster) Members(ctx context.Context, queue string) (map[int]string, error) {
	out, err := c.ask(ctx, "rabbitmq-queues", "-q", "quorum_status", queue, "--formatter", "json")
	if err != nil {
		return nil, fmt.Errorf("read the members of quorum queue %q: %w", queue, err)
	}
	var rows []quorumMember
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		return nil, fmt.Errorf("read the members of quorum queue %q: %w (output %.200q)", queue, err, out)
	}
	members := map[int]string{}
	for _, r := range rows {
		if i := c.nodeIndex(r.Node); i > 0 {
			members[i] = r.state()
		}
	}
	return members, nil
}

// membersText renders members as "rmq1 leader, rmq2 follower" for errors.
func membersText(members map[int]string) string {
	var parts []string
	for i := 1; i <= 64; i++ {
		if s, ok := members[i]; ok {
			parts = append(parts, scenario.NodeName(i)+" "+s)
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// Resolve returns t with Nodes set to the nodes it names now, ascending
// (a resolved t as it is):
//   - node: that node; all (and broker): every node;
//   - random: node pick(Size())+1 (pick draws from the run's seed);
//   - leader: the member Members reports as "leader"; follower: the
//     lowest-numbered "follower";
//   - minority (floor((N-1)/2) nodes: 1 of 3, 2 of 5) and majority
//     (floor(N/2)+1: 2 of 3, 3 of 5), Count nodes when set: with a queue,
//     minority takes its followers first, then its other members, then
//     nodes without a member, its leader last; majority takes its leader
//     first, then the same order. Without a queue, minority takes the
//     highest-numbered nodes and majority the lowest.
//
// It fails when leader or follower has no such member, or when the queue's
// members cannot be read.
func (c *Cluster) Resolve(ctx context.Context, t scenario.Target, pick func(n int) int) (scenario.Target, error) {
	n := len(c.nodes)
	switch t.Kind {
	case scenario.TargetLeader, scenario.TargetFollower, scenario.TargetMinority, scenario.TargetMajority, scenario.TargetRandom:
		if t.Resolved() {
			_, err := c.nodesOf(t)
			return t, err
		}
	default:
		nodes, err := c.nodesOf(t)
		if err != nil {
			return t, err
		}
		t.Nodes = nodes
		return t, nil
	}
	switch t.Kind {
	case scenario.TargetRandom:
		if pick == nil {
			return t, errors.New("target random node: no seeded pick given")
		}
		k := pick(n)
		if k < 0 || k >= n {
			return t, fmt.Errorf("target random node: pick(%d) gave %d, not in [0, %d)", n, k, n)
		}
		t.Nodes = []int{k + 1}
		return t, nil
	case scenario.TargetLeader, scenario.TargetFollower:
		if t.Queue == "" {
			return t, fmt.Errorf("target %s names no queue", t.Kind)
		}
		members, err := c.Members(ctx, t.Queue)
		if err != nil {
			return t, err
		}
		want := "leader"
		if t.Kind == scenario.TargetFollower {
			want = "follower"
		}
		for i := 1; i <= n; i++ {
			if members[i] == want {
				t.Nodes = []int{i}
				return t, nil
			}
		}
		return t, fmt.Errorf("quorum queue %q has no %s now (members: %s)", t.Queue, want, membersText(members))
	}
	count := n/2 + 1
	if t.Kind == scenario.TargetMinority {
		count = (n - 1) / 2
	}
	if t.Count > 0 {
		count = t.Count
	}
	if count < 1 || count > n {
		return t, fmt.Errorf("target %s: %d nodes asked of a %d-node cluster", t, count, n)
	}
	var members map[int]string
	if t.Queue != "" {
		var err error
		if members, err = c.Members(ctx, t.Queue); err != nil {
			return t, err
		}
	}
	t.Nodes = sortedSet(rankNodes(n, members, t.Kind)[:count])
	return t, nil
}

// rankNodes orders the nodes 1..n for minority or majority (see Resolve).
// With no members known, minority counts down from node n and majority up
// from node 1.
func rankNodes(n int, members map[int]string, kind scenario.TargetKind) []int {
	nodes := make([]int, n)
	for i := range nodes {
		nodes[i] = i + 1
	}
	if members == nil {
		if kind == scenario.TargetMinority {
			slices.Reverse(nodes)
		}
		return nodes
	}
	rank := func(i int) int {
		s, ok := members[i]
		switch {
		case s == "leader" && kind == scenario.TargetMajority:
			return 0
		case s == "follower":
			return 1
		case ok && s != "leader":
			return 2
		case !ok:
			return 3
		}
		return 4 // the leader, last for a minority
	}
	slices.SortStableFunc(nodes, func(a, b int) int { return cmp.Compare(rank(a), rank(b)) })
	return nodes
}
