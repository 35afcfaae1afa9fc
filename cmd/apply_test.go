package cmd

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/rmqtorture/rmqtorture/metrics"
	"github.com/rmqtorture/rmqtorture/scenario"
)

// A single --queue-types or --persistence value is applied to the run, not
// dropped because one cell is "not a matrix".
func TestRunFlagsSingleCellIsApplied(t *testing.T) {
	f, err := scenario.LoadFile("../scenarios.yaml")
	if err != nil {
		t.Fatal(err)
	}
	s, err := f.Find("../scenarios.yaml", "kill-mid-burst")
	if err != nil {
		t.Fatal(err)
	}
	sc := *s
	o := &runOpts{}
	c := newRunWith(&globalOpts{}, o)
	if err := c.ParseFlags([]string{"--queue-types", "classic", "--persistence", "transient"}); err != nil {
		t.Fatal(err)
	}
	if _, err := o.apply(c, "../scenarios.yaml", &sc); err != nil {
		t.Fatal(err)
	}
	if sc.IsMatrix() || sc.Queue.Type != scenario.Classic || sc.Load.IsPersistent() {
		t.Fatalf("queue %s persistent %v matrix %v", sc.Queue.Type, sc.Load.IsPersistent(), sc.IsMatrix())
	}
	if want := "classic, durable; transient messages, mandatory"; sc.Topology() != want {
		t.Fatalf("topology %q, want %q", sc.Topology(), want)
	}
}

