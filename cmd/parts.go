package cmd

import (
	"errors"
	"fmt"
	"regexp"

	"github.com/spf13/cobra"

	"github.com/rmqtorture/rmqtorture/metrics"
	"github.com/rmqtorture/rmqtorture/scenario"
)

// A run split across processes and hosts (docs/split-runs.md, "Load from
// many processes"): `run S --load-only --part K/N --run-id ID --uri …` publishes
// part K's share of every burst's ids into the queues of run ID on the
// broker --uri names; `run S --drain-only --parts N --run-id ID --uri …`,
// started once every part has ended, drains them; `rmqtorture check` over
// the N+1 folders merges the histories into one ledger and one verdict
// (checkparts.go). Whoever starts the processes (a CI matrix, Kubernetes
// Jobs, ssh) is the coordinator; faults, if any, are its job too.

// splitOpts are the flags of a split run.
type splitOpts struct {
	loadOnly, drainOnly bool
	part                string // --part K/N
	parts               int    // --parts N
	runID               string
}

func (o *runOpts) addSplitFlags(c *cobra.Command) {
	fl := c.Flags()
	fl.BoolVar(&o.split.loadOnly, "load-only", false, "be one load part of a run split across processes: publish this part's share of the ids (--part K/N) into run --run-id's queues on the --uri broker, record the history; no drain, no fault; rmqtorture check judges the parts and the drain together")
	fl.BoolVar(&o.split.drainOnly, "drain-only", false, "be the drain of a run split across processes: drain run --run-id's queues on the --uri broker once every load part has ended (--parts N) and record every delivery")
	fl.StringVar(&o.split.part, "part", "", "with --load-only: K/N, this process's share of every burst's ids (sequence numbers (K-1)·M/N to K·M/N-1 of M)")
	fl.IntVar(&o.split.parts, "parts", 0, fmt.Sprintf("with --drain-only: how many load parts published (1–%d)", metrics.MaxParts))
	fl.StringVar(&o.split.runID, "run-id", "", "with --load-only or --drain-only: the id every part of the run shares (1–40 letters, digits, - or _): queue names and message ids carry it; use a new one per run")
}

// on reports whether this process is a part of a split run.
func (s *splitOpts) on() bool { return s.loadOnly || s.drainOnly }

var runIDPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,40}$`)

// checkSplit checks the split-run flags on their own and beside --uri
// (checked before: o.uri holds $RMQTORTURE_URI when the flag is absent).
func (o *runOpts) checkSplit(c *cobra.Command) error {
	fl, sp := c.Flags(), &o.split
	if !sp.on() {
		for _, name := range []string{"part", "parts", "run-id"} {
			if fl.Changed(name) {
				return fmt.Errorf("--%s is for a run split across processes: give it with --load-only or --drain-only", name)
			}
		}
		return nil
	}
	role := "--load-only"
	if sp.drainOnly {
		role = "--drain-only"
	}
	switch {
	case sp.loadOnly && sp.drainOnly:
		return errors.New("--load-only and --drain-only: a process is one load part or the drain: give one")
	case sp.loadOnly && !fl.Changed("part"):
		return errors.New("--load-only needs --part K/N: the share of every burst's ids this process publishes (e.g. --part 2/4)")
	case sp.loadOnly && fl.Changed("parts"):
		return errors.New("--parts is the drain's (--drain-only); a load part gives --part K/N")
	case sp.drainOnly && !fl.Changed("parts"):
		return errors.New("--drain-only needs --parts N: how many load parts published into the queues")
	case sp.drainOnly && fl.Changed("part"):
		return errors.New("--part is a load part's (--load-only); the drain gives --parts N")
	case sp.runID == "":
		return fmt.Errorf("%s needs --run-id: the id every part of the run shares (queue names and message ids carry it), e.g. --run-id nightly-42", role)
	case !runIDPattern.MatchString(sp.runID):
		return fmt.Errorf("--run-id %q: use 1–40 letters, digits, - or _ (queue names and message ids carry it)", sp.runID)
	case o.uri == "":
		return fmt.Errorf("%s needs --uri (or %s): the broker every part and the drain reach, which you run", role, uriEnv)
	}
	if sp.loadOnly {
		if _, _, err := metrics.ParsePart(sp.part); err != nil {
			return fmt.Errorf("--part: %w", err)
		}
	} else if sp.parts < 1 || sp.parts > metrics.MaxParts {
		return fmt.Errorf("--parts must be within 1–%d, got %d", metrics.MaxParts, sp.parts)
	}
	return nil
}

// splitScenario refuses a scenario a split run cannot measure.
func (o *runOpts) splitScenario(s *scenario.Scenario) error {
	sp := &o.split
	if !sp.on() {
		return nil
	}
	n := sp.parts
	flag := fmt.Sprintf("--parts %d", n)
	if sp.loadOnly {
		_, n, _ = metrics.ParsePart(sp.part)
		flag = "--part " + sp.part
	}
	switch {
	case s.Consumers.Enabled():
		return fmt.Errorf("%s: scenario %q has live consumers (consumers.count), which would take the parts' messages off the queue before the drain: a split run publishes, then drains", flag, s.Name)
	case s.Load.Messages < n:
		return fmt.Errorf("%s: scenario %q publishes %d orders per burst (load.messages), fewer than its %d parts: every part needs at least one", flag, s.Name, s.Load.Messages, n)
	}
	return nil
}

// part is the share of the run this process runs, for the runner and the
// result (nil: a whole run).
func (o *runOpts) partOf(s *scenario.Scenario) *metrics.Part {
	sp := &o.split
	switch {
	case sp.drainOnly:
		return &metrics.Part{RunID: sp.runID, Parts: sp.parts, Drain: true}
	case sp.loadOnly:
		k, n, _ := metrics.ParsePart(sp.part)
		first, end := metrics.PartRange(s.Load.Messages, k, n)
		return &metrics.Part{RunID: sp.runID, Index: k, Parts: n, First: first, End: end}
	}
	return nil
}

// partDir is the suffix of a part's run folder: parts writing under one
// --out keep apart.
func partDir(p *metrics.Part) string {
	switch {
	case p == nil:
		return ""
	case p.Drain:
		return "-drain"
	}
	return fmt.Sprintf("-part%dof%d", p.Index, p.Parts)
}
