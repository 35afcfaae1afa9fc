package reports

import (
	"bytes"
	"encoding/json"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/rmqtorture/rmqtorture/metrics"
	"github.com/rmqtorture/rmqtorture/scenario"
)

// testThresholds are the limits these tests were written around (a 20 %
// drop, a 50 % p99 rise, 10 points of missing share), apart from
// DefaultThresholds, which follows the measured noise.
var testThresholds = Thresholds{MaxThroughputDropPct: 20, MaxP99RisePct: 50, MaxMissingRisePts: 10}

func f64(v float64) *float64 { return &v }

// confirmMode is a passing confirm-window mode: 1,000 msg/s before the
// fault, 900 confirms/s, p99 4 ms, recovery 10,000 ms.
func confirmMode() scenario.ModeResult {
	return scenario.ModeResult{
		Mode: scenario.ConfirmWindow, Window: 1000,
		Counts:              metrics.Counts{Sent: 4000, Confirmed: 4000, Delivered: 4000, Deliveries: 4000},
		PreFaultPublishRate: 1000, PublishRate: 500, ConfirmRate: 900,
		ConfirmLatency:   metrics.LatencySummary{Count: 4000, P50: 2, P90: 3, P99: 4, Max: 9},
		ClientRecoveryMS: f64(10000),
		Verdict:          scenario.Verdict{Status: scenario.Pass},
	}
}

func fireMode() scenario.ModeResult {
	return scenario.ModeResult{
		Mode:                scenario.FireAndForget,
		Counts:              metrics.Counts{Sent: 4000, UnconfirmedDelivered: 1000, UnconfirmedMissing: 3000, Delivered: 1000, Deliveries: 1000},
		PreFaultPublishRate: 50000, PublishRate: 2000,
		ClientRecoveryMS: f64(12000),
		Verdict:          scenario.Verdict{Status: scenario.Pass},
	}
}

func result(modes ...scenario.ModeResult) *scenario.Result {
	return &scenario.Result{SchemaVersion: scenario.SchemaVersion, Scenario: "kill-mid-burst", Messages: 4000, Modes: modes,
		Image: scenario.DefaultImage, BrokerVersion: "RabbitMQ 4.0.5"}
}

// checkOf returns the mode's check of the metric, failing when absent.
func checkOf(t *testing.T, c *Comparison, mode, metric string) Check {
	t.Helper()
	for _, m := range c.Modes {
		if m.Label != mode {
			continue
		}
		for _, ch := range m.Checks {
			if ch.Metric == metric {
				return ch
			}
		}
		t.Fatalf("%s has no %q check: %+v", mode, metric, m.Checks)
	}
	t.Fatalf("no mode %s in %+v", mode, c.Modes)
	return Check{}
}

func TestCompareIdenticalPasses(t *testing.T) {
	base := result(fireMode(), confirmMode())
	c := Compare(base, result(fireMode(), confirmMode()), testThresholds)
	if c.Regressed() {
		t.Fatalf("regressions against itself: %v", c.Regressions)
	}
	// fire-and-forget: verdict, missing share, pre-fault rate, recovery; no confirm rate, p99 or lost.
	var metricsOf = func(i int) []string {
		var out []string
		for _, ch := range c.Modes[i].Checks {
			out = append(out, ch.Metric)
		}
		return out
	}
	if got, want := metricsOf(0), []string{"verdict", "missing (unconfirmed)", "publish msg/s (before fault)", "client recovery ms"}; !slices.Equal(got, want) {
		t.Errorf("fire-and-forget checks %v, want %v", got, want)
	}
	if got, want := metricsOf(1), []string{"verdict", "lost (confirmed)", "publish msg/s (before fault)", "confirm msg/s", "confirm p99 ms", "client recovery ms"}; !slices.Equal(got, want) {
		t.Errorf("confirm-window checks %v, want %v", got, want)
	}
	if ch := checkOf(t, c, "confirm-window", "confirm p99 ms"); *ch.ChangePct != 0 || ch.Limit != "≤ 6.0 (+50%)" {
		t.Errorf("p99 check %+v", ch)
	}
}

