package engine

import (
	"time"

	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/rmqtorture/rmqtorture/metrics"
	"github.com/rmqtorture/rmqtorture/scenario"
)

// The least a confirm mode must have had confirmed, and over how long, for
// its intake rate to say something about the broker rather than about the
// burst's first moments. basic.acks come at the broker's pace, so the span
// needs only to be long beside the first ack's round trip and the
// scheduler's jitter: 200 ms. What skews a short burst is a confirm
// window's first fill, sent before any confirm is awaited, and that is
// what intake's rule of two windows confirmed is for (issue 25: a window of
// 1,000 on a 2,000-order burst ranked confirm-window "fastest" when the
// figure was a publish rate). A default kill-mid-burst kills the broker
// about 0.4 s into confirm-window's burst: docs/ci.md has its intake over
// that span beside the whole burst's of the fault-free baseline.
const (
	MinIntakeMessages = 1000
	MinIntakeSpan     = 200 * time.Millisecond
)

// MinDepthIntakeSpan is fire-and-forget's shorter minimum: the queue's
// depth counts what the broker has enqueued, not what sits in socket
// buffers, so the figure needs only enough time for a poll's own timing
// (its reply's round trip, halved) to be small beside it: 100 ms is five
// of the depth monitor's 20 ms polls. Five default kill-mid-burst runs
// killed the broker 157–260 ms into fire-and-forget's burst, with
// 1,600–2,669 messages in the queue: under 500 ms, over 100 ms.
const MinDepthIntakeSpan = 100 * time.Millisecond

// intake sets res.IntakeRate, what the broker took in per second over the
// burst's fault-free time, or res.IntakeUnknown when the run cannot support
// the figure. The confirm modes count basic.acks: up to the first fault that
// took effect within the burst (FaultRecord.AckedAtInject), else up to the
// last confirm. Fire-and-forget counts the queue's depth as the depth
// monitor last saw it before the fault (PublishStats.Absorbed), over at
// least MinDepthIntakeSpan instead of MinIntakeSpan; live
// consumers take messages out as they come, so the depth is not the intake
// then. A confirm-window mode must also have seen two windows confirmed:
// the first went out unthrottled. Call it after measure (it reads
// res.BurstMS and res.Faults).
func intake(res *scenario.ModeResult, st PublishStats, tl *metrics.Timeline, start time.Time, liveConsumers bool) {
	res.IntakeRate, res.IntakeUnknown = 0, ""
	var n int
	var span time.Duration
	what, least := "basic.acks", MinIntakeSpan
	fault, faulted := tl.First(metrics.EvFault, start)
	faulted = faulted && metrics.Millis(fault.Sub(start)) < res.BurstMS
	switch {
	case res.NotRun:
		return
	case !res.Mode.ConfirmMode() && liveConsumers:
		res.IntakeUnknown = "live consumers took messages out of the queue as they came, so its depth is not what the broker took in"
		return
	case !res.Mode.ConfirmMode():
		if st.Absorbed == 0 {
			res.IntakeUnknown = "the queue's depth was never read before the fault"
			return
		}
		n, span, what, least = st.Absorbed, st.AbsorbedSpan, "messages in the queue", MinDepthIntakeSpan
	case faulted:
		i := firstAckedAtInject(res.Faults)
		if i < 0 {
			res.IntakeUnknown = "the basic.acks received before the fault were not counted"
			return
		}
		n, span = *res.Faults[i].AckedAtInject, fault.Sub(start)
	default:
		if st.LastConfirm.IsZero() {
			res.IntakeUnknown = "no basic.ack arrived"
			return
		}
		n, span = st.Acked, st.LastConfirm.Sub(start)
	}
	before := " before the fault"
	if !faulted {
		before = ""
	}
	switch {
	case n < MinIntakeMessages || span < least:
		res.IntakeUnknown = counts.Sprintf("too short to time: %d %s in %d ms%s (at least %d in %d ms are needed)",
			n, what, span.Milliseconds(), before, MinIntakeMessages, least.Milliseconds())
	case res.Mode == scenario.ConfirmWindow && n < 2*res.Window:
		res.IntakeUnknown = counts.Sprintf("the window of %d never filled and drained%s: %d basic.acks (at least %d are needed)",
			res.Window, before, n, 2*res.Window)
	default:
		res.IntakeRate = round1(metrics.Rate(n, span))
	}
}

// counts formats the counts of IntakeUnknown with thousands separators,
// as every figure rmqtorture prints ("1,500 basic.acks").
var counts = message.NewPrinter(language.English)

// firstAckedAtInject is the index of the first fault record that counted
// the basic.acks received when it took effect, -1 when none did.
func firstAckedAtInject(faults []scenario.FaultRecord) int {
	for i, f := range faults {
		if f.Error == "" && f.AckedAtInject != nil {
			return i
		}
	}
	return -1
}
