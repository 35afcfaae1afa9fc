package cmd

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"time"

	"golang.org/x/term"

	"github.com/rmqtorture/rmqtorture/engine"
	"github.com/rmqtorture/rmqtorture/metrics"
	"github.com/rmqtorture/rmqtorture/scenario"
)

// What `run` shows on stderr:
//
//   - --log-format human (the default), no -v nor -q: phase lines (broker
//     starting and ready, each mode's burst, fault, recovery, drain and
//     result, the verdict) and logs at WARN and above only, without time
//     stamps; on a terminal also one progress line redrawn in place. Off a
//     terminal (CI, a pipe, a file) the phase lines are printed as they
//     happen, with no control codes.
//   - -v, or --log-format text or json: logs at INFO (DEBUG with -v) as
//     slog key=value or JSON lines; no phase lines; the progress line on
//     a terminal, with -v in the human format only.
//   - -q: WARN and above only; no progress line, no phase lines.

// progressEvery is how often the progress line is redrawn.
const progressEvery = 500 * time.Millisecond

// rateWindow is how far back the progress line's rate looks.
const rateWindow = 3 * time.Second

// clearLine returns the cursor to the start of the line and erases it.
const clearLine = "\r\x1b[K"

// progress redraws one status line on a terminal while a run goes on and
// prints phase lines above it. A nil *progress (not a terminal, or -q)
// does nothing. It learns what happens through the engine's hooks
// (Runner.OnBurst, Runner.OnModeDone) and the burst's timeline
// (Timeline.Watch); the engine knows nothing of the terminal.
type progress struct {
	w      io.Writer
	width  func() int       // terminal columns
	now    func() time.Time // the clock; tests replace it
	phases bool             // print phase lines (not with -v: the logs say it)
	live   bool             // redraw a progress line (a terminal); else phase lines only

	mu    sync.Mutex // guards everything below and every write to w
	shown bool       // a progress line is on screen
	// pending phase lines, printed on the next draw.
	pending []string

	// This scenario: modes to run (every matrix cell counted), modes
	// done, orders per burst, when it started.
	modes, done, messages int
	started               time.Time
	// waiting, when set and no burst runs, is shown with the time since
	// waitSince ("starting the broker").
	waiting   string
	waitSince time.Time

	// The burst under way (s nil: none, or hidden).
	mode      scenario.Mode
	s         *metrics.Series
	tl        *metrics.Timeline
	phase     string
	drainAt   time.Time
	trigSent  int                  // ids published when the latest trigger fired
	faultAt   map[string]time.Time // per target: when its latest fault took effect
	faultWhat map[string]string    // per target: that fault's action
	samples   []rateSample
	// The broker's state at the last draw, since when (the fault's
	// effect when a fault took it there).
	state      metrics.BrokerState
	stateSince time.Time
	lastFault  time.Time

	wake chan struct{}
	stop chan struct{}
	over chan struct{}
}

type rateSample struct {
	at time.Time
	n  int
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// termWidth is w's width in columns, 80 when unknown.
func termWidth(w io.Writer) func() int {
	return func() int {
		if f, ok := w.(*os.File); ok {
			if cols, _, err := term.GetSize(int(f.Fd())); err == nil && cols > 0 {
				return cols
			}
		}
		return 80
	}
}

// startProgress starts redrawing a progress line on w every interval when
// live is true (a terminal), with phase lines when phases is. Off a
// terminal (live false) it prints the phase lines as they come and draws
// nothing else; without either it returns nil, which does nothing ever.
func startProgress(w io.Writer, live, phases bool, interval time.Duration) *progress {
	if !live && !phases {
		return nil
	}
	p := newProgress(w, termWidth(w), phases)
	if !live {
		close(p.over)
		return p
	}
	p.live = true
	go func() {
		defer close(p.over)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-p.stop:
				return
			case <-t.C:
			case <-p.wake:
			}
			p.draw()
		}
	}()
	return p
}

func newProgress(w io.Writer, width func() int, phases bool) *progress {
	return &progress{w: w, width: width, now: time.Now, phases: phases,
		wake: make(chan struct{}, 1), stop: make(chan struct{}), over: make(chan struct{})}
}

