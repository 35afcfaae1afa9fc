package scenario

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// FieldError is one problem in a scenario file, located by line and column and
// by the field path (scenarios[0].load.window).
type FieldError struct {
	File   string
	Line   int
	Column int
	Path   string
	Msg    string
}

func (e FieldError) Error() string {
	loc := e.File
	switch {
	case e.Line > 0 && e.Column > 0:
		loc = fmt.Sprintf("%s:%d:%d", e.File, e.Line, e.Column)
	case e.Line > 0:
		loc = fmt.Sprintf("%s:%d", e.File, e.Line)
	}
	if e.Path == "" {
		return fmt.Sprintf("%s: %s", loc, e.Msg)
	}
	return fmt.Sprintf("%s: %s: %s", loc, e.Path, e.Msg)
}

// Errors is every problem found in one file, in file order.
type Errors []FieldError

func (es Errors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// LoadFile reads and validates a scenario file. On any problem it returns
// Errors listing all of them, each with file:line:column and field path.
func LoadFile(path string) (*File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read scenario file: %w", err)
	}
	return Parse(path, data)
}

// Parse decodes data strictly (unknown keys are errors), applies defaults only
// where a key is absent, and validates every scenario.
func Parse(name string, data []byte) (*File, error) {
	var root yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&root); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, Errors{{File: name, Msg: "empty file; it needs version: 1 and a list of scenarios"}}
		}
		return nil, Errors{yamlError(name, err)}
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		return nil, Errors{{File: name, Line: extra.Line, Column: extra.Column, Msg: "more than one YAML document; put all scenarios in one"}}
	}
	doc := &root
	if doc.Kind == yaml.DocumentNode && len(doc.Content) == 1 {
		doc = doc.Content[0]
	}
	p := &parser{file: name, nodes: map[string]*yaml.Node{}, bad: map[string]bool{}}
	p.walk(doc, reflect.TypeOf(File{}), "")
	if p.visits > maxNodes {
		return nil, p.errs
	}
	// Decoding goes on past type errors (yaml.v3 decodes what it can); those
	// were reported with their paths by walk, so validation can still report
	// every other problem in the same pass.
	var f File
	var te *yaml.TypeError
	if err := doc.Decode(&f); err != nil && !errors.As(err, &te) {
		return nil, Errors{yamlError(name, err)}
	}
	p.defaults(&f)
	p.validate(&f)
	if len(p.errs) > 0 {
		slices.SortStableFunc(p.errs, func(a, b FieldError) int {
			if a.Line != b.Line {
				return a.Line - b.Line
			}
			return a.Column - b.Column
		})
		if len(p.errs) > maxErrors {
			more := len(p.errs) - maxErrors
			p.errs = append(p.errs[:maxErrors], FieldError{File: name, Msg: fmt.Sprintf("… and %d more problems", more)})
		}
		return nil, p.errs
	}
	return &f, nil
}

var yamlLine = regexp.MustCompile(`line (\d+): ([^\n]*)`)

// yamlError turns a yaml.v3 error ("yaml: line 3: ...") into a FieldError.
func yamlError(file string, err error) FieldError {
	var te *yaml.TypeError
	msg := err.Error()
	if errors.As(err, &te) && len(te.Errors) > 0 {
		msg = te.Errors[0]
	}
	msg = strings.TrimPrefix(msg, "yaml: ")
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		return FieldError{File: file, Line: line, Msg: m[2]}
	}
	return FieldError{File: file, Msg: msg}
}

// maxErrors is how many problems are listed before the rest is counted.
const maxErrors = 50

// maxNodes bounds the values a scenario file may expand to.
const maxNodes = 20000

// MaxMessages bounds load.messages (the ledger holds ~12 bytes per order).
const MaxMessages = 10_000_000

type parser struct {
	visits int
	file   string
	nodes  map[string]*yaml.Node // field path → value node, for every key present
	bad    map[string]bool       // paths already reported by walk
	errs   Errors
}

