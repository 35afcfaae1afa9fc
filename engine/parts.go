package engine

import (
	"context"
	"fmt"
	"strings"

	"github.com/rmqtorture/rmqtorture/metrics"
	"github.com/rmqtorture/rmqtorture/scenario"
)

// runPart runs one burst of a run split across processes (r.Part): a load
// part declares the shared queue and publishes its range of ids, nothing
// else (no consumers, no fault, no drain, the queue kept for the drain); the
// drain part declares it and drains it, recording every delivery. Each
// records its history; the verdict over the whole run is `rmqtorture
// check`'s, which merges them. The part's own verdict only says whether it
// did its share: pass when it did, inconclusive (with why) when not.
func (r *Runner) runPart(ctx context.Context, s *scenario.Scenario, m scenario.Mode) scenario.ModeResult {
	b := r.newBurst(s, m)
	b.spec.Shared = true
	if !b.declare(ctx) || !b.startConsumers(ctx) {
		b.ev.Interrupted = ctx.Err() != nil
		return b.concludePart(ctx)
	}
	b.armFaults(ctx) // s has no fault steps: the schedule only counts publishes
	defer b.cancelPub()
	defer b.cancelGaveUp()
	if r.Part.Drain {
		b.cancelPub()
		b.awaitFaults(ctx)
		b.drain(ctx)
		return b.concludePart(ctx)
	}
	b.publish(ctx)
	b.awaitFaults(ctx)
	b.ev.Interrupted = ctx.Err() != nil
	return b.concludePart(ctx)
}

// concludePart reconciles and records the part's history as conclude does,
// then judges the part by its own share.
func (b *burst) concludePart(ctx context.Context) scenario.ModeResult {
	res := b.conclude(ctx)
	p := b.r.Part
	var why []string
	for _, err := range []error{b.ev.PublishErr.Err, b.ev.DrainIncomplete.Err} {
		if err != nil {
			why = append(why, err.Error())
		}
	}
	if b.ev.Interrupted {
		why = append(why, "interrupted")
	}
	if p.Drain {
		res.Notes = append(res.Notes, fmt.Sprintf("drain of split run %s (%d load parts): every delivery recorded in its history; `rmqtorture check` merges it with the parts' histories and judges the run", p.RunID, p.Parts))
	} else {
		share := p.End - p.First
		if unsent := share - res.Sent - res.NotPublished; unsent > 0 && len(why) == 0 {
			why = append(why, fmt.Sprintf("%d of its %d orders were never published", unsent, share))
		}
		res.Notes = append(res.Notes, fmt.Sprintf("%s of split run %s: published ids %s%d–%d, drained by the drain part; `rmqtorture check` merges every part's history with the drain's and judges the run", p, p.RunID, res.Queue+"-", p.First, p.End-1))
	}
	res.Verdict = scenario.Verdict{Status: scenario.Pass}
	if len(why) > 0 {
		res.Verdict = scenario.Verdict{Status: scenario.Inconclusive, Reasons: []string{fmt.Sprintf("%s did not do its share: %s", p, strings.Join(why, "; "))}}
	}
	if b.sched != nil {
		b.logDone(res)
	}
	return res
}

// partHeader is the history header's part: the runner's, or nil.
func (r *Runner) partHeader() *metrics.Part {
	if r.Part == nil {
		return nil
	}
	p := *r.Part
	return &p
}
