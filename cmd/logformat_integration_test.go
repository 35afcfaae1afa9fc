package cmd

import (
	"encoding/json"
	"strings"
	"testing"
)

// --log-format json on a real run: every stderr line is one JSON object
// with slog's time, level and msg; the burst's start is there with the
// run id; no step line is printed.
func TestLogFormatJSONOnBroker(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: needs Docker and the broker image")
	}
	t.Cleanup(func() { resetShared(t) })
	code, stdout, stderr := runCLI(t, "run", "baseline", "-f", "../scenarios.yaml", "--out", t.TempDir(),
		"--mode", "confirm-window", "--messages", "500", "--container", sharedBroker(t).Name, "--log-format", "json")
	if code != ExitPass {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	r := readResult(t, stdout)
	var msgs []string
	for _, line := range strings.Split(strings.TrimSuffix(stderr, "\n"), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("stderr line %q is not JSON: %v", line, err)
		}
		if rec["time"] == nil || rec["level"] == nil || rec["msg"] == nil {
			t.Fatalf("stderr line %q lacks time, level or msg", line)
		}
		if rec["msg"] == "burst started" && rec["run"] != r.RunID {
			t.Fatalf("burst started for run %v, want %s", rec["run"], r.RunID)
		}
		msgs = append(msgs, rec["msg"].(string))
	}
	if !strings.Contains(strings.Join(msgs, "\n"), "burst started") || strings.Contains(stderr, "verdict   ") {
		t.Fatalf("log messages %q: want the burst's start and no step line", msgs)
	}
}