func (p *parser) errAt(n *yaml.Node, path, format string, args ...any) {
	if p.bad[path] {
		return // one problem per field: the first (a type error) says it all
	}
	p.bad[path] = true
	e := FieldError{File: p.file, Path: path, Msg: fmt.Sprintf(format, args...)}
	if n != nil {
		e.Line, e.Column = n.Line, n.Column
	}
	p.errs = append(p.errs, e)
}

// at returns the node of path, or of its nearest present parent.
func (p *parser) at(path string) *yaml.Node {
	for {
		if n, ok := p.nodes[path]; ok {
			return n
		}
		i := strings.LastIndexAny(path, ".[")
		if i <= 0 {
			return p.nodes[""]
		}
		path = path[:i]
	}
}

func (p *parser) has(path string) bool { _, ok := p.nodes[path]; return ok }

func (p *parser) fail(path, format string, args ...any) {
	p.errAt(p.at(path), path, format, args...)
}

// walk checks every mapping key against the yaml tags of t (strict decoding
// that reports all unknown keys with their path, not just the first) and
// records each value node by path.
func (p *parser) walk(n *yaml.Node, t reflect.Type, path string) {
	// Aliases can make a small file expand into a huge tree; a scenario file
	// has no business being that large.
	if p.visits++; p.visits > maxNodes {
		if p.visits == maxNodes+1 {
			p.errAt(n, path, "the file expands to more than %d values (aliases?); refusing to read further", maxNodes)
		}
		return
	}
	p.nodes[path] = n
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	switch t.Kind() {
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			p.errAt(n, path, "must be a mapping, got %s", kindName(n))
			return
		}
		fields := map[string]reflect.Type{}
		var known []string
		for i := range t.NumField() {
			tag := strings.Split(t.Field(i).Tag.Get("yaml"), ",")[0]
			fields[tag] = t.Field(i).Type
			known = append(known, tag)
		}
		seen := map[string]bool{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			kp := join(path, k.Value)
			ft, ok := fields[k.Value]
			switch {
			case !ok:
				p.errAt(k, kp, "unknown field (known: %s)", strings.Join(known, ", "))
			case seen[k.Value]:
				p.errAt(k, kp, "field given twice")
			default:
				seen[k.Value] = true
				p.walk(v, ft, kp)
			}
		}
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			p.errAt(n, path, "must be a mapping, got %s", kindName(n))
			return
		}
		seen := map[string]bool{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			kp := join(path, k.Value)
			if seen[k.Value] {
				p.errAt(k, kp, "key given twice")
				continue
			}
			seen[k.Value] = true
			p.walk(v, t.Elem(), kp)
		}
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			if n.Tag == "!!null" {
				return
			}
			p.errAt(n, path, "must be a list, got %s", kindName(n))
			return
		}
		for i, c := range n.Content {
			p.walk(c, t.Elem(), fmt.Sprintf("%s[%d]", path, i))
		}
	default:
		if n.Kind != yaml.ScalarNode {
			p.errAt(n, path, "must be a single value, got %s", kindName(n))
			return
		}
		// Decode each leaf on its own so every type error carries its path.
		if err := n.Decode(reflect.New(t).Interface()); err != nil {
			msg := err.Error()
			if m := yamlLine.FindStringSubmatch(msg); m != nil {
				msg = m[2]
			}
			p.errAt(n, path, "%s", typeMessage(strings.TrimPrefix(msg, "yaml: "), t))
		}
	}
}

var cannotUnmarshal = regexp.MustCompile("^cannot unmarshal !!\\w+ `(.*)` into ")

