package reports

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rmqtorture/rmqtorture/scenario"
)

const realResult = "testdata/kill-mid-burst.result.json"

// TestSchemaAcceptsRealResult: a result.json written by a real
// `rmqtorture run kill-mid-burst --messages 4000` validates and decodes.
func TestSchemaAcceptsRealResult(t *testing.T) {
	data, err := os.ReadFile(realResult)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Decode(data)
	if err != nil {
		t.Fatalf("%s: %v", realResult, err)
	}
	if r.Scenario != "kill-mid-burst" || len(r.Modes) != 3 || r.Modes[0].Sent != 4000 {
		t.Fatalf("decoded %q with %d modes, first sent %d; want kill-mid-burst, 3 modes, 4000 sent", r.Scenario, len(r.Modes), r.Modes[0].Sent)
	}
}

// TestSchemaAcceptsWrittenResults: whatever the JSON writer produces from a
// Result validates, from the zero-ish result of a broker that never came up
// to one with every optional field set.
func TestSchemaAcceptsWrittenResults(t *testing.T) {
	for name, r := range map[string]*scenario.Result{
		"broker never ready": {SchemaVersion: scenario.SchemaVersion, Scenario: "x", QueueType: scenario.Quorum, StartedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
			Error: "broker never ready", Verdict: scenario.Verdict{Status: scenario.Inconclusive, Reasons: []string{"broker never ready"}}},
		"not run":  {SchemaVersion: scenario.SchemaVersion, Scenario: "x", QueueType: scenario.Classic, Modes: []scenario.ModeResult{{Mode: scenario.ConfirmEach, NotRun: true, Verdict: scenario.Verdict{Status: scenario.Inconclusive}}}, Verdict: scenario.Verdict{Status: scenario.Inconclusive}},
		"full":     fullResult(),
		"matrix":   matrixResult(),
		"deadline": deadlineResult(),
		"tx":       txResult(),
	} {
		t.Run(name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := JSON(&buf, r); err != nil {
				t.Fatal(err)
			}
			if err := Validate(buf.Bytes()); err != nil {
				t.Fatalf("%v\n%s", err, buf.String())
			}
		})
	}
}

