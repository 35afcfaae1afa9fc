package scenario

import (
	"fmt"
	"slices"
	"time"

	"github.com/rmqtorture/rmqtorture/metrics"
)

// Action is a fault action applied to a target (today: the broker
// container). What each action is (its parameters, its recovery, the state
// it leaves) is said once, in the table below; every other part of
// rmqtorture asks the table.
type Action string

const (
	// Kill sends a signal (default SIGKILL) to the broker container, then
	// starts it again after Down.
	Kill Action = "kill"
	// MemoryAlarm sets the broker's memory high watermark far below its use
	// (rabbitmqctl set_vm_memory_high_watermark through the Docker exec API),
	// which blocks every publishing connection (connection.blocked), and
	// restores the previous watermark after Down.
	MemoryAlarm Action = "memory-alarm"
	// CloseConnections makes the target node close every client connection
	// it holds (rabbitmqctl close_all_connections --global), as an operator
	// would; on a cluster, the other nodes' connections stay open.
	CloseConnections Action = "close-connections"
	// PublishToMissingExchange makes the publisher send its next message to an
	// exchange that does not exist: the broker closes the channel with 404
	// NOT_FOUND (rabbitmq/amqp091-go#14). A client-side fault.
	PublishToMissingExchange Action = "publish-to-missing-exchange"
	// Stop stops the broker gracefully (SIGTERM, SIGKILL after Grace; the
	// node closes connections with 320 CONNECTION_FORCED), then starts it
	// again after Down.
	Stop Action = "stop"
	// Restart stops the broker gracefully and starts it at once (docker
	// restart); no Down.
	Restart Action = "restart"
	// Pause freezes the broker (cgroup freezer): connections hang rather than
	// fail; unpaused after Down.
	Pause Action = "pause"
	// Disconnect removes the broker from its Docker network: every client
	// link fails at once while the node keeps running; reconnected after Down.
	Disconnect Action = "disconnect"
	// Start, Unpause and Reconnect are the explicit recoveries of a step with
	// manual_recovery (kill or stop, pause, disconnect).
	Start     Action = "start"
	Unpause   Action = "unpause"
	Reconnect Action = "reconnect"
	// CrashConsumer makes the first live consumer crash before its ack: it
	// stops processing and closes its connection with the deliveries it
	// processed still unacknowledged, so the broker requeues them and hands
	// them out again flagged redelivered. It comes back after Down. A
	// client-side fault; needs consumers.
	CrashConsumer Action = "crash-consumer"
	// DeleteQueue deletes the queue under test while the broker runs
	// (queue.delete, as an operator or a clean-up job would) and declares it
	// again after Down, as an application that re-declares its topology
	// would. Until then every publish is unroutable (basic.return with
	// mandatory). The confirmed messages it removed are the scenario's own
	// doing, never durability loss (rabbitmq-server#1877: confirms for
	// messages to a deleted queue).
	DeleteQueue Action = "delete-queue"
	// PurgeQueue removes every message of the queue under test (queue.purge)
	// while the burst goes on; like DeleteQueue, what it removed is counted
	// apart from durability loss.
	PurgeQueue Action = "purge-queue"
	// DiskAlarm raises the broker's disk free limit above the free disk
	// space (rabbit_disk_monitor:set_disk_free_limit through rabbitmqctl
	// eval, read first), which blocks every publishing connection
	// (connection.blocked; https://www.rabbitmq.com/docs/disk-alarms,
	// rabbitmq-server#880), and restores the limit read after Down.
	DiskAlarm Action = "disk-alarm"
	// Partition cuts inter-node links of a cluster in the step's shape
	// (isolate, halves, majorities-ring, bridge) while every node keeps
	// its client port, and heals them after Down. Cluster only.
	Partition Action = "partition"
	// RollingRestart stops and starts each node in turn (graceful, Grace),
	// waiting after each until it accepts AMQP and the queue under test has
	// all its members again (https://www.rabbitmq.com/docs/upgrade#rolling-upgrade).
	// Cluster only; no Down.
	RollingRestart Action = "rolling-restart"
	// QuorumLoss stops a majority of the nodes (the queue's leader first)
	// for Down, then starts them again: a quorum queue can confirm nothing
	// meanwhile. Cluster only.
	QuorumLoss Action = "quorum-loss"
	// Command runs the user's own command to inject the fault (Inject: a
	// program and its arguments, no shell) and, after Down, another to
	// recover (Recover), then waits until the broker accepts AMQP logins
	// (Ready, default the run's broker). It runs arbitrary programs: a run
	// refuses it without --allow-commands. Its effect is timed from the
	// command's start (a `docker kill` lands while it runs); the series
	// marks no broker state for it unless the step says which (State), as
	// rmqtorture cannot know what the command did: the timeline shows the
	// step, its recovery and the first AMQP login after it.
	Command Action = "command"
	// AssertWhole asserts that the cluster is whole at its point of the
	// timeline: within Timeout, every node answers `rabbitmqctl
	// cluster_status`, lists every node as running and reports no
	// partition (https://www.rabbitmq.com/docs/partitions#detecting). A
	// cluster still split then fails the run with what each node
	// reported; the burst and the drain go on. It changes nothing on the
	// broker. Cluster only.
	AssertWhole Action = "assert-whole"
)

