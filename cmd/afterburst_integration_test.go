package cmd

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rmqtorture/rmqtorture/broker/docker"
	"github.com/rmqtorture/rmqtorture/engine"
	"github.com/rmqtorture/rmqtorture/scenario"
)

// lateKill plans a kill at the 10th of 300 orders, after a jitter drawn
// from the seed: up to 10 minutes, which the end of the burst cuts short
// (engine's schedule.jitter), so the kill takes effect once the burst has
// published and settled every order, however fast or slow the machine.
const lateKill = `version: 1
scenarios:
  - name: late-kill
    description: A kill planned inside the burst that lands after it.
    load: {messages: 300, modes: [confirm-window], window: 100}
    faults: [{action: kill, published: 10, jitter: 10m, down: 1s}]
`

// A kill that lands after the burst has ended makes the mode
// inconclusive, with the reason, against a real broker: every order was
// published and confirmed when the kill took effect, so the run says the
// mode was not tested under it instead of PASS (exit 3). The headline
// says what the kill found, and result.json the engine it acted through.
func TestKillAfterTheBurstEndedIsInconclusive(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: needs Docker and the broker image")
	}
	file := filepath.Join(t.TempDir(), "late.yaml")
	if err := os.WriteFile(file, []byte(lateKill), 0o644); err != nil {
		t.Fatal(err)
	}
	// Seed 1's draw: the burst ends long before it.
	if draw := time.Duration(engine.JitterSource(1).Int64N(int64(10 * time.Minute))); draw < time.Minute {
		t.Fatalf("seed 1 draws a jitter of %s: pick a seed that draws minutes", draw)
	}
	args := []string{"run", "late-kill", "-f", file, "--out", t.TempDir(), "--seed", "1"}
	if shareable(t, file, "late-kill", nil) == sharedNode {
		args = append(args, "--container", sharedBroker(t).Name)
		t.Cleanup(func() { resetShared(t) })
	}
	code, stdout, stderr := runCLI(t, args...)
	t.Log("\n" + stdout)
	r := readResult(t, stdout)
	checkNoContainerLeft(t, r.RunID)
	m := mode(t, r, scenario.ConfirmWindow)
	want := "the kill landed after the burst had ended: all 300 orders were published and settled by the time it took effect (trigger: 10 published), so confirm-window was not tested under it; a scenario that wants the step after the burst says after_burst"
	if code != ExitInconclusive || m.Verdict.Status != scenario.Inconclusive || !slices.Contains(m.Verdict.Reasons, want) {
		t.Fatalf("exit %d, verdict %+v; want %d and %q\n%s", code, m.Verdict, ExitInconclusive, want, stderr)
	}
	f := m.Faults[0]
	if f.PublishedAtInject != 300 || f.InFlightAtInject == nil || *f.InFlightAtInject != 0 || m.Confirmed != 300 || m.Lost != 0 {
		t.Fatalf("fault %+v, confirmed %d, lost %d", f, m.Confirmed, m.Lost)
	}
	// result.json names the engine the run acted through.
	if want := docker.EngineHost() + " (Docker Engine "; !strings.HasPrefix(r.Engine, want) {
		t.Errorf("engine %q, want %q…", r.Engine, want)
	}
	if !strings.Contains(stdout, "kill landed with 0 in flight, 0 to publish") {
		t.Errorf("headline does not say what the kill found:\n%s", stdout)
	}
}
