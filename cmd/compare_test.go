package cmd

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rmqtorture/rmqtorture/scenario"
)

// baselineFile is a real result.json: `rmqtorture run kill-mid-burst
// --messages 4000` on the development machine (2 cores, busy), copied
// unchanged.
const baselineFile = "testdata/compare/baseline.result.json"

func loadTestResult(t *testing.T, path string) *scenario.Result {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var r scenario.Result
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return &r
}

func writeResult(t *testing.T, r *scenario.Result) string {
	t.Helper()
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "result.json")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// regressionLines returns the "- ..." lines under the REGRESSION heading.
func regressionLines(stdout string) []string {
	var out []string
	for _, l := range strings.Split(stdout, "\n") {
		if s, ok := strings.CutPrefix(l, "- "); ok {
			out = append(out, s)
		}
	}
	return out
}

func TestCompareRealResultAgainstItself(t *testing.T) {
	base := loadTestResult(t, baselineFile)
	if base.Scenario != "kill-mid-burst" || len(base.Modes) != 3 || base.Verdict.Status != scenario.Pass {
		t.Fatalf("testdata is not the passing three-mode kill-mid-burst run: %s, %d modes, %s", base.Scenario, len(base.Modes), base.Verdict.Status)
	}
	summary := filepath.Join(t.TempDir(), "summary.md")
	if err := os.WriteFile(summary, []byte("# earlier step\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runCLI(t, "compare", "--summary-file", summary, baselineFile, baselineFile)
	if code != ExitPass {
		t.Fatalf("exit %d, want 0\n%s\n%s", code, stdout, stderr)
	}
	if !strings.Contains(stdout, "**No regression.**") || regressionLines(stdout) != nil {
		t.Fatalf("stdout:\n%s", stdout)
	}
	for _, m := range base.Modes {
		if !strings.Contains(stdout, "\n### "+string(m.Mode)+"\n") {
			t.Errorf("no table for %s", m.Mode)
		}
	}
	got, err := os.ReadFile(summary)
	if err != nil {
		t.Fatal(err)
	}
	if want := "# earlier step\n\n" + stdout; string(got) != want {
		t.Fatalf("summary file is not the earlier content plus a blank line and stdout:\n%s", got)
	}
}

// The planted regression: confirm-window's throughput halved, its p99
// doubled, one of its confirmed messages lost. Exactly those three are named.
func TestComparePlantedRegression(t *testing.T) {
	plantedThresholds(t)
	r := loadTestResult(t, baselineFile)
	i := slices.IndexFunc(r.Modes, func(m scenario.ModeResult) bool { return m.Mode == scenario.ConfirmWindow })
	m := &r.Modes[i]
	m.PreFaultPublishRate /= 2
	m.ConfirmLatency.P99 *= 2
	m.Confirmed--
	m.Lost++
	code, stdout, stderr := runCLI(t, "compare", baselineFile, writeResult(t, r))
	if code != ExitFail {
		t.Fatalf("exit %d, want 1\n%s\n%s", code, stdout, stderr)
	}
	got := regressionLines(stdout)
	wantPrefixes := []string{
		"confirm-window: 1 confirmed message lost",
		// Held against fire-and-forget's rate in the same run (10,353 ÷ 3,984).
		"confirm-window: publish msg/s (before fault) fell 50% against fire-and-forget in the same run (2.60× → 1.30×; 10,353 → 5,176 msg/s)",
		"confirm-window: confirm p99 rose 100% (",
	}
	if len(got) != len(wantPrefixes) {
		t.Fatalf("regressions %q, want %d", got, len(wantPrefixes))
	}
	for j, p := range wantPrefixes {
		if !strings.HasPrefix(got[j], p) {
			t.Errorf("regression %d = %q, want prefix %q", j, got[j], p)
		}
	}
	if want := "3 regressions against baseline " + baselineFile; !strings.Contains(stderr, want) {
		t.Errorf("stderr %q lacks %q", stderr, want)
	}
	if n := strings.Count(stdout, "| REGRESSION |"); n != 3 {
		t.Errorf("%d REGRESSION rows, want 3:\n%s", n, stdout)
	}
}

func TestCompareBadInput(t *testing.T) {
	other := loadTestResult(t, baselineFile)
	other.Scenario = "baseline"
	otherPath := writeResult(t, other)
	v2 := loadTestResult(t, baselineFile)
	v2.SchemaVersion = scenario.SchemaVersion + 1
	v2Path := writeResult(t, v2)
	garbage := filepath.Join(t.TempDir(), "garbage.json")
	if err := os.WriteFile(garbage, []byte("not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(t.TempDir(), "missing.json")
	// A result whose confirm-each mode lacks its sent count: the schema
	// check names the file, the schema and the field.
	var doc map[string]any
	if err := json.Unmarshal([]byte(readFile(t, baselineFile)), &doc); err != nil {
		t.Fatal(err)
	}
	delete(doc["modes"].([]any)[1].(map[string]any), "sent")
	noSentJSON, _ := json.Marshal(doc)
	noSent := filepath.Join(t.TempDir(), "nosent.json")
	if err := os.WriteFile(noSent, noSentJSON, 0o644); err != nil {
		t.Fatal(err)
	}
	// A result.json cut short, and one that is JSON but not a result: bad
	// input (exit 2), never read as a regression.
	whole, err := os.ReadFile(baselineFile)
	if err != nil {
		t.Fatal(err)
	}
	truncated := filepath.Join(t.TempDir(), "truncated.json")
	malformed := filepath.Join(t.TempDir(), "malformed.json")
	if err := os.WriteFile(truncated, whole[:len(whole)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(malformed, []byte(`{"schema_version": 1, "scenario": "kill-mid-burst", "modes": []}`), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		args []string
		want string
	}{
		{[]string{baselineFile}, "compare takes two files, BASELINE.json and RESULT.json; got 1"},
		{[]string{missing, baselineFile}, "read result: open " + missing + ": no such file or directory"},
		{[]string{baselineFile, garbage}, garbage + ": "},
		{[]string{baselineFile, truncated}, truncated + ": "},
		{[]string{baselineFile, malformed}, malformed + ": "},
		{[]string{baselineFile, otherPath}, otherPath + `: scenario "baseline", but baseline ` + baselineFile + ` is of scenario "kill-mid-burst"`},
		{[]string{baselineFile, v2Path}, v2Path + ": schema_version 4, this rmqtorture reads schema_version 1 to 3"},
		{[]string{baselineFile, noSent}, noSent + ": does not match the schema of schema_version 2 (reports/schemas/result.v2.schema.json): /modes/1: missing property 'sent'"},
		{[]string{baselineFile, baselineFile, baselineFile}, "compare takes two files, BASELINE.json and RESULT.json; got 3 (" + baselineFile + " " + baselineFile + " " + baselineFile + "): to compare the newest run, pass $(ls -d DIR/SCENARIO-* | tail -1)"},
		{[]string{baselineFile, "a", "b", "c"}, "compare takes two files, BASELINE.json and RESULT.json; got 4 (" + baselineFile + " a b …): to compare the newest run, pass $(ls -d DIR/SCENARIO-* | tail -1)"},
		{[]string{"--max-missing-rise", "-1", baselineFile, baselineFile}, "max missing rise must be 0–100 percentage points, got -1"},
		{[]string{"-o", "wide", baselineFile, baselineFile}, `unknown output format "wide"; choose one of markdown, json`},
		{[]string{"--max-throughput-drop", "120", baselineFile, baselineFile}, "max throughput drop must be 0–100 %, got 120"},
		{[]string{"--max-recovery-ms", "-1", baselineFile, baselineFile}, "max recovery must be ≥ 0 ms, got -1"},
	}
	for _, tc := range cases {
		code, stdout, stderr := runCLI(t, append([]string{"compare"}, tc.args...)...)
		if code != ExitUsage || !strings.Contains(stderr, tc.want) || stdout != "" {
			t.Errorf("compare %q: exit %d, stderr %q, stdout %q; want exit 2 and %q", tc.args, code, stderr, stdout, tc.want)
		}
	}
}

// TestCompareRunFolders: with two runs of a scenario in the results folder,
// the README's `compare BASE $(ls -d DIR/SCENARIO-* | tail -1)` names the
// newest run folder, and compare reads its result.json; a folder without
// one is bad input naming the file.
func TestCompareRunFolders(t *testing.T) {
	plantedThresholds(t)
	dir := t.TempDir()
	older := filepath.Join(dir, "kill-mid-burst-20261201T090000Z-aaaaaaaa")
	newer := filepath.Join(dir, "kill-mid-burst-20261201T100000Z-bbbbbbbb")
	slow := loadTestResult(t, baselineFile)
	for i := range slow.Modes {
		slow.Modes[i].PreFaultPublishRate /= 2
	}
	for d, body := range map[string]string{older: writeResult(t, slow), newer: baselineFile} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "result.json"), []byte(readFile(t, body)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	runs, _ := filepath.Glob(filepath.Join(dir, "kill-mid-burst-*"))
	slices.Sort(runs) // ls -d sorts by name: the timestamp
	if runs[len(runs)-1] != newer {
		t.Fatalf("newest %s", runs[len(runs)-1])
	}
	code, stdout, stderr := runCLI(t, "compare", baselineFile, runs[len(runs)-1])
	if code != ExitPass || !strings.Contains(stdout, "result `"+filepath.Join(newer, "result.json")+"`") {
		t.Fatalf("newest: exit %d, stderr %q\n%s", code, stderr, stdout)
	}
	// The older run is the slow one: folders are really read. Every rate
	// halved, so only fire-and-forget's own rate regresses: the confirm
	// modes are held to their rate ÷ fire-and-forget's in the same run,
	// which a uniformly slower machine does not move.
	if code, stdout, _ := runCLI(t, "compare", baselineFile, older); code != ExitFail || !slices.Equal(regressionLines(stdout), []string{"fire-and-forget: publish msg/s (before fault) fell 50% (3,984 → 1,992 msg/s), more than the 20% allowed"}) {
		t.Fatalf("older: exit %d\n%s", code, stdout)
	}
	empty := t.TempDir()
	if code, _, stderr := runCLI(t, "compare", baselineFile, empty); code != ExitUsage || !strings.Contains(stderr, "read result: open "+filepath.Join(empty, "result.json")+": no such file or directory") {
		t.Fatalf("empty folder: exit %d, stderr %q", code, stderr)
	}
}

// TestCompareOutputJSON: -o json prints the comparison as one JSON object on
// stdout (and the summary file still gets markdown); fire-and-forget's
// missing count is compared: 3 of 4,000 in the stored run, raised to 603 it
// is a regression of 15 points (10 allowed).
func TestCompareOutputJSON(t *testing.T) {
	plantedThresholds(t)
	r := loadTestResult(t, baselineFile)
	if r.Modes[0].Mode != scenario.FireAndForget || r.Modes[0].UnconfirmedMissing != 3 || r.Modes[0].Sent != 4000 {
		t.Fatalf("testdata fire-and-forget: %s, %d of %d missing", r.Modes[0].Mode, r.Modes[0].UnconfirmedMissing, r.Modes[0].Sent)
	}
	r.Modes[0].UnconfirmedMissing, r.Modes[0].UnconfirmedDelivered = 603, 3397
	res := writeResult(t, r)
	summary := filepath.Join(t.TempDir(), "summary.md")
	code, stdout, stderr := runCLI(t, "compare", "-o", "json", "--summary-file", summary, baselineFile, res)
	if code != ExitFail {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	var got struct {
		Regressed   bool
		Regressions []string
		Modes       []struct {
			Mode   string
			Checks []struct {
				Metric    string
				ChangePts *float64 `json:"change_pts"`
				OK        bool
			}
		}
	}
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatalf("stdout is not JSON: %v\n%s", err, stdout)
	}
	want := "fire-and-forget: missing share rose 15 points (0.1% → 15.1% of sent: 3 → 603 never delivered), more than the 10 allowed"
	if !got.Regressed || !slices.Equal(got.Regressions, []string{want}) {
		t.Fatalf("regressions %q, want %q", got.Regressions, want)
	}
	miss := got.Modes[0].Checks[1]
	if miss.Metric != "missing (unconfirmed)" || miss.OK || math.Abs(*miss.ChangePts-15) > 1e-9 {
		t.Errorf("missing check %+v", miss)
	}
	if md := readFile(t, summary); !strings.Contains(md, "| missing (unconfirmed)") || !strings.Contains(md, "+15.0 pts") {
		t.Errorf("summary file:\n%s", md)
	}
	// -o markdown is the default output.
	_, def, _ := runCLI(t, "compare", baselineFile, res)
	if _, md, _ := runCLI(t, "compare", "-o", "markdown", baselineFile, res); md != def || !strings.HasPrefix(md, "## rmqtorture compare: kill-mid-burst\n") {
		t.Errorf("-o markdown differs from the default:\n%s", md)
	}
}

// plantedThresholds gives compare, through its RMQTORTURE_* variables, the
// limits the planted regressions of these tests were sized for (a 20 %
// drop, a 50 % p99 rise, 10 points of missing share): the defaults follow
// the measured run-to-run noise and are far wider.
func plantedThresholds(t *testing.T) {
	t.Setenv("RMQTORTURE_MAX_THROUGHPUT_DROP", "20")
	t.Setenv("RMQTORTURE_MAX_P99_RISE", "50")
	t.Setenv("RMQTORTURE_MAX_MISSING_RISE", "10")
}
