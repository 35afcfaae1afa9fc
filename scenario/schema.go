package scenario

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"go.yaml.in/yaml/v3"
)

// Schema is scenarios.schema.json, the JSON Schema (draft 2020-12) of a
// scenario file: every key, its type, enum or duration pattern, and its range.
// Rules across fields (a trigger within load.messages, a timeline that ends
// with the broker up…) are checked in Go. Editors with a YAML language server
// complete and check scenarios.yaml from it.
//
//go:embed scenarios.schema.json
var Schema []byte

// SchemaURL is the schema's $id.
const SchemaURL = "https://github.com/rmqtorture/rmqtorture/scenario/scenarios.schema.json"

type compiledSchema struct {
	file, scenario *jsonschema.Schema
	raw            any                 // the schema document, to read titles and bounds
	keys           map[string][]string // JSON pointer of an object in the schema → its keys, in file order
}

var schemas = sync.OnceValues(func() (*compiledSchema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(Schema))
	if err != nil {
		return nil, fmt.Errorf("scenarios.schema.json: %w", err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource(SchemaURL, doc); err != nil {
		return nil, fmt.Errorf("scenarios.schema.json: %w", err)
	}
	cs := &compiledSchema{raw: doc, keys: map[string][]string{}}
	if cs.file, err = c.Compile(SchemaURL); err != nil {
		return nil, err
	}
	if cs.scenario, err = c.Compile(SchemaURL + "#/$defs/scenario"); err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(Schema))
	if err := keyOrder(dec, "", cs.keys); err != nil {
		return nil, fmt.Errorf("scenarios.schema.json: %w", err)
	}
	return cs, nil
})

// keyOrder records the key order of every object in a JSON document (maps
// forget it), so "known:" lists keys as the schema writes them.
func keyOrder(dec *json.Decoder, ptr string, out map[string][]string) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	switch tok {
	case json.Delim('{'):
		var keys []string
		for dec.More() {
			k, err := dec.Token()
			if err != nil {
				return err
			}
			key, _ := k.(string)
			keys = append(keys, key)
			if err := keyOrder(dec, ptr+"/"+key, out); err != nil {
				return err
			}
		}
		out[ptr] = keys
		_, err = dec.Token()
	case json.Delim('['):
		for i := 0; dec.More(); i++ {
			if err := keyOrder(dec, fmt.Sprintf("%s/%d", ptr, i), out); err != nil {
				return err
			}
		}
		_, err = dec.Token()
	}
	return err
}

// toJSON converts the YAML tree under n into JSON values for the schema,
// recording every value node (and key node) by field path and by JSON
// pointer, so schema errors map back to line:column. Aliases are followed
// up to maxNodes values in all.
func (p *parser) toJSON(n *yaml.Node, path, ptr string) any {
	if p.visits++; p.visits > maxNodes {
		if p.visits == maxNodes+1 && p.aliases > 0 {
			p.errAt(n, path, "aliases expand the file to more than %d values; refusing to read further", maxNodes)
		} else if p.visits == maxNodes+1 {
			p.errAt(n, path, "the file holds more than %d values (a scenario holds a few dozen); refusing to read further", maxNodes)
		}
		return nil
	}
	p.nodes[path] = n
	p.paths[ptr] = path
	if n.Kind == yaml.AliasNode {
		p.aliases++
		if p.open[n.Alias] {
			// &m [*m]: expanding it would never end.
			p.fatal++
			p.errAt(n, path, "alias *%s stands for the value that holds it (&%s, line %d): a value cannot contain itself", n.Value, n.Alias.Anchor, n.Alias.Line)
			return nil
		}
		n = n.Alias
	}
	if n.Kind == yaml.MappingNode || n.Kind == yaml.SequenceNode {
		if len(p.open) >= maxDepth {
			p.fatal++
			p.errAt(n, path, "values nested more than %d deep (a scenario nests 4); refusing to read further", maxDepth)
			return nil
		}
		p.open[n] = true
		defer delete(p.open, n)
	}
	switch n.Kind {
	case yaml.MappingNode:
		m := map[string]any{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			kp := join(path, k.Value)
			if _, dup := m[k.Value]; dup {
				p.duplicates++
				first := p.keys[kp]
				p.errAt(k, kp, "%q given twice, at lines %d and %d: keep one", k.Value, first.Line, k.Line)
				continue
			}
			p.keys[kp] = k
			m[k.Value] = p.toJSON(v, kp, ptr+"/"+escapePointer(k.Value))
		}
		return m
	case yaml.SequenceNode:
		out := make([]any, len(n.Content))
		for i, c := range n.Content {
			out[i] = p.toJSON(c, fmt.Sprintf("%s[%d]", path, i), fmt.Sprintf("%s/%d", ptr, i))
		}
		return out
	case yaml.ScalarNode:
		p.noteNumber(n, path)
		return scalarJSON(n)
	}
	return nil
}

