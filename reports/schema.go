package reports

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/rmqtorture/rmqtorture/scenario"
)

// Schema is result.schema.json, the JSON Schema (draft 2020-12) of
// result.json, schema_version scenario.SchemaVersion: every field's type,
// whether it is required, and its unit. Objects allow no properties beyond
// those it names.
//
//go:embed result.schema.json
var Schema []byte

// SchemaURL is the schema's $id.
const SchemaURL = "https://github.com/rmqtorture/rmqtorture/reports/result.schema.json"

var compiled = sync.OnceValues(func() (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(Schema))
	if err != nil {
		return nil, fmt.Errorf("result.schema.json: %w", err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat() // started_at must be a date-time, not just a string
	if err := c.AddResource(SchemaURL, doc); err != nil {
		return nil, fmt.Errorf("result.schema.json: %w", err)
	}
	return c.Compile(SchemaURL)
})

// Problem is one way a document fails result.schema.json.
type Problem struct {
	// Pointer is the JSON pointer (RFC 6901) of the offending value, "" for
	// the document itself, e.g. "/modes/0/sent".
	Pointer string
	// Message says what is wrong there, e.g. "missing property 'sent'".
	Message string
}

func (p Problem) String() string {
	at := p.Pointer
	if at == "" {
		at = "/"
	}
	return at + ": " + p.Message
}

// InvalidResultError says why a document is not a valid result.json: either
// it is not JSON (Syntax, with Line and Column, 1-based) or it does not match
// the schema (Problems, sorted by pointer).
type InvalidResultError struct {
	Syntax       error
	Line, Column int
	// Strict is a problem JSON lets through and a result may not have, at
	// Line and Column: a key given twice in one object (encoding/json
	// would keep the last silently), a number no field can hold.
	Strict   string
	Problems []Problem
	// Version is the schema_version whose schema the document failed, and
	// SchemaFile that schema's file in the repository.
	Version    int
	SchemaFile string
}

func (e *InvalidResultError) Error() string {
	if e.Strict != "" {
		if e.Line > 0 {
			return fmt.Sprintf("line %d, column %d: %s", e.Line, e.Column, e.Strict)
		}
		return e.Strict
	}
	if e.Syntax != nil {
		if e.Line > 0 {
			return fmt.Sprintf("not JSON: line %d, column %d: %v", e.Line, e.Column, e.Syntax)
		}
		return fmt.Sprintf("not JSON: %v", e.Syntax)
	}
	parts := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		parts[i] = p.String()
	}
	return fmt.Sprintf("does not match the schema of schema_version %d (%s): ", e.Version, e.SchemaFile) + strings.Join(parts, "; ")
}

// Validate checks that data is one JSON document matching the schema of
// its own schema_version: result.schema.json for scenario.SchemaVersion,
// reports/schemas/ for the older versions Decode reads (a document without
// a readable schema_version is checked against result.schema.json, which
// says what is wrong). It returns nil, an *InvalidResultError, or an error
// from an embedded schema itself (an rmqtorture bug).
func Validate(data []byte) error {
	v, ok := documentVersion(data)
	if !ok || v < OldestSchemaVersion || v > scenario.SchemaVersion {
		v = scenario.SchemaVersion
	}
	return validateAs(data, v)
}

// validateAs checks data against the schema of layout version v.
func validateAs(data []byte, v int) error {
	sch, file, err := schemaOf(v)
	if err != nil {
		return err
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		ie := &InvalidResultError{Syntax: err}
		var se *json.SyntaxError
		switch {
		case errors.As(err, &se):
			// Offset counts the offending byte itself.
			ie.Line, ie.Column = position(data, se.Offset-1)
		case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
			ie.Line, ie.Column = position(data, int64(len(data)))
		}
		return ie
	}
	if ie := duplicateKey(data); ie != nil {
		return ie
	}
	err = sch.Validate(doc)
	var ve *jsonschema.ValidationError
	if err == nil {
		return nil
	} else if !errors.As(err, &ve) {
		return err
	}
	return &InvalidResultError{Problems: problems(ve), Version: v, SchemaFile: file}
}

var printer = message.NewPrinter(language.English)

// problems flattens a validation error to its leaves: the innermost
// failures, which name the offending value and what is wrong with it.
func problems(ve *jsonschema.ValidationError) []Problem {
	var out []Problem
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			var ptr strings.Builder
			for _, tok := range e.InstanceLocation {
				ptr.WriteByte('/')
				ptr.WriteString(strings.NewReplacer("~", "~0", "/", "~1").Replace(tok))
			}
			out = append(out, Problem{Pointer: ptr.String(), Message: e.ErrorKind.LocalizedString(printer)})
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	slices.SortFunc(out, func(a, b Problem) int {
		if c := strings.Compare(a.Pointer, b.Pointer); c != 0 {
			return c
		}
		return strings.Compare(a.Message, b.Message)
	})
	return slices.Compact(out)
}

// position turns a byte offset into a 1-based line and column.
func position(data []byte, off int64) (line, col int) {
	off = min(max(off, 0), int64(len(data)))
	before := data[:off]
	line = bytes.Count(before, []byte("\n")) + 1
	col = int(off) - (bytes.LastIndexByte(before, '\n') + 1) + 1
	return line, col
}

