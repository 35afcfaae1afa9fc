package scenario

import (
	"bytes"
	"errors"
	"fmt"
	"github.com/rmqtorture/rmqtorture/inputfile"
	"github.com/rmqtorture/rmqtorture/metrics"
	"github.com/rmqtorture/rmqtorture/redact"
	"io"
	"math"
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

// MaxFileBytes bounds a scenario file's size (1 MiB): the shipped
// scenarios.yaml, two dozen scenarios with their descriptions, is ~20 KB.
// A larger file is refused before it is parsed: yaml.v3 holds the whole
// node tree, ~40 times the file's size, in memory.
const MaxFileBytes = 1 << 20

// utf8BOM is the UTF-8 byte-order mark some editors write first; it is
// ignored.
var utf8BOM = []byte("\xef\xbb\xbf")

// LoadFile reads and validates a scenario file. On any problem it returns
// Errors listing all of them, each with file:line:column and field path. A
// file over MaxFileBytes is refused unread.
func LoadFile(path string) (*File, error) {
	st, err := inputfile.Check(path, "a scenario file", 0)
	var refused *inputfile.Error
	switch {
	case errors.As(err, &refused):
		// A named pipe would block the open for ever, a device never end.
		return nil, Errors{{File: path, Msg: refused.Reason}}
	case err != nil:
		return nil, fmt.Errorf("read scenario file: %w", err)
	case st.Size() > MaxFileBytes:
		return nil, Errors{tooBig(path, fmt.Sprintf("%d bytes", st.Size()))}
	}
	data, err := inputfile.Read(path, "a scenario file", MaxFileBytes)
	if errors.As(err, &refused) {
		return nil, Errors{{File: path, Msg: refused.Reason}}
	} else if err != nil {
		return nil, fmt.Errorf("read scenario file: %w", err)
	}
	return Parse(path, data)
}

// tooBig is the error for a file over MaxFileBytes; size says how big.
func tooBig(file, size string) FieldError {
	return FieldError{File: file, Msg: fmt.Sprintf("%s: a scenario file may be at most %d bytes (1 MiB); refusing to read it", size, MaxFileBytes)}
}

// Parse decodes data strictly (unknown keys are errors), applies defaults only
// where a key is absent, and validates every scenario. Data over
// MaxFileBytes is refused unread; a leading UTF-8 byte-order mark is ignored.
func Parse(name string, data []byte) (*File, error) {
	if len(data) > MaxFileBytes {
		return nil, Errors{tooBig(name, fmt.Sprintf("more than %d bytes", MaxFileBytes))}
	}
	data = bytes.TrimPrefix(data, utf8BOM)
	var root yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&root); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, Errors{{File: name, Msg: "empty file; it needs version: 1 and a list of scenarios"}}
		}
		return nil, Errors{yamlError(name, err)}
	}
	var extra yaml.Node
	switch err := dec.Decode(&extra); {
	case err == nil:
		return nil, Errors{{File: name, Line: extra.Line, Column: extra.Column, Msg: "more than one YAML document; put all scenarios in one"}}
	case !errors.Is(err, io.EOF):
		// What follows a document's end ("...") must be nothing, or
		// another document.
		e := yamlError(name, err)
		e.Msg = "after the end of the document: " + e.Msg
		return nil, Errors{e}
	}
	doc := &root
	if doc.Kind == yaml.DocumentNode && len(doc.Content) == 1 {
		doc = doc.Content[0]
	}
	cs, err := schemas()
	if err != nil {
		return nil, err // a broken embedded schema: an rmqtorture bug
	}
	p := newParser(name)
	js := p.toJSON(doc, "", "")
	if p.visits > maxNodes || p.duplicates > 0 || p.fatal > 0 {
		// A key given twice leaves yaml.v3's decode of its mapping
		// half done: what validation would say about it misleads.
		return nil, p.sorted()
	}
	p.checkSchema(cs.file, cs, js)
	p.checkNumbers()
	// Decoding goes on past type errors (yaml.v3 decodes what it can); the
	// schema reported those with their paths, so validation can still report
	// every other problem in the same pass.
	var f File
	var te *yaml.TypeError
	if err := doc.Decode(&f); err != nil && !errors.As(err, &te) {
		return nil, Errors{yamlError(name, err)}
	} else if te != nil && len(p.errs) == 0 {
		// A value the schema let through but Go cannot hold (a duration
		// beyond ±292 years): report it with its line.
		for _, msg := range te.Errors {
			p.errs = append(p.errs, yamlError(name, errors.New(msg)))
		}
	}
	p.defaults(&f)
	p.validate(&f)
	if len(p.errs) > 0 {
		return nil, p.sorted()
	}
	return &f, nil
}

