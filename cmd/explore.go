package cmd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	mrand "math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/rmqtorture/rmqtorture/broker/docker"
	"github.com/rmqtorture/rmqtorture/explore"
	"github.com/rmqtorture/rmqtorture/scenario"
)

// exploreOpts are explore's flags.
type exploreOpts struct {
	seed         uint64
	trials       int
	duration     time.Duration
	untilFailure bool
	dryRun       bool
	out          string
	shrink       bool
	reruns       int
	ruleRuns     int
	ruleNeed     int
	steps        []int
	actions      []string
	messages     []int
}

func newExplore(g *globalOpts) *cobra.Command {
	o := &exploreOpts{}
	c := &cobra.Command{
		Use:   "explore SCENARIO",
		Short: "Search fault schedules around a scenario from a seed, and shrink a failure",
		Long: `explore runs trials drawn around SCENARIO (its broker, queue and
expectations) until --trials or --duration is spent, or the first failure
with --until-failure. Trial i of --seed is the same scenario on every machine:
its fault steps (actions, targets on a cluster, published_percent triggers,
down times) and its load (messages, mode, window) are drawn from a PCG
generator seeded with (seed, i). Each trial is an ordinary run whose scenario
file is kept (trials/NAME.yaml under the explore folder): rmqtorture run NAME
-f that file replays it.

A failing verdict is a failure; an inconclusive trial is counted apart with
its reason. The first failure is shrunk: one reduction at a time (drop a
step, a single broker, halve a down time, fire earlier, halve messages,
window, rate, one publisher), each candidate run until it has failed
--rule-need of --rule-runs times (kept) or cannot (dropped). The minimal
scenario is written as minimal.yaml, then rerun --reruns times: its failure
rate, a 95% Wilson interval, and the clean runs a fix would need.
explore.md and explore.json report trials, failures, inconclusive reasons
and the actions x targets covered. --dry-run prints the drawn trials'
scenario files and runs nothing.

Exit codes: 0 no failure found, 1 a failure found, 2 bad input, 4 error,
130 interrupted.`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return fmt.Errorf("explore takes one scenario name, got %d", len(args))
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error { return o.run(c, g, args[0]) },
	}
	fl := c.Flags()
	fl.Uint64Var(&o.seed, "seed", 0, "the search's seed (0: drawn and printed)")
	fl.IntVar(&o.trials, "trials", 10, "trials to run at most")
	fl.DurationVar(&o.duration, "duration", 0, "stop starting trials after this long (0: no limit)")
	fl.BoolVar(&o.untilFailure, "until-failure", false, "stop at the first failing trial")
	fl.BoolVar(&o.dryRun, "dry-run", false, "print the trials' scenario files and run nothing")
	fl.StringVar(&o.out, "out", "results", "folder for the explore folder")
	fl.BoolVar(&o.shrink, "shrink", true, "shrink the first failure")
	fl.IntVar(&o.reruns, "reruns", 10, "reruns of the minimal scenario for its failure rate")
	fl.IntVar(&o.ruleRuns, "rule-runs", explore.DefaultRule.Runs, "shrinking: runs of a candidate at most")
	fl.IntVar(&o.ruleNeed, "rule-need", explore.DefaultRule.Need, "shrinking: failures that keep a candidate")
	fl.IntSliceVar(&o.steps, "steps", nil, "fault steps per trial: MIN,MAX (default: space.steps, else 1,2)")
	fl.StringSliceVar(&o.actions, "actions", nil, "fault actions to draw from (default: space.actions, else every one that takes the broker down and brings it back on this topology)")
	fl.IntSliceVar(&o.messages, "messages", nil, "burst size range: MIN,MAX (default: space.messages, else the scenario's)")
	addFileFlag(c, g)
	return c
}

