package reports

import (
	"strings"
	"testing"

	"github.com/rmqtorture/rmqtorture/scenario"
)

// The report's restart line: the median of AMQP accepting less container
// running, over every fault that timed both, with the actions named once.
func TestRestartLine(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	fault := func(a scenario.Action, running, accepting *float64) scenario.FaultRecord {
		return scenario.FaultRecord{Action: a, Recovery: &scenario.Recovery{ContainerRunningMS: running, AMQPAcceptingMS: accepting}}
	}
	r := &scenario.Result{Modes: []scenario.ModeResult{
		{Faults: []scenario.FaultRecord{fault(scenario.Kill, f(5100), f(9400)), fault(scenario.Pause, f(5000), nil)}},
		{Faults: []scenario.FaultRecord{fault(scenario.Kill, f(5050), f(11250)), fault(scenario.Stop, f(5200), f(9900)), {Action: scenario.Kill}}},
	}}
	var b strings.Builder
	restartLine(&b, r)
	// 4300, 6200 and 4700 ms: median 4.7 s.
	if want := "- **Broker restart:** median 4.7 s from the container running again to an accepted AMQP login (3× after kill, stop)\n"; b.String() != want {
		t.Fatalf("got %q, want %q", b.String(), want)
	}
	b.Reset()
	restartLine(&b, &scenario.Result{Modes: []scenario.ModeResult{{Faults: []scenario.FaultRecord{fault(scenario.Pause, f(1), nil)}}}})
	if b.String() != "" {
		t.Fatalf("no fault timed both: got %q, want nothing", b.String())
	}
}

// The report names the engine a run acted through, when it is known.
func TestEngineLine(t *testing.T) {
	r := &scenario.Result{Scenario: "s", Engine: "ssh://ci@host (Podman Engine 5.4.2)"}
	var b strings.Builder
	if err := Markdown(&b, r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "\n- **Engine:** ssh://ci@host (Podman Engine 5.4.2)\n") {
		t.Errorf("report:\n%s", b.String())
	}
	r.Engine = ""
	b.Reset()
	if err := Markdown(&b, r); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "**Engine:**") {
		t.Errorf("an engine line without an engine:\n%s", b.String())
	}
}
