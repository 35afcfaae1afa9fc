package docker

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/docker/docker/api/types/network"

	"github.com/rmqtorture/rmqtorture/scenario"
)

// The fault ports of a cluster: each acts on the nodes its target names,
// through each node's own *Container methods, on all of them at once.

// nodesOf returns the node numbers a port acts on: the resolved nodes, the
// one node of TargetNode, or every node for TargetAll (and TargetBroker,
// the single broker's default, which on a cluster means the whole of it).
// Leader, follower, random, minority and majority must be resolved first
// (Resolve): acting on whoever leads now, rather than on the nodes the
// fault was planned against, would make a recovery miss its fault.
func (c *Cluster) nodesOf(t scenario.Target) ([]int, error) {
	n := len(c.nodes)
	if t.Resolved() {
		for _, i := range t.Nodes {
			if i < 1 || i > n {
				return nil, fmt.Errorf("target %s: node %d is not a node of this %d-node cluster", t, i, n)
			}
		}
		return sortedSet(t.Nodes), nil
	}
	switch t.Kind {
	case scenario.TargetNode:
		if t.Node < 1 || t.Node > n {
			return nil, fmt.Errorf("target %s: the cluster has nodes 1 to %d", t, n)
		}
		return []int{t.Node}, nil
	case "", scenario.TargetBroker, scenario.TargetAll:
		return c.all(), nil
	}
	return nil, fmt.Errorf("target %s is not resolved to nodes: resolve it (Cluster.Resolve) when the fault fires", t)
}

// on runs f on the target's nodes in parallel, then mark on each node it
// succeeded on.
func (c *Cluster) on(t scenario.Target, f func(i int, n *Container) error, mark func(*nodeState)) error {
	nodes, err := c.nodesOf(t)
	if err != nil {
		return err
	}
	return c.each(nodes, func(i int, n *Container) error {
		if err := f(i, n); err != nil {
			return err
		}
		if mark != nil {
			c.mu.Lock()
			mark(&c.state[i-1])
			c.mu.Unlock()
		}
		return nil
	})
}

// Kill delivers signal to the target's nodes.
func (c *Cluster) Kill(ctx context.Context, t scenario.Target, signal string) error {
	return c.on(t, func(_ int, n *Container) error { return n.Kill(ctx, self, signal) },
		func(s *nodeState) { s.down = true })
}

// Start starts the target's nodes that a kill or stop took down; a node
// this run did not take down that is running is left as it is.
func (c *Cluster) Start(ctx context.Context, t scenario.Target) error {
	return c.on(t, func(i int, n *Container) error {
		c.mu.Lock()
		down := c.state[i-1].down
		c.mu.Unlock()
		if !down {
			info, err := n.guard(ctx)
			if err != nil {
				return err
			}
			if info.State != nil && info.State.Running {
				return nil
			}
		}
		return n.Start(ctx, self)
	}, func(s *nodeState) { s.down = false })
}

// Stop stops the target's nodes gracefully (SIGTERM, SIGKILL after grace),
// all at once.
func (c *Cluster) Stop(ctx context.Context, t scenario.Target, grace time.Duration) error {
	return c.on(t, func(_ int, n *Container) error { return n.Stop(ctx, self, grace) },
		func(s *nodeState) { s.down = true })
}

// Restart stops the target's nodes gracefully and starts them again, all
// at once.
func (c *Cluster) Restart(ctx context.Context, t scenario.Target, grace time.Duration) error {
	return c.on(t, func(_ int, n *Container) error { return n.Restart(ctx, self, grace) },
		func(s *nodeState) { s.down, s.paused = false, false })
}

// Pause freezes the target's nodes (cgroup freezer).
func (c *Cluster) Pause(ctx context.Context, t scenario.Target) error {
	return c.on(t, func(_ int, n *Container) error { return n.Pause(ctx, self) },
		func(s *nodeState) { s.paused = true })
}

// Unpause thaws the target's nodes.
func (c *Cluster) Unpause(ctx context.Context, t scenario.Target) error {
	return c.on(t, func(_ int, n *Container) error { return n.Unpause(ctx, self) },
		func(s *nodeState) { s.paused = false })
}