// Flag overrides go through the loader's own rules: a classic queue under a
// nack-requeue consumer is refused whether the file or --queue-types says
// classic, with the flag named; nothing is started (exit 2).
func TestRunOverrideCheckedLikeTheFile(t *testing.T) {
	t.Setenv("DOCKER_HOST", "tcp://127.0.0.1:1")
	// A nack-requeue consumer that never gives up (the shipped
	// delivery-limit scenarios set consumers.max_deliveries).
	file := filepath.Join(t.TempDir(), "s.yaml")
	if err := os.WriteFile(file, []byte("version: 1\nscenarios:\n  - name: delivery-limit\n    queue: {type: quorum, dead_letter_queue: true, arguments: {x-delivery-limit: 3}}\n    load: {messages: 100, modes: [confirm-window]}\n    consumers: {count: 1, on_delivery: nack-requeue}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := runCLI(t, "run", "delivery-limit", "-f", file, "--queue-types", "classic")
	want := `rmqtorture: --queue-types classic: scenario "delivery-limit": consumers.on_delivery: nack-requeue on a classic queue cycles until drain.timeout: classic queues have no delivery limit (use a quorum queue, or reject)` + "\n"
	if code != ExitUsage || stderr != want {
		t.Fatalf("exit %d, stderr\n%q\nwant exit 2 and\n%q", code, stderr, want)
	}
	// Two values make a matrix: the classic cell is refused all the same.
	code, _, stderr = runCLI(t, "run", "delivery-limit", "-f", file, "--queue-types", "quorum,classic")
	want = `rmqtorture: --queue-types quorum,classic: scenario "delivery-limit": consumers.on_delivery: nack-requeue on a classic queue cycles until drain.timeout: classic queues have no delivery limit (use a quorum queue, or reject)` + "\n"
	if code != ExitUsage || stderr != want {
		t.Fatalf("exit %d, stderr\n%q\nwant exit 2 and\n%q", code, stderr, want)
	}
}

const expectsConfirmWindow = `version: 1
scenarios:
  - name: kill-mid-burst
    load: {messages: 100, modes: [confirm-each, confirm-window]}
    faults: [{action: kill, published_percent: 50}]
    expect:
      modes:
        confirm-each: {sent: 100}
        confirm-window: {sent: 100, lost: 0}
`

// In a file, an expectation for a mode the scenario does not run is an
// error (exit 2), for validate and run alike.
func TestExpectationForModeNotRunIsBadInput(t *testing.T) {
	t.Setenv("DOCKER_HOST", "tcp://127.0.0.1:1")
	bad := filepath.Join(t.TempDir(), "s.yaml")
	data := strings.Replace(expectsConfirmWindow, "modes: [confirm-each, confirm-window]", "modes: [confirm-each]", 1)
	if err := os.WriteFile(bad, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	want := "rmqtorture: " + bad + `:9:25: scenarios[0].expect.modes.confirm-window: "confirm-window" is not one of this scenario's load.modes` + "\n"
	for _, args := range [][]string{{"validate", "-f", bad}, {"run", "kill-mid-burst", "-f", bad}} {
		code, _, stderr := runCLI(t, args...)
		if code != ExitUsage || stderr != want {
			t.Errorf("%v: exit %d, stderr\n%q\nwant exit 2 and\n%q", args, code, stderr, want)
		}
	}
}

// --mode leaving out a mode the scenario expects warns on stderr and
// returns the warning; the expectation is dropped, the run goes ahead.
func TestModeFlagWarnsOfUncheckedExpectations(t *testing.T) {
	file := filepath.Join(t.TempDir(), "s.yaml")
	if err := os.WriteFile(file, []byte(expectsConfirmWindow), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := scenario.LoadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	sc := f.Scenarios[0]
	o := &runOpts{}
	c := newRunWith(&globalOpts{}, o)
	var stderr bytes.Buffer
	c.SetErr(&stderr)
	if err := c.ParseFlags([]string{"--mode", "confirm-each"}); err != nil {
		t.Fatal(err)
	}
	warnings, err := o.apply(c, file, &sc)
	if err != nil {
		t.Fatal(err)
	}
	want := `expect.modes.confirm-window of scenario "kill-mid-burst" is not checked: --mode runs only confirm-each`
	if len(warnings) != 1 || warnings[0] != want || stderr.String() != "warning: "+want+"\n" {
		t.Fatalf("warnings %q, stderr %q; want [%q] and it on stderr", warnings, stderr.String(), want)
	}
	if _, ok := sc.Expect.Modes[scenario.ConfirmWindow]; ok || len(f.Scenarios[0].Expect.Modes) != 2 {
		t.Fatalf("expectations: run %v, file %v; want confirm-window dropped from the run only", sc.Expect.Modes, f.Scenarios[0].Expect.Modes)
	}
	// Through the command: the warning is printed before Docker is asked.
	t.Setenv("DOCKER_HOST", "tcp://127.0.0.1:1")
	code, _, errOut := runCLI(t, "run", "kill-mid-burst", "-f", file, "--mode", "confirm-each")
	if code != ExitError || !strings.HasPrefix(errOut, "warning: "+want+"\n") {
		t.Fatalf("exit %d, stderr %q; want exit 4 (no Docker) after the warning", code, errOut)
	}
}

// --nodes and --containers set broker.nodes and the defaults that depend on
// it, as the file would; --containers keeps its names, trimmed, in node
// order for provisioning; --nodes 1 runs a cluster scenario that relied on
// the defaults on one broker.
func TestRunClusterFlagsApplied(t *testing.T) {
	f, err := scenario.LoadFile("../scenarios.yaml")
	if err != nil {
		t.Fatal(err)
	}
	s, err := f.Find("../scenarios.yaml", "kill-mid-burst")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args       []string
		nodes      int
		connect    scenario.ConnectTo
		containers []string
	}{
		{[]string{"--nodes", "3"}, 3, scenario.ConnectLeader, nil},
		{[]string{"--nodes", "5"}, 5, scenario.ConnectLeader, nil},
		{[]string{"--containers", "rmq-a, rmq-b,rmq-c"}, 3, scenario.ConnectLeader, []string{"rmq-a", "rmq-b", "rmq-c"}},
		{[]string{"--nodes", "1"}, 1, "", nil},
	} {
		sc := *s
		o := &runOpts{}
		c := newRunWith(&globalOpts{}, o)
		if err := c.ParseFlags(tc.args); err != nil {
			t.Fatal(err)
		}
		if _, err := o.apply(c, "../scenarios.yaml", &sc); err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		if sc.Broker.Nodes != tc.nodes || sc.Load.ConnectTo != tc.connect || strings.Join(o.containers, "|") != strings.Join(tc.containers, "|") {
			t.Errorf("%v: nodes %d connect_to %q containers %q, want %d %q %q", tc.args, sc.Broker.Nodes, sc.Load.ConnectTo, o.containers, tc.nodes, tc.connect, tc.containers)
		}
		if s.Broker.Nodes != 1 || s.Load.ConnectTo != "" {
			t.Fatalf("%v changed the loaded scenario: nodes %d connect_to %q", tc.args, s.Broker.Nodes, s.Load.ConnectTo)
		}
	}
}

// --fail-on-missing sets expect.max_unconfirmed_missing to 0, so
// fire-and-forget's silent loss fails the verdict (exit 1) with a reason
// in plain words; without it the same loss passes (the headline warns).
func TestRunFailOnMissing(t *testing.T) {
	f, err := scenario.LoadFile("../scenarios.yaml")
	if err != nil {
		t.Fatal(err)
	}
	s, err := f.Find("../scenarios.yaml", "kill-mid-burst")
	if err != nil {
		t.Fatal(err)
	}
	lossy := metrics.Counts{Sent: 20000, UnconfirmedDelivered: 401, UnconfirmedMissing: 19599, Delivered: 401}
	for _, tc := range []struct {
		args []string
		want scenario.Verdict
	}{
		{nil, scenario.Verdict{Status: scenario.Pass}},
		{[]string{"--fail-on-missing"}, scenario.Verdict{Status: scenario.Fail, Reasons: []string{"19,599 of 20,000 orders missing: published without an error, never delivered; expect.max_unconfirmed_missing (or --fail-on-missing) allows 0"}}},
	} {
		sc := *s
		o := &runOpts{}
		c := newRunWith(&globalOpts{}, o)
		if err := c.ParseFlags(tc.args); err != nil {
			t.Fatal(err)
		}
		if _, err := o.apply(c, "../scenarios.yaml", &sc); err != nil {
			t.Fatal(err)
		}
		got := scenario.Judge(scenario.FireAndForget, lossy, scenario.Observed{}, sc.Expect, scenario.Conditions{})
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%v: verdict %+v, want %+v", tc.args, got, tc.want)
		}
	}
	if s.Expect.MaxUnconfirmedMissing != nil {
		t.Fatal("--fail-on-missing changed the loaded scenario itself")
	}
}

// --fail-on-missing on a scenario (or --mode) without fire-and-forget
// checks nothing: apply says so on stderr and in the warnings result.json
// carries, and stays silent when fire-and-forget runs.
func TestRunFailOnMissingWithoutFireAndForget(t *testing.T) {
	f, err := scenario.LoadFile("../scenarios.yaml")
	if err != nil {
		t.Fatal(err)
	}
	const warn = `--fail-on-missing checks nothing in scenario "%s": it runs no fire-and-forget mode, the only one that publishes without a confirm (name it in --mode to check it)`
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"kill-classic", []string{"--fail-on-missing"}, []string{fmt.Sprintf(warn, "kill-classic")}},
		{"kill-mid-burst", []string{"--fail-on-missing", "--mode", "confirm-each"}, []string{fmt.Sprintf(warn, "kill-mid-burst")}},
		{"kill-mid-burst", []string{"--fail-on-missing"}, nil},
		{"kill-classic", nil, nil},
	} {
		s, err := f.Find("../scenarios.yaml", tc.name)
		if err != nil {
			t.Fatal(err)
		}
		sc := *s
		o := &runOpts{}
		c := newRunWith(&globalOpts{}, o)
		var stderr bytes.Buffer
		c.SetErr(&stderr)
		if err := c.ParseFlags(tc.args); err != nil {
			t.Fatal(err)
		}
		got, err := o.apply(c, "../scenarios.yaml", &sc)
		if err != nil {
			t.Fatal(err)
		}
		// --mode also warns of the expectations it leaves unchecked.
		got = slices.DeleteFunc(got, func(w string) bool { return !strings.HasPrefix(w, "--fail-on-missing") })
		var wantErr string
		for _, w := range tc.want {
			wantErr += "warning: " + w + "\n"
		}
		if !slices.Equal(got, tc.want) || strings.Contains(stderr.String(), "--fail-on-missing") != (wantErr != "") || !strings.Contains(stderr.String(), wantErr) {
			t.Errorf("%s %v: warnings %q, stderr %q; want %q", tc.name, tc.args, got, stderr.String(), tc.want)
		}
	}
}
