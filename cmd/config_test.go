package cmd

import (
	"os"
	"path/filepath"
	"testing"
)

// A scenario that configures the broker cannot run on a container the user
// named: exit 2, naming the flag and the scenario, before Docker is touched.
func TestRunContainerRefusesBrokerConfig(t *testing.T) {
	t.Setenv("DOCKER_HOST", "tcp://127.0.0.1:1")
	file := filepath.Join(t.TempDir(), "s.yaml")
	if err := os.WriteFile(file, []byte(`version: 1
scenarios:
  - name: configured
    broker: {config: {consumer_timeout: 5000}}
    load: {messages: 10}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := runCLI(t, "run", "configured", "-f", file, "--container", "my-rabbit")
	want := `rmqtorture: --container my-rabbit: scenario "configured" sets broker.config or broker.advanced_config, which rmqtorture writes into a broker container it creates, before its first start; a container you name keeps its own configuration (run without --container, or configure that broker yourself)` + "\n"
	if code != ExitUsage || stderr != want {
		t.Fatalf("exit %d, stderr\n%q\nwant exit 2 and\n%q", code, stderr, want)
	}
}