// Each threshold: a value exactly at the limit passes, one just past fails,
// with the sentence naming mode, metric, both figures and the limit.
func TestCompareThresholdEdges(t *testing.T) {
	rec := func(v float64) *float64 { return &v }
	cases := []struct {
		name   string
		th     Thresholds
		set    func(*scenario.ModeResult)
		metric string
		want   string // "" = ok
	}{
		{"publish rate at -20%", testThresholds, func(m *scenario.ModeResult) { m.PreFaultPublishRate = 800 }, "publish msg/s (before fault)", ""},
		{"publish rate past -20%", testThresholds, func(m *scenario.ModeResult) { m.PreFaultPublishRate = 799.9 }, "publish msg/s (before fault)",
			"confirm-window: publish msg/s (before fault) fell 20% (1,000 → 800 msg/s), more than the 20% allowed"},
		{"confirm rate at -20%", testThresholds, func(m *scenario.ModeResult) { m.ConfirmRate = 720 }, "confirm msg/s", ""},
		{"confirm rate past -20%", testThresholds, func(m *scenario.ModeResult) { m.ConfirmRate = 719 }, "confirm msg/s",
			"confirm-window: confirm msg/s fell 20.1% (900 → 719 msg/s), more than the 20% allowed"},
		{"rate drop 10% at 10", Thresholds{MaxThroughputDropPct: 10, MaxP99RisePct: 50}, func(m *scenario.ModeResult) { m.PreFaultPublishRate = 900 }, "publish msg/s (before fault)", ""},
		{"rate drop 10% past 10", Thresholds{MaxThroughputDropPct: 10, MaxP99RisePct: 50}, func(m *scenario.ModeResult) { m.PreFaultPublishRate = 899 }, "publish msg/s (before fault)",
			"confirm-window: publish msg/s (before fault) fell 10.1% (1,000 → 899 msg/s), more than the 10% allowed"},
		{"rate rise is fine", testThresholds, func(m *scenario.ModeResult) { m.PreFaultPublishRate = 5000 }, "publish msg/s (before fault)", ""},
		{"p99 at +50%", testThresholds, func(m *scenario.ModeResult) { m.ConfirmLatency.P99 = 6 }, "confirm p99 ms", ""},
		{"p99 past +50%", testThresholds, func(m *scenario.ModeResult) { m.ConfirmLatency.P99 = 6.01 }, "confirm p99 ms",
			"confirm-window: confirm p99 rose 50.2% (4.0 → 6.0 ms), more than the 50% allowed"},
		{"p99 doubled", testThresholds, func(m *scenario.ModeResult) { m.ConfirmLatency.P99 = 8 }, "confirm p99 ms",
			"confirm-window: confirm p99 rose 100% (4.0 → 8.0 ms), more than the 50% allowed"},
		{"recovery unchecked by default", testThresholds, func(m *scenario.ModeResult) { m.ClientRecoveryMS = rec(90000) }, "client recovery ms", ""},
		{"recovery at max ms", Thresholds{MaxRecoveryMS: rec(15000)}, func(m *scenario.ModeResult) { m.ClientRecoveryMS = rec(15000) }, "client recovery ms", ""},
		{"recovery past max ms", Thresholds{MaxRecoveryMS: rec(15000)}, func(m *scenario.ModeResult) { m.ClientRecoveryMS = rec(15000.1) }, "client recovery ms",
			"confirm-window: client recovery took 15,000 ms, over the limit (≤ 15,000)"},
		{"recovery at +10%", Thresholds{MaxRecoveryRisePct: rec(10)}, func(m *scenario.ModeResult) { m.ClientRecoveryMS = rec(11000) }, "client recovery ms", ""},
		{"recovery past +10%", Thresholds{MaxRecoveryRisePct: rec(10)}, func(m *scenario.ModeResult) { m.ClientRecoveryMS = rec(11001) }, "client recovery ms",
			"confirm-window: client recovery took 11,001 ms, over the limit (≤ 11,000 (+10%))"},
		{"recovery both limits, the lower holds", Thresholds{MaxRecoveryMS: rec(10500), MaxRecoveryRisePct: rec(10)}, func(m *scenario.ModeResult) { m.ClientRecoveryMS = rec(10501) }, "client recovery ms",
			"confirm-window: client recovery took 10,501 ms, over the limit (≤ 10,500, ≤ 11,000 (+10%))"},
		{"no recovery in the result is not checked", Thresholds{MaxRecoveryMS: rec(1)}, func(m *scenario.ModeResult) { m.ClientRecoveryMS = nil }, "client recovery ms", ""},
		{"one lost", testThresholds, func(m *scenario.ModeResult) { m.Lost = 1; m.Confirmed-- }, "lost (confirmed)",
			"confirm-window: 1 confirmed message lost"},
		{"lost allowed (transient)", testThresholds, func(m *scenario.ModeResult) { m.Lost = 500; m.LostAllowed = true }, "lost (confirmed)", ""},
		{"verdict fail", testThresholds, func(m *scenario.ModeResult) {
			m.Verdict = scenario.Verdict{Status: scenario.Fail, Reasons: []string{"in doubt 3 > max_in_doubt 0"}}
		}, "verdict", "confirm-window: verdict fail (in doubt 3 > max_in_doubt 0)"},
		{"verdict inconclusive", testThresholds, func(m *scenario.ModeResult) { m.Verdict = scenario.Verdict{Status: scenario.Inconclusive} }, "verdict",
			"confirm-window: verdict inconclusive"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := confirmMode()
			tc.set(&r)
			c := Compare(result(confirmMode()), result(r), tc.th)
			ch := checkOf(t, c, "confirm-window", tc.metric)
			if ch.Regression != tc.want || ch.OK != (tc.want == "") {
				t.Fatalf("check %+v\nwant regression %q", ch, tc.want)
			}
			var want []string
			if tc.want != "" {
				want = []string{tc.want}
			}
			if !slices.Equal(c.Regressions, want) {
				t.Fatalf("regressions %q, want %q", c.Regressions, want)
			}
		})
	}
}

