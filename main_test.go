package main

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"

	"github.com/rmqtorture/rmqtorture/cmd"
)

// TestBuiltInScenarios runs the command line as main does, from a folder
// with no scenarios.yaml and without -f: list, validate and a mistyped run
// read the scenarios built into the binary.
func TestBuiltInScenarios(t *testing.T) {
	golden, err := os.ReadFile("cmd/testdata/validate.golden")
	if err != nil {
		t.Fatal(err)
	}
	file, err := os.ReadFile("scenarios.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(shipped, file) {
		t.Fatal("the embedded scenarios differ from scenarios.yaml")
	}
	cmd.Shipped = shipped
	t.Chdir(t.TempDir())
	t.Setenv("DOCKER_HOST", "tcp://127.0.0.1:1") // nothing here may reach Docker
	exec := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := cmd.Execute(context.Background(), args, &out, &errb)
		return code, out.String(), errb.String()
	}

	code, out, errOut := exec("list")
	if code != cmd.ExitPass {
		t.Fatalf("list: exit %d: %s", code, errOut)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if want := strings.Count(string(file), "\n  - name: "); len(lines) != want {
		t.Errorf("list: %d lines, want one per scenario in scenarios.yaml: %d", len(lines), want)
	}
	// Names are padded to the longest one, so descriptions line up.
	if f := strings.Fields(lines[0]); len(f) < 2 || f[0] != "kill-mid-burst" || !strings.HasPrefix(strings.TrimSpace(strings.TrimPrefix(lines[0], "kill-mid-burst")), "20,000 persistent orders to a quorum queue;") {
		t.Errorf("list: first line %q", lines[0])
	}

	code, out, errOut = exec("validate")
	if code != cmd.ExitPass {
		t.Fatalf("validate: exit %d: %s", code, errOut)
	}
	if out != string(golden) {
		t.Error("validate of the built-in scenarios differs from cmd/testdata/validate.golden (validate -f ../scenarios.yaml)")
	}

	code, out, errOut = exec("run", "kill-mid-brust")
	if want := "rmqtorture: scenarios.yaml: no scenario named \"kill-mid-brust\"; did you mean kill-mid-burst?\n"; code != cmd.ExitUsage || errOut != want || out != "" {
		t.Errorf("run kill-mid-brust: exit %d, stderr %q, stdout %q; want exit 2, %q", code, errOut, out, want)
	}
}
