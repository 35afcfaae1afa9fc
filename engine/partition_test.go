package engine

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/rmqtorture/rmqtorture/metrics"
	"github.com/rmqtorture/rmqtorture/scenario"
)

var split = map[string][]string{"rabbit@rmq2": {"rabbit@rmq1"}, "rabbit@rmq1": {"rabbit@rmq2"}}

func TestPartitionText(t *testing.T) {
	got := scenario.PartitionText(map[string][]string{"rabbit@rmq2": {"rabbit@rmq3", "rabbit@rmq1"}, "rabbit@rmq1": {"rabbit@rmq2"}})
	if want := "rabbit@rmq1 sees rabbit@rmq2 partitioned; rabbit@rmq2 sees rabbit@rmq1, rabbit@rmq3 partitioned"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}

// A cluster that still reports a partition once the faults are done is
// recorded (partitioned_at_drain, a partitioned event, a note), and the
// drain and the verdict go on: every node takes logins.
func TestPartitionAtDrainIsRecordedAndTheDrainGoesOn(t *testing.T) {
	c := newFakeCluster()
	c.partitions = split
	r := &Runner{Ports: PortsOf(c), Traffic: &fakeTraffic{b: c.fakeBroker, holdAt: 150}, Log: newRunner(nil, nil).Log, RunID: "t1"}
	res, down := r.RunMode(context.Background(), clusterScenario(scenario.Kill, 100*time.Millisecond), scenario.ConfirmWindow)
	if down || res.Verdict.Status != scenario.Pass || res.Lost != 0 || res.Unverified != 0 {
		t.Fatalf("down %v verdict %+v counts %+v: want the drain to go on and pass", down, res.Verdict, res.Counts)
	}
	if !reflect.DeepEqual(res.PartitionedAtDrain, split) {
		t.Fatalf("partitioned_at_drain %v, want %v", res.PartitionedAtDrain, split)
	}
	var seen []metrics.Event
	for _, e := range res.Events {
		if e.Kind == metrics.EvPartitioned {
			seen = append(seen, e)
		}
	}
	want := "still partitioned as the drain begins: rabbit@rmq1 sees rabbit@rmq2 partitioned; rabbit@rmq2 sees rabbit@rmq1 partitioned"
	if len(seen) != 1 || seen[0].Detail != want {
		t.Fatalf("partitioned events %+v, want one: %q", seen, want)
	}
	if !strings.Contains(strings.Join(res.Notes, "\n"), "the cluster was still partitioned when the drain began (rabbit@rmq1 sees rabbit@rmq2") {
		t.Fatalf("notes %q lack the partition", res.Notes)
	}
	// A whole cluster: nothing recorded.
	c2 := newFakeCluster()
	r2 := &Runner{Ports: PortsOf(c2), Traffic: &fakeTraffic{b: c2.fakeBroker, holdAt: 150}, Log: newRunner(nil, nil).Log, RunID: "t2"}
	res2, _ := r2.RunMode(context.Background(), clusterScenario(scenario.Kill, 100*time.Millisecond), scenario.ConfirmWindow)
	if res2.PartitionedAtDrain != nil || strings.Contains(strings.Join(res2.Notes, "\n"), "partitioned") {
		t.Fatalf("whole cluster: partitioned_at_drain %v, notes %q", res2.PartitionedAtDrain, res2.Notes)
	}
}

// partitionedCommands answers the readiness wait after a command step
// with a partition, as a cluster whose nodes all take logins but whose
// metadata store stayed split does (rabbitmq-server#17319).
type partitionedCommands struct{ fakeCommands }

func (c *partitionedCommands) WaitReady(ctx context.Context, uris []string, timeout time.Duration) error {
	if err := c.fakeCommands.WaitReady(ctx, uris, timeout); err != nil {
		return err
	}
	return &PartitionError{Seen: split}
}

// A command step after which every node takes logins but the cluster
// reports a partition is recovered, not "broker not back": the partition
// is on the timeline and in the notes, the drain goes on, and the verdict
// is judged.
func TestCommandStepPartitionIsAFindingNotABrokerDown(t *testing.T) {
	f := mustParse(t, commandKillStart)
	b := &fakeBroker{}
	cmds := &partitionedCommands{fakeCommands{b: b}}
	r := newRunner(b, &fakeTraffic{b: b, holdAt: 10})
	r.Ports.Commands = cmds
	res, down := r.RunMode(context.Background(), &f.Scenarios[0], scenario.ConfirmWindow)
	if down || res.Verdict.Status != scenario.Pass || res.Faults[0].Error != "" || res.Lost != 0 || res.Unverified != 0 {
		t.Fatalf("down %v verdict %+v fault %+v counts %+v", down, res.Verdict, res.Faults[0], res.Counts)
	}
	var kinds []string
	for _, e := range res.Events {
		if e.Action == string(scenario.Command) {
			kinds = append(kinds, string(e.Kind))
		}
	}
	if got := strings.Join(kinds, " "); got != "trigger fault broker-started partitioned broker-ready fault-cleared" {
		t.Fatalf("command events %q", got)
	}
	want := "after the command step every node took AMQP logins but the cluster reported a partition (rabbit@rmq1 sees rabbit@rmq2 partitioned; rabbit@rmq2 sees rabbit@rmq1 partitioned, by rabbitmqctl cluster_status)"
	if !strings.Contains(strings.Join(res.Notes, "\n"), want) {
		t.Fatalf("notes %q lack %q", res.Notes, want)
	}
	var pe *PartitionError
	if err := cmds.WaitReady(context.Background(), nil, time.Second); !errors.As(err, &pe) || err.Error() != "the cluster is partitioned: "+scenario.PartitionText(split) {
		t.Fatalf("err %v", err)
	}
}

