package explore

import (
	"context"
	"fmt"
	"math"
	"slices"
)

// Fails runs a trial once and reports whether it failed: a failing
// verdict, not an inconclusive run (the caller counts those apart). An
// error stops the shrinking.
type Fails func(ctx context.Context, t Trial) (bool, error)

// Rule decides whether a candidate still fails, since a failure may come
// and go: the candidate runs up to Runs times and is kept once it has
// failed Need times, dropped once it can no longer reach Need. The
// default, DefaultRule, is 2 of 3.
type Rule struct {
	Runs, Need int
}

// DefaultRule keeps a candidate that fails in 2 of 3 runs: a failure seen
// in 10 of 10 reruns keeps a candidate that still fails that often with
// probability above 0.99, one that fails in half its runs with 0.5.
var DefaultRule = Rule{Runs: 3, Need: 2}

// Shrunk is what Shrink did: the smallest trial that still failed, what
// was removed on the way, and the runs it cost.
type Shrunk struct {
	Original Trial `json:"original"`
	Minimal  Trial `json:"minimal"`
	// Removed lists each kept reduction in order ("dropped step 2 (kill
	// at 40%)", "down 4s → 2s").
	Removed []string `json:"removed"`
	// Candidates is how many reductions were tried; Runs how many trial
	// runs they took.
	Candidates int `json:"candidates"`
	Runs       int `json:"runs"`
}

// Shrink reduces t, which failed, toward the smallest trial that still
// fails by rule: it tries the reductions of the current trial in a fixed
// order (drop a fault step; a cluster fault on a single broker; a down
// time, a step's published share, messages, window and rate at their
// floor, then halved; one publisher) and keeps the first that still fails, then
// starts over from it, until none does (a one-minimal trial: no single
// reduction fails). valid says whether a candidate is a scenario the tool
// accepts; a refused one is skipped without a run.
func Shrink(ctx context.Context, t Trial, fails Fails, valid func(Trial) bool, rule Rule) (Shrunk, error) {
	if rule.Runs < 1 || rule.Need < 1 || rule.Need > rule.Runs {
		return Shrunk{}, fmt.Errorf("shrink rule %d of %d: want 1 ≤ need ≤ runs", rule.Need, rule.Runs)
	}
	out := Shrunk{Original: t, Minimal: t}
	for {
		kept := false
		for _, c := range reductions(out.Minimal) {
			if !valid(c.trial) {
				continue
			}
			out.Candidates++
			ok, runs, err := stillFails(ctx, c.trial, fails, rule)
			out.Runs += runs
			if err != nil {
				return out, err
			}
			if ok {
				out.Minimal = c.trial
				out.Removed = append(out.Removed, c.what)
				kept = true
				break
			}
		}
		if !kept {
			return out, nil
		}
	}
}

// stillFails runs t by rule: true once it failed rule.Need times, false
// once it cannot; runs is how many runs it took.
func stillFails(ctx context.Context, t Trial, fails Fails, rule Rule) (ok bool, runs int, err error) {
	failed := 0
	for runs < rule.Runs {
		if err := ctx.Err(); err != nil {
			return false, runs, err
		}
		f, err := fails(ctx, t)
		runs++
		if err != nil {
			return false, runs, err
		}
		if f {
			failed++
		}
		switch {
		case failed >= rule.Need:
			return true, runs, nil
		case failed+rule.Runs-runs < rule.Need:
			return false, runs, nil
		}
	}
	return false, runs, nil
}

// reduction is one smaller trial and what was removed to get it.
type reduction struct {
	trial Trial
	what  string
}