// runLogger is run's logger: in the human format without -v, only
// warnings and errors, without time stamps (the phase lines tell the rest).
func (g *globalOpts) runLogger(w io.Writer) *slog.Logger {
	if g.structured() || g.quiet {
		return g.logger(w)
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelWarn,
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if len(groups) == 0 && a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return redactAttr(groups, a)
		}}))
}

// say queues a phase line for the next draw and wakes the drawer; callers
// hold mu.
func (p *progress) say(line string) {
	if !p.phases {
		return
	}
	p.pending = append(p.pending, line)
	if !p.live {
		p.flush() // nothing redraws: print it now
		return
	}
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// sayNow prints a phase line at once (callers hold mu).
func (p *progress) sayNow(line string) {
	p.say(line)
	p.flush()
}

// flush prints the pending phase lines above the progress line, erasing
// it first; the next draw puts it back. Callers hold mu.
func (p *progress) flush() {
	if len(p.pending) == 0 {
		return
	}
	p.erase()
	for _, l := range p.pending {
		fmt.Fprintln(p.w, l) // printed once: it may wrap, it is never redrawn
	}
	p.pending = nil
}

// erase removes the progress line if shown; callers hold mu.
func (p *progress) erase() {
	if p.shown {
		fmt.Fprint(p.w, clearLine)
		p.shown = false
	}
}

// note prints a phase line at once.
func (p *progress) note(line string) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.sayNow(line)
}

// startScenario begins a scenario of modes bursts of messages orders.
func (p *progress) startScenario(modes, messages int) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.modes, p.done, p.messages, p.started = modes, 0, messages, p.now()
}

// brokerStarting prints that the broker is being started (or attached
// to) and shows the time it takes on the progress line.
func (p *progress) brokerStarting(image, named string, nodes int) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.sayNow(phaseBrokerStarting(image, named, nodes))
	p.s, p.waiting, p.waitSince = nil, "waiting for the broker", p.now()
}

// brokerReady prints that the broker accepts AMQP logins (version as it
// reports it).
func (p *progress) brokerReady(version string) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.sayNow(phaseBrokerReady(p.now().Sub(p.waitSince), version))
	p.waiting = ""
	p.erase()
}

// onBurst follows a new burst (engine.Runner.OnBurst).
func (p *progress) onBurst(m scenario.Mode, s *metrics.Series, tl *metrics.Timeline) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mode, p.s, p.tl, p.phase, p.waiting = m, s, tl, phasePublishing, ""
	p.trigSent, p.faultAt, p.faultWhat = 0, map[string]time.Time{}, map[string]string{}
	p.samples, p.state, p.stateSince, p.lastFault = nil, metrics.StateUp, p.now(), time.Time{}
	p.say(phaseBurst(p.done+1, p.modes, m, p.messages))
	tl.Watch(p.onEvent)
}

// onEvent follows the burst's timeline (Timeline.Watch): it moves the
// phase and queues the phase lines of faults, recoveries and the drain.
func (p *progress) onEvent(e metrics.Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.s == nil {
		return
	}
	t := p.s.Totals()
	switch e.Kind {
	case metrics.EvTrigger:
		p.trigSent = t.Sent
	case metrics.EvFault:
		p.faultAt[e.Target], p.faultWhat[e.Target], p.lastFault = e.At, e.Action, e.At
		p.say(phaseFault(e.Action, e.Target, p.trigSent, p.messages, e.At.Sub(p.s.Start())))
	case metrics.EvBrokerReady:
		p.say(phaseRecovered(e.Target, e.At.Sub(p.faultAt[e.Target]), p.faultWhat[e.Target]))
	case metrics.EvFaultCleared:
		p.say(phaseCleared(e.Action, e.Target))
	case metrics.EvBrokerNotReady:
		p.say(phaseNotRecovered(e.Target, e.Action))
	case metrics.EvBurstEnd:
		p.phase, p.samples = phaseFinishing, nil
	case metrics.EvDrainStart:
		p.phase, p.drainAt, p.samples = phaseDraining, e.At, nil
	case metrics.EvDrainEnd:
		p.say(phaseDrain(t.Received, t.Sent, e.At.Sub(p.drainAt)))
		p.phase = phaseFinishing
	}
}

