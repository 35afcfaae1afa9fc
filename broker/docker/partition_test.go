package docker

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/rmqtorture/rmqtorture/scenario"
)

// links renders a plan's cut links as "1-3 2-3" for exact comparison.
func links(cut []link) string {
	parts := make([]string, len(cut))
	for i, l := range cut {
		parts[i] = fmt.Sprintf("%d-%d", l.A, l.B)
	}
	return strings.Join(parts, " ")
}

// Each shape cuts exactly the links its sides say, on 3 and 5 nodes.
func TestPartitionPlan(t *testing.T) {
	for _, tc := range []struct {
		n      int
		target []int
		shape  scenario.PartitionShape
		cut    string
		sides  string
	}{
		{3, []int{1}, scenario.PartitionIsolate, "1-2 1-3", "rmq1 | rmq2, rmq3"},
		{3, []int{2}, "", "1-2 2-3", "rmq2 | rmq1, rmq3"},
		{3, []int{3}, scenario.PartitionIsolate, "1-3 2-3", "rmq3 | rmq1, rmq2"},
		{5, []int{4}, scenario.PartitionIsolate, "1-4 2-4 3-4 4-5", "rmq4 | rmq1, rmq2, rmq3, rmq5"},
		{5, []int{1, 2}, scenario.PartitionIsolate, "1-3 1-4 1-5 2-3 2-4 2-5", "rmq1, rmq2 | rmq3, rmq4, rmq5"},

		{3, []int{1}, scenario.PartitionHalves, "1-2 1-3", "rmq1 | rmq2, rmq3"},
		{3, []int{3}, scenario.PartitionHalves, "1-3 2-3", "rmq3 | rmq1, rmq2"},
		{5, []int{1}, scenario.PartitionHalves, "1-3 1-4 1-5 2-3 2-4 2-5", "rmq1, rmq2 | rmq3, rmq4, rmq5"},
		{5, []int{5}, scenario.PartitionHalves, "1-2 1-3 1-4 2-5 3-5 4-5", "rmq1, rmq5 | rmq2, rmq3, rmq4"},
		{5, []int{2, 4}, scenario.PartitionHalves, "1-2 1-4 2-3 2-5 3-4 4-5", "rmq2, rmq4 | rmq1, rmq3, rmq5"},
		{5, nil, scenario.PartitionHalves, "1-3 1-4 1-5 2-3 2-4 2-5", "rmq1, rmq2 | rmq3, rmq4, rmq5"},

		{3, []int{1}, scenario.PartitionBridge, "1-3", "rmq1 | rmq2 (bridge) | rmq3"},
		{3, []int{2}, scenario.PartitionBridge, "1-2", "rmq2 | rmq3 (bridge) | rmq1"},
		{3, []int{3}, scenario.PartitionBridge, "2-3", "rmq3 | rmq1 (bridge) | rmq2"},
		{5, []int{1}, scenario.PartitionBridge, "1-4 1-5 2-4 2-5", "rmq1, rmq2 | rmq3 (bridge) | rmq4, rmq5"},
		{5, []int{4}, scenario.PartitionBridge, "2-4 2-5 3-4 3-5", "rmq4, rmq5 | rmq1 (bridge) | rmq2, rmq3"},

		{5, []int{1}, scenario.PartitionMajoritiesRing, "1-3 1-4 2-4 2-5 3-5", "ring rmq1-rmq2-rmq3-rmq4-rmq5 (each node sees its two ring neighbours only)"},
		{5, nil, scenario.PartitionMajoritiesRing, "1-3 1-4 2-4 2-5 3-5", "ring rmq1-rmq2-rmq3-rmq4-rmq5 (each node sees its two ring neighbours only)"},
		{4, nil, scenario.PartitionMajoritiesRing, "1-3 2-4", "ring rmq1-rmq2-rmq3-rmq4 (each node sees its two ring neighbours only)"},
	} {
		name := fmt.Sprintf("%s on %d around %v", tc.shape, tc.n, tc.target)
		cut, sides, err := partitionPlan(tc.n, tc.target, tc.shape)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if got := links(cut); got != tc.cut || sides != tc.sides {
			t.Errorf("%s: cut %q sides %q, want %q %q", name, got, sides, tc.cut, tc.sides)
		}
	}
}

// Every node of a majorities ring on 5 sees exactly a majority (3 with
// itself), and no two nodes see the same majority.
func TestMajoritiesRingViews(t *testing.T) {
	cut, _, err := partitionPlan(5, nil, scenario.PartitionMajoritiesRing)
	if err != nil {
		t.Fatal(err)
	}
	views := map[string]int{}
	for i := 1; i <= 5; i++ {
		view := []int{}
		for j := 1; j <= 5; j++ {
			a, b := min(i, j), max(i, j)
			cutIJ := false
			for _, l := range cut {
				cutIJ = cutIJ || (l == link{a, b})
			}
			if !cutIJ {
				view = append(view, j)
			}
		}
		if len(view) != 3 {
			t.Errorf("rmq%d sees %v, want 3 nodes", i, view)
		}
		views[fmt.Sprint(view)]++
	}
	if len(views) != 5 {
		t.Errorf("views %v: want 5 different majorities", views)
	}
}

// What does not fit is refused with the reason.
func TestPartitionPlanRefuses(t *testing.T) {
	for _, tc := range []struct {
		n      int
		target []int
		shape  scenario.PartitionShape
		err    string
	}{
		{3, nil, scenario.PartitionIsolate, "partition isolate: the target has 0 of the 3 nodes; it needs at least one and fewer than all"},
		{3, []int{1, 2, 3}, scenario.PartitionIsolate, "partition isolate: the target has 3 of the 3 nodes; it needs at least one and fewer than all"},
		{3, []int{4}, scenario.PartitionIsolate, "partition target node 4 is not a node of this 3-node cluster"},
		{3, []int{1, 2}, scenario.PartitionHalves, "partition halves on 3 nodes: the target has 2 nodes (rmq1, rmq2), more than the side of 1 that holds it"},
		{3, nil, scenario.PartitionMajoritiesRing, "partition majorities-ring needs at least 4 nodes: on 3 every node already sees all the others"},
		{2, []int{1}, scenario.PartitionBridge, "partition bridge needs at least 3 nodes, the cluster has 2"},
		{1, []int{1}, scenario.PartitionIsolate, "a partition needs at least 2 nodes, the cluster has 1"},
		{3, []int{1}, "random", `unknown partition shape "random" (one of [isolate halves majorities-ring bridge])`},
	} {
		_, _, err := partitionPlan(tc.n, tc.target, tc.shape)
		if err == nil || err.Error() != tc.err {
			t.Errorf("%s on %d around %v: %v, want %q", tc.shape, tc.n, tc.target, err, tc.err)
		}
	}
}

// The side a heal restarts when the nodes stay split: the target's.
func TestTargetSide(t *testing.T) {
	for _, c := range []struct {
		n      int
		target []int
		shape  scenario.PartitionShape
		want   []int
	}{
		{3, []int{2}, scenario.PartitionIsolate, []int{2}},
		{5, []int{1}, scenario.PartitionHalves, []int{1, 2}},
		{5, []int{4}, scenario.PartitionHalves, []int{4, 5}},
		{3, []int{1}, scenario.PartitionBridge, []int{1}},
		{5, []int{1}, scenario.PartitionMajoritiesRing, nil},
	} {
		if got := targetSide(c.n, c.target, c.shape); !slices.Equal(got, c.want) {
			t.Errorf("%s of %v on %d nodes: side %v, want %v", c.shape, c.target, c.n, got, c.want)
		}
	}
}
