package reports

import (
	"bytes"
	"encoding/json"
	"io"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/olekukonko/tablewriter/pkg/twwidth"

	"github.com/rmqtorture/rmqtorture/metrics"
	"github.com/rmqtorture/rmqtorture/scenario"
)

var versionImages = []string{"rmqtorture/rabbitmq:3.10-bookworm", "rmqtorture/rabbitmq:4.0-trixie", "rmqtorture/rabbitmq:4.3-forky"}

func passVerdict() scenario.Verdict { return scenario.Verdict{Status: scenario.Pass} }

// poisonMode is delivery-limit's confirm-window mode: 100 orders, each
// delivered dpm times by a nack-requeue consumer, dead letters dl of them.
func poisonMode(dpm map[string]int, deliveries, dl int, v scenario.Verdict) scenario.ModeResult {
	return scenario.ModeResult{Mode: scenario.ConfirmWindow, Window: 1000, DeadLetterQueue: "q.dlq",
		Counts:              metrics.Counts{Sent: 100, Confirmed: 100, Delivered: 100, DeadLettered: dl},
		PreFaultPublishRate: 5000, ConfirmLatency: metrics.LatencySummary{Count: 100, P99: 4},
		Consumers: &scenario.ConsumerStats{Count: 1, Prefetch: 10, OnDelivery: scenario.ConsumerNackRequeue,
			Deliveries: deliveries, DeliveriesPerMessage: dpm},
		Verdict: v}
}

// scoped gives r the version scope ">=3.10 <4.3" stating the delivery-limit
// fields (deliveries per message and dead-letter reason).
func scoped(r *scenario.Result) *scenario.Result {
	r.VersionScope = &scenario.AppliedVersionScope{BrokerVersion: r.BrokerVersion, When: ">=3.10 <4.3", Because: "every delivery counts (example)",
		Stated: []string{"confirm-window.deliveries_per_message", "confirm-window.dead_letter_reason"}}
	return r
}

// brokerDeadLettered marks every dead-lettered id of m as dead-lettered by
// the broker's delivery limit (x-death reason delivery_limit).
func brokerDeadLettered(m scenario.ModeResult) scenario.ModeResult {
	m.DeadLetterReasons = map[string]int{"delivery_limit": m.DeadLettered}
	return m
}

func versionResult(name, version, runID string, v scenario.Verdict, modes ...scenario.ModeResult) *scenario.Result {
	return &scenario.Result{SchemaVersion: scenario.SchemaVersion, Scenario: name, RunID: runID, BrokerVersion: version,
		QueueType: scenario.Quorum, Messages: 100, Modes: modes, Verdict: v}
}

