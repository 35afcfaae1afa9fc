package cmd

import (
	"testing"

	"github.com/rmqtorture/rmqtorture/scenario"
)

// TestDurationBurstOnBroker: `-r 2000 -z 1s` (PerfTest's and omq's
// time-based run) publishes rate × duration = 2,000 orders on a real
// broker, every one confirmed and delivered, and the burst cannot be
// shorter than the pacer's schedule: call k is due k/2000 s after the
// first, so the last, k = 1999, at 999.5 ms.
func TestDurationBurstOnBroker(t *testing.T) {
	r := runScenario(t, "baseline", "--mode", "confirm-window", "-r", "2000", "-z", "1s")
	m := mode(t, r, scenario.ConfirmWindow)
	if r.Messages != 2000 || m.Sent != 2000 || m.Confirmed != 2000 || m.Delivered != 2000 {
		t.Errorf("messages %d, sent %d, confirmed %d, delivered %d; want 2000 each", r.Messages, m.Sent, m.Confirmed, m.Delivered)
	}
	if m.BurstMS < 999.5 {
		t.Errorf("burst %.1f ms at 2000 msg/s: shorter than the schedule's last call at 999.5 ms", m.BurstMS)
	}
}
