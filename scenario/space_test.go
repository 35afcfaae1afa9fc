package scenario

import (
	"reflect"
	"testing"
	"time"
)

// The space: section explore draws from: ranges the right way round,
// bounds, and only actions and targets a drawn step could take.
func TestParseSpaceErrors(t *testing.T) {
	expectParseErrors(t, []struct {
		name, yaml string
		want       []string
	}{
		{"ranges the wrong way round, a down out of bounds",
			head + "    load: {messages: 100}\n    space: {steps: [2, 1], published_percent: [90, 10], messages: [500, 200], down: [50ms, 20m]}\n",
			[]string{
				"s.yaml:5:20: scenarios[0].space.steps: [min, max] the wrong way round: 2 > 1",
				"s.yaml:5:47: scenarios[0].space.published_percent: [min, max] the wrong way round: 90 > 10",
				"s.yaml:5:67: scenarios[0].space.messages: [min, max] the wrong way round: 500 > 200",
				"s.yaml:5:86: scenarios[0].space.down[0]: must be within 100ms and 10m0s, got 50ms",
				"s.yaml:5:92: scenarios[0].space.down[1]: must be within 100ms and 10m0s, got 20m0s",
			}},
		{"actions and targets a single broker without a lazy filesystem cannot take",
			head + "    load: {messages: 100}\n    space: {actions: [kill, command, partition, power-loss], targets: [leader]}\n",
			[]string{
				"s.yaml:5:29: scenarios[0].space.actions[1]: command runs the programs a step names, and explore draws its own steps: leave it out",
				"s.yaml:5:38: scenarios[0].space.actions[2]: partition needs broker.nodes 3 or 5: it acts on the nodes of a cluster, and this scenario runs a single broker",
				"s.yaml:5:49: scenarios[0].space.actions[3]: power-loss needs the broker's data on a filesystem that can forget: set broker.filesystem: lazy",
				"s.yaml:5:71: scenarios[0].space.targets: needs broker.nodes 3 or 5: on a single broker every step acts on the broker",
			}},
		{"an unknown key, a range of one",
			head + "    load: {messages: 100}\n    space: {steps: [1], stepz: 2}\n",
			[]string{
				"s.yaml:5:20: scenarios[0].space.steps: minItems: got 1, want 2",
				"s.yaml:5:25: scenarios[0].space.stepz: unknown field (known: actions, targets, steps, published_percent, down, messages, modes, windows, rates, publishers)",
			}},
	})
}

func TestParseSpace(t *testing.T) {
	f, err := Parse("s.yaml", []byte(cluster+"    load: {messages: 100}\n    space: {actions: [kill], targets: [leader], steps: [1, 3], down: [200ms, 2s], modes: [confirm-each], rates: [0, 500]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := &SearchSpace{Actions: []Action{Kill}, Targets: []TargetKind{TargetLeader}, Steps: []int{1, 3},
		Down: []Duration{Duration(200 * time.Millisecond), Duration(2 * time.Second)}, Modes: []Mode{ConfirmEach}, Rates: []int{0, 500}}
	if got := f.Scenarios[0].Space; !reflect.DeepEqual(got, want) {
		t.Errorf("space %+v, want %+v", got, want)
	}
}
