package amqp

import (
	"context"
	"testing"
	"time"

	"github.com/rmqtorture/rmqtorture/broker/internal/traffic"

	"github.com/rmqtorture/rmqtorture/engine"
)

// The rate schedule gives call k the due time start + k/rate whatever the
// publisher did meanwhile, keeps an order's first due time across its
// republishes, and does not pace at all without a rate.
func TestPaceFollowsTheSchedule(t *testing.T) {
	plan := engine.PublishPlan{Rate: 1000}
	p := &publisher{p: plan, sched: traffic.NewPacer(4, plan.DueAfter)}
	ctx := context.Background()
	for _, seq := range []int{0, 1, 2} {
		if err := p.pace(ctx, seq); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(20 * time.Millisecond) // held up: the next calls are overdue
	for _, seq := range []int{0, 3} { // a republish of 0, then 3
		if err := p.pace(ctx, seq); err != nil {
			t.Fatal(err)
		}
	}
	start := p.sched.Start().UnixNano()
	for seq, want := range []time.Duration{0, time.Millisecond, 2 * time.Millisecond, 4 * time.Millisecond} {
		if got := time.Duration(p.sched.Intended(seq) - start); got != want {
			t.Errorf("order %d intended at +%s, want +%s", seq, got, want)
		}
	}
	if p.sched.Paced() != 5 {
		t.Errorf("%d slots taken, want 5", p.sched.Paced())
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if err := (&publisher{}).pace(cancelled, 0); err != nil {
		t.Errorf("no rate: pace must not wait or fail, got %v", err)
	}
}
