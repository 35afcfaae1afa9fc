package engine

import (
	"context"
	"time"

	"github.com/rmqtorture/rmqtorture/scenario"
)

// The fault ports are small and each method names its target, as pumba's
// are: a single broker accepts scenario.TargetBroker (and TargetAll) and
// refuses the cluster kinds with an error ("target leader of q needs a
// cluster"). Implementations act only on containers rmqtorture created or
// one the user named.

// Lifecycle kills, starts, stops and restarts the target's broker nodes.
type Lifecycle interface {
	// Kill delivers signal (e.g. "SIGKILL") to the target's containers.
	Kill(ctx context.Context, target scenario.Target, signal string) error
	// Start starts the target's containers again after a kill or stop.
	Start(ctx context.Context, target scenario.Target) error
	// Stop stops the target gracefully (SIGTERM), SIGKILL after grace.
	Stop(ctx context.Context, target scenario.Target, grace time.Duration) error
	// Restart stops the target gracefully (SIGKILL after grace) and starts
	// it again.
	Restart(ctx context.Context, target scenario.Target, grace time.Duration) error
}

// Freezer freezes the target's processes (cgroup freezer) and thaws them.
type Freezer interface {
	Pause(ctx context.Context, target scenario.Target) error
	Unpause(ctx context.Context, target scenario.Target) error
}

// Network cuts the target from its network and restores it.
type Network interface {
	Disconnect(ctx context.Context, target scenario.Target) error
	Reconnect(ctx context.Context, target scenario.Target) error
}

// Operator plays an operator's commands on the target.
type Operator interface {
	// MemoryAlarm raises (on) or clears (off) a memory alarm; clearing
	// restores the watermark the target had before.
	MemoryAlarm(ctx context.Context, target scenario.Target, on bool) error
	// CloseConnections makes the target close every client connection.
	CloseConnections(ctx context.Context, target scenario.Target) error
	// DiskAlarm raises (on) or clears (off) a disk alarm: the disk free
	// limit set above the target's free disk space; clearing restores the
	// limit it had before.
	DiskAlarm(ctx context.Context, target scenario.Target, on bool) error
	// DeleteQueue deletes queue on the target, with every message in it,
	// and returns how many messages the broker reported deleting.
	DeleteQueue(ctx context.Context, target scenario.Target, queue string) (removed int, err error)
	// PurgeQueue removes every ready message of queue on the target and
	// returns how many the broker reported purging.
	PurgeQueue(ctx context.Context, target scenario.Target, queue string) (removed int, err error)
}

// Readiness says when the target accepts clients again.
type Readiness interface {
	// WaitReady returns once an AMQP connection with login succeeds, or an
	// error once timeout has passed or ctx is done.
	WaitReady(ctx context.Context, target scenario.Target, timeout time.Duration) error
}

// Commands runs the programs of a command step (the user's own: `docker
// kill …`, `kubectl delete pod …`, `ssh node2 sudo systemctl kill …`) and
// awaits AMQP logins after its recovery. It acts on whatever the commands
// name: the scenario is trusted to name its own broker (run refuses a
// command step without --allow-commands).
type Commands interface {
	// Run runs argv (argv[0] looked up in PATH; no shell) in a process
	// group of its own, with rmqtorture's environment and the run's facts
	// (RMQT_RUN_ID, RMQT_CONTAINER…), and returns what it did. At timeout,
	// or when ctx is done, the whole group is killed (SIGKILL). A command
	// that exits non-zero, is killed or cannot start has Error set; Step is
	// left to the caller.
	Run(ctx context.Context, argv []string, timeout time.Duration) scenario.CommandRun
	// WaitReady returns once an AMQP login succeeds on every one of uris
	// (none: the run's own broker), or an error once timeout has passed or
	// ctx is done. Its errors name no password.
	WaitReady(ctx context.Context, uris []string, timeout time.Duration) error
}

// Cluster is a cluster of RabbitMQ nodes, numbered 1..Size() (node 2 is
// rabbit@rmq2). Its other ports (Lifecycle, Freezer, …) act on a resolved
// target (Target.Nodes set), on TargetNode, or on TargetAll; the runner
// resolves leader, follower, random, minority and majority with Resolve
// when a fault fires, and the recovery acts on the nodes resolved then.
// A single broker has no Cluster port (nil).
type Cluster interface {
	// Size is the number of nodes.
	Size() int
	// Resolve returns t with Nodes set to the node numbers it names now
	// (ascending): leader and follower from the queue's members as
	// `rabbitmq-queues quorum_status` reports them on a node that is up and
	// not cut off; random as pick(Size()) + 1 (pick draws from the run's
	// seed, in [0, n)); minority and majority as their kinds say (the
	// queue's followers first for minority, its leader first for majority).
	// It fails when the queue has no leader to name.
	Resolve(ctx context.Context, t scenario.Target, pick func(n int) int) (scenario.Target, error)
	// Members returns the Raft state of each member of the quorum queue by
	// node number ("leader", "follower", "candidate", "timeout" for an
	// unreachable member, "noproc"…), read through a node this run has not
	// taken down or cut off. A node that holds no member is absent.
	Members(ctx context.Context, queue string) (map[int]string, error)
	// Partition cuts the inter-node links of shape (scenario.PartitionShape)
	// around the resolved target (isolate: the target's nodes from the
	// rest; halves: the target's side is the smaller one), keeping every
	// node's client port, and describes the sides ("rmq1 | rmq2, rmq3").
	Partition(ctx context.Context, target scenario.Target, shape scenario.PartitionShape) (sides string, err error)
	// Heal restores every link Partition cut and makes the cluster whole
	// again; the detail says what more than reconnecting it took (e.g. a
	// node restarted: RabbitMQ's default partition handling does not merge
	// the sides by itself), "" when nothing did.
	Heal(ctx context.Context) (detail string, err error)
	// Partitions returns what the nodes that answer report as partitioned
	// (`rabbitmqctl cluster_status` "partitions": a node's Erlang name →
	// the nodes it saw partitioned from it), merged; empty when none
	// does. It fails only when no node answered.
	Partitions(ctx context.Context) (map[string][]string, error)
	// WaitWhole polls (about every second, within timeout) until every
	// node answers `rabbitmqctl cluster_status`, lists every node as
	// running and reports no partition. Its error says what was seen last:
	// a *PartitionError when a node reported a partition.
	WaitWhole(ctx context.Context, timeout time.Duration) error
}

