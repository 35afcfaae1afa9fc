package scenario

import (
	"fmt"
	"go/ast"
	goparser "go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rmqtorture/rmqtorture/metrics"
)

// The lookups other code relies on answer from the table.
func TestActionTable(t *testing.T) {
	type want struct {
		recovery          Action
		leaves            string
		recovers, client  bool
		isRecovery, takes bool // takes: down
		state             metrics.BrokerState
		fromTrigger       bool
	}
	for a, w := range map[Action]want{
		Kill:                     {Start, "stopped", true, false, false, true, metrics.StateDown, true},
		Stop:                     {Start, "stopped", true, false, false, true, metrics.StateDown, true},
		Restart:                  {"", "up", false, false, false, false, metrics.StateDown, true},
		Pause:                    {Unpause, "paused", true, false, false, true, metrics.StatePaused, false},
		Disconnect:               {Reconnect, "disconnected", true, false, false, true, metrics.StateDisconnected, false},
		MemoryAlarm:              {"", "alarmed", true, false, false, true, "", false},
		Start:                    {"", "up", false, false, true, false, "", false},
		CrashConsumer:            {"", "up", false, true, false, true, "", false},
		PublishToMissingExchange: {"", "up", false, true, false, false, "", false},
	} {
		r, l := a.Recovery()
		st, ft, ok := a.LeavesState()
		if r != w.recovery || l != w.leaves || a.Recovers() != w.recovers || a.ClientSide() != w.client ||
			a.IsRecovery() != w.isRecovery || a.Takes(ParamDown) != w.takes || st != w.state || ft != w.fromTrigger || ok != (w.state != "") {
			t.Errorf("%s: recovery %q %q recovers %v client %v isRecovery %v down %v state %q %v %v", a, r, l, a.Recovers(), a.ClientSide(), a.IsRecovery(), a.Takes(ParamDown), st, ft, ok)
		}
	}
	if !Kill.Takes(ParamSignal) || Stop.Takes(ParamSignal) || !Restart.Takes(ParamGrace) || Kill.Takes(ParamGrace) {
		t.Error("signal is kill's, grace is stop's and restart's")
	}
	if Start.Repeatable() || PublishToMissingExchange.Repeatable() || !Kill.Repeatable() {
		t.Error("recoveries and publish-to-missing-exchange cannot repeat; kill can")
	}
	if Start.RecoveredState() != "stopped" || Unpause.RecoveredState() != "paused" || Reconnect.RecoveredState() != "disconnected" || Kill.RecoveredState() != "" {
		t.Error("RecoveredState")
	}
	if r, l := Action("nope").Recovery(); r != "" || l != "up" || Action("nope").Known() {
		t.Error("unknown action")
	}
}

func TestTargetString(t *testing.T) {
	for want, tg := range map[string]Target{
		"broker":                  BrokerTarget(),
		"broker ":                 {}, // zero target is the broker
		"node rmq2":               {Kind: TargetNode, Node: 2},
		"leader of q":             {Kind: TargetLeader, Queue: "q"},
		"follower of q":           {Kind: TargetFollower, Queue: "q"},
		"minority":                {Kind: TargetMinority},
		"2 nodes (majority of q)": {Kind: TargetMajority, Queue: "q", Count: 2},
		"all":                     {Kind: TargetAll},
	} {
		if want == "broker " {
			want = "broker"
		}
		if got := tg.String(); got != want {
			t.Errorf("%+v: %q, want %q", tg, got, want)
		}
	}
	if !BrokerTarget().Single() || !(Target{Kind: TargetAll}).Single() || (Target{Kind: TargetLeader}).Single() {
		t.Error("Single")
	}
}

// CommandLine quotes what a shell would need quoted and redacts passwords.
func TestCommandLine(t *testing.T) {
	got := CommandLine([]string{"sh", "-c", "docker kill $RMQT_CONTAINER", "amqp://bob:s3cret@h:5672/", "it's", ""})
	want := `sh -c 'docker kill $RMQT_CONTAINER' amqp://bob:xxxxx@h:5672/ 'it'\''s' ''`
	if got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}