func TestCompareModes(t *testing.T) {
	t.Run("missing from the result", func(t *testing.T) {
		c := Compare(result(fireMode(), confirmMode()), result(fireMode()), testThresholds)
		if want := []string{"confirm-window: missing from the result"}; !slices.Equal(c.Regressions, want) {
			t.Fatalf("regressions %q, want %q", c.Regressions, want)
		}
	})
	t.Run("not run in the result", func(t *testing.T) {
		r := confirmMode()
		r.NotRun = true
		c := Compare(result(confirmMode()), result(r), testThresholds)
		if want := []string{"confirm-window: not run in the result"}; !slices.Equal(c.Regressions, want) {
			t.Fatalf("regressions %q, want %q", c.Regressions, want)
		}
	})
	t.Run("new in the result: only lost and verdict", func(t *testing.T) {
		r := confirmMode()
		r.PreFaultPublishRate = 1 // no baseline to drop from
		r.Lost = 2
		c := Compare(result(fireMode()), result(fireMode(), r), testThresholds)
		if want := []string{"confirm-window: 2 confirmed messages lost"}; !slices.Equal(c.Regressions, want) {
			t.Fatalf("regressions %q, want %q", c.Regressions, want)
		}
		if n := len(c.Modes[1].Checks); n != 2 {
			t.Fatalf("new mode has %d checks, want verdict and lost: %+v", n, c.Modes[1].Checks)
		}
	})
	t.Run("baseline without rates is not checked", func(t *testing.T) {
		b := confirmMode()
		b.PreFaultPublishRate, b.ConfirmRate, b.ConfirmLatency = 0, 0, metrics.LatencySummary{}
		r := confirmMode()
		r.PreFaultPublishRate, r.ConfirmRate, r.ConfirmLatency.P99 = 1, 1, 1000
		c := Compare(result(b), result(r), testThresholds)
		if c.Regressed() {
			t.Fatalf("regressions %q", c.Regressions)
		}
	})
	t.Run("matrix cells matched by cell, not position", func(t *testing.T) {
		cell := func(q scenario.QueueType, persistent bool, rate float64) scenario.ModeResult {
			m := confirmMode()
			m.Cell = &scenario.Cell{QueueType: q, Persistent: persistent, Repeat: 1}
			m.PreFaultPublishRate = rate
			return m
		}
		base := result(cell(scenario.Quorum, true, 1000), cell(scenario.Classic, true, 4000))
		res := result(cell(scenario.Classic, true, 2000), cell(scenario.Quorum, true, 1000))
		c := Compare(base, res, testThresholds)
		want := []string{"confirm-window · classic · persistent · #1: publish msg/s (before fault) fell 50% (4,000 → 2,000 msg/s), more than the 20% allowed"}
		if !slices.Equal(c.Regressions, want) {
			t.Fatalf("regressions %q, want %q", c.Regressions, want)
		}
	})
	t.Run("burst sizes differ: a note, no regression", func(t *testing.T) {
		r := result(confirmMode())
		r.Messages = 20000
		c := Compare(result(confirmMode()), r, testThresholds)
		if c.Regressed() || len(c.Notes) != 1 || !strings.Contains(c.Notes[0], "4,000 orders per mode, the result 20,000") {
			t.Fatalf("regressions %q notes %q", c.Regressions, c.Notes)
		}
	})
}

