package cmd

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"golang.org/x/term"

	"github.com/rmqtorture/rmqtorture/engine"
	"github.com/rmqtorture/rmqtorture/metrics"
	"github.com/rmqtorture/rmqtorture/scenario"
)

// progressEvery is how often the progress line is redrawn.
const progressEvery = 500 * time.Millisecond

// clearLine returns the cursor to the start of the line and erases it.
const clearLine = "\r\x1b[K"

// progress redraws one status line on a terminal while bursts run. A nil
// *progress (not a terminal) does nothing.
type progress struct {
	w     io.Writer
	mu    sync.Mutex // guards everything below and every write to w
	shown bool       // a progress line is on screen
	mode  scenario.Mode
	s     *metrics.Series
	tl    *metrics.Timeline
	// lastPub and lastAt are the totals of the previous draw, for the rate.
	lastPub int
	lastAt  time.Time
	stop    chan struct{}
	done    chan struct{}
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// startProgress starts redrawing a progress line on w every interval when
// tty is true; it returns nil, and draws nothing ever, otherwise.
func startProgress(w io.Writer, tty bool, interval time.Duration) *progress {
	if !tty {
		return nil
	}
	p := &progress{w: w, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(p.done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-p.stop:
				return
			case now := <-t.C:
				p.draw(now)
			}
		}
	}()
	return p
}

// onBurst follows a new burst (engine.Runner.OnBurst).
func (p *progress) onBurst(m scenario.Mode, s *metrics.Series, tl *metrics.Timeline) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mode, p.s, p.tl, p.lastPub, p.lastAt = m, s, tl, 0, s.Start()
}

func (p *progress) draw(now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.s == nil {
		return
	}
	t := p.s.Totals()
	rate := 0.0
	if dt := now.Sub(p.lastAt); dt > 0 {
		rate = float64(t.Published-p.lastPub) / dt.Seconds()
	}
	p.lastPub, p.lastAt = t.Published, now
	state := engine.BrokerStateNow(p.tl.Events())
	fmt.Fprint(p.w, clearLine+progressLine(p.mode, now.Sub(p.s.Start()), t, rate, state))
	p.shown = true
}

// progressLine is the status line: mode, elapsed time since the burst
// start, publish attempts, basic.acks, messages in flight, publish rate in
// msg/s over the last interval, broker state.
func progressLine(m scenario.Mode, elapsed time.Duration, t metrics.SeriesTotals, rate float64, state metrics.BrokerState) string {
	return fmt.Sprintf("%s %6.1fs  published %s  acked %s  in flight %s  %s msg/s  broker %s",
		m, elapsed.Seconds(), num(t.Published), num(t.Acked), num(t.InFlight), num(int(rate+0.5)), state)
}

// Write passes log output through, erasing the progress line first so a
// log line never lands on it; the next draw puts it back.
func (p *progress) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.shown {
		fmt.Fprint(p.w, clearLine)
		p.shown = false
	}
	return p.w.Write(b)
}

// hide erases the line until the next draw (before printing on stdout).
func (p *progress) hide() {
	if p != nil {
		_, _ = p.Write(nil)
	}
}

// logWriter is where log lines go: through p when there is a progress line.
func (p *progress) logWriter(w io.Writer) io.Writer {
	if p == nil {
		return w
	}
	return p
}

// Stop stops redrawing and erases the line.
func (p *progress) Stop() {
	if p == nil {
		return
	}
	close(p.stop)
	<-p.done
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.shown {
		fmt.Fprint(p.w, clearLine)
		p.shown = false
	}
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
