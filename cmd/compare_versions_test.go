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

const (
	warn43 = "baseline ran RabbitMQ 4.0.5 (rmqtorture/rabbitmq:4.0-trixie), candidate RabbitMQ 4.3.6 (rmqtorture/rabbitmq:4.3-forky): differences may be the broker's, not your change"
	strict = "rmqtorture: --strict: the baseline and the candidate ran on different brokers (pass --across-versions to compare across versions on purpose)"
)

// on43 is the stored kill-mid-burst result as if run on 4.3.6 (forky).
func on43(t *testing.T) *scenario.Result {
	r := loadTestResult(t, baselineFile)
	r.BrokerVersion, r.Image = "RabbitMQ 4.3.6", "rmqtorture/rabbitmq:4.3-forky"
	return r
}

// writeRun writes r as dir/name/result.json, a run folder, and returns the
// folder.
func writeRun(t *testing.T, dir, name string, r *scenario.Result) string {
	t.Helper()
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	run := filepath.Join(dir, name)
	if err := os.MkdirAll(run, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(run, "result.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return run
}

// The same run on another broker: a warning naming both on stderr and in
// the output, exit 0; --strict makes it exit 1 unless --across-versions.
func TestCompareBrokerWarning(t *testing.T) {
	cand := writeResult(t, on43(t))
	code, stdout, stderr := runCLI(t, "compare", baselineFile, cand)
	if code != ExitPass || stderr != "warning: "+warn43+"\n" || !strings.Contains(stdout, "**No regression.**\n\n**Warning:** "+warn43+".\n") {
		t.Fatalf("exit %d, stderr %q, stdout:\n%s", code, stderr, stdout)
	}
	if strings.Contains(stdout, "--image") || strings.Contains(stdout, "ran on RabbitMQ") {
		t.Errorf("the broker is named twice:\n%s", stdout)
	}
	code, stdout, stderr = runCLI(t, "compare", "--strict", baselineFile, cand)
	if code != ExitFail || stderr != "warning: "+warn43+"\n"+strict+"\n" || !strings.Contains(stdout, "**Warning:** "+warn43) {
		t.Fatalf("--strict: exit %d, stderr %q", code, stderr)
	}
	code, stdout, stderr = runCLI(t, "compare", "-o", "json", baselineFile, cand)
	var js struct {
		Warnings []string `json:"warnings"`
	}
	if code != ExitPass || json.Unmarshal([]byte(stdout), &js) != nil || !slices.Equal(js.Warnings, []string{warn43}) || stderr != "warning: "+warn43+"\n" {
		t.Fatalf("-o json: exit %d, warnings %q, stderr %q", code, js.Warnings, stderr)
	}
	// --across-versions: the difference is the question; no warning, no failure.
	code, stdout, stderr = runCLI(t, "compare", "--strict", "--across-versions", baselineFile, cand)
	if code != ExitPass || stderr != "" || !strings.HasPrefix(stdout, "## rmqtorture compare across versions\n\nBaseline `"+baselineFile+"`: RabbitMQ 4.0.5 (rmqtorture/rabbitmq:4.0-trixie).\nCandidate `"+cand+"`: RabbitMQ 4.3.6 (rmqtorture/rabbitmq:4.3-forky).\n\n**No regression.**\n") || strings.Contains(stdout, "**Warning:**") {
		t.Fatalf("--across-versions: exit %d, stderr %q, stdout:\n%s", code, stderr, stdout)
	}
	// Same broker: neither a warning nor a failure under --strict.
	if code, _, stderr := runCLI(t, "compare", "--strict", baselineFile, baselineFile); code != ExitPass || stderr != "" {
		t.Fatalf("same broker --strict: exit %d, stderr %q", code, stderr)
	}
}

// A result without broker_version (written before it was recorded) is an
// unknown version: no false warning, a note that says so, --strict passes.
func TestCompareUnknownBrokerVersion(t *testing.T) {
	old := loadTestResult(t, baselineFile)
	old.BrokerVersion = ""
	code, stdout, stderr := runCLI(t, "compare", "--strict", writeResult(t, old), baselineFile)
	note := "Note: The baseline's broker version is unknown (no broker_version in its result.json): compare cannot tell whether it ran the result's RabbitMQ 4.0.5, so it does not warn.\n"
	if code != ExitPass || stderr != "" || !strings.Contains(stdout, note) || strings.Contains(stdout, "**Warning:**") {
		t.Fatalf("exit %d, stderr %q, stdout:\n%s", code, stderr, stdout)
	}
	// Another image with the version unknown: the images differ, so it warns.
	old.Image = "rmqtorture/rabbitmq:3.10-bookworm"
	code, _, stderr = runCLI(t, "compare", writeResult(t, old), baselineFile)
	if want := "warning: baseline ran an unknown version (rmqtorture/rabbitmq:3.10-bookworm), candidate RabbitMQ 4.0.5 (rmqtorture/rabbitmq:4.0-trixie): differences may be the broker's, not your change\n"; code != ExitPass || stderr != want {
		t.Fatalf("exit %d, stderr %q, want %q", code, stderr, want)
	}
}

// Folders of run folders on each side, paired by scenario, mode and cell:
// a planted regression fails until an accept entry accepts it; a scenario
// only the candidate has is listed, and fails nothing; the same sides as
// lists of files around -- compare the same.
func TestCompareAcrossVersionsFolders(t *testing.T) {
	plantedThresholds(t)
	dir := t.TempDir()
	kill := loadTestResult(t, baselineFile)
	base := loadTestResult(t, baselineFile)
	base.Scenario = "baseline"
	oldK := writeRun(t, filepath.Join(dir, "old"), "kill-mid-burst-20261201-1", kill)
	oldB := writeRun(t, filepath.Join(dir, "old"), "baseline-20261201-1", base)
	k43, b43, extra := on43(t), on43(t), on43(t)
	b43.Scenario, extra.Scenario = "baseline", "delivery-limit"
	i := slices.IndexFunc(k43.Modes, func(m scenario.ModeResult) bool { return m.Mode == scenario.ConfirmWindow })
	k43.Modes[i].PreFaultPublishRate /= 2
	newK := writeRun(t, filepath.Join(dir, "new"), "kill-mid-burst-20261201-2", k43)
	newB := writeRun(t, filepath.Join(dir, "new"), "baseline-20261201-2", b43)
	writeRun(t, filepath.Join(dir, "new"), "delivery-limit-20261201-2", extra)
	// A folder in the side that holds no result is not a run: skipped.
	if err := os.MkdirAll(filepath.Join(dir, "new", "notes"), 0o755); err != nil {
		t.Fatal(err)
	}
	old, new := filepath.Join(dir, "old"), filepath.Join(dir, "new")

	code, stdout, stderr := runCLI(t, "compare", "--across-versions", old, new)
	reg := "kill-mid-burst: confirm-window: publish msg/s (before fault) fell 50% ("
	if code != ExitFail || stderr != "rmqtorture: 1 regression against baseline "+old+"\n" {
		t.Fatalf("exit %d, stderr %q, stdout:\n%s", code, stderr, stdout)
	}
	if got := regressionLines(stdout); len(got) != 2 || !strings.HasPrefix(got[0], reg) || got[1] != "delivery-limit: only in the candidate (`"+filepath.Join(newK, "..", "delivery-limit-20261201-2", "result.json")+"`)" {
		t.Fatalf("listed %q, want the regression and the unpaired scenario:\n%s", got, stdout)
	}
	for _, s := range []string{"#### baseline\n", "#### kill-mid-burst\n", "Baseline `" + filepath.Join(oldB, "result.json") + "` on RabbitMQ 4.0.5 (rmqtorture/rabbitmq:4.0-trixie), candidate `" + filepath.Join(newB, "result.json") + "` on RabbitMQ 4.3.6 (rmqtorture/rabbitmq:4.3-forky).\n"} {
		if !strings.Contains(stdout, s) {
			t.Errorf("stdout lacks %q", s)
		}
	}

	accept := filepath.Join(dir, "accept.yaml")
	if err := os.WriteFile(accept, []byte("accept:\n  - scenario: kill-mid-burst\n    mode: confirm-window\n    field: pre_fault_publish_rate_msgs_per_s\n    because: forky's Erlang 27 is slower here, measured in issue 13\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr = runCLI(t, "compare", "--across-versions", "--accept", accept, old, new)
	if code != ExitPass || stderr != "" || !strings.Contains(stdout, "Accepted (1):\n\n- "+reg) || !strings.Contains(stdout, ": accepted: forky's Erlang 27 is slower here, measured in issue 13 ("+accept+":2)\n") {
		t.Fatalf("accepted: exit %d, stderr %q, stdout:\n%s", code, stderr, stdout)
	}

	// Lists around --, and -o json: the same pairs.
	code, stdout, stderr = runCLI(t, "compare", "--across-versions", "-o", "json", "--accept", accept, oldK, oldB, "--", newB, newK)
	var js struct {
		Regressed bool     `json:"regressed"`
		Accepted  []string `json:"accepted"`
		Pairs     []struct {
			Scenario string `json:"scenario"`
		} `json:"pairs"`
		Unpaired []struct{ Scenario string } `json:"unpaired"`
	}
	if err := json.Unmarshal([]byte(stdout), &js); err != nil || code != ExitPass || stderr != "" {
		t.Fatalf("lists: exit %d, stderr %q, %v:\n%s", code, stderr, err, stdout)
	}
	if js.Regressed || len(js.Accepted) != 1 || len(js.Pairs) != 2 || js.Pairs[0].Scenario != "baseline" || js.Pairs[1].Scenario != "kill-mid-burst" || len(js.Unpaired) != 0 {
		t.Fatalf("lists: %+v", js)
	}

	// Without --across-versions the sets compare too, and warn; --strict fails.
	code, _, stderr = runCLI(t, "compare", "--strict", "--accept", accept, old, new)
	if code != ExitFail || stderr != "warning: "+warn43+"\n"+strict+"\n" {
		t.Fatalf("--strict on sets: exit %d, stderr %q", code, stderr)
	}
}

// The committed baselines (baselines/, used by the regression workflow and
// scripts/regression-smoke.sh) name their broker, so compare can warn when
// a run on another broker is held to them.
func TestBaselinesNameTheirBroker(t *testing.T) {
	files, err := filepath.Glob("../baselines/*.result.json")
	if err != nil {
		t.Fatal(err)
	}
	more, err := filepath.Glob("../baselines/*/*.result.json")
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, more...)
	if len(files) < 3 {
		t.Fatalf("found %d baselines: %q", len(files), files)
	}
	for _, f := range files {
		r, err := loadResult(f)
		if err != nil {
			t.Fatal(err)
		}
		if r.BrokerVersion == "" || r.Image == "" {
			t.Errorf("%s: broker_version %q, image %q: a baseline must name its broker", f, r.BrokerVersion, r.Image)
		}
	}
}