func TestComparable(t *testing.T) {
	other := result()
	other.Scenario = "baseline"
	v2 := result()
	v2.SchemaVersion = scenario.SchemaVersion + 1
	v0 := result()
	v0.SchemaVersion = 0
	v1 := result()
	v1.SchemaVersion = 1
	empty := &scenario.Result{SchemaVersion: scenario.SchemaVersion}
	cases := []struct {
		base, res *scenario.Result
		want      string
	}{
		{result(), result(), ""},
		{result(), other, `new.json: scenario "baseline", but baseline old.json is of scenario "kill-mid-burst"`},
		{v2, result(), "old.json: schema_version 4, this rmqtorture reads schema_version 1 to 3"},
		{result(), v2, "new.json: schema_version 4, this rmqtorture reads schema_version 1 to 3"},
		{v0, result(), "old.json: schema_version 0, this rmqtorture reads schema_version 1 to 3"},
		{v1, result(), ""}, // a version 1 baseline still compares: only the series differ
		{result(), v1, ""},
		{result(), empty, "new.json: no scenario name: not an rmqtorture result.json"},
	}
	for _, tc := range cases {
		err := Comparable("old.json", tc.base, "new.json", tc.res)
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != tc.want {
			t.Errorf("Comparable = %q, want %q", got, tc.want)
		}
	}
}

func TestThresholdsValidate(t *testing.T) {
	bad := []Thresholds{
		{MaxThroughputDropPct: -1},
		{MaxThroughputDropPct: 100.1},
		{MaxP99RisePct: -0.5},
		{MaxRecoveryMS: f64(-1)},
		{MaxRecoveryRisePct: f64(-1)},
		{MaxMissingRisePts: -1},
		{MaxMissingRisePts: 100.5},
	}
	for _, th := range bad {
		if th.Validate() == nil {
			t.Errorf("%+v accepted", th)
		}
	}
	good := []Thresholds{testThresholds, {MaxThroughputDropPct: 100, MaxP99RisePct: 0, MaxRecoveryMS: f64(0), MaxRecoveryRisePct: f64(0), MaxMissingRisePts: 100}}
	for _, th := range good {
		if err := th.Validate(); err != nil {
			t.Errorf("%+v refused: %v", th, err)
		}
	}
}