// space is the search space the flags make around base, defaults filled.
func (o *exploreOpts) space(base *scenario.Scenario) (explore.Space, error) {
	sp := explore.FromScenario(base.Space)
	if len(o.actions) > 0 {
		sp.Actions = nil
	}
	for _, a := range o.actions {
		act := scenario.Action(strings.TrimSpace(a))
		if _, ok := act.Spec(); !ok {
			return sp, fmt.Errorf("--actions: %q is not a fault action%s", a, scenario.DidYouMean(string(act), faultActionNames()))
		}
		sp.Actions = append(sp.Actions, act)
	}
	pair := func(flag string, v []int) ([2]int, error) {
		switch len(v) {
		case 0:
			return [2]int{}, nil
		case 2:
			return [2]int{v[0], v[1]}, nil
		}
		return [2]int{}, fmt.Errorf("--%s: want MIN,MAX (two numbers), got %s", flag, strings.Trim(strings.Join(strings.Fields(fmt.Sprint(v)), ","), "[]"))
	}
	if v, err := pair("steps", o.steps); err != nil {
		return sp, err
	} else if v != ([2]int{}) {
		sp.Steps = v
	}
	if v, err := pair("messages", o.messages); err != nil {
		return sp, err
	} else if v != ([2]int{}) {
		sp.Messages = v
	}
	sp = sp.Defaults(base)
	if err := sp.Check(); err != nil {
		return sp, fmt.Errorf("scenario %q: the search space: %w", base.Name, err)
	}
	return sp, nil
}

// faultActionNames lists the fault actions, for DidYouMean.
func faultActionNames() []string {
	out := make([]string, len(scenario.Actions))
	for i, a := range scenario.Actions {
		out[i] = string(a)
	}
	return out
}

// exploreReport is explore.json.
type exploreReport struct {
	Scenario string        `json:"scenario"`
	File     string        `json:"file"`
	Seed     uint64        `json:"seed"`
	Space    explore.Space `json:"space"`
	Trials   []trialResult `json:"trials"`
	// TrialsPerHour is trials run per hour of the search (shrinking and
	// reruns apart).
	TrialsPerHour float64 `json:"trials_per_hour"`
	// BrokersCreated counts the brokers (or clusters) explore created for
	// all its runs (trials, shrinking, reruns); BrokersReplaced those it
	// replaced because a health check failed.
	BrokersCreated  int `json:"brokers_created"`
	BrokersReplaced int `json:"brokers_replaced"`
	// Failures and Inconclusive count trials by outcome; Reasons the
	// inconclusive reasons, each with its count.
	Failures     int            `json:"failures"`
	Inconclusive int            `json:"inconclusive"`
	Reasons      map[string]int `json:"inconclusive_reasons,omitempty"`
	// Covered counts trial steps by "action × target".
	Covered map[string]int `json:"covered"`
	// FirstFailure is the index of the first failing trial (nil: none).
	FirstFailure *int            `json:"first_failure,omitempty"`
	Shrunk       *explore.Shrunk `json:"shrunk,omitempty"`
	// Minimal is minimal.yaml's path; Rate its failure rate over the
	// reruns, and CleanRuns the clean runs a fix would need.
	Minimal   string        `json:"minimal,omitempty"`
	Rate      *explore.Rate `json:"rate,omitempty"`
	CleanRuns int           `json:"clean_runs_to_call_fixed,omitempty"`
}

// trialResult is one trial's outcome.
type trialResult struct {
	explore.Trial
	Outcome string   `json:"outcome"` // pass, fail, inconclusive
	Reasons []string `json:"reasons,omitempty"`
	File    string   `json:"file"`
	Result  string   `json:"result,omitempty"`
	Seconds float64  `json:"seconds"`
}

