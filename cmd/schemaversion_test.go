package cmd

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rmqtorture/rmqtorture/reports"
)

// oldResults are result.json files as older rmqtorture builds left them:
// the committed baselines as first recorded (schema_version 1) and as they
// stood before schema_version 3 (hand-upgraded to 2).
const oldResults = "../reports/testdata/old"

// TestOldResultsStillRead: report renders every old file (markdown and the
// upgraded JSON, which is a valid current result.json), and compare takes
// them on either side.
func TestOldResultsStillRead(t *testing.T) {
	plantedThresholds(t)
	files, _ := filepath.Glob(filepath.Join(oldResults, "v[12]-*.result.json"))
	if len(files) != 8 {
		t.Fatalf("%d old results, want 8: %q", len(files), files)
	}
	for _, f := range files {
		code, stdout, stderr := runCLI(t, "report", f, "--format", "json")
		if code != ExitPass || stderr != "" {
			t.Fatalf("report %s: exit %d, stderr %q", f, code, stderr)
		}
		if err := reports.Validate([]byte(stdout)); err != nil {
			t.Errorf("report %s --format json: %v", f, err)
		}
		var head struct {
			SchemaVersion int `json:"schema_version"`
			MigratedFrom  int `json:"migrated_from"`
		}
		if err := json.Unmarshal([]byte(stdout), &head); err != nil || head.SchemaVersion != 3 || head.MigratedFrom != int(filepath.Base(f)[1]-'0') {
			t.Errorf("%s: %+v %v", f, head, err)
		}
		if code, stdout, _ := runCLI(t, "report", f); code != ExitPass || !strings.Contains(stdout, "- **Result file:** written as schema_version ") {
			t.Errorf("report %s (markdown): exit %d", f, code)
		}
	}
	v1 := filepath.Join(oldResults, "v1-kill-mid-burst.result.json")
	v2 := filepath.Join(oldResults, "v2-kill-mid-burst.result.json")
	code, stdout, stderr := runCLI(t, "compare", v1, v2)
	if code != ExitPass || !strings.Contains(stdout, "**No regression.**") {
		t.Fatalf("compare v1 v2: exit %d, stderr %q\n%s", code, stderr, stdout)
	}
	if !strings.Contains(stdout, "| missing (unconfirmed)        | 18,763 (93.8%) | 18,763 (93.8%) | +0.0 pts | ≤ 100% of sent (+10 pts) | ok     |") {
		t.Errorf("no missing row:\n%s", stdout)
	}
	// The version 1 baseline against the baseline regenerated under
	// schema_version 3: rates may differ (another run), but the files
	// compare: never bad input.
	code, stdout, stderr = runCLI(t, "compare", v1, "../baselines/kill-mid-burst.result.json")
	if code == ExitUsage || !strings.Contains(stdout, "| missing (unconfirmed)") || !strings.Contains(stdout, "18,763 (93.8%)") {
		t.Fatalf("compare v1 with the current baseline: exit %d, stderr %q\n%s", code, stderr, stdout)
	}
}
