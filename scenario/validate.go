package scenario

import (
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// This file holds the rules across fields that scenarios.schema.json cannot
// say well, one function per section of a scenario. Types, enums, ranges and
// unknown keys are the schema's.

var printer = message.NewPrinter(language.English)

// Signals accepted by kill: the ones a RabbitMQ operator has reason to send
// (the schema's signal enum; a test keeps the two equal).
var Signals = []string{"SIGKILL", "SIGTERM", "SIGINT", "SIGQUIT", "SIGHUP", "SIGUSR1", "SIGUSR2", "SIGABRT"}

var namePattern = regexp.MustCompile(`^[a-z0-9][a-z0-9-]*$`)

// Validate checks one scenario, defaults applied, with the rules the loader
// runs on a file (the schema and every rule across fields): callers that
// change a loaded scenario (command-line overrides) call it again. Paths are
// relative to the scenario (load.window) and carry no line: the scenario no
// longer matches the file. It returns nil when the scenario is valid.
func Validate(file string, s *Scenario) Errors {
	cs, err := schemas()
	if err != nil {
		return Errors{{File: file, Msg: err.Error()}}
	}
	data, err := yaml.Marshal(s)
	if err != nil {
		return Errors{{File: file, Msg: err.Error()}}
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil || len(doc.Content) != 1 {
		return Errors{{File: file, Msg: fmt.Sprintf("scenario %q does not encode: %v", s.Name, err)}}
	}
	p := newParser(file)
	p.checkSchema(cs.scenario, cs, p.toJSON(doc.Content[0], "", ""))
	p.validateScenario("", s)
	for i := range p.errs {
		p.errs[i].Line, p.errs[i].Column = 0, 0 // they point into the encoded copy
	}
	if len(p.errs) == 0 {
		return nil
	}
	return p.errs
}

func (p *parser) validate(f *File) {
	if !p.has("version") {
		p.fail("version", "missing; write version: 1")
	} else if f.Version != 1 {
		p.fail("version", "unsupported version %d (this rmqtorture reads version 1)", f.Version)
	}
	// An empty list, not a list whose items failed to decode (those have
	// their own errors, which would come second behind this one).
	if n := p.nodes["scenarios"]; len(f.Scenarios) == 0 && (n == nil || n.Kind != yaml.SequenceNode || len(n.Content) == 0) {
		p.fail("scenarios", "no scenarios")
	}
	names := map[string]int{}
	for i, s := range f.Scenarios {
		sp := fmt.Sprintf("scenarios[%d]", i)
		if !namePattern.MatchString(s.Name) {
			p.fail(sp+".name", "%q is not a scenario name (lower-case letters, digits and dashes)", s.Name)
		} else if j, dup := names[s.Name]; dup {
			p.fail(sp+".name", "%q already names scenarios[%d]", s.Name, j)
		}
		names[s.Name] = i
		if s.IsGroup() || p.has(sp+".runs") {
			continue // validateGroup, once every name is known
		}
		p.validateScenario(sp, &s)
	}
	for i := range f.Scenarios {
		if sp := fmt.Sprintf("scenarios[%d]", i); f.Scenarios[i].IsGroup() || p.has(sp+".runs") {
			p.validateGroup(sp, f, i)
		}
	}
}

// validateScenario runs every section's rules on the scenario at path sp
// ("" under Validate).
func (p *parser) validateScenario(sp string, s *Scenario) {
	// First: a bound broken says more than what the other rules would
	// compute from the value (a timeline lasting 1000000h).
	p.validateDurationBounds(sp)
	p.validateBroker(sp, s)
	p.validateQueue(sp, s)
	p.validateLoad(sp, s)
	p.validateConsumers(sp, s)
	for j := range s.Faults {
		p.validateFault(fmt.Sprintf("%s.faults[%d]", sp, j), s, s.Faults[j])
	}
	p.validateTimeline(sp, s)
	p.validateRelativeTriggers(sp, s)
	p.validateQueueActions(sp, s)
	p.validateMatrix(sp, s)
	p.validateDrain(sp, s)
	p.validateExpect(sp, s)
	p.validateStream(sp, s)
	p.validateCluster(sp, s)
	p.validateSpace(sp, s)
}

// atLeastMS reports a duration below 1ms, which no timer can honour.
func (p *parser) atLeastMS(path string, d Duration) {
	if d < Duration(time.Millisecond) {
		p.fail(path, "must be at least 1ms, got %s", d.D())
	}
}

func (p *parser) validateBroker(sp string, s *Scenario) {
	if strings.TrimSpace(s.Broker.Image) == "" {
		p.fail(sp+".broker.image", "must name an image")
	} else if _, err := ImageRef(s.Broker.Image); err != nil {
		p.fail(sp+".broker.image", "%v", err)
	}
	p.validateImages(sp, s)
	p.atLeastMS(sp+".broker.ready_timeout", s.Broker.ReadyTimeout)
	p.validateBrokerConfig(sp, s)
	if fs := s.Broker.Filesystem; fs != "" && fs != LazyFilesystem {
		p.fail(sp+".broker.filesystem", "unknown filesystem %q: leave it out for the container's own, or %q for one a power-loss fault can make forget what was not synced", fs, LazyFilesystem)
	}
}

func (p *parser) validateQueue(sp string, s *Scenario) {
	q := s.Queue
	if q.SettleBeforeBurst < 0 {
		p.fail(sp+".queue.settle_before_burst", "must not be negative")
	}
	if q.Durable != nil && !*q.Durable && q.Type == Quorum {
		p.fail(sp+".queue.durable", "quorum queues are always durable; use type: classic for a non-durable queue")
	}
	if q.DeadLetterQueue {
		for _, k := range []string{"x-dead-letter-exchange", "x-dead-letter-routing-key"} {
			if _, ok := q.Arguments[k]; ok {
				p.fail(sp+".queue.arguments."+k, "queue.dead_letter_queue sets %s itself; remove one of the two", k)
			}
		}
	}
	p.validateDeadLetterArguments(sp, s)
}

func (p *parser) validateLoad(sp string, s *Scenario) {
	l := s.Load
	lp := sp + ".load"
	if !p.has(lp + ".messages") {
		p.fail(lp+".messages", "missing; write how many orders the burst publishes (1–%d), e.g. messages: 1000", MaxMessages)
	} else if l.Messages <= 0 || l.Messages > MaxMessages {
		p.fail(lp+".messages", "must be within 1–%d, got %d", MaxMessages, l.Messages)
	}
	if len(l.Modes) == 0 {
		p.fail(lp+".modes", "must list at least one mode (%s)", modeList())
	}
	for j, m := range l.Modes {
		if slices.Index(l.Modes, m) < j {
			p.fail(fmt.Sprintf("%s.modes[%d]", lp, j), "%q listed twice", m)
		}
	}
	p.atLeastMS(lp+".confirm_timeout", l.ConfirmTimeout)
	p.atLeastMS(lp+".reconnect_timeout", l.ReconnectTimeout)
	p.atLeastMS(lp+".stall_timeout", l.StallTimeout)
	if p.has(lp+".heartbeat") && l.Heartbeat.D() < time.Second {
		p.fail(lp+".heartbeat", "must be at least 1s (AMQP heartbeats count whole seconds), got %s", l.Heartbeat.D())
	}
	p.atLeastMS(lp+".burst_timeout", l.BurstTimeout)
	if p.has(lp + ".message_deadline") {
		p.atLeastMS(lp+".message_deadline", l.MessageDeadline)
	}
	if p.has(lp+".confirm_listener_buffer") && l.ConfirmListenerBuffer < l.Window {
		p.fail(lp+".confirm_listener_buffer", "%d is below the window %d: a full confirm listener stalls amqp091-go's reader (streadway/amqp#254) and, since v1.13, makes it drop confirms; leave it unset to size it for the window",
			l.ConfirmListenerBuffer, l.Window)
	}
	if l.Rate < 0 || math.IsNaN(l.Rate) || math.IsInf(l.Rate, 0) {
		p.fail(lp+".rate", "must be a finite number ≥ 0 (msg/s; 0: as fast as possible), got %g", l.Rate)
	}
	if l.ChannelsPerConnection > max(1, l.Publishers) {
		p.fail(lp+".channels_per_connection", "%d channels per connection but only %d publishers: raise load.publishers (each channel is one publisher)", l.ChannelsPerConnection, max(1, l.Publishers))
	} else if l.ChannelsPerConnection > 1 && slices.Contains(l.Modes, FireAndForget) {
		p.fail(lp+".channels_per_connection", "shared connections are for the confirm modes and transactional: fire-and-forget publishers close their connection when done, so each needs its own (drop fire-and-forget from load.modes)")

	}
	if l.OnConfirmTimeout == OnTimeoutRepublish && !slices.ContainsFunc(l.Modes, Mode.ConfirmMode) && len(l.Modes) > 0 {
		p.fail(lp+".on_confirm_timeout", "republish acts on confirms, and load.modes has no confirm mode (confirm-each, confirm-window)")
	}
	p.validateBurst(lp, l)
}

// queueTypes lists the queue types the scenario runs on: the matrix's, else
// its own.
func (s *Scenario) queueTypes() []QueueType {
	if len(s.Matrix.QueueTypes) > 0 {
		return s.Matrix.QueueTypes
	}
	return []QueueType{s.Queue.Type}
}

// validateConsumers checks the consumers block.
func (p *parser) validateConsumers(sp string, s *Scenario) {
	c := s.Consumers
	cp := sp + ".consumers"
	if c.Count <= 0 {
		if p.bad[strings.TrimPrefix(cp+".count", ".")] {
			return // the count itself is wrong: that one error says it
		}
		for _, k := range []string{"prefetch", "processing_delay", "ack_every", "on_delivery", "max_retries", "retry_count_from", "retry_delay", "hold", "max_deliveries"} {
			if p.has(cp + "." + k) {
				p.fail(cp+"."+k, "has no effect without live consumers: set consumers.count")
			}
		}
		return
	}
	if c.AckEvery < 1 || (c.Prefetch >= 1 && c.AckEvery > c.Prefetch) {
		p.fail(cp+".ack_every", "must be within 1–%d (the prefetch: a consumer never holds more unacknowledged deliveries), got %d", max(1, c.Prefetch), c.AckEvery)
	}
	if c.ProcessingDelay < 0 {
		p.fail(cp+".processing_delay", "must not be negative")
	}
	if c.OnDelivery == ConsumerRetry {
		p.atLeastMS(cp+".retry_delay", c.RetryDelay)
		if !s.Queue.DeadLetterQueue {
			p.fail(cp+".on_delivery", "retry parks messages in the dead-letter queue after max_retries: set queue.dead_letter_queue: true")
		}
	} else {
		for _, k := range []string{"max_retries", "retry_count_from", "retry_delay"} {
			if p.has(cp + "." + k) {
				p.fail(cp+"."+k, "only on_delivery: retry uses %s", k)
			}
		}
	}
	if c.OnDelivery == ConsumerNackRequeue && c.MaxDeliveries == 0 && slices.Contains(s.queueTypes(), Classic) {
		p.fail(cp+".on_delivery", "nack-requeue on a classic queue cycles until drain.timeout: classic queues have no delivery limit (use a quorum queue, or reject)")
	}
	p.validateHoldAndBound(cp, s)
	if c.OnDelivery != ConsumerAck {
		for j, f := range s.Faults {
			if actionTable[f.Action].CrashesConsumer {
				p.fail(fmt.Sprintf("%s.faults[%d].action", sp, j), "%s crashes before an ack: it needs consumers.on_delivery: ack", f.Action)
			}
		}
	}
}

// validateFault checks one fault step on its own: what its action takes,
// its repeat and its trigger.
func (p *parser) validateFault(fp string, s *Scenario, f Fault) {
	known := slices.Contains(Actions, f.Action)
	if f.Action == "" {
		p.fail(fp+".action", "missing; every step names its action (%s)", strings.Join(forBroker(actionNames(), s.Broker.Nodes), ", "))
	}
	if !f.Action.Takes(ParamSignal) && p.has(fp+".signal") {
		p.fail(fp+".signal", "only %s takes a signal, not %s", andList(taking(ParamSignal)), f.Action)
	}
	if known && !f.Action.Takes(ParamDown) && p.has(fp+".down") {
		p.fail(fp+".down", "%s has nothing to recover; down applies to %s", f.Action, strings.Join(forBroker(taking(ParamDown), s.Broker.Nodes), ", "))
	}
	if actionTable[f.Action].CrashesConsumer && s.Consumers.Count == 0 {
		p.fail(fp+".action", "%s needs live consumers: set consumers.count", f.Action)
	}
	p.validateRepeat(fp, f)
	if f.Jitter < 0 {
		p.fail(fp+".jitter", "must not be negative")
	}
	if f.ManualRecovery && p.has(fp+".down") {
		p.fail(fp+".down", "manual_recovery: a later step recovers, so down has no meaning")
	}
	if rec, _ := f.Action.Recovery(); f.ManualRecovery && rec == "" {
		p.fail(fp+".manual_recovery", "only %s can be recovered by a later step", strings.Join(forBroker(RecoverableLater(), s.Broker.Nodes), ", "))
	}
	if p.has(fp+".grace") && !f.Action.Takes(ParamGrace) {
		p.fail(fp+".grace", "only %s take a grace period, not %s", andList(forBroker(taking(ParamGrace), s.Broker.Nodes)), f.Action)
	} else if p.has(fp+".grace") && f.Grace < 0 {
		p.fail(fp+".grace", "must not be negative")
	}
	p.validateOwnParams(fp, f)
	p.validateTrigger(fp, s, f)
	if f.Down < 0 {
		p.fail(fp+".down", "must not be negative")
	}
}

// validateOwnParams refuses the command's and assert-whole's parameters
// on a step whose action does not take them (naming the actions that do), then runs the action's own checks.
func (p *parser) validateOwnParams(fp string, f Fault) {
	for _, k := range []Param{ParamInject, ParamRecover, ParamTimeout, ParamReady, ParamState} {
		if p.has(fp+"."+string(k)) && !f.Action.Takes(k) {
			by, verb := taking(k), "take"
			if len(by) == 1 {
				verb = "takes"
			}
			p.fail(fp+"."+string(k), "only %s %s %s, not %s", andList(by), verb, k, f.Action)
		}
	}
	if own := actionTable[f.Action].validate; own != nil {
		own(p, fp, f)
	}
}

// validateRepeat checks every and count, which go together.
func (p *parser) validateRepeat(fp string, f Fault) {
	hasCount := p.has(fp + ".count")
	if f.Every == nil && !hasCount {
		return
	}
	switch {
	case f.Every == nil:
		p.fail(fp+".count", "count repeats a step and needs every")
	case !hasCount:
		p.fail(fp+".every", "every needs count (how many times the step fires, at least 2)")
	case *f.Every < Duration(time.Millisecond):
		p.fail(fp+".every", "must be at least 1ms, got %s", f.Every.D())
	case f.Action.IsRecovery() || f.ManualRecovery:
		p.fail(fp+".every", "a recovery step or a step with manual_recovery cannot repeat")
	case actionTable[f.Action].Once != "":
		p.fail(fp+".every", "%s cannot repeat (%s)", f.Action, actionTable[f.Action].Once)
	}
}

// validateTrigger checks that the step has exactly one trigger, and one it
// can reach.
func (p *parser) validateTrigger(fp string, s *Scenario, f Fault) {
	triggers := 0
	if f.PublishedPercent != nil {
		triggers++
	}
	if f.Published != nil {
		triggers++
		if v := *f.Published; v < 0 || (s.Load.Messages > 0 && v > s.Load.Messages) {
			p.fail(fp+".published", "must be within 0–%d (load.messages), got %d", s.Load.Messages, v)
		}
	}
	if f.After != nil {
		triggers++
		if *f.After < 0 {
			p.fail(fp+".after", "must not be negative")
		}
	}
	if f.InFlight != nil {
		triggers++
		p.validateInFlight(fp, s, *f.InFlight)
	}
	for _, t := range []struct {
		name string
		d    *Duration
	}{{"after_burst", f.AfterBurst}, {"after_start", f.AfterStart}} {
		if t.d != nil {
			triggers++
			if *t.d < 0 {
				p.fail(fp+"."+t.name, "must not be negative")
			}
		}
	}
	if triggers != 1 {
		p.fail(fp, "needs exactly one trigger (published_percent, published, in_flight, after, after_burst or after_start), got %d", triggers)
	}
}

func (p *parser) validateInFlight(fp string, s *Scenario, n int) {
	if n < 1 || n > s.Load.Window {
		p.fail(fp+".in_flight", "must be within 1–%d (load.window), got %d", s.Load.Window, n)
	}
	for _, m := range s.Load.Modes {
		if m == FireAndForget {
			p.fail(fp+".in_flight", "fire-and-forget has nothing in flight: an in_flight trigger needs confirm modes only")
			return
		}
		if m == ConfirmEach && n > 1 {
			p.fail(fp+".in_flight", "confirm-each never has more than 1 in flight, got %d", n)
			return
		}
		if m == Transactional && n > max(1, s.Load.TxSize) {
			p.fail(fp+".in_flight", "transactional never has more than load.tx_size (%d) in flight, got %d", max(1, s.Load.TxSize), n)
			return
		}
	}
}

// validateTimeline checks the fault steps as a sequence, before anything
// runs: each fault must find the broker up, each recovery step the state its
// fault left, the broker must be up at the end, and triggers must not go
// back in time or overlap the previous step's downtime. Steps run one after
// the other; a step whose trigger passed while the previous one was still
// recovering runs as soon as it is done.
func (p *parser) validateTimeline(sp string, s *Scenario) {
	p.validateTriggerKinds(sp, s)
	p.validateStates(sp, s)
	p.validateOrder(sp, s)
}

// validateTriggerKinds: triggers are armed from the start of the burst, so
// the non-recovery steps of one timeline use one kind of trigger (counts
// and percents, or times), an in_flight trigger only on a single-step
// timeline, and a step that leaves the broker down for a later one must
// itself be timed: otherwise a step could fire long before it can run, or a
// recovery be due before its fault.
func (p *parser) validateTriggerKinds(sp string, s *Scenario) {
	kinds := map[string]bool{}
	steps := map[Action]int{}
	for j, f := range s.Faults {
		fp := fmt.Sprintf("%s.faults[%d]", sp, j)
		if f.Action.IsRecovery() {
			continue
		}
		if steps[f.Action]++; steps[f.Action] > 1 && actionTable[f.Action].Once != "" {
			p.fail(fp+".action", "only one %s step per scenario", f.Action)
		}
		switch {
		case f.After != nil:
			kinds["after"] = true
		case f.InFlight != nil:
			kinds["in_flight"] = true
			if len(s.Faults) > 1 {
				p.fail(fp+".in_flight", "an in_flight trigger is only possible on a single-step timeline")
			}
		case f.PublishedPercent != nil || f.Published != nil:
			kinds["published"] = true
		}
		if f.ManualRecovery && f.After == nil && f.AfterBurst == nil {
			p.fail(fp+".manual_recovery", "a step recovered by a later one must be triggered by after (or after_burst), so its recovery cannot come due before it")
		}
	}
	if len(kinds) > 1 {
		p.fail(sp+".faults", "mixes trigger kinds (%s): use either published/published_percent or after for every fault step", strings.Join(slices.Sorted(maps.Keys(kinds)), ", "))
	}
}

// validateStates follows the broker's state (up, stopped, paused,
// disconnected) through the steps. On a cluster the state is that of the
// nodes a step with manual_recovery left down, which its recovery step
// brings back (whichever nodes its target resolved to), and a later fault
// waits for them as on a single broker; except a step that acts on the
// queue wherever it lives (delete-queue, purge-queue), which runs while a
// minority of the nodes is down: the queue keeps a majority of its
// members (rabbitmq-server#12366 deletes a quorum queue with one member's
// node stopped). A recovery step is timed as the step it recovers: by
// after, or by after_burst.
func (p *parser) validateStates(sp string, s *Scenario) {
	state, pending := "up", Action("")
	var left Fault // the step that left state
	w := stateWords{cluster: s.Broker.Nodes > 1}
	for j, f := range s.Faults {
		fp := fmt.Sprintf("%s.faults[%d]", sp, j)
		if !slices.Contains(Actions, f.Action) {
			continue
		}
		switch {
		case f.Action.IsRecovery():
			if timed := afterOf(left); (timed == "after" && f.After == nil) || (timed == "after_burst" && f.AfterBurst == nil) {
				why := w.pick(": nothing is published while the broker is "+f.Action.RecoveredState(), ", as the step it recovers is, so it cannot come due before that step")
				if timed == "after_burst" {
					why = ", as the step it recovers is: both count from the last publish, so it cannot come due before that step"
				}
				p.fail(fp, "%s must be triggered by %s%s", f.Action, timed, why)
			}
			if f.Action != pending {
				p.fail(fp+".action", "%s needs %s left %s by an earlier step with manual_recovery, but %s here", f.Action, w.pick("a broker", "nodes"), f.Action.RecoveredState(), w.is(state))
			} else {
				state, pending = "up", ""
			}
		default:
			if state != "up" && !(f.Action.RemovesMessages() && w.cluster && left.TargetOf(s.Broker.Nodes, "").Minority()) {
				p.fail(fp+".action", "%s needs %s, but %s here (recover %s with %s first)", f.Action, w.pick("a running broker", "every node running"), w.is(state), w.pick("it", "them"), pending)
			}
			if rec, _ := f.Action.Recovery(); f.ManualRecovery && rec != "" { // else refused as a step of its own
				pending, state = f.Action.Recovery()
				left = f
			}
		}
	}
	if state != "up" {
		p.fail(fmt.Sprintf("%s.faults[%d]", sp, len(s.Faults)-1), "%s would stay %s at the end: add a %s step", w.pick("the broker", "nodes"), state, pending)
	}
}

// afterOf names the trigger a recovery step of f takes: after_burst for a
// step timed after the burst, after otherwise.
func afterOf(f Fault) string {
	if f.AfterBurst != nil {
		return "after_burst"
	}
	return "after"
}

// stateWords are validateStates' words for a single broker, or for the
// nodes of a cluster.
type stateWords struct{ cluster bool }

// is names what is in state: "it is stopped", "nodes are stopped",
// "every node is up".
func (w stateWords) is(state string) string {
	switch {
	case !w.cluster:
		return "it is " + state
	case state == "up":
		return "every node is up"
	}
	return "nodes are " + state
}

func (w stateWords) pick(single, cluster string) string {
	if w.cluster {
		return cluster
	}
	return single
}

// validateOrder checks that count triggers never go back and that timed
// steps do not overlap the previous step's downtime.
func (p *parser) validateOrder(sp string, s *Scenario) {
	var lastAfter *time.Duration
	var lastEnd time.Duration
	lastCount, lastCountPath := -1, ""
	for j, f := range s.Faults {
		fp := fmt.Sprintf("%s.faults[%d]", sp, j)
		if !slices.Contains(Actions, f.Action) || (f.PublishedPercent != nil && math.IsNaN(*f.PublishedPercent)) {
			continue
		}
		if n, ok := f.CountTrigger(s.Load.Messages); ok {
			if n < lastCount {
				p.fail(fp, "triggers at %d published, before %s (%d): steps run in order", n, lastCountPath, lastCount)
			}
			lastCount, lastCountPath = n, fmt.Sprintf("faults[%d]", j)
		}
		if f.After == nil {
			continue
		}
		at := f.After.D()
		if lastAfter != nil && at < lastEnd {
			p.fail(fp+".after", "%s overlaps the previous step, which lasts until %s after burst start", at, lastEnd)
		}
		lastAfter = &at
		lastEnd = at + f.Jitter.D()
		if f.Every != nil {
			// Each later firing waits for the previous recovery, then Every.
			lastEnd += time.Duration(f.Firings()-1) * (f.Down.D() + f.Every.D() + f.Jitter.D())
		}
		if f.Action.Recovers() && !f.ManualRecovery {
			lastEnd += f.Down.D()
		}
	}
}

func (p *parser) validateMatrix(sp string, s *Scenario) {
	mp := sp + ".matrix"
	for j, t := range s.Matrix.QueueTypes {
		if slices.Index(s.Matrix.QueueTypes, t) < j {
			p.fail(fmt.Sprintf("%s.queue_types[%d]", mp, j), "%q listed twice", t)
		}
	}
	for j, v := range s.Matrix.Persistent {
		if slices.Index(s.Matrix.Persistent, v) < j {
			p.fail(fmt.Sprintf("%s.persistent[%d]", mp, j), "%v listed twice", v)
		}
	}
	if !s.Queue.IsDurable() && slices.Contains(s.Matrix.QueueTypes, Quorum) {
		p.fail(mp+".queue_types", "quorum queues are always durable, and queue.durable is false")
	}
}

func (p *parser) validateDrain(sp string, s *Scenario) {
	d := s.Drain
	p.atLeastMS(sp+".drain.idle", d.Idle)
	p.atLeastMS(sp+".drain.lost_wait", d.LostWait)
	p.atLeastMS(sp+".drain.timeout", d.Timeout)
	if d.LostWait < d.Idle {
		p.fail(sp+".drain.lost_wait", "%s is shorter than drain.idle %s: the drain would give up on confirmed ids before it ever counts as idle", d.LostWait.D(), d.Idle.D())
	}
}

// validateExpect checks that each expectation names a mode the scenario
// runs and can be met at all: some counts exist only with live consumers
// or a dead-letter queue.
func (p *parser) validateExpect(sp string, s *Scenario) {
	if s.Expect.AllowDeadLetterPathLoss != nil && !s.Queue.DeadLetterQueue {
		p.fail(sp+".expect.allow_dead_letter_path_loss", "has no effect without queue.dead_letter_queue: true")
	}
	for _, m := range slices.Sorted(maps.Keys(s.Expect.Modes)) {
		p.validateModeExpectations(sp+".expect.modes."+string(m), m, s.Expect.Modes[m], s)
	}
	p.validateVersionScopes(sp, s)
}

// validateModeExpectations checks one mode's expectations ex at path mp:
// the mode runs, and each count can be measured by this scenario at all.
func (p *parser) validateModeExpectations(mp string, m Mode, ex ModeExpectations, s *Scenario) {
	if !slices.Contains(s.Load.Modes, m) {
		p.fail(mp, "%q is not one of this scenario's load.modes", m)
	}
	if ex.DeadLettered != nil && *ex.DeadLettered > 0 && !s.Queue.DeadLetterQueue {
		p.fail(mp+".dead_lettered", "nothing is dead-lettered without queue.dead_letter_queue: true")
	}
	if ex.LostDeadLetterPath != nil && *ex.LostDeadLetterPath > 0 && !s.Queue.DeadLetterQueue {
		p.fail(mp+".lost_dead_letter_path", "nothing is lost on the dead-letter path without queue.dead_letter_queue: true")
	}
	if ex.DeliveriesPerMessage != nil && !s.Consumers.Enabled() {
		p.fail(mp+".deliveries_per_message", "is measured by live consumers: set consumers.count")
	}
	if ex.Retries != nil && s.Consumers.OnDelivery != ConsumerRetry {
		p.fail(mp+".retries", "is measured by consumers with on_delivery: retry")
	}
	if ex.XDeathCountAtPark != nil && s.Consumers.OnDelivery != ConsumerRetry {
		p.fail(mp+".x_death_count_at_park", "is measured by consumers with on_delivery: retry")
	}
	if ex.MinRedeliveries != nil && *ex.MinRedeliveries > 0 && !s.Consumers.Enabled() && len(s.Faults) == 0 {
		p.fail(mp+".min_redeliveries", "nothing can be redelivered without live consumers or a fault")
	}
	if ex.MaxWentInDoubt != nil && ex.MinWentInDoubt != nil && *ex.MaxWentInDoubt < *ex.MinWentInDoubt {
		p.fail(mp+".max_went_in_doubt", "%d is below min_went_in_doubt %d: no run can meet both", *ex.MaxWentInDoubt, *ex.MinWentInDoubt)

	}
	if ex.ConsumerChanges != nil && !s.Consumers.Enabled() {
		p.fail(mp+".consumer_changes", "is measured by live consumers: set consumers.count")
	}
	if ex.DeadLetterReason != "" && !s.Queue.DeadLetterQueue {
		p.fail(mp+".dead_letter_reason", "nothing is dead-lettered without queue.dead_letter_queue: true")
	}
	if ex.LateConfirms != nil && *ex.LateConfirms > 0 && s.Load.OnConfirmTimeout != OnTimeoutRepublish {
		p.fail(mp+".late_confirms", "only load.on_confirm_timeout: republish keeps an original's delivery tag tracked after its confirm timed out")
	}
}

// UncheckedExpectations removes from s.Expect.Modes every mode s does not
// run (after --mode narrowed load.modes) and returns one warning per mode
// removed, in mode order, naming what goes unchecked.
func (s *Scenario) UncheckedExpectations() []string {
	var out []string
	s.Expect.Modes = maps.Clone(s.Expect.Modes) // the loaded file's map stays whole
	for _, m := range Modes {
		if _, ok := s.Expect.Modes[m]; !ok || slices.Contains(s.Load.Modes, m) {
			continue
		}
		ran := make([]string, len(s.Load.Modes))
		for i, r := range s.Load.Modes {
			ran[i] = string(r)
		}
		out = append(out, fmt.Sprintf("expect.modes.%s of scenario %q is not checked: --mode runs only %s", m, s.Name, strings.Join(ran, ", ")))
		delete(s.Expect.Modes, m)
	}
	ran := make([]string, len(s.Load.Modes))
	for i, r := range s.Load.Modes {
		ran[i] = string(r)
	}
	return append(out, s.uncheckedScopedModes(strings.Join(ran, ", "))...)
}

// actionNames is every fault action, in table order, for messages.
func actionNames() []string {
	s := make([]string, len(Actions))
	for i, a := range Actions {
		s[i] = string(a)
	}
	return s
}

func modeList() string {
	s := make([]string, len(Modes))
	for i, m := range Modes {
		s[i] = string(m)
	}
	return strings.Join(s, ", ")
}

// confKey is a rabbitmq.conf key: dot-separated segments, the first a
// lower-case name (https://www.rabbitmq.com/docs/configure#config-file).
var confKey = regexp.MustCompile(`^[a-z][a-z0-9_]*(\.[A-Za-z0-9_-]+)*$`)

// appEnvKey is a key of the rabbit application's environment (an Erlang atom
// written bare in advanced.config).
var appEnvKey = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

// reservedConf are the rabbitmq.conf keys, and key prefixes, rmqtorture's
// own setup of the broker relies on (scripts/build-broker-image.sh): AMQP on
// 5672 on every interface, guest allowed from the host, the default vhost and
// user, the console log its error reports quote.
var reservedConf = []string{"listeners", "loopback_users", "default_user", "default_pass", "default_vhost",
	"default_permissions", "default_user_tags", "log.console"}

// reservedAppEnv are the same settings as rabbit application keys.
var reservedAppEnv = []string{"tcp_listeners", "loopback_users", "default_user", "default_pass", "default_vhost",
	"default_permissions", "default_user_tags", "log"}

// validateBrokerConfig checks broker.config and broker.advanced_config: key
// syntax, the keys rmqtorture needs, and values a one-line file can hold.
func (p *parser) validateBrokerConfig(sp string, s *Scenario) {
	bp := sp + ".broker"
	for _, k := range slices.Sorted(maps.Keys(s.Broker.Config)) {
		kp, v := bp+".config."+k, s.Broker.Config[k]
		switch {
		case !confKey.MatchString(k):
			p.fail(kp, "%q is not a rabbitmq.conf key (dot-separated names such as consumer_timeout or disk_free_limit.absolute)", k)
		case reserved(k, reservedConf):
			p.fail(kp, "rmqtorture's own broker setup needs %s (AMQP on 5672 on every interface, guest from the host, the console log): a scenario cannot change it", k)
		case strings.TrimSpace(v) == "":
			p.fail(kp, "needs a value")
		case strings.ContainsAny(v, "\r\n"):
			p.fail(kp, "a rabbitmq.conf value is one line; %q has a line break", v)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(s.Broker.AdvancedConfig)) {
		kp := bp + ".advanced_config." + k
		switch {
		case !appEnvKey.MatchString(k):
			p.fail(kp, "%q is not a key of the rabbit application (a lower-case name such as channel_tick_interval)", k)
		case reserved(k, reservedAppEnv):
			p.fail(kp, "rmqtorture's own broker setup needs %s: a scenario cannot change it", k)
		}
	}
}

// reserved reports whether key is one of list or below one of them.
func reserved(key string, list []string) bool {
	return slices.ContainsFunc(list, func(r string) bool { return key == r || strings.HasPrefix(key, r+".") })
}

// validateDeadLetterArguments checks queue.dead_letter_arguments: only with
// a dead-letter queue, which must keep what is dead-lettered to it.
func (p *parser) validateDeadLetterArguments(sp string, s *Scenario) {
	q := s.Queue
	ap := sp + ".queue.dead_letter_arguments"
	for _, k := range []string{"dead_letter_type", "dead_letter_node"} {
		if p.has(sp+".queue."+k) && !q.DeadLetterQueue {
			p.fail(sp+".queue."+k, "there is no dead-letter queue to declare: set queue.dead_letter_queue: true")
		}
	}
	if len(q.DeadLetterArguments) > 0 && !q.DeadLetterQueue {
		p.fail(ap, "there is no dead-letter queue to declare with them: set queue.dead_letter_queue: true")
		return
	}
	for _, k := range []string{"x-dead-letter-exchange", "x-dead-letter-routing-key"} {
		if _, ok := q.DeadLetterArguments[k]; ok {
			p.fail(ap+"."+k, "would move messages out of the dead-letter queue, where nobody counts them")
		}
	}
}

// validateBurst checks the burst shape: one schedule of publish calls (not
// with load.rate), a period a timer can honour, bursts no larger than the
// load, and the last burst due well within load.burst_timeout.
func (p *parser) validateBurst(lp string, l Load) {
	if l.Burst == nil {
		return
	}
	bp := lp + ".burst"
	if l.Rate != 0 {
		p.fail(bp, "load.burst and load.rate both schedule the publish calls: use one")
	}
	if !p.has(bp + ".messages") {
		p.fail(bp+".messages", "missing: how many publish calls each burst makes")
	} else if l.Burst.Messages > l.Messages && l.Messages > 0 {
		p.fail(bp+".messages", "%d is more than load.messages %d: the load would be one burst", l.Burst.Messages, l.Messages)
	}
	if !p.has(bp + ".every") {
		p.fail(bp+".every", "missing: the time from one burst's start to the next's")
		return
	}
	p.atLeastMS(bp+".every", l.Burst.Every)
	if span := l.BurstSpan(); span > 0 && span >= l.BurstTimeout.D() {
		p.fail(bp+".every", "%d bursts every %s take %s, not less than load.burst_timeout %s", l.Bursts(), l.Burst.Every.D(), span, l.BurstTimeout.D())
	}
}

// validateRelativeTriggers checks the triggers timed from something other
// than the burst's start. after_burst steps come last (the burst is over
// when they fire) and do not repeat; an after_start step follows a step
// that starts the broker's container and acts on the container itself,
// the only thing a node still booting can be hit with.
func (p *parser) validateRelativeTriggers(sp string, s *Scenario) {
	afterBurst := -1          // first after_burst step
	var lastEnd time.Duration // the previous after_burst step's end, since the last publish
	for j, f := range s.Faults {
		fp := fmt.Sprintf("%s.faults[%d]", sp, j)
		switch {
		case f.AfterBurst != nil:
			if afterBurst < 0 {
				afterBurst = j
			}
			if f.Every != nil {
				p.fail(fp+".every", "an after_burst step cannot repeat: the burst it follows is over")
			}
			if at := f.AfterBurst.D(); at < lastEnd && j > afterBurst {
				p.fail(fp+".after_burst", "%s overlaps the previous step, which lasts until %s after the last publish", at, lastEnd)
			}
			lastEnd = f.AfterBurst.D() + f.Jitter.D()
			if f.Action.Recovers() && !f.ManualRecovery {
				lastEnd += f.Down.D()
			}
		case f.AfterStart != nil:
			p.validateAfterStart(fp, s, j)
		case afterBurst >= 0 && !f.Action.IsRecovery():
			p.fail(fp, "comes after faults[%d], which fires after the burst: steps run in order, so every later step needs after_burst (or after_start) too", afterBurst)
		}
	}
}

// streamArguments are the queue arguments a stream takes here.
var streamArguments = []string{"x-max-length-bytes", "x-stream-max-segment-size-bytes"}

// validateStream keeps stream-only settings to streams, and refuses on a
// stream what only AMQP 0.9.1 queues do: the stream publisher writes to the
// stream itself over the stream protocol (no exchange, routing key or
// mandatory flag) and the drain reads it after the burst.
func (p *parser) validateStream(sp string, s *Scenario) {
	qp := sp + ".queue"
	if s.Queue.Type != Stream {
		if s.Queue.Deduplication {
			p.fail(qp+".deduplication", "deduplication is a stream feature (a named stream producer): set queue.type: stream")
		}
		if _, ok := s.Queue.Arguments["x-stream-max-segment-size-bytes"]; ok && !slices.Contains(s.queueTypes(), Stream) {
			p.fail(qp+".arguments.x-stream-max-segment-size-bytes", "only a stream has segments: set queue.type: stream")
		}
		return
	}
	if !s.Queue.IsDurable() {
		p.fail(qp+".durable", "streams are always durable")
	}
	if s.Queue.DeadLetterQueue {
		p.fail(qp+".dead_letter_queue", "a stream does not dead-letter")
	}
	if s.Queue.AlsoBindType != "" {
		p.fail(qp+".also_bind_type", "the stream publisher writes to the stream itself, not through an exchange: nothing would reach a second queue")
	}
	for _, k := range slices.Sorted(maps.Keys(s.Queue.Arguments)) {
		if !slices.Contains(streamArguments, k) {
			p.fail(qp+".arguments."+k, "does not apply to a stream (only %s)", strings.Join(streamArguments, " and "))
		}
	}
	if s.Consumers.Count > 0 {
		p.fail(sp+".consumers.count", "live consumers of a stream are not supported yet: the drain reads the stream from its first offset after the burst")
	}
	p.validateStreamLoad(sp, s)
	for j, f := range s.Faults {
		if actionTable[f.Action].AMQPOnly {
			p.fail(fmt.Sprintf("%s.faults[%d].action", sp, j), "%s acts on AMQP 0.9.1 connections; it is not supported with queue.type: stream", f.Action)
		}
	}
	for _, k := range []string{"queue_types", "persistent"} {
		if p.has(sp + ".matrix." + k) {
			p.fail(sp+".matrix."+k, "a stream runs on its own: a matrix over a stream takes repeat only")
		}
	}
}

// deliveryLimit returns the queue's x-delivery-limit, and false when unset.
func (q Queue) deliveryLimit() (int, bool) {
	n, ok := q.Arguments["x-delivery-limit"].(int)
	return n, ok
}

// validateHoldAndBound checks consumers.hold and consumers.max_deliveries,
// and that a queue without a delivery limit has a bound when its consumer
// requeues every delivery.
func (p *parser) validateHoldAndBound(cp string, s *Scenario) {
	c := s.Consumers
	if c.Hold < 0 {
		p.fail(cp+".hold", "must not be negative")
	}
	if p.has(cp+".max_deliveries") && c.OnDelivery != ConsumerNackRequeue {
		p.fail(cp+".max_deliveries", "only on_delivery: nack-requeue requeues, so only it needs a bound")
	}
	if n, ok := s.Queue.deliveryLimit(); ok && n < 0 && c.OnDelivery == ConsumerNackRequeue && c.MaxDeliveries == 0 {
		p.fail(cp+".on_delivery", "x-delivery-limit -1 lifts the broker's limit: nack-requeue then cycles until drain.timeout; set consumers.max_deliveries")
	}
}

// validateAfterStart checks an after_start step at index j.
func (p *parser) validateAfterStart(fp string, s *Scenario, j int) {
	f := s.Faults[j]
	if !f.Action.ActsOnContainer() {
		p.fail(fp+".after_start", "%s needs a booted node; a node still booting can only be hit on its container (kill, stop, restart, pause, disconnect)", f.Action)
	}
	if f.Every != nil {
		p.fail(fp+".every", "an after_start step cannot repeat: it is timed from one container start")
	}
	if j == 0 {
		p.fail(fp+".after_start", "the first step has no earlier step that starts the container; use after (since the burst start)")
		return
	}
	prev := s.Faults[j-1]
	if !prev.StartsContainer() || prev.Every != nil {
		p.fail(fp+".after_start", "faults[%d] (%s) does not end by starting the broker's container once: after_start follows start, restart, or a kill or stop recovered after down", j-1, prev.Action)
	}
}

// validateQueueActions checks each step against the queue, its consumers
// and the broker, by its action's own rule (delete-queue's, power-loss's).
func (p *parser) validateQueueActions(sp string, s *Scenario) {
	for j, f := range s.Faults {
		if own := actionTable[f.Action].validateQueue; own != nil {
			own(p, fmt.Sprintf("%s.faults[%d].action", sp, j), s)
		}
	}
}

// DurationBounds is the longest value each duration field of a scenario
// takes, by its path ("faults[].down": every step's down). Every duration
// has one, so no wait in a run is unbounded: a wait within the burst is
// bounded by 10m, a phase (the burst, the drain) by 1h. scenarios.schema.json
// names each bound in the field's description, and the scenario file
// reference (docs/scenario-file.md) lists them (a test keeps the three equal).
var DurationBounds = map[string]time.Duration{
	"broker.ready_timeout":       10 * time.Minute,
	"queue.settle_before_burst":  10 * time.Minute,
	"load.confirm_timeout":       10 * time.Minute,
	"load.reconnect_timeout":     time.Hour,
	"load.stall_timeout":         10 * time.Minute,
	"load.heartbeat":             10 * time.Minute,
	"load.burst_timeout":         time.Hour,
	"load.message_deadline":      time.Hour,
	"faults[].after":             time.Hour,
	"faults[].after_burst":       time.Hour,
	"faults[].after_start":       10 * time.Minute,
	"load.burst.every":           time.Hour,
	"consumers.hold":             10 * time.Minute,
	"faults[].down":              10 * time.Minute,
	"faults[].grace":             10 * time.Minute,
	"faults[].every":             time.Hour,
	"faults[].jitter":            10 * time.Minute,
	"faults[].timeout":           10 * time.Minute,
	"consumers.processing_delay": 10 * time.Minute,
	"consumers.retry_delay":      10 * time.Minute,
	"drain.idle":                 10 * time.Minute,
	"drain.lost_wait":            time.Hour,
	"drain.timeout":              time.Hour,
	"space.down[]":               10 * time.Minute, // validateSpace
}

// validateDurationBounds reports every duration written above its bound in
// DurationBounds, at the value as written. Absent keys take defaults, which
// are within bounds.
func (p *parser) validateDurationBounds(sp string) {
	for _, field := range slices.Sorted(maps.Keys(DurationBounds)) {
		bound := DurationBounds[field]
		list, sub, inList := strings.Cut(field, "[].")
		if !inList {
			p.durationAtMost(sp+"."+field, bound)
			continue
		}
		n := p.nodes[strings.TrimPrefix(sp+"."+list, ".")]
		if n != nil && n.Kind == yaml.AliasNode {
			n = n.Alias
		}
		if n == nil || n.Kind != yaml.SequenceNode {
			continue
		}
		for j := range n.Content {
			p.durationAtMost(fmt.Sprintf("%s.%s[%d].%s", sp, list, j, sub), bound)
		}
	}
}

// validateStreamLoad refuses the load settings the stream publisher does
// not play.
func (p *parser) validateStreamLoad(sp string, s *Scenario) {
	lp := sp + ".load"
	if s.Load.Publishers > 1 {
		p.fail(lp+".publishers", "one stream producer publishes a burst (deduplication needs a single named producer)")
	}
	if p.has(lp+".persistent") && !s.Load.IsPersistent() {
		p.fail(lp+".persistent", "a stream stores every message on disk: there is no transient publish")
	}
	if i := slices.Index(s.Load.Modes, Transactional); i >= 0 {
		p.fail(fmt.Sprintf("%s.modes[%d]", lp, i), "not supported with queue.type: stream: transactional is AMQP 0-9-1's tx.select, and the stream publisher speaks the stream protocol, which has no transactions (use fire-and-forget, confirm-each or confirm-window)")
	}
	if s.Load.Republish == RepublishNackedAndInDoubt {
		p.fail(lp+".republish", "not supported with queue.type: stream: the stream publisher publishes in-doubt messages again, not refused ones (use in-doubt or none)")
	}
	for _, k := range [][2]string{
		{"unroutable_every", "a stream publish has no routing key"},
		{"message_deadline", "the stream publisher has no message deadline yet"},
		{"confirm_listener_buffer", "it sizes amqp091-go's confirm listener"},
	} {
		if p.has(lp + "." + k[0]) {
			p.fail(lp+"."+k[0], "not supported with queue.type: stream: %s", k[1])
		}
	}
}

// durationAtMost reports the duration at path if it is written and longer
// than bound. A value that is not a duration was reported by the schema.
func (p *parser) durationAtMost(path string, bound time.Duration) {
	n := p.nodes[strings.TrimPrefix(path, ".")]
	if n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if n == nil || n.Kind != yaml.ScalarNode {
		return
	}
	if d, err := time.ParseDuration(n.Value); err == nil && d > bound {
		p.fail(path, "must be at most %s, got %s", shortDuration(bound), n.Value)
	}
}

// shortDuration writes d as a scenario would: 10m, 1h, 1m30s (not 10m0s).
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// validateSpace checks the space: section explore draws trials from:
// ranges the right way round, and only actions and targets a drawn step
// could take on this broker (bounds and lengths are the schema's).
func (p *parser) validateSpace(sp string, s *Scenario) {
	x := s.Space
	if x == nil {
		return
	}
	xp := sp + ".space"
	order := func(key string, lo, hi float64, show func(float64) string) {
		if lo > hi {
			p.fail(xp+"."+key, "[min, max] the wrong way round: %s > %s", show(lo), show(hi))
		}
	}
	num := func(v float64) string { return fmt.Sprint(v) }
	if len(x.Steps) == 2 {
		order("steps", float64(x.Steps[0]), float64(x.Steps[1]), num)
	}
	if len(x.PublishedPercent) == 2 {
		order("published_percent", float64(x.PublishedPercent[0]), float64(x.PublishedPercent[1]), num)
	}
	if len(x.Messages) == 2 {
		order("messages", float64(x.Messages[0]), float64(x.Messages[1]), num)
	}
	if len(x.Down) == 2 {
		for j, d := range x.Down {
			if d.D() < 100*time.Millisecond || d.D() > DurationBounds["space.down[]"] {
				p.fail(fmt.Sprintf("%s.down[%d]", xp, j), "must be within 100ms and %s, got %s", DurationBounds["space.down[]"], d.D())
			}
		}
		order("down", float64(x.Down[0]), float64(x.Down[1]), func(v float64) string { return time.Duration(v).String() })
	}
	nodes := s.Broker.Nodes
	for j, a := range x.Actions {
		spec, ok := a.Spec()
		ap := fmt.Sprintf("%s.actions[%d]", xp, j)
		switch {
		case !ok:
		case spec.UserCommand:
			p.fail(ap, "%s runs the programs a step names, and explore draws its own steps: leave it out", a)
		case spec.ClusterOnly && nodes <= 1:
			p.fail(ap, "%s %s: it acts on the nodes of a cluster, and this scenario runs a single broker", a, needsCluster)
		case spec.CutsPower && s.Broker.Filesystem != LazyFilesystem:
			p.fail(ap, "power-loss needs the broker's data on a filesystem that can forget: set broker.filesystem: %s", LazyFilesystem)
		}
	}
	if len(x.Targets) > 0 && nodes <= 1 {
		p.fail(xp+".targets", "%s: on a single broker every step acts on the broker", needsCluster)
	}
}