func (o *exploreOpts) run(c *cobra.Command, g *globalOpts, name string) error {
	ctx := c.Context()
	f, err := g.load()
	if err != nil {
		return err
	}
	base, err := f.Find(g.file, name)
	if err != nil {
		return causeErr(CauseUnknownScenario, err)
	}
	if len(base.Runs) > 0 || len(base.Matrix.QueueTypes) > 0 || len(base.Broker.Images) > 0 {
		return usageErr(fmt.Errorf("scenario %q: explore draws trials around one scenario on one broker: not a group, a matrix over queue types or broker.images", name))
	}
	if base.RunsCommands() {
		return usageErr(fmt.Errorf("scenario %q has command steps: explore draws its own fault steps from rmqtorture's actions", name))
	}
	sp, err := o.space(base)
	if err != nil {
		return usageErr(err)
	}
	rule := explore.Rule{Runs: o.ruleRuns, Need: o.ruleNeed}
	switch {
	case o.trials < 1:
		return usageErr(fmt.Errorf("--trials %d: want at least 1", o.trials))
	case o.reruns < 0:
		return usageErr(fmt.Errorf("--reruns %d: want 0 or more", o.reruns))
	case rule.Runs < 1 || rule.Need < 1 || rule.Need > rule.Runs:
		return usageErr(fmt.Errorf("--rule-need %d of --rule-runs %d: want 1 ≤ need ≤ runs", rule.Need, rule.Runs))
	}
	if !c.Flags().Changed("seed") {
		o.seed = newSeed()
	}
	stdout := c.OutOrStdout()
	if o.dryRun {
		for i := range o.trials {
			t, data, err := explore.Draw(base, sp, o.seed, i)
			if err != nil {
				return causeErr(CauseBadScenarioFile, err)
			}
			fmt.Fprintf(stdout, "# trial %d of seed %d: %s\n%s", i, o.seed, t, data)
		}
		return nil
	}
	return o.search(ctx, c, g, base, sp, rule)
}

// search runs the trials, shrinks the first failure and writes the report.
func (o *exploreOpts) search(ctx context.Context, c *cobra.Command, g *globalOpts, base *scenario.Scenario, sp explore.Space, rule explore.Rule) error {
	started := time.Now()
	dir := filepath.Join(o.out, fmt.Sprintf("explore-%s-%s-s%d", base.Name, started.UTC().Format("20060102T150405Z"), o.seed))
	if err := os.MkdirAll(filepath.Join(dir, "trials"), 0o755); err != nil {
		return causeErr(CauseUnwritableOutput, fmt.Errorf("--out: %w", err))
	}
	logFile, err := os.Create(filepath.Join(dir, "runs.log"))
	if err != nil {
		return causeErr(CauseUnwritableOutput, err)
	}
	defer logFile.Close()
	if err := checkDockerEnv(); err != nil {
		return usageErr(err)
	}
	cli, err := docker.Connect(ctx)
	if err != nil {
		return notStarted(ctx, causeErr(CauseDockerUnreachable, err))
	}
	defer cli.Close()
	ex := &explorer{g: g, cli: cli, engine: docker.EngineDescription(ctx, cli), base: base, dir: dir, logFile: logFile, log: g.runLogger(logFile), brokers: map[int]*underTest{}}
	defer ex.close()
	stderr := c.ErrOrStderr()
	fmt.Fprintf(stderr, "explore   %s, seed %d: trials in %s\n", base.Name, o.seed, dir)

	rep := exploreReport{Scenario: base.Name, File: g.file, Seed: o.seed, Space: sp, Covered: map[string]int{}, Reasons: map[string]int{}}
	var failed *explore.Trial
	var stopErr error
	searchStart := time.Now()
	for i := range o.trials {
		if ctx.Err() != nil || (o.duration > 0 && time.Since(searchStart) > o.duration) {
			break
		}
		t, _, err := explore.Draw(base, sp, o.seed, i)
		if err != nil {
			return causeErr(CauseBadScenarioFile, err)
		}
		tr, err := ex.runTrial(ctx, t, "trials")
		if err != nil {
			// Ctrl-C, or an error that stops the search: the report
			// still says what was run.
			if ctx.Err() == nil {
				stopErr = err
			}
			break
		}
		rep.Trials = append(rep.Trials, tr)
		for _, cell := range t.Cells() {
			rep.Covered[cell]++
		}
		fmt.Fprintf(stderr, "trial %-3d %-12s %s (%.0fs)\n", i, tr.Outcome, t, tr.Seconds)
		switch tr.Outcome {
		case outcomeFail:
			rep.Failures++
			if failed == nil {
				failed = &t
				idx := i
				rep.FirstFailure = &idx
			}
		case outcomeInconclusive:
			rep.Inconclusive++
			for _, r := range tr.Reasons {
				rep.Reasons[r]++
			}
		}
		if failed != nil && o.untilFailure {
			break
		}
	}
	if h := time.Since(searchStart).Hours(); h > 0 {
		rep.TrialsPerHour = float64(len(rep.Trials)) / h
	}
	rep.BrokersCreated, rep.BrokersReplaced = ex.created, ex.replaced
	if failed != nil && o.shrink && ctx.Err() == nil && stopErr == nil {
		if err := o.shrinkFailure(ctx, stderr, ex, *failed, rule, &rep); err != nil && ctx.Err() == nil {
			stopErr = err
		}
	}
	if err := writeExploreReport(dir, &rep); err != nil {
		return causeErr(CauseWriteFailed, errors.Join(stopErr, err))
	}
	if stopErr != nil {
		fmt.Fprintf(stderr, "report (partial): %s\n", filepath.Join(dir, "explore.md"))
		return stopErr
	}
	fmt.Fprintf(c.OutOrStdout(), "%s", exploreSummary(&rep))
	fmt.Fprintf(stderr, "report: %s\n", filepath.Join(dir, "explore.md"))
	switch {
	case ctx.Err() != nil:
		return causeErr(CauseInterrupted, errors.New("interrupted"))
	case rep.Failures > 0:
		return causeErr(CauseVerdictFail, fmt.Errorf("explore: %d of %d trials failed", rep.Failures, len(rep.Trials)))
	}
	return nil
}

