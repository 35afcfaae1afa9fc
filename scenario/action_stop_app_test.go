package scenario

import (
	"strings"
	"testing"
	"time"
)

// stop-app: down defaults to 5s; on a cluster it acts on the queue's
// leader; it is recovered in place (start_app), so no later step can
// recover it, and it needs a booted node (no after_start); its play is
// the broker's own tool, stop_app then start_app.
func TestStopAppStep(t *testing.T) {
	f, err := Parse("s.yaml", []byte(`version: 1
scenarios:
  - name: s
    broker: {nodes: 3}
    load: {messages: 100}
    faults: [{action: stop-app, published: 50}]
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
	if p := StopApp.Tool(); p == nil || strings.Join(p.Inject, " ") != "rabbitmqctl -q stop_app" || strings.Join(p.Recover, " ") != "rabbitmqctl -q start_app" {
		t.Fatalf("play %+v", p)
	}
	expectParseErrors(t, []struct {
		name, yaml string
		want       []string
	}{{"manual_recovery, after_start", `version: 1
scenarios:
  - name: s
    load: {messages: 100}
    faults:
      - {action: stop-app, published: 50, manual_recovery: true}
      - {action: kill, published: 60}
      - {action: stop-app, after_start: 1s}
`, []string{
		"s.yaml:6:60: scenarios[0].faults[0].manual_recovery: only kill, stop, pause, disconnect can be recovered by a later step",
		"s.yaml:8:41: scenarios[0].faults[2].after_start: stop-app needs a booted node; a node still booting can only be hit on its container (kill, stop, restart, pause, disconnect)",
	}}})
}
