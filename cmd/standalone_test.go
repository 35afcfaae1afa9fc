package cmd

import (
	"encoding/json"
	"runtime/debug"
	"slices"
	"strings"
	"testing"

	"github.com/clipperhouse/displaywidth"
)

// TestVersionText pins what --version and `version` print for a build
// from a tagged module with VCS stamps, from a modified checkout, and from
// a build without VCS information.
func TestVersionText(t *testing.T) {
	deps := []*debug.Module{
		{Path: "github.com/spf13/cobra", Version: "v1.10.2"},
		{Path: "github.com/rabbitmq/amqp091-go", Version: "v1.16.0"},
	}
	tagged := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "github.com/rmqtorture/rmqtorture", Version: "v0.4.0"}, Deps: deps,
		Settings: []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: "18ca937f5e0a3c1b2d4e6f708192a3b4c5d6e7f8"}, {Key: "vcs.time", Value: "2026-12-01T16:59:00Z"}, {Key: "vcs.modified", Value: "false"}}}
	modified := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "github.com/rmqtorture/rmqtorture", Version: "(devel)"}, Deps: deps,
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "18ca937f5e0a3c1b2d4e6f708192a3b4c5d6e7f8"}, {Key: "vcs.time", Value: "2026-12-01T16:59:00Z"}, {Key: "vcs.modified", Value: "true"}}}
	bare := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "github.com/rmqtorture/rmqtorture", Version: "(devel)"}}
	for _, c := range []struct {
		name string
		bi   *debug.BuildInfo
		ok   bool
		want string
	}{
		{"tagged", tagged, true, "rmqtorture v0.4.0\n  commit  18ca937f5e0a3c1b2d4e6f708192a3b4c5d6e7f8\n  date    2026-12-01T16:59:00Z\n  client  amqp091-go v1.16.0\n  go      go1.26.8\n"},
		{"modified", modified, true, "rmqtorture dev\n  commit  18ca937f5e0a3c1b2d4e6f708192a3b4c5d6e7f8 (with uncommitted changes)\n  date    2026-12-01T16:59:00Z\n  client  amqp091-go v1.16.0\n  go      go1.26.8\n"},
		{"no VCS", bare, true, "rmqtorture dev\n  commit  unknown (built without version control information)\n  client  amqp091-go\n  go      go1.26.8\n"},
		{"no build info", nil, false, "rmqtorture dev\n  commit  unknown (built without version control information)\n  client  amqp091-go\n  go      unknown\n"},
	} {
		if got := versionText(c.bi, c.ok); got != c.want {
			t.Errorf("%s:\n got %q\nwant %q", c.name, got, c.want)
		}
	}
	old := Version
	Version = "v9.9.9"
	defer func() { Version = old }()
	if got := versionText(tagged, true); !strings.HasPrefix(got, "rmqtorture v9.9.9\n") {
		t.Errorf("-ldflags Version: got %q", got)
	}
}

// TestVersionCommands: --version and `version` print the same text.
func TestVersionCommands(t *testing.T) {
	want := versionText(debug.ReadBuildInfo())
	for _, args := range [][]string{{"--version"}, {"version"}} {
		code, out, errOut := runCLI(t, args...)
		if code != ExitPass || out != want || errOut != "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want %q", args, code, out, errOut, want)
		}
	}
}