// versionsFixture: delivery-limit on three versions (4.3.6 delivers each
// order 5 times, stated by its version scope), delivery-limit-default
// (4.3.6 cycles and dead-letters nothing: not stated, so it fails) and
// kill-mid-burst, interrupted before it ran on 4.3.6.
func versionsFixture() VersionsInput {
	fail := scenario.Verdict{Status: scenario.Fail, Reasons: []string{"confirm-window: dead_lettered 0, expected 100"}}
	dl436 := versionResult("delivery-limit", "4.3.6", "c3", passVerdict(), poisonMode(map[string]int{"5": 100}, 500, 100, passVerdict()))
	dl436.VersionScope = &scenario.AppliedVersionScope{BrokerVersion: "4.3.6", When: ">=4.3", Because: "rabbitmq-server PR #00000 (example)",
		Finding: "an example finding: the documentation says otherwise", Stated: []string{"confirm-window.deliveries_per_message", "confirm-window.dead_letter_reason"}}
	dl436.Modes[0].DeadLetterReasons = map[string]int{"rejected": 100} // the consumer gave up, not the broker
	def436 := versionResult("delivery-limit-default", "4.3.6", "d3", fail, poisonMode(map[string]int{"1598": 60, "1602": 40}, 159960, 0, fail))
	def436.VersionScope = &scenario.AppliedVersionScope{BrokerVersion: "4.3.6"} // scopes stated, none matched
	kill := func(runID, version string, missing int, rate, p99 float64) *scenario.Result {
		return versionResult("kill-mid-burst", version, runID, passVerdict(),
			scenario.ModeResult{Mode: scenario.FireAndForget, Counts: metrics.Counts{Sent: 20000, Delivered: 20000 - missing, UnconfirmedMissing: missing},
				PreFaultPublishRate: rate, Verdict: passVerdict()},
			scenario.ModeResult{Mode: scenario.ConfirmEach, Window: 1, Counts: metrics.Counts{Sent: 20000, Confirmed: 19990, InDoubt: 10, Delivered: 20000, Duplicates: 3},
				PreFaultPublishRate: rate / 10, ConfirmLatency: metrics.LatencySummary{Count: 19990, P99: p99}, Verdict: passVerdict()})
	}
	dir := func(s, id string) string { return "out/" + s + "-20261201T200000Z-" + id }
	return VersionsInput{Tool: "rmqtorture test", Command: "rmqtorture run delivery-limit delivery-limit-default kill-mid-burst --images " + strings.Join(versionImages, ","),
		StartedAt: time.Date(2026, 12, 1, 20, 0, 0, 0, time.UTC), Interrupted: true,
		Scenarios: []string{"delivery-limit", "delivery-limit-default", "kill-mid-burst"}, Images: versionImages,
		Runs: []VersionsRunInput{
			{Image: versionImages[0], Dir: dir("delivery-limit", "a1"), Result: scoped(versionResult("delivery-limit", "RabbitMQ 3.10.8", "a1", passVerdict(), brokerDeadLettered(poisonMode(map[string]int{"4": 100}, 400, 100, passVerdict()))))},
			{Image: versionImages[1], Dir: dir("delivery-limit", "b2"), Result: versionResult("delivery-limit", "4.0.5", "b2", passVerdict(), brokerDeadLettered(poisonMode(map[string]int{"4": 100}, 400, 100, passVerdict())))},
			{Image: versionImages[2], Dir: dir("delivery-limit", "c3"), Result: dl436},
			{Image: versionImages[0], Dir: dir("delivery-limit-default", "d1"), Result: versionResult("delivery-limit-default", "3.10.8", "d1", passVerdict(), poisonMode(map[string]int{"21": 100}, 2100, 100, passVerdict()))},
			{Image: versionImages[1], Dir: dir("delivery-limit-default", "d2"), Result: versionResult("delivery-limit-default", "4.0.5", "d2", passVerdict(), poisonMode(map[string]int{"21": 100}, 2100, 100, passVerdict()))},
			{Image: versionImages[2], Dir: dir("delivery-limit-default", "d3"), Result: def436},
			{Image: versionImages[0], Dir: dir("kill-mid-burst", "k1"), Result: kill("k1", "3.10.8", 10000, 20000, 10)},
			{Image: versionImages[1], Dir: dir("kill-mid-burst", "k2"), Result: kill("k2", "4.0.5", 15000, 30000, 11)},
		}}
}

func renderVersions(t *testing.T, f func(io.Writer, *Versions) error, v *Versions) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := f(&buf, v); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestVersionsGolden pins the terminal summary, the wide table, versions.md
// and versions.json of the fixture, byte for byte; the summary fits Width
// and the JSON matches its schema.
func TestVersionsGolden(t *testing.T) {
	v := BuildVersions(versionsFixture())
	summary := renderVersions(t, VersionsSummary, v)
	golden(t, "versions.summary.golden", summary)
	golden(t, "versions.wide.golden", renderVersions(t, VersionsWide, v))
	golden(t, "versions.md.golden", renderVersions(t, VersionsMarkdown, v))
	js := renderVersions(t, VersionsJSON, v)
	golden(t, "versions.golden.json", js)
	for i, l := range strings.Split(string(summary), "\n") {
		if w := twwidth.Width(l); w > Width {
			t.Errorf("summary line %d is %d columns wide: %s", i+1, w, l)
		}
	}
	if err := ValidateVersions(js); err != nil {
		t.Fatalf("versions.json does not match its schema: %v", err)
	}
}