// shrinkFailure shrinks t, writes minimal.yaml and reruns it.
func (o *exploreOpts) shrinkFailure(ctx context.Context, stderr io.Writer, ex *explorer, t explore.Trial, rule explore.Rule, rep *exploreReport) error {
	fmt.Fprintf(stderr, "shrink    trial %d: %d of %d runs must fail to keep a candidate\n", t.Index, rule.Need, rule.Runs)
	fails := func(ctx context.Context, c explore.Trial) (bool, error) {
		tr, err := ex.runTrial(ctx, c, "shrink")
		if err != nil {
			return false, err
		}
		fmt.Fprintf(stderr, "  candidate %-12s %s\n", tr.Outcome, c)
		return tr.Outcome == outcomeFail, nil
	}
	valid := func(c explore.Trial) bool { _, _, err := c.Scenario(ex.base); return err == nil }
	shrunk, err := explore.Shrink(ctx, t, fails, valid, rule)
	rep.Shrunk = &shrunk
	if err != nil {
		return err
	}
	data, _, err := shrunk.Minimal.Scenario(ex.base)
	if err != nil {
		return err
	}
	var head strings.Builder
	fmt.Fprintf(&head, "# Minimal scenario shrunk by rmqtorture explore from trial %d of seed %d\n# (%s -f %s).\n", t.Index, t.Seed, ex.base.Name, ex.g.file)
	fmt.Fprintf(&head, "# Removed: %s.\n", strings.Join(orNone(shrunk.Removed), "; "))
	fmt.Fprintf(&head, "# Rule: kept when %d of %d runs failed; %d candidates, %d runs.\n", rule.Need, rule.Runs, shrunk.Candidates, shrunk.Runs)
	rep.Minimal = filepath.Join(ex.dir, "minimal.yaml")
	if err := os.WriteFile(rep.Minimal, append([]byte(head.String()), data...), 0o644); err != nil {
		return causeErr(CauseWriteFailed, err)
	}
	failed := 0
	for i := range o.reruns {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		tr, err := ex.runTrial(ctx, shrunk.Minimal, "reruns")
		if err != nil {
			return err
		}
		if tr.Outcome == outcomeFail {
			failed++
		}
		fmt.Fprintf(stderr, "  rerun %-2d %s\n", i+1, tr.Outcome)
	}
	if o.reruns > 0 {
		r := explore.NewRate(failed, o.reruns)
		rep.Rate, rep.CleanRuns = &r, r.CleanRunsToCallFixed()
	}
	return nil
}

func orNone(s []string) []string {
	if len(s) == 0 {
		return []string{"nothing"}
	}
	return s
}

// Trial outcomes.
const (
	outcomePass         = "pass"
	outcomeFail         = "fail"
	outcomeInconclusive = "inconclusive"
)