// DefaultAssertWholeTimeout is how long an assert-whole step that sets no
// timeout waits for the cluster to be whole.
const DefaultAssertWholeTimeout = 30 * time.Second

// DefaultCommandTimeout bounds each command of a command step that sets no
// timeout.
const DefaultCommandTimeout = 60 * time.Second

// Param is a parameter a fault step may take beyond its trigger.
type Param string

const (
	ParamSignal Param = "signal" // kill: the signal to send
	ParamGrace  Param = "grace"  // stop, restart: graceful shutdown time before SIGKILL
	ParamDown   Param = "down"   // how long the fault lasts before its recovery runs
	ParamShape  Param = "shape"  // partition: how the nodes are split
	// command: the commands run to inject and to recover, each one's
	// timeout, and the AMQP URIs that must accept a login after it.
	ParamInject  Param = "inject"
	ParamRecover Param = "recover"
	ParamTimeout Param = "timeout"
	ParamReady   Param = "ready"
	// ParamState (command) is the broker state the series marks from the
	// step until AMQP logins succeed again.
	ParamState Param = "state"
)

// ActionSpec is what one fault action is.
type ActionSpec struct {
	// Params are the parameters the action takes.
	Params []Param
	// RecoveredBy is the explicit recovery step that undoes the action
	// (start, unpause, reconnect); "" when none does: the action leaves
	// nothing down, or it is recovered in place (memory-alarm).
	RecoveredBy Action
	// Recovers is true when the action takes the broker (or part of it)
	// down and its recovery runs after Down: by RecoveredBy, or in place.
	Recovers bool
	// IsRecovery marks the explicit recovery steps (start, unpause,
	// reconnect) that bring back a broker a manual_recovery step left down.
	IsRecovery bool
	// Leaves is the state the action leaves the broker in until recovered,
	// in the words of validation messages: "stopped", "paused",
	// "disconnected", "alarmed" or "up".
	Leaves string
	// State is the broker state the series marks after the action until the
	// broker accepts AMQP logins again ("" for none: alarms are seen as
	// connection.blocked instead); FromTrigger marks the state from the
	// trigger rather than from the fault event: the call itself shuts the
	// broker down, so its effect begins during the call (kill, stop,
	// restart) and it is timed from the call's start, not its return
	// (streadway/amqp#421).
	State       metrics.BrokerState
	FromTrigger bool
	// ClientSide actions are played by rmqtorture's own clients, not on the
	// broker: their failure says nothing about the broker.
	ClientSide bool
	// Repeatable actions may repeat with every/count.
	Repeatable bool
	// RemovesMessages marks actions that remove the queue's messages on
	// purpose (delete-queue, purge-queue): a confirmed id they removed is
	// the scenario's doing, counted apart, not durability loss.
	RemovesMessages bool
	// ClusterOnly actions need broker.nodes > 1.
	ClusterOnly bool
	// DefaultTarget is what the step acts on in a cluster when it names no
	// target ("" : every node, TargetAll).
	DefaultTarget TargetKind
	// Asserts marks the steps that check the broker rather than act on
	// it (assert-whole): their failure is a finding that fails the run,
	// and the burst and the drain go on.
	Asserts bool
	// OnPublishing marks the faults that test the publishing path (the
	// broker, its node or its connections go away or block them): one
	// that takes effect when the burst is over and settled tested nothing
	// of it (FaultAfterBurst).
	OnPublishing bool
}