// Disconnect cuts the target's nodes from clients and from every other
// node: each leaves every network it is on (its published port goes with
// the client network: clients get EOF/reset at once), while it runs on.
func (c *Cluster) Disconnect(ctx context.Context, t scenario.Target) error {
	if !c.owned {
		return c.on(t, func(_ int, n *Container) error { return n.Disconnect(ctx, self) },
			func(s *nodeState) { s.disconnected = true })
	}
	nodes, err := c.nodesOf(t)
	if err != nil {
		return err
	}
	c.mu.Lock()
	for _, i := range nodes {
		c.state[i-1].disconnected = true
	}
	c.mu.Unlock()
	return c.each(nodes, func(i int, _ *Container) error { return c.sync(ctx, i) })
}

// Reconnect puts the target's nodes back on the networks Disconnect took
// them from, with their aliases (the pair networks a partition still cuts
// stay cut until Heal).
func (c *Cluster) Reconnect(ctx context.Context, t scenario.Target) error {
	if !c.owned {
		return c.on(t, func(_ int, n *Container) error { return n.Reconnect(ctx, self) },
			func(s *nodeState) { s.disconnected = false })
	}
	nodes, err := c.nodesOf(t)
	if err != nil {
		return err
	}
	c.mu.Lock()
	for _, i := range nodes {
		c.state[i-1].disconnected = false
	}
	c.mu.Unlock()
	return c.each(nodes, func(i int, _ *Container) error { return c.sync(ctx, i) })
}

// MemoryAlarm raises (on) or clears a memory alarm on each of the target's
// nodes (a memory alarm is per node, and blocks publishers cluster-wide;
// https://www.rabbitmq.com/docs/alarms).
func (c *Cluster) MemoryAlarm(ctx context.Context, t scenario.Target, on bool) error {
	return c.on(t, func(_ int, n *Container) error { return n.MemoryAlarm(ctx, self, on) }, nil)
}

// DiskAlarm raises (on) or clears a disk alarm on each of the target's
// nodes.
func (c *Cluster) DiskAlarm(ctx context.Context, t scenario.Target, on bool) error {
	return c.on(t, func(_ int, n *Container) error { return n.DiskAlarm(ctx, self, on) }, nil)
}

// CloseConnections makes each of the target's nodes close the client
// connections it holds.
func (c *Cluster) CloseConnections(ctx context.Context, t scenario.Target) error {
	return c.on(t, func(_ int, n *Container) error { return n.CloseConnections(ctx, self) }, nil)
}

// DeleteQueue deletes queue through one node: the first of the target's
// nodes that is up and connected, else the node that sees most others (a
// queue is cluster-wide; the node only carries the command). Not retried
// through another node: a delete that landed but lost its reply would
// report 0 the second time. Measured on RabbitMQ 4.0.5, 3 nodes: with a
// quorum queue's member on a stopped node the delete-ok comes 5.0 s late
// (rabbit_quorum_queue's DELETE_TIMEOUT for the member that does not
// answer; a purge takes ~10 ms), inside amqpx.RPCTimeout.
func (c *Cluster) DeleteQueue(ctx context.Context, t scenario.Target, queue string) (int, error) {
	n, err := c.operator(t)
	if err != nil {
		return 0, err
	}
	return n.DeleteQueue(ctx, self, queue)
}

// PurgeQueue purges queue through one node, chosen as DeleteQueue does.
func (c *Cluster) PurgeQueue(ctx context.Context, t scenario.Target, queue string) (int, error) {
	n, err := c.operator(t)
	if err != nil {
		return 0, err
	}
	return n.PurgeQueue(ctx, self, queue)
}

// operator picks the node an operator's queue command goes through.
func (c *Cluster) operator(t scenario.Target) (*Container, error) {
	nodes, err := c.nodesOf(t)
	if err != nil {
		return nil, err
	}
	order := c.askOrder()
	for _, i := range order {
		if slices.Contains(nodes, i) {
			return c.nodes[i-1], nil
		}
	}
	if len(order) == 0 {
		return nil, errors.New("no node of the cluster is up and connected to take the command")
	}
	return c.nodes[order[0]-1], nil
}

// WaitReady waits until every one of the target's nodes accepts an AMQP
// login, each within timeout, all at once.
func (c *Cluster) WaitReady(ctx context.Context, t scenario.Target, timeout time.Duration) error {
	return c.on(t, func(_ int, n *Container) error { return n.WaitReady(ctx, self, timeout) }, nil)
}

