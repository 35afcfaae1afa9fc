package amqp

import (
	"testing"

	"github.com/rmqtorture/rmqtorture/metrics"
	"github.com/rmqtorture/rmqtorture/scenario"
)

// Confirms queued together settle as one batch: every message settled and
// its slot freed, acks counted once each, a nack republished, an unknown
// tag ignored, and the latency of each settled message recorded.
func TestConfirmBatch(t *testing.T) {
	h := newHarness(t, 8, 8, scenario.RepublishNackedAndInDoubt)
	for tag := uint64(1); tag <= 5; tag++ {
		h.publish(tag, int(tag-1))
	}
	h.ack(true, 1, 2, 3)
	h.ack(false, 4)
	h.ack(true, 99, 5)
	h.finish(true)
	l := h.p.p.Ledger
	for seq, want := range []metrics.Outcome{metrics.Acked, metrics.Acked, metrics.Acked, metrics.Nacked, metrics.Acked} {
		if got := l.Outcome(seq); got != want {
			t.Errorf("seq %d: %s, want %s", seq, got, want)
		}
	}
	if h.p.stats.Acked != 4 {
		t.Errorf("acked %d, want 4", h.p.stats.Acked)
	}
	if got, _ := h.p.take(); got != 3 {
		t.Errorf("first id to republish %d, want the nacked 3", got)
	}
	if n := h.p.p.Latency.Summary().Count; n != 5 {
		t.Errorf("%d latencies recorded, want 5", n)
	}
}