// scalarJSON resolves a YAML scalar as yaml.v3 does. What JSON cannot hold
// (NaN, infinities, timestamps, binary) stays the text written, so the
// schema reports it as text where a number is wanted.
func scalarJSON(n *yaml.Node) any {
	if n.Tag == "!!null" {
		return nil
	}
	var v any
	if err := n.Decode(&v); err != nil {
		return n.Value
	}
	switch x := v.(type) {
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return n.Value
		}
		return x
	case int, int64, uint64, bool, string:
		return x
	}
	return n.Value
}

func escapePointer(s string) string { return strings.NewReplacer("~", "~0", "/", "~1").Replace(s) }

// checkSchema validates doc against sch and reports each problem at the
// YAML node it concerns, as "path: message".
func (p *parser) checkSchema(sch *jsonschema.Schema, cs *compiledSchema, doc any) {
	err := sch.Validate(doc)
	var ve *jsonschema.ValidationError
	if err == nil {
		return
	} else if !errors.As(err, &ve) {
		p.errAt(nil, "", "%v", err)
		return
	}
	var leaves []*jsonschema.ValidationError
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			leaves = append(leaves, e)
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	// A wrong type says it all: report it before the enum or pattern the
	// same value also fails (one problem per field).
	slices.SortStableFunc(leaves, func(a, b *jsonschema.ValidationError) int {
		_, ta := a.ErrorKind.(*kind.Type)
		_, tb := b.ErrorKind.(*kind.Type)
		switch {
		case ta && !tb:
			return -1
		case tb && !ta:
			return 1
		}
		return 0
	})
	for _, e := range leaves {
		p.schemaError(cs, e)
	}
}

func (p *parser) schemaError(cs *compiledSchema, e *jsonschema.ValidationError) {
	ptr := ""
	for _, tok := range e.InstanceLocation {
		ptr += "/" + escapePointer(tok)
	}
	path := p.paths[ptr]
	n := p.nodes[path]
	_, frag, _ := strings.Cut(e.SchemaURL, "#")
	sub, _ := lookup(cs.raw, frag).(map[string]any)
	title, _ := sub["title"].(string)
	hint := ""
	if h, ok := sub["x-hint"].(string); ok {
		hint = " (" + h + ")"
	}
	switch k := e.ErrorKind.(type) {
	case *kind.AdditionalProperties:
		what := "field"
		if title != "" {
			what = title
		}
		known := strings.Join(cs.keys[frag+"/properties"], ", ")
		for _, name := range k.Properties {
			kp := join(path, name)
			p.errAt(p.keys[kp], kp, "unknown %s (known: %s)", what, known)
		}
	case *kind.Type:
		want := typeWords[k.Want[0]]
		if k.Want[0] == "null" && len(k.Want) > 1 {
			want = typeWords[k.Want[1]] // a list may be left empty
		}
		if title != "" {
			want = article(title)
		}
		p.errAt(n, path, "must be %s%s, got %s", want, hint, kindName(n))
	case *kind.Enum:
		names := make([]string, len(k.Want))
		for i, w := range k.Want {
			names[i] = fmt.Sprint(w)
		}
		hint := ""
		if n.Kind == yaml.ScalarNode {
			hint = DidYouMean(n.Value, names)
		}
		p.errAt(n, path, "%s is not %s (%s)%s", kindName(n), article(title), strings.Join(names, ", "), hint)
	case *kind.Pattern:
		p.errAt(n, path, "%q is not %s%s", k.Got, article(title), hint)
	case *kind.Minimum, *kind.Maximum:
		p.errAt(n, path, "%s%s, got %s", rangeWords(sub), hint, n.Value)
	case *kind.MaxLength:
		p.errAt(n, path, "must be at most %s characters, got %s", printer.Sprint(k.Want), printer.Sprint(k.Got))
	default:
		p.errAt(n, path, "%s", e.ErrorKind.LocalizedString(printer))
	}
}

var typeWords = map[string]string{
	"integer": "a whole number", "number": "a number", "boolean": "true or false", "string": "text",
	"object": "a mapping", "array": "a list", "null": "empty",
}

// rangeWords describes a schema's minimum and maximum.
func rangeWords(sub map[string]any) string {
	lo, hasLo := sub["minimum"]
	hi, hasHi := sub["maximum"]
	switch {
	case hasLo && hasHi:
		return fmt.Sprintf("must be within %v–%v", lo, hi)
	case hasLo && fmt.Sprint(lo) == "0":
		return "must not be negative"
	case hasLo:
		return fmt.Sprintf("must be at least %v", lo)
	}
	return fmt.Sprintf("must be at most %v", hi)
}

func article(noun string) string {
	if noun == "" {
		return "one of"
	}
	if strings.ContainsRune("aeiou", rune(noun[0])) {
		return "an " + noun
	}
	return "a " + noun
}

// lookup follows a JSON pointer fragment ("/$defs/load/properties/window").
func lookup(doc any, frag string) any {
	if frag == "" {
		return doc
	}
	for _, tok := range strings.Split(strings.TrimPrefix(frag, "/"), "/") {
		tok = strings.NewReplacer("~1", "/", "~0", "~").Replace(tok)
		m, ok := doc.(map[string]any)
		if !ok {
			return nil
		}
		doc = m[tok]
	}
	return doc
}
