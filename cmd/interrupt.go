package cmd

// Interrupts come in stages. The first Ctrl-C (or SIGTERM, as a cancelled CI
// job sends) cancels the command's context: run stops publishing, finishes
// a fault already under way (restarts a killed broker, clears an alarm) but
// starts none, drains what was published, writes the partial report and
// removes its container (exit 130). The second aborts: run writes what it
// has (the modes that finished; the one under way and the rest as not
// run), removes its container and the process exits without waiting for
// the rest. A third exits at once. An interrupt that comes before any
// scenario started (while files are read and checked, or the Docker Engine
// is first asked) ends the command at once: there is nothing to restore.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/rmqtorture/rmqtorture/scenario"
)

// abortWait caps how long a second interrupt waits for the scenarios under
// way to write their reports and remove their containers (a container being
// created is waited for: creation ignores Ctrl-C).
const abortWait = 90 * time.Second

// Main runs the command line with args, stepping through the interrupt
// stages as SIGINT and SIGTERM arrive, and returns the exit code for
// os.Exit.
func Main(args []string, stdout, stderr io.Writer) int {
	sigs := make(chan os.Signal, 3)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	return executeSignals(args, stdout, stderr, sigs)
}

// executeSignals runs the command line while counting interrupts on sigs.
func executeSignals(args []string, stdout, stderr io.Writer, sigs <-chan os.Signal) int {
	ctx, stop := context.WithCancel(context.Background())
	// The command is cancelled on the way out, unless it is abandoned: a
	// first interrupt before anything started exits at once, and a
	// cancelled command would still print its own, second account of the
	// interruption before the process exits.
	abandoned := false
	defer func() {
		if !abandoned {
			stop()
		}
	}()
	a := newAborter()
	done := make(chan int, 1)
	go func() { done <- Execute(context.WithValue(ctx, aborterKey{}, a), args, stdout, stderr) }()
	var cleaned <-chan int
	// On a terminal a notice first erases the progress line (and the ^C
	// echoed after it), so it starts a line of its own.
	erase := ""
	if isTerminal(stderr) {
		erase = clearLine
	}
	for n := 1; ; n++ {
		select {
		case code := <-done:
			return code
		case code := <-cleaned:
			return code
		case <-sigs:
		}
		switch {
		case n == 1 && !a.started():
			fmt.Fprintln(stderr, erase+"rmqtorture: interrupted before any scenario started: nothing to restore, exiting")
			abandoned = true
			return ExitInterrupted
		case n == 1:
			fmt.Fprintln(stderr, erase+"rmqtorture: interrupted: stopping, finishing the fault under way, draining what was published and writing the partial report (again to stop now)")
			stop()
		case n == 2:
			fmt.Fprintln(stderr, erase+"rmqtorture: interrupted twice: writing what was measured, removing the broker container, exiting (again to exit at once)")
			cleaned = a.abort(abortWait, stderr)
		default:
			// At once, but not blindly: a bounded, best-effort removal of
			// the containers this process created (cmd/cleanup.go Abort).
			fmt.Fprintln(stderr, erase+"rmqtorture: interrupted three times: removing what this process created (at most 2 s) and exiting")
			Abort(stderr, 2*time.Second)
			return ExitInterrupted
		}
	}
}

type aborterKey struct{}

// aborter carries the second interrupt to the scenarios under way: ctx is
// cancelled by it, and each scenario is counted in wg from its start until
// it is done, or has written its report and removed its container.
type aborter struct {
	ctx     context.Context
	cancel  context.CancelFunc
	mu      sync.Mutex
	closed  bool // aborting: no scenario starts any more
	entered bool // a scenario has started (enter)
	wg      sync.WaitGroup
	code    int // the exit code of what the aborted scenarios wrote
	// ownEnd: a scenario's own flow wrote its report before the abort
	// could, so the command's own exit code is the one to wait for.
	ownEnd bool
}

func newAborter() *aborter {
	ctx, cancel := context.WithCancel(context.Background())
	return &aborter{ctx: ctx, cancel: cancel, code: ExitInterrupted}
}

