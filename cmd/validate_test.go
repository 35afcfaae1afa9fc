package cmd

import (
	"flag"
	"os"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files")

// TestValidateGolden pins the resolved plan `validate` prints for every
// shipped scenario (broker, topology, load, fault timeline with triggers,
// drain, expectations, every default filled in). Run with -update after an
// intended change and review the diff.
func TestValidateGolden(t *testing.T) {
	code, stdout, stderr := runCLI(t, "validate", "-f", "../scenarios.yaml")
	if code != ExitPass {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	const golden = "testdata/validate.golden"
	if *update {
		if err := os.WriteFile(golden, []byte(stdout), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if stdout != string(want) {
		got, exp := strings.Split(stdout, "\n"), strings.Split(string(want), "\n")
		for i := range min(len(got), len(exp)) {
			if got[i] != exp[i] {
				t.Fatalf("validate output differs from %s at line %d:\n got: %s\nwant: %s\n(run go test ./cmd -run Golden -update and review the diff)", golden, i+1, got[i], exp[i])
			}
		}
		t.Fatalf("validate output differs from %s in length: %d lines, want %d", golden, len(got), len(exp))
	}
}