// typeMessage turns yaml.v3's "cannot unmarshal !!str `ten` into int" into
// what the field wants.
func typeMessage(msg string, t reflect.Type) string {
	m := cannotUnmarshal.FindStringSubmatch(msg)
	if m == nil {
		return msg
	}
	want := "a " + t.Kind().String()
	switch t.Kind() {
	case reflect.Int, reflect.Int64, reflect.Int32, reflect.Uint, reflect.Uint64:
		want = "a whole number"
	case reflect.Float64, reflect.Float32:
		want = "a number"
	case reflect.Bool:
		want = "true or false"
	case reflect.String:
		want = "text"
	}
	return fmt.Sprintf("must be %s, got %q", want, m[1])
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		return fmt.Sprintf("%q", n.Value)
	}
	return "something else"
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// defaults fills every field whose key is absent. A key that is present keeps
// its value, so an explicit `window: 0` is reported, not replaced.
func (p *parser) defaults(f *File) {
	for i := range f.Scenarios {
		s := &f.Scenarios[i]
		at := func(field string) bool { return p.has(fmt.Sprintf("scenarios[%d].%s", i, field)) }
		setDur := func(field string, d *Duration, v time.Duration) {
			if !at(field) {
				*d = Duration(v)
			}
		}
		if !at("broker.image") {
			s.Broker.Image = DefaultImage
		}
		setDur("broker.ready_timeout", &s.Broker.ReadyTimeout, 60*time.Second)
		if !at("queue.type") {
			s.Queue.Type = Quorum
		}
		setDur("queue.settle_before_burst", &s.Queue.SettleBeforeBurst, 2*time.Second)
		if !at("load.modes") {
			s.Load.Modes = slices.Clone(Modes)
		}
		if !at("load.window") {
			s.Load.Window = 1000
		}
		setDur("load.confirm_timeout", &s.Load.ConfirmTimeout, 30*time.Second)
		if !at("load.republish") {
			s.Load.Republish = RepublishInDoubt
		}
		setDur("load.reconnect_timeout", &s.Load.ReconnectTimeout, 90*time.Second)
		setDur("load.stall_timeout", &s.Load.StallTimeout, 10*time.Second)
		setDur("load.burst_timeout", &s.Load.BurstTimeout, 15*time.Minute)
		for j := range s.Faults {
			fp := fmt.Sprintf("faults[%d].", j)
			if !at(fp+"signal") && s.Faults[j].Action == Kill {
				s.Faults[j].Signal = "SIGKILL"
			}
			if s.Faults[j].Action.Recovers() && !s.Faults[j].ManualRecovery {
				setDur(fp+"down", &s.Faults[j].Down, 5*time.Second)
			}
			if a := s.Faults[j].Action; a == Stop || a == Restart {
				setDur(fp+"grace", &s.Faults[j].Grace, 10*time.Second)
			}
			if s.Faults[j].Action == CrashConsumer {
				setDur(fp+"down", &s.Faults[j].Down, 2*time.Second)
			}
		}
		if !at("load.publishers") {
			s.Load.Publishers = 1
		}
		// Spelled out so validate shows them; nil still means the default.
		if !at("load.persistent") {
			t := true
			s.Load.Persistent = &t
		}
		if !at("queue.durable") {
			t := true
			s.Queue.Durable = &t
		}
		if s.Consumers.Count > 0 {
			if !at("consumers.prefetch") {
				s.Consumers.Prefetch = 100
			}
			if !at("consumers.ack_every") {
				s.Consumers.AckEvery = 1
			}
			if !at("consumers.on_delivery") {
				s.Consumers.OnDelivery = ConsumerAck
			}
			if s.Consumers.OnDelivery == ConsumerRetry {
				if !at("consumers.max_retries") {
					s.Consumers.MaxRetries = 3
				}
				setDur("consumers.retry_delay", &s.Consumers.RetryDelay, 200*time.Millisecond)
			}
		}
		setDur("drain.idle", &s.Drain.Idle, 2*time.Second)
		setDur("drain.lost_wait", &s.Drain.LostWait, 15*time.Second)
		setDur("drain.timeout", &s.Drain.Timeout, 120*time.Second)
	}
}

// Signals accepted by kill: the ones a RabbitMQ operator has reason to send.
var Signals = []string{"SIGKILL", "SIGTERM", "SIGINT", "SIGQUIT", "SIGHUP", "SIGUSR1", "SIGUSR2", "SIGABRT"}

