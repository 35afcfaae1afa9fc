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
	if len(f.Scenarios) == 0 {
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
		p.validateScenario(sp, &s)
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
	p.validateMatrix(sp, s)
	p.validateDrain(sp, s)
	p.validateExpect(sp, s)
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
	}
	p.atLeastMS(sp+".broker.ready_timeout", s.Broker.ReadyTimeout)
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
		for _, k := range []string{"prefetch", "processing_delay", "ack_every", "on_delivery", "max_retries", "retry_delay"} {
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
		for _, k := range []string{"max_retries", "retry_delay"} {
			if p.has(cp + "." + k) {
				p.fail(cp+"."+k, "only on_delivery: retry uses %s", k)
			}
		}
	}
	if c.OnDelivery == ConsumerNackRequeue && slices.Contains(s.queueTypes(), Classic) {
		p.fail(cp+".on_delivery", "nack-requeue on a classic queue cycles until drain.timeout: classic queues have no delivery limit (use a quorum queue, or reject)")
	}
	if c.OnDelivery != ConsumerAck {
		for j, f := range s.Faults {
			if f.Action == CrashConsumer {
				p.fail(fmt.Sprintf("%s.faults[%d].action", sp, j), "crash-consumer crashes before an ack: it needs consumers.on_delivery: ack")
			}
		}
	}
}

