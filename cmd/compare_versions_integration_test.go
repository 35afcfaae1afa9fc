package cmd

import (
	"strings"
	"testing"
)

// checkCompareAcrossVersions compares two real runs of one scenario, the
// baseline on RabbitMQ 3.10.8 (image old) and the candidate on 4.0.5
// (image cur): the results name their brokers, compare warns naming both
// (exit 0), --strict fails (exit 1), and --strict with --across-versions
// does not. The rate and p99 checks are switched off as in
// scripts/regression-smoke.sh (a short burst on a busy machine varies 15×):
// this checks the broker naming, not the broker's speed.
// TestImagesSideBySide calls it on its two runs.
func checkCompareAcrossVersions(t *testing.T, old, cur string, runs []string) {
	t.Helper()
	loose := []string{"--max-throughput-drop", "100", "--max-p99-rise", "10000"}
	warning := "warning: baseline ran RabbitMQ 3.10.8 (" + old + "), candidate RabbitMQ 4.0.5 (" + cur + "): differences may be the broker's, not your change\n"
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
}
