package scenario

import (
	"strings"
	"testing"
	"time"
)

// maintenance: down defaults to 5s; on a cluster it acts on the queue's
// leader; it is recovered in place (revive), so no later step can recover
// it; its play is the broker's own tool, drain then revive.
func TestMaintenanceStep(t *testing.T) {
	f, err := Parse("s.yaml", []byte(`version: 1
scenarios:
  - name: s
    broker: {nodes: 3}
    load: {messages: 100}
    faults: [{action: maintenance, published: 50}]
`))
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
	if p := Maintenance.Tool(); p == nil || strings.Join(p.Inject, " ") != "rabbitmq-upgrade -q drain" || strings.Join(p.Recover, " ") != "rabbitmq-upgrade -q revive" {
		t.Fatalf("play %+v", p)
	}
	expectParseErrors(t, []struct {
		name, yaml string
		want       []string
	}{{"manual_recovery", `version: 1
scenarios:
  - name: s
    load: {messages: 100}
    faults: [{action: maintenance, published: 50, manual_recovery: true}]
`, []string{
		"s.yaml:5:68: scenarios[0].faults[0].manual_recovery: only kill, stop, pause, disconnect can be recovered by a later step",
	}}})
}
