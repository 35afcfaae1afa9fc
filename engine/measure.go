package engine

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/rmqtorture/rmqtorture/metrics"
	"github.com/rmqtorture/rmqtorture/scenario"
)

// measure derives rates and recovery timings from the publisher's stats and
// the timeline.
func measure(res *scenario.ModeResult, st PublishStats, tl *metrics.Timeline, start time.Time) {
	res.Reconnects = st.Reconnects
	res.BlockedMS = round1(st.BlockedMS)
	res.Stalls = st.Stalls
	res.ChannelCloses = st.ChannelCloses
	res.AbsorbedRate = round1(st.AbsorbedRate)
	if end, ok := tl.First(metrics.EvBurstEnd, start); ok {
		res.BurstMS = metrics.Millis(end.Sub(start))
	}
	if !st.LastPublish.IsZero() {
		res.PublishRate = round1(metrics.Rate(st.Publishes, st.LastPublish.Sub(start)))
	}
	// Up to the first fault's trigger, every publish was a first attempt: the
	// ids published then are the publish calls made.
	if len(res.Faults) > 0 && res.Faults[0].AtMS > 0 && res.Faults[0].AtMS < res.BurstMS { // not an after_burst step
		res.PreFaultPublishRate = round1(metrics.Rate(res.Faults[0].AtPublished, time.Duration(res.Faults[0].AtMS*float64(time.Millisecond))))
	} else {
		res.PreFaultPublishRate = res.PublishRate
	}
	if fault, ok := tl.First(metrics.EvFault, start); ok {
		if ready, ok := tl.First(metrics.EvBrokerReady, fault); ok {
			v := metrics.Millis(ready.Sub(fault))
			res.BrokerDowntimeMS = &v
		}
		if prog, ok := tl.First(metrics.EvFirstProgress, fault); ok {
			v := metrics.Millis(prog.Sub(fault))
			res.ClientRecoveryMS = &v
		}
	}
	if !st.LastConfirm.IsZero() {
		res.ConfirmRate = round1(metrics.Rate(st.Acked, st.LastConfirm.Sub(start)))
	}
}

func round1(v float64) float64 { return math.Round(v*10) / 10 }

// backlogNotes explains faults that landed after every order was already
// published: they hit the broker's backlog, not the burst.
func backlogNotes(faults []scenario.FaultRecord, messages int) []string {
	var out []string
	for _, f := range faults {
		if f.Error == "" && f.PublishedAtInject >= messages && f.AtPublished < messages {
			out = append(out, fmt.Sprintf("every order had been published before the %s call returned (%.0f ms after its trigger): the fault hit the broker's backlog, not the burst", f.Action, f.InjectMS))
		}
	}
	return out
}

// conclude reconciles the ledger (drained: the drain reached the end of the
// queue, so a confirmed id it did not see is lost, not unverified) and
// judges the burst into res. It returns the conditions the judge was given,
// for the recorded history.
func conclude(ctx context.Context, res *scenario.ModeResult, s *scenario.Scenario, ledger *metrics.Ledger, latency, intended *metrics.Latency, cond scenario.Conditions, drained bool) scenario.Conditions {
	counts, ids, err := ledger.Reconcile(drained)
	cond.ReconcileErr = err
	cond.Unsent = s.Load.Messages - counts.Sent - counts.NotPublished // not published by deadline is an outcome, not a gap
	cond.Interrupted = ctx.Err() != nil
	res.Counts, res.IDs = counts, ids
	res.ConfirmLatency = latency.Summary()
	if intended != nil {
		sum := intended.Summary()
		res.ConfirmLatencyIntended = &sum
	}
	discards := s.Queue.Discards()
	res.LostAllowed = !s.Durability() || discards != ""
	removed := explainRemoved(res) // the scenario's own delete-queue or purge-queue
	res.Verdict = scenario.Judge(res.Mode, counts, scenario.Observed{BlockedMS: res.BlockedMS, ChannelCloses: res.ChannelCloses, LostAllowed: res.LostAllowed, Consumers: res.Consumers}, s.Expect, cond)
	switch {
	case counts.Lost == 0 || removed:
	case discards != "":
		res.Notes = append(res.Notes, fmt.Sprintf("%d confirmed messages are gone, as allowed: the queue discards messages by design (%s) and has no dead-letter queue", counts.Lost, discards))
	case res.LostAllowed:
		res.Notes = append(res.Notes, fmt.Sprintf("%d confirmed messages are gone, as allowed: transient messages or a non-durable queue (a basic.ack promised no disk)", counts.Lost))
	}
	return cond
}