// A command step takes its defaults (timeout 60s, down 5s), keeps its
// commands as written and the line of its action; a ready URI is checked
// without being quoted.
func TestCommandStepDefaultsAndChecks(t *testing.T) {
	f, err := Parse("s.yaml", []byte(`version: 1
scenarios:
  - name: s
    load: {messages: 100}
    faults:
      - published: 50
        action: command
        inject: [sh, -c, 'docker kill "$RMQT_CONTAINER"']
        ready: ["amqp://app:pw@rabbit:5672/vh"]
`))
	if err != nil {
		t.Fatal(err)
	}
	s := f.Scenarios[0]
	c := s.Faults[0]
	if !s.RunsCommands() || c.Timeout.D() != DefaultCommandTimeout || c.Down.D() != 5*time.Second || c.Line != 7 ||
		len(c.Inject) != 3 || c.Inject[2] != `docker kill "$RMQT_CONTAINER"` || c.Recover != nil || len(c.Ready) != 1 {
		t.Fatalf("step %+v", c)
	}
	for raw, want := range map[string]string{
		"amqp://app:pw@rabbit:5672/vh": "",
		"amqps://rabbit":               "",
		"http://app:s3cret@rabbit/":    `the scheme is "http"; use amqp:// (or amqps:// for TLS)`,
		"amqp://app:s3cret@:5672/":     "it names no host",
		"amqp://app:s3cret@rabbit:0/":  `port "0" is not within 1–65535`,
	} {
		if got := amqpURIProblem(raw); got != want || strings.Contains(got, "s3cret") {
			t.Errorf("%s: %q, want %q", raw, got, want)
		}
	}
}

// A step on the publishing path whose effect came once every order was
// published and settled tested nothing of a confirm mode; one whose call
// returned with an order still under way did; so did anything the
// scenario asked for after the burst, a later firing, fire-and-forget,
// and steps off the publishing path.
func TestFaultAfterBurst(t *testing.T) {
	d := Duration(time.Second)
	kill := &Fault{Action: Kill}
	rec := FaultRecord{Action: Kill, Trigger: "40% published", PublishedAtInject: 5000}
	want := "the kill landed after the burst had ended: all 6000 orders were published and settled by the time it took effect (trigger: 40% published), so confirm-window was not tested under it; a scenario that wants the step after the burst says after_burst"
	if got := FaultAfterBurst(ConfirmWindow, kill, rec, 6000, true); got != want {
		t.Errorf("late kill: %q", got)
	}
	for name, c := range map[string]struct {
		mode Mode
		f    *Fault
		rec  FaultRecord
		done bool
	}{
		"under way":       {ConfirmWindow, kill, rec, false},
		"fire-and-forget": {FireAndForget, kill, rec, true},
		"after_burst":     {ConfirmWindow, &Fault{Action: Kill, AfterBurst: &d}, rec, true},
		"after_start":     {ConfirmWindow, &Fault{Action: Kill, AfterStart: &d}, rec, true},
		"second firing":   {ConfirmWindow, kill, FaultRecord{Firing: 2}, true},
		"purge-queue":     {ConfirmWindow, &Fault{Action: PurgeQueue}, rec, true},
	} {
		if got := FaultAfterBurst(c.mode, c.f, c.rec, 6000, c.done); got != "" {
			t.Errorf("%s: %q, want nothing", name, got)
		}
	}
	// The publishing path is what every action tests but the recovery
	// steps, rmqtorture's own clients, the queue operations, the user's
	// commands and the assertions (which check, not act).
	for _, a := range Actions {
		s := actionTable[a]
		if want := !(s.IsRecovery || s.ClientSide || s.RemovesMessages || s.UserCommand || s.Asserts); s.OnPublishing != want {
			t.Errorf("%s: OnPublishing %v, want %v", a, s.OnPublishing, want)
		}
	}
}

// TestEveryFaultActionHasItsPieces: each action of Actions is one file,
// action_<name>.go (dashes as underscores), that declares its constant and
// its spec, with its effect text, registered in actionSpecs (actions.go);
// and it has a section of its own in docs/faults.md. An action file's
// constant that Actions does not list, an action listed twice and a
// section of docs/faults.md that names no action fail too.
func TestEveryFaultActionHasItsPieces(t *testing.T) {
	consts, specs := actionFiles(t)
	heads := faultHeadings(t)
	for _, a := range Actions {
		file := "action_" + strings.ReplaceAll(string(a), "-", "_") + ".go"
		c, ok := consts[string(a)]
		switch {
		case !ok || c.file != file:
			t.Errorf("%s: no file %s declares its constant (found in %q)", a, file, c.file)
		case specs[c.name] != file:
			t.Errorf("%s: %s declares no ActionSpec{Name: %s, …} (found in %q)", a, file, c.name, specs[c.name])
		}
		if s, ok := a.Spec(); !ok || s.Name != a {
			t.Errorf("%s: its spec is not registered in actionSpecs (actions.go)", a)
		} else if s.While == "" {
			t.Errorf("%s: its spec has no effect text (While)", a)
		} else if s.While == "while a "+string(a)+" fault was in effect" || !strings.HasPrefix(s.While, "while ") && !strings.HasPrefix(s.While, "after ") {
			t.Errorf("%s: its effect text %q does not say what the broker went through (\"while the broker was paused\")", a, s.While)
		}
		if !heads[string(a)] {
			t.Errorf("docs/faults.md has no heading \"### %s\" for the fault action %s", a, a)
		}
		delete(consts, string(a))
		delete(heads, string(a))
	}
	for v, c := range consts {
		t.Errorf("%s declares the action %q, which Actions does not list: add its spec to actionSpecs (actions.go)", c.file, v)
	}
	for h := range heads {
		t.Errorf("docs/faults.md has a section \"### %s\", which is no fault action (scenario.Actions)", h)
	}
	if len(actionTable) != len(Actions) || len(slices.Compact(slices.Sorted(slices.Values(Actions)))) != len(Actions) {
		t.Errorf("the table holds %d actions, Actions lists %d: an action is registered twice", len(actionTable), len(Actions))
	}
}

