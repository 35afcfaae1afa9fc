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