// TestCompareMarkdownGolden pins the markdown of a comparison with one
// regression of each kind. Run with -update after an intended change.
func TestCompareMarkdownGolden(t *testing.T) {
	r := confirmMode()
	r.PreFaultPublishRate, r.ConfirmLatency.P99, r.Lost = 500, 8, 1
	c := Compare(result(fireMode(), confirmMode()), result(r), Thresholds{MaxThroughputDropPct: 20, MaxP99RisePct: 50, MaxRecoveryMS: f64(20000)})
	var buf bytes.Buffer
	if err := CompareMarkdown(&buf, c, "base.json", "new.json"); err != nil {
		t.Fatal(err)
	}
	const golden = "testdata/compare.golden.md"
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if buf.String() != string(want) {
		t.Fatalf("markdown differs from %s (run go test ./reports -run Golden -update and review the diff):\n%s", golden, buf.String())
	}
}

// TestCompareMissingShare: fire-and-forget's missing share (missing ÷ sent)
// may rise at most MaxMissingRisePts points; shares, not counts, so runs of
// different sizes compare. The baseline misses 3,000 of 4,000 (75%).
func TestCompareMissingShare(t *testing.T) {
	withMissing := func(sent, missing int) scenario.ModeResult {
		m := fireMode()
		m.Sent, m.UnconfirmedMissing = sent, missing
		m.UnconfirmedDelivered, m.Delivered, m.Deliveries = sent-missing, sent-missing, sent-missing
		return m
	}
	base := result(fireMode())
	th := testThresholds
	th.MaxMissingRisePts = 5
	for _, tc := range []struct {
		name               string
		res                scenario.ModeResult
		result, change, ok string
		regression         string
	}{
		{"same", withMissing(4000, 3000), "3,000 (75%)", "+0.0 pts", "ok", ""},
		{"at the limit", withMissing(4000, 3200), "3,200 (80%)", "+5.0 pts", "ok", ""},
		{"fewer missing", withMissing(4000, 100), "100 (2.5%)", "-72.5 pts", "ok", ""},
		{"half the run, same share", withMissing(2000, 1500), "1,500 (75%)", "+0.0 pts", "ok", ""},
		{"ten points more", withMissing(4000, 3400), "3,400 (85%)", "+10.0 pts", "REGRESSION",
			"fire-and-forget: missing share rose 10 points (75% → 85% of sent: 3,000 → 3,400 never delivered), more than the 5 allowed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Compare(base, result(tc.res), th)
			ch := checkOf(t, c, "fire-and-forget", "missing (unconfirmed)")
			if ch.Baseline != "3,000 (75%)" || ch.Result != tc.result || ch.Limit != "≤ 80% of sent (+5 pts)" || *ch.BaselineValue != 3000 || *ch.ResultValue != float64(tc.res.UnconfirmedMissing) {
				t.Errorf("cells %q / %q, limit %q, values %v / %v", ch.Baseline, ch.Result, ch.Limit, *ch.BaselineValue, *ch.ResultValue)
			}
			if ch.Regression != tc.regression || !slices.Equal(c.Regressions, nonEmpty(tc.regression)) {
				t.Errorf("regression %q (all: %q), want %q", ch.Regression, c.Regressions, tc.regression)
			}
			var md bytes.Buffer
			if err := CompareMarkdown(&md, c, "base.json", "new.json"); err != nil {
				t.Fatal(err)
			}
			var cells []string
			for _, l := range strings.Split(md.String(), "\n") {
				if strings.HasPrefix(l, "| missing (unconfirmed) ") {
					for _, c := range strings.Split(strings.Trim(l, "|"), "|") {
						cells = append(cells, strings.TrimSpace(c))
					}
				}
			}
			if want := []string{"missing (unconfirmed)", "3,000 (75%)", tc.result, tc.change, "≤ 80% of sent (+5 pts)", tc.ok}; !slices.Equal(cells, want) {
				line := strings.Join(cells, " | ")
				t.Errorf("table row %q, want %q", line, want)
			}
		})
	}
	// A baseline that missed nothing (no fault) holds the result to 5%.
	none := withMissing(4000, 0)
	c := Compare(result(none), result(withMissing(4000, 201)), th)
	if want := []string{"fire-and-forget: missing share rose 5 points (0% → 5% of sent: 0 → 201 never delivered), more than the 5 allowed"}; !slices.Equal(c.Regressions, want) {
		t.Errorf("regressions %q, want %q", c.Regressions, want)
	}
	// The default allows 10 points, and a limit never passes 100%.
	c = Compare(base, result(withMissing(4000, 3400)), testThresholds)
	if ch := checkOf(t, c, "fire-and-forget", "missing (unconfirmed)"); !ch.OK || ch.Limit != "≤ 85% of sent (+10 pts)" {
		t.Errorf("default: %+v", ch)
	}
	c = Compare(result(withMissing(4000, 3900)), result(withMissing(4000, 4000)), testThresholds)
	if ch := checkOf(t, c, "fire-and-forget", "missing (unconfirmed)"); !ch.OK || ch.Limit != "≤ 100% of sent (+10 pts)" || ch.Result != "4,000 (100%)" {
		t.Errorf("near 100%%: %+v", ch)
	}
	// Confirm modes miss nothing: no row.
	c = Compare(result(confirmMode()), result(confirmMode()), testThresholds)
	for _, ch := range c.Modes[0].Checks {
		if ch.Metric == "missing (unconfirmed)" {
			t.Errorf("confirm-window has a missing row: %+v", ch)
		}
	}
}

