package docker

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
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
	if c.streams {
		return c.streamMembers(ctx, queue)
	}
	return readMembers[quorumMember](ctx, c, "quorum queue "+strconv.Quote(queue),
		"rabbitmq-queues", "-q", "quorum_status", queue, "--formatter", "json")
}

// member is one row of a members listing: its node's Erlang name and its
// state in quorum_status's words.
type member interface {
	nodeName() string
	state() string
}

func (m quorumMember) nodeName() string { return m.Node }
func (m streamMember) nodeName() string { return m.Node }

// readMembers runs cmd on the best node to ask and reads its JSON rows of
// R into each member's state by node number (what names the queue, for
// errors).
func readMembers[R member](ctx context.Context, c *Cluster, what string, cmd ...string) (map[int]string, error) {
	out, err := c.ask(ctx, cmd...)
	if err != nil {
		return nil, fmt.Errorf("read the members of %s: %w", what, err)
	}
	var rows []R
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		return nil, fmt.Errorf("read the members of %s: %w (output %.200q)", what, err, out)
	}
	members := map[int]string{}
	for _, r := range rows {
		if i := c.nodeIndex(r.nodeName()); i > 0 {
			members[i] = r.state()
		}
	}
	return members, nil
}

// streamMember is one row of `rabbitmq-streams stream_status STREAM
// --formatter json`: role is "writer" (the stream's leader) or "replica";
// a member whose node is down or whose process is not running has its
// numbers as the string "undefined" (measured on RabbitMQ 4.0.5).
type streamMember struct {
	Role  string          `json:"role"`
	Node  string          `json:"node"`
	Epoch json.RawMessage `json:"epoch"`
}

// state is the member's state in quorum_status's words: "leader" for the
// writer, "follower" for a replica, "down" for a member not running.
func (m streamMember) state() string {
	var epoch int64
	switch {
	case json.Unmarshal(m.Epoch, &epoch) != nil:
		return "down"
	case m.Role == "writer":
		return scenario.MemberLeader
	case m.Role == "replica":
		return scenario.MemberFollower
	}
	return "unknown"
}

// streamMembers is Members for a stream (a cluster created with Streams):
// `rabbitmq-streams stream_status` (https://www.rabbitmq.com/docs/streams),
// its writer as the leader and its replicas as followers.
func (c *Cluster) streamMembers(ctx context.Context, queue string) (map[int]string, error) {
	// Debian's package leaves rabbitmq-streams out of /usr/sbin, where
	// its other CLI tools are: found on the PATH (the official image's
	// /opt/rabbitmq/sbin) or in /usr/lib/rabbitmq/bin.
	return readMembers[streamMember](ctx, c, "stream "+strconv.Quote(queue),
		"sh", "-c", `PATH="$PATH:/usr/lib/rabbitmq/bin" exec rabbitmq-streams "$@"`, "rabbitmq-streams",
		"-q", "stream_status", queue, "--formatter", "json")
}

// Resolve returns t with Nodes set to the nodes it names now, ascending,
// as scenario.Target.Resolve does from the queue's members read now
// (Members; no read for node, random and all, nor for minority and
// majority without a queue). A resolved t is checked and returned as it
// is. It fails when leader or follower has no such member, or when the
// queue's members cannot be read.
func (c *Cluster) Resolve(ctx context.Context, t scenario.Target, pick func(n int) int) (scenario.Target, error) {
	if t.Resolved() {
		_, err := c.nodesOf(t)
		return t, err
	}
	if t.Kind == scenario.TargetRandom && pick == nil {
		return t, errors.New("target random node: no seeded pick given")
	}
	var members map[int]string
	if t.Queue != "" && t.Kind != scenario.TargetNode && t.Kind != scenario.TargetRandom && t.Kind != scenario.TargetAll {
		var err error
		if members, err = c.Members(ctx, t.Queue); err != nil {
			return t, err
		}
	}
	return t.Resolve(len(c.nodes), members, pick)
}
