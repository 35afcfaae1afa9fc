package scenario

import (
	"encoding/json"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// TestShippedScenariosMatchSchema: every scenario in scenarios.yaml passes
// the schema alone, and the file names the schema for editors.
func TestShippedScenariosMatchSchema(t *testing.T) {
	data, err := os.ReadFile("../scenarios.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if first, _, _ := strings.Cut(string(data), "\n"); first != "# yaml-language-server: $schema=scenario/scenarios.schema.json" {
		t.Fatalf("first line %q does not name the schema", first)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	cs, err := schemas()
	if err != nil {
		t.Fatal(err)
	}
	p := newParser("scenarios.yaml")
	js := p.toJSON(doc.Content[0], "", "")
	p.checkSchema(cs.file, cs, js)
	if len(p.errs) > 0 {
		t.Fatal(p.errs)
	}
	if n := len(js.(map[string]any)["scenarios"].([]any)); n < 10 {
		t.Fatalf("checked %d scenarios, want the whole file", n)
	}
}

// TestSchemaCoversGoTypes walks File's yaml tags with reflect: every struct
// it reaches is a schema object with exactly those properties, in field
// order, and no others; so the schema and the Go types cannot drift.
func TestSchemaCoversGoTypes(t *testing.T) {
	var root map[string]any
	if err := json.Unmarshal(Schema, &root); err != nil {
		t.Fatal(err)
	}
	cs, err := schemas()
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	var walk func(path string, typ reflect.Type, node map[string]any, ptr string)
	walk = func(path string, typ reflect.Type, node map[string]any, ptr string) {
		for ref, ok := node["$ref"].(string); ok; ref, ok = node["$ref"].(string) {
			ptr = strings.TrimPrefix(ref, "#")
			node = lookup(root, ptr).(map[string]any)
		}
		for typ.Kind() == reflect.Pointer {
			typ = typ.Elem()
		}
		switch typ.Kind() {
		case reflect.Slice:
			walk(path+"[]", typ.Elem(), node["items"].(map[string]any), ptr+"/items")
		case reflect.Map:
			if typ == reflect.TypeFor[map[Mode]ModeExpectations]() {
				for _, m := range Modes {
					walk(path+"."+string(m), typ.Elem(), lookup(node, "/properties/"+string(m)).(map[string]any), ptr+"/properties/"+string(m))
				}
			}
		case reflect.Struct:
			seen++
			if node["additionalProperties"] != false {
				t.Errorf("%s: schema allows unknown keys", path)
			}
			var tags []string
			for f := range typ.Fields() {
				tag, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
				if tag == "-" {
					continue // set by the program, never in a file (Expect.Scope)
				}
				tags = append(tags, tag)
				sub, ok := lookup(node, "/properties/"+tag).(map[string]any)
				if !ok {
					t.Errorf("%s.%s: not in the schema", path, tag)
					continue
				}
				walk(path+"."+tag, f.Type, sub, ptr+"/properties/"+tag)
			}
			if got := cs.keys[ptr+"/properties"]; !slices.Equal(got, tags) {
				t.Errorf("%s: schema properties %v, Go fields %v", path, got, tags)
			}
		}
	}
	walk("file", reflect.TypeFor[File](), root, "")
	if seen < 11 {
		t.Fatalf("walked %d structs, want at least 11", seen)
	}
}

// TestSchemaEnumsMatchGo: the schema's enums list exactly the Go values.
func TestSchemaEnumsMatchGo(t *testing.T) {
	var root map[string]any
	if err := json.Unmarshal(Schema, &root); err != nil {
		t.Fatal(err)
	}
	enum := func(def string) []string {
		var out []string
		for _, v := range lookup(root, "/$defs/"+def+"/enum").([]any) {
			out = append(out, v.(string))
		}
		return out
	}
	str := func(vs any) []string {
		v := reflect.ValueOf(vs)
		out := make([]string, v.Len())
		for i := range out {
			out[i] = v.Index(i).String()
		}
		return out
	}
	for def, want := range map[string][]string{
		"mode": str(Modes), "action": str(Actions), "signal": Signals, "consumerAction": str(ConsumerActions),
		"queueType": {string(Quorum), string(Classic), string(Stream)}, "matrixQueueType": {string(Quorum), string(Classic)}, "republish": {string(RepublishInDoubt), string(RepublishNackedAndInDoubt), string(RepublishNone)},
		"confirmTimeoutAction": str(ConfirmTimeoutActions),
		"faultTarget":          str(TargetKinds), "partitionShape": str(PartitionShapes), "connectTo": str(ConnectTos),
	} {
		if got := enum(def); !slices.Equal(got, want) {
			t.Errorf("$defs/%s enum %v, Go %v", def, got, want)
		}
	}
}

// TestEveryDurationHasABound walks Scenario's yaml tags with reflect: every
// duration field has a bound in DurationBounds (no unbounded wait), no bound
// names a field that is gone, and the schema's description of each field
// ends with "At most <bound>.".
func TestEveryDurationHasABound(t *testing.T) {
	var root map[string]any
	if err := json.Unmarshal(Schema, &root); err != nil {
		t.Fatal(err)
	}
	deref := func(node map[string]any) map[string]any {
		for ref, ok := node["$ref"].(string); ok; ref, ok = node["$ref"].(string) {
			node = lookup(root, strings.TrimPrefix(ref, "#")).(map[string]any)
		}
		return node
	}
	durations := map[string]string{} // field path → its schema description
	var walk func(path string, typ reflect.Type, node map[string]any)
	walk = func(path string, typ reflect.Type, node map[string]any) {
		for typ.Kind() == reflect.Pointer {
			typ = typ.Elem()
		}
		if typ == reflect.TypeFor[Duration]() {
			durations[path], _ = node["description"].(string)
			return
		}
		node = deref(node)
		switch typ.Kind() {
		case reflect.Slice:
			walk(path+"[]", typ.Elem(), node["items"].(map[string]any))
		case reflect.Struct:
			for f := range typ.Fields() {
				tag, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
				if tag == "-" {
					continue
				}
				sub, _ := lookup(node, "/properties/"+tag).(map[string]any)
				walk(strings.TrimPrefix(path+"."+tag, "."), f.Type, sub)
			}
		}
	}
	walk("", reflect.TypeFor[Scenario](), lookup(root, "/$defs/scenario").(map[string]any))
	if len(durations) < 17 {
		t.Fatalf("found %d duration fields, want at least 17: %v", len(durations), durations)
	}
	for path, desc := range durations {
		bound, ok := DurationBounds[path]
		if !ok {
			t.Errorf("%s: a duration without an upper bound in DurationBounds", path)
			continue
		}
		if want := "At most " + shortDuration(bound) + "."; !strings.HasSuffix(desc, want) {
			t.Errorf("%s: schema description %q does not end with %q", path, desc, want)
		}
	}
	for path := range DurationBounds {
		if _, ok := durations[path]; !ok {
			t.Errorf("DurationBounds names %s, which is not a duration field", path)
		}
	}
}

// TestDurationBoundsInReadme: the scenario file reference's table of
// duration bounds (docs/scenario-file.md, moved there from README.md)
// lists every bound in DurationBounds, with its value, and no other.
func TestDurationBoundsInReadme(t *testing.T) {
	data, err := os.ReadFile("../docs/scenario-file.md")
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("^  \\| (`[a-z_.\\[\\]]+`(?:, `[a-z_.\\[\\]]+`)*) \\| (\\w+) \\|$")
	field := regexp.MustCompile("`([^`]+)`")
	listed := map[string]string{}
	for _, line := range strings.Split(string(data), "\n") {
		if m := row.FindStringSubmatch(line); m != nil {
			for _, f := range field.FindAllStringSubmatch(m[1], -1) {
				listed[f[1]] = m[2]
			}
		}
	}
	for path, bound := range DurationBounds {
		if listed[path] != shortDuration(bound) {
			t.Errorf("docs/scenario-file.md lists %s at most %q, want %q", path, listed[path], shortDuration(bound))
		}
	}
	if len(listed) != len(DurationBounds) {
		t.Errorf("docs/scenario-file.md lists %d duration bounds, DurationBounds has %d: %v", len(listed), len(DurationBounds), listed)
	}
}
