package docker

import (
	"fmt"
	"slices"
	"strings"

	"github.com/rmqtorture/rmqtorture/scenario"
)

// Partitions are played on the inter-node links of a cluster rmqtorture
// created: one internal Docker network per pair of nodes (see cluster.go),
// so cutting a link between two nodes leaves every other link, and every
// node's client port, as it was. The shapes follow the nemeses of
// RabbitMQ's Jepsen suite (jepsen/rabbitmq; Jepsen's own
// jepsen.nemesis: partition-random-node, partition-halves,
// partition-majorities-ring, bridge). This file is the arithmetic only:
// which links a shape cuts, and how its sides read.

// link is the inter-node link between nodes A and B (1-based, A < B).
type link struct{ A, B int }

func (l link) String() string { return scenario.NodeName(l.A) + "-" + scenario.NodeName(l.B) }

// allLinks lists every link of an n-node cluster, in order (1-2, 1-3, …,
// 2-3, …).
func allLinks(n int) []link {
	var out []link
	for a := 1; a <= n; a++ {
		for b := a + 1; b <= n; b++ {
			out = append(out, link{a, b})
		}
	}
	return out
}

// partitionPlan returns the links shape cuts on an n-node cluster around
// target (node numbers, as Resolve gives them) and describes the sides:
//
//   - isolate (also ""): the target's nodes from every other node
//     ("rmq1 | rmq2, rmq3");
//   - halves: a side of n/2 nodes (rounded down: 1|2 on 3, 2|3 on 5)
//     holding the target's nodes, filled with the nodes after the target's
//     first in ring order (rmq3 on 5: rmq3, rmq4 | rmq5, rmq1, rmq2);
//   - bridge: two sides of (n-1)/2 and n/2 nodes that see one bridge node
//     and not each other, the target's nodes on the first side and the
//     bridge after it in ring order (target rmq1 on 3: rmq1 | rmq2
//     (bridge) | rmq3; on 5: rmq1, rmq2 | rmq3 (bridge) | rmq4, rmq5);
//   - majorities-ring: nodes on a ring in node order, each sees the
//     nearest ceil((n/2)/2) nodes on either side, so each sees a majority
//     (itself included) and no two see the same one (5 nodes: node i sees
//     i±1). The target does not matter. On 3 nodes every node would see
//     both others: refused.
//
// The links are in allLinks order. An error names what does not fit: a
// target node out of range, a target side larger than the shape's.
func partitionPlan(n int, target []int, shape scenario.PartitionShape) ([]link, string, error) {
	if n < 2 {
		return nil, "", fmt.Errorf("a partition needs at least 2 nodes, the cluster has %d", n)
	}
	for _, t := range target {
		if t < 1 || t > n {
			return nil, "", fmt.Errorf("partition target node %d is not a node of this %d-node cluster", t, n)
		}
	}
	switch shape {
	case "", scenario.PartitionIsolate:
		side := sortedSet(target)
		if len(side) == 0 || len(side) == n {
			return nil, "", fmt.Errorf("partition isolate: the target has %d of the %d nodes; it needs at least one and fewer than all", len(side), n)
		}
		return across(n, side, nil), sidesText(side, others(n, side)), nil
	case scenario.PartitionHalves:
		side, err := fill(n, target, n/2, shape)
		if err != nil {
			return nil, "", err
		}
		return across(n, side, nil), sidesText(side, others(n, side)), nil
	case scenario.PartitionBridge:
		if n < 3 {
			return nil, "", fmt.Errorf("partition bridge needs at least 3 nodes, the cluster has %d", n)
		}
		side, err := fill(n, target, (n-1)/2, shape)
		if err != nil {
			return nil, "", err
		}
		bridge := 0
		for _, i := range ring(n, first(side)) {
			if !slices.Contains(side, i) {
				bridge = i
				break
			}
		}
		rest := slices.DeleteFunc(others(n, side), func(i int) bool { return i == bridge })
		return across(n, side, rest), sidesText(side, []int{bridge}, rest), nil
	case scenario.PartitionMajoritiesRing:
		d := ((n / 2) + 1) / 2
		var cut []link
		for _, l := range allLinks(n) {
			if dist := min(l.B-l.A, n-(l.B-l.A)); dist > d {
				cut = append(cut, l)
			}
		}
		if len(cut) == 0 {
			return nil, "", fmt.Errorf("partition majorities-ring needs at least 4 nodes: on %d every node already sees all the others", n)
		}
		names := make([]string, n)
		for i := range n {
			names[i] = scenario.NodeName(i + 1)
		}
		sees := "its two ring neighbours only"
		if d > 1 {
			sees = fmt.Sprintf("the %d nearest nodes on either side only", d)
		}
		return cut, fmt.Sprintf("ring %s (each node sees %s)", strings.Join(names, "-"), sees), nil
	}
	return nil, "", fmt.Errorf("unknown partition shape %q (one of %v)", shape, scenario.PartitionShapes)
}

// fill returns the target's nodes followed by the nodes after the first of
// them in ring order, size in all, ascending; an empty target starts the
// ring at node 1.
func fill(n int, target []int, size int, shape scenario.PartitionShape) ([]int, error) {
	side := sortedSet(target)
	if len(side) > size {
		return nil, fmt.Errorf("partition %s on %d nodes: the target has %d nodes (%s), more than the side of %d that holds it", shape, n, len(side), scenario.NodeNames(side), size)
	}
	for _, i := range ring(n, first(side)) {
		if len(side) == size {
			break
		}
		if !slices.Contains(side, i) {
			side = append(side, i)
		}
	}
	slices.Sort(side)
	return side, nil
}

// ring lists the nodes 1..n starting at from and wrapping around.
func ring(n, from int) []int {
	out := make([]int, n)
	for k := range n {
		out[k] = (from-1+k)%n + 1
	}
	return out
}

// first is the lowest node of side, 1 when side is empty.
func first(side []int) int {
	if len(side) == 0 {
		return 1
	}
	return slices.Min(side)
}

// sortedSet returns nodes ascending without repeats.
func sortedSet(nodes []int) []int {
	out := slices.Clone(nodes)
	slices.Sort(out)
	return slices.Compact(out)
}

// others lists the nodes 1..n not in side, ascending.
func others(n int, side []int) []int {
	var out []int
	for i := 1; i <= n; i++ {
		if !slices.Contains(side, i) {
			out = append(out, i)
		}
	}
	return out
}

// across lists the links between side and the other nodes (only those in
// to, when to is set), in allLinks order.
func across(n int, side, to []int) []link {
	var out []link
	for _, l := range allLinks(n) {
		inA, inB := slices.Contains(side, l.A), slices.Contains(side, l.B)
		if inA == inB {
			continue
		}
		other := l.A
		if inA {
			other = l.B
		}
		if to == nil || slices.Contains(to, other) {
			out = append(out, l)
		}
	}
	return out
}

// sidesText names each side's nodes, sides joined by " | "; with three
// sides the middle one is the bridge.
func sidesText(sides ...[]int) string {
	parts := make([]string, len(sides))
	for i, s := range sides {
		parts[i] = scenario.NodeNames(s)
		if len(sides) == 3 && i == 1 {
			parts[i] += " (bridge)"
		}
	}
	return strings.Join(parts, " | ")
}