// Partition cuts the links shape cuts around the target's nodes (see
// partitionPlan): for each cut pair the lower-numbered node leaves the
// pair's network, so neither finds nor reaches the other, while both keep
// their other links and their client port. It returns the sides as text
// ("rmq1 | rmq2, rmq3"). One partition at a time: Heal first.
func (c *Cluster) Partition(ctx context.Context, t scenario.Target, shape scenario.PartitionShape) (string, error) {
	if !c.owned {
		return "", fmt.Errorf("cannot partition %s: rmqtorture partitions only a cluster it created (it cuts the one Docker network each pair of nodes shares); run without naming the containers", c.Name())
	}
	var target []int
	if shape != scenario.PartitionMajoritiesRing {
		var err error
		if target, err = c.nodesOf(t); err != nil {
			return "", err
		}
	}
	cut, sides, err := partitionPlan(len(c.nodes), target, shape)
	if err != nil {
		return "", err
	}
	c.mu.Lock()
	if len(c.cut) > 0 {
		defer c.mu.Unlock()
		return "", fmt.Errorf("the cluster is already partitioned (%s): heal it first", c.sides)
	}
	c.cut, c.sides, c.side = cut, sides, targetSide(len(c.nodes), target, shape)
	c.mu.Unlock()
	c.log.Info("partitioning the cluster", "sides", sides, "links cut", len(cut))
	return sides, c.each(lowerEnds(cut), func(i int, _ *Container) error { return c.sync(ctx, i) })
}

// Heal restores every link the current partition cut (none: nothing to
// do), then waits for the nodes to see one cluster again. With RabbitMQ's
// default cluster_partition_handling (ignore) they do not by themselves:
// measured on 4.0.5, a queue declared through the isolated node after the
// heal was "not found" on the others, and the next burst measured a split
// cluster. So, as the RabbitMQ partitions guide says to recover
// (https://www.rabbitmq.com/docs/partitions#recovering), it restarts the
// nodes of the side the partition's target named, then the others, one
// at a time, until no node reports a partition; the detail says what it
// did. A node Disconnect still holds off stays off until Reconnect.
func (c *Cluster) Heal(ctx context.Context) (string, error) {
	if !c.owned {
		return "", nil
	}
	c.mu.Lock()
	cut, side := c.cut, c.side
	c.cut, c.sides, c.side = nil, "", nil
	c.mu.Unlock()
	if len(cut) == 0 {
		return "", nil
	}
	if err := c.each(lowerEnds(cut), func(i int, _ *Container) error { return c.sync(ctx, i) }); err != nil {
		return "", err
	}
	restarted, whole, err := c.rejoin(ctx, side)
	if len(restarted) == 0 {
		return "", err
	}
	detail := fmt.Sprintf("the nodes still saw a partition after their links came back (cluster_partition_handling ignore), so rmqtorture restarted %s to make the cluster whole (https://www.rabbitmq.com/docs/partitions#recovering)", scenario.NodeNames(restarted))
	if !whole && err == nil {
		detail += fmt.Sprintf("; a node still reported a partition %s after the last restart", rejoinAfter)
	}
	return detail, err
}

// rejoinWait is how long rejoin lets the nodes find each other again
// before it restarts the partition's target side; rejoinAfter, how long
// it then waits for no node to report a partition.
const (
	rejoinWait  = 15 * time.Second
	rejoinAfter = 30 * time.Second
)

// rejoin waits up to rejoinWait for no node to report a partition; if one
// still does, it restarts the nodes of side (the partition's target: the
// side the RabbitMQ partitions guide calls less trusted), one at a time,
// each until it accepts AMQP logins again (a node rejoining waits for its
// peers' tables: allowed 3 minutes), and waits up to rejoinAfter for the
// cluster to be whole. It never restarts the other side. It returns the
// nodes it restarted and whether the cluster was seen whole; an error only
// when a restart failed.
func (c *Cluster) rejoin(ctx context.Context, side []int) (restarted []int, whole bool, err error) {
	if whole, err := c.whole(ctx, rejoinWait); whole || err != nil {
		return nil, whole, err
	}
	for _, i := range side {
		c.log.Info("restarting a node to end a partition", "node", scenario.NodeName(i))
		n := c.nodes[i-1]
		if err := n.Restart(ctx, self, 10*time.Second); err != nil {
			return restarted, false, err
		}
		restarted = append(restarted, i)
		if err := n.WaitReady(ctx, self, 3*time.Minute); err != nil {
			return restarted, false, err
		}
	}
	whole, err = c.whole(ctx, rejoinAfter)
	if !whole {
		c.log.Warn("a node still reports a partition after the restarts", "restarted", scenario.NodeNames(restarted))
	}
	return restarted, whole, err
}

