package engine

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/rmqtorture/rmqtorture/metrics"
	"github.com/rmqtorture/rmqtorture/scenario"
)

// PartitionError is a cluster whose nodes answer but report a network
// partition: Seen maps a node's Erlang name to the nodes it saw
// partitioned from it, as `rabbitmqctl cluster_status` lists them
// (https://www.rabbitmq.com/docs/partitions#detecting). It is a finding
// about the broker, not a broker that is not back: RabbitMQ's default
// partition handling (ignore) keeps the sides apart until a node restarts
// (https://www.rabbitmq.com/docs/partitions#recovering), and a blip of
// milliseconds in the Erlang distribution can leave the metadata store
// split for good while quorum queues go on confirming
// (rabbitmq-server#17319).
type PartitionError struct {
	Seen map[string][]string
}

func (e *PartitionError) Error() string {
	return "the cluster is partitioned: " + scenario.PartitionText(e.Seen)
}

// partitionedAtDrain asks the cluster, once the faults are done and before
// the drain, whether a node still reports a partition. One that does is
// recorded in the result (partitioned_at_drain), on the timeline and in
// the notes; the drain then goes through the nodes that take logins, as
// it always does. A cluster that does not answer is left to the drain.
func (b *burst) partitionedAtDrain(ctx context.Context) {
	c := b.r.Ports.Cluster
	if c == nil || b.brokerErr != nil {
		return
	}
	pctx, cancel := context.WithTimeout(ctx, pollTimeout)
	defer cancel()
	seen, err := c.Partitions(pctx)
	if err != nil {
		b.log.Warn("could not ask the cluster for partitions before the drain", "err", err)
		return
	}
	if len(seen) == 0 {
		return
	}
	text := scenario.PartitionText(seen)
	b.res.PartitionedAtDrain = seen
	b.timeline.Add(metrics.EvPartitioned, "still partitioned as the drain begins: "+text)
	b.log.Warn("the cluster is still partitioned as the drain begins", "partitions", text)
	b.res.Notes = append(b.res.Notes, "the cluster was still partitioned when the drain began ("+text+
		", by rabbitmqctl cluster_status): RabbitMQ's default partition handling (ignore) keeps the sides apart until a node restarts "+
		"(https://www.rabbitmq.com/docs/partitions#recovering; a blip of milliseconds can do it, rabbitmq-server#17319); "+
		"the drain read through the nodes that take logins")
}

// partitionSeen records that the cluster answered a readiness wait with a
// partition (every node taking logins): the step is recovered, and the
// partition is on the timeline and in the notes.
func (in *injector) partitionSeen(pe *PartitionError, a scenario.Action) {
	text := scenario.PartitionText(pe.Seen)
	in.event(time.Time{}, metrics.EvPartitioned, a, text)
	in.log.Warn("every node takes logins, but the cluster is partitioned", "after", a, "partitions", text)
	in.notes = append(in.notes, fmt.Sprintf("after the %s step every node took AMQP logins but the cluster reported a partition (%s, by rabbitmqctl cluster_status)", a, text))
}

// assert plays a step that checks the broker rather than acts on it
// (assert-whole): no fault is in effect meanwhile, nothing is undone, and
// its record's call_ms is how long the check took. A check that fails is
// recorded (the record's error, a fault event saying so) and returned: the
// runner goes on with the burst, and the judge fails the run on it
// (AssertionsFailed).
func (in *injector) assert(ctx context.Context, f *scenario.Fault, rec scenario.FaultRecord, at time.Time) (scenario.FaultRecord, error) {
	apply := playbook[f.Action]
	detail, err := apply(in, ctx, f, &rec)
	rec.CallMS = metrics.Millis(time.Since(at))
	if err != nil {
		rec.Error = err.Error()
		in.event(time.Time{}, metrics.EvFault, f.Action, "failed: "+rec.Error)
		in.log.Warn("assertion failed", "action", f.Action, "err", err)
		return rec, err
	}
	in.event(time.Time{}, metrics.EvFault, f.Action, detail)
	in.log.Info("assertion held", "action", f.Action, "took", time.Since(at).Round(time.Millisecond))
	return rec, nil
}

// assertWhole waits (within the step's timeout) until every node of the
// cluster answers, lists every node as running and reports no partition.
func assertWhole(in *injector, ctx context.Context, f *scenario.Fault, _ *scenario.FaultRecord) (string, error) {
	if in.ports.Cluster == nil {
		return "", errNoPort
	}
	start := time.Now()
	if err := in.ports.Cluster.WaitWhole(ctx, f.Timeout.D()); err != nil {
		return "", fmt.Errorf("the cluster is not whole after %s: %w", f.Timeout.D(), err)
	}
	return fmt.Sprintf("the cluster is whole (every node running, no partition), seen after %s", time.Since(start).Round(time.Millisecond)), nil
}

// AssertionsFailed lists the steps that check the broker (assert-whole)
// and failed, in the order they fired, one reason each: what the judge
// fails the run on (scenario.Observed.AssertionsFailed).
func AssertionsFailed(faults []scenario.FaultRecord) []string {
	var out []string
	for _, f := range faults {
		if f.Action.Asserts() && f.Error != "" {
			out = append(out, fmt.Sprintf("%s (%s): %s", f.Action, f.Trigger, f.Error))
		}
	}
	return out
}

// probeTimeout bounds the wait for one probe's confirm: a quorum queue
// whose members are still catching up after a heal may take seconds.
const probeTimeout = 30 * time.Second

// confirmThroughEach publishes one probe through each node once a
// partition has healed and records per node when its publisher confirm
// came, in ms after the step's trigger, or why none did
// (rec.ConfirmsThroughNodes): the cluster is whole again when a confirm
// goes through every node, not only when no node reports the partition
// (a cut-off node's publishes can wait for a confirm long after). It
// returns what to add to the heal's detail.
func (in *injector) confirmThroughEach(ctx context.Context, rec *scenario.FaultRecord) string {
	if in.probe == nil || in.cluster == nil {
		return ""
	}
	in.heals++
	trigger := in.start.Add(time.Duration(rec.AtMS * float64(time.Millisecond)))
	var failed []string
	for n := 1; n <= in.cluster.size(); n++ {
		pctx, cancel := context.WithTimeout(ctx, probeTimeout)
		err := in.probe(pctx, n, metrics.ProbeID(in.heals, n))
		cancel()
		c := scenario.NodeConfirm{Node: scenario.NodeName(n)}
		if err != nil {
			c.Error = err.Error()
			failed = append(failed, fmt.Sprintf("%s (%v)", c.Node, err))
		} else {
			v := metrics.Millis(time.Since(trigger))
			c.ConfirmMS = &v
		}
		rec.ConfirmsThroughNodes = append(rec.ConfirmsThroughNodes, c)
	}
	if len(failed) > 0 {
		in.log.Warn("no confirm through some nodes after the heal", "nodes", strings.Join(failed, "; "))
		return "; no confirm through " + strings.Join(failed, "; ")
	}
	last := rec.ConfirmsThroughNodes[len(rec.ConfirmsThroughNodes)-1].ConfirmMS
	return fmt.Sprintf("; a confirm went through each node by %.0f ms after the fault", *last)
}
