package engine

import (
	"context"
	"slices"
	"testing"

	"github.com/rmqtorture/rmqtorture/scenario"
)

// cancelTraffic is fakeTraffic that cancels the run's context at a chosen
// moment: once atSent ids are published, or as the drain starts.
type cancelTraffic struct {
	*fakeTraffic
	atSent  int // 0: not during the burst
	atDrain bool
	cancel  context.CancelFunc
}

func (c *cancelTraffic) Publish(ctx context.Context, p PublishPlan) (PublishStats, error) {
	on := p.OnPublished
	p.OnPublished = func(sent, inFlight int) {
		if c.atSent > 0 && sent >= c.atSent {
			c.cancel()
		}
		on(sent, inFlight)
	}
	return c.fakeTraffic.Publish(ctx, p)
}

func (c *cancelTraffic) Drain(ctx context.Context, d DrainPlan) error {
	if c.atDrain {
		c.cancel()
	}
	return c.fakeTraffic.Drain(ctx, d)
}

func interruptScenario() *scenario.Scenario {
	s := testScenario(100, 90)
	s.Expect.Modes = map[scenario.Mode]scenario.ModeExpectations{scenario.ConfirmWindow: {Sent: new(100), Confirmed: new(100)}}
	return s
}

// Ctrl-C at 40 of 100 published, before the kill at 90%: the exact
// expectations are "not checked: interrupted", the fault "never fired:
// interrupted before the fault" (not "the burst ended first"), nothing is
// lost and the verdict is inconclusive.
func TestInterruptMidBurstLeavesExpectationsUnchecked(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	b := &fakeBroker{}
	tr := &cancelTraffic{fakeTraffic: &fakeTraffic{b: b}, atSent: 40, cancel: cancel}
	res, _ := newRunner(b, tr).RunMode(ctx, interruptScenario(), scenario.ConfirmWindow)
	if res.Verdict.Status != scenario.Inconclusive || res.Lost != 0 || len(b.kills) != 0 {
		t.Fatalf("verdict %+v, lost %d, kills %v", res.Verdict, res.Lost, b.kills)
	}
	want := []string{
		"fault kill (90% published) never fired: interrupted before the fault",
		"not checked: interrupted: expect.modes.confirm-window sent 100, confirmed 100",
		"interrupted before the burst completed",
	}
	if got := res.Verdict.Reasons; len(got) != len(want)+1 || !slices.Equal(got[:len(want)], want) {
		t.Fatalf("reasons %q, want %q then the unsent orders", got, want)
	}
	if !tr.drained {
		t.Fatal("what was published before the Ctrl-C was not drained")
	}
}

// Ctrl-C once the burst and its fault are over, as the drain starts: the
// drain goes on, the counts are whole, the expectations are checked and
// the mode passes (the run as a whole is marked interrupted by cmd).
func TestInterruptDuringDrainJudgesTheWholeBurst(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	b := &fakeBroker{}
	tr := &cancelTraffic{fakeTraffic: &fakeTraffic{b: b, holdAt: 90}, atDrain: true, cancel: cancel}
	res, _ := newRunner(b, tr).RunMode(ctx, interruptScenario(), scenario.ConfirmWindow)
	if res.Verdict.Status != scenario.Pass || res.Confirmed != 100 || len(b.kills) != 1 || ctx.Err() == nil {
		t.Fatalf("verdict %+v, confirmed %d, kills %v, cancelled %v", res.Verdict, res.Confirmed, b.kills, ctx.Err())
	}
}
