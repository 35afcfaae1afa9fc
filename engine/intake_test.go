package engine

import (
	"testing"
	"time"

	"github.com/rmqtorture/rmqtorture/metrics"
	"github.com/rmqtorture/rmqtorture/scenario"
)

// intake's figure and its refusals, each derived from the counts given.
func TestIntake(t *testing.T) {
	start := time.Unix(1_000_000, 0)
	acked := func(n int) *int { return &n }
	kill := scenario.FaultRecord{Action: scenario.Kill, AckedAtInject: acked(9000)}
	for _, tc := range []struct {
		name    string
		res     scenario.ModeResult
		st      PublishStats
		faultAt time.Duration // 0: no fault
		live    bool
		rate    float64
		unknown string
	}{
		{"confirm-window, acks before the kill", scenario.ModeResult{Mode: scenario.ConfirmWindow, Window: 1000, BurstMS: 5000, Faults: []scenario.FaultRecord{kill}},
			PublishStats{Acked: 20000, LastConfirm: start.Add(9 * time.Second)}, 1500 * time.Millisecond, false, 6000, ""},
		{"confirm-window killed 0.4 s in (a default kill-mid-burst)", scenario.ModeResult{Mode: scenario.ConfirmWindow, Window: 1000, BurstMS: 900, Faults: []scenario.FaultRecord{kill}},
			PublishStats{Acked: 9000}, 400 * time.Millisecond, false, 22500, ""},
		{"confirm-each without a fault: to the last confirm", scenario.ModeResult{Mode: scenario.ConfirmEach, Window: 1, BurstMS: 8000},
			PublishStats{Acked: 4000, LastConfirm: start.Add(8 * time.Second)}, 0, false, 500, ""},
		{"a fault after the burst times the whole burst", scenario.ModeResult{Mode: scenario.ConfirmEach, Window: 1, BurstMS: 8000, Faults: []scenario.FaultRecord{kill}},
			PublishStats{Acked: 4000, LastConfirm: start.Add(8 * time.Second)}, 9 * time.Second, false, 500, ""},
		{"confirm-window whose window never cycled", scenario.ModeResult{Mode: scenario.ConfirmWindow, Window: 1000, BurstMS: 5000, Faults: []scenario.FaultRecord{{Action: scenario.Kill, AckedAtInject: acked(1500)}}},
			PublishStats{}, 600 * time.Millisecond, false, 0, "the window of 1,000 never filled and drained before the fault: 1,500 basic.acks (at least 2,000 are needed)"},
		{"too few before the fault", scenario.ModeResult{Mode: scenario.ConfirmEach, Window: 1, BurstMS: 5000, Faults: []scenario.FaultRecord{{Action: scenario.Kill, AckedAtInject: acked(999)}}},
			PublishStats{}, 2 * time.Second, false, 0, "too short to time: 999 basic.acks in 2,000 ms before the fault (at least 1,000 in 200 ms are needed)"},
		{"too quick before the fault", scenario.ModeResult{Mode: scenario.ConfirmEach, Window: 1, BurstMS: 5000, Faults: []scenario.FaultRecord{kill}},
			PublishStats{}, 199 * time.Millisecond, false, 0, "too short to time: 9,000 basic.acks in 199 ms before the fault (at least 1,000 in 200 ms are needed)"},
		{"fire-and-forget: the queue's depth", scenario.ModeResult{Mode: scenario.FireAndForget, BurstMS: 900, Faults: []scenario.FaultRecord{{Action: scenario.Kill}}},
			PublishStats{Absorbed: 4727, AbsorbedSpan: time.Second, AbsorbedRate: 4727}, 800 * time.Millisecond, false, 4727, ""},
		{"fire-and-forget: 100 ms of depth polls are enough", scenario.ModeResult{Mode: scenario.FireAndForget, BurstMS: 900, Faults: []scenario.FaultRecord{{Action: scenario.Kill}}},
			PublishStats{Absorbed: 1600, AbsorbedSpan: 160 * time.Millisecond}, 170 * time.Millisecond, false, 10000, ""},
		{"fire-and-forget: under five polls", scenario.ModeResult{Mode: scenario.FireAndForget, BurstMS: 900, Faults: []scenario.FaultRecord{{Action: scenario.Kill}}},
			PublishStats{Absorbed: 3000, AbsorbedSpan: 99 * time.Millisecond}, 120 * time.Millisecond, false, 0, "too short to time: 3,000 messages in the queue in 99 ms before the fault (at least 1,000 in 100 ms are needed)"},
		{"fire-and-forget, depth never read", scenario.ModeResult{Mode: scenario.FireAndForget, BurstMS: 900},
			PublishStats{}, 0, false, 0, "the queue's depth was never read before the fault"},
		{"fire-and-forget with live consumers", scenario.ModeResult{Mode: scenario.FireAndForget, BurstMS: 900},
			PublishStats{Absorbed: 4727, AbsorbedSpan: time.Second}, 0, true, 0, "live consumers took messages out of the queue as they came, so its depth is not what the broker took in"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tl := metrics.NewTimeline(start)
			if tc.faultAt > 0 {
				tl.AddAt(start.Add(tc.faultAt), metrics.EvFault, "kill")
			}
			res := tc.res
			intake(&res, tc.st, tl, start, tc.live)
			if res.IntakeRate != tc.rate || res.IntakeUnknown != tc.unknown {
				t.Errorf("intake %g msg/s, unknown %q; want %g, %q", res.IntakeRate, res.IntakeUnknown, tc.rate, tc.unknown)
			}
		})
	}
}