// whole polls every node's cluster_status (about every second) until none
// reports a partition, or within passes (false).
func (c *Cluster) whole(ctx context.Context, within time.Duration) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	for {
		sts, _ := c.statuses(ctx)
		// An unanswered node proves nothing yet.
		split := slices.ContainsFunc(sts, func(st *clusterStatus) bool { return st == nil || len(st.Partitions) > 0 })
		if !split {
			return true, nil
		}
		select {
		case <-ctx.Done():
			return false, nil
		case <-time.After(time.Second):
		}
	}
}

// lowerEnds lists the nodes that leave a network for the cut links.
func lowerEnds(cut []link) []int {
	var out []int
	for _, l := range cut {
		out = append(out, l.A)
	}
	return sortedSet(out)
}

// wantNets is the networks node i should be on now, each with its
// aliases: none while disconnected; else the client network and every
// pair network except those whose link the partition cut at this node.
func (c *Cluster) wantNets(i int) map[string][]string {
	c.mu.Lock()
	defer c.mu.Unlock()
	want := map[string][]string{}
	if c.state[i-1].disconnected {
		return want
	}
	want[c.clientNet] = nil
	for l, name := range c.links {
		if (l.A == i || l.B == i) && !(l.A == i && slices.Contains(c.cut, l)) {
			want[name] = []string{scenario.NodeName(i)}
		}
	}
	return want
}

// sync makes node i's networks what wantNets says: it leaves the
// cluster's networks it should not be on, then joins the client network
// (which carries the published port), then the pair networks, each with
// the alias rmqI. Idempotent: a sync that failed part-way is finished by
// the next.
func (c *Cluster) sync(ctx context.Context, i int) error {
	n := c.nodes[i-1]
	want := c.wantNets(i)
	info, err := c.cli.ContainerInspect(ctx, n.ID)
	if err != nil {
		return fmt.Errorf("inspect container %q: %w", n.Name, err)
	}
	on := map[string]bool{}
	if info.NetworkSettings != nil {
		for name := range info.NetworkSettings.Networks {
			on[name] = true
		}
	}
	for name := range on {
		if _, ok := want[name]; !ok && c.ours(name) {
			if err := c.cli.NetworkDisconnect(ctx, name, n.ID, true); err != nil {
				return fmt.Errorf("disconnect container %q from network %q: %w", n.Name, name, err)
			}
		}
	}
	names := make([]string, 0, len(want))
	for name := range want {
		if !on[name] && name != c.clientNet {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	if _, ok := want[c.clientNet]; ok && !on[c.clientNet] {
		names = append([]string{c.clientNet}, names...)
	}
	for _, name := range names {
		if err := c.cli.NetworkConnect(ctx, name, n.ID, &network.EndpointSettings{Aliases: want[name]}); err != nil {
			return fmt.Errorf("connect container %q to network %q: %w", n.Name, name, err)
		}
	}
	return nil
}

// ours reports whether name is one of the cluster's own networks.
func (c *Cluster) ours(name string) bool {
	if name == c.clientNet {
		return true
	}
	for _, n := range c.links {
		if n == name {
			return true
		}
	}
	return false
}

// targetSide is the side of a partition its target's nodes are on (the
// first side partitionPlan cuts off): the target itself for isolate, the
// target filled up to the side's size for halves and bridge; none for
// majorities-ring, which has no sides.
func targetSide(n int, target []int, shape scenario.PartitionShape) []int {
	var side []int
	var err error
	switch shape {
	case "", scenario.PartitionIsolate:
		side = sortedSet(target)
	case scenario.PartitionHalves:
		side, err = fill(n, target, n/2, shape)
	case scenario.PartitionBridge:
		side, err = fill(n, target, (n-1)/2, shape)
	}
	if err != nil {
		return nil
	}
	return side
}
