package reports

import (
	"bytes"
	"errors"
	"fmt"
	"github.com/rmqtorture/rmqtorture/redact"
	"io"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/rmqtorture/rmqtorture/scenario"
)

// Accepted differences (`rmqtorture compare --accept FILE`, issue 13): a
// YAML file listing the differences between a baseline and a candidate
// that the user expects, each with the reason:
//
//	accept:
//	  - scenario: delivery-limit
//	    mode: confirm-window          # optional: every mode
//	    field: dead_lettered
//	    because: RabbitMQ 4.3 no longer counts nack-requeue toward x-delivery-limit
//
// An accepted difference is shown as accepted with its reason and fails
// nothing.

// Accept is one accepted difference.
type Accept struct {
	Scenario string
	Mode     scenario.Mode // "": every mode of the scenario
	// Field is one of AcceptFields, as result.json names it.
	Field   string
	Because string
	// File and Line locate the entry (its first line) in the accept file.
	File string
	Line int
}

// Where is "FILE:LINE", the entry's place in its file.
func (a Accept) Where() string { return fmt.Sprintf("%s:%d", a.File, a.Line) }

// matches reports whether a accepts field of mode in scen.
func (a Accept) matches(scen string, mode scenario.Mode, field string) bool {
	return a.Scenario == scen && (a.Mode == "" || a.Mode == mode) && a.Field == field
}

// AcceptFields are the fields an accept entry (and a version scope's
// stated field) may name: what a cross-version compare shows per mode, as
// result.json names it. "present" is a scenario or mode of the baseline
// missing from the candidate.
var AcceptFields = []string{
	"present", "verdict", "lost", "unconfirmed_missing", "in_doubt", "nacked", "returned",
	"duplicates", "dead_lettered", "deliveries_per_message", "dead_letter_reason", "x_death_count_at_park",
	"pre_fault_publish_rate_msgs_per_s", "confirm_rate_msgs_per_s", "confirm_latency_ms.p99", "client_recovery_ms",
}

var acceptKeys = []string{"scenario", "mode", "field", "because"}

// ParseAccept reads an accept file's content (file names it in errors).
// It is strict: an unknown key, a missing scenario, field or because, a
// mode or field that does not exist, a value of the wrong type or the same
// entry twice are each reported as scenario.FieldError with file:line and
// the field path (accept[2].field), all of them at once (scenario.Errors).
func ParseAccept(file string, data []byte) ([]Accept, error) {
	doc, err := acceptDocument(file, data)
	if err != nil {
		return nil, err
	}
	p := &acceptParser{file: file}
	list := p.list(doc)
	if list == nil {
		return nil, p.errs
	}
	var out []Accept
	for i, e := range list.Content {
		if a, ok := p.entry(i, e, out); ok {
			out = append(out, a)
		}
	}
	if len(p.errs) > 0 {
		slices.SortStableFunc(p.errs, func(x, y scenario.FieldError) int { return x.Line - y.Line })
		return nil, p.errs
	}
	return out, nil
}

// acceptDocument decodes an accept file's one YAML document: its top
// node (the mapping under the document node, when there is one). Errors
// are a FieldError naming file (and line).
func acceptDocument(file string, data []byte) (*yaml.Node, error) {
	if len(data) > scenario.MaxFileBytes {
		return nil, scenario.FieldError{File: file, Msg: fmt.Sprintf("%d bytes, more than the %d an accept file may have", len(data), scenario.MaxFileBytes)}
	}
	var root yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&root); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, scenario.FieldError{File: file, Msg: "empty: want \"accept:\" and a list of entries {scenario, mode, field, because}"}
		}
		return nil, acceptYAMLError(file, err)
	}
	var extra yaml.Node
	switch err := dec.Decode(&extra); {
	case err == nil:
		return nil, scenario.FieldError{File: file, Line: extra.Line, Msg: "a second YAML document: an accept file holds one"}
	case !errors.Is(err, io.EOF):
		// What follows a document's end ("...") must be nothing, or
		// another document (refused above).
		e := acceptYAMLError(file, err)
		e.Msg = "after the end of the document: " + e.Msg
		return nil, e
	}
	doc := &root
	if doc.Kind == yaml.DocumentNode && len(doc.Content) == 1 {
		doc = doc.Content[0]
	}
	return doc, nil
}

// acceptParser gathers an accept file's errors, each with file:line and
// the field path.
type acceptParser struct {
	file string
	errs scenario.Errors
}

func (p *acceptParser) bad(n *yaml.Node, path, format string, a ...any) {
	p.errs = append(p.errs, scenario.FieldError{File: p.file, Line: n.Line, Path: path, Msg: fmt.Sprintf(format, a...)})
}