var namePattern = regexp.MustCompile(`^[a-z0-9][a-z0-9-]*$`)

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

func (p *parser) validateScenario(sp string, s *Scenario) {
	positive := func(field string, d Duration) {
		if d < Duration(time.Millisecond) {
			p.fail(sp+"."+field, "must be at least 1ms, got %s", d.D())
		}
	}
	if strings.TrimSpace(s.Broker.Image) == "" {
		p.fail(sp+".broker.image", "must name an image")
	}
	positive("broker.ready_timeout", s.Broker.ReadyTimeout)
	if s.Queue.Type != Quorum && s.Queue.Type != Classic {
		p.fail(sp+".queue.type", "%q is not a queue type (quorum, classic)", s.Queue.Type)
	}
	if s.Queue.SettleBeforeBurst < 0 {
		p.fail(sp+".queue.settle_before_burst", "must not be negative")
	}
	if s.Load.Messages <= 0 || s.Load.Messages > MaxMessages {
		p.fail(sp+".load.messages", "must be within 1–%d, got %d", MaxMessages, s.Load.Messages)
	}
	if len(s.Load.Modes) == 0 {
		p.fail(sp+".load.modes", "must list at least one mode (%s)", modeList())
	}
	seen := map[Mode]bool{}
	for j, m := range s.Load.Modes {
		mp := fmt.Sprintf("%s.load.modes[%d]", sp, j)
		if !slices.Contains(Modes, m) {
			p.fail(mp, "%q is not a mode (%s)", m, modeList())
		} else if seen[m] {
			p.fail(mp, "%q listed twice", m)
		}
		seen[m] = true
	}
	if s.Load.Window <= 0 || s.Load.Window > 65535 {
		p.fail(sp+".load.window", "must be within 1–65535, got %d", s.Load.Window)
	}
	positive("load.confirm_timeout", s.Load.ConfirmTimeout)
	positive("load.reconnect_timeout", s.Load.ReconnectTimeout)
	if s.Load.Republish != RepublishInDoubt && s.Load.Republish != RepublishNone {
		p.fail(sp+".load.republish", "%q is not a republish policy (in-doubt, none)", s.Load.Republish)
	}
	if s.Load.UnroutableEvery < 0 {
		p.fail(sp+".load.unroutable_every", "must not be negative, got %d", s.Load.UnroutableEvery)
	}
	positive("load.stall_timeout", s.Load.StallTimeout)
	positive("load.burst_timeout", s.Load.BurstTimeout)
	if p.has(sp + ".load.message_deadline") {
		positive("load.message_deadline", s.Load.MessageDeadline)
	}
	if v := s.Load.MessageSizeBytes; v < 0 || v > 1<<20 {
		p.fail(sp+".load.message_size_bytes", "must be within 0–1048576 (1 MiB), got %d", v)
	}
	if p.has(sp+".load.confirm_listener_buffer") && s.Load.ConfirmListenerBuffer < s.Load.Window {
		p.fail(sp+".load.confirm_listener_buffer", "%d is below the window %d: a full confirm listener stalls amqp091-go's reader (streadway/amqp#254) and, since v1.13, makes it drop confirms; leave it unset to size it for the window",
			s.Load.ConfirmListenerBuffer, s.Load.Window)
	}
	if s.Queue.Durable != nil && !*s.Queue.Durable && s.Queue.Type == Quorum {
		p.fail(sp+".queue.durable", "quorum queues are always durable; use type: classic for a non-durable queue")
	}
	if s.Load.Rate < 0 || math.IsNaN(s.Load.Rate) || math.IsInf(s.Load.Rate, 0) {
		p.fail(sp+".load.rate", "must be a finite number ≥ 0 (msg/s; 0: as fast as possible), got %g", s.Load.Rate)
	}
	if t := s.Queue.AlsoBindType; t != "" && t != Quorum && t != Classic {
		p.fail(sp+".queue.also_bind_type", "%q is not a queue type (quorum, classic)", t)
	}
	p.validateArguments(sp+".queue.arguments", s.Queue.Arguments)
	if s.Queue.DeadLetterQueue {
		for _, k := range []string{"x-dead-letter-exchange", "x-dead-letter-routing-key"} {
			if _, ok := s.Queue.Arguments[k]; ok {
				p.fail(sp+".queue.arguments."+k, "queue.dead_letter_queue sets %s itself; remove one of the two", k)
			}
		}
	}
	if v := s.Load.Publishers; v < 1 || v > 64 {
		p.fail(sp+".load.publishers", "must be within 1–64, got %d", v)
	}
	p.validateConsumers(sp, s)
	for j, f := range s.Faults {
		fp := fmt.Sprintf("%s.faults[%d]", sp, j)
		if !slices.Contains(Actions, f.Action) {
			p.fail(fp+".action", "%q is not a fault action (%s)", f.Action, actionList())
		}
		if f.Action == Kill && !slices.Contains(Signals, f.Signal) {
			p.fail(fp+".signal", "%q is not a signal (%s)", f.Signal, strings.Join(Signals, ", "))
		}
		if f.Action != Kill && p.has(fp+".signal") {
			p.fail(fp+".signal", "only kill takes a signal, not %s", f.Action)
		}
		if slices.Contains(Actions, f.Action) && !f.Action.Recovers() && f.Action != CrashConsumer && p.has(fp+".down") {
			p.fail(fp+".down", "%s has nothing to recover; down applies to kill, stop, pause, disconnect, memory-alarm and crash-consumer", f.Action)
		}
		if f.Action == CrashConsumer && s.Consumers.Count == 0 {
			p.fail(fp+".action", "crash-consumer needs live consumers: set consumers.count")
		}
		if f.Every != nil || p.has(fp+".count") {
			switch {
			case f.Every == nil:
				p.fail(fp+".count", "count repeats a step and needs every")
			case p.has(fp+".count") && (f.Count < 2 || f.Count > 100):
				p.fail(fp+".count", "must be within 2–100, got %d", f.Count)
			case !p.has(fp + ".count"):
				p.fail(fp+".every", "every needs count (how many times the step fires, at least 2)")
			case *f.Every < Duration(time.Millisecond):
				p.fail(fp+".every", "must be at least 1ms, got %s", f.Every.D())
			case f.Action == Start || f.Action == Unpause || f.Action == Reconnect || f.ManualRecovery:
				p.fail(fp+".every", "a recovery step or a step with manual_recovery cannot repeat")
			case f.Action == PublishToMissingExchange:
				p.fail(fp+".every", "publish-to-missing-exchange cannot repeat (one misrouted message per scenario)")
			}
		}
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
		triggers := 0
		if f.PublishedPercent != nil {
			triggers++
			if v := *f.PublishedPercent; v < 0 || v > 100 || math.IsNaN(v) {
				p.fail(fp+".published_percent", "must be within 0–100, got %g", v)
			}
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
			if *f.InFlight < 1 || *f.InFlight > s.Load.Window {
				p.fail(fp+".in_flight", "must be within 1–%d (load.window), got %d", s.Load.Window, *f.InFlight)
			}
			for _, m := range s.Load.Modes {
				if m == FireAndForget {
					p.fail(fp+".in_flight", "fire-and-forget has nothing in flight: an in_flight trigger needs confirm modes only")
					break
				}
				if m == ConfirmEach && *f.InFlight > 1 {
					p.fail(fp+".in_flight", "confirm-each never has more than 1 in flight, got %d", *f.InFlight)
					break
				}
			}
		}
		if triggers != 1 {
			p.fail(fp, "needs exactly one trigger (published_percent, published, in_flight or after), got %d", triggers)
		}
		if f.Down < 0 {
			p.fail(fp+".down", "must not be negative")
		}
	}
	p.validateTimeline(sp, s)
	for j, t := range s.Matrix.QueueTypes {
		if t != Quorum && t != Classic {
			p.fail(fmt.Sprintf("%s.matrix.queue_types[%d]", sp, j), "%q is not a queue type (quorum, classic)", t)
		} else if slices.Index(s.Matrix.QueueTypes, t) < j {
			p.fail(fmt.Sprintf("%s.matrix.queue_types[%d]", sp, j), "%q listed twice", t)
		}
	}
	for j, v := range s.Matrix.Persistent {
		if slices.Index(s.Matrix.Persistent, v) < j {
			p.fail(fmt.Sprintf("%s.matrix.persistent[%d]", sp, j), "%v listed twice", v)
		}
	}
	if s.Matrix.Repeat < 0 || s.Matrix.Repeat > 100 {
		p.fail(sp+".matrix.repeat", "must be within 1–100, got %d", s.Matrix.Repeat)
	}
	if s.Queue.Durable != nil && !*s.Queue.Durable && slices.Contains(s.Matrix.QueueTypes, Quorum) {
		p.fail(sp+".matrix.queue_types", "quorum queues are always durable, and queue.durable is false")
	}
	positive("drain.idle", s.Drain.Idle)
	positive("drain.lost_wait", s.Drain.LostWait)
	positive("drain.timeout", s.Drain.Timeout)
	if s.Drain.LostWait < s.Drain.Idle {
		p.fail(sp+".drain.lost_wait", "%s is shorter than drain.idle %s: the drain would give up on confirmed ids before it ever counts as idle", s.Drain.LostWait.D(), s.Drain.Idle.D())
	}
	for m, ex := range s.Expect.Modes {
		mp := sp + ".expect.modes." + string(m)
		if !slices.Contains(s.Load.Modes, m) {
			p.fail(mp, "%q is not one of this scenario's load.modes", m)
		}
		for _, v := range ex.fields() {
			if v.v != nil && *v.v < 0 {
				p.fail(mp+"."+v.name, "must not be negative, got %d", *v.v)
			}
		}
		// Expectations only live consumers or a dead-letter queue can meet.
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
	for _, e := range []struct {
		field string
		v     *int
	}{
		{"max_unconfirmed_missing", s.Expect.MaxUnconfirmedMissing},
		{"max_in_doubt", s.Expect.MaxInDoubt},
		{"max_duplicates", s.Expect.MaxDuplicates},
		{"max_nacked", s.Expect.MaxNacked},
		{"max_returned", s.Expect.MaxReturned},
	} {
		if e.v != nil && *e.v < 0 {
			p.fail(sp+".expect."+e.field, "must not be negative, got %d", *e.v)
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
	state, pending := "up", Action("")
	// Triggers are armed from the start of the burst, so the non-recovery
	// steps of one timeline use one kind of trigger (counts and percents,
	// or times), an in_flight trigger only on a single-step timeline, and a
	// step that leaves the broker down for a later one must itself be timed:
	// otherwise a step could fire long before it can run, or a recovery be
	// due before its fault.
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
	var lastAfter *time.Duration
	var lastEnd time.Duration
	lastCount, lastCountPath := -1, ""
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
		if f.PublishedPercent != nil && math.IsNaN(*f.PublishedPercent) {
			continue // reported as out of range
		}
		if n, ok := f.CountTrigger(s.Load.Messages); ok {
			if n < lastCount {
				p.fail(fp, "triggers at %d published, before %s (%d): steps run in order", n, lastCountPath, lastCount)
			}
			lastCount, lastCountPath = n, fmt.Sprintf("faults[%d]", j)
		}
		if f.After != nil {
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
	if state != "up" {
		p.fail(fmt.Sprintf("%s.faults[%d]", sp, len(s.Faults)-1), "the broker would stay %s at the end: add a %s step", state, pending)
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

// validateConsumers checks the consumers block.
func (p *parser) validateConsumers(sp string, s *Scenario) {
	c := s.Consumers
	cp := sp + ".consumers"
	if c.Count < 0 || c.Count > 64 {
		p.fail(cp+".count", "must be within 0–64, got %d", c.Count)
	}
	if c.Count == 0 {
		if p.bad[cp+".count"] {
			return // the count itself is wrong: that one error says it
		}
		for _, k := range []string{"prefetch", "processing_delay", "ack_every", "on_delivery", "max_retries", "retry_delay"} {
			if p.has(cp + "." + k) {
				p.fail(cp+"."+k, "has no effect without live consumers: set consumers.count")
			}
		}
		return
	}
	if c.Prefetch < 1 || c.Prefetch > 65535 {
		p.fail(cp+".prefetch", "must be within 1–65535, got %d", c.Prefetch)
	}
	if c.AckEvery < 1 || (c.Prefetch >= 1 && c.AckEvery > c.Prefetch) {
		p.fail(cp+".ack_every", "must be within 1–%d (the prefetch: a consumer never holds more unacknowledged deliveries), got %d", max(1, c.Prefetch), c.AckEvery)
	}
	if c.ProcessingDelay < 0 {
		p.fail(cp+".processing_delay", "must not be negative")
	}
	if !slices.Contains(ConsumerActions, c.OnDelivery) {
		names := make([]string, len(ConsumerActions))
		for i, a := range ConsumerActions {
			names[i] = string(a)
		}
		p.fail(cp+".on_delivery", "%q is not a consumer action (%s)", c.OnDelivery, strings.Join(names, ", "))
	}
	if c.OnDelivery == ConsumerRetry {
		if c.MaxRetries < 0 || c.MaxRetries > 100 {
			p.fail(cp+".max_retries", "must be within 0–100, got %d", c.MaxRetries)
		}
		if c.RetryDelay < Duration(time.Millisecond) {
			p.fail(cp+".retry_delay", "must be at least 1ms, got %s", c.RetryDelay.D())
		}
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
	if c.OnDelivery == ConsumerNackRequeue && s.Queue.Type == Classic {
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

// queueArguments are the x-arguments a scenario may set, with their YAML kind.
var queueArguments = map[string]string{
	"x-max-length":              "int",
	"x-max-length-bytes":        "int",
	"x-message-ttl":             "int",
	"x-delivery-limit":          "int",
	"x-overflow":                "overflow",
	"x-dead-letter-exchange":    "string",
	"x-dead-letter-routing-key": "string",
}

func (p *parser) validateArguments(path string, args map[string]any) {
	for k, v := range args {
		kp := path + "." + k
		kind, ok := queueArguments[k]
		if !ok {
			known := make([]string, 0, len(queueArguments))
			for name := range queueArguments {
				known = append(known, name)
			}
			slices.Sort(known)
			p.fail(kp, "unknown queue argument (known: %s)", strings.Join(known, ", "))
			continue
		}
		switch kind {
		case "int":
			if n, ok := v.(int); !ok || n < 0 {
				p.fail(kp, "must be a whole number ≥ 0, got %v", v)
			}
		case "string":
			if _, ok := v.(string); !ok {
				p.fail(kp, "must be a string, got %v", v)
			}
		case "overflow":
			if str, _ := v.(string); str != "drop-head" && str != "reject-publish" && str != "reject-publish-dlx" {
				p.fail(kp, "%v is not an overflow behaviour (drop-head, reject-publish, reject-publish-dlx)", v)
			}
		}
	}
}

func actionList() string {
	s := make([]string, len(Actions))
	for i, a := range Actions {
		s[i] = string(a)
	}
	return strings.Join(s, ", ")
}

func modeList() string {
	s := make([]string, len(Modes))
	for i, m := range Modes {
		s[i] = string(m)
	}
	return strings.Join(s, ", ")
}

// Find returns the scenario named name, or an error naming the file and the
// scenarios it has.
func (f *File) Find(file, name string) (*Scenario, error) {
	var names []string
	for i := range f.Scenarios {
		if f.Scenarios[i].Name == name {
			return &f.Scenarios[i], nil
		}
		names = append(names, f.Scenarios[i].Name)
	}
	return nil, fmt.Errorf("%s: no scenario named %q (have: %s)", file, name, strings.Join(names, ", "))
}
