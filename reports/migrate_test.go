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

	"github.com/rmqtorture/rmqtorture/scenario"
)

// testdata/old holds result.json files exactly as older rmqtorture builds
// wrote or left them: v1-* are the committed baselines as first recorded
// (schema_version 1, without seed, p99_9, dead_lettered,
// retry_deliveries), v2-* the same baselines as they stood before this
// version (hand-upgraded to schema_version 2), and
// v2-stored-kill-mid-burst the stored 4,000-order run the report goldens
// render, whose original version 1 form is v1-stored-kill-mid-burst.
func readOld(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/old/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestDecodeRealVersion1: each version 1 baseline validates against the
// version 1 schema (not the current one), decodes into the current layout,
// keeps every measured figure, marks what it lacked as not recorded, and
// says "connection lost" where the broker died.
func TestDecodeRealVersion1(t *testing.T) {
	wantNotRecorded := []string{"/seed"}
	for i := range 3 {
		for _, f := range []string{"dead_lettered", "retry_deliveries", "confirm_latency_ms/p99_9"} {
			wantNotRecorded = append(wantNotRecorded, "/modes/"+string(rune('0'+i))+"/"+f)
		}
	}
	for _, tc := range []struct {
		file    string
		runID   string
		msgs    int
		missing int       // fire-and-forget's unconfirmed_missing
		p99     []float64 // confirm-each, confirm-window
		closes  []string  // fire-and-forget's channel_closes
	}{
		{"v1-kill-mid-burst.result.json", "1e78c494", 20000, 18763, []float64{14.079, 271.359}, []string{"connection lost: EOF"}},
		{"v1-baseline.result.json", "c9ea87b6", 20000, 0, []float64{24.287, 387.071}, []string{"connection lost: read tcp 127.0.0.1:46998->127.0.0.1:38293: i/o timeout"}},
		{"v1-baseline-500.result.json", "00f14dbf", 500, 0, []float64{27.711, 53.791}, nil},
		{"v1-stored-kill-mid-burst.result.json", "12b643a4", 4000, 3519, []float64{17.119, 733.183}, []string{"connection lost: EOF"}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			data := readOld(t, tc.file)
			var ie *InvalidResultError
			if err := validateAs(data, scenario.SchemaVersion); !errors.As(err, &ie) || ie.Problems[0].String() != "/: missing property 'seed'" {
				t.Fatalf("against the current schema: %v; want missing seed: the file is not the old layout the test needs", err)
			}
			if err := Validate(data); err != nil {
				t.Fatalf("against its own (version 1) schema: %v", err)
			}
			r, err := Decode(data)
			if err != nil {
				t.Fatal(err)
			}
			if r.SchemaVersion != 3 || r.MigratedFrom != 1 || !slices.Equal(r.NotRecorded, wantNotRecorded) {
				t.Errorf("schema_version %d, migrated_from %d, not_recorded %q", r.SchemaVersion, r.MigratedFrom, r.NotRecorded)
			}
			if r.RunID != tc.runID || r.Messages != tc.msgs || r.Seed != 0 || len(r.Modes) != 3 {
				t.Fatalf("run %s, %d messages, seed %d, %d modes", r.RunID, r.Messages, r.Seed, len(r.Modes))
			}
			ff, each, window := r.Modes[0], r.Modes[1], r.Modes[2]
			if ff.Mode != scenario.FireAndForget || ff.Sent != tc.msgs || ff.UnconfirmedMissing != tc.missing || !slices.Equal(ff.ChannelCloses, tc.closes) {
				t.Errorf("fire-and-forget: %s sent %d missing %d closes %q", ff.Mode, ff.Sent, ff.UnconfirmedMissing, ff.ChannelCloses)
			}
			if each.ConfirmLatency.P99 != tc.p99[0] || window.ConfirmLatency.P99 != tc.p99[1] || each.ConfirmLatency.P999 != 0 {
				t.Errorf("p99 %v / %v, p99.9 %v", each.ConfirmLatency.P99, window.ConfirmLatency.P99, each.ConfirmLatency.P999)
			}
			for _, m := range r.Modes {
				for _, e := range m.Events {
					if strings.Contains(e.Detail, "closed by client: 501") {
						t.Errorf("%s event still says %q", m.Mode, e.Detail)
					}
				}
			}
			// Written again, it is a valid current result.json, and reading
			// that gives the same Result (no second upgrade).
			var out bytes.Buffer
			if err := JSON(&out, r); err != nil {
				t.Fatal(err)
			}
			if err := validateAs(out.Bytes(), scenario.SchemaVersion); err != nil {
				t.Fatalf("upgraded result: %v", err)
			}
			again, err := Decode(out.Bytes())
			if err != nil || again.MigratedFrom != 1 || !slices.Equal(again.NotRecorded, r.NotRecorded) {
				t.Fatalf("again: %v, migrated_from %d, not_recorded %q", err, again.MigratedFrom, again.NotRecorded)
			}
			// The report says what was not recorded rather than printing 0.
			var md bytes.Buffer
			if err := Markdown(&md, r); err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{
				"- **Seed:** not recorded\n",
				"- **Result file:** written as schema_version 1, read as 3; not recorded by the rmqtorture that wrote it: the seed, p99.9 confirm latency, dead-lettered counts, retry deliveries\n",
				", p99 " + ms(tc.p99[0]) + " ms, p99.9 not recorded, max ",
			} {
				if !strings.Contains(md.String(), want) {
					t.Errorf("report lacks %q", want)
				}
			}
			if strings.Contains(md.String(), "--seed 0") || strings.Contains(md.String(), "closed by client") {
				t.Errorf("report offers seed 0 or says closed by client:\n%s", md.String())
			}
		})
	}
}