// explorer runs trials as ordinary runs. A broker (or cluster) it creates
// serves the trials of its size one after the other while it stays
// healthy: before each trial it must accept AMQP logins (every node, the
// cluster formed) within healthTimeout, and each run deletes its queues and
// undoes its faults; one that is not healthy, or whose trial could not run,
// is removed and the next trial creates another.
type explorer struct {
	g   *globalOpts
	cli *docker.Engine
	// engine describes the Docker Engine for every run's result.json,
	// asked once.
	engine  string
	base    *scenario.Scenario
	dir     string
	logFile io.Writer
	log     *slog.Logger
	n       int // runs so far, for file names
	// brokers are the brokers kept for reuse, by node count; created and
	// replaced count them.
	brokers           map[int]*underTest
	created, replaced int
}

// healthTimeout bounds the health check of a reused broker.
const healthTimeout = 30 * time.Second

// broker returns a healthy broker of nodes for the next trial of s: the
// one kept, or nil when a new one must be created (the run creates it and
// keep adopts it).
func (ex *explorer) broker(ctx context.Context, nodes int) *underTest {
	ut := ex.brokers[nodes]
	if ut == nil {
		return nil
	}
	if err := ut.ready(ctx, healthTimeout); err != nil {
		ex.log.Warn("explore: replacing an unhealthy broker", "name", ut.name, "err", err)
		ex.drop(nodes)
		ex.replaced++
		return nil
	}
	return ut
}

// drop removes the broker of nodes.
func (ex *explorer) drop(nodes int) {
	ut := ex.brokers[nodes]
	if ut == nil {
		return
	}
	delete(ex.brokers, nodes)
	rctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := ut.remove(rctx); err != nil {
		ex.log.Error("explore: remove broker", "name", ut.name, "err", err)
	}
}

// close removes every broker kept.
func (ex *explorer) close() {
	for n := range ex.brokers {
		ex.drop(n)
	}
}

// runTrial runs t once, its scenario file and run folder under sub, and
// reads its verdict from result.json. Only an error that stops the search
// (the output unwritable, Docker gone, Ctrl-C) is returned; a trial that
// could not run is inconclusive.
func (ex *explorer) runTrial(ctx context.Context, t explore.Trial, sub string) (trialResult, error) {
	ex.n++
	start := time.Now()
	data, s, err := t.Scenario(ex.base)
	tr := trialResult{Trial: t}
	if err != nil {
		return tr, causeErr(CauseBadScenarioFile, err)
	}
	folder := filepath.Join(ex.dir, sub)
	if err := os.MkdirAll(folder, 0o755); err != nil {
		return tr, causeErr(CauseUnwritableOutput, err)
	}
	tr.File = filepath.Join(folder, fmt.Sprintf("%03d-%s.yaml", ex.n, s.Name))
	if err := os.WriteFile(tr.File, data, 0o644); err != nil {
		return tr, causeErr(CauseUnwritableOutput, err)
	}
	o := &runOpts{}
	nodes := max(1, s.Broker.Nodes)
	o.reuse = ex.broker(ctx, nodes)
	o.keepBroker = o.reuse == nil // adopt what this run creates
	rc := newRunWith(ex.g, o)
	if err := rc.ParseFlags([]string{"--out", folder}); err != nil {
		return tr, err
	}
	rc.SetOut(ex.logFile)
	rc.SetErr(ex.logFile)
	rc.SetContext(ctx)
	o.engine = ex.engine
	plans := []scenario.Scenario{*s}
	if err := o.haveImages(ctx, ex.log, ex.cli, plans); err != nil {
		return tr, err
	}
	cause, err := o.runScenario(ctx, rc, ex.g, ex.log, ex.cli, &plans[0], nil)
	tr.Seconds = time.Since(start).Seconds()
	if o.reuse == nil && o.created != nil {
		ex.brokers[nodes] = o.created
		ex.created++
	}
	switch cause {
	case CauseBrokerNotReady, CauseOperational, CauseImageMissing:
		// The broker could not serve its trial: the next gets a new one.
		// After any other outcome the next trial's health check decides.
		ex.drop(nodes)
	}
	if ctx.Err() != nil {
		return tr, ctx.Err()
	}
	res := o.lastResult // the run's result, as its result.json holds it
	if o.lastDir != "" {
		tr.Result = filepath.Join(o.lastDir, "result.json")
	}
	switch {
	case cause == CausePass:
		tr.Outcome = outcomePass
	case cause == CauseVerdictFail:
		tr.Outcome = outcomeFail
		if res != nil {
			tr.Reasons = res.Verdict.Reasons
		}
	default:
		tr.Outcome = outcomeInconclusive
		switch {
		case res != nil && len(res.Verdict.Reasons) > 0:
			tr.Reasons = res.Verdict.Reasons
		case err != nil:
			tr.Reasons = []string{err.Error()}
		default:
			tr.Reasons = []string{string(cause)}
		}
	}
	return tr, nil
}

