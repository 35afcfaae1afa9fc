package reports

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/rmqtorture/rmqtorture/scenario"
)

// OldestSchemaVersion is the oldest result.json layout Decode, and so
// report, compare and check, read: versions OldestSchemaVersion to
// scenario.SchemaVersion.
const OldestSchemaVersion = 1

// The schemas of the older layouts, as the last rmqtorture to write each
// described it (version 1 with the fields it gained while still written as
// version 1 made optional: see its description).
var (
	//go:embed schemas/result.v1.schema.json
	schemaV1 []byte
	//go:embed schemas/result.v2.schema.json
	schemaV2 []byte
)

// schemaOf returns the compiled schema of layout version v (OldestSchemaVersion
// to scenario.SchemaVersion) and the file it comes from, for messages.
func schemaOf(v int) (*jsonschema.Schema, string, error) {
	switch v {
	case 1:
		s, err := compiledV1()
		return s, "reports/schemas/result.v1.schema.json", err
	case 2:
		s, err := compiledV2()
		return s, "reports/schemas/result.v2.schema.json", err
	case scenario.SchemaVersion:
		s, err := compiled()
		return s, "reports/result.schema.json", err
	}
	return nil, "", fmt.Errorf("no schema for schema_version %d", v)
}

var (
	compiledV1 = sync.OnceValues(func() (*jsonschema.Schema, error) { return compile(schemaV1, "schemas/result.v1.schema.json") })
	compiledV2 = sync.OnceValues(func() (*jsonschema.Schema, error) { return compile(schemaV2, "schemas/result.v2.schema.json") })
)

func compile(schema []byte, name string) (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	url := "https://github.com/rmqtorture/rmqtorture/reports/" + name
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	if err := c.AddResource(url, doc); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return c.Compile(url)
}

// documentVersion reads schema_version from a JSON object; ok is false when
// data is not an object or has no integer schema_version (Validate then
// says why).
func documentVersion(data []byte) (v int, ok bool) {
	var head struct {
		SchemaVersion *int `json:"schema_version"`
	}
	if json.Unmarshal(data, &head) != nil || head.SchemaVersion == nil {
		return 0, false
	}
	return *head.SchemaVersion, true
}

// laterFields are the fields rmqtorture added while it still wrote layout
// version 1, so a version 1 file may lack them (relative to a mode, for
// the "modes/" ones): the upgrade marks each one it fills in not_recorded.
// A latency summary's p99_9 is filled only where the summary exists.
var laterFields = []string{
	"seed",
	"modes/dead_lettered",
	"modes/retry_deliveries",
	"modes/confirm_latency_ms/p99_9",
	"modes/confirm_latency_from_intended_ms/p99_9",
	"modes/consumers/end_to_end_latency_ms/p99_9",
}

// clientLost is how rmqtorture before schema_version 3 worded a socket that
// amqp091-go lost (the broker died, the network broke): amqp091-go reports
// it as the client's own 501 FRAME_ERROR, which read as if rmqtorture had
// closed the connection. broker.closeReason now says "connection lost".
var clientLost = strings.NewReplacer(
	"connection closed by client: 501 ", "connection lost: ",
	"channel closed by client: 501 ", "connection lost: ",
)

// migrate upgrades a document of layout version from (validated against
// that version's schema) to scenario.SchemaVersion:
//   - version 1 → 2: each mode's series.confirmed becomes series.acked;
//     a field of laterFields the file lacks is set to 0 and listed in
//     not_recorded;
//   - version 2 → 3: the publishers' and consumers' close reasons and the
//     events worded "closed by client: 501 <socket error>" say "connection
//     lost: <socket error>" instead;
//
// then migrated_from records from. Numbers keep their exact text.
func migrate(data []byte, from int) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var doc map[string]any
	if err := dec.Decode(&doc); err != nil {
		return nil, err
	}
	modes, _ := doc["modes"].([]any)
	var notRecorded []string
	if from < 2 {
		for _, f := range laterFields {
			if !strings.HasPrefix(f, "modes/") && fillAbsent(doc, strings.Split(f, "/")) {
				notRecorded = append(notRecorded, "/"+f)
			}
		}
		for i, m := range modes {
			mode, ok := m.(map[string]any)
			if !ok {
				continue
			}
			if series, ok := mode["series"].(map[string]any); ok {
				if c, ok := series["confirmed"]; ok {
					series["acked"] = c
					delete(series, "confirmed")
				}
			}
			for _, f := range laterFields {
				rel, ok := strings.CutPrefix(f, "modes/")
				if !ok {
					continue
				}
				if fillAbsent(mode, strings.Split(rel, "/")) {
					notRecorded = append(notRecorded, fmt.Sprintf("/modes/%d/%s", i, rel))
				}
			}
		}
	}
	if from < 3 {
		for _, m := range modes {
			mode, ok := m.(map[string]any)
			if !ok {
				continue
			}
			reword(mode["channel_closes"])
			if c, ok := mode["consumers"].(map[string]any); ok {
				reword(c["channel_closes"])
			}
			events, _ := mode["events"].([]any)
			for _, e := range events {
				if ev, ok := e.(map[string]any); ok {
					if s, ok := ev["detail"].(string); ok {
						ev["detail"] = clientLost.Replace(s)
					}
				}
			}
		}
	}
	doc["schema_version"] = scenario.SchemaVersion
	doc["migrated_from"] = from
	if len(notRecorded) > 0 {
		doc["not_recorded"] = notRecorded
	}
	return json.Marshal(doc)
}

// reword applies clientLost to a list of close reasons.
func reword(list any) {
	closes, _ := list.([]any)
	for j, c := range closes {
		if s, ok := c.(string); ok {
			closes[j] = clientLost.Replace(s)
		}
	}
}

// fillAbsent sets the field at path under obj to 0 when every object on the
// way exists and the last key does not; it reports whether it did.
func fillAbsent(obj map[string]any, path []string) bool {
	for _, k := range path[:len(path)-1] {
		next, ok := obj[k].(map[string]any)
		if !ok {
			return false
		}
		obj = next
	}
	last := path[len(path)-1]
	if _, ok := obj[last]; ok {
		return false
	}
	obj[last] = json.Number("0")
	return true
}

// NotRecorded reports whether r's field at JSON pointer ptr (e.g. "/seed")
// was absent from the older file r was read from: its value is 0 and means
// unknown.
func NotRecorded(r *scenario.Result, ptr string) bool {
	for _, p := range r.NotRecorded {
		if p == ptr {
			return true
		}
	}
	return false
}