// TestSchemaRejects: each broken document fails with exactly the problems
// named, at their JSON pointers.
func TestSchemaRejects(t *testing.T) {
	var buf bytes.Buffer
	if err := JSON(&buf, fullResult()); err != nil {
		t.Fatal(err)
	}
	valid := buf.Bytes()
	for _, tc := range []struct {
		name   string
		change func(doc map[string]any)
		want   []string
	}{
		{"missing required mode field", func(d map[string]any) { delete(mode0(d), "sent") }, []string{"/modes/0: missing property 'sent'"}},
		{"wrong type", func(d map[string]any) { mode0(d)["lost"] = "0" }, []string{"/modes/0/lost: got string, want integer"}},
		{"fraction in a count", func(d map[string]any) { mode0(d)["confirmed"] = 1.5 }, []string{"/modes/0/confirmed: got number, want integer"}},
		{"negative count", func(d map[string]any) { mode0(d)["nacked"] = -1 }, []string{"/modes/0/nacked: minimum: got -1, want 0"}},
		{"unknown field", func(d map[string]any) { mode0(d)["seed"] = 7 }, []string{"/modes/0: additional properties 'seed' not allowed"}},
		{"unknown mode", func(d map[string]any) { mode0(d)["mode"] = "confirm-all" }, []string{"/modes/0/mode: value must be one of 'fire-and-forget', 'confirm-each', 'confirm-window', 'transactional'"}},
		{"future schema version", func(d map[string]any) { d["schema_version"] = 4 }, []string{"/schema_version: value must be 3"}},
		{"series key of version 1 in version 3", func(d map[string]any) {
			s := seriesDoc()
			s["confirmed"] = s["acked"]
			delete(s, "acked")
			mode0(d)["series"] = s
		}, []string{"/modes/0/series: additional properties 'confirmed' not allowed", "/modes/0/series: missing property 'acked'"}},
		{"bad timestamp", func(d map[string]any) { d["started_at"] = "yesterday" }, []string{"/started_at: 'yesterday' is not valid date-time: less than 20 characters long"}},
		{"null downtime is fine, a string is not", func(d map[string]any) { mode0(d)["broker_downtime_ms"] = "5s" }, []string{"/modes/0/broker_downtime_ms: got string, want null or number"}},
		{"two problems, sorted", func(d map[string]any) {
			delete(d, "verdict")
			d["modes"].([]any)[0].(map[string]any)["ids"].(map[string]any)["lost"] = []any{map[string]any{"first": 1}}
		}, []string{"/: missing property 'verdict'", "/modes/0/ids/lost/0: missing property 'last'"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var doc map[string]any
			if err := json.Unmarshal(valid, &doc); err != nil {
				t.Fatal(err)
			}
			tc.change(doc)
			data, err := json.Marshal(doc)
			if err != nil {
				t.Fatal(err)
			}
			err = Validate(data)
			var ie *InvalidResultError
			if !errors.As(err, &ie) {
				t.Fatalf("got %v, want an *InvalidResultError", err)
			}
			var got []string
			for _, p := range ie.Problems {
				got = append(got, p.String())
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("problems:\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}

func mode0(doc map[string]any) map[string]any { return doc["modes"].([]any)[0].(map[string]any) }

// seriesDoc is chartMode's series as a JSON object.
func seriesDoc() map[string]any {
	b, err := json.Marshal(chartMode().Series)
	if err != nil {
		panic(err)
	}
	var s map[string]any
	if err := json.Unmarshal(b, &s); err != nil {
		panic(err)
	}
	return s
}

func TestValidateNotJSON(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want string
	}{
		{"{\n  \"scenario\": \"x\",\n  oops\n}", "not JSON: line 3, column 3: invalid character 'o' looking for beginning of object key string"},
		{"{\"scenario\": ", "not JSON: line 1, column 14: unexpected EOF"},
		{"{} {}", "not JSON: invalid character after top-level value"},
	} {
		err := Validate([]byte(tc.in))
		if err == nil || err.Error() != tc.want {
			t.Errorf("Validate(%q) = %v, want %s", tc.in, err, tc.want)
		}
	}
}

// TestSchemaCoversGoTypes walks scenario.Result with reflect and checks that
// every JSON field of every struct it reaches is a property of the schema at
// the same place, with the matching JSON type, required exactly when the
// field has no omitempty, and that the schema names nothing the Go types do
// not: a field added to the Go types without the schema (or the other way)
// fails here.
func TestSchemaCoversGoTypes(t *testing.T) {
	var root map[string]any
	if err := json.Unmarshal(Schema, &root); err != nil {
		t.Fatal(err)
	}
	w := &schemaWalker{t: t, root: root}
	w.object("", reflect.TypeFor[scenario.Result](), root)
	if w.objects < 9 {
		t.Fatalf("walked %d objects, want at least 9 (Result, ModeResult, Cell, Verdict, FaultRecord, IDSets, Range, LatencySummary, Event)", w.objects)
	}
}

type schemaWalker struct {
	t       *testing.T
	root    map[string]any
	objects int
}

// resolve follows a local $ref ("#/$defs/name").
func (w *schemaWalker) resolve(node map[string]any) map[string]any {
	for {
		ref, ok := node["$ref"].(string)
		if !ok {
			return node
		}
		name, ok := strings.CutPrefix(ref, "#/$defs/")
		if !ok {
			w.t.Fatalf("unsupported $ref %q", ref)
		}
		node = w.root["$defs"].(map[string]any)[name].(map[string]any)
	}
}

type jsonField struct {
	name      string
	typ       reflect.Type
	omitempty bool
}

// jsonFields lists a struct's JSON fields as encoding/json sees them,
// embedded structs flattened.
func jsonFields(t reflect.Type) []jsonField {
	var out []jsonField
	for f := range t.Fields() {
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			out = append(out, jsonFields(f.Type)...)
			continue
		}
		if name == "" {
			name = f.Name
		}
		out = append(out, jsonField{name, f.Type, slices.Contains(strings.Split(opts, ","), "omitempty")})
	}
	return out
}

// types returns the node's JSON types ("type", or derived from enum/const).
func types(node map[string]any) []string {
	switch v := node["type"].(type) {
	case string:
		return []string{v}
	case []any:
		var out []string
		for _, s := range v {
			out = append(out, s.(string))
		}
		return out
	}
	if c, ok := node["const"]; ok {
		if _, ok := c.(float64); ok {
			return []string{"integer"}
		}
		return []string{"string"}
	}
	if _, ok := node["enum"]; ok {
		return []string{"string"}
	}
	return nil
}

func (w *schemaWalker) value(path string, t reflect.Type, omitempty bool, node map[string]any) {
	node = w.resolve(node)
	got := types(node)
	// encoding/json writes null for a nil pointer or slice unless the field
	// is omitempty, which leaves it out instead.
	nullable := false
	if t.Kind() == reflect.Pointer {
		nullable = !omitempty
		t = t.Elem()
	}
	var want []string
	switch {
	case t == reflect.TypeFor[time.Time]():
		want = []string{"string"}
	case t.Kind() == reflect.String:
		want = []string{"string"}
	case t.Kind() == reflect.Bool:
		want = []string{"boolean"}
	case t.Kind() >= reflect.Int && t.Kind() <= reflect.Uint64:
		want = []string{"integer"}
	case t.Kind() == reflect.Float64 || t.Kind() == reflect.Float32:
		want = []string{"number"}
	case t.Kind() == reflect.Slice:
		want = []string{"array"}
	case t.Kind() == reflect.Struct:
		want = []string{"object"}
	case t.Kind() == reflect.Map && t.Key().Kind() == reflect.String:
		want = []string{"object"} // a histogram: its values are checked below
	default:
		w.t.Errorf("%s: unhandled Go type %s", path, t)
		return
	}
	if (nullable || (t.Kind() == reflect.Slice && !omitempty)) && slices.Contains(got, "null") {
		want = append(want, "null")
	}
	if nullable && !slices.Contains(got, "null") {
		w.t.Errorf("%s: Go type *%s can be null, schema types %v do not allow it", path, t, got)
	}
	if !slices.Equal(got, want) {
		w.t.Errorf("%s: schema types %v, want %v for Go type %s", path, got, want, t)
		return
	}
	switch {
	case t.Kind() == reflect.Slice:
		items, ok := node["items"].(map[string]any)
		if !ok {
			w.t.Errorf("%s: array without items", path)
			return
		}
		w.value(path+"[]", t.Elem(), false, items)
	case t.Kind() == reflect.Struct && t != reflect.TypeFor[time.Time]():
		w.object(path, t, node)
	case t.Kind() == reflect.Map:
		vals, ok := node["additionalProperties"].(map[string]any)
		if !ok {
			w.t.Errorf("%s: map without a schema for its values (additionalProperties)", path)
			return
		}
		w.value(path+"{}", t.Elem(), false, vals)
	}
}

func (w *schemaWalker) object(path string, t reflect.Type, node map[string]any) {
	w.objects++
	if node["additionalProperties"] != false {
		w.t.Errorf("%s (%s): additionalProperties must be false", path, t)
	}
	props, _ := node["properties"].(map[string]any)
	var required []string
	reqs, _ := node["required"].([]any)
	for _, r := range reqs {
		required = append(required, r.(string))
	}
	seen := map[string]bool{}
	for _, f := range jsonFields(t) {
		p := path + "." + f.name
		seen[f.name] = true
		sub, ok := props[f.name].(map[string]any)
		if !ok {
			w.t.Errorf("%s (%s): not in the schema", p, t)
			continue
		}
		if desc, _ := sub["description"].(string); desc == "" {
			if _, isRef := sub["$ref"]; !isRef {
				w.t.Errorf("%s: no description", p)
			}
		}
		if req := slices.Contains(required, f.name); req == f.omitempty {
			w.t.Errorf("%s: required %v in the schema, but omitempty is %v", p, req, f.omitempty)
		}
		w.value(p, f.typ, f.omitempty, sub)
	}
	for name := range props {
		if !seen[name] {
			w.t.Errorf("%s.%s: in the schema, not in Go type %s", path, name, t)
		}
	}
}

// TestSchemaEnums: the schema's enums are exactly the Go enums.
func TestSchemaEnums(t *testing.T) {
	var root struct {
		Defs map[string]struct {
			Enum       []string `json:"enum"`
			Properties map[string]struct {
				Enum []string `json:"enum"`
			} `json:"properties"`
		} `json:"$defs"`
	}
	if err := json.Unmarshal(Schema, &root); err != nil {
		t.Fatal(err)
	}
	strs := func(v any) []string {
		rv := reflect.ValueOf(v)
		out := make([]string, rv.Len())
		for i := range out {
			out[i] = rv.Index(i).String()
		}
		return out
	}
	for name, tc := range map[string]struct{ got, want []string }{
		"mode":      {root.Defs["mode"].Enum, strs(scenario.Modes)},
		"queueType": {root.Defs["queueType"].Enum, strs([]scenario.QueueType{scenario.Quorum, scenario.Classic, scenario.Stream})},
		"action":    {root.Defs["fault"].Properties["action"].Enum, strs(scenario.Actions)},
		"status":    {root.Defs["verdict"].Properties["status"].Enum, strs([]scenario.Status{scenario.Pass, scenario.Fail, scenario.Inconclusive})},
	} {
		if !slices.Equal(tc.got, tc.want) {
			t.Errorf("%s enum %q, want %q", name, tc.got, tc.want)
		}
	}
}