// sorted returns the errors in file order, the first maxErrors of them and a
// count of the rest.
func (p *parser) sorted() Errors {
	slices.SortStableFunc(p.errs, func(a, b FieldError) int {
		if a.Line != b.Line {
			return a.Line - b.Line
		}
		return a.Column - b.Column
	})
	if len(p.errs) > maxErrors {
		more := len(p.errs) - maxErrors
		p.errs = append(p.errs[:maxErrors], FieldError{File: p.file, Msg: fmt.Sprintf("… and %d more problems", more)})
	}
	return p.errs
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

// maxDepth bounds how deep values may nest (a scenario's deepest,
// scenarios[0].faults[0].at, is 4): each level's field path is held.
const maxDepth = 32

// MaxMessages bounds load.messages (the ledger holds ~12 bytes per order).
const MaxMessages = metrics.MaxMessages

type parser struct {
	visits     int
	aliases    int                 // aliases followed while reading the file
	duplicates int                 // keys given twice
	fatal      int                 // problems that stop the parse: a value that holds itself, nesting too deep
	open       map[*yaml.Node]bool // the mappings and sequences being read, outermost first
	numbers    []number
	file       string
	nodes      map[string]*yaml.Node // field path → value node, for every key present
	keys       map[string]*yaml.Node // field path → key node
	paths      map[string]string     // JSON pointer → field path
	bad        map[string]bool       // paths already reported
	errs       Errors
}

func newParser(file string) *parser {
	return &parser{file: file, open: map[*yaml.Node]bool{}, nodes: map[string]*yaml.Node{}, keys: map[string]*yaml.Node{}, paths: map[string]string{}, bad: map[string]bool{}}
}

// errAt reports a problem at node n (nil: no position). Paths are relative
// to the scenario under Validate, so a leading dot is dropped.
func (p *parser) errAt(n *yaml.Node, path, format string, args ...any) {
	path = strings.TrimPrefix(path, ".")
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
	path = strings.TrimPrefix(path, ".")
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

func (p *parser) has(path string) bool { _, ok := p.nodes[strings.TrimPrefix(path, ".")]; return ok }

func (p *parser) fail(path, format string, args ...any) {
	p.errAt(p.at(path), path, format, args...)
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
		// Shown by list, run and the report: no terminal code from a file
		// reaches a terminal.
		s.Description = redact.Terminal(s.Description)
		d := defaulter{p: p, prefix: fmt.Sprintf("scenarios[%d].", i)}
		if s.IsGroup() || d.at("runs") {
			continue // a group has no settings of its own to default
		}
		d.broker(s)
		d.queue(s)
		d.load(s)
		d.faults(s)
		d.consumers(s)
		d.drain(s)
	}
}

// defaulter fills the defaults of one scenario, whose keys start with prefix
// ("scenarios[i].").
type defaulter struct {
	p      *parser
	prefix string
}

// at reports whether the scenario's file sets field (a dotted key path).
func (d defaulter) at(field string) bool { return d.p.has(d.prefix + field) }

// dur sets *v to def unless the file sets field.
func (d defaulter) dur(field string, v *Duration, def time.Duration) {
	if !d.at(field) {
		*v = Duration(def)
	}
}

func (d defaulter) broker(s *Scenario) {
	if !d.at("broker.image") {
		s.Broker.Image = DefaultImage
	}
	if !d.at("broker.nodes") {
		s.Broker.Nodes = 1
	}
	if !d.at("broker.ready_timeout") {
		s.Broker.ReadyTimeout = Duration(DefaultReadyTimeout(s.Broker.Nodes))
		s.Broker.readyTimeoutDefault = true
	}
}

// DefaultReadyTimeout is broker.ready_timeout when the file does not set
// it: 60s for a single broker, plus 30s for every node beyond the first.
// A cluster's nodes boot at once and join one at a time (classic_config
// peer discovery takes a lock per join); on a loaded 2-core host the fifth
// node of a 5-node cluster was measured still in peer discovery 46s after
// its container started, so one single-broker minute is too short for it.
func DefaultReadyTimeout(nodes int) time.Duration {
	return 60*time.Second + time.Duration(max(nodes-1, 0))*30*time.Second
}

func (d defaulter) queue(s *Scenario) {
	if !d.at("queue.type") {
		s.Queue.Type = Quorum
	}
	d.dur("queue.settle_before_burst", &s.Queue.SettleBeforeBurst, 2*time.Second)
	// Spelled out so validate shows it; nil still means the default.
	if !d.at("queue.durable") {
		t := true
		s.Queue.Durable = &t
	}
}

func (d defaulter) load(s *Scenario) {
	if !d.at("load.modes") {
		s.Load.Modes = slices.Clone(DefaultModes)
	}
	if !d.at("load.window") {
		s.Load.Window = 1000
	}
	d.dur("load.confirm_timeout", &s.Load.ConfirmTimeout, 30*time.Second)
	if !d.at("load.republish") {
		s.Load.Republish = RepublishInDoubt
	}
	d.dur("load.reconnect_timeout", &s.Load.ReconnectTimeout, 90*time.Second)
	d.dur("load.stall_timeout", &s.Load.StallTimeout, 10*time.Second)
	d.dur("load.heartbeat", &s.Load.Heartbeat, 10*time.Second)
	d.dur("load.burst_timeout", &s.Load.BurstTimeout, 15*time.Minute)
	if !d.at("load.publishers") {
		s.Load.Publishers = 1
	}
	if !d.at("load.channels_per_connection") {
		s.Load.ChannelsPerConnection = 1
	}
	if !d.at("load.tx_size") {
		s.Load.TxSize = 1

	}
	if !d.at("load.on_confirm_timeout") {
		s.Load.OnConfirmTimeout = OnTimeoutClose
	}
	// Spelled out so validate shows it; nil still means the default.
	if !d.at("load.persistent") {
		t := true
		s.Load.Persistent = &t
	}
	// Only on a cluster: a single broker's results and plans stay as they
	// were (no connect_to).
	if s.Broker.Nodes > 1 && !d.at("load.connect_to") {
		s.Load.ConnectTo = s.defaultConnectTo()
	}
}

// faults fills each fault's defaults, which depend on its action.
func (d defaulter) faults(s *Scenario) {
	for j := range s.Faults {
		f := &s.Faults[j]
		fp := fmt.Sprintf("faults[%d].", j)
		if f.Action.Recovers() && !f.ManualRecovery {
			d.dur(fp+"down", &f.Down, 5*time.Second)
		}
		if f.Action.Takes(ParamGrace) { // stop, restart, rolling-restart, quorum-loss
			d.dur(fp+"grace", &f.Grace, 10*time.Second)
		}
		if own := actionTable[f.Action].defaults; own != nil {
			own(d, fp, f)
		}
		if n := d.p.nodes[d.prefix+fp+"action"]; n != nil {
			f.Line = n.Line
		}
	}
}

// consumers fills the live consumers' defaults, only when there are any.
func (d defaulter) consumers(s *Scenario) {
	if s.Consumers.Count <= 0 {
		return
	}
	if !d.at("consumers.prefetch") {
		s.Consumers.Prefetch = 100
	}
	if !d.at("consumers.ack_every") {
		s.Consumers.AckEvery = 1
	}
	if !d.at("consumers.on_delivery") {
		s.Consumers.OnDelivery = ConsumerAck
	}
	if s.Consumers.OnDelivery == ConsumerRetry {
		if !d.at("consumers.max_retries") {
			s.Consumers.MaxRetries = 3
		}
		if s.Consumers.RetryCountFrom == "" {
			s.Consumers.RetryCountFrom = RetryFromHeader
		}
		d.dur("consumers.retry_delay", &s.Consumers.RetryDelay, 200*time.Millisecond)
	}
}

func (d defaulter) drain(s *Scenario) {
	d.dur("drain.idle", &s.Drain.Idle, 2*time.Second)
	d.dur("drain.lost_wait", &s.Drain.LostWait, 15*time.Second)
	d.dur("drain.timeout", &s.Drain.Timeout, 120*time.Second)
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

// number is a number written other than in plain decimal, and what YAML
// reads it as.
type number struct {
	n    *yaml.Node
	path string
	msg  string
}

var (
	decimalInt   = regexp.MustCompile(`^[-+]?(0|[1-9][0-9]*)$`)
	decimalFloat = regexp.MustCompile(`^[-+]?([0-9]+\.[0-9]*|\.[0-9]+)$`)
)

// noteNumber records a scalar YAML reads as a number but that is not
// written in plain decimal: yaml.v3 reads 0x10 as 16, 0o17 and 017 as 15,
// 0b11 as 3, 1_000 as 1000 and 1e3 as 1000 (YAML 1.1 and 1.2 forms), which
// in a count is more likely a slip than meant. checkNumbers reports them.
func (p *parser) noteNumber(n *yaml.Node, path string) {
	if n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle|yaml.LiteralStyle|yaml.FoldedStyle) != 0 {
		return
	}
	var v any
	switch n.ShortTag() {
	case "!!int":
		if decimalInt.MatchString(n.Value) || n.Decode(&v) != nil {
			return
		}
	case "!!float":
		if decimalFloat.MatchString(n.Value) || n.Decode(&v) != nil {
			return
		}
		f, ok := v.(float64)
		if !ok || math.IsNaN(f) || math.IsInf(f, 0) {
			return // .nan and .inf: the schema says what is wrong with them
		}
		v = strconv.FormatFloat(f, 'f', -1, 64)
	default:
		return
	}
	p.numbers = append(p.numbers, number{n: n, path: path,
		msg: fmt.Sprintf("%q is not written in decimal (YAML reads it as %v): write %v", n.Value, v, v)})
}

// checkNumbers reports the numbers noteNumber recorded, on fields the
// schema found no other fault with (a text field given 0x10 is reported
// as wanting text).
func (p *parser) checkNumbers() {
	for _, x := range p.numbers {
		p.errAt(x.n, x.path, "%s", x.msg)
	}
}