// Tools runs the broker's own command line tools on a target's nodes:
// the fault actions made of them (scenario.ToolPlay, e.g. stop-app).
type Tools interface {
	// ApplyTool runs p.Inject on each of the target's nodes. On a
	// container rmqtorture did not create it first records p.Recover, so
	// that the next run or `rmqtorture cleanup` runs it if this process
	// dies before RecoverTool. Errors name the command, the node and its
	// output.
	ApplyTool(ctx context.Context, target scenario.Target, p scenario.ToolPlay) error
	// RecoverTool runs p.Recover on each of the target's nodes and drops
	// the record ApplyTool made.
	RecoverTool(ctx context.Context, target scenario.Target, p scenario.ToolPlay) error
}

// Ports are the fault ports a Runner drives. A nil port fails the steps that
// need it with an error, never a panic.
type Ports struct {
	Lifecycle Lifecycle
	Freezer   Freezer
	Network   Network
	Operator  Operator
	Readiness Readiness
	Cluster   Cluster // nil: a single broker
	// Commands plays command steps (nil: a run refuses them).
	Commands Commands
	// Tools plays the actions made of the broker's own command line
	// tools (nil: such a step fails).
	Tools Tools
	// Power cuts the power of nodes whose data is on a lazy filesystem
	// (nil: a power-loss step fails; validation refuses it first).
	Power PowerCutter
}

// PowerCutter cuts the power of the target's nodes (power-loss).
type PowerCutter interface {
	// PowerLoss writes the two control files into each target node's data
	// directory (one fsynced with its directory, one not), kills the
	// node's container (SIGKILL), drops what its lazy filesystem holds
	// unsynced, and checks the control files: one record per node, in
	// node order. The containers are left stopped (Lifecycle.Start brings
	// them back). An error names the node; records of the nodes cut
	// before it are returned with it.
	PowerLoss(ctx context.Context, target scenario.Target) ([]scenario.PowerCut, error)
	// WriteBack makes everything every node wrote so far durable, as the
	// kernel's writeback does on a node that has been running for a while
	// (Linux writes back dirty pages older than vm.dirty_expire_centisecs,
	// 30 s by default: docs.kernel.org/admin-guide/sysctl/vm.html): the
	// runner calls it before each burst, so that a power cut drops what
	// the burst wrote unsynced, not the node's boot.
	WriteBack(ctx context.Context) error
}

// Broker is something that implements every fault port (a broker
// container).
type Broker interface {
	Lifecycle
	Freezer
	Network
	Operator
	Readiness
}

// PortsOf uses b for every port, and for Cluster and Tools when b is
// one.
func PortsOf(b Broker) Ports {
	p := Ports{Lifecycle: b, Freezer: b, Network: b, Operator: b, Readiness: b}
	if c, ok := b.(Cluster); ok {
		p.Cluster = c
	}
	if t, ok := b.(Tools); ok {
		p.Tools = t
	}
	if pc, ok := b.(PowerCutter); ok {
		p.Power = pc
	}
	return p
}

// LiveConsumers is a running set of live consumers.
type LiveConsumers interface {
	// Crash makes the first consumer crash before its ack: it stops at once
	// and closes its connection with what it processed unacknowledged, then
	// comes back after down. It returns how many processed deliveries it
	// left unacknowledged.
	Crash(down time.Duration) (unacked int, err error)
	// LastDelivery is when any consumer last received a delivery (the zero
	// time before the first).
	LastDelivery() time.Time
	// Stop ends every consumer gracefully (acknowledging what it processed)
	// and returns what they measured.
	Stop() scenario.ConsumerStats
}

// Prober is Traffic that can publish one probe message through a chosen
// node of a cluster: after a partition heals, a confirm through every
// node is what "whole again" means.
type Prober interface {
	// ConfirmThrough publishes one persistent message, message id id
	// (metrics.ProbeID), through a connection to node (1-based) to queue,
	// mandatory, and waits within ctx for its publisher confirm; a
	// basic.return or basic.nack is an error. The ledger counts no probe.
	ConfirmThrough(ctx context.Context, node int, queue, id string) error
}

// Traffic publishes, drains and manages the queue under test over AMQP.
type Traffic interface {
	Declare(ctx context.Context, q QueueSpec) error
	Publish(ctx context.Context, p PublishPlan) (PublishStats, error)
	// Drain consumes with manual acks until idle, recording each delivery's
	// message id in the plan's ledger.
	Drain(ctx context.Context, d DrainPlan) error
	Delete(ctx context.Context, queue string) error
	// Consume starts live consumers; they run until Stop or ctx is done.
	Consume(ctx context.Context, c ConsumePlan) (LiveConsumers, error)
}