func nonEmpty(s string) []string {
	if s == "" {
		return nil
	}
	return []string{s}
}

// TestCompareJSON: -o json carries what the markdown does, with the
// figures as numbers and null where a threshold is off.
func TestCompareJSON(t *testing.T) {
	r := fireMode()
	r.UnconfirmedMissing, r.UnconfirmedDelivered = 3500, 500
	c := Compare(result(fireMode()), result(r), testThresholds)
	var buf bytes.Buffer
	if err := CompareJSON(&buf, c, "base.json", "new.json"); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Scenario, Baseline, Result string
		Regressed                  bool
		Regressions, Notes         []string
		Thresholds                 map[string]*float64
		Modes                      []struct {
			Mode   string
			Checks []map[string]any
		}
	}
	if err := json.Unmarshal(buf.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if got.Scenario != "kill-mid-burst" || got.Baseline != "base.json" || got.Result != "new.json" || !got.Regressed || len(got.Regressions) != 1 || got.Notes == nil {
		t.Fatalf("header: %+v", got)
	}
	th := got.Thresholds
	if *th["max_throughput_drop_pct"] != 20 || *th["max_p99_rise_pct"] != 50 || *th["max_missing_rise_pts"] != 10 || th["max_recovery_ms"] != nil || th["max_recovery_rise_pct"] != nil {
		t.Errorf("thresholds %v", buf.String())
	}
	if len(got.Modes) != 1 || got.Modes[0].Mode != "fire-and-forget" || len(got.Modes[0].Checks) != 4 {
		t.Fatalf("modes: %s", buf.String())
	}
	miss := got.Modes[0].Checks[1]
	want := map[string]any{"metric": "missing (unconfirmed)", "baseline": "3,000 (75%)", "result": "3,500 (87.5%)", "baseline_value": 3000.0, "result_value": 3500.0,
		"change_pct": nil, "change_pts": 12.5, "limit": "≤ 85% of sent (+10 pts)", "ok": false,
		"regression": "fire-and-forget: missing share rose 12.5 points (75% → 87.5% of sent: 3,000 → 3,500 never delivered), more than the 10 allowed"}
	if !reflect.DeepEqual(miss, want) {
		t.Errorf("missing check\n got %v\nwant %v", miss, want)
	}
}

