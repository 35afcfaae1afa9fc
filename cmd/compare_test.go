package cmd

import (
	"encoding/json"
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
		"confirm-window: publish msg/s (before fault) fell 50% (",
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
		{[]string{baselineFile, v2Path}, v2Path + ": schema_version 3, this rmqtorture reads schema_version 1 to 2"},
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
