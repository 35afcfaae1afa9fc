package broker

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rmqtorture/rmqtorture/engine"
)

// A burst shape makes pace hold each call until its burst's start and let
// the calls of one burst go at once: intended times step by the period.
func TestPaceFollowsTheBurstShape(t *testing.T) {
	p := &publisher{p: engine.PublishPlan{BurstMessages: 2, BurstEvery: 30 * time.Millisecond}, intended: make([]atomic.Int64, 5)}
	began := time.Now()
	for seq := range 5 {
		if err := p.pace(context.Background(), seq); err != nil {
			t.Fatal(err)
		}
	}
	if took := time.Since(began); took < 60*time.Millisecond {
		t.Errorf("5 calls in bursts of 2 every 30ms took %s, want at least 60ms", took)
	}
	start := p.schedStart.UnixNano()
	for seq, want := range []time.Duration{0, 0, 30 * time.Millisecond, 30 * time.Millisecond, 60 * time.Millisecond} {
		if got := time.Duration(p.intended[seq].Load() - start); got != want {
			t.Errorf("order %d intended at +%s, want +%s", seq, got, want)
		}
	}
}