// Two runs made with other settings say so, flag by flag, so a rate
// "regression" from --rate 2000 is read as the setting it is.
func TestCompareSettingNotes(t *testing.T) {
	base := &scenario.Result{Scenario: "s", Command: "rmqtorture run s --size=1024 --fail-on-missing --mode confirm-each", BrokerVersion: "4.0.5", Topology: "quorum, durable"}
	res := &scenario.Result{Scenario: "s", Command: "rmqtorture run s --rate 2000 --size 2048 --mode confirm-each -o json", BrokerVersion: "4.0.5", Topology: "quorum, durable"}
	got := settingNotes(base, res)
	want := []string{
		"The result ran with --rate 2000, the baseline without it.",
		"The baseline ran with --size 1024, the result with --size 2048.",
		"The baseline ran with --fail-on-missing true, the result without it.",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("notes\n%q\nwant\n%q", got, want)
	}
	no := false
	res.Command, res.BrokerVersion, res.Topology, res.FaultsInjected = base.Command, "4.3.6", "classic, durable", &no
	want = []string{
		`The baseline's queue and messages were "quorum, durable", the result's "classic, durable".`,
		"Only one of the two runs injected its faults (the other ran with --uri against a broker rmqtorture did not start).",
	}
	if got := settingNotes(base, res); !slices.Equal(got, want) {
		t.Fatalf("notes\n%q\nwant\n%q", got, want)
	}
}

// A confirm mode's rates are held to rate ÷ fire-and-forget's rate in the
// same run when both files ran fire-and-forget: a machine twice as slow
// for every mode fails only fire-and-forget's own (absolute) rate, while a
// confirm mode slower against its own run's fire-and-forget fails. Without
// a reference in either file the rate is compared in msg/s.
func TestCompareRatesAgainstSameRunReference(t *testing.T) {
	slow := func(f float64, ffRate, pre float64) *scenario.Result {
		ff, cw := fireMode(), confirmMode()
		ff.PreFaultPublishRate = ffRate
		cw.PreFaultPublishRate, cw.ConfirmRate = pre, 900*f
		return result(ff, cw)
	}
	base := result(fireMode(), confirmMode()) // 50,000 and 1,000 msg/s: 0.02×
	c := Compare(base, slow(0.5, 25000, 500), testThresholds)
	if want := []string{"fire-and-forget: publish msg/s (before fault) fell 50% (50,000 → 25,000 msg/s), more than the 20% allowed"}; !slices.Equal(c.Regressions, want) {
		t.Fatalf("twice as slow: %q, want %q", c.Regressions, want)
	}
	ch := checkOf(t, c, "confirm-window", "publish msg/s (before fault)")
	if !ch.OK || ch.Reference != ReferenceName || *ch.BaselineRatio != 0.02 || *ch.ResultRatio != 0.02 || *ch.BaselineValue != 1000 || *ch.ResultValue != 500 ||
		ch.Baseline != "1,000 (0.0200×)" || ch.Result != "500 (0.0200×)" || ch.Limit != "≥ 0.0160× fire-and-forget (−20%)" || *ch.ChangePct != 0 {
		t.Fatalf("twice as slow, confirm-window: %+v", ch)
	}
	// Same fire-and-forget, confirm-window 21% slower against it: 0.0158×
	// is below 0.016× (0.02× − 20%); 19% slower (0.0162×) is not.
	if c := Compare(base, slow(1, 50000, 790), testThresholds); !slices.Equal(c.Regressions, []string{
		"confirm-window: publish msg/s (before fault) fell 21% against fire-and-forget in the same run (0.0200× → 0.0158×; 1,000 → 790 msg/s), more than the 20% allowed"}) {
		t.Fatalf("21%% slower: %q", c.Regressions)
	}
	if c := Compare(base, slow(1, 50000, 810), testThresholds); len(c.Regressions) != 0 {
		t.Fatalf("19%% slower: %q", c.Regressions)
	}
	// No fire-and-forget in the result: msg/s against msg/s.
	c = Compare(base, result(confirmMode()), testThresholds)
	if ch := checkOf(t, c, "confirm-window", "publish msg/s (before fault)"); ch.Reference != "" || ch.BaselineRatio != nil || ch.Baseline != "1,000" || ch.Limit != "≥ 800 (−20%)" {
		t.Fatalf("no reference: %+v", ch)
	}
}