// TestDecodeVersion1Series: a version 1 series names basic.acks received
// "confirmed"; the upgrade names it "acked" and keeps the counts.
func TestDecodeVersion1Series(t *testing.T) {
	var doc map[string]any
	dec := json.NewDecoder(bytes.NewReader(readOld(t, "v1-kill-mid-burst.result.json")))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		t.Fatal(err)
	}
	doc["modes"].([]any)[1].(map[string]any)["series"] = map[string]any{
		"bucket_ms": 250, "published": []int{5, 20, 0}, "confirmed": []int{4, 21, 0}, "nacked": []int{0, 0, 0},
		"returned": []int{0, 0, 0}, "delivered": []int{0, 0, 25}, "in_flight": []int{1, 0, 0},
		"reconnects": []int{0, 0, 0}, "broker": []string{"up", "down", "up"},
	}
	data, _ := json.Marshal(doc)
	r, err := Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	if s := r.Modes[1].Series; !slices.Equal(s.Acked, []int{4, 21, 0}) || !slices.Equal(s.Published, []int{5, 20, 0}) {
		t.Fatalf("series %+v", s)
	}
	// The version 1 key is refused in a version 2 file: each version is held
	// to its own schema, and the error names it.
	doc["schema_version"] = 2
	data, _ = json.Marshal(doc)
	_, err = Decode(data)
	want := "does not match the schema of schema_version 2 (reports/schemas/result.v2.schema.json): /: missing property 'seed'; "
	if err == nil || !strings.HasPrefix(err.Error(), want) || !strings.Contains(err.Error(), "/modes/1/series: additional properties 'confirmed' not allowed") {
		t.Fatalf("got %v, want %q… and the series key", err, want)
	}
}

// TestDecodeRealVersion2: the version 2 baselines as committed before this
// version decode unchanged but for the upgrade marks and the close
// reasons' wording.
func TestDecodeRealVersion2(t *testing.T) {
	for _, tc := range []struct {
		file          string
		missing       int
		eachP99, p999 float64
	}{
		{"v2-kill-mid-burst.result.json", 18763, 14.079, 14.079},
		{"v2-baseline.result.json", 0, 24.287, 24.287},
		{"v2-baseline-500.result.json", 0, 27.711, 27.711},
		{"v2-stored-kill-mid-burst.result.json", 3519, 17.119, 0},
	} {
		r, err := Decode(readOld(t, tc.file))
		if err != nil {
			t.Fatalf("%s: %v", tc.file, err)
		}
		each := r.Modes[1].ConfirmLatency
		if r.SchemaVersion != 3 || r.MigratedFrom != 2 || r.NotRecorded != nil || r.Modes[0].UnconfirmedMissing != tc.missing || each.P99 != tc.eachP99 || each.P999 != tc.p999 {
			t.Errorf("%s: version %d from %d, not recorded %q, missing %d, p99 %v, p99.9 %v", tc.file, r.SchemaVersion, r.MigratedFrom, r.NotRecorded, r.Modes[0].UnconfirmedMissing, each.P99, each.P999)
		}
	}
}

