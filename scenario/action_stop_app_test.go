package scenario

import "testing"

// stop-app is played with stop_app then start_app, recovered in place
// (checkToolStep), and needs a booted node: no after_start.
func TestStopAppStep(t *testing.T) {
	checkToolStep(t, StopApp, "rabbitmqctl -q stop_app", "rabbitmqctl -q start_app")
	expectParseErrors(t, []struct {
		name, yaml string
		want       []string
	}{{"after_start", `version: 1
scenarios:
  - name: s
    load: {messages: 100}
    faults:
      - {action: kill, published: 60}
      - {action: stop-app, after_start: 1s}
`, []string{
		"s.yaml:7:41: scenarios[0].faults[1].after_start: stop-app needs a booted node; a node still booting can only be hit on its container (kill, stop, restart, pause, disconnect)",
	}}})
}