// list returns the accept list of doc, or nil (with the errors recorded)
// when doc is not a mapping holding only accept: and a list.
func (p *acceptParser) list(doc *yaml.Node) *yaml.Node {
	if doc.Kind != yaml.MappingNode {
		p.bad(doc, "", "want a mapping with \"accept:\", got %s", nodeKind(doc))
		return nil
	}
	var list *yaml.Node
	for i := 0; i+1 < len(doc.Content); i += 2 {
		k, v := doc.Content[i], doc.Content[i+1]
		if k.Value != "accept" {
			p.bad(k, k.Value, "unknown field: an accept file holds only accept%s", scenario.DidYouMean(k.Value, []string{"accept"}))
			continue
		}
		list = v
	}
	if list == nil {
		if len(p.errs) == 0 {
			p.bad(doc, "accept", "missing: want a list of entries {scenario, mode, field, because}")
		}
		return nil
	}
	if list.Kind != yaml.SequenceNode {
		p.bad(list, "accept", "want a list of entries {scenario, mode, field, because}, got %s", nodeKind(list))
		return nil
	}
	return list
}

// entry reads accept[i], e, recording what is wrong with it (earlier are
// the entries before it, for the duplicate check); ok is false only when e
// is not an entry at all.
func (p *acceptParser) entry(i int, e *yaml.Node, earlier []Accept) (a Accept, ok bool) {
	path := fmt.Sprintf("accept[%d]", i)
	if e.Kind != yaml.MappingNode {
		p.bad(e, path, "want an entry {scenario, mode, field, because}, got %s", nodeKind(e))
		return a, false
	}
	a = Accept{File: p.file, Line: e.Line}
	seen := map[string]*yaml.Node{}
	for j := 0; j+1 < len(e.Content); j += 2 {
		k, v := e.Content[j], e.Content[j+1]
		fp := path + "." + k.Value
		if !slices.Contains(acceptKeys, k.Value) {
			p.bad(k, fp, "unknown field (%s)%s", strings.Join(acceptKeys, ", "), scenario.DidYouMean(k.Value, acceptKeys))
			continue
		}
		if seen[k.Value] != nil {
			p.bad(k, fp, "given twice (first on line %d)", seen[k.Value].Line)
			continue
		}
		seen[k.Value] = k
		if v.Kind != yaml.ScalarNode || v.Tag == "!!null" {
			p.bad(v, fp, "want a string, got %s", nodeKind(v))
			continue
		}
		p.value(&a, k.Value, fp, v)
	}
	for _, req := range []struct{ key, why string }{
		{"scenario", "name the scenario whose difference is accepted"},
		{"field", "name the field that differs (" + strings.Join(AcceptFields, ", ") + ")"},
		{"because", "say why the difference is expected: release notes, an issue or a pull request"},
	} {
		if k := seen[req.key]; k == nil {
			p.bad(e, path+"."+req.key, "missing: %s", req.why)
		} else if v := valueOf(e, req.key); v != nil && v.Kind == yaml.ScalarNode && v.Tag != "!!null" && strings.TrimSpace(v.Value) == "" {
			p.bad(v, path+"."+req.key, "empty: %s", req.why)
		}
	}
	for j, prev := range earlier {
		if prev.Scenario == a.Scenario && prev.Mode == a.Mode && prev.Field == a.Field && a.Scenario != "" && a.Field != "" {
			p.bad(e, path, "the same scenario, mode and field as accept[%d] (line %d)", j, prev.Line)
			break
		}
	}
	return a, true
}

// value sets key of a from its scalar node v (at path fp), checking a mode
// and a field against those that exist.
func (p *acceptParser) value(a *Accept, key, fp string, v *yaml.Node) {
	s := strings.TrimSpace(v.Value)
	switch key {
	case "scenario":
		a.Scenario = redact.Terminal(s) // printed by compare; a name never holds one
	case "mode":
		a.Mode = scenario.Mode(s)
		if !slices.Contains(scenario.Modes, a.Mode) {
			names := make([]string, len(scenario.Modes))
			for m, mode := range scenario.Modes {
				names[m] = string(mode)
			}
			p.bad(v, fp, "%q is not a mode (%s)%s", s, strings.Join(names, ", "), scenario.DidYouMean(s, names))
		}
	case "field":
		a.Field = s
		if !slices.Contains(AcceptFields, s) {
			p.bad(v, fp, "%q is not a field compare shows (%s)%s", s, strings.Join(AcceptFields, ", "), scenario.DidYouMean(s, AcceptFields))
		}
	case "because":
		a.Because = redact.Terminal(s) // printed by compare
	}
}

func valueOf(m *yaml.Node, key string) *yaml.Node {
	for j := 0; j+1 < len(m.Content); j += 2 {
		if m.Content[j].Value == key {
			return m.Content[j+1]
		}
	}
	return nil
}

func nodeKind(n *yaml.Node) string {
	switch {
	case n.Kind == yaml.MappingNode:
		return "a mapping"
	case n.Kind == yaml.SequenceNode:
		return "a list"
	case n.Kind == yaml.AliasNode:
		return "an alias"
	case n.Tag == "!!null":
		return "nothing"
	}
	return fmt.Sprintf("%q", n.Value)
}

// acceptYAMLError turns a yaml.v3 syntax error ("yaml: line 3: ...") into
// a FieldError naming file:line.
func acceptYAMLError(file string, err error) scenario.FieldError {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	var line int
	if _, scanErr := fmt.Sscanf(msg, "line %d:", &line); scanErr == nil {
		_, msg, _ = strings.Cut(msg, ": ")
	}
	return scenario.FieldError{File: file, Line: line, Msg: msg}
}
