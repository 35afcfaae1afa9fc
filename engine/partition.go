package engine

import (
	"context"
	"fmt"
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