func aborterOf(ctx context.Context) *aborter {
	a, _ := ctx.Value(aborterKey{}).(*aborter)
	return a
}

// enter counts a scenario in; false once aborting.
func (a *aborter) enter() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return false
	}
	a.entered = true
	a.wg.Add(1)
	return true
}

// started reports whether a scenario has started (entered), even one that
// has ended since.
func (a *aborter) started() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.entered
}

// leave counts a scenario out, with the exit code of the partial report it
// wrote when it was aborted; ExitPass when it was not (it ended, or its own
// flow wrote the report).
func (a *aborter) leave(code int) {
	a.mu.Lock()
	if code != ExitPass {
		a.code = worseCode(a.code, code)
	}
	a.mu.Unlock()
	a.wg.Done()
}

// ownEnded records that a scenario's own flow wrote its report first.
func (a *aborter) ownEnded() {
	a.mu.Lock()
	a.ownEnd = true
	a.mu.Unlock()
}

// abort cancels a.ctx and returns a channel that gets the exit code once
// every scenario under way has cleaned up (nothing when a scenario's own
// flow wrote its report: the command's exit code follows), or after wait.
func (a *aborter) abort(wait time.Duration, stderr io.Writer) <-chan int {
	a.mu.Lock()
	a.closed = true
	a.mu.Unlock()
	a.cancel()
	out := make(chan int, 1)
	go func() {
		idle := make(chan struct{})
		go func() { a.wg.Wait(); close(idle) }()
		select {
		case <-idle:
			a.mu.Lock()
			defer a.mu.Unlock()
			if !a.ownEnd {
				out <- a.code
			}
		case <-time.After(wait):
			fmt.Fprintf(stderr, "rmqtorture: cleanup not done within %s: removing what this process created and exiting\n", wait)
			Abort(stderr, 5*time.Second)
			out <- ExitInterrupted
		}
	}()
	return out
}

// scenarioRun is one scenario's report as an abort needs it: the result's
// header, the modes done so far, the rest as planned, and how to remove
// the container. Whoever writes the report first (the run's end, or the
// abort) writes it; the other does not.
type scenarioRun struct {
	o   *runOpts
	c   *cobra.Command
	log *slog.Logger
	dir string

	mu      sync.Mutex
	header  scenario.Result       // the result without modes, as provisioned
	planned []scenario.ModeResult // every (cell, mode) in run order, as not run
	done    []scenario.ModeResult // results so far, in run order
	written bool                  // the scenario's report is written
	// abortCause is the cause of the report a second interrupt wrote.
	abortCause Cause

	provisioned chan struct{} // closed once the container exists, or will not
	release     func()        // removes the container; set before provisioned closes
	releaseOnce sync.Once

	a        *aborter // nil: no second interrupt to watch for (Execute without Main)
	stopping chan struct{}
	watched  chan struct{}
}

// watch starts the abort watcher of a scenario (when ctx carries an
// aborter) and returns its state; stop, deferred, ends it and removes the
// container. A scenario started while aborting watches nothing: the run
// loop does not start one after a first interrupt.
func (o *runOpts) watch(ctx context.Context, c *cobra.Command, log *slog.Logger, s *scenario.Scenario, res *scenario.Result, dir string) *scenarioRun {
	sr := &scenarioRun{o: o, c: c, log: log, dir: dir, header: *res, planned: plannedModes(s),
		provisioned: make(chan struct{}), release: func() {}, stopping: make(chan struct{}), watched: make(chan struct{})}
	if a := aborterOf(ctx); a != nil && a.enter() {
		sr.a = a
		go sr.watchAbort()
	} else {
		close(sr.watched)
	}
	return sr
}

func (sr *scenarioRun) watchAbort() {
	defer close(sr.watched)
	select {
	case <-sr.stopping:
		sr.a.leave(ExitPass)
	case <-sr.a.ctx.Done():
		sr.a.leave(sr.abort())
	}
}

