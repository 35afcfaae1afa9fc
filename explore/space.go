package explore

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/rmqtorture/rmqtorture/scenario"
)

// Space is what trials are drawn from: ranges over the fault steps and
// the load, around a base scenario's broker and queue. Ranges are
// inclusive; an empty list draws from Defaults.
type Space struct {
	// Actions are the fault actions drawn for each step.
	Actions []scenario.Action `json:"actions"`
	// Targets are the targets drawn for each step on a cluster (node
	// draws a node number too); a target the action or queue cannot take
	// is drawn again.
	Targets []scenario.TargetKind `json:"targets,omitempty"`
	// Steps is the number of fault steps per trial, [min, max].
	Steps [2]int `json:"steps"`
	// Percent is the range of each step's published_percent trigger.
	Percent [2]int `json:"published_percent"`
	// DownMS is the range of each step's down time, in ms (drawn in
	// 100 ms steps).
	DownMS [2]int64 `json:"down_ms"`
	// Messages is the range of the burst's size (drawn in steps of 100).
	Messages [2]int `json:"messages"`
	// Modes, Windows, Rates (msg/s, 0: as fast as it can) and Publishers
	// are drawn from.
	Modes      []scenario.Mode `json:"modes"`
	Windows    []int           `json:"windows,omitempty"`
	Rates      []int           `json:"rates"`
	Publishers []int           `json:"publishers"`
}

// FromScenario is the space a scenario's space: section sets (nothing
// for nil): Defaults fills the rest.
func FromScenario(x *scenario.SearchSpace) Space {
	var sp Space
	if x == nil {
		return sp
	}
	sp.Actions, sp.Targets = slices.Clone(x.Actions), slices.Clone(x.Targets)
	if len(x.Steps) == 2 {
		sp.Steps = [2]int{x.Steps[0], x.Steps[1]}
	}
	if len(x.PublishedPercent) == 2 {
		sp.Percent = [2]int{x.PublishedPercent[0], x.PublishedPercent[1]}
	}
	if len(x.Down) == 2 {
		sp.DownMS = [2]int64{x.Down[0].D().Milliseconds(), x.Down[1].D().Milliseconds()}
	}
	if len(x.Messages) == 2 {
		sp.Messages = [2]int{x.Messages[0], x.Messages[1]}
	}
	sp.Modes, sp.Windows = slices.Clone(x.Modes), slices.Clone(x.Windows)
	sp.Rates, sp.Publishers = slices.Clone(x.Rates), slices.Clone(x.Publishers)
	return sp
}

// Defaults fills what sp leaves empty from the base scenario: the fault
// actions that take the broker (or part of it) down and bring it back by
// themselves and apply to its topology (power-loss only with
// broker.filesystem: lazy, no cluster-only action on a single broker, no
// command), every target on a cluster, 1–2 steps at 10–90 % published,
// 1–5 s down, base's messages and modes, windows of 1, 10, 100 and base's,
// base's rate, and base's publishers.
func (sp Space) Defaults(base *scenario.Scenario) Space {
	cluster := base.Broker.Nodes > 1
	if len(sp.Actions) == 0 {
		for _, a := range scenario.Actions {
			spec, _ := a.Spec()
			switch {
			case !spec.Recovers || !a.Takes(scenario.ParamDown) || spec.UserCommand:
			case spec.ClusterOnly && !cluster:
			case spec.CutsPower && base.Broker.Filesystem != scenario.LazyFilesystem:
			case a == scenario.Partition && base.Queue.Type == scenario.Stream:
			default:
				sp.Actions = append(sp.Actions, a)
			}
		}
	}
	if len(sp.Targets) == 0 && cluster {
		sp.Targets = slices.Clone(scenario.TargetKinds)
	}
	if sp.Steps == [2]int{} {
		sp.Steps = [2]int{1, 2}
	}
	if sp.Percent == [2]int{} {
		sp.Percent = [2]int{10, 90}
	}
	if sp.DownMS == [2]int64{} {
		sp.DownMS = [2]int64{1000, 5000}
	}
	if sp.Messages == [2]int{} {
		sp.Messages = [2]int{base.Load.Messages, base.Load.Messages}
	}
	if len(sp.Modes) == 0 {
		sp.Modes = slices.Clone(base.Load.Modes)
	}
	if len(sp.Windows) == 0 {
		sp.Windows = []int{1, 10, 100}
		if !slices.Contains(sp.Windows, base.Load.Window) {
			sp.Windows = append(sp.Windows, base.Load.Window)
		}
	}
	if len(sp.Rates) == 0 {
		sp.Rates = []int{int(base.Load.Rate)}
	}
	if len(sp.Publishers) == 0 {
		sp.Publishers = []int{max(1, base.Load.Publishers)}
	}
	return sp
}