// Extreme figures a result.json may hold (a p99 of 1e308 ms over one of
// 5e-324) make a change no float holds: the comparison says so instead of
// failing to write its JSON.
func TestCompareExtremeFigures(t *testing.T) {
	base, res := confirmMode(), confirmMode()
	base.ConfirmLatency.P99, res.ConfirmLatency.P99 = 5e-324, 1e308
	c := Compare(result(fireMode(), base), result(fireMode(), res), testThresholds)
	ch := checkOf(t, c, "confirm-window", "confirm p99 ms")
	if ch.ChangePct != nil || ch.OK {
		t.Fatalf("p99 check %+v: want no change figure, not ok", ch)
	}
	if !strings.Contains(ch.Regression, "rose an unmeasurable amount") {
		t.Errorf("regression %q", ch.Regression)
	}
	if _, err := json.Marshal(c); err != nil {
		t.Fatalf("JSON: %v", err)
	}
}

// Issue 25: a 2,000-order run held to a 20,000-order baseline read
// "confirm msg/s fell 77 %" because that rate counts the down time. With
// intake rates on both sides compare holds what the broker took in before
// the fault instead, and leaves out the whole-burst and publish-call
// rates; a drop of the intake past the threshold still regresses.
func TestCompareHoldsIntake(t *testing.T) {
	base, small := confirmMode(), confirmMode()
	base.IntakeRate, base.ConfirmRate = 10000, 8000
	small.IntakeRate, small.ConfirmRate = 9800, 1840 // -2 %, and -77 % from the down time alone
	c := Compare(result(base), result(small), testThresholds)
	if c.Regressed() {
		t.Fatalf("regressed: %+v", c.Regressions)
	}
	if ch := checkOf(t, c, "confirm-window", "intake msg/s (before fault)"); !ch.OK || *ch.BaselineValue != 10000 || *ch.ResultValue != 9800 {
		t.Errorf("intake check %+v", ch)
	}
	for _, m := range c.Modes {
		for _, ch := range m.Checks {
			if ch.Metric == "confirm msg/s" || ch.Metric == "publish msg/s (before fault)" {
				t.Errorf("%s: %s still held beside the intake: %+v", m.Label, ch.Metric, ch)
			}
		}
	}
	slow := confirmMode()
	slow.IntakeRate = 10000 * (1 - (testThresholds.MaxThroughputDropPct+1)/100)
	if c := Compare(result(base), result(slow), testThresholds); !c.Regressed() {
		t.Errorf("intake %g against %g: no regression", slow.IntakeRate, base.IntakeRate)
	}
	// A result that could not tell its intake (a kill 0.4 s into a fast
	// confirm-window burst, under the 500 ms it needs) has no figure: not
	// a fall to 0, and not checked; nor is a baseline that could not tell.
	unknown := confirmMode()
	unknown.IntakeRate, unknown.IntakeUnknown = 0, "too short to time: 10,008 basic.acks in 412 ms before the fault (at least 1,000 in 500 ms are needed)"
	for _, pair := range [][2]scenario.ModeResult{{base, unknown}, {unknown, base}} {
		c := Compare(result(pair[0]), result(pair[1]), testThresholds)
		ch := checkOf(t, c, "confirm-window", "intake msg/s (before fault)")
		if c.Regressed() || !ch.OK || ch.Limit != "" || ch.ChangePct != nil || (ch.Baseline != "-" && ch.Result != "-") {
			t.Errorf("intake %v against %v: regressions %q, check %+v", pair[1].IntakeRate, pair[0].IntakeRate, c.Regressions, ch)
		}
	}
}