var (
	downOnly    = []Param{ParamDown}
	graceDown   = []Param{ParamGrace, ParamDown}
	signalDown  = []Param{ParamSignal, ParamDown}
	actionTable = map[Action]ActionSpec{
		Kill:                     {Params: signalDown, RecoveredBy: Start, Recovers: true, Leaves: "stopped", State: metrics.StateDown, FromTrigger: true, Repeatable: true, DefaultTarget: TargetLeader, OnPublishing: true},
		Stop:                     {Params: graceDown, RecoveredBy: Start, Recovers: true, Leaves: "stopped", State: metrics.StateDown, FromTrigger: true, Repeatable: true, DefaultTarget: TargetLeader, OnPublishing: true},
		Restart:                  {Params: []Param{ParamGrace}, Leaves: "up", State: metrics.StateDown, FromTrigger: true, Repeatable: true, DefaultTarget: TargetLeader, OnPublishing: true},
		Pause:                    {Params: downOnly, RecoveredBy: Unpause, Recovers: true, Leaves: "paused", State: metrics.StatePaused, Repeatable: true, DefaultTarget: TargetLeader, OnPublishing: true},
		Disconnect:               {Params: downOnly, RecoveredBy: Reconnect, Recovers: true, Leaves: "disconnected", State: metrics.StateDisconnected, Repeatable: true, DefaultTarget: TargetLeader, OnPublishing: true},
		Start:                    {IsRecovery: true, Leaves: "up"},
		Unpause:                  {IsRecovery: true, Leaves: "up"},
		Reconnect:                {IsRecovery: true, Leaves: "up"},
		MemoryAlarm:              {Params: downOnly, Recovers: true, Leaves: "alarmed", Repeatable: true, OnPublishing: true},
		CloseConnections:         {Leaves: "up", Repeatable: true, OnPublishing: true},
		PublishToMissingExchange: {Leaves: "up", ClientSide: true},
		CrashConsumer:            {Params: downOnly, Leaves: "up", ClientSide: true, Repeatable: true},
		DeleteQueue:              {Params: downOnly, Recovers: true, Leaves: "queue deleted", Repeatable: true, RemovesMessages: true},
		PurgeQueue:               {Leaves: "up", Repeatable: true, RemovesMessages: true},
		DiskAlarm:                {Params: downOnly, Recovers: true, Leaves: "alarmed", Repeatable: true, OnPublishing: true},
		Partition:                {Params: []Param{ParamShape, ParamDown}, Recovers: true, Leaves: "partitioned", Repeatable: true, ClusterOnly: true, DefaultTarget: TargetLeader, OnPublishing: true},
		RollingRestart:           {Params: []Param{ParamGrace}, Leaves: "up", FromTrigger: true, Repeatable: true, ClusterOnly: true, DefaultTarget: TargetAll, OnPublishing: true},
		QuorumLoss:               {Params: graceDown, RecoveredBy: Start, Recovers: true, Leaves: "stopped", State: metrics.StateDown, FromTrigger: true, Repeatable: true, ClusterOnly: true, DefaultTarget: TargetMajority, OnPublishing: true},
		Command:                  {Params: []Param{ParamInject, ParamRecover, ParamTimeout, ParamReady, ParamState, ParamDown}, Recovers: true, Leaves: "as its command left it", FromTrigger: true, Repeatable: true},
		AssertWhole:              {Params: []Param{ParamTimeout}, Leaves: "up", Repeatable: true, ClusterOnly: true, Asserts: true},
	}
)

// Actions lists every fault action.
var Actions = []Action{Kill, Stop, Restart, Pause, Disconnect, Start, Unpause, Reconnect, MemoryAlarm, CloseConnections, PublishToMissingExchange, CrashConsumer, DeleteQueue, PurgeQueue, DiskAlarm, Partition, RollingRestart, QuorumLoss, Command, AssertWhole}

// Spec returns what the action is, and false for an unknown action.
func (a Action) Spec() (ActionSpec, bool) {
	s, ok := actionTable[a]
	return s, ok
}

// Known reports whether a is a fault action.
func (a Action) Known() bool { _, ok := actionTable[a]; return ok }

// Recovers reports whether the action takes the broker (or part of it) down
// and has a recovery after Down: kill and stop (start), pause (unpause),
// disconnect (reconnect), memory-alarm (restore the watermark).
func (a Action) Recovers() bool { return actionTable[a].Recovers }

// Asserts reports whether the step checks the broker rather than acts on
// it (assert-whole): its failure fails the run, the burst goes on.
func (a Action) Asserts() bool { return actionTable[a].Asserts }

// ClientSide reports whether the action is played by rmqtorture's own
// clients (crash-consumer, publish-to-missing-exchange) rather than on the
// broker: its failure says nothing about the broker.
func (a Action) ClientSide() bool { return actionTable[a].ClientSide }

// Recovery is the action that undoes a ("" when none does) and the broker
// state a leaves ("stopped", "paused", "disconnected", "alarmed", "up").
func (a Action) Recovery() (Action, string) {
	s, ok := actionTable[a]
	if !ok {
		return "", "up"
	}
	return s.RecoveredBy, s.Leaves
}

// IsRecovery reports whether a is an explicit recovery step (start,
// unpause, reconnect).
func (a Action) IsRecovery() bool { return actionTable[a].IsRecovery }

// Takes reports whether the action takes parameter p.
func (a Action) Takes(p Param) bool {
	return slices.Contains(actionTable[a].Params, p)
}