// plannedModes lists every mode the scenario will run, per matrix cell, in
// run order (runCells' order), each as not run.
func plannedModes(s *scenario.Scenario) []scenario.ModeResult {
	var out []scenario.ModeResult
	for _, cell := range s.Cells() {
		sc, cp := s, (*scenario.Cell)(nil)
		if s.IsMatrix() {
			c := cell
			sc, cp = s.ForCell(c), &c
		}
		for _, m := range sc.Load.Modes {
			out = append(out, scenario.ModeResult{Mode: m, Cell: cp, NotRun: true})
		}
		if !s.IsMatrix() {
			break
		}
	}
	return out
}

// provisionedWith records the container's release (never nil) and the
// result's header once the container exists, or will not.
func (sr *scenarioRun) provisionedWith(release func(), res *scenario.Result) {
	sr.mu.Lock()
	sr.release = release
	sr.header = *res
	sr.mu.Unlock()
	close(sr.provisioned)
}

// setHeader records the result's header again (the broker version, once
// the broker is ready).
func (sr *scenarioRun) setHeader(res *scenario.Result) {
	sr.mu.Lock()
	sr.header = *res
	sr.mu.Unlock()
}

// modeDone records a finished (or skipped) mode's result.
func (sr *scenarioRun) modeDone(m scenario.ModeResult) {
	sr.mu.Lock()
	defer sr.mu.Unlock()
	sr.done = append(sr.done, m)
}

// writeOnce runs write, the scenario's one report writing, unless the
// abort wrote the report first; it returns false then.
func (sr *scenarioRun) writeOnce(write func() error) (bool, error) {
	sr.mu.Lock()
	defer sr.mu.Unlock()
	if sr.written {
		return false, nil
	}
	sr.written = true
	return true, write()
}

// releaseContainer removes the container (unless --keep), once.
func (sr *scenarioRun) releaseContainer() {
	sr.releaseOnce.Do(func() {
		sr.mu.Lock()
		release := sr.release
		sr.mu.Unlock()
		release()
	})
}

// stop ends the watcher (waiting for an abort under way) and removes the
// container.
func (sr *scenarioRun) stop() {
	close(sr.stopping)
	<-sr.watched
	sr.releaseContainer()
}

// abort writes the partial report of a second interrupt, unless the
// report is written already, and removes the container once it exists. It
// returns the exit code of what it wrote: 1 when a mode that finished
// failed, else 130.
func (sr *scenarioRun) abort() int {
	code := ExitInterrupted
	wrote, err := sr.writeOnce(func() error {
		res := sr.header
		res.Modes = slices.Clone(sr.done)
		for i, p := range sr.planned[min(len(sr.done), len(sr.planned)):] {
			reason := "not run: interrupted twice"
			if i == 0 && res.Container != "" {
				reason = "cut short: interrupted twice, its ids were not reconciled"
			}
			p.Verdict = scenario.Verdict{Status: scenario.Inconclusive, Reasons: []string{reason}}
			res.Modes = append(res.Modes, p)
		}
		res.Interrupted = true
		res.Error = "interrupted twice: exited without finishing the mode under way"
		res.Verdict = scenario.Overall(res.Modes)
		sr.abortCause = CauseInterrupted
		if res.Verdict.Status == scenario.Fail {
			sr.abortCause = CauseVerdictFail
		}
		code = codeOf(sr.abortCause)
		res.DurationMS = float64(time.Since(res.StartedAt).Milliseconds())
		// The last report: the process exits without waiting for run.
		return errors.Join(sr.o.write(sr.c, sr.log, sr.dir, &res), sr.o.endJSONArray(sr.c.OutOrStdout()))
	})
	if err != nil {
		sr.log.Error("write the partial report", "err", err)
	}
	if wrote {
		// The process exits without waiting for run: the versions report
		// (images.go) is written now, with what ran.
		if err := sr.o.versions.finish(true); err != nil {
			sr.log.Error("write the versions report", "err", err)
		}
	}
	if !wrote {
		code = ExitPass // the run's own report stands, and its own exit code
		sr.a.ownEnded()
	}
	<-sr.provisioned
	sr.releaseContainer()
	return code
}
