package amqp

import (
	"context"
	"testing"
	"time"

	"github.com/rmqtorture/rmqtorture/broker/internal/traffic"

	"github.com/rmqtorture/rmqtorture/engine"
)

// A burst shape makes pace hold each call until its burst's start and let
// the calls of one burst go at once: intended times step by the period.
func TestPaceFollowsTheBurstShape(t *testing.T) {
	plan := engine.PublishPlan{BurstMessages: 2, BurstEvery: 30 * time.Millisecond}
	p := &publisher{p: plan, sched: traffic.NewPacer(5, plan.DueAfter)}
	began := time.Now()
	for seq := range 5 {
		if err := p.pace(context.Background(), seq); err != nil {
			t.Fatal(err)
		}
	}
	if took := time.Since(began); took < 60*time.Millisecond {
		t.Errorf("5 calls in bursts of 2 every 30ms took %s, want at least 60ms", took)
	}
	start := p.sched.Start().UnixNano()
	for seq, want := range []time.Duration{0, 0, 30 * time.Millisecond, 30 * time.Millisecond, 60 * time.Millisecond} {
		if got := time.Duration(p.sched.Intended(seq) - start); got != want {
			t.Errorf("order %d intended at +%s, want +%s", seq, got, want)
		}
	}
}
