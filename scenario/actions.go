package scenario

import (
	"fmt"
	"slices"

	"github.com/rmqtorture/rmqtorture/metrics"
)

// Action is a fault action applied to a target (today: the broker
// container). What each action is (its parameters, its recovery, the state
// it leaves, its defaults and checks) is said once, in its own file
// (action_kill.go, …), as an ActionSpec registered in the table below;
// every other part of rmqtorture asks the table, never compares names.
type Action string

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
	// Name is the action, as scenario files spell it.
	Name Action
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
	// StartsContainer marks the actions that end by starting the broker's
	// container themselves (start, restart); a step recovered by one after
	// down does too (Fault.StartsContainer).
	StartsContainer bool
	// BrokerDown marks the actions that take the broker (or nodes) down,
	// cut them off or alarm them for Down and bring them back themselves:
	// the ones whose down the --down flag sets (SetDown). Not the
	// client-side ones, nor delete-queue (the broker stays up).
	BrokerDown bool
	// Once says why only one step of the action runs per scenario ("" when
	// any number may): it neither repeats nor appears twice.
	Once string
	// CrashesConsumer marks the actions that crash a live consumer before
	// its ack: they need consumers that ack, and their record counts the
	// deliveries left unacknowledged (FaultRecord.UnackedAtCrash).
	CrashesConsumer bool
	// AMQPOnly marks the actions on AMQP 0.9.1 connections: refused with
	// queue.type: stream.
	AMQPOnly bool
	// UserCommand marks the actions that run programs the scenario names:
	// a run needs --allow-commands, and they are the only steps a run
	// against a broker named by --uri plays.
	UserCommand bool
	// DowntimeFromConnections marks the actions whose effect on logins is
	// not known beforehand: their downtime is timed from a publisher's
	// lost connection to its next one.
	DowntimeFromConnections bool
	// StopsMajority marks the actions that stop a majority of the nodes:
	// their record gets what was confirmed meanwhile (QuorumLossOutcome).
	StopsMajority bool
	// DeletesQueue marks the actions that delete the queue under test: on
	// a quorum queue, the count the broker reports removed bounds nothing.
	DeletesQueue bool
	// While names the broker's state while the fault is in effect, for
	// close reasons and timeline details ("while the broker was being
	// killed"); see Action.While.
	While string
	// CutsPower marks the actions that cut a node's power (power-loss):
	// they need the lazy filesystem, the runner writes everything back
	// before each burst so that a cut drops only the burst's unsynced
	// writes, and a queue that confirms before it fsyncs loses by design.
	CutsPower bool
	// Tool, when set, plays the action with the broker's own command line
	// tools on each target node (stop-app): the engine runs it, and its
	// recovery in place after Down, with no play of its own for the
	// action. nil: the engine's playbook plays it.
	Tool *ToolPlay

	// defaults fills the step's action-specific defaults (fp: its path,
	// "faults[0].") after the generic ones (down, grace).
	defaults func(d defaulter, fp string, f *Fault)
	// validate checks a step of the action on its own (fp: its path),
	// after its parameters, before its trigger.
	validate func(p *parser, fp string, f Fault)
	// validateTarget checks the step on a cluster of n nodes against t,
	// its target, chosen by the field at tp.
	validateTarget func(p *parser, fp, tp string, n int, f Fault, t Target)
	// validateQueue checks the step against the queue and its consumers
	// (fp: the path of its action).
	validateQueue func(p *parser, fp string, s *Scenario)
}

// ToolPlay is a fault action made of the broker's own command line tools
// (rabbitmqctl, rabbitmq-upgrade, rabbitmq-queues, rabbitmq-diagnostics),
// run inside each target node's container through the Docker exec API,
// as an operator would run them on the node. Such an action is its file
// alone: the engine plays every ToolPlay the same way (Inject; Down;
// Recover; wait for an AMQP login), and a run interrupted before Recover
// ran leaves Recover recorded to be run by the next run or `rmqtorture
// cleanup` on a container rmqtorture did not create.
type ToolPlay struct {
	// Inject is the command (argv, no shell) run on each target node to
	// apply the fault; Recover, when set, the command that undoes it after
	// Down.
	Inject, Recover []string
	// Applied and Recovered are the details of the timeline's fault and
	// fault-cleared events.
	Applied, Recovered string
}

// Tool is the command line play of a (nil: the engine's playbook plays
// it).
func (a Action) Tool() *ToolPlay { return actionTable[a].Tool }

// The JSON Schemas' action enums are written from this table:
//go:generate go run ../internal/schemagen ..

// actionSpecs is every fault action, one line each, in the order messages
// list actions (validation's "one of …", the docs' sections). Each
// action's constant, spec, defaults, checks and effect text live in its
// own file (action_kill.go, …); this list registers it.
var actionSpecs = []ActionSpec{
	killSpec,
	powerLossSpec,
	stopSpec,
	restartSpec,
	pauseSpec,
	disconnectSpec,
	startSpec,
	unpauseSpec,
	reconnectSpec,
	memoryAlarmSpec,
	closeConnectionsSpec,
	publishToMissingExchangeSpec,
	crashConsumerSpec,
	deleteQueueSpec,
	purgeQueueSpec,
	diskAlarmSpec,
	partitionSpec,
	rollingRestartSpec,
	quorumLossSpec,
	commandSpec,
	assertWholeSpec,
	stopAppSpec,
	maintenanceSpec,
}

var actionTable = func() map[Action]ActionSpec {
	t := make(map[Action]ActionSpec, len(actionSpecs))
	for _, s := range actionSpecs {
		t[s.Name] = s
	}
	return t
}()

// Actions lists every fault action, in table order.
var Actions = func() []Action {
	out := make([]Action, len(actionSpecs))
	for i, s := range actionSpecs {
		out[i] = s.Name
	}
	return out
}()

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
	s := actionTable[f.Action]
	switch {
	case s.StartsContainer:
		return true
	case f.ManualRecovery:
		return false
	}
	return actionTable[s.RecoveredBy].StartsContainer
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

// taking lists the actions that take parameter k, in table order, for
// messages.
func taking(k Param) []string {
	var out []string
	for _, a := range Actions {
		if a.Takes(k) {
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