// An assert-whole step that finds the cluster partitioned fails the run
// with what the nodes reported, and only that: nothing was undone, no
// fault was in effect, the drain went on and the ledger holds. One that
// finds it whole records that it held.
func TestAssertWholeFailsTheRunAndTheBurstGoesOn(t *testing.T) {
	f := mustParse(t, `version: 1
scenarios:
  - name: t
    broker: {nodes: 3}
    queue: {settle_before_burst: 0s}
    load: {messages: 100, modes: [confirm-window], window: 10}
    faults: [{action: assert-whole, after_burst: 0s, timeout: 2s}]
`)
	for _, tc := range []struct {
		name       string
		partitions map[string][]string
		status     scenario.Status
		reasons    []string
		detail     string
	}{
		{"partitioned", split, scenario.Fail,
			[]string{"assert-whole (0s after the last publish): the cluster is not whole after 2s: the cluster is partitioned: rabbit@rmq1 sees rabbit@rmq2 partitioned; rabbit@rmq2 sees rabbit@rmq1 partitioned"},
			"failed: the cluster is not whole after 2s: the cluster is partitioned: rabbit@rmq1 sees rabbit@rmq2 partitioned; rabbit@rmq2 sees rabbit@rmq1 partitioned"},
		{"whole", nil, scenario.Pass, nil, "the cluster is whole (every node running, no partition), seen after "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newFakeCluster()
			c.partitions = tc.partitions
			r := &Runner{Ports: PortsOf(c), Traffic: &fakeTraffic{b: c.fakeBroker}, Log: newRunner(nil, nil).Log, RunID: "t1"}
			res, down := r.RunMode(context.Background(), &f.Scenarios[0], scenario.ConfirmWindow)
			if down || res.Verdict.Status != tc.status || !reflect.DeepEqual(res.Verdict.Reasons, tc.reasons) {
				t.Fatalf("down %v verdict %+v, want %s %q", down, res.Verdict, tc.status, tc.reasons)
			}
			if res.Lost != 0 || res.Unverified != 0 || res.Delivered != 100 || len(c.ops) != 0 {
				t.Fatalf("counts %+v, broker ops %v: want the drain whole and nothing done to the broker", res.Counts, c.ops)
			}
			var details []string
			for _, e := range res.Events {
				if e.Action == string(scenario.AssertWhole) && e.Kind == metrics.EvFault {
					details = append(details, e.Detail)
				}
			}
			if len(details) != 1 || !strings.HasPrefix(details[0], tc.detail) {
				t.Fatalf("assert-whole events %q, want %q", details, tc.detail)
			}
		})
	}
}

// After a partition heals, one probe goes through each node, in node
// order, and each node's confirm is recorded: whole again means a confirm
// through every node. A node whose probe gets no confirm is named in the
// heal's detail, with why.
func TestPartitionHealConfirmsThroughEachNode(t *testing.T) {
	for _, tc := range []struct {
		name   string
		errs   map[int]error
		detail string
	}{
		{"every node confirms", nil, "; a confirm went through each node by "},
		{"rmq3 does not", map[int]error{3: errors.New("basic.nack for the probe")}, "; no confirm through rmq3 (basic.nack for the probe)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newFakeCluster()
			tr := &fakeTraffic{b: c.fakeBroker, probeErr: tc.errs}
			r := &Runner{Ports: PortsOf(c), Traffic: tr, Log: newRunner(nil, nil).Log, RunID: "t1"}
			res, _ := r.RunMode(context.Background(), clusterScenario(scenario.Partition, 100*time.Millisecond), scenario.ConfirmWindow)
			if res.Lost != 0 || res.Unexpected != 0 {
				t.Fatalf("counts %+v: a probe is no order", res.Counts)
			}
			want := map[int][]string{1: {"rmqt-probe-1-1"}, 2: {"rmqt-probe-1-2"}, 3: {"rmqt-probe-1-3"}}
			if !reflect.DeepEqual(tr.probes, want) {
				t.Fatalf("probes %v, want %v", tr.probes, want)
			}
			got := res.Faults[0].ConfirmsThroughNodes
			if len(got) != 3 || got[0].Node != "rmq1" || got[0].ConfirmMS == nil || got[0].Error != "" {
				t.Fatalf("confirms %+v", got)
			}
			if failed := tc.errs[3] != nil; (got[2].ConfirmMS == nil) != failed || (got[2].Error != "") != failed {
				t.Fatalf("rmq3's confirm %+v", got[2])
			}
			var cleared string
			for _, e := range res.Events {
				if e.Kind == metrics.EvFaultCleared {
					cleared = e.Detail
				}
			}
			if !strings.Contains(cleared, tc.detail) {
				t.Fatalf("heal detail %q lacks %q", cleared, tc.detail)
			}
		})
	}
}