// TestCompareRealOldBaselines: a version 1 baseline compares with the
// version 2 file recorded from the same run: no regression, and
// fire-and-forget's missing count is compared (18,763 of 20,000 both).
func TestCompareRealOldBaselines(t *testing.T) {
	base, err := Decode(readOld(t, "v1-kill-mid-burst.result.json"))
	if err != nil {
		t.Fatal(err)
	}
	res, err := Decode(readOld(t, "v2-kill-mid-burst.result.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := Comparable("v1.json", base, "v2.json", res); err != nil {
		t.Fatal(err)
	}
	c := Compare(base, res, testThresholds)
	if c.Regressed() {
		t.Fatalf("regressions: %q", c.Regressions)
	}
	ch := checkOf(t, c, "fire-and-forget", "missing (unconfirmed)")
	if ch.Baseline != "18,763 (93.8%)" || ch.Result != "18,763 (93.8%)" || *ch.ChangePts != 0 || ch.Limit != "≤ 100% of sent (+10 pts)" {
		t.Errorf("missing check %+v", ch)
	}
}

// TestMigrateRewordsLostSockets: every close reason an older rmqtorture
// worded "closed by client: 501" (publishers', consumers', events) says
// "connection lost"; the broker's own closes and other client codes stay.
func TestMigrateRewordsLostSockets(t *testing.T) {
	in := `{"schema_version":2,"modes":[{"channel_closes":["connection closed by client: 501 EOF","channel closed by broker: 406 PRECONDITION_FAILED"],` +
		`"consumers":{"channel_closes":["consumer 1: connection closed by client: 501 EOF","consumer 2: connection closed by client: 504 channel/connection is not open"]},` +
		`"events":[{"kind":"connection-lost","detail":"epoch 1: connection closed by client: 501 EOF"},{"kind":"consumer-closed","detail":"consumer 1: channel closed by client: 501 read: connection reset by peer"}]}]}`
	out, err := migrate([]byte(in), 2)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"migrated_from":2,"modes":[{"channel_closes":["connection lost: EOF","channel closed by broker: 406 PRECONDITION_FAILED"],` +
		`"consumers":{"channel_closes":["consumer 1: connection lost: EOF","consumer 2: connection closed by client: 504 channel/connection is not open"]},` +
		`"events":[{"detail":"epoch 1: connection lost: EOF","kind":"connection-lost"},{"detail":"consumer 1: connection lost: read: connection reset by peer","kind":"consumer-closed"}]}],"schema_version":3}`
	if string(out) != want {
		t.Fatalf("got\n%s\nwant\n%s", out, want)
	}
}

// TestStoredRunBothVersions: the stored run as first written (version 1)
// and as hand-upgraded to version 2 (zeros for what it lacked) decode to
// the same Result, but for the marks that tell the zeros are unknown.
func TestStoredRunBothVersions(t *testing.T) {
	v1, err := Decode(readOld(t, "v1-stored-kill-mid-burst.result.json"))
	if err != nil {
		t.Fatal(err)
	}
	v2, err := Decode(readOld(t, "v2-stored-kill-mid-burst.result.json"))
	if err != nil {
		t.Fatal(err)
	}
	if v1.MigratedFrom != 1 || len(v1.NotRecorded) != 10 || v2.MigratedFrom != 2 || v2.NotRecorded != nil {
		t.Fatalf("v1 from %d, %d not recorded; v2 from %d, %q", v1.MigratedFrom, len(v1.NotRecorded), v2.MigratedFrom, v2.NotRecorded)
	}
	v1.MigratedFrom, v1.NotRecorded, v2.MigratedFrom = 0, nil, 0
	if !reflect.DeepEqual(v1, v2) {
		t.Fatal("the two files of one run decode differently beyond the upgrade marks")
	}
}
