// Command schemagen writes the fault action enums of the JSON Schemas
// (scenario/scenarios.schema.json's $defs/action and
// reports/result.schema.json's $defs/fault/properties/action) from the
// action table (scenario.Actions), so that adding a fault action touches
// its own file and no schema by hand. The rest of each schema is written
// by hand; only the one array is replaced, in the file's own layout.
//
// Run by `go generate ./scenario` from the module root's scenario
// directory; TestSchemaEnumsMatchGo and reports' TestSchemaEnums fail when
// a schema is out of date.
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"

	"github.com/rmqtorture/rmqtorture/scenario"
)

// targets are the schema files (relative to the module root) and the
// JSON pointer of their action enum.
var targets = []struct{ file, pointer string }{
	{"scenario/scenarios.schema.json", "/$defs/action/enum"},
	{"reports/result.schema.json", "/$defs/fault/properties/action/enum"},
}

// enumArray matches a schema's "enum": [ … ] array of strings, one per
// line, capturing the indentation of its items and of its closing bracket.
var enumArray = regexp.MustCompile(`"enum": \[\n( +)"[^"\n]*"(?:,\n +"[^"\n]*")*\n( *)\]`)

func main() {
	root := "."
	if len(os.Args) > 1 {
		root = os.Args[1]
	}
	actions := make([]string, len(scenario.Actions))
	for i, a := range scenario.Actions {
		actions[i] = string(a)
	}
	for _, t := range targets {
		if err := rewrite(root+"/"+t.file, t.pointer, actions); err != nil {
			fmt.Fprintln(os.Stderr, "schemagen:", err)
			os.Exit(1)
		}
	}
}

// rewrite replaces the enum at pointer in file by actions. The array is
// found by its current values: the one enum array of the file that holds
// exactly them.
func rewrite(file, pointer string, actions []string) error {
	data, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	old, err := at(data, pointer)
	if err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	var found [][]int
	for _, m := range enumArray.FindAllSubmatchIndex(data, -1) {
		var vals []string
		body := data[m[0]+len(`"enum": `) : m[1]]
		if json.Unmarshal(body, &vals) == nil && slices.Equal(vals, old) {
			found = append(found, m)
		}
	}
	if len(found) != 1 {
		return fmt.Errorf("%s: %d enum arrays hold %v, want exactly one", file, len(found), old)
	}
	m := found[0]
	item, end := string(data[m[2]:m[3]]), string(data[m[4]:m[5]])
	quoted := make([]string, len(actions))
	for i, a := range actions {
		quoted[i] = item + quote(a)
	}
	repl := `"enum": [` + "\n" + strings.Join(quoted, ",\n") + "\n" + end + "]"
	out := slices.Concat(data[:m[0]], []byte(repl), data[m[1]:])
	if got, err := at(out, pointer); err != nil || !slices.Equal(got, actions) {
		return fmt.Errorf("%s: rewritten, %s holds %v (%v)", file, pointer, got, err)
	}
	if bytes.Equal(out, data) {
		return nil
	}
	return os.WriteFile(file, out, 0o644)
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// at reads the array of strings at a JSON pointer of doc.
func at(doc []byte, pointer string) ([]string, error) {
	var v any
	if err := json.Unmarshal(doc, &v); err != nil {
		return nil, err
	}
	for _, k := range strings.Split(strings.TrimPrefix(pointer, "/"), "/") {
		obj, ok := v.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%s: %q is not in an object", pointer, k)
		}
		v = obj[k]
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var out []string
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, fmt.Errorf("%s: not an array of strings", pointer)
	}
	return out, nil
}