// modeDone wraps next (a Runner.OnModeDone) to print each mode's result
// and stop drawing until the next burst.
func (p *progress) modeDone(next func(scenario.ModeResult)) func(scenario.ModeResult) {
	if p == nil {
		return next
	}
	return func(r scenario.ModeResult) {
		p.mu.Lock()
		if p.tl != nil {
			p.tl.Watch(nil)
		}
		p.done++
		p.s, p.tl = nil, nil
		p.sayNow(phaseModeDone(p.done, p.modes, r))
		p.erase()
		p.mu.Unlock()
		next(r)
	}
}

// verdict prints the scenario's verdict and stops drawing (the report
// goes to stdout next).
func (p *progress) verdict(res *scenario.Result) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.sayNow(phaseVerdict(res.Verdict, len(res.Modes), p.now().Sub(p.started)))
	p.s, p.waiting = nil, ""
	p.erase()
}

// status is the progress line's content now; callers hold mu. ok is false
// when there is nothing to show.
func (p *progress) status(now time.Time) (l statusLine, ok bool) {
	if p.s == nil {
		if p.waiting == "" {
			return l, false
		}
		return statusLine{Waiting: p.waiting, Elapsed: now.Sub(p.waitSince)}, true
	}
	t := p.s.Totals()
	l = statusLine{Mode: p.mode, K: p.done + 1, N: p.modes, Phase: p.phase,
		Done: t.Sent, Total: p.messages, Republished: t.Published - t.Sent,
		InFlight: t.InFlight, InDoubt: t.Backlog, ETA: -1, Broker: engine.BrokerStateNow(p.tl.Events())}
	if p.phase == phaseDraining {
		l.Done, l.Total = t.Received, t.Sent
	}
	if p.phase == phaseFinishing && l.Broker != metrics.StateUp {
		l.Phase = phaseRecovery
	}
	if l.Broker != p.state {
		// A fault recorded since the last change is when this state began
		// (the state is read from the fault events); else this draw is.
		since := now
		if l.Broker != metrics.StateUp && p.lastFault.After(p.stateSince) {
			since = p.lastFault
		}
		p.state, p.stateSince = l.Broker, since
	}
	if l.Broker != metrics.StateUp {
		l.BrokerFor = now.Sub(p.stateSince)
	}
	l.Rate = p.rate(now, l.Done)
	if l.Rate > 0 && l.Total > l.Done {
		l.ETA = time.Duration(float64(l.Total-l.Done) / l.Rate * float64(time.Second))
	}
	return l, true
}

// rate is n's growth per second over the last rateWindow, -1 before a
// second sample; callers hold mu.
func (p *progress) rate(now time.Time, n int) float64 {
	p.samples = append(p.samples, rateSample{now, n})
	for len(p.samples) > 2 && now.Sub(p.samples[1].at) >= rateWindow {
		p.samples = p.samples[1:]
	}
	first := p.samples[0]
	if dt := now.Sub(first.at); dt > 0 {
		return float64(n-first.n) / dt.Seconds()
	}
	return -1
}

// draw prints the pending phase lines and redraws the progress line.
func (p *progress) draw() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.flush()
	l, ok := p.status(p.now())
	if !ok {
		p.erase()
		return
	}
	fmt.Fprint(p.w, clearLine+l.render(p.width()))
	p.shown = true
}

// Write passes log output through, erasing the progress line first so a
// log line never lands on it; the next draw puts it back.
func (p *progress) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.flush()
	p.erase()
	return p.w.Write(b)
}

// hide prints the pending phase lines, erases the progress line and stops
// drawing it until the next burst (before printing on stdout).
func (p *progress) hide() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.flush()
	p.s, p.waiting = nil, ""
	p.erase()
}

// logWriter is where log lines go: through p when there is a progress line.
func (p *progress) logWriter(w io.Writer) io.Writer {
	if p == nil {
		return w
	}
	return p
}

// Stop stops redrawing, prints the pending phase lines and erases the
// line.
func (p *progress) Stop() {
	if p == nil {
		return
	}
	close(p.stop)
	<-p.over
	p.hide()
}

// num formats an integer with thousands separators.
func num(n int) string {
	s := fmt.Sprint(n)
	neg := n < 0
	if neg {
		s = s[1:]
	}
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	if neg {
		s = "-" + s
	}
	return s
}