// newSeed draws a search's seed.
func newSeed() uint64 { return mrand.Uint64() }

// writeExploreReport writes explore.json and explore.md into dir.
func writeExploreReport(dir string, rep *exploreReport) error {
	data, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "explore.json"), append(data, '\n'), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "explore.md"), []byte(exploreMarkdown(rep)), 0o644)
}

// exploreSummary is what explore prints on stdout at the end.
func exploreSummary(rep *exploreReport) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s, seed %d: %d trials, %d failed, %d inconclusive (%.0f trials per hour, %d brokers created, %d replaced)\n",
		rep.Scenario, rep.Seed, len(rep.Trials), rep.Failures, rep.Inconclusive, rep.TrialsPerHour, rep.BrokersCreated, rep.BrokersReplaced)
	if rep.FirstFailure != nil {
		t := rep.Trials[*rep.FirstFailure]
		fmt.Fprintf(&b, "first failure: trial %d (%s): %s\n", t.Index, t.Trial, strings.Join(t.Reasons, "; "))
	}
	if s := rep.Shrunk; s != nil {
		fmt.Fprintf(&b, "shrunk to: %s (%d → %d steps, %d → %d messages; %d candidates, %d runs)\n",
			s.Minimal, len(s.Original.Steps), len(s.Minimal.Steps), s.Original.Messages, s.Minimal.Messages, s.Candidates, s.Runs)
	}
	if rep.Minimal != "" {
		fmt.Fprintf(&b, "minimal scenario: %s\n", rep.Minimal)
	}
	if r := rep.Rate; r != nil {
		fmt.Fprintf(&b, "it failed %d of %d reruns (95%% interval %.0f–%.0f%%); %d clean runs in a row would call it fixed\n",
			r.Failed, r.Runs, 100*r.Low, 100*r.High, rep.CleanRuns)
	}
	return b.String()
}

// exploreMarkdown is explore.md.
func exploreMarkdown(rep *exploreReport) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# explore %s, seed %d\n\n%s\n", rep.Scenario, rep.Seed, exploreSummary(rep))
	b.WriteString("## Trials\n\n| trial | outcome | steps and load | reasons | scenario |\n|---:|---|---|---|---|\n")
	for _, t := range rep.Trials {
		fmt.Fprintf(&b, "| %d | %s | %s | %s | %s |\n", t.Index, t.Outcome, t.Trial, strings.Join(t.Reasons, "; "), filepath.Base(t.File))
	}
	if len(rep.Reasons) > 0 {
		b.WriteString("\n## Inconclusive\n\n| reason | trials |\n|---|---:|\n")
		for _, r := range sortedKeys(rep.Reasons) {
			fmt.Fprintf(&b, "| %s | %d |\n", r, rep.Reasons[r])
		}
	}
	b.WriteString("\n## Covered (action × target: steps)\n\n| action × target | steps |\n|---|---:|\n")
	for _, c := range sortedKeys(rep.Covered) {
		fmt.Fprintf(&b, "| %s | %d |\n", c, rep.Covered[c])
	}
	if s := rep.Shrunk; s != nil {
		fmt.Fprintf(&b, "\n## Shrinking\n\nfrom: %s\n\nto: %s\n\nremoved, in order:\n\n", s.Original, s.Minimal)
		for _, r := range orNone(s.Removed) {
			fmt.Fprintf(&b, "- %s\n", r)
		}
	}
	return b.String()
}

// sortedKeys is m's keys, sorted.
func sortedKeys(m map[string]int) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