// reductions lists t's one-step reductions, most removing first: each
// number tried at its floor (100 ms, 1 %, 100 messages, a window of 1,
// 100 msg/s) before its half.
func reductions(t Trial) []reduction {
	var out []reduction
	with := func(what string, f func(*Trial)) {
		c := t
		c.Steps = slices.Clone(t.Steps)
		f(&c)
		out = append(out, reduction{c, what})
	}
	if len(t.Steps) > 1 {
		for i, s := range t.Steps {
			with(fmt.Sprintf("dropped step %d (%s)", i+1, stepWords(s)), func(c *Trial) { c.Steps = slices.Delete(c.Steps, i, i+1) })
		}
	}
	if t.Nodes > 1 {
		with(fmt.Sprintf("%d nodes → a single broker", t.Nodes), func(c *Trial) {
			c.Nodes = 1
			for i := range c.Steps {
				c.Steps[i].Target, c.Steps[i].Node = "", 0
			}
		})
	}
	for i, s := range t.Steps {
		for _, d := range uniq(int64(100), halfDown(s.DownMS)) {
			if d < s.DownMS {
				with(fmt.Sprintf("step %d down %d ms → %d ms", i+1, s.DownMS, d), func(c *Trial) { c.Steps[i].DownMS = d })
			}
		}
	}
	for i, s := range t.Steps {
		lo := 1
		if i > 0 {
			lo = t.Steps[i-1].Percent + 1
		}
		for _, p := range uniq(lo, max(lo, s.Percent/2)) {
			if p < s.Percent {
				with(fmt.Sprintf("step %d at %d%% → %d%%", i+1, s.Percent, p), func(c *Trial) { c.Steps[i].Percent = p })
			}
		}
	}
	for _, m := range uniq(100, roundTo(t.Messages/2, 100)) {
		if m < t.Messages {
			with(fmt.Sprintf("messages %d → %d", t.Messages, m), func(c *Trial) { c.Messages = m })
		}
	}
	if t.Window > 1 {
		for _, w := range uniq(1, t.Window/2) {
			with(fmt.Sprintf("window %d → %d", t.Window, w), func(c *Trial) { c.Window = w })
		}
	}
	if t.Rate > 100 {
		for _, r := range uniq(100, roundTo(t.Rate/2, 100)) {
			if r < t.Rate {
				with(fmt.Sprintf("rate %d → %d msg/s", t.Rate, r), func(c *Trial) { c.Rate = r })
			}
		}
	}
	if t.Publishers > 1 {
		with(fmt.Sprintf("publishers %d → 1", t.Publishers), func(c *Trial) { c.Publishers = 1 })
	}
	return out
}

// uniq is the smallest value a reduction may reach, then the halving of
// the current one, once each: the smallest first, so a setting that does
// not matter drops to its floor in one run.
func uniq[T comparable](floor, half T) []T {
	if floor == half {
		return []T{floor}
	}
	return []T{floor, half}
}

// halfDown halves a down time to whole 100 ms, at least 100 ms (0 stays
// 0: the action takes none).
func halfDown(ms int64) int64 {
	if ms <= 100 {
		return ms
	}
	return max(100, ms/200*100)
}

// stepWords is a step in a few words: "kill leader at 40%".
func stepWords(s Step) string {
	w := string(s.Action)
	if s.Target != "" {
		w += " " + string(s.Target)
	}
	return fmt.Sprintf("%s at %d%%", w, s.Percent)
}

// Rate is a failure rate measured over reruns: Failed of Runs, with its
// 95 % Wilson score interval.
type Rate struct {
	Failed int     `json:"failed"`
	Runs   int     `json:"runs"`
	Low    float64 `json:"low"`
	High   float64 `json:"high"`
}

// NewRate is failed of runs with its 95 % Wilson score interval (Wilson,
// "Probable inference", JASA 1927; z = 1.96): unlike the normal
// approximation it stays within [0, 1] and is usable at 0 or all of a few
// runs.
func NewRate(failed, runs int) Rate {
	r := Rate{Failed: failed, Runs: runs}
	if runs == 0 {
		return r
	}
	const z = 1.959964
	n, p := float64(runs), float64(failed)/float64(runs)
	centre := (p + z*z/(2*n)) / (1 + z*z/n)
	half := z / (1 + z*z/n) * math.Sqrt(p*(1-p)/n+z*z/(4*n*n))
	r.Low, r.High = max(0, centre-half), min(1, centre+half)
	// Exact at the ends, where rounding leaves 1e-16 off.
	if failed == 0 {
		r.Low = 0
	}
	if failed == runs {
		r.High = 1
	}
	return r
}

// CleanRunsToCallFixed is how many clean runs in a row make "fixed" the
// better bet at 95 %: the n for which a scenario that still failed at the
// interval's low end would pass n runs in a row with probability at most
// 0.05 (ln 0.05 / ln(1 − low)); 0 when the low end is 0 (no number of
// clean runs tells a fix from luck).
func (r Rate) CleanRunsToCallFixed() int {
	if r.Low <= 0 {
		return 0
	}
	if r.Low >= 1 {
		return 1
	}
	return int(math.Ceil(math.Log(0.05) / math.Log(1-r.Low)))
}