// LeavesState is the broker state the series marks after a until the broker
// accepts AMQP logins again; fromTrigger marks it from the trigger rather
// than the fault event; ok is false for actions that leave the broker up.
func (a Action) LeavesState() (state metrics.BrokerState, fromTrigger, ok bool) {
	s := actionTable[a]
	return s.State, s.FromTrigger, s.State != ""
}

// Repeatable reports whether a step with this action may repeat
// (every/count).
func (a Action) Repeatable() bool { return actionTable[a].Repeatable }

// RecoveredState is the state an explicit recovery step brings the broker
// back from ("stopped" for start); "" for other actions.
func (a Action) RecoveredState() string {
	for _, b := range Actions {
		if s := actionTable[b]; s.RecoveredBy == a && a != "" {
			return s.Leaves
		}
	}
	return ""
}

// RemovesMessages reports whether the action removes the queue's messages
// on purpose (delete-queue, purge-queue).
func (a Action) RemovesMessages() bool { return actionTable[a].RemovesMessages }

// ActsOnContainer reports whether the action acts on the broker's container
// itself (kill, stop, restart, pause, disconnect): the only ones that can
// land on a node still booting, before it accepts AMQP (trigger
// after_start). The others need a running node (rabbitmqctl, AMQP) or are
// played by rmqtorture's clients.
func (a Action) ActsOnContainer() bool { _, _, ok := a.LeavesState(); return ok }

// StartsContainer reports whether a step with this action ends by starting
// the broker's container: start, restart, and kill or stop recovered after
// down (not by a later step).
func (f Fault) StartsContainer() bool {
	switch {
	case f.Action == Start || f.Action == Restart:
		return true
	case f.ManualRecovery:
		return false
	}
	return actionTable[f.Action].RecoveredBy == Start
}

// RecoverableLater lists the actions a later step can recover
// (manual_recovery), in table order, for messages.
func RecoverableLater() []string {
	var out []string
	for _, a := range Actions {
		if actionTable[a].RecoveredBy != "" {
			out = append(out, string(a))
		}
	}
	return out
}

// TakesDown lists the actions that take down, in table order, for messages.
func TakesDown() []string {
	var out []string
	for _, a := range Actions {
		if a.Takes(ParamDown) {
			out = append(out, string(a))
		}
	}
	return out
}

// ClusterOnly reports whether the action needs a cluster (broker.nodes > 1).
func (a Action) ClusterOnly() bool { return actionTable[a].ClusterOnly }

// TargetOf is what f acts on when the scenario's broker has nodes nodes
// and queue is the queue under test: on a single broker, the broker; on a
// cluster, the step's target (node when only node is set), else the
// action's default (leader for kill, stop, pause, disconnect and
// partition; all for the operator's commands and rolling-restart;
// majority for quorum-loss). Leader, follower, minority and majority are
// of queue.
func (f Fault) TargetOf(nodes int, queue string) Target {
	if nodes <= 1 {
		return BrokerTarget()
	}
	kind := f.Target
	if kind == "" && f.Node > 0 {
		kind = TargetNode
	}
	if kind == "" {
		kind = actionTable[f.Action].DefaultTarget
	}
	if kind == "" {
		kind = TargetAll
	}
	t := Target{Kind: kind}
	switch kind {
	case TargetNode:
		t.Node = f.Node
	case TargetLeader, TargetFollower, TargetMinority, TargetMajority:
		t.Queue = queue
	}
	return t
}

// FaultAfterBurst says why step f, recorded as rec, tested nothing of a
// confirm mode's burst of messages orders: done says that when it took
// effect (FaultRecord.InjectMS: a kill's call start) every order had been
// published and none awaited its confirm or was in doubt, so nothing was
// under way for it to lose, duplicate or leave in doubt (a burst that
// outran its trigger: 6,000 orders at ~24,000 msg/s ended before a kill
// "at 40 %" took effect). "" when it hit the burst, when the scenario asked for a
// step after the burst (after_burst, after_start), for a later firing of
// a repeating step, for fire-and-forget (which awaits nothing), and for
// actions that are not on the publishing path (OnPublishing).
func FaultAfterBurst(mode Mode, f *Fault, rec FaultRecord, messages int, done bool) string {
	if !done || !mode.ConfirmMode() || f.AfterBurst != nil || f.AfterStart != nil || rec.Firing > 1 || !actionTable[f.Action].OnPublishing {
		return ""
	}
	return fmt.Sprintf("the %s landed after the burst had ended: all %d orders were published and settled by the time it took effect (trigger: %s), so %s was not tested under it; a scenario that wants the step after the burst says after_burst", f.Action, messages, rec.Trigger, mode)
}
