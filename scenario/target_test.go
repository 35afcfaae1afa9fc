package scenario

import (
	"slices"
	"strings"
	"testing"
)

func TestTargetResolve(t *testing.T) {
	three := map[int]string{1: "follower", 2: "leader", 3: "follower"}
	five := map[int]string{1: "follower", 2: "follower", 3: "leader", 4: "timeout", 5: "follower"}
	pick := func(n int) int { return n - 1 } // the last node
	for _, c := range []struct {
		t       Target
		size    int
		members map[int]string
		want    []int
	}{
		{Target{Kind: TargetAll}, 3, three, []int{1, 2, 3}},
		{Target{Kind: TargetNode, Node: 3}, 3, three, []int{3}},
		{Target{Kind: TargetRandom}, 5, five, []int{5}},
		{Target{Kind: TargetLeader, Queue: "q"}, 3, three, []int{2}},
		{Target{Kind: TargetFollower, Queue: "q"}, 3, three, []int{1}},
		{Target{Kind: TargetMinority, Queue: "q"}, 3, three, []int{1}},
		{Target{Kind: TargetMajority, Queue: "q"}, 3, three, []int{1, 2}},
		// 5 nodes: minority is 2 followers (rmq4's member is unreachable,
		// ranked after them); majority is the leader and 2 followers.
		{Target{Kind: TargetMinority, Queue: "q"}, 5, five, []int{1, 2}},
		{Target{Kind: TargetMajority, Queue: "q"}, 5, five, []int{1, 2, 3}},
		{Target{Kind: TargetMinority, Queue: "q", Count: 1}, 5, five, []int{1}},
		{Target{Kind: TargetMajority, Queue: "q", Count: 5}, 5, five, []int{1, 2, 3, 4, 5}},
		// A queue with 3 members on 5 nodes: a majority of its members is 2.
		{Target{Kind: TargetMajority, Queue: "q"}, 5, map[int]string{2: "follower", 4: "leader", 5: "follower"}, []int{2, 4}},
		{Target{Kind: TargetMinority, Queue: "q"}, 5, map[int]string{2: "follower", 4: "leader", 5: "follower"}, []int{2}},
	} {
		got, err := c.t.Resolve(c.size, c.members, pick)
		if err != nil || !slices.Equal(got.Nodes, c.want) {
			t.Errorf("%s on %d nodes: got %v, %v; want %v", c.t, c.size, got.Nodes, err, c.want)
		}
	}
	if got, _ := (Target{Kind: TargetLeader, Queue: "q"}).Resolve(3, three, pick); got.String() != "leader of q (rmq2)" {
		t.Errorf("resolved leader spelled %q", got.String())
	}
	noLeader := map[int]string{1: "candidate", 2: "timeout", 3: "timeout"}
	for _, tg := range []Target{{Kind: TargetLeader, Queue: "q"}, {Kind: TargetFollower, Queue: "q"}} {
		_, err := tg.Resolve(3, noLeader, pick)
		if err == nil || !strings.Contains(err.Error(), "members: rmq1 candidate, rmq2 timeout, rmq3 timeout") {
			t.Errorf("%s without a leader: %v", tg, err)
		}
	}
	if _, err := (Target{Kind: TargetNode, Node: 4}).Resolve(3, three, pick); err == nil {
		t.Error("node 4 of 3 resolved")
	}
	if _, err := (Target{Kind: TargetMajority, Count: 4}).Resolve(3, three, pick); err == nil {
		t.Error("4 of 3 nodes resolved")
	}
}

func TestReplicated(t *testing.T) {
	for members, want := range map[*map[int]string]bool{
		{1: "leader", 2: "follower", 3: "follower"}:   true,
		{1: "leader", 2: "follower"}:                  true, // a queue with two members
		{1: "leader", 2: "follower", 3: "timeout"}:    false,
		{1: "follower", 2: "follower", 3: "follower"}: false,
	} {
		if got := Replicated(*members); got != want {
			t.Errorf("Replicated(%v) = %v, want %v", *members, got, want)
		}
	}
}

func TestGroupSizeValidated(t *testing.T) {
	_, err := Parse("s.yaml", []byte(`version: 1
scenarios:
  - name: a
    broker: {nodes: 3}
    queue: {arguments: {x-quorum-initial-group-size: 5}}
    load: {messages: 10}
  - name: b
    broker: {nodes: 3}
    queue: {type: classic, arguments: {x-quorum-initial-group-size: 3}}
    load: {messages: 10}
  - name: c
    broker: {nodes: 5}
    queue: {arguments: {x-quorum-initial-group-size: 5}}
    load: {messages: 10}
`))
	want := "s.yaml:5:54: scenarios[0].queue.arguments.x-quorum-initial-group-size: must be within 1–3 (broker.nodes), got 5: a quorum queue has at most one member per node\n" +
		"s.yaml:9:69: scenarios[1].queue.arguments.x-quorum-initial-group-size: sets a quorum queue's member count, and queue.type is classic"
	if err == nil || err.Error() != want {
		t.Fatalf("got\n%v\nwant\n%s", err, want)
	}
}
