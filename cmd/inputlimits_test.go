package cmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestInputLimitsRefusedStartingNothing: a file over the size limit, a key
// given twice, a missing count, a number not written in decimal, an
// unbounded duration and an overlong text are each refused by validate and
// by run with exit 2 and the exact message, before Docker is asked for
// anything (DOCKER_HOST points nowhere: a run that reached it would exit 4).
func TestInputLimitsRefusedStartingNothing(t *testing.T) {
	dir := t.TempDir()
	const head = "version: 1\nscenarios:\n  - name: x\n"
	files := []struct {
		name, yaml, want string
	}{
		{"big.yaml", head + "    description: " + strings.Repeat("x", 1<<20) + "\n",
			"big.yaml: 1048628 bytes: a scenario file may be at most 1048576 bytes (1 MiB); refusing to read it"},
		{"dup.yaml", head + "    load:\n      modes: [confirm-each]\n      messages: 10\n      messages: 20\n",
			`dup.yaml:7:7: scenarios[0].load.messages: "messages" given twice, at lines 6 and 7: keep one`},
		{"missing.yaml", head + "    load: {window: 10}\n",
			"missing.yaml:4:11: scenarios[0].load.messages: missing; write how many orders the burst publishes (1–10000000), e.g. messages: 1000"},
		{"hex.yaml", head + "    load: {messages: 0x10}\n",
			`hex.yaml:4:22: scenarios[0].load.messages: "0x10" is not written in decimal (YAML reads it as 16): write 16`},
		{"down.yaml", head + "    load: {messages: 400}\n    faults: [{action: kill, published_percent: 50, down: 1000000h}]\n",
			"down.yaml:5:58: scenarios[0].faults[0].down: must be at most 10m, got 1000000h"},
		{"ready.yaml", head + "    broker: {ready_timeout: 1000h}\n    load: {messages: 400}\n",
			"ready.yaml:4:29: scenarios[0].broker.ready_timeout: must be at most 10m, got 1000h"},
		{"desc.yaml", head + "    description: " + strings.Repeat("x", 4097) + "\n    load: {messages: 400}\n",
			"desc.yaml:4:18: scenarios[0].description: must be at most 4,096 characters, got 4,097"},
	}
	t.Setenv("DOCKER_HOST", "tcp://127.0.0.1:1")
	for _, f := range files {
		path := filepath.Join(dir, f.name)
		if err := os.WriteFile(path, []byte(f.yaml), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, args := range [][]string{{"validate", "-f", path}, {"run", "x", "-f", path, "--out", dir}} {
			code, stdout, stderr := runCLI(t, args...)
			if want := "rmqtorture: " + filepath.Join(dir, f.want) + "\n"; code != ExitUsage || stderr != want || stdout != "" {
				t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2 and %q", args, code, stdout, stderr, want)
			}
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != len(files) {
		t.Errorf("%d entries in the output directory, want only the %d scenario files: a run started", len(entries), len(files))
	}
}