type actionConst struct{ name, file string }

// actionFiles reads the action files (action_*.go): the Action constants
// each declares, by value, and the file of each ActionSpec literal, by the
// constant its Name holds.
func actionFiles(t *testing.T) (consts map[string]actionConst, specs map[string]string) {
	t.Helper()
	files, err := filepath.Glob("action_*.go")
	if err != nil || len(files) == 0 {
		t.Fatalf("no action files: %v", err)
	}
	consts, specs = map[string]actionConst{}, map[string]string{}
	for _, file := range files {
		if strings.HasSuffix(file, "_test.go") {
			continue
		}
		f, err := goparser.ParseFile(token.NewFileSet(), file, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.ValueSpec:
				if typ, ok := n.Type.(*ast.Ident); ok && typ.Name == "Action" && len(n.Values) == len(n.Names) {
					for i, v := range n.Values {
						if lit, ok := v.(*ast.BasicLit); ok && lit.Kind == token.STRING {
							s, _ := strconv.Unquote(lit.Value)
							consts[s] = actionConst{n.Names[i].Name, file}
						}
					}
				}
			case *ast.CompositeLit:
				if typ, ok := n.Type.(*ast.Ident); ok && typ.Name == "ActionSpec" {
					for _, e := range n.Elts {
						if kv, ok := e.(*ast.KeyValueExpr); ok && fmt.Sprint(kv.Key) == "Name" {
							specs[fmt.Sprint(kv.Value)] = file
						}
					}
				}
			}
			return true
		})
	}
	return consts, specs
}

// allActions and downActions are the lists of actions validation messages
// give, as the action table orders them: every action, and those that
// take down on a broker of nodes nodes. Tests build the messages they
// expect from them, so that adding an action touches no test of another.
var allActions = strings.Join(func() []string {
	out := make([]string, len(Actions))
	for i, a := range Actions {
		out[i] = string(a)
	}
	return out
}(), ", ")

func downActions(nodes int) string {
	return strings.Join(forBroker(taking(ParamDown), nodes), ", ")
}

// checkToolStep checks what every action made of the broker's tools that
// is recovered in place shares: down defaults to 5s, on a cluster it acts
// on the queue's leader, its play is inject then recover (the argv joined
// by spaces), and no later step can recover it (manual_recovery is
// refused, at its value's column).
func checkToolStep(t *testing.T, a Action, inject, recover string) {
	t.Helper()
	f, err := Parse("s.yaml", []byte(fmt.Sprintf("version: 1\nscenarios:\n  - name: s\n    broker: {nodes: 3}\n    load: {messages: 100}\n    faults: [{action: %s, published: 50}]\n", a)))
	if err != nil {
		t.Fatal(err)
	}
	s := f.Scenarios[0]
	if d := s.Faults[0].Down.D(); d != 5*time.Second {
		t.Fatalf("down %s", d)
	}
	if tg := s.Faults[0].TargetOf(3, "q"); tg.Kind != TargetLeader {
		t.Fatalf("target %s", tg)
	}
	if p := a.Tool(); p == nil || strings.Join(p.Inject, " ") != inject || strings.Join(p.Recover, " ") != recover {
		t.Fatalf("play %+v", p)
	}
	line := fmt.Sprintf("    faults: [{action: %s, published: 50, manual_recovery: true}]", a)
	expectParseErrors(t, []struct {
		name, yaml string
		want       []string
	}{{"manual_recovery", "version: 1\nscenarios:\n  - name: s\n    load: {messages: 100}\n" + line + "\n", []string{
		fmt.Sprintf("s.yaml:5:%d: scenarios[0].faults[0].manual_recovery: only %s can be recovered by a later step", strings.Index(line, "true")+1, strings.Join(forBroker(RecoverableLater(), 1), ", ")),
	}}})
}