// Check reports what makes sp unusable: an empty list, a range upside
// down or out of bounds.
func (sp Space) Check() error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	switch {
	case len(sp.Actions) == 0:
		bad("no fault action to draw from")
	case len(sp.Modes) == 0:
		bad("no publishing mode to draw from")
	case len(sp.Rates) == 0, len(sp.Publishers) == 0, len(sp.Windows) == 0:
		bad("no rate, publisher count or window to draw from")
	}
	if sp.Steps[0] < 1 || sp.Steps[0] > sp.Steps[1] || sp.Steps[1] > 5 {
		bad("steps %d–%d: want 1 ≤ min ≤ max ≤ 5", sp.Steps[0], sp.Steps[1])
	}
	if sp.Percent[0] < 1 || sp.Percent[0] > sp.Percent[1] || sp.Percent[1] > 99 {
		bad("published_percent %d–%d: want 1 ≤ min ≤ max ≤ 99", sp.Percent[0], sp.Percent[1])
	}
	if sp.DownMS[0] < 100 || sp.DownMS[0] > sp.DownMS[1] {
		bad("down %d–%d ms: want 100 ≤ min ≤ max", sp.DownMS[0], sp.DownMS[1])
	}
	if sp.Messages[0] < 100 || sp.Messages[0] > sp.Messages[1] {
		bad("messages %d–%d: want 100 ≤ min ≤ max", sp.Messages[0], sp.Messages[1])
	}
	return errors.Join(errs...)
}

// maxRedraws bounds how often Draw draws a trial again when the loader
// refuses the one drawn (a target the action cannot take, say).
const maxRedraws = 64

// Draw is trial index of seed: the same scenario on every machine, from
// a PCG generator seeded with (seed, index). A drawn trial the scenario
// loader refuses is drawn again from the same generator, at most
// maxRedraws times; the error then names the last refusal.
func Draw(base *scenario.Scenario, sp Space, seed uint64, index int) (Trial, []byte, error) {
	rng := rand.New(rand.NewPCG(seed, uint64(index)))
	var last error
	for range maxRedraws {
		t := draw(rng, base, sp, seed, index)
		data, _, err := t.Scenario(base)
		if err == nil {
			return t, data, nil
		}
		last = err
	}
	return Trial{}, nil, fmt.Errorf("trial %d of seed %d: no valid scenario in %d draws: %w", index, seed, maxRedraws, last)
}

// draw draws one trial from rng.
func draw(rng *rand.Rand, base *scenario.Scenario, sp Space, seed uint64, index int) Trial {
	pick := func(n int) int { return rng.IntN(n) }
	between := func(r [2]int) int { return r[0] + rng.IntN(r[1]-r[0]+1) }
	t := Trial{Seed: seed, Index: index, Nodes: max(1, base.Broker.Nodes)}
	t.Mode = sp.Modes[pick(len(sp.Modes))]
	t.Messages = roundTo(between(sp.Messages), 100)
	if t.Mode == scenario.ConfirmWindow {
		t.Window = sp.Windows[pick(len(sp.Windows))]
	}
	t.Rate = sp.Rates[pick(len(sp.Rates))]
	t.Publishers = sp.Publishers[pick(len(sp.Publishers))]
	n := between(sp.Steps)
	// Distinct triggers, in firing order.
	pcts := map[int]bool{}
	for len(pcts) < n && len(pcts) <= sp.Percent[1]-sp.Percent[0] {
		pcts[between(sp.Percent)] = true
	}
	order := make([]int, 0, len(pcts))
	for p := range pcts {
		order = append(order, p)
	}
	slices.Sort(order)
	for _, p := range order {
		st := Step{Action: sp.Actions[pick(len(sp.Actions))], Percent: p}
		if st.Action.Takes(scenario.ParamDown) {
			lo, hi := sp.DownMS[0]/100, sp.DownMS[1]/100
			st.DownMS = 100 * (lo + rng.Int64N(hi-lo+1))
		}
		if t.Nodes > 1 && len(sp.Targets) > 0 {
			st.Target = sp.Targets[pick(len(sp.Targets))]
			if st.Target == scenario.TargetNode {
				st.Node = 1 + pick(t.Nodes)
			}
		}
		t.Steps = append(t.Steps, st)
	}
	return t
}

// roundTo rounds n to the nearest multiple of step, at least step.
func roundTo(n, step int) int { return max(step, (n+step/2)/step*step) }