// complete runs cobra's hidden __complete command (what the shell
// completion scripts call) and returns the offered values, descriptions
// cut off, and the directive line.
func complete(t *testing.T, args ...string) ([]string, string) {
	t.Helper()
	code, out, errOut := runCLI(t, append([]string{"__complete"}, args...)...)
	if code != ExitPass {
		t.Fatalf("__complete %v: exit %d: %s", args, code, errOut)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	var vals []string
	for _, l := range lines[:len(lines)-1] {
		v, _, _ := strings.Cut(l, "\t")
		vals = append(vals, v)
	}
	return vals, lines[len(lines)-1]
}

func TestCompletion(t *testing.T) {
	const noFiles = ":4" // cobra.ShellCompDirectiveNoFileComp
	for _, c := range []struct {
		args []string
		want []string
	}{
		// scenario names from the built-in file, and from -f
		{[]string{"run", "kill-mid-burst"}, []string{"kill-mid-burst", "kill-mid-burst-tx"}},
		{[]string{"run", "kill-mid-burst", "kill-mid-"}, []string{"kill-mid-burst-tx"}},
		{[]string{"validate", "delivery-limit"}, []string{"delivery-limit", "delivery-limit-default", "delivery-limit-unlimited"}},
		{[]string{"run", "-f", "testdata/two.yaml", ""}, []string{"first", "second"}},
		// enum flag values
		{[]string{"run", "x", "--mode", ""}, []string{"fire-and-forget", "confirm-each", "confirm-window", "transactional"}},
		{[]string{"run", "x", "--mode", "confirm-each,"}, []string{"confirm-each,fire-and-forget", "confirm-each,confirm-window", "confirm-each,transactional"}},
		{[]string{"run", "x", "--queue-types", ""}, []string{"quorum", "classic"}},
		{[]string{"run", "x", "--queue-types", "classic,"}, []string{"classic,quorum"}},
		{[]string{"run", "x", "--persistence", ""}, []string{"persistent", "transient"}},
		{[]string{"run", "x", "--nodes", ""}, []string{"1", "3", "5"}},
		{[]string{"report", "r.json", "--format", ""}, []string{"markdown", "table", "json", "summary"}},
		{[]string{"list", "-o", ""}, []string{"wide", "json"}},
		{[]string{"validate", "-o", ""}, []string{"json"}},
	} {
		got, directive := complete(t, c.args...)
		if !slices.Equal(got, c.want) || directive != noFiles {
			t.Errorf("complete %q: %q %s, want %q %s", c.args, got, directive, c.want, noFiles)
		}
	}
	// Every format report renders is offered (summary was once left out).
	got, _ := complete(t, "report", "r.json", "--format", "")
	for f := range formats {
		if !slices.Contains(got, f) {
			t.Errorf("report --format completion %q lacks %q", got, f)
		}
	}
	// -f is offered where a scenario file is read, and nowhere else.
	for cmd, want := range map[string]bool{"run": true, "list": true, "validate": true, "compare": false, "check": false, "report": false, "cleanup": false, "version": false} {
		got, _ := complete(t, cmd, "-")
		if slices.Contains(got, "-f") != want || slices.Contains(got, "--file") != want {
			t.Errorf("%s: flags offered %q; -f offered: %v, want %v", cmd, got, !want, want)
		}
	}
}

// TestList pins list's three outputs on the built-in scenarios.
func TestList(t *testing.T) {
	code, out, errOut := runCLI(t, "list")
	if code != ExitPass {
		t.Fatalf("list: exit %d: %s", code, errOut)
	}
	narrow := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	code, out, errOut = runCLI(t, "list", "-o", "wide")
	if code != ExitPass {
		t.Fatalf("list -o wide: exit %d: %s", code, errOut)
	}
	wide := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(narrow) != len(wide) {
		t.Fatalf("list: %d lines, -o wide %d", len(narrow), len(wide))
	}
	cut := 0
	for i, n := range narrow {
		w := wide[i]
		switch {
		case displaywidth.String(n) > 100:
			t.Errorf("list line %d is %d columns wide, more than 100: %q", i+1, displaywidth.String(n), n)
		case n == w:
		case strings.HasSuffix(n, "…") && strings.HasPrefix(w, strings.TrimSuffix(n, "…")) && displaywidth.String(n) == 100:
			cut++
		default:
			t.Errorf("list line %d %q is neither the wide line %q nor it cut to 100 columns", i+1, n, w)
		}
	}
	if cut == 0 {
		t.Error("no line was cut: the test shows nothing")
	}
	// Every description starts in one column, however long the name:
	// memory-alarm-fire-and-forget (28) and dead-letter-ttl-kill-at-least-once
	// (34) are longer than most.
	descAt := func(line string) int {
		name, _, _ := strings.Cut(line, " ")
		return len(name) + len(line[len(name):]) - len(strings.TrimLeft(line[len(name):], " "))
	}
	for i, w := range wide {
		if descAt(w) != descAt(wide[0]) {
			t.Errorf("list -o wide line %d: description at column %d, line 1's at %d: %q", i+1, descAt(w), descAt(wide[0]), w)
		}
	}
	if want := "kill-classic" + strings.Repeat(" ", descAt(wide[0])-len("kill-classic")) + "kill-mid-burst on a classic queue, awaiting each confirm, SIGKILL at 40% (rabbitmq/amqp091-go#46): the pending confirm resolves as in doubt, not nacked, and no confirmed order is lost."; !slices.Contains(wide, want) {
		t.Errorf("list -o wide has no line %q", want)
	}

	code, out, errOut = runCLI(t, "list", "-o", "json")
	if code != ExitPass {
		t.Fatalf("list -o json: exit %d: %s", code, errOut)
	}
	var got []listedScenario
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	if len(got) != len(wide) {
		t.Errorf("list -o json: %d scenarios, list %d", len(got), len(wide))
	}
	byName := map[string]listedScenario{}
	for _, s := range got {
		byName[s.Name] = s
	}
	for _, want := range []listedScenario{
		{Name: "kill-classic", Description: "kill-mid-burst on a classic queue, awaiting each confirm, SIGKILL at 40% (rabbitmq/amqp091-go#46): the pending confirm resolves as in doubt, not nacked, and no confirmed order is lost.",
			Modes: []string{"confirm-each", "confirm-window"}, Nodes: 1, QueueType: "classic", Faults: []string{"kill"}},
		{Name: "baseline", Description: "The same 20,000 orders with no fault: what each publishing mode costs in throughput and confirm latency on an undisturbed broker. Run it before a fault scenario to read that scenario's rates against.",
			Modes: []string{"fire-and-forget", "confirm-each", "confirm-window"}, Nodes: 1, QueueType: "quorum", Faults: []string{}},
	} {
		s := byName[want.Name]
		if s.Description != want.Description || !slices.Equal(s.Modes, want.Modes) || s.Nodes != want.Nodes || s.QueueType != want.QueueType || !slices.Equal(s.Faults, want.Faults) {
			t.Errorf("list -o json %s:\n got %+v\nwant %+v", want.Name, s, want)
		}
	}
	if s := byName["leader-kill-mid-burst"]; s.Nodes != 3 {
		t.Errorf("leader-kill-mid-burst: nodes %d, want 3", s.Nodes)
	}
	if !strings.Contains(out, `"faults": []`) {
		t.Error("a scenario without faults must list faults: [], not null")
	}
}

// TestValidateJSON pins validate -o json on a valid file, a file with two
// errors and a mistyped scenario name.
func TestValidateJSON(t *testing.T) {
	code, out, errOut := runCLI(t, "validate", "-o", "json", "-f", "testdata/two.yaml")
	if want := "{\n  \"file\": \"testdata/two.yaml\",\n  \"ok\": true,\n  \"errors\": [],\n  \"scenarios\": [\n    \"first\",\n    \"second\"\n  ]\n}\n"; code != ExitPass || out != want || errOut != "" {
		t.Errorf("valid file: exit %d, stderr %q, stdout\n%s\nwant\n%s", code, errOut, out, want)
	}

	code, out, errOut = runCLI(t, "validate", "-o", "json", "-f", "testdata/bad.yaml")
	want := `{
  "file": "testdata/bad.yaml",
  "ok": false,
  "errors": [
    {
      "file": "testdata/bad.yaml",
      "line": 5,
      "column": 17,
      "field": "scenarios[0].load.messages",
      "message": "must be within 1–10000000, got 0"
    },
    {
      "file": "testdata/bad.yaml",
      "line": 7,
      "column": 35,
      "field": "scenarios[1].load.modes[0]",
      "message": "\"confirm-eahc\" is not a mode (fire-and-forget, confirm-each, confirm-window, transactional); did you mean confirm-each?"
    }
  ],
  "scenarios": []
}
`
	if code != ExitUsage || out != want || !strings.HasPrefix(errOut, "rmqtorture: testdata/bad.yaml:5:17: scenarios[0].load.messages: must be within 1–10000000, got 0\n") {
		t.Errorf("bad file: exit %d, stderr %q, stdout\n%s\nwant exit 2 and\n%s", code, errOut, out, want)
	}

	code, out, _ = runCLI(t, "validate", "-o", "json", "kill-mid-burst", "kill-mid-bust")
	want = `{
  "file": "scenarios.yaml",
  "ok": false,
  "errors": [
    {
      "file": "scenarios.yaml",
      "message": "no scenario named \"kill-mid-bust\"; did you mean kill-mid-burst?"
    }
  ],
  "scenarios": []
}
`
	if code != ExitUsage || out != want {
		t.Errorf("mistyped name: exit %d, stdout\n%s\nwant exit 2 and\n%s", code, out, want)
	}
}

// TestBuiltInFileErrors: an error in the built-in scenarios names
// scenarios.yaml and its line, as one in the file would.
func TestBuiltInFileErrors(t *testing.T) {
	old := Shipped
	defer func() { Shipped = old }()
	Shipped = []byte("version: 1\nscenarios:\n  - name: s\n    load: {messages: 0}\n")
	for _, cmd := range []string{"list", "validate"} {
		code, out, errOut := runCLI(t, cmd)
		if want := "rmqtorture: scenarios.yaml:4:22: scenarios[0].load.messages: must be within 1–10000000, got 0\n"; code != ExitUsage || errOut != want || out != "" {
			t.Errorf("%s: exit %d, stderr %q, stdout %q; want exit 2, %q", cmd, code, errOut, out, want)
		}
	}
	Shipped = nil
	code, _, errOut := runCLI(t, "list")
	if want := "rmqtorture: this rmqtorture was built without its scenarios: name a scenario file with -f\n"; code != ExitUsage || errOut != want {
		t.Errorf("no built-in file: exit %d, stderr %q, want %q", code, errOut, want)
	}
}