// TestVersionsChanges: what differs from the reference column (the first
// image), each marked expected when the version scope of either side
// states the field, and the verdict.
func TestVersionsChanges(t *testing.T) {
	v := BuildVersions(versionsFixture())
	var got []string
	for _, c := range v.Changes {
		line := c.Scenario + " " + c.Group + " " + c.Field + " " + c.From + "→" + c.To + " on " + c.Column
		if c.Ratio != nil {
			line += " ×" + trimFloat(*c.Ratio)
		}
		if c.Expected {
			line += " expected: " + c.Because
		}
		got = append(got, line)
	}
	want := []string{
		"delivery-limit confirm-window deliveries_per_message 4→5 on 4.3.6 expected: rabbitmq-server PR #00000 (example)",
		"delivery-limit confirm-window dead_letter_reason delivery_limit→rejected on 4.3.6 expected: rabbitmq-server PR #00000 (example)",
		"delivery-limit confirm-window consumer_deliveries 400→500 on 4.3.6",
		"delivery-limit-default confirm-window dead_lettered 100→0 on 4.3.6",
		"delivery-limit-default confirm-window deliveries_per_message 21→1,598–1,602 on 4.3.6",
		"delivery-limit-default confirm-window consumer_deliveries 2,100→159,960 on 4.3.6",
		"delivery-limit-default confirm-window verdict pass→fail on 4.3.6",
		"kill-mid-burst fire-and-forget unconfirmed_missing 10,000→15,000 on 4.0.5 ×1.5",
		"kill-mid-burst fire-and-forget publish_rate_msgs_per_s 20,000→30,000 on 4.0.5 ×1.5",
		"kill-mid-burst fire-and-forget delivered 10,000→5,000 on 4.0.5",
		"kill-mid-burst confirm-each publish_rate_msgs_per_s 2,000→3,000 on 4.0.5 ×1.5",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("changes:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// p99 10 → 11 ms (×1.1) is within ChangeRatio: not listed.
	if v.Verdict.Status != scenario.Fail || strings.Join(v.Verdict.Reasons, "; ") != "delivery-limit-default on 4.3.6: fail; kill-mid-burst on 4.3.6: not run; "+
		"delivery-limit-default · confirm-window · dead-lettered: 100 on 3.10.8, 0 on 4.3.6: a change of behaviour no version scope states (expect.versions); "+
		"delivery-limit-default · confirm-window · deliveries per message: 21 on 3.10.8, 1,598–1,602 on 4.3.6: a change of behaviour no version scope states (expect.versions)" {
		t.Fatalf("verdict %+v", v.Verdict)
	}
	if v.Scenarios[2].Runs[2] != nil {
		t.Fatal("kill-mid-burst never ran on 4.3.6 but has a run")
	}
}

// TestVersionsColumnNames: columns are named by the broker's version;
// two images reporting the same version, or a broker that never answered,
// are named by their image.
func TestVersionsColumnNames(t *testing.T) {
	in := VersionsInput{Scenarios: []string{"s"}, Images: []string{"a:1", "b:1", "c:1"}, Runs: []VersionsRunInput{
		{Image: "a:1", Result: versionResult("s", "4.0.5", "1", passVerdict())},
		{Image: "b:1", Result: versionResult("s", "4.0.5", "2", passVerdict())},
		{Image: "c:1", Result: versionResult("s", "", "3", passVerdict())},
	}}
	var names []string
	for _, c := range BuildVersions(in).Columns {
		names = append(names, c.Name)
	}
	if got := strings.Join(names, ","); got != "a:1,b:1,c:1" {
		t.Fatalf("columns %s", got)
	}
	in.Runs[1].Result.BrokerVersion = "4.3.6"
	names = nil
	for _, c := range BuildVersions(in).Columns {
		names = append(names, c.Name)
	}
	if got := strings.Join(names, ","); got != "4.0.5,4.3.6,c:1" {
		t.Fatalf("columns %s", got)
	}
}

// TestVersionsSchemaRejects: the schema refuses a versions.json without
// its schema_version, or with a column that has no image.
func TestVersionsSchemaRejects(t *testing.T) {
	js := renderVersions(t, VersionsJSON, BuildVersions(versionsFixture()))
	for name, edit := range map[string]func(map[string]any){
		"no schema_version": func(d map[string]any) { delete(d, "schema_version") },
		"version 2":         func(d map[string]any) { d["schema_version"] = 2 },
		"column no image":   func(d map[string]any) { delete(d["columns"].([]any)[0].(map[string]any), "image") },
	} {
		var d map[string]any
		if err := json.Unmarshal(js, &d); err != nil {
			t.Fatal(err)
		}
		edit(d)
		b, _ := json.Marshal(d)
		if ValidateVersions(b) == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// TestVersionsChangesSkipModesNotRun: a mode that did not run on one
// version (interrupted) changes nothing; its verdict is not run.
func TestVersionsChangesSkipModesNotRun(t *testing.T) {
	ran := versionResult("s", "RabbitMQ 3.10.8", "1", passVerdict(), poisonMode(map[string]int{"4": 100}, 400, 100, passVerdict()))
	cut := versionResult("s", "RabbitMQ 4.0.5", "2", scenario.Verdict{Status: scenario.Inconclusive},
		scenario.ModeResult{Mode: scenario.ConfirmWindow, NotRun: true, Verdict: scenario.Verdict{Status: scenario.Inconclusive}})
	cut.Interrupted = true
	v := BuildVersions(VersionsInput{Scenarios: []string{"s"}, Images: []string{"a:1", "b:1"}, Interrupted: true,
		Runs: []VersionsRunInput{{Image: "a:1", Result: ran}, {Image: "b:1", Result: cut}}})
	if len(v.Changes) != 0 {
		t.Fatalf("changes %+v", v.Changes)
	}
	rows := v.Scenarios[0].Rows
	if last := rows[len(rows)-1]; last.Field != "verdict" || strings.Join(last.Texts, ",") != "pass,not run" {
		t.Fatalf("verdict row %+v", last)
	}
	if v.Verdict.Status != scenario.Inconclusive || strings.Join(v.Verdict.Reasons, "; ") != "s on 4.0.5: inconclusive" {
		t.Fatalf("verdict %+v", v.Verdict)
	}
}

// TestVersionsDeadLetterReasonChange: who dead-lettered (the broker's
// delivery limit on 3.10.8 and 4.0.5, the consumer on 4.3.6) is one row, and
// its change is listed as expected where the version scope states it.
func TestVersionsDeadLetterReasonChange(t *testing.T) {
	v := BuildVersions(versionsFixture())
	var got []VersionChange
	for _, c := range v.Changes {
		if c.Field == "dead_letter_reason" {
			got = append(got, c)
		}
	}
	if len(got) != 1 {
		t.Fatalf("dead_letter_reason changes: %+v, want exactly one", got)
	}
	c := got[0]
	if c.Scenario != "delivery-limit" || c.From != "delivery_limit" || c.To != "rejected" || c.Column != "4.3.6" || c.Reference != "3.10.8" ||
		!c.Expected || c.Because != "rabbitmq-server PR #00000 (example)" {
		t.Errorf("change = %+v", c)
	}
}

// TestVersionsUnstatedBehaviourFails: both runs pass their own
// expectations, yet the broker dead-letters after 4 deliveries on one
// version and the consumer gives up at 30 on the other: stated by the first
// version's scope only, that fails the versions verdict (nothing states
// the second's 30); stated by each version's scope, it passes. A measurement that varies (publish rate ×2) never fails it.
func TestVersionsUnstatedBehaviourFails(t *testing.T) {
	in := func(scope *scenario.AppliedVersionScope) VersionsInput {
		a := scoped(versionResult("delivery-limit", "4.0.5", "a", passVerdict(), poisonMode(map[string]int{"4": 100}, 400, 100, passVerdict())))
		m := poisonMode(map[string]int{"30": 100}, 3000, 100, passVerdict())
		m.PreFaultPublishRate *= 2
		b := versionResult("delivery-limit", "4.3.6", "b", passVerdict(), m)
		b.VersionScope = scope
		return VersionsInput{Scenarios: []string{"delivery-limit"}, Images: versionImages[1:],
			Runs: []VersionsRunInput{{Image: versionImages[1], Result: a}, {Image: versionImages[2], Result: b}}}
	}
	v := BuildVersions(in(nil))
	want := []string{"delivery-limit · confirm-window · deliveries per message: 4 on 4.0.5, 30 on 4.3.6: a change of behaviour no version scope states (expect.versions)"}
	if v.Verdict.Status != scenario.Fail || !slices.Equal(v.Verdict.Reasons, want) {
		t.Fatalf("unstated: %+v", v.Verdict)
	}
	v = BuildVersions(in(&scenario.AppliedVersionScope{BrokerVersion: "4.3.6", When: ">=4.3", Because: "PR",
		Stated: []string{"confirm-window.deliveries_per_message"}}))
	if v.Verdict.Status != scenario.Pass || len(v.Verdict.Reasons) != 0 {
		t.Fatalf("stated: %+v", v.Verdict)
	}
	// Stated, but the run failed its expectations (its scope said 4, it
	// measured 30): contradicted, not expected; the run's own failure
	// fails the report.
	failed := in(&scenario.AppliedVersionScope{BrokerVersion: "4.3.6", When: ">=4.0", Because: "our runbook",
		Stated: []string{"confirm-window.deliveries_per_message"}})
	fail := scenario.Verdict{Status: scenario.Fail, Reasons: []string{"RabbitMQ 4.3.6: deliveries_per_message: expected every message at exactly 4"}}
	failed.Runs[1].Result.Verdict, failed.Runs[1].Result.Modes[0].Verdict = fail, fail
	fv := BuildVersions(failed)
	if fv.Verdict.Status != scenario.Fail || !slices.Equal(fv.Verdict.Reasons, []string{"delivery-limit on 4.3.6: fail"}) {
		t.Fatalf("contradicted: verdict %+v", fv.Verdict)
	}
	if c := fv.Changes[0]; c.Field != "deliveries_per_message" || c.Expected || !c.Contradicted ||
		changeText(c) != "delivery-limit · confirm-window · deliveries per message: 4 on 4.0.5, 30 on 4.3.6: stated by a version scope, but the run failed it (see its verdict)" {
		t.Fatalf("contradicted: %+v", c)
	}
	// Cut short by Ctrl-C: the difference is listed, never judged.
	cut := in(nil)
	cut.Runs[1].Result.Interrupted = true
	if cv := BuildVersions(cut); cv.Verdict.Status != scenario.Inconclusive || cv.Changes[0].Behaviour ||
		!slices.Equal(cv.Verdict.Reasons, []string{"delivery-limit on 4.3.6: interrupted"}) {
		t.Fatalf("interrupted: %+v, first change %+v", cv.Verdict, cv.Changes[0])
	}
	var rate *VersionChange
	for i, c := range v.Changes {
		if c.Field == "publish_rate_msgs_per_s" {
			rate = &v.Changes[i]
		}
	}
	if rate == nil || rate.Behaviour || rate.Expected {
		t.Fatalf("publish rate ×2: %+v", rate)
	}
}

// The features table lists every deprecated feature any broker listed, with
// its phase per version, and only the feature flags whose state differs.
func TestFeatureRows(t *testing.T) {
	v := &Versions{Columns: []VersionColumn{
		{Name: "3.10.8", Features: &scenario.BrokerFeatures{FeatureFlags: map[string]string{"quorum_queue": "enabled", "stream_queue": "enabled"}}},
		{Name: "4.0.5", Features: &scenario.BrokerFeatures{FeatureFlags: map[string]string{"quorum_queue": "enabled", "khepri_db": "disabled"},
			DeprecatedFeatures: map[string]string{"transient_nonexcl_queues": "permitted_by_default", "classic_queue_mirroring": "removed"}}},
		{Name: "9.9.9"},
	}}
	header, rows := featureRows(v)
	want := [][]string{
		{"deprecated: classic_queue_mirroring", "no list", "removed", "not listed"},
		{"deprecated: transient_nonexcl_queues", "no list", "permitted_by_default", "not listed"},
		{"flag: khepri_db", "-", "disabled", "not listed"},
		{"flag: stream_queue", "enabled", "-", "not listed"},
	}
	if !slices.Equal(header, []string{"feature", "3.10.8", "4.0.5", "9.9.9"}) || !reflect.DeepEqual(rows, want) {
		t.Fatalf("header %q\nrows %q\nwant %q", header, rows, want)
	}
	if _, rows := featureRows(&Versions{Columns: []VersionColumn{{Name: "a"}}}); rows != nil {
		t.Fatalf("no features listed: rows %q", rows)
	}
}

// TestVersionsBehaviourBeyondTotals: two versions with the same totals,
// where one broker closed the publisher's connection (it failed over) and
// kept nacking to the end of the burst while the other nacked a short run
// and closed nothing, do not read as the same: who closed what and why,
// the failovers and the nacked ids' span are rows, and each difference is
// listed under What changed (measured, not judged).
func TestVersionsBehaviourBeyondTotals(t *testing.T) {
	mode := func(closes []string, reconnects int, nacked metrics.Range) scenario.ModeResult {
		m := scenario.ModeResult{Mode: scenario.ConfirmWindow, ChannelCloses: closes, Reconnects: reconnects, Verdict: passVerdict()}
		m.Sent, m.Confirmed, m.Nacked, m.WentNacked = 1000, 1000-nacked.Len(), nacked.Len(), nacked.Len()
		m.IDs.WentNacked = []metrics.Range{nacked}
		return m
	}
	a := versionResult("s", "RabbitMQ 3.10.8", "1", passVerdict(), mode([]string{"channel closed by broker: 320 CONNECTION_FORCED - broker forced connection closure with reason 'shutdown'"}, 1, metrics.Range{First: 200, Last: 999}))
	b := versionResult("s", "RabbitMQ 4.0.5", "2", passVerdict(), mode(nil, 0, metrics.Range{First: 200, Last: 299}))
	v := BuildVersions(VersionsInput{Scenarios: []string{"s"}, Images: []string{"a:1", "b:1"},
		Runs: []VersionsRunInput{{Image: "a:1", Result: a}, {Image: "b:1", Result: b}}})
	got := map[string]string{}
	for _, c := range v.Changes {
		got[c.Field] = c.From + " → " + c.To
		if c.Behaviour {
			t.Errorf("%s judged as behaviour: it varies with a fault's timing", c.Field)
		}
	}
	want := map[string]string{
		"channel_closes": "channel closed by broker: 320 CONNECTION_FORCED → none",
		"reconnects":     "1 → 0",
		"nacked_ids":     "800 ids, 200–999 in 1 range → 100 ids, 200–299 in 1 range",
		"nacked":         "800 → 100",
		"confirmed":      "200 → 900",
	}
	for f, w := range want {
		if got[f] != w {
			t.Errorf("%s changed %q, want %q (all: %v)", f, got[f], w, got)
		}
	}
}
