package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/rmqtorture/rmqtorture/scenario"
)

// A second interrupt writes the modes that finished, the one under way as
// cut short and the rest as not run, marks the result interrupted, removes
// the container once, and the run's own end then writes nothing.
func TestAbortWritesWhatFinished(t *testing.T) {
	f, err := scenario.Parse("t.yaml", []byte(`version: 1
scenarios:
  - name: t
    load: {messages: 10, modes: [fire-and-forget, confirm-each, confirm-window]}
`))
	if err != nil {
		t.Fatal(err)
	}
	s := &f.Scenarios[0]
	dir := filepath.Join(t.TempDir(), "run")
	c := &cobra.Command{}
	var stdout bytes.Buffer
	c.SetOut(&stdout)
	res := &scenario.Result{SchemaVersion: scenario.SchemaVersion, Scenario: "t", QueueType: scenario.Quorum, StartedAt: time.Now()}
	a := newAborter()
	ctx := context.WithValue(context.Background(), aborterKey{}, a)
	sr := (&runOpts{}).watch(ctx, c, slog.New(slog.DiscardHandler), s, res, dir)
	removed := 0
	res.Container = "rmqt-x"
	sr.provisionedWith(func() { removed++ }, res)
	sr.modeDone(scenario.ModeResult{Mode: scenario.FireAndForget, Verdict: scenario.Verdict{Status: scenario.Pass}})

	code := <-a.abort(10*time.Second, &bytes.Buffer{})
	if code != ExitInterrupted || removed != 1 {
		t.Fatalf("exit %d, container removed %d times; want 130, once", code, removed)
	}
	var got scenario.Result
	data, err := os.ReadFile(filepath.Join(dir, "result.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	if !got.Interrupted || got.Verdict.Status != scenario.Inconclusive || len(got.Modes) != 3 || got.Error == "" {
		t.Fatalf("result %+v", got)
	}
	for i, want := range []string{"", "cut short: interrupted twice, its ids were not reconciled", "not run: interrupted twice"} {
		m := got.Modes[i]
		if (want == "") != !m.NotRun || (want != "" && m.Verdict.Reasons[0] != want) {
			t.Errorf("mode %d (%s): not run %v, reasons %q; want %q", i, m.Mode, m.NotRun, m.Verdict.Reasons, want)
		}
	}
	if wrote, _ := sr.writeOnce(func() error { t.Fatal("the run's end wrote over the abort's report"); return nil }); wrote || sr.abortCause != CauseInterrupted {
		t.Fatalf("wrote %v, abort cause %q", wrote, sr.abortCause)
	}
	sr.stop()
	if removed != 1 {
		t.Fatalf("container removed %d times", removed)
	}
}

// When the run's own end wrote the report first, the abort writes nothing
// and leaves the exit code to the command (the channel stays silent).
func TestAbortAfterTheReportLeavesTheRunsExitCode(t *testing.T) {
	s := &scenario.Scenario{Load: scenario.Load{Modes: []scenario.Mode{scenario.ConfirmEach}}}
	a := newAborter()
	ctx := context.WithValue(context.Background(), aborterKey{}, a)
	res := &scenario.Result{}
	sr := (&runOpts{}).watch(ctx, &cobra.Command{}, slog.New(slog.DiscardHandler), s, res, t.TempDir())
	sr.provisionedWith(func() {}, res)
	if wrote, err := sr.writeOnce(func() error { return nil }); !wrote || err != nil {
		t.Fatal(wrote, err)
	}
	select {
	case code := <-a.abort(time.Second, &bytes.Buffer{}):
		t.Fatalf("abort gave exit %d; want the command's own", code)
	case <-time.After(200 * time.Millisecond):
	}
	sr.stop()
}

// plannedModes lists matrix cells' modes in run order.
func TestPlannedModesOfAMatrix(t *testing.T) {
	f, err := scenario.Parse("t.yaml", []byte(`version: 1
scenarios:
  - name: t
    load: {messages: 10, modes: [fire-and-forget, confirm-window]}
    matrix: {queue_types: [quorum, classic]}
`))
	if err != nil {
		t.Fatal(err)
	}
	got := plannedModes(&f.Scenarios[0])
	if len(got) != 4 || got[0].Cell.QueueType != scenario.Quorum || got[1].Mode != scenario.ConfirmWindow || got[2].Cell.QueueType != scenario.Classic || !got[3].NotRun {
		t.Fatalf("planned %+v", got)
	}
}

// An interrupt before any scenario started ends the command at once, with
// nothing to restore: here the Docker Engine accepts the connection and
// never answers, so run waits on its first request when Ctrl-C comes.
func TestInterruptBeforeAnythingStartedExits(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	accepted := make(chan net.Conn, 8)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			accepted <- c // held open, never answered
		}
	}()
	t.Setenv("DOCKER_HOST", "tcp://"+l.Addr().String())
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	sigs := make(chan os.Signal, 1)
	// The command goes on in the background after Main returned (as it
	// would until os.Exit), so its writers are locked.
	var stdout, stderr lockedBuffer
	done := make(chan int, 1)
	go func() {
		done <- executeSignals([]string{"run", "kill-mid-burst", "-f", "../scenarios.yaml", "--out", t.TempDir()}, &stdout, &stderr, sigs)
	}()
	select {
	case c := <-accepted:
		defer c.Close()
	case code := <-done:
		t.Fatalf("run ended (exit %d) before it asked the Docker Engine anything:\n%s", code, stderr.String())
	}
	sigs <- os.Interrupt
	code := <-done
	if want := "rmqtorture: interrupted before any scenario started: nothing to restore, exiting\n"; code != ExitInterrupted || stderr.String() != want || stdout.String() != "" {
		t.Fatalf("exit %d, stderr %q, stdout %q; want exit %d and %q", code, stderr.String(), stdout.String(), ExitInterrupted, want)
	}
}

// lockedBuffer is a bytes.Buffer safe for a writer and a reader on two
// goroutines.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