// Decode reads a result.json of any schema_version from
// OldestSchemaVersion to scenario.SchemaVersion: it validates data against
// the schema of its own version, upgrades an older layout to the current
// one (migrate: the fields the older file lacked are 0 and listed in
// Result.NotRecorded, and Result.MigratedFrom names the old version),
// checks the upgrade against result.schema.json, and decodes it. The Result
// always has SchemaVersion scenario.SchemaVersion. Errors are
// *InvalidResultError for bad input (not JSON, not matching its version's
// schema, or a schema_version this rmqtorture does not read).
func Decode(data []byte) (*scenario.Result, error) {
	if err := Validate(data); err != nil {
		return nil, err
	}
	// Validate passed, so the version is one this binary reads.
	if v, _ := documentVersion(data); v != scenario.SchemaVersion {
		up, err := migrate(data, v)
		if err != nil {
			return nil, fmt.Errorf("upgrade schema_version %d: %w", v, err)
		}
		if err := validateAs(up, scenario.SchemaVersion); err != nil {
			// The upgrade does not produce the current layout: an rmqtorture bug.
			return nil, fmt.Errorf("upgrade schema_version %d: %w", v, err)
		}
		data = up
	}
	var r scenario.Result
	if err := strictDecode(data, &r); err != nil {
		return nil, err
	}
	if err := checkSeries(&r); err != nil {
		return nil, err
	}
	return &r, nil
}

// duplicateKey finds the first key given twice in one object of data (one
// JSON document, already parsed once), as an *InvalidResultError naming it
// with its JSON pointer and position; nil when every key is unique.
// RFC 8259 §4 leaves duplicates to the reader, and encoding/json keeps the
// last: a result edited to say two things must not be judged by one.
func duplicateKey(data []byte) *InvalidResultError {
	type frame struct {
		ptr    string
		object bool
		keys   map[string]bool
		index  int    // the next element's index, in an array
		key    string // the last key read, in an object
		atKey  bool   // the next token is a key
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var stack []*frame
	child := func() string { // the pointer of the value about to be read
		if len(stack) == 0 {
			return ""
		}
		f := stack[len(stack)-1]
		if f.object {
			return f.ptr + "/" + strings.NewReplacer("~", "~0", "/", "~1").Replace(f.key)
		}
		return fmt.Sprintf("%s/%d", f.ptr, f.index)
	}
	done := func() { // a value ended: the enclosing container moves on
		if len(stack) > 0 {
			if f := stack[len(stack)-1]; f.object {
				f.atKey = true
			} else {
				f.index++
			}
		}
	}
	for {
		off := dec.InputOffset()
		tok, err := dec.Token()
		if err != nil {
			return nil // io.EOF; syntax errors were reported before
		}
		if len(stack) > 0 {
			if f := stack[len(stack)-1]; f.object && f.atKey {
				if k, ok := tok.(string); ok {
					if f.keys[k] {
						line, col := position(data, off+int64(bytes.IndexByte(data[off:], '"')))
						at := f.ptr
						if at == "" {
							at = "/"
						}
						return &InvalidResultError{Strict: fmt.Sprintf("%s: %q given twice in one object: keep one", at, k), Line: line, Column: col}
					}
					f.keys[k], f.key, f.atKey = true, k, false
					continue
				}
			}
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &frame{ptr: child(), object: true, keys: map[string]bool{}, atKey: true})
		case json.Delim('['):
			stack = append(stack, &frame{ptr: child()})
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
			done()
		default:
			done()
		}
	}
}

// checkSeries refuses a mode whose series arrays differ in length: each
// holds one entry per bucket (metrics.SeriesData), and the renderers index
// them all by the published array's buckets (a fuzzed result with a
// shorter broker array crashed the markdown report).
func checkSeries(r *scenario.Result) error {
	for i, m := range r.Modes {
		d := m.Series
		if d == nil {
			continue
		}
		n := len(d.Published)
		for _, a := range []struct {
			name string
			len  int
			opt  bool
		}{{"acked", len(d.Acked), false}, {"nacked", len(d.Nacked), false}, {"returned", len(d.Returned), false},
			{"delivered", len(d.Delivered), false}, {"in_flight", len(d.InFlight), false}, {"reconnects", len(d.Reconnects), false},
			{"broker", len(d.Broker), false}, {"republished", len(d.Republished), true}} {
			if a.len != n && !(a.opt && a.len == 0) {
				return &InvalidResultError{Strict: fmt.Sprintf("/modes/%d/series/%s: %d buckets, but published has %d: every series array has one entry per bucket", i, a.name, a.len, n)}
			}
		}
	}
	return nil
}

// strictDecode decodes data, a document its schema has passed, into v with
// no field v's type lacks. A number the schema's "integer" lets through
// and Go cannot hold ("seed": 1e400) is an *InvalidResultError naming the
// field, line and column; any other error means the schema and the Go
// types disagree, a bug the schema tests catch.
func strictDecode(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		line, col := position(data, te.Offset)
		return &InvalidResultError{Strict: fmt.Sprintf("%s: %s is out of range: the field holds a %s", te.Field, te.Value, te.Type), Line: line, Column: col}
	} else if err != nil {
		return fmt.Errorf("decode: %w", err)
	}
	return nil
}