// validateFault checks one fault step on its own: what its action takes,
// its repeat and its trigger.
func (p *parser) validateFault(fp string, s *Scenario, f Fault) {
	known := slices.Contains(Actions, f.Action)
	if f.Action != Kill && p.has(fp+".signal") {
		p.fail(fp+".signal", "only kill takes a signal, not %s", f.Action)
	}
	if known && !f.Action.Recovers() && f.Action != CrashConsumer && p.has(fp+".down") {
		p.fail(fp+".down", "%s has nothing to recover; down applies to kill, stop, pause, disconnect, memory-alarm and crash-consumer", f.Action)
	}
	if f.Action == CrashConsumer && s.Consumers.Count == 0 {
		p.fail(fp+".action", "crash-consumer needs live consumers: set consumers.count")
	}
	p.validateRepeat(fp, f)
	if f.Jitter < 0 {
		p.fail(fp+".jitter", "must not be negative")
	}
	if f.ManualRecovery && p.has(fp+".down") {
		p.fail(fp+".down", "manual_recovery: a later step recovers, so down has no meaning")
	}
	if f.ManualRecovery && (!f.Action.Recovers() || f.Action == MemoryAlarm) {
		p.fail(fp+".manual_recovery", "only kill, stop, pause and disconnect can be recovered by a later step")
	}
	if p.has(fp+".grace") && f.Action != Stop && f.Action != Restart {
		p.fail(fp+".grace", "only stop and restart take a grace period, not %s", f.Action)
	} else if p.has(fp+".grace") && f.Grace < 0 {
		p.fail(fp+".grace", "must not be negative")
	}
	p.validateTrigger(fp, s, f)
	if f.Down < 0 {
		p.fail(fp+".down", "must not be negative")
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
	case f.Action == Start || f.Action == Unpause || f.Action == Reconnect || f.ManualRecovery:
		p.fail(fp+".every", "a recovery step or a step with manual_recovery cannot repeat")
	case f.Action == PublishToMissingExchange:
		p.fail(fp+".every", "publish-to-missing-exchange cannot repeat (one misrouted message per scenario)")
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
	if triggers != 1 {
		p.fail(fp, "needs exactly one trigger (published_percent, published, in_flight or after), got %d", triggers)
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
	misroutes := 0
	for j, f := range s.Faults {
		fp := fmt.Sprintf("%s.faults[%d]", sp, j)
		switch f.Action {
		case Start, Unpause, Reconnect:
			continue
		case PublishToMissingExchange:
			if misroutes++; misroutes > 1 {
				p.fail(fp+".action", "only one publish-to-missing-exchange step per scenario")
			}
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
		if f.ManualRecovery && f.After == nil {
			p.fail(fp+".manual_recovery", "a step recovered by a later one must be triggered by after, so its recovery cannot come due before it")
		}
	}
	if len(kinds) > 1 {
		p.fail(sp+".faults", "mixes trigger kinds (%s): use either published/published_percent or after for every fault step", strings.Join(slices.Sorted(maps.Keys(kinds)), ", "))
	}
}

// validateStates follows the broker's state (up, stopped, paused,
// disconnected) through the steps.
func (p *parser) validateStates(sp string, s *Scenario) {
	state, pending := "up", Action("")
	for j, f := range s.Faults {
		fp := fmt.Sprintf("%s.faults[%d]", sp, j)
		if !slices.Contains(Actions, f.Action) {
			continue
		}
		switch f.Action {
		case Start, Unpause, Reconnect:
			if f.After == nil {
				p.fail(fp, "%s must be triggered by after: nothing is published while the broker is %s", f.Action, recoveredState(f.Action))
			}
			if f.Action != pending {
				p.fail(fp+".action", "%s needs a broker left %s by an earlier step with manual_recovery, but it is %s here", f.Action, recoveredState(f.Action), state)
			} else {
				state, pending = "up", ""
			}
		default:
			if state != "up" {
				p.fail(fp+".action", "%s needs a running broker, but it is %s here (recover it with %s first)", f.Action, state, pending)
			}
			if f.ManualRecovery {
				pending, state = f.Action.Recovery()
			}
		}
	}
	if state != "up" {
		p.fail(fmt.Sprintf("%s.faults[%d]", sp, len(s.Faults)-1), "the broker would stay %s at the end: add a %s step", state, pending)
	}
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

func recoveredState(a Action) string {
	switch a {
	case Start:
		return "stopped"
	case Unpause:
		return "paused"
	}
	return "disconnected"
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
	for _, m := range slices.Sorted(maps.Keys(s.Expect.Modes)) {
		ex := s.Expect.Modes[m]
		mp := sp + ".expect.modes." + string(m)
		if !slices.Contains(s.Load.Modes, m) {
			p.fail(mp, "%q is not one of this scenario's load.modes", m)
		}
		if ex.DeadLettered != nil && *ex.DeadLettered > 0 && !s.Queue.DeadLetterQueue {
			p.fail(mp+".dead_lettered", "nothing is dead-lettered without queue.dead_letter_queue: true")
		}
		if ex.DeliveriesPerMessage != nil && !s.Consumers.Enabled() {
			p.fail(mp+".deliveries_per_message", "is measured by live consumers: set consumers.count")
		}
		if ex.Retries != nil && s.Consumers.OnDelivery != ConsumerRetry {
			p.fail(mp+".retries", "is measured by consumers with on_delivery: retry")
		}
		if ex.MinRedeliveries != nil && *ex.MinRedeliveries > 0 && !s.Consumers.Enabled() && len(s.Faults) == 0 {
			p.fail(mp+".min_redeliveries", "nothing can be redelivered without live consumers or a fault")
		}
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
	return out
}

func modeList() string {
	s := make([]string, len(Modes))
	for i, m := range Modes {
		s[i] = string(m)
	}
	return strings.Join(s, ", ")
}

// DurationBounds is the longest value each duration field of a scenario
// takes, by its path ("faults[].down": every step's down). Every duration
// has one, so no wait in a run is unbounded: a wait within the burst is
// bounded by 10m, a phase (the burst, the drain) by 1h. scenarios.schema.json
// names each bound in the field's description, and README's scenario
// reference lists them (a test keeps the three equal).
var DurationBounds = map[string]time.Duration{
	"broker.ready_timeout":       10 * time.Minute,
	"queue.settle_before_burst":  10 * time.Minute,
	"load.confirm_timeout":       10 * time.Minute,
	"load.reconnect_timeout":     time.Hour,
	"load.stall_timeout":         10 * time.Minute,
	"load.burst_timeout":         time.Hour,
	"load.message_deadline":      time.Hour,
	"faults[].after":             time.Hour,
	"faults[].down":              10 * time.Minute,
	"faults[].grace":             10 * time.Minute,
	"faults[].every":             time.Hour,
	"faults[].jitter":            10 * time.Minute,
	"consumers.processing_delay": 10 * time.Minute,
	"consumers.retry_delay":      10 * time.Minute,
	"drain.idle":                 10 * time.Minute,
	"drain.lost_wait":            time.Hour,
	"drain.timeout":              time.Hour,
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
