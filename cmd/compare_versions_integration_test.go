package cmd

import (
	"path/filepath"
	"strings"
	"testing"
)

// The same scenario run on RabbitMQ 3.10.8 (bookworm) and 4.0.5 (trixie),
// each with --image, then compared: the results name their brokers, compare
// warns naming both (exit 0), --strict fails (exit 1), and --strict with
// --across-versions does not. The rate and p99 checks are switched off as in
// scripts/regression-smoke.sh (a short burst on a busy machine varies 15×):
// this checks the broker naming, not the broker's speed.
func TestCompareAcrossRealVersions(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: needs Docker and the 3.10-bookworm and 4.0-trixie images")
	}
	const old, cur = "rmqtorture/rabbitmq:3.10-bookworm", "rmqtorture/rabbitmq:4.0-trixie"
	out := t.TempDir()
	var runs []string
	for _, img := range []string{old, cur} {
		dir := filepath.Join(out, strings.ReplaceAll(img, "/", "_"))
		code, _, stderr := runCLI(t, "run", "baseline", "-f", "../scenarios.yaml", "--messages", "300", "--image", img, "--out", dir, "-q")
		if code != ExitPass {
			t.Fatalf("%s: exit %d\n%s", img, code, stderr)
		}
		found, err := filepath.Glob(filepath.Join(dir, "baseline-*", "result.json"))
		if err != nil || len(found) != 1 {
			t.Fatalf("%s: results %q (%v)", img, found, err)
		}
		runs = append(runs, found[0])
	}
	loose := []string{"--max-throughput-drop", "100", "--max-p99-rise", "10000"}
	warning := "warning: baseline ran RabbitMQ 3.10.8 (rmqtorture/rabbitmq:3.10-bookworm), candidate RabbitMQ 4.0.5 (rmqtorture/rabbitmq:4.0-trixie): differences may be the broker's, not your change\n"
	code, stdout, stderr := runCLI(t, append(append([]string{"compare"}, loose...), runs...)...)
	if code != ExitPass || stderr != warning || !strings.Contains(stdout, "**Warning:** "+strings.TrimPrefix(strings.TrimSuffix(warning, "\n"), "warning: ")+".\n") {
		t.Fatalf("compare: exit %d, stderr %q\n%s", code, stderr, stdout)
	}
	code, _, stderr = runCLI(t, append(append([]string{"compare", "--strict"}, loose...), runs...)...)
	if code != ExitFail || stderr != warning+strict+"\n" {
		t.Fatalf("compare --strict: exit %d, stderr %q", code, stderr)
	}
	code, stdout, stderr = runCLI(t, append(append([]string{"compare", "--strict", "--across-versions"}, loose...), runs...)...)
	if code != ExitPass || stderr != "" || !strings.Contains(stdout, "Baseline `"+runs[0]+"`: RabbitMQ 3.10.8 ("+old+").\nCandidate `"+runs[1]+"`: RabbitMQ 4.0.5 ("+cur+").\n\n**No regression.**\n") {
		t.Fatalf("compare --strict --across-versions: exit %d, stderr %q\n%s", code, stderr, stdout)
	}
	t.Log("\n" + stdout)
}
